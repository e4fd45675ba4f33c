/* Request dispatch on the I/O thread; see dispatch.h. */
#include "server/core/dispatch.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "sched/gate.h"
#include "sched/sched.h"
#include "sched/window.h"
#include "server/core/account.h"
#include "server/core/exec.h"
#include "server/core/ledger.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "wire/frame.h"
#include "log/log.h"

/* ---- jobs coming back ---------------------------------------------------------------- */

static int run_admitted(server_t *s, frame_job_t *j);

/* A run slot of model idx was freed: it goes to waiting frames until one runs. */
static void next_after(server_t *s, int idx) {
    frame_job_t *next;
    while ((next = osp_sched_complete(s->sched, idx)) && !run_admitted(s, next)) {
    }
    srv_stat_depth(s, idx);
}

/* A served frame's stages into its model's histograms: total from the job's
 * making to now; queue is what is neither preparing nor running (waiting
 * for a run slot, in the pools' queues, the hand-back). A frame prepared
 * as it was read (rows.c: no worker started its prepare, t0) was prepared
 * before its job was made: that time is added to its total. */
static void count_served(server_t *s, const frame_job_t *j) {
    int idx = j->r.model_idx;
    double prep = j->ctx ? j->ctx->prep_ms : 0, pred = j->r.predict_ms;
    int as_read = j->r.t0.tv_sec == 0 && j->r.t0.tv_nsec == 0;
    double total = osp_ms_since(&j->r.arrived) + (as_read ? prep : 0);
    double queue = total - prep - pred;
    srv_stat_duration(s, idx, SRV_STAGE_QUEUE, queue > 0 ? queue : 0);
    srv_stat_duration(s, idx, SRV_STAGE_PREPROCESS, prep);
    srv_stat_duration(s, idx, SRV_STAGE_PREDICT, pred);
    srv_stat_duration(s, idx, SRV_STAGE_TOTAL, total);
}

static void frame_done(server_t *s, srv_job_t *h) {
    frame_job_t *j = (frame_job_t *)h;
    int idx = j->r.model_idx, admitted = j->admitted;
    if (j->r.outcome.fate == SRV_SERVED) count_served(s, j);
    srv_job_retire(s, h);
    if (admitted) next_after(s, idx);
}

static void batch_done(server_t *s, srv_job_t *h) { srv_job_retire(s, h); }

/* A window comes back after its frames were answered: the server held open
 * for it (window_flush) lets go, so that no window is left in the mailbox
 * at exit. */
static void window_done(server_t *s, srv_job_t *h) {
    srv_jobs_hold(s, -1);
    srv_window_job_free(s, (window_job_t *)h);
}

/* One request of a run given up: answered with msg unless its worker had
 * answered it already (shed at the gate, failed to prepare). */
static void answer_given_up(server_t *s, srv_req_t *r, const char *msg) {
    if (r->outcome.fate == SRV_SERVED) {
        osp_jw_reset(&r->out);
        size_t at = osp_wire_reply_begin(&r->out);
        if (r->h.kind == SRV_JOB_BATCH)
            osp_wire_json_error_shaped(&r->out, OSP_WIRE_ERR_RESULTS, msg);
        else
            osp_wire_json_infer_error(&r->out, msg);
        osp_wire_reply_end(&r->out, at, r->req_id);
        r->outcome = SRV_OUTCOME_FAILED(SRV_FAIL_TIMED_OUT);
    }
    srv_job_answer(s, &r->h);
}

int srv_dispatch_abandoned(server_t *s, srv_job_t *h, const char *msg) {
    if (h->kind == SRV_JOB_WINDOW) {
        window_job_t *w = (window_job_t *)h;
        for (int i = 0; i < w->n; i++) answer_given_up(s, &w->items[i]->r, msg);
        srv_jobs_hold(s, -1); /* its late return gives it back (srv_dispatch_returned) */
        return w->n;
    }
    srv_req_t *r = (srv_req_t *)h;
    if (h->kind == SRV_JOB_BATCH) {
        answer_given_up(s, r, msg);
        return 1;
    }
    frame_job_t *j = (frame_job_t *)h;
    int admitted = j->admitted;
    j->admitted = 0;
    answer_given_up(s, r, msg);
    if (admitted) next_after(s, r->model_idx); /* its run slot is the next frame's */
    return 1;
}

void srv_dispatch_returned(server_t *s, srv_job_t *h) {
    if (h->kind != SRV_JOB_WINDOW) {
        srv_job_release(s, h);
        return;
    }
    window_job_t *w = (window_job_t *)h;
    for (int i = 0; i < w->n; i++) srv_job_release(s, &w->items[i]->r.h);
    srv_window_job_free(s, w);
}

/* Answer a frame job here, on the I/O thread, as dropped. */
static void job_drop(server_t *s, frame_job_t *j, osp_wire_shed_t why) {
    osp_jw_reset(&j->r.out);
    osp_wire_reply_dropped(&j->r.out, j->r.req_id, why);
    j->r.outcome = SRV_OUTCOME_SHED(why == OSP_WIRE_SHED_QUEUE_FULL ? SRV_SHED_QUEUE_FULL
                                                                    : SRV_SHED_DEADLINE);
    srv_job_retire(s, &j->r.h);
}

/* Answer a frame job here with an inference error of kind (the request's
 * shape: a record with "error"), or "model i not loaded". */
static void job_fail(server_t *s, frame_job_t *j, srv_fail_t kind, const char *msg) {
    osp_jw_reset(&j->r.out);
    size_t at = osp_wire_reply_begin(&j->r.out);
    if (kind == SRV_FAIL_NOT_LOADED)
        osp_wire_json_not_loaded(&j->r.out, j->r.msg_type, (unsigned)j->r.model_idx);
    else
        osp_wire_json_infer_error(&j->r.out, msg);
    osp_wire_reply_end(&j->r.out, at, j->r.req_id);
    j->r.outcome = SRV_OUTCOME_FAILED(kind);
    srv_job_retire(s, &j->r.h);
}

/* ---- window batching ------------------------------------------------------------------ */

/* Send model idx's waiting window to one predict worker as one batch;
 * -1 when it could not (it stays, due, for the next pass). */
static int window_flush(server_t *s, int idx) {
    void *items[OSP_WINDOW_MAX];
    int n = osp_window_take(s->window, idx, items);
    if (n == 0) return 0;
    window_job_t *w = srv_window_job_new(s, idx);
    if (!w) {
        osp_window_restore(s->window, idx, items, n);
        return -1;
    }
    w->h.done = window_done;
    srv_jobs_hold(s, 1); /* until it is back: window_done */
    w->n = n;
    memcpy(w->items, items, (size_t)n * sizeof *items);
    srv_exec_predict(s, &w->h);
    return 0;
}

int srv_dispatch_timer_ms(server_t *s) { return s->window ? osp_window_timer_ms(s->window) : -1; }

void srv_dispatch_flush_due(server_t *s) {
    int idx;
    while (s->window && (idx = osp_window_due(s->window)) >= 0)
        if (window_flush(s, idx)) return;
}

/* ---- admission ----------------------------------------------------------------------- */

/* An admitted frame about to run: the deadline gate, the model check, then
 * the pools. 1 when it was dispatched, 0 when answered here (or gathered
 * in a window): its run slot is then free for the next. */
static int run_admitted(server_t *s, frame_job_t *j) {
    int idx = j->r.model_idx;
    if (osp_gate_expired(j->r.deadline_ms)) {
        job_drop(s, j, OSP_WIRE_SHED_DEADLINE);
        return 0;
    }
    loaded_t *l = srv_slot(s, idx);
    if (!l) {
        job_fail(s, j, SRV_FAIL_NOT_LOADED, NULL);
        return 0;
    }
    const char *stuck = srv_loaded_stuck(j->r.model ? j->r.model : l);
    if (stuck) { /* its session is being reloaded after a run past its bound (watchdog.c) */
        job_fail(s, j, SRV_FAIL_RELOADING, stuck);
        return 0;
    }
    if (!j->r.model) j->r.model = srv_loaded_ref(l); /* a frame prepared as read keeps its own */
    srv_loaded_params(j->r.model, &j->r.confidence, &j->r.nms_iou, &j->r.max_detections);
    if (s->window && !srv_loaded_model(j->r.model)->then) {
        /* the window, not the run slot, holds it from here (as the protocol's
         * window mode does): the slot is free for the next arrival */
        if (osp_window_add(s->window, idx, j)) window_flush(s, idx);
        return 0;
    }
    j->admitted = 1;
    j->r.lone = osp_sched_alone(s->sched, idx, 1) && !(s->input_waiting && s->input_waiting(s));
    srv_exec_prepare(s, j);
    return 1;
}

void srv_dispatch_submit(server_t *s, frame_job_t *j) {
    int idx = j->r.model_idx;
    void *shed = NULL;
    j->r.h.done = frame_done;
    int run = j->r.tp && j->r.tp->paced ? osp_sched_enqueue_paced(s->sched, idx, j, &shed)
                                        : osp_sched_enqueue(s->sched, idx, j, &shed);
    if (shed) job_drop(s, shed, OSP_WIRE_SHED_QUEUE_FULL);
    if (run && !run_admitted(s, j)) next_after(s, idx);
    srv_stat_depth(s, idx);
}

void srv_dispatch_batch(server_t *s, batch_job_t *j, loaded_t *l) {
    int idx = j->r.model_idx;
    j->r.h.done = batch_done;
    j->r.lone = osp_sched_alone(s->sched, idx, 0) &&
                !(s->input_waiting && s->input_waiting(s)); /* none of its own */
    j->r.model = srv_loaded_ref(l);
    srv_loaded_params(l, &j->r.confidence, &j->r.nms_iou, &j->r.max_detections);
    srv_exec_predict(s, &j->r.h);
}

int srv_submit_frame(server_t *s, int idx, uint64_t deadline_ms, const srv_transport_t *tp, void *arg) {
    frame_job_t *j = srv_frame_job_new(s, tp, NULL, NULL, 0);
    if (!j) return -1;
    j->r.msg_type = OSP_WIRE_MSG_INFER_RAW; /* only the shape of a pipe's own error replies */
    j->r.deadline_ms = deadline_ms;
    j->r.tp_arg = arg;
    j->r.model_idx = idx;
    srv_account_received(s, idx);
    srv_dispatch_submit(s, j);
    return 0;
}
