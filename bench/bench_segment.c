/*
 * bench_segment: `osprey segment` against the decoder it sits on.
 *
 *   bench_segment [CACHE] [ROUNDS] [SCORER.onnx]
 *   (CACHE "" or absent: $OSPREY_CACHE or ~/.cache/osprey)
 *
 * On CACHE/media/vtest.avi (768x576, 10 fps, 79.5 s; scripts/fetch-assets.sh):
 *  1. decode: osp_video_read back to back (the limit: the pipeline cannot
 *     beat its own source);
 *  2. segment: the whole pipeline (source, scene scorer, chunker, describe
 *     stage without a VLM, records to a counting sink) in event mode;
 *  3. the same in uniform mode (no scoring).
 *  4. with SCORER.onnx (a model for `--scorer`, 2 frames of 64x64x3 floats
 *     in, e.g. the frame-difference model tests/e2e/test_segment.py writes):
 *     the model alone, back to back on one thread (its raw rate), then the
 *     pipeline with it as the boundary scorer (target >= 0.85 of the lower
 *     of the raw model rate and the decode rate).
 * Prints each as x real time (target for 2: >= 10) and as a ratio of the
 * decode rate. The three alternate in ROUNDS rounds (the machine is shared);
 * medians are printed.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/runtime.h"
#include "segment/pipeline.h"
#include "video/video.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void count_line(void *ctx, const char *line) {
    (void)line;
    (*(long *)ctx)++;
}

/* Seconds to decode the file; frames and duration out. */
static double decode_once(const char *path, long *frames, double *duration) {
    osp_video_t *v;
    char err[256];
    if (osp_video_open(path, &v, err, sizeof err)) {
        fprintf(stderr, "bench_segment: %s: %s\n", path, err);
        exit(1);
    }
    osp_image_t img = {0};
    double t0 = now_s();
    long n = 0;
    while (osp_video_read(v, &img, err, sizeof err) == 1) n++;
    double t = now_s() - t0;
    const osp_video_info_t *in = osp_video_info(v);
    *frames = n;
    *duration = in->fps > 0 ? (double)n / in->fps : 0;
    osp_image_free(&img);
    osp_video_close(v);
    return t;
}

/* Windows per second of the model run back to back for about 2 s. */
static double raw_model_rate(const char *model_path) {
    osp_rt_model_t *m;
    char err[256];
    osp_rt_opts_t ro = {.intra_threads = 1, .device = "cpu"};
    if (osp_backend_onnxruntime.load(model_path, &ro, &m, err, sizeof err)) {
        fprintf(stderr, "bench_segment: %s\n", err);
        exit(1);
    }
    static float in[2 * 64 * 64 * 3];
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) in[i] = (float)(i % 251) / 251.0f;
    osp_tensor_t tin = {.dtype = OSP_DT_F32,
                        .rank = 2,
                        .dims = {1, 2 * 64 * 64 * 3},
                        .data = in,
                        .bytes = sizeof in};
    osp_tensor_t out[4];
    long n = 0;
    double t0 = now_s(), t = 0;
    while ((t = now_s() - t0) < 2.0) {
        if (osp_rt_run(m, &tin, out, err, sizeof err)) {
            fprintf(stderr, "bench_segment: %s\n", err);
            exit(1);
        }
        osp_rt_release_outputs(m, out);
        n++;
    }
    osp_rt_model_free(m);
    return n / t;
}

static double segment_once(const char *path, double uniform, const char *scorer, long *records) {
    osp_segment_opts_t o;
    osp_segment_opts_default(&o);
    o.input = path;
    o.scorer = scorer;
    o.sensor_id = "bench";
    if (uniform > 0) {
        o.chunk.uniform = true;
        o.chunk.uniform_len = uniform;
    }
    *records = 0;
    o.emit = count_line;
    o.emit_ctx = records;
    osp_segment_stats_t st;
    char err[256];
    double t0 = now_s();
    if (osp_segment_run(&o, &st, err, sizeof err)) {
        fprintf(stderr, "bench_segment: %s\n", err);
        exit(1);
    }
    return now_s() - t0;
}

int main(int argc, char **argv) {
    char cache[900], path[1024];
    const char *c = argc > 1 && argv[1][0] ? argv[1] : getenv("OSPREY_CACHE");
    if (c && c[0])
        snprintf(cache, sizeof cache, "%s", c);
    else
        snprintf(cache, sizeof cache, "%s/.cache/osprey", getenv("HOME") ? getenv("HOME") : ".");
    snprintf(path, sizeof path, "%s/media/vtest.avi", cache);
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    if (rounds < 1 || rounds > 50) rounds = 3;

    double dec[50], seg[50], uni[50], duration = 0;
    long frames = 0, recs_event = 0, recs_uniform = 0;
    for (int r = 0; r < rounds; r++) {
        dec[r] = decode_once(path, &frames, &duration);
        seg[r] = segment_once(path, 0, NULL, &recs_event);
        uni[r] = segment_once(path, 2.0, NULL, &recs_uniform);
    }
    double d = median(dec, rounds), s = median(seg, rounds), u = median(uni, rounds);
    printf("bench_segment: vtest.avi, %ld frames, %.1f s of video, %d rounds (medians)\n", frames,
           duration, rounds);
    printf("  decode only          %7.1f x real time  %7.0f f/s\n", duration / d, frames / d);
    printf("  segment, scene       %7.1f x real time  %7.0f f/s  %.2f of decode  %ld chunks"
           "  (target >= 10x)\n",
           duration / s, frames / s, d / s, recs_event);
    printf("  segment, uniform 2 s %7.1f x real time  %7.0f f/s  %.2f of decode  %ld chunks\n",
           duration / u, frames / u, d / u, recs_uniform);
    if (argc > 3 && argv[3][0]) {
        double raw[50], onnx[50];
        long recs_onnx = 0;
        for (int r = 0; r < rounds; r++) {
            raw[r] = raw_model_rate(argv[3]);
            onnx[r] = segment_once(path, 0, argv[3], &recs_onnx);
        }
        double rr = median(raw, rounds), x = median(onnx, rounds);
        double limit = rr < frames / d ? rr : frames / d;
        printf("  model alone          %7.0f windows/s (one thread)\n", rr);
        printf("  segment, onnx scorer %7.1f x real time  %7.0f f/s  %.2f of min(model, decode)"
               "  %ld chunks  (target >= 0.85)\n",
               duration / x, frames / x, (frames / x) / limit, recs_onnx);
    }
    return 0;
}
