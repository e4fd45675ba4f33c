/*
 * The server object: makes its parts (srv.h), runs the loop, takes them
 * down in the order that lets each finish with the others still there —
 * the pools first (their workers finish what is queued), then everything
 * the jobs referenced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/loader.h"
#include "sched/bufpool.h"
#include "sched/cache.h"
#include "sched/ctxpool.h"
#include "sched/sched.h"
#include "sched/window.h"
#include "server/cmds.h"
#include "server/conn.h"
#include "server/exec.h"
#include "server/job.h"
#include "server/loop.h"
#include "server/shm.h"
#include "server/slots.h"
#include "server/stats.h"
#include "server/streams.h"
#include "server/zmq.h"

#define BUF_KEEP 24 /* frame buffers kept for reuse */

static void server_free(server_t *s) {
    if (!s) return;
    srv_exec_free(s->exec);
    srv_zmq_free(s->zmq); /* after the pools: no job holds one of its requests */
    srv_conns_free(s);
    srv_cmds_free(s->cmds);
    srv_slots_free(s->slots);
    srv_shm_free(s->shm);
    srv_streams_free(s->streams);
    srv_jobs_free(s->jobs);
    osp_window_free(s->window);
    osp_sched_free(s->sched);
    osp_loader_free(s->loader);
    osp_ctxpool_free(s->ctxs);
    osp_bufpool_free(s->bufs);
    osp_cache_free(s->cache);
    srv_stats_free(s->stats);
    srv_loop_free(s->loop);
    free(s);
}

static server_t *server_new(const osp_server_opts_t *opts) {
    server_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->opts = *opts;
    clock_gettime(CLOCK_MONOTONIC, &s->started);
    if (!(s->loop = srv_loop_new())) {
        free(s);
        return NULL;
    }
    s->conns = srv_conns_new();
    s->slots = srv_slots_new();
    s->jobs = srv_jobs_new();
    s->cmds = srv_cmds_new();
    s->stats = srv_stats_new();
    s->shm = srv_shm_new();
    s->streams = srv_streams_new();
    s->cache = osp_cache_new(256, 256, (size_t)1 << 30);
    s->bufs = osp_bufpool_new(BUF_KEEP);
    s->ctxs = osp_ctxpool_new();
    if (!s->conns || !s->slots || !s->jobs || !s->cmds || !s->stats || !s->shm || !s->streams ||
        !s->cache || !s->bufs || !s->ctxs) {
        fprintf(stderr, "ospreyd: out of memory\n");
        server_free(s);
        return NULL;
    }
    return s;
}

int osp_server_run(const osp_server_opts_t *opts) {
    server_t *s = server_new(opts);
    if (!s) return 1;
    int rc = srv_hello_preload(s);
    if (rc) {
        server_free(s);
        return rc;
    }
    if (opts->listen) {
        char err[256];
        if (srv_loop_listen(s, opts->listen, err, sizeof err)) {
            fprintf(stderr, "ospreyd: %s\n", err);
            server_free(s);
            return 1;
        }
        fprintf(stderr, "ospreyd: listening on %s\n", opts->listen);
    } else if (!(opts->zmq && opts->config_path) && !srv_conn_new(s, opts->stdio_in, opts->stdio_out, 1)) {
        server_free(s);
        return 1;
    }
    if (opts->zmq) {
        char err[1200];
        if (!(s->zmq = srv_zmq_start(s, err, sizeof err))) {
            fprintf(stderr, "ospreyd: --zmq: %s\n", err);
            server_free(s);
            return 1;
        }
    }
    rc = srv_loop_run(s);
    server_free(s);
    return rc;
}
