/*
 * The second look of osprey detect (model.h, osp_model_look_again).
 *
 * A 300x300 detector sees a person of a 768x576 camera frame a dozen input
 * pixels wide: a tripod or a rock can pass for one, and a person between
 * two anchors gets a second box half a width off. Seen again from closer,
 * the tripod is no person and the shifted box has no person under it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

void osp_look_square(const osp_det_t *d, float zoom, int w, int h, int *x, int *y, int *side) {
    float bw = d->x2 - d->x1, bh = d->y2 - d->y1;
    float s = zoom * (bw > bh ? bw : bh);
    int limit = w < h ? w : h;
    if (!(s < (float)limit) || !isfinite(d->x1 + d->y1 + d->x2 + d->y2)) {
        *x = *y = *side = 0;
        return;
    }
    int n = (int)ceilf(s);
    if (n < 1) n = 1;
    float cx = fminf(fmaxf((d->x1 + d->x2) / 2, 0), (float)w); /* a box off the frame */
    float cy = fminf(fmaxf((d->y1 + d->y2) / 2, 0), (float)h);
    int ox = (int)floorf(cx - (float)n / 2), oy = (int)floorf(cy - (float)n / 2);
    if (ox > w - n) ox = w - n;
    if (oy > h - n) oy = h - n;
    *x = ox < 0 ? 0 : ox;
    *y = oy < 0 ? 0 : oy;
    *side = n;
}

static int ensure_looks(osp_infer_ctx_t *ctx, int n) {
    if (ctx->look_cap >= n) return 0;
    float *l = realloc(ctx->look, (size_t)n * sizeof *l);
    if (l) ctx->look = l;
    osp_det_t *b = realloc(ctx->look_boxes, (size_t)n * sizeof *b);
    if (b) ctx->look_boxes = b;
    if (!l || !b) return -1;
    ctx->look_cap = n;
    return 0;
}

/* Of the look's boxes of d's class that overlap d (moved by (dx, dy) and
 * scaled by (sx, sy) into d's pixels) at IoU >= OSP_LOOK_IOU, the best one
 * into *at; its score, or 0 when there is none. */
static float look_match(const osp_det_t *d, const osp_result_t *r, float dx, float dy, float sx,
                        float sy, osp_det_t *at) {
    float best = 0;
    for (int i = 0; i < r->n_dets; i++) {
        const osp_det_t *z = &r->dets[i];
        if (z->cls != d->cls || !(z->score > best)) continue;
        osp_det_t b = *z;
        b.x1 = (z->x1 + dx) * sx;
        b.x2 = (z->x2 + dx) * sx;
        b.y1 = (z->y1 + dy) * sy;
        b.y2 = (z->y2 + dy) * sy;
        if (osp_iou(d, &b) >= OSP_LOOK_IOU) {
            best = z->score;
            *at = b;
        }
    }
    return best;
}

/* Of the n boxes kept, drop those whose look found the very object a box
 * of its label with a better mean score found (their looks' boxes at IoU
 * >= OSP_LOOK_SAME); order kept. Every box is weighed against all n (a box
 * dropped still drops others: the best of three wins), then the kept ones
 * move down. Returns how many stay. */
static int one_object_one_box(osp_infer_ctx_t *ctx, int n) {
    osp_det_t *dets = ctx->rec.dets, *at = ctx->look_boxes;
    float *look = ctx->look;
    for (int i = 0; i < n; i++) {
        float mean = (dets[i].score + look[i]) / 2;
        for (int j = 0; j < n && look[i] > 0; j++) {
            if (j == i || look[j] <= 0 || dets[j].cls != dets[i].cls) continue;
            float other = (dets[j].score + look[j]) / 2;
            if ((other > mean || (other == mean && j < i)) &&
                osp_iou(&at[i], &at[j]) >= OSP_LOOK_SAME) {
                at[i].score = -1; /* the mark: osp_iou reads only corners */
                break;
            }
        }
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (at[i].score < 0) continue;
        dets[kept] = dets[i];
        at[kept] = at[i];
        look[kept++] = look[i];
    }
    return kept;
}

/* The look's own decode settings: every box counts (OSP_LOOK_FLOOR). */
static void look_params(const osp_model_t *m, osp_infer_ctx_t *look, int lone) {
    look->params_set = 1;
    look->confidence = OSP_LOOK_FLOOR;
    look->nms_iou = m->cfg.nms_iou;
    look->max_detections = m->cfg.max_detections;
    look->lone = lone;
}

int osp_model_look_box(osp_model_t *m, osp_infer_ctx_t *look, const osp_view_t *v, float sx,
                       float sy, const osp_det_t *d, float *score, osp_det_t *at, double *prep_ms,
                       double *predict_ms, char *err, size_t errlen) {
    int ch = osp_pixfmt_channels(v->fmt);
    if (ch == 0 || osp_pixfmt_yuv420(v->fmt) || !(sx > 0) || !(sy > 0)) {
        snprintf(err, errlen, "no frame to look at again");
        return OSP_MODEL_EINVAL;
    }
    osp_det_t dv = *d; /* in view pixels */
    dv.x1 /= sx;
    dv.x2 /= sx;
    dv.y1 /= sy;
    dv.y2 /= sy;
    int x, y, side;
    osp_look_square(&dv, OSP_LOOK_ZOOM, v->width, v->height, &x, &y, &side);
    *score = -1;
    *at = *d;
    if (side == 0) return 0;
    look_params(m, look, look->lone);
    osp_view_t crop = *v;
    crop.data = v->data + (size_t)y * (size_t)v->stride + (size_t)x * (size_t)ch;
    crop.width = crop.height = side;
    osp_result_t r;
    if (osp_model_infer(m, look, &crop, 0, 0, &r, err, errlen)) return OSP_MODEL_ERUN;
    if (prep_ms) *prep_ms += r.preprocess_ms;
    if (predict_ms) *predict_ms += r.predict_ms;
    *score = look_match(d, &r, (float)x, (float)y, sx, sy, at);
    return 1;
}

int osp_model_look_again(osp_model_t *m, osp_infer_ctx_t *ctx, osp_infer_ctx_t *look,
                         const osp_view_t *frame, float once, osp_result_t *res, char *err,
                         size_t errlen) {
    if (res->kind != OSP_REC_DETECTIONS || res->n_dets == 0) return OSP_MODEL_OK;
    osp_view_t v = *frame;
    if (osp_pixfmt_yuv420(v.fmt)) v = osp_image_view(&ctx->rgb);
    int ch = osp_pixfmt_channels(v.fmt);
    if (ch == 0 || v.width != ctx->view_w || v.height != ctx->view_h) {
        snprintf(err, errlen, "no frame to look at again");
        return OSP_MODEL_EINVAL;
    }
    int n = res->n_dets;
    if (ensure_looks(ctx, n)) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    float thresh = ctx->params_set ? ctx->confidence : m->cfg.confidence;
    /* frame pixels per view pixel: a scaled JPEG decode is smaller */
    float sx = (float)ctx->frame_w / (float)ctx->view_w;
    float sy = (float)ctx->frame_h / (float)ctx->view_h;
    look->lone = ctx->lone;
    osp_det_t *dets = ctx->rec.dets;
    double prep_ms = 0, predict_ms = 0;
    int kept = 0, looked = 0, below = 0;
    for (int i = 0; i < n; i++) {
        osp_det_t d = dets[i], at;
        float score; /* -1: no look, the box is large in the frame */
        int rc = osp_model_look_box(m, look, &v, sx, sy, &d, &score, &at, &prep_ms, &predict_ms,
                                    err, errlen);
        if (rc < 0) return rc;
        if (rc == 0 && d.score < once) { /* under the threshold: not the look's doing */
            below++;
            continue;
        }
        looked += rc;
        if (rc == 1 && (d.score + score) / 2 < thresh) continue;
        dets[kept] = d;
        ctx->look_boxes[kept] = at;
        ctx->look[kept++] = score;
    }
    kept = one_object_one_box(ctx, kept);
    ctx->rec.n_dets = kept;
    res->dets = dets;
    res->n_dets = kept;
    res->look = ctx->look;
    res->looks = looked;
    res->look_dropped = n - below - kept;
    res->preprocess_ms += prep_ms;
    res->predict_ms += predict_ms;
    return OSP_MODEL_OK;
}
