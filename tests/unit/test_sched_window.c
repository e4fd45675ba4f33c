/* Batch windows: filling to max_items (capped), taking in arrival order,
 * the timer (none open, counting down, due, overdue), restore, and models
 * that do not disturb each other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "sched/window.h"

#define ITEM(n) ((void *)(uintptr_t)(n))
#define LONG_MS 60000.0 /* a window that never comes due during a test */

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_add_until_full_then_take_in_order(void **s) {
    (void)s;
    osp_window_t *w = osp_window_new(1, 3, LONG_MS);
    assert_non_null(w);
    assert_int_equal(osp_window_add(w, 0, ITEM(1)), 0);
    assert_int_equal(osp_window_add(w, 0, ITEM(2)), 0);
    assert_int_equal(osp_window_add(w, 0, ITEM(3)), 1);
    void *out[OSP_WINDOW_MAX];
    assert_int_equal(osp_window_take(w, 0, out), 3);
    assert_ptr_equal(out[0], ITEM(1));
    assert_ptr_equal(out[1], ITEM(2));
    assert_ptr_equal(out[2], ITEM(3));
    /* closed: nothing left, nothing open */
    assert_int_equal(osp_window_take(w, 0, out), 0);
    assert_int_equal(osp_window_timer_ms(w), -1);
    assert_int_equal(osp_window_due(w), -1);
    /* it opens again, empty */
    assert_int_equal(osp_window_add(w, 0, ITEM(4)), 0);
    assert_int_equal(osp_window_take(w, 0, out), 1);
    assert_ptr_equal(out[0], ITEM(4));
    osp_window_free(w);
}

static void test_max_items_capped(void **s) {
    (void)s;
    osp_window_t *w = osp_window_new(1, 1000, LONG_MS);
    assert_non_null(w);
    for (int i = 1; i < OSP_WINDOW_MAX; i++) assert_int_equal(osp_window_add(w, 0, ITEM(i)), 0);
    assert_int_equal(osp_window_add(w, 0, ITEM(OSP_WINDOW_MAX)), 1);
    void *out[OSP_WINDOW_MAX];
    assert_int_equal(osp_window_take(w, 0, out), OSP_WINDOW_MAX);
    for (int i = 0; i < OSP_WINDOW_MAX; i++) assert_ptr_equal(out[i], ITEM(i + 1));
    osp_window_free(w);
}

static void test_timer_counts_down_then_due(void **s) {
    (void)s;
    osp_window_t *w = osp_window_new(1, 8, 80.0);
    assert_non_null(w);
    assert_int_equal(osp_window_timer_ms(w), -1);
    osp_window_add(w, 0, ITEM(1));
    int t1 = osp_window_timer_ms(w);
    assert_true(t1 >= 0 && t1 <= 80);
    sleep_ms(20);
    int t2 = osp_window_timer_ms(w);
    assert_true(t2 >= 0);
    assert_true(t2 <= (t1 > 20 ? t1 - 20 : 0));
    sleep_ms(80);
    assert_int_equal(osp_window_timer_ms(w), 0);
    assert_int_equal(osp_window_due(w), 0);
    /* long overdue: still 0, never -1, while it is open */
    sleep_ms(50);
    assert_int_equal(osp_window_timer_ms(w), 0);
    assert_int_equal(osp_window_due(w), 0);
    void *out[OSP_WINDOW_MAX];
    assert_int_equal(osp_window_take(w, 0, out), 1);
    assert_int_equal(osp_window_timer_ms(w), -1);
    assert_int_equal(osp_window_due(w), -1);
    osp_window_free(w);
}

static void test_not_due_before_its_time(void **s) {
    (void)s;
    osp_window_t *w = osp_window_new(1, 8, LONG_MS);
    assert_non_null(w);
    osp_window_add(w, 0, ITEM(1));
    assert_int_equal(osp_window_due(w), -1);
    assert_true(osp_window_timer_ms(w) > 0);
    osp_window_free(w);
}

static void test_restore_is_due_at_once(void **s) {
    (void)s;
    osp_window_t *w = osp_window_new(1, 8, LONG_MS);
    assert_non_null(w);
    osp_window_add(w, 0, ITEM(1));
    osp_window_add(w, 0, ITEM(2));
    void *out[OSP_WINDOW_MAX];
    assert_int_equal(osp_window_take(w, 0, out), 2);
    osp_window_restore(w, 0, out, 2);
    assert_int_equal(osp_window_due(w), 0);
    assert_int_equal(osp_window_timer_ms(w), 0);
    void *again[OSP_WINDOW_MAX];
    assert_int_equal(osp_window_take(w, 0, again), 2);
    assert_ptr_equal(again[0], ITEM(1));
    assert_ptr_equal(again[1], ITEM(2));
    assert_int_equal(osp_window_timer_ms(w), -1);
    osp_window_free(w);
}

static void test_models_independent(void **s) {
    (void)s;
    osp_window_t *w = osp_window_new(3, 2, LONG_MS);
    assert_non_null(w);
    assert_int_equal(osp_window_add(w, 0, ITEM(10)), 0);
    assert_int_equal(osp_window_add(w, 2, ITEM(20)), 0);
    /* model 2's first item does not fill model 0's window */
    assert_int_equal(osp_window_add(w, 2, ITEM(21)), 1);
    void *out[OSP_WINDOW_MAX];
    assert_int_equal(osp_window_take(w, 2, out), 2);
    assert_ptr_equal(out[0], ITEM(20));
    assert_ptr_equal(out[1], ITEM(21));
    /* model 0 is still open and has its own item only */
    assert_true(osp_window_timer_ms(w) > 0);
    assert_int_equal(osp_window_take(w, 1, out), 0);
    /* a restored model is the due one; the other still waits */
    osp_window_restore(w, 1, (void *[]){ITEM(30)}, 1);
    assert_int_equal(osp_window_due(w), 1);
    assert_int_equal(osp_window_timer_ms(w), 0);
    assert_int_equal(osp_window_take(w, 1, out), 1);
    assert_ptr_equal(out[0], ITEM(30));
    assert_int_equal(osp_window_due(w), -1);
    assert_true(osp_window_timer_ms(w) > 0);
    assert_int_equal(osp_window_take(w, 0, out), 1);
    assert_ptr_equal(out[0], ITEM(10));
    assert_int_equal(osp_window_timer_ms(w), -1);
    osp_window_free(w);
}

/* The timer follows the window opened first, not the last one. */
static void test_timer_follows_the_oldest_window(void **s) {
    (void)s;
    osp_window_t *w = osp_window_new(2, 8, 1000.0);
    assert_non_null(w);
    osp_window_add(w, 0, ITEM(1));
    sleep_ms(30);
    osp_window_add(w, 1, ITEM(2));
    assert_true(osp_window_timer_ms(w) <= 1000 - 30);
    osp_window_free(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_until_full_then_take_in_order),
        cmocka_unit_test(test_max_items_capped),
        cmocka_unit_test(test_timer_counts_down_then_due),
        cmocka_unit_test(test_not_due_before_its_time),
        cmocka_unit_test(test_restore_is_due_at_once),
        cmocka_unit_test(test_models_independent),
        cmocka_unit_test(test_timer_follows_the_oldest_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
