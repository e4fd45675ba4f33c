/* IoU, greedy NMS (stable order, per class or not, max_keep) and the
 * mapping of normalised input boxes back to frame pixels. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "post/post.h"

static osp_det_t box(float x1, float y1, float x2, float y2, float score, int cls) {
    return (osp_det_t){.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2, .score = score, .cls = cls};
}

/* ---- IoU ---------------------------------------------------------------- */

static void test_iou_values(void **state) {
    (void)state;
    osp_det_t a = box(0, 0, 10, 10, 1, 0);
    osp_det_t same = a;
    osp_det_t disjoint = box(20, 20, 30, 30, 1, 0);
    osp_det_t touching = box(10, 0, 20, 10, 1, 0);
    osp_det_t inner = box(2, 2, 7, 7, 1, 0);
    osp_det_t shifted = box(5, 0, 15, 10, 1, 0);
    osp_det_t diag = box(1, 1, 11, 11, 1, 0);
    assert_float_equal(osp_iou(&a, &same), 1.0f, 1e-6f);
    assert_float_equal(osp_iou(&a, &disjoint), 0.0f, 0.0f);
    assert_float_equal(osp_iou(&a, &touching), 0.0f, 0.0f);
    assert_float_equal(osp_iou(&a, &inner), 0.25f, 1e-6f); /* 25 / 100 */
    assert_float_equal(osp_iou(&inner, &a), 0.25f, 1e-6f);
    assert_float_equal(osp_iou(&a, &shifted), (50.0f / 150.0f), 1e-6f);
    assert_float_equal(osp_iou(&a, &diag), (81.0f / 119.0f), 1e-6f);
}

static void test_iou_empty_boxes(void **state) {
    (void)state;
    osp_det_t a = box(0, 0, 10, 10, 1, 0);
    osp_det_t line = box(2, 0, 2, 10, 1, 0); /* zero width */
    osp_det_t point = box(5, 5, 5, 5, 1, 0);
    osp_det_t inverted = box(8, 8, 2, 2, 1, 0); /* x2 < x1 */
    assert_float_equal(osp_iou(&a, &line), 0.0f, 0.0f);
    assert_float_equal(osp_iou(&line, &a), 0.0f, 0.0f);
    assert_float_equal(osp_iou(&point, &point), 0.0f, 0.0f);
    assert_float_equal(osp_iou(&a, &inverted), 0.0f, 0.0f);
    osp_det_t huge = box(-INFINITY, -INFINITY, INFINITY, INFINITY, 1, 0);
    float v = osp_iou(&a, &huge);
    assert_false(isnan(v));
}

/* ---- NMS ---------------------------------------------------------------- */

static void test_nms_suppresses_overlap(void **state) {
    (void)state;
    osp_det_t d[3] = {
        box(1, 1, 11, 11, 0.8f, 1), /* IoU 0.68 with the next: suppressed */
        box(0, 0, 10, 10, 0.9f, 1),
        box(50, 50, 60, 60, 0.7f, 1),
    };
    assert_int_equal(osp_nms(d, 3, 0.45f, 1, 0), 2);
    assert_float_equal(d[0].score, 0.9f, 0.0f);
    assert_float_equal(d[0].x1, 0.0f, 0.0f);
    assert_float_equal(d[1].score, 0.7f, 0.0f);
}

static void test_nms_per_class(void **state) {
    (void)state;
    osp_det_t d[2] = {box(0, 0, 10, 10, 0.9f, 1), box(1, 1, 11, 11, 0.8f, 2)};
    osp_det_t e[2];
    memcpy(e, d, sizeof d);
    assert_int_equal(osp_nms(d, 2, 0.45f, 1, 0), 2); /* different classes kept */
    assert_int_equal(d[1].cls, 2);
    assert_int_equal(osp_nms(e, 2, 0.45f, 0, 0), 1); /* class-agnostic */
    assert_int_equal(e[0].cls, 1);
}

/* Across labels: the weaker of two boxes at IoU >= the bound goes whatever
 * its label; below the bound, and boxes of one label already apart, stay. */
static void test_nms_across(void **state) {
    (void)state;
    osp_det_t d[4] = {
        box(0, 0, 10, 10, 0.9f, 1),   /* kept */
        box(0, 0, 10, 9, 0.8f, 2),    /* IoU 0.9 with the first: dropped */
        box(0, 0, 10, 7, 0.7f, 3),    /* IoU exactly 0.7: dropped (>=) */
        box(20, 20, 30, 30, 0.6f, 2), /* elsewhere: kept */
    };
    osp_det_t e[4];
    memcpy(e, d, sizeof d);
    assert_int_equal(osp_nms_across(d, 4, 0.7f), 2);
    assert_int_equal(d[0].cls, 1);
    assert_int_equal(d[1].cls, 2);
    assert_float_equal(d[1].x1, 20.0f, 0.0f);
    /* off: 0, or above 1 */
    assert_int_equal(osp_nms_across(e, 4, 0.0f), 4);
    assert_int_equal(osp_nms_across(e, 4, 1.5f), 4);
    assert_int_equal(osp_nms_across(e, 4, 0.95f), 4);
    assert_int_equal(osp_nms_across(NULL, 4, 0.7f), 0);
    osp_det_t f[2] = {box(0, 0, 10, 10, 0.9f, 1), box(0, 0, 10, 6.9f, 0.8f, 2)}; /* IoU 0.69 */
    assert_int_equal(osp_nms_across(f, 2, 0.7f), 2);
}

/* Containment: a box of the same label as a better one kept goes when their
 * intersection is at least the share of the smaller box; a part of another
 * label, a part less inside, and a box in an empty or infinite pair stay. */
static void test_nms_contained(void **state) {
    (void)state;
    osp_det_t d[6] = {
        box(0, 0, 10, 30, 0.9f, 1),   /* a person: kept */
        box(2, 0, 12, 12, 0.8f, 1),   /* upper body, 96/120 inside (IoU 0.28): dropped */
        box(0, 20, 10, 30, 0.7f, 2),  /* footwear inside, another label: kept */
        box(6, 10, 16, 20, 0.6f, 1),  /* 40/100 inside: kept */
        box(-5, -5, 20, 40, 0.5f, 1), /* around the person: 300/300 of it, dropped */
        box(40, 0, 40, 10, 0.4f, 1),  /* empty: kept */
    };
    osp_det_t e[6];
    memcpy(e, d, sizeof d);
    assert_int_equal(osp_nms_contained(d, 6, 0.6f), 4);
    assert_float_equal(d[0].score, 0.9f, 0.0f);
    assert_float_equal(d[1].score, 0.7f, 0.0f);
    assert_float_equal(d[2].score, 0.6f, 0.0f);
    assert_float_equal(d[3].score, 0.4f, 0.0f);
    /* exactly at the share: dropped (>=); the upper body at 0.81: kept */
    osp_det_t f[2] = {box(0, 0, 10, 10, 0.9f, 0), box(4, 0, 14, 10, 0.8f, 0)}; /* 60/100 */
    assert_int_equal(osp_nms_contained(f, 2, 0.6f), 1);
    assert_int_equal(osp_nms_contained(e, 6, 0.81f), 5);
    /* off: 0, or above 1 */
    memcpy(e, d, sizeof d);
    assert_int_equal(osp_nms_contained(e, 4, 0.0f), 4);
    assert_int_equal(osp_nms_contained(e, 4, 1.5f), 4);
    assert_int_equal(osp_nms_contained(NULL, 4, 0.6f), 0);
    osp_det_t g[2] = {box(0, 0, INFINITY, 10, 0.9f, 0), box(0, 0, 10, 10, 0.8f, 0)};
    assert_int_equal(osp_nms_contained(g, 2, 0.6f), 2);
}

static void test_nms_threshold_is_strict(void **state) {
    (void)state;
    /* IoU exactly 0.5: kept at 0.5, suppressed just below. */
    osp_det_t d[2] = {box(0, 0, 10, 10, 0.9f, 0), box(0, 0, 10, 5, 0.8f, 0)};
    osp_det_t e[2];
    memcpy(e, d, sizeof d);
    assert_int_equal(osp_nms(d, 2, 0.5f, 1, 0), 2);
    assert_int_equal(osp_nms(e, 2, 0.49f, 1, 0), 1);
}

static void test_nms_greedy_chain(void **state) {
    (void)state;
    /* B overlaps A and C; C does not overlap A. B goes, so C stays. */
    osp_det_t d[3] = {
        box(0, 0, 10, 10, 0.9f, 0), /* A */
        box(3, 0, 13, 10, 0.8f, 0), /* B: IoU(A,B) = 70/130 */
        box(8, 0, 18, 10, 0.7f, 0), /* C: IoU(A,C) = 20/180, IoU(B,C) = 50/150 */
    };
    assert_int_equal(osp_nms(d, 3, 0.3f, 1, 0), 2);
    assert_float_equal(d[0].score, 0.9f, 0.0f);
    assert_float_equal(d[1].score, 0.7f, 0.0f);
}

static void test_nms_order_and_ties(void **state) {
    (void)state;
    /* Disjoint boxes: nothing suppressed, so the result is the sort.
     * Equal scores must keep their input order (cls carries the index). */
    const float s[7] = {0.3f, 0.9f, 0.5f, 0.9f, 0.3f, 0.5f, 0.9f};
    osp_det_t d[7];
    for (int i = 0; i < 7; i++) d[i] = box(20.0f * i, 0, 20.0f * i + 10, 10, s[i], i);
    assert_int_equal(osp_nms(d, 7, 0.1f, 0, 0), 7);
    const int want[7] = {1, 3, 6, 2, 5, 0, 4};
    for (int i = 0; i < 7; i++) assert_int_equal(d[i].cls, want[i]);
}

static void test_nms_max_keep(void **state) {
    (void)state;
    osp_det_t d[5];
    for (int i = 0; i < 5; i++)
        d[i] = box(20.0f * i, 0, 20.0f * i + 10, 10, 0.1f * (float)(i + 1), i);
    assert_int_equal(osp_nms(d, 5, 0.5f, 1, 2), 2);
    assert_int_equal(d[0].cls, 4);
    assert_int_equal(d[1].cls, 3);
    for (int i = 0; i < 5; i++)
        d[i] = box(20.0f * i, 0, 20.0f * i + 10, 10, 0.1f * (float)(i + 1), i);
    assert_int_equal(osp_nms(d, 5, 0.5f, 1, -1), 5);
    assert_int_equal(osp_nms(d, 0, 0.5f, 1, 0), 0);
    assert_int_equal(osp_nms(NULL, 5, 0.5f, 1, 0), 0);
}

static void test_nms_zero_area(void **state) {
    (void)state;
    /* Zero-area boxes overlap nothing: they neither suppress nor are
     * suppressed, even when identical. */
    osp_det_t d[3] = {box(5, 5, 5, 15, 0.9f, 0), box(5, 5, 5, 15, 0.8f, 0),
                      box(0, 0, 10, 10, 0.7f, 0)};
    assert_int_equal(osp_nms(d, 3, 0.0f, 0, 0), 3);
    assert_float_equal(d[2].score, 0.7f, 0.0f);
}

static void test_nms_nan_scores_last(void **state) {
    (void)state;
    osp_det_t d[4];
    const float s[4] = {NAN, 0.2f, NAN, 0.6f};
    for (int i = 0; i < 4; i++) d[i] = box(20.0f * i, 0, 20.0f * i + 10, 10, s[i], i);
    assert_int_equal(osp_nms(d, 4, 0.5f, 0, 0), 4);
    assert_int_equal(d[0].cls, 3);
    assert_int_equal(d[1].cls, 1);
    assert_int_equal(d[2].cls, 0);
    assert_int_equal(d[3].cls, 2);
}

/* Large inputs go through the merge path of the in-place stable sort. */
static void test_nms_stable_sort_large(void **state) {
    (void)state;
    enum { N = 3001 };
    static osp_det_t d[N];
    const int sizes[] = {2, 16, 17, 33, 100, 257, 1000, N};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        uint32_t r = 12345u + (uint32_t)k;
        for (int i = 0; i < n; i++) {
            r = r * 1103515245u + 12345u;
            float sc = (float)((r >> 16) % 13) / 13.0f;  /* many ties */
            d[i] = box((float)i, 0, (float)i, 0, sc, i); /* zero area */
        }
        assert_int_equal(osp_nms(d, n, 0.5f, 0, 0), n);
        int seen_sum = 0;
        for (int i = 0; i < n; i++) {
            seen_sum += d[i].cls;
            if (i == 0) continue;
            assert_true(d[i - 1].score >= d[i].score);
            if (d[i - 1].score == d[i].score) assert_true(d[i - 1].cls < d[i].cls);
        }
        assert_int_equal(seen_sum, n * (n - 1) / 2); /* a permutation */
    }
}

/* ---- mapping to frame pixels ------------------------------------------- */

static void expect_box(const osp_det_t *d, float x1, float y1, float x2, float y2) {
    assert_float_equal(d->x1, x1, 1e-3f);
    assert_float_equal(d->y1, y1, 1e-3f);
    assert_float_equal(d->x2, x2, 1e-3f);
    assert_float_equal(d->y2, y2, 1e-3f);
}

static void test_letterbox_1080p(void **state) {
    (void)state;
    /* 1920x1080 letterboxed into 640x640: scale 1/3, 640x360, pad_y 140. */
    const float s = 1.0f / 3.0f;
    osp_det_t d[2] = {
        box(0.25f, 0.25f, 0.75f, 0.5f, 0.9f, 3),
        /* the whole picture area of the input */
        box(0.0f, 140.0f / 640, 1.0f, 500.0f / 640, 0.8f, 1),
    };
    osp_boxes_to_frame(d, 2, 640, 640, s, s, 0.0f, 140.0f, 1920, 1080);
    /* input px (160,160,480,320) -> ((160-0)*3, (160-140)*3, ...) */
    expect_box(&d[0], 480.0f, 60.0f, 1440.0f, 540.0f);
    expect_box(&d[1], 0.0f, 0.0f, 1920.0f, 1080.0f);
    assert_float_equal(d[0].score, 0.9f, 0.0f);
    assert_int_equal(d[0].cls, 3);
}

static void test_resize_mode(void **state) {
    (void)state;
    /* 1920x1080 stretched to 300x300: scale_x != scale_y, no pad. */
    osp_det_t d = box(0.1f, 0.2f, 0.5f, 0.9f, 0.5f, 0);
    osp_boxes_to_frame(&d, 1, 300, 300, 300.0f / 1920, 300.0f / 1080, 0, 0, 1920, 1080);
    expect_box(&d, 192.0f, 216.0f, 960.0f, 972.0f);

    /* Non-square input (UltraFace 320x240) from 640x480. */
    osp_det_t f = box(0.5625f, 0.25f, 0.8375f, 0.75f, 1.0f, 0);
    osp_boxes_to_frame(&f, 1, 320, 240, 0.5f, 0.5f, 0, 0, 640, 480);
    expect_box(&f, 360.0f, 120.0f, 536.0f, 360.0f);
}

static void test_clamping(void **state) {
    (void)state;
    const float s = 1.0f / 3.0f;
    osp_det_t d[3] = {
        box(-0.1f, 0.1f, 1.2f, 0.6f, 0.9f, 0), /* spills over all sides */
        box(0.2f, 0.0f, 0.4f, 0.15f, 0.9f, 0), /* entirely in the top pad */
        box(0.2f, 0.9f, 0.4f, 1.0f, 0.9f, 0),  /* entirely in the bottom pad */
    };
    osp_boxes_to_frame(d, 3, 640, 640, s, s, 0.0f, 140.0f, 1920, 1080);
    /* y1: (64-140)*3 < 0; x2: 768*3 > 1920; y2: (384-140)*3 = 732 */
    expect_box(&d[0], 0.0f, 0.0f, 1920.0f, 732.0f);
    assert_float_equal(d[1].y1, 0.0f, 0.0f);
    assert_float_equal(d[1].y2, 0.0f, 0.0f);
    assert_float_equal(d[2].y1, 1080.0f, 0.0f);
    assert_float_equal(d[2].y2, 1080.0f, 0.0f);
    assert_float_equal(d[1].x1, 384.0f, 1e-3f);

    /* A bad scale leaves the boxes alone instead of filling them with inf. */
    osp_det_t e = box(0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0);
    osp_boxes_to_frame(&e, 1, 640, 640, 0.0f, 1.0f, 0, 0, 1920, 1080);
    expect_box(&e, 0.1f, 0.2f, 0.3f, 0.4f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_iou_values),
        cmocka_unit_test(test_iou_empty_boxes),
        cmocka_unit_test(test_nms_suppresses_overlap),
        cmocka_unit_test(test_nms_per_class),
        cmocka_unit_test(test_nms_across),
        cmocka_unit_test(test_nms_contained),
        cmocka_unit_test(test_nms_threshold_is_strict),
        cmocka_unit_test(test_nms_greedy_chain),
        cmocka_unit_test(test_nms_order_and_ties),
        cmocka_unit_test(test_nms_max_keep),
        cmocka_unit_test(test_nms_zero_area),
        cmocka_unit_test(test_nms_nan_scores_last),
        cmocka_unit_test(test_nms_stable_sort_large),
        cmocka_unit_test(test_letterbox_1080p),
        cmocka_unit_test(test_resize_mode),
        cmocka_unit_test(test_clamping),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
