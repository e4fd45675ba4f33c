/*
 * bench_image: what osprey's image path costs next to the raw library calls
 * any server has to make for the same result, timed in the same run
 * (docs: MEASURING.md, "the pipeline limit"). Prints a table of medians
 * and the ratio osprey / raw; asserts nothing.
 *
 *   bench_image [repetitions]      (default 15, after 2 warm-up runs)
 *
 * The JPEG is a synthetic 1920x1080 frame (gradients, edges and noise, so
 * it compresses like a camera frame rather than a flat test card) encoded
 * at quality 90, 4:2:0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libyuv/convert_argb.h>
#include <libyuv/scale_argb.h>
#include <libyuv/scale_rgb.h>
#include <turbojpeg.h>

#include "image/image.h"

#define W 1920
#define H 1080
#define MAX_REPS 101

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*step_fn)(void *ctx);

/* Medians of a raw step and the osprey step it is compared with, timed
 * alternately (raw, osprey, raw, ...) so that both see the same machine:
 * this one is shared, and a burst of someone's build would otherwise land
 * on one side of the ratio only. Two untimed warm-ups of each first, which
 * also grow every reusable buffer to its final size. */
static void measure(step_fn raw, void *raw_ctx, step_fn osp, void *osp_ctx, int reps,
                    double *raw_ms, double *osp_ms) {
    double tr[MAX_REPS], to[MAX_REPS];
    for (int i = 0; i < 2; i++) {
        raw(raw_ctx);
        osp(osp_ctx);
    }
    for (int i = 0; i < reps; i++) {
        double t0 = now_ms();
        raw(raw_ctx);
        double t1 = now_ms();
        osp(osp_ctx);
        double t2 = now_ms();
        tr[i] = t1 - t0;
        to[i] = t2 - t1;
    }
    qsort(tr, (size_t)reps, sizeof(double), cmp_double);
    qsort(to, (size_t)reps, sizeof(double), cmp_double);
    *raw_ms = tr[reps / 2];
    *osp_ms = to[reps / 2];
}

/* Everything the steps share. */
static struct {
    uint8_t *rgb;  /* the frame, RGB */
    uint8_t *argb; /* the frame as libyuv ARGB, for the ARGB-in reference */
    unsigned char *jpg;
    unsigned long jpg_len;
    tjhandle tj;
    uint8_t *raw_out; /* raw decode / resize output */
    osp_decoder_t *dec;
    osp_image_t img;
    osp_prep_scratch_t scratch;
    void *tensor;
    osp_prep_t p300, p640;
    int fails;
} B;

static void make_frame(void) {
    uint32_t lcg = 12345;
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) {
            lcg = lcg * 1664525u + 1013904223u;
            int noise = (int)(lcg >> 30) - 2;
            int box = ((x / 120) + (y / 90)) % 2 ? 40 : 0;
            double wave = 60 * sin(x / 37.0) * cos(y / 23.0);
            int v[3] = {x * 200 / W + box + noise, y * 200 / H + (int)wave + noise,
                        128 + (int)wave - box + noise};
            uint8_t *d = B.rgb + ((size_t)y * W + x) * 3;
            for (int c = 0; c < 3; c++) d[c] = (uint8_t)(v[c] < 0 ? 0 : v[c] > 255 ? 255 : v[c]);
        }
    }
}

static void raw_decode(void *full) {
    int d = full ? 1 : 2;
    if (tjDecompress2(B.tj, B.jpg, B.jpg_len, B.raw_out, W / d, 0, H / d, TJPF_RGB, 0) != 0)
        B.fails++;
}

static void osp_decode(void *want) {
    int side = want ? *(int *)want : 0;
    int ow, oh;
    char err[256];
    if (osp_image_decode(B.dec, B.jpg, B.jpg_len, side, side, &B.img, &ow, &oh, err, sizeof(err)) !=
        OSP_IMG_OK)
        B.fails++;
}

static void raw_rgbscale(void *side) {
    int s = *(int *)side, dh = s == 640 ? 360 : s;
    if (RGBScale(B.rgb, W * 3, W, H, B.raw_out, s * 3, s, dh, kFilterBilinear) != 0) B.fails++;
}

static void raw_argbscale(void *side) {
    int s = *(int *)side, dh = s == 640 ? 360 : s;
    if (ARGBScale(B.argb, W * 4, W, H, B.raw_out, s * 4, s, dh, kFilterBilinear) != 0) B.fails++;
}

static void osp_prep(void *p) {
    osp_view_t v = {B.rgb, W, H, W * 3, OSP_PIX_RGB};
    if (osp_prep_run(&v, p, B.tensor, &B.scratch, NULL, NULL, 0) != OSP_IMG_OK) B.fails++;
}

/* The JPEG path a 300x300 model sees: scaled decode, then fit and pack. */
static void osp_jpeg_pipeline(void *p) {
    osp_decode(&((osp_prep_t *)p)->width);
    osp_view_t v = osp_image_view(&B.img);
    if (osp_prep_run(&v, p, B.tensor, &B.scratch, NULL, NULL, 0) != OSP_IMG_OK) B.fails++;
}

static void row(const char *what, const char *raw_name, double raw, double osp) {
    printf("%-44s %-26s %8.3f %8.3f %7.2f\n", what, raw_name, raw, osp, osp / raw);
}

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    if (reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: bench_image [repetitions 1..%d]\n", MAX_REPS);
        return 2;
    }
    B.rgb = malloc((size_t)W * H * 3);
    B.argb = malloc((size_t)W * H * 4);
    B.raw_out = malloc((size_t)W * H * 4);
    B.tj = tjInitDecompress();
    B.dec = osp_decoder_new();
    tjhandle enc = tjInitCompress();
    if (!B.rgb || !B.argb || !B.raw_out || !B.tj || !B.dec || !enc) {
        fprintf(stderr, "bench_image: setup failed\n");
        return 1;
    }
    make_frame();
    RAWToARGB(B.rgb, W * 3, B.argb, W * 4, W, H);
    if (tjCompress2(enc, B.rgb, W, W * 3, H, TJPF_RGB, &B.jpg, &B.jpg_len, TJSAMP_420, 90, 0) != 0) {
        fprintf(stderr, "bench_image: encode failed: %s\n", tjGetErrorStr2(enc));
        return 1;
    }
    tjDestroy(enc);

    B.p300 = (osp_prep_t){.width = 300,
                          .height = 300,
                          .channels = 3,
                          .fit = OSP_FIT_RESIZE,
                          .layout = OSP_LAYOUT_NHWC,
                          .elem = OSP_ELEM_F32,
                          .pad_value = 114};
    B.p640 = (osp_prep_t){.width = 640,
                          .height = 640,
                          .channels = 3,
                          .fit = OSP_FIT_LETTERBOX,
                          .layout = OSP_LAYOUT_NCHW,
                          .elem = OSP_ELEM_F32,
                          .pad_value = 114};
    osp_norm_named("none", B.p300.mean, B.p300.std);
    osp_norm_named("none", B.p640.mean, B.p640.std);
    B.tensor = malloc(osp_prep_tensor_bytes(&B.p640));
    if (!B.tensor) return 1;

    int s300 = 300, s640 = 640, full = 1;
    double raw, osp;
    printf("bench_image: 1920x1080 RGB frame, JPEG q90 4:2:0 of %lu bytes; "
           "median of %d runs, ms\n\n",
           B.jpg_len, reps);
    printf("%-44s %-26s %8s %8s %7s\n", "osprey step", "raw reference", "raw", "osprey", "ratio");
    measure(raw_decode, &full, osp_decode, NULL, reps, &raw, &osp);
    row("osp_image_decode, full size", "tjDecompress2 1920x1080", raw, osp);
    measure(raw_decode, NULL, osp_decode, &s300, reps, &raw, &osp);
    row("osp_image_decode for 300x300 (scaled 1/2)", "tjDecompress2 960x540", raw, osp);
    measure(raw_rgbscale, &s300, osp_prep, &B.p300, reps, &raw, &osp);
    row("osp_prep_run resize 300x300 f32 NHWC", "RGBScale -> 300x300", raw, osp);
    measure(raw_argbscale, &s300, osp_prep, &B.p300, reps, &raw, &osp);
    row("  (same)", "ARGBScale (ARGB in)", raw, osp);
    measure(raw_rgbscale, &s640, osp_prep, &B.p640, reps, &raw, &osp);
    row("osp_prep_run letterbox 640 f32 NCHW", "RGBScale -> 640x360", raw, osp);
    measure(raw_argbscale, &s640, osp_prep, &B.p640, reps, &raw, &osp);
    row("  (same)", "ARGBScale (ARGB in)", raw, osp);
    measure(raw_decode, NULL, osp_jpeg_pipeline, &B.p300, reps, &raw, &osp);
    row("JPEG -> 300x300 tensor (decode 1/2 + prep)", "tjDecompress2 960x540", raw, osp);
    printf("\nraw references: RGBScale is libyuv's one call for an RGB frame (it converts to\n"
           "ARGB and back inside); ARGBScale starts from a frame already in ARGB, so it is\n"
           "a floor no RGB input reaches. osprey's figures include packing the tensor.\n");

    osp_image_free(&B.img);
    osp_prep_scratch_free(&B.scratch);
    osp_decoder_free(B.dec);
    tjDestroy(B.tj);
    tjFree(B.jpg);
    free(B.tensor);
    free(B.rgb);
    free(B.argb);
    free(B.raw_out);
    if (B.fails) {
        fprintf(stderr, "bench_image: %d calls failed\n", B.fails);
        return 1;
    }
    return 0;
}
