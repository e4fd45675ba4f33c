/* wire/pyjson: JSON text read as Python's json.loads reads it (its
 * messages and positions, NaN/Infinity, duplicate keys, UTF-8, nesting). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "wire/frame.h"
#include "wire/pyjson.h"

static void test_parse(void **s) {
    (void)s;
    cJSON *c;
    char err[OSP_WIRE_ERRLEN];
    const char *ok = "\xef\xbb\xbf {\"cmd\":\"load\",\"index\":1,\"index\":2,\"config\":{\"a\":1,"
                     "\"b\":2,\"a\":3}}\n";
    assert_int_equal(osp_pyjson_parse((const uint8_t *)ok, strlen(ok), &c, err, sizeof err), 0);
    char *txt = cJSON_PrintUnformatted(c);
    assert_string_equal(txt, "{\"cmd\":\"load\",\"index\":2,\"config\":{\"a\":3,\"b\":2}}");
    free(txt);
    cJSON_Delete(c);

    static const struct {
        const char *json, *err;
    } t[] = {
        {"", "Expecting value: line 1 column 1 (char 0)"},
        {"  ", "Expecting value: line 1 column 3 (char 2)"},
        {"{} x", "Extra data: line 1 column 4 (char 3)"},
        {"{}}", "Extra data: line 1 column 3 (char 2)"},
        {"{\"a\" 1}", "Expecting ':' delimiter: line 1 column 6 (char 5)"},
        {"{\"a\":1,}", "Expecting property name enclosed in double quotes: line 1 column 8 (char 7)"},
        {"{\"a\":}", "Expecting value: line 1 column 6 (char 5)"},
        {"{\"a\":1 \"b\":2}", "Expecting ',' delimiter: line 1 column 8 (char 7)"},
        {"{\"a\":\"x", "Unterminated string starting at: line 1 column 6 (char 5)"},
        {"{\"a\":\"\x01\"}", "Invalid control character at: line 1 column 7 (char 6)"},
        {"{\"a\":\"\\q\"}", "Invalid \\escape: line 1 column 7 (char 6)"},
        {"{\"a\":\"\\u12\"}", "Invalid \\uXXXX escape: line 1 column 8 (char 7)"},
        {"{\"a\":\"\\u12zz\"}", "Invalid \\uXXXX escape: line 1 column 8 (char 7)"},
        {"{\"a\":01}", "Expecting ',' delimiter: line 1 column 7 (char 6)"},
        {"{\"a\":-}", "Expecting value: line 1 column 6 (char 5)"},
        {"{\"a\":nul}", "Expecting value: line 1 column 6 (char 5)"},
        {"{\n\"\xc3\xa9\":\n!}", "Expecting value: line 3 column 1 (char 7)"},
        {"{\"a\":\"\xff\"}", "'utf-8' codec can't decode byte 0xff in position 6: invalid start byte"},
        {"{\"a\":\"\xe4\xb8\"}",
         "'utf-8' codec can't decode bytes in position 6-7: invalid continuation byte"},
        {"{\"a\":\"\xe4\xb8",
         "'utf-8' codec can't decode bytes in position 6-7: unexpected end of data"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        err[0] = '\0';
        int rc = osp_pyjson_parse((const uint8_t *)t[i].json, strlen(t[i].json), &c, err, sizeof err);
        assert_int_equal(rc, OSP_WIRE_EINVAL);
        assert_null(c);
        if (strcmp(err, t[i].err)) fail_msg("%s: got '%s'", t[i].json, err);
    }
    /* escapes decode (a lone surrogate as Python keeps it); a key given
     * three times keeps the last value, in the first one's place */
    const char *esc = "{\"k\":1,\"s\":\"\\u00e9\\ud83d\\ude00\\ud800x\\u0041\\n\\/\",\"k\":2,"
                      "\"k\":[3]}";
    assert_int_equal(osp_pyjson_parse((const uint8_t *)esc, strlen(esc), &c, err, sizeof err), 0);
    assert_string_equal(cJSON_GetObjectItem(c, "s")->valuestring,
                        "\xc3\xa9\xf0\x9f\x98\x80\xed\xa0\x80xA\n/");
    txt = cJSON_PrintUnformatted(c);
    assert_string_equal(txt, "{\"k\":[3],\"s\":\"\xc3\xa9\xf0\x9f\x98\x80\xed\xa0\x80xA\\n/\"}");
    free(txt);
    cJSON_Delete(c);
    /* what Python reads and cJSON's own parser would not */
    const char *py = "{\"a\":[NaN,Infinity,-Infinity,-0,1E2,0.5e-1]}";
    assert_int_equal(osp_pyjson_parse((const uint8_t *)py, strlen(py), &c, err, sizeof err), 0);
    cJSON *a = cJSON_GetObjectItem(c, "a");
    assert_int_equal(cJSON_GetArraySize(a), 6);
    assert_true(isnan(cJSON_GetArrayItem(a, 0)->valuedouble));
    assert_true(isinf(cJSON_GetArrayItem(a, 1)->valuedouble) &&
                cJSON_GetArrayItem(a, 1)->valuedouble > 0);
    assert_true(isinf(cJSON_GetArrayItem(a, 2)->valuedouble) &&
                cJSON_GetArrayItem(a, 2)->valuedouble < 0);
    assert_true(cJSON_GetArrayItem(a, 4)->valuedouble == 100.0);
    assert_true(cJSON_GetArrayItem(a, 5)->valuedouble == 0.05);
    cJSON_Delete(c);
    static const struct {
        const char *json, *err;
    } u[] = {
        {"{\"a\":\"\\ud834\\uzzzz\"}", "Invalid \\uXXXX escape: line 1 column 14 (char 13)"},
        {"{\"a\":\"\xed\xa0"
         "A\"}",
         "'utf-8' codec can't decode byte 0xed in position 6: invalid continuation byte"},
        {"{\"a\":\"\xe0\x80\x80\"}",
         "'utf-8' codec can't decode byte 0xe0 in position 6: invalid continuation byte"},
        {"{\"a\":\"\xf0\x9f\x98\"}",
         "'utf-8' codec can't decode bytes in position 6-8: invalid continuation byte"},
        {"{\"a\":\"\xf4\x90\x80\x80\"}",
         "'utf-8' codec can't decode byte 0xf4 in position 6: invalid continuation byte"},
        {"\xc3", "'utf-8' codec can't decode byte 0xc3 in position 0: unexpected end of data"},
    };
    for (size_t i = 0; i < sizeof u / sizeof *u; i++) {
        err[0] = '\0';
        assert_int_equal(osp_pyjson_parse((const uint8_t *)u[i].json, strlen(u[i].json), &c, err,
                                          sizeof err),
                         OSP_WIRE_EINVAL);
        if (strcmp(err, u[i].err)) fail_msg("%s: got '%s'", u[i].json, err);
    }
    /* an encoded surrogate passes (Python decodes with surrogatepass) */
    const char *sur = "{\"a\":\"\xed\xa0\x80\"}";
    assert_int_equal(osp_pyjson_parse((const uint8_t *)sur, strlen(sur), &c, err, sizeof err), 0);
    cJSON_Delete(c);
    /* nesting past the limit is refused, not a stack overflow */
    static char deep[4001];
    memset(deep, '[', 2000);
    memset(deep + 2000, ']', 2000);
    assert_int_equal(osp_pyjson_parse((const uint8_t *)deep, 4000, &c, err, sizeof err),
                     OSP_WIRE_EINVAL);
    assert_non_null(strstr(err, "maximum recursion depth exceeded"));
}

/* Any JSON value parses; refusing a non-object is the command parser's. */
static void test_any_value(void **s) {
    (void)s;
    cJSON *c;
    char err[OSP_WIRE_ERRLEN];
    static const char *const ok[] = {"[1]", "\"status\"", "null", " -0 ", "1e400"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        assert_int_equal(osp_pyjson_parse((const uint8_t *)ok[i], strlen(ok[i]), &c, err, sizeof err),
                         0);
        char *txt = cJSON_PrintUnformatted(c);
        static const char *const want[] = {"[1]", "\"status\"", "null", "0", NULL};
        if (want[i])
            assert_string_equal(txt, want[i]);
        else
            assert_true(isinf(c->valuedouble));
        free(txt);
        cJSON_Delete(c);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_any_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
