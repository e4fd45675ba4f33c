/* SSD anchors (TF object-detection API layout) and box/score decoding.
 * Expected values are worked out here from the formulas, not read back from
 * the implementation. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "post/post.h"

#define NANCHORS 1917
#define EPS 1e-6f

/* Where each layer's anchors start: 19*19*3, then 6 a cell. */
enum { L0 = 0, L1 = 1083, L2 = 1083 + 600, L3 = L2 + 150, L4 = L3 + 54, L5 = L4 + 24 };

static osp_anchor_t g_anchors[NANCHORS];

static int setup_anchors(void **state) {
    (void)state;
    osp_ssd_anchor_cfg_t cfg;
    osp_ssd_anchor_cfg_default(&cfg);
    return osp_ssd_anchors(&cfg, g_anchors, NANCHORS) == NANCHORS ? 0 : -1;
}

static void expect_anchor(const osp_anchor_t *a, double y, double x, double h, double w) {
    assert_float_equal(a->y, (float)y, EPS);
    assert_float_equal(a->x, (float)x, EPS);
    assert_float_equal(a->h, (float)h, EPS);
    assert_float_equal(a->w, (float)w, EPS);
}

static double scale_of(int layer) { return layer >= 6 ? 1.0 : 0.2 + (0.95 - 0.2) * layer / 5.0; }

static void test_default_cfg(void **state) {
    (void)state;
    osp_ssd_anchor_cfg_t cfg;
    memset(&cfg, 0x5a, sizeof cfg);
    osp_ssd_anchor_cfg_default(&cfg);
    static const int fm[] = {19, 10, 5, 3, 2, 1};
    assert_int_equal(cfg.num_layers, 6);
    for (int i = 0; i < 6; i++) assert_int_equal(cfg.feature_maps[i], fm[i]);
    assert_float_equal(cfg.min_scale, 0.2f, 0.0f);
    assert_float_equal(cfg.max_scale, 0.95f, 0.0f);
    assert_int_equal(cfg.num_aspect_ratios, 5);
    assert_float_equal(cfg.aspect_ratios[0], 1.0f, 0.0f);
    assert_float_equal(cfg.aspect_ratios[1], 2.0f, 0.0f);
    assert_float_equal(cfg.aspect_ratios[2], 0.5f, 0.0f);
    assert_float_equal(cfg.aspect_ratios[3], 3.0f, 0.0f);
    assert_float_equal(cfg.aspect_ratios[4], (1.0f / 3.0f), 0.0f);
    assert_int_equal(cfg.reduce_boxes_in_lowest_layer, 1);
    assert_float_equal(cfg.interpolated_scale_aspect_ratio, 1.0f, 0.0f);
}

static void test_anchor_count(void **state) {
    (void)state;
    osp_ssd_anchor_cfg_t cfg;
    osp_ssd_anchor_cfg_default(&cfg);
    assert_int_equal(osp_ssd_anchors(&cfg, NULL, 0), NANCHORS);
    assert_int_equal(19 * 19 * 3 + (100 + 25 + 9 + 4 + 1) * 6, NANCHORS);

    /* Only cap are written; the count is still the whole. */
    osp_anchor_t few[11];
    memset(few, 0x7f, sizeof few);
    assert_int_equal(osp_ssd_anchors(&cfg, few, 10), NANCHORS);
    expect_anchor(&few[9], 0.5 / 19, 3.5 / 19, 0.1, 0.1); /* cell (y 0, x 3), (0.1,1) */
    osp_anchor_t untouched;
    memset(&untouched, 0x7f, sizeof untouched);
    assert_memory_equal(&few[10], &untouched, sizeof untouched);
}

static void test_anchor_count_variants(void **state) {
    (void)state;
    osp_ssd_anchor_cfg_t cfg;
    osp_ssd_anchor_cfg_default(&cfg);
    cfg.reduce_boxes_in_lowest_layer = 0; /* 6 a cell everywhere */
    assert_int_equal(osp_ssd_anchors(&cfg, NULL, 0), 361 * 6 + 139 * 6);
    osp_ssd_anchor_cfg_default(&cfg);
    cfg.interpolated_scale_aspect_ratio = 0.0f; /* no extra anchor */
    assert_int_equal(osp_ssd_anchors(&cfg, NULL, 0), 361 * 3 + 139 * 5);

    osp_ssd_anchor_cfg_default(&cfg);
    cfg.feature_maps[3] = 0;
    assert_int_equal(osp_ssd_anchors(&cfg, NULL, 0), 0);
    osp_ssd_anchor_cfg_default(&cfg);
    cfg.num_layers = 9;
    assert_int_equal(osp_ssd_anchors(&cfg, NULL, 0), 0);
    assert_int_equal(osp_ssd_anchors(NULL, NULL, 0), 0);
}

static void test_first_and_last_anchor(void **state) {
    (void)state;
    /* Layer 0, cell (0,0), (0.1, ratio 1). */
    expect_anchor(&g_anchors[0], 0.5 / 19, 0.5 / 19, 0.1, 0.1);
    /* Layer 5 (1x1), the interpolated anchor: sqrt(0.95 * 1.0), ratio 1. */
    double s = sqrt(0.95 * 1.0);
    expect_anchor(&g_anchors[NANCHORS - 1], 0.5, 0.5, s, s);
    assert_float_equal(g_anchors[NANCHORS - 1].h, 0.9746794f, 1e-6f);
}

static void test_lowest_layer_cell(void **state) {
    (void)state;
    /* Reduced lowest layer: (0.1,1), (0.2,2), (0.2,0.5). */
    double c = 0.5 / 19, r2 = sqrt(2.0);
    expect_anchor(&g_anchors[1], c, c, 0.2 / r2, 0.2 * r2);
    expect_anchor(&g_anchors[2], c, c, 0.2 * r2, 0.2 / r2);
    /* Order is y, then x, then anchor: index 3 is cell (y=0, x=1). */
    expect_anchor(&g_anchors[3], c, 1.5 / 19, 0.1, 0.1);
    /* Cell (y=2, x=5), anchor 1. */
    expect_anchor(&g_anchors[(2 * 19 + 5) * 3 + 1], 2.5 / 19, 5.5 / 19, 0.2 / r2, 0.2 * r2);
    /* Last cell of layer 0: (18,18), anchor 2. */
    expect_anchor(&g_anchors[L1 - 1], 18.5 / 19, 18.5 / 19, 0.2 * r2, 0.2 / r2);
}

static void test_layer1_first_cell(void **state) {
    (void)state;
    double s = scale_of(1), sn = scale_of(2);
    assert_true(fabs(s - 0.35) < 1e-12 && fabs(sn - 0.5) < 1e-12);
    const double ratios[5] = {1.0, 2.0, 0.5, 3.0, 1.0 / 3.0};
    for (int a = 0; a < 5; a++) {
        double r = sqrt(ratios[a]);
        expect_anchor(&g_anchors[L1 + a], 0.05, 0.05, s / r, s * r);
    }
    expect_anchor(&g_anchors[L1 + 5], 0.05, 0.05, sqrt(0.35 * 0.5), sqrt(0.35 * 0.5));
    /* Next cell is x = 1. */
    expect_anchor(&g_anchors[L1 + 6], 0.05, 0.15, s, s);
    /* Cell (y=1, x=0). */
    expect_anchor(&g_anchors[L1 + 10 * 6], 0.15, 0.05, s, s);
}

static void test_interior_layers(void **state) {
    (void)state;
    /* Layer 2 (5x5, scale 0.5), cell (y=4, x=1), ratio 3. */
    double r3 = sqrt(3.0);
    expect_anchor(&g_anchors[L2 + (4 * 5 + 1) * 6 + 3], 0.9, 0.3, 0.5 / r3, 0.5 * r3);
    /* Layer 3 (3x3, scale 0.65), cell (1,2), interpolated to 0.8. */
    double s = sqrt(scale_of(3) * scale_of(4));
    expect_anchor(&g_anchors[L3 + (1 * 3 + 2) * 6 + 5], 0.5, 2.5 / 3, s, s);
    /* Layer 4 (2x2, scale 0.8), cell (1,0), ratio 0.5. */
    double r = sqrt(0.5);
    expect_anchor(&g_anchors[L4 + 2 * 6 + 2], 0.75, 0.25, 0.8 / r, 0.8 * r);
    /* Layer 5 first anchor: scale 0.95, ratio 1. */
    expect_anchor(&g_anchors[L5], 0.5, 0.5, 0.95, 0.95);
    /* Anchors are not clipped: this one reaches past the input. */
    assert_true(g_anchors[L5 + 3].w / 2 > 0.5f);
}

/* ---- decode ---------------------------------------------------------- */

#define NCLS 4

static void test_zero_encoding_is_anchor(void **state) {
    (void)state;
    float enc[3][4] = {{0}};
    float lg[3][NCLS];
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < NCLS; c++) lg[i][c] = -20.0f;
    lg[0][2] = 3.0f;
    lg[2][1] = 3.0f;
    const osp_anchor_t an[3] = {{0.3f, 0.4f, 0.2f, 0.1f},
                                {0.5f, 0.5f, 0.5f, 0.5f},
                                {0.7f, 0.2f, 0.1f, 0.3f}};
    osp_det_t out[8];
    int n = osp_post_ssd(&enc[0][0], &lg[0][0], 3, NCLS, an, 0.5f, out, 8);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].cls, 2);
    assert_float_equal(out[0].x1, 0.35f, EPS);
    assert_float_equal(out[0].y1, 0.2f, EPS);
    assert_float_equal(out[0].x2, 0.45f, EPS);
    assert_float_equal(out[0].y2, 0.4f, EPS);
    assert_int_equal(out[1].cls, 1);
    assert_float_equal(out[1].x1, 0.05f, EPS);
    assert_float_equal(out[1].y1, 0.65f, EPS);
    assert_float_equal(out[1].x2, 0.35f, EPS);
    assert_float_equal(out[1].y2, 0.75f, EPS);
}

static void test_known_offsets(void **state) {
    (void)state;
    /* ty = 10: centre moves one anchor height; tx = -5: half a width left;
     * th = 5 ln 2: twice as tall; tw = -5 ln 2: half as wide. */
    const float enc[4] = {10.0f, -5.0f, 5.0f * logf(2.0f), -5.0f * logf(2.0f)};
    const float lg[NCLS] = {-9.0f, -9.0f, -9.0f, 2.0f};
    const osp_anchor_t an = {0.4f, 0.6f, 0.2f, 0.4f};
    osp_det_t d;
    assert_int_equal(osp_post_ssd(enc, lg, 1, NCLS, &an, 0.5f, &d, 1), 1);
    /* yc = 0.4 + 0.2 = 0.6, h = 0.4; xc = 0.6 - 0.2 = 0.4, w = 0.2 */
    assert_float_equal(d.y1, 0.4f, EPS);
    assert_float_equal(d.y2, 0.8f, EPS);
    assert_float_equal(d.x1, 0.3f, EPS);
    assert_float_equal(d.x2, 0.5f, EPS);
    assert_int_equal(d.cls, 3);

    /* Small offsets through the scale factors 10 and 5. */
    const float enc2[4] = {0.5f, 1.0f, 0.25f, -0.5f};
    float yc = 0.05f * 0.2f + 0.4f, xc = 0.1f * 0.4f + 0.6f;
    float h = expf(0.05f) * 0.2f, w = expf(-0.1f) * 0.4f;
    assert_int_equal(osp_post_ssd(enc2, lg, 1, NCLS, &an, 0.5f, &d, 1), 1);
    assert_float_equal(d.x1, (xc - w / 2), EPS);
    assert_float_equal(d.y1, (yc - h / 2), EPS);
    assert_float_equal(d.x2, (xc + w / 2), EPS);
    assert_float_equal(d.y2, (yc + h / 2), EPS);
}

static void test_sigmoid_score(void **state) {
    (void)state;
    const float xs[] = {0.0f, 1.0f, -1.5f, 4.0f, 12.0f};
    for (size_t k = 0; k < sizeof xs / sizeof xs[0]; k++) {
        const float enc[4] = {0};
        const float lg[2] = {0.0f, xs[k]};
        const osp_anchor_t an = {0.5f, 0.5f, 0.1f, 0.1f};
        osp_det_t d;
        assert_int_equal(osp_post_ssd(enc, lg, 1, 2, &an, 0.0f, &d, 1), 1);
        assert_float_equal(d.score, (float)(1.0 / (1.0 + exp(-(double)xs[k]))), 1e-6f);
    }
    /* A hand value: sigmoid(1) = 0.7310586 */
    const float enc[4] = {0}, lg[2] = {0.0f, 1.0f};
    const osp_anchor_t an = {0.5f, 0.5f, 0.1f, 0.1f};
    osp_det_t d;
    osp_post_ssd(enc, lg, 1, 2, &an, 0.0f, &d, 1);
    assert_float_equal(d.score, 0.7310586f, 1e-6f);
}

static void test_background_skipped(void **state) {
    (void)state;
    const float enc[4] = {0};
    const float lg[NCLS] = {30.0f, -30.0f, -30.0f, -30.0f};
    const osp_anchor_t an = {0.5f, 0.5f, 0.1f, 0.1f};
    osp_det_t d[4];
    assert_int_equal(osp_post_ssd(enc, lg, 1, NCLS, &an, 0.1f, d, 4), 0);
    /* Even at threshold 0 class 0 never appears: one per real class. */
    assert_int_equal(osp_post_ssd(enc, lg, 1, NCLS, &an, 0.0f, d, 4), 3);
    for (int i = 0; i < 3; i++) assert_int_equal(d[i].cls, i + 1);
}

/* Reference: every (anchor, class >= 1) with sigmoid(logit) >= t. */
static int count_brute(const float *lg, int n, int ncls, float t) {
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int c = 1; c < ncls; c++)
            if (1.0f / (1.0f + expf(-lg[i * ncls + c])) >= t) k++;
    return k;
}

static void test_thresholding(void **state) {
    (void)state;
    /* logit 0 is score 0.5 exactly: >= keeps it. */
    const float enc[8] = {0};
    const float lg[6] = {0.0f, 0.0f, -0.001f, 0.0f, 0.001f, -1.0f};
    const osp_anchor_t an[2] = {{0.5f, 0.5f, 0.1f, 0.1f}, {0.5f, 0.5f, 0.1f, 0.1f}};
    osp_det_t d[4];
    int n = osp_post_ssd(enc, lg, 2, 3, an, 0.5f, d, 4);
    assert_int_equal(n, 2);
    assert_float_equal(d[0].score, 0.5f, 0.0f);
    assert_int_equal(d[0].cls, 1);
    assert_int_equal(d[1].cls, 1);
    assert_true(d[1].score > 0.5f);
    /* Above 1 nothing can pass. */
    assert_int_equal(osp_post_ssd(enc, lg, 2, 3, an, 1.01f, d, 4), 0);

    /* A dense sweep of logits across several thresholds (including ones
     * near 0 and 1, where float rounding of the sigmoid is coarse in logit
     * terms): the early logit test must never drop or add a box. */
    enum { N = 4000, C = 3 };
    static float sweep[N * C], encs[N * 4];
    static osp_anchor_t ans[N];
    static osp_det_t outs[N * C];
    for (int i = 0; i < N; i++) {
        ans[i] = (osp_anchor_t){0.5f, 0.5f, 0.2f, 0.2f};
        for (int c = 0; c < C; c++)
            sweep[i * C + c] = -20.0f + 40.0f * (float)(i * C + c) / (N * C);
    }
    const float ts[] = {0.0f, 1e-6f, 0.05f, 0.3f, 0.5f, 0.6f, 0.999f, 0.9999999f, 1.0f};
    for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
        int want = count_brute(sweep, N, C, ts[k]);
        assert_int_equal(osp_post_ssd(encs, sweep, N, C, ans, ts[k], outs, N * C), want);
        for (int j = 0; j < want; j++) assert_true(outs[j].score >= ts[k]);
    }
    /* Sanity: the sweep straddles the thresholds, so the counts differ. */
    assert_true(count_brute(sweep, N, C, 0.3f) > count_brute(sweep, N, C, 0.6f));
    assert_true(count_brute(sweep, N, C, 1.0f) > 0);
}

static void test_multi_class_and_cap(void **state) {
    (void)state;
    const float enc[8] = {0, 0, 0, 0, 1, 1, 0, 0};
    const float lg[2 * NCLS] = {-5, 2,  -5, 3,   /* anchor 0: classes 1, 3 */
                                -5, -5, 1,  -5}; /* anchor 1: class 2 */
    const osp_anchor_t an[2] = {{0.5f, 0.5f, 0.2f, 0.2f}, {0.2f, 0.2f, 0.1f, 0.1f}};
    osp_det_t d[4];
    memset(d, 0, sizeof d);
    assert_int_equal(osp_post_ssd(enc, lg, 2, NCLS, an, 0.6f, d, 4), 3);
    assert_int_equal(d[0].cls, 1);
    assert_int_equal(d[1].cls, 3);
    assert_int_equal(d[2].cls, 2);
    /* Both classes of anchor 0 share its box. */
    assert_memory_equal(&d[0], &d[1], offsetof(osp_det_t, score));
    assert_float_equal(d[2].x1, (0.21f - 0.05f), EPS);

    /* cap 1: the total is still reported, one is written. */
    osp_det_t one[2];
    memset(one, 0, sizeof one);
    assert_int_equal(osp_post_ssd(enc, lg, 2, NCLS, an, 0.6f, one, 1), 3);
    assert_int_equal(one[0].cls, 1);
    assert_int_equal(one[1].cls, 0);
    assert_float_equal(one[1].score, 0.0f, 0.0f);
    assert_int_equal(osp_post_ssd(enc, lg, 2, NCLS, an, 0.6f, NULL, 0), 3);
}

static void test_bad_input(void **state) {
    (void)state;
    const float enc[4] = {0};
    const float lg[2] = {0.0f, 5.0f};
    const float nan_lg[2] = {0.0f, NAN};
    const osp_anchor_t an = {0.5f, 0.5f, 0.1f, 0.1f};
    osp_det_t d;
    assert_int_equal(osp_post_ssd(enc, lg, 1, 2, &an, 0.5f, &d, 1), 1);
    assert_int_equal(osp_post_ssd(enc, nan_lg, 1, 2, &an, 0.0f, &d, 1), 0);
    assert_int_equal(osp_post_ssd(enc, lg, 0, 2, &an, 0.5f, &d, 1), 0);
    assert_int_equal(osp_post_ssd(enc, lg, 1, 1, &an, 0.5f, &d, 1), 0);
    assert_int_equal(osp_post_ssd(NULL, lg, 1, 2, &an, 0.5f, &d, 1), 0);
    assert_int_equal(osp_post_ssd(enc, lg, 1, 2, NULL, 0.5f, &d, 1), 0);
}

/* The real layout: 1917 anchors x 24 classes, a few hits placed by hand. */
static void test_full_model_shape(void **state) {
    (void)state;
    enum { C = 24 };
    static float enc[NANCHORS * 4], lg[NANCHORS * C];
    static osp_det_t out[64];
    memset(enc, 0, sizeof enc);
    for (int i = 0; i < NANCHORS * C; i++) lg[i] = -6.0f;
    lg[0 * C + 4] = 1.0f;              /* Person at the first anchor */
    lg[(NANCHORS - 1) * C + 8] = 2.0f; /* Cat at the last */
    lg[L1 * C + 0] = 9.0f;             /* background only: ignored */
    int n = osp_post_ssd(enc, lg, NANCHORS, C, g_anchors, 0.3f, out, 64);
    assert_int_equal(n, 2);
    assert_int_equal(out[0].cls, 4);
    assert_float_equal(out[0].x1, (float)(0.5 / 19 - 0.05), EPS);
    assert_int_equal(out[1].cls, 8);
    float s = sqrtf(0.95f);
    assert_float_equal(out[1].x1, (0.5f - s / 2), EPS);
    assert_float_equal(out[1].y2, (0.5f + s / 2), EPS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_cfg),
        cmocka_unit_test(test_anchor_count),
        cmocka_unit_test(test_anchor_count_variants),
        cmocka_unit_test(test_first_and_last_anchor),
        cmocka_unit_test(test_lowest_layer_cell),
        cmocka_unit_test(test_layer1_first_cell),
        cmocka_unit_test(test_interior_layers),
        cmocka_unit_test(test_zero_encoding_is_anchor),
        cmocka_unit_test(test_known_offsets),
        cmocka_unit_test(test_sigmoid_score),
        cmocka_unit_test(test_background_skipped),
        cmocka_unit_test(test_thresholding),
        cmocka_unit_test(test_multi_class_and_cap),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_full_model_shape),
    };
    return cmocka_run_group_tests(tests, setup_anchors, NULL);
}
