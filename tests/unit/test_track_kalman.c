/* The tracker's Kalman filter (src/track/kalman.c): a new filter gives its
 * box back, learns a constant velocity and predicts with it, smooths
 * jitter, and forgets its velocity when stopped. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "track/kalman.h"

static void test_init_gives_the_box(void **state) {
    (void)state;
    osp_kalman_t k;
    float b[4] = {10, 20, 60, 120}, o[4];
    osp_kalman_init(&k, b);
    osp_kalman_box(&k, o);
    for (int i = 0; i < 4; i++) assert_float_equal(o[i], b[i], 1e-4);
    /* no velocity yet: a prediction stays put */
    osp_kalman_predict(&k);
    osp_kalman_box(&k, o);
    for (int i = 0; i < 4; i++) assert_float_equal(o[i], b[i], 1e-4);
}

static void test_learns_a_constant_velocity(void **state) {
    (void)state;
    osp_kalman_t k;
    float b[4] = {0, 100, 40, 180}, o[4];
    osp_kalman_init(&k, b);
    for (int f = 1; f <= 30; f++) {
        osp_kalman_predict(&k);
        float m[4] = {b[0] + 5.0f * f, b[1] - 2.0f * f, b[2] + 5.0f * f, b[3] - 2.0f * f};
        osp_kalman_update(&k, m);
    }
    assert_float_equal(k.x[4], 5.0, 0.05);
    assert_float_equal(k.x[5], -2.0, 0.05);
    assert_float_equal(k.x[6], 0.0, 0.05);
    /* three frames unseen: the prediction keeps walking */
    for (int i = 0; i < 3; i++) osp_kalman_predict(&k);
    osp_kalman_box(&k, o);
    assert_float_equal(o[0], b[0] + 5.0f * 33, 0.5);
    assert_float_equal(o[1], b[1] - 2.0f * 33, 0.5);
    assert_float_equal(o[2] - o[0], 40, 0.5);
}

static void test_smooths_jitter(void **state) {
    (void)state;
    osp_kalman_t k;
    float b[4] = {100, 100, 200, 300}, o[4];
    osp_kalman_init(&k, b);
    double worst = 0;
    for (int f = 1; f <= 40; f++) {
        osp_kalman_predict(&k);
        float j = (f % 2) ? 6.0f : -6.0f;
        float m[4] = {b[0] + j, b[1] + j, b[2] + j, b[3] + j};
        osp_kalman_update(&k, m);
        osp_kalman_box(&k, o);
        if (f > 20 && fabs(o[0] - b[0]) > worst) worst = fabs(o[0] - b[0]);
    }
    /* measurements are 6 px off either way; the estimate stays nearer */
    assert_true(worst < 4.0);
}

static void test_update_moves_towards_the_measurement(void **state) {
    (void)state;
    osp_kalman_t k;
    float b[4] = {0, 0, 50, 50}, m[4] = {20, 0, 70, 50}, o[4];
    osp_kalman_init(&k, b);
    osp_kalman_predict(&k);
    osp_kalman_update(&k, m);
    osp_kalman_box(&k, o);
    assert_true(o[0] > 0 && o[0] < 20);
    assert_true(k.x[4] > 0); /* and learned that it moves right */
}

static void test_stop_forgets_the_velocity(void **state) {
    (void)state;
    osp_kalman_t k;
    float b[4] = {0, 0, 50, 50}, o[4];
    osp_kalman_init(&k, b);
    for (int f = 1; f <= 10; f++) {
        osp_kalman_predict(&k);
        float m[4] = {b[0] + 4.0f * f, 0, b[2] + 4.0f * f, 50};
        osp_kalman_update(&k, m);
    }
    osp_kalman_box(&k, b);
    osp_kalman_stop(&k);
    for (int i = 0; i < 20; i++) osp_kalman_predict(&k);
    osp_kalman_box(&k, o);
    for (int i = 0; i < 4; i++) assert_float_equal(o[i], b[i], 1e-3);
}

static void test_degenerate_box_stays_finite(void **state) {
    (void)state;
    osp_kalman_t k;
    float b[4] = {10, 10, 10, 10}, o[4];
    osp_kalman_init(&k, b);
    for (int f = 0; f < 5; f++) {
        osp_kalman_predict(&k);
        osp_kalman_update(&k, b);
    }
    osp_kalman_box(&k, o);
    for (int i = 0; i < 4; i++) assert_true(isfinite(o[i]));
    assert_true(o[2] >= o[0]);
}

/* A box narrowing as its object leaves the frame: predicted on, its width
 * stops at a pixel instead of shrinking to a sliver no pixel holds. */
static void test_narrowing_box_keeps_a_pixel(void **state) {
    (void)state;
    osp_kalman_t k;
    float b[4] = {700, 100, 760, 200}, o[4];
    osp_kalman_init(&k, b);
    for (int f = 1; f <= 5; f++) {
        b[0] += 10; /* the right side stays at the frame's edge */
        osp_kalman_predict(&k);
        osp_kalman_update(&k, b);
    }
    for (int i = 0; i < 20; i++) {
        osp_kalman_predict(&k);
        osp_kalman_box(&k, o);
        assert_true(o[2] - o[0] >= 1.0f - 1e-4f);
        assert_true(o[3] - o[1] >= 1.0f - 1e-4f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_gives_the_box),
        cmocka_unit_test(test_learns_a_constant_velocity),
        cmocka_unit_test(test_smooths_jitter),
        cmocka_unit_test(test_update_moves_towards_the_measurement),
        cmocka_unit_test(test_stop_forgets_the_velocity),
        cmocka_unit_test(test_degenerate_box_stays_finite),
        cmocka_unit_test(test_narrowing_box_keeps_a_pixel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
