/* The worker pools; see exec.h. */
#include "server/core/exec.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cascade.h"
#include "sched/ctxpool.h"
#include "base/clock.h"
#include "sched/gate.h"
#include "sched/window.h"
#include "server/core/encoded.h"
#include "server/core/guard.h"
#include "server/core/loop.h"
#include "server/core/slots.h"

/* The run a predict thread is inside, for the watchdog (srv_exec_runs):
 * kept in the thread's own state, which follows the thread when its
 * worker index goes to another. */
typedef struct run {
    struct run *next; /* on srv_exec.running while inside the runtime */
    uint64_t seq;
    struct timespec started;
    srv_job_t *job;
    int worker, model_idx, items;
    const loaded_t *model;
    int abandoned; /* given up: its requests were answered on the I/O thread */
} run_t;

/* What one pool thread keeps between frames (indexed by its worker number):
 * the JPEG and PNG decoding (encoded.c), contexts for batch items, the stacking
 * buffer of batched runs, a prepare worker's state for parked frames
 * (s->parked's); a predict thread's run. */
typedef struct {
    srv_encoded_t *enc;
    osp_infer_ctx_t ctx[OSP_WINDOW_MAX];
    osp_batch_buf_t buf;
    void *parked;
    run_t run;
    int lent;    /* its index went to a new thread: this one leaves after its job */
    int leaving; /* lent, as its thread last saw it (its own copy, read without the lock) */
} wstate_t;

struct srv_exec {
    server_t *s;
    const srv_parked_ops_t *parked; /* s->parked */
    osp_pool_t *prepare, *predict;
    wstate_t *prep_ws;  /* one per prepare worker */
    wstate_t **pred_ws; /* one per predict worker index; a thread that left it keeps its own */
    int workers;
    pthread_mutex_t mu; /* guards running, seq, every run_t and lent, lent_out, stuck, closed */
    pthread_cond_t cv;  /* lent_out went down */
    run_t *running;     /* the runs in progress */
    uint64_t seq;
    int lent_out; /* threads lent that have not finished their job */
    int stuck;    /* runs given up whose threads have not returned */
    int closed;   /* srv_exec_free ran: a returning thread touches nothing of the server */
};

static void wstate_free(const srv_exec_t *e, wstate_t *w) {
    if (!w) return;
    srv_encoded_free(w->enc);
    for (int i = 0; i < OSP_WINDOW_MAX; i++) osp_infer_ctx_free(&w->ctx[i]);
    osp_batch_buf_free(&w->buf);
    if (w->parked) e->parked->free(w->parked);
}

/* ---- runs, as the watchdog sees them -------------------------------------------- */

/* A predict thread enters the runtime for job h, a run of `items` frames. */
static void run_begin(srv_exec_t *e, wstate_t *ws, int worker, srv_job_t *h, const srv_req_t *r,
                      int items) {
    run_t *u = &ws->run;
    pthread_mutex_lock(&e->mu);
    *u = (run_t){.next = e->running,
                 .seq = ++e->seq,
                 .job = h,
                 .worker = worker,
                 .model_idx = r->model_idx,
                 .items = items,
                 .model = r->model};
    osp_now(&u->started);
    e->running = u;
    pthread_mutex_unlock(&e->mu);
}

static void unlink_run(srv_exec_t *e, run_t *u) {
    run_t **pp = &e->running;
    while (*pp && *pp != u) pp = &(*pp)->next;
    if (*pp) *pp = u->next;
}

/* Back from the runtime: 0, or 1 when the watchdog gave the run up
 * meanwhile (its requests were answered on the I/O thread; this thread
 * hands the job back to be released and leaves the pool). */
static int run_end(srv_exec_t *e, wstate_t *ws) {
    pthread_mutex_lock(&e->mu);
    int gone = ws->run.abandoned;
    if (!gone) unlink_run(e, &ws->run); /* a run given up was unlinked then */
    ws->leaving = ws->lent;             /* no longer on the list: it cannot change now */
    pthread_mutex_unlock(&e->mu);
    return gone;
}

static void exec_destroy(srv_exec_t *e) {
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->prep_ws);
    free(e->pred_ws);
    free(e);
}

/* On the thread of a run given up, once the run returned: its working
 * memory is its own to free; the job goes back to the I/O thread (its
 * done was set by whoever gave it up), unless the server is gone. This
 * thread no longer belongs to the pool. */
static void run_returned_late(srv_exec_t *e, srv_job_t *h, wstate_t *ws) {
    wstate_free(e, ws);
    free(ws);
    pthread_mutex_lock(&e->mu);
    e->stuck--;
    int closed = e->closed, last = closed && e->stuck == 0;
    if (!closed) srv_post(e->s, h); /* under the lock: srv_exec_free waits for it */
    pthread_mutex_unlock(&e->mu);
    if (last) exec_destroy(e);
}

/* ---- helpers -------------------------------------------------------------------- */

static void finish(srv_req_t *r) { srv_post(r->srv, &r->h); }

static void reply_infer_error(srv_req_t *r, const char *msg, int plain) {
    osp_jw_reset(&r->out);
    size_t at = osp_wire_reply_begin(&r->out);
    if (plain)
        osp_wire_json_error(&r->out, msg);
    else
        osp_wire_json_infer_error(&r->out, msg);
    osp_wire_reply_end(&r->out, at, r->req_id);
    r->outcome = SRV_OUTCOME_FAILED(SRV_FAIL_FAILED);
}

static void reply_dropped(srv_req_t *r) {
    r->outcome = SRV_OUTCOME_SHED(SRV_SHED_DEADLINE);
    osp_jw_reset(&r->out);
    osp_wire_reply_dropped(&r->out, r->req_id, OSP_WIRE_SHED_DEADLINE);
}

static void set_params(const srv_req_t *r, osp_infer_ctx_t *ctx) {
    ctx->params_set = 1;
    ctx->confidence = r->confidence;
    ctx->nms_iou = r->nms_iou;
    ctx->max_detections = r->max_detections;
}

static osp_view_t view_of(const osp_wire_image_t *im) {
    return (osp_view_t){.data = im->pixels,
                        .width = (int)im->width,
                        .height = (int)im->height,
                        .stride = (int)(im->width * im->channels),
                        .fmt = (osp_pixfmt_t)im->fmt};
}

/* Preprocess one view for the request's model, through the tensor cache
 * when the frame is tagged. */
static int prepare_view(const srv_req_t *r, osp_infer_ctx_t *ctx, const osp_view_t *v,
                        osp_tcache_kind_t kind, uint32_t tag, uint32_t key, const osp_cframe_t *cf,
                        char *err, size_t errlen) {
    osp_model_t *m = srv_loaded_model(r->model);
    osp_cache_t *cache = r->srv->cache;
    if (tag && osp_model_ensure_tensor(m, ctx) == 0) {
        osp_tmeta_t meta;
        if (osp_cache_get_tensor(cache, kind, tag, key, ctx->tensor,
                                 osp_prep_tensor_bytes(&m->prep), &meta)) {
            ctx->geom = meta.geom;
            ctx->frame_w = meta.frame_w;
            ctx->frame_h = meta.frame_h;
            ctx->view_w = meta.view_w;
            ctx->view_h = meta.view_h;
            ctx->prep_ms = 0;
            return 0;
        }
    }
    if (osp_model_prepare(m, ctx, v, 0, 0, err, errlen)) return -1;
    if (tag) {
        osp_tmeta_t meta = {ctx->geom, ctx->frame_w, ctx->frame_h, ctx->view_w, ctx->view_h};
        size_t bytes = osp_prep_tensor_bytes(&m->prep);
        if (cf) /* stored only while cf is still the frame cached under its id */
            osp_cache_put_frame_tensor(cache, cf, key, ctx->tensor, bytes, &meta);
        else
            osp_cache_put_tensor(cache, kind, tag, key, ctx->tensor, bytes, &meta);
    }
    return 0;
}

typedef struct {
    const osp_model_t *m;
    osp_infer_ctx_t *ctx;
    const osp_view_t *v;
    char *err;
    size_t errlen;
} guarded_prep_t;

static int guarded_prepare(void *arg) {
    guarded_prep_t *a = arg;
    return osp_model_prepare(a->m, a->ctx, a->v, 0, 0, a->err, a->errlen);
}

/* Decode and preprocess a single-frame job into its context; on failure the
 * reply is written and j->prepared stays 0. */
static void prepare_job(frame_job_t *j, wstate_t *ws) {
    char err[512];
    srv_req_t *r = &j->r;
    if (j->prepared) return; /* prepared as it was read (rows.c) */
    osp_model_t *m = srv_loaded_model(r->model);
    int rc = 0;
    osp_now(&r->t0);
    if (!j->ctx && !(j->ctx = osp_ctxpool_get(r->srv->ctxs))) {
        reply_infer_error(r, "out of memory", 0);
        r->outcome.fail = SRV_FAIL_NO_MEMORY;
        return;
    }
    set_params(r, j->ctx);
    switch (r->tp->prepare ? -1 : r->msg_type) {
    case -1: /* a front end's own frame */
        rc = r->tp->prepare(r, m, j->ctx, err, sizeof err);
        if (rc == 0 && m->then && r->tp->pixels) /* its steps crop from the front end's frame */
            j->has_view = r->tp->pixels(r, &j->view) == 0;
        break;
    case OSP_WIRE_MSG_INFER_JPEG: {
        char derr[400];
        if (m->then) { /* its steps crop from the frame: decoded whole, kept with the job */
            rc = srv_encoded_prepare_whole(&ws->enc, m, j->ctx, r->rq.u.jpeg.data,
                                           r->rq.u.jpeg.len, &j->whole, derr, sizeof derr);
            j->view = osp_image_view(&j->whole);
            j->has_view = rc == 0;
        } else {
            rc = srv_encoded_prepare(&ws->enc, m, j->ctx, r->rq.u.jpeg.data, r->rq.u.jpeg.len,
                                     derr, sizeof derr);
        }
        if (rc == -1) { /* the wire's words, then why, without the decoder's own prefix */
            static const char prefix[] = "jpeg decode failed: ";
            const char *why = strncmp(derr, prefix, sizeof prefix - 1) == 0 ? derr + sizeof prefix - 1
                                                                            : derr;
            snprintf(err, sizeof err, "%s%s", prefix, why);
            reply_infer_error(r, err, 1);
            return;
        }
        if (rc) snprintf(err, sizeof err, "%s", derr);
        break;
    }
    case OSP_WIRE_MSG_INFER_RAW: {
        int st = j->spill ? r->srv->parked->prepare(&ws->parked, j, err, sizeof err) : 0;
        if (st < 0) {
            reply_infer_error(r, err, 0);
            return;
        }
        if (st == 0) {
            osp_view_t v = view_of(&r->rq.u.raw.img);
            rc = osp_model_prepare(m, j->ctx, &v, 0, 0, err, sizeof err);
            j->view = v; /* the request's pixels: the job's until it is released */
            j->has_view = rc == 0;
        }
        break;
    }
    case OSP_WIRE_MSG_INFER_SHM: {
        guarded_prep_t a = {m, j->ctx, &j->shm_view, err, sizeof err};
        rc = srv_guarded(guarded_prepare, &a);
        if (rc == SRV_GUARD_FAULT)
            snprintf(err, sizeof err, "infer_shm: the shared memory shrank while the frame was read");
        break;
    }
    case OSP_WIRE_MSG_INFER_CACHED: {
        osp_view_t v = osp_image_view(&j->cached->img);
        rc = prepare_view(r, j->ctx, &v, OSP_TCACHE_FRAME, j->cached->id, (uint32_t)r->model_idx,
                          j->cached, err, sizeof err);
        j->view = v; /* the cached frame's pixels: referenced by the job */
        j->has_view = rc == 0;
        break;
    }
    default: snprintf(err, sizeof err, "unexpected message type %u", r->msg_type); rc = -1;
    }
    if (rc) {
        reply_infer_error(r, err, 0);
        return;
    }
    j->prepared = 1;
}

static void exec_prepare(void *arg, osp_qnode_t *item, int worker) {
    srv_exec_t *e = arg;
    frame_job_t *j = (frame_job_t *)item;
    prepare_job(j, &e->prep_ws[worker]);
    if (j->prepared)
        osp_pool_push(e->predict, &j->r.h.q);
    else
        finish(&j->r);
}

/* The result record of one frame into w. */
static void put_result(const srv_req_t *r, osp_jw_t *w, const osp_result_t *res, int batch) {
    osp_jw_obj_open(w);
    osp_model_put_result(w, srv_loaded_model(r->model), res, batch);
    osp_jw_obj_close(w);
}

static void reply_result(srv_req_t *r, const osp_result_t *res, int batch) {
    if (r->tp->result) {
        r->tp->result(r, srv_loaded_model(r->model), res);
        return;
    }
    osp_jw_reset(&r->out);
    size_t at = osp_wire_reply_begin(&r->out);
    put_result(r, &r->out, res, batch);
    osp_wire_reply_end(&r->out, at, r->req_id);
}

/* The transport's skip for the job's detection d (osp_infer_ctx_t.skip). */
static int skip_det(void *arg, const osp_det_t *d) {
    frame_job_t *j = arg;
    return j->r.tp->skip(&j->r, srv_loaded_model(j->r.model), d);
}

/* A model's cascade (model->then) on the frame the job was prepared from:
 * a step that would start past the request's deadline is skipped, and so
 * are the detections the transport says are settled. */
static int run_cascade(frame_job_t *j, osp_model_t *m, osp_result_t *res, char *err, size_t errlen) {
    if (!j->has_view) {
        snprintf(err, errlen,
                 "a model with a cascade (\"then\") takes its frames as infer, infer_jpeg or "
                 "infer_cached; this one came another way");
        return -1;
    }
    j->ctx->deadline_ms = j->r.deadline_ms;
    j->ctx->skip = j->r.tp->skip ? skip_det : NULL;
    j->ctx->skip_arg = j;
    int rc = osp_cascade_run(m->then, m, j->ctx, &j->view, res, err, errlen);
    j->ctx->deadline_ms = 0;
    j->ctx->skip = NULL;
    j->ctx->skip_arg = NULL;
    return rc;
}

/* Each predict_* returns 1 when its run was given up (the job and ws are
 * no longer its thread's), else 0. */
static int predict_single(srv_exec_t *e, int worker, frame_job_t *j, wstate_t *ws) {
    char err[512];
    srv_req_t *r = &j->r;
    /* the gate immediately before the model runs: a frame that waited in the
     * prepare queue past its deadline is dropped, not run */
    if (osp_gate_expired(r->deadline_ms)) {
        reply_dropped(r);
        finish(r);
        return 0;
    }
    osp_result_t res;
    osp_model_t *m = srv_loaded_model(r->model);
    j->ctx->lone = r->lone;
    run_begin(e, ws, worker, &r->h, r, 1);
    int rc = osp_model_predict(m, j->ctx, &res, err, sizeof err);
    if (rc == 0 && m->then) /* its steps, in the same run: the watchdog's bound covers them */
        rc = run_cascade(j, m, &res, err, sizeof err);
    if (run_end(e, ws)) {
        run_returned_late(e, &r->h, ws);
        return 1;
    }
    if (rc) {
        reply_infer_error(r, err, 0);
    } else {
        r->predict_ms = res.predict_ms;
        reply_result(r, &res, 1);
    }
    finish(r);
    return 0;
}

/* A window flush: every frame prepared here, the live ones run together,
 * each answered on its own request id with batchSize = frames run. */
static int predict_window(srv_exec_t *e, int worker, window_job_t *w, wstate_t *ws) {
    char err[512];
    osp_infer_ctx_t *ctxs[OSP_WINDOW_MAX];
    frame_job_t *live[OSP_WINDOW_MAX];
    osp_result_t res[OSP_WINDOW_MAX];
    int rcs[OSP_WINDOW_MAX], n = 0;
    for (int i = 0; i < w->n; i++) {
        frame_job_t *j = w->items[i];
        if (osp_gate_expired(j->r.deadline_ms)) {
            reply_dropped(&j->r);
            continue;
        }
        prepare_job(j, ws);
        if (!j->prepared) continue;
        live[n] = j;
        ctxs[n++] = j->ctx;
    }
    int rc = 0;
    if (n) {
        run_begin(e, ws, worker, &w->h, &live[0]->r, n);
        rc = osp_model_predict_batch(srv_loaded_model(live[0]->r.model), ctxs, n, res, rcs,
                                     &ws->buf, err, sizeof err);
        if (run_end(e, ws)) {
            run_returned_late(e, &w->h, ws);
            return 1;
        }
    }
    if (rc) {
        for (int i = 0; i < n; i++) reply_infer_error(&live[i]->r, err, 0);
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        if (rcs[i]) {
            reply_infer_error(&live[i]->r, err, 0);
        } else {
            live[i]->r.predict_ms = res[i].predict_ms;
            reply_result(&live[i]->r, &res[i], n);
        }
    }
    server_t *s = w->srv;
    for (int i = 0; i < w->n; i++) finish(&w->items[i]->r);
    srv_post(s, &w->h); /* after its frames: it only goes back to the pool */
    return 0;
}

/* An infer_batch: its items prepared into the worker's contexts and run in
 * stacked groups of up to OSP_WINDOW_MAX; one reply with every result. */
static int predict_batch(srv_exec_t *e, int worker, batch_job_t *b, wstate_t *ws) {
    char err[512];
    srv_req_t *r = &b->r;
    osp_wire_batch_iter_t it;
    osp_wire_image_t im;
    osp_model_t *m = srv_loaded_model(r->model);
    uint32_t tag = r->rq.u.batch.frame_id;
    uint32_t key = ((uint32_t)m->prep.width << 16) ^ (uint32_t)m->prep.height;
    int count = r->rq.u.batch.count;
    osp_now(&r->t0);
    if (m->then) {
        reply_infer_error(r,
                          "a model with a cascade (\"then\") runs frames one at a time: send "
                          "infer, infer_jpeg or infer_cached, not infer_batch",
                          0);
        finish(r);
        return 0;
    }
    osp_jw_reset(&r->out);
    size_t at = osp_wire_reply_begin(&r->out);
    osp_jw_obj_open(&r->out);
    osp_jw_key(&r->out, "results");
    osp_jw_arr_open(&r->out);
    osp_wire_batch_iter_init(&it, &r->rq.u.batch);
    int done = 0;
    while (done < count) {
        int group = count - done < OSP_WINDOW_MAX ? count - done : OSP_WINDOW_MAX;
        char item_err[OSP_WINDOW_MAX][160];
        int ok[OSP_WINDOW_MAX];
        osp_infer_ctx_t *ctxs[OSP_WINDOW_MAX];
        osp_result_t res[OSP_WINDOW_MAX];
        int rcs[OSP_WINDOW_MAX], n = 0;
        for (int i = 0; i < group; i++) {
            ok[i] = 0;
            if (osp_wire_batch_next(&it, &im, item_err[i], sizeof item_err[i]) != 1) continue;
            osp_view_t v = view_of(&im);
            set_params(r, &ws->ctx[i]);
            ws->ctx[i].lone = r->lone;
            if (prepare_view(r, &ws->ctx[i], &v, OSP_TCACHE_BENCH, tag, key, NULL, item_err[i],
                             sizeof item_err[i]))
                continue;
            ok[i] = 1;
            ctxs[n++] = &ws->ctx[i];
        }
        int run_rc = 0;
        if (n) {
            run_begin(e, ws, worker, &r->h, r, n);
            run_rc = osp_model_predict_batch(m, ctxs, n, res, rcs, &ws->buf, err, sizeof err);
            if (run_end(e, ws)) {
                run_returned_late(e, &r->h, ws);
                return 1;
            }
        }
        for (int i = 0, k = 0; i < group; i++) {
            if (!ok[i]) {
                osp_wire_json_infer_error(&r->out, item_err[i]);
                continue;
            }
            if (run_rc || rcs[k])
                osp_wire_json_infer_error(&r->out, err);
            else
                put_result(r, &r->out, &res[k], count);
            k++;
        }
        done += group;
    }
    osp_jw_arr_close(&r->out);
    osp_jw_obj_close(&r->out);
    osp_wire_reply_end(&r->out, at, r->req_id);
    finish(r);
    return 0;
}

static void exec_predict(void *arg, osp_qnode_t *item, int worker) {
    srv_exec_t *e = arg;
    srv_job_t *h = (srv_job_t *)item;
    wstate_t *ws = e->pred_ws[worker]; /* replaced (for the next thread) only while this one runs */
    int gone;
    switch (h->kind) {
    case SRV_JOB_WINDOW: gone = predict_window(e, worker, (window_job_t *)h, ws); break;
    case SRV_JOB_BATCH: gone = predict_batch(e, worker, (batch_job_t *)h, ws); break;
    default: gone = predict_single(e, worker, (frame_job_t *)h, ws); break;
    }
    if (gone || !ws->leaving) return;
    /* lent: its job is answered and the pool has another thread at its
     * index; it leaves (osp_pool_abandon) with its own state */
    wstate_free(e, ws);
    free(ws);
    pthread_mutex_lock(&e->mu);
    e->lent_out--;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu); /* e may be gone from here on */
}

/* ---- the pools ------------------------------------------------------------------- */

srv_exec_t *srv_exec_new(server_t *s) {
    srv_exec_t *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->s = s;
    e->parked = s->parked;
    e->workers = s->set.workers;
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->prep_ws = calloc((size_t)e->workers, sizeof *e->prep_ws);
    e->pred_ws = calloc((size_t)e->workers, sizeof *e->pred_ws);
    int ok = e->prep_ws && e->pred_ws;
    for (int i = 0; ok && i < e->workers; i++)
        ok = (e->pred_ws[i] = calloc(1, sizeof **e->pred_ws)) != NULL;
    if (!ok) {
        srv_exec_free(e);
        return NULL;
    }
    e->prepare = osp_pool_new("osp-prepare", e->workers, 0, exec_prepare, e);
    e->predict = osp_pool_new("osp-predict", e->workers, s->set.predict_nice, exec_predict, e);
    if (!e->prepare || !e->predict) {
        srv_exec_free(e);
        return NULL;
    }
    return e;
}

void srv_exec_free(srv_exec_t *e) {
    if (!e) return;
    osp_pool_free(e->prepare);
    osp_pool_free(e->predict); /* joins every thread but those given up */
    for (int i = 0; e->prep_ws && i < e->workers; i++) wstate_free(e, &e->prep_ws[i]);
    for (int i = 0; e->pred_ws && i < e->workers; i++) {
        wstate_free(e, e->pred_ws[i]);
        free(e->pred_ws[i]);
    }
    pthread_mutex_lock(&e->mu);
    /* threads lent finish their last few steps (their jobs are answered) */
    while (e->lent_out > 0) pthread_cond_wait(&e->cv, &e->mu);
    e->closed = 1;
    int stuck = e->stuck; /* each of them still reads e when it returns: the last frees it */
    pthread_mutex_unlock(&e->mu);
    if (!stuck) exec_destroy(e);
}

int srv_exec_runs(server_t *s, srv_run_t *out, int cap) {
    srv_exec_t *e = s->exec;
    int n = 0;
    if (!e) return 0;
    pthread_mutex_lock(&e->mu);
    for (const run_t *u = e->running; u && n < cap; u = u->next) {
        const wstate_t *ws = (const wstate_t *)((const char *)u - offsetof(wstate_t, run));
        out[n++] = (srv_run_t){.seq = u->seq,
                               .job = u->job,
                               .model_idx = u->model_idx,
                               .model = u->model,
                               .items = u->items,
                               .lent = ws->lent,
                               .elapsed_ms = osp_ms_since(&u->started)};
    }
    pthread_mutex_unlock(&e->mu);
    return n;
}

/* Under e->mu: the run in progress with this seq, or NULL (it returned). */
static run_t *find_run(srv_exec_t *e, uint64_t seq) {
    run_t *u = e->running;
    while (u && u->seq != seq) u = u->next;
    return u;
}

/* Under e->mu: a new thread takes the worker index of u's thread, with
 * fresh state; u's thread keeps its own and leaves after its job. */
static int hand_over(srv_exec_t *e, run_t *u, wstate_t *fresh) {
    wstate_t *ws = (wstate_t *)((char *)u - offsetof(wstate_t, run));
    e->pred_ws[u->worker] = fresh;
    if (osp_pool_abandon(e->predict, u->worker)) {
        e->pred_ws[u->worker] = ws;
        return -1;
    }
    ws->lent = 1;
    e->lent_out++;
    return 0;
}

int srv_exec_lend(server_t *s, const srv_run_t *run) {
    srv_exec_t *e = s->exec;
    wstate_t *fresh = calloc(1, sizeof *fresh);
    if (!fresh) return -1;
    pthread_mutex_lock(&e->mu);
    run_t *u = find_run(e, run->seq);
    int rc = !u || run->lent ? 0 : hand_over(e, u, fresh) ? -1 : 1;
    pthread_mutex_unlock(&e->mu);
    if (rc != 1) free(fresh);
    return rc;
}

int srv_exec_abandon(server_t *s, const srv_run_t *run, void (*late)(server_t *s, srv_job_t *j)) {
    srv_exec_t *e = s->exec;
    wstate_t *fresh = calloc(1, sizeof *fresh);
    if (!fresh) return -1;
    int rc = 1, used = 0;
    pthread_mutex_lock(&e->mu);
    run_t *u = find_run(e, run->seq);
    if (!u) {
        rc = 0; /* it returned meanwhile: nothing to give up */
    } else if (!run->lent && hand_over(e, u, fresh)) {
        rc = -1;
    } else {
        used = !run->lent;
        e->lent_out--; /* no longer finishing its job: stuck instead */
        pthread_cond_broadcast(&e->cv);
        u->abandoned = 1;
        u->job->done = late; /* before the thread can return and post it */
        unlink_run(e, u);
        e->stuck++;
    }
    pthread_mutex_unlock(&e->mu);
    if (!used) free(fresh);
    return rc;
}

int srv_exec_stuck(server_t *s) {
    srv_exec_t *e = s->exec;
    if (!e) return 0;
    pthread_mutex_lock(&e->mu);
    int n = e->stuck;
    pthread_mutex_unlock(&e->mu);
    return n;
}

void srv_exec_prepare(server_t *s, frame_job_t *j) {
    osp_pool_push(j->prepared ? s->exec->predict : s->exec->prepare, &j->r.h.q);
}

void srv_exec_predict(server_t *s, srv_job_t *j) { osp_pool_push(s->exec->predict, &j->q); }
