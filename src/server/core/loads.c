/* Every model load through the one bounded loader; see loads.h. */
#include "server/core/loads.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cascade.h"
#include "model/loader.h"
#include "server/core/board.h"
#include "server/core/job.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "log/log.h"
#include "wire/frame.h"

typedef struct load {
    struct load *next;
    const osp_load_how_t *how; /* or NULL: cfg */
    void *how_arg;             /* the how's until its load starts */
    osp_model_cfg_t cfg;
    struct osp_cascade *then; /* cfg's cascade until its load starts, or NULL */
    int index;
    char model_id[128];
    srv_load_done_fn done;
    void *arg;
} load_t;

struct srv_loads {
    load_t *head, *tail;
    load_t *running; /* its load is in the loader, within its bound */
};

/* A load's result on its way back through the mailbox. */
typedef struct {
    srv_job_t h;
    osp_load_result_t *r;
} result_job_t;

srv_loads_t *srv_loads_new(void) { return calloc(1, sizeof(srv_loads_t)); }

void srv_loads_free(srv_loads_t *l) {
    if (!l) return;
    for (load_t *q = l->head, *n; q; q = n) {
        n = q->next;
        if (q->how && q->how->arg_free) q->how->arg_free(q->how_arg);
        osp_cascade_free(q->then);
        free(q);
    }
    free(l->running);
    free(l);
}

void srv_model_id(const char *path, char *out, size_t n) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    const char *dot = strrchr(b, '.');
    size_t len = dot && dot != b ? (size_t)(dot - b) : strlen(b);
    if (len == 0) {
        snprintf(out, n, "unknown");
        return;
    }
    if (len >= n) len = n - 1;
    memcpy(out, b, len);
    out[len] = '\0';
}

int srv_loads_idle(const server_t *s) { return !s->loads->running && !s->loads->head; }

/* On the loader's thread: its result back to the I/O thread. */
static void result_post(void *arg, osp_load_result_t *r);

static osp_loader_t *loader(server_t *s) {
    if (!s->loader) s->loader = osp_loader_new(s->set.load_bound_ms, result_post, s);
    return s->loader;
}

static int64_t bound_of(server_t *s) { return (int64_t)llround(osp_loader_bound_ms(loader(s))); }

static void pump(server_t *s);

/* Answer q with end, give q back, and start the next load. */
static void answer(server_t *s, load_t *q, srv_load_end_t *end) {
    end->index = q->index;
    snprintf(end->model_id, sizeof end->model_id, "%s", q->model_id);
    q->done(s, q->arg, end);
    osp_model_free(end->model);
    if (end->made) q->how->drop(end->made);
    if (q->how && q->how_arg && q->how->arg_free) q->how->arg_free(q->how_arg); /* never started */
    osp_cascade_free(q->then);                                                  /* never started */
    free(q);
}

int srv_loads_poisoned(server_t *s, char *model_id, size_t n, int *index, double *elapsed_ms) {
    osp_load_info_t info;
    if (!s->loader || !osp_loader_poisoned(s->loader, &info)) return 0;
    if (model_id) snprintf(model_id, n, "%s", info.model_id);
    if (index) *index = info.index;
    if (elapsed_ms) *elapsed_ms = info.elapsed_ms;
    return 1;
}

void srv_loads_note_failed(server_t *s) {
    if (loader(s)) osp_loader_note_failed(s->loader);
}

/* Start queued loads until one runs: each refused at once while the loader
 * is poisoned. */
static void pump(server_t *s) {
    srv_loads_t *l = s->loads;
    while (!l->running && l->head) {
        load_t *q = l->head;
        l->head = q->next;
        if (!l->head) l->tail = NULL;
        osp_loader_t *ld = loader(s);
        srv_load_end_t end = {.status = SRV_LOAD_FAILED, .bound_ms = ld ? bound_of(s) : 0};
        if (!ld) {
            snprintf(end.err, sizeof end.err, "out of memory");
            answer(s, q, &end);
            continue;
        }
        if (srv_loads_poisoned(s, end.poisoned_by, sizeof end.poisoned_by, &end.poisoned_index,
                               &end.elapsed_ms)) {
            end.status = SRV_LOAD_POISONED;
            snprintf(end.err, sizeof end.err,
                     "no load starts while the load of %s (index %d) is still running past its "
                     "bound (%" PRId64 " ms)",
                     end.poisoned_by, end.poisoned_index, end.bound_ms);
            answer(s, q, &end);
            continue;
        }
        int rc;
        if (q->how) {
            osp_log(OSP_LOG_INFO, "ospreyd: load of %s started (bound %" PRId64 " ms)",
                    q->model_id, end.bound_ms);
            rc = osp_loader_start_how(ld, q->how, q->how_arg, q->index, q->model_id);
            if (!rc) q->how_arg = NULL; /* the loader's thread's now */
        } else {
            osp_log(OSP_LOG_INFO, "ospreyd: model %d load started: %s (bound %" PRId64 " ms)",
                    q->index, q->cfg.path, end.bound_ms);
            srv_board_loading(s, q->index, &q->cfg);
            rc = osp_loader_start_then(ld, &q->cfg, s->set.backend, q->then, q->index, q->model_id);
            q->then = NULL; /* the loader's now, started or not */
        }
        if (rc) {
            if (q->index >= 0)
                srv_board_failed(s, q->index, q->model_id, "cannot start a loader thread");
            snprintf(end.err, sizeof end.err, "cannot start a loader thread");
            answer(s, q, &end);
            continue;
        }
        l->running = q;
    }
}

static int enqueue(server_t *s, load_t *q, const char *model_id, srv_load_done_fn done, void *arg) {
    snprintf(q->model_id, sizeof q->model_id, "%s", model_id);
    q->done = done;
    q->arg = arg;
    srv_loads_t *l = s->loads;
    if (l->tail)
        l->tail->next = q;
    else
        l->head = q;
    l->tail = q;
    pump(s);
    return 0;
}

int srv_load(server_t *s, const osp_model_cfg_t *cfg, int index, const char *model_id,
             srv_load_done_fn done, void *arg) {
    return srv_load_then(s, cfg, NULL, index, model_id, done, arg);
}

int srv_load_then(server_t *s, const osp_model_cfg_t *cfg, struct osp_cascade *then, int index,
                  const char *model_id, srv_load_done_fn done, void *arg) {
    load_t *q = calloc(1, sizeof *q);
    if (!q) {
        osp_cascade_free(then);
        return -1;
    }
    q->cfg = *cfg;
    q->then = then;
    q->index = index;
    return enqueue(s, q, model_id, done, arg);
}

int srv_load_how(server_t *s, const osp_load_how_t *how, void *how_arg, const char *model_id,
                 srv_load_done_fn done, void *arg) {
    load_t *q = calloc(1, sizeof *q);
    if (!q) {
        if (how->arg_free) how->arg_free(how_arg);
        return -1;
    }
    q->how = how;
    q->how_arg = how_arg;
    q->index = -1;
    return enqueue(s, q, model_id, done, arg);
}

/* An abandoned load came back: announced to every host (s->announce), result discarded. */
static void announce_late(server_t *s, const osp_load_result_t *r, const osp_load_info_t *info) {
    osp_log(OSP_LOG_WARN,
            "ospreyd: the load of %s (index %d) returned after its bound, in %" PRId64
            " ms (%s); result discarded, loads accepted again",
            info->model_id, info->index, (int64_t)llround(info->elapsed_ms), r->rc ? r->err : "ok");
    osp_jw_t w = {0};
    osp_wire_late_t ev = {.index = info->index,
                          .model_id = info->model_id,
                          .ok = r->rc == 0,
                          .elapsed_ms = (int64_t)llround(info->elapsed_ms),
                          .error = r->rc ? r->err : NULL};
    osp_wire_reply_event_late(&w, &ev);
    if (s->announce) s->announce(s, &w);
    osp_jw_free(&w);
    if (info->index < 0) /* no model slot: a stream's model */
        return;
    if (srv_slot(s, info->index))
        srv_board_sync(s, info->index, -1);
    else
        srv_board_failed(s, info->index, info->model_id,
                         "its load returned after its bound; result discarded");
}

static void result_done(server_t *s, srv_job_t *h) {
    result_job_t *j = (result_job_t *)h;
    osp_load_result_t *r = j->r;
    free(j);
    osp_load_info_t info;
    osp_load_outcome_t out = osp_loader_finish(s->loader, r, &info);
    if (out == OSP_LOAD_IN_TIME && s->loads->running) {
        load_t *q = s->loads->running;
        s->loads->running = NULL;
        srv_load_end_t end = {.status = r->rc == 0 ? SRV_LOAD_OK : SRV_LOAD_FAILED,
                              .model = r->model,
                              .made = r->made,
                              .load_ms = r->load_ms,
                              .bound_ms = bound_of(s)};
        r->model = NULL;
        r->made = NULL;
        if (r->rc) {
            snprintf(end.err, sizeof end.err, "%s", r->err);
            osp_log(OSP_LOG_ERROR, "ospreyd: load of %s (index %d) failed: %s", q->model_id,
                    q->index, r->err);
            if (q->index >= 0) srv_board_failed(s, q->index, q->model_id, r->err);
        }
        answer(s, q, &end);
        pump(s);
    } else if (out == OSP_LOAD_LATE) {
        announce_late(s, r, &info);
        pump(s);
    }
    osp_loader_result_free(r);
}

static void result_post(void *arg, osp_load_result_t *r) {
    server_t *s = arg;
    result_job_t *j = calloc(1, sizeof *j);
    if (!j) { /* nowhere to report: the loop times the load out */
        osp_loader_result_free(r);
        return;
    }
    j->h.kind = SRV_JOB_EVENT;
    j->h.done = result_done;
    j->r = r;
    srv_post(s, &j->h);
}

int srv_loads_timer_ms(server_t *s) { return s->loader ? osp_loader_timer_ms(s->loader) : -1; }

void srv_loads_check(server_t *s) {
    osp_load_info_t info;
    load_t *q = s->loads->running;
    if (!q || !osp_loader_expire(s->loader, &info)) return;
    s->loads->running = NULL;
    srv_load_end_t end = {.status = SRV_LOAD_TIMED_OUT,
                          .elapsed_ms = info.elapsed_ms,
                          .bound_ms = bound_of(s)};
    snprintf(end.err, sizeof end.err,
             "loading %s (index %d) took longer than %" PRId64 " ms; it is left to finish in the "
             "background and no other load starts until it does",
             info.model_id, info.index, end.bound_ms);
    osp_log(OSP_LOG_ERROR, "ospreyd: model %d: %s", info.index, end.err);
    if (info.index >= 0) srv_board_poisoned(s, info.index, info.model_id, (double)end.bound_ms);
    answer(s, q, &end);
    pump(s); /* what waits behind it is refused: the loader is poisoned */
}
