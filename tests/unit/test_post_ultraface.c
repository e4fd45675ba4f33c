/* UltraFace selection: column 1 of the softmaxed scores is the face, boxes
 * are used exactly as the graph decoded them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "post/post.h"

static void test_selects_face_column(void **state) {
    (void)state;
    const float scores[4][2] = {
        {0.1f, 0.9f},   /* face */
        {0.9f, 0.1f},   /* background: column 0 is high, must not pass */
        {0.35f, 0.65f}, /* face, exactly at 0.65 */
        {0.36f, 0.64f}, /* just below */
    };
    const float boxes[4][4] = {
        {0.10f, 0.20f, 0.30f, 0.40f},
        {0.50f, 0.50f, 0.60f, 0.60f},
        {0.70f, 0.05f, 0.95f, 0.45f},
        {0.00f, 0.00f, 1.00f, 1.00f},
    };
    osp_det_t d[4];
    int n = osp_post_ultraface(&scores[0][0], &boxes[0][0], 4, 0.65f, d, 4);
    assert_int_equal(n, 2);
    assert_float_equal(d[0].score, 0.9f, 0.0f);
    assert_int_equal(d[0].cls, 0);
    assert_float_equal(d[1].score, 0.65f, 0.0f);
    assert_int_equal(d[1].cls, 0);
}

static void test_boxes_used_as_decoded(void **state) {
    (void)state;
    /* No prior decode: the output box is bit-for-bit the graph's box. */
    const float scores[2][2] = {{0.0f, 1.0f}, {0.2f, 0.8f}};
    const float boxes[2][4] = {{0.5625f, 0.2583f, 0.8375f, 0.7250f}, {0.1f, 0.9f, 0.2f, 0.95f}};
    osp_det_t d[2];
    assert_int_equal(osp_post_ultraface(&scores[0][0], &boxes[0][0], 2, 0.5f, d, 2), 2);
    for (int i = 0; i < 2; i++) {
        assert_memory_equal(&d[i].x1, &boxes[i][0], sizeof(float));
        assert_memory_equal(&d[i].y1, &boxes[i][1], sizeof(float));
        assert_memory_equal(&d[i].x2, &boxes[i][2], sizeof(float));
        assert_memory_equal(&d[i].y2, &boxes[i][3], sizeof(float));
    }
    assert_float_equal(d[1].score, 0.8f, 0.0f);
}

static void test_cap_and_count(void **state) {
    (void)state;
    enum { N = 4420 };
    static float scores[N * 2], boxes[N * 4];
    for (int i = 0; i < N; i++) {
        float s = (i % 100 == 7) ? 0.99f : 0.01f;
        scores[i * 2] = 1.0f - s;
        scores[i * 2 + 1] = s;
        for (int k = 0; k < 4; k++) boxes[i * 4 + k] = (float)i / N;
    }
    osp_det_t d[8];
    memset(d, 0, sizeof d);
    /* 45 pass (7, 107, ..., 4407); only 3 written. */
    assert_int_equal(osp_post_ultraface(scores, boxes, N, 0.5f, d, 3), 45);
    assert_float_equal(d[2].x1, (207.0f / N), 0.0f);
    assert_float_equal(d[3].score, 0.0f, 0.0f);
    assert_int_equal(osp_post_ultraface(scores, boxes, N, 0.5f, NULL, 0), 45);
    /* Threshold 0 passes everything. */
    assert_int_equal(osp_post_ultraface(scores, boxes, N, 0.0f, NULL, 0), N);
}

static void test_bad_input(void **state) {
    (void)state;
    const float scores[2][2] = {{0.0f, NAN}, {0.0f, 0.7f}};
    const float boxes[2][4] = {{0}};
    osp_det_t d[2];
    assert_int_equal(osp_post_ultraface(&scores[0][0], &boxes[0][0], 2, 0.0f, d, 2), 1);
    assert_float_equal(d[0].score, 0.7f, 0.0f);
    assert_int_equal(osp_post_ultraface(NULL, &boxes[0][0], 2, 0.5f, d, 2), 0);
    assert_int_equal(osp_post_ultraface(&scores[0][0], NULL, 2, 0.5f, d, 2), 0);
    assert_int_equal(osp_post_ultraface(&scores[0][0], &boxes[0][0], 0, 0.5f, d, 2), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selects_face_column),
        cmocka_unit_test(test_boxes_used_as_decoded),
        cmocka_unit_test(test_cap_and_count),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
