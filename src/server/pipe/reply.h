/*
 * reply: how a host connection's requests are answered (reply.c). Its
 * frame and batch jobs carry the pipe's transport (job.h): their replies
 * go back to the connection that sent them, if it is still there; error
 * and command replies are written here.
 */
#ifndef OSP_REPLY_H
#define OSP_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "server/core/job.h"
#include "server/core/srv.h"
#include "wire/frame.h"

/* The transport of a connection's frames: the wire's prepare and reply,
 * sent back on the connection, a parked frame's pipes given back. */
extern const srv_transport_t srv_pipe_tp;
/* Send r's reply to its connection (if still there) and end its time in
 * flight: the send of srv_pipe_tp, and of any transport of the pipe's. */
void srv_pipe_send(server_t *s, srv_req_t *r);
/* A frame job of c's for request rq on transport tp (srv_pipe_tp or one
 * whose send is srv_pipe_send), holding frame (taken; see
 * srv_frame_job_new), in flight on c until it is sent. NULL when out of
 * memory (frame is still the caller's). */
frame_job_t *srv_pipe_frame_job(server_t *s, conn_t *c, const srv_transport_t *tp,
                                const osp_wire_request_t *rq, uint8_t *frame, size_t len);
batch_job_t *srv_pipe_batch_job(server_t *s, conn_t *c, const osp_wire_request_t *rq,
                                uint8_t *frame, size_t len);

typedef enum {
    SRV_ERR_PLAIN,   /* {"error": text} */
    SRV_ERR_RESULTS, /* {"error": text, "results": []} */
    SRV_ERR_INFER, /* a failed inference record: {"error", "kind", "detections": [], "inferenceMs"} */
} srv_err_t;
/* One error reply for req_id on c. */
void srv_reply_error(server_t *s, conn_t *c, uint32_t req_id, srv_err_t shape, const char *msg);

/* A command reply: begin writes {"cmd": name[, "index": i], "status":
 * status (index < 0: none); the caller adds its keys; send closes the
 * object and sends the frame to connection conn_id, if it is still there. */
size_t srv_cmd_begin(osp_jw_t *w, const char *name, int index, const char *status);
void srv_cmd_send(server_t *s, uint32_t conn_id, osp_jw_t *w, size_t at, uint32_t req_id);
/* {"cmd": name[, "index"], "status": "error", "error": msg} */
void srv_cmd_error(server_t *s, uint32_t conn_id, uint32_t req_id, const char *name, int index,
                   const char *msg);

#endif
