/* The JSON writer: structure, escaping, numbers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/jsonw.h"

static void test_structure(void **s) {
    (void)s;
    osp_jw_t w = {0};
    osp_jw_obj_open(&w);
    osp_jw_key(&w, "a");
    osp_jw_int(&w, -3);
    osp_jw_key(&w, "b");
    osp_jw_arr_open(&w);
    osp_jw_bool(&w, 1);
    osp_jw_null(&w);
    osp_jw_obj_open(&w);
    osp_jw_obj_close(&w);
    osp_jw_arr_close(&w);
    osp_jw_key(&w, "c");
    osp_jw_uint(&w, 4294967295u);
    osp_jw_obj_close(&w);
    assert_string_equal(w.buf, "{\"a\": -3, \"b\": [true, null, {}], \"c\": 4294967295}");
    osp_jw_reset(&w);
    osp_jw_arr_open(&w);
    osp_jw_arr_close(&w);
    assert_string_equal(w.buf, "[]");
    osp_jw_free(&w);
}

static void test_escaping(void **s) {
    (void)s;
    osp_jw_t w = {0};
    /* ensure_ascii, as json.dumps: non-ASCII escaped, astral as a surrogate pair */
    osp_jw_str(&w, "a\"b\\c\n\x01\xc3\xa9\xf0\x9f\x98\x80");
    assert_string_equal(w.buf, "\"a\\\"b\\\\c\\n\\u0001\\u00e9\\ud83d\\ude00\"");
    osp_jw_reset(&w);
    osp_jw_str(&w, "\xff\xe2\x80\x94x"); /* an invalid byte, then an em dash */
    assert_string_equal(w.buf, "\"\\ufffd\\u2014x\"");
    osp_jw_reset(&w);
    /* a lone surrogate as the JSON reader stores it (surrogatepass) is
     * written back as itself, as json.dumps writes "\ud801": two different
     * ones must not both become U+FFFD */
    osp_jw_str(&w, "\xed\xa0\x81x\xed\xb8\x80");
    assert_string_equal(w.buf, "\"\\ud801x\\ude00\"");
    osp_jw_reset(&w);
    osp_jw_strn(&w, "x\0y", 3);
    assert_string_equal(w.buf, "\"x\\u0000y\"");
    osp_jw_free(&w);
}

static void test_numbers(void **s) {
    (void)s;
    osp_jw_t w = {0};
    osp_jw_arr_open(&w);
    osp_jw_num(&w, 0.87654, 4);
    osp_jw_num(&w, 12.0, 2);
    osp_jw_num(&w, -0.00001, 2);
    osp_jw_num(&w, NAN, 2);
    osp_jw_num(&w, INFINITY, -1);
    osp_jw_num(&w, 3.0, -1);
    osp_jw_num(&w, 456.25, 1);
    osp_jw_arr_close(&w);
    assert_string_equal(w.buf, "[0.8765, 12.0, 0.0, null, null, 3.0, 456.3]");
    osp_jw_free(&w);
}

static void test_growth(void **s) {
    (void)s;
    osp_jw_t w = {0};
    osp_jw_arr_open(&w);
    for (int i = 0; i < 100000; i++) osp_jw_int(&w, i);
    osp_jw_arr_close(&w);
    assert_false(w.oom);
    assert_int_equal(strlen(w.buf), w.len);
    assert_memory_equal(w.buf + w.len - 8, ", 99999]", 8);
    osp_jw_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
