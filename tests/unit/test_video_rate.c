/* --fps sampling (video/rate.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "video/rate.h"

/* Frames taken out of n frames at src frames/s (jitter: +-j seconds, alternating). */
static int taken(double want, double src, int n, double j) {
    osp_rate_t r;
    osp_rate_init(&r, want);
    int k = 0;
    for (int i = 0; i < n; i++) k += osp_rate_take(&r, i / src + (i % 2 ? j : -j));
    return k;
}

static void test_every_frame_without_rate(void **s) {
    (void)s;
    assert_int_equal(taken(0, 25, 100, 0), 100);
}

static void test_lower_rate(void **s) {
    (void)s;
    /* 10 s of frames: N a second, give or take the frame at the far end */
    assert_in_range(taken(5, 25, 250, 0), 50, 51);
    assert_int_equal(taken(4, 10, 100, 0), 40);
    assert_int_equal(taken(8, 10, 100, 0), 80);
    assert_in_range(taken(2.5, 30, 300, 0.004), 25, 26);
}

static void test_same_rate_with_jitter(void **s) {
    (void)s;
    /* a 10 fps camera whose frames arrive 15 ms early or late: --fps 10 takes each */
    assert_int_equal(taken(10, 10, 100, 0.015), 100);
}

static void test_file_frames_on_the_due_times(void **s) {
    (void)s;
    /* a steady 10 fps file at --fps 2: frames 0, 5, 10, ... (not 4, 9, ...) */
    osp_rate_t r;
    osp_rate_init(&r, 2);
    for (int i = 0; i < 100; i++) assert_int_equal(osp_rate_take(&r, i / 10.0), i % 5 == 0);
}

static void test_higher_rate_takes_all(void **s) {
    (void)s;
    assert_int_equal(taken(30, 10, 100, 0), 100);
}

static void test_gap_no_burst(void **s) {
    (void)s;
    osp_rate_t r;
    osp_rate_init(&r, 2);
    assert_true(osp_rate_take(&r, 0.0));
    assert_false(osp_rate_take(&r, 0.2));
    assert_true(osp_rate_take(&r, 0.5));
    /* 10 s without frames, then 10 fps for 2 s: one frame per 0.5 s (10.5,
     * 11.0, 11.5, 12.0), no burst to catch up on the 20 due meanwhile */
    int k = 0;
    for (int i = 0; i < 20; i++) k += osp_rate_take(&r, 10.5 + i * 0.1);
    assert_int_equal(k, 4);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_frame_without_rate),
        cmocka_unit_test(test_lower_rate),
        cmocka_unit_test(test_same_rate_with_jitter),
        cmocka_unit_test(test_higher_rate_takes_all),
        cmocka_unit_test(test_gap_no_burst),
        cmocka_unit_test(test_file_frames_on_the_due_times),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
