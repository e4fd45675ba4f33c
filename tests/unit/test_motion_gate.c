/* The motion gate (src/motion/gate.c) on synthetic RGB frames: a still
 * scene runs the model on its first frame, at the end of motion's warm-up
 * and every OSP_MOTION_GATE_FULL_S seconds; a moving square runs it on
 * every frame and says it moved; a mask over the square keeps it still;
 * a new frame size starts again; a 4:2:0 frame is read by its luma; a
 * grey frame is always run; a bad mask is refused when the gate is made. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "motion/gate.h"

#define W 160
#define H 120

/* A textured still scene, with a bright square of side 24 at x, y (x < 0:
 * none), into img (RGB, W x H unless w, h say otherwise). */
static void frame(osp_image_t *img, int w, int h, int x, int y) {
    assert_int_equal(osp_image_reserve(img, w, h, OSP_PIX_RGB), 0);
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            uint8_t v = (uint8_t)(60 + ((i / 8 + j / 8) % 2) * 40);
            if (x >= 0 && i >= x && i < x + 24 && j >= y && j < y + 24) v = 250;
            uint8_t *p = img->data + (size_t)j * (size_t)img->stride + (size_t)i * 3;
            p[0] = p[1] = p[2] = v;
        }
}

/* The same scene as a 4:2:0 frame of fmt (I420 or J420): its luma the
 * grey levels above, its chroma neutral. */
static void frame420(osp_image_t *img, osp_pixfmt_t fmt, int x, int y) {
    osp_image_t rgb = {0};
    frame(&rgb, W, H, x, y);
    size_t n = osp_yuv420_bytes(W, H);
    img->data = realloc(img->data, n);
    assert_non_null(img->data);
    img->cap = n;
    img->width = img->stride = W;
    img->height = H;
    img->fmt = fmt;
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) img->data[j * W + i] = rgb.data[j * rgb.stride + i * 3];
    memset(img->data + W * H, 128, n - W * H);
    osp_image_free(&rgb);
}

static osp_motion_gate_t *gate(const osp_motion_poly_t *masks, int n) {
    char err[256] = "";
    osp_motion_gate_t *g = NULL;
    int rc = osp_motion_gate_new(masks, n, &g, err, sizeof err);
    if (rc) print_error("gate: %s\n", err);
    assert_int_equal(rc, 0);
    return g;
}

/* The gate's answer for img at time t; *moved its motion. */
static int pass(osp_motion_gate_t *g, const osp_image_t *img, double t, int *moved) {
    char err[256] = "";
    int run = osp_motion_gate_frame(g, img, t, moved, err, sizeof err);
    if (run < 0) print_error("frame: %s\n", err);
    assert_true(run == 0 || run == 1);
    return run;
}

static void test_still_scene_runs_now_and_then(void **state) {
    (void)state;
    osp_image_t img = {0};
    osp_motion_gate_t *g = gate(NULL, 0);
    frame(&img, W, H, -1, 0);
    int runs[300], moved;
    for (int i = 0; i < 300; i++) { /* 30 s at 10 frames/s */
        runs[i] = pass(g, &img, i * 0.1, &moved);
        assert_int_equal(moved, 0);
    }
    /* the first frame; the first motion can tell about (after its 5 frames
     * of warm-up); then 10 s after the last run, twice */
    for (int i = 0; i < 300; i++)
        assert_int_equal(runs[i], i == 0 || i == 5 || i == 105 || i == 205);
    /* a clock that goes back runs the model */
    assert_int_equal(pass(g, &img, 1.0, &moved), 1);
    /* a run that never reached the model is owed: the next frame goes, once */
    assert_int_equal(pass(g, &img, 1.1, &moved), 0);
    osp_motion_gate_not_run(g);
    assert_int_equal(pass(g, &img, 1.2, &moved), 1);
    assert_int_equal(pass(g, &img, 1.3, &moved), 0);
    osp_motion_gate_free(g);
    osp_image_free(&img);
}

/* The still scene through g until motion knows it (6 frames, 0.1 s apart),
 * then the square moving right along row y for 10 frames: each answered
 * run_and_moved (1: run, and moved; 0: neither). */
static void square_moves(osp_motion_gate_t *g, int y, int run_and_moved) {
    osp_image_t img = {0};
    int moved;
    for (int i = 0; i < 6; i++) {
        frame(&img, W, H, -1, 0);
        pass(g, &img, i * 0.1, &moved);
    }
    for (int i = 0; i < 10; i++) {
        frame(&img, W, H, 10 + 8 * i, y);
        assert_int_equal(pass(g, &img, 0.6 + i * 0.1, &moved), run_and_moved);
        assert_int_equal(moved, run_and_moved);
    }
    osp_image_free(&img);
}

static void test_moving_square_runs_every_frame(void **state) {
    (void)state;
    osp_motion_gate_t *g = gate(NULL, 0);
    square_moves(g, 60, 1);
    osp_motion_gate_free(g);
}

static void test_mask_keeps_its_motion_out(void **state) {
    (void)state;
    /* the lower part of the frame, where the square moves; the caller's
     * points are copied: overwritten after the gate is made */
    float xy[] = {0, 0.3f, 1, 0.3f, 1, 1, 0, 1};
    osp_motion_poly_t mask = {xy, 4};
    osp_motion_gate_t *g = gate(&mask, 1);
    memset(xy, 0, sizeof xy);
    square_moves(g, 60, 0);
    osp_motion_gate_free(g);
}

static void test_new_size_and_other_formats(void **state) {
    (void)state;
    osp_motion_gate_t *g = gate(NULL, 0);
    osp_image_t img = {0};
    int moved;
    for (int i = 0; i < 10; i++) {
        frame(&img, W, H, -1, 0);
        pass(g, &img, i * 0.1, &moved);
    }
    /* a new size: a new background, learnt as at the start */
    frame(&img, W / 2, H / 2, -1, 0);
    int runs = 0;
    for (int i = 0; i < 10; i++) runs += pass(g, &img, 1 + i * 0.1, &moved);
    assert_int_equal(runs, 2); /* as its motion starts and once it can tell */
    /* grey: not looked at, run */
    assert_int_equal(osp_image_reserve(&img, W, H, OSP_PIX_GRAY), 0);
    memset(img.data, 90, (size_t)img.stride * H);
    assert_int_equal(pass(g, &img, 3, &moved), 1);
    assert_int_equal(moved, 0);
    osp_motion_gate_free(g);
    osp_image_free(&img);
}

/* A 4:2:0 frame is read by its Y plane: the still scene runs as an RGB one
 * does, and the square moving in it runs every frame and moved; an RGB
 * frame after them is read by the luma made of it. */
static void test_yuv_frames_are_read_by_their_luma(void **state) {
    (void)state;
    for (osp_pixfmt_t fmt = OSP_PIX_I420; fmt <= OSP_PIX_J420; fmt++) {
        osp_motion_gate_t *g = gate(NULL, 0);
        osp_image_t img = {0};
        int moved, runs = 0;
        for (int i = 0; i < 30; i++) {
            frame420(&img, fmt, -1, 0);
            runs += pass(g, &img, i * 0.1, &moved);
            assert_int_equal(moved, 0);
        }
        assert_int_equal(runs, 2); /* the first frame, and once motion can tell */
        for (int i = 0; i < 10; i++) {
            frame420(&img, fmt, 10 + 8 * i, 60);
            assert_int_equal(pass(g, &img, 3 + i * 0.1, &moved), 1);
            assert_int_equal(moved, 1);
        }
        /* an RGB frame of the same size after them, its luma made by the
         * gate (which the 4:2:0 frames did not need): read the same way */
        frame(&img, W, H, 10 + 8 * 10, 60);
        assert_int_equal(pass(g, &img, 4, &moved), 1);
        assert_int_equal(moved, 1);
        osp_motion_gate_free(g);
        osp_image_free(&img);
    }
}

static void test_bad_masks_are_refused(void **state) {
    (void)state;
    float xy[] = {0, 0, 1, 0, 1, 1.5f};
    char err[256] = "";
    osp_motion_gate_t *g = (osp_motion_gate_t *)&err; /* set to NULL on failure */
    osp_motion_poly_t out_of_frame = {xy, 3}, two = {xy, 2}, no_points = {NULL, 3};
    assert_int_equal(osp_motion_gate_new(&out_of_frame, 1, &g, err, sizeof err), -1);
    assert_null(g);
    assert_non_null(strstr(err, "not within 0..1"));
    assert_int_equal(osp_motion_gate_new(&two, 1, &g, err, sizeof err), -1);
    assert_non_null(strstr(err, "a polygon needs 3"));
    assert_int_equal(osp_motion_gate_new(&no_points, 1, &g, err, sizeof err), -1);
    assert_int_equal(osp_motion_gate_new(NULL, 2, &g, err, sizeof err), -1);
    float tri[] = {0, 0, 1, 0, 1, 1};
    osp_motion_poly_t many[OSP_MOTION_MAX_MASKS + 1];
    for (int i = 0; i <= OSP_MOTION_MAX_MASKS; i++) many[i] = (osp_motion_poly_t){tri, 3};
    assert_int_equal(osp_motion_gate_new(many, OSP_MOTION_MAX_MASKS, &g, err, sizeof err), 0);
    osp_motion_gate_free(g);
    assert_int_equal(osp_motion_gate_new(many, OSP_MOTION_MAX_MASKS + 1, &g, err, sizeof err), -1);
    assert_null(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_still_scene_runs_now_and_then),
        cmocka_unit_test(test_moving_square_runs_every_frame),
        cmocka_unit_test(test_mask_keeps_its_motion_out),
        cmocka_unit_test(test_new_size_and_other_formats),
        cmocka_unit_test(test_yuv_frames_are_read_by_their_luma),
        cmocka_unit_test(test_bad_masks_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
