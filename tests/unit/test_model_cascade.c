/* A cascade's configuration (model/cascade.c, osp_cascade_parse): what it
 * accepts, and each mistake it names. Parsing reads the catalog only, no
 * model file; the labels are checked when the models are loaded (e2e). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "model/cascade.h"

/* Parse text as the config of its "model"; the error text, "" when it
 * parsed (and then *out is the cascade). */
static const char *parse(const char *text, osp_cascade_t **out) {
    static char err[512];
    err[0] = '\0';
    cJSON *obj = cJSON_Parse(text);
    assert_non_null(obj);
    osp_model_cfg_t cfg;
    char inner[512];
    assert_int_equal(osp_model_cfg_from_json(obj, &cfg, inner, sizeof inner), 0);
    assert_true(cfg.cascade == (cJSON_GetObjectItem(obj, "then") != NULL));
    int rc = osp_cascade_parse(obj, &cfg, out, err, sizeof err);
    cJSON_Delete(obj);
    if (rc == 0) {
        assert_string_equal(err, "");
        return err;
    }
    assert_int_equal(rc, OSP_MODEL_EINVAL);
    assert_null(*out);
    assert_true(err[0] != '\0');
    return err;
}

static void expect_error(const char *text, const char *part) {
    osp_cascade_t *c = NULL;
    const char *err = parse(text, &c);
    if (!strstr(err, part)) fail_msg("'%s' does not say '%s'", err, part);
}

static void test_valid_cascades_parse(void **state) {
    (void)state;
    osp_cascade_t *c = NULL;
    assert_string_equal(parse("{\"model\": \"ultraface\"}", &c), "");
    assert_null(c); /* no "then": no cascade */
    assert_string_equal(parse("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"labels\": "
                              "[\"face\"], \"align\": \"box\", \"as\": \"embedding\", \"maxObjects\": 8}]}",
                              &c),
                        "");
    assert_non_null(c);
    osp_cascade_free(c);
    c = NULL;
    /* one step object; landmarks after BlazeFace; a step with its own steps */
    assert_string_equal(parse("{\"model\": \"blazeface\", \"then\": {\"model\": \"face-embed\", "
                              "\"align\": \"landmarks\", \"faceLibrary\": \"f.db\", "
                              "\"matchThreshold\": 0.45}}",
                              &c),
                        "");
    osp_cascade_free(c);
    c = NULL;
    assert_string_equal(parse("{\"model\": \"ultraface\", \"then\": [{\"model\": \"blazeface\", "
                              "\"then\": [{\"model\": \"face-embed\", \"align\": \"landmarks\"}, "
                              "{\"model\": \"face-expression\"}]}]}",
                              &c),
                        "");
    osp_cascade_free(c);
}

static void test_unknown_key_names_the_nearest(void **state) {
    (void)state;
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"lables\": "
                 "[\"face\"]}]}",
                 "unknown key \"lables\" (did you mean \"labels\"?)");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"maxobject\": 3}]}",
                 "did you mean \"maxObjects\"");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"zzzzzz\": 3}]}",
                 "unknown key \"zzzzzz\" (a step has model");
}

static void test_model_not_in_catalog(void **state) {
    (void)state;
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"arcface\"}]}",
                 "model \"arcface\" is not in the catalog (known: ");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"labels\": [\"face\"]}]}",
                 "a step names its \"model\"");
}

static void test_cycle(void **state) {
    (void)state;
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"ultraface\"}]}",
                 "a cycle: ultraface runs on its own output");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"blazeface\", \"then\": "
                 "[{\"model\": \"ultraface\"}]}]}",
                 "a cycle");
}

static void test_landmarks_need_a_detector_that_gives_them(void **state) {
    (void)state;
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"align\": "
                 "\"landmarks\"}]}",
                 "ultraface gives none");
    expect_error("{\"model\": \"blazeface\", \"then\": [{\"model\": \"face-embed\", \"align\": "
                 "\"sideways\"}]}",
                 "align is \"box\" or \"landmarks\"");
}

static void test_only_boxes_are_followed(void **state) {
    (void)state;
    expect_error("{\"model\": \"face-embed\", \"then\": [{\"model\": \"face-expression\"}]}",
                 "face-embed gives no boxes to crop");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"then\": "
                 "[{\"model\": \"face-expression\"}]}]}",
                 "face-embed gives no boxes to crop");
}

static void test_bad_values(void **state) {
    (void)state;
    expect_error("{\"model\": \"ultraface\", \"then\": []}", "\"then\" is a step or an array");
    expect_error("{\"model\": \"ultraface\", \"then\": 3}", "\"then\" is a step or an array");
    expect_error("{\"model\": \"ultraface\", \"then\": [3]}", "a step is a JSON object");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"maxObjects\": 0}]}",
                 "maxObjects is a whole number from 1 to 64");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"maxObjects\": 2.5}]}",
                 "maxObjects");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"labels\": []}]}",
                 "labels is an array");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"labels\": [7]}]}",
                 "each label is a string");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"as\": \"score\"}]}",
                 "as \"score\" is a field every detection has already");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"as\": \"a b\"}]}",
                 "as is a field name");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\"}, {\"model\": "
                 "\"face-embed\"}]}",
                 "two steps write \"embedding\"");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", "
                 "\"matchThreshold\": 0.5}]}",
                 "with faceLibrary");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-expression\", "
                 "\"faceLibrary\": \"f.db\"}]}",
                 "faceLibrary needs an embedder");
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", \"margin\": -1}]}",
                 "margin is a number from 0 to 2");
}

static void test_depth_and_size_are_bounded(void **state) {
    (void)state;
    /* steps four deep are run; a fifth is past the bound */
    osp_cascade_t *c = NULL;
    assert_string_equal(parse("{\"model\": \"ultraface\", \"then\": [{\"model\": \"blazeface\", "
                              "\"then\": [{\"model\": \"ssd-oidv4\", \"then\": [{\"model\": "
                              "\"ocr-det\", \"then\": [{\"model\": \"ssd-oidv4-int8\"}]}]}]}]}",
                              &c),
                        "");
    osp_cascade_free(c);
    expect_error("{\"model\": \"ultraface\", \"then\": [{\"model\": \"blazeface\", \"then\": "
                 "[{\"model\": \"ssd-oidv4\", \"then\": [{\"model\": \"ocr-det\", \"then\": "
                 "[{\"model\": \"ssd-oidv4-int8\", \"then\": [{\"model\": \"face-embed\"}]}]}]}]}]}",
                 "steps nest at most 4 deep");
    char text[4096] = "{\"model\": \"ultraface\", \"then\": [";
    for (int i = 0; i < 17; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 "%s{\"model\": \"face-embed\", \"as\": \"e%d\"}", i ? ", " : "", i);
    strcat(text, "]}");
    expect_error(text, "at most 16 steps");
}

static void test_simple_cascade_aligns_when_it_can(void **state) {
    (void)state;
    osp_model_cfg_t cfg;
    char err[512];
    osp_cascade_t *c = NULL;
    assert_int_equal(osp_model_cfg_from_catalog("blazeface", &cfg, err, sizeof err), 0);
    assert_int_equal(osp_cascade_simple(&cfg, "face-embed", "f.db", &c, err, sizeof err), 0);
    osp_cascade_free(c);
    c = NULL;
    assert_int_equal(osp_model_cfg_from_catalog("ultraface", &cfg, err, sizeof err), 0);
    assert_int_equal(osp_cascade_simple(&cfg, "face-embed", NULL, &c, err, sizeof err), 0);
    osp_cascade_free(c);
    c = NULL;
    assert_int_equal(osp_cascade_simple(&cfg, "nope", NULL, &c, err, sizeof err), OSP_MODEL_EINVAL);
    assert_non_null(strstr(err, "not in the catalog"));
}

/* each_library's visitor: rewrites each path to "/roots/<n>", counting. */
static int rewrite(void *arg, char *path, size_t cap) {
    int *n = arg;
    if (strcmp(path, "f.db") != 0 && strcmp(path, "g.db") != 0) return -1;
    snprintf(path, cap, "/roots/%d", (*n)++);
    return 0;
}

static int seen(void *arg, char *path, size_t cap) {
    (void)cap;
    char *all = arg;
    strcat(all, path);
    strcat(all, ";");
    return 0;
}

/* What a server does with a parsed cascade before it opens it: confine its
 * libraries (rewritten in place), keep a copy for a reload, count steps. */
static void test_copy_libraries_counts(void **state) {
    (void)state;
    osp_cascade_t *c = NULL;
    assert_string_equal(parse("{\"model\": \"ultraface\", \"then\": [{\"model\": \"blazeface\", "
                              "\"then\": [{\"model\": \"face-embed\", \"align\": \"landmarks\", "
                              "\"faceLibrary\": \"f.db\"}]}, {\"model\": \"face-embed\", "
                              "\"faceLibrary\": \"g.db\"}]}",
                              &c),
                        "");
    int n = 0;
    assert_int_equal(osp_cascade_each_library(c, rewrite, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(osp_cascade_each_library(c, rewrite, &n), -1); /* the first refusal stops it */
    osp_cascade_t *copy = osp_cascade_copy(c);
    assert_non_null(copy);
    assert_true(osp_cascade_same(c, copy));
    assert_true(osp_cascade_same(NULL, NULL));
    assert_false(osp_cascade_same(c, NULL));
    osp_cascade_t *other = NULL;
    assert_string_equal(parse("{\"model\": \"ultraface\", \"then\": [{\"model\": \"blazeface\", "
                              "\"then\": [{\"model\": \"face-embed\", \"align\": \"landmarks\", "
                              "\"faceLibrary\": \"f.db\"}]}, {\"model\": \"face-embed\", "
                              "\"faceLibrary\": \"g.db\"}]}",
                              &other),
                        "");
    assert_false(osp_cascade_same(c, other)); /* its libraries were not rewritten */
    osp_cascade_free(other);
    osp_cascade_free(c);
    char all[256] = "";
    assert_int_equal(osp_cascade_each_library(copy, seen, all), 0);
    assert_string_equal(all, "/roots/0;/roots/1;");
    osp_cascade_count_t k[OSP_CASCADE_STEPS];
    assert_int_equal(osp_cascade_counts(copy, k, OSP_CASCADE_STEPS), 3);
    assert_string_equal(k[0].model, "blazeface");
    assert_int_equal(k[0].depth, 0);
    assert_string_equal(k[1].model, "face-embed");
    assert_int_equal(k[1].depth, 1);
    assert_string_equal(k[2].model, "face-embed");
    assert_int_equal(k[2].depth, 0);
    assert_true(k[0].runs == 0 && k[0].skipped == 0);    /* not opened: nothing ran */
    assert_int_equal(osp_cascade_counts(copy, k, 1), 3); /* fills what fits, says how many */
    osp_cascade_free(copy);
}

/* A step's embedding is written as the model config's "embeddingEncoding"
 * says: two configs that differ only there are not the same cascade (a
 * server may not share the model of one with a peer asking the other). */
static void test_embedding_encoding_is_the_models(void **st) {
    (void)st;
    osp_cascade_t *list = NULL, *b64 = NULL, *json = NULL;
    assert_string_equal(parse("{\"model\": \"ultraface\", \"then\": {\"model\": \"face-embed\"}}",
                              &list),
                        "");
    assert_string_equal(parse("{\"model\": \"ultraface\", \"embeddingEncoding\": \"base64\", "
                              "\"then\": {\"model\": \"face-embed\"}}",
                              &b64),
                        "");
    assert_string_equal(parse("{\"model\": \"ultraface\", \"embeddingEncoding\": \"json\", "
                              "\"then\": {\"model\": \"face-embed\"}}",
                              &json),
                        "");
    assert_false(osp_cascade_same(list, b64));
    assert_true(osp_cascade_same(list, json));
    osp_cascade_t *copy = osp_cascade_copy(b64);
    assert_non_null(copy);
    assert_true(osp_cascade_same(b64, copy));
    osp_cascade_free(copy);
    osp_cascade_free(list);
    osp_cascade_free(b64);
    osp_cascade_free(json);
}

/* What osprey detect --track asks of a cascade before it runs it on an
 * object: whether its result can fall below a threshold (a name, a text,
 * at any depth), and which boxes one run would take (every label here:
 * the labels are bound when the models are loaded; the largest up to
 * maxObjects). */
static void test_judges_and_takes(void **state) {
    (void)state;
    static const struct {
        const char *text;
        int judges;
    } cases[] = {
        {"{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\"}]}", 0},
        {"{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-embed\", "
         "\"faceLibrary\": \"f.db\"}]}",
         1},
        {"{\"model\": \"ultraface\", \"then\": [{\"model\": \"blazeface\", \"then\": "
         "[{\"model\": \"face-embed\", \"faceLibrary\": \"f.db\"}]}]}",
         1},
        {"{\"model\": \"ocr-det\", \"then\": [{\"model\": \"ocr-rec\"}]}", 1},
        {"{\"model\": \"ultraface\", \"then\": [{\"model\": \"face-expression\"}]}", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        osp_cascade_t *c = NULL;
        assert_string_equal(parse(cases[i].text, &c), "");
        if (osp_cascade_judges(c) != cases[i].judges) fail_msg("%s: judges", cases[i].text);
        osp_cascade_free(c);
    }
    osp_cascade_t *c = NULL;
    assert_string_equal(parse("{\"model\": \"ultraface\", \"then\": [{\"model\": "
                              "\"face-embed\", \"maxObjects\": 2}]}",
                              &c),
                        "");
    osp_det_t dets[3] = {{.x1 = 0, .y1 = 0, .x2 = 10, .y2 = 10},
                         {.x1 = 0, .y1 = 0, .x2 = 30, .y2 = 30},
                         {.x1 = 0, .y1 = 0, .x2 = 20, .y2 = 20}};
    uint16_t take[3];
    assert_int_equal(osp_cascade_takes(c, dets, 3, take), 2);
    assert_int_equal(take[0], 0);
    assert_int_equal(take[1], 1);
    assert_int_equal(take[2], 1);
    assert_int_equal(osp_cascade_takes(c, dets, 1, take), 1); /* one box alone: taken */
    assert_int_equal(take[0], 1);
    osp_cascade_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_cascades_parse),
        cmocka_unit_test(test_unknown_key_names_the_nearest),
        cmocka_unit_test(test_model_not_in_catalog),
        cmocka_unit_test(test_cycle),
        cmocka_unit_test(test_landmarks_need_a_detector_that_gives_them),
        cmocka_unit_test(test_only_boxes_are_followed),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_depth_and_size_are_bounded),
        cmocka_unit_test(test_simple_cascade_aligns_when_it_can),
        cmocka_unit_test(test_copy_libraries_counts),
        cmocka_unit_test(test_embedding_encoding_is_the_models),
        cmocka_unit_test(test_judges_and_takes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
