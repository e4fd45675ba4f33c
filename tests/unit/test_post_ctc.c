/* The ctc decoder: greedy decoding (argmax, repeats collapsed, blanks
 * dropped) against a small alphabet, the trailing space class, confidences,
 * logits vs probabilities, and degenerate outputs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "post/decoder.h"

#define C 5 /* blank, a, b, é, space */

static char alphabet[64];

static int make_alphabet(void **state) {
    (void)state;
    snprintf(alphabet, sizeof alphabet, "/tmp/osp-ctc-XXXXXX");
    int fd = mkstemp(alphabet);
    if (fd < 0) return -1;
    const char *text = "a\nb\n\xc3\xa9\n"; /* é: a two-byte symbol */
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int drop_alphabet(void **state) {
    (void)state;
    unlink(alphabet);
    return 0;
}

typedef struct {
    const osp_decoder_t *dec;
    void *st;
    osp_dres_t res;
    char err[256];
} fx_t;

static int fx_setup(fx_t *f, int64_t classes, const char *path) {
    memset(f, 0, sizeof *f);
    f->dec = osp_decoder_find("ctc");
    osp_pdesc_t d = {.name = "out", .dtype = OSP_PDT_F32, .rank = 3, .dims = {-1, -1, classes}};
    osp_dparams_t p = {.option = path};
    return f->dec->setup(&d, 1, &p, &f->st, f->err, sizeof f->err);
}

static int fx_decode(fx_t *f, const float *data, int64_t t, int64_t c) {
    osp_pout_t o = {.name = "out", .dtype = OSP_PDT_F32, .data = data, .rank = 3, .dims = {1, t, c}};
    osp_dparams_t p = {0};
    osp_dres_reset(&f->res);
    return f->dec->decode(f->st, &o, 1, &p, &f->res, f->err, sizeof f->err);
}

static void fx_free(fx_t *f) {
    if (f->st) f->dec->free_state(f->st);
    osp_dres_free(&f->res);
}

/* one-hot-ish probability rows */
static void row(float *r, int k, float p) {
    for (int i = 0; i < C; i++) r[i] = (1 - p) / (C - 1);
    r[k] = p;
}

static void test_greedy_collapse(void **state) {
    (void)state;
    fx_t f;
    assert_int_equal(fx_setup(&f, C, alphabet), 0);
    /* a a - a b b - - é space b : "aab\xc3\xa9 b" */
    const int seq[] = {1, 1, 0, 1, 2, 2, 0, 0, 3, 4, 2};
    enum { T = sizeof seq / sizeof seq[0] };
    float data[T][C];
    for (int t = 0; t < T; t++) row(data[t], seq[t], 0.8f);
    data[1][1] = 0.6f; /* the repeat's own confidence is not counted */
    assert_int_equal(fx_decode(&f, &data[0][0], T, C), 0);
    assert_int_equal(f.res.kind, OSP_REC_TEXT);
    assert_string_equal(f.res.text, "aab\xc3\xa9 b");
    assert_int_equal(f.res.text_len, strlen("aab\xc3\xa9 b"));
    assert_int_equal(f.res.n_classes, 6);
    assert_int_equal(f.res.classes[3].cls, 3);
    assert_float_equal(f.res.classes[0].score, 0.8f, 1e-6);
    assert_float_equal(f.res.text_score, 0.8f, 1e-6);
    fx_free(&f);
}

static void test_blank_only_and_empty(void **state) {
    (void)state;
    fx_t f;
    assert_int_equal(fx_setup(&f, C, alphabet), 0);
    float data[4][C];
    for (int t = 0; t < 4; t++) row(data[t], 0, 0.99f);
    assert_int_equal(fx_decode(&f, &data[0][0], 4, C), 0);
    assert_string_equal(f.res.text, "");
    assert_int_equal(f.res.text_len, 0);
    assert_int_equal(f.res.n_classes, 0);
    assert_float_equal(f.res.text_score, 0.f, 0);
    /* no time steps at all */
    assert_int_equal(fx_decode(&f, &data[0][0], 0, C), 0);
    assert_string_equal(f.res.text, "");
    assert_float_equal(f.res.text_score, 0.f, 0);
    fx_free(&f);
}

static void test_non_finite_skipped(void **state) {
    (void)state;
    fx_t f;
    assert_int_equal(fx_setup(&f, C, alphabet), 0);
    float data[4][C];
    row(data[0], 1, 0.9f);
    for (int k = 0; k < C; k++) data[1][k] = NAN; /* nothing finite: a blank */
    row(data[2], 1, 0.9f);                        /* so this 'a' is a new one */
    row(data[3], 2, 0.7f);
    data[3][3] = INFINITY; /* never wins */
    data[3][0] = NAN;
    assert_int_equal(fx_decode(&f, &data[0][0], 4, C), 0);
    assert_string_equal(f.res.text, "aab");
    assert_true(isfinite(f.res.text_score));
    for (int i = 0; i < f.res.n_classes; i++) {
        assert_true(isfinite(f.res.classes[i].score));
        assert_true(f.res.classes[i].score > 0 && f.res.classes[i].score <= 1);
    }
    fx_free(&f);
}

static void test_logits_softmaxed(void **state) {
    (void)state;
    fx_t f;
    assert_int_equal(fx_setup(&f, C, alphabet), 0);
    float data[1][C] = {{0, 3, 0, 0, 0}};
    assert_int_equal(fx_decode(&f, &data[0][0], 1, C), 0);
    assert_string_equal(f.res.text, "a");
    float e = expf(3.f);
    assert_float_equal(f.res.text_score, e / (e + 4), 1e-5);
    fx_free(&f);
}

static void test_no_space_class(void **state) {
    (void)state;
    fx_t f;
    assert_int_equal(fx_setup(&f, C - 1, alphabet), 0); /* blank + 3 symbols */
    float data[2][C - 1] = {{0, 0, 0.9f, 0.1f}, {0.1f, 0, 0, 0.9f}};
    assert_int_equal(fx_decode(&f, &data[0][0], 2, C - 1), 0);
    assert_string_equal(f.res.text, "b\xc3\xa9");
    /* a run whose class count does not fit the alphabet fails, naming it */
    assert_int_not_equal(fx_decode(&f, &data[0][0], 1, 9), 0);
    assert_non_null(strstr(f.err, "alphabet"));
    fx_free(&f);
}

static void test_setup_errors(void **state) {
    (void)state;
    fx_t f;
    assert_int_not_equal(fx_setup(&f, C, "/nonexistent/alphabet.txt"), 0);
    assert_non_null(strstr(f.err, "alphabet"));
    assert_null(f.st);
    assert_int_not_equal(fx_setup(&f, C, NULL), 0);
    assert_int_not_equal(fx_setup(&f, 100, alphabet), 0); /* 100 classes, 3 symbols */
    assert_non_null(strstr(f.err, "100 classes"));
    assert_null(f.st);
    /* an output that is no sequence */
    osp_pdesc_t d = {.name = "x", .dtype = OSP_PDT_I64, .rank = 3, .dims = {1, 4, C}};
    osp_dparams_t p = {.option = alphabet};
    void *st = NULL;
    assert_int_not_equal(f.dec->setup(&d, 1, &p, &st, f.err, sizeof f.err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_greedy_collapse),    cmocka_unit_test(test_blank_only_and_empty),
        cmocka_unit_test(test_non_finite_skipped), cmocka_unit_test(test_logits_softmaxed),
        cmocka_unit_test(test_no_space_class),     cmocka_unit_test(test_setup_errors),
    };
    return cmocka_run_group_tests(tests, make_alphabet, drop_alphabet);
}
