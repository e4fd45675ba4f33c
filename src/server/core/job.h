/*
 * job: what travels between the I/O thread and the worker pools. Every
 * job starts with the same small header: the pool and mailbox link, what a
 * predict worker does with it, and the callback that finishes it back on
 * the I/O thread. Requests (frames and batches) add what a request
 * carries; each other kind (a model load returning, a handshake's models,
 * a stream opened) is a struct private to the file that makes it.
 *
 * A job is a message: whoever holds it owns it, and its fields are read
 * and written only by its holder — the I/O thread until it is pushed to a
 * pool, then that worker until it is posted back. Frame and batch jobs
 * come from a pool (srv_jobs_t, I/O thread only) and keep their reply
 * buffer between uses, so serving a frame allocates neither.
 */
#ifndef OSP_JOB_H
#define OSP_JOB_H

#include <stdint.h>
#include <time.h>

#include "model/model.h"
#include "sched/cache.h"
#include "sched/pool.h"
#include "server/core/ledger.h"
#include "server/core/srv.h"
#include "wire/frame.h"
#include "wire/jsonw.h"

typedef struct loaded loaded_t;
typedef struct spill spill_t;
typedef struct shm_region shm_region_t;

typedef enum {
    SRV_JOB_FRAME,  /* one frame: prepare (unless prepared as read), then predict */
    SRV_JOB_BATCH,  /* an infer_batch: its items prepared and run by one predict worker */
    SRV_JOB_WINDOW, /* a window flush: several frames run together */
    SRV_JOB_EVENT,  /* anything else: only its done callback matters */
} srv_job_kind_t;

typedef struct srv_job {
    osp_qnode_t q; /* pool and mailbox link: must stay first */
    srv_job_kind_t kind;
    /* on the I/O thread, when the job comes back through the mailbox */
    void (*done)(server_t *s, struct srv_job *j);
} srv_job_t;

struct srv_req;

/* Where a request came from and where its answer goes: every request has
 * one. The host connections' (pipe: reply.c) and each front end's (zmq.c,
 * fleet.c) own. How a frame's pixels become its model's tensor (a prepare
 * worker; NULL: the request is a host's wire request, rq, prepared by
 * exec.c), how its result is written (a predict worker; NULL: the wire's
 * reply into out), where its reply goes (the I/O thread, once, whatever
 * the outcome: r->outcome says it), and what the request holds of the
 * transport's is given back (the I/O thread, when the job is released:
 * after send, or once a run given up returns; NULL: nothing). */
typedef struct {
    int (*prepare)(struct srv_req *r, const osp_model_t *m, osp_infer_ctx_t *ctx, char *err,
                   size_t errlen);
    void (*result)(struct srv_req *r, const osp_model_t *m, const osp_result_t *res);
    void (*send)(server_t *s, struct srv_req *r);
    void (*release)(server_t *s, struct srv_req *r);
    /* A model with a cascade (a prepare worker, after prepare): the frame
     * prepare made the tensor from, for the steps to crop from: 0 and *v,
     * kept as it is until release; nonzero or NULL: none, and the frame is
     * answered with an error. A transport that lends it keeps what it
     * holds until release, even when the answer went out first (a run
     * given up). */
    int (*pixels)(struct srv_req *r, osp_view_t *v);
    /* A model with a cascade (the predict worker, between the model's run
     * and its steps): nonzero for a detection d (in the pixels the frame
     * was prepared from) that runs no step, its object's steps being
     * settled (a camera: track/steps.h); NULL: every detection a step
     * takes runs it. Called only after pixels lent the frame. */
    int (*skip)(struct srv_req *r, const osp_model_t *m, const osp_det_t *d);
    int paced; /* at most one of its frames in flight (a camera): its frames wait
                * rather than push out another's (sched/admit.h) */
} srv_transport_t;

/* A request for one model: a frame or a batch. */
typedef struct srv_req {
    srv_job_t h;
    server_t *srv;
    const srv_transport_t *tp; /* where it came from and its answer goes */
    void *tp_arg;              /* the transport's own request */
    uint32_t conn_id, req_id;  /* a host connection's request (conn_id 0: none) */
    uint8_t msg_type;
    uint64_t deadline_ms;
    int model_idx;
    loaded_t *model;           /* a reference, released by the I/O thread */
    float confidence, nms_iou; /* the model's decode settings when it was dispatched */
    int max_detections;
    uint8_t *frame; /* the request frame's bytes (from s->bufs), or NULL */
    size_t frame_len;
    osp_wire_request_t rq; /* points into frame */
    int lone;              /* no other frame of its model admitted at dispatch */
    srv_outcome_t outcome; /* what its reply says became of it (zeroed: served); set by
                            * whoever writes an error or a drop into out */
    osp_jw_t out;          /* the reply frame, written by a worker */
    struct timespec t0;
    struct timespec arrived; /* when the job was made (the per-model histograms) */
    double predict_ms;       /* a single frame's run and decode, set by its predict worker */
} srv_req_t;

typedef struct {
    srv_req_t r;
    osp_cframe_t *cached; /* infer_cached: the frame, referenced */
    shm_region_t *shm;    /* infer_shm: the region, referenced */
    osp_view_t shm_view;  /* the frame inside it */
    osp_infer_ctx_t *ctx; /* from s->ctxs once prepared (or prepared as read) */
    int prepared;         /* ctx holds the tensor */
    int admitted;         /* holds a run slot of its model */
    spill_t *spill;       /* part of the frame still parked in pipes (infer_raw) */
    /* a model with a cascade: the frame its steps crop from (the request's
     * pixels, the cached frame's, or `whole`), once prepared */
    osp_view_t view;
    int has_view;
    osp_image_t whole; /* infer_jpeg: the frame decoded whole */
} frame_job_t;

typedef struct {
    srv_req_t r;
} batch_job_t;

typedef struct {
    srv_job_t h;
    server_t *srv;
    int model_idx;
    int n;
    frame_job_t *items[64]; /* OSP_WINDOW_MAX */
} window_job_t;

srv_jobs_t *srv_jobs_new(void);
void srv_jobs_free(srv_jobs_t *p);

/* A frame or batch job for transport tp (its tp_arg and, for a host's
 * request, conn_id are the caller's to set), for wire request rq if not
 * NULL, holding `frame` (taken: returned to s->bufs when the job is freed;
 * NULL: none). NULL when out of memory (frame is then still the
 * caller's). */
frame_job_t *srv_frame_job_new(server_t *s, const srv_transport_t *tp,
                               const osp_wire_request_t *rq, uint8_t *frame, size_t len);
batch_job_t *srv_batch_job_new(server_t *s, const srv_transport_t *tp,
                               const osp_wire_request_t *rq, uint8_t *frame, size_t len);
window_job_t *srv_window_job_new(server_t *s, int model_idx);
/* Hand the job's reply (j->out) to its transport; count its outcome (account.h: the one
 * place a job's answer is counted); end its time in flight, and give
 * everything it holds back. */
void srv_job_retire(server_t *s, srv_job_t *j);
/* The two halves of srv_job_retire, for a job whose run was given up
 * (watchdog.c): its reply sent and its time in flight ended now; what it
 * holds given back only when the stuck run has returned. */
void srv_job_answer(server_t *s, srv_job_t *j);
void srv_job_release(server_t *s, srv_job_t *j);
/* Give a window job back (its items are retired one by one). */
void srv_window_job_free(server_t *s, window_job_t *w);
/* Requests in flight in the whole server (jobs made and not retired, and
 * events that hold the server open: srv_jobs_hold). */
int srv_jobs_inflight(const server_t *s);
void srv_jobs_hold(server_t *s, int delta);

#endif
