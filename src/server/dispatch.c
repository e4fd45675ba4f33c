/* Request dispatch on the I/O thread; see dispatch.h. */
#include "server/dispatch.h"

#include <stdio.h>
#include <string.h>

#include "sched/bufpool.h"
#include "base/clock.h"
#include "sched/gate.h"
#include "sched/sched.h"
#include "sched/window.h"
#include "server/account.h"
#include "server/cmds.h"
#include "server/conn.h"
#include "server/exec.h"
#include "server/ingest.h"
#include "server/ledger.h"
#include "server/shm.h"
#include "server/slots.h"
#include "server/stats.h"
#include "server/streams.h"
#include "wire/frame.h"
#include "log/log.h"

/* ---- replies written here ------------------------------------------------------ */

void srv_reply_error(server_t *s, conn_t *c, uint32_t req_id, srv_err_t shape, const char *msg) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    if (shape == SRV_ERR_INFER)
        osp_wire_json_infer_error(w, msg);
    else
        osp_wire_json_error_shaped(w, shape == SRV_ERR_RESULTS ? OSP_WIRE_ERR_RESULTS : OSP_WIRE_ERR_PLAIN,
                                   msg);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
}

void srv_reply_too_large(server_t *s, conn_t *c, uint32_t total_len, uint32_t req_id) {
    uint32_t cap = s->opts.max_frame ? s->opts.max_frame : OSP_WIRE_MAX_FRAME_DEFAULT;
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_too_large(w, total_len, cap);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
    osp_log(OSP_LOG_ERROR,
            "ospreyd: frame of %u bytes (req %u) exceeds the limit; closing the connection",
            total_len, req_id);
    srv_stat_add(s, SRV_ST_ERRORS, 1);
}

void srv_reply_too_short(server_t *s, conn_t *c, uint32_t total_len, uint32_t req_id) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_too_short(w, total_len);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
    osp_log(OSP_LOG_ERROR,
            "ospreyd: frame length %u (req %u) is below the 5-byte header; closing the connection",
            total_len, req_id);
    srv_stat_add(s, SRV_ST_ERRORS, 1);
}

/* The "model i not loaded" reply in the shape the request type calls for,
 * counted. */
static void reply_not_loaded(server_t *s, conn_t *c, uint32_t req_id, uint8_t msg_type, int idx,
                             int64_t items) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_not_loaded(w, msg_type, (unsigned)idx);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
    srv_account(s, idx, items, SRV_OUTCOME_FAILED(SRV_FAIL_NOT_LOADED), 0);
}

/* An error reply to an inference request that became no job, counted. */
static void refuse(server_t *s, conn_t *c, uint32_t req_id, int idx, int64_t items,
                   srv_fail_t kind, srv_err_t shape, const char *msg) {
    srv_reply_error(s, c, req_id, shape, msg);
    srv_account(s, idx, items, SRV_OUTCOME_FAILED(kind), 0);
}

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
    if (s->window) {
        /* the window, not the run slot, holds it from here (as the protocol's
         * window mode does): the slot is free for the next arrival */
        if (osp_window_add(s->window, idx, j)) window_flush(s, idx);
        return 0;
    }
    j->admitted = 1;
    j->r.lone = osp_sched_alone(s->sched, idx, 1) && !srv_input_waiting(s);
    srv_exec_prepare(s, j);
    return 1;
}

void srv_dispatch_submit(server_t *s, frame_job_t *j) {
    int idx = j->r.model_idx;
    void *shed = NULL;
    j->r.h.done = frame_done;
    int run = osp_sched_enqueue(s->sched, idx, j, &shed);
    if (shed) job_drop(s, shed, OSP_WIRE_SHED_QUEUE_FULL);
    if (run && !run_admitted(s, j)) next_after(s, idx);
    srv_stat_depth(s, idx);
}

int srv_submit_frame(server_t *s, int idx, uint64_t deadline_ms, const srv_transport_t *tp, void *arg) {
    frame_job_t *j = srv_frame_job_new(s, NULL, NULL, NULL, 0);
    if (!j) return -1;
    j->r.msg_type = OSP_WIRE_MSG_INFER_RAW; /* only the shape of a pipe's own error replies */
    j->r.deadline_ms = deadline_ms;
    j->r.tp = tp;
    j->r.tp_arg = arg;
    j->r.model_idx = idx;
    srv_account_received(s, idx);
    srv_dispatch_submit(s, j);
    return 0;
}

/* ---- requests --------------------------------------------------------------------------- */

static void on_infer(server_t *s, conn_t *c, const osp_wire_request_t *rq, uint8_t *frame,
                     size_t len, spill_t **spill) {
    int idx;
    osp_cframe_t *cf = NULL;
    switch (rq->msg_type) {
    case OSP_WIRE_MSG_INFER_JPEG: idx = rq->u.jpeg.model_idx; break;
    case OSP_WIRE_MSG_INFER_RAW: idx = rq->u.raw.model_idx; break;
    default: /* infer_cached: the cache and the model are checked up front */
        idx = rq->u.cached.model_idx;
        if (!(cf = osp_cache_get_frame(s->cache, rq->u.cached.frame_id))) {
            osp_jw_t *w = srv_reply_buf(s);
            size_t at = osp_wire_reply_begin(w);
            osp_wire_json_not_cached(w, rq->u.cached.frame_id);
            osp_wire_reply_end(w, at, rq->req_id);
            srv_send(s, c, w);
            srv_account(s, idx, 1, SRV_OUTCOME_FAILED(SRV_FAIL_NOT_CACHED), 0);
            osp_buf_put(s->bufs, frame);
            return;
        }
        if (!srv_slot(s, idx)) {
            osp_cache_release_frame(s->cache, cf);
            reply_not_loaded(s, c, rq->req_id, rq->msg_type, idx, 1);
            osp_buf_put(s->bufs, frame);
            return;
        }
    }
    frame_job_t *j = srv_frame_job_new(s, c, rq, frame, len);
    if (!j) {
        if (cf) osp_cache_release_frame(s->cache, cf);
        osp_buf_put(s->bufs, frame);
        refuse(s, c, rq->req_id, idx, 1, SRV_FAIL_NO_MEMORY, SRV_ERR_PLAIN, "out of memory");
        return;
    }
    j->r.model_idx = idx;
    j->cached = cf;
    if (rq->msg_type == OSP_WIRE_MSG_INFER_RAW) {
        j->spill = *spill; /* read back by the worker that prepares it */
        *spill = NULL;
    }
    srv_dispatch_submit(s, j);
}

/* Batches bypass admission (as the protocol says): gate, model, then one
 * predict worker runs the items. */
static void on_batch(server_t *s, conn_t *c, const osp_wire_request_t *rq, uint8_t *frame, size_t len) {
    int idx = rq->u.batch.model_idx, n = rq->u.batch.count;
    if (osp_gate_expired(rq->deadline_ms)) {
        osp_jw_t *w = srv_reply_buf(s);
        size_t at = osp_wire_reply_begin(w);
        osp_wire_json_dropped_batch(w, OSP_WIRE_SHED_DEADLINE, rq->u.batch.count);
        osp_wire_reply_end(w, at, rq->req_id);
        srv_send(s, c, w);
        srv_account(s, idx, n, SRV_OUTCOME_SHED(SRV_SHED_DEADLINE), rq->deadline_ms);
        osp_buf_put(s->bufs, frame);
        return;
    }
    loaded_t *l = srv_slot(s, idx);
    if (!l) {
        reply_not_loaded(s, c, rq->req_id, rq->msg_type, idx, n);
        osp_buf_put(s->bufs, frame);
        return;
    }
    if (srv_loaded_stuck(l)) {
        refuse(s, c, rq->req_id, idx, n, SRV_FAIL_RELOADING, SRV_ERR_RESULTS, srv_loaded_stuck(l));
        osp_buf_put(s->bufs, frame);
        return;
    }
    batch_job_t *j = srv_batch_job_new(s, c, rq, frame, len);
    if (!j) {
        osp_buf_put(s->bufs, frame);
        refuse(s, c, rq->req_id, idx, n, SRV_FAIL_NO_MEMORY, SRV_ERR_RESULTS, "out of memory");
        return;
    }
    j->r.h.done = batch_done;
    j->r.model_idx = idx;
    j->r.lone = osp_sched_alone(s->sched, idx, 0) && !srv_input_waiting(s); /* none of its own */
    j->r.model = srv_loaded_ref(l);
    srv_loaded_params(l, &j->r.confidence, &j->r.nms_iou, &j->r.max_detections);
    srv_exec_predict(s, &j->r.h);
}

static void on_cache_frame(server_t *s, conn_t *c, const osp_wire_request_t *rq) {
    const osp_wire_image_t *im = &rq->u.cache.img;
    osp_view_t v = {.data = im->pixels,
                    .width = (int)im->width,
                    .height = (int)im->height,
                    .stride = (int)(im->width * im->channels),
                    .fmt = (osp_pixfmt_t)im->fmt};
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    if (osp_cache_put_frame(s->cache, rq->u.cache.frame_id, &v))
        osp_wire_json_error(w, "cache_frame wrap failed: out of memory");
    else
        osp_wire_json_cached(w, rq->u.cache.frame_id, im->width, im->height);
    osp_wire_reply_end(w, at, rq->req_id);
    srv_send(s, c, w);
}

/* The slot an inference request names, SRV_LEDGER_NO_MODEL when it could
 * not be parsed; -2 for a request that is not an inference. */
static int inference_model(uint8_t msg_type, int parsed, const osp_wire_request_t *rq) {
    switch (msg_type) {
    case OSP_WIRE_MSG_INFER_JPEG: return parsed ? rq->u.jpeg.model_idx : SRV_LEDGER_NO_MODEL;
    case OSP_WIRE_MSG_INFER_RAW: return parsed ? rq->u.raw.model_idx : SRV_LEDGER_NO_MODEL;
    case OSP_WIRE_MSG_INFER_BATCH: return parsed ? rq->u.batch.model_idx : SRV_LEDGER_NO_MODEL;
    case OSP_WIRE_MSG_INFER_CACHED: return parsed ? rq->u.cached.model_idx : SRV_LEDGER_NO_MODEL;
    default: return -2;
    }
}

static void count_request(server_t *s, uint8_t msg_type) {
    static const struct {
        uint8_t type;
        srv_stat_t stat;
    } by_type[] = {{OSP_WIRE_MSG_COMMAND, SRV_ST_COMMANDS},
                   {OSP_WIRE_MSG_INFER_JPEG, SRV_ST_INFER_JPEG},
                   {OSP_WIRE_MSG_INFER_RAW, SRV_ST_INFER_RAW},
                   {OSP_WIRE_MSG_INFER_BATCH, SRV_ST_INFER_BATCH},
                   {OSP_WIRE_MSG_CACHE_FRAME, SRV_ST_FRAMES_CACHED},
                   {OSP_WIRE_MSG_INFER_CACHED, SRV_ST_INFER_CACHED}};
    for (size_t i = 0; i < sizeof by_type / sizeof by_type[0]; i++)
        if (by_type[i].type == msg_type) srv_stat_add(s, by_type[i].stat, 1);
}

void srv_dispatch_frame(server_t *s, conn_t *c, uint8_t *frame, size_t len, spill_t *spill) {
    osp_wire_frame_t f;
    size_t need;
    if (osp_wire_scan(frame, len, 0xFFFFFFFFu, &f, &need) != 1) { /* cannot happen: whole frame */
        osp_buf_put(s->bufs, frame);
        srv_spill_free(spill);
        return;
    }
    if (!srv_conn_handshaken(c)) {
        srv_on_hello(s, c, &f);
    } else if (f.msg_type == OSP_WIRE_MSG_STREAM_PUSH && srv_streams_open(s)) {
        srv_on_stream_push(s, c, &f);
    } else if (f.msg_type == OSP_WIRE_MSG_INFER_SHM && srv_shm_registered(s)) {
        srv_stat_add(s, SRV_ST_INFER_SHM, 1);
        srv_on_infer_shm(s, c, &f, frame, len); /* takes frame */
        frame = NULL;
    } else {
        char err[OSP_WIRE_ERRLEN + 64];
        osp_wire_request_t rq;
        int rc = osp_wire_request_parse(&f, srv_conn_version(c), &rq, err, sizeof err);
        count_request(s, f.msg_type);
        int idx = inference_model(f.msg_type, rc == 0, &rq);
        if (idx != -2) srv_account_received(s, idx);
        if (rc) {
            srv_err_t shape = rq.err_shape == OSP_WIRE_ERR_RESULTS ? SRV_ERR_RESULTS : SRV_ERR_PLAIN;
            if (idx != -2) {
                refuse(s, c, f.req_id, idx, 1, SRV_FAIL_BAD_REQUEST, shape, err);
            } else { /* a command or cache_frame that does not parse: no inference request */
                srv_stat_add(s, SRV_ST_ERRORS, 1);
                srv_reply_error(s, c, f.req_id, shape, err);
            }
        } else if (rq.msg_type == OSP_WIRE_MSG_COMMAND) {
            srv_on_command(s, c, &rq);
        } else if (rq.msg_type == OSP_WIRE_MSG_INFER_BATCH && rq.u.batch.count == 0) {
            osp_jw_t *w = srv_reply_buf(s); /* nothing to run: an empty result list */
            size_t at = osp_wire_reply_begin(w);
            osp_jw_obj_open(w);
            osp_jw_key(w, "results");
            osp_jw_arr_open(w);
            osp_jw_arr_close(w);
            osp_jw_obj_close(w);
            osp_wire_reply_end(w, at, rq.req_id);
            srv_send(s, c, w);
            srv_account(s, idx, 0, SRV_OUTCOME_SERVED, 0);
        } else if (rq.msg_type == OSP_WIRE_MSG_INFER_BATCH) {
            on_batch(s, c, &rq, frame, len); /* takes frame */
            frame = NULL;
        } else if (rq.msg_type == OSP_WIRE_MSG_CACHE_FRAME) {
            on_cache_frame(s, c, &rq);
        } else if (rq.msg_type == OSP_WIRE_MSG_INFER_JPEG || rq.msg_type == OSP_WIRE_MSG_INFER_RAW ||
                   rq.msg_type == OSP_WIRE_MSG_INFER_CACHED) {
            on_infer(s, c, &rq, frame, len, &spill); /* takes frame */
            frame = NULL;
        }
    }
    osp_buf_put(s->bufs, frame);
    srv_spill_free(spill); /* not taken by a job: the reply needed no pixels */
}
