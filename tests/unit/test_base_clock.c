/* The clocks: the epoch clock is the wall clock, the elapsed-time helpers
 * read the monotonic one, and deadline arithmetic carries across seconds
 * both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "base/clock.h"

/* The protocol's deadlines are the host's wall clock: the same second as
 * time(), not seconds since boot. */
static void test_epoch_is_wall_clock(void **s) {
    (void)s;
    time_t before = time(NULL);
    int64_t ms = osp_epoch_ms();
    double secs = osp_epoch_s();
    time_t after = time(NULL);
    assert_true(ms / 1000 >= (int64_t)before);
    assert_true(ms / 1000 <= (int64_t)after);
    assert_true(secs >= (double)before);
    assert_true(secs < (double)after + 1);
}

static void test_ms_since_counts_monotonic_time(void **s) {
    (void)s;
    struct timespec t;
    osp_now(&t);
    osp_sleep_ms(20);
    assert_true(osp_ms_since(&t) >= 20.0);

    /* 1.5 s ago, with a borrow across the nanoseconds */
    struct timespec ago;
    osp_now(&ago);
    ago.tv_sec -= 1;
    ago.tv_nsec -= 500000000L;
    if (ago.tv_nsec < 0) {
        ago.tv_sec -= 1;
        ago.tv_nsec += 1000000000L;
    }
    assert_true(osp_ms_since(&ago) >= 1500.0);

    /* an hour ahead on the monotonic clock is still ahead: read against
     * the wall clock it would be decades past */
    struct timespec ahead;
    osp_now(&ahead);
    ahead.tv_sec += 3600;
    assert_true(osp_ms_since(&ahead) < 0.0);
}

/* The two scalar readings and the timespec are one clock. */
static void test_now_ms_and_s_are_the_monotonic_clock(void **s) {
    (void)s;
    struct timespec t;
    osp_now(&t);
    double ms = osp_now_ms(), secs = osp_now_s();
    double at = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
    assert_true(ms >= at && ms - at < 1000.0);
    assert_true(secs * 1e3 >= at && secs * 1e3 - at < 1000.0);
    double later = osp_now_ms();
    assert_true(later >= ms);
}

static void test_ms_until_counts_down_and_goes_negative(void **s) {
    (void)s;
    struct timespec due = osp_deadline_in(CLOCK_MONOTONIC, 5000);
    int64_t left = osp_ms_until(&due);
    assert_true(left > 4000 && left <= 5000);

    struct timespec past = osp_deadline_in(CLOCK_MONOTONIC, -2000);
    left = osp_ms_until(&past);
    assert_true(left <= -2000 && left > -3000);
}

/* Seconds and nanoseconds are subtracted apart and the nanoseconds
 * truncated: a deadline under a millisecond away reads 0 either side. */
static void test_diff_truncates_the_nanoseconds(void **s) {
    (void)s;
    struct timespec a = {10, 900000000L}, b = {10, 100000000L};
    assert_int_equal(osp_timespec_diff_ms(&a, &b), 800);
    assert_int_equal(osp_timespec_diff_ms(&b, &a), -800);
    struct timespec c = {11, 100000000L};
    assert_int_equal(osp_timespec_diff_ms(&c, &a), 200);
    struct timespec d = {10, 100400000L};
    assert_int_equal(osp_timespec_diff_ms(&d, &b), 0);
    assert_int_equal(osp_timespec_diff_ms(&b, &d), 0);
    struct timespec e = {10, 101900000L};
    assert_int_equal(osp_timespec_diff_ms(&e, &b), 1);
}

static void test_add_ms_carries_and_borrows(void **s) {
    (void)s;
    struct timespec t = {5, 900000000L};
    osp_timespec_add_ms(&t, 250);
    assert_int_equal(t.tv_sec, 6);
    assert_int_equal(t.tv_nsec, 150000000L);

    osp_timespec_add_ms(&t, 3000);
    assert_int_equal(t.tv_sec, 9);
    assert_int_equal(t.tv_nsec, 150000000L);

    osp_timespec_add_ms(&t, 0.5); /* fractions of a millisecond are kept */
    assert_int_equal(t.tv_sec, 9);
    assert_int_equal(t.tv_nsec, 150500000L);

    osp_timespec_add_ms(&t, -200.5); /* earlier, across the second */
    assert_int_equal(t.tv_sec, 8);
    assert_int_equal(t.tv_nsec, 950000000L);

    osp_timespec_add_ms(&t, -1950);
    assert_int_equal(t.tv_sec, 7);
    assert_int_equal(t.tv_nsec, 0);

    struct timespec big = {0, 999999999L};
    osp_timespec_add_ms(&big, 86400000.0); /* a day, the largest bound used */
    assert_int_equal(big.tv_sec, 86400);
    assert_int_equal(big.tv_nsec, 999999999L);
}

static void test_deadline_in_reads_the_clock_asked(void **s) {
    (void)s;
    struct timespec m = osp_deadline_in(CLOCK_MONOTONIC, 1000);
    double left = -osp_ms_since(&m);
    assert_true(left > 900.0 && left <= 1000.0);

    time_t before = time(NULL);
    struct timespec r = osp_deadline_in(CLOCK_REALTIME, 60000);
    assert_true(r.tv_sec >= before + 59 && r.tv_sec <= time(NULL) + 60);
    assert_true(r.tv_nsec >= 0 && r.tv_nsec < 1000000000L);
}

static void test_sleeps(void **s) {
    (void)s;
    struct timespec t;
    osp_now(&t);
    osp_sleep_ms(0);
    osp_sleep_ms(-5);
    assert_true(osp_ms_since(&t) < 1000.0); /* nothing to wait for */

    osp_now(&t);
    osp_sleep_ms(15.5);
    assert_true(osp_ms_since(&t) >= 15.5);

    struct timespec due = osp_deadline_in(CLOCK_MONOTONIC, 30);
    osp_sleep_until(&due);
    assert_true(osp_ms_since(&due) >= 0.0);
    osp_now(&t);
    osp_sleep_until(&due); /* already past: at once */
    assert_true(osp_ms_since(&t) < 1000.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_epoch_is_wall_clock),
        cmocka_unit_test(test_ms_since_counts_monotonic_time),
        cmocka_unit_test(test_now_ms_and_s_are_the_monotonic_clock),
        cmocka_unit_test(test_ms_until_counts_down_and_goes_negative),
        cmocka_unit_test(test_diff_truncates_the_nanoseconds),
        cmocka_unit_test(test_add_ms_carries_and_borrows),
        cmocka_unit_test(test_deadline_in_reads_the_clock_asked),
        cmocka_unit_test(test_sleeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
