/* server/ledger: requests counted per slot and in total, the row for
 * requests that named no model, and the mem_stats "requests" object. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/ledger.h"
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

static void test_rows_and_total(void **state) {
    (void)state;
    server_t *s = mini_server();
    for (int i = 0; i < 5; i++) srv_req_received(s, 2);
    srv_req_served(s, 2);
    srv_req_served(s, 2);
    srv_req_shed(s, 2, SRV_SHED_QUEUE_FULL);
    srv_req_shed(s, 2, SRV_SHED_DEADLINE);
    srv_req_error(s, 2, SRV_FAIL_NOT_LOADED);
    srv_req_received(s, SRV_LEDGER_NO_MODEL);
    srv_req_error(s, SRV_LEDGER_NO_MODEL, SRV_FAIL_BAD_REQUEST);
    srv_req_received(s, 300); /* not a slot: counted with the ones that named none */
    srv_req_error(s, 300, SRV_FAIL_BAD_REQUEST);

    srv_ledger_row_t r;
    srv_ledger_read(s->ledger, 2, &r);
    assert_int_equal(r.received, 5);
    assert_int_equal(r.served, 2);
    assert_int_equal(r.shed[SRV_SHED_QUEUE_FULL], 1);
    assert_int_equal(r.shed[SRV_SHED_DEADLINE], 1);
    assert_int_equal(r.errors[SRV_FAIL_NOT_LOADED], 1);
    assert_int_equal(r.errors[SRV_FAIL_FAILED], 0);
    srv_ledger_read(s->ledger, SRV_LEDGER_NO_MODEL, &r);
    assert_int_equal(r.received, 2);
    assert_int_equal(r.errors[SRV_FAIL_BAD_REQUEST], 2);
    srv_ledger_read(s->ledger, 1, &r);
    assert_false(srv_ledger_row_used(&r));
    srv_ledger_total(s->ledger, &r);
    assert_int_equal(r.received, 7);
    assert_int_equal(r.served, 2);
    assert_int_equal(r.errors[SRV_FAIL_BAD_REQUEST] + r.errors[SRV_FAIL_NOT_LOADED], 3);
    mini_free(s);
}

static void test_mem_stats_object(void **state) {
    (void)state;
    server_t *s = mini_server();
    srv_req_received(s, 0);
    srv_req_served(s, 0);
    srv_req_received(s, 4);
    srv_req_error(s, 4, SRV_FAIL_NOT_CACHED);
    osp_jw_t w = {0};
    srv_ledger_write(s->ledger, &w);
    assert_false(w.oom);
    const char *want =
        "{\"received\": 2, \"served\": 1, \"shed\": {\"deadlineExpired\": 0, \"queueFull\": 0}, "
        "\"errors\": {\"badRequest\": 0, \"notLoaded\": 0, \"notCached\": 1, \"failed\": 0, "
        "\"noMemory\": 0, \"timedOut\": 0, \"reloading\": 0}, \"models\": {"
        "\"0\": {\"received\": 1, \"served\": 1, \"shed\": {\"deadlineExpired\": 0, \"queueFull\": "
        "0}, \"errors\": {\"badRequest\": 0, \"notLoaded\": 0, \"notCached\": 0, \"failed\": 0, "
        "\"noMemory\": 0, \"timedOut\": 0, \"reloading\": 0}}, "
        "\"4\": {\"received\": 1, \"served\": 0, \"shed\": {\"deadlineExpired\": 0, \"queueFull\": "
        "0}, \"errors\": {\"badRequest\": 0, \"notLoaded\": 0, \"notCached\": 1, \"failed\": 0, "
        "\"noMemory\": 0, \"timedOut\": 0, \"reloading\": 0}}}, "
        "\"noModel\": {\"received\": 0, \"served\": 0, \"shed\": {\"deadlineExpired\": 0, "
        "\"queueFull\": 0}, \"errors\": {\"badRequest\": 0, \"notLoaded\": 0, \"notCached\": 0, "
        "\"failed\": 0, \"noMemory\": 0, \"timedOut\": 0, \"reloading\": 0}}}";
    assert_int_equal(w.len, strlen(want));
    assert_memory_equal(w.buf, want, w.len);
    osp_jw_free(&w);
    mini_free(s);
}

static void test_names(void **state) {
    (void)state;
    assert_string_equal(srv_shed_key(SRV_SHED_DEADLINE), "deadlineExpired");
    assert_string_equal(srv_shed_label(SRV_SHED_QUEUE_FULL), "queue-full");
    assert_string_equal(srv_fail_key(SRV_FAIL_NOT_LOADED), "notLoaded");
    assert_string_equal(srv_fail_label(SRV_FAIL_NO_MEMORY), "no-memory");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_and_total),
        cmocka_unit_test(test_mem_stats_object),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
