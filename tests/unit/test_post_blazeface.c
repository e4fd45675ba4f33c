/* BlazeFace anchors and decode. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "post/post.h"

static void test_anchors(void **s) {
    (void)s;
    static osp_anchor_t a[1000];
    assert_int_equal(osp_blazeface_anchors(128, NULL, 0), 896);
    assert_int_equal(osp_blazeface_anchors(128, a, 1000), 896);
    /* 16x16 grid, 2 per cell: anchors 0 and 1 share the first cell */
    assert_float_equal(a[0].x, 0.5 / 16, 1e-7);
    assert_float_equal(a[0].y, 0.5 / 16, 1e-7);
    assert_float_equal(a[1].x, 0.5 / 16, 1e-7);
    assert_float_equal(a[2].x, 1.5 / 16, 1e-7);
    assert_float_equal(a[511].x, 15.5 / 16, 1e-7);
    assert_float_equal(a[511].y, 15.5 / 16, 1e-7);
    /* then the 8x8 grid, 6 per cell */
    assert_float_equal(a[512].x, 0.5 / 8, 1e-7);
    assert_float_equal(a[517].x, 0.5 / 8, 1e-7);
    assert_float_equal(a[518].x, 1.5 / 8, 1e-7);
    assert_float_equal(a[895].y, 7.5 / 8, 1e-7);
    assert_float_equal(a[895].w, 1.0, 0);
}

static void test_decode(void **s) {
    (void)s;
    osp_anchor_t a[3] = {{.x = 0.25f, .y = 0.5f, .w = 1, .h = 1},
                         {.x = 0.5f, .y = 0.5f, .w = 1, .h = 1},
                         {.x = 0.75f, .y = 0.75f, .w = 1, .h = 1}};
    float scores[3] = {3.0f, -3.0f, NAN};
    float regs[3][16] = {{12.8f, -6.4f, 32.f, 64.f}, {0}, {0, 0, 10, 10}};
    osp_det_t d[4];
    int n = osp_post_blazeface(scores, &regs[0][0], 3, 16, a, 128, 0.5f, d, 4);
    assert_int_equal(n, 1);
    /* centre (0.25 + 0.1, 0.5 - 0.05), size (0.25, 0.5) */
    assert_float_equal(d[0].x1, 0.35 - 0.125, 1e-6);
    assert_float_equal(d[0].x2, 0.35 + 0.125, 1e-6);
    assert_float_equal(d[0].y1, 0.45 - 0.25, 1e-6);
    assert_float_equal(d[0].y2, 0.45 + 0.25, 1e-6);
    assert_float_equal(d[0].score, 1.0 / (1.0 + exp(-3.0)), 1e-6);
    assert_int_equal(d[0].cls, 0);
    /* nothing passes a threshold above every score; cap respected */
    assert_int_equal(osp_post_blazeface(scores, &regs[0][0], 3, 16, a, 128, 0.99f, d, 4), 0);
    assert_int_equal(osp_post_blazeface(scores, &regs[0][0], 3, 16, a, 128, 0.01f, d, 0), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anchors),
        cmocka_unit_test(test_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
