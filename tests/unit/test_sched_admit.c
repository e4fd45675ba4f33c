/* Admission: run bound, pending bound, drop-oldest, promotion, paced sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sched/admit.h"

#define ITEM(n) ((void *)(uintptr_t)(n))

static void test_run_then_wait_then_shed_oldest(void **s) {
    (void)s;
    osp_admit_t a;
    void *shed;
    osp_admit_init(&a, 1, 2);
    assert_int_equal(osp_admit_offer(&a, ITEM(1), &shed), 1);
    assert_null(shed);
    assert_int_equal(osp_admit_offer(&a, ITEM(2), &shed), 0);
    assert_null(shed);
    assert_int_equal(osp_admit_offer(&a, ITEM(3), &shed), 0);
    assert_null(shed);
    /* the fourth pushes out the oldest waiting one (2), not itself */
    assert_int_equal(osp_admit_offer(&a, ITEM(4), &shed), 0);
    assert_ptr_equal(shed, ITEM(2));
    assert_int_equal(osp_admit_offer(&a, ITEM(5), &shed), 0);
    assert_ptr_equal(shed, ITEM(3));
    assert_int_equal(a.running, 1);
    assert_int_equal(a.count, 2);
    /* nothing promoted while the run slot is taken */
    assert_null(osp_admit_promote(&a));
    osp_admit_done(&a);
    assert_ptr_equal(osp_admit_promote(&a), ITEM(4));
    assert_null(osp_admit_promote(&a));
    osp_admit_done(&a);
    assert_ptr_equal(osp_admit_promote(&a), ITEM(5));
    osp_admit_done(&a);
    assert_null(osp_admit_promote(&a));
    assert_int_equal(a.running, 0);
}

/* Eight cameras' frames, one each, on one run slot and two waiting
 * places: each waits its turn, in order; none pushes out another's. A
 * host's frame past the places still pushes out the oldest, and a paced
 * frame is shed only when the ring itself is full. */
static void test_paced_sources_wait_their_turn(void **s) {
    (void)s;
    osp_admit_t a;
    void *shed;
    osp_admit_init(&a, 1, 2);
    assert_int_equal(osp_admit_offer_paced(&a, ITEM(1), &shed), 1);
    for (int i = 2; i <= 8; i++) {
        assert_int_equal(osp_admit_offer_paced(&a, ITEM(i), &shed), 0);
        assert_null(shed);
    }
    assert_int_equal(a.count, 7);
    assert_int_equal(osp_admit_offer(&a, ITEM(100), &shed), 0); /* a host's */
    assert_ptr_equal(shed, ITEM(2));
    for (int i = 3; i <= 8; i++) {
        osp_admit_done(&a);
        assert_ptr_equal(osp_admit_promote(&a), ITEM(i));
    }
    osp_admit_done(&a);
    assert_ptr_equal(osp_admit_promote(&a), ITEM(100));
    osp_admit_done(&a);
    assert_null(osp_admit_promote(&a));
    /* the ring full: the oldest goes, as for any arrival */
    assert_int_equal(osp_admit_offer_paced(&a, ITEM(1), &shed), 1);
    for (int i = 0; i < OSP_ADMIT_PENDING_CAP; i++) osp_admit_offer_paced(&a, ITEM(10 + i), &shed);
    assert_null(shed);
    assert_int_equal(osp_admit_offer_paced(&a, ITEM(999), &shed), 0);
    assert_ptr_equal(shed, ITEM(10));
    assert_int_equal(a.count, OSP_ADMIT_PENDING_CAP);
}

static void test_workers(void **s) {
    (void)s;
    osp_admit_t a;
    void *shed;
    osp_admit_init(&a, 3, 2);
    for (int i = 0; i < 3; i++) assert_int_equal(osp_admit_offer(&a, ITEM(i), &shed), 1);
    assert_int_equal(osp_admit_offer(&a, ITEM(9), &shed), 0);
    osp_admit_done(&a);
    osp_admit_done(&a);
    assert_ptr_equal(osp_admit_promote(&a), ITEM(9));
    assert_int_equal(a.running, 2);
    /* a shed of a promoted item: done keeps the count right */
    osp_admit_done(&a);
    osp_admit_done(&a);
    osp_admit_done(&a); /* never below zero */
    assert_int_equal(a.running, 0);
}

static void test_no_pending_room(void **s) {
    (void)s;
    osp_admit_t a;
    void *shed;
    osp_admit_init(&a, 1, 0);
    assert_int_equal(osp_admit_offer(&a, ITEM(1), &shed), 1);
    assert_int_equal(osp_admit_offer(&a, ITEM(2), &shed), 0);
    assert_ptr_equal(shed, ITEM(2));
}

static void test_drain_and_wrap(void **s) {
    (void)s;
    osp_admit_t a;
    void *shed, *out[8];
    osp_admit_init(&a, 1, 2);
    osp_admit_offer(&a, ITEM(0), &shed);
    for (int i = 1; i < 100; i++) osp_admit_offer(&a, ITEM(i), &shed);
    assert_ptr_equal(shed, ITEM(97));
    assert_int_equal(osp_admit_drain(&a, out, 8), 2);
    assert_ptr_equal(out[0], ITEM(98));
    assert_ptr_equal(out[1], ITEM(99));
    assert_int_equal(a.count, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_then_wait_then_shed_oldest),
        cmocka_unit_test(test_workers),
        cmocka_unit_test(test_paced_sources_wait_their_turn),
        cmocka_unit_test(test_no_pending_room),
        cmocka_unit_test(test_drain_and_wrap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
