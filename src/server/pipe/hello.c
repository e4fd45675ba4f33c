/*
 * The startup config (cmds.h), on the I/O thread: the first frame of a
 * connection, or the --config file of --listen. The first one also fixes
 * the server's settings (srv_settings_t) and starts the worker pools.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "model/paths.h"
#include "base/clock.h"
#include "sched/sched.h"
#include "model/cascade.h"
#include "sched/window.h"
#include "server/core/auth.h"
#include "server/core/board.h"
#include "server/core/core.h"
#include "server/pipe/cmds.h"
#include "server/pipe/policy.h"
#include "server/pipe/reply.h"
#include "server/pipe/conn.h"
#include "server/core/exec.h"
#include "server/core/job.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "log/log.h"
#include "wire/cmdargs.h"

/* Thread economy. A frame runs on one predict worker; on a CPU several
 * single-thread runs side by side beat one run spread over the cores (on 2
 * cores, ssd-oidv4: 128 vs 92 frames/s), so osprey raises the host's
 * `concurrency` to the core count for ONNX Runtime and gives each run the
 * cores left over (1 here). `autoConcurrency: false` keeps the host's
 * number; `intraOpThreads` sets the threads inside one run. A frame that
 * runs alone (nothing else admitted for its model, nothing else running)
 * would leave the other cores idle, so each model also gets a second
 * session whose runs use every core (`loneFrameThreads`, 0 or 1 = off):
 * one frame in flight is answered at the speed of the widest run. The test
 * runtime is never raised: its tests count workers.
 *
 * The predict workers run a few steps nicer (`predictNice`, default 3, 0
 * = off) than the threads that feed them: the reading thread and the
 * prepare workers need a fraction of a core between runs, and should get
 * it as soon as there is something to read rather than when a run's time
 * slice ends. UltraFace 1920x1080 raw at K = 4 on 2 cores: 2-17 % more
 * frames/s in each of 11 side-by-side pairs of runs. */
static void choose_threads(srv_settings_t *s, const osp_wire_hello_t *h, int test_runtime) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    s->cores = (int)ncpu;
    int asked = h && h->concurrency > 1 ? h->concurrency : 1;
    osp_wire_hello_ext_t x;
    osp_wire_hello_ext(h, &x);
    int auto_raise = !test_runtime && x.auto_concurrency;
    s->workers = asked;
    snprintf(s->threads_source, sizeof s->threads_source, "config");
    if (auto_raise && s->workers < ncpu) {
        s->workers = (int)ncpu;
        snprintf(s->threads_source, sizeof s->threads_source, "cores");
    }
    if (s->workers > 64) s->workers = 64;
    int intra = x.intra_op_threads;
    s->intra_threads = intra > 0 ? intra : (int)(ncpu / s->workers);
    if (s->intra_threads < 1) s->intra_threads = 1;
    int lone = x.lone_frame_threads;
    s->lone_threads = test_runtime ? 0 : lone >= 0 ? lone : (int)ncpu;
    if (s->lone_threads <= s->intra_threads) s->lone_threads = 0;
    int nice = x.predict_nice;
    s->predict_nice = nice < 0 ? 3 : nice > 19 ? 19 : nice;
}

static int start_pools(server_t *srv, const osp_wire_hello_t *h) {
    srv_settings_t *s = &srv->set;
    if (s->started) return 0;
    choose_threads(s, h, h && h->runtime && strcmp(h->runtime, "test") == 0);
    const char *rt = h && h->runtime ? h->runtime : "onnxruntime";
    snprintf(s->runtime_name, sizeof s->runtime_name, "%s", rt);
    snprintf(s->device, sizeof s->device, "%s", h && h->device ? h->device : "");
    s->backend = osp_backend_find(strcmp(rt, "test") == 0 ? "test" : "onnxruntime");
    if (strcmp(rt, "coreml") == 0 && !s->device[0])
        snprintf(s->device, sizeof s->device, "coreml");
    if (strcmp(rt, "test") != 0 && strcmp(rt, "onnxruntime") != 0 && strcmp(rt, "onnx") != 0 &&
        strcmp(rt, "coreml") != 0)
        osp_log(OSP_LOG_WARN,
                "ospreyd: runtime '%.64s' is not built in; serving with ONNX Runtime", rt);
    s->load_bound_ms = h ? h->model_load_timeout_ms : 120000.0;
    if (!(s->load_bound_ms > 0)) s->load_bound_ms = 120000.0;
    if (s->load_bound_ms > 1e12) s->load_bound_ms = 1e12;
    s->batch_mode = h ? (int)h->batch_mode : OSP_WIRE_BATCH_NONE;
    s->window_ms = h ? h->window_ms : 0;
    s->max_batch = h ? h->max_batch_size : 1;
    if (srv_core_start(srv)) return -1;
    osp_log(OSP_LOG_INFO,
            "ospreyd: runtime %s on %d core(s): %d prepare + %d predict worker(s) (%s), "
            "%d intra-op thread(s) per run (%d for a frame that runs alone), predict workers "
            "nicer by %d, wire version up to %d",
            s->backend->name, s->cores, s->workers, s->workers,
            strcmp(s->threads_source, "cores") == 0 ? "raised to the core count" : "as configured",
            s->intra_threads, s->lone_threads > 1 ? s->lone_threads : s->intra_threads,
            s->predict_nice, OSP_WIRE_VERSION);
    return 0;
}

/* Whether loaded model l is what a config of path and cascade then asks
 * for: a connection shares it then, else the slot is left as it is. */
static int same_model(const loaded_t *l, const char *path, const osp_cascade_t *then) {
    return strcmp(srv_loaded_path(l), path) == 0 && osp_cascade_same(srv_loaded_model(l)->then, then);
}

/* Startup models load before the ready reply (nothing is served before it);
 * one that fails leaves its slot empty. */
static void handshake_models(server_t *s, srv_from_t from, const cJSON *models, int *loaded,
                             int *total) {
    *loaded = *total = 0;
    const cJSON *mc;
    int i = 0;
    /* every model on the board first: /readyz must not say ready between two loads */
    cJSON_ArrayForEach(mc, models) {
        char err[600];
        osp_model_cfg_t cfg;
        if (i < OSP_MAX_SLOTS && !srv_slot(s, i)) {
            if (srv_model_cfg(s, from, mc, NULL, &cfg, err, sizeof err) == 0)
                srv_board_loading(s, i, &cfg);
            else
                srv_board_failed(s, i, "", err);
        }
        i++;
    }
    srv_board_configured(s);
    i = 0;
    cJSON_ArrayForEach(mc, models) {
        char err[600];
        osp_model_cfg_t cfg;
        (*total)++;
        if (i >= OSP_MAX_SLOTS) {
            osp_log(OSP_LOG_ERROR, "ospreyd: model %d failed to load: too many models (at most %d)",
                    i, OSP_MAX_SLOTS);
            i++;
            continue;
        }
        srv_slots_grow(s, i);
        if (srv_slot(s, i) && cJSON_IsObject(mc)) {
            /* a socket connection naming a model another already loaded shares it */
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(mc, "path");
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(mc, "model");
            osp_model_cfg_t want;
            osp_cascade_t *then = NULL;
            int same = srv_model_cfg(s, from, mc, &then, &want, err, sizeof err) == 0 &&
                       same_model(srv_slot(s, i), want.path, then) && (p || n);
            osp_cascade_free(then);
            if (same) {
                (*loaded)++;
                i++;
                continue;
            }
        }
        osp_model_t *m = NULL;
        osp_cascade_t *then = NULL;
        const char *name = "";
        if (srv_model_cfg(s, from, mc, &then, &cfg, err, sizeof err) == 0) {
            osp_log(OSP_LOG_INFO, "ospreyd: loading model %d: %s", i, cfg.path);
            char rerr[1200];
            if (from == SRV_FROM_OPERATOR &&
                osp_paths_add_dir_of(s->roots, cfg.path, rerr, sizeof rerr) == 0)
                osp_log(OSP_LOG_INFO, "ospreyd: model root: the folder of %s", cfg.path);
            name = cfg.name;
            struct timespec t0;
            osp_now(&t0);
            if (osp_model_open(&cfg, s->set.backend, &m, err, sizeof err) == 0 && then &&
                osp_cascade_open(then, m, s->set.backend, cfg.intra_threads, err, sizeof err)) {
                osp_model_free(m);
                m = NULL;
            }
            if (m) {
                m->then = then; /* the model's now */
                then = NULL;
                loaded_t *l = srv_loaded_new(m, &cfg);
                if (l) {
                    srv_slot_install(s, i, l);
                    (*loaded)++;
                } else {
                    osp_model_free(m);
                }
                srv_board_sync(s, i, osp_ms_since(&t0));
                i++;
                continue;
            }
        }
        osp_cascade_free(then);
        osp_log(OSP_LOG_ERROR, "ospreyd: model %d failed to load: %s", i, err);
        if (name[0]) srv_board_failed(s, i, name, err); /* a bad config is on the board already */
        i++;
    }
}

static void send_ready(server_t *s, conn_t *c, uint32_t req_id, int loaded, int total,
                       int64_t startup_ms) {
    osp_log(OSP_LOG_INFO, "ospreyd: ready, %d/%d model(s) in %" PRId64 " ms (wire version %d)",
            loaded, total, startup_ms, srv_conn_version(c));
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    osp_wire_ready_t r = {.models = loaded,
                          .total = total,
                          .startup_ms = startup_ms,
                          .runtime = s->set.runtime_name,
                          .workers = s->set.workers,
                          .protocol_version = OSP_WIRE_VERSION};
    osp_wire_json_ready(w, &r);
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, c, w);
}

/* Models a socket connection's handshake asked for that were not loaded:
 * loaded through the server's loads (loads.h: one at a time, each within
 * the load bound) while the I/O thread keeps serving everyone else; the
 * ready reply waits for the last. */
typedef struct hello_plan hello_plan_t;
typedef struct {
    hello_plan_t *p;
    int i;
} hello_load_t;
struct hello_plan {
    uint32_t conn_id, req_id;
    struct timespec t0; /* when the handshake arrived */
    int loaded, total;  /* the handshake's models: ready / named */
    int n;              /* to load */
    int pending;        /* loads not answered yet */
    int index[OSP_MAX_SLOTS];
    hello_load_t load[OSP_MAX_SLOTS];
    osp_model_cfg_t *cfg; /* n entries */
    osp_cascade_t **then; /* n entries: each cfg's cascade until its load takes it, or NULL */
    osp_model_t **m;      /* n entries: NULL where the load failed */
};

static void plan_free(hello_plan_t *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        osp_model_free(p->m[i]);
        osp_cascade_free(p->then[i]);
    }
    free(p->cfg);
    free(p->then);
    free(p->m);
    free(p);
}

/* Every load of the plan answered: the models in, the ready reply out. */
static void hello_done(server_t *s, hello_plan_t *p) {
    conn_t *c = srv_conn_find(s, p->conn_id);
    for (int i = 0; i < p->n; i++) {
        int idx = p->index[i];
        if (!p->m[i]) continue; /* the board says why (loads.c, hello_loaded) */
        loaded_t *have = srv_slot(s, idx);
        if (have) {
            /* another connection filled it meanwhile */
            if (same_model(have, p->cfg[i].path, p->m[i]->then)) p->loaded++;
            srv_board_sync(s, idx, -1);
            continue;
        }
        loaded_t *l = srv_loaded_new(p->m[i], &p->cfg[i]);
        if (!l) continue;
        p->m[i] = NULL;
        srv_slot_install(s, idx, l);
        srv_board_sync(s, idx, osp_ms_since(&p->t0));
        p->loaded++;
    }
    if (c) {
        srv_conn_inflight(c, -1);
        send_ready(s, c, p->req_id, p->loaded, p->total, (int64_t)llround(osp_ms_since(&p->t0)));
        srv_conn_pause_loading(s, c, 0);
    }
    plan_free(p);
}

/* One of the plan's loads answered (loads.h). */
static void hello_loaded(server_t *s, void *arg, srv_load_end_t *end) {
    hello_load_t *hl = arg;
    hello_plan_t *p = hl->p;
    if (end->status == SRV_LOAD_OK) {
        p->m[hl->i] = end->model;
        end->model = NULL;
    } else {
        osp_log(OSP_LOG_ERROR, "ospreyd: model %d failed to load: %s", end->index, end->err);
        if (end->status == SRV_LOAD_POISONED)
            srv_board_failed(s, end->index, end->model_id, end->err);
    }
    if (--p->pending == 0) hello_done(s, p);
}

/* A socket connection's handshake: models already in their slots are shared;
 * empty slots are filled on a thread (the I/O thread keeps serving the other
 * connections) and the ready reply waits for them. A slot that holds a
 * different model is left alone: another host is using it ("replace"
 * changes it explicitly). */
static int hello_socket(server_t *s, conn_t *c, const cJSON *models, uint32_t req_id,
                        const struct timespec *t0) {
    hello_plan_t *p = calloc(1, sizeof *p);
    int n = cJSON_GetArraySize(models);
    if (!p || !(p->cfg = calloc((size_t)(n ? n : 1), sizeof *p->cfg)) ||
        !(p->then = calloc((size_t)(n ? n : 1), sizeof *p->then)) ||
        !(p->m = calloc((size_t)(n ? n : 1), sizeof *p->m))) {
        plan_free(p);
        return -1;
    }
    p->conn_id = srv_conn_id(c);
    p->req_id = req_id;
    p->t0 = *t0;
    const cJSON *mc;
    int i = 0;
    cJSON_ArrayForEach(mc, models) {
        char err[600];
        osp_model_cfg_t cfg;
        osp_cascade_t *then = NULL;
        p->total++;
        loaded_t *have = srv_slot(s, i);
        if (i >= OSP_MAX_SLOTS || srv_model_cfg(s, SRV_FROM_PEER, mc, &then, &cfg, err, sizeof err)) {
            osp_log(OSP_LOG_ERROR, "ospreyd: model %d failed to load: %s", i,
                    i >= OSP_MAX_SLOTS ? "too many models" : err);
        } else if (!have && s->opts.read_only) {
            osp_log(OSP_LOG_WARN,
                    "ospreyd: model %d: not loaded for a socket connection (--read-only)", i);
        } else if (have) {
            if (same_model(have, cfg.path, then))
                p->loaded++;
            else
                osp_log(OSP_LOG_WARN,
                        "ospreyd: model %d: slot holds %s, not %s or not with the same "
                        "cascade (\"then\"); left as it is (use replace)",
                        i, srv_loaded_path(have), cfg.path);
        } else {
            p->index[p->n] = i;
            p->then[p->n] = then;
            then = NULL;
            p->cfg[p->n++] = cfg;
            srv_board_loading(s, i, &cfg);
        }
        osp_cascade_free(then);
        i++;
    }
    srv_board_configured(s);
    if (p->n == 0) {
        send_ready(s, c, req_id, p->loaded, p->total, (int64_t)llround(osp_ms_since(t0)));
        plan_free(p);
        return 0;
    }
    srv_conn_inflight(c, 1);
    srv_conn_pause_loading(s, c, 1);
    p->pending = p->n + 1; /* one more until every load is queued: an answer may come at once */
    for (int k = 0; k < p->n; k++) {
        char model_id[128];
        srv_model_id(p->cfg[k].path, model_id, sizeof model_id);
        p->load[k] = (hello_load_t){p, k};
        osp_cascade_t *then = p->then[k];
        p->then[k] = NULL; /* the load's */
        if (srv_load_then(s, &p->cfg[k], then, p->index[k], model_id, hello_loaded, &p->load[k])) {
            srv_board_failed(s, p->index[k], model_id, "out of memory");
            p->pending--;
        }
    }
    if (--p->pending == 0) hello_done(s, p);
    return 0;
}

static int hello_authorized(server_t *s, const osp_wire_hello_t *h) {
    const cJSON *t = h->root ? cJSON_GetObjectItemCaseSensitive(h->root, "authToken") : NULL;
    const char *given = cJSON_IsString(t) ? t->valuestring : NULL;
    return srv_auth_check(s->auth, given, given ? strlen(given) : 0);
}

void srv_on_hello(server_t *s, conn_t *c, const osp_wire_frame_t *f) {
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN + 64];
    struct timespec t0;
    osp_now(&t0);
    if (osp_wire_hello_parse(f->msg_type, f->payload, f->payload_len, OSP_WIRE_VERSION, &h, err,
                             sizeof err)) {
        osp_log(OSP_LOG_ERROR, "%s", err);
        srv_conn_fatal(c); /* stdio: the process exits 1; a socket: that connection closes */
        return;
    }
    if (!srv_conn_is_stdio(c) && s->auth && !hello_authorized(s, &h)) {
        /* nothing of its config is used, not even to start the pools */
        osp_log(OSP_LOG_WARN,
                "ospreyd: connection %u: startup config without the right authToken; closed",
                srv_conn_id(c));
        osp_jw_t *w = srv_reply_buf(s);
        size_t at = osp_wire_reply_begin(w);
        osp_jw_obj_open(w);
        osp_jw_key(w, "status");
        osp_jw_str(w, "error");
        osp_jw_key(w, "error");
        osp_jw_str(w, "authentication failed");
        osp_jw_obj_close(w);
        osp_wire_reply_end(w, at, f->req_id);
        srv_send(s, c, w);
        osp_wire_hello_free(&h);
        srv_conn_fatal(c);
        return;
    }
    if (start_pools(s, &h)) {
        osp_wire_hello_free(&h);
        srv_conn_fatal(c);
        return;
    }
    srv_conn_set_handshaken(s, c, h.wire_version);
    if (!srv_conn_is_stdio(c)) {
        if (hello_socket(s, c, h.models, f->req_id, &t0)) {
            osp_log(OSP_LOG_ERROR, "ospreyd: out of memory in a handshake");
            srv_conn_fatal(c);
        }
        osp_wire_hello_free(&h);
        return;
    }
    /* stdio: the models load before the ready reply, as the Python worker
     * did; nothing else is being served yet */
    int loaded = 0, total = 0;
    handshake_models(s, SRV_FROM_HOST, h.models, &loaded, &total);
    send_ready(s, c, f->req_id, loaded, total, (int64_t)llround(osp_ms_since(&s->started)));
    osp_wire_hello_free(&h);
}

int srv_hello_preload(server_t *s) {
    if (!s->opts.config_path) return 0;
    /* socket mode with a config file: the pools and the preloaded models */
    FILE *f = fopen(s->opts.config_path, "rb");
    if (!f) {
        osp_log(OSP_LOG_ERROR, "ospreyd: cannot read %s: %s", s->opts.config_path, strerror(errno));
        return 2;
    }
    size_t cap = 1 << 20;
    uint8_t *buf = malloc(cap);
    size_t n = buf ? fread(buf, 1, cap, f) : 0;
    fclose(f);
    if (!buf) return 1;
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN + 64];
    if (osp_wire_hello_parse(OSP_WIRE_MSG_COMMAND, buf, n, OSP_WIRE_VERSION, &h, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "ospreyd: %s: %s", s->opts.config_path, err);
        free(buf);
        return 2;
    }
    free(buf);
    int rc = start_pools(s, &h);
    int loaded = 0, total = 0;
    if (!rc) handshake_models(s, SRV_FROM_OPERATOR, h.models, &loaded, &total);
    osp_log(OSP_LOG_INFO, "ospreyd: %d/%d model(s) preloaded from %s", loaded, total,
            s->opts.config_path);
    osp_wire_hello_free(&h);
    return rc ? 1 : 0;
}
