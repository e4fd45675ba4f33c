/* The server's counters and the mem_stats record; see stats.h. */
#include "server/core/stats.h"

#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "model/cascade.h"
#include "model/loader.h"
#include "sched/cache.h"
#include "base/clock.h"
#include "sched/sched.h"
#include "server/core/ledger.h"
#include "server/core/slots.h"
#include "log/log.h"

/* One model slot's counters. Frames are counted where they are answered
 * (mostly on the I/O thread, the workers' gate from the I/O thread too):
 * relaxed adds to memory no other model shares a line with often enough
 * to matter; readers sum them when scraped. */
typedef struct {
    _Atomic int64_t frames[SRV_OUT_COUNT];
    _Atomic int64_t buckets[SRV_STAGE_COUNT][SRV_HIST_BOUNDS + 1];
    _Atomic int64_t sum_us[SRV_STAGE_COUNT];
    _Atomic int running, pending;
} model_counts_t;

struct srv_stats {
    _Atomic int64_t v[SRV_ST_COUNT];
    model_counts_t m[OSP_MAX_SLOTS];
};

/* 1 ms to 1 s, dense where camera models answer (5-100 ms) */
const double srv_hist_bounds_s[SRV_HIST_BOUNDS] = {0.001, 0.002, 0.003, 0.005, 0.0075, 0.01,
                                                   0.015, 0.02,  0.03,  0.05,  0.075,  0.1,
                                                   0.15,  0.2,   0.3,   0.5,   0.75,   1.0};

srv_stats_t *srv_stats_new(void) { return calloc(1, sizeof(srv_stats_t)); }
void srv_stats_free(srv_stats_t *st) { free(st); }

void srv_stat_add(server_t *s, srv_stat_t which, int64_t n) {
    atomic_fetch_add_explicit(&s->stats->v[which], n, memory_order_relaxed);
}

int64_t srv_stat_get(const server_t *s, srv_stat_t which) {
    return atomic_load_explicit(&s->stats->v[which], memory_order_relaxed);
}

static model_counts_t *model_of(server_t *s, int idx) {
    return idx >= 0 && idx < OSP_MAX_SLOTS ? &s->stats->m[idx] : NULL;
}

void srv_stat_frames(server_t *s, int idx, srv_frame_out_t out, int64_t n) {
    model_counts_t *m = model_of(s, idx);
    if (m) atomic_fetch_add_explicit(&m->frames[out], n, memory_order_relaxed);
}

void srv_stat_duration(server_t *s, int idx, srv_stage_t stage, double ms) {
    model_counts_t *m = model_of(s, idx);
    if (!m) return;
    if (!(ms > 0)) ms = 0;
    double sec = ms / 1000.0;
    int b = 0;
    while (b < SRV_HIST_BOUNDS && sec > srv_hist_bounds_s[b]) b++;
    atomic_fetch_add_explicit(&m->buckets[stage][b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_us[stage], (int64_t)llround(ms * 1000.0), memory_order_relaxed);
}

void srv_stat_depth(server_t *s, int idx) {
    model_counts_t *m = model_of(s, idx);
    if (!m || !s->sched) return;
    int running, pending;
    osp_sched_depth(s->sched, idx, &running, &pending);
    atomic_store_explicit(&m->running, running, memory_order_relaxed);
    atomic_store_explicit(&m->pending, pending, memory_order_relaxed);
}

void srv_stats_model(srv_stats_t *st, int idx, srv_model_counts_t *out) {
    memset(out, 0, sizeof *out);
    if (idx < 0 || idx >= OSP_MAX_SLOTS) return;
    model_counts_t *m = &st->m[idx];
    for (int o = 0; o < SRV_OUT_COUNT; o++)
        out->frames[o] = atomic_load_explicit(&m->frames[o], memory_order_relaxed);
    for (int g = 0; g < SRV_STAGE_COUNT; g++) {
        for (int b = 0; b <= SRV_HIST_BOUNDS; b++)
            out->buckets[g][b] = atomic_load_explicit(&m->buckets[g][b], memory_order_relaxed);
        out->sum_s[g] = (double)atomic_load_explicit(&m->sum_us[g], memory_order_relaxed) / 1e6;
    }
    out->running = atomic_load_explicit(&m->running, memory_order_relaxed);
    out->pending = atomic_load_explicit(&m->pending, memory_order_relaxed);
}

void srv_stat_shed_deadline(server_t *s, int idx, uint64_t deadline_ms, int64_t n) {
    srv_stat_frames(s, idx, SRV_OUT_EXPIRED, n);
    int64_t before = atomic_fetch_add_explicit(&s->stats->v[SRV_ST_SHED_DEADLINE], n,
                                               memory_order_relaxed);
    int64_t total = before + n;
    if (before == 0 || total / 500 != before / 500)
        osp_log(OSP_LOG_WARN,
                "ospreyd: shed %" PRId64
                " request(s) past their deadline so far (model %d, %" PRId64 " ms late)",
                total, idx, osp_epoch_ms() - (int64_t)deadline_ms);
}

void srv_stat_shed_queue(server_t *s, int idx, int64_t n) {
    srv_stat_frames(s, idx, SRV_OUT_SHED, n);
    int64_t before = atomic_fetch_add_explicit(&s->stats->v[SRV_ST_SHED_QUEUE_FULL], n,
                                               memory_order_relaxed);
    int64_t total = before + n;
    if (before == 0 || total / 500 != before / 500)
        osp_log(OSP_LOG_WARN,
                "ospreyd: shed %" PRId64
                " queued frame(s) under overload so far (model %d: drop-oldest)",
                total, idx);
}

/* jemalloc's control entry, defined when jemalloc serves malloc (ospreyd
 * is linked with it): glibc's arenas then hold nothing worth counting */
extern int mallctl(const char *name, void *old, size_t *oldlen, void *new_value, size_t newlen)
    __attribute__((weak));

static int malloc_arenas(void) {
    if (mallctl) return -1;
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

static void put_memory(osp_jw_t *w) {
    osp_jw_key(w, "memory");
    osp_jw_obj_open(w);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        osp_jw_key(w, "maxRssKb");
        osp_jw_int(w, ru.ru_maxrss);
    }
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        static const struct {
            const char *label, *key;
        } fields[] = {{"VmRSS:", "rssKb"},
                      {"VmSize:", "vmKb"},
                      {"VmHWM:", "hwmKb"},
                      {"VmSwap:", "swapKb"}};
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
    if (arenas >= 0)
        osp_jw_int(w, arenas);
    else
        osp_jw_null(w);
}

static void put_counters(const server_t *s, osp_jw_t *w) {
#define K(name, which)   \
    osp_jw_key(w, name); \
    osp_jw_int(w, srv_stat_get(s, which))
    osp_jw_key(w, "counters");
    osp_jw_obj_open(w);
    K("inferJpeg", SRV_ST_INFER_JPEG);
    K("inferRaw", SRV_ST_INFER_RAW);
    K("inferBatch", SRV_ST_INFER_BATCH);
    K("inferCached", SRV_ST_INFER_CACHED);
    K("commands", SRV_ST_COMMANDS);
    K("framesCached", SRV_ST_FRAMES_CACHED);
    K("shedDeadlineExpired", SRV_ST_SHED_DEADLINE);
    osp_jw_key(w, "totalInference");
    osp_jw_int(w, srv_stat_get(s, SRV_ST_INFER_JPEG) + srv_stat_get(s, SRV_ST_INFER_RAW) +
                      srv_stat_get(s, SRV_ST_INFER_BATCH) + srv_stat_get(s, SRV_ST_INFER_CACHED));
    K("shedQueueFull", SRV_ST_SHED_QUEUE_FULL);
    K("errors", SRV_ST_ERRORS);
    K("inferShm", SRV_ST_INFER_SHM);
    K("framesParked", SRV_ST_FRAMES_PARKED);
    K("framesPreparedAsRead", SRV_ST_PREPARED_AS_READ);
    K("framesSkipped", SRV_ST_FRAMES_SKIPPED);
    K("bytesRelayed", SRV_ST_BYTES_RELAYED);
    K("inferZmq", SRV_ST_INFER_ZMQ);
    K("runsAbandoned", SRV_ST_RUNS_ABANDONED);
    K("jobsClaimed", SRV_ST_JOBS_CLAIMED);
    K("jobsReclaimed", SRV_ST_JOBS_RECLAIMED);
    K("jobsServed", SRV_ST_JOBS_SERVED);
    K("jobsDropped", SRV_ST_JOBS_DROPPED);
    K("jobsFailed", SRV_ST_JOBS_FAILED);
    K("jobsDeduplicated", SRV_ST_JOBS_DEDUPLICATED);
    K("jobsPoisoned", SRV_ST_JOBS_POISONED);
    osp_jw_obj_close(w);
#undef K
}

static void put_load_info(osp_jw_t *w, const osp_load_info_t *in, int poisoned, double bound_ms) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "index");
    osp_jw_int(w, in->index);
    osp_jw_key(w, "modelId");
    osp_jw_str(w, in->model_id);
    if (poisoned) {
        osp_jw_key(w, "boundMs");
        osp_jw_int(w, (int64_t)llround(bound_ms));
        osp_jw_key(w, "at");
        osp_jw_int(w, in->at_ms);
    } else {
        osp_jw_key(w, "elapsedMs");
        osp_jw_int(w, (int64_t)llround(in->elapsed_ms));
    }
    osp_jw_obj_close(w);
}

static void put_model_load(const server_t *s, osp_jw_t *w) {
    osp_load_info_t in;
    double bound = s->loader ? osp_loader_bound_ms(s->loader) : s->set.load_bound_ms;
    osp_jw_key(w, "modelLoad");
    osp_jw_obj_open(w);
    osp_jw_key(w, "inFlight");
    if (s->loader && osp_loader_in_flight(s->loader, &in))
        put_load_info(w, &in, 0, bound);
    else
        osp_jw_null(w);
    osp_jw_key(w, "poisonedBy");
    if (s->loader && osp_loader_poisoned(s->loader, &in))
        put_load_info(w, &in, 1, bound);
    else
        osp_jw_null(w);
    osp_loader_counts_t c = {0};
    if (s->loader) osp_loader_counts(s->loader, &c);
    osp_jw_key(w, "boundMs");
    osp_jw_int(w, (int64_t)llround(bound));
    osp_jw_key(w, "completed");
    osp_jw_int(w, c.completed);
    osp_jw_key(w, "failed");
    osp_jw_int(w, c.failed);
    osp_jw_key(w, "timedOut");
    osp_jw_int(w, c.timed_out);
    osp_jw_key(w, "finishedLate");
    osp_jw_int(w, c.finished_late);
    osp_jw_obj_close(w);
}

/* "cascades": each loaded model's cascade steps, what they ran and skipped
 * (model/cascade.h); left out while no loaded model has one. */
static void put_cascades(const server_t *s, osp_jw_t *w) {
    int n = srv_slots_count(s), any = 0;
    for (int i = 0; i < n; i++) {
        const osp_model_t *m = srv_slot(s, i) ? srv_loaded_model(srv_slot(s, i)) : NULL;
        if (!m || !m->then) continue;
        if (!any++) {
            osp_jw_key(w, "cascades");
            osp_jw_obj_open(w);
        }
        osp_cascade_count_t c[OSP_CASCADE_STEPS];
        int steps = osp_cascade_counts(m->then, c, OSP_CASCADE_STEPS);
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        osp_jw_key(w, key);
        osp_jw_arr_open(w);
        for (int k = 0; k < steps && k < OSP_CASCADE_STEPS; k++) {
            osp_jw_obj_open(w);
            osp_jw_key(w, "step");
            osp_jw_str(w, c[k].model);
            osp_jw_key(w, "depth");
            osp_jw_int(w, c[k].depth);
            osp_jw_key(w, "runs");
            osp_jw_int(w, c[k].runs);
            osp_jw_key(w, "skippedPastDeadline");
            osp_jw_int(w, c[k].skipped);
            osp_jw_obj_close(w);
        }
        osp_jw_arr_close(w);
    }
    if (any) osp_jw_obj_close(w);
}

void srv_write_mem_stats(server_t *s, osp_jw_t *w) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd");
    osp_jw_str(w, "mem_stats");
    osp_jw_key(w, "status");
    osp_jw_str(w, "ok");
    put_memory(w);
    put_counters(s, w);
    int n = srv_slots_count(s);
    osp_jw_key(w, "backpressure");
    osp_jw_obj_open(w);
    for (int i = 0; i < n; i++) {
        int running, pending;
        osp_sched_depth(s->sched, i, &running, &pending);
        if (!srv_slot(s, i) && running == 0 && pending == 0) continue;
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        osp_jw_key(w, key);
        osp_jw_obj_open(w);
        osp_jw_key(w, "running");
        osp_jw_int(w, running);
        osp_jw_key(w, "pending");
        osp_jw_int(w, pending);
        osp_jw_obj_close(w);
    }
    osp_jw_obj_close(w);
    osp_cache_stats_t cs;
    osp_cache_stats(s->cache, &cs);
    osp_jw_key(w, "modelsLoaded");
    osp_jw_int(w, srv_slots_loaded(s));
    osp_jw_key(w, "frameCacheEntries");
    osp_jw_int(w, cs.frames);
    osp_jw_key(w, "preprocessCacheEntries");
    osp_jw_int(w, cs.tensors_frame);
    osp_jw_key(w, "benchPreprocessCacheEntries");
    osp_jw_int(w, cs.tensors_bench);
    osp_jw_key(w, "uptimeSec");
    osp_jw_int(w, (int64_t)llround(osp_ms_since(&s->started)) / 1000);
    const srv_settings_t *t = &s->set;
    osp_jw_key(w, "threading");
    osp_jw_obj_open(w);
    osp_jw_key(w, "cores");
    osp_jw_int(w, t->cores);
    osp_jw_key(w, "prepareWorkers");
    osp_jw_int(w, t->workers);
    osp_jw_key(w, "predictWorkers");
    osp_jw_int(w, t->workers);
    osp_jw_key(w, "intraOpThreads");
    osp_jw_int(w, t->intra_threads);
    osp_jw_key(w, "loneFrameThreads");
    osp_jw_int(w, t->lone_threads > 1 ? t->lone_threads : t->intra_threads);
    long lone_runs = 0;
    for (int i = 0; i < n; i++)
        if (srv_slot(s, i)) lone_runs += atomic_load(&srv_loaded_model(srv_slot(s, i))->lone_runs);
    osp_jw_key(w, "loneRuns");
    osp_jw_int(w, lone_runs);
    osp_jw_key(w, "predictNice");
    osp_jw_int(w, t->predict_nice);
    osp_jw_key(w, "source");
    osp_jw_str(w, t->threads_source);
    osp_jw_obj_close(w);
    put_model_load(s, w);
    put_cascades(s, w);
    osp_jw_key(w, "requests"); /* last: the seed's keys keep their order */
    srv_ledger_write(s->ledger, w);
    osp_jw_obj_close(w);
}
