/*
 * A camera's frame as regions (camregions.h). The planner
 * (motion/regions.h) says where to look; this file turns the tracker's
 * objects into its input, cuts the crops' views out of the frame, moves
 * each crop's detections into the frame's pixels and merges them.
 */
#include "server/cameras/camregions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tracked objects handed to the planner at most: regions.h's max_inputs. */
#define TRACKED_MAX 64
/* A box within this many pixels of a side of its crop touches it. */
#define CUT_PX 2.0f

struct srv_camregions {
    osp_regions_t *planner;
    int model_side;
    osp_region_t runs[1 + SRV_REGIONS_COVER_MAX];
    int n_runs;
    osp_det_t tracked[TRACKED_MAX];
};

int srv_camregions_new(int model_side, srv_camregions_t **out, char *err, size_t errlen) {
    srv_camregions_t *r = *out = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    osp_regions_params_t p;
    osp_regions_defaults(&p, model_side);
    p.max_regions = SRV_REGIONS_MAX;
    p.max_inputs = TRACKED_MAX;
    p.cover_max = SRV_REGIONS_COVER_MAX;
    if (osp_regions_create(&p, &r->planner, err, errlen)) {
        free(r);
        *out = NULL;
        return -1;
    }
    r->model_side = model_side;
    return 0;
}

void srv_camregions_free(srv_camregions_t *r) {
    if (!r) return;
    osp_regions_free(r->planner);
    free(r);
}

static int packed(osp_pixfmt_t fmt) {
    return fmt == OSP_PIX_RGB || fmt == OSP_PIX_BGR || fmt == OSP_PIX_GRAY;
}

int srv_camregions_wanted(const srv_camregions_t *r, int mode, const osp_image_t *frame) {
    if (!r || mode == SRV_REGIONS_OFF || !packed(frame->fmt)) return 0;
    if (mode == SRV_REGIONS_ON) return 1;
    int shorter = frame->width < frame->height ? frame->width : frame->height;
    return shorter >= SRV_REGIONS_AUTO_RATIO * r->model_side;
}

static int whole_frame(srv_camregions_t *r, const osp_image_t *frame, int *whole) {
    r->runs[0] = (osp_region_t){0, 0, frame->width, frame->height, 0};
    r->n_runs = 1;
    *whole = 1;
    return 1;
}

int srv_camregions_plan(srv_camregions_t *r, const osp_image_t *frame, const osp_motion_box_t *m,
                        int n_motion, const osp_tracker_t *tracker, double t, int *whole) {
    *whole = 0;
    if (osp_regions_full_due(r->planner, t)) {
        whole_frame(r, frame, whole);
        int c = osp_regions_cover(r->planner, frame->width, frame->height, r->runs + 1,
                                  SRV_REGIONS_COVER_MAX);
        /* one crop is the frame itself, run already */
        r->n_runs = c > 1 ? 1 + c : 1;
        return r->n_runs;
    }
    int n = 0;
    for (int i = 0; tracker && i < osp_track_count(tracker) && n < TRACKED_MAX; i++) {
        const osp_track_t *k = osp_track_at(tracker, i);
        r->tracked[n++] = (osp_det_t){.x1 = k->box.x1,
                                      .y1 = k->box.y1,
                                      .x2 = k->box.x2,
                                      .y2 = k->box.y2,
                                      .score = k->score,
                                      .cls = k->label};
    }
    char err[256];
    int got = osp_regions_plan(r->planner, frame->width, frame->height, m, n_motion, r->tracked, n,
                               r->runs, SRV_REGIONS_MAX, err, sizeof err);
    /* nothing to look at (or a plan refused): the frame whole, as the gate
     * sent it */
    if (got <= 0) return whole_frame(r, frame, whole);
    r->n_runs = got;
    return got;
}

const osp_region_t *srv_camregions_at(const srv_camregions_t *r, int i) { return &r->runs[i]; }

osp_view_t srv_camregions_view(const osp_image_t *frame, const osp_region_t *g) {
    int bpp = frame->fmt == OSP_PIX_GRAY ? 1 : 3;
    return (osp_view_t){.data = frame->data + (size_t)g->y * (size_t)frame->stride +
                                (size_t)g->x * (size_t)bpp,
                        .width = g->w,
                        .height = g->h,
                        .stride = frame->stride,
                        .fmt = frame->fmt};
}

void srv_camregions_full_done(srv_camregions_t *r, double t) {
    osp_regions_full_done(r->planner, t);
}

void srv_camregions_to_frame(const srv_camregions_t *r, int run, int frame_w, int frame_h,
                             const osp_det_t *d, srv_cam_det_t *o) {
    const osp_region_t *g = &r->runs[run];
    osp_det_t f = *d;
    osp_region_to_frame(g, &f, 1);
    o->box = (osp_track_box_t){f.x1, f.y1, f.x2, f.y2};
    o->score = f.score;
    o->run = run;
    o->region = (osp_track_box_t){(float)g->x, (float)g->y, (float)(g->x + g->w),
                                  (float)(g->y + g->h)};
    o->has_region = g->from != 0; /* the frame whole of a whole-frame pass is no crop */
    /* a side of the crop inside the frame, and the box on it */
    float gx1 = (float)g->x, gy1 = (float)g->y, gx2 = gx1 + (float)g->w, gy2 = gy1 + (float)g->h;
    o->cut = (g->x > 0 && f.x1 <= gx1 + CUT_PX) || (g->y > 0 && f.y1 <= gy1 + CUT_PX) ||
             (g->x + g->w < frame_w && f.x2 >= gx2 - CUT_PX) ||
             (g->y + g->h < frame_h && f.y2 >= gy2 - CUT_PX);
}

static float area(const osp_track_box_t *b) {
    float w = b->x2 - b->x1, h = b->y2 - b->y1;
    return w > 0 && h > 0 ? w * h : 0;
}

static float inter(const osp_track_box_t *a, const osp_track_box_t *b) {
    float w = fminf(a->x2, b->x2) - fmaxf(a->x1, b->x1);
    float h = fminf(a->y2, b->y2) - fmaxf(a->y1, b->y1);
    return w > 0 && h > 0 ? w * h : 0;
}

static int by_score(const void *a, const void *b) {
    float x = ((const srv_cam_det_t *)a)->score, y = ((const srv_cam_det_t *)b)->score;
    return (x < y) - (x > y);
}

int srv_camregions_merge(srv_cam_det_t *d, int n, float iou, float contain) {
    if (n <= 1) return n;
    qsort(d, (size_t)n, sizeof *d, by_score);
    unsigned char gone[512];
    if (n > (int)sizeof gone) n = (int)sizeof gone; /* the least confident past that go */
    memset(gone, 0, (size_t)n);
    /* a box cut by its crop, mostly inside an uncut box of another run: that
     * run saw the object whole */
    for (int i = 0; i < n; i++) {
        if (!d[i].cut) continue;
        float ai = area(&d[i].box);
        for (int j = 0; j < n && !gone[i]; j++)
            if (j != i && !d[j].cut && d[j].run != d[i].run && strcmp(d[i].label, d[j].label) == 0 &&
                ai > 0 && inter(&d[i].box, &d[j].box) >= 0.5f * ai)
                gone[i] = 1;
    }
    for (int i = 0; i < n; i++) {
        if (gone[i]) continue;
        float ai = area(&d[i].box);
        for (int j = i + 1; j < n; j++) {
            if (gone[j] || strcmp(d[i].label, d[j].label) != 0) continue;
            float aj = area(&d[j].box), x = inter(&d[i].box, &d[j].box);
            float u = ai + aj - x;
            if ((u > 0 && x / u >= iou) ||
                (d[j].run != d[i].run && aj > 0 && x / aj >= contain && contain > 0))
                gone[j] = 1;
        }
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!gone[i]) d[k++] = d[i];
    return k;
}
