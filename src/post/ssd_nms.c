/*
 * The "ssd-nms" postprocessor: TF object-detection API SSDs exported with
 * their post-processing in the graph (TFLite_Detection_PostProcess; the
 * form of Frigate's default CPU and Edge TPU models, and of their ONNX
 * conversions). Four outputs, in whatever order the export left them:
 *
 *   boxes   [1, N, 4]  ymin, xmin, ymax, xmax normalised to the input
 *   classes [1, N]     class indices (as floats in TFLite)
 *   scores  [1, N]
 *   count   [1]        how many of the N rows are real
 *
 * Boxes and count are told apart by shape. classes and scores share one, so
 * they are told apart by value: class indices are integral, scores are not
 * (docs/postprocessors.md says what happens when both are). The graph ran
 * NMS already; only the confidence and maxDetections apply here.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "post/decoder.h"

static size_t elems(const osp_pout_t *o) {
    size_t n = 1;
    for (int i = 0; i < o->rank; i++) n *= o->dims[i] > 0 ? (size_t)o->dims[i] : 0;
    return n;
}

static double val(const osp_pout_t *o, size_t i) {
    switch (o->dtype) {
    case OSP_PDT_F32: return ((const float *)o->data)[i];
    case OSP_PDT_I64: return (double)((const int64_t *)o->data)[i];
    case OSP_PDT_I32: return ((const int32_t *)o->data)[i];
    case OSP_PDT_U8: return ((const uint8_t *)o->data)[i];
    default: return NAN;
    }
}

/* 1 when the first m values are all whole numbers (integer outputs are). */
static int integral(const osp_pout_t *o, size_t m, int *above_one) {
    *above_one = 0;
    for (size_t i = 0; i < m; i++) {
        double v = val(o, i);
        if (!isfinite(v) || floor(v) != v) return 0;
        if (v > 1) *above_one = 1;
    }
    return 1;
}

static int name_says_class(const osp_pout_t *o) {
    return o->name && (strstr(o->name, "class") || strstr(o->name, "label"));
}

static int sn_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    (void)p;
    (void)state;
    int boxes = 0;
    for (int i = 0; i < n; i++)
        if (outs[i].rank == 3 && outs[i].dims[2] == 4 && outs[i].dtype == OSP_PDT_F32) boxes++;
    if (n != 4 || boxes != 1) {
        snprintf(err, errlen,
                 "postprocessor ssd-nms needs 4 outputs: boxes [1,N,4], classes "
                 "[1,N], scores [1,N] and count [1] (the model has %d)",
                 n);
        return -1;
    }
    return 0;
}

static int sn_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    (void)state;
    int ob = -1, oc = -1, pair[2] = {-1, -1}, np = 0;
    size_t nb = 0;
    for (int i = 0; i < n; i++)
        if (outs[i].rank == 3 && outs[i].dims[2] == 4 && outs[i].dtype == OSP_PDT_F32) ob = i;
    if (ob >= 0) nb = elems(&outs[ob]) / 4;
    /* count: the one-value output of the lowest rank ([1] beside [1,1]) */
    for (int i = 0; i < n; i++)
        if (i != ob && elems(&outs[i]) == 1 && (oc < 0 || outs[i].rank < outs[oc].rank)) oc = i;
    for (int i = 0; i < n; i++)
        if (i != ob && i != oc && elems(&outs[i]) == nb && np < 2) pair[np++] = i;
    if (ob < 0 || oc < 0 || np != 2) {
        snprintf(err, errlen,
                 "ssd-nms: outputs are not boxes [1,N,4], classes [1,N], scores "
                 "[1,N] and count [1]");
        return -1;
    }
    double cnt = val(&outs[oc], 0);
    size_t m = cnt > 0 ? (cnt < (double)nb ? (size_t)cnt : nb) : 0; /* NaN: none */
    const osp_pout_t *a = &outs[pair[0]], *b = &outs[pair[1]];
    int a_big, b_big;
    int ai = a->dtype != OSP_PDT_F32 || integral(a, m, &a_big);
    int bi = b->dtype != OSP_PDT_F32 || integral(b, m, &b_big);
    if (a->dtype != OSP_PDT_F32) a_big = 1;
    if (b->dtype != OSP_PDT_F32) b_big = 1;
    const osp_pout_t *cls = a, *sc = b; /* TFLite's own order: classes before scores */
    if (bi && !ai)
        cls = b, sc = a;
    else if (ai && bi && b_big && !a_big)
        cls = b, sc = a;
    else if (ai == bi && a_big == b_big && name_says_class(b) && !name_says_class(a))
        cls = b, sc = a;
    if (sc->dtype != OSP_PDT_F32) {
        snprintf(err, errlen, "ssd-nms: scores must be float32");
        return -1;
    }
    if (m > (size_t)1 << 24 || osp_dres_reserve_dets(res, (int)m)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const float *bx = outs[ob].data;
    for (size_t i = 0; i < m; i++) {
        float s = ((const float *)sc->data)[i];
        double c = val(cls, i);
        if (!(s >= p->confidence) || !isfinite(s) || !(c >= 0) || !(c < 1e6)) continue;
        const float *r = bx + i * 4;
        if (!isfinite(r[0]) || !isfinite(r[1]) || !isfinite(r[2]) || !isfinite(r[3])) continue;
        res->dets[res->n_dets++] =
            (osp_det_t){.x1 = r[1], .y1 = r[0], .x2 = r[3], .y2 = r[2], .score = s, .cls = (int)c};
    }
    osp_dparams_t q = *p;
    q.nms_iou = 2.0f; /* the graph's NMS stands, across labels too */
    q.contain = q.cross_iou = 0;
    osp_dres_finish_normalised(res, &q);
    return 0;
}

const osp_decoder_t osp_decoder_ssd_nms = {"ssd-nms", sn_setup, sn_decode, NULL, OSP_GIVES_BOXES};
