/*
 * The frame work, on the pool threads: the prepare pool decodes and
 * preprocesses, the predict pool applies the deadline gate, runs the model
 * (one stacked run for a window or an infer_batch when the model's batch
 * axis is dynamic), decodes its outputs and writes the reply frames.
 * Finished jobs go back to the I/O thread through the mailbox; nothing here
 * touches a socket.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

/* ---- the context pool --------------------------------------------------------- */

osp_infer_ctx_t *srv_ctx_get(server_t *s) {
    pthread_mutex_lock(&s->ctx_mu);
    ctxnode_t *n = s->ctx_free;
    if (n) s->ctx_free = n->next;
    pthread_mutex_unlock(&s->ctx_mu);
    if (!n) {
        if (!(n = calloc(1, sizeof *n))) return NULL;
        pthread_mutex_lock(&s->ctx_mu);
        s->ctx_total++;
        pthread_mutex_unlock(&s->ctx_mu);
    }
    n->ctx.params_set = 0;
    return &n->ctx;
}

void srv_ctx_put(server_t *s, osp_infer_ctx_t *c) {
    ctxnode_t *n = (ctxnode_t *)((char *)c - offsetof(ctxnode_t, ctx));
    pthread_mutex_lock(&s->ctx_mu);
    n->next = s->ctx_free;
    s->ctx_free = n;
    pthread_mutex_unlock(&s->ctx_mu);
}

void srv_wstate_free(wstate_t *w) {
    osp_decoder_free(w->dec);
    osp_image_free(&w->img);
    for (int i = 0; i < OSP_WINDOW_MAX; i++) osp_infer_ctx_free(&w->ctx[i]);
    osp_batch_buf_free(&w->buf);
    srv_rows_free(NULL, w->rows);
}

/* ---- helpers -------------------------------------------------------------------- */

static void finish(job_t *j) { osp_mailbox_post(&j->srv->done, &j->q); }

static int deadline_passed(uint64_t deadline_ms) {
    return deadline_ms != 0 && (uint64_t)srv_epoch_ms() > deadline_ms;
}

static void reply_infer_error(job_t *j, const char *msg, int plain) {
    osp_jw_reset(&j->out);
    size_t at = osp_wire_reply_begin(&j->out);
    if (plain)
        osp_wire_json_error(&j->out, msg);
    else
        osp_wire_json_infer_error(&j->out, msg);
    osp_wire_reply_end(&j->out, at, j->req_id);
    j->failed = 1;
}

static void reply_dropped(job_t *j) {
    j->shed = 1;
    osp_jw_reset(&j->out);
    size_t at = osp_wire_reply_begin(&j->out);
    osp_wire_json_dropped(&j->out, OSP_WIRE_SHED_DEADLINE);
    osp_wire_reply_end(&j->out, at, j->req_id);
}

static void set_params(const job_t *j, osp_infer_ctx_t *ctx) {
    ctx->params_set = 1;
    ctx->confidence = j->confidence;
    ctx->nms_iou = j->nms_iou;
    ctx->max_detections = j->max_detections;
}

static osp_view_t view_of(const osp_wire_image_t *im) {
    return (osp_view_t){.data = im->pixels, .width = (int)im->width, .height = (int)im->height,
                        .stride = (int)(im->width * im->channels), .fmt = (osp_pixfmt_t)im->fmt};
}

/* Preprocess one view for the job's model, through the tensor cache when
 * the frame is tagged. */
static int prepare_view(job_t *j, osp_infer_ctx_t *ctx, const osp_view_t *v, int orig_w,
                        int orig_h, osp_tcache_kind_t kind, uint32_t tag, uint32_t key,
                        char *err, size_t errlen) {
    osp_model_t *m = j->model->m;
    if (tag && osp_model_ensure_tensor(m, ctx) == 0) {
        osp_tmeta_t meta;
        if (osp_cache_get_tensor(j->srv->cache, kind, tag, key, ctx->tensor,
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
    if (osp_model_prepare(m, ctx, v, orig_w, orig_h, err, errlen)) return -1;
    if (tag) {
        osp_tmeta_t meta = {ctx->geom, ctx->frame_w, ctx->frame_h, ctx->view_w, ctx->view_h};
        osp_cache_put_tensor(j->srv->cache, kind, tag, key, ctx->tensor,
                             osp_prep_tensor_bytes(&m->prep), &meta);
    }
    return 0;
}

/* Decode and preprocess a single-frame job into its context; on failure the
 * reply is written and j->prepared stays 0. */
static void prepare_job(job_t *j, wstate_t *ws) {
    char err[512];
    if (j->prepared) return; /* prepared as it was read (rows.c) */
    osp_model_t *m = j->model->m;
    int rc = 0;
    clock_gettime(CLOCK_MONOTONIC, &j->t0);
    if (!j->ctx && !(j->ctx = srv_ctx_get(j->srv))) {
        reply_infer_error(j, "out of memory", 0);
        return;
    }
    set_params(j, j->ctx);
    switch (j->msg_type) {
    case OSP_WIRE_MSG_INFER_JPEG: {
        if (!ws->dec && !(ws->dec = osp_decoder_new())) {
            reply_infer_error(j, "out of memory", 0);
            return;
        }
        int ow = 0, oh = 0;
        char derr[400];
        if (osp_image_decode(ws->dec, j->rq.u.jpeg.data, j->rq.u.jpeg.len, m->prep.width,
                             m->prep.height, &ws->img, &ow, &oh, derr, sizeof derr)) {
            snprintf(err, sizeof err, "jpeg decode failed: %s", derr);
            reply_infer_error(j, err, 1);
            return;
        }
        osp_view_t v = osp_image_view(&ws->img);
        rc = osp_model_prepare(m, j->ctx, &v, ow, oh, err, sizeof err);
        break;
    }
    case OSP_WIRE_MSG_INFER_RAW: {
        if (j->spill) {
            int st = srv_rows_parked(&ws->rows, j, err, sizeof err);
            if (st) {
                srv_spill_free(j->spill);
                j->spill = NULL;
                if (st < 0) {
                    reply_infer_error(j, err, 0);
                    return;
                }
                break; /* the tensor is made */
            }
            int lost = srv_spill_fill(j->spill, j->frame);
            srv_spill_free(j->spill);
            j->spill = NULL;
            if (lost) {
                reply_infer_error(j, "frame bytes lost in transit", 0);
                return;
            }
        }
        osp_view_t v = view_of(&j->rq.u.raw.img);
        rc = osp_model_prepare(m, j->ctx, &v, 0, 0, err, sizeof err);
        break;
    }
    case OSP_MSG_INFER_SHM:
        rc = osp_model_prepare(m, j->ctx, &j->shm_view, 0, 0, err, sizeof err);
        break;
    case OSP_WIRE_MSG_INFER_CACHED: {
        osp_view_t v = osp_image_view(&j->cached->img);
        rc = prepare_view(j, j->ctx, &v, 0, 0, OSP_TCACHE_FRAME, j->cached->id,
                          (uint32_t)j->model_idx, err, sizeof err);
        break;
    }
    default:
        snprintf(err, sizeof err, "unexpected message type %u", j->msg_type);
        rc = -1;
    }
    if (rc) {
        reply_infer_error(j, err, 0);
        return;
    }
    j->prepared = 1;
}

void exec_prepare(void *arg, osp_qnode_t *item, int worker) {
    server_t *s = arg;
    job_t *j = (job_t *)item;
    prepare_job(j, &s->prep_ws[worker]);
    if (j->prepared)
        osp_pool_push(s->predict, &j->q);
    else
        finish(j);
}

/* The result record of one frame into w. */
static void put_result(const job_t *j, osp_jw_t *w, const osp_result_t *r, int batch) {
    osp_jw_obj_open(w);
    osp_model_put_result(w, j->model->m, r, batch);
    osp_jw_obj_close(w);
}

static void reply_result(job_t *j, const osp_result_t *r, int batch) {
    osp_jw_reset(&j->out);
    size_t at = osp_wire_reply_begin(&j->out);
    put_result(j, &j->out, r, batch);
    osp_wire_reply_end(&j->out, at, j->req_id);
}

static void predict_single(job_t *j) {
    char err[512];
    /* the gate immediately before the model runs: a frame that waited in the
     * prepare queue past its deadline is dropped, not run */
    if (deadline_passed(j->deadline_ms)) {
        reply_dropped(j);
        finish(j);
        return;
    }
    osp_result_t r;
    j->ctx->lone = j->lone;
    if (osp_model_predict(j->model->m, j->ctx, &r, err, sizeof err))
        reply_infer_error(j, err, 0);
    else
        reply_result(j, &r, 1);
    finish(j);
}

/* A window flush: every frame prepared here, the live ones run together,
 * each answered on its own request id with batchSize = frames run. */
static void predict_window(job_t *w, wstate_t *ws) {
    char err[512];
    osp_infer_ctx_t *ctxs[OSP_WINDOW_MAX];
    job_t *live[OSP_WINDOW_MAX];
    osp_result_t res[OSP_WINDOW_MAX];
    int rcs[OSP_WINDOW_MAX], n = 0;
    for (int i = 0; i < w->n_items; i++) {
        job_t *j = w->items[i];
        if (deadline_passed(j->deadline_ms)) {
            reply_dropped(j);
            continue;
        }
        prepare_job(j, ws);
        if (!j->prepared) continue;
        live[n] = j;
        ctxs[n++] = j->ctx;
    }
    if (n && osp_model_predict_batch(live[0]->model->m, ctxs, n, res, rcs, &ws->buf, err, sizeof err)) {
        for (int i = 0; i < n; i++) reply_infer_error(live[i], err, 0);
        n = 0;
    }
    for (int i = 0; i < n; i++) {
        if (rcs[i])
            reply_infer_error(live[i], err, 0);
        else
            reply_result(live[i], &res[i], n);
    }
    for (int i = 0; i < w->n_items; i++) finish(w->items[i]);
    free(w);
}

/* An infer_batch: its items prepared into the worker's contexts and run in
 * stacked groups of up to OSP_WINDOW_MAX; one reply with every result. */
static void predict_batch(job_t *j, wstate_t *ws) {
    char err[512];
    osp_wire_batch_iter_t it;
    osp_wire_image_t im;
    osp_model_t *m = j->model->m;
    uint32_t tag = j->rq.u.batch.frame_id;
    uint32_t key = ((uint32_t)m->prep.width << 16) ^ (uint32_t)m->prep.height;
    int count = j->rq.u.batch.count;
    osp_jw_reset(&j->out);
    size_t at = osp_wire_reply_begin(&j->out);
    osp_jw_obj_open(&j->out);
    osp_jw_key(&j->out, "results");
    osp_jw_arr_open(&j->out);
    osp_wire_batch_iter_init(&it, &j->rq.u.batch);
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
            set_params(j, &ws->ctx[i]);
            ws->ctx[i].lone = j->lone;
            if (prepare_view(j, &ws->ctx[i], &v, 0, 0, OSP_TCACHE_BENCH, tag, key, item_err[i],
                             sizeof item_err[i]))
                continue;
            ok[i] = 1;
            ctxs[n++] = &ws->ctx[i];
        }
        int run_rc = n ? osp_model_predict_batch(m, ctxs, n, res, rcs, &ws->buf, err, sizeof err) : 0;
        for (int i = 0, k = 0; i < group; i++) {
            if (!ok[i]) {
                osp_wire_json_infer_error(&j->out, item_err[i]);
                continue;
            }
            if (run_rc || rcs[k])
                osp_wire_json_infer_error(&j->out, err);
            else
                put_result(j, &j->out, &res[k], count);
            k++;
        }
        done += group;
    }
    osp_jw_arr_close(&j->out);
    osp_jw_obj_close(&j->out);
    osp_wire_reply_end(&j->out, at, j->req_id);
    finish(j);
}

void exec_predict(void *arg, osp_qnode_t *item, int worker) {
    server_t *s = arg;
    job_t *j = (job_t *)item;
    if (j->kind == JOB_WINDOW) {
        predict_window(j, &s->pred_ws[worker]);
    } else if (j->kind == JOB_BATCH) {
        clock_gettime(CLOCK_MONOTONIC, &j->t0);
        predict_batch(j, &s->pred_ws[worker]);
    } else {
        predict_single(j);
    }
}
