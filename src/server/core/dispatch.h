/*
 * dispatch: the core's door, on the I/O thread. Every front end's frame
 * enters here as a job with its transport (job.h): it passes the deadline
 * gate and its model's admission (sched/) on its way to the worker pools
 * (exec.c), comes back here to free its run slot for the next, and is
 * answered through its transport exactly once, with a typed outcome
 * (ledger.h) counted in one place (account.h). Frames shed here (a full
 * queue, a passed deadline) or refused (no model, a model reloading) are
 * answered here too.
 */
#ifndef OSP_DISPATCH_H
#define OSP_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "server/core/job.h"
#include "server/core/srv.h"

/* A frame job with its model_idx (and, if prepared as read, its model and
 * context) set: through admission to the pools. */
void srv_dispatch_submit(server_t *s, frame_job_t *j);

/* A batch job (an infer_batch of the pipe's) with its model_idx set, for
 * loaded model l: no admission (as the protocol says), straight to one
 * predict worker, which runs its items. */
void srv_dispatch_batch(server_t *s, batch_job_t *j, loaded_t *l);

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

#endif
