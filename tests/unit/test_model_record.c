/* The result record's pieces that commands with records of their own use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "model/model.h"

static void test_box(void **s) {
    (void)s;
    osp_jw_t w = {0};
    osp_det_t d = {.x1 = 1.04f, .y1 = 2.06f, .x2 = 300.0f, .y2 = 41.27f, .score = 0.9f};
    osp_jw_obj_open(&w);
    osp_model_put_box(&w, &d);
    osp_jw_obj_close(&w);
    assert_string_equal(w.buf, "{\"box\": [1.0, 2.1, 300.0, 41.3]}");
    osp_jw_free(&w);
}

/* A cascade's fields (osp_result_t.extra) follow a detection's own, and
 * a record without them is as it was. */
static void test_cascade_fields(void **s) {
    (void)s;
    char *labels[] = {"face"};
    osp_model_t m = {.labels = labels, .n_labels = 1};
    osp_det_t dets[2] = {{.x1 = 1, .y1 = 2, .x2 = 3, .y2 = 4, .score = 0.5f},
                         {.x1 = 5, .y1 = 6, .x2 = 7, .y2 = 8, .score = 0.25f}};
    osp_result_t r = {.kind = OSP_REC_DETECTIONS, .dets = dets, .n_dets = 2, .frame_w = 10, .frame_h = 10};
    osp_jw_t w = {0};
    osp_jw_obj_open(&w);
    osp_model_put_result(&w, &m, &r, 1);
    osp_jw_obj_close(&w);
    const char *plain =
        "{\"kind\": \"detections\", \"detections\": [{\"label\": \"face\", \"class\": 0, "
        "\"score\": 0.5, \"box\": [1.0, 2.0, 3.0, 4.0]}, {\"label\": \"face\", \"class\": 0, "
        "\"score\": 0.25, \"box\": [5.0, 6.0, 7.0, 8.0]}], \"inferenceMs\": 0.0, "
        "\"preprocessMs\": 0.0, \"predictMs\": 0.0, \"batchSize\": 1, \"frameSize\": \"10x10\"}";
    assert_string_equal(w.buf, plain);
    /* the first detection gains two fields, the second none */
    static const char extra[] = "\"name\": \"alice\", \"nameScore\": 0.71";
    size_t at[3] = {0, sizeof extra - 1, sizeof extra - 1};
    r.extra = extra;
    r.extra_at = at;
    osp_jw_reset(&w);
    osp_jw_obj_open(&w);
    osp_model_put_result(&w, &m, &r, 1);
    osp_jw_obj_close(&w);
    assert_non_null(strstr(w.buf, "\"box\": [1.0, 2.0, 3.0, 4.0], \"name\": \"alice\", "
                                  "\"nameScore\": 0.71}, {\"label\""));
    assert_non_null(strstr(w.buf, "\"box\": [5.0, 6.0, 7.0, 8.0]}]"));
    osp_jw_free(&w);
}

/* A vector as base64 of its little-endian float32 bytes, each padding
 * length: 1.0f is 00 00 80 3f, -2.0f 00 00 00 c0, 0.5f 00 00 00 3f. */
static void test_b64_floats(void **s) {
    (void)s;
    const float v[3] = {1.0f, -2.0f, 0.5f};
    const char *want[4] = {"\"\"", "\"AACAPw==\"", "\"AACAPwAAAMA=\"", "\"AACAPwAAAMAAAAA/\""};
    for (int n = 0; n <= 3; n++) {
        osp_jw_t w = {0};
        osp_model_put_b64_floats(&w, v, n);
        assert_non_null(w.buf);
        assert_string_equal(w.buf, want[n]);
        osp_jw_free(&w);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box),
        cmocka_unit_test(test_cascade_fields),
        cmocka_unit_test(test_b64_floats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
