/* server/account: one typed outcome a request, and every counter an answer
 * moves counted from it once — the ledger's row, the model's frames by
 * items, the shed totals, counters.errors — so that the rows add up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/account.h"
#include "server/core/stats.h"

static server_t *mini_server(void) {
    server_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    assert_non_null(s->stats = srv_stats_new());
    assert_non_null(s->ledger = srv_ledger_new());
    return s;
}

static void mini_free(server_t *s) {
    srv_ledger_free(s->ledger);
    srv_stats_free(s->stats);
    free(s);
}

static int64_t answered(const srv_ledger_row_t *r) {
    int64_t n = r->served;
    for (int i = 0; i < SRV_SHED_COUNT; i++) n += r->shed[i];
    for (int i = 0; i < SRV_FAIL_COUNT; i++) n += r->errors[i];
    return n;
}

static void test_each_outcome_counts_once(void **state) {
    (void)state;
    server_t *s = mini_server();
    for (int i = 0; i < 7; i++) srv_account_received(s, 1);
    srv_account(s, 1, 1, SRV_OUTCOME_SERVED, 0);
    srv_account(s, 1, 8, SRV_OUTCOME_SERVED, 0); /* an infer_batch of 8: one request */
    srv_account(s, 1, 1, SRV_OUTCOME_SHED(SRV_SHED_DEADLINE), 1);
    srv_account(s, 1, 1, SRV_OUTCOME_SHED(SRV_SHED_QUEUE_FULL), 0);
    srv_account(s, 1, 1, SRV_OUTCOME_FAILED(SRV_FAIL_TIMED_OUT), 0);
    srv_account(s, 1, 4, SRV_OUTCOME_FAILED(SRV_FAIL_RELOADING), 0);
    srv_account(s, 1, 1, SRV_OUTCOME_FAILED(SRV_FAIL_NOT_LOADED), 0);

    srv_ledger_row_t r;
    srv_ledger_read(s->ledger, 1, &r);
    assert_int_equal(r.received, 7);
    assert_int_equal(r.served, 2);
    assert_int_equal(r.shed[SRV_SHED_DEADLINE], 1);
    assert_int_equal(r.shed[SRV_SHED_QUEUE_FULL], 1);
    assert_int_equal(r.errors[SRV_FAIL_TIMED_OUT], 1);
    assert_int_equal(r.errors[SRV_FAIL_RELOADING], 1);
    assert_int_equal(r.errors[SRV_FAIL_NOT_LOADED], 1);
    assert_int_equal(answered(&r), r.received);
    /* every error answered is one of counters.errors; sheds have totals of their own */
    assert_int_equal(srv_stat_get(s, SRV_ST_ERRORS), 3);
    assert_int_equal(srv_stat_get(s, SRV_ST_SHED_DEADLINE), 1);
    assert_int_equal(srv_stat_get(s, SRV_ST_SHED_QUEUE_FULL), 1);
    /* the model's frames by items */
    srv_model_counts_t c;
    srv_stats_model(s->stats, 1, &c);
    assert_int_equal(c.frames[SRV_OUT_SERVED], 9);
    assert_int_equal(c.frames[SRV_OUT_EXPIRED], 1);
    assert_int_equal(c.frames[SRV_OUT_SHED], 1);
    assert_int_equal(c.frames[SRV_OUT_ERROR], 6);
    mini_free(s);
}

static void test_a_request_that_named_no_model(void **state) {
    (void)state;
    server_t *s = mini_server();
    srv_account_received(s, SRV_LEDGER_NO_MODEL);
    srv_account(s, SRV_LEDGER_NO_MODEL, 1, SRV_OUTCOME_FAILED(SRV_FAIL_BAD_REQUEST), 0);
    srv_account_received(s, SRV_LEDGER_NO_MODEL);
    srv_account(s, SRV_LEDGER_NO_MODEL, 1, SRV_OUTCOME_SHED(SRV_SHED_QUEUE_FULL), 0);
    srv_ledger_row_t r;
    srv_ledger_read(s->ledger, SRV_LEDGER_NO_MODEL, &r);
    assert_int_equal(r.received, 2);
    assert_int_equal(answered(&r), 2);
    srv_ledger_total(s->ledger, &r);
    assert_int_equal(r.received, 2);
    assert_int_equal(srv_stat_get(s, SRV_ST_ERRORS), 1);
    assert_int_equal(srv_stat_get(s, SRV_ST_SHED_QUEUE_FULL), 1);
    mini_free(s);
}

static void test_the_new_kinds_have_keys_and_labels(void **state) {
    (void)state;
    assert_string_equal(srv_fail_key(SRV_FAIL_TIMED_OUT), "timedOut");
    assert_string_equal(srv_fail_label(SRV_FAIL_TIMED_OUT), "timed-out");
    assert_string_equal(srv_fail_key(SRV_FAIL_RELOADING), "reloading");
    assert_string_equal(srv_fail_label(SRV_FAIL_RELOADING), "reloading");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_outcome_counts_once),
        cmocka_unit_test(test_a_request_that_named_no_model),
        cmocka_unit_test(test_the_new_kinds_have_keys_and_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
