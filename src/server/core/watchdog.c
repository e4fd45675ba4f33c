/*
 * The run watchdog (watchdog.h). A run that never returns (a wedged
 * driver, a runtime deadlock) used to hold its predict worker for good:
 * its requests were never answered, the workers every model shares ran
 * out, an unload changed nothing and the end of input never ended the
 * process. A native run cannot be interrupted, so, as with a load past
 * its bound (model/loader.c), it is abandoned, not killed: its thread is
 * left to return if it ever does, and everything else moves on without
 * it.
 */
#include "server/core/watchdog.h"
#include "log/log.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "model/cascade.h"
#include "model/model.h"
#include "model/paths.h"
#include "server/core/board.h"
#include "server/core/dispatch.h"
#include "server/core/exec.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "wire/frame.h"

/* The measured bound: 20 x the model's p99 run, at least 5 s; while fewer
 * than WARM_RUNS runs are measured (a session's first runs are its
 * slowest: lazy allocation, kernel selection) at least COLD_MS. */
#define FLOOR_MS 5000.0
#define P99_FACTOR 20.0
#define WARM_RUNS 10
#define COLD_MS 30000.0
#define LEND_FACTOR 4.0
#define LEND_FLOOR_MS 1000.0
#define MAX_RUNS 256 /* runs in progress looked at in one pass */
#define TICK_MS 250.0

/* A run given up, until its thread returns (if ever). */
typedef struct given_up {
    struct given_up *next;
    srv_job_t *job;
    int index;
    char model_id[128];
    double elapsed_ms;  /* when it was given up */
    struct timespec at; /* ... which was then */
} given_up_t;

/* A fresh session of a model whose run passed its bound, loading on a
 * thread of its own. The thread writes m, rc, err and load_ms; the rest
 * is the I/O thread's. */
/* A stuck model's reload, on its way through the loads (loads.h). */
typedef struct reload {
    int index;
    char model_id[128];
    loaded_t *stuck; /* the slot's model when it started (a reference) */
    double load_ms;
} reload_t;

struct srv_watchdog {
    given_up_t *given_up;
    struct timespec retry_at; /* no thread could replace a stuck one: try again then */
};

srv_watchdog_t *srv_watchdog_new(void) { return calloc(1, sizeof(srv_watchdog_t)); }

void srv_watchdog_free(srv_watchdog_t *wd) {
    if (!wd) return;
    for (given_up_t *g = wd->given_up, *n; g; g = n) {
        n = g->next;
        free(g);
    }
    free(wd);
}

/* ---- the bound ------------------------------------------------------------------ */

/* The p99 of model idx's runs so far (0 when none), and how many there were. */
static double p99_ms(server_t *s, int idx, int64_t *runs) {
    srv_model_counts_t c;
    srv_stats_model(s->stats, idx, &c);
    const int64_t *b = c.buckets[SRV_STAGE_PREDICT];
    int64_t n = 0, seen = 0;
    for (int i = 0; i <= SRV_HIST_BOUNDS; i++) n += b[i];
    *runs = n;
    int64_t want = (n * 99 + 99) / 100;
    for (int i = 0; i <= SRV_HIST_BOUNDS && n; i++) {
        seen += b[i];
        if (seen < want) continue;
        return i < SRV_HIST_BOUNDS ? srv_hist_bounds_s[i] * 1e3
                                   : fmax(1e3, 2e3 * c.sum_s[SRV_STAGE_PREDICT] / (double)n);
    }
    return 0;
}

/* When run r is given up (*bound: a configured bound as given; the
 * measured one per frame, that many times over) and when its worker is
 * lent (*lend: a run LEND_FACTOR x slower than the model's p99, and
 * LEND_FLOOR_MS at least, per frame, gets a new thread beside it so that
 * the other models are not kept from the workers until its bound). */
static void limits(server_t *s, const srv_run_t *r, double *lend, double *bound) {
    int64_t n;
    double p99 = p99_ms(s, r->model_idx, &n), items = r->items > 1 ? r->items : 1;
    int own = r->model ? srv_loaded_model(r->model)->cfg.run_timeout_ms : 0;
    if (own > 0) {
        *bound = own;
    } else if (s->opts.run_timeout_ms > 0) {
        *bound = s->opts.run_timeout_ms;
    } else {
        double ms = fmax(FLOOR_MS, P99_FACTOR * p99);
        *bound = (n < WARM_RUNS ? fmax(ms, COLD_MS) : ms) * items;
    }
    *lend = fmin(*bound, fmax(LEND_FLOOR_MS, LEND_FACTOR * p99) * items);
}

/* ---- events on 0xFFFFFFFF ------------------------------------------------------- */

static size_t event_begin(osp_jw_t *w, const char *name, int index, const char *model_id) {
    size_t at = osp_wire_reply_begin(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "event");
    osp_jw_str(w, name);
    osp_jw_key(w, "index");
    osp_jw_int(w, index);
    osp_jw_key(w, "modelId");
    osp_jw_str(w, model_id);
    return at;
}

static void event_send(server_t *s, osp_jw_t *w, size_t at) {
    osp_jw_obj_close(w);
    osp_wire_reply_end(w, at, 0xFFFFFFFFu);
    if (s->announce) s->announce(s, w);
    osp_jw_free(w);
}

static void event_reloaded(server_t *s, const reload_t *r, const char *error) {
    osp_jw_t w = {0};
    size_t at = event_begin(&w, "model-reloaded", r->index, r->model_id);
    osp_jw_key(&w, "ok");
    osp_jw_bool(&w, error == NULL);
    osp_jw_key(&w, "loadMs");
    osp_jw_int(&w, (int64_t)llround(r->load_ms));
    if (error) {
        osp_jw_key(&w, "error");
        osp_jw_str(&w, error);
    }
    event_send(s, &w, at);
}

/* ---- reloading a stuck model ---------------------------------------------------- */

static void reload_free(reload_t *r) {
    srv_loaded_release(r->stuck);
    free(r);
}

/* The slot still holds the model that got stuck (not unloaded or replaced
 * meanwhile): it is emptied, with the reason on the board. */
static void reload_failed(server_t *s, reload_t *r, const char *why) {
    osp_log(OSP_LOG_ERROR, "ospreyd: model %d (%s) could not be reloaded: %s; its slot is empty",
            r->index, r->model_id, why);
    if (srv_slot(s, r->index) != r->stuck) return;
    srv_slot_clear(s, r->index);
    srv_board_failed(s, r->index, r->model_id, why);
    event_reloaded(s, r, why);
}

static void reload_done(server_t *s, void *arg, srv_load_end_t *end) {
    reload_t *r = arg;
    r->load_ms = end->status == SRV_LOAD_TIMED_OUT ? end->elapsed_ms : end->load_ms;
    loaded_t *l = NULL;
    if (srv_slot(s, r->index) != r->stuck) {
        osp_log(OSP_LOG_INFO,
                "ospreyd: model %d was unloaded or replaced while %s reloaded; reload dropped",
                r->index, r->model_id);
    } else if (end->status != SRV_LOAD_OK || !(l = srv_loaded_new(end->model, &end->model->cfg))) {
        reload_failed(s, r, end->status != SRV_LOAD_OK ? end->err : "out of memory");
    } else {
        float conf, nms;
        int maxdet;
        srv_loaded_params(r->stuck, &conf, &nms, &maxdet); /* a reconfigure stays in force */
        srv_loaded_set_params(l, conf, nms, maxdet);
        end->model = NULL; /* the slot's now */
        srv_slot_install(s, r->index, l);
        srv_board_sync(s, r->index, r->load_ms);
        osp_log(OSP_LOG_INFO, "ospreyd: model %d (%s) reloaded after a stuck run (%.0f ms)",
                r->index, r->model_id, r->load_ms);
        event_reloaded(s, r, NULL);
    }
    reload_free(r);
}

/* A fresh session for slot idx, whose model l got stuck, loaded like every
 * load (loads.h); l is refused frames until it comes (or fails, past the
 * load bound too, and the slot is emptied). */
static void reload_start(server_t *s, int idx, loaded_t *l, const char *model_id, double bound) {
    char why[320];
    snprintf(why, sizeof why,
             "model %d (%s) is being reloaded: a run took longer than its bound of %" PRId64 " ms",
             idx, model_id, (int64_t)llround(bound));
    srv_loaded_set_stuck(l, why);
    if (s->stopping) return; /* no one will use it */
    reload_t *r = calloc(1, sizeof *r);
    if (r) {
        r->index = idx;
        snprintf(r->model_id, sizeof r->model_id, "%s", model_id);
        r->stuck = srv_loaded_ref(l);
    }
    /* its cascade, if any, loads afresh with it */
    const osp_model_t *m = srv_loaded_model(l);
    osp_cascade_t *then = r && m->then ? osp_cascade_copy(m->then) : NULL;
    if (!r || (m->then && !then) || srv_load_then(s, &m->cfg, then, idx, model_id, reload_done, r)) {
        if (r) srv_loaded_release(r->stuck);
        free(r);
        srv_slot_clear(s, idx);
        srv_board_failed(s, idx, model_id, "out of memory");
    }
}

/* ---- runs past their bound -------------------------------------------------------- */

/* A run given up returned (posted by its thread): its job is given back. */
static void run_returned(server_t *s, srv_job_t *h) {
    srv_watchdog_t *wd = s->watchdog;
    given_up_t **pp = &wd->given_up, *g;
    while ((g = *pp) && g->job != h) pp = &g->next;
    if (g) {
        *pp = g->next;
        int64_t ms = (int64_t)llround(g->elapsed_ms + osp_ms_since(&g->at));
        osp_log(OSP_LOG_WARN,
                "ospreyd: a run of model %d (%s) returned after %" PRId64
                " ms, past its bound; result discarded, its thread gone",
                g->index, g->model_id, ms);
        osp_jw_t w = {0};
        size_t at = event_begin(&w, "run-finished-late", g->index, g->model_id);
        osp_jw_key(&w, "elapsedMs");
        osp_jw_int(&w, ms);
        event_send(s, &w, at);
        free(g);
    }
    srv_dispatch_returned(s, h);
}

static void give_up(server_t *s, const srv_run_t *run, double bound) {
    srv_watchdog_t *wd = s->watchdog;
    given_up_t *g = calloc(1, sizeof *g);
    if (!g) return; /* the next pass tries again */
    int rc = srv_exec_abandon(s, run, run_returned);
    if (rc != 1) {
        free(g);
        if (rc < 0) { /* no thread to replace it: not given up yet */
            wd->retry_at = osp_deadline_in(CLOCK_MONOTONIC, 1000);
        }
        return;
    }
    int idx = run->model_idx;
    loaded_t *l = srv_slot(s, idx);
    int in_slot = l && l == run->model; /* not unloaded or replaced meanwhile */
    int reload = in_slot && !s->stopping;
    char id[128], msg[400];
    osp_paths_stem(srv_loaded_path(run->model), id, sizeof id);
    if (!id[0]) snprintf(id, sizeof id, "unknown");
    int64_t bound_i = (int64_t)llround(bound), elapsed = (int64_t)llround(run->elapsed_ms);
    snprintf(msg, sizeof msg,
             "model %d (%s): the run took longer than its bound of %" PRId64 " ms; it is abandoned%s",
             idx, id, bound_i, reload ? " and the model reloaded" : "");
    /* refused frames first: answering frees run slots, and the frames that
     * waited for them must not reach the stuck session */
    if (in_slot && !srv_loaded_stuck(l)) reload_start(s, idx, l, id, bound);
    int reloading = reload && srv_slot(s, idx) == l;
    int answered = srv_dispatch_abandoned(s, run->job, msg);
    srv_stat_add(s, SRV_ST_RUNS_ABANDONED, 1);
    osp_log(OSP_LOG_WARN, "ospreyd: %s (%d request(s) answered, %d stuck run(s) in all)", msg,
            answered, srv_exec_stuck(s));
    osp_jw_t w = {0};
    size_t at = event_begin(&w, "run-timeout", idx, id);
    osp_jw_key(&w, "timeoutMs");
    osp_jw_int(&w, bound_i);
    osp_jw_key(&w, "elapsedMs");
    osp_jw_int(&w, elapsed);
    osp_jw_key(&w, "requests");
    osp_jw_int(&w, answered);
    osp_jw_key(&w, "reloading");
    osp_jw_bool(&w, reloading);
    event_send(s, &w, at);
    g->job = run->job;
    g->index = idx;
    snprintf(g->model_id, sizeof g->model_id, "%s", id);
    g->elapsed_ms = run->elapsed_ms;
    osp_now(&g->at);
    g->next = wd->given_up;
    wd->given_up = g;
}

int srv_watchdog_timer_ms(server_t *s) {
    srv_run_t runs[MAX_RUNS];
    int64_t retry = osp_ms_until(&s->watchdog->retry_at);
    int n = retry > 0 ? 0 : srv_exec_runs(s, runs, MAX_RUNS);
    double best = retry > 0 ? (double)retry : -1;
    for (int i = 0; i < n; i++) {
        double lend, bound;
        limits(s, &runs[i], &lend, &bound);
        double left = (runs[i].lent ? bound : lend) - runs[i].elapsed_ms;
        if (best < 0 || left < best) best = left < 0 ? 0 : left;
    }
    /* a run starts on a worker, which does not wake this thread: while
     * requests are in flight that may not have started theirs, look again
     * every TICK_MS (the loop wakes far more often for their replies) */
    if (retry <= 0 && srv_jobs_inflight(s) > n && (best < 0 || best > TICK_MS)) best = TICK_MS;
    if (best < 0) return -1;
    return best > 3600000 ? 3600000 : (int)ceil(best);
}

void srv_watchdog_check(server_t *s) {
    srv_watchdog_t *wd = s->watchdog;
    srv_run_t runs[MAX_RUNS];
    int n = osp_ms_until(&wd->retry_at) > 0 ? 0 : srv_exec_runs(s, runs, MAX_RUNS);
    for (int i = 0; i < n; i++) {
        double lend, bound;
        limits(s, &runs[i], &lend, &bound);
        if (runs[i].elapsed_ms >= bound) {
            give_up(s, &runs[i], bound);
        } else if (!runs[i].lent && runs[i].elapsed_ms >= lend && srv_exec_lend(s, &runs[i]) < 0) {
            wd->retry_at = osp_deadline_in(CLOCK_MONOTONIC, 1000); /* no thread: try again later */
        }
    }
}
