/*
 * dispatch: what happens to a request frame once it is read, on the I/O
 * thread. The handshake goes to hello.c, commands to commands.c, the
 * extensions to shm.c and streams.c; frames and batches become jobs that
 * pass the deadline gate and their model's admission (sched/) on their
 * way to the worker pools (exec.c), and come back here to be answered and
 * to free their run slot for the next. Replies that need no frame work
 * (errors, drops) are written here too.
 */
#ifndef OSP_DISPATCH_H
#define OSP_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "server/job.h"
#include "server/srv.h"

/* A whole request frame read from c: `frame` (from s->bufs) is taken;
 * spill, if not NULL, holds the part of its pixels parked in pipes (taken
 * too). */
void srv_dispatch_frame(server_t *s, conn_t *c, uint8_t *frame, size_t len, spill_t *spill);
/* A frame job with its model_idx (and, if prepared as read, its model and
 * context) set: through admission to the pools. */
void srv_dispatch_submit(server_t *s, frame_job_t *j);

/* The door of a front end whose frames are no pipe requests (Frigate's
 * socket, the fleet): one frame for slot idx whose pixels, result and
 * reply are tp's (job.h), with deadline_ms (epoch ms, 0: none). It is
 * counted received and goes through the deadline gate and the model's
 * admission to the pools like a pipe's frame; its typed outcome
 * (r->outcome: served, shed for a reason, failed of a kind) reaches
 * tp->send on the I/O thread exactly once, and is counted there. 0: the
 * core holds arg until then; -1 (out of memory): nothing was submitted or
 * counted, and arg is still the caller's. I/O thread. */
int srv_submit_frame(server_t *s, int idx, uint64_t deadline_ms, const srv_transport_t *tp, void *arg);
/* Batch windows: milliseconds until the next is due (-1: none), and send
 * the ones that are due. */
int srv_dispatch_timer_ms(server_t *s);
void srv_dispatch_flush_due(server_t *s);

/* A job whose run was given up (watchdog.c): each of its requests answered
 * now with msg (or with what its worker had answered already), counted,
 * its run slot freed for the next frame; what the job holds stays with
 * the stuck run. Returns the requests answered. */
int srv_dispatch_abandoned(server_t *s, srv_job_t *h, const char *msg);
/* That job back from its stuck run: what it holds given back, no reply. */
void srv_dispatch_returned(server_t *s, srv_job_t *h);

typedef enum {
    SRV_ERR_PLAIN,   /* {"error": text} */
    SRV_ERR_RESULTS, /* {"error": text, "results": []} */
    SRV_ERR_INFER, /* a failed inference record: {"error", "kind", "detections": [], "inferenceMs"} */
} srv_err_t;
/* One error reply for req_id on c. */
void srv_reply_error(server_t *s, conn_t *c, uint32_t req_id, srv_err_t shape, const char *msg);
/* The reply to a frame over the size cap (counted and logged; the caller
 * closes the connection: the stream cannot be resynchronised). */
void srv_reply_too_large(server_t *s, conn_t *c, uint32_t total_len, uint32_t req_id);
/* The same for a frame whose total_len (below 5) cannot hold its header. */
void srv_reply_too_short(server_t *s, conn_t *c, uint32_t total_len, uint32_t req_id);

#endif
