/*
 * The server object: makes its parts (srv.h), runs the loop, takes them
 * down in the order that lets each finish with the others still there —
 * the pools first (their workers finish what is queued), then everything
 * the jobs referenced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "model/loader.h"
#include "model/model.h"
#include "model/paths.h"
#include "sched/bufpool.h"
#include "sched/cache.h"
#include "sched/ctxpool.h"
#include "sched/sched.h"
#include "sched/window.h"
#include "server/core/auth.h"
#include "server/core/board.h"
#include "server/core/core.h"
#include "server/pipe/cmds.h"
#include "server/pipe/conn.h"
#include "server/core/dispatch.h"
#include "server/core/exec.h"
#include "server/cameras/camcfg.h"
#include "server/cameras/cameras.h"
#include "server/core/camboard.h"
#include "server/fleet/fleet.h"
#include "server/http/http.h"
#include "server/pipe/ingest.h"
#include "server/core/job.h"
#include "server/core/ledger.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/pipe/route.h"
#include "server/pipe/shm.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "server/pipe/streams.h"
#include "server/core/watchdog.h"
#include "server/frigate/zmq.h"
#include "log/log.h"

/* The front ends (core/frontend.h), in the order they start. */
static const srv_frontend_t *const FRONT_ENDS[] = {&srv_http_frontend, &srv_zmq_frontend,
                                                   &srv_fleet_frontend, &srv_cameras_frontend};
#define N_FRONT_ENDS (int)(sizeof FRONT_ENDS / sizeof FRONT_ENDS[0])

/* Start the early (1) or the other (0) front ends the options ask for. 0,
 * or -1 (logged). */
static int front_ends_start(server_t *s, int early) {
    for (int i = 0; i < N_FRONT_ENDS; i++) {
        const srv_frontend_t *fe = FRONT_ENDS[i];
        char err[1200];
        if (fe->early != early || !fe->wanted(&s->opts)) continue;
        if (fe->start(s, err, sizeof err)) {
            osp_log(OSP_LOG_ERROR, "ospreyd: %s%s", fe->prefix, err);
            return -1;
        }
    }
    return 0;
}

/* Whether the options ask for any of the early (1) or the other (0) front
 * ends: with --config, the others serve without a host on stdio. */
static int front_ends_wanted(const server_t *s, int early) {
    for (int i = 0; i < N_FRONT_ENDS; i++)
        if (FRONT_ENDS[i]->early == early && FRONT_ENDS[i]->wanted(&s->opts)) return 1;
    return 0;
}

static void front_ends_stop(server_t *s, int early) {
    for (int i = N_FRONT_ENDS - 1; i >= 0; i--)
        if (FRONT_ENDS[i]->early == early) FRONT_ENDS[i]->stop(s);
}

static void server_free(server_t *s) {
    if (!s) return;
    front_ends_stop(s, 1); /* their threads read the core's parts */
    srv_core_stop(s);
    front_ends_stop(s, 0); /* after the pools: no job holds one of their requests */
    srv_conns_free(s);
    srv_cmds_free(s->cmds);
    srv_shm_free(s->shm);
    srv_streams_free(s->streams);
    srv_auth_free(s->auth);
    srv_core_free(s);
}

/* ---- what the loop serves (loop.h: it names none of it) ------------------------ */

static void quiesce_front_ends(server_t *s) {
    for (int i = 0; i < N_FRONT_ENDS; i++)
        if (FRONT_ENDS[i]->quiesce) FRONT_ENDS[i]->quiesce(s);
}

static void accept_conn(server_t *s, int fd) {
    if (s->stopping || !srv_conn_new(s, fd, fd, 0)) close(fd);
}

/* Finished connections retired (in stdio mode the last one is the end);
 * after a stop, finished when no connection and no work is left. */
static int finished(server_t *s, int *exit_code) {
    if (srv_conns_retire(s, exit_code)) return 1;
    return s->stopping && srv_conns_empty(s) && srv_idle(s);
}

/* ---- the host connections (conn.c names none of this) --------------------------- */

static void conn_closed(server_t *s, uint32_t conn_id) {
    srv_shm_conn_closed(s, conn_id);
    srv_streams_conn_closed(s, conn_id);
}

static const srv_conn_ops_t CONN_OPS = {
    srv_route_frame, conn_closed,   srv_idle,     srv_rows_begin, srv_rows_step, srv_rows_active,
    srv_rows_free,   srv_big_begin, srv_big_step, srv_big_active, srv_big_free,
};

static const srv_loop_run_t RUN = {finished, srv_conns_read_unpolled};

/* SIGHUP: the front ends that serve something re-read it. */
static void reload_front_ends(server_t *s) {
    int n = 0;
    for (int i = 0; i < N_FRONT_ENDS; i++)
        if (FRONT_ENDS[i]->reload) n += FRONT_ENDS[i]->reload(s);
    if (!n) osp_log(OSP_LOG_INFO, "ospreyd: nothing to re-read");
}

static void register_with_loop(server_t *s) {
    srv_loop_on_hup(s, reload_front_ends);
    srv_loop_on_fd(s, srv_conn_event);
    srv_loop_timer(s, srv_conns_hello_timer_ms, srv_conns_expire_hellos); /* handshakes' bounds */
    srv_loop_on_stop(s, srv_conns_stop_reading);
    srv_loop_on_stop(s, quiesce_front_ends);
}

static server_t *server_new(const osp_server_opts_t *opts) {
    server_t *s = srv_core_new(opts);
    if (!s) return NULL;
    s->conns = srv_conns_new(&CONN_OPS);
    s->input_waiting = srv_input_waiting;
    s->announce = srv_broadcast;
    s->parked = &srv_rows_parked_ops;
    s->cmds = srv_cmds_new();
    s->shm = srv_shm_new();
    s->streams = srv_streams_new();
    if (!s->conns || !s->cmds || !s->shm || !s->streams) {
        osp_log(OSP_LOG_ERROR, "ospreyd: out of memory");
        server_free(s);
        return NULL;
    }
    register_with_loop(s);
    return s;
}

/* What peers may reach: the token (sockets and HTTP) and the model roots
 * (the --config models' folders join them as they load). 0 or the exit status. */
static int exposure_setup(server_t *s) {
    const osp_server_opts_t *o = &s->opts;
    char err[1200];
    /* the token guards the HTTP door as well as the sockets */
    if (o->auth_token_file && !(s->auth = srv_auth_load(o->auth_token_file, err, sizeof err))) {
        osp_log(OSP_LOG_ERROR, "ospreyd: %s", err);
        return 2;
    }
    if (!o->listen) return 0;
    for (int i = 0; i < o->n_model_roots; i++) {
        if (osp_paths_add(s->roots, o->model_roots[i], err, sizeof err)) {
            osp_log(OSP_LOG_ERROR, "ospreyd: --model-root: %s", err);
            return 2;
        }
    }
    if (!o->n_model_roots) { /* the cache's models, and an installed osprey's */
        char dir[1100], data[1100], derr[1200];
        osp_cache_dir(dir, sizeof dir - 8);
        strcat(dir, "/models");
        osp_data_dir(data, sizeof data - 8);
        strcat(data, "/models");
        int cache_rc = osp_paths_add(s->roots, dir, err, sizeof err);
        int data_rc = data[0] != '/' ? -1 : osp_paths_add(s->roots, data, derr, sizeof derr);
        if (cache_rc && data_rc)
            osp_log(OSP_LOG_WARN, "ospreyd: %s; socket peers may name only --config's models", err);
    }
    return 0;
}

int osp_server_run(const osp_server_opts_t *opts) {
    server_t *s = server_new(opts);
    if (!s) return 1;
    int rc = exposure_setup(s);
    if (!rc && opts->listen) { /* before minutes of model loads, not after */
        char err[300];
        if (srv_loop_listen_check(opts->listen, err, sizeof err)) {
            osp_log(OSP_LOG_ERROR, "ospreyd: %s", err);
            rc = 1;
        }
    }
    if (!rc && srv_cameras_frontend.wanted(&s->opts))
        srv_camboard_starting(s->camboard); /* the early pages say so, not "no cameras" */
    if (!rc && front_ends_start(s, 1)) { /* before the models load: /readyz says what still loads */
        server_free(s);
        return 1;
    }
    if (!rc && opts->listen && !opts->config_path)
        srv_board_configured(s); /* nothing to wait for */
    if (!rc) rc = srv_hello_preload(s);
    if (rc) {
        server_free(s);
        return rc;
    }
    if (opts->listen) {
        char err[256];
        if (srv_loop_listen(s, opts->listen, accept_conn, err, sizeof err)) {
            osp_log(OSP_LOG_ERROR, "ospreyd: %s", err);
            server_free(s);
            return 1;
        }
        osp_log(OSP_LOG_INFO, "ospreyd: listening on %s", opts->listen);
    } else if (!(front_ends_wanted(s, 0) && opts->config_path) &&
               !srv_conn_new(s, opts->stdio_in, opts->stdio_out, 1)) {
        server_free(s);
        return 1;
    }
    if (front_ends_start(s, 0)) {
        server_free(s);
        return 1;
    }
    rc = srv_loop_run(s, &RUN);
    int stuck = srv_exec_stuck(s);
    if (stuck) {
        /* they cannot be joined; the process ends without them */
        osp_log(OSP_LOG_ERROR,
                "ospreyd: exiting with %d run(s) stuck past their bound (exit status 3)", stuck);
        if (rc == 0) rc = 3;
    }
    server_free(s);
    return rc;
}

int osp_server_config_has_cameras(const char *config_path) {
    return config_path && srv_camcfg_present(config_path);
}
