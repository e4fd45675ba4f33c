/* The motion detector (src/motion/motion.c) on synthetic luma planes: a
 * still scene stays still after the warm-up, a moving square is one box
 * where it is (in frame pixels), a mask hides it, a change of light
 * recalibrates instead of moving, noise below the threshold is nothing,
 * odd sizes and strides are read right, and bad parameters are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "motion/motion.h"

#define MAXW 800
#define MAXH 600

static uint8_t plane[MAXH * (MAXW + 32)];

typedef struct {
    int w, h, stride;
} geo_t;

static int clamp8(int v) { return v < 0 ? 0 : v > 255 ? 255 : v; }

/* A still scene with texture (a checkerboard over a gradient), brighter by
 * `light`; the padding past each row's width is filled with `pad`. */
static void scene(geo_t g, int light, uint8_t pad) {
    for (int y = 0; y < g.h; y++) {
        uint8_t *row = plane + (size_t)y * (size_t)g.stride;
        for (int x = 0; x < g.w; x++)
            row[x] = (uint8_t)clamp8(60 + ((x / 16 + y / 16) % 2) * 40 + x * 40 / g.w + light);
        memset(row + g.w, pad, (size_t)(g.stride - g.w));
    }
}

/* A square of side s with its top left corner at x, y, at luma v. */
static void square(geo_t g, int x, int y, int s, uint8_t v) {
    for (int j = y; j < y + s && j < g.h; j++)
        for (int i = x; i < x + s && i < g.w; i++)
            plane[(size_t)j * (size_t)g.stride + (size_t)i] = v;
}

static osp_motion_t *make(const osp_motion_params_t *p, geo_t g) {
    char err[256] = "";
    osp_motion_t *m = NULL;
    int rc = osp_motion_create(p, g.w, g.h, &m, err, sizeof err);
    if (rc) print_error("create: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(m);
    return m;
}

static osp_motion_result_t feed(osp_motion_t *m, geo_t g) {
    char err[256] = "";
    osp_motion_result_t r;
    int rc = osp_motion_update(m, plane, g.w, g.h, g.stride, &r, err, sizeof err);
    if (rc) print_error("update: %s\n", err);
    assert_int_equal(rc, 0);
    return r;
}

/* The warm-up on the still scene; the state after it. */
static void warm_up(osp_motion_t *m, geo_t g, const osp_motion_params_t *p) {
    for (int i = 0; i < p->settle_frames; i++) {
        scene(g, 0, 0);
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.state, OSP_MOTION_WARMING);
        assert_int_equal(r.n_boxes, 0);
    }
}

/* Box b holds the square (x, y, s) and reaches past it by at most `slack`
 * frame pixels on any side (the dilation and the small frame's cells). */
static void assert_around(const osp_motion_box_t *b, int x, int y, int s, int slack) {
    if (!(b->x1 <= x && b->y1 <= y && b->x2 >= x + s && b->y2 >= y + s && b->x1 >= x - slack &&
          b->y1 >= y - slack && b->x2 <= x + s + slack && b->y2 <= y + s + slack))
        fail_msg("box %d,%d-%d,%d is not around the square %d,%d side %d (slack %d)", b->x1, b->y1,
                 b->x2, b->y2, x, y, s, slack);
}

static void test_still_scene_is_still(void **state) {
    (void)state;
    geo_t g = {640, 480, 640};
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    osp_motion_t *m = make(&p, g);
    int sw, sh;
    osp_motion_small_size(m, &sw, &sh);
    assert_int_equal(sh, 100);
    assert_int_equal(sw, 133);
    warm_up(m, g, &p);
    for (int i = 0; i < 30; i++) {
        scene(g, 0, 0);
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.state, OSP_MOTION_ACTIVE);
        assert_int_equal(r.n_boxes, 0);
        assert_true(r.share == 0.0f);
    }
    osp_motion_free(m);
}

static void test_moving_square_is_one_box(void **state) {
    (void)state;
    geo_t g = {640, 480, 640};
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    osp_motion_t *m = make(&p, g);
    warm_up(m, g, &p);
    /* 640 / 133 frame pixels a small pixel: one cell of the dilation and
     * one of rounding on each side */
    int slack = 2 * 640 / 133 + 2;
    for (int k = 0; k < 12; k++) {
        int x = 100 + 17 * k, y = 300 - 9 * k;
        scene(g, 0, 0);
        square(g, x, y, 48, 230);
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.state, OSP_MOTION_ACTIVE);
        assert_int_equal(r.n_boxes, 1);
        assert_int_equal(r.n_dropped, 0);
        assert_around(&r.boxes[0], x, y, 48, slack);
        assert_true(r.share > 0.005f && r.share < 0.05f);
    }
    osp_motion_free(m);
}

static void test_mask_hides_motion(void **state) {
    (void)state;
    geo_t g = {640, 480, 640};
    /* a triangle over the top left and a square over the bottom right */
    static const float tri[] = {0, 0, 0.5f, 0, 0, 0.5f};
    static const float box[] = {0.6f, 0.6f, 1, 0.6f, 1, 1, 0.6f, 1};
    osp_motion_poly_t masks[] = {{tri, 3}, {box, 4}};
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    p.masks = masks;
    p.n_masks = 2;
    osp_motion_t *m = make(&p, g);
    warm_up(m, g, &p);
    /* inside the triangle (near its corner) and inside the square */
    scene(g, 0, 0);
    square(g, 20, 20, 60, 250);
    square(g, 450, 350, 100, 250);
    osp_motion_result_t r = feed(m, g);
    assert_int_equal(r.state, OSP_MOTION_ACTIVE);
    assert_int_equal(r.n_boxes, 0);
    assert_true(r.share == 0.0f);
    /* the same square outside both masks (below the triangle's hypotenuse) */
    scene(g, 0, 0);
    square(g, 200, 200, 60, 250);
    r = feed(m, g);
    assert_int_equal(r.n_boxes, 1);
    assert_around(&r.boxes[0], 200, 200, 60, 2 * 640 / 133 + 2);
    /* one straddling the square mask's edge is cut at the edge */
    scene(g, 0, 0);
    square(g, 300, 330, 150, 250); /* x 300..450, the mask starts at 384 */
    r = feed(m, g);
    assert_int_equal(r.n_boxes, 1);
    assert_true(r.boxes[0].x2 <= 384 + 5 && r.boxes[0].x2 >= 384 - 5);
    assert_true(r.boxes[0].x1 <= 300);
    osp_motion_free(m);
}

static void test_light_change_recalibrates(void **state) {
    (void)state;
    geo_t g = {640, 480, 640};
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    p.settle_frames = 3;
    osp_motion_t *m = make(&p, g);
    warm_up(m, g, &p);
    /* the lights go on: +80 everywhere */
    for (int i = 0; i < p.settle_frames; i++) {
        scene(g, 80, 0);
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.state, OSP_MOTION_RECALIBRATING);
        assert_int_equal(r.n_boxes, 0);
        if (i == 0) assert_true(r.share > 0.8f);
    }
    for (int i = 0; i < 10; i++) {
        scene(g, 80, 0);
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.state, OSP_MOTION_ACTIVE);
        assert_int_equal(r.n_boxes, 0);
    }
    /* and motion is seen again in the new light */
    scene(g, 80, 0);
    square(g, 300, 100, 40, 10);
    osp_motion_result_t r = feed(m, g);
    assert_int_equal(r.state, OSP_MOTION_ACTIVE);
    assert_int_equal(r.n_boxes, 1);
    /* a change of half the frame is motion, not light */
    scene(g, 80, 0);
    square(g, 0, 0, 480, 250);
    r = feed(m, g);
    assert_int_equal(r.state, OSP_MOTION_ACTIVE);
    assert_true(r.share > 0.4f && r.share < 0.8f);
    assert_int_equal(r.n_boxes, 1);
    osp_motion_free(m);
}

static void test_noise_below_threshold(void **state) {
    (void)state;
    geo_t g = {640, 480, 640};
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    osp_motion_t *m = make(&p, g);
    warm_up(m, g, &p);
    srand(7);
    for (int f = 0; f < 40; f++) {
        scene(g, 0, 0);
        /* sensor noise of +-30 a pixel, and a flicker of the whole picture
         * by up to +-10: neither moves the area averages by 30 */
        int flicker = rand() % 21 - 10;
        for (int y = 0; y < g.h; y++)
            for (int x = 0; x < g.w; x++) {
                uint8_t *px = &plane[(size_t)y * (size_t)g.stride + (size_t)x];
                *px = (uint8_t)clamp8(*px + flicker + rand() % 61 - 30);
            }
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.state, OSP_MOTION_ACTIVE);
        assert_int_equal(r.n_boxes, 0);
    }
    /* just above the threshold is seen */
    scene(g, 0, 0);
    for (int y = 200; y < 280; y++)
        for (int x = 200; x < 280; x++) plane[(size_t)y * (size_t)g.stride + (size_t)x] += 36;
    osp_motion_result_t r = feed(m, g);
    assert_int_equal(r.n_boxes, 1);
    osp_motion_free(m);
}

static void test_odd_sizes_and_strides(void **state) {
    (void)state;
    geo_t g = {333, 217, 347};
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    osp_motion_t *m = make(&p, g);
    int sw, sh;
    osp_motion_small_size(m, &sw, &sh);
    assert_int_equal(sh, 100);
    assert_int_equal(sw, 153); /* 333 * 100 / 217, rounded */
    warm_up(m, g, &p);
    /* the bytes past each row's width change every frame: not pixels */
    for (int k = 0; k < 5; k++) {
        scene(g, 0, (uint8_t)(k * 60));
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.n_boxes, 0);
    }
    scene(g, 0, 0);
    square(g, 301, 185, 32, 250); /* touching the right and bottom edges */
    osp_motion_result_t r = feed(m, g);
    assert_int_equal(r.n_boxes, 1);
    assert_around(&r.boxes[0], 301, 185, 32, 2 * 333 / 153 + 2);
    assert_int_equal(r.boxes[0].x2, 333);
    assert_int_equal(r.boxes[0].y2, 217);
    osp_motion_free(m);

    /* without the dilation the box still holds every pixel of the square,
     * though its edges fall inside small pixels */
    p.dilate = 0;
    m = make(&p, g);
    warm_up(m, g, &p);
    scene(g, 0, 0);
    square(g, 100, 50, 20, 250);
    r = feed(m, g);
    assert_int_equal(r.n_boxes, 1);
    assert_around(&r.boxes[0], 100, 50, 20, 333 / 153 + 1);
    osp_motion_free(m);

    /* a frame smaller than the small frame is used as it is */
    geo_t t = {7, 5, 9};
    p.min_area = 1;
    p.dilate = 0;
    m = make(&p, t);
    osp_motion_small_size(m, &sw, &sh);
    assert_int_equal(sw, 7);
    assert_int_equal(sh, 5);
    for (int i = 0; i < p.settle_frames; i++) {
        memset(plane, 100, sizeof plane);
        feed(m, t);
    }
    memset(plane, 100, sizeof plane);
    plane[2 * 9 + 3] = 200;
    r = feed(m, t);
    assert_int_equal(r.n_boxes, 1);
    assert_int_equal(r.boxes[0].x1, 3);
    assert_int_equal(r.boxes[0].y1, 2);
    assert_int_equal(r.boxes[0].x2, 4);
    assert_int_equal(r.boxes[0].y2, 3);
    osp_motion_free(m);
}

static void test_min_area_and_max_boxes(void **state) {
    (void)state;
    geo_t g = {665, 500, 665}; /* small pixels of exactly 5x5 */
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    p.max_boxes = 3;
    osp_motion_t *m = make(&p, g);
    warm_up(m, g, &p);
    /* one small pixel is 3x3 after the dilation: below 10 */
    scene(g, 0, 0);
    square(g, 100, 100, 5, 250);
    osp_motion_result_t r = feed(m, g);
    assert_int_equal(r.n_boxes, 0);
    assert_true(r.share > 0);
    /* two side by side are 4x3: kept */
    scene(g, 0, 0);
    square(g, 100, 100, 5, 250);
    square(g, 105, 100, 5, 250);
    r = feed(m, g);
    assert_int_equal(r.n_boxes, 1);
    assert_int_equal(r.boxes[0].small_px, 12);
    assert_int_equal(r.boxes[0].x1, 95);
    assert_int_equal(r.boxes[0].x2, 115);
    /* five squares of growing size: the three largest, largest first */
    scene(g, 0, 0);
    for (int i = 0; i < 5; i++) square(g, 20 + 120 * i, 200, 20 + 10 * i, 250);
    r = feed(m, g);
    assert_int_equal(r.n_boxes, 3);
    assert_int_equal(r.n_dropped, 2);
    assert_true(r.boxes[0].small_px > r.boxes[1].small_px);
    assert_true(r.boxes[1].small_px > r.boxes[2].small_px);
    assert_around(&r.boxes[0], 20 + 480, 200, 60, 12);
    assert_around(&r.boxes[2], 20 + 240, 200, 40, 12);
    osp_motion_free(m);
}

static void test_reset_warms_up_again(void **state) {
    (void)state;
    geo_t g = {640, 480, 640};
    osp_motion_params_t p;
    osp_motion_defaults(&p);
    osp_motion_t *m = make(&p, g);
    warm_up(m, g, &p);
    osp_motion_reset(m);
    /* a new picture after the reset is learnt, not reported */
    for (int i = 0; i < p.settle_frames; i++) {
        scene(g, 0, 0);
        square(g, 200, 200, 100, 250);
        osp_motion_result_t r = feed(m, g);
        assert_int_equal(r.state, OSP_MOTION_WARMING);
    }
    osp_motion_result_t r = feed(m, g);
    assert_int_equal(r.state, OSP_MOTION_ACTIVE);
    assert_int_equal(r.n_boxes, 0);
    osp_motion_free(m);
}

/* create refuses p with err naming `what`. */
static void refused(const osp_motion_params_t *p, int w, int h, const char *what) {
    char err[256] = "";
    osp_motion_t *m = (osp_motion_t *)&err; /* must come back NULL */
    assert_int_equal(osp_motion_create(p, w, h, &m, err, sizeof err), OSP_MOTION_EINVAL);
    assert_null(m);
    if (!strstr(err, what)) fail_msg("\"%s\" does not name %s", err, what);
}

static void test_bad_parameters(void **state) {
    (void)state;
    osp_motion_params_t d, p;
    osp_motion_defaults(&d);
    refused(&d, 0, 480, "frame size");
    refused(&d, 640, 20000, "frame size");
    p = d, p.frame_height = 4, refused(&p, 640, 480, "frame_height");
    p = d, p.alpha = 0, refused(&p, 640, 480, "alpha");
    p = d, p.alpha = 1.5f, refused(&p, 640, 480, "alpha");
    p = d, p.threshold = 0, refused(&p, 640, 480, "threshold");
    p = d, p.threshold = 300, refused(&p, 640, 480, "threshold");
    p = d, p.dilate = -1, refused(&p, 640, 480, "dilate");
    p = d, p.min_area = 0, refused(&p, 640, 480, "min_area");
    p = d, p.lightning = 0, refused(&p, 640, 480, "lightning");
    p = d, p.settle_frames = 0, refused(&p, 640, 480, "settle_frames");
    p = d, p.max_boxes = 0, refused(&p, 640, 480, "max_boxes");
    p = d, p.n_masks = 1, refused(&p, 640, 480, "n_masks"); /* no masks given */
    static const float two[] = {0, 0, 1, 1};
    static const float out[] = {0, 0, 1.2f, 0, 0, 1};
    osp_motion_poly_t q = {two, 2};
    p = d, p.masks = &q, p.n_masks = 1, refused(&p, 640, 480, "mask 0 has 2 points");
    q = (osp_motion_poly_t){out, 3};
    refused(&p, 640, 480, "mask 0, point 1: x 1.2");

    /* a frame of another size, or no frame, is refused and changes nothing */
    geo_t g = {640, 480, 640};
    osp_motion_t *m = make(&d, g);
    char err[256] = "";
    osp_motion_result_t r;
    assert_int_equal(osp_motion_update(m, plane, 641, 480, 641, &r, err, sizeof err),
                     OSP_MOTION_EINVAL);
    assert_non_null(strstr(err, "641x480"));
    assert_int_equal(r.n_boxes, 0);
    assert_int_equal(osp_motion_update(m, plane, 640, 480, 600, &r, err, sizeof err),
                     OSP_MOTION_EINVAL);
    assert_int_equal(osp_motion_update(m, NULL, 640, 480, 640, &r, err, sizeof err),
                     OSP_MOTION_EINVAL);
    assert_non_null(strstr(err, "no pixels"));
    warm_up(m, g, &d); /* still a whole warm-up to go */
    osp_motion_free(m);
    osp_motion_free(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_still_scene_is_still),
        cmocka_unit_test(test_moving_square_is_one_box),
        cmocka_unit_test(test_mask_hides_motion),
        cmocka_unit_test(test_light_change_recalibrates),
        cmocka_unit_test(test_noise_below_threshold),
        cmocka_unit_test(test_odd_sizes_and_strides),
        cmocka_unit_test(test_min_area_and_max_boxes),
        cmocka_unit_test(test_reset_warms_up_again),
        cmocka_unit_test(test_bad_parameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
