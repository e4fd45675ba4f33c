/*
 * The "yolox" postprocessor: Megvii YOLOX, one output [1, N, 5+C] over the
 * grid cells of strides 8, 16 and 32 (N = 8400 at 640x640), in the order
 * stride, row, column. Each row holds x, y, w, h, objectness, C class
 * scores (objectness and classes already sigmoid in every export).
 *
 * The official export leaves the boxes raw (decode_in_inference False):
 * cx = (x + gx) * s, cy = (y + gy) * s, w = exp(w) * s, h = exp(h) * s;
 * other exports decode in the graph and emit cx, cy, w, h in input pixels.
 * Which one a frame holds is read off the coarsest level: raw x offsets are
 * a cell or two at most, decoded centres average half the input width.
 * score = objectness * best class; class-aware NMS.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "post/decoder.h"
#include "post/scores.h"

static const int STRIDES[3] = {8, 16, 32};

typedef struct {
    int out;
} yx_state_t;

static long cells_at(int w, int h, int s) { return (long)((w + s - 1) / s) * ((h + s - 1) / s); }

static long cells(int w, int h) {
    long n = 0;
    for (int i = 0; i < 3; i++) n += cells_at(w, h, STRIDES[i]);
    return n;
}

static int yx_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    int o = osp_pdesc_find_matrix(outs, n);
    int64_t r = -1, c = -1;
    long want = cells(p->in_w, p->in_h);
    if (o < 0 || osp_pdims_rows_cols(outs[o].dims, outs[o].rank, &r, &c) || (c >= 0 && c < 6) ||
        (r >= 0 && r != want)) {
        snprintf(err, errlen,
                 "postprocessor yolox needs one float32 output [1,%ld,5+C] (the grid "
                 "cells of strides 8/16/32 at %dx%d)",
                 want, p->in_w, p->in_h);
        return -1;
    }
    yx_state_t st = {.out = o};
    return osp_decoder_state_dup(&st, sizeof st, state, err, errlen);
}

/* Mean x of the stride-32 level: a few cells when raw, pixels when decoded. */
static int already_decoded(const float *d, long first, long count, int64_t k) {
    double sum = 0;
    long used = 0;
    for (long i = first; i < first + count; i++) {
        float x = d[(size_t)i * (size_t)k];
        if (isfinite(x)) sum += x, used++;
    }
    return used > 0 && sum / (double)used > 4.0;
}

static int yx_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    const yx_state_t *st = state;
    int64_t r, k;
    const osp_pout_t *o = st->out < n ? &outs[st->out] : NULL;
    if (!o || o->dtype != OSP_PDT_F32 || osp_pdims_rows_cols(o->dims, o->rank, &r, &k) || k < 6 ||
        r != cells(p->in_w, p->in_h)) {
        snprintf(err, errlen, "yolox: the output is not [1,%ld,5+C]", cells(p->in_w, p->in_h));
        return -1;
    }
    const float *d = o->data;
    const long last = cells_at(p->in_w, p->in_h, 32);
    const int decoded = already_decoded(d, (long)r - last, last, k);
    const float conf = p->confidence;
    const float inv_w = 1.0f / (float)p->in_w, inv_h = 1.0f / (float)p->in_h;
    long i = 0;
    for (int level = 0; level < 3; level++) {
        const int s = STRIDES[level];
        const int gw = (p->in_w + s - 1) / s, gh = (p->in_h + s - 1) / s;
        for (int gy = 0; gy < gh; gy++)
            for (int gx = 0; gx < gw; gx++, i++) {
                const float *row = d + (size_t)i * (size_t)k;
                float obj = row[4];
                /* class scores are probabilities: no score beats its objectness */
                if (!(obj >= conf) || !isfinite(obj)) continue;
                float best;
                int cls = osp_post_best_class(row + 5, (int)(k - 5), 1, &best);
                float score = obj * best;
                if (cls < 0 || !(score >= conf)) continue;
                float cx, cy, w, h;
                if (decoded) {
                    cx = row[0], cy = row[1], w = row[2], h = row[3];
                } else {
                    cx = (row[0] + (float)gx) * (float)s;
                    cy = (row[1] + (float)gy) * (float)s;
                    w = expf(row[2]) * (float)s;
                    h = expf(row[3]) * (float)s;
                }
                if (osp_dres_push_px(res, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, score,
                                     cls, inv_w, inv_h)) {
                    snprintf(err, errlen, "out of memory");
                    return -1;
                }
            }
    }
    osp_post_presort(res);
    osp_dres_finish_normalised(res, p);
    return 0;
}

const osp_decoder_t osp_decoder_yolox = {"yolox", yx_setup, yx_decode, free, OSP_GIVES_BOXES};
