/*
 * The "scrfd" postprocessor: InsightFace's SCRFD face detectors. Per stride
 * 8, 16 and 32 the graph emits scores [A, 1] (sigmoid), boxes [A, 4] and,
 * in the *_kps models, landmarks [A, 10] (a leading batch dim of 1 may be
 * there or not): 9 outputs, or 6 without landmarks. A stride's A is its grid
 * cells (input / stride, rounded down) times the anchors per cell (2 in the
 * released models), anchor centres at (x * stride, y * stride) with no half
 * cell offset, each centre repeated once per anchor.
 *
 * Boxes are distances from the centre in strides: x1 = cx - l*s,
 * y1 = cy - t*s, x2 = cx + r*s, y2 = cy + b*s; landmark k is
 * (cx + dx_k*s, cy + dy_k*s). Outputs are matched to strides by their row
 * count, so their order does not matter. The input wants
 * inputNormalization "scrfd": (x - 127.5) / 128.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "post/decoder.h"

static const int STRIDES[3] = {8, 16, 32};

typedef struct {
    int score[3], box[3], kps[3]; /* output per stride; kps -1 without landmarks */
    int per_cell;
} sf_state_t;

static int64_t rows_of(const int64_t *dims, int rank) {
    if (rank == 3) return dims[0] == 1 ? dims[1] : -1;
    return rank == 2 ? dims[0] : -1;
}

static int64_t grid(int in_w, int in_h, int s) { return (int64_t)(in_w / s) * (in_h / s); }

static int sf_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    sf_state_t st = {.score = {-1, -1, -1}, .box = {-1, -1, -1}, .kps = {-1, -1, -1}};
    int64_t g8 = grid(p->in_w, p->in_h, 8);
    for (int i = 0; i < n && g8 > 0; i++) {
        int64_t rows = rows_of(outs[i].dims, outs[i].rank);
        if (outs[i].dtype != OSP_PDT_F32 || rows <= 0) continue;
        /* the stride-8 output fixes the anchors per cell */
        if (rows % g8 == 0 && rows / g8 <= 4 && !st.per_cell) st.per_cell = (int)(rows / g8);
    }
    for (int i = 0; i < n && st.per_cell; i++) {
        int64_t rows = rows_of(outs[i].dims, outs[i].rank);
        int64_t last = outs[i].dims[outs[i].rank - 1];
        if (outs[i].dtype != OSP_PDT_F32 || rows <= 0) continue;
        for (int k = 0; k < 3; k++) {
            if (rows != grid(p->in_w, p->in_h, STRIDES[k]) * st.per_cell) continue;
            int *slot = last == 1    ? &st.score[k]
                        : last == 4  ? &st.box[k]
                        : last == 10 ? &st.kps[k]
                                     : NULL;
            if (slot && *slot < 0) *slot = i;
            break;
        }
    }
    int nkps = (st.kps[0] >= 0) + (st.kps[1] >= 0) + (st.kps[2] >= 0);
    for (int k = 0; k < 3; k++) {
        if (st.score[k] < 0 || st.box[k] < 0 || (nkps && nkps != 3)) {
            snprintf(err, errlen,
                     "postprocessor scrfd needs scores [A,1], boxes [A,4] (and "
                     "landmarks [A,10]) for strides 8, 16, 32 at %dx%d; stride %d "
                     "is missing",
                     p->in_w, p->in_h, STRIDES[k]);
            return -1;
        }
    }
    return osp_decoder_state_dup(&st, sizeof st, state, err, errlen);
}

static int sf_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    const sf_state_t *st = state;
    const float inv_w = 1.0f / (float)p->in_w, inv_h = 1.0f / (float)p->in_h;
    for (int k = 0; k < 3; k++) {
        const int s = STRIDES[k], gw = p->in_w / s, gh = p->in_h / s;
        const int64_t a = (int64_t)gw * gh * st->per_cell;
        const osp_pout_t *so = &outs[st->score[k]], *bo = &outs[st->box[k]];
        const osp_pout_t *ko = st->kps[k] >= 0 ? &outs[st->kps[k]] : NULL;
        if (st->score[k] >= n || st->box[k] >= n || rows_of(so->dims, so->rank) != a ||
            rows_of(bo->dims, bo->rank) != a || (ko && rows_of(ko->dims, ko->rank) != a)) {
            snprintf(err, errlen, "scrfd: stride %d outputs do not have %lld rows", s, (long long)a);
            return -1;
        }
        const float *sc = so->data, *bx = bo->data, *kp = ko ? ko->data : NULL;
        for (int64_t i = 0; i < a; i++) {
            float score = sc[i];
            if (!(score >= p->confidence) || !isfinite(score)) continue;
            int64_t cell = i / st->per_cell;
            float cx = (float)(cell % gw * s), cy = (float)(cell / gw * s);
            const float *b = bx + i * 4;
            osp_det_t d = {.x1 = (cx - b[0] * (float)s) * inv_w,
                           .y1 = (cy - b[1] * (float)s) * inv_h,
                           .x2 = (cx + b[2] * (float)s) * inv_w,
                           .y2 = (cy + b[3] * (float)s) * inv_h,
                           .score = score,
                           .cls = 0};
            if (!isfinite(d.x1) || !isfinite(d.y1) || !isfinite(d.x2) || !isfinite(d.y2)) continue;
            if (kp) {
                d.n_kp = 5;
                for (int j = 0; j < 5; j++) {
                    d.kp[j][0] = (cx + kp[i * 10 + 2 * j] * (float)s) * inv_w;
                    d.kp[j][1] = (cy + kp[i * 10 + 2 * j + 1] * (float)s) * inv_h;
                }
            }
            if (osp_dres_push(res, &d)) {
                snprintf(err, errlen, "out of memory");
                return -1;
            }
        }
    }
    osp_post_presort(res);
    osp_dres_finish_normalised(res, p);
    return 0;
}

const osp_decoder_t osp_decoder_scrfd = {"scrfd", sf_setup, sf_decode, free, OSP_GIVES_BOXES};
