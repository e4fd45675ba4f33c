/*
 * The "yolonas" postprocessor: Deci's YOLO-NAS as super-gradients exports
 * it (Frigate's YOLO-NAS models among them), in either of two forms:
 *
 *   two outputs  boxes [1, N, 4] (x1, y1, x2, y2 in input pixels) and
 *                scores [1, N, C] (probabilities): best class per box,
 *                then class-aware NMS
 *   flat         one output [K, 7] of rows (image index, x1, y1, x2, y2,
 *                score, class): NMS already ran in the graph, so none here
 *
 * Those exports usually take uint8 pixels (their /255 is in the graph); the
 * model layer feeds uint8 whenever the input says so.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "post/decoder.h"
#include "post/scores.h"

typedef struct {
    int boxes, scores; /* scores < 0: the flat form, in output `boxes` */
} yn_state_t;

static int yn_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    (void)p;
    int ob, os;
    int pair = osp_pdesc_find_pair(outs, n, 0, &ob, &os) == 0;
    int flat = osp_pdesc_find(outs, n, 2, 7, 0, -1);
    if (!pair && flat < 0) {
        snprintf(err, errlen,
                 "postprocessor yolonas needs outputs boxes [1,N,4] and scores "
                 "[1,N,C], or one flat [K,7]");
        return -1;
    }
    yn_state_t st = pair ? (yn_state_t){.boxes = ob, .scores = os}
                         : (yn_state_t){.boxes = flat, .scores = -1};
    return osp_decoder_state_dup(&st, sizeof st, state, err, errlen);
}

/* Box b (x1, y1, x2, y2 in input pixels) with its score and class. */
static int add(osp_dres_t *res, const float *b, float score, int cls, float inv_w, float inv_h) {
    return osp_dres_push_px(res, b[0], b[1], b[2], b[3], score, cls, inv_w, inv_h);
}

static int yn_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    const yn_state_t *st = state;
    const float conf = p->confidence;
    const float inv_w = 1.0f / (float)p->in_w, inv_h = 1.0f / (float)p->in_h;
    osp_dparams_t q = *p;
    if (st->scores < 0) {
        const osp_pout_t *f = st->boxes < n ? &outs[st->boxes] : NULL;
        if (!f || f->rank != 2 || f->dims[1] != 7 || f->dims[0] < 0) {
            snprintf(err, errlen, "yolonas: the flat output is not [K,7]");
            return -1;
        }
        const float *d = f->data;
        for (int64_t i = 0; i < f->dims[0]; i++) {
            const float *r = d + (size_t)i * 7;
            if (r[0] != 0.0f || !(r[5] >= conf) || !isfinite(r[5]) || !(r[6] >= 0.0f) ||
                !(r[6] < 1e6f))
                continue;
            if (add(res, r + 1, r[5], (int)r[6], inv_w, inv_h)) goto oom;
        }
        q.nms_iou = 2.0f; /* the graph's NMS stands, across labels too */
        q.contain = q.cross_iou = 0;
    } else {
        const osp_pout_t *b = &outs[st->boxes], *s = &outs[st->scores];
        if (st->boxes >= n || st->scores >= n || b->dims[1] != s->dims[1] || s->dims[2] < 1) {
            snprintf(err, errlen, "yolonas outputs disagree on the box count");
            return -1;
        }
        const float *bd = b->data, *sd = s->data;
        const int64_t c = s->dims[2];
        for (int64_t i = 0; i < b->dims[1]; i++) {
            const float *r = sd + (size_t)i * (size_t)c;
            if (!(osp_post_max_score(r, c) >= conf)) continue;
            float best;
            int cls = osp_post_best_class(r, (int)c, 1, &best);
            if (cls < 0 || !(best >= conf)) continue;
            if (add(res, bd + (size_t)i * 4, best, cls, inv_w, inv_h)) goto oom;
        }
    }
    osp_post_presort(res);
    osp_dres_finish_normalised(res, &q);
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

const osp_decoder_t osp_decoder_yolonas = {"yolonas", yn_setup, yn_decode, free, OSP_GIVES_BOXES};
