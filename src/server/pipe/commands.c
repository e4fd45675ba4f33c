/*
 * Commands (cmds.h), on the I/O thread. load/replace/unload/reconfigure/
 * status run in arrival order on one queue; a load holds the queue until
 * loads.c answers it: loaded within its bound, failed, or past its bound
 * (abandoned, the loader poisoned until it returns, its late return
 * announced to every connection as an event on request id 0xFFFFFFFF).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/cascade.h"
#include "sched/cache.h"
#include "server/core/board.h"
#include "server/pipe/cmds.h"
#include "server/pipe/policy.h"
#include "server/pipe/reply.h"
#include "server/pipe/conn.h"
#include "server/core/job.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/pipe/shm.h"
#include "server/core/slots.h"
#include "server/core/stats.h"
#include "server/pipe/streams.h"
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
    cmdq_t *loading; /* the load or replace whose load is queued or in flight */
    int starting;    /* inside run_load's srv_load */
};

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

static const char *cmd_name(const cJSON *cmd) { return osp_wire_cmd_name(cmd); }

int srv_idle(server_t *s) {
    return srv_jobs_inflight(s) == 0 && !s->cmds->loading && s->cmds->head == NULL &&
           srv_loads_idle(s);
}

/* ---- a load's answer ------------------------------------------------------------------ */

static void process_commands(server_t *s);

/* {"cmd", "index", "status": "error", "reason": "worker-poisoned", ...}:
 * no load starts while an abandoned one still runs. */
static void reply_poisoned(server_t *s, const cmdq_t *q, const char *name, int index,
                           const char *model_id, double elapsed_ms, const char *err) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = srv_cmd_begin(w, name, index, "error");
    osp_jw_key(w, "reason");
    osp_jw_str(w, "worker-poisoned");
    osp_jw_key(w, "modelId");
    osp_jw_str(w, model_id);
    osp_jw_key(w, "poisoned");
    osp_jw_bool(w, 1);
    osp_jw_key(w, "compileElapsedMs");
    osp_jw_int(w, (int64_t)llround(elapsed_ms));
    osp_jw_key(w, "error");
    osp_jw_str(w, err);
    srv_cmd_send(s, q->conn_id, w, at, q->req_id);
}

/* The load of the command in flight (s->cmds->loading) is answered (loads.h). */
static void load_done(server_t *s, void *arg, srv_load_end_t *end) {
    cmdq_t *q = arg;
    const char *name = cmd_name(q->cmd);
    int index = end->index;
    if (end->status == SRV_LOAD_OK) {
        loaded_t *l = srv_loaded_new(end->model, &end->model->cfg);
        if (l) {
            end->model = NULL; /* the slot's now */
            srv_slot_install(s, index, l);
            srv_board_sync(s, index, end->load_ms);
            osp_log(OSP_LOG_INFO, "ospreyd: model %d %s: %s (%.0f ms)", index,
                    strcmp(name, "load") == 0 ? "loaded" : "replaced", srv_loaded_path(l),
                    end->load_ms);
            osp_jw_t *w = srv_reply_buf(s);
            size_t at = srv_cmd_begin(w, name, index, "ok");
            osp_jw_key(w, "loadMs");
            osp_jw_int(w, (int64_t)llround(end->load_ms));
            srv_cmd_send(s, q->conn_id, w, at, q->req_id);
        } else {
            osp_log(OSP_LOG_ERROR, "ospreyd: model %d load failed: out of memory", index);
            srv_board_failed(s, index, end->model_id, "out of memory");
            srv_cmd_error(s, q->conn_id, q->req_id, name, index, "out of memory");
        }
    } else if (end->status == SRV_LOAD_TIMED_OUT) {
        osp_jw_t *w = srv_reply_buf(s);
        size_t at = srv_cmd_begin(w, name, index, "error");
        osp_jw_key(w, "reason");
        osp_jw_str(w, "compile-timeout");
        osp_jw_key(w, "modelId");
        osp_jw_str(w, end->model_id);
        osp_jw_key(w, "poisoned");
        osp_jw_bool(w, 1);
        osp_jw_key(w, "timeoutMs");
        osp_jw_int(w, end->bound_ms);
        osp_jw_key(w, "compileElapsedMs");
        osp_jw_int(w, (int64_t)llround(end->elapsed_ms));
        osp_jw_key(w, "error");
        osp_jw_str(w, end->err);
        srv_cmd_send(s, q->conn_id, w, at, q->req_id);
    } else if (end->status == SRV_LOAD_POISONED) {
        srv_board_failed(s, index, end->model_id, end->err);
        reply_poisoned(s, q, name, index, end->model_id, end->elapsed_ms, end->err);
    } else {
        srv_cmd_error(s, q->conn_id, q->req_id, name, index, end->err);
    }
    s->cmds->loading = NULL;
    if (s->cmds->starting) return; /* answered before it was queued: run_load goes on */
    cmdq_free(q);
    process_commands(s);
}

/* ---- the command queue ------------------------------------------------------------------ */

static int get_index(const cJSON *cmd, int *index) {
    return osp_wire_cmd_index(cmd, OSP_MAX_SLOTS, index);
}

/* Returns 1 when a load was queued (the command queue waits for its answer). */
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
    char model_id[128], poisoned_by[128];
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(config, "path");
    srv_model_id(cJSON_IsString(path) ? path->valuestring : "", model_id, sizeof model_id);
    int poisoned_index;
    double elapsed;
    if (srv_loads_poisoned(s, poisoned_by, sizeof poisoned_by, &poisoned_index, &elapsed)) {
        snprintf(err, sizeof err,
                 "no load starts while the load of %s (index %d) is still running past its "
                 "bound (%" PRId64 " ms)",
                 poisoned_by, poisoned_index, (int64_t)llround(s->set.load_bound_ms));
        reply_poisoned(s, q, name, index, model_id, elapsed, err);
        return 0;
    }
    osp_cascade_t *then = NULL;
    if (srv_model_cfg(s, srv_from(srv_conn_find(s, q->conn_id)), config, &then, &cfg, err, sizeof err)) {
        srv_board_failed(s, index, model_id, err);
        srv_cmd_error(s, q->conn_id, q->req_id, name, index, err);
        srv_loads_note_failed(s);
        return 0;
    }
    srv_model_id(cfg.path, model_id, sizeof model_id);
    srv_slots_grow(s, index);
    s->cmds->loading = q;
    s->cmds->starting = 1; /* its answer may come before srv_load returns */
    int rc = srv_load_then(s, &cfg, then, index, model_id, load_done, q);
    s->cmds->starting = 0;
    if (rc) {
        s->cmds->loading = NULL;
        srv_cmd_error(s, q->conn_id, q->req_id, name, index, "out of memory");
        return 0;
    }
    return s->cmds->loading == q;
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
