/* Model configuration: catalog, the protocol's JSON keys and their errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "model/model.h"

static int parse(const char *json, osp_model_cfg_t *cfg, char *err, size_t n) {
    cJSON *o = cJSON_Parse(json);
    int rc = osp_model_cfg_from_json(o, cfg, err, n);
    cJSON_Delete(o);
    return rc;
}

static void test_catalog(void **s) {
    (void)s;
    assert_true(osp_catalog_count() >= 4);
    const char *names[] = {"ssd-oidv4", "ultraface", "face-embed", "blazeface"};
    for (int i = 0; i < 4; i++) assert_non_null(osp_catalog_find(names[i]));
    setenv("OSPREY_CACHE", "/tmp/osp-cache", 1);
    char path[256];
    osp_catalog_path(osp_catalog_find("ssd-oidv4"), path, sizeof path);
    assert_string_equal(path, "/tmp/osp-cache/models/ssd-oidv4.onnx");
    osp_model_cfg_t c;
    char err[256];
    assert_int_equal(osp_model_cfg_from_catalog("ssd-oidv4", &c, err, sizeof err), 0);
    assert_int_equal(c.width, 300);
    assert_int_equal(c.fit, OSP_FIT_RESIZE);
    assert_float_equal(c.mean[0], 127.5, 1e-6);
    assert_float_equal(c.std[2], 127.5, 1e-6);
    assert_string_equal(c.postprocessor, "ssd");
    assert_int_equal(osp_model_cfg_from_catalog("nope", &c, err, sizeof err), OSP_MODEL_EINVAL);
    assert_non_null(strstr(err, "unknown model 'nope'"));
    assert_non_null(strstr(err, "ultraface"));
}

static void test_resolve(void **s) {
    (void)s;
    osp_model_cfg_t c;
    char err[256];
    assert_int_equal(osp_model_cfg_resolve("ultraface", &c, err, sizeof err), 0);
    assert_string_equal(c.postprocessor, "ultraface");
    assert_int_equal(osp_model_cfg_resolve("/m/yolo.v8.onnx", &c, err, sizeof err), 0);
    assert_string_equal(c.path, "/m/yolo.v8.onnx");
    assert_string_equal(c.name, "yolo.v8");
    assert_int_equal(c.fit, OSP_FIT_LETTERBOX);
    assert_int_equal(osp_model_cfg_resolve("typo", &c, err, sizeof err), OSP_MODEL_EINVAL);
}

static void test_json_keys(void **s) {
    (void)s;
    osp_model_cfg_t c;
    char err[256];
    assert_int_equal(parse("{\"path\":\"/x/m.onnx\",\"postprocessor\":\"ultraface\","
                           "\"inputSize\":320,\"inputHeight\":240,\"preprocessMode\":\"resize\","
                           "\"inputNormalization\":\"imagenet\",\"confidence\":0.6,"
                           "\"nmsIouThreshold\":0.3,\"maxDetections\":5,\"device\":\"cpu\"}",
                           &c, err, sizeof err),
                     0);
    assert_int_equal(c.width, 320);
    assert_int_equal(c.height, 240);
    assert_int_equal(c.fit, OSP_FIT_RESIZE);
    assert_float_equal(c.mean[0], 0.485 * 255, 1e-3);
    assert_float_equal(c.confidence, 0.6, 1e-6);
    assert_float_equal(c.nms_iou, 0.3, 1e-6);
    assert_int_equal(c.max_detections, 5);
    assert_string_equal(c.device, "cpu");
    assert_string_equal(c.name, "m");
    assert_int_equal(parse("{\"path\":\"m\",\"graphOptimization\":\"none\",\"threads\":3}", &c,
                           err, sizeof err),
                     0);
    assert_int_equal(c.graph_opt, -1);
    assert_int_equal(c.intra_threads, 3);
    /* suppression across labels: off unless asked for, as the Python worker */
    assert_true(c.cross_iou < 0);
    assert_int_equal(parse("{\"path\":\"m\",\"crossClassIou\":0.7}", &c, err, sizeof err), 0);
    assert_float_equal(c.cross_iou, 0.7, 1e-6);
    /* containment: off unless asked for, as the Python worker */
    assert_true(c.contain < 0);
    assert_int_equal(parse("{\"path\":\"m\",\"nmsContainment\":0.6}", &c, err, sizeof err), 0);
    assert_float_equal(c.contain, 0.6, 1e-6);
    assert_int_not_equal(parse("{\"path\":\"m\",\"nmsContainment\":1.5}", &c, err, sizeof err), 0);
    /* a catalog name plus overrides */
    assert_int_equal(parse("{\"model\":\"ssd-oidv4\",\"confidence\":0.5,\"mean\":[1,2,3],\"std\":2}",
                           &c, err, sizeof err),
                     0);
    assert_int_equal(c.width, 300);
    assert_float_equal(c.confidence, 0.5, 1e-6);
    assert_float_equal(c.mean[2], 3, 1e-6);
    assert_float_equal(c.std[1], 2, 1e-6);
}

static void test_json_errors(void **s) {
    (void)s;
    osp_model_cfg_t c;
    char err[256];
    static const struct {
        const char *json, *msg;
    } bad[] = {
        {"{}", "path (or model) is required"},
        {"[1]", "must be a JSON object"},
        {"{\"path\":3}", "path must be a string"},
        {"{\"path\":\"m\",\"inputSize\":-1}", "inputSize"},
        {"{\"path\":\"m\",\"inputSize\":\"640\"}", "inputSize"},
        {"{\"path\":\"m\",\"confidence\":1.5}", "confidence"},
        {"{\"path\":\"m\",\"preprocessMode\":\"crop\"}", "preprocessMode"},
        {"{\"path\":\"m\",\"inputNormalization\":\"z\"}", "inputNormalization"},
        {"{\"path\":\"m\",\"inputChannels\":2}", "inputChannels"},
        {"{\"path\":\"m\",\"std\":[1,0,1]}", "std"},
        {"{\"path\":\"m\",\"mean\":[1,2]}", "mean"},
        /* found by fuzz_cmds: an infinite (or NaN, or past-float) mean or std made
         * every input value NaN */
        {"{\"path\":\"m\",\"mean\":1e999}", "mean"},
        {"{\"path\":\"m\",\"std\":-1e999}", "std"},
        {"{\"path\":\"m\",\"mean\":[1e300,0,0]}", "mean"},
        {"{\"path\":\"m\",\"std\":-1e39}", "std"},
        {"{\"model\":\"nope\"}", "unknown model"},
        {"{\"path\":\"m\",\"graphOptimization\":\"max\"}", "graphOptimization"},
        {"{\"path\":\"m\",\"embeddingEncoding\":\"hex\"}", "embeddingEncoding"},
        {"{\"path\":\"m\",\"crossClassIou\":2}", "crossClassIou"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(parse(bad[i].json, &c, err, sizeof err), OSP_MODEL_EINVAL);
        if (!strstr(err, bad[i].msg)) fail_msg("%s: got '%s'", bad[i].json, err);
    }
    assert_int_equal(osp_model_cfg_from_json(NULL, &c, err, sizeof err), OSP_MODEL_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catalog),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_json_keys),
        cmocka_unit_test(test_json_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
