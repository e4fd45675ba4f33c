/* The ssd-nms postprocessor (TFLite_Detection_PostProcess outputs) through
 * the decoder interface: outputs found by shape in any order, classes told
 * from scores by their integral values, ymin/xmin order, count honoured, and
 * the degenerate outputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "post/decoder.h"

enum { N = 10 };

typedef struct {
    float boxes[N][4], classes[N], scores[N], count[1];
    osp_pdesc_t d[4];
    osp_pout_t o[4];
} ssd_t;

/* order: where boxes, classes, scores, count go */
static void wire(ssd_t *t, const int order[4]) {
    const void *data[4] = {t->boxes, t->classes, t->scores, t->count};
    const char *names[4] = {"TFLite_Detection_PostProcess", "TFLite_Detection_PostProcess:1",
                            "TFLite_Detection_PostProcess:2", "TFLite_Detection_PostProcess:3"};
    for (int k = 0; k < 4; k++) {
        int at = order[k];
        osp_pdesc_t *d = &t->d[at];
        *d = (osp_pdesc_t){.name = names[k], .dtype = OSP_PDT_F32};
        if (k == 0)
            d->rank = 3, d->dims[0] = 1, d->dims[1] = N, d->dims[2] = 4;
        else if (k == 3)
            d->rank = 1, d->dims[0] = 1;
        else
            d->rank = 2, d->dims[0] = 1, d->dims[1] = N;
        t->o[at] = (osp_pout_t){.name = d->name, .dtype = OSP_PDT_F32, .data = data[k], .rank = d->rank};
        memcpy(t->o[at].dims, d->dims, sizeof d->dims);
    }
}

static osp_dparams_t params(void) {
    return (osp_dparams_t){.in_w = 300,
                           .in_h = 300,
                           .in_c = 3,
                           .confidence = 0.5f,
                           .nms_iou = 0.45f,
                           .max_detections = 100,
                           .scale_x = 1,
                           .scale_y = 1,
                           .frame_w = 300,
                           .frame_h = 300};
}

static int run(ssd_t *t, int n, const osp_dparams_t *p, osp_dres_t *r) {
    const osp_decoder_t *dec = osp_decoder_find("ssd-nms");
    assert_non_null(dec);
    void *st = NULL;
    char err[256];
    if (dec->setup(t->d, n, p, &st, err, sizeof err)) return -1;
    osp_dres_reset(r);
    int rc = dec->decode(st, t->o, n, p, r, err, sizeof err);
    if (dec->free_state) dec->free_state(st);
    return rc;
}

static void fill(ssd_t *t) {
    memset(t, 0, sizeof *t);
    const float b0[4] = {0.1f, 0.2f, 0.5f, 0.6f}, b1[4] = {0.12f, 0.22f, 0.52f, 0.62f};
    memcpy(t->boxes[0], b0, sizeof b0);
    memcpy(t->boxes[1], b1, sizeof b1); /* overlaps box 0, same class: the graph kept it */
    t->classes[0] = 0, t->scores[0] = 0.85f;
    t->classes[1] = 0, t->scores[1] = 0.65f;
    t->classes[2] = 2, t->scores[2] = 0.3f;  /* below */
    t->classes[3] = 16, t->scores[3] = 0.9f; /* beyond count: ignored */
    t->count[0] = 3;
}

static void test_any_order(void **state) {
    (void)state;
    static const int orders[4][4] = {{0, 1, 2, 3}, {1, 0, 3, 2}, {3, 2, 1, 0}, {2, 3, 0, 1}};
    for (int k = 0; k < 4; k++) {
        ssd_t t;
        fill(&t);
        wire(&t, orders[k]);
        osp_dres_t r = {0};
        osp_dparams_t p = params();
        assert_int_equal(run(&t, 4, &p, &r), 0);
        assert_int_equal(r.n_dets, 2);
        assert_int_equal(r.dets[0].cls, 0);
        assert_float_equal(r.dets[0].score, 0.85f, 0);
        /* ymin, xmin, ymax, xmax normalised -> x1, y1, x2, y2 in pixels */
        assert_float_equal(r.dets[0].x1, 60, 1e-3);
        assert_float_equal(r.dets[0].y1, 30, 1e-3);
        assert_float_equal(r.dets[0].x2, 180, 1e-3);
        assert_float_equal(r.dets[0].y2, 150, 1e-3);
        assert_float_equal(r.dets[1].score, 0.65f, 0);
        osp_dres_free(&r);
    }
}

static void test_scores_of_one_and_classes_of_zero(void **state) {
    (void)state;
    /* both arrays integral: the one with values above 1 holds classes */
    ssd_t t;
    fill(&t);
    t.scores[0] = 1.0f, t.scores[1] = 1.0f, t.scores[2] = 0.0f;
    t.classes[1] = 7;
    static const int order[4] = {0, 2, 1, 3}; /* scores listed before classes */
    wire(&t, order);
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    assert_int_equal(run(&t, 4, &p, &r), 0);
    assert_int_equal(r.n_dets, 2);
    assert_int_equal(r.dets[1].cls, 7);
    osp_dres_free(&r);
}

static void test_degenerate(void **state) {
    (void)state;
    static const int order[4] = {0, 1, 2, 3};
    ssd_t t;
    osp_dres_t r = {0};
    osp_dparams_t p = params();
    fill(&t);
    t.count[0] = 0; /* nothing found */
    wire(&t, order);
    assert_int_equal(run(&t, 4, &p, &r), 0);
    assert_int_equal(r.n_dets, 0);
    t.count[0] = NAN;
    assert_int_equal(run(&t, 4, &p, &r), 0);
    assert_int_equal(r.n_dets, 0);
    /* a count beyond N, NaN and Inf scores, a box outside the frame */
    fill(&t);
    t.count[0] = 1e9f;
    t.scores[0] = NAN;
    t.scores[1] = INFINITY;
    const float out[4] = {-0.5f, 0.9f, 0.5f, 1.7f};
    memcpy(t.boxes[3], out, sizeof out);
    wire(&t, order);
    assert_int_equal(run(&t, 4, &p, &r), 0);
    assert_int_equal(r.n_dets, 1);
    assert_int_equal(r.dets[0].cls, 16);
    assert_float_equal(r.dets[0].x1, 270, 1e-3);
    assert_float_equal(r.dets[0].y1, 0, 0);
    assert_float_equal(r.dets[0].x2, 300, 0);
    assert_float_equal(r.dets[0].y2, 150, 1e-3);
    /* more than maxDetections: the best kept */
    for (int i = 0; i < N; i++) t.scores[i] = 0.5f + 0.01f * (float)i, t.classes[i] = 1;
    t.count[0] = N;
    p.max_detections = 3;
    assert_int_equal(run(&t, 4, &p, &r), 0);
    assert_int_equal(r.n_dets, 3);
    assert_float_equal(r.dets[0].score, 0.59f, 1e-6);
    /* three outputs: refused */
    assert_int_not_equal(run(&t, 3, &p, &r), 0);
    osp_dres_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_any_order),
        cmocka_unit_test(test_scores_of_one_and_classes_of_zero),
        cmocka_unit_test(test_degenerate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
