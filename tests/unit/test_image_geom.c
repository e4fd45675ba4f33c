/*
 * Geometry of PROTOCOL.md §6: every expected value below is worked out by
 * hand from the rules (scale = min(tw/w, th/h); content = floor(side*scale);
 * pad split evenly, the left/top half rounded down), not from the code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "image/image.h"

#define EPS 1e-6f

static void expect_geom(int w, int h, int tw, int th, osp_fit_t fit, float sx, float sy, int pad_x,
                        int pad_y, int cw, int ch) {
    osp_geom_t g;
    osp_geom_compute(w, h, tw, th, fit, &g);
    assert_true(g.scale_x > sx - EPS && g.scale_x < sx + EPS);
    assert_true(g.scale_y > sy - EPS && g.scale_y < sy + EPS);
    assert_int_equal(g.pad_x, pad_x);
    assert_int_equal(g.pad_y, pad_y);
    assert_int_equal(g.content_w, cw);
    assert_int_equal(g.content_h, ch);
}

static void test_square(void **state) {
    (void)state;
    /* 1000x1000 -> 640: scale .64, fills the input. */
    expect_geom(1000, 1000, 640, 640, OSP_FIT_LETTERBOX, 0.64f, 0.64f, 0, 0, 640, 640);
    /* 200x200 -> 300: upscale 1.5. */
    expect_geom(200, 200, 300, 300, OSP_FIT_LETTERBOX, 1.5f, 1.5f, 0, 0, 300, 300);
}

static void test_wide(void **state) {
    (void)state;
    /* 1920x1080 -> 640: scale 1/3, 640 x 360, pad (640-360)/2 = 140. */
    expect_geom(1920, 1080, 640, 640, OSP_FIT_LETTERBOX, 1.0f / 3, 1.0f / 3, 0, 140, 640, 360);
    /* 1920x1080 -> 320x240 (4:3): 320/1920 = 1/6 < 240/1080, content
     * 320 x 180, pad_y 30. */
    expect_geom(1920, 1080, 320, 240, OSP_FIT_LETTERBOX, 1.0f / 6, 1.0f / 6, 0, 30, 320, 180);
}

static void test_tall(void **state) {
    (void)state;
    /* 1080x1920 -> 640: scale 1/3, 360 x 640, pad_x 140. */
    expect_geom(1080, 1920, 640, 640, OSP_FIT_LETTERBOX, 1.0f / 3, 1.0f / 3, 140, 0, 360, 640);
    /* 480x640 -> 300: scale 300/640, content floor(480*300/640) = 225,
     * pad (300-225)/2 = 37.5 -> 37 left, 38 right. */
    expect_geom(480, 640, 300, 300, OSP_FIT_LETTERBOX, 300.0f / 640, 300.0f / 640, 37, 0, 225, 300);
}

static void test_odd(void **state) {
    (void)state;
    /* 641x479 -> 320: width limits (320/641 < 320/479); content_h =
     * floor(479*320/641) = floor(239.13) = 239; pad 81 -> 40 top, 41 bottom. */
    expect_geom(641, 479, 320, 320, OSP_FIT_LETTERBOX, 320.0f / 641, 320.0f / 641, 0, 40, 320, 239);
    /* Transposed: 479x641 -> pad_x 40. */
    expect_geom(479, 641, 320, 320, OSP_FIT_LETTERBOX, 320.0f / 641, 320.0f / 641, 40, 0, 239, 320);
    /* 333x111 -> 100: content 100 x floor(111*100/333) = 33 (exactly
     * 33.33), pad 67 -> 33 top. */
    expect_geom(333, 111, 100, 100, OSP_FIT_LETTERBOX, 100.0f / 333, 100.0f / 333, 0, 33, 100, 33);
}

/* Products that are whole numbers must not lose a row to float rounding:
 * 1080 * (640/1920) in floats is 359.99997 on some paths. */
static void test_exact_products(void **state) {
    (void)state;
    expect_geom(1280, 720, 640, 640, OSP_FIT_LETTERBOX, 0.5f, 0.5f, 0, 140, 640, 360);
    expect_geom(1000, 750, 640, 640, OSP_FIT_LETTERBOX, 0.64f, 0.64f, 0, 80, 640, 480);
    expect_geom(2560, 1440, 416, 416, OSP_FIT_LETTERBOX, 416.0f / 2560, 416.0f / 2560, 0, 91, 416,
                234);
    expect_geom(1920, 1080, 384, 384, OSP_FIT_LETTERBOX, 0.2f, 0.2f, 0, 84, 384, 216);
}

static void test_already_sized(void **state) {
    (void)state;
    /* At the target size: scale 1, no pad. */
    expect_geom(640, 640, 640, 640, OSP_FIT_LETTERBOX, 1, 1, 0, 0, 640, 640);
    expect_geom(300, 300, 300, 300, OSP_FIT_RESIZE, 1, 1, 0, 0, 300, 300);
    /* At the content size: scale 1, only padded. */
    expect_geom(640, 360, 640, 640, OSP_FIT_LETTERBOX, 1, 1, 0, 140, 640, 360);
    expect_geom(239, 320, 320, 320, OSP_FIT_LETTERBOX, 1, 1, 40, 0, 239, 320);
}

static void test_resize(void **state) {
    (void)state;
    expect_geom(1920, 1080, 300, 300, OSP_FIT_RESIZE, 300.0f / 1920, 300.0f / 1080, 0, 0, 300, 300);
    expect_geom(100, 50, 320, 240, OSP_FIT_RESIZE, 3.2f, 4.8f, 0, 0, 320, 240);
}

static void test_degenerate(void **state) {
    (void)state;
    /* Bad sizes give an all-zero mapping rather than a division by zero. */
    expect_geom(0, 100, 640, 640, OSP_FIT_LETTERBOX, 0, 0, 0, 0, 0, 0);
    expect_geom(100, 100, 0, 640, OSP_FIT_LETTERBOX, 0, 0, 0, 0, 0, 0);
    /* A 1-pixel sliver keeps one column: floor(1*640/5000) = 0 -> 1,
     * pad (640-1)/2 = 319. */
    expect_geom(1, 5000, 640, 640, OSP_FIT_LETTERBOX, 0.128f, 0.128f, 319, 0, 1, 640);
}

/* The rules as invariants over many sizes: content within the input and
 * touching it on one axis, equal to floor(side * tw / w) exactly, pads
 * split with the extra pixel on the right/bottom. */
static void test_invariants(void **state) {
    (void)state;
    static const int targets[][2] = {{640, 640}, {300, 300}, {320, 240}, {128, 96}, {1, 1}};
    for (size_t t = 0; t < sizeof(targets) / sizeof(targets[0]); t++) {
        int tw = targets[t][0], th = targets[t][1];
        for (int w = 1; w <= 2000; w += 37) {
            for (int h = 1; h <= 2000; h += 41) {
                osp_geom_t g;
                osp_geom_compute(w, h, tw, th, OSP_FIT_LETTERBOX, &g);
                assert_true(g.content_w >= 1 && g.content_w <= tw);
                assert_true(g.content_h >= 1 && g.content_h <= th);
                assert_true(g.content_w == tw || g.content_h == th);
                long long ew, eh; /* expected, exact rationals */
                if ((long long)tw * h <= (long long)th * w) {
                    ew = tw;
                    eh = (long long)h * tw / w;
                } else {
                    eh = th;
                    ew = (long long)w * th / h;
                }
                if (ew < 1) ew = 1;
                if (eh < 1) eh = 1;
                assert_int_equal(g.content_w, ew);
                assert_int_equal(g.content_h, eh);
                int rx = tw - g.content_w - g.pad_x, ry = th - g.content_h - g.pad_y;
                assert_true(rx == g.pad_x || rx == g.pad_x + 1);
                assert_true(ry == g.pad_y || ry == g.pad_y + 1);
                assert_true(g.scale_x == g.scale_y);
            }
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_square),         cmocka_unit_test(test_wide),
        cmocka_unit_test(test_tall),           cmocka_unit_test(test_odd),
        cmocka_unit_test(test_exact_products), cmocka_unit_test(test_already_sized),
        cmocka_unit_test(test_resize),         cmocka_unit_test(test_degenerate),
        cmocka_unit_test(test_invariants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
