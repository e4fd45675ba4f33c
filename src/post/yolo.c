/*
 * The "yolo" postprocessor: the single-output YOLO exports, the layout told
 * by the output's shape alone (docs/postprocessors.md has the rule and its
 * ambiguous cases):
 *
 *   [1, 4+C, N]  Ultralytics v8/v11 anchor-free, channel-major: cx,cy,w,h
 *                in input pixels, then C class scores (already sigmoid)
 *   [1, N, 4+C]  the same, transposed (some TensorRT/OpenVINO exports)
 *   [1, N, 5+C]  v5/v7 with objectness: cx,cy,w,h, obj, C class scores;
 *                score = obj * class
 *   [1, N, 6]    end-to-end (NMS-free, v10/YOLO26): x1,y1,x2,y2 in input
 *                pixels, score, class; no NMS is applied on top
 *
 * Each anchor reports its best class only (Ultralytics' predict default),
 * then class-aware NMS. A batch dim may be missing ([4+C, N]).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "post/decoder.h"
#include "post/scores.h"

typedef enum { YL_BAD = 0, YL_V8, YL_V8T, YL_V5, YL_E2E } yl_layout_t;

static const char *const LAYOUT_NAME[] = {"?", "v8 [1,4+C,N]", "v8 transposed [1,N,4+C]",
                                          "v5 [1,N,5+C]", "end-to-end [1,N,6]"};

/* Grid cells of the anchor-free heads (strides 8, 16, 32) at this input. */
static long grid_cells(int w, int h) {
    long n = 0;
    for (int s = 8; s <= 32; s *= 2) n += (long)((w + s - 1) / s) * ((h + s - 1) / s);
    return n;
}

/* The layout of an output whose last two dims are rows x cols; the anchor
 * count N is the larger of the two (8400 anchors against 84 channels). */
static yl_layout_t classify(int64_t rows, int64_t cols, int in_w, int in_h, int64_t *n, int64_t *k) {
    if (rows <= 0 || cols <= 0) return YL_BAD;
    if (rows < cols) {
        *k = rows;
        *n = cols;
        return rows >= 5 ? YL_V8 : YL_BAD;
    }
    *n = rows;
    *k = cols;
    long cells = grid_cells(in_w, in_h);
    if (cols < 5) return YL_BAD;
    if (cols == 6 && rows != cells && rows != 3 * cells) return YL_E2E;
    if (rows == 3 * cells && cols >= 6) return YL_V5; /* 3 anchors a cell */
    if (rows == cells) return YL_V8T;
    /* an input the strides do not explain: COCO v5 has 85 columns */
    return cols == 85 ? YL_V5 : YL_V8T;
}

typedef struct {
    int out; /* which output */
} yl_state_t;

static int yl_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    int o = osp_pdesc_find_matrix(outs, n);
    if (o < 0) {
        snprintf(err, errlen,
                 "postprocessor yolo needs a float32 output [1,4+C,N], [1,N,4+C], "
                 "[1,N,5+C] or [1,N,6]");
        return -1;
    }
    int64_t r, c, nn, k;
    if (osp_pdims_rows_cols(outs[o].dims, outs[o].rank, &r, &c) == 0 && r > 0 && c > 0 &&
        classify(r, c, p->in_w, p->in_h, &nn, &k) == YL_BAD) {
        snprintf(err, errlen, "postprocessor yolo: output %s [%lld,%lld] is no YOLO layout",
                 outs[o].name ? outs[o].name : "0", (long long)r, (long long)c);
        return -1;
    }
    yl_state_t st = {.out = o};
    return osp_decoder_state_dup(&st, sizeof st, state, err, errlen);
}

/* best[i] = max(best[i], row[i]); NaN never wins. Blocks of a fixed 8 so
 * that -O2 (whose cost model vectorises only loops with no remainder)
 * turns them into SIMD max instructions: 4x faster than the plain loop. */
static void row_max(float *restrict best, const float *restrict row, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            best[i + j] = row[i + j] > best[i + j] ? row[i + j] : best[i + j];
    for (; i < n; i++) best[i] = row[i] > best[i] ? row[i] : best[i];
}

/* Channel-major: anchors a chunk at a time, the running max over the class
 * rows (contiguous, vectorised) kept in L1 rather than a 33 KB array
 * streamed through every class row, then the class of the few anchors that
 * pass looked up column-wise while their rows are still in cache. (A
 * vectorised argmax kept beside the max measured slower: it doubles the
 * traffic for every anchor to save work on a few hundred.) */
#define V8_CHUNK 1024

static int decode_v8(const float *d, int64_t n, int64_t k, const osp_dparams_t *p, osp_dres_t *res,
                     float inv_w, float inv_h) {
    float best[V8_CHUNK];
    for (int64_t c0 = 0; c0 < n; c0 += V8_CHUNK) {
        const int len = (int)(n - c0 < V8_CHUNK ? n - c0 : V8_CHUNK);
        const float *row = d + 4 * (size_t)n + (size_t)c0;
        for (int i = 0; i < len; i++) best[i] = row[i] == row[i] ? row[i] : -INFINITY;
        for (int64_t c = 5; c < k; c++) row_max(best, d + (size_t)c * (size_t)n + (size_t)c0, len);
        for (int j = 0; j < len; j++) {
            if (!(best[j] >= p->confidence)) continue;
            const int64_t i = c0 + j;
            float s;
            int cls = osp_post_best_class(d + 4 * (size_t)n + (size_t)i, (int)(k - 4), (size_t)n, &s);
            if (cls < 0 || !(s >= p->confidence)) continue;
            float cx = d[i], cy = d[n + i], w = d[2 * n + i], h = d[3 * n + i];
            if (osp_dres_push_px(res, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, s, cls,
                                 inv_w, inv_h))
                return -1;
        }
    }
    return 0;
}

static int decode_rows(yl_layout_t lay, const float *d, int64_t n, int64_t k,
                       const osp_dparams_t *p, osp_dres_t *res, float inv_w, float inv_h) {
    const float conf = p->confidence;
    for (int64_t i = 0; i < n; i++) {
        const float *r = d + (size_t)i * (size_t)k;
        float s;
        int cls;
        if (lay == YL_E2E) {
            s = r[4];
            if (!(s >= conf) || !isfinite(s) || !(r[5] >= 0.0f) || !(r[5] < 1e6f)) continue;
            if (osp_dres_push_px(res, r[0], r[1], r[2], r[3], s, (int)r[5], inv_w, inv_h))
                return -1;
            continue;
        }
        if (lay == YL_V5) {
            /* class scores are probabilities: no score beats its objectness */
            float obj = r[4];
            if (!(obj >= conf) || !isfinite(obj)) continue;
            cls = osp_post_best_class(r + 5, (int)(k - 5), 1, &s);
            s *= obj;
        } else {
            if (!(osp_post_max_score(r + 4, k - 4) >= conf)) continue; /* most rows end here */
            cls = osp_post_best_class(r + 4, (int)(k - 4), 1, &s);
        }
        if (cls < 0 || !(s >= conf)) continue;
        float cx = r[0], cy = r[1], w = r[2], h = r[3];
        if (osp_dres_push_px(res, cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, s, cls, inv_w, inv_h))
            return -1;
    }
    return 0;
}

static int yl_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    const yl_state_t *st = state;
    if (st->out >= n) {
        snprintf(err, errlen, "yolo: output %d missing", st->out);
        return -1;
    }
    const osp_pout_t *o = &outs[st->out];
    int64_t r, c, na = 0, k = 0;
    yl_layout_t lay = YL_BAD;
    if (o->dtype == OSP_PDT_F32 && osp_pdims_rows_cols(o->dims, o->rank, &r, &c) == 0)
        lay = classify(r, c, p->in_w, p->in_h, &na, &k);
    if (lay == YL_BAD || !(p->in_w > 0) || !(p->in_h > 0)) {
        snprintf(err, errlen, "yolo: output %s has no YOLO layout", o->name ? o->name : "0");
        return -1;
    }
    const float inv_w = 1.0f / (float)p->in_w, inv_h = 1.0f / (float)p->in_h;
    int rc = lay == YL_V8 ? decode_v8(o->data, na, k, p, res, inv_w, inv_h)
                          : decode_rows(lay, o->data, na, k, p, res, inv_w, inv_h);
    if (rc) {
        snprintf(err, errlen, "out of memory decoding yolo %s", LAYOUT_NAME[lay]);
        return -1;
    }
    osp_post_presort(res);
    if (lay == YL_E2E) {
        /* the graph chose its boxes: sort and cap, suppress nothing */
        osp_dparams_t q = *p;
        q.nms_iou = 2.0f;
        q.contain = q.cross_iou = 0;
        osp_dres_finish_normalised(res, &q);
    } else {
        osp_dres_finish_normalised(res, p);
    }
    return 0;
}

const osp_decoder_t osp_decoder_yolo = {"yolo", yl_setup, yl_decode, free, OSP_GIVES_BOXES};
