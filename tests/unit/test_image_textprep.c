/* Text-line crops and packing (image/text.h): widths, PP-OCR and EasyOCR
 * packing, perspective crops, rotation of tall crops, corner order. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image/text.h"

static osp_text_prep_t ppocr(void) {
    osp_text_prep_t tp = {.height = 48,
                          .min_w = 320,
                          .max_w = 1280,
                          .channels = 3,
                          .mean = {127.5f, 127.5f, 127.5f},
                          .std = {127.5f, 127.5f, 127.5f}};
    return tp;
}

static void test_widths(void **state) {
    (void)state;
    osp_text_prep_t tp = ppocr();
    assert_int_equal(osp_text_content_width(100, 24, &tp), 200);
    assert_int_equal(osp_text_tensor_width(100, 24, &tp), 320);     /* raised to min_w */
    assert_int_equal(osp_text_tensor_width(700, 48, &tp), 704);     /* a multiple of 8 */
    assert_int_equal(osp_text_content_width(10000, 10, &tp), 1280); /* capped */
    assert_int_equal(osp_text_tensor_width(10000, 10, &tp), 1280);
    assert_int_equal(osp_text_content_width(0, 10, &tp), 0);
    tp.min_w = tp.max_w = 100; /* fixed width */
    assert_int_equal(osp_text_tensor_width(10, 48, &tp), 100);
    tp.height = 0;
    assert_int_equal(osp_text_tensor_width(10, 48, &tp), 0);
    assert_int_equal(osp_text_tensor_bytes(&tp), 0);
}

static void test_pack_ppocr(void **state) {
    (void)state;
    /* a 4 x 2 white frame with a black first column */
    uint8_t px[2][4][3];
    memset(px, 255, sizeof px);
    memset(px[0][0], 0, 3);
    memset(px[1][0], 0, 3);
    osp_view_t v = {.data = &px[0][0][0], .width = 4, .height = 2, .stride = 12, .fmt = OSP_PIX_RGB};
    osp_text_prep_t tp = ppocr();
    tp.height = 2;
    tp.min_w = 8;
    tp.max_w = 16;
    float *t = calloc(1, osp_text_tensor_bytes(&tp));
    osp_image_t scratch = {0};
    int w = 0;
    assert_int_equal(osp_text_pack(&v, &tp, t, &w, &scratch, NULL, 0), 0);
    assert_int_equal(w, 8);
    /* channel 1, row 1: -1 for black, 1 for white, then 0 padding */
    const float *r = t + (1 * 2 + 1) * 8;
    assert_float_equal(r[0], -1, 1e-6);
    assert_float_equal(r[3], 1, 1e-6);
    for (int x = 4; x < 8; x++) assert_float_equal(r[x], 0, 0);
    free(t);
    osp_image_free(&scratch);
}

static void test_pack_easyocr(void **state) {
    (void)state;
    /* 2 x 1 BGR input: luminance, then edge padding to width 5 */
    uint8_t px[1][2][3] = {{{0, 0, 255}, {255, 255, 255}}}; /* pure red, then white */
    osp_view_t v = {.data = &px[0][0][0], .width = 2, .height = 1, .stride = 6, .fmt = OSP_PIX_BGR};
    osp_text_prep_t tp = {.height = 1,
                          .min_w = 5,
                          .max_w = 5,
                          .channels = 1,
                          .bicubic = 1,
                          .pad_edge = 1,
                          .mean = {127.5f, 127.5f, 127.5f},
                          .std = {127.5f, 127.5f, 127.5f}};
    float t[5];
    osp_image_t scratch = {0};
    int w = 0;
    assert_int_equal(osp_text_pack(&v, &tp, t, &w, &scratch, NULL, 0), 0);
    assert_int_equal(w, 5);
    float red = (0.299f * 255 - 127.5f) / 127.5f; /* red read as red from BGR */
    assert_float_equal(t[0], red, 0.01f);
    for (int x = 1; x < 5; x++) assert_float_equal(t[x], 1, 1e-6); /* the last column, repeated */
    osp_image_free(&scratch);
}

static void test_crop_axis_aligned(void **state) {
    (void)state;
    uint8_t px[6][8];
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 8; x++) px[y][x] = (uint8_t)(y * 8 + x);
    osp_view_t v = {.data = &px[0][0], .width = 8, .height = 6, .stride = 8, .fmt = OSP_PIX_GRAY};
    const float q[4][2] = {{2, 1}, {6, 1}, {6, 4}, {2, 4}};
    osp_image_t out = {0}, scratch = {0};
    assert_int_equal(osp_text_crop(&v, q, &out, &scratch), 0);
    assert_int_equal(out.width, 4);
    assert_int_equal(out.height, 3);
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            assert_int_equal(out.data[y * out.stride + 3 * x], px[1 + y][2 + x]);
    /* a tall box is turned counter-clockwise to read as a line */
    const float tall[4][2] = {{1, 0}, {3, 0}, {3, 6}, {1, 6}};
    assert_int_equal(osp_text_crop(&v, tall, &out, &scratch), 1);
    assert_int_equal(out.width, 6);
    assert_int_equal(out.height, 2);
    /* rot90 ccw: out(x, y) = crop(W-1-y, x); crop(c, r) = px[r][1 + c] */
    assert_int_equal(out.data[0 * out.stride + 3 * 0], px[0][1 + 1]);
    assert_int_equal(out.data[1 * out.stride + 3 * 5], px[5][1 + 0]);
    /* non-finite or degenerate corners are refused */
    const float bad[4][2] = {{NAN, 0}, {3, 0}, {3, 6}, {1, 6}};
    assert_true(osp_text_crop(&v, bad, &out, &scratch) < 0);
    osp_image_free(&out);
    osp_image_free(&scratch);
}

static void test_quad_order(void **state) {
    (void)state;
    float q[4][2] = {{10, 10}, {0, 1}, {1, 11}, {9, 0}};
    osp_quad_order(q);
    const float want[4][2] = {{0, 1}, {9, 0}, {10, 10}, {1, 11}};
    for (int k = 0; k < 4; k++) {
        assert_float_equal(q[k][0], want[k][0], 0);
        assert_float_equal(q[k][1], want[k][1], 0);
    }
}

static void test_resize_identity_and_flat(void **state) {
    (void)state;
    uint8_t px[2][3][3];
    for (int i = 0; i < 18; i++) (&px[0][0][0])[i] = (uint8_t)(i * 13);
    osp_view_t v = {.data = &px[0][0][0], .width = 3, .height = 2, .stride = 9, .fmt = OSP_PIX_RGB};
    osp_image_t out = {0};
    for (int bic = 0; bic < 2; bic++) {
        assert_int_equal(osp_image_resize(&v, 3, 2, bic, &out), 0);
        assert_memory_equal(out.data, px, sizeof px);
    }
    uint8_t flat[4 * 4 * 3];
    memset(flat, 77, sizeof flat);
    osp_view_t f = {.data = flat, .width = 4, .height = 4, .stride = 12, .fmt = OSP_PIX_RGB};
    assert_int_equal(osp_image_resize(&f, 7, 3, 1, &out), 0);
    for (int i = 0; i < 7 * 3 * 3; i++)
        assert_int_equal(out.data[i], 77); /* bicubic keeps a flat field */
    osp_image_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_widths),       cmocka_unit_test(test_pack_ppocr),
        cmocka_unit_test(test_pack_easyocr), cmocka_unit_test(test_crop_axis_aligned),
        cmocka_unit_test(test_quad_order),   cmocka_unit_test(test_resize_identity_and_flat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
