/*
 * exec: the worker pools. A prepare pool decodes and preprocesses frames;
 * a predict pool applies the deadline gate once more, runs the model (one
 * stacked run for a window or an infer_batch when the model's batch axis
 * is dynamic), decodes its outputs and writes the reply. Finished jobs go
 * back to the I/O thread through the loop's mailbox (srv_post); nothing
 * here touches a socket. The struct is private to exec.c.
 */
#ifndef OSP_EXEC_H
#define OSP_EXEC_H

#include "server/job.h"
#include "server/srv.h"

/* Start s->set.workers threads in each pool. NULL on failure. */
srv_exec_t *srv_exec_new(server_t *s);
/* Let the workers finish what is queued, join them, free their state. */
void srv_exec_free(srv_exec_t *e);
/* A frame job to the prepare pool, or straight to predict when prepared. */
void srv_exec_prepare(server_t *s, frame_job_t *j);
/* A batch or window job to the predict pool. */
void srv_exec_predict(server_t *s, srv_job_t *j);

#endif
