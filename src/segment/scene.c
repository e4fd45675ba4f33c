/* scene: see scene.h. */
#include "segment/scene.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BINS 16
#define GW 16
#define GH 12
#define SX 64 /* sample lattice: SX x SY pixels per frame */
#define SY 48

typedef struct {
    float hist[3][BINS]; /* fractions of the samples */
    float luma[GH][GW];  /* mean luma per cell */
} desc_t;

struct osp_scene {
    desc_t d[2];
    int cur;  /* index of the newest descriptor */
    int have; /* descriptors computed since the reset (saturates at 2) */
    float last_hist, last_luma;
};

int osp_scene_create(osp_scene_t **out) {
    *out = calloc(1, sizeof(osp_scene_t));
    return *out ? 0 : -1;
}

void osp_scene_free(osp_scene_t *s) { free(s); }

void osp_scene_reset(osp_scene_t *s) {
    s->have = 0;
    s->last_hist = s->last_luma = 0;
}

static void describe(const osp_view_t *v, desc_t *d) {
    memset(d, 0, sizeof(*d));
    int count[GH][GW] = {{0}};
    int n = 0;
    for (int j = 0; j < SY; j++) {
        int y = (int)(((long)j * 2 + 1) * v->height / (2 * SY));
        const uint8_t *row = v->data + (size_t)y * (size_t)v->stride;
        int gy = j * GH / SY;
        for (int i = 0; i < SX; i++) {
            int x = (int)(((long)i * 2 + 1) * v->width / (2 * SX));
            const uint8_t *p = row + (size_t)x * 3;
            d->hist[0][p[0] >> 4] += 1;
            d->hist[1][p[1] >> 4] += 1;
            d->hist[2][p[2] >> 4] += 1;
            int gx = i * GW / SX;
            d->luma[gy][gx] += 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
            count[gy][gx]++;
            n++;
        }
    }
    for (int c = 0; c < 3; c++)
        for (int b = 0; b < BINS; b++) d->hist[c][b] /= (float)n;
    for (int gy = 0; gy < GH; gy++)
        for (int gx = 0; gx < GW; gx++)
            if (count[gy][gx]) d->luma[gy][gx] /= (float)count[gy][gx];
}

/* Calibration (vtest.avi + cockatoo.mp4 + Megamind.avi joined at 640x360,
 * 20 fps, as tests/e2e/test_segment.py does): the two joins give a combined
 * distance of 0.29 and 0.75 (score 1), the cuts inside the Megamind trailer
 * 0.15-0.16, and the pedestrians walking past vtest.avi's static camera at
 * most 0.014 (score 0.07). SCALE is the distance that scores 1. */
#define SCALE 0.2f

float osp_scene_score(osp_scene_t *s, const osp_view_t *v) {
    if (!v || !v->data || (v->fmt != OSP_PIX_RGB && v->fmt != OSP_PIX_BGR) || v->width < 1 ||
        v->height < 1)
        return -1.0f;
    int next = s->have ? 1 - s->cur : s->cur;
    describe(v, &s->d[next]);
    if (!s->have) {
        s->have = 1;
        s->last_hist = s->last_luma = 0;
        return 0.0f;
    }
    const desc_t *a = &s->d[s->cur], *b = &s->d[next];
    float h = 0, l = 0;
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < BINS; k++) h += fabsf(a->hist[c][k] - b->hist[c][k]);
    h /= 6.0f; /* half the L1 distance, averaged over the channels */
    for (int gy = 0; gy < GH; gy++)
        for (int gx = 0; gx < GW; gx++) l += fabsf(a->luma[gy][gx] - b->luma[gy][gx]);
    l /= (float)(GW * GH) * 255.0f;
    s->cur = next;
    s->last_hist = h;
    s->last_luma = l;
    float d = 0.5f * (h + l);
    float score = d / SCALE;
    return score > 1.0f ? 1.0f : score;
}

void osp_scene_last_distances(const osp_scene_t *s, float *hist, float *luma) {
    if (hist) *hist = s->last_hist;
    if (luma) *luma = s->last_luma;
}
