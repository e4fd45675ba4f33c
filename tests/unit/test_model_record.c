/* The result record's pieces that commands with records of their own use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
