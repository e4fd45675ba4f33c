/* The scheduler boundary: run slots, the queue, shedding the oldest, the
 * slot handed on at complete, likely_shed (free slot, full queue, the
 * second after a shed), alone, depth and the shed count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "sched/sched.h"

#define ITEM(n) ((void *)(uintptr_t)(n))

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void assert_depth(const osp_sched_t *s, int idx, int running, int pending) {
    int r = -1, p = -1;
    osp_sched_depth(s, idx, &r, &p);
    assert_int_equal(r, running);
    assert_int_equal(p, pending);
}

static void test_run_then_queue_then_shed_oldest(void **st) {
    (void)st;
    osp_sched_t *s = osp_sched_new(1, 2, 3);
    assert_non_null(s);
    void *shed = ITEM(99);
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(1), &shed), 1);
    assert_null(shed);
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(2), &shed), 1);
    assert_null(shed);
    assert_depth(s, 0, 2, 0);
    for (int i = 3; i <= 5; i++) {
        assert_int_equal(osp_sched_enqueue(s, 0, ITEM(i), &shed), 0);
        assert_null(shed);
    }
    assert_depth(s, 0, 2, 3);
    assert_int_equal(osp_sched_shed_total(s), 0);
    /* the queue is full: the oldest waiting goes, the arrival waits */
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(6), &shed), 0);
    assert_ptr_equal(shed, ITEM(3));
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(7), &shed), 0);
    assert_ptr_equal(shed, ITEM(4));
    assert_depth(s, 0, 2, 3);
    assert_int_equal(osp_sched_shed_total(s), 2);
    osp_sched_free(s);
}

static void test_complete_hands_the_slot_to_the_oldest(void **st) {
    (void)st;
    osp_sched_t *s = osp_sched_new(1, 1, 3);
    assert_non_null(s);
    void *shed;
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(1), &shed), 1);
    for (int i = 2; i <= 4; i++) assert_int_equal(osp_sched_enqueue(s, 0, ITEM(i), &shed), 0);
    assert_ptr_equal(osp_sched_complete(s, 0), ITEM(2));
    assert_depth(s, 0, 1, 2); /* 2 holds the slot now */
    /* so an arrival still waits */
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(5), &shed), 0);
    assert_null(shed);
    assert_ptr_equal(osp_sched_complete(s, 0), ITEM(3));
    assert_ptr_equal(osp_sched_complete(s, 0), ITEM(4));
    assert_ptr_equal(osp_sched_complete(s, 0), ITEM(5));
    assert_depth(s, 0, 1, 0);
    assert_null(osp_sched_complete(s, 0));
    assert_depth(s, 0, 0, 0);
    /* the slot is free: the next runs at once */
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(6), &shed), 1);
    assert_null(shed);
    osp_sched_free(s);
}

static void test_models_independent(void **st) {
    (void)st;
    osp_sched_t *s = osp_sched_new(2, 1, 1);
    assert_non_null(s);
    void *shed;
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(1), &shed), 1);
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(2), &shed), 0);
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(3), &shed), 0);
    assert_ptr_equal(shed, ITEM(2));
    /* model 1 has its own slot and queue */
    assert_int_equal(osp_sched_enqueue(s, 1, ITEM(10), &shed), 1);
    assert_null(shed);
    assert_int_equal(osp_sched_enqueue(s, 1, ITEM(11), &shed), 0);
    assert_null(shed);
    assert_int_equal(osp_sched_enqueue(s, 1, ITEM(12), &shed), 0);
    assert_ptr_equal(shed, ITEM(11));
    assert_int_equal(osp_sched_shed_total(s), 2); /* over all models */
    assert_ptr_equal(osp_sched_complete(s, 1), ITEM(12));
    assert_depth(s, 0, 1, 1);
    assert_depth(s, 1, 1, 0);
    osp_sched_free(s);
}

static void test_likely_shed_slot_and_queue(void **st) {
    (void)st;
    osp_sched_t *s = osp_sched_new(1, 2, 2);
    assert_non_null(s);
    void *shed;
    assert_int_equal(osp_sched_likely_shed(s, 0), 0);
    osp_sched_enqueue(s, 0, ITEM(1), &shed);
    assert_int_equal(osp_sched_likely_shed(s, 0), 0); /* a slot is free */
    osp_sched_enqueue(s, 0, ITEM(2), &shed);
    /* no slot, but room to wait and no shedding: it will run */
    assert_int_equal(osp_sched_likely_shed(s, 0), 0);
    osp_sched_enqueue(s, 0, ITEM(3), &shed);
    assert_int_equal(osp_sched_likely_shed(s, 0), 0);
    osp_sched_enqueue(s, 0, ITEM(4), &shed);
    assert_null(shed);
    assert_int_equal(osp_sched_likely_shed(s, 0), 1); /* queue full */
    osp_sched_free(s);

    /* no waiting room at all: only a free slot saves an arrival */
    s = osp_sched_new(1, 1, 0);
    assert_non_null(s);
    assert_int_equal(osp_sched_likely_shed(s, 0), 0);
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(1), &shed), 1);
    assert_int_equal(osp_sched_likely_shed(s, 0), 1);
    assert_int_equal(osp_sched_enqueue(s, 0, ITEM(2), &shed), 0);
    assert_ptr_equal(shed, ITEM(2)); /* the arrival itself */
    assert_int_equal(osp_sched_shed_total(s), 1);
    osp_sched_free(s);
}

/* The one test that waits out the shedding second (about 1.1 s). */
static void test_likely_shed_the_second_after_a_shed(void **st) {
    (void)st;
    osp_sched_t *s = osp_sched_new(2, 1, 2);
    assert_non_null(s);
    void *shed;
    osp_sched_enqueue(s, 0, ITEM(1), &shed);
    osp_sched_enqueue(s, 0, ITEM(2), &shed);
    osp_sched_enqueue(s, 0, ITEM(3), &shed);
    osp_sched_enqueue(s, 0, ITEM(4), &shed);
    assert_ptr_equal(shed, ITEM(2));
    /* model 1 in the same shape as model 0 will be, but it never shed */
    osp_sched_enqueue(s, 1, ITEM(10), &shed);
    osp_sched_enqueue(s, 1, ITEM(11), &shed);
    assert_null(shed);
    /* 3 runs now, 4 waits: the queue has room but the model is shedding */
    assert_ptr_equal(osp_sched_complete(s, 0), ITEM(3));
    assert_depth(s, 0, 1, 1);
    assert_int_equal(osp_sched_likely_shed(s, 0), 1);
    assert_int_equal(osp_sched_likely_shed(s, 1), 0);
    /* a slot free: it runs, shedding or not */
    assert_ptr_equal(osp_sched_complete(s, 0), ITEM(4));
    assert_null(osp_sched_complete(s, 0));
    assert_int_equal(osp_sched_likely_shed(s, 0), 0);
    /* shedding, slot taken, but the queue empty: it is next */
    osp_sched_enqueue(s, 0, ITEM(5), &shed);
    assert_depth(s, 0, 1, 0);
    assert_int_equal(osp_sched_likely_shed(s, 0), 0);
    osp_sched_enqueue(s, 0, ITEM(6), &shed);
    assert_int_equal(osp_sched_likely_shed(s, 0), 1);
    sleep_ms(1100);
    assert_int_equal(osp_sched_likely_shed(s, 0), 0);
    osp_sched_free(s);
}

static void test_alone(void **st) {
    (void)st;
    osp_sched_t *s = osp_sched_new(2, 2, 2);
    assert_non_null(s);
    void *shed;
    assert_int_equal(osp_sched_alone(s, 0, 0), 1);
    osp_sched_enqueue(s, 0, ITEM(1), &shed);
    assert_int_equal(osp_sched_alone(s, 0, 1), 1);
    assert_int_equal(osp_sched_alone(s, 0, 0), 0);
    osp_sched_enqueue(s, 0, ITEM(2), &shed);
    assert_int_equal(osp_sched_alone(s, 0, 1), 0);
    assert_int_equal(osp_sched_alone(s, 0, 2), 1);
    osp_sched_enqueue(s, 0, ITEM(3), &shed); /* waits: no longer alone */
    assert_int_equal(osp_sched_alone(s, 0, 2), 0);
    assert_int_equal(osp_sched_alone(s, 1, 0), 1); /* the other model is */
    osp_sched_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_then_queue_then_shed_oldest),
        cmocka_unit_test(test_complete_hands_the_slot_to_the_oldest),
        cmocka_unit_test(test_models_independent),
        cmocka_unit_test(test_likely_shed_slot_and_queue),
        cmocka_unit_test(test_likely_shed_the_second_after_a_shed),
        cmocka_unit_test(test_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
