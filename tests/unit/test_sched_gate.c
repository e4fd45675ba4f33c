/* The deadline gate: no deadline, a past one, a future one (the clocks
 * themselves: test_base_clock.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/clock.h"
#include "sched/gate.h"

static void test_no_deadline_never_expires(void **s) {
    (void)s;
    assert_int_equal(osp_gate_expired(0), 0);
}

static void test_past_deadline_expired(void **s) {
    (void)s;
    uint64_t now = (uint64_t)osp_epoch_ms();
    assert_int_equal(osp_gate_expired(now - 1000), 1);
    assert_int_equal(osp_gate_expired(1), 1); /* 1 ms after the epoch: long gone */
}

static void test_future_deadline_not_expired(void **s) {
    (void)s;
    uint64_t now = (uint64_t)osp_epoch_ms();
    assert_int_equal(osp_gate_expired(now + 60000), 0);
    assert_int_equal(osp_gate_expired(UINT64_MAX), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_deadline_never_expires),
        cmocka_unit_test(test_past_deadline_expired),
        cmocka_unit_test(test_future_deadline_not_expired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
