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

#include <stdint.h>

#include "server/core/job.h"
#include "server/core/srv.h"

/* Frames whose pixels were parked as they were read (the host
 * connections' raw frames spliced into pipes: pipe/rows.c), made into
 * their tensor by a prepare worker: prepare makes j's tensor from them,
 * *state the worker's own between frames (made on first use): 1 when it
 * is made, 0 when the frame's bytes were filled in to be prepared whole,
 * -1 on an error (err says it); free gives a worker's state back. */
typedef struct srv_parked_ops {
    int (*prepare)(void **state, frame_job_t *j, char *err, size_t errlen);
    void (*free)(void *state);
} srv_parked_ops_t;

/* Start s->set.workers threads in each pool (s->parked is read now). NULL
 * on failure. */
srv_exec_t *srv_exec_new(server_t *s);
/* Let the workers finish what is queued, join them, free their state. */
void srv_exec_free(srv_exec_t *e);
/* A frame job to the prepare pool, or straight to predict when prepared. */
void srv_exec_prepare(server_t *s, frame_job_t *j);
/* A batch or window job to the predict pool. */
void srv_exec_predict(server_t *s, srv_job_t *j);

/* A run in progress on a predict worker (watchdog.c reads them). */
typedef struct {
    int worker;
    uint64_t seq;   /* names the run to srv_exec_abandon */
    srv_job_t *job; /* a frame, window or batch job, still the worker's */
    int model_idx;
    const loaded_t *model; /* the reference the job holds */
    int items;             /* frames run together (a window or a batch's group) */
    int lent;              /* its worker index has gone to another thread already */
    double elapsed_ms;
} srv_run_t;
/* The runs in progress now, at most cap of them, into out. */
int srv_exec_runs(server_t *s, srv_run_t *out, int cap);
/* Lend run's worker (I/O thread): a new thread takes its place in the
 * pool, so a run much slower than its model's others does not keep other
 * work from every worker; the run goes on and is answered as usual, and
 * its thread leaves the pool afterwards. 1 when lent, 0 when the run
 * returned meanwhile or was lent already, -1 when no thread could be
 * started. */
int srv_exec_lend(server_t *s, const srv_run_t *run);
/* Give up run `run` (I/O thread): its worker is replaced by a new thread
 * (unless lent already) and the job's requests become the caller's to
 * answer. Its thread keeps
 * the job's memory until the run returns, if ever; it then posts the job
 * back with `late` as its done, and leaves. 1 when given up, 0 when the
 * run returned meanwhile (it is answered as usual), -1 when no thread
 * could be started (nothing changed). */
int srv_exec_abandon(server_t *s, const srv_run_t *run, void (*late)(server_t *s, srv_job_t *j));
/* Runs given up whose threads have not returned. */
int srv_exec_stuck(server_t *s);

#endif
