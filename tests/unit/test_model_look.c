/* The square the second look crops around a box (osp_look_square): its
 * side, its place inside the frame, and the boxes it does not look at. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/model.h"

static osp_det_t box(float x1, float y1, float x2, float y2) {
    return (osp_det_t){.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2, .score = 0.5f};
}

static void test_square_is_centred_on_the_box(void **state) {
    (void)state;
    int x, y, side;
    /* a person 30 x 90 in a 768 x 576 frame: 270 wide, centred on it */
    osp_det_t d = box(300, 200, 330, 290);
    osp_look_square(&d, OSP_LOOK_ZOOM, 768, 576, &x, &y, &side);
    assert_int_equal(side, 270);
    assert_int_equal(x, 315 - 135);
    assert_int_equal(y, 245 - 135);
}

static void test_square_moves_inside_the_frame(void **state) {
    (void)state;
    int x, y, side;
    osp_det_t corner = box(0, 0, 20, 40); /* top left: moved right and down */
    osp_look_square(&corner, 3.0f, 768, 576, &x, &y, &side);
    assert_int_equal(side, 120);
    assert_int_equal(x, 0);
    assert_int_equal(y, 0);
    osp_det_t far = box(740, 530, 768, 576); /* bottom right */
    osp_look_square(&far, 3.0f, 768, 576, &x, &y, &side);
    assert_int_equal(side, 138);
    assert_int_equal(x, 768 - 138);
    assert_int_equal(y, 576 - 138);
}

static void test_large_boxes_are_not_looked_at(void **state) {
    (void)state;
    int x = 7, y = 7, side = 7;
    /* 3 x 192 = 576: the square would be the whole height */
    osp_det_t tall = box(100, 0, 150, 192);
    osp_look_square(&tall, 3.0f, 768, 576, &x, &y, &side);
    assert_int_equal(side, 0);
    assert_int_equal(x, 0);
    assert_int_equal(y, 0);
    osp_det_t just = box(100, 0, 150, 191); /* 573 fits */
    osp_look_square(&just, 3.0f, 768, 576, &x, &y, &side);
    assert_int_equal(side, 573);
    assert_int_equal(y, 0);
    osp_det_t off = box(1e30f, 1e30f, 1e30f + 10, 1e30f + 10); /* far off the frame */
    osp_look_square(&off, 3.0f, 768, 576, &x, &y, &side);
    assert_true(side >= 1 && x >= 0 && x + side <= 768 && y >= 0 && y + side <= 576);
    osp_det_t nan = box(NAN, 0, 10, 10);
    osp_look_square(&nan, 3.0f, 768, 576, &x, &y, &side);
    assert_int_equal(side, 0);
}

static void test_a_point_gets_a_pixel(void **state) {
    (void)state;
    int x, y, side;
    osp_det_t point = box(10, 10, 10, 10);
    osp_look_square(&point, 3.0f, 64, 48, &x, &y, &side);
    assert_int_equal(side, 1);
    assert_true(x >= 0 && x < 64 && y >= 0 && y < 48);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_square_is_centred_on_the_box),
        cmocka_unit_test(test_square_moves_inside_the_frame),
        cmocka_unit_test(test_large_boxes_are_not_looked_at),
        cmocka_unit_test(test_a_point_gets_a_pixel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
