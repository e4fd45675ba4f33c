/* The scrfd postprocessor through the decoder interface: anchor centres
 * without a half-cell offset, two anchors a cell, distance boxes and
 * landmarks in strides; 9 outputs or 6, in any order, with or without a
 * batch dim; and the degenerate outputs. Expected boxes are worked out
 * here from the formulas. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "post/decoder.h"

static const int A[3] = {12800, 3200, 800}; /* 640x640: (640/s)^2 * 2 */

typedef struct {
    float *sc[3], *bx[3], *kp[3];
    osp_pdesc_t d[9];
    osp_pout_t o[9];
    int n;
} outs_t;

/* insightface order: scores 8/16/32, boxes 8/16/32, landmarks 8/16/32;
 * `reverse` lists them backwards, `batch` adds a leading 1 */
static void make(outs_t *t, int with_kps, int reverse, int batch) {
    memset(t, 0, sizeof *t);
    int idx = 0;
    const int kinds = with_kps ? 3 : 2;
    for (int kind = 0; kind < kinds; kind++)
        for (int s = 0; s < 3; s++, idx++) {
            int last = kind == 0 ? 1 : kind == 1 ? 4 : 10;
            float *buf = calloc((size_t)A[s] * last, sizeof *buf);
            (kind == 0 ? t->sc : kind == 1 ? t->bx : t->kp)[s] = buf;
            int at = reverse ? kinds * 3 - 1 - idx : idx;
            osp_pdesc_t *d = &t->d[at];
            *d = (osp_pdesc_t){.name = "o", .dtype = OSP_PDT_F32, .rank = batch ? 3 : 2};
            int k = 0;
            if (batch) d->dims[k++] = 1;
            d->dims[k++] = A[s];
            d->dims[k] = last;
            t->o[at] = (osp_pout_t){.name = "o", .dtype = OSP_PDT_F32, .data = buf, .rank = d->rank};
            memcpy(t->o[at].dims, d->dims, sizeof d->dims);
        }
    t->n = kinds * 3;
}

static void drop(outs_t *t) {
    for (int s = 0; s < 3; s++) free(t->sc[s]), free(t->bx[s]), free(t->kp[s]);
}

static osp_dparams_t params(void) {
    return (osp_dparams_t){.in_w = 640,
                           .in_h = 640,
                           .in_c = 3,
                           .confidence = 0.5f,
                           .nms_iou = 0.4f,
                           .max_detections = 100,
                           .scale_x = 1,
                           .scale_y = 1,
                           .frame_w = 640,
                           .frame_h = 640};
}

static int run(outs_t *t, const osp_dparams_t *p, osp_dres_t *r) {
    const osp_decoder_t *dec = osp_decoder_find("scrfd");
    assert_non_null(dec);
    void *st = NULL;
    char err[256];
    if (dec->setup(t->d, t->n, p, &st, err, sizeof err)) return -1;
    osp_dres_reset(r);
    int rc = dec->decode(st, t->o, t->n, p, r, err, sizeof err);
    dec->free_state(st);
    return rc;
}

/* a face at stride index s, cell (gx, gy), anchor a */
static int put(outs_t *t, int s, int gx, int gy, int a, float score, const float ltrb[4]) {
    int gw = 640 / (8 << s);
    int i = (gy * gw + gx) * 2 + a;
    t->sc[s][i] = score;
    memcpy(t->bx[s] + (size_t)i * 4, ltrb, 4 * sizeof(float));
    if (t->kp[s])
        for (int k = 0; k < 5; k++) {
            t->kp[s][(size_t)i * 10 + 2 * k] = 0.5f * (float)k;
            t->kp[s][(size_t)i * 10 + 2 * k + 1] = -0.25f * (float)k;
        }
    return i;
}

static void test_one_face_with_landmarks(void **state) {
    (void)state;
    for (int variant = 0; variant < 4; variant++) {
        outs_t t;
        make(&t, 1, variant & 1, variant & 2);
        osp_dres_t r = {0};
        osp_dparams_t p = params();
        assert_int_equal(run(&t, &p, &r), 0);
        assert_int_equal(r.n_dets, 0); /* all zero: no face */
        const float ltrb[4] = {1, 2, 3, 4};
        put(&t, 1, 5, 4, 1, 0.8f, ltrb); /* stride 16: centre (80, 64) */
        assert_int_equal(run(&t, &p, &r), 0);
        assert_int_equal(r.n_dets, 1);
        const osp_det_t *d = &r.dets[0];
        assert_int_equal(d->cls, 0);
        assert_float_equal(d->score, 0.8f, 0);
        assert_float_equal(d->x1, 80 - 16, 1e-3);
        assert_float_equal(d->y1, 64 - 32, 1e-3);
        assert_float_equal(d->x2, 80 + 48, 1e-3);
        assert_float_equal(d->y2, 64 + 64, 1e-3);
        assert_int_equal(d->n_kp, 5);
        for (int k = 0; k < 5; k++) {
            assert_float_equal(d->kp[k][0], 80 + 8.0f * (float)k, 1e-3);
            assert_float_equal(d->kp[k][1], 64 - 4.0f * (float)k, 1e-3);
        }
        osp_dres_free(&r);
        drop(&t);
    }
}

static void test_six_outputs_no_landmarks(void **state) {
    (void)state;
    outs_t t;
    make(&t, 0, 0, 1);
    const float ltrb[4] = {1, 1, 1, 1};
    put(&t, 2, 0, 0, 0, 0.9f, ltrb); /* stride 32 at the origin: x1,y1 clamp to 0 */
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    assert_int_equal(run(&t, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].n_kp, 0);
    assert_float_equal(r.dets[0].x1, 0, 0);
    assert_float_equal(r.dets[0].y1, 0, 0);
    assert_float_equal(r.dets[0].x2, 32, 1e-3);
    osp_dres_free(&r);
    drop(&t);
}

static void test_letterbox_and_clamp(void **state) {
    (void)state;
    outs_t t;
    make(&t, 1, 0, 0);
    /* a 1280x720 frame in 640: scale 0.5, pad 140 on top; a face across the
     * bottom edge of the picture (input y 500) */
    const float ltrb[4] = {2, 2, 2, 2};
    put(&t, 2, 10, 15, 0, 0.95f, ltrb); /* centre (320, 480): y 416..544 */
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    p.scale_x = p.scale_y = 0.5f;
    p.pad_y = 140;
    p.frame_w = 1280, p.frame_h = 720;
    assert_int_equal(run(&t, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_float_equal(r.dets[0].x1, (320 - 64) / 0.5f, 1e-3);
    assert_float_equal(r.dets[0].y1, (416 - 140) / 0.5f, 1e-3);
    assert_float_equal(r.dets[0].y2, 720, 0); /* (544-140)/0.5 = 808: clamped */
    for (int k = 0; k < 5; k++) assert_true(r.dets[0].kp[k][1] <= 720);
    osp_dres_free(&r);
    drop(&t);
}

static void test_nan_inf_threshold_and_max(void **state) {
    (void)state;
    outs_t t;
    make(&t, 1, 0, 0);
    const float ltrb[4] = {0.4f, 0.4f, 0.4f, 0.4f};
    /* 150 separate faces at stride 8 */
    for (int i = 0; i < 150; i++)
        put(&t, 0, (i % 15) * 5, (i / 15) * 5, 0, 0.6f + 0.001f * (float)i, ltrb);
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    assert_int_equal(run(&t, &p, &r), 0);
    assert_int_equal(r.n_dets, 100);
    assert_float_equal(r.dets[0].score, 0.749f, 1e-6);
    p.confidence = 0.9f; /* all below */
    assert_int_equal(run(&t, &p, &r), 0);
    assert_int_equal(r.n_dets, 0);
    p.confidence = 0.5f;
    for (int i = 0; i < A[0]; i++) t.sc[0][i] = (i & 1) ? NAN : INFINITY;
    const float huge[4] = {INFINITY, 0, 1, 1};
    put(&t, 1, 1, 1, 0, 0.7f, huge); /* an infinite box: dropped */
    put(&t, 1, 3, 3, 0, 0.7f, ltrb);
    assert_int_equal(run(&t, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_true(isfinite(r.dets[0].x1) && isfinite(r.dets[0].score));
    osp_dres_free(&r);
    drop(&t);
}

static void test_missing_stride(void **state) {
    (void)state;
    outs_t t;
    make(&t, 1, 0, 0);
    t.n = 8; /* the stride-32 landmarks are gone */
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    assert_int_not_equal(run(&t, &p, &r), 0);
    p.in_w = p.in_h = 480; /* no output has a multiple of 60*60 rows */
    t.n = 9;
    assert_int_not_equal(run(&t, &p, &r), 0);
    osp_dres_free(&r);
    drop(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_face_with_landmarks),
        cmocka_unit_test(test_six_outputs_no_landmarks),
        cmocka_unit_test(test_letterbox_and_clamp),
        cmocka_unit_test(test_nan_inf_threshold_and_max),
        cmocka_unit_test(test_missing_stride),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
