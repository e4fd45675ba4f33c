/* The deadline gate: no deadline, a past one, a future one; the epoch clock
 * is the wall clock and the elapsed-time helper reads the monotonic one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "sched/gate.h"

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_no_deadline_never_expires(void **s) {
    (void)s;
    assert_int_equal(osp_gate_expired(0), 0);
}

static void test_past_deadline_expired(void **s) {
    (void)s;
    uint64_t now = (uint64_t)osp_gate_epoch_ms();
    assert_int_equal(osp_gate_expired(now - 1000), 1);
    assert_int_equal(osp_gate_expired(1), 1); /* 1 ms after the epoch: long gone */
}

static void test_future_deadline_not_expired(void **s) {
    (void)s;
    uint64_t now = (uint64_t)osp_gate_epoch_ms();
    assert_int_equal(osp_gate_expired(now + 60000), 0);
    assert_int_equal(osp_gate_expired(UINT64_MAX), 0);
}

/* The protocol's deadlines are the host's wall clock: the same second as
 * time(), not seconds since boot. */
static void test_epoch_is_wall_clock(void **s) {
    (void)s;
    time_t before = time(NULL);
    int64_t ms = osp_gate_epoch_ms();
    time_t after = time(NULL);
    assert_true(ms / 1000 >= (int64_t)before);
    assert_true(ms / 1000 <= (int64_t)after);
}

static void test_ms_since_counts_monotonic_time(void **s) {
    (void)s;
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    sleep_ms(20);
    assert_true(osp_gate_ms_since(&t) >= 20.0);

    /* 1.5 s ago, with a borrow across the nanoseconds */
    struct timespec ago;
    clock_gettime(CLOCK_MONOTONIC, &ago);
    ago.tv_sec -= 1;
    ago.tv_nsec -= 500000000L;
    if (ago.tv_nsec < 0) {
        ago.tv_sec -= 1;
        ago.tv_nsec += 1000000000L;
    }
    assert_true(osp_gate_ms_since(&ago) >= 1500.0);

    /* an hour ahead on the monotonic clock is still ahead: read against
     * the wall clock it would be decades past */
    struct timespec ahead;
    clock_gettime(CLOCK_MONOTONIC, &ahead);
    ahead.tv_sec += 3600;
    assert_true(osp_gate_ms_since(&ahead) < 0.0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_deadline_never_expires),
        cmocka_unit_test(test_past_deadline_expired),
        cmocka_unit_test(test_future_deadline_not_expired),
        cmocka_unit_test(test_epoch_is_wall_clock),
        cmocka_unit_test(test_ms_since_counts_monotonic_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
