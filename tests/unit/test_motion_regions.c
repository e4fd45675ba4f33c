/* The region planner (src/motion/regions.c): each rule of regions.h on
 * boxes placed by hand — the minimum side from the model, the factor, the
 * shift inside the frame, the whole frame when a region outgrows it,
 * clusters of nearby motion, merges of overlapping regions, tracked boxes
 * covering motion, the cap, the whole-frame pass and its cover of the
 * frame, alignment, and the way back from a region's pixels to the
 * frame's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "motion/regions.h"

static osp_motion_box_t mbox(int x1, int y1, int x2, int y2) {
    return (osp_motion_box_t){.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2, .small_px = 10};
}

static osp_det_t tbox(float x1, float y1, float x2, float y2) {
    return (osp_det_t){.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2, .score = 0.9f};
}

static osp_regions_t *make(const osp_regions_params_t *p) {
    char err[256] = "";
    osp_regions_t *r = NULL;
    int rc = osp_regions_create(p, &r, err, sizeof err);
    if (rc) print_error("create: %s\n", err);
    assert_int_equal(rc, 0);
    return r;
}

static int plan(osp_regions_t *r, int w, int h, const osp_motion_box_t *m, int nm,
                const osp_det_t *t, int nt, osp_region_t *out, int cap) {
    char err[256] = "";
    int n = osp_regions_plan(r, w, h, m, nm, t, nt, out, cap, err, sizeof err);
    if (n < 0) print_error("plan: %s\n", err);
    assert_true(n >= 0);
    return n;
}

static void assert_region(const osp_region_t *g, int x, int y, int w, int h) {
    if (g->x != x || g->y != y || g->w != w || g->h != h)
        fail_msg("region %d,%d %dx%d, expected %d,%d %dx%d", g->x, g->y, g->w, g->h, x, y, w, h);
}

/* Some region of out[n] holds box b whole. */
static void assert_held(const osp_region_t *out, int n, int x1, int y1, int x2, int y2) {
    for (int i = 0; i < n; i++)
        if (out[i].x <= x1 && out[i].y <= y1 && out[i].x + out[i].w >= x2 && out[i].y + out[i].h >= y2)
            return;
    fail_msg("no region holds %d,%d-%d,%d", x1, y1, x2, y2);
}

static void assert_inside(const osp_region_t *g, int w, int h) {
    assert_true(g->x >= 0 && g->y >= 0 && g->w > 0 && g->h > 0);
    assert_true(g->x + g->w <= w && g->y + g->h <= h);
}

static void test_small_box_gets_the_model_side(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    osp_motion_box_t m = mbox(900, 500, 940, 580); /* 40x80: 2x is 160 */
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 770, 390, 300, 300); /* centred on 920,540 */
    assert_int_equal(out[0].from, OSP_REGION_MOTION);
    /* a box of 200x100: 2 x 200 */
    m = mbox(900, 500, 1100, 600);
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 800, 350, 400, 400);
    osp_regions_free(r);

    /* the factor is a parameter */
    p.factor = 3;
    r = make(&p);
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 700, 250, 600, 600);
    osp_regions_free(r);

    /* a large model's regions may be as small as 320; a given min_side wins */
    osp_regions_defaults(&p, 640);
    r = make(&p);
    m = mbox(900, 500, 940, 580);
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 760, 380, 320, 320);
    osp_regions_free(r);
    p.min_side = 640;
    r = make(&p);
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_int_equal(out[0].w, 640);
    osp_regions_free(r);
}

static void test_edge_box_is_shifted_inside(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    osp_motion_box_t m[] = {mbox(0, 0, 20, 20), mbox(1890, 1050, 1920, 1080)};
    assert_int_equal(plan(r, 1920, 1080, &m[0], 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 0, 0, 300, 300);
    assert_int_equal(plan(r, 1920, 1080, &m[1], 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 1620, 780, 300, 300);
    /* a tracked box partly off the frame: what is on it */
    osp_det_t t = tbox(-50, 400, 30, 560);
    assert_int_equal(plan(r, 1920, 1080, NULL, 0, &t, 1, out, 8), 1);
    assert_region(&out[0], 0, 320, 320, 320); /* 2 x 160 */
    assert_int_equal(out[0].from, OSP_REGION_TRACKED);
    osp_regions_free(r);
}

static void test_bigger_than_the_frame_is_the_frame(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    osp_motion_box_t m = mbox(10, 10, 60, 60);
    assert_int_equal(plan(r, 256, 200, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 0, 0, 256, 200);
    m = mbox(100, 100, 500, 300); /* 800 wide in a 640x480 frame */
    assert_int_equal(plan(r, 640, 480, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 0, 0, 640, 480);
    /* taller than a wide frame but narrower: the frame's height, still
     * centred across */
    m = mbox(900, 100, 1100, 1000);
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 100, 0, 1800, 1080);
    m = mbox(900, 300, 1000, 800); /* 2 x 500 = 1000 */
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 450, 50, 1000, 1000);
    osp_regions_free(r);
}

static void test_nearby_motion_is_one_region(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    /* a person in three pieces: one region holding all of them */
    osp_motion_box_t parts[] = {mbox(900, 400, 930, 440), mbox(905, 460, 935, 520),
                                mbox(940, 470, 960, 530)};
    assert_int_equal(plan(r, 1920, 1080, parts, 3, NULL, 0, out, 8), 1);
    assert_region(&out[0], 780, 314, 300, 300); /* 315 made even */
    for (int i = 0; i < 3; i++)
        assert_held(out, 1, parts[i].x1, parts[i].y1, parts[i].x2, parts[i].y2);
    /* two large boxes 10 apart (within cluster_gap): one cluster */
    osp_motion_box_t big[] = {mbox(200, 200, 400, 500), mbox(410, 220, 600, 480)};
    assert_int_equal(plan(r, 1920, 1080, big, 2, NULL, 0, out, 8), 1);
    assert_held(out, 1, 200, 200, 600, 500);
    assert_int_equal(out[0].w, 800);
    /* the same 300 apart are two: their regions hardly overlap */
    big[1] = mbox(700, 220, 900, 480);
    assert_int_equal(plan(r, 1920, 1080, big, 2, NULL, 0, out, 8), 2);
    assert_int_equal(out[0].w, 600);
    assert_int_equal(out[1].w, 520);
    /* two people far apart: two regions */
    osp_motion_box_t apart[] = {mbox(100, 100, 140, 200), mbox(1500, 800, 1540, 900)};
    assert_int_equal(plan(r, 1920, 1080, apart, 2, NULL, 0, out, 8), 2);
    assert_held(out, 2, 100, 100, 140, 200);
    assert_held(out, 2, 1500, 800, 1540, 900);
    osp_regions_free(r);

    /* merging only regions wholly inside others, the cluster rules alone
     * join: the pieces fit in one region of the model side, and the two
     * large boxes are within cluster_gap */
    p.merge_overlap = 1;
    r = make(&p);
    assert_int_equal(plan(r, 1920, 1080, parts, 3, NULL, 0, out, 8), 1);
    big[1] = mbox(410, 220, 600, 480);
    assert_int_equal(plan(r, 1920, 1080, big, 2, NULL, 0, out, 8), 1);
    big[1] = mbox(440, 220, 640, 480); /* 40 apart */
    assert_int_equal(plan(r, 1920, 1080, big, 2, NULL, 0, out, 8), 2);
    osp_regions_free(r);
}

static void test_overlapping_regions_merge(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    /* two tracked people side by side: 300-squares 100 apart overlap 2/3 */
    osp_det_t t[] = {tbox(500, 500, 540, 600), tbox(600, 500, 640, 600)};
    assert_int_equal(plan(r, 1920, 1080, NULL, 0, t, 2, out, 8), 1);
    assert_held(out, 1, 500, 500, 640, 600);
    assert_int_equal(out[0].from, OSP_REGION_TRACKED);
    /* 200 apart they overlap 1/3: two */
    t[1] = tbox(700, 500, 740, 600);
    assert_int_equal(plan(r, 1920, 1080, NULL, 0, t, 2, out, 8), 2);
    osp_regions_free(r);
    /* a stricter rule keeps the first pair apart too */
    p.merge_overlap = 0.9f;
    r = make(&p);
    t[1] = tbox(600, 500, 640, 600);
    assert_int_equal(plan(r, 1920, 1080, NULL, 0, t, 2, out, 8), 2);
    osp_regions_free(r);
}

static void test_tracked_region_covers_motion(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    osp_det_t t = tbox(1000, 300, 1050, 420);
    osp_motion_box_t m[] = {mbox(1010, 310, 1060, 430), mbox(200, 700, 240, 780)};
    assert_int_equal(plan(r, 1920, 1080, m, 2, &t, 1, out, 8), 2);
    assert_int_equal(out[0].from, OSP_REGION_TRACKED); /* the first motion box needs no region */
    assert_int_equal(out[1].from, OSP_REGION_MOTION);
    assert_held(out, 2, 1010, 310, 1060, 430);
    assert_held(out, 2, 200, 700, 240, 780);
    /* motion reaching out of the tracked box's region (875..1175), whose
     * own region overlaps that one by 0.53: one region, from both */
    m[0] = mbox(1140, 300, 1180, 400);
    assert_int_equal(plan(r, 1920, 1080, m, 1, &t, 1, out, 8), 1);
    assert_int_equal(out[0].from, OSP_REGION_TRACKED | OSP_REGION_MOTION);
    assert_held(out, 1, 1000, 300, 1180, 420);
    osp_regions_free(r);
}

static void test_the_cap(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    /* six people spread over a 4K frame, the cap 4 */
    osp_motion_box_t m[6];
    for (int i = 0; i < 6; i++)
        m[i] = mbox(200 + 600 * i, 1000 + 100 * (i % 2), 240 + 600 * i, 1100 + 100 * (i % 2));
    assert_int_equal(plan(r, 3840, 2160, m, 6, NULL, 0, out, 8), 4);
    for (int i = 0; i < 6; i++) assert_held(out, 4, m[i].x1, m[i].y1, m[i].x2, m[i].y2);
    for (int i = 0; i < 4; i++) assert_inside(&out[i], 3840, 2160);
    /* the caller's cap, lower still (the pairs' regions grow until one
     * holds another, and they merge) */
    int n = plan(r, 3840, 2160, m, 6, NULL, 0, out, 2);
    assert_true(n >= 1 && n <= 2);
    for (int i = 0; i < 6; i++) assert_held(out, n, m[i].x1, m[i].y1, m[i].x2, m[i].y2);
    assert_int_equal(plan(r, 3840, 2160, m, 6, NULL, 0, out, 1), 1);
    assert_region(&out[0], 0, 0, 3840, 2160);
    osp_regions_free(r);

    /* more boxes than the planner holds: they join others, none is lost */
    p.max_inputs = 3;
    r = make(&p);
    n = plan(r, 3840, 2160, m, 6, NULL, 0, out, 8);
    assert_true(n >= 1 && n <= 3);
    for (int i = 0; i < 6; i++) assert_held(out, n, m[i].x1, m[i].y1, m[i].x2, m[i].y2);
    osp_regions_free(r);
}

static void test_alignment_and_skipped_boxes(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[8];
    /* odd centres and an odd-sized box: even corners and sides */
    osp_motion_box_t m = mbox(501, 301, 652, 418); /* 151 wide: 302 */
    assert_int_equal(plan(r, 1919, 1079, &m, 1, NULL, 0, out, 8), 1);
    assert_true(out[0].x % 2 == 0 && out[0].y % 2 == 0);
    assert_true(out[0].w % 2 == 0 && out[0].h % 2 == 0);
    assert_int_equal(out[0].w, 302);
    assert_held(out, 1, 501, 301, 652, 418);
    /* at the odd edge of an odd frame it still ends inside */
    m = mbox(1900, 1060, 1919, 1079);
    assert_int_equal(plan(r, 1919, 1079, &m, 1, NULL, 0, out, 8), 1);
    assert_inside(&out[0], 1919, 1079);
    assert_held(out, 1, 1900, 1060, 1919, 1079);
    /* empty, off the frame and not numbers: nothing to look at */
    osp_motion_box_t none[] = {mbox(50, 50, 50, 90), mbox(2000, 10, 2100, 60),
                               mbox(300, 300, 200, 400)};
    osp_det_t bad[] = {tbox(NAN, 0, 10, 10), tbox(0, 0, INFINITY, 10), tbox(-90, -90, -10, -10)};
    assert_int_equal(plan(r, 1920, 1080, none, 3, bad, 3, out, 8), 0);
    osp_regions_free(r);
    p.align = 1;
    r = make(&p);
    m = mbox(501, 301, 652, 418);
    assert_int_equal(plan(r, 1920, 1080, &m, 1, NULL, 0, out, 8), 1);
    assert_region(&out[0], 426, 209, 302, 302); /* centre 576.5,359.5, rounded */
    osp_regions_free(r);
}

static void test_whole_frame_pass(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    p.full_every_s = 10;
    osp_regions_t *r = make(&p);
    assert_true(osp_regions_full_due(r, 1000.0)); /* at start, whatever the clock */
    assert_true(osp_regions_full_due(r, 1001.0)); /* until it is done */
    osp_regions_full_done(r, 1001.0);
    assert_false(osp_regions_full_due(r, 1001.0));
    assert_false(osp_regions_full_due(r, 1010.9));
    assert_true(osp_regions_full_due(r, 1011.0));
    osp_regions_full_done(r, 1012.0);
    assert_false(osp_regions_full_due(r, 1021.0));
    assert_true(osp_regions_full_due(r, 1022.5));
    osp_regions_free(r);
    p.full_every_s = 0;
    r = make(&p);
    assert_true(osp_regions_full_due(r, 5.0));
    osp_regions_full_done(r, 5.0);
    assert_false(osp_regions_full_due(r, 1e6));
    osp_regions_free(r);
}

static void test_back_to_the_frame(void **state) {
    (void)state;
    osp_region_t g = {.x = 700, .y = 400, .w = 300, .h = 300};
    osp_det_t d[2] = {tbox(10, 20, 110, 220), tbox(-5, 250, 320, 310)};
    d[0].n_kp = 1;
    d[0].kp[0][0] = 50;
    d[0].kp[0][1] = 60;
    osp_region_to_frame(&g, d, 2);
    assert_float_equal(d[0].x1, 710, 0);
    assert_float_equal(d[0].y1, 420, 0);
    assert_float_equal(d[0].x2, 810, 0);
    assert_float_equal(d[0].y2, 620, 0);
    assert_float_equal(d[0].kp[0][0], 750, 0);
    assert_float_equal(d[0].kp[0][1], 460, 0);
    assert_float_equal(d[0].score, 0.9f, 0);
    /* what spilled past the crop is cut at its edges */
    assert_float_equal(d[1].x1, 700, 0);
    assert_float_equal(d[1].y1, 650, 0);
    assert_float_equal(d[1].x2, 1000, 0);
    assert_float_equal(d[1].y2, 700, 0);
}

/* The cover of a 1080p frame for a 300 model: crops of 600 (twice the
 * least side), neighbours overlapping by at least 120, 4 across and 2
 * down, every pixel covered and every box up to 120 a side whole in one
 * crop; a frame no larger than a crop is one crop, the frame; a 4K frame
 * that would need more than cover_max gets larger crops. */
static void test_cover(void **state) {
    (void)state;
    osp_regions_params_t p;
    osp_regions_defaults(&p, 300);
    osp_regions_t *r = make(&p);
    osp_region_t out[16];
    int n = osp_regions_cover(r, 1920, 1080, out, 16);
    assert_int_equal(n, 8);
    for (int i = 0; i < n; i++) {
        assert_inside(&out[i], 1920, 1080);
        assert_true(out[i].w >= 600 && out[i].h >= 600 && out[i].w <= 602 && out[i].h <= 602);
        assert_int_equal(out[i].x % 2, 0);
        assert_int_equal(out[i].y % 2, 0);
        assert_int_equal(out[i].from, OSP_REGION_COVER);
    }
    assert_region(&out[0], 0, 0, 600, 600);
    assert_region(&out[1], 440, 0, 600, 600);
    assert_region(&out[7], 1320, 480, 600, 600);
    /* every box of 120 x 120, on a grid of 10 px, is whole in a crop */
    for (int y = 0; y + 120 <= 1080; y += 10)
        for (int x = 0; x + 120 <= 1920; x += 10) assert_held(out, n, x, y, x + 120, y + 120);
    /* small frames: the frame */
    assert_int_equal(osp_regions_cover(r, 600, 400, out, 16), 1);
    assert_region(&out[0], 0, 0, 600, 400);
    /* 8K at the cap, 16 crops at most */
    n = osp_regions_cover(r, 7680, 4320, out, 16);
    assert_true(n >= 2 && n <= 16);
    /* a cap: fewer, larger crops, still covering */
    n = osp_regions_cover(r, 3840, 2160, out, 16);
    assert_true(n >= 2 && n <= 16);
    for (int i = 0; i < n; i++) assert_inside(&out[i], 3840, 2160);
    for (int y = 0; y + 120 <= 2160; y += 40)
        for (int x = 0; x + 120 <= 3840; x += 40) assert_held(out, n, x, y, x + 120, y + 120);
    assert_true(osp_regions_cover(r, 1920, 1080, out, 3) <= 3);
    assert_int_equal(osp_regions_cover(r, 0, 1080, out, 16), OSP_MOTION_EINVAL);
    osp_regions_free(r);
}

static void refused(const osp_regions_params_t *p, const char *what) {
    char err[256] = "";
    osp_regions_t *r = (osp_regions_t *)&err; /* must come back NULL */
    assert_int_equal(osp_regions_create(p, &r, err, sizeof err), OSP_MOTION_EINVAL);
    assert_null(r);
    if (!strstr(err, what)) fail_msg("\"%s\" does not name %s", err, what);
}

static void test_bad_parameters(void **state) {
    (void)state;
    osp_regions_params_t d, p;
    osp_regions_defaults(&d, 300);
    p = d, p.model_side = 0, refused(&p, "model_side 0");
    p = d, p.min_side = -1, refused(&p, "min_side");
    p = d, p.factor = 0.5f, refused(&p, "factor 0.5");
    p = d, p.factor = NAN, refused(&p, "factor");
    p = d, p.cluster_gap = -1, refused(&p, "cluster_gap");
    p = d, p.merge_overlap = 0, refused(&p, "merge_overlap");
    p = d, p.max_regions = 0, refused(&p, "max_regions");
    p = d, p.align = 0, refused(&p, "align");
    p = d, p.full_every_s = -1, refused(&p, "full_every_s");
    p = d, p.max_inputs = 0, refused(&p, "max_inputs");
    p = d, p.cover_side = -1, refused(&p, "cover_side");
    p = d, p.cover_overlap = 0.6f, refused(&p, "cover_overlap");
    p = d, p.cover_max = 0, refused(&p, "cover_max");

    osp_regions_t *r = make(&d);
    osp_region_t out[4];
    osp_motion_box_t m = mbox(0, 0, 10, 10);
    char err[256] = "";
    assert_int_equal(osp_regions_plan(r, 0, 480, &m, 1, NULL, 0, out, 4, err, sizeof err),
                     OSP_MOTION_EINVAL);
    assert_non_null(strstr(err, "0x480"));
    assert_int_equal(osp_regions_plan(r, 640, 480, NULL, 1, NULL, 0, out, 4, err, sizeof err),
                     OSP_MOTION_EINVAL);
    assert_int_equal(osp_regions_plan(r, 640, 480, &m, 1, NULL, 0, out, 0, err, sizeof err),
                     OSP_MOTION_EINVAL);
    osp_regions_free(r);
    osp_regions_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_box_gets_the_model_side),
        cmocka_unit_test(test_edge_box_is_shifted_inside),
        cmocka_unit_test(test_bigger_than_the_frame_is_the_frame),
        cmocka_unit_test(test_nearby_motion_is_one_region),
        cmocka_unit_test(test_overlapping_regions_merge),
        cmocka_unit_test(test_tracked_region_covers_motion),
        cmocka_unit_test(test_the_cap),
        cmocka_unit_test(test_alignment_and_skipped_boxes),
        cmocka_unit_test(test_whole_frame_pass),
        cmocka_unit_test(test_back_to_the_frame),
        cmocka_unit_test(test_cover),
        cmocka_unit_test(test_bad_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
