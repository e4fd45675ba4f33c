/*
 * bench_util: helpers the benchmarks share (header only): a monotonic
 * clock, medians, and "the limit" of MEASURING.md — the raw ONNX Runtime
 * run loop on a pre-made input tensor, with nothing around it, as one
 * session with N intra-op threads or N single-thread sessions side by side.
 */
#ifndef OSP_BENCH_UTIL_H
#define OSP_BENCH_UTIL_H

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model/model.h"

/* seconds on the monotonic clock */
static inline double bu_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of the whole process so far (every thread) */
static inline double bu_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bu_cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n values (sorts v in place); 0 when n == 0. */
static inline double bu_median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, bu_cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Number of cores the limit is measured with: online CPUs, 1..8. */
static inline int bu_cores(void) {
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return ncpu > 1 ? (int)(ncpu > 8 ? 8 : ncpu) : 1;
}

typedef struct {
    osp_model_t *m;
    double seconds;
    long runs;
    const char *who;   /* program name for messages */
    const void *input; /* the input tensor to run (copied), or NULL for zeros */
    int batch;         /* frames stacked on the batch axis per run; 0 or 1: one */
    double *run_ms;    /* when set: the time of each run, up to max_runs of them */
    long max_runs;
} bu_loop_t;

/* The input of one run: `batch` stacked copies of `input` (one frame's
 * packed tensor; NULL: zeros). Free in->data after. 0, or -1 out of memory. */
static inline int bu_input(const osp_model_t *m, const void *input, int batch, osp_tensor_t *in) {
    if (batch < 1) batch = 1;
    size_t one = osp_prep_tensor_bytes(&m->prep), bytes = one * (size_t)batch;
    void *data = calloc(1, bytes);
    if (!data) return -1;
    if (input)
        for (int i = 0; i < batch; i++) memcpy((char *)data + one * (size_t)i, input, one);
    *in = (osp_tensor_t){.dtype = m->rt->inputs[0].dtype, .rank = 4, .data = data, .bytes = bytes};
    memcpy(in->dims, m->rt->inputs[0].dims, sizeof in->dims);
    in->dims[0] = batch;
    return 0;
}

/* One run on `in`: its time in ms, or -1 (reported on stderr) when it failed. */
static inline double bu_run_ms(const char *who, osp_model_t *m, const osp_tensor_t *in) {
    osp_tensor_t out[16];
    char err[256];
    memset(out, 0, sizeof out);
    double t = bu_now_s();
    if (osp_rt_run(m->rt, in, out, err, sizeof err)) {
        fprintf(stderr, "%s: %s\n", who, err);
        return -1;
    }
    t = bu_now_s() - t;
    osp_rt_release_outputs(m->rt, out);
    return t * 1e3;
}

/* The raw loop: the runtime on a pre-made input, nothing else. With batch
 * N > 1 the input is N copies of `input` stacked into one [N,…] tensor (the
 * model needs a dynamic batch axis) and each run counts N frames. */
static inline void *bu_raw_loop(void *arg) {
    bu_loop_t *l = arg;
    osp_tensor_t in;
    l->runs = 0;
    if (bu_input(l->m, l->input, l->batch, &in)) return NULL;
    for (int i = 0; i < 3; i++) /* warm-up */
        if (bu_run_ms(l->who, l->m, &in) < 0) break;
    double end = bu_now_s() + l->seconds;
    while (bu_now_s() < end) {
        double ms = bu_run_ms(l->who, l->m, &in);
        if (ms < 0) break;
        if (l->run_ms && l->runs < l->max_runs) l->run_ms[l->runs] = ms;
        l->runs++;
    }
    free(in.data);
    return NULL;
}

/* Set: bu_open_model keeps the library's per-load line off stderr (compact
 * benchmark output); a failure is still reported. Single-threaded use. */
static int bu_quiet_loads;
/* Set: sessions opened by bu_open_model let their helper threads sleep
 * between runs instead of spinning (as ospreyd's lone-frame session does). */
static int bu_no_spin;

/* A catalog model (or model file) with `threads` intra-op threads; exits on failure. */
static inline osp_model_t *bu_open_model(const char *who, const char *name, int threads) {
    osp_model_cfg_t cfg;
    char err[512];
    osp_model_t *m = NULL;
    if (osp_model_cfg_resolve(name, &cfg, err, sizeof err) == 0) {
        cfg.intra_threads = threads;
        cfg.no_spin = bu_no_spin;
        int saved = -1;
        if (bu_quiet_loads) {
            fflush(stderr);
            int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
            if (nul >= 0 && (saved = fcntl(2, F_DUPFD_CLOEXEC, 3)) >= 0) dup2(nul, 2);
            if (nul >= 0) close(nul);
        }
        int rc = osp_model_open(&cfg, NULL, &m, err, sizeof err);
        if (saved >= 0) {
            fflush(stderr);
            dup2(saved, 2);
            close(saved);
        }
        if (rc == 0) return m;
    }
    fprintf(stderr, "%s: %s\n", who, err);
    exit(1);
}

/* frames/s of `sessions` sessions with `threads` intra-op threads each,
 * side by side, for `seconds` after a warm-up, each run on `batch` stacked
 * copies of `input` (the model's packed input tensor for one frame; NULL:
 * zeros). *cpu_per_frame (may be NULL): CPU seconds of the process per frame
 * during the loops; *median_ms (may be NULL): the median time of one run of
 * the first session. */
static inline double bu_raw_fps_batch_ms(const char *who, const char *name, int sessions,
                                         int threads, double seconds, const void *input, int batch,
                                         double *cpu_per_frame, double *median_ms) {
    osp_model_t *ms[8];
    bu_loop_t loops[8];
    pthread_t th[8];
    if (sessions > 8) sessions = 8;
    if (batch < 1) batch = 1;
    for (int i = 0; i < sessions; i++) {
        ms[i] = bu_open_model(who, name, threads);
        loops[i] = (bu_loop_t){.m = ms[i], .seconds = seconds, .who = who, .input = input, .batch = batch};
    }
    if (median_ms) { /* the first session's runs */
        loops[0].max_runs = 1L << 16;
        loops[0].run_ms = malloc((size_t)loops[0].max_runs * sizeof(double));
    }
    /* the warm-up runs inside the threads; the CPU clock starts with them
     * and so counts it too (3 runs per session, small next to seconds) */
    double t0 = bu_now_s(), c0 = bu_cpu_s();
    for (int i = 0; i < sessions; i++) pthread_create(&th[i], NULL, bu_raw_loop, &loops[i]);
    long total = 0;
    for (int i = 0; i < sessions; i++) {
        pthread_join(th[i], NULL);
        total += loops[i].runs;
    }
    double el = bu_now_s() - t0, cpu = bu_cpu_s() - c0;
    for (int i = 0; i < sessions; i++) osp_model_free(ms[i]);
    if (median_ms) {
        long n = loops[0].runs < loops[0].max_runs ? loops[0].runs : loops[0].max_runs;
        *median_ms = loops[0].run_ms ? bu_median(loops[0].run_ms, (int)n) : 0;
        free(loops[0].run_ms);
    }
    if (cpu_per_frame)
        *cpu_per_frame = total > 0 ? cpu / (double)((total + 3 * sessions) * batch) : 0;
    return (double)(total * batch) / el;
}

/* The same without the median run time. */
static inline double bu_raw_fps_batch(const char *who, const char *name, int sessions, int threads,
                                      double seconds, const void *input, int batch,
                                      double *cpu_per_frame) {
    return bu_raw_fps_batch_ms(who, name, sessions, threads, seconds, input, batch, cpu_per_frame,
                               NULL);
}

/* The same, one frame per run. */
static inline double bu_raw_fps_input(const char *who, const char *name, int sessions, int threads,
                                      double seconds, const void *input, double *cpu_per_frame) {
    return bu_raw_fps_batch(who, name, sessions, threads, seconds, input, 1, cpu_per_frame);
}

/* The same on an all-zero input tensor. */
static inline double bu_raw_fps(const char *who, const char *name, int sessions, int threads,
                                double seconds, double *cpu_per_frame) {
    return bu_raw_fps_input(who, name, sessions, threads, seconds, NULL, cpu_per_frame);
}

#endif
