/*
 * MediaPipe BlazeFace (front camera, 128x128): 896 fixed-size anchors on
 * two grids (16x16 with 2 anchors per cell at stride 8, 8x8 with 6 at
 * stride 16), regressors [dx, dy, w, h, 6 keypoints x (x, y)] in input
 * pixels relative to the anchor centre, scores as logits.
 */
#include <math.h>

#include "post/post.h"

int osp_blazeface_anchors(int input_size, osp_anchor_t *out, int cap) {
    /* MediaPipe's front model: layers at strides 8, 16, 16, 16; layers of
     * equal stride share a grid, each adding 2 anchors per cell */
    static const int strides[] = {8, 16, 16, 16};
    int n = 0, layer = 0;
    while (layer < 4) {
        int per_cell = 0, stride = strides[layer];
        while (layer < 4 && strides[layer] == stride) {
            per_cell += 2;
            layer++;
        }
        int grid = (input_size + stride - 1) / stride;
        for (int y = 0; y < grid; y++)
            for (int x = 0; x < grid; x++)
                for (int a = 0; a < per_cell; a++, n++)
                    if (n < cap)
                        out[n] = (osp_anchor_t){.y = ((float)y + 0.5f) / (float)grid,
                                                .x = ((float)x + 0.5f) / (float)grid,
                                                .h = 1.f,
                                                .w = 1.f};
    }
    return n;
}

int osp_post_blazeface(const float *scores, const float *regs, int n, int reg_len,
                       const osp_anchor_t *anchors, int input_size, float thresh, osp_det_t *out,
                       int cap) {
    if (thresh <= 0.f || thresh >= 1.f || reg_len < 4) return 0;
    const float logit_min = logf(thresh / (1.f - thresh));
    const float s = (float)input_size;
    int found = 0;
    for (int i = 0; i < n; i++) {
        float l = scores[i];
        if (!(l >= logit_min)) continue; /* also skips NaN */
        if (l > 100.f) l = 100.f;
        float score = 1.f / (1.f + expf(-l));
        if (score < thresh) continue;
        const float *r = regs + (size_t)i * (size_t)reg_len;
        float xc = r[0] / s * anchors[i].w + anchors[i].x;
        float yc = r[1] / s * anchors[i].h + anchors[i].y;
        float w = r[2] / s * anchors[i].w, h = r[3] / s * anchors[i].h;
        if (found < cap) {
            osp_det_t *d = &out[found];
            *d = (osp_det_t){.x1 = xc - w / 2,
                             .y1 = yc - h / 2,
                             .x2 = xc + w / 2,
                             .y2 = yc + h / 2,
                             .score = score,
                             .cls = 0};
            /* eyes, nose, mouth, ears: (x, y) pairs after the box */
            int nk = (reg_len - 4) / 2;
            d->n_kp = nk < OSP_MAX_KP ? nk : OSP_MAX_KP;
            for (int k = 0; k < d->n_kp; k++) {
                d->kp[k][0] = r[4 + 2 * k] / s * anchors[i].w + anchors[i].x;
                d->kp[k][1] = r[5 + 2 * k] / s * anchors[i].h + anchors[i].y;
            }
        }
        found++;
    }
    return found;
}

/* ---- the "blazeface" postprocessor ------------------------------------------ */

#include <stdio.h>
#include <stdlib.h>

#include "post/decoder.h"

typedef struct {
    int sc[2], rg[2]; /* scores and regressors of the two grids, larger first */
    int n;
    osp_anchor_t *anchors;
} bf_state_t;

static int bf_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    int sc[2] = {-1, -1}, rg[2] = {-1, -1}, ns = 0, nr = 0;
    for (int i = 0; i < n; i++) {
        if (outs[i].rank != 3 || outs[i].dtype != OSP_PDT_F32) continue;
        if (outs[i].dims[2] == 1 && ns < 2)
            sc[ns++] = i;
        else if (outs[i].dims[2] >= 4 && nr < 2)
            rg[nr++] = i;
    }
    int na = osp_blazeface_anchors(p->in_w, NULL, 0);
    if (ns != 2 || nr != 2 || outs[sc[0]].dims[1] + outs[sc[1]].dims[1] != na) {
        snprintf(err, errlen,
                 "postprocessor blazeface needs two scores [1,n,1] and two regressor [1,n,16] outputs over %d anchors",
                 na);
        return -1;
    }
    if (outs[sc[0]].dims[1] < outs[sc[1]].dims[1]) {
        int t = sc[0];
        sc[0] = sc[1];
        sc[1] = t;
    }
    if (outs[rg[0]].dims[1] != outs[sc[0]].dims[1]) {
        int t = rg[0];
        rg[0] = rg[1];
        rg[1] = t;
    }
    bf_state_t *st = calloc(1, sizeof *st);
    if (!st || !(st->anchors = malloc((size_t)na * sizeof *st->anchors))) {
        free(st);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    st->sc[0] = sc[0];
    st->sc[1] = sc[1];
    st->rg[0] = rg[0];
    st->rg[1] = rg[1];
    st->n = osp_blazeface_anchors(p->in_w, st->anchors, na);
    *state = st;
    return 0;
}

/* Both grids into out, the larger first. */
static int bf_fill(const void *state, const osp_pout_t *outs, const osp_dparams_t *p,
                   osp_det_t *out, int cap) {
    const bf_state_t *st = state;
    const osp_pout_t *s0 = &outs[st->sc[0]], *s1 = &outs[st->sc[1]];
    const osp_pout_t *r0 = &outs[st->rg[0]], *r1 = &outs[st->rg[1]];
    int n0 = (int)s0->dims[1], n1 = (int)s1->dims[1];
    int a = osp_post_blazeface(s0->data, r0->data, n0, (int)r0->dims[2], st->anchors, p->in_w,
                               p->confidence, out, cap);
    int room = a < cap ? cap - a : 0;
    int b = osp_post_blazeface(s1->data, r1->data, n1, (int)r1->dims[2], st->anchors + n0, p->in_w,
                               p->confidence, out + (a < cap ? a : 0), room);
    return a + b;
}

static int bf_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    (void)n;
    const bf_state_t *st = state;
    int n0 = (int)outs[st->sc[0]].dims[1], n1 = (int)outs[st->sc[1]].dims[1];
    if (n0 + n1 != st->n || outs[st->rg[0]].dims[1] != n0 || outs[st->rg[1]].dims[1] != n1) {
        snprintf(err, errlen, "blazeface outputs do not match the anchors");
        return -1;
    }
    return osp_dres_fill_normalised(res, bf_fill, st, outs, p, err, errlen);
}

static void bf_free(void *state) {
    bf_state_t *st = state;
    if (st) free(st->anchors);
    free(st);
}

const osp_decoder_t osp_decoder_blazeface = {"blazeface", bf_setup, bf_decode, bf_free,
                                             OSP_GIVES_BOXES};
