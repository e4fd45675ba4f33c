/* The zones file (src/track/zonefile.c): the three ways to write
 * coordinates, the defaults, and every error with its reason: not JSON,
 * a polygon under 3 points or without area, a coordinate outside 0-1, a
 * line of zero length or not 2 points, unknown keys with the nearest known
 * one, Frigate's keys osprey does not act on, names too long or unfit for
 * a topic, bad inertia, loitering_time and objects, too many of anything. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "track/zones.h"

static osp_zones_cfg_t cfg;
static char err[256];

static int parse(const char *text) {
    err[0] = '\0';
    return osp_zones_cfg_parse(text, strlen(text), &cfg, err, sizeof err);
}

/* Fails to parse, with every one of the fragments in the reason. */
static void refused(const char *text, const char *frag1, const char *frag2) {
    assert_int_equal(parse(text), OSP_ZONES_EINVAL);
    if (!strstr(err, frag1) || (frag2 && !strstr(err, frag2)))
        fail_msg("for %s\n  got \"%s\", wanted \"%s\"%s%s", text, err, frag1, frag2 ? " and " : "",
                 frag2 ? frag2 : "");
    assert_non_null(strstr(err, "zones file: "));
}

static void test_a_whole_file(void **state) {
    (void)state;
    const char *text = "{\"zones\": {"
                       "  \"driveway\": {\"coordinates\": \"0.1,0.5,0.9,0.5,0.9,1,0.1,1\","
                       "                 \"inertia\": 5, \"loitering_time\": 30,"
                       "                 \"objects\": [\"car\", \"Person\"]},"
                       "  \"porch\": {\"coordinates\": [[0, 0], [0.5, 0], [0.5, 0.4]]},"
                       "  \"yard-2\": {\"coordinates\": [\"0.2, 0.2\", \"0.3,0.2\", \"0.3,0.3\"]}},"
                       " \"lines\": {\"gate\": {\"coordinates\": \"0,0.5,1,0.5\", \"objects\": "
                       "[\"Person\"]}}}";
    assert_int_equal(parse(text), 0);
    assert_int_equal(cfg.n_zones, 3);
    assert_string_equal(cfg.zones[0].name, "driveway");
    assert_int_equal(cfg.zones[0].n_pts, 4);
    assert_float_equal(cfg.zones[0].pts[2].x, 0.9f, 1e-6);
    assert_float_equal(cfg.zones[0].pts[3].y, 1.0f, 1e-6);
    assert_int_equal(cfg.zones[0].inertia, 5);
    assert_float_equal(cfg.zones[0].loitering_time, 30, 1e-9);
    assert_int_equal(cfg.zones[0].n_objects, 2);
    assert_string_equal(cfg.zones[0].objects[1], "Person");
    /* defaults */
    assert_string_equal(cfg.zones[1].name, "porch");
    assert_int_equal(cfg.zones[1].n_pts, 3);
    assert_int_equal(cfg.zones[1].inertia, 3);
    assert_float_equal(cfg.zones[1].loitering_time, 0, 0);
    assert_int_equal(cfg.zones[1].n_objects, 0);
    assert_float_equal(cfg.zones[2].pts[1].x, 0.3f, 1e-6);
    assert_int_equal(cfg.n_lines, 1);
    assert_string_equal(cfg.lines[0].name, "gate");
    assert_float_equal(cfg.lines[0].b.x, 1.0f, 0);
    assert_float_equal(cfg.lines[0].a.y, 0.5f, 0);
    assert_string_equal(cfg.lines[0].objects[0], "Person");
    /* an empty file is no zones */
    assert_int_equal(parse("{}"), 0);
    assert_int_equal(cfg.n_zones + cfg.n_lines, 0);
}

static void test_not_json(void **state) {
    (void)state;
    refused("{\"zones\": {", "not JSON", "line 1 column");
    refused("", "not JSON", NULL);
    refused("zones:\n  door:\n", "not JSON", NULL); /* YAML is not JSON */
    refused("[1, 2]", "must be a JSON object", NULL);
    refused("{\"zones\": []}", "\"zones\" must be an object", NULL);
    refused("{\"lines\": 3}", "\"lines\" must be an object", NULL);
    refused("{\"zones\": {\"a\": [0, 0, 1]}}", "zone \"a\" must be an object", NULL);
}

static void test_polygon_points(void **state) {
    (void)state;
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,1\"}}}", "zone \"a\" has 2 points",
            "at least 3");
    refused("{\"zones\": {\"a\": {\"coordinates\": []}}}", "has 0 points", NULL);
    refused("{\"zones\": {\"a\": {}}}", "zone \"a\" has no coordinates", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,0.5,0.5,1,1\"}}}", "has no area", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1\"}}}", "odd number", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,x\"}}}", "coordinate 6",
            "not a number");
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0 0 1 0 1 1\"}}}", "coordinate 1", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1,\"}}}", "not a number", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": [[0, 0], [1], [1, 1]]}}}", "point 2", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": [\"0,0\", \"1\", \"1,1\"]}}}", "point 2", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": 5}}}", "coordinates must be", NULL);
    /* 65 points */
    char big[2048] = "{\"zones\": {\"a\": {\"coordinates\": \"";
    for (int i = 0; i < 65; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s0.%02d,0.5", i ? "," : "", i);
    strcat(big, "\"}}}");
    refused(big, "more than 64 points", NULL);
}

static void test_coordinates_in_range(void **state) {
    (void)state;
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1.2,0,1,1\"}}}",
            "coordinate 3 (x of point 2) is 1.2, outside 0-1", "relative");
    refused("{\"zones\": {\"a\": {\"coordinates\": [[0, 0], [1, -0.1], [1, 1]]}}}",
            "coordinate 4 (y of point 2) is -0.1", NULL);
    /* Frigate's old pixel coordinates */
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,640,0,640,480\"}}}", "is 640", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": [[0, 0], [NaN, 0], [1, 1]]}}}", "is nan", NULL);
    refused("{\"lines\": {\"l\": {\"coordinates\": \"0,0,1,1.5\"}}}", "outside 0-1", NULL);
}

static void test_lines(void **state) {
    (void)state;
    refused("{\"lines\": {\"l\": {\"coordinates\": \"0.5,0.5,0.5,0.5\"}}}", "zero length", NULL);
    refused("{\"lines\": {\"l\": {\"coordinates\": \"0,0,1,1,0,1\"}}}", "line \"l\"",
            "2 points, not 3");
    refused("{\"lines\": {\"l\": {\"coordinates\": \"0,0\"}}}", "2 points, not 1", NULL);
    refused("{\"lines\": {\"l\": {\"inertia\": 3, \"coordinates\": \"0,0,1,1\"}}}",
            "line \"l\": unknown key \"inertia\"", NULL);
}

static void test_unknown_keys(void **state) {
    (void)state;
    refused("{\"zone\": {}}", "top level: unknown key \"zone\"", "did you mean \"zones\"");
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"inertai\": 2}}}",
            "zone \"a\": unknown key \"inertai\"", "did you mean \"inertia\"");
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"loitering\": 2}}}",
            "did you mean \"loitering_time\"", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"colour\": \"red\"}}}",
            "unknown key \"colour\"", NULL);
    assert_null(strstr(err, "did you mean"));
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"filters\": {}}}}",
            "\"filters\" (a Frigate zone key) is not supported", NULL);
}

static void test_names(void **state) {
    (void)state;
    char text[512];
    char name[80];
    memset(name, 'n', 64);
    name[64] = '\0';
    snprintf(text, sizeof text, "{\"zones\": {\"%s\": {\"coordinates\": \"0,0,1,0,1,1\"}}}", name);
    refused(text, "zone name", "longer than 63 bytes");
    name[63] = '\0'; /* 63 is the most */
    snprintf(text, sizeof text, "{\"zones\": {\"%s\": {\"coordinates\": \"0,0,1,0,1,1\"}}}", name);
    assert_int_equal(parse(text), 0);
    refused("{\"zones\": {\"front/door\": {\"coordinates\": \"0,0,1,0,1,1\"}}}",
            "zone name \"front/door\" must be letters, digits", "MQTT");
    refused("{\"zones\": {\"\": {\"coordinates\": \"0,0,1,0,1,1\"}}}", "zone name \"\"", NULL);
    refused("{\"lines\": {\"a b\": {\"coordinates\": \"0,0,1,1\"}}}", "line name \"a b\"", NULL);
    memset(name, 'l', 70);
    name[70] = '\0';
    snprintf(text, sizeof text,
             "{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"objects\": [\"%s\"]}}}", name);
    refused(text, "label", "longer than 63 bytes");
}

static void test_values(void **state) {
    (void)state;
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"inertia\": 0}}}",
            "inertia must be a whole number", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"inertia\": 2.5}}}",
            "inertia", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"inertia\": \"3\"}}}",
            "inertia", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"loitering_time\": -1}}}",
            "loitering_time must be seconds", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"objects\": \"car\"}}}",
            "objects must be a list", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"objects\": [\"\"]}}}",
            "objects must be a list", NULL);
    refused("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"objects\": [1]}}}",
            "objects must be a list", NULL);
    char text[1024] = "{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\", \"objects\": [";
    for (int i = 0; i < 17; i++)
        snprintf(text + strlen(text), sizeof text - strlen(text), "%s\"l%d\"", i ? "," : "", i);
    strcat(text, "]}}}");
    refused(text, "more than 16 objects", NULL);
}

static void test_too_many(void **state) {
    (void)state;
    size_t cap = 8192;
    char *text = malloc(cap);
    assert_non_null(text);
    strcpy(text, "{\"lines\": {");
    for (int i = 0; i < 33; i++)
        snprintf(text + strlen(text), cap - strlen(text),
                 "%s\"l%d\": {\"coordinates\": \"0,0,1,1\"}", i ? "," : "", i);
    strcat(text, "}}");
    refused(text, "more than 32 lines", NULL);
    free(text);
}

/* A configuration built in code meets the same rules. */
static void test_check(void **state) {
    (void)state;
    assert_int_equal(parse("{\"zones\": {\"a\": {\"coordinates\": \"0,0,1,0,1,1\"}}}"), 0);
    assert_int_equal(osp_zones_cfg_check(&cfg, err, sizeof err), 0);
    cfg.zones[0].inertia = 0;
    assert_int_equal(osp_zones_cfg_check(&cfg, err, sizeof err), OSP_ZONES_EINVAL);
    cfg.zones[0].inertia = 3;
    memset(cfg.zones[0].name, 'x', sizeof cfg.zones[0].name); /* no terminating NUL */
    assert_int_equal(osp_zones_cfg_check(&cfg, err, sizeof err), OSP_ZONES_EINVAL);
    assert_non_null(strstr(err, "longer than 63"));
    strcpy(cfg.zones[0].name, "a");
    cfg.zones[0].pts[1].x = 2;
    assert_int_equal(osp_zones_cfg_check(&cfg, err, sizeof err), OSP_ZONES_EINVAL);
    cfg.n_zones = 33;
    assert_int_equal(osp_zones_cfg_check(&cfg, err, sizeof err), OSP_ZONES_EINVAL);
    osp_zones_t *z;
    assert_int_equal(osp_zones_new(&cfg, &z, err, sizeof err), OSP_ZONES_EINVAL);
    assert_null(z);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_whole_file),   cmocka_unit_test(test_not_json),
        cmocka_unit_test(test_polygon_points), cmocka_unit_test(test_coordinates_in_range),
        cmocka_unit_test(test_lines),          cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_names),          cmocka_unit_test(test_values),
        cmocka_unit_test(test_too_many),       cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
