/* Activation ranges for int8 calibration: min/max over every value shown,
 * percentile ranges from the histogram, non-finite values ignored. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "model/calib.h"

static void test_minmax_over_several_frames(void **state) {
    (void)state;
    osp_calib_t c;
    osp_calib_init(&c);
    const float a[] = {0.5f, -2.f, 3.f}, b[] = {7.f, 1.f}, none[] = {NAN, INFINITY};
    osp_calib_observe(&c, a, 3);
    osp_calib_observe(&c, none, 2);
    osp_calib_observe(&c, b, 2);
    float lo, hi;
    osp_calib_range(&c, OSP_CALIB_MINMAX, 99.9, &lo, &hi);
    assert_float_equal(lo, -2.f, 0.f);
    assert_float_equal(hi, 7.f, 0.f);
    assert_int_equal(c.seen, 5);
    osp_calib_free(&c);
}

static void test_nothing_seen_is_zero(void **state) {
    (void)state;
    osp_calib_t c;
    osp_calib_init(&c);
    const float none[] = {NAN};
    osp_calib_observe(&c, none, 1);
    float lo = 1, hi = 1;
    osp_calib_range(&c, OSP_CALIB_PERCENTILE, 99.9, &lo, &hi);
    assert_float_equal(lo, 0.f, 0.f);
    assert_float_equal(hi, 0.f, 0.f);
    osp_calib_free(&c);
}

/* 100000 values uniform in [0, 1) and one outlier at 1000: the 99.99th
 * percentile ignores the outlier, min/max does not. */
static void test_percentile_drops_outliers(void **state) {
    (void)state;
    enum { N = 100000 };
    float *x = malloc((N + 1) * sizeof *x);
    assert_non_null(x);
    for (int i = 0; i < N; i++) x[i] = (float)i / N;
    x[N] = 1000.f;
    osp_calib_t c;
    osp_calib_init(&c);
    osp_calib_observe(&c, x, N + 1);
    assert_int_equal(osp_calib_hist_begin(&c), 0);
    osp_calib_count(&c, x, N + 1);
    float lo, hi;
    osp_calib_range(&c, OSP_CALIB_MINMAX, 99.99, &lo, &hi);
    assert_float_equal(hi, 1000.f, 0.f);
    osp_calib_range(&c, OSP_CALIB_PERCENTILE, 99.99, &lo, &hi);
    /* bins are 1000/2048 wide: the range ends at the edge of the bin that holds 1 */
    assert_float_equal(lo, 0.f, 0.f);
    assert_true(hi >= 0.99f && hi <= 1.f + 1000.f / OSP_CALIB_BINS);
    osp_calib_free(&c);
    free(x);
}

/* Tails on both sides: 0.5 % below -1 and 0.5 % above 1 are cut at 99 %. */
static void test_percentile_both_tails(void **state) {
    (void)state;
    enum { N = 20000 };
    float *x = malloc(N * sizeof *x);
    assert_non_null(x);
    for (int i = 0; i < N; i++) x[i] = -1.f + 2.f * (float)i / N;
    for (int i = 0; i < N / 200; i++) {
        x[i] = -5.f;
        x[N - 1 - i] = 5.f;
    }
    osp_calib_t c;
    osp_calib_init(&c);
    osp_calib_observe(&c, x, N);
    assert_int_equal(osp_calib_hist_begin(&c), 0);
    osp_calib_count(&c, x, N);
    float lo, hi;
    osp_calib_range(&c, OSP_CALIB_PERCENTILE, 99.0, &lo, &hi);
    float bin = 10.f / OSP_CALIB_BINS;
    assert_true(lo >= -1.f - 2 * bin && lo <= -0.97f);
    assert_true(hi <= 1.f + 2 * bin && hi >= 0.97f);
    osp_calib_range(&c, OSP_CALIB_PERCENTILE, 100.0, &lo, &hi);
    assert_float_equal(lo, -5.f, 1e-5f);
    assert_float_equal(hi, 5.f, 1e-5f);
    osp_calib_free(&c);
    free(x);
}

/* Values outside pass 1's range in pass 2 are counted in the end bins. */
static void test_count_outside_range_is_kept(void **state) {
    (void)state;
    const float a[] = {0.f, 1.f}, b[] = {-3.f, 4.f};
    osp_calib_t c;
    osp_calib_init(&c);
    osp_calib_observe(&c, a, 2);
    assert_int_equal(osp_calib_hist_begin(&c), 0);
    osp_calib_count(&c, b, 2);
    assert_int_equal(c.counted, 2);
    assert_int_equal(c.hist[0], 1);
    assert_int_equal(c.hist[OSP_CALIB_BINS - 1], 1);
    osp_calib_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_minmax_over_several_frames),
        cmocka_unit_test(test_nothing_seen_is_zero),
        cmocka_unit_test(test_percentile_drops_outliers),
        cmocka_unit_test(test_percentile_both_tails),
        cmocka_unit_test(test_count_outside_range_is_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
