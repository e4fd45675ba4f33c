/* The rules of a cascade once per object (src/track/steps.c), shared by
 * `osprey detect --track` and ospreyd's cameras: an object never run
 * wants a run; a sure result settles it until its box grows by
 * OSP_STEPS_GROW_AGAIN; an unsure one is tried again after
 * OSP_STEPS_AGAIN_AFTER frames when the cascade judges, OSP_STEPS_TRIES
 * times at most; the surest result is kept; a detection is a settled
 * object's when it overlaps its box by OSP_STEPS_SAME_IOU, of its label. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "track/steps.h"

static osp_event_names_t named(const char *name, float score) {
    osp_event_names_t n;
    memset(&n, 0, sizeof n);
    snprintf(n.name, sizeof n.name, "%s", name);
    n.name_score = score;
    return n;
}

static void test_a_sure_result_settles_until_the_box_grows(void **state) {
    (void)state;
    osp_steps_obj_t o = {0};
    assert_true(osp_steps_wants(NULL, 100, 1, 1));
    assert_true(osp_steps_wants(&o, 100, 1, 1)); /* zeroed: never run */
    osp_event_names_t alice = named("alice", 0.7f);
    assert_int_equal(osp_steps_ran(&o, 100, 1, &alice), 1);
    assert_int_equal(o.runs, 1);
    assert_true(o.sure);
    for (long f = 2; f < 100; f++) assert_false(osp_steps_wants(&o, 149, f, 1));
    assert_true(osp_steps_wants(&o, 150, 2, 1)); /* grown 1.5 times */
    osp_event_names_t worse = named("bob", 0.5f), none = named("", 0);
    assert_int_equal(osp_steps_ran(&o, 150, 2, &worse), 0); /* the surer stands */
    assert_int_equal(osp_steps_ran(&o, 225, 3, &none), 0);  /* a name beats none */
    assert_float_equal(o.score, 0.7f, 1e-6);
    assert_int_equal(o.runs, 3);
    assert_float_equal(o.area, 225, 1e-6); /* grown from the last run's box */
    assert_false(osp_steps_wants(&o, 300, 4, 1));
    osp_event_names_t better = named("alice", 0.9f);
    assert_int_equal(osp_steps_ran(&o, 400, 4, &better), 1);
    assert_false(osp_steps_wants(&o, 4000, 5, 1)); /* OSP_STEPS_TRIES */
}

static void test_an_unsure_result_is_tried_again_when_the_cascade_judges(void **state) {
    (void)state;
    osp_steps_obj_t o = {0};
    osp_event_names_t none = named("", 0);
    int runs = 0;
    for (long f = 1; f <= 40; f++)
        if (osp_steps_wants(&o, 100, f, 1)) {
            assert_int_equal(f, 1 + runs * OSP_STEPS_AGAIN_AFTER);
            assert_int_equal(osp_steps_ran(&o, 100, f, &none), 1); /* the latest */
            runs++;
        }
    assert_int_equal(runs, OSP_STEPS_TRIES);
    /* an embedder alone (no library, no pattern) has nothing to be unsure of */
    osp_steps_obj_t e = {0};
    osp_steps_ran(&e, 100, 1, &none);
    for (long f = 2; f <= 40; f++) assert_false(osp_steps_wants(&e, 100, f, 0));
}

static void test_a_plate_counts_as_sure_with_its_score(void **state) {
    (void)state;
    osp_steps_obj_t o = {0};
    osp_event_names_t p;
    memset(&p, 0, sizeof p);
    snprintf(p.plate, sizeof p.plate, "AB1234");
    p.plate_score = 0.8f;
    assert_int_equal(osp_steps_ran(&o, 100, 1, &p), 1);
    assert_true(o.sure);
    assert_float_equal(o.score, 0.8f, 1e-6);
    osp_event_names_t both = named("alice", 0.6f);
    snprintf(both.plate, sizeof both.plate, "XY");
    both.plate_score = 0.85f; /* the better of the two scores */
    assert_int_equal(osp_steps_ran(&o, 150, 2, &both), 1);
    assert_float_equal(o.score, 0.85f, 1e-6);
}

static void test_a_detection_is_a_settled_objects_by_overlap_and_label(void **state) {
    (void)state;
    const osp_steps_settled_t s[] = {{{100, 100, 140, 140}, 1}, {{300, 100, 340, 160}, 2}};
    const osp_track_box_t same = {100, 100, 140, 140}, near = {108, 100, 148, 140},
                          off = {116, 100, 156, 140}, far = {400, 400, 440, 440};
    assert_true(osp_steps_is_settled(s, 2, &same, 1));
    assert_true(osp_steps_is_settled(s, 2, &near, 1));  /* IoU 32/48: 0.67 */
    assert_false(osp_steps_is_settled(s, 2, &off, 1));  /* IoU 24/56: 0.43 */
    assert_false(osp_steps_is_settled(s, 2, &same, 2)); /* another label */
    assert_false(osp_steps_is_settled(s, 2, &far, 1));
    assert_false(osp_steps_is_settled(s, 0, &same, 1));
    const osp_track_box_t second = {300, 100, 340, 160};
    assert_true(osp_steps_is_settled(s, 2, &second, 2));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_sure_result_settles_until_the_box_grows),
        cmocka_unit_test(test_an_unsure_result_is_tried_again_when_the_cascade_judges),
        cmocka_unit_test(test_a_plate_counts_as_sure_with_its_score),
        cmocka_unit_test(test_a_detection_is_a_settled_objects_by_overlap_and_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
