/* A text step's "pattern" (model/cascade.c): compiled once as the config
 * is read, a bad one refused with the step named, allowed on a text
 * recognizer only; text fits when the whole of it, spaces left out,
 * matches; a copy of the cascade keeps it, and two cascades that differ
 * only by it are not the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "model/cascade.h"
#include "model/cascade_int.h"

#define PLATE "[A-Z]{2}[0-9]{2}[A-Z]{1,2}[0-9]{4}"

static int parse(const char *text, osp_cascade_t **out, char *err, size_t errlen) {
    cJSON *obj = cJSON_Parse(text);
    assert_non_null(obj);
    osp_model_cfg_t cfg;
    assert_int_equal(osp_model_cfg_from_json(obj, &cfg, err, errlen), 0);
    int rc = osp_cascade_parse(obj, &cfg, out, err, errlen);
    cJSON_Delete(obj);
    return rc;
}

static osp_cascade_t *plates(const char *pattern) {
    char text[512], err[512];
    snprintf(text, sizeof text,
             "{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\", \"pattern\": \"%s\"}]}",
             pattern);
    osp_cascade_t *c = NULL;
    if (parse(text, &c, err, sizeof err)) fail_msg("%s", err);
    return c;
}

static int fits(const osp_cascade_t *c, const char *text) {
    return osp_cascade_text_fits(&c->steps[0], text, strlen(text));
}

static void test_whole_text_without_spaces(void **state) {
    (void)state;
    osp_cascade_t *c = plates(PLATE);
    assert_string_equal(c->steps[0].pattern, PLATE);
    assert_true(fits(c, "KA01AB1234"));
    assert_true(fits(c, "KA 01 AB 1234"));
    assert_true(fits(c, "KA01A1234"));
    assert_false(fits(c, "KA01AB12345")); /* more than the pattern: not the whole text */
    assert_false(fits(c, "xKA01AB1234"));
    assert_false(fits(c, "PROHIBITED"));
    assert_false(fits(c, ""));
    osp_cascade_t *copy = osp_cascade_copy(c);
    assert_non_null(copy);
    assert_true(osp_cascade_same(c, copy));
    assert_true(fits(copy, "KA01AB1234") && !fits(copy, "KA01"));
    osp_cascade_t *other = plates("[A-Z0-9]+");
    assert_false(osp_cascade_same(c, other));
    assert_true(fits(other, "KA01"));
    osp_cascade_free(other);
    osp_cascade_free(copy);
    osp_cascade_free(c);
}

static void test_no_pattern_fits_any_text(void **state) {
    (void)state;
    char err[512];
    osp_cascade_t *c = NULL;
    assert_int_equal(parse("{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\"}]}", &c,
                           err, sizeof err),
                     0);
    assert_null(c->steps[0].re);
    assert_true(fits(c, "anything at all"));
    assert_true(fits(c, ""));
    osp_cascade_free(c);
}

static void expect_error(const char *text, const char *part) {
    char err[512] = "";
    osp_cascade_t *c = NULL;
    assert_int_equal(parse(text, &c, err, sizeof err), OSP_MODEL_EINVAL);
    assert_null(c);
    if (!strstr(err, part)) fail_msg("'%s' does not say '%s'", err, part);
}

static void test_bad_patterns_are_named(void **state) {
    (void)state;
    expect_error("{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\", \"pattern\": \"[A-Z\"}]}",
                 "cascade step ocr-rec: pattern \"[A-Z\" is not a POSIX extended regular expression");
    expect_error("{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\", \"pattern\": \"(a\"}]}",
                 "cascade step ocr-rec: pattern");
    expect_error("{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\", \"pattern\": \"a{99}\"}]}",
                 "a repeat count is at most 32");
    expect_error("{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\", \"pattern\": \"\"}]}",
                 "pattern is a regular expression of 1 to 128 bytes");
    expect_error("{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\", \"pattern\": 7}]}",
                 "pattern is a regular expression");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"pattern\": \"a\"}]}",
                 "cascade step face-embed: pattern needs a text recognizer");
    expect_error("{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\", \"patern\": \"a\"}]}",
                 "did you mean \"pattern\"?");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_text_without_spaces),
        cmocka_unit_test(test_no_pattern_fits_any_text),
        cmocka_unit_test(test_bad_patterns_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
