/*
 * bench_motion: the motion detector and the region planner (src/motion/)
 * on a real camera-like video, next to the decoder they sit behind.
 *
 *   bench_motion [CACHE] [RUNS] [MODEL_SIDE] [VIDEO]
 *   (CACHE "" or absent: $OSPREY_CACHE or ~/.cache/osprey; RUNS 5;
 *    MODEL_SIDE 300, the ssd-oidv4 detector's input; VIDEO another file
 *    than CACHE/media/vtest.avi)
 *
 * On CACHE/media/vtest.avi (768x576, people walking; scripts/fetch-assets.sh)
 * it prints, per frame: the decode (osp_video_read, to RGB), the motion
 * detector with default parameters (the median of RUNS passes over the
 * frames held in memory) and, of that, the scale-down of the luma plane
 * alone; then what the detector saw (the share of frames with motion,
 * recalibrations) and what the planner made of it (regions a frame, their
 * area as a share of the frame, model runs a frame against one whole-frame
 * run). Figures and ratios only: nothing is asserted.
 *
 * The video reader hands out RGB only, so the luma plane is made here from
 * the RGB (BT.601 studio range, as a decoder's Y plane holds it), outside
 * the timed motion pass; a caller holding the decoder's own Y plane skips
 * that conversion.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libyuv/scale.h>

#include "bench_util.h"
#include "motion/motion.h"
#include "motion/regions.h"
#include "video/video.h"

#define WHO "bench_motion"
#define MAX_RUNS 20

typedef struct {
    uint8_t *luma; /* n frames of w x h, stride w */
    int n, w, h;
    double fps;
    double decode_ms, luma_ms; /* per frame */
} clip_t;

/* BT.601 studio-range luma from R,G,B bytes. */
static void rgb_to_luma(const osp_image_t *rgb, uint8_t *y) {
    for (int j = 0; j < rgb->height; j++) {
        const uint8_t *s = rgb->data + (size_t)j * (size_t)rgb->stride;
        uint8_t *d = y + (size_t)j * (size_t)rgb->width;
        for (int i = 0; i < rgb->width; i++, s += 3)
            d[i] = (uint8_t)(16 + ((66 * s[0] + 129 * s[1] + 25 * s[2] + 128) >> 8));
    }
}

static void load(const char *path, clip_t *c) {
    osp_video_t *v;
    char err[256];
    if (osp_video_open(path, &v, err, sizeof err)) {
        fprintf(stderr, WHO ": %s: %s (scripts/fetch-assets.sh fetches it)\n", path, err);
        exit(1);
    }
    const osp_video_info_t *in = osp_video_info(v);
    memset(c, 0, sizeof *c);
    c->w = in->width;
    c->h = in->height;
    c->fps = in->fps > 0 ? in->fps : 10;
    size_t frame = (size_t)c->w * (size_t)c->h;
    int cap = 0;
    osp_image_t img = {0};
    double dec = 0, conv = 0;
    for (;;) {
        double t0 = bu_now_s();
        int rc = osp_video_read(v, &img, err, sizeof err);
        double t1 = bu_now_s();
        if (rc < 0) {
            fprintf(stderr, WHO ": %s: %s\n", path, err);
            exit(1);
        }
        if (rc == 0) break;
        if (img.width != c->w || img.height != c->h) {
            fprintf(stderr, WHO ": %s: the frame size changed mid-stream\n", path);
            exit(1);
        }
        if (c->n == cap) {
            cap = cap ? cap * 2 : 256;
            c->luma = realloc(c->luma, frame * (size_t)cap);
            if (!c->luma) {
                fprintf(stderr, WHO ": out of memory for %d frames\n", cap);
                exit(1);
            }
        }
        rgb_to_luma(&img, c->luma + frame * (size_t)c->n);
        conv += bu_now_s() - t1;
        dec += t1 - t0;
        c->n++;
    }
    osp_image_free(&img);
    osp_video_close(v);
    if (c->n == 0) {
        fprintf(stderr, WHO ": %s: no frames\n", path);
        exit(1);
    }
    c->decode_ms = dec * 1e3 / c->n;
    c->luma_ms = conv * 1e3 / c->n;
}

static osp_motion_t *detector(const clip_t *c) {
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    osp_motion_t *m;
    char err[256];
    if (osp_motion_create(&p, c->w, c->h, &m, err, sizeof err)) {
        fprintf(stderr, WHO ": %s\n", err);
        exit(1);
    }
    return m;
}

/* ms per frame of one pass of a fresh detector over the clip. */
static double motion_pass(const clip_t *c) {
    osp_motion_t *m = detector(c);
    size_t frame = (size_t)c->w * (size_t)c->h;
    osp_motion_result_t r;
    char err[256];
    double t0 = bu_now_s();
    for (int i = 0; i < c->n; i++)
        if (osp_motion_update(m, c->luma + frame * (size_t)i, c->w, c->h, c->w, &r, err, sizeof err)) {
            fprintf(stderr, WHO ": %s\n", err);
            exit(1);
        }
    double t = bu_now_s() - t0;
    osp_motion_free(m);
    return t * 1e3 / c->n;
}

/* ms per frame of the scale-down alone, into a small frame of the size the
 * detector uses. */
static double scale_pass(const clip_t *c) {
    osp_motion_t *m = detector(c);
    int sw, sh;
    osp_motion_small_size(m, &sw, &sh);
    osp_motion_free(m);
    uint8_t *small = malloc((size_t)sw * (size_t)sh);
    if (!small) exit(1);
    size_t frame = (size_t)c->w * (size_t)c->h;
    double t0 = bu_now_s();
    for (int i = 0; i < c->n; i++)
        ScalePlane(c->luma + frame * (size_t)i, c->w, c->w, c->h, small, sw, sw, sh, kFilterBox);
    double t = bu_now_s() - t0;
    free(small);
    return t * 1e3 / c->n;
}

typedef struct {
    int active, moving, warming, recalibrating;
    long boxes, regions, full_passes, runs;
    double region_share, plan_ms, share;
    int planned;
} seen_t;

/* One pass with the planner after the detector, counting what they saw. */
static void survey(const clip_t *c, int model_side, seen_t *s) {
    osp_motion_t *m = detector(c);
    osp_regions_params_t rp;
    osp_regions_defaults(&rp, model_side);
    osp_regions_t *pl;
    char err[256];
    if (osp_regions_create(&rp, &pl, err, sizeof err)) {
        fprintf(stderr, WHO ": %s\n", err);
        exit(1);
    }
    memset(s, 0, sizeof *s);
    size_t frame = (size_t)c->w * (size_t)c->h;
    double *plan_ms = malloc((size_t)c->n * sizeof *plan_ms);
    if (!plan_ms) exit(1);
    osp_region_t out[64];
    for (int i = 0; i < c->n; i++) {
        osp_motion_result_t r;
        if (osp_motion_update(m, c->luma + frame * (size_t)i, c->w, c->h, c->w, &r, err, sizeof err)) {
            fprintf(stderr, WHO ": %s\n", err);
            exit(1);
        }
        double now = i / c->fps;
        int full = osp_regions_full_due(pl, now);
        if (full) {
            osp_regions_full_done(pl, now);
            s->full_passes++;
        }
        s->runs += full;
        s->warming += r.state == OSP_MOTION_WARMING;
        s->recalibrating += r.state == OSP_MOTION_RECALIBRATING;
        if (r.state != OSP_MOTION_ACTIVE) continue;
        s->active++;
        s->share += r.share;
        if (r.n_boxes == 0) continue;
        s->moving++;
        s->boxes += r.n_boxes;
        double t0 = bu_now_s();
        int n = osp_regions_plan(pl, c->w, c->h, r.boxes, r.n_boxes, NULL, 0, out, 64, err,
                                 sizeof err);
        plan_ms[s->planned++] = (bu_now_s() - t0) * 1e3;
        if (n < 0) {
            fprintf(stderr, WHO ": %s\n", err);
            exit(1);
        }
        s->regions += n;
        if (!full) s->runs += n; /* a whole-frame pass sees everything already */
        for (int k = 0; k < n; k++)
            s->region_share += (double)out[k].w * out[k].h / ((double)c->w * c->h);
    }
    s->plan_ms = bu_median(plan_ms, s->planned);
    free(plan_ms);
    osp_regions_free(pl);
    osp_motion_free(m);
}

int main(int argc, char **argv) {
    char cache[900], path[1024];
    const char *e = argc > 1 && argv[1][0] ? argv[1] : getenv("OSPREY_CACHE");
    if (e && e[0])
        snprintf(cache, sizeof cache, "%s", e);
    else
        snprintf(cache, sizeof cache, "%s/.cache/osprey", getenv("HOME") ? getenv("HOME") : ".");
    snprintf(path, sizeof path, "%s/media/vtest.avi", cache);
    if (argc > 4) snprintf(path, sizeof path, "%s", argv[4]);
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (runs < 1 || runs > MAX_RUNS) runs = 5;
    int side = argc > 3 ? atoi(argv[3]) : 300;
    if (side < 16 || side > 4096) side = 300;

    clip_t c;
    load(path, &c);
    double mo[MAX_RUNS], sc[MAX_RUNS];
    for (int i = 0; i < runs; i++) { /* in turns: the machine may be shared */
        mo[i] = motion_pass(&c);
        sc[i] = scale_pass(&c);
    }
    double motion_ms = bu_median(mo, runs), scale_ms = bu_median(sc, runs);
    seen_t s;
    survey(&c, side, &s);

    osp_regions_params_t rp;
    osp_regions_defaults(&rp, side);
    double load[1] = {0};
    if (getloadavg(load, 1) < 1) load[0] = -1;
    printf("bench_motion: %s, %dx%d, %d frames at %.1f frames/s; %d cores, load %.2f\n", path, c.w,
           c.h, c.n, c.fps, bu_cores(), load[0]);
    char what[96];
    printf("  %-44s %8.3f ms/frame\n", "decode (osp_video_read, to RGB)", c.decode_ms);
    printf("  %-44s %8.3f ms/frame\n", "luma from that RGB (the bench's, not motion's)", c.luma_ms);
    snprintf(what, sizeof what, "motion, default parameters (median of %d)", runs);
    printf("  %-44s %8.3f ms/frame = %.3f of the decode\n", what, motion_ms, motion_ms / c.decode_ms);
    printf("  %-44s %8.3f ms/frame (%.0f %%)\n", "  of which the luma plane scaled down", scale_ms,
           100 * scale_ms / motion_ms);
    printf("  %-44s %d / %d\n", "frames warming up / recalibrating", s.warming, s.recalibrating);
    printf("  %-44s %8.3f of all (%d of %d)\n", "frames with motion", (double)s.moving / c.n,
           s.moving, c.n);
    printf("  %-44s %8.4f\n", "changed share of a frame, on average",
           s.active ? s.share / s.active : 0);
    printf("  %-44s %8.2f\n", "motion boxes a frame with motion",
           s.moving ? (double)s.boxes / s.moving : 0);
    snprintf(what, sizeof what, "regions (model side %d) a frame", side);
    printf("  %-44s %8.2f (%.2f a frame with motion)\n", what, (double)s.regions / c.n,
           s.moving ? (double)s.regions / s.moving : 0);
    printf("  %-44s %8.3f a region, %.3f a frame with motion\n", "region area as a share of the frame",
           s.regions ? s.region_share / s.regions : 0, s.moving ? s.region_share / s.moving : 0);
    snprintf(what, sizeof what, "whole-frame passes (at start, every %.0f s)", rp.full_every_s);
    printf("  %-44s %8ld\n", what, s.full_passes);
    printf("  %-44s %8.2f (against 1 for every whole frame)\n", "model runs a frame",
           (double)s.runs / c.n);
    printf("  %-44s %8.4f ms\n", "a plan, median", s.plan_ms);
    free(c.luma);
    return 0;
}
