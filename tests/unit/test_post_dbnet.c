/* The dbnet decoder: probability map -> rotated text boxes; empty maps,
 * regions below the pixel or box threshold, non-finite values, mapping to
 * frame pixels, and the minimum-area rectangle. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "post/dbnet.h"

enum { H = 64, W = 96 };
static float map[H * W];

static int run(float conf, osp_dres_t *res, float scale, float pad_y) {
    const osp_decoder_t *dec = osp_decoder_find("dbnet");
    char err[256];
    osp_pdesc_t d = {.name = "map", .dtype = OSP_PDT_F32, .rank = 4, .dims = {1, 1, -1, -1}};
    osp_dparams_t p = {.in_w = W,
                       .in_h = H,
                       .confidence = conf,
                       .max_detections = 100,
                       .scale_x = scale,
                       .scale_y = scale,
                       .pad_y = pad_y,
                       .frame_w = (int)(W / scale),
                       .frame_h = (int)((H - 2 * pad_y) / scale)};
    void *st = NULL;
    if (dec->setup(&d, 1, &p, &st, err, sizeof err)) return -1;
    osp_pout_t o = {.name = "map", .dtype = OSP_PDT_F32, .data = map, .rank = 4, .dims = {1, 1, H, W}};
    osp_dres_reset(res);
    return dec->decode(st, &o, 1, &p, res, err, sizeof err);
}

static void fill(float v) {
    for (int i = 0; i < H * W; i++) map[i] = v;
}

static void rect(int x0, int y0, int x1, int y1, float v) {
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) map[y * W + x] = v;
}

static void test_no_regions(void **state) {
    (void)state;
    osp_dres_t r = {0};
    fill(0);
    assert_int_equal(run(0.6f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 0);
    fill(0.3f); /* not above the pixel threshold */
    assert_int_equal(run(0.6f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 0);
    osp_dres_free(&r);
}

static void test_one_line(void **state) {
    (void)state;
    osp_dres_t r = {0};
    fill(0);
    rect(20, 30, 60, 40, 0.9f); /* 40 x 10 */
    assert_int_equal(run(0.6f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 1);
    const osp_det_t *d = &r.dets[0];
    assert_float_equal(d->score, 0.9f, 1e-5);
    assert_int_equal(d->n_kp, 4);
    assert_int_equal(d->cls, 0);
    /* unclip 2.0: d = 40*10*2/(2*50) = 8 on every side */
    assert_float_equal(d->x1, 12, 1e-3);
    assert_float_equal(d->x2, 68, 1e-3);
    assert_float_equal(d->y1, 22, 1e-3);
    assert_float_equal(d->y2, 48, 1e-3);
    /* corners clockwise from the top-left */
    assert_float_equal(d->kp[0][0], 12, 1e-3);
    assert_float_equal(d->kp[0][1], 22, 1e-3);
    assert_float_equal(d->kp[1][0], 68, 1e-3);
    assert_float_equal(d->kp[2][1], 48, 1e-3);
    assert_float_equal(d->kp[3][0], 12, 1e-3);
    osp_dres_free(&r);
}

static void test_box_threshold_and_small(void **state) {
    (void)state;
    osp_dres_t r = {0};
    fill(0);
    rect(20, 30, 60, 40, 0.5f); /* mean 0.5 < 0.6 */
    rect(80, 5, 82, 7, 0.99f);  /* 2 x 2: too small */
    assert_int_equal(run(0.6f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 0);
    assert_int_equal(run(0.4f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 1);
    osp_dres_free(&r);
}

static void test_non_finite(void **state) {
    (void)state;
    osp_dres_t r = {0};
    fill(NAN);
    assert_int_equal(run(0.6f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 0);
    fill(0);
    rect(0, 0, W, 4, INFINITY);
    rect(10, 20, 50, 30, 0.8f);
    map[25 * W + 30] = NAN; /* a hole, not a poison */
    assert_int_equal(run(0.6f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 1);
    assert_true(isfinite(r.dets[0].score));
    assert_float_equal(r.dets[0].score, 0.8f, 1e-5);
    osp_dres_free(&r);
}

static void test_frame_mapping(void **state) {
    (void)state;
    osp_dres_t r = {0};
    fill(0);
    rect(20, 30, 60, 40, 0.9f);
    /* input = frame * 2 + (0, 8): a 48 x 24 frame */
    assert_int_equal(run(0.6f, &r, 2, 8), 0);
    assert_int_equal(r.n_dets, 1);
    assert_float_equal(r.dets[0].x1, 6, 1e-3);
    assert_float_equal(r.dets[0].x2, 34, 1e-3);
    assert_float_equal(r.dets[0].y1, 7, 1e-3);
    assert_float_equal(r.dets[0].y2, 20, 1e-3);
    for (int k = 0; k < 4; k++) {
        assert_true(r.dets[0].kp[k][0] >= 0 && r.dets[0].kp[k][0] <= 48);
        assert_true(r.dets[0].kp[k][1] >= 0 && r.dets[0].kp[k][1] <= 24);
    }
    osp_dres_free(&r);
}

static void test_rotated_region(void **state) {
    (void)state;
    osp_dres_t r = {0};
    fill(0);
    /* a band rising 1 px every 4 px: about 14 degrees */
    for (int x = 10; x < 80; x++)
        for (int y = 0; y < 6; y++) map[(40 - (x - 10) / 4 + y) * W + x] = 0.9f;
    assert_int_equal(run(0.6f, &r, 1, 0), 0);
    assert_int_equal(r.n_dets, 1);
    const osp_det_t *d = &r.dets[0];
    float ang = atan2f(d->kp[1][1] - d->kp[0][1], d->kp[1][0] - d->kp[0][0]);
    assert_true(ang < -0.15f && ang > -0.35f);
    osp_dres_free(&r);
}

static void test_min_area_rect(void **state) {
    (void)state;
    /* a square turned by 45 degrees, its diagonal 2 */
    float pts[5][2] = {{1, 0}, {2, 1}, {1, 2}, {0, 1}, {1, 1}}, hull[6][2];
    osp_rrect_t r;
    assert_int_equal(osp_min_area_rect(pts, 5, hull, &r), 0);
    assert_float_equal(r.w * r.h, 2, 1e-4);
    assert_float_equal(r.cx, 1, 1e-5);
    assert_float_equal(r.cy, 1, 1e-5);
    float q[4][2];
    osp_rrect_corners(&r, q);
    for (int k = 0; k < 4; k++) assert_float_equal(hypotf(q[k][0] - 1, q[k][1] - 1), 1, 1e-4);
    float one[1][2] = {{3, 4}}, h1[2][2];
    assert_int_equal(osp_min_area_rect(one, 1, h1, &r), 0);
    assert_float_equal(r.w, 0, 0);
    assert_int_equal(osp_min_area_rect(one, 0, h1, &r), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_regions),
        cmocka_unit_test(test_one_line),
        cmocka_unit_test(test_box_threshold_and_small),
        cmocka_unit_test(test_non_finite),
        cmocka_unit_test(test_frame_mapping),
        cmocka_unit_test(test_rotated_region),
        cmocka_unit_test(test_min_area_rect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
