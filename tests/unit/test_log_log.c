/* Log lines: the three shapes, escaping, a cut line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "log/log.h"

/* 2026-12-01T12:35:07.123Z */
#define T0 1796128507123LL

static void test_shapes(void **s) {
    (void)s;
    char buf[256];
    size_t n = osp_log_format_line(buf, sizeof buf, OSP_LOG_PLAIN, OSP_LOG_INFO, T0,
                                   "ospreyd: listening on unix:/run/osprey.sock");
    assert_string_equal(buf, "ospreyd: listening on unix:/run/osprey.sock\n");
    assert_int_equal(n, strlen(buf));
    osp_log_format_line(buf, sizeof buf, OSP_LOG_TEXT, OSP_LOG_WARN, T0, "ospreyd: x\n");
    assert_string_equal(buf, "2026-12-01T12:35:07.123Z WARN ospreyd: x\n");
    osp_log_format_line(buf, sizeof buf, OSP_LOG_JSON, OSP_LOG_ERROR, T0 + 877, "a");
    assert_string_equal(buf,
                        "{\"time\":\"2026-12-01T12:35:08.000Z\",\"level\":\"error\",\"msg\":\"a\"}\n");
}

static void test_json_escapes(void **s) {
    (void)s;
    char buf[256];
    /* quotes, backslash, control bytes, valid UTF-8 kept, a stray byte replaced */
    osp_log_format_line(buf, sizeof buf, OSP_LOG_JSON, OSP_LOG_INFO, T0,
                        "q\"b\\\t\x01 caf\xc3\xa9 \xff!");
    assert_string_equal(buf, "{\"time\":\"2026-12-01T12:35:07.123Z\",\"level\":\"info\","
                             "\"msg\":\"q\\\"b\\\\\\t\\u0001 caf\xc3\xa9 \\ufffd!\"}\n");
    /* an overlong encoding and a lone surrogate are not UTF-8 */
    osp_log_format_line(buf, sizeof buf, OSP_LOG_JSON, OSP_LOG_INFO, T0, "\xc0\xaf\xed\xa0\x80");
    assert_non_null(strstr(buf, "\"msg\":\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""));
}

static void test_cut(void **s) {
    (void)s;
    char small[16];
    size_t n = osp_log_format_line(small, sizeof small, OSP_LOG_PLAIN, OSP_LOG_INFO, T0,
                                   "0123456789abcdefghij");
    assert_int_equal(n, 21); /* what the whole line needs */
    assert_string_equal(small, "0123456789abcde");
}

static void test_parse(void **s) {
    (void)s;
    osp_log_format_t f = OSP_LOG_PLAIN;
    assert_int_equal(osp_log_format_parse("json", &f), 0);
    assert_int_equal(f, OSP_LOG_JSON);
    assert_int_equal(osp_log_format_parse("text", &f), 0);
    assert_int_equal(f, OSP_LOG_TEXT);
    assert_int_equal(osp_log_format_parse("JSON", &f), -1);
    assert_int_equal(f, OSP_LOG_TEXT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_json_escapes),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
