/* osp_post_presort: the candidates in osp_nms's order (score descending,
 * NaN last, ties in their present order), records moved whole. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "post/decoder.h"

/* cls carries each record's place before the sort. */
static void fill(osp_dres_t *r, const float *scores, int n) {
    assert_int_equal(osp_dres_reserve_dets(r, n), 0);
    for (int i = 0; i < n; i++)
        r->dets[i] = (osp_det_t){.x1 = (float)i, .x2 = (float)i + 1, .score = scores[i], .cls = i};
    r->n_dets = n;
}

static void test_order_ties_and_nan(void **state) {
    (void)state;
    const float s[] = {0.3f, NAN, 0.9f, 0.3f, 0.5f, NAN, 0.9f, 0.1f};
    const int want[] = {2, 6, 4, 0, 3, 7, 1, 5};
    osp_dres_t r = {0};
    fill(&r, s, 8);
    osp_post_presort(&r);
    assert_int_equal(r.n_dets, 8);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(r.dets[i].cls, want[i]);
        assert_float_equal(r.dets[i].x1, (float)want[i], 0); /* the whole record moved */
    }
    osp_dres_free(&r);
}

static void test_same_as_nms_sort(void **state) {
    (void)state;
    enum { N = 500 };
    float s[N];
    uint32_t x = 7;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        s[i] = (float)(x >> 28) / 16.0f; /* 16 values: many ties */
    }
    osp_dres_t a = {0}, b = {0};
    fill(&a, s, N);
    fill(&b, s, N);
    osp_post_presort(&a);
    /* IoU above 1 suppresses nothing: osp_nms only sorts */
    assert_int_equal(osp_nms(b.dets, N, 2.0f, 1, 0), N);
    for (int i = 0; i < N; i++) assert_int_equal(a.dets[i].cls, b.dets[i].cls);
    osp_dres_free(&a);
    osp_dres_free(&b);
}

static void test_fewer_than_two(void **state) {
    (void)state;
    osp_dres_t r = {0};
    osp_post_presort(&r);
    assert_int_equal(r.n_dets, 0);
    const float s[] = {NAN};
    fill(&r, s, 1);
    osp_post_presort(&r);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 0);
    osp_dres_free(&r);
}

/* The keys borrow r->vec: the record stays one of detections, with no
 * embedding to report, and a second presort of sorted records keeps them. */
static void test_record_stays_detections(void **state) {
    (void)state;
    const float s[] = {0.2f, 0.8f, 0.5f, 0.8f};
    osp_dres_t r = {0};
    fill(&r, s, 4);
    osp_post_presort(&r);
    osp_post_presort(&r);
    assert_int_equal(r.kind, OSP_REC_DETECTIONS);
    assert_int_equal(r.vec_dim, 0);
    assert_int_equal(r.n_dets, 4);
    const int want[] = {1, 3, 2, 0};
    for (int i = 0; i < 4; i++) assert_int_equal(r.dets[i].cls, want[i]);
    osp_dres_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_ties_and_nan),
        cmocka_unit_test(test_same_as_nms_sort),
        cmocka_unit_test(test_fewer_than_two),
        cmocka_unit_test(test_record_stays_detections),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
