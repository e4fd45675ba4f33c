/*
 * The frame work, on the pool threads: the prepare pool decodes and
 * preprocesses, the predict pool applies the deadline gate, runs the model,
 * decodes its outputs and writes the reply frame. Finished jobs go back to
 * the I/O thread through the mailbox; nothing here touches a socket.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/internal.h"

/* Per-thread decode state: the JPEG handle and its output buffer. */
static _Thread_local osp_decoder_t *tl_dec;
static _Thread_local osp_image_t tl_img;

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

static void set_params(job_t *j, osp_infer_ctx_t *ctx) {
    ctx->params_set = 1;
    ctx->confidence = j->confidence;
    ctx->nms_iou = j->nms_iou;
    ctx->max_detections = j->max_detections;
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

/* Decode and preprocess; on failure the reply is written and j->prepared
 * stays 0. */
static void exec_prepare_only(job_t *j) {
    char err[512];
    osp_model_t *m = j->model->m;
    int rc = 0;
    clock_gettime(CLOCK_MONOTONIC, &j->t0);
    set_params(j, &j->ctx);
    switch (j->msg_type) {
    case OSP_WIRE_MSG_INFER_JPEG: {
        if (!tl_dec && !(tl_dec = osp_decoder_new())) {
            reply_infer_error(j, "out of memory", 0);
            return;
        }
        int ow = 0, oh = 0;
        char derr[400];
        if (osp_image_decode(tl_dec, j->rq.u.jpeg.data, j->rq.u.jpeg.len, m->prep.width,
                             m->prep.height, &tl_img, &ow, &oh, derr, sizeof derr)) {
            snprintf(err, sizeof err, "jpeg decode failed: %s", derr);
            reply_infer_error(j, err, 1);
            return;
        }
        osp_view_t v = osp_image_view(&tl_img);
        rc = osp_model_prepare(m, &j->ctx, &v, ow, oh, err, sizeof err);
        break;
    }
    case OSP_WIRE_MSG_INFER_RAW: {
        const osp_wire_image_t *im = &j->rq.u.raw.img;
        osp_view_t v = {.data = im->pixels, .width = (int)im->width, .height = (int)im->height,
                        .stride = (int)(im->width * im->channels), .fmt = (osp_pixfmt_t)im->fmt};
        rc = osp_model_prepare(m, &j->ctx, &v, 0, 0, err, sizeof err);
        break;
    }
    case OSP_WIRE_MSG_INFER_CACHED: {
        osp_view_t v = osp_image_view(&j->cached->img);
        rc = prepare_view(j, &j->ctx, &v, 0, 0, OSP_TCACHE_FRAME, j->cached->id,
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
    (void)arg;
    (void)worker;
    job_t *j = (job_t *)item;
    exec_prepare_only(j);
    if (j->prepared)
        osp_pool_push(j->srv->predict, &j->q);
    else
        finish(j);
}

/* The result record of one frame into w. */
static void put_result(job_t *j, osp_jw_t *w, const osp_result_t *r, int batch) {
    osp_jw_obj_open(w);
    osp_model_put_result(w, j->model->m, r, batch);
    osp_jw_obj_close(w);
}

static void predict_single(job_t *j) {
    char err[512];
    /* the gate immediately before the model runs: a frame that waited in the
     * prepare queue past its deadline is dropped, not run */
    if (deadline_passed(j->deadline_ms)) {
        j->shed = 1;
        osp_jw_reset(&j->out);
        size_t at = osp_wire_reply_begin(&j->out);
        osp_wire_json_dropped(&j->out, OSP_WIRE_SHED_DEADLINE);
        osp_wire_reply_end(&j->out, at, j->req_id);
        finish(j);
        return;
    }
    osp_result_t r;
    if (osp_model_predict(j->model->m, &j->ctx, &r, err, sizeof err)) {
        reply_infer_error(j, err, 0);
        finish(j);
        return;
    }
    osp_jw_reset(&j->out);
    size_t at = osp_wire_reply_begin(&j->out);
    put_result(j, &j->out, &r, j->batch_size > 0 ? j->batch_size : 1);
    osp_wire_reply_end(&j->out, at, j->req_id);
    finish(j);
}

/* A batch runs on one predict worker, item by item, with the worker's ctx. */
static void predict_batch(job_t *j) {
    char err[512];
    osp_wire_batch_iter_t it;
    osp_wire_image_t im;
    osp_wire_batch_iter_init(&it, &j->rq.u.batch);
    osp_jw_reset(&j->out);
    size_t at = osp_wire_reply_begin(&j->out);
    osp_jw_obj_open(&j->out);
    osp_jw_key(&j->out, "results");
    osp_jw_arr_open(&j->out);
    set_params(j, &j->ctx);
    uint32_t tag = j->rq.u.batch.frame_id;
    uint32_t key = ((uint32_t)j->model->m->prep.width << 16) ^ (uint32_t)j->model->m->prep.height;
    while (osp_wire_batch_next(&it, &im, err, sizeof err) == 1) {
        osp_view_t v = {.data = im.pixels, .width = (int)im.width, .height = (int)im.height,
                        .stride = (int)(im.width * im.channels), .fmt = (osp_pixfmt_t)im.fmt};
        osp_result_t r;
        if (prepare_view(j, &j->ctx, &v, 0, 0, OSP_TCACHE_BENCH, tag, key, err, sizeof err) ||
            osp_model_predict(j->model->m, &j->ctx, &r, err, sizeof err)) {
            osp_wire_json_infer_error(&j->out, err);
            continue;
        }
        put_result(j, &j->out, &r, (int)j->rq.u.batch.count);
    }
    osp_jw_arr_close(&j->out);
    osp_jw_obj_close(&j->out);
    osp_wire_reply_end(&j->out, at, j->req_id);
    finish(j);
}

/* A window flush: every frame prepared and run here, each answered on its
 * own request id with batchSize = the window's size. */
static void predict_window(job_t *w) {
    for (int i = 0; i < w->n_items; i++) {
        job_t *j = w->items[i];
        j->batch_size = w->n_items;
        exec_prepare_only(j);
        if (j->prepared)
            predict_single(j);
        else
            finish(j);
    }
    free(w);
}

void exec_predict(void *arg, osp_qnode_t *item, int worker) {
    (void)arg;
    (void)worker;
    job_t *j = (job_t *)item;
    if (j->kind == JOB_WINDOW) {
        predict_window(j);
    } else if (j->kind == JOB_BATCH) {
        clock_gettime(CLOCK_MONOTONIC, &j->t0);
        predict_batch(j);
    } else {
        predict_single(j);
    }
}
