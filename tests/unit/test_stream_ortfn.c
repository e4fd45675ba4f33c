/* The runtime scoring function (src/stream/ortfn.c) on the test backend:
 * inputs fed by name, recurrent state carried from run to run and zeroed by
 * reset, spec errors named. The state is the model's FIRST input, so the
 * test backend's "from_input": "mean" output reads it back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "stream/stream.h"

static const char *SCRIPT =
    "{\"inputs\": ["
    "  {\"name\": \"state\", \"dtype\": \"float32\", \"shape\": [2, -1, 4]},"
    "  {\"name\": \"input\", \"dtype\": \"float32\", \"shape\": [-1, -1]},"
    "  {\"name\": \"sr\", \"dtype\": \"int64\", \"shape\": []}],"
    " \"outputs\": ["
    "  {\"name\": \"output\", \"dtype\": \"float32\", \"shape\": [1, 1], \"from_input\": \"mean\"},"
    "  {\"name\": \"stateN\", \"dtype\": \"float32\", \"shape\": [2, -1, 4], \"run_shape\": [2, 1, 4],"
    "   \"fill\": 0.5}]}";

static osp_rt_model_t *load(char *path, size_t n) {
    snprintf(path, n, "/tmp/osprey-ortfn-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, SCRIPT, strlen(SCRIPT)), (ssize_t)strlen(SCRIPT));
    close(fd);
    osp_rt_model_t *m = NULL;
    char err[256];
    osp_rt_opts_t o = {0};
    if (osp_backend_test.load(path, &o, &m, err, sizeof err) != 0) fail_msg("%s", err);
    return m;
}

static void test_state_carried_and_reset(void **state) {
    (void)state;
    char path[64], err[256];
    osp_rt_model_t *m = load(path, sizeof path);
    osp_stream_ort_spec_t spec = {.input = "input",
                                  .output = "output",
                                  .n_state = 1,
                                  .state_in = {"state"},
                                  .state_out = {"stateN"},
                                  .int_input = "sr",
                                  .int_value = 16000};
    osp_stream_ort_t *o = NULL;
    assert_int_equal(osp_stream_ort_new(m, &spec, &o, err, sizeof err), 0);
    osp_stream_fn_t fn = osp_stream_ort_fn(o);
    osp_stream_config_t cfg = {.frame_len = 2, .window = 0, .channels = 1};
    osp_stream_t *s = NULL;
    assert_int_equal(osp_stream_new(&cfg, &fn, &s, err, sizeof err), 0);
    float frame[2] = {1, 2};
    osp_stream_reading_t r;
    osp_stream_push(s, frame);
    osp_stream_latest(s, &r);
    assert_float_equal(r.scores[0], 0.0f, 0); /* zeros at first */
    osp_stream_push(s, frame);
    osp_stream_latest(s, &r);
    assert_float_equal(r.scores[0], 0.5f, 0); /* the previous run's stateN */
    osp_stream_reset(s);
    osp_stream_push(s, frame);
    osp_stream_latest(s, &r);
    assert_float_equal(r.scores[0], 0.0f, 0);
    assert_int_equal(r.failures, 0);
    assert_int_equal(osp_test_backend_runs(m), 3);
    /* a window that does not give one output float per call is a counted failure */
    osp_stream_free(s);
    osp_stream_config_t wide = {.frame_len = 2, .window = 0, .channels = 2};
    assert_int_equal(osp_stream_new(&wide, &fn, &s, err, sizeof err), 0);
    osp_stream_push(s, frame);
    osp_stream_latest(s, &r);
    assert_int_equal(r.failures, 1);
    assert_true(r.warming_up);
    osp_stream_free(s);
    osp_stream_ort_free(o);
    osp_rt_model_free(m);
    remove(path);
}

static void expect_spec_error(osp_rt_model_t *m, osp_stream_ort_spec_t spec, const char *needle) {
    osp_stream_ort_t *o = (osp_stream_ort_t *)1;
    char err[256] = "";
    assert_int_equal(osp_stream_ort_new(m, &spec, &o, err, sizeof err), OSP_STREAM_EINVAL);
    assert_null(o);
    if (!strstr(err, needle)) fail_msg("error '%s' does not say '%s'", err, needle);
}

static void test_spec_errors(void **state) {
    (void)state;
    char path[64];
    osp_rt_model_t *m = load(path, sizeof path);
    osp_stream_ort_spec_t ok = {.input = "input",
                                .output = "output",
                                .n_state = 1,
                                .state_in = {"state"},
                                .state_out = {"stateN"},
                                .int_input = "sr",
                                .int_value = 16000};
    osp_stream_ort_spec_t s = ok;
    s.input = "audio";
    expect_spec_error(m, s, "no input \"audio\"");
    s = ok;
    s.n_state = 0;
    expect_spec_error(m, s, "input \"state\" is not fed");
    s = ok;
    s.state_out[0] = "hn";
    expect_spec_error(m, s, "state pair 0");
    s = ok;
    s.int_input = "input";
    expect_spec_error(m, s, "not an unused int64 input");
    s = ok;
    s.n_state = 9;
    expect_spec_error(m, s, "at most");
    osp_rt_model_free(m);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_carried_and_reset),
        cmocka_unit_test(test_spec_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
