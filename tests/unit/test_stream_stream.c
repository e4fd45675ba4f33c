/* The streaming scorer (src/stream/stream.c) driven by test scoring
 * functions: running means against a straight recomputation, the window
 * bound, no padding, ages, stop, in-order stride with skips, reset, chaining,
 * a never-stopped scorer at exit, and a slow model on a 30 fps producer. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <malloc.h>

#include <cmocka.h>

#include "stream/stream.h"

#define MAX_LOG 8192

/* A test scoring function. out[k][c] = frame k's first float * (c + 1) +
 * 0.001 * (last % 97): windows that overlap give a frame different values,
 * so a mean differs from any single window. Every call is logged. */
typedef struct {
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;
    int gate; /* 1: each call waits until the test releases it */
    int entered, released;
    int delay_ms;
    int fail_every; /* calls N, 2N, ... fail */
    int calls, resets, reset_before[MAX_LOG];
    int n; /* windows logged */
    osp_stream_span_t spans[MAX_LOG];
    float *outs; /* MAX_LOG * out_len */
    int out_len;
    int noncontiguous; /* windows whose frames were not first..last in order */
    volatile int dead; /* at-exit test: the context was torn down */
} tfn_t;

static void tfn_init(tfn_t *t, int out_len) {
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->out_len = out_len;
    t->outs = calloc((size_t)MAX_LOG * (size_t)out_len, sizeof(float));
    assert_non_null(t->outs);
}

static void tfn_fini(tfn_t *t) {
    free(t->outs);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static int tfn_score(void *ctx, const float *frames, int n_frames, int frame_len,
                     const osp_stream_span_t *span, float *out, int out_len, char *err,
                     size_t errlen) {
    tfn_t *t = ctx;
    pthread_mutex_lock(&t->mu);
    int call = ++t->calls;
    int idx = t->n;
    t->entered++;
    pthread_cond_broadcast(&t->cv);
    while (t->gate && t->released < t->entered) pthread_cond_wait(&t->cv, &t->mu);
    int delay = t->delay_ms, fail = t->fail_every > 0 && call % t->fail_every == 0;
    pthread_mutex_unlock(&t->mu);
    if (delay) sleep_ms(delay);
    if (t->dead) abort(); /* ran after the process began tearing down */
    int contiguous = n_frames == span->last - span->first + 1;
    for (int k = 0; k < n_frames && contiguous; k++)
        if (frames[(size_t)k * frame_len] != (float)(span->first + k)) contiguous = 0;
    int ch = out_len >= n_frames && out_len % n_frames == 0 ? out_len / n_frames : out_len;
    int per_frame = ch * n_frames == out_len;
    for (int i = 0; i < out_len; i++) {
        int k = per_frame ? i / ch : n_frames - 1, c = per_frame ? i % ch : i;
        out[i] = frames[(size_t)k * frame_len] * (float)(c + 1) + 0.001f * (float)(span->last % 97);
    }
    pthread_mutex_lock(&t->mu);
    if (!contiguous) t->noncontiguous++;
    if (idx < MAX_LOG && !fail) {
        t->spans[idx] = *span;
        memcpy(t->outs + (size_t)idx * t->out_len, out, (size_t)out_len * sizeof(float));
        t->n = idx + 1;
    }
    pthread_mutex_unlock(&t->mu);
    if (fail) {
        snprintf(err, errlen, "scripted failure of call %d", call);
        return -1;
    }
    return 0;
}

static void tfn_reset(void *ctx) {
    tfn_t *t = ctx;
    pthread_mutex_lock(&t->mu);
    t->resets++;
    if (t->calls < MAX_LOG) t->reset_before[t->calls] = 1; /* before call calls+1 */
    pthread_mutex_unlock(&t->mu);
}

static osp_stream_fn_t tfn(tfn_t *t) {
    return (osp_stream_fn_t){.score = tfn_score, .reset = tfn_reset, .ctx = t};
}

/* Wait until the function has been entered `n` times (gated runs). */
static void wait_entered(tfn_t *t, int n) {
    pthread_mutex_lock(&t->mu);
    while (t->entered < n) pthread_cond_wait(&t->cv, &t->mu);
    pthread_mutex_unlock(&t->mu);
}

static void release(tfn_t *t, int n) {
    pthread_mutex_lock(&t->mu);
    t->released += n;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void release_all(tfn_t *t) {
    pthread_mutex_lock(&t->mu);
    t->gate = 0;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static osp_stream_t *make(const osp_stream_config_t *cfg, tfn_t *t) {
    osp_stream_t *s = NULL;
    char err[256];
    osp_stream_fn_t fn = tfn(t);
    assert_int_equal(osp_stream_new(cfg, &fn, &s, err, sizeof err), 0);
    return s;
}

static void push_index(osp_stream_t *s, int flen, int64_t i) {
    float f[8] = {0};
    f[0] = (float)i;
    for (int k = 1; k < flen && k < 8; k++) f[k] = (float)k;
    assert_int_equal(osp_stream_push(s, f), 0);
}

/* The mean of every logged window's value for frame f, straight. */
static int straight_mean(tfn_t *t, int window, int ch, int64_t f, double *mean) {
    int count = 0;
    for (int c = 0; c < ch; c++) mean[c] = 0;
    for (int i = 0; i < t->n; i++) {
        const osp_stream_span_t *sp = &t->spans[i];
        if (f < sp->first || f > sp->last) continue;
        const float *row = t->outs + (size_t)i * t->out_len + (size_t)(f - sp->first) * ch;
        for (int c = 0; c < ch; c++) mean[c] += row[c];
        count++;
    }
    (void)window;
    for (int c = 0; c < ch; c++)
        if (count) mean[c] /= count;
    return count;
}

/* ---- running means, the window bound, no padding --------------------------- */

static void test_mean_equals_recomputation(void **state) {
    (void)state;
    enum { W = 5, CH = 2, FLEN = 3 };
    tfn_t t;
    tfn_init(&t, W * CH);
    osp_stream_config_t cfg = {.frame_len = FLEN, .window = W, .channels = CH, .per_frame = true};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    unsigned seed = 7;
    int64_t pushed = 0;
    int checks = 0;
    for (int round = 0; round < 300; round++) {
        int k = 1 + (int)(rand_r(&seed) % 3); /* 1..3 frames between windows: overlaps vary */
        for (int i = 0; i < k; i++) push_index(s, FLEN, pushed++);
        if (osp_stream_drain(s, 10000) != 0) fail_msg("drain timed out");
        osp_stream_reading_t r;
        osp_stream_latest(s, &r);
        if (pushed < W) {
            assert_true(r.warming_up);
            continue;
        }
        assert_false(r.warming_up);
        assert_int_equal(r.frame_index, pushed - 1); /* drained: the newest window */
        assert_int_equal(r.age_frames, 0);
        pthread_mutex_lock(&t.mu);
        /* every frame the newest window covers: the scorer's mean = straight mean */
        for (int64_t f = pushed - W; f < pushed; f++) {
            double want[CH];
            int n = straight_mean(&t, W, CH, f, want);
            float got[CH];
            int got_n = 0;
            assert_int_equal(osp_stream_frame_mean(s, f, got, &got_n), 0);
            assert_int_equal(got_n, n);
            for (int c = 0; c < CH; c++) assert_float_equal(got[c], (float)want[c], 1e-5f);
            if (f == pushed - 1)
                for (int c = 0; c < CH; c++)
                    assert_float_equal(r.scores[c], (float)want[c], 1e-5f);
            checks++;
        }
        /* entries older than the newest window are gone */
        float dummy[CH];
        for (int64_t f = pushed - W - 4; f < pushed - W; f++)
            if (f >= 0)
                assert_int_equal(osp_stream_frame_mean(s, f, dummy, NULL), OSP_STREAM_ENOENT);
        assert_int_equal(osp_stream_frame_mean(s, pushed, dummy, NULL), OSP_STREAM_ENOENT);
        pthread_mutex_unlock(&t.mu);
    }
    assert_true(checks > 1000);
    assert_int_equal(t.noncontiguous, 0);
    osp_stream_free(s);
    tfn_fini(&t);
}

static void test_no_padding(void **state) {
    (void)state;
    enum { W = 6 };
    tfn_t t;
    tfn_init(&t, W);
    osp_stream_config_t cfg = {.frame_len = 1, .window = W, .channels = 1, .per_frame = true};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    for (int i = 0; i < W - 1; i++) push_index(s, 1, i);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    osp_stream_reading_t r;
    osp_stream_latest(s, &r);
    assert_true(r.warming_up);
    assert_int_equal(r.frame_index, -1);
    assert_int_equal(r.windows_completed, 0);
    assert_int_equal(r.pushed, W - 1);
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.calls, 0); /* a short buffer is never scored */
    pthread_mutex_unlock(&t.mu);
    push_index(s, 1, W - 1);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    osp_stream_latest(s, &r);
    assert_false(r.warming_up);
    assert_int_equal(r.windows_completed, 1);
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.calls, 1);
    assert_int_equal(t.spans[0].first, 0);
    assert_int_equal(t.spans[0].last, W - 1);
    pthread_mutex_unlock(&t.mu);
    osp_stream_free(s);
    tfn_fini(&t);
}

/* ---- newest window and age, step by step ------------------------------------ */

static void test_newest_window_and_age(void **state) {
    (void)state;
    enum { W = 4 };
    tfn_t t;
    tfn_init(&t, 1);
    t.gate = 1;
    osp_stream_config_t cfg = {.frame_len = 1, .window = W, .channels = 1};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    for (int i = 0; i < W; i++) push_index(s, 1, i);
    wait_entered(&t, 1); /* the worker holds window 0..3 */
    for (int i = W; i < W + 7; i++) push_index(s, 1, i);
    osp_stream_reading_t r;
    osp_stream_latest(s, &r);
    assert_true(r.warming_up);
    assert_int_equal(r.age_frames, 0);
    release(&t, 1);
    wait_entered(&t, 2); /* next: the NEWEST window, 7..10, not 1..4 */
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.spans[0].last, W - 1);
    pthread_mutex_unlock(&t.mu);
    osp_stream_latest(s, &r);
    assert_false(r.warming_up);
    assert_int_equal(r.frame_index, W - 1);
    assert_int_equal(r.age_frames, 7);
    assert_int_equal(r.windows_completed, 1);
    for (int i = W + 7; i < W + 10; i++) push_index(s, 1, i);
    osp_stream_latest(s, &r);
    assert_int_equal(r.frame_index, W - 1); /* newer frames keep the old value */
    assert_int_equal(r.age_frames, 10);
    assert_float_equal(r.scores[0], (float)(W - 1) + 0.001f * (float)(W - 1), 1e-6f);
    release(&t, 1);
    wait_entered(&t, 3);
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.spans[1].first, W + 3);
    assert_int_equal(t.spans[1].last, W + 6);
    assert_int_equal(t.spans[1].newest_pushed, W + 6);
    assert_int_equal(t.n, 2);
    pthread_mutex_unlock(&t.mu);
    osp_stream_latest(s, &r);
    assert_int_equal(r.frame_index, W + 6);
    assert_int_equal(r.age_frames, 3);
    assert_int_equal(r.pushed, W + 10);
    release_all(&t);
    assert_int_equal(osp_stream_stop(s), 0);
    osp_stream_free(s);
    tfn_fini(&t);
}

/* ---- stop ---------------------------------------------------------------- */

static void test_stop_semantics(void **state) {
    (void)state;
    tfn_t t;
    tfn_init(&t, 1);
    char err[256];
    osp_stream_config_t cfg = {.frame_len = 1, .window = 3, .channels = 1};
    /* never started: stop is fine, twice */
    osp_stream_t *s = make(&cfg, &t);
    assert_int_equal(osp_stream_stop(s), 0);
    assert_int_equal(osp_stream_stop(s), 0);
    assert_int_equal(osp_stream_start(s, err, sizeof err), OSP_STREAM_EINVAL);
    float f = 0;
    assert_int_equal(osp_stream_push(s, &f), OSP_STREAM_ESTOPPED);
    osp_stream_free(s);
    /* started, with frames: twice, then free */
    s = make(&cfg, &t);
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0); /* idempotent */
    for (int i = 0; i < 10; i++) push_index(s, 1, i);
    assert_int_equal(osp_stream_stop(s), 0);
    assert_int_equal(osp_stream_stop(s), 0);
    assert_int_equal(osp_stream_push(s, &f), OSP_STREAM_ESTOPPED);
    osp_stream_free(s);
    osp_stream_free(NULL);
    /* frame-wise: nothing to join */
    osp_stream_config_t inl = {.frame_len = 1, .window = 0, .channels = 1};
    s = make(&inl, &t);
    assert_int_equal(osp_stream_stop(s), 0);
    assert_int_equal(osp_stream_stop(s), 0);
    osp_stream_free(s);
    tfn_fini(&t);
}

/* A callback that hangs: stop returns within its bound, and free hands the
 * memory to the worker, which releases it once the callback returns. */
static void test_stop_bound_with_hung_callback(void **state) {
    (void)state;
    static tfn_t t; /* outlives the detached worker's last touch of it */
    tfn_init(&t, 1);
    t.gate = 1;
    char err[256];
    osp_stream_config_t cfg = {.frame_len = 1, .window = 2, .channels = 1, .join_timeout_ms = 100};
    osp_stream_t *s = make(&cfg, &t);
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    push_index(s, 1, 0);
    push_index(s, 1, 1);
    wait_entered(&t, 1);
    assert_int_equal(osp_stream_stop(s), OSP_STREAM_ETIMEDOUT);
    assert_int_equal(osp_stream_stop(s), OSP_STREAM_ETIMEDOUT); /* still hung: same answer */
    osp_stream_free(s);
    release_all(&t);
    sleep_ms(200); /* let the worker finish freeing before the leak checker looks */
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.n, 1); /* the callback finished; its result was discarded */
    pthread_mutex_unlock(&t.mu);
}

/* ---- memory bound ---------------------------------------------------------- */

static void test_million_pushes_bounded(void **state) {
    (void)state;
    enum { W = 16, FLEN = 4 };
    tfn_t t;
    tfn_init(&t, W);
    osp_stream_config_t cfg = {.frame_len = FLEN, .window = W, .channels = 1, .per_frame = true};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    size_t before = osp_stream_footprint(s);
    assert_true(before < sizeof(float) * W * FLEN * 4 + 8192);
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    for (int i = 0; i < 1000; i++) push_index(s, FLEN, i); /* warm the allocator */
    struct mallinfo2 m0 = mallinfo2();
    for (int64_t i = 1000; i < 1000000; i++) push_index(s, FLEN, i);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    struct mallinfo2 m1 = mallinfo2();
    osp_stream_reading_t r;
    osp_stream_latest(s, &r);
    assert_int_equal(r.pushed, 1000000);
    assert_int_equal(r.frame_index, 999999);
    assert_int_equal(osp_stream_footprint(s), before);
    /* the heap did not grow with the stream (only the test's fixed log) */
    assert_true(m1.uordblks <= m0.uordblks + 64 * 1024);
    float mean[1];
    assert_int_equal(osp_stream_frame_mean(s, 999999 - W, mean, NULL), OSP_STREAM_ENOENT);
    assert_int_equal(osp_stream_frame_mean(s, 999999 - W + 1, mean, NULL), 0);
    print_message("1e6 pushes: %lld windows scored, footprint %zu bytes\n",
                  (long long)r.windows_completed, before);
    osp_stream_free(s);
    tfn_fini(&t);
}

/* ---- frame-wise, failures, stride, reset ------------------------------------ */

static void test_framewise_inline_and_failures(void **state) {
    (void)state;
    tfn_t t;
    tfn_init(&t, 2);
    t.fail_every = 3;
    osp_stream_config_t cfg = {.frame_len = 2, .window = 0, .channels = 2};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    osp_stream_reading_t r;
    for (int i = 0; i < 10; i++) {
        push_index(s, 2, i);
        osp_stream_latest(s, &r);
        int failed = (i + 1) % 3 == 0;
        int64_t want = failed ? i - 1 : i; /* a failed frame keeps the previous reading */
        assert_int_equal(r.frame_index, want);
        assert_int_equal(r.age_frames, i - want);
        assert_float_equal(r.scores[1], 2.0f * (float)want + 0.001f * (float)(want % 97), 1e-5f);
    }
    assert_int_equal(r.failures, 3);
    assert_int_equal(r.windows_completed, 7);
    osp_stream_free(s);
    tfn_fini(&t);
}

static void test_windowed_failure_counts_and_goes_on(void **state) {
    (void)state;
    tfn_t t;
    tfn_init(&t, 1);
    t.fail_every = 2;
    osp_stream_config_t cfg = {.frame_len = 1, .window = 3, .stride = 1, .backlog = 64, .channels = 1};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    for (int i = 0; i < 12; i++) push_index(s, 1, i);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    osp_stream_reading_t r;
    osp_stream_latest(s, &r);
    assert_int_equal(r.windows_completed + r.failures, 10); /* windows ending 2..11 */
    assert_int_equal(r.failures, 5);
    assert_int_equal(r.skipped, 0);
    assert_int_equal(r.frame_index, 10); /* window 11 was call 10: failed */
    osp_stream_free(s);
    tfn_fini(&t);
}

static void test_stride_in_order_and_skips(void **state) {
    (void)state;
    enum { W = 4, S = 2, BACKLOG = 3 };
    tfn_t t;
    tfn_init(&t, 1);
    osp_stream_config_t cfg = {.frame_len = 1, .window = W, .stride = S, .backlog = BACKLOG, .channels = 1};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    for (int i = 0; i < 11; i++) { /* paced: the worker keeps up */
        push_index(s, 1, i);
        assert_int_equal(osp_stream_drain(s, 10000), 0);
    }
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.n, 4); /* ends 3, 5, 7, 9: in order, every aligned window */
    for (int i = 0; i < t.n; i++) assert_int_equal(t.spans[i].last, W - 1 + S * i);
    t.gate = 1;
    t.released = t.entered;
    pthread_mutex_unlock(&t.mu);
    push_index(s, 1, 11); /* window 8..11: the worker takes it and waits */
    wait_entered(&t, 5);
    for (int i = 12; i < 30; i++) push_index(s, 1, i); /* far past the ring (4 + 2*3) */
    release_all(&t);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    osp_stream_reading_t r;
    osp_stream_latest(s, &r);
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.spans[4].last, 11);
    assert_int_equal(t.spans[5].last, 29); /* jumped to the newest aligned window */
    assert_int_equal(t.n, 6);
    assert_int_equal(t.noncontiguous, 0);
    pthread_mutex_unlock(&t.mu);
    assert_int_equal(r.skipped, (29 - 13) / S); /* 13, 15, ..., 27 */
    assert_int_equal(r.frame_index, 29);
    /* the ring is bounded by window + stride * backlog */
    assert_true(osp_stream_footprint(s) < sizeof(float) * (W + S * BACKLOG) + 4096);
    osp_stream_free(s);
    tfn_fini(&t);
}

static void test_reset_before_next_score(void **state) {
    (void)state;
    tfn_t t;
    tfn_init(&t, 1);
    osp_stream_config_t cfg = {.frame_len = 1, .window = 2, .stride = 1, .backlog = 16, .channels = 1};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    for (int i = 0; i < 5; i++) push_index(s, 1, i);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    osp_stream_reset(s);
    push_index(s, 1, 5);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    pthread_mutex_lock(&t.mu);
    assert_int_equal(t.resets, 1);
    assert_int_equal(t.calls, 5);
    assert_int_equal(t.reset_before[4], 1); /* right before the 5th call */
    pthread_mutex_unlock(&t.mu);
    osp_stream_free(s);
    tfn_fini(&t);
}

/* ---- chained windows ---------------------------------------------------------- */

/* Three stages shaped like openWakeWord's front end, with test functions:
 * A, frame-wise: 4 samples -> 2 "mel" frames of 3 floats; B: windows of 5
 * mel frames every 2 -> a 2-float "embedding"; C: windows of 3 embeddings
 * every 1 -> a score. */
static int stage_a(void *ctx, const float *x, int n, int flen, const osp_stream_span_t *sp,
                   float *out, int out_len, char *err, size_t errlen) {
    (void)ctx, (void)n, (void)flen, (void)sp, (void)err, (void)errlen;
    for (int i = 0; i < out_len; i++) out[i] = x[i % 4] * (float)(i + 1);
    return 0;
}
static int stage_b(void *ctx, const float *x, int n, int flen, const osp_stream_span_t *sp,
                   float *out, int out_len, char *err, size_t errlen) {
    (void)ctx, (void)sp, (void)err, (void)errlen, (void)out_len;
    float sum = 0, mx = -1e30f;
    for (int i = 0; i < n * flen; i++) {
        sum += x[i] * (float)(i + 1);
        if (x[i] > mx) mx = x[i];
    }
    out[0] = sum, out[1] = mx;
    return 0;
}
typedef struct {
    int n;
    float got[4096];
    int64_t frame[4096];
} chain_log_t;
static int stage_c(void *ctx, const float *x, int n, int flen, const osp_stream_span_t *sp,
                   float *out, int out_len, char *err, size_t errlen) {
    (void)ctx, (void)sp, (void)err, (void)errlen, (void)out_len;
    out[0] = 0;
    for (int i = 0; i < n * flen; i++) out[0] += x[i] * (float)(i % 2 ? -1 : 1) * (float)(i + 1);
    return 0;
}
static void log_sink(void *ctx, int64_t frame, const float *out, int out_len) {
    chain_log_t *l = ctx;
    (void)out_len;
    if (l->n < 4096) l->frame[l->n] = frame, l->got[l->n++] = out[0];
}

static void test_chain_matches_straight_computation(void **state) {
    (void)state;
    char err[256];
    osp_stream_fn_t fa = {.score = stage_a}, fb = {.score = stage_b}, fc = {.score = stage_c};
    osp_stream_config_t ca = {.frame_len = 4, .window = 0, .channels = 6};
    osp_stream_config_t cb = {.frame_len = 3, .window = 5, .stride = 2, .backlog = 64, .channels = 2};
    osp_stream_config_t cc = {.frame_len = 2, .window = 3, .stride = 1, .backlog = 64, .channels = 1};
    osp_stream_t *a, *b, *c;
    assert_int_equal(osp_stream_new(&ca, &fa, &a, err, sizeof err), 0);
    assert_int_equal(osp_stream_new(&cb, &fb, &b, err, sizeof err), 0);
    assert_int_equal(osp_stream_new(&cc, &fc, &c, err, sizeof err), 0);
    assert_int_equal(osp_stream_chain(b, a, err, sizeof err), OSP_STREAM_EINVAL); /* 2 % 4 */
    assert_int_equal(osp_stream_chain(a, b, err, sizeof err), 0);
    assert_int_equal(osp_stream_chain(b, c, err, sizeof err), 0);
    chain_log_t *log = calloc(1, sizeof *log);
    osp_stream_set_sink(c, log_sink, log);
    assert_int_equal(osp_stream_start(c, err, sizeof err), 0);
    assert_int_equal(osp_stream_start(b, err, sizeof err), 0);
    assert_int_equal(osp_stream_start(a, err, sizeof err), 0);
    enum { N = 60 };
    float samples[N * 4];
    for (int i = 0; i < N * 4; i++) samples[i] = (float)((i * 37) % 11) - 5.0f;
    for (int i = 0; i < N; i++) {
        assert_int_equal(osp_stream_push(a, samples + i * 4), 0);
        if (i % 5 == 4) { /* let the chain catch up now and then; in order, nothing skipped */
            assert_int_equal(osp_stream_drain(b, 10000), 0);
            assert_int_equal(osp_stream_drain(c, 10000), 0);
        }
    }
    assert_int_equal(osp_stream_drain(b, 10000), 0);
    assert_int_equal(osp_stream_drain(c, 10000), 0);
    osp_stream_stop(a);
    osp_stream_stop(b);
    osp_stream_stop(c);

    /* straight: every mel frame, every embedding window, every score window */
    static float mel[N * 2 * 3], emb[N][2], want[N];
    osp_stream_span_t none = {0};
    for (int i = 0; i < N; i++)
        stage_a(NULL, samples + i * 4, 1, 4, &none, mel + i * 6, 6, err, 0);
    int n_mel = N * 2, n_emb = 0, n_want = 0;
    for (int e = 4; e < n_mel; e += 2)
        stage_b(NULL, mel + (e - 4) * 3, 5, 3, &none, emb[n_emb++], 2, err, 0);
    for (int e = 2; e < n_emb; e++)
        stage_c(NULL, emb[e - 2], 3, 2, &none, &want[n_want++], 1, err, 0);
    osp_stream_reading_t rb, rc;
    osp_stream_latest(b, &rb);
    osp_stream_latest(c, &rc);
    assert_int_equal(rb.skipped + rc.skipped, 0);
    assert_int_equal(rb.windows_completed, n_emb);
    assert_int_equal(log->n, n_want);
    for (int i = 0; i < n_want; i++) {
        assert_int_equal(log->frame[i], i + 2);
        assert_float_equal(log->got[i], want[i], 1e-3f);
    }
    print_message("chain: %d samples frames -> %d mel -> %d embeddings -> %d scores\n", N, n_mel,
                  n_emb, n_want);
    osp_stream_free(a);
    osp_stream_free(b);
    osp_stream_free(c);
    free(log);
}

/* ---- a scorer never stopped ---------------------------------------------- */

/* Stands in for a runtime's exit-time teardown: registered before the scorer
 * starts (as a library registers its statics when the model loads), so it
 * runs after the scorer's own handler. A callback running after it aborts. */
static tfn_t *g_exit_ctx;
static void teardown_runtime(void) {
    g_exit_ctx->dead = 1;
    sleep_ms(60); /* a teardown takes time: a worker still running would hit it */
}

static void test_never_stopped_scorer_exits_cleanly(void **state) {
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static tfn_t t;
        tfn_init(&t, 1);
        t.delay_ms = 20;
        g_exit_ctx = &t;
        atexit(teardown_runtime);
        osp_stream_config_t cfg = {.frame_len = 1, .window = 2, .channels = 1};
        osp_stream_fn_t fn = tfn(&t);
        osp_stream_t *s = NULL;
        char err[256];
        if (osp_stream_new(&cfg, &fn, &s, err, sizeof err) || osp_stream_start(s, err, sizeof err))
            _exit(3);
        for (int i = 0; i < 50; i++) {
            float f = (float)i;
            osp_stream_push(s, &f);
            sleep_ms(1);
        }
        exit(0); /* neither stopped nor freed */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- decoupling: an 80 ms model on a 30 fps producer ------------------------ */

typedef struct {
    osp_stream_t *s;
    int frames;
    double *push_us;
    int age_mismatch, bad_reading;
} producer_t;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void *producer(void *arg) {
    producer_t *p = arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int i = 0; i < p->frames; i++) {
        next.tv_nsec += 33333333L;
        if (next.tv_nsec >= 1000000000L) next.tv_sec++, next.tv_nsec -= 1000000000L;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        float f[2] = {(float)i, 1};
        double t0 = now_us();
        osp_stream_push(p->s, f);
        p->push_us[i] = now_us() - t0;
        osp_stream_reading_t r;
        osp_stream_latest(p->s, &r);
        /* the reported age is the true lag, computed from indices */
        if (!r.warming_up && r.age_frames != (int64_t)i - r.frame_index) p->age_mismatch++;
        if (!r.warming_up && (r.frame_index > i || r.pushed != i + 1)) p->bad_reading++;
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_slow_model_never_stalls_producer(void **state) {
    (void)state;
    enum { W = 15, FRAMES = 75 };
    tfn_t t;
    tfn_init(&t, W);
    t.delay_ms = 80;
    osp_stream_config_t cfg = {.frame_len = 2, .window = W, .channels = 1, .per_frame = true};
    osp_stream_t *s = make(&cfg, &t);
    char err[256];
    assert_int_equal(osp_stream_start(s, err, sizeof err), 0);
    double push_us[FRAMES];
    producer_t p = {.s = s, .frames = FRAMES, .push_us = push_us};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, producer, &p), 0);
    pthread_join(th, NULL);
    assert_int_equal(osp_stream_drain(s, 10000), 0);
    osp_stream_reading_t r;
    osp_stream_latest(s, &r);
    pthread_mutex_lock(&t.mu);
    int n = t.n;
    /* the worker always scored the newest complete window */
    for (int i = 0; i < n; i++) {
        assert_int_equal(t.spans[i].last, t.spans[i].newest_pushed);
        assert_int_equal(t.spans[i].last - t.spans[i].first + 1, W);
        if (i) assert_true(t.spans[i].last > t.spans[i - 1].last);
    }
    assert_int_equal(t.noncontiguous, 0);
    pthread_mutex_unlock(&t.mu);
    assert_int_equal(p.age_mismatch, 0);
    assert_int_equal(p.bad_reading, 0);
    assert_int_equal(r.frame_index, FRAMES - 1);
    /* 80 ms windows against 33 ms frames: the stride adapted (fewer windows
     * than frames) and the worker was never idle long */
    assert_true(n < FRAMES - W + 1);
    qsort(push_us, FRAMES, sizeof *push_us, cmp_double);
    double p50 = push_us[FRAMES / 2], p99 = push_us[(FRAMES * 99) / 100];
    print_message("push latency p50 %.1f us, p99 %.1f us (frame interval 33333 us); %d windows "
                  "for %d frames\n",
                  p50, p99, n, FRAMES);
    /* sanity only (tests do not time things): far below one 80 ms scoring */
    assert_true(p99 < 40000.0);
    osp_stream_free(s);
    tfn_fini(&t);
}

static void test_bad_config(void **state) {
    (void)state;
    tfn_t t;
    tfn_init(&t, 1);
    char err[256];
    osp_stream_t *s = NULL;
    osp_stream_fn_t fn = tfn(&t);
    osp_stream_config_t bad[] = {
        {.frame_len = 0, .window = 1, .channels = 1},
        {.frame_len = 1, .window = -1, .channels = 1},
        {.frame_len = 1, .window = 1, .channels = 0},
        {.frame_len = 1, .window = 1, .channels = OSP_STREAM_MAX_CHANNELS + 1},
        {.frame_len = 1, .window = 0, .stride = 2, .channels = 1},
        {.frame_len = 1 << 20, .window = 1 << 10, .channels = 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(osp_stream_new(&bad[i], &fn, &s, err, sizeof err), OSP_STREAM_EINVAL);
        assert_null(s);
        assert_true(strlen(err) > 0);
    }
    osp_stream_config_t ok = {.frame_len = 1, .window = 1, .channels = 1};
    osp_stream_fn_t nofn = {0};
    assert_int_equal(osp_stream_new(&ok, &nofn, &s, err, sizeof err), OSP_STREAM_EINVAL);
    tfn_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mean_equals_recomputation),
        cmocka_unit_test(test_no_padding),
        cmocka_unit_test(test_newest_window_and_age),
        cmocka_unit_test(test_stop_semantics),
        cmocka_unit_test(test_stop_bound_with_hung_callback),
        cmocka_unit_test(test_million_pushes_bounded),
        cmocka_unit_test(test_framewise_inline_and_failures),
        cmocka_unit_test(test_windowed_failure_counts_and_goes_on),
        cmocka_unit_test(test_stride_in_order_and_skips),
        cmocka_unit_test(test_reset_before_next_score),
        cmocka_unit_test(test_chain_matches_straight_computation),
        cmocka_unit_test(test_never_stopped_scorer_exits_cleanly),
        cmocka_unit_test(test_slow_model_never_stalls_producer),
        cmocka_unit_test(test_bad_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
