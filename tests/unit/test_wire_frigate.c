/* wire/frigate: Frigate's zmq detector protocol — headers, tensors, reply
 * rows, handshake answers, upload names, labelmaps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/frame.h"
#include "wire/frigate.h"

static char err[256];

static int parse(const char *json, osp_frigate_req_t *rq) {
    return osp_frigate_parse((const uint8_t *)json, strlen(json), rq, err, sizeof err);
}

static float row_at(const uint8_t *rows, int r, int k) {
    uint32_t u = osp_wire_rd32(rows + ((size_t)r * 6 + (size_t)k) * 4);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The headers Frigate's plugin writes (json.dumps, so with blanks). */
static void test_endpoint_is_local(void **s) {
    (void)s;
    assert_int_equal(osp_frigate_endpoint_is_local("ipc:///tmp/cache/zmq_detector"), 1);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://127.0.0.1:5555"), 1);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://127.8.9.10:5555"), 1);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://localhost:5555"), 1);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://[::1]:5555"), 1);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://0.0.0.0:5555"), 0);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://*:5555"), 0);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://[::]:5555"), 0);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://lo:5555"), 0); /* a name: not trusted */
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://172.17.0.1:5555"), 0);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://127.0.0.1.example.com:5555"), 0);
    assert_int_equal(osp_frigate_endpoint_is_local("tcp://127.0.0.1"), 0);
    assert_int_equal(osp_frigate_endpoint_is_local("inproc://x"), 0);
    assert_int_equal(osp_frigate_endpoint_is_local(NULL), 0);
}

static void test_headers(void **s) {
    (void)s;
    osp_frigate_req_t rq;
    assert_int_equal(parse("{\"shape\": [1, 300, 320, 3], \"dtype\": \"uint8\", \"model_type\": \"ssd\"}",
                           &rq),
                     0);
    assert_int_equal(rq.kind, OSP_FRIGATE_TENSOR);
    assert_int_equal(rq.width, 320);
    assert_int_equal(rq.height, 300);
    assert_int_equal(rq.nchw, 0);
    assert_int_equal(rq.f32, 0);
    assert_int_equal(rq.bytes, 320 * 300 * 3);
    assert_int_equal(parse("{\"shape\": [1, 3, 240, 320], \"dtype\": \"float32\", \"model_type\": \"yologeneric\"}",
                           &rq),
                     0);
    assert_int_equal(rq.nchw, 1);
    assert_int_equal(rq.f32, 1);
    assert_int_equal(rq.width, 320);
    assert_int_equal(rq.height, 240);
    assert_int_equal(rq.bytes, 320 * 240 * 3 * 4);
    assert_int_equal(parse("{\"shape\": [8, 8, 3], \"dtype\": \"uint8\"}", &rq), 0);
    assert_int_equal(rq.bytes, 192);
    assert_int_equal(parse("{\"model_request\": true, \"model_name\": \"ssd-oidv4\"}", &rq), 0);
    assert_int_equal(rq.kind, OSP_FRIGATE_MODEL_REQUEST);
    assert_string_equal(rq.model_name, "ssd-oidv4");
    assert_int_equal(parse("{\"model_data\": true, \"model_name\": \"yolov9-t.onnx\"}", &rq), 0);
    assert_int_equal(rq.kind, OSP_FRIGATE_MODEL_DATA);
    assert_string_equal(rq.model_name, "yolov9-t.onnx");
    /* a name C would cut at its NUL is not taken for what C keeps ("x"), and
     * no name check passes it */
    assert_int_equal(parse("{\"model_data\": true, \"model_name\": \"x\\u0000y.onnx\"}", &rq), 0);
    assert_string_equal(rq.model_name, "x\\u0000");
    assert_false(osp_frigate_name_ok(rq.model_name));
    assert_int_equal(parse("{\"model_request\": true, \"model_name\": \"\\\\\\u0000\"}", &rq), 0);
    assert_string_equal(rq.model_name, "\\\\u0000");
    /* an escaped backslash before u0000 is text, not a NUL */
    assert_int_equal(parse("{\"model_request\": true, \"model_name\": \"a\\\\u0000\"}", &rq), 0);
    assert_string_equal(rq.model_name, "a\\u0000");
}

static void test_bad_headers(void **s) {
    (void)s;
    osp_frigate_req_t rq;
    static const struct {
        const char *json, *why;
    } bad[] = {
        {"", "header is not a JSON object"},
        {"[1]", "header is not a JSON object"},
        {"{\"shape\": [8, 8, 3], \"dtype\": \"uint8\", \"model_type\": \"ssd\\u0000x\"}",
         "a string of the header holds a NUL character (\\u0000)"},
        {"{\"shape\": [1, 300, 300, 3]}", "dtype must be \"uint8\" or \"float32\""},
        {"{\"shape\": [1, 300, 300, 3], \"dtype\": \"int8\"}", "dtype must be \"uint8\" or \"float32\""},
        {"{\"dtype\": \"uint8\"}", "shape must be a list of 3 or 4 integers"},
        {"{\"shape\": [300, 300], \"dtype\": \"uint8\"}", "shape must be a list of 3 or 4 integers"},
        {"{\"shape\": [1, 300, 300.5, 3], \"dtype\": \"uint8\"}", "shape must hold positive integers"},
        {"{\"shape\": [1, 0, 300, 3], \"dtype\": \"uint8\"}", "shape must hold positive integers"},
        {"{\"shape\": [2, 300, 300, 3], \"dtype\": \"uint8\"}", "shape: a batch of 2, only 1 is served"},
        {"{\"shape\": [1, 300, 300, 4], \"dtype\": \"uint8\"}",
         "shape is neither NHWC nor NCHW with 3 channels"},
        {"{\"shape\": [1, 5000, 300, 3], \"dtype\": \"uint8\"}",
         "a 300x5000 tensor: sides are at most 4096"},
        {"{\"model_request\": true}", "model_name must be a non-empty string"},
        {"{\"model_request\": true, \"model_name\": \"\"}", "model_name must be a non-empty string"},
        {"{\"model_data\": true, \"model_name\": 3}", "model_name must be a non-empty string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(bad[i].json, &rq), OSP_WIRE_EINVAL);
        assert_string_equal(err, bad[i].why);
    }
    char big[OSP_FRIGATE_HEADER_MAX + 2];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(parse(big, &rq), OSP_WIRE_EINVAL);
    assert_string_equal(err, "header of 4097 bytes, at most 4096");
}

static void test_check(void **s) {
    (void)s;
    osp_frigate_req_t rq;
    assert_int_equal(parse("{\"shape\": [1, 3, 2, 2], \"dtype\": \"float32\"}", &rq), 0);
    assert_int_equal(osp_frigate_check(&rq, 48, err, sizeof err), 0);
    assert_int_equal(osp_frigate_check(&rq, 47, err, sizeof err), OSP_WIRE_EINVAL);
    assert_string_equal(err, "a 2x2 NCHW float32 tensor is 48 bytes, got 47");
    assert_int_equal(osp_frigate_check(&rq, 12, err, sizeof err), OSP_WIRE_EINVAL);
}

/* NCHW and float tensors come out as the same interleaved pixels. */
static void test_pixels(void **s) {
    (void)s;
    osp_frigate_req_t rq;
    const uint8_t want[12] = {10, 20, 30, 11, 21, 31, 12, 22, 32, 13, 23, 33}; /* 2x2 RGB */
    uint8_t planar[12], out[12];
    for (int i = 0; i < 4; i++)
        for (int c = 0; c < 3; c++) planar[c * 4 + i] = want[i * 3 + c];
    assert_int_equal(parse("{\"shape\": [1, 2, 2, 3], \"dtype\": \"uint8\"}", &rq), 0);
    osp_frigate_pixels(&rq, want, out);
    assert_memory_equal(out, want, 12);
    assert_int_equal(parse("{\"shape\": [1, 3, 2, 2], \"dtype\": \"uint8\"}", &rq), 0);
    osp_frigate_pixels(&rq, planar, out);
    assert_memory_equal(out, want, 12);
    /* float32 0..255 ("float_denorm"), NCHW */
    uint8_t f[48];
    for (int i = 0; i < 12; i++) {
        float v = (float)planar[i];
        uint32_t u;
        memcpy(&u, &v, 4);
        osp_wire_wr32(f + 4 * i, u);
    }
    assert_int_equal(parse("{\"shape\": [1, 3, 2, 2], \"dtype\": \"float32\"}", &rq), 0);
    osp_frigate_pixels(&rq, f, out);
    assert_memory_equal(out, want, 12);
    /* float32 0..1 ("float"), NHWC; out-of-range and NaN values clamp */
    for (int i = 0; i < 12; i++) {
        float v = (float)want[i] / 255.0f;
        if (i == 0) v = -0.5f;
        if (i == 1) v = 0.0f / 0.0f;
        uint32_t u;
        memcpy(&u, &v, 4);
        osp_wire_wr32(f + 4 * i, u);
    }
    assert_int_equal(parse("{\"shape\": [1, 2, 2, 3], \"dtype\": \"float32\"}", &rq), 0);
    osp_frigate_pixels(&rq, f, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 0);
    assert_memory_equal(out + 2, want + 2, 10);
}

/* Falling score order, Frigate's coordinate order, normalised, the ones
 * without an id left out, at most 20, zeros after. */
static void test_rows(void **s) {
    (void)s;
    uint8_t rows[OSP_FRIGATE_REPLY_BYTES];
    osp_frigate_det_t d[3] = {
        {.id = 2, .score = 0.5f, .x1 = 30, .y1 = 60, .x2 = 150, .y2 = 300},
        {.id = -1, .score = 0.99f, .x1 = 0, .y1 = 0, .x2 = 10, .y2 = 10},
        {.id = 0, .score = 0.9f, .x1 = -5, .y1 = 30, .x2 = 400, .y2 = 150},
    };
    assert_int_equal(osp_frigate_rows(d, 3, 300, 300, rows), 2);
    const float want[2][6] = {{0, 0.9f, 0.1f, 0, 0.5f, 1}, {2, 0.5f, 0.2f, 0.1f, 1, 0.5f}};
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 6; k++) assert_float_equal(row_at(rows, r, k), want[r][k], 1e-6);
    for (int i = 12; i < 120; i++) assert_float_equal(row_at(rows, i / 6, i % 6), 0, 0);

    osp_frigate_det_t many[50];
    for (int i = 0; i < 50; i++)
        many[i] = (osp_frigate_det_t){.id = i,
                                      .score = (float)((i * 37) % 50) / 50.0f + 0.01f,
                                      .x2 = 1,
                                      .y2 = 1};
    assert_int_equal(osp_frigate_rows(many, 50, 1, 1, rows), 20);
    for (int r = 0; r < 20; r++) {
        assert_float_equal(row_at(rows, r, 1), (float)(49 - r) / 50.0f + 0.01f, 1e-6);
        if (r) assert_true(row_at(rows, r, 1) < row_at(rows, r - 1, 1));
    }
    assert_int_equal(osp_frigate_rows(NULL, 0, 1, 1, rows), 0);
    for (int i = 0; i < 120; i++) assert_float_equal(row_at(rows, i / 6, i % 6), 0, 0);
}

static void test_answers_and_names(void **s) {
    (void)s;
    char buf[96];
    size_t n = osp_frigate_answer_available(1, 0, buf, sizeof buf);
    assert_string_equal(buf, "{\"model_available\": true, \"model_loaded\": false}");
    assert_int_equal(n, strlen(buf));
    osp_frigate_answer_saved(0, 0, buf, sizeof buf);
    assert_string_equal(buf, "{\"model_saved\": false, \"model_loaded\": false}");
    assert_true(osp_frigate_name_ok("yolov9-t.onnx"));
    assert_true(osp_frigate_name_ok("ssd_oidv4"));
    static const char *const bad[] = {"", ".", "..", ".hidden", "../x.onnx", "a/b", "a b", "x\\y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(osp_frigate_name_ok(bad[i]));
}

static void test_default_labelmap(void **s) {
    (void)s;
    osp_frigate_labelmap_t *lm = malloc(sizeof *lm);
    osp_frigate_labelmap_default(lm);
    assert_int_equal(lm->n, 91);
    static const struct {
        const char *label;
        int id;
    } want[] = {{"person", 0},
                {"bicycle", 1},
                {"car", 2},
                {"motorcycle", 3},
                {"bus", 5},
                {"truck", 7},
                {"bird", 15},
                {"cat", 16},
                {"dog", 17},
                {"toothbrush", 89},
                /* ssd-oidv4's labels */
                {"Person", 0},
                {"Car", 2},
                {"Dog", 17},
                {"Cat", 16},
                {"Bicycle", 1},
                {"Cattle", 20},
                {"Computer monitor", 71},
                {"Coffee cup", 46},
                {"Table", 66},
                {" Teddy_Bear ", 87},
                {"Vehicle", -1},
                {"Stationary bicycle", -1},
                {"???", -1},
                {"", -1}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_int_equal(osp_frigate_label_id(lm, want[i].label), want[i].id);
    assert_int_equal(osp_frigate_label_id(lm, NULL), -1);
    free(lm);
}

static int lm_parse(osp_frigate_labelmap_t *lm, const char *text) {
    return osp_frigate_labelmap_parse(text, strlen(text), lm, err, sizeof err);
}

static void test_labelmap_files(void **s) {
    (void)s;
    osp_frigate_labelmap_t *lm = malloc(sizeof *lm);
    /* numbered, as Frigate's own files (coco-80 ids here) */
    assert_int_equal(lm_parse(lm, "0  person\n1  bicycle\r\n\n2  car\n14  bird\n16 dog\n"), 0);
    assert_int_equal(lm->n, 17);
    assert_int_equal(osp_frigate_label_id(lm, "Dog"), 16);
    assert_int_equal(osp_frigate_label_id(lm, "bird"), 14);
    assert_int_equal(osp_frigate_label_id(lm, "cat"), -1);
    /* one label a line: ids count every line, blank ones too */
    assert_int_equal(lm_parse(lm, "person\n\ncar\ndog"), 0);
    assert_int_equal(osp_frigate_label_id(lm, "car"), 2);
    assert_int_equal(osp_frigate_label_id(lm, "dog"), 3);
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "no labels"},
        {"\n\n", "no labels"},
        {"0  person\n1\n", "line 2: not \"ID  label\""},
        {"0  person\nx  car\n", "line 2: not \"ID  label\""},
        {"0  person\n1024  car\n", "line 2: id past 1023"},
        {"0  a-label-that-is-much-longer-than-forty-seven-bytes\n",
         "line 1: a label of 50 bytes, at most 47"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(lm_parse(lm, bad[i].text), OSP_WIRE_EINVAL);
        assert_string_equal(err, bad[i].why);
        assert_int_equal(lm->n, 0);
    }
    free(lm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoint_is_local),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_pixels),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_answers_and_names),
        cmocka_unit_test(test_default_labelmap),
        cmocka_unit_test(test_labelmap_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
