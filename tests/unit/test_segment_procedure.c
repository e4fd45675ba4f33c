/* The procedure checker (src/segment/procedure.c) on scripted descriptions:
 * matching by id, name and alias (case-insensitive, whole words), complete
 * and incomplete cycles, skipped and out-of-order steps, repeats, a return
 * below 0.3 completion treated as noise, and the end-of-stream summary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "segment/procedure.h"

static const char *FIVE =
    "{\"steps\": ["
    " {\"id\": \"pick\", \"name\": \"pick up the part\", \"aliases\": [\"grab\", \"takes\"]},"
    " {\"id\": \"place\", \"name\": \"place in fixture\", \"aliases\": [\"puts it in\"]},"
    " {\"id\": \"screw\", \"name\": \"drive the screws\", \"aliases\": [\"screwdriver\"]},"
    " {\"id\": \"inspect\", \"name\": \"inspect\", \"aliases\": [\"looks at\"]},"
    " {\"id\": \"store\", \"name\": \"store the part\", \"aliases\": [\"bin\"]}]}";

static osp_proc_t *load(void) {
    osp_proc_t *p;
    char err[128];
    assert_int_equal(osp_proc_parse(FIVE, NULL, &p, err, sizeof err), 0);
    return p;
}

/* Check one description; returns the result (caller deletes). */
static cJSON *check(osp_proc_t *p, const char *d) {
    cJSON *r = osp_proc_check(p, d);
    assert_non_null(r);
    return r;
}

static const char *str(cJSON *o, const char *k) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(cJSON *o, const char *k) {
    return cJSON_GetObjectItemCaseSensitive(o, k)->valuedouble;
}

static int n_viol(cJSON *r) {
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "violations"));
}

static const char *viol_type(cJSON *r, int i) {
    return str(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "violations"), i), "type");
}

static void test_matching(void **state) {
    (void)state;
    osp_proc_t *p = load();
    assert_int_equal(osp_proc_match(p, "The worker GRABS nothing"), -1); /* whole words only */
    assert_int_equal(osp_proc_match(p, "The worker Grab the part"), 0);
    assert_int_equal(osp_proc_match(p, "He puts it in the jig"), 1);
    assert_int_equal(osp_proc_match(p, "uses a screwdriver"), 2);
    assert_int_equal(osp_proc_match(p, "looks at it, then bin"), 3); /* named first wins */
    assert_int_equal(osp_proc_match(p, ""), -1);
    assert_int_equal(osp_proc_match(p, "nothing happens"), -1);
    osp_proc_free(p);
}

static void test_complete_cycles(void **state) {
    (void)state;
    osp_proc_t *p = load();
    const char *script[] = {"takes the part",
                            "takes the part",
                            "place in fixture",
                            "drive the screws",
                            "inspect",
                            "store the part",
                            "pick",
                            "place",
                            "screw",
                            "inspect",
                            "store"};
    for (int i = 0; i < 11; i++) {
        cJSON *r = check(p, script[i]);
        assert_int_equal(n_viol(r), 0);
        if (i == 5) {
            assert_float_equal(num(r, "completion"), 1.0, 1e-9);
            assert_string_equal(str(r, "next_expected"), "pick");
        }
        if (i == 6) {
            cJSON *closed = cJSON_GetObjectItemCaseSensitive(r, "cycle_closed");
            assert_non_null(closed);
            assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(closed, "complete")));
            assert_float_equal(num(r, "cycle"), 2, 0);
        }
        cJSON_Delete(r);
    }
    cJSON *s = osp_proc_summary(p);
    assert_float_equal(num(s, "cycles"), 2, 0);
    assert_float_equal(num(s, "completed"), 2, 0);
    assert_float_equal(num(s, "violation_count"), 0, 0);
    cJSON_Delete(s);
    osp_proc_free(p);
}

static void test_skipped_out_of_order_incomplete(void **state) {
    (void)state;
    osp_proc_t *p = load();
    cJSON *r = check(p, "pick up the part");
    cJSON_Delete(r);
    r = check(p, "drive the screws"); /* place skipped */
    assert_int_equal(n_viol(r), 1);
    assert_string_equal(viol_type(r, 0), "skipped");
    assert_string_equal(str(r, "expected_step"), "place");
    cJSON_Delete(r);
    r = check(p, "place in fixture"); /* late: out of order, not counted */
    assert_int_equal(n_viol(r), 1);
    assert_string_equal(viol_type(r, 0), "out_of_order");
    assert_float_equal(num(r, "completion"), 0.4, 1e-9);
    cJSON_Delete(r);
    /* Back to the first step at 0.4 completion: the cycle closes,
     * incomplete (< 0.6), with inspect and store missing. */
    r = check(p, "pick up the part");
    cJSON *closed = cJSON_GetObjectItemCaseSensitive(r, "cycle_closed");
    assert_non_null(closed);
    assert_false(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(closed, "complete")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(closed, "missing_steps")), 2);
    cJSON_Delete(r);
    const char *rest[] = {"place", "screw", "inspect"};
    for (int i = 0; i < 3; i++) cJSON_Delete(check(p, rest[i]));
    cJSON *s = osp_proc_summary(p);
    assert_float_equal(num(s, "cycles"), 2, 0);
    assert_float_equal(num(s, "completed"), 1, 0); /* 0.8 >= 0.6 */
    cJSON *cc = cJSON_GetObjectItemCaseSensitive(s, "cycle_completion");
    assert_float_equal(cJSON_GetArrayItem(cc, 0)->valuedouble, 0.4, 1e-9);
    assert_float_equal(cJSON_GetArrayItem(cc, 1)->valuedouble, 0.8, 1e-9);
    cJSON *miss = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(s, "missing_steps"), 1);
    assert_string_equal(cJSON_GetArrayItem(miss, 0)->valuestring, "store");
    assert_float_equal(num(s, "violation_count"), 2, 0);
    cJSON_Delete(s);
    osp_proc_free(p);
}

static void test_noise_below_low_threshold(void **state) {
    (void)state;
    osp_proc_t *q = load();
    cJSON_Delete(check(q, "inspect"));   /* starts late: 3 skipped, completion 0.2 */
    cJSON *r = check(q, "walks around"); /* no step: nothing changes */
    assert_null(str(r, "matched_step"));
    assert_int_equal(n_viol(r), 0);
    assert_float_equal(num(r, "completion"), 0.2, 1e-9);
    cJSON_Delete(r);
    r = check(q, "pick"); /* a return at 0.2 < 0.3: noise, the same cycle */
    assert_null(cJSON_GetObjectItemCaseSensitive(r, "cycle_closed"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "noise")));
    assert_float_equal(num(r, "cycle"), 1, 0);
    assert_string_equal(viol_type(r, 0), "out_of_order");
    cJSON_Delete(r);
    cJSON *s = osp_proc_summary(q);
    assert_float_equal(num(s, "cycles"), 1, 0);
    assert_float_equal(num(s, "completed"), 0, 0);
    cJSON_Delete(s);
    osp_proc_free(q);
}

static void test_late_return_closes_and_repeat(void **state) {
    (void)state;
    osp_proc_t *p = load();
    const char *s1[] = {"pick", "place", "screw", "inspect"}; /* 0.8 */
    for (int i = 0; i < 4; i++) cJSON_Delete(check(p, s1[i]));
    /* At >= 0.8 a return to any earlier step closes the cycle. */
    cJSON *r = check(p, "place");
    assert_non_null(cJSON_GetObjectItemCaseSensitive(r, "cycle_closed"));
    assert_int_equal(n_viol(r), 1); /* the new cycle skipped pick */
    assert_string_equal(viol_type(r, 0), "skipped");
    cJSON_Delete(r);
    cJSON_Delete(check(p, "screw"));
    cJSON_Delete(check(p, "inspect")); /* 0.6 */
    r = check(p, "screw");             /* back one step at 0.6: a repeat */
    assert_int_equal(n_viol(r), 1);
    assert_string_equal(viol_type(r, 0), "repeated");
    assert_null(cJSON_GetObjectItemCaseSensitive(r, "cycle_closed"));
    cJSON_Delete(r);
    cJSON *s = osp_proc_summary(p);
    assert_float_equal(num(s, "cycles"), 2, 0);
    assert_float_equal(num(s, "completed"), 2, 0);
    cJSON_Delete(s);
    osp_proc_free(p);
}

static void test_bad_files(void **state) {
    (void)state;
    osp_proc_t *p;
    char err[128];
    assert_int_equal(osp_proc_parse("{", NULL, &p, err, sizeof err), -1);
    assert_int_equal(osp_proc_parse("{\"steps\": []}", NULL, &p, err, sizeof err), -1);
    assert_int_equal(osp_proc_parse("[{\"id\": \"a\"}]", NULL, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "name"));
    assert_int_equal(osp_proc_parse("[{\"id\": 1, \"name\": \"Weld\"}]", NULL, &p, err, sizeof err),
                     0);
    assert_int_equal(osp_proc_match(p, "step 1 then weld"), 0);
    assert_int_equal(osp_proc_match(p, "step 1"), -1); /* numeric ids are not keys */
    osp_proc_free(p);
    assert_int_equal(osp_proc_load("/nonexistent/actions.json", NULL, &p, err, sizeof err), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matching),
        cmocka_unit_test(test_complete_cycles),
        cmocka_unit_test(test_skipped_out_of_order_incomplete),
        cmocka_unit_test(test_noise_below_low_threshold),
        cmocka_unit_test(test_late_return_closes_and_repeat),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
