/*
 * The router, on the I/O thread: the handshake, request dispatch, per-model
 * admission and the deadline gate, the command queue with its bounded model
 * loads (poisoning, late completion), and the replies that need no frame
 * work (errors, drops, cache_frame, commands, mem_stats).
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server/internal.h"

/* ---- small helpers ---------------------------------------------------------- */

void srv_reply_frame(server_t *s, conn_t *c, uint32_t req_id,
                     void (*body)(osp_jw_t *, const void *), const void *arg) {
    osp_jw_t w = {0};
    size_t at = osp_wire_reply_begin(&w);
    body(&w, arg);
    osp_wire_reply_end(&w, at, req_id);
    srv_send(s, c, &w);
    osp_jw_free(&w);
}

void srv_body_error(osp_jw_t *w, const void *msg) { osp_wire_json_error(w, msg); }
void srv_body_infer_error(osp_jw_t *w, const void *msg) { osp_wire_json_infer_error(w, msg); }
static void body_not_cached(osp_jw_t *w, const void *frame_id) {
    osp_wire_json_not_cached(w, *(const uint32_t *)frame_id);
}

/* The "model i not loaded" reply in the shape the request type calls for. */
static void reply_not_loaded(server_t *s, conn_t *c, uint32_t req_id, uint8_t msg_type, int idx) {
    osp_jw_t w = {0};
    size_t at = osp_wire_reply_begin(&w);
    osp_wire_json_not_loaded(&w, msg_type, (unsigned)idx);
    osp_wire_reply_end(&w, at, req_id);
    srv_send(s, c, &w);
    osp_jw_free(&w);
}
static void body_error_results(osp_jw_t *w, const void *msg) {
    osp_wire_json_error_shaped(w, OSP_WIRE_ERR_RESULTS, msg);
}

static int deadline_passed(uint64_t deadline_ms) {
    return deadline_ms != 0 && (uint64_t)srv_epoch_ms() > deadline_ms;
}

/* Sampled: the first shed, then every 500th, each with the running total. */
static void log_deadline_shed(server_t *s, int model_idx, uint64_t deadline_ms) {
    int64_t total = s->counters.shed_deadline;
    if (total == 1 || total % 500 == 0)
        fprintf(stderr, "ospreyd: shed %" PRId64 " request(s) past their deadline so far (model %d, %" PRId64 " ms late)\n",
                total, model_idx, srv_epoch_ms() - (int64_t)deadline_ms);
}

static void log_queue_shed(server_t *s, int model_idx) {
    int64_t total = s->counters.shed_queue_full;
    if (total == 1 || total % 500 == 0)
        fprintf(stderr, "ospreyd: shed %" PRId64 " queued frame(s) under overload so far (model %d: drop-oldest)\n",
                total, model_idx);
}

void srv_release_model(server_t *s, loaded_t *l) {
    (void)s;
    if (l && --l->refs == 0) {
        osp_model_free(l->m);
        free(l);
    }
}

/* Whether model idx has nothing admitted besides `mine` frames (the job's
 * own slot, when it holds one) and no other input is on its way
 * (srv_input_waiting): its run may then take every core, if nothing else
 * is running when it starts (osp_model_predict). */
static int model_alone(server_t *s, int idx, int mine) {
    return s->admit[idx].running == mine && s->admit[idx].count == 0 && !srv_input_waiting(s);
}

#define SHEDDING_MS 1000.0 /* a model that shed a frame this recently is overloaded */

int srv_likely_shed(const server_t *s, int idx) {
    const osp_admit_t *a = &s->admit[idx];
    if (a->running < a->running_max) return 0;
    if (a->count >= a->pending_max) return 1; /* it will push out the oldest, and be next */
    /* it waits behind another while the model sheds: two more arrivals
     * before two run slots free up push it out */
    return a->count > 0 && s->shed_at_ms[idx] > 0 &&
           srv_ms_since(&s->started) - s->shed_at_ms[idx] < SHEDDING_MS;
}

static loaded_t *slot_model(server_t *s, int idx) {
    return idx >= 0 && idx < s->nslots ? s->slots[idx] : NULL;
}

/* ---- jobs ------------------------------------------------------------------- */

job_t *srv_job_new(server_t *s, conn_t *c, const osp_wire_request_t *rq, uint8_t *frame,
                   size_t len) {
    job_t *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->srv = s;
    j->conn_id = c->id;
    j->req_id = rq->req_id;
    j->msg_type = rq->msg_type;
    j->deadline_ms = rq->deadline_ms;
    j->rq = *rq;
    j->frame = frame;
    j->frame_len = len;
    c->inflight++;
    s->jobs_inflight++;
    return j;
}

static void job_free(server_t *s, job_t *j) {
    if (j->model) srv_release_model(s, j->model);
    if (j->cached) osp_cache_release_frame(s->cache, j->cached);
    if (j->shm) srv_shm_release(s, j->shm);
    if (j->ctx) srv_ctx_put(s, j->ctx);
    srv_spill_free(j->spill); /* shed or answered before it ran: nothing was copied */
    osp_jw_free(&j->out);
    srv_buf_put(s, j->frame);
    free(j);
}

/* Answer a job here, on the I/O thread, and retire it. */
static void job_answer_here(server_t *s, job_t *j, osp_jw_t *frame) {
    conn_t *c = srv_conn_find(s, j->conn_id);
    srv_send(s, c, frame);
    if (c) c->inflight--;
    s->jobs_inflight--;
    job_free(s, j);
}

static void window_add(server_t *s, job_t *j);

static void job_drop(server_t *s, job_t *j, osp_wire_shed_t why) {
    osp_jw_t w = {0};
    size_t at = osp_wire_reply_begin(&w);
    osp_wire_json_dropped(&w, why);
    osp_wire_reply_end(&w, at, j->req_id);
    job_answer_here(s, j, &w);
    osp_jw_free(&w);
}

/* An admitted frame about to run: the deadline gate, the model check, then
 * the prepare pool. Returns 1 when it was dispatched, 0 when answered here
 * (its admission slot must then be released by the caller). */
static int run_admitted(server_t *s, job_t *j) {
    if (deadline_passed(j->deadline_ms)) {
        s->counters.shed_deadline++;
        log_deadline_shed(s, j->model_idx, j->deadline_ms);
        job_drop(s, j, OSP_WIRE_SHED_DEADLINE);
        return 0;
    }
    loaded_t *l = slot_model(s, j->model_idx);
    if (!l) {
        osp_jw_t w = {0};
        size_t at = osp_wire_reply_begin(&w);
        osp_wire_json_not_loaded(&w, j->msg_type, (unsigned)j->model_idx);
        osp_wire_reply_end(&w, at, j->req_id);
        job_answer_here(s, j, &w);
        osp_jw_free(&w);
        return 0;
    }
    if (!j->model) { /* a frame prepared as it was read keeps the model it was prepared for */
        l->refs++;
        j->model = l;
    }
    j->confidence = j->model->confidence;
    j->nms_iou = j->model->nms_iou;
    j->max_detections = j->model->max_detections;
    if (s->batch_mode == OSP_WIRE_BATCH_WINDOW) {
        /* the window, not the run slot, holds it from here (as the protocol's
         * window mode does): the slot is free for the next arrival */
        window_add(s, j);
        return 0;
    }
    j->admitted = 1;
    j->lone = model_alone(s, j->model_idx, 1);
    osp_pool_push(j->prepared ? s->predict : s->prepare, &j->q);
    return 1;
}

/* ---- window batching ---------------------------------------------------------- */

/* Send model idx's waiting window to one predict worker as one batch. */
static void window_flush(server_t *s, int idx) {
    int n = s->win_n[idx];
    if (n == 0) return;
    job_t *w = calloc(1, sizeof *w);
    if (!w) return; /* retried on the next pass */
    w->kind = JOB_WINDOW;
    w->srv = s;
    w->model_idx = idx;
    w->n_items = n;
    memcpy(w->items, s->win[idx], (size_t)n * sizeof *w->items);
    s->win_n[idx] = 0;
    s->win_open--;
    osp_pool_push(s->predict, &w->q);
}

static void window_add(server_t *s, job_t *j) {
    int idx = j->model_idx;
    if (s->win_n[idx] == 0) {
        clock_gettime(CLOCK_MONOTONIC, &s->win_t0[idx]);
        s->win_open++;
    }
    s->win[idx][s->win_n[idx]++] = j;
    int cap = s->max_batch < OSP_WINDOW_MAX ? s->max_batch : OSP_WINDOW_MAX;
    if (s->win_n[idx] >= cap) window_flush(s, idx);
}

int srv_window_timer_ms(server_t *s) {
    if (!s->win_open) return -1;
    double best = -1;
    for (int i = 0; i < s->nslots; i++) {
        if (!s->win_n[i]) continue;
        double left = s->window_ms - srv_ms_since(&s->win_t0[i]);
        if (best < 0 || left < best) best = left;
    }
    return best < 0 ? -1 : best <= 0 ? 0 : (int)(best + 0.999);
}

void srv_window_flush_due(server_t *s) {
    if (!s->win_open) return;
    for (int i = 0; i < s->nslots; i++)
        if (s->win_n[i] && srv_ms_since(&s->win_t0[i]) >= s->window_ms) window_flush(s, i);
}

/* A run slot of model idx was freed: promote waiting frames into it. */
static void promote(server_t *s, int idx) {
    job_t *next;
    while ((next = osp_admit_promote(&s->admit[idx]))) {
        if (run_admitted(s, next)) return;
        osp_admit_done(&s->admit[idx]); /* answered without running */
    }
}

void srv_submit_frame(server_t *s, job_t *j) {
    int idx = j->model_idx;
    void *shed = NULL;
    int run = osp_admit_offer(&s->admit[idx], j, &shed);
    if (shed) {
        s->counters.shed_queue_full++;
        s->shed_at_ms[idx] = srv_ms_since(&s->started);
        log_queue_shed(s, idx);
        job_drop(s, shed, OSP_WIRE_SHED_QUEUE_FULL);
    }
    if (run && !run_admitted(s, j)) {
        osp_admit_done(&s->admit[idx]);
        promote(s, idx);
    }
}

void srv_on_job_done(server_t *s, job_t *j) {
    if (j->kind == JOB_LOAD_DONE) {
        srv_load_done(s, j);
        return;
    }
    if (j->kind == JOB_HELLO_DONE) {
        srv_hello_done(s, j);
        return;
    }
    if (j->kind == JOB_STREAM_OPEN) {
        srv_stream_opened(s, j);
        return;
    }
    if (j->shed) {
        s->counters.shed_deadline += j->kind == JOB_BATCH ? j->rq.u.batch.count : 1;
        log_deadline_shed(s, j->model_idx, j->deadline_ms);
    }
    if (j->failed) s->counters.errors++;
    int idx = j->model_idx, admitted = j->admitted;
    conn_t *c = srv_conn_find(s, j->conn_id);
    srv_send(s, c, &j->out);
    if (c) c->inflight--;
    s->jobs_inflight--;
    job_free(s, j);
    if (admitted) {
        osp_admit_done(&s->admit[idx]);
        promote(s, idx);
    }
}

/* ---- requests ------------------------------------------------------------------ */

static void on_infer(server_t *s, conn_t *c, const osp_wire_request_t *rq, uint8_t *frame,
                     size_t len) {
    int idx;
    osp_cframe_t *cf = NULL;
    switch (rq->msg_type) {
    case OSP_WIRE_MSG_INFER_JPEG: idx = rq->u.jpeg.model_idx; break;
    case OSP_WIRE_MSG_INFER_RAW: idx = rq->u.raw.model_idx; break;
    default: /* infer_cached: the cache and the model are checked up front */
        idx = rq->u.cached.model_idx;
        if (!(cf = osp_cache_get_frame(s->cache, rq->u.cached.frame_id))) {
            srv_reply_frame(s, c, rq->req_id, body_not_cached, &rq->u.cached.frame_id);
            srv_buf_put(s, frame);
            return;
        }
        if (!slot_model(s, idx)) {
            osp_cache_release_frame(s->cache, cf);
            reply_not_loaded(s, c, rq->req_id, rq->msg_type, idx);
            srv_buf_put(s, frame);
            return;
        }
    }
    job_t *j = srv_job_new(s, c, rq, frame, len);
    if (!j) {
        if (cf) osp_cache_release_frame(s->cache, cf);
        srv_buf_put(s, frame);
        srv_reply_frame(s, c, rq->req_id, srv_body_error, "out of memory");
        return;
    }
    j->kind = JOB_INFER;
    j->model_idx = idx;
    j->cached = cf;
    if (rq->msg_type == OSP_WIRE_MSG_INFER_RAW) {
        j->spill = s->frame_spill; /* copied in by the worker that prepares it */
        s->frame_spill = NULL;
    }
    srv_submit_frame(s, j);
}

/* Batches bypass admission (as the protocol says): gate, model, then one
 * predict worker runs the items. */
static void on_batch(server_t *s, conn_t *c, const osp_wire_request_t *rq, uint8_t *frame,
                     size_t len) {
    int idx = rq->u.batch.model_idx;
    if (deadline_passed(rq->deadline_ms)) {
        s->counters.shed_deadline += rq->u.batch.count;
        log_deadline_shed(s, idx, rq->deadline_ms);
        osp_jw_t w = {0};
        size_t at = osp_wire_reply_begin(&w);
        osp_wire_json_dropped_batch(&w, OSP_WIRE_SHED_DEADLINE, rq->u.batch.count);
        osp_wire_reply_end(&w, at, rq->req_id);
        srv_send(s, c, &w);
        osp_jw_free(&w);
        srv_buf_put(s, frame);
        return;
    }
    loaded_t *l = slot_model(s, idx);
    if (!l) {
        reply_not_loaded(s, c, rq->req_id, rq->msg_type, idx);
        srv_buf_put(s, frame);
        return;
    }
    job_t *j = srv_job_new(s, c, rq, frame, len);
    if (!j) {
        srv_buf_put(s, frame);
        srv_reply_frame(s, c, rq->req_id, body_error_results, "out of memory");
        return;
    }
    j->kind = JOB_BATCH;
    j->model_idx = idx;
    /* batches are not admitted: none of its own */
    j->lone = model_alone(s, idx, 0);
    l->refs++;
    j->model = l;
    j->confidence = l->confidence;
    j->nms_iou = l->nms_iou;
    j->max_detections = l->max_detections;
    osp_pool_push(s->predict, &j->q);
}

static void on_cache_frame(server_t *s, conn_t *c, const osp_wire_request_t *rq) {
    const osp_wire_image_t *im = &rq->u.cache.img;
    osp_view_t v = {.data = im->pixels, .width = (int)im->width, .height = (int)im->height,
                    .stride = (int)(im->width * im->channels), .fmt = (osp_pixfmt_t)im->fmt};
    osp_jw_t w = {0};
    size_t at = osp_wire_reply_begin(&w);
    if (osp_cache_put_frame(s->cache, rq->u.cache.frame_id, &v))
        osp_wire_json_error(&w, "cache_frame wrap failed: out of memory");
    else
        osp_wire_json_cached(&w, rq->u.cache.frame_id, im->width, im->height);
    osp_wire_reply_end(&w, at, rq->req_id);
    srv_send(s, c, &w);
    osp_jw_free(&w);
}


void srv_on_frame(server_t *s, conn_t *c, uint8_t *frame, size_t len) {
    osp_wire_frame_t f;
    size_t need;
    if (osp_wire_scan(frame, len, 0xFFFFFFFFu, &f, &need) != 1) { /* cannot happen: whole frame */
        srv_buf_put(s, frame);
        return;
    }
    if (!c->handshaken) {
        srv_on_hello(s, c, &f);
        srv_buf_put(s, frame);
        return;
    }
    if (f.msg_type == OSP_MSG_STREAM_PUSH && s->streams) {
        srv_on_stream_push(s, c, &f);
        srv_buf_put(s, frame);
        return;
    }
    if (f.msg_type == OSP_MSG_INFER_SHM && s->shm_head) {
        s->counters.infer_shm++;
        srv_on_infer_shm(s, c, &f, frame, len); /* takes frame */
        return;
    }
    char err[OSP_WIRE_ERRLEN + 64];
    osp_wire_request_t rq;
    int rc = osp_wire_request_parse(&f, c->version, &rq, err, sizeof err);
    switch (f.msg_type) {
    case OSP_WIRE_MSG_COMMAND: s->counters.commands++; break;
    case OSP_WIRE_MSG_INFER_JPEG: s->counters.infer_jpeg++; break;
    case OSP_WIRE_MSG_INFER_RAW: s->counters.infer_raw++; break;
    case OSP_WIRE_MSG_INFER_BATCH: s->counters.infer_batch++; break;
    case OSP_WIRE_MSG_CACHE_FRAME: s->counters.frames_cached++; break;
    case OSP_WIRE_MSG_INFER_CACHED: s->counters.infer_cached++; break;
    default: break;
    }
    if (rc) {
        s->counters.errors++;
        osp_jw_t w = {0};
        size_t at = osp_wire_reply_begin(&w);
        osp_wire_json_error_shaped(&w, rq.err_shape, err);
        osp_wire_reply_end(&w, at, f.req_id);
        srv_send(s, c, &w);
        osp_jw_free(&w);
        srv_buf_put(s, frame);
        return;
    }
    switch (rq.msg_type) {
    case OSP_WIRE_MSG_COMMAND:
        srv_on_command(s, c, &rq);
        srv_buf_put(s, frame);
        return;
    case OSP_WIRE_MSG_INFER_JPEG:
    case OSP_WIRE_MSG_INFER_RAW:
    case OSP_WIRE_MSG_INFER_CACHED:
        on_infer(s, c, &rq, frame, len); /* takes frame */
        return;
    case OSP_WIRE_MSG_INFER_BATCH:
        if (rq.u.batch.count == 0) { /* nothing to run: an empty result list */
            osp_jw_t w = {0};
            size_t at = osp_wire_reply_begin(&w);
            osp_jw_obj_open(&w);
            osp_jw_key(&w, "results");
            osp_jw_arr_open(&w);
            osp_jw_arr_close(&w);
            osp_jw_obj_close(&w);
            osp_wire_reply_end(&w, at, rq.req_id);
            srv_send(s, c, &w);
            osp_jw_free(&w);
            srv_buf_put(s, frame);
            return;
        }
        on_batch(s, c, &rq, frame, len);
        return;
    case OSP_WIRE_MSG_CACHE_FRAME:
        on_cache_frame(s, c, &rq);
        srv_buf_put(s, frame);
        return;
    default:
        srv_buf_put(s, frame);
        return;
    }
}

int srv_idle(server_t *s) {
    return s->jobs_inflight == 0 && !s->load_busy && s->cmd_head == NULL;
}
