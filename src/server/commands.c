/*
 * Commands, the handshake and the bounded model loader, on the I/O thread.
 * load/replace/unload/reconfigure/status run in arrival order on one queue;
 * mem_stats and uncache_frame are answered at once (a host's liveness probe
 * must never wait behind a compile). A load runs on its own thread; the loop
 * bounds it with a timer. Past the bound the load is abandoned (a native
 * compile cannot be killed), the worker is poisoned for loads until it
 * returns, and its late return is announced as an event.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server/internal.h"

static const char *const RECONFIGURABLE[] = {"confidence", "maxDetections", "nmsIouThreshold"};
#define N_RECONF (sizeof RECONFIGURABLE / sizeof RECONFIGURABLE[0])

static void send_w(server_t *s, uint32_t conn_id, osp_jw_t *w, size_t at, uint32_t req_id) {
    osp_wire_reply_end(w, at, req_id);
    srv_send(s, srv_conn_find(s, conn_id), w);
    osp_jw_free(w);
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
    send_w(s, conn_id, w, at, req_id);
}

static void cmd_error(server_t *s, uint32_t conn_id, uint32_t req_id, const char *cmd, int index,
                      const char *msg) {
    osp_jw_t w = {0};
    size_t at = srv_cmd_begin(&w, cmd, index, "error");
    osp_jw_key(&w, "error");
    osp_jw_str(&w, msg);
    srv_cmd_send(s, conn_id, &w, at, req_id);
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

static int64_t ms_since(const struct timespec *t) { return (int64_t)llround(srv_ms_since(t)); }

/* ---- slots ----------------------------------------------------------------------- */

static loaded_t *wrap_model(osp_model_t *m, const osp_model_cfg_t *cfg) {
    loaded_t *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->m = m;
    l->refs = 1;
    model_id_of(cfg->path, l->model_id, sizeof l->model_id);
    snprintf(l->config_path, sizeof l->config_path, "%s", cfg->path);
    snprintf(l->postprocessor, sizeof l->postprocessor, "%s", cfg->postprocessor);
    l->confidence = cfg->confidence;
    l->nms_iou = cfg->nms_iou;
    l->max_detections = cfg->max_detections;
    return l;
}

static void install(server_t *s, int index, loaded_t *l) {
    if (index >= s->nslots) s->nslots = index + 1;
    loaded_t *old = s->slots[index];
    s->slots[index] = l;
    if (old) srv_release_model(s, old); /* a predict holding it finishes first */
}

static void grow_slots(server_t *s, int index) {
    if (index >= s->nslots) s->nslots = index + 1;
}

static int cfg_for(server_t *s, const cJSON *config, osp_model_cfg_t *cfg, char *err, size_t errlen) {
    if (osp_model_cfg_from_json(config, cfg, err, errlen)) return -1;
    if (!cfg->device[0]) snprintf(cfg->device, sizeof cfg->device, "%s", s->device);
    if (!cfg->intra_threads) cfg->intra_threads = s->intra_threads;
    if (!cfg->lone_threads) cfg->lone_threads = s->lone_threads;
    return 0;
}

/* ---- loader ------------------------------------------------------------------------ */

typedef struct {
    server_t *s;
    osp_model_cfg_t cfg;
    const osp_backend_t *backend;
    int seq;
} load_arg_t;

static void *load_main(void *arg) {
    load_arg_t *a = arg;
    (void)pthread_setname_np(pthread_self(), "osp-load");
    job_t *j = calloc(1, sizeof *j);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    osp_model_t *m = NULL;
    char err[512] = "";
    int rc = osp_model_open(&a->cfg, a->backend, &m, err, sizeof err);
    if (!j) { /* nowhere to report: the loop times the load out */
        osp_model_free(m);
        free(a);
        return NULL;
    }
    j->kind = JOB_LOAD_DONE;
    j->load_seq = a->seq;
    j->loaded_model = m;
    j->load_rc = rc;
    j->load_ms = srv_ms_since(&t0);
    snprintf(j->load_err, sizeof j->load_err, "%s", err);
    osp_mailbox_post(&a->s->done, &j->q);
    free(a);
    return NULL;
}

static int start_load(server_t *s, const osp_model_cfg_t *cfg) {
    load_arg_t *a = malloc(sizeof *a);
    if (!a) return -1;
    *a = (load_arg_t){.s = s, .cfg = *cfg, .backend = s->backend, .seq = ++s->load_seq};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED); /* abandoned, never joined */
    pthread_t t;
    int rc = pthread_create(&t, &attr, load_main, a);
    pthread_attr_destroy(&attr);
    if (rc) {
        free(a);
        return -1;
    }
    return 0;
}

static const char *cmd_name(const cJSON *cmd) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cmd, "cmd");
    return cJSON_IsString(c) ? c->valuestring : "unknown";
}

static void process_commands(server_t *s);

static void broadcast_event(server_t *s, osp_jw_t *frame) {
    for (conn_t *c = s->conns; c; c = c->next) {
        if (!c->handshaken) continue;
        osp_jw_t copy = {0};
        osp_jw_raw(&copy, frame->buf, frame->len);
        srv_send(s, c, &copy);
        osp_jw_free(&copy);
    }
}

void srv_load_done(server_t *s, job_t *j) {
    if (s->load_busy && j->load_seq == s->load_seq) {
        /* back inside its bound: install or report */
        cmdq_t *q = s->load_cmd;
        const char *name = cmd_name(q->cmd);
        int index = s->load_index;
        if (j->load_rc == 0) {
            osp_model_cfg_t cfg = j->loaded_model->cfg;
            loaded_t *l = wrap_model(j->loaded_model, &cfg);
            if (!l) {
                osp_model_free(j->loaded_model);
                cmd_error(s, q->conn_id, q->req_id, name, index, "out of memory");
                s->loads_failed++;
            } else {
                install(s, index, l);
                s->loads_completed++;
                fprintf(stderr, "ospreyd: model %d %s: %s (%.0f ms)\n", index,
                        strcmp(name, "load") == 0 ? "loaded" : "replaced", cfg.path, j->load_ms);
                osp_jw_t w = {0};
                size_t at = srv_cmd_begin(&w, name, index, "ok");
                osp_jw_key(&w, "loadMs");
                osp_jw_int(&w, (int64_t)llround(j->load_ms));
                srv_cmd_send(s, q->conn_id, &w, at, q->req_id);
            }
        } else {
            s->loads_failed++;
            fprintf(stderr, "ospreyd: model %d load failed: %s\n", index, j->load_err);
            cmd_error(s, q->conn_id, q->req_id, name, index, j->load_err);
        }
        cJSON_Delete(q->cmd);
        free(q);
        s->load_cmd = NULL;
        s->load_busy = 0;
        free(j);
        process_commands(s);
        return;
    }
    if (s->poisoned && j->load_seq == s->poison_seq) {
        /* an abandoned load came back: the compiler is free again; the result
         * is discarded (the host was told it failed and moved on) */
        int64_t elapsed = ms_since(&s->poison_started);
        fprintf(stderr, "ospreyd: the load of %s (index %d) returned after its bound, in %" PRId64
                        " ms (%s); result discarded, loads accepted again\n",
                s->poison_model_id, s->poison_index, elapsed, j->load_rc ? j->load_err : "ok");
        osp_jw_t w = {0};
        osp_wire_late_t ev = {.index = s->poison_index, .model_id = s->poison_model_id,
                              .ok = j->load_rc == 0, .elapsed_ms = elapsed,
                              .error = j->load_rc ? j->load_err : NULL};
        osp_wire_reply_event_late(&w, &ev);
        broadcast_event(s, &w);
        osp_jw_free(&w);
        s->poisoned = 0;
        s->loads_finished_late++;
    }
    osp_model_free(j->loaded_model);
    free(j);
}

int srv_timer_ms(server_t *s) {
    if (!s->load_busy) return -1;
    double left = s->load_bound_ms - srv_ms_since(&s->load_started);
    return left <= 0 ? 0 : (int)ceil(left);
}

void srv_check_timers(server_t *s) {
    if (!s->load_busy || srv_ms_since(&s->load_started) < s->load_bound_ms) return;
    cmdq_t *q = s->load_cmd;
    const char *name = cmd_name(q->cmd);
    int64_t bound = (int64_t)llround(s->load_bound_ms);
    s->poisoned = 1;
    s->poison_seq = s->load_seq;
    s->poison_index = s->load_index;
    snprintf(s->poison_model_id, sizeof s->poison_model_id, "%s", s->load_model_id);
    s->poison_started = s->load_started;
    s->poison_at_ms = srv_epoch_ms();
    s->loads_timed_out++;
    char msg[512];
    snprintf(msg, sizeof msg,
             "loading %s (index %d) took longer than %" PRId64 " ms; it is left to finish in the "
             "background and no other load starts until it does",
             s->load_model_id, s->load_index, bound);
    fprintf(stderr, "ospreyd: model %d: %s\n", s->load_index, msg);
    osp_jw_t w = {0};
    size_t at = srv_cmd_begin(&w, name, s->load_index, "error");
    osp_jw_key(&w, "reason"); osp_jw_str(&w, "compile-timeout");
    osp_jw_key(&w, "modelId"); osp_jw_str(&w, s->load_model_id);
    osp_jw_key(&w, "poisoned"); osp_jw_bool(&w, 1);
    osp_jw_key(&w, "timeoutMs"); osp_jw_int(&w, bound);
    osp_jw_key(&w, "compileElapsedMs"); osp_jw_int(&w, ms_since(&s->poison_started));
    osp_jw_key(&w, "error"); osp_jw_str(&w, msg);
    srv_cmd_send(s, q->conn_id, &w, at, q->req_id);
    cJSON_Delete(q->cmd);
    free(q);
    s->load_cmd = NULL;
    s->load_busy = 0;
    process_commands(s);
}

/* ---- the command queue ------------------------------------------------------------------ */

static int get_index(const cJSON *cmd, int *index) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cmd, "index");
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 0 ||
        v->valuedouble >= OSP_MAX_SLOTS)
        return -1;
    *index = (int)v->valuedouble;
    return 0;
}

/* Returns 1 when a load was started (the queue waits for it). */
static int run_load(server_t *s, cmdq_t *q, const char *name) {
    int index;
    char err[600];
    if (get_index(q->cmd, &index)) {
        snprintf(err, sizeof err, "%s needs an integer \"index\" from 0 to %d", name, OSP_MAX_SLOTS - 1);
        cmd_error(s, q->conn_id, q->req_id, name, -1, err);
        return 0;
    }
    const cJSON *config = cJSON_GetObjectItemCaseSensitive(q->cmd, "config");
    osp_model_cfg_t cfg;
    if (!cJSON_IsObject(config)) {
        cmd_error(s, q->conn_id, q->req_id, name, index, "missing \"config\" object");
        return 0;
    }
    char model_id[128];
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(config, "path");
    model_id_of(cJSON_IsString(path) ? path->valuestring : "", model_id, sizeof model_id);
    if (s->poisoned) {
        snprintf(err, sizeof err,
                 "no load starts while the load of %s (index %d) is still running past its "
                 "bound (%" PRId64 " ms)",
                 s->poison_model_id, s->poison_index, (int64_t)llround(s->load_bound_ms));
        osp_jw_t w = {0};
        size_t at = srv_cmd_begin(&w, name, index, "error");
        osp_jw_key(&w, "reason"); osp_jw_str(&w, "worker-poisoned");
        osp_jw_key(&w, "modelId"); osp_jw_str(&w, model_id);
        osp_jw_key(&w, "poisoned"); osp_jw_bool(&w, 1);
        osp_jw_key(&w, "compileElapsedMs"); osp_jw_int(&w, ms_since(&s->poison_started));
        osp_jw_key(&w, "error"); osp_jw_str(&w, err);
        srv_cmd_send(s, q->conn_id, &w, at, q->req_id);
        return 0;
    }
    if (cfg_for(s, config, &cfg, err, sizeof err)) {
        cmd_error(s, q->conn_id, q->req_id, name, index, err);
        s->loads_failed++;
        return 0;
    }
    model_id_of(cfg.path, model_id, sizeof model_id);
    grow_slots(s, index);
    fprintf(stderr, "ospreyd: model %d load started: %s (bound %.0f ms)\n", index, cfg.path,
            s->load_bound_ms);
    if (start_load(s, &cfg)) {
        cmd_error(s, q->conn_id, q->req_id, name, index, "cannot start a loader thread");
        return 0;
    }
    s->load_busy = 1;
    s->load_cmd = q;
    s->load_index = index;
    snprintf(s->load_model_id, sizeof s->load_model_id, "%s", model_id);
    clock_gettime(CLOCK_MONOTONIC, &s->load_started);
    return 1;
}

static void run_unload(server_t *s, cmdq_t *q) {
    int index;
    if (get_index(q->cmd, &index)) {
        cmd_error(s, q->conn_id, q->req_id, "unload", -1, "unload needs an integer \"index\"");
        return;
    }
    if (index < s->nslots && s->slots[index]) {
        srv_release_model(s, s->slots[index]);
        s->slots[index] = NULL;
        fprintf(stderr, "ospreyd: model %d unloaded\n", index);
    }
    osp_jw_t w = {0};
    srv_cmd_send(s, q->conn_id, &w, srv_cmd_begin(&w, "unload", index, "ok"), q->req_id);
}

static void run_reconfigure(server_t *s, cmdq_t *q) {
    int index;
    char err[512];
    if (get_index(q->cmd, &index)) {
        cmd_error(s, q->conn_id, q->req_id, "reconfigure", -1, "reconfigure needs an integer \"index\"");
        return;
    }
    const cJSON *patch = cJSON_GetObjectItemCaseSensitive(q->cmd, "config");
    /* refuse any key outside the allow-list, naming them: a path accepted
     * here while the old session kept serving would be a silent lie */
    char refused[300] = "";
    size_t rl = 0;
    const cJSON *kv;
    cJSON_ArrayForEach(kv, patch) {
        int ok = 0;
        for (size_t i = 0; i < N_RECONF; i++) ok |= strcmp(kv->string, RECONFIGURABLE[i]) == 0;
        if (!ok && rl < sizeof refused - 1)
            rl += (size_t)snprintf(refused + rl, sizeof refused - rl, "%s%s", rl ? ", " : "", kv->string);
    }
    if (rl) {
        snprintf(err, sizeof err, "keys not reconfigurable without a reload: %s (allowed: confidence, maxDetections, nmsIouThreshold)",
                 refused);
        cmd_error(s, q->conn_id, q->req_id, "reconfigure", index, err);
        return;
    }
    loaded_t *l = index < s->nslots ? s->slots[index] : NULL;
    if (!l) {
        snprintf(err, sizeof err, "model %d is not loaded", index);
        cmd_error(s, q->conn_id, q->req_id, "reconfigure", index, err);
        return;
    }
    float conf = l->confidence, nms = l->nms_iou;
    int maxdet = l->max_detections;
    cJSON_ArrayForEach(kv, patch) {
        double v = kv->valuedouble;
        int is_num = cJSON_IsNumber(kv) && isfinite(v);
        if (strcmp(kv->string, "maxDetections") == 0) {
            if (!is_num || v < 1 || v > 100000 || v != floor(v)) goto bad;
            maxdet = (int)v;
        } else {
            if (!is_num || v < 0 || v > 1) goto bad;
            if (strcmp(kv->string, "confidence") == 0) conf = (float)v;
            else nms = (float)v;
        }
        continue;
    bad:
        snprintf(err, sizeof err, "%s must be %s", kv->string,
                 strcmp(kv->string, "maxDetections") == 0 ? "an integer from 1 to 100000" : "a number from 0 to 1");
        cmd_error(s, q->conn_id, q->req_id, "reconfigure", index, err);
        return;
    }
    fprintf(stderr, "ospreyd: model %d reconfigured: confidence %.3g -> %.3g, nmsIouThreshold %.3g -> %.3g, maxDetections %d -> %d\n",
            index, l->confidence, conf, l->nms_iou, nms, l->max_detections, maxdet);
    l->confidence = conf;
    l->nms_iou = nms;
    l->max_detections = maxdet;
    osp_jw_t w = {0};
    srv_cmd_send(s, q->conn_id, &w, srv_cmd_begin(&w, "reconfigure", index, "ok"), q->req_id);
}

static void run_status(server_t *s, cmdq_t *q) {
    osp_cache_stats_t cs;
    osp_cache_stats(s->cache, &cs);
    osp_jw_t w = {0};
    size_t at = osp_wire_reply_begin(&w);
    osp_jw_obj_open(&w);
    osp_jw_key(&w, "cmd"); osp_jw_str(&w, "status");
    osp_jw_key(&w, "models");
    osp_jw_arr_open(&w);
    for (int i = 0; i < s->nslots; i++) {
        loaded_t *l = s->slots[i];
        osp_jw_obj_open(&w);
        osp_jw_key(&w, "index"); osp_jw_int(&w, i);
        osp_jw_key(&w, "path");
        if (l) osp_jw_str(&w, l->config_path); else osp_jw_null(&w);
        osp_jw_key(&w, "loaded"); osp_jw_bool(&w, l != NULL);
        osp_jw_key(&w, "postprocessor");
        if (l) osp_jw_str(&w, l->postprocessor); else osp_jw_null(&w);
        osp_jw_obj_close(&w);
    }
    osp_jw_arr_close(&w);
    osp_jw_key(&w, "benchCache");
    osp_jw_obj_open(&w);
    osp_jw_key(&w, "hits"); osp_jw_int(&w, cs.bench_hits);
    osp_jw_key(&w, "misses"); osp_jw_int(&w, cs.bench_misses);
    osp_jw_obj_close(&w);
    osp_jw_obj_close(&w);
    send_w(s, q->conn_id, &w, at, q->req_id);
}

static void process_commands(server_t *s) {
    while (!s->load_busy && s->cmd_head) {
        cmdq_t *q = s->cmd_head;
        s->cmd_head = q->next;
        if (!s->cmd_head) s->cmd_tail = NULL;
        const char *name = cmd_name(q->cmd);
        if (strcmp(name, "load") == 0 || strcmp(name, "replace") == 0) {
            if (run_load(s, q, name)) return; /* q is now s->load_cmd */
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
            cmd_error(s, q->conn_id, q->req_id, cJSON_IsString(c) && c->valuestring[0] ? c->valuestring : "unknown", -1, msg);
        }
        cJSON_Delete(q->cmd);
        free(q);
    }
}

/* ---- mem_stats ------------------------------------------------------------------------------ */

static int malloc_arenas(void) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return -1;
    int rc = malloc_info(0, f);
    fclose(f);
    int n = 0;
    if (rc == 0 && buf)
        for (const char *p = buf; (p = strstr(p, "<heap nr=")); p++) n++;
    free(buf);
    return rc == 0 ? n : -1;
}

void srv_write_mem_stats(server_t *s, osp_jw_t *w) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd"); osp_jw_str(w, "mem_stats");
    osp_jw_key(w, "status"); osp_jw_str(w, "ok");
    osp_jw_key(w, "memory");
    osp_jw_obj_open(w);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        osp_jw_key(w, "maxRssKb");
        osp_jw_int(w, ru.ru_maxrss);
    }
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        static const struct { const char *label, *key; } fields[] = {
            {"VmRSS:", "rssKb"}, {"VmSize:", "vmKb"}, {"VmHWM:", "hwmKb"}, {"VmSwap:", "swapKb"}};
        int64_t vals[4] = {-1, -1, -1, -1}, threads = -1;
        char line[256];
        while (fgets(line, sizeof line, f)) {
            for (int i = 0; i < 4; i++)
                if (strncmp(line, fields[i].label, strlen(fields[i].label)) == 0)
                    vals[i] = strtoll(line + strlen(fields[i].label), NULL, 10);
            if (strncmp(line, "Threads:", 8) == 0) threads = strtoll(line + 8, NULL, 10);
        }
        fclose(f);
        for (int i = 0; i < 4; i++)
            if (vals[i] >= 0) {
                osp_jw_key(w, fields[i].key);
                osp_jw_int(w, vals[i]);
            }
        if (threads >= 0) {
            osp_jw_key(w, "threads");
            osp_jw_int(w, threads);
        }
    }
    osp_jw_obj_close(w);
    int arenas = malloc_arenas();
    osp_jw_key(w, "mallocArenas");
    if (arenas >= 0) osp_jw_int(w, arenas); else osp_jw_null(w);
    const counters_t *k = &s->counters;
    osp_jw_key(w, "counters");
    osp_jw_obj_open(w);
    osp_jw_key(w, "inferJpeg"); osp_jw_int(w, k->infer_jpeg);
    osp_jw_key(w, "inferRaw"); osp_jw_int(w, k->infer_raw);
    osp_jw_key(w, "inferBatch"); osp_jw_int(w, k->infer_batch);
    osp_jw_key(w, "inferCached"); osp_jw_int(w, k->infer_cached);
    osp_jw_key(w, "commands"); osp_jw_int(w, k->commands);
    osp_jw_key(w, "framesCached"); osp_jw_int(w, k->frames_cached);
    osp_jw_key(w, "shedDeadlineExpired"); osp_jw_int(w, k->shed_deadline);
    osp_jw_key(w, "totalInference");
    osp_jw_int(w, k->infer_jpeg + k->infer_raw + k->infer_batch + k->infer_cached);
    osp_jw_key(w, "shedQueueFull"); osp_jw_int(w, k->shed_queue_full);
    osp_jw_key(w, "errors"); osp_jw_int(w, k->errors);
    osp_jw_key(w, "inferShm"); osp_jw_int(w, k->infer_shm);
    osp_jw_key(w, "framesParked"); osp_jw_int(w, s->frames_parked);
    osp_jw_key(w, "framesPreparedAsRead"); osp_jw_int(w, s->frames_prepared_as_read);
    osp_jw_key(w, "bytesRelayed"); osp_jw_int(w, s->bytes_relayed);
    osp_jw_obj_close(w);
    osp_jw_key(w, "backpressure");
    osp_jw_obj_open(w);
    for (int i = 0; i < s->nslots; i++) {
        if (!s->slots[i] && s->admit[i].running == 0 && s->admit[i].count == 0) continue;
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        osp_jw_key(w, key);
        osp_jw_obj_open(w);
        osp_jw_key(w, "running"); osp_jw_int(w, s->admit[i].running);
        osp_jw_key(w, "pending"); osp_jw_int(w, s->admit[i].count);
        osp_jw_obj_close(w);
    }
    osp_jw_obj_close(w);
    int loaded = 0;
    for (int i = 0; i < s->nslots; i++) loaded += s->slots[i] != NULL;
    osp_cache_stats_t cs;
    osp_cache_stats(s->cache, &cs);
    osp_jw_key(w, "modelsLoaded"); osp_jw_int(w, loaded);
    osp_jw_key(w, "frameCacheEntries"); osp_jw_int(w, cs.frames);
    osp_jw_key(w, "preprocessCacheEntries"); osp_jw_int(w, cs.tensors_frame);
    osp_jw_key(w, "benchPreprocessCacheEntries"); osp_jw_int(w, cs.tensors_bench);
    osp_jw_key(w, "uptimeSec"); osp_jw_int(w, ms_since(&s->started) / 1000);
    osp_jw_key(w, "threading");
    osp_jw_obj_open(w);
    osp_jw_key(w, "cores"); osp_jw_int(w, s->cores);
    osp_jw_key(w, "prepareWorkers"); osp_jw_int(w, s->workers);
    osp_jw_key(w, "predictWorkers"); osp_jw_int(w, s->workers);
    osp_jw_key(w, "intraOpThreads"); osp_jw_int(w, s->intra_threads);
    osp_jw_key(w, "loneFrameThreads"); osp_jw_int(w, s->lone_threads > 1 ? s->lone_threads : s->intra_threads);
    long lone_runs = 0;
    for (int i = 0; i < s->nslots; i++)
        if (s->slots[i]) lone_runs += atomic_load(&s->slots[i]->m->lone_runs);
    osp_jw_key(w, "loneRuns"); osp_jw_int(w, lone_runs);
    osp_jw_key(w, "predictNice"); osp_jw_int(w, s->predict_nice);
    osp_jw_key(w, "source"); osp_jw_str(w, s->threads_source);
    osp_jw_obj_close(w);
    osp_jw_key(w, "modelLoad");
    osp_jw_obj_open(w);
    osp_jw_key(w, "inFlight");
    if (s->load_busy) {
        osp_jw_obj_open(w);
        osp_jw_key(w, "index"); osp_jw_int(w, s->load_index);
        osp_jw_key(w, "modelId"); osp_jw_str(w, s->load_model_id);
        osp_jw_key(w, "elapsedMs"); osp_jw_int(w, ms_since(&s->load_started));
        osp_jw_obj_close(w);
    } else {
        osp_jw_null(w);
    }
    osp_jw_key(w, "poisonedBy");
    if (s->poisoned) {
        osp_jw_obj_open(w);
        osp_jw_key(w, "index"); osp_jw_int(w, s->poison_index);
        osp_jw_key(w, "modelId"); osp_jw_str(w, s->poison_model_id);
        osp_jw_key(w, "boundMs"); osp_jw_int(w, (int64_t)llround(s->load_bound_ms));
        osp_jw_key(w, "at"); osp_jw_int(w, s->poison_at_ms);
        osp_jw_obj_close(w);
    } else {
        osp_jw_null(w);
    }
    osp_jw_key(w, "boundMs"); osp_jw_int(w, (int64_t)llround(s->load_bound_ms));
    osp_jw_key(w, "completed"); osp_jw_int(w, s->loads_completed);
    osp_jw_key(w, "failed"); osp_jw_int(w, s->loads_failed);
    osp_jw_key(w, "timedOut"); osp_jw_int(w, s->loads_timed_out);
    osp_jw_key(w, "finishedLate"); osp_jw_int(w, s->loads_finished_late);
    osp_jw_obj_close(w);
    osp_jw_obj_close(w);
}

/* ---- commands ---------------------------------------------------------------------------------- */

void srv_on_command(server_t *s, conn_t *c, const osp_wire_request_t *rq) {
    cJSON *cmd = NULL;
    char err[OSP_WIRE_ERRLEN + 64];
    if (osp_wire_command_parse(rq->u.command.json, rq->u.command.len, &cmd, err, sizeof err)) {
        cmd_error(s, c->id, rq->req_id, "unknown", -1, err);
        return;
    }
    const char *name = cmd_name(cmd);
    if (strcmp(name, "mem_stats") == 0) {
        osp_jw_t w = {0};
        size_t at = osp_wire_reply_begin(&w);
        srv_write_mem_stats(s, &w);
        send_w(s, c->id, &w, at, rq->req_id);
        cJSON_Delete(cmd);
        return;
    }
    if (srv_shm_command(s, c, rq->req_id, name, cmd) ||
        srv_stream_command(s, c, rq->req_id, name, cmd)) {
        cJSON_Delete(cmd);
        return;
    }
    if (strcmp(name, "uncache_frame") == 0) {
        const cJSON *fid = cJSON_GetObjectItemCaseSensitive(cmd, "frameId");
        osp_jw_t w = {0};
        size_t at = osp_wire_reply_begin(&w);
        osp_jw_obj_open(&w);
        osp_jw_key(&w, "cmd"); osp_jw_str(&w, "uncache_frame");
        osp_jw_key(&w, "status"); osp_jw_str(&w, "ok");
        osp_jw_key(&w, "frameId");
        if (cJSON_IsNumber(fid) && fid->valuedouble >= 0 && fid->valuedouble <= 4294967295.0 &&
            fid->valuedouble == floor(fid->valuedouble)) {
            osp_cache_drop_frame(s->cache, (uint32_t)fid->valuedouble);
            osp_jw_int(&w, (int64_t)fid->valuedouble);
        } else if (fid) {
            char *txt = cJSON_PrintUnformatted(fid);
            osp_jw_raw(&w, txt ? txt : "null", txt ? strlen(txt) : 4);
            free(txt);
        } else {
            osp_jw_int(&w, -1);
        }
        osp_jw_obj_close(&w);
        send_w(s, c->id, &w, at, rq->req_id);
        cJSON_Delete(cmd);
        return;
    }
    cmdq_t *q = calloc(1, sizeof *q);
    if (!q) {
        cJSON_Delete(cmd);
        cmd_error(s, c->id, rq->req_id, name, -1, "out of memory");
        return;
    }
    q->conn_id = c->id;
    q->req_id = rq->req_id;
    q->cmd = cmd;
    if (s->cmd_tail)
        s->cmd_tail->next = q;
    else
        s->cmd_head = q;
    s->cmd_tail = q;
    process_commands(s);
}

/* ---- start-up ----------------------------------------------------------------------------------- */

/* An optional extension key of the startup config: a non-negative integer,
 * or -1 when absent or unusable. */
static int ext_int(const osp_wire_hello_t *h, const char *key) {
    const cJSON *v = h && h->root ? cJSON_GetObjectItemCaseSensitive(h->root, key) : NULL;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 256) return -1;
    return (int)v->valuedouble;
}

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
static void choose_threads(server_t *s, const osp_wire_hello_t *h, int test_runtime) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1) ncpu = 1;
    s->cores = (int)ncpu;
    int asked = h && h->concurrency > 1 ? h->concurrency : 1;
    const cJSON *ac = h && h->root ? cJSON_GetObjectItemCaseSensitive(h->root, "autoConcurrency") : NULL;
    int auto_raise = !test_runtime && !cJSON_IsFalse(ac);
    s->workers = asked;
    snprintf(s->threads_source, sizeof s->threads_source, "config");
    if (auto_raise && s->workers < ncpu) {
        s->workers = (int)ncpu;
        snprintf(s->threads_source, sizeof s->threads_source, "cores");
    }
    if (s->workers > 64) s->workers = 64;
    int intra = ext_int(h, "intraOpThreads");
    s->intra_threads = intra > 0 ? intra : (int)(ncpu / s->workers);
    if (s->intra_threads < 1) s->intra_threads = 1;
    int lone = ext_int(h, "loneFrameThreads");
    s->lone_threads = test_runtime ? 0 : lone >= 0 ? lone : (int)ncpu;
    if (s->lone_threads <= s->intra_threads) s->lone_threads = 0;
    int nice = ext_int(h, "predictNice");
    s->predict_nice = nice < 0 ? 3 : nice > 19 ? 19 : nice;
}

static int start_pools(server_t *s, const osp_wire_hello_t *h) {
    if (s->predict) return 0;
    choose_threads(s, h, h && h->runtime && strcmp(h->runtime, "test") == 0);
    const char *rt = h && h->runtime ? h->runtime : "onnxruntime";
    snprintf(s->runtime_name, sizeof s->runtime_name, "%s", rt);
    snprintf(s->device, sizeof s->device, "%s", h && h->device ? h->device : "");
    s->backend = osp_backend_find(strcmp(rt, "test") == 0 ? "test" : "onnxruntime");
    if (strcmp(rt, "coreml") == 0 && !s->device[0]) snprintf(s->device, sizeof s->device, "coreml");
    if (strcmp(rt, "test") != 0 && strcmp(rt, "onnxruntime") != 0 && strcmp(rt, "onnx") != 0 &&
        strcmp(rt, "coreml") != 0)
        fprintf(stderr, "ospreyd: runtime '%s' is not built in; serving with ONNX Runtime\n", rt);
    s->load_bound_ms = h ? h->model_load_timeout_ms : 120000.0;
    if (!(s->load_bound_ms > 0)) s->load_bound_ms = 120000.0;
    if (s->load_bound_ms > 1e12) s->load_bound_ms = 1e12;
    for (int i = 0; i < OSP_MAX_SLOTS; i++) osp_admit_init(&s->admit[i], s->workers, OSP_PENDING_MAX);
    s->batch_mode = h ? (int)h->batch_mode : OSP_WIRE_BATCH_NONE;
    s->window_ms = h ? h->window_ms : 0;
    s->max_batch = h ? h->max_batch_size : 1;
    s->prep_ws = calloc((size_t)s->workers, sizeof *s->prep_ws);
    s->pred_ws = calloc((size_t)s->workers, sizeof *s->pred_ws);
    if (!s->prep_ws || !s->pred_ws) {
        fprintf(stderr, "ospreyd: out of memory\n");
        return -1;
    }
    s->prepare = osp_pool_new("osp-prepare", s->workers, 0, exec_prepare, s);
    s->predict = osp_pool_new("osp-predict", s->workers, s->predict_nice, exec_predict, s);
    if (!s->prepare || !s->predict) {
        fprintf(stderr, "ospreyd: cannot start worker threads\n");
        return -1;
    }
    fprintf(stderr, "ospreyd: runtime %s on %d core(s): %d prepare + %d predict worker(s) (%s), "
                    "%d intra-op thread(s) per run (%d for a frame that runs alone), predict workers "
                    "nicer by %d, wire version up to %d\n",
            s->backend->name, s->cores, s->workers, s->workers,
            strcmp(s->threads_source, "cores") == 0 ? "raised to the core count" : "as configured",
            s->intra_threads, s->lone_threads > 1 ? s->lone_threads : s->intra_threads,
            s->predict_nice, OSP_WIRE_VERSION);
    return 0;
}

/* Startup models load before the ready reply (nothing is served before it);
 * one that fails leaves its slot empty. */
void srv_handshake_models(server_t *s, const cJSON *models, int *loaded, int *total) {
    *loaded = *total = 0;
    const cJSON *mc;
    int i = 0;
    cJSON_ArrayForEach(mc, models) {
        char err[600];
        osp_model_cfg_t cfg;
        grow_slots(s, i);
        (*total)++;
        if (s->slots[i] && cJSON_IsObject(mc)) {
            /* a socket connection naming a model another already loaded shares it */
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(mc, "path");
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(mc, "model");
            osp_model_cfg_t want;
            if (cfg_for(s, mc, &want, err, sizeof err) == 0 &&
                strcmp(want.path, s->slots[i]->config_path) == 0 && (p || n)) {
                (*loaded)++;
                i++;
                continue;
            }
        }
        osp_model_t *m = NULL;
        if (cfg_for(s, mc, &cfg, err, sizeof err) == 0) {
            fprintf(stderr, "ospreyd: loading model %d: %s\n", i, cfg.path);
            if (osp_model_open(&cfg, s->backend, &m, err, sizeof err) == 0) {
                loaded_t *l = wrap_model(m, &cfg);
                if (l) {
                    install(s, i, l);
                    (*loaded)++;
                } else {
                    osp_model_free(m);
                }
                i++;
                continue;
            }
        }
        fprintf(stderr, "ospreyd: model %d failed to load: %s\n", i, err);
        i++;
    }
}

static void send_ready(server_t *s, conn_t *c, uint32_t req_id, int loaded, int total,
                       int64_t startup_ms) {
    fprintf(stderr, "ospreyd: ready, %d/%d model(s) in %" PRId64 " ms (wire version %d)\n", loaded,
            total, startup_ms, c->version);
    osp_jw_t w = {0};
    size_t at = osp_wire_reply_begin(&w);
    osp_wire_ready_t r = {.models = loaded, .total = total, .startup_ms = startup_ms,
                          .runtime = s->runtime_name, .workers = s->workers,
                          .protocol_version = OSP_WIRE_VERSION};
    osp_wire_json_ready(&w, &r);
    send_w(s, c->id, &w, at, req_id);
}

static void plan_free(hello_plan_t *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) osp_model_free(p->m[i]);
    free(p->cfg);
    free(p->m);
    free(p);
}

typedef struct {
    server_t *s;
    uint32_t conn_id;
    hello_plan_t *plan;
} hello_arg_t;

static void *hello_main(void *arg) {
    hello_arg_t *a = arg;
    (void)pthread_setname_np(pthread_self(), "osp-hello");
    hello_plan_t *p = a->plan;
    for (int i = 0; i < p->n; i++) {
        char err[600];
        if (osp_model_open(&p->cfg[i], p->backend, &p->m[i], err, sizeof err))
            fprintf(stderr, "ospreyd: model %d failed to load: %s\n", p->index[i], err);
    }
    job_t *j = calloc(1, sizeof *j);
    if (j) {
        j->kind = JOB_HELLO_DONE;
        j->conn_id = a->conn_id;
        j->plan = p;
        osp_mailbox_post(&a->s->done, &j->q);
    } else {
        plan_free(p);
    }
    free(a);
    return NULL;
}

/* A socket connection's handshake: models already in their slots are shared;
 * empty slots are filled on a thread (the I/O thread keeps serving the other
 * connections) and the ready reply waits for them. A slot that holds a
 * different model is left alone: another host is using it ("replace"
 * changes it explicitly). */
static int hello_socket(server_t *s, conn_t *c, const cJSON *models, uint32_t req_id) {
    hello_plan_t *p = calloc(1, sizeof *p);
    int n = cJSON_GetArraySize(models);
    if (!p || !(p->cfg = calloc((size_t)(n ? n : 1), sizeof *p->cfg)) ||
        !(p->m = calloc((size_t)(n ? n : 1), sizeof *p->m))) {
        plan_free(p);
        return -1;
    }
    p->backend = s->backend;
    c->hello_loaded = c->hello_total = 0;
    const cJSON *mc;
    int i = 0;
    cJSON_ArrayForEach(mc, models) {
        char err[600];
        osp_model_cfg_t cfg;
        c->hello_total++;
        if (i >= OSP_MAX_SLOTS || cfg_for(s, mc, &cfg, err, sizeof err)) {
            fprintf(stderr, "ospreyd: model %d failed to load: %s\n", i, i >= OSP_MAX_SLOTS ? "too many models" : err);
        } else if (i < s->nslots && s->slots[i]) {
            if (strcmp(s->slots[i]->config_path, cfg.path) == 0)
                c->hello_loaded++;
            else
                fprintf(stderr, "ospreyd: model %d: slot holds %s, not %s; left as it is (use replace)\n",
                        i, s->slots[i]->config_path, cfg.path);
        } else {
            p->index[p->n] = i;
            p->cfg[p->n++] = cfg;
        }
        i++;
    }
    if (p->n == 0) {
        plan_free(p);
        send_ready(s, c, req_id, c->hello_loaded, c->hello_total, (int64_t)llround(srv_ms_since(&c->hello_t0)));
        return 0;
    }
    hello_arg_t *a = malloc(sizeof *a);
    pthread_attr_t attr;
    pthread_t t;
    if (!a) {
        plan_free(p);
        return -1;
    }
    *a = (hello_arg_t){s, c->id, p};
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, hello_main, a);
    pthread_attr_destroy(&attr);
    if (rc) {
        free(a);
        plan_free(p);
        return -1;
    }
    c->hello_req_id = req_id;
    s->jobs_inflight++; /* shutdown waits for it */
    c->inflight++;
    srv_conn_pause(s, c, 1);
    return 0;
}

void srv_hello_done(server_t *s, job_t *j) {
    hello_plan_t *p = j->plan;
    conn_t *c = srv_conn_find(s, j->conn_id);
    s->jobs_inflight--;
    for (int i = 0; i < p->n; i++) {
        int idx = p->index[i];
        if (!p->m[i]) continue;
        if (idx < s->nslots && s->slots[idx]) {
            /* another connection filled it meanwhile */
            if (c && strcmp(s->slots[idx]->config_path, p->cfg[i].path) == 0) c->hello_loaded++;
            continue;
        }
        loaded_t *l = wrap_model(p->m[i], &p->cfg[i]);
        if (!l) continue;
        p->m[i] = NULL;
        install(s, idx, l);
        if (c) c->hello_loaded++;
    }
    plan_free(p);
    free(j);
    if (!c) return;
    c->inflight--;
    send_ready(s, c, c->hello_req_id, c->hello_loaded, c->hello_total,
               (int64_t)llround(srv_ms_since(&c->hello_t0)));
    srv_conn_pause(s, c, 0);
}

void srv_on_hello(server_t *s, conn_t *c, const osp_wire_frame_t *f) {
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN + 64];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (osp_wire_hello_parse(f->msg_type, f->payload, f->payload_len, OSP_WIRE_VERSION, &h, err,
                             sizeof err)) {
        fprintf(stderr, "%s\n", err);
        c->fatal = 1; /* stdio: the process exits 1; a socket: that connection closes */
        return;
    }
    if (start_pools(s, &h)) {
        osp_wire_hello_free(&h);
        c->fatal = 1;
        return;
    }
    c->version = h.wire_version;
    c->handshaken = 1;
    c->hello_t0 = t0;
    if (!c->stdio) {
        if (hello_socket(s, c, h.models, f->req_id)) {
            fprintf(stderr, "ospreyd: out of memory in a handshake\n");
            c->fatal = 1;
        }
        osp_wire_hello_free(&h);
        return;
    }
    /* stdio: the models load before the ready reply, as the Python worker
     * did; nothing else is being served yet */
    int loaded = 0, total = 0;
    srv_handshake_models(s, h.models, &loaded, &total);
    send_ready(s, c, f->req_id, loaded, total, (int64_t)llround(srv_ms_since(&s->started)));
    osp_wire_hello_free(&h);
}

int srv_start(server_t *s) {
    if (!s->opts.config_path) return 0;
    /* socket mode with a config file: the pools and the preloaded models */
    FILE *f = fopen(s->opts.config_path, "rb");
    if (!f) {
        fprintf(stderr, "ospreyd: cannot read %s: %s\n", s->opts.config_path, strerror(errno));
        return 2;
    }
    static uint8_t buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN + 64];
    if (osp_wire_hello_parse(OSP_WIRE_MSG_COMMAND, buf, n, OSP_WIRE_VERSION, &h, err, sizeof err)) {
        fprintf(stderr, "ospreyd: %s: %s\n", s->opts.config_path, err);
        return 2;
    }
    int rc = start_pools(s, &h);
    int loaded = 0, total = 0;
    if (!rc) srv_handshake_models(s, h.models, &loaded, &total);
    fprintf(stderr, "ospreyd: %d/%d model(s) preloaded from %s\n", loaded, total, s->opts.config_path);
    osp_wire_hello_free(&h);
    return rc ? 1 : 0;
}

void srv_stop(server_t *s) {
    osp_pool_free(s->prepare);
    osp_pool_free(s->predict);
    s->prepare = s->predict = NULL;
    for (int i = 0; s->prep_ws && i < s->workers; i++) srv_wstate_free(&s->prep_ws[i]);
    for (int i = 0; s->pred_ws && i < s->workers; i++) srv_wstate_free(&s->pred_ws[i]);
    free(s->prep_ws);
    free(s->pred_ws);
    for (ctxnode_t *n = s->ctx_free, *next; n; n = next) {
        next = n->next;
        osp_infer_ctx_free(&n->ctx);
        free(n);
    }
    for (int i = 0; i < s->nslots; i++)
        if (s->slots[i]) srv_release_model(s, s->slots[i]);
    for (cmdq_t *q = s->cmd_head, *n; q; q = n) {
        n = q->next;
        cJSON_Delete(q->cmd);
        free(q);
    }
    srv_shm_free_all(s);
    srv_streams_free_all(s);
    srv_buf_free_all(s);
    osp_cache_free(s->cache);
    osp_mailbox_destroy(&s->done);
    close(s->epfd);
    if (s->sigfd >= 0) close(s->sigfd);
    free(s);
}
