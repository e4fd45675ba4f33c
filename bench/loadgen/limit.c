/*
 * loadgen/limit: the limits of MEASURING.md measured in the same run: the
 * raw ONNX Runtime run loop on the frame's own input tensor (bench_util.h),
 * each library step of the pipeline alone, and at K=1 the requests paired
 * with raw runs (and with the same bytes through a pipe alone) in turns.
 * Every model this program opens is opened here, so that bench_util's
 * per-file settings (bu_quiet_loads, bu_no_spin) are this file's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <libyuv/scale_rgb.h>
#include <turbojpeg.h>

#include "bench_util.h"
#include "image/image.h"
#include "loadgen.h"
#include "wire/encode.h"

void lg_quiet_loads(void) { bu_quiet_loads = 1; }

osp_model_t *lg_open_model(const char *model, int threads) {
    return bu_open_model(WHO, model, threads);
}

void *lg_tensor; /* the frame's input tensor, as the last limit measurement packed it */

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The pack any server does: content pixels into the model's input tensor,
 * padding around them (letterbox), normalised. */
static void pack(const uint8_t *rgb, const osp_prep_t *p, const osp_geom_t *g, void *dst) {
    int W = p->width, H = p->height, C = p->channels;
    float sc[3], bi[3];
    for (int c = 0; c < 3; c++) {
        sc[c] = 1.0f / p->std[c];
        bi[c] = -p->mean[c] / p->std[c];
    }
    for (int y = 0; y < H; y++) {
        int sy = y - g->pad_y;
        for (int x = 0; x < W; x++) {
            int sx = x - g->pad_x;
            uint8_t px[3];
            if (sy < 0 || sy >= g->content_h || sx < 0 || sx >= g->content_w) {
                px[0] = px[1] = px[2] = p->pad_value;
            } else {
                const uint8_t *s = rgb + ((size_t)sy * g->content_w + sx) * 3;
                px[0] = s[0];
                px[1] = s[1];
                px[2] = s[2];
            }
            if (C == 1) px[0] = (uint8_t)((px[0] * 77 + px[1] * 150 + px[2] * 29) >> 8);
            for (int c = 0; c < C; c++) {
                size_t at = p->layout == OSP_LAYOUT_NHWC ? ((size_t)y * W + x) * C + c
                                                         : (size_t)c * W * H + (size_t)y * W + x;
                if (p->elem == OSP_ELEM_U8)
                    ((uint8_t *)dst)[at] = px[c];
                else
                    ((float *)dst)[at] = (float)px[c] * sc[c] + bi[c];
            }
        }
    }
}

/* The raw loop at its best, `batch` frames a run, on `tensor`: one session
 * of N threads (helper threads spinning, then sleeping) and N sessions of
 * one thread, `seconds` each. Sets L's batch, one, one_ms, many, limit and
 * cpu_frame. */
static void raw_limit(const char *model, int batch, double seconds, const void *tensor, limit_t *L) {
    int n = bu_cores();
    double c1 = 0, cn = 0;
    L->batch = batch;
    L->one = bu_raw_fps_batch_ms(WHO, model, 1, n, seconds, tensor, batch, &c1, &L->one_ms);
    if (n > 1) { /* the one session at its best: helper threads spinning or sleeping */
        double c1s = 0, ms = 0;
        bu_no_spin = 1;
        double one_sleep = bu_raw_fps_batch_ms(WHO, model, 1, n, seconds, tensor, batch, &c1s, &ms);
        bu_no_spin = 0;
        if (one_sleep > L->one) {
            L->one = one_sleep;
            c1 = c1s;
        }
        if (ms > 0 && ms < L->one_ms) L->one_ms = ms;
    }
    L->many = bu_raw_fps_batch(WHO, model, n, 1, seconds, tensor, batch, &cn);
    L->limit = L->one > L->many ? L->one : L->many;
    L->cpu_frame = L->one > L->many ? c1 : cn;
}

void lg_measure_limit(const opts_t *o, const frame_t *f, const osp_model_t *m, limit_t *L) {
    int n = bu_cores();
    const osp_prep_t *p = &m->prep;
    L->pipeline_applies = o->jpeg || o->w != p->width || o->h != p->height;
    /* the frame as the server sees it after decoding */
    int vw = o->w, vh = o->h;
    tjhandle tj = o->jpeg ? tjInitDecompress() : NULL;
    if (o->jpeg) {
        int d = osp_jpeg_scale_denom(o->w, o->h, p->width, p->height);
        vw = (o->w + d - 1) / d;
        vh = (o->h + d - 1) / d;
    }
    osp_geom_t g;
    osp_geom_compute(vw, vh, p->width, p->height, p->fit, &g);
    uint8_t *dec = malloc((size_t)vw * vh * 3 + 64);
    uint8_t *content = malloc((size_t)g.content_w * g.content_h * 3 + 64);
    void *tensor = malloc(osp_prep_tensor_bytes(p));
    enum { REPS = 21 };
    double td[REPS], tr[REPS], tp[REPS];
    int bad = 0;
    for (int i = -2; i < REPS; i++) { /* 2 warm-ups */
        double a = thread_cpu_ms();
        const uint8_t *src = f->rgb;
        if (o->jpeg) {
            if (tjDecompress2(tj, f->jpg, f->jpg_len, dec, vw, 0, vh, TJPF_RGB, 0)) bad++;
            src = dec;
        }
        double b = thread_cpu_ms();
        const uint8_t *csrc = src;
        if (vw != g.content_w || vh != g.content_h) {
            if (RGBScale(src, vw * 3, vw, vh, content, g.content_w * 3, g.content_w, g.content_h,
                         kFilterBilinear))
                bad++;
            csrc = content;
        }
        double c = thread_cpu_ms();
        pack(csrc, p, &g, tensor);
        double d = thread_cpu_ms();
        if (i >= 0) {
            td[i] = b - a;
            tr[i] = c - b;
            tp[i] = d - c;
        }
    }
    if (bad) fprintf(stderr, "%s: %d library calls failed while timing the pipeline\n", WHO, bad);
    /* the raw runs, on this frame's tensor as packed above; at --batch N
     * the raw loop runs N stacked frames per call, as ospreyd does in list
     * mode; a model without a dynamic batch axis runs them one by one
     * there, so its limit is the batch-1 loop */
    raw_limit(o->model, o->batch > 1 && m->batch_dynamic ? o->batch : 1, o->limit_seconds, tensor, L);
    L->t_decode = bu_median(td, REPS);
    L->t_resize = bu_median(tr, REPS);
    L->t_pack = bu_median(tp, REPS);
    /* cores / (CPU per frame of the raw run + each library call alone). On a
     * shared machine the raw run may get fewer than `cores` (another job
     * holds one): then the cores it did get (its fps x its CPU per frame)
     * stand in for `cores`, as the server meets the same contention. */
    double per = L->cpu_frame + (L->t_decode + L->t_resize + L->t_pack) / 1e3;
    L->eff_cores = L->limit * L->cpu_frame;
    double cores = L->eff_cores < n ? L->eff_cores : n;
    L->pipeline = per > 0 ? cores / per : 0;
    if (L->pipeline > L->limit || !L->pipeline_applies) L->pipeline = L->limit;
    L->pipe_cpu_ms = per * 1e3;
    if (tj) tjDestroy(tj);
    free(dec);
    free(content);
    free(lg_tensor);
    lg_tensor = tensor; /* for the paired K=1 phase */
}

/* The mean of two measurements of the limits, taken before and after a
 * server's measured phase: on this shared machine the raw loop's speed
 * drifts within a minute by more than the margins being judged, and the
 * server ran in between. */
void lg_limit_mean(limit_t *a, const limit_t *b) {
#define MEAN(f) a->f = (a->f + b->f) / 2
    MEAN(one);
    MEAN(many);
    MEAN(limit);
    MEAN(one_ms);
    MEAN(cpu_frame);
    MEAN(t_decode);
    MEAN(t_resize);
    MEAN(t_pack);
    MEAN(eff_cores);
    MEAN(pipe_cpu_ms);
    MEAN(pipeline);
#undef MEAN
}

/* What moving one request's bytes through a pipe costs by itself: the
 * writer the requests use (lg_push), a 1 MiB pipe as ospreyd's stdin, and a
 * thread that reads it as ospreyd's reading thread does (up to a pipeful
 * at a time, spliced into a pipe of its own and copied out of that, so
 * that the writer's copy in and its copy out overlap: src/server/pipe/relay.c)
 * and keeps nothing. No server can answer a frame sent this way sooner
 * than this after the write starts. */
typedef struct {
    int rfd, ack; /* the pipe's read end; one byte back per request read */
    size_t len;   /* bytes a request */
} sink_t;

static void *sink_main(void *arg) {
    sink_t *k = arg;
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    int relay[2] = {-1, -1};
    if (pipe(relay) == 0) fcntl(relay[1], F_SETPIPE_SZ, CHUNK);
    while (buf) {
        size_t left = k->len;
        while (left) {
            size_t want = left < CHUNK ? left : CHUNK;
            ssize_t r = relay[0] >= 0 ? splice(k->rfd, NULL, relay[1], NULL, want, SPLICE_F_MOVE)
                                      : read(k->rfd, buf, want);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) goto out; /* the writer closed it: done */
            for (size_t at = 0; relay[0] >= 0 && at < (size_t)r;) {
                ssize_t g = read(relay[0], buf, (size_t)r - at);
                if (g <= 0) goto out;
                at += (size_t)g;
            }
            left -= (size_t)r;
        }
        if (write(k->ack, "", 1) != 1) break;
    }
out:
    if (relay[0] >= 0) {
        close(relay[0]);
        close(relay[1]);
    }
    free(buf);
    return NULL;
}

/* K=1, paired: on a shared machine the raw run's time moves by more than
 * the difference being measured from one second to the next, so the
 * server's single-frame latency and the raw run it is held against are
 * measured in turns: one request answered, then one run of a 1 x N-thread
 * session (helper threads sleeping between runs, as the server's lone-frame
 * session's do) on the same frame's tensor, then the next request. Medians
 * of each over `seconds`. Raw and JPEG frames add a third turn: the same
 * bytes through a pipe alone (sink_t), then another raw run, so that it
 * meets the cache as a request does (the run evicts the frame). */
void lg_phase_paired(srv_t *s, const opts_t *o, const osp_model_t *m, double seconds,
                     double *lat_ms, double *raw_ms, double *pipe_ms) {
    *lat_ms = *raw_ms = *pipe_ms = 0;
    bu_no_spin = 1;
    osp_model_t *rm = bu_open_model(WHO, o->model, bu_cores());
    bu_no_spin = 0;
    osp_tensor_t in;
    enum { CAP = 4096 };
    double *lat = malloc(CAP * sizeof *lat), *raw = malloc(CAP * sizeof *raw);
    double *pip = malloc(CAP * sizeof *pip);
    if (!lat || !raw || !pip || bu_input(m, lg_tensor, 1, &in)) {
        free(lat);
        free(raw);
        free(pip);
        osp_model_free(rm);
        return;
    }
    /* the pipe alone, when the frame's bytes go through the pipe */
    int pp[2] = {-1, -1}, ack[2] = {-1, -1};
    sink_t sink = {0};
    pthread_t sink_th;
    int sinking = 0;
    if (!o->shm && pipe(pp) == 0) {
        if (pipe(ack) == 0) {
            fcntl(pp[1], F_SETPIPE_SZ, 1 << 20);
            fcntl(pp[1], F_SETFL, fcntl(pp[1], F_GETFL) | O_NONBLOCK);
            sink = (sink_t){.rfd = pp[0], .ack = ack[1]};
            sinking = 1;
        }
    }
    int n = 0, nr = 0, np = 0, bad = 0;
    for (int i = 0; i < 3; i++) bu_run_ms(WHO, rm, &in); /* warm-up */
    uint8_t hdr[OSP_WIRE_HEAD_MAX];
    int64_t end = mono_ns() + (int64_t)(seconds * 1e9);
    while (n < CAP && mono_ns() < end && !bad) {
        size_t hl;
        uint32_t id = lg_begin_request(s, hdr, &hl);
        struct iovec iov[2] = {{hdr, hl}, {(void *)s->payload, s->payload_len}};
        if (lg_write_all(s, iov, 2) ||
            !lg_wait_inflight_below(s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9)))
            break;
        pthread_mutex_lock(&s->mu);
        if (lg_recs[id].state == ST_SERVED)
            lat[n++] = (double)(lg_recs[id].t_reply - lg_recs[id].t_send) / 1e6;
        pthread_mutex_unlock(&s->mu);
        double ms = bu_run_ms(WHO, rm, &in);
        if (ms < 0)
            bad = 1;
        else
            raw[nr++] = ms;
        if (sinking && sink.len == 0) { /* the first request told its size */
            sink.len = hl + s->payload_len;
            if (pthread_create(&sink_th, NULL, sink_main, &sink)) sinking = 0;
        }
        if (sinking) {
            struct iovec piov[2] = {{hdr, hl}, {(void *)s->payload, s->payload_len}};
            char c;
            int64_t t0 = mono_ns();
            if (lg_write_fd(s, pp[1], piov, 2) || read(ack[0], &c, 1) != 1)
                bad = 1;
            else
                pip[np++] = (double)(mono_ns() - t0) / 1e6;
            if (bu_run_ms(WHO, rm, &in) < 0) bad = 1; /* the cache as a request meets it */
        }
    }
    if (!bad && n > 0 && nr > 0) {
        *lat_ms = bu_median(lat, n);
        *raw_ms = bu_median(raw, nr);
        if (np > 0) *pipe_ms = bu_median(pip, np);
    }
    if (pp[1] >= 0) close(pp[1]); /* the sink reads 0 and ends */
    if (sinking && sink.len) pthread_join(sink_th, NULL);
    int rest[3] = {pp[0], ack[0], ack[1]};
    for (int i = 0; i < 3; i++)
        if (rest[i] >= 0) close(rest[i]);
    free(in.data);
    free(lat);
    free(raw);
    free(pip);
    osp_model_free(rm);
}

/* The raw loop's gain from batch nb over batch 1, paired: rounds in which
 * the limit (raw_limit, `seconds` a configuration) is measured at batch 1
 * and then at nb, the median of the rounds' ratios. Limits measured a
 * minute apart on this shared machine differ by more than the gain being
 * judged. */
double lg_raw_gain_paired(const opts_t *o, int nb, int rounds, double seconds) {
    enum { MAX_ROUNDS = 9 };
    double r[MAX_ROUNDS];
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    for (int i = 0; i < rounds; i++) {
        limit_t at1 = {0}, atn = {0};
        raw_limit(o->model, 1, seconds, lg_tensor, &at1);
        raw_limit(o->model, nb, seconds, lg_tensor, &atn);
        r[i] = at1.limit > 0 ? atn.limit / at1.limit : 0;
    }
    return bu_median(r, rounds);
}
