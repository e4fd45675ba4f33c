/* wire/cmdargs: open_stream's config, register_shm and unregister_shm, a
 * command's name and index, the startup config's thread keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "wire/cmdargs.h"

/* The command as the server has it: through osprey's JSON reader. */
static cJSON *cmd_of(const char *text) {
    cJSON *j = NULL;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(osp_wire_command_parse((const uint8_t *)text, strlen(text), &j, err, sizeof err),
                     0);
    return j;
}

static int stream_parse(const char *text, osp_wire_stream_open_t *o, char *err, size_t errlen) {
    cJSON *j = cmd_of(text);
    int rc = osp_wire_stream_open_parse(cJSON_GetObjectItemCaseSensitive(j, "config"), o, err, errlen);
    cJSON_Delete(j);
    return rc;
}

static void test_stream_full(void **s) {
    (void)s;
    cJSON *j = cmd_of("{\"cmd\":\"open_stream\",\"config\":{\"path\":\"/m/v.onnx\",\"frameLen\":512,"
                      "\"window\":4,\"stride\":2,\"backlog\":8,\"channels\":2,\"input\":\"x\","
                      "\"intInput\":\"sr\",\"intValue\":-16000,\"state\":[[\"h\",\"hn\"],[\"c\",\"cn\"]]}}");
    osp_wire_stream_open_t o;
    char err[512];
    assert_int_equal(osp_wire_stream_open_parse(cJSON_GetObjectItemCaseSensitive(j, "config"), &o,
                                                err, sizeof err),
                     0);
    assert_false(o.silero);
    assert_string_equal(o.path, "/m/v.onnx");
    assert_int_equal(o.frame_len, 512);
    assert_int_equal(o.window, 4);
    assert_int_equal(o.stride, 2);
    assert_int_equal(o.backlog, 8);
    assert_int_equal(o.channels, 2);
    assert_int_equal(o.ring, (4 + 2 * 8) * 512);
    assert_string_equal(o.input, "x");
    assert_string_equal(o.output, "output");
    assert_string_equal(o.int_input, "sr");
    assert_int_equal(o.int_value, -16000);
    assert_int_equal(o.n_state, 2);
    assert_string_equal(o.state_in[1], "c");
    assert_string_equal(o.state_out[1], "cn");
    cJSON_Delete(j);
}

static void test_stream_defaults_and_silero(void **s) {
    (void)s;
    osp_wire_stream_open_t o;
    char err[512];
    assert_int_equal(stream_parse("{\"config\":{\"path\":\"p\",\"frameLen\":3,\"input\":7}}", &o,
                                  err, sizeof err),
                     0);
    assert_int_equal(o.window, 1);
    assert_int_equal(o.stride, 0);
    assert_int_equal(o.backlog, 0);
    assert_int_equal(o.channels, 1);
    assert_string_equal(o.input, "input"); /* not a string: the default */
    assert_null(o.int_input);
    assert_int_equal(o.n_state, 0);
    assert_int_equal(stream_parse("{\"config\":{\"model\":\"silero-vad\",\"frameLen\":-1}}", &o,
                                  err, sizeof err),
                     0);
    assert_true(o.silero);
}

/* The requests that once took 1.1 GB and 112 threads, and each bound's edge. */
static void test_stream_bounds(void **s) {
    (void)s;
    static const char *const bad[] = {
        "{\"config\":{\"path\":\"p\",\"frameLen\":1073741824}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":4,\"window\":2147483647}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":4,\"backlog\":1099511627776}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":0}}",
        "{\"config\":{\"path\":\"p\"}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":1.5}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":NaN}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":4,\"stride\":4097}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":4,\"channels\":257}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":4,\"intValue\":2147483648}}",
        "{\"config\":{\"path\":\"p\",\"frameLen\":4,\"window\":\"4\"}}",
    };
    osp_wire_stream_open_t o;
    char err[512];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(stream_parse(bad[i], &o, err, sizeof err), OSP_WIRE_EINVAL);
        assert_non_null(strstr(err, "must be whole numbers in range"));
    }
    /* 65536 x 256 is the ring's bound exactly; one frame more is past it */
    assert_int_equal(stream_parse("{\"config\":{\"path\":\"p\",\"frameLen\":65536,\"window\":256}}",
                                  &o, err, sizeof err),
                     0);
    assert_int_equal(stream_parse("{\"config\":{\"path\":\"p\",\"frameLen\":65536,\"window\":256,"
                                  "\"stride\":1}}",
                                  &o, err, sizeof err),
                     OSP_WIRE_EINVAL);
    assert_string_equal(err, "open_stream: (window + stride x backlog) x frameLen is 16842752 "
                             "values; at most 16777216");
}

static void test_stream_refusals(void **s) {
    (void)s;
    osp_wire_stream_open_t o;
    char err[512];
    assert_int_equal(osp_wire_stream_open_parse(NULL, &o, err, sizeof err), OSP_WIRE_EINVAL);
    assert_string_equal(err, "open_stream needs a \"config\" object");
    assert_int_equal(stream_parse("{\"config\":[1]}", &o, err, sizeof err), OSP_WIRE_EINVAL);
    assert_string_equal(err, "open_stream needs a \"config\" object");
    assert_int_equal(stream_parse("{\"config\":{\"model\":\"whisper\"}}", &o, err, sizeof err),
                     OSP_WIRE_EINVAL);
    assert_string_equal(err,
                        "open_stream: unknown model 'whisper' (known: silero-vad; or give a path)");
    assert_int_equal(stream_parse("{\"config\":{\"frameLen\":4}}", &o, err, sizeof err),
                     OSP_WIRE_EINVAL);
    assert_string_equal(err, "open_stream needs \"config\" with \"model\" or \"path\"");
    char big[1200 + 64];
    snprintf(big, sizeof big, "{\"config\":{\"frameLen\":4,\"path\":\"%01024d\"}}", 0);
    assert_int_equal(stream_parse(big, &o, err, sizeof err), OSP_WIRE_EINVAL);
    assert_string_equal(err, "open_stream needs \"config\" with \"model\" or \"path\"");
    assert_int_equal(stream_parse("{\"config\":{\"path\":\"p\",\"frameLen\":4,\"state\":[[\"a\",\"b\"],"
                                  "[\"c\",\"d\"],[\"e\",\"f\"],[\"g\",\"h\"],[\"i\",\"j\"]]}}",
                                  &o, err, sizeof err),
                     OSP_WIRE_EINVAL);
    assert_string_equal(err, "open_stream: \"state\" is a list of up to 4 [input, output] name pairs");
    assert_int_equal(stream_parse("{\"config\":{\"path\":\"p\",\"frameLen\":4,\"state\":[[\"a\",1]]}}",
                                  &o, err, sizeof err),
                     OSP_WIRE_EINVAL);
}

static void test_shm_register(void **s) {
    (void)s;
    static const struct {
        const char *text;
        int ok;
        uint64_t size;
    } cases[] = {
        {"{\"name\":\"/cam1\"}", 1, 0},
        {"{\"name\":\"/cam1\",\"size\":4096}", 1, 4096},
        {"{\"name\":\"/cam1\",\"size\":9007199254740992}", 1, 9007199254740992ull},
        {"{\"name\":\"/cam1\",\"size\":9007199254740994}", 0, 0},
        {"{\"name\":\"/cam1\",\"size\":1e300}", 0, 0},
        {"{\"name\":\"/cam1\",\"size\":Infinity}", 0, 0},
        {"{\"name\":\"/cam1\",\"size\":NaN}", 0, 0},
        {"{\"name\":\"/cam1\",\"size\":0}", 0, 0},
        {"{\"name\":\"/cam1\",\"size\":2.5}", 0, 0},
        {"{\"name\":\"/cam1\",\"size\":\"8\"}", 0, 0},
        {"{\"name\":\"cam1\"}", 0, 0},
        {"{\"name\":\"/a/b\"}", 0, 0},
        {"{\"name\":7}", 0, 0},
        {"{}", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j = cmd_of(cases[i].text);
        osp_wire_shm_register_t r;
        char err[400] = "";
        int rc = osp_wire_shm_register_parse(j, &r, err, sizeof err);
        assert_int_equal(rc, cases[i].ok ? 0 : OSP_WIRE_EINVAL);
        if (cases[i].ok) {
            assert_string_equal(r.name, "/cam1");
            assert_true(r.size == cases[i].size);
        } else {
            assert_true(strncmp(err, "register_shm", 12) == 0);
        }
        cJSON_Delete(j);
    }
    char name[300];
    snprintf(name, sizeof name, "{\"name\":\"/%0254d\"}", 0); /* 255 bytes */
    cJSON *j = cmd_of(name);
    osp_wire_shm_register_t r;
    char err[400];
    assert_int_equal(osp_wire_shm_register_parse(j, &r, err, sizeof err), OSP_WIRE_EINVAL);
    cJSON_Delete(j);
}

static void test_shm_unregister(void **s) {
    (void)s;
    static const struct {
        const char *text;
        int ok;
        uint32_t id;
    } cases[] = {
        {"{\"regionId\":3}", 1, 3},
        {"{\"regionId\":3.9}", 1, 3},
        {"{\"regionId\":4294967295}", 1, 4294967295u},
        {"{\"regionId\":4294967296}", 0, 0},
        {"{\"regionId\":-1}", 0, 0},
        {"{\"regionId\":NaN}", 0, 0},
        {"{\"regionId\":\"3\"}", 0, 0},
        {"{}", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j = cmd_of(cases[i].text);
        uint32_t id = 0;
        char err[100] = "";
        assert_int_equal(osp_wire_shm_unregister_parse(j, &id, err, sizeof err),
                         cases[i].ok ? 0 : OSP_WIRE_EINVAL);
        if (cases[i].ok)
            assert_int_equal(id, cases[i].id);
        else
            assert_string_equal(err, "unregister_shm: no such \"regionId\"");
        cJSON_Delete(j);
    }
}

/* A list as "config" crashed the server: its items have no key. */
static void test_reconfigure_keys(void **s) {
    (void)s;
    static const struct {
        const char *text;
        const char *err; /* NULL: accepted */
    } cases[] = {
        {"{}", NULL},
        {"{\"config\":{}}", NULL},
        {"{\"config\":{\"confidence\":0.5,\"maxDetections\":3,\"nmsIouThreshold\":0.1}}", NULL},
        {"{\"config\":[1,2]}", "reconfigure needs a \"config\" object"},
        {"{\"config\":\"x\"}", "reconfigure needs a \"config\" object"},
        {"{\"config\":{\"path\":\"m\",\"confidence\":0.5,\"labels\":1}}",
         "keys not reconfigurable without a reload: path, labels (allowed: confidence, "
         "maxDetections, nmsIouThreshold)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *j = cmd_of(cases[i].text);
        char err[512] = "";
        int rc = osp_wire_reconfigure_keys(cJSON_GetObjectItemCaseSensitive(j, "config"), err,
                                           sizeof err);
        if (cases[i].err) {
            assert_int_equal(rc, OSP_WIRE_EINVAL);
            assert_string_equal(err, cases[i].err);
        } else {
            assert_int_equal(rc, 0);
        }
        cJSON_Delete(j);
    }
}

static void test_reconfigure_values(void **s) {
    (void)s;
    cJSON *j = cmd_of("{\"config\":{\"confidence\":0.5,\"maxDetections\":3}}");
    float conf = 0.25f, nms = 0.45f;
    int maxdet = 100;
    char err[512] = "";
    assert_int_equal(osp_wire_reconfigure_values(cJSON_GetObjectItemCaseSensitive(j, "config"),
                                                 &conf, &nms, &maxdet, err, sizeof err),
                     0);
    assert_float_equal(conf, 0.5, 1e-6);
    assert_float_equal(nms, 0.45, 1e-6);
    assert_int_equal(maxdet, 3);
    cJSON_Delete(j);
    static const struct {
        const char *text, *err;
    } bad[] = {
        {"{\"config\":{\"confidence\":0.9,\"maxDetections\":2.5}}",
         "maxDetections must be an integer from 1 to 100000"},
        {"{\"config\":{\"nmsIouThreshold\":NaN}}", "nmsIouThreshold must be a number from 0 to 1"},
        {"{\"config\":{\"confidence\":\"0.5\"}}", "confidence must be a number from 0 to 1"},
        {"{\"config\":{\"maxDetections\":Infinity}}",
         "maxDetections must be an integer from 1 to 100000"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = cmd_of(bad[i].text);
        conf = 0.25f;
        maxdet = 100;
        assert_int_equal(osp_wire_reconfigure_values(cJSON_GetObjectItemCaseSensitive(j, "config"),
                                                     &conf, &nms, &maxdet, err, sizeof err),
                         OSP_WIRE_EINVAL);
        assert_string_equal(err, bad[i].err);
        assert_float_equal(conf, 0.25, 1e-6); /* nothing changed */
        assert_int_equal(maxdet, 100);
        cJSON_Delete(j);
    }
}

static void test_name_index(void **s) {
    (void)s;
    cJSON *j = cmd_of("{\"cmd\":\"load\",\"index\":255}");
    int index = -1;
    assert_string_equal(osp_wire_cmd_name(j), "load");
    assert_int_equal(osp_wire_cmd_index(j, 256, &index), 0);
    assert_int_equal(index, 255);
    assert_int_equal(osp_wire_cmd_index(j, 255, &index), -1);
    cJSON_Delete(j);
    static const char *const bad[] = {"{\"cmd\":1,\"index\":-1}", "{\"index\":1.5}",
                                      "{\"index\":NaN}", "{\"index\":Infinity}", "{\"index\":\"1\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = cmd_of(bad[i]);
        assert_string_equal(osp_wire_cmd_name(j), "unknown");
        assert_int_equal(osp_wire_cmd_index(j, 256, &index), -1);
        cJSON_Delete(j);
    }
}

/* NaN passed a test written as `v < 0 || v > 256` and was then converted
 * to int, which is undefined. */
static void test_hello_ext(void **s) {
    (void)s;
    static const char cfg[] = "{\"intraOpThreads\":NaN,\"loneFrameThreads\":4,\"predictNice\":257,"
                              "\"autoConcurrency\":false}";
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(osp_wire_hello_parse(OSP_WIRE_MSG_COMMAND, (const uint8_t *)cfg, strlen(cfg),
                                          OSP_WIRE_VERSION, &h, err, sizeof err),
                     0);
    osp_wire_hello_ext_t x;
    osp_wire_hello_ext(&h, &x);
    assert_int_equal(x.intra_op_threads, -1);
    assert_int_equal(x.lone_frame_threads, 4);
    assert_int_equal(x.predict_nice, -1);
    assert_int_equal(x.auto_concurrency, 0);
    osp_wire_hello_free(&h);
    osp_wire_hello_ext(NULL, &x);
    assert_int_equal(x.auto_concurrency, 1);
    assert_int_equal(x.intra_op_threads, -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_full),      cmocka_unit_test(test_stream_defaults_and_silero),
        cmocka_unit_test(test_stream_bounds),    cmocka_unit_test(test_stream_refusals),
        cmocka_unit_test(test_shm_register),     cmocka_unit_test(test_shm_unregister),
        cmocka_unit_test(test_reconfigure_keys), cmocka_unit_test(test_reconfigure_values),
        cmocka_unit_test(test_name_index),       cmocka_unit_test(test_hello_ext),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
