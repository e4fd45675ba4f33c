/* The classifier decoder: probabilities used as they are, logits softmaxed,
 * the sigmoid option, top-k order and threshold, non-finite outputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "post/decoder.h"

static int run(const float *v, int n, const char *option, int top_k, float conf, osp_dres_t *res) {
    const osp_decoder_t *dec = osp_decoder_find("classifier");
    char err[256];
    osp_pdesc_t d = {.name = "output", .dtype = OSP_PDT_F32, .rank = 2, .dims = {1, n}};
    osp_dparams_t p = {.option = option, .top_k = top_k, .confidence = conf};
    void *st = NULL;
    if (dec->setup(&d, 1, &p, &st, err, sizeof err)) return -1;
    osp_pout_t o = {.name = "output", .dtype = OSP_PDT_F32, .data = v, .rank = 2, .dims = {1, n}};
    osp_dres_reset(res);
    return dec->decode(st, &o, 1, &p, res, err, sizeof err);
}

static void test_probabilities_as_is(void **state) {
    (void)state;
    osp_dres_t r = {0};
    const float v[4] = {0.1f, 0.6f, 0.05f, 0.25f};
    assert_int_equal(run(v, 4, NULL, 3, 0, &r), 0);
    assert_int_equal(r.kind, OSP_REC_CLASSES);
    assert_int_equal(r.n_classes, 3);
    assert_int_equal(r.classes[0].cls, 1);
    assert_float_equal(r.classes[0].score, 0.6f, 0);
    assert_int_equal(r.classes[1].cls, 3);
    assert_int_equal(r.classes[2].cls, 0);
    osp_dres_free(&r);
}

static void test_logits_softmaxed(void **state) {
    (void)state;
    osp_dres_t r = {0};
    const float v[3] = {2.f, 0.f, -1.f};
    assert_int_equal(run(v, 3, NULL, 5, 0, &r), 0);
    assert_int_equal(r.n_classes, 3); /* top_k capped at the class count */
    double z = exp(2) + 1 + exp(-1);
    assert_float_equal(r.classes[0].score, exp(2) / z, 1e-6);
    assert_float_equal(r.classes[2].score, exp(-1) / z, 1e-6);
    /* explicitly softmax: the same */
    assert_int_equal(run(v, 3, "softmax", 5, 0, &r), 0);
    assert_float_equal(r.classes[0].score, exp(2) / z, 1e-6);
    osp_dres_free(&r);
}

static void test_sigmoid_option(void **state) {
    (void)state;
    osp_dres_t r = {0};
    const float v[3] = {0.f, 2.f, -3.f};
    assert_int_equal(run(v, 3, "sigmoid", 5, 0.4f, &r), 0);
    assert_int_equal(r.n_classes, 2); /* sigmoid(-3) = 0.047 is below 0.4 */
    assert_int_equal(r.classes[0].cls, 1);
    assert_float_equal(r.classes[0].score, 1 / (1 + exp(-2)), 1e-6);
    assert_float_equal(r.classes[1].score, 0.5f, 1e-6);
    osp_dres_free(&r);
}

static void test_all_below_threshold(void **state) {
    (void)state;
    osp_dres_t r = {0};
    const float v[4] = {0.25f, 0.25f, 0.25f, 0.25f};
    assert_int_equal(run(v, 4, NULL, 5, 0.5f, &r), 0);
    assert_int_equal(r.kind, OSP_REC_CLASSES);
    assert_int_equal(r.n_classes, 0);
    osp_dres_free(&r);
}

static void test_non_finite_skipped(void **state) {
    (void)state;
    osp_dres_t r = {0};
    const float v[5] = {NAN, 2.f, INFINITY, 0.f, -INFINITY};
    assert_int_equal(run(v, 5, NULL, 5, 0, &r), 0);
    assert_int_equal(r.n_classes, 2); /* only the finite ones, softmaxed between them */
    assert_int_equal(r.classes[0].cls, 1);
    assert_float_equal(r.classes[0].score, exp(2) / (exp(2) + 1), 1e-6);
    assert_int_equal(r.classes[1].cls, 3);
    const float all_nan[2] = {NAN, NAN};
    assert_int_equal(run(all_nan, 2, NULL, 5, 0, &r), 0);
    assert_int_equal(r.n_classes, 0);
    osp_dres_free(&r);
}

static void test_ties_and_bad_option(void **state) {
    (void)state;
    osp_dres_t r = {0};
    const float v[3] = {0.4f, 0.2f, 0.4f};
    assert_int_equal(run(v, 3, NULL, 2, 0, &r), 0);
    assert_int_equal(r.classes[0].cls, 0); /* the lower class first on a tie */
    assert_int_equal(r.classes[1].cls, 2);
    assert_int_not_equal(run(v, 3, "tanh", 2, 0, &r), 0);
    osp_dres_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probabilities_as_is), cmocka_unit_test(test_logits_softmaxed),
        cmocka_unit_test(test_sigmoid_option),      cmocka_unit_test(test_all_below_threshold),
        cmocka_unit_test(test_non_finite_skipped),  cmocka_unit_test(test_ties_and_bad_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
