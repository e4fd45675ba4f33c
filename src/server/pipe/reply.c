/* A host connection's replies and the transport of its jobs; see reply.h. */
#include "server/pipe/reply.h"

#include "server/pipe/conn.h"
#include "server/pipe/ingest.h"

static void pipe_release(server_t *s, srv_req_t *r) {
    (void)s;
    if (r->h.kind != SRV_JOB_FRAME) return;
    frame_job_t *j = (frame_job_t *)r;
    srv_spill_free(j->spill); /* shed or answered before it ran: nothing was copied */
    j->spill = NULL;
}

const srv_transport_t srv_pipe_tp = {.send = srv_pipe_send, .release = pipe_release};

void srv_pipe_send(server_t *s, srv_req_t *r) {
    conn_t *c = srv_conn_find(s, r->conn_id);
    srv_send(s, c, &r->out);
    if (c) srv_conn_inflight(c, -1);
}

frame_job_t *srv_pipe_frame_job(server_t *s, conn_t *c, const srv_transport_t *tp,
                                const osp_wire_request_t *rq, uint8_t *frame, size_t len) {
    frame_job_t *j = srv_frame_job_new(s, tp, rq, frame, len);
    if (!j) return NULL;
    j->r.conn_id = srv_conn_id(c);
    srv_conn_inflight(c, 1);
    return j;
}

batch_job_t *srv_pipe_batch_job(server_t *s, conn_t *c, const osp_wire_request_t *rq,
                                uint8_t *frame, size_t len) {
    batch_job_t *j = srv_batch_job_new(s, &srv_pipe_tp, rq, frame, len);
    if (!j) return NULL;
    j->r.conn_id = srv_conn_id(c);
    srv_conn_inflight(c, 1);
    return j;
}

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


size_t srv_cmd_begin(osp_jw_t *w, const char *name, int index, const char *status) {
    size_t at = osp_wire_reply_begin(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd");
    osp_jw_str(w, name);
    if (index >= 0) {
        osp_jw_key(w, "index");
        osp_jw_int(w, index);
    }
    osp_jw_key(w, "status");
    osp_jw_str(w, status);
    return at;
}

void srv_cmd_send(server_t *s, uint32_t conn_id, osp_jw_t *w, size_t at, uint32_t req_id) {
    osp_jw_obj_close(w);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, srv_conn_find(s, conn_id), w);
}

void srv_cmd_error(server_t *s, uint32_t conn_id, uint32_t req_id, const char *name, int index,
                   const char *msg) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = srv_cmd_begin(w, name, index, "error");
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    srv_cmd_send(s, conn_id, w, at, req_id);
}
