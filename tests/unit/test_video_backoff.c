/* The reconnect schedule (video/backoff.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include <cmocka.h>

/* this cmocka has no assert_double_equal */
#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

#include "video/backoff.h"

static void test_defaults(void **s) {
    (void)s;
    const double want[] = {0.5, 1, 2, 4, 8, 10, 10, 10};
    for (int i = 0; i < 8; i++) assert_near(osp_backoff_delay(0, 0, i), want[i], 1e-12);
    assert_near(OSP_BACKOFF_FIRST_S, 0.5, 0);
    assert_near(OSP_BACKOFF_MAX_S, 10.0, 0);
}

static void test_long_outage_stays_at_cap(void **s) {
    (void)s;
    assert_near(osp_backoff_delay(0.5, 10, 1000000), 10, 1e-12);
    assert_near(osp_backoff_delay(0.5, 10, 2147483647), 10, 1e-12);
}

static void test_given(void **s) {
    (void)s;
    assert_near(osp_backoff_delay(0.1, 0.3, 0), 0.1, 1e-12);
    assert_near(osp_backoff_delay(0.1, 0.3, 1), 0.2, 1e-12);
    assert_near(osp_backoff_delay(0.1, 0.3, 2), 0.3, 1e-12);
    /* a cap below the first delay is the first delay */
    assert_near(osp_backoff_delay(2, 1, 5), 2, 1e-12);
    assert_near(osp_backoff_delay(1, 8, -3), 1, 1e-12);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_long_outage_stays_at_cap),
        cmocka_unit_test(test_given),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
