/* Jobs and their pool; see job.h. */
#include "server/core/job.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "sched/bufpool.h"
#include "sched/ctxpool.h"
#include "server/core/account.h"
#include "server/core/slots.h"

#define KEEP_FRAMES 256 /* more than any admission bound lets be in flight */
#define KEEP_OTHERS 16
#define OUT_KEEP_MAX (256u << 10) /* a larger reply buffer is not kept */

struct srv_jobs {
    frame_job_t *frames[KEEP_FRAMES];
    int n_frames;
    batch_job_t *batches[KEEP_OTHERS];
    int n_batches;
    window_job_t *windows[KEEP_OTHERS];
    int n_windows;
    int inflight;
};

srv_jobs_t *srv_jobs_new(void) { return calloc(1, sizeof(srv_jobs_t)); }

void srv_jobs_free(srv_jobs_t *p) {
    if (!p) return;
    for (int i = 0; i < p->n_frames; i++) {
        osp_jw_free(&p->frames[i]->r.out);
        free(p->frames[i]);
    }
    for (int i = 0; i < p->n_batches; i++) {
        osp_jw_free(&p->batches[i]->r.out);
        free(p->batches[i]);
    }
    for (int i = 0; i < p->n_windows; i++) free(p->windows[i]);
    free(p);
}

int srv_jobs_inflight(const server_t *s) { return s->jobs->inflight; }
void srv_jobs_hold(server_t *s, int delta) { s->jobs->inflight += delta; }

static void req_init(server_t *s, srv_req_t *r, srv_job_kind_t kind, const srv_transport_t *tp,
                     const osp_wire_request_t *rq, uint8_t *frame, size_t len) {
    osp_jw_t out = r->out; /* kept from the last use */
    osp_jw_reset(&out);
    memset(r, 0, kind == SRV_JOB_FRAME ? sizeof(frame_job_t) : sizeof(batch_job_t));
    r->out = out;
    r->h.kind = kind;
    r->srv = s;
    r->tp = tp;
    if (rq) {
        r->req_id = rq->req_id;
        r->msg_type = rq->msg_type;
        r->deadline_ms = rq->deadline_ms;
        r->rq = *rq;
    }
    r->frame = frame;
    r->frame_len = len;
    osp_now(&r->arrived);
    s->jobs->inflight++;
}

frame_job_t *srv_frame_job_new(server_t *s, const srv_transport_t *tp,
                               const osp_wire_request_t *rq, uint8_t *frame, size_t len) {
    srv_jobs_t *p = s->jobs;
    frame_job_t *j = p->n_frames ? p->frames[--p->n_frames] : calloc(1, sizeof *j);
    if (!j) return NULL;
    req_init(s, &j->r, SRV_JOB_FRAME, tp, rq, frame, len);
    return j;
}

batch_job_t *srv_batch_job_new(server_t *s, const srv_transport_t *tp,
                               const osp_wire_request_t *rq, uint8_t *frame, size_t len) {
    srv_jobs_t *p = s->jobs;
    batch_job_t *j = p->n_batches ? p->batches[--p->n_batches] : calloc(1, sizeof *j);
    if (!j) return NULL;
    req_init(s, &j->r, SRV_JOB_BATCH, tp, rq, frame, len);
    return j;
}

window_job_t *srv_window_job_new(server_t *s, int model_idx) {
    srv_jobs_t *p = s->jobs;
    window_job_t *w = p->n_windows ? p->windows[--p->n_windows] : calloc(1, sizeof *w);
    if (!w) return NULL;
    memset(w, 0, sizeof *w);
    w->h.kind = SRV_JOB_WINDOW;
    w->srv = s;
    w->model_idx = model_idx;
    return w;
}

void srv_window_job_free(server_t *s, window_job_t *w) {
    srv_jobs_t *p = s->jobs;
    if (p->n_windows < KEEP_OTHERS)
        p->windows[p->n_windows++] = w;
    else
        free(w);
}

void srv_job_answer(server_t *s, srv_job_t *h) {
    srv_req_t *r = (srv_req_t *)h;
    int64_t items = h->kind == SRV_JOB_BATCH ? r->rq.u.batch.count : 1;
    srv_account(s, r->model_idx, items, r->outcome, r->deadline_ms);
    r->tp->send(s, r);
    s->jobs->inflight--;
}

void srv_job_retire(server_t *s, srv_job_t *h) {
    srv_job_answer(s, h);
    srv_job_release(s, h);
}

void srv_job_release(server_t *s, srv_job_t *h) {
    srv_jobs_t *p = s->jobs;
    srv_req_t *r = (srv_req_t *)h;
    if (r->tp->release) r->tp->release(s, r);
    srv_loaded_release(r->model);
    r->model = NULL;
    osp_buf_put(s->bufs, r->frame);
    r->frame = NULL;
    if (r->out.cap > OUT_KEEP_MAX) osp_jw_free(&r->out);
    if (h->kind == SRV_JOB_FRAME) {
        frame_job_t *j = (frame_job_t *)h;
        if (j->cached) osp_cache_release_frame(s->cache, j->cached);
        if (j->ctx) osp_ctxpool_put(s->ctxs, j->ctx);
        osp_image_free(&j->whole);
        j->cached = NULL;
        j->shm = NULL;
        j->ctx = NULL;
        j->spill = NULL;
        j->has_view = 0;
        if (p->n_frames < KEEP_FRAMES) {
            p->frames[p->n_frames++] = j;
            return;
        }
    } else {
        batch_job_t *b = (batch_job_t *)h;
        if (p->n_batches < KEEP_OTHERS) {
            p->batches[p->n_batches++] = b;
            return;
        }
    }
    osp_jw_free(&r->out);
    free(h);
}
