/* The core made, started and taken down; see core.h. */
#include "server/core/core.h"

#include <stdlib.h>

#include "base/clock.h"
#include "model/loader.h"
#include "model/paths.h"
#include "sched/bufpool.h"
#include "sched/cache.h"
#include "sched/ctxpool.h"
#include "sched/sched.h"
#include "sched/window.h"
#include "server/core/board.h"
#include "server/core/camboard.h"
#include "server/core/dispatch.h"
#include "server/core/exec.h"
#include "server/core/job.h"
#include "server/core/ledger.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "server/core/watchdog.h"
#include "log/log.h"

#define BUF_KEEP 24 /* frame buffers kept for reuse */

server_t *srv_core_new(const osp_server_opts_t *opts) {
    server_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->opts = *opts;
    osp_now(&s->started);
    if (!(s->loop = srv_loop_new())) {
        free(s);
        return NULL;
    }
    s->slots = srv_slots_new();
    s->jobs = srv_jobs_new();
    s->loads = srv_loads_new();
    s->stats = srv_stats_new();
    s->ledger = srv_ledger_new();
    s->board = srv_board_new();
    s->camboard = srv_camboard_new();
    s->watchdog = srv_watchdog_new();
    s->cache = osp_cache_new(256, 256, (size_t)1 << 30);
    s->bufs = osp_bufpool_new(BUF_KEEP);
    s->ctxs = osp_ctxpool_new();
    s->roots = osp_paths_new();
    if (!s->roots || !s->slots || !s->jobs || !s->loads || !s->stats || !s->ledger || !s->board ||
        !s->camboard || !s->watchdog || !s->cache || !s->bufs || !s->ctxs) {
        osp_log(OSP_LOG_ERROR, "ospreyd: out of memory");
        srv_core_free(s);
        return NULL;
    }
    /* model loads' bounds, batch windows, runs' bounds */
    srv_loop_timer(s, srv_loads_timer_ms, srv_loads_check);
    srv_loop_timer(s, srv_dispatch_timer_ms, srv_dispatch_flush_due);
    srv_loop_timer(s, srv_watchdog_timer_ms, srv_watchdog_check);
    return s;
}

int srv_core_start(server_t *s) {
    srv_settings_t *set = &s->set;
    set->started = 1;
    if (!(s->sched = osp_sched_new(OSP_MAX_SLOTS, set->workers, OSP_PENDING_MAX)) ||
        (set->batch_mode == OSP_WIRE_BATCH_WINDOW &&
         !(s->window = osp_window_new(OSP_MAX_SLOTS, set->max_batch, set->window_ms)))) {
        osp_log(OSP_LOG_ERROR, "ospreyd: out of memory");
        return -1;
    }
    if (!(s->exec = srv_exec_new(s))) {
        osp_log(OSP_LOG_ERROR, "ospreyd: cannot start worker threads");
        return -1;
    }
    return 0;
}

void srv_core_stop(server_t *s) {
    srv_exec_free(s->exec);
    s->exec = NULL;
    srv_drain(s); /* what the workers posted as they stopped: a window back after its frames */
}

void srv_core_free(server_t *s) {
    if (!s) return;
    srv_core_stop(s);
    srv_watchdog_free(s->watchdog);
    srv_loads_free(s->loads);
    srv_slots_free(s->slots);
    srv_jobs_free(s->jobs);
    osp_window_free(s->window);
    osp_sched_free(s->sched);
    osp_loader_free(s->loader);
    osp_ctxpool_free(s->ctxs);
    osp_bufpool_free(s->bufs);
    osp_cache_free(s->cache);
    srv_stats_free(s->stats);
    srv_ledger_free(s->ledger);
    srv_board_free(s->board);
    srv_camboard_free(s->camboard);
    srv_loop_free(s->loop);
    osp_paths_free(s->roots);
    free(s);
}
