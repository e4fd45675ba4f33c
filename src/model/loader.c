/* Bounded model loads; see loader.h. */
#include "model/loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/thread.h"
#include "model/cascade.h"

struct osp_loader {
    double bound_ms;
    osp_loader_post_fn post;
    void *post_arg;
    int seq;             /* identifies the newest load started */
    int busy;            /* a load is in flight within its bound */
    osp_load_info_t cur; /* the load in flight */
    struct timespec started;
    int poisoned; /* an abandoned load still runs */
    int poison_seq;
    osp_load_info_t poison;
    struct timespec poison_started;
    osp_loader_counts_t counts;
};

typedef struct {
    osp_model_cfg_t cfg;
    const osp_backend_t *backend;
    struct osp_cascade *then;  /* opened after the model, or NULL */
    const osp_load_how_t *how; /* or NULL: cfg through backend */
    void *how_arg;
    int seq;
    osp_loader_post_fn post;
    void *post_arg;
} load_arg_t;

static void *load_main(void *arg) {
    load_arg_t *a = arg;
    (void)pthread_setname_np(pthread_self(), "osp-load");
    osp_load_result_t *r = calloc(1, sizeof *r);
    struct timespec t0;
    osp_now(&t0);
    osp_model_t *m = NULL;
    void *made = NULL;
    char err[512] = "";
    int rc;
    if (a->how) {
        rc = a->how->open(a->how_arg, &made, err, sizeof err);
        if (a->how->arg_free) a->how->arg_free(a->how_arg);
    } else {
        rc = osp_model_open(&a->cfg, a->backend, &m, err, sizeof err);
        if (rc == 0 && a->then) {
            rc = osp_cascade_open(a->then, m, a->backend, a->cfg.intra_threads, err, sizeof err);
            if (rc == 0) {
                m->then = a->then; /* the model's now */
            } else {
                osp_model_free(m);
                m = NULL;
            }
        }
        if (!m) osp_cascade_free(a->then);
    }
    if (!r) { /* nowhere to report: the loop times the load out */
        osp_model_free(m);
        if (made) a->how->drop(made);
        free(a);
        return NULL;
    }
    r->seq = a->seq;
    r->model = m;
    r->made = made;
    r->drop = a->how ? a->how->drop : NULL;
    r->rc = rc;
    r->load_ms = osp_ms_since(&t0);
    snprintf(r->err, sizeof r->err, "%s", err);
    a->post(a->post_arg, r);
    free(a);
    return NULL;
}

osp_loader_t *osp_loader_new(double bound_ms, osp_loader_post_fn post, void *arg) {
    osp_loader_t *ld = calloc(1, sizeof *ld);
    if (!ld) return NULL;
    ld->bound_ms = bound_ms > 0 ? bound_ms : 120000.0;
    ld->post = post;
    ld->post_arg = arg;
    return ld;
}

void osp_loader_free(osp_loader_t *ld) { free(ld); }

void osp_loader_result_free(osp_load_result_t *r) {
    if (!r) return;
    osp_model_free(r->model);
    if (r->made && r->drop) r->drop(r->made);
    free(r);
}

double osp_loader_bound_ms(const osp_loader_t *ld) { return ld->bound_ms; }

int osp_loader_busy(const osp_loader_t *ld) { return ld->busy; }

int osp_loader_poisoned(const osp_loader_t *ld, osp_load_info_t *info) {
    if (!ld->poisoned) return 0;
    if (info) {
        *info = ld->poison;
        info->elapsed_ms = osp_ms_since(&ld->poison_started);
    }
    return 1;
}

int osp_loader_in_flight(const osp_loader_t *ld, osp_load_info_t *info) {
    if (!ld->busy) return 0;
    if (info) {
        *info = ld->cur;
        info->elapsed_ms = osp_ms_since(&ld->started);
    }
    return 1;
}

static int start(osp_loader_t *ld, const load_arg_t *from, int index, const char *model_id) {
    if (ld->busy || ld->poisoned) return -1;
    load_arg_t *a = malloc(sizeof *a);
    if (!a) return -1;
    *a = *from;
    a->seq = ld->seq + 1;
    a->post = ld->post;
    a->post_arg = ld->post_arg;
    if (osp_thread_detached(load_main, a)) { /* abandoned, never joined */
        free(a);
        return -1;
    }
    ld->seq++;
    ld->busy = 1;
    memset(&ld->cur, 0, sizeof ld->cur);
    ld->cur.index = index;
    snprintf(ld->cur.model_id, sizeof ld->cur.model_id, "%s", model_id);
    osp_now(&ld->started);
    return 0;
}

int osp_loader_start(osp_loader_t *ld, const osp_model_cfg_t *cfg, const osp_backend_t *backend,
                     int index, const char *model_id) {
    load_arg_t a = {.cfg = *cfg, .backend = backend};
    return start(ld, &a, index, model_id);
}

int osp_loader_start_then(osp_loader_t *ld, const osp_model_cfg_t *cfg, const osp_backend_t *backend,
                          struct osp_cascade *then, int index, const char *model_id) {
    load_arg_t a = {.cfg = *cfg, .backend = backend, .then = then};
    int rc = start(ld, &a, index, model_id);
    if (rc) osp_cascade_free(then);
    return rc;
}

int osp_loader_start_how(osp_loader_t *ld, const osp_load_how_t *how, void *arg, int index,
                         const char *model_id) {
    load_arg_t a = {.how = how, .how_arg = arg};
    return start(ld, &a, index, model_id);
}

int osp_loader_timer_ms(const osp_loader_t *ld) {
    if (!ld->busy) return -1;
    double left = ld->bound_ms - osp_ms_since(&ld->started);
    return left <= 0 ? 0 : (int)(left + 0.999);
}

int osp_loader_expire(osp_loader_t *ld, osp_load_info_t *info) {
    if (!ld->busy || osp_ms_since(&ld->started) < ld->bound_ms) return 0;
    ld->busy = 0;
    ld->poisoned = 1;
    ld->poison_seq = ld->seq;
    ld->poison = ld->cur;
    ld->poison.at_ms = osp_epoch_ms();
    ld->poison_started = ld->started;
    ld->counts.timed_out++;
    return osp_loader_poisoned(ld, info);
}

osp_load_outcome_t osp_loader_finish(osp_loader_t *ld, const osp_load_result_t *r,
                                     osp_load_info_t *info) {
    if (ld->busy && r->seq == ld->seq) {
        osp_loader_in_flight(ld, info);
        ld->busy = 0;
        if (r->rc == 0)
            ld->counts.completed++;
        else
            ld->counts.failed++;
        return OSP_LOAD_IN_TIME;
    }
    if (ld->poisoned && r->seq == ld->poison_seq) {
        /* the compiler is free again; the result is discarded (the host was
         * told it failed and moved on) */
        osp_loader_poisoned(ld, info);
        ld->poisoned = 0;
        ld->counts.finished_late++;
        return OSP_LOAD_LATE;
    }
    return OSP_LOAD_STALE;
}

void osp_loader_note_failed(osp_loader_t *ld) { ld->counts.failed++; }

void osp_loader_counts(const osp_loader_t *ld, osp_loader_counts_t *c) { *c = ld->counts; }
