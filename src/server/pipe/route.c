/*
 * The host protocol's requests (route.h), on the I/O thread: a whole
 * request frame read from a connection goes to the handshake (hello.c),
 * a command (commands.c), the extensions (shm.c, streams.c), or becomes a
 * frame or batch job of the connection's (reply.c) handed to the core's
 * door (core: dispatch.h). What needs no frame work (errors, a frame to
 * cache, an empty batch) is answered here.
 */
#include "server/pipe/route.h"

#include <stdio.h>
#include <string.h>

#include "sched/bufpool.h"
#include "sched/cache.h"
#include "sched/gate.h"
#include "sched/sched.h"
#include "server/core/account.h"
#include "server/pipe/cmds.h"
#include "server/pipe/conn.h"
#include "server/core/dispatch.h"
#include "server/pipe/ingest.h"
#include "server/core/ledger.h"
#include "server/pipe/reply.h"
#include "server/pipe/shm.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "server/pipe/streams.h"
#include "wire/frame.h"

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
    frame_job_t *j = srv_pipe_frame_job(s, c, &srv_pipe_tp, rq, frame, len);
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
    batch_job_t *j = srv_pipe_batch_job(s, c, rq, frame, len);
    if (!j) {
        osp_buf_put(s->bufs, frame);
        refuse(s, c, rq->req_id, idx, n, SRV_FAIL_NO_MEMORY, SRV_ERR_RESULTS, "out of memory");
        return;
    }
    j->r.model_idx = idx;
    srv_dispatch_batch(s, j, l);
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

void srv_route_frame(server_t *s, conn_t *c, uint8_t *frame, size_t len, spill_t *spill) {
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
