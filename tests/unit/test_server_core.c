/* The core's door driven with no front end: a core made alone
 * (core/core.h), a model of the test backend (a test double:
 * docs/test-backend.md) in slot 0, and a loopback transport whose send
 * records each request's typed outcome. Each request is answered exactly
 * once, through the transport, with the outcome it earned — served, shed
 * for a reason, failed of a kind — and the ledger adds up: received =
 * served + shed + errors, after a run the watchdog gives up too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/model.h"
#include "runtime/runtime.h"
#include "server/core/core.h"
#include "server/core/dispatch.h"
#include "server/core/exec.h"
#include "server/core/job.h"
#include "server/core/ledger.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "server/core/watchdog.h"
#include "tmpdir.h"
#include "core_harness.h"

#define WAIT_MS 20000

/* ---- the loopback transport -------------------------------------------------- */

typedef struct {
    int sends;             /* times its answer came: must end at 1 */
    srv_outcome_t outcome; /* what the answer said */
    int dets;              /* detections its result had (-1: no result) */
} lreq_t;

static uint8_t g_pixels[32 * 32 * 3];

static int lb_prepare(srv_req_t *r, const osp_model_t *m, osp_infer_ctx_t *ctx, char *err,
                      size_t errlen) {
    (void)r;
    osp_view_t v = {.data = g_pixels, .width = 32, .height = 32, .stride = 32 * 3, .fmt = OSP_PIX_RGB};
    return osp_model_prepare(m, ctx, &v, 0, 0, err, errlen);
}

static void lb_result(srv_req_t *r, const osp_model_t *m, const osp_result_t *res) {
    (void)m;
    lreq_t *q = r->tp_arg;
    q->dets = res->kind == OSP_REC_DETECTIONS ? res->n_dets : 0;
}

static void lb_send(server_t *s, srv_req_t *r) {
    (void)s;
    lreq_t *q = r->tp_arg;
    q->sends++;
    q->outcome = r->outcome;
}

static const srv_transport_t LOOPBACK = {.prepare = lb_prepare, .result = lb_result, .send = lb_send};

static int answered(const lreq_t *q, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += q[i].sends > 0;
    return k;
}

static void wait_answered(server_t *s, const lreq_t *q, int n) {
    for (int t = 0; t < WAIT_MS && answered(q, n) < n; t++) {
        pump(s);
        sleep_ms(1);
    }
    assert_int_equal(answered(q, n), n);
}

static int submit(server_t *s, int idx, uint64_t deadline_ms, lreq_t *q) {
    *q = (lreq_t){.dets = -1};
    return srv_submit_frame(s, idx, deadline_ms, &LOOPBACK, q);
}

/* received = served + shed + errors, for row idx (which received
 * `received`) and in total */
static void assert_adds_up(server_t *s, int idx, int64_t received) {
    srv_ledger_row_t rows[2];
    srv_ledger_read(s->ledger, idx, &rows[0]);
    srv_ledger_total(s->ledger, &rows[1]);
    for (int k = 0; k < 2; k++) {
        int64_t out = rows[k].served;
        for (int i = 0; i < SRV_SHED_COUNT; i++) out += rows[k].shed[i];
        for (int i = 0; i < SRV_FAIL_COUNT; i++) out += rows[k].errors[i];
        if (k == 0) assert_int_equal(rows[k].received, received);
        assert_int_equal(out, rows[k].received);
    }
}

static uint64_t epoch_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- tests --------------------------------------------------------------------- */

static void test_served_shed_and_refused_each_once(void **state) {
    (void)state;
    server_t *s = core_new(1);
    put_model(s, 0, "face.json", NULL, 0);
    lreq_t q[3];
    assert_int_equal(submit(s, 0, epoch_ms() + 60000, &q[0]), 0);
    assert_int_equal(submit(s, 0, 1, &q[1]), 0); /* its deadline passed long ago */
    assert_int_equal(submit(s, 7, 0, &q[2]), 0); /* no model at 7 */
    wait_answered(s, q, 3);
    for (int i = 0; i < 50; i++) pump(s); /* nothing is answered twice */
    for (int i = 0; i < 3; i++) assert_int_equal(q[i].sends, 1);
    assert_int_equal(q[0].outcome.fate, SRV_SERVED);
    assert_int_equal(q[0].dets, 1);
    assert_int_equal(q[1].outcome.fate, SRV_SHED);
    assert_int_equal(q[1].outcome.shed, SRV_SHED_DEADLINE);
    assert_int_equal(q[1].dets, -1); /* never run */
    assert_int_equal(q[2].outcome.fate, SRV_FAILED);
    assert_int_equal(q[2].outcome.fail, SRV_FAIL_NOT_LOADED);
    assert_adds_up(s, 0, 2);
    assert_adds_up(s, 7, 1);
    srv_core_free(s);
}

/* One worker held by a run that waits; the frames behind it overflow the
 * model's queue, and the oldest waiting ones are shed as queue-full. */
static void test_a_full_queue_sheds_the_oldest(void **state) {
    (void)state;
    char gate[512];
    path_in(gate, sizeof gate, "queue.gate");
    unlink(gate);
    server_t *s = core_new(1);
    put_model(s, 0, "held.json", gate, 0);
    enum { N = 6 };
    lreq_t q[N];
    for (int i = 0; i < N; i++) assert_int_equal(submit(s, 0, 0, &q[i]), 0);
    for (int i = 0; i < 50; i++) pump(s);
    int shed = 0;
    for (int i = 0; i < N; i++) shed += q[i].sends == 1 && q[i].outcome.fate == SRV_SHED;
    assert_true(shed >= 1);
    for (int i = 0; i < N; i++)
        if (q[i].sends) assert_int_equal(q[i].outcome.shed, SRV_SHED_QUEUE_FULL);
    assert_int_equal(q[N - 1].sends, 0); /* the newest waits: drop-oldest */
    FILE *f = fopen(gate, "w");
    fclose(f);
    wait_answered(s, q, N);
    int served = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(q[i].sends, 1);
        served += q[i].outcome.fate == SRV_SERVED;
    }
    assert_int_equal(served + shed, N);
    assert_int_equal(q[0].outcome.fate, SRV_SERVED); /* it was running */
    assert_int_equal(q[N - 1].outcome.fate, SRV_SERVED);
    assert_adds_up(s, 0, N);
    srv_core_free(s);
}

/* A run past its model's bound is given up by the watchdog (driven here
 * through its timer): answered timed out, refusals while the model
 * reloads, and the ledger adds up through all of it. */
static void test_the_watchdog_gives_a_run_up(void **state) {
    (void)state;
    char gate[512];
    path_in(gate, sizeof gate, "stuck.gate");
    unlink(gate);
    server_t *s = core_new(2);
    put_model(s, 0, "stuck.json", gate, 300);
    lreq_t q[1];
    assert_int_equal(submit(s, 0, 0, &q[0]), 0);
    wait_answered(s, q, 1);
    assert_int_equal(q[0].outcome.fate, SRV_FAILED);
    assert_int_equal(q[0].outcome.fail, SRV_FAIL_TIMED_OUT);
    /* while its session reloads, or served again once reloaded (the reload
     * of a test model is quick): either way answered once, and counted */
    lreq_t r[1];
    assert_int_equal(submit(s, 0, 0, &r[0]), 0);
    FILE *f = fopen(gate, "w"); /* the stuck run returns, and so may the next */
    fclose(f);
    wait_answered(s, r, 1);
    assert_true(r[0].outcome.fate == SRV_SERVED ||
                (r[0].outcome.fate == SRV_FAILED && r[0].outcome.fail == SRV_FAIL_RELOADING));
    for (int t = 0; t < WAIT_MS && srv_exec_stuck(s); t++) {
        pump(s);
        sleep_ms(1);
    }
    assert_int_equal(srv_exec_stuck(s), 0);
    for (int t = 0; t < 200; t++) { /* the late return's job back, released */
        pump(s);
        sleep_ms(1);
    }
    assert_int_equal(q[0].sends, 1);
    assert_adds_up(s, 0, 2);
    srv_ledger_row_t row;
    srv_ledger_read(s->ledger, 0, &row);
    assert_int_equal(row.errors[SRV_FAIL_TIMED_OUT], 1);
    srv_core_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_served_shed_and_refused_each_once),
        cmocka_unit_test(test_a_full_queue_sheds_the_oldest),
        cmocka_unit_test(test_the_watchdog_gives_a_run_up),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
