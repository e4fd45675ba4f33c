/* Agreement of detections (one-to-one matches within a class at IoU >= 0.5,
 * best pairs first; F1) and of embeddings (cosine). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "model/agree.h"

static osp_det_t box(float x1, float y1, float x2, float y2, float score, int cls) {
    return (osp_det_t){.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2, .score = score, .cls = cls};
}

static void test_identical_frames_agree(void **state) {
    (void)state;
    osp_det_t d[] = {box(0, 0, 10, 10, 0.9f, 1), box(20, 20, 40, 40, 0.5f, 2)};
    osp_agree_t a;
    osp_agree_init(&a);
    assert_int_equal(osp_agree_frame(&a, d, 2, d, 2, 0.5f), 0);
    assert_int_equal(a.matched, 2);
    assert_float_equal(osp_agree_f1(&a), 1.0, 1e-12);
    assert_float_equal(a.iou_sum / a.matched, 1.0, 1e-6);
    assert_float_equal(a.dscore_max, 0.0, 0.0);
}

static void test_class_and_iou_must_match(void **state) {
    (void)state;
    osp_det_t ref[] = {box(0, 0, 10, 10, 0.9f, 1), box(50, 50, 60, 60, 0.8f, 1)};
    /* same box, other class; and a box of IoU 1/3 (below 0.5) */
    osp_det_t test[] = {box(0, 0, 10, 10, 0.9f, 2), box(55, 50, 65, 60, 0.7f, 1)};
    osp_agree_t a;
    osp_agree_init(&a);
    assert_int_equal(osp_agree_frame(&a, ref, 2, test, 2, 0.5f), 0);
    assert_int_equal(a.matched, 0);
    assert_float_equal(osp_agree_f1(&a), 0.0, 0.0);
    osp_agree_frame(&a, ref, 2, test, 2, 0.3f);
    assert_int_equal(a.matched, 1); /* the shifted box counts at IoU 0.3 */
}

/* Best pairs first, one to one: the test box that overlaps both reference
 * boxes goes to the one it overlaps most, and the other still gets its own. */
static void test_greedy_one_to_one(void **state) {
    (void)state;
    osp_det_t ref[] = {box(0, 0, 10, 10, 0.6f, 0), box(1, 0, 11, 10, 0.7f, 0)};
    osp_det_t test[] = {box(1, 0, 11, 10, 0.65f, 0), box(0, 0, 10, 9, 0.5f, 0),
                        box(100, 100, 110, 110, 0.4f, 0)};
    osp_agree_t a;
    osp_agree_init(&a);
    osp_agree_frame(&a, ref, 2, test, 3, 0.5f);
    assert_int_equal(a.matched, 2);
    assert_int_equal(a.n_ref, 2);
    assert_int_equal(a.n_test, 3);
    assert_float_equal(osp_agree_f1(&a), 0.8, 1e-12); /* 2*2 / (2+3) */
    assert_float_equal(a.iou_sum, 1.0 + 0.9, 1e-6);
    assert_float_equal(a.dscore_max, 0.1, 1e-6);
    assert_float_equal(a.dscore_sum, 0.05 + 0.1, 1e-6);
}

static void test_empty_frames(void **state) {
    (void)state;
    osp_det_t d[] = {box(0, 0, 10, 10, 0.9f, 1)};
    osp_agree_t a;
    osp_agree_init(&a);
    osp_agree_frame(&a, NULL, 0, NULL, 0, 0.5f);
    assert_float_equal(osp_agree_f1(&a), 1.0, 0.0); /* nothing to find, nothing found */
    osp_agree_frame(&a, d, 1, NULL, 0, 0.5f);
    assert_float_equal(osp_agree_f1(&a), 0.0, 0.0);
    assert_int_equal(a.frames, 2);
}

static void test_cosine(void **state) {
    (void)state;
    const float r[] = {1, 0, 0, 0}, t[] = {2, 0, 0, 0}, o[] = {1, 1, 0, 0};
    osp_agree_t a;
    osp_agree_init(&a);
    osp_agree_vec(&a, r, t, 4);
    assert_float_equal(a.cos_min, 1.0, 1e-12);
    osp_agree_vec(&a, r, o, 4);
    assert_float_equal(a.cos_min, 1.0 / sqrt(2.0), 1e-9);
    assert_float_equal(a.cos_sum / a.vecs, (1.0 + 1.0 / sqrt(2.0)) / 2, 1e-9);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identical_frames_agree),
        cmocka_unit_test(test_class_and_iou_must_match),
        cmocka_unit_test(test_greedy_one_to_one),
        cmocka_unit_test(test_empty_frames),
        cmocka_unit_test(test_cosine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
