/*
 * Commands (cmds.h), on the I/O thread. load/replace/unload/reconfigure/
 * status run in arrival order on one queue; a load holds the queue until
 * the model loader (model/loader.h) reports it back within its bound or
 * the bound passes. Past the bound the load is abandoned (a native
 * compile cannot be killed), the loader is poisoned for loads until it
 * returns, and its late return is announced to every connection as an
 * event on request id 0xFFFFFFFF.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/loader.h"
#include "sched/cache.h"
#include "server/board.h"
#include "server/cmds.h"
#include "server/conn.h"
#include "server/job.h"
#include "server/loop.h"
#include "server/shm.h"
#include "server/slots.h"
#include "server/stats.h"
#include "server/streams.h"
#include "log/log.h"
#include "wire/cmdargs.h"

/* A queued command (load, replace, unload, reconfigure, status, unknown). */
typedef struct cmdq {
    struct cmdq *next;
    uint32_t conn_id, req_id;
    cJSON *cmd;
} cmdq_t;

struct srv_cmds {
    cmdq_t *head, *tail;
    cmdq_t *loading; /* the load or replace whose load is in flight */
};

/* A load's result on its way back through the mailbox. */
typedef struct {
    srv_job_t h;
    osp_load_result_t *r;
} load_job_t;

srv_cmds_t *srv_cmds_new(void) { return calloc(1, sizeof(srv_cmds_t)); }

static void cmdq_free(cmdq_t *q) {
    if (!q) return;
    cJSON_Delete(q->cmd);
    free(q);
}

void srv_cmds_free(srv_cmds_t *cq) {
    if (!cq) return;
    for (cmdq_t *q = cq->head, *n; q; q = n) {
        n = q->next;
        cmdq_free(q);
    }
    cmdq_free(cq->loading);
    free(cq);
}

size_t srv_cmd_begin(osp_jw_t *w, const char *name, int index, const char *status) {
    size_t at = osp_wire_reply_begin(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd");
    osp_jw_str(w, name);
    if (index >= 0) {
        osp_jw_key(w, "index");
        osp_jw_int(w, index);
    }
    osp_jw_key(w, "status");
    osp_jw_str(w, status);
    return at;
}

void srv_cmd_send(server_t *s, uint32_t conn_id, osp_jw_t *w, size_t at, uint32_t req_id) {
    osp_jw_obj_close(w);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, srv_conn_find(s, conn_id), w);
}

void srv_cmd_error(server_t *s, uint32_t conn_id, uint32_t req_id, const char *name, int index,
                   const char *msg) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = srv_cmd_begin(w, name, index, "error");
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    srv_cmd_send(s, conn_id, w, at, req_id);
}

static void model_id_of(const char *path, char *out, size_t n) {
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

static const char *cmd_name(const cJSON *cmd) { return osp_wire_cmd_name(cmd); }

int srv_idle(server_t *s) {
    return srv_jobs_inflight(s) == 0 && !s->cmds->loading && s->cmds->head == NULL;
}

/* ---- the loader ---------------------------------------------------------------------- */

static void process_commands(server_t *s);

/* The command in flight is answered: the queue moves on. */
static void load_over(server_t *s) {
    cmdq_free(s->cmds->loading);
    s->cmds->loading = NULL;
    process_commands(s);
}

static void load_done(server_t *s, srv_job_t *h) {
    load_job_t *j = (load_job_t *)h;
    osp_load_result_t *r = j->r;
    free(j);
    osp_load_info_t info;
    osp_load_outcome_t out = osp_loader_finish(s->loader, r, &info);
    if (out == OSP_LOAD_IN_TIME) {
        /* back inside its bound: install or report */
        cmdq_t *q = s->cmds->loading;
        const char *name = cmd_name(q->cmd);
        loaded_t *l = r->rc == 0 ? srv_loaded_new(r->model, &r->model->cfg) : NULL;
        if (l) {
            r->model = NULL; /* the slot's now */
            srv_slot_install(s, info.index, l);
            srv_board_sync(s, info.index, r->load_ms);
            osp_log(OSP_LOG_INFO, "ospreyd: model %d %s: %s (%.0f ms)", info.index,
                    strcmp(name, "load") == 0 ? "loaded" : "replaced", srv_loaded_path(l),
                    r->load_ms);
            osp_jw_t *w = srv_reply_buf(s);
            size_t at = srv_cmd_begin(w, name, info.index, "ok");
            osp_jw_key(w, "loadMs");
            osp_jw_int(w, (int64_t)llround(r->load_ms));
            srv_cmd_send(s, q->conn_id, w, at, q->req_id);
        } else {
            if (r->rc == 0) snprintf(r->err, sizeof r->err, "out of memory");
            osp_log(OSP_LOG_ERROR, "ospreyd: model %d load failed: %s", info.index, r->err);
            srv_board_failed(s, info.index, info.model_id, r->err);
            srv_cmd_error(s, q->conn_id, q->req_id, name, info.index, r->err);
        }
        osp_loader_result_free(r);
        load_over(s);
        return;
    }
    if (out == OSP_LOAD_LATE) {
        osp_log(OSP_LOG_WARN,
                "ospreyd: the load of %s (index %d) returned after its bound, in %" PRId64
                " ms (%s); result discarded, loads accepted again",
                info.model_id, info.index, (int64_t)llround(info.elapsed_ms), r->rc ? r->err : "ok");
        osp_jw_t w = {0};
        osp_wire_late_t ev = {.index = info.index,
                              .model_id = info.model_id,
                              .ok = r->rc == 0,
                              .elapsed_ms = (int64_t)llround(info.elapsed_ms),
                              .error = r->rc ? r->err : NULL};
        osp_wire_reply_event_late(&w, &ev);
        srv_broadcast(s, &w);
        osp_jw_free(&w);
        if (srv_slot(s, info.index))
            srv_board_sync(s, info.index, -1);
        else
            srv_board_failed(s, info.index, info.model_id,
                             "its load returned after its bound; result discarded");
    }
    osp_loader_result_free(r);
}

/* On the loader's thread: its result back to the I/O thread. */
static void load_post(void *arg, osp_load_result_t *r) {
    server_t *s = arg;
    load_job_t *j = calloc(1, sizeof *j);
    if (!j) { /* nowhere to report: the loop times the load out */
        osp_loader_result_free(r);
        return;
    }
    j->h.kind = SRV_JOB_EVENT;
    j->h.done = load_done;
    j->r = r;
    srv_post(s, &j->h);
}

static osp_loader_t *loader(server_t *s) {
    if (!s->loader) s->loader = osp_loader_new(s->set.load_bound_ms, load_post, s);
    return s->loader;
}

int srv_cmds_timer_ms(server_t *s) { return s->loader ? osp_loader_timer_ms(s->loader) : -1; }

void srv_cmds_check_timers(server_t *s) {
    osp_load_info_t info;
    if (!s->loader || !s->cmds->loading || !osp_loader_expire(s->loader, &info)) return;
    cmdq_t *q = s->cmds->loading;
    int64_t bound = (int64_t)llround(osp_loader_bound_ms(s->loader));
    char msg[512];
    snprintf(msg, sizeof msg,
             "loading %s (index %d) took longer than %" PRId64 " ms; it is left to finish in the "
             "background and no other load starts until it does",
             info.model_id, info.index, bound);
    osp_log(OSP_LOG_ERROR, "ospreyd: model %d: %s", info.index, msg);
    srv_board_poisoned(s, info.index, info.model_id, (double)bound);
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = srv_cmd_begin(w, cmd_name(q->cmd), info.index, "error");
    osp_jw_key(w, "reason");
    osp_jw_str(w, "compile-timeout");
    osp_jw_key(w, "modelId");
    osp_jw_str(w, info.model_id);
    osp_jw_key(w, "poisoned");
    osp_jw_bool(w, 1);
    osp_jw_key(w, "timeoutMs");
    osp_jw_int(w, bound);
    osp_jw_key(w, "compileElapsedMs");
    osp_jw_int(w, (int64_t)llround(info.elapsed_ms));
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    srv_cmd_send(s, q->conn_id, w, at, q->req_id);
    load_over(s);
}

/* ---- the command queue ------------------------------------------------------------------ */

static int get_index(const cJSON *cmd, int *index) {
    return osp_wire_cmd_index(cmd, OSP_MAX_SLOTS, index);
}

/* Returns 1 when a load was started (the queue waits for it). */
static int run_load(server_t *s, cmdq_t *q, const char *name) {
    int index;
    char err[600];
    if (get_index(q->cmd, &index)) {
        snprintf(err, sizeof err, "%s needs an integer \"index\" from 0 to %d", name,
                 OSP_MAX_SLOTS - 1);
        srv_cmd_error(s, q->conn_id, q->req_id, name, -1, err);
        return 0;
    }
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(q->cmd, "config");
    osp_model_cfg_t cfg;
    if (!cJSON_IsObject(config)) {
        srv_cmd_error(s, q->conn_id, q->req_id, name, index, "missing \"config\" object");
        return 0;
    }
    char model_id[128];
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(config, "path");
    model_id_of(cJSON_IsString(path) ? path->valuestring : "", model_id, sizeof model_id);
    osp_loader_t *ld = loader(s);
    osp_load_info_t poison;
    if (!ld) {
        srv_cmd_error(s, q->conn_id, q->req_id, name, index, "out of memory");
        return 0;
    }
    if (osp_loader_poisoned(ld, &poison)) {
        snprintf(err, sizeof err,
                 "no load starts while the load of %s (index %d) is still running past its "
                 "bound (%" PRId64 " ms)",
                 poison.model_id, poison.index, (int64_t)llround(osp_loader_bound_ms(ld)));
        osp_jw_t *w = srv_reply_buf(s);
        size_t at = srv_cmd_begin(w, name, index, "error");
        osp_jw_key(w, "reason");
        osp_jw_str(w, "worker-poisoned");
        osp_jw_key(w, "modelId");
        osp_jw_str(w, model_id);
        osp_jw_key(w, "poisoned");
        osp_jw_bool(w, 1);
        osp_jw_key(w, "compileElapsedMs");
        osp_jw_int(w, (int64_t)llround(poison.elapsed_ms));
        osp_jw_key(w, "error");
        osp_jw_str(w, err);
        srv_cmd_send(s, q->conn_id, w, at, q->req_id);
        return 0;
    }
    if (srv_model_cfg(s, srv_from(srv_conn_find(s, q->conn_id)), config, &cfg, err, sizeof err)) {
        srv_board_failed(s, index, model_id, err);
        srv_cmd_error(s, q->conn_id, q->req_id, name, index, err);
        osp_loader_note_failed(ld);
        return 0;
    }
    model_id_of(cfg.path, model_id, sizeof model_id);
    srv_slots_grow(s, index);
    osp_log(OSP_LOG_INFO, "ospreyd: model %d load started: %s (bound %.0f ms)", index, cfg.path,
            osp_loader_bound_ms(ld));
    srv_board_loading(s, index, &cfg);
    if (osp_loader_start(ld, &cfg, s->set.backend, index, model_id)) {
        srv_board_failed(s, index, cfg.name, "cannot start a loader thread");
        srv_cmd_error(s, q->conn_id, q->req_id, name, index, "cannot start a loader thread");
        return 0;
    }
    s->cmds->loading = q;
    return 1;
}

static void run_unload(server_t *s, cmdq_t *q) {
    int index;
    if (get_index(q->cmd, &index)) {
        srv_cmd_error(s, q->conn_id, q->req_id, "unload", -1, "unload needs an integer \"index\"");
        return;
    }
    if (srv_slot_clear(s, index)) osp_log(OSP_LOG_INFO, "ospreyd: model %d unloaded", index);
    srv_board_sync(s, index, -1);
    osp_jw_t *w = srv_reply_buf(s);
    srv_cmd_send(s, q->conn_id, w, srv_cmd_begin(w, "unload", index, "ok"), q->req_id);
}

static void run_reconfigure(server_t *s, cmdq_t *q) {
    int index;
    char err[512];
    if (get_index(q->cmd, &index)) {
        srv_cmd_error(s, q->conn_id, q->req_id, "reconfigure", -1,
                      "reconfigure needs an integer \"index\"");
        return;
    }
    const cJSON *patch = cJSON_GetObjectItemCaseSensitive(q->cmd, "config");
    if (osp_wire_reconfigure_keys(patch, err, sizeof err)) {
        srv_cmd_error(s, q->conn_id, q->req_id, "reconfigure", index, err);
        return;
    }
    loaded_t *l = srv_slot(s, index);
    if (!l) {
        snprintf(err, sizeof err, "model %d is not loaded", index);
        srv_cmd_error(s, q->conn_id, q->req_id, "reconfigure", index, err);
        return;
    }
    float conf0, nms0, conf, nms;
    int maxdet0, maxdet;
    srv_loaded_params(l, &conf0, &nms0, &maxdet0);
    conf = conf0, nms = nms0, maxdet = maxdet0;
    if (osp_wire_reconfigure_values(patch, &conf, &nms, &maxdet, err, sizeof err)) {
        srv_cmd_error(s, q->conn_id, q->req_id, "reconfigure", index, err);
        return;
    }
    osp_log(OSP_LOG_INFO,
            "ospreyd: model %d reconfigured: confidence %.3g -> %.3g, nmsIouThreshold %.3g -> %.3g, maxDetections %d -> %d",
            index, conf0, conf, nms0, nms, maxdet0, maxdet);
    srv_loaded_set_params(l, conf, nms, maxdet);
    osp_jw_t *w = srv_reply_buf(s);
    srv_cmd_send(s, q->conn_id, w, srv_cmd_begin(w, "reconfigure", index, "ok"), q->req_id);
}

static void run_status(server_t *s, cmdq_t *q) {
    osp_cache_stats_t cs;
    osp_cache_stats(s->cache, &cs);
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd");
    osp_jw_str(w, "status");
    osp_jw_key(w, "models");
    osp_jw_arr_open(w);
    for (int i = 0; i < srv_slots_count(s); i++) {
        loaded_t *l = srv_slot(s, i);
        osp_jw_obj_open(w);
        osp_jw_key(w, "index");
        osp_jw_int(w, i);
        osp_jw_key(w, "path");
        if (l)
            osp_jw_str(w, srv_loaded_path(l));
        else
            osp_jw_null(w);
        osp_jw_key(w, "loaded");
        osp_jw_bool(w, l != NULL);
        osp_jw_key(w, "postprocessor");
        if (l)
            osp_jw_str(w, srv_loaded_postprocessor(l));
        else
            osp_jw_null(w);
        osp_jw_obj_close(w);
    }
    osp_jw_arr_close(w);
    osp_jw_key(w, "benchCache");
    osp_jw_obj_open(w);
    osp_jw_key(w, "hits");
    osp_jw_int(w, cs.bench_hits);
    osp_jw_key(w, "misses");
    osp_jw_int(w, cs.bench_misses);
    osp_jw_obj_close(w);
    osp_jw_obj_close(w);
    osp_wire_reply_end(w, at, q->req_id);
    srv_send(s, srv_conn_find(s, q->conn_id), w);
}

/* --read-only: what a socket connection may not do to the shared models. */
static int refused_read_only(server_t *s, const cmdq_t *q, const char *name) {
    static const char *const changing[] = {"load", "replace", "unload", "reconfigure"};
    if (!s->opts.read_only || srv_from(srv_conn_find(s, q->conn_id)) != SRV_FROM_PEER) return 0;
    for (size_t i = 0; i < sizeof changing / sizeof changing[0]; i++) {
        if (strcmp(name, changing[i]) != 0) continue;
        int index;
        srv_cmd_error(s, q->conn_id, q->req_id, name, get_index(q->cmd, &index) ? -1 : index,
                      "the server is read-only: socket connections may not change its models");
        return 1;
    }
    return 0;
}

static void process_commands(server_t *s) {
    srv_cmds_t *cq = s->cmds;
    while (!cq->loading && cq->head) {
        cmdq_t *q = cq->head;
        cq->head = q->next;
        if (!cq->head) cq->tail = NULL;
        const char *name = cmd_name(q->cmd);
        if (refused_read_only(s, q, name)) {
            /* answered */
        } else if (strcmp(name, "load") == 0 || strcmp(name, "replace") == 0) {
            if (run_load(s, q, name)) return; /* q is now cq->loading */
        } else if (strcmp(name, "unload") == 0) {
            run_unload(s, q);
        } else if (strcmp(name, "reconfigure") == 0) {
            run_reconfigure(s, q);
        } else if (strcmp(name, "status") == 0) {
            run_status(s, q);
        } else {
            char msg[300];
            const cJSON *c = cJSON_GetObjectItemCaseSensitive(q->cmd, "cmd");
            char shown[200];
            if (cJSON_IsString(c))
                snprintf(shown, sizeof shown, "%s", c->valuestring);
            else
                snprintf(shown, sizeof shown, "None");
            snprintf(msg, sizeof msg, "Unknown command: %s", shown);
            /* the name is echoed, but no more of it than the message holds:
             * a megabyte of name is not a megabyte of reply */
            srv_cmd_error(s, q->conn_id, q->req_id,
                          cJSON_IsString(c) && c->valuestring[0] ? shown : "unknown", -1, msg);
        }
        cmdq_free(q);
    }
}

/* ---- commands answered at once ------------------------------------------------------------ */

static void run_uncache(server_t *s, conn_t *c, uint32_t req_id, const cJSON *cmd) {
    const cJSON *fid = cJSON_GetObjectItemCaseSensitive(cmd, "frameId");
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd");
    osp_jw_str(w, "uncache_frame");
    osp_jw_key(w, "status");
    osp_jw_str(w, "ok");
    osp_jw_key(w, "frameId");
    if (cJSON_IsNumber(fid) && fid->valuedouble >= 0 && fid->valuedouble <= 4294967295.0 &&
        fid->valuedouble == floor(fid->valuedouble)) {
        osp_cache_drop_frame(s->cache, (uint32_t)fid->valuedouble);
        osp_jw_int(w, (int64_t)fid->valuedouble);
    } else if (fid) {
        char *txt = cJSON_PrintUnformatted(fid);
        osp_jw_raw(w, txt ? txt : "null", txt ? strlen(txt) : 4);
        free(txt);
    } else {
        osp_jw_int(w, -1);
    }
    osp_jw_obj_close(w);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
}

void srv_on_command(server_t *s, conn_t *c, const osp_wire_request_t *rq) {
    cJSON *cmd = NULL;
    char err[OSP_WIRE_ERRLEN + 64];
    uint32_t id = srv_conn_id(c);
    if (osp_wire_command_parse(rq->u.command.json, rq->u.command.len, &cmd, err, sizeof err)) {
        srv_cmd_error(s, id, rq->req_id, "unknown", -1, err);
        return;
    }
    const char *name = cmd_name(cmd);
    if (strcmp(name, "mem_stats") == 0) {
        osp_jw_t *w = srv_reply_buf(s);
        size_t at = osp_wire_reply_begin(w);
        srv_write_mem_stats(s, w);
        osp_wire_reply_end(w, at, rq->req_id);
        srv_send(s, c, w);
    } else if (srv_shm_command(s, c, rq->req_id, name, cmd) ||
               srv_stream_command(s, c, rq->req_id, name, cmd)) {
        /* answered */
    } else if (strcmp(name, "uncache_frame") == 0) {
        run_uncache(s, c, rq->req_id, cmd);
    } else {
        cmdq_t *q = calloc(1, sizeof *q);
        if (!q) {
            srv_cmd_error(s, id, rq->req_id, name, -1, "out of memory");
            cJSON_Delete(cmd);
            return;
        }
        q->conn_id = id;
        q->req_id = rq->req_id;
        q->cmd = cmd;
        srv_cmds_t *cq = s->cmds;
        if (cq->tail)
            cq->tail->next = q;
        else
            cq->head = q;
        cq->tail = q;
        process_commands(s);
        return;
    }
    cJSON_Delete(cmd);
}
