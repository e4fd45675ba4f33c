/* The yolo, yolox and yolonas postprocessors through the decoder interface:
 * each layout recognised from its shape, boxes worked out here by hand from
 * the formulas, and the degenerate outputs (nothing, all below threshold,
 * NaN/Inf, too many, out of frame). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "post/decoder.h"

#define NA 8400 /* anchor-free cells at 640x640: 80*80 + 40*40 + 20*20 */

static osp_dparams_t params(void) {
    return (osp_dparams_t){.in_w = 640,
                           .in_h = 640,
                           .in_c = 3,
                           .confidence = 0.25f,
                           .nms_iou = 0.45f,
                           .max_detections = 100,
                           .scale_x = 1,
                           .scale_y = 1,
                           .frame_w = 640,
                           .frame_h = 640};
}

/* Set up `name` on one output of these dims, decode data into res. */
static int run1(const char *name, const float *data, int rank, const int64_t *dims,
                const osp_dparams_t *p, osp_dres_t *res) {
    const osp_decoder_t *dec = osp_decoder_find(name);
    assert_non_null(dec);
    osp_pdesc_t d = {.name = "out", .dtype = OSP_PDT_F32, .rank = rank};
    osp_pout_t o = {.name = "out", .dtype = OSP_PDT_F32, .data = data, .rank = rank};
    memcpy(d.dims, dims, sizeof(int64_t) * (size_t)rank);
    memcpy(o.dims, dims, sizeof(int64_t) * (size_t)rank);
    void *st = NULL;
    char err[256];
    if (dec->setup(&d, 1, p, &st, err, sizeof err)) return -1;
    osp_dres_reset(res);
    int rc = dec->decode(st, &o, 1, p, res, err, sizeof err);
    if (dec->free_state) dec->free_state(st);
    return rc;
}

static void assert_box(const osp_det_t *d, float x1, float y1, float x2, float y2) {
    assert_float_equal(d->x1, x1, 1e-3);
    assert_float_equal(d->y1, y1, 1e-3);
    assert_float_equal(d->x2, x2, 1e-3);
    assert_float_equal(d->y2, y2, 1e-3);
}

/* [1, 4+C, N]: channel c of anchor i at c*N + i */
static void v8_put(float *d, int n, int i, float cx, float cy, float w, float h, int cls, float s) {
    d[i] = cx, d[n + i] = cy, d[2 * n + i] = w, d[3 * n + i] = h;
    d[(size_t)(4 + cls) * n + i] = s;
}

static void test_v8_one_box(void **state) {
    (void)state;
    float *d = calloc((size_t)84 * NA, sizeof *d);
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, 84, NA};
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 0); /* an all-zero output: nothing */
    v8_put(d, NA, 1234, 100, 200, 50, 40, 3, 0.9f);
    d[(size_t)(4 + 7) * NA + 1234] = 0.6f; /* a weaker class of the same anchor */
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 3);
    assert_float_equal(r.dets[0].score, 0.9f, 0);
    assert_box(&r.dets[0], 75, 180, 125, 220);
    /* no batch dim: the same */
    assert_int_equal(run1("yolo", d, 2, dims + 1, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_box(&r.dets[0], 75, 180, 125, 220);
    osp_dres_free(&r);
    free(d);
}

static void test_v8_transposed_and_letterbox(void **state) {
    (void)state;
    float *d = calloc((size_t)84 * NA, sizeof *d);
    float *row = d + (size_t)500 * 84;
    row[0] = 320, row[1] = 320, row[2] = 640, row[3] = 360, row[4 + 0] = 0.8f;
    osp_dres_t r = {0};
    /* a 1280x720 frame letterboxed into 640: scale 0.5, 140 rows of pad on top */
    osp_dparams_t p = params();
    p.scale_x = p.scale_y = 0.5f;
    p.pad_y = 140;
    p.frame_w = 1280, p.frame_h = 720;
    const int64_t dims[3] = {1, NA, 84};
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 0);
    assert_box(&r.dets[0], 0, 0, 1280, 720);
    /* partly outside the frame (and the input): clamped */
    row[0] = 0, row[1] = 500, row[2] = 100, row[3] = 100; /* input x -50..50, y 450..550 */
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_box(&r.dets[0], 0, (450 - 140) / 0.5f, 50 / 0.5f, 720);
    osp_dres_free(&r);
    free(d);
}

static void test_v5_objectness(void **state) {
    (void)state;
    const int n = 3 * NA, k = 85;
    float *d = calloc((size_t)n * k, sizeof *d);
    float *a = d + (size_t)7 * k, *b = d + (size_t)9000 * k, *c = d + (size_t)20000 * k;
    a[0] = 100, a[1] = 100, a[2] = 20, a[3] = 20, a[4] = 0.9f, a[5 + 2] = 0.5f; /* 0.45 */
    b[0] = 300, b[1] = 300, b[2] = 20, b[3] = 20, b[4] = 0.2f, b[5 + 1] = 1.0f; /* obj too low */
    c[0] = 500, c[1] = 500, c[2] = 20, c[3] = 20, c[4] = 0.5f, c[5 + 9] = 0.4f; /* 0.2: below */
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, n, k};
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 2);
    assert_float_equal(r.dets[0].score, 0.45f, 1e-6);
    assert_box(&r.dets[0], 90, 90, 110, 110);
    osp_dres_free(&r);
    free(d);
}

static void test_end_to_end_no_nms(void **state) {
    (void)state;
    float d[300][6];
    memset(d, 0, sizeof d);
    /* two heavily overlapping boxes of one class: the graph kept both */
    const float a[6] = {10, 10, 110, 110, 0.9f, 5}, b[6] = {12, 12, 112, 112, 0.8f, 5};
    memcpy(d[0], a, sizeof a);
    memcpy(d[1], b, sizeof b);
    d[2][4] = 0.95f, d[2][5] = NAN; /* a NaN class: dropped */
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, 300, 6};
    assert_int_equal(run1("yolo", &d[0][0], 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 2);
    assert_box(&r.dets[0], 10, 10, 110, 110);
    assert_box(&r.dets[1], 12, 12, 112, 112);
    assert_int_equal(r.dets[1].cls, 5);
    osp_dres_free(&r);
}

static void test_six_columns_on_the_grid_is_v8(void **state) {
    (void)state;
    /* [1,8400,6] at 640: a 2-class v8 transposed, not an end-to-end export */
    float *d = calloc((size_t)NA * 6, sizeof *d);
    float *row = d + (size_t)42 * 6;
    row[0] = 100, row[1] = 100, row[2] = 10, row[3] = 10, row[4] = 0.1f, row[5] = 0.7f;
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, NA, 6};
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 1);
    assert_box(&r.dets[0], 95, 95, 105, 105);
    osp_dres_free(&r);
    free(d);
}

static void test_nan_inf_below_threshold(void **state) {
    (void)state;
    float *d = calloc((size_t)84 * NA, sizeof *d);
    for (int i = 0; i < NA; i++) d[(size_t)4 * NA + i] = 0.2f; /* everything below 0.25 */
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, 84, NA};
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 0);
    v8_put(d, NA, 10, 100, 100, 10, 10, 0, NAN);
    v8_put(d, NA, 11, 200, 100, 10, 10, 1, INFINITY);
    v8_put(d, NA, 12, 300, 100, 10, 10, 2, 0.5f);
    d[(size_t)(4 + 3) * NA + 12] = NAN;           /* NaN beside a good score */
    v8_put(d, NA, 13, NAN, 100, 10, 10, 0, 0.9f); /* a NaN box */
    v8_put(d, NA, 14, 400, 100, INFINITY, 10, 0, 0.9f);
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 2);
    assert_float_equal(r.dets[0].score, 0.5f, 0);
    osp_dres_free(&r);
    free(d);
}

static void test_more_than_max_and_nms(void **state) {
    (void)state;
    float *d = calloc((size_t)84 * NA, sizeof *d);
    /* 300 disjoint boxes, scores rising with the index */
    for (int i = 0; i < 300; i++)
        v8_put(d, NA, i, (float)(i % 20) * 32 + 16, (float)(i / 20) * 32 + 16, 20, 20, i % 80,
               0.3f + 0.002f * (float)i);
    /* overlapping pairs: same class suppressed, different classes kept */
    v8_put(d, NA, 8000, 100, 600, 40, 40, 1, 0.99f);
    v8_put(d, NA, 8001, 102, 600, 40, 40, 1, 0.98f);
    v8_put(d, NA, 8002, 104, 600, 40, 40, 2, 0.97f);
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, 84, NA};
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 100);
    assert_float_equal(r.dets[0].score, 0.99f, 0);
    assert_float_equal(r.dets[1].score, 0.97f, 0);
    assert_int_equal(r.dets[1].cls, 2);
    for (int i = 1; i < r.n_dets; i++) assert_true(r.dets[i].score <= r.dets[i - 1].score);
    p.max_detections = 5;
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 5);
    osp_dres_free(&r);
    free(d);
}

static void test_equal_scores_keep_anchor_order(void **state) {
    (void)state;
    float *d = calloc((size_t)84 * NA, sizeof *d);
    /* the order osp_nms promises (stable by score) survives the presort */
    for (int i = 0; i < 40; i++)
        v8_put(d, NA, 3000 + i, (float)(i % 8) * 80 + 40, (float)(i / 8) * 80 + 40, 30, 30, 0,
               i % 3 ? 0.5f : 0.75f);
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, 84, NA};
    assert_int_equal(run1("yolo", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 40);
    int k = 0;
    for (int i = 0; i < 40; i += 3, k++) /* the 0.75s first, in anchor order */
        assert_float_equal(r.dets[k].x1, (float)(i % 8) * 80 + 25, 1e-3);
    for (int i = 1; i < 40; i++)
        if (i % 3) {
            assert_float_equal(r.dets[k].x1, (float)(i % 8) * 80 + 25, 1e-3);
            assert_float_equal(r.dets[k].y1, (float)(i / 8) * 80 + 25, 1e-3);
            k++;
        }
    osp_dres_free(&r);
    free(d);
}

static void test_bad_shapes(void **state) {
    (void)state;
    const osp_decoder_t *dec = osp_decoder_find("yolo");
    osp_pdesc_t d = {.name = "out", .dtype = OSP_PDT_F32, .rank = 3, .dims = {1, 3, 8400}};
    osp_dparams_t p = params();
    void *st = NULL;
    char err[256];
    assert_int_not_equal(dec->setup(&d, 1, &p, &st, err, sizeof err), 0); /* 3 channels */
    d.rank = 4;
    assert_int_not_equal(dec->setup(&d, 1, &p, &st, err, sizeof err), 0);
    assert_null(st);
}

/* ---- yolox ---- */

static void test_yolox_raw_grid(void **state) {
    (void)state;
    const int k = 85;
    float *d = calloc((size_t)NA * k, sizeof *d);
    /* stride 16, cell (gx 3, gy 2): after the 6400 stride-8 cells */
    float *row = d + (size_t)(6400 + 2 * 40 + 3) * k;
    row[0] = 0.5f, row[1] = 0.5f, row[2] = logf(2), row[3] = logf(3), row[4] = 0.9f;
    row[5 + 17] = 0.8f;
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, NA, k};
    assert_int_equal(run1("yolox", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 17);
    assert_float_equal(r.dets[0].score, 0.72f, 1e-6);
    /* cx = 3.5*16 = 56, cy = 2.5*16 = 40, w = 2*16, h = 3*16 */
    assert_box(&r.dets[0], 40, 16, 72, 64);
    /* an exp() overflow and NaN objectness: skipped */
    row[2] = 1000;
    d[(size_t)5 * k + 4] = NAN;
    assert_int_equal(run1("yolox", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 0);
    osp_dres_free(&r);
    free(d);
}

static void test_yolox_decoded(void **state) {
    (void)state;
    const int k = 85;
    float *d = calloc((size_t)NA * k, sizeof *d);
    int i = 0;
    for (int s = 8; s <= 32; s *= 2)
        for (int gy = 0; gy < 640 / s; gy++)
            for (int gx = 0; gx < 640 / s; gx++, i++) {
                float *row = d + (size_t)i * k;
                row[0] = ((float)gx + 0.5f) * (float)s, row[1] = ((float)gy + 0.5f) * (float)s;
                row[2] = row[3] = (float)s;
            }
    float *row = d + (size_t)100 * k; /* stride 8, gx 20, gy 1 */
    row[0] = 164, row[1] = 12, row[2] = 40, row[3] = 20, row[4] = 1.0f, row[5] = 0.5f;
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[3] = {1, NA, k};
    assert_int_equal(run1("yolox", d, 3, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_box(&r.dets[0], 144, 2, 184, 22);
    osp_dres_free(&r);
    free(d);
}

static void test_yolox_wrong_count(void **state) {
    (void)state;
    const osp_decoder_t *dec = osp_decoder_find("yolox");
    osp_pdesc_t d = {.name = "out", .dtype = OSP_PDT_F32, .rank = 3, .dims = {1, 8000, 85}};
    osp_dparams_t p = params();
    void *st = NULL;
    char err[256];
    assert_int_not_equal(dec->setup(&d, 1, &p, &st, err, sizeof err), 0);
}

/* ---- yolonas ---- */

static void test_yolonas_two_outputs(void **state) {
    (void)state;
    const osp_decoder_t *dec = osp_decoder_find("yolonas");
    assert_non_null(dec);
    enum { N = 8400, C = 80 };
    float *boxes = calloc((size_t)N * 4, sizeof *boxes),
          *scores = calloc((size_t)N * C, sizeof *scores);
    const float b0[4] = {10, 20, 110, 220}, b1[4] = {600, 600, 700, 700};
    memcpy(boxes + 4 * 3, b0, sizeof b0);
    memcpy(boxes + 4 * 4, b1, sizeof b1);
    scores[3 * C + 15] = 0.6f;
    scores[4 * C + 0] = 0.9f;
    scores[5 * C + 0] = NAN;
    scores[6 * C + 1] = INFINITY;
    osp_pdesc_t ds[2] = {{.name = "scores", .dtype = OSP_PDT_F32, .rank = 3, .dims = {1, N, C}},
                         {.name = "boxes", .dtype = OSP_PDT_F32, .rank = 3, .dims = {1, N, 4}}};
    osp_pout_t os[2] =
        {{.name = "scores", .dtype = OSP_PDT_F32, .data = scores, .rank = 3, .dims = {1, N, C}},
         {.name = "boxes", .dtype = OSP_PDT_F32, .data = boxes, .rank = 3, .dims = {1, N, 4}}};
    osp_dparams_t p = params();
    void *st = NULL;
    char err[256];
    osp_dres_t r = {0};
    assert_int_equal(dec->setup(ds, 2, &p, &st, err, sizeof err), 0);
    assert_int_equal(dec->decode(st, os, 2, &p, &r, err, sizeof err), 0);
    assert_int_equal(r.n_dets, 2);
    assert_int_equal(r.dets[0].cls, 0);
    assert_box(&r.dets[0], 600, 600, 640, 640); /* clamped to the 640 frame */
    assert_int_equal(r.dets[1].cls, 15);
    assert_box(&r.dets[1], 10, 20, 110, 220);
    dec->free_state(st);
    osp_dres_free(&r);
    free(boxes);
    free(scores);
}

static void test_yolonas_flat(void **state) {
    (void)state;
    const float d[4][7] = {{0, 10, 10, 50, 50, 0.9f, 2},
                           {0, 11, 11, 51, 51, 0.8f, 2}, /* overlaps: the graph kept it */
                           {0, 10, 10, 50, 50, 0.1f, 3},
                           {0, 10, 10, 50, 50, NAN, 3}};
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    const int64_t dims[2] = {4, 7};
    assert_int_equal(run1("yolonas", &d[0][0], 2, dims, &p, &r), 0);
    assert_int_equal(r.n_dets, 2);
    assert_box(&r.dets[1], 11, 11, 51, 51);
    osp_dres_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v8_one_box),
        cmocka_unit_test(test_v8_transposed_and_letterbox),
        cmocka_unit_test(test_v5_objectness),
        cmocka_unit_test(test_end_to_end_no_nms),
        cmocka_unit_test(test_six_columns_on_the_grid_is_v8),
        cmocka_unit_test(test_nan_inf_below_threshold),
        cmocka_unit_test(test_more_than_max_and_nms),
        cmocka_unit_test(test_equal_scores_keep_anchor_order),
        cmocka_unit_test(test_bad_shapes),
        cmocka_unit_test(test_yolox_raw_grid),
        cmocka_unit_test(test_yolox_decoded),
        cmocka_unit_test(test_yolox_wrong_count),
        cmocka_unit_test(test_yolonas_two_outputs),
        cmocka_unit_test(test_yolonas_flat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
