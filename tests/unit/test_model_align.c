/* The geometry of a cascade's crops (model/align.c): the square around a
 * box, the similarity fitted to landmarks, and where the output's corners
 * come from in the frame. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/align.h"

#define NEAR(a, b) assert_true(fabsf((a) - (b)) < 1e-3f)

static void test_square_grows_the_longer_side(void **state) {
    (void)state;
    osp_det_t d = {.x1 = 100, .y1 = 50, .x2 = 140, .y2 = 130}; /* 40 x 80, centre (120, 90) */
    float q[4][2];
    osp_align_square(&d, 0.25f, q); /* side 100 */
    NEAR(q[0][0], 70), NEAR(q[0][1], 40);
    NEAR(q[1][0], 170), NEAR(q[1][1], 40);
    NEAR(q[2][0], 170), NEAR(q[2][1], 140);
    NEAR(q[3][0], 70), NEAR(q[3][1], 140);
}

static void test_similarity_is_recovered(void **state) {
    (void)state;
    /* rotate 30 degrees, scale 2, shift (5, -7) */
    float a = 2 * cosf(0.5235988f), b = 2 * sinf(0.5235988f);
    float src[5][2] = {{0, 0}, {10, 0}, {0, 10}, {7, 3}, {-4, 9}}, dst[5][2];
    for (int i = 0; i < 5; i++) {
        dst[i][0] = a * src[i][0] - b * src[i][1] + 5;
        dst[i][1] = b * src[i][0] + a * src[i][1] - 7;
    }
    float t[4];
    assert_int_equal(osp_align_similarity((const float(*)[2])src, (const float(*)[2])dst, 5, t), 0);
    NEAR(t[0], a), NEAR(t[1], b), NEAR(t[2], 5), NEAR(t[3], -7);
}

static void test_similarity_never_mirrors(void **state) {
    (void)state;
    /* a mirror image is fitted by the nearest rotation, not reflected */
    float src[3][2] = {{0, 0}, {10, 0}, {0, 10}}, dst[3][2] = {{0, 0}, {-10, 0}, {0, 10}}, t[4];
    assert_int_equal(osp_align_similarity((const float(*)[2])src, (const float(*)[2])dst, 3, t), 0);
    float mapped_x = t[0] * 10 - t[1] * 0 + t[2];
    assert_true(mapped_x > -10 + 1e-3f); /* the mirrored point is not reached */
}

static void test_degenerate_points_fail(void **state) {
    (void)state;
    float same[3][2] = {{4, 4}, {4, 4}, {4, 4}}, dst[3][2] = {{0, 0}, {1, 0}, {0, 1}}, t[4];
    assert_int_equal(osp_align_similarity((const float(*)[2])same, (const float(*)[2])dst, 3, t), -1);
    float nan[2][2] = {{NAN, 0}, {1, 1}};
    assert_int_equal(osp_align_similarity((const float(*)[2])nan, (const float(*)[2])dst, 2, t), -1);
    assert_int_equal(osp_align_similarity((const float(*)[2])dst, (const float(*)[2])dst, 1, t), -1);
    float zero[4] = {0, 0, 0, 0}, q[4][2];
    assert_int_equal(osp_align_quad(zero, 112, 112, q), -1);
}

static void test_quad_is_the_inverse(void **state) {
    (void)state;
    /* output = source / 2 shifted by (-10, -20): output (0,0) is source (20, 40) */
    float t[4] = {0.5f, 0, -10, -20}, q[4][2];
    assert_int_equal(osp_align_quad(t, 112, 112, q), 0);
    NEAR(q[0][0], 20), NEAR(q[0][1], 40);
    NEAR(q[1][0], 244), NEAR(q[1][1], 40);
    NEAR(q[2][0], 244), NEAR(q[2][1], 264);
    NEAR(q[3][0], 20), NEAR(q[3][1], 264);
}

static void test_arcface_points_map_onto_themselves(void **state) {
    (void)state;
    /* landmarks already at ArcFace's points, twice as large: the crop is
     * the 224 x 224 square at the origin */
    osp_det_t d = {.n_kp = 5};
    for (int i = 0; i < 5; i++) {
        d.kp[i][0] = OSP_ALIGN_ARCFACE[i][0] * 2;
        d.kp[i][1] = OSP_ALIGN_ARCFACE[i][1] * 2;
    }
    float q[4][2];
    assert_int_equal(osp_align_landmarks(&d, 112, 112, q), 0);
    NEAR(q[0][0], 0), NEAR(q[0][1], 0);
    NEAR(q[2][0], 224), NEAR(q[2][1], 224);
}

static void test_blazeface_tilted_face_is_turned_upright(void **state) {
    (void)state;
    /* BlazeFace's 6 points of a face turned 90 degrees (its eyes one above
     * the other): the crop's top edge runs down the frame */
    osp_det_t d = {.n_kp = 6};
    const float pts[4][2] = {{38.2946f, 51.6963f},
                             {73.5318f, 51.5014f},
                             {56.0252f, 71.7366f},
                             {(41.5493f + 70.7299f) / 2, (92.3655f + 92.2041f) / 2}};
    for (int i = 0; i < 4; i++) { /* (x, y) -> (200 - y, x): a quarter turn */
        d.kp[i][0] = 200 - pts[i][1];
        d.kp[i][1] = pts[i][0];
    }
    d.kp[4][0] = d.kp[4][1] = d.kp[5][0] = d.kp[5][1] = 1000; /* the ears: not used */
    float q[4][2];
    assert_int_equal(osp_align_landmarks(&d, 112, 112, q), 0);
    /* the output's top-left comes from (200, 0), its top-right from (200, 112) */
    assert_true(fabsf(q[0][0] - 200) < 0.5f && fabsf(q[0][1]) < 0.5f);
    assert_true(fabsf(q[1][0] - 200) < 0.5f && fabsf(q[1][1] - 112) < 0.5f);
}

static void test_no_landmarks_no_alignment(void **state) {
    (void)state;
    osp_det_t d = {.x1 = 0, .y1 = 0, .x2 = 10, .y2 = 10, .n_kp = 0};
    float q[4][2];
    assert_int_equal(osp_align_landmarks(&d, 112, 112, q), -1);
    d.n_kp = 3;
    assert_int_equal(osp_align_landmarks(&d, 112, 112, q), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_square_grows_the_longer_side),
        cmocka_unit_test(test_similarity_is_recovered),
        cmocka_unit_test(test_similarity_never_mirrors),
        cmocka_unit_test(test_degenerate_points_fail),
        cmocka_unit_test(test_quad_is_the_inverse),
        cmocka_unit_test(test_arcface_points_map_onto_themselves),
        cmocka_unit_test(test_blazeface_tilted_face_is_turned_upright),
        cmocka_unit_test(test_no_landmarks_no_alignment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
