/* A camera's cascade once per object (src/server/cameras/camsteps.c with
 * a real tracker): scripted frames of faces go through what a frame's job
 * does (a detection that is one of the settled objects the camera listed
 * runs no step, osp_steps_is_settled; the others of the step's label do)
 * and the tracker. A face named on its first frame runs its steps once in
 * 60 frames, standing or walking across the picture; one left "unknown"
 * is tried OSP_STEPS_TRIES times, OSP_STEPS_AGAIN_AFTER frames apart; one
 * walking up to the camera is run again as its box grows; a box of
 * another label where a settled face is runs as it always did; a face
 * that leaves and comes back is a new object and is run again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "server/cameras/camsteps.h"

#define FACE 1 /* the step's label */
#define CAR 2  /* another: its steps are not the cascade's business here */

typedef struct {
    osp_tracker_t *t;
    srv_camsteps_t *k;
    double time;
    int runs[3]; /* step runs by label */
} rig_t;

static rig_t rig(int judges) {
    rig_t r = {0};
    char err[256];
    assert_int_equal(osp_track_new(NULL, &r.t, err, sizeof err), 0);
    assert_non_null(r.k = srv_camsteps_new(judges));
    return r;
}

static void done(rig_t *r) {
    srv_camsteps_free(r->k);
    osp_track_free(r->t);
}

/* One frame of n boxes (labels[i]; a face is named when sure): the
 * settled list made before it, each box's steps run unless it is a
 * settled object's (cars too: a cascade on every label), then tracked. */
static void frame(rig_t *r, const osp_track_box_t *boxes, const int *labels, int n, int sure) {
    osp_steps_settled_t settled[16];
    int ns = srv_camsteps_settled(r->k, r->t, settled, 16);
    osp_track_det_t dets[8];
    osp_event_names_t names[8];
    int cls[8], stepped[8];
    for (int i = 0; i < n; i++) {
        dets[i] = (osp_track_det_t){.box = boxes[i], .score = 0.9f, .label = labels[i]};
        cls[i] = labels[i];
        stepped[i] = !osp_steps_is_settled(settled, ns, &boxes[i], labels[i]);
        memset(&names[i], 0, sizeof names[i]);
        if (stepped[i] && sure) {
            snprintf(names[i].name, sizeof names[i].name, "alice");
            names[i].name_score = 0.8f;
        }
        r->runs[labels[i]] += stepped[i];
    }
    char err[256];
    r->time += 0.2;
    assert_int_equal(osp_track_update(r->t, dets, n, r->time, err, sizeof err), 0);
    assert_int_equal(srv_camsteps_update(r->k, r->t, dets, cls, stepped, names, n), 0);
}

static void one_face(rig_t *r, osp_track_box_t b, int sure) {
    const int label = FACE;
    frame(r, &b, &label, 1, sure);
}

static void test_a_named_face_runs_its_steps_once(void **state) {
    (void)state;
    rig_t r = rig(1);
    for (int f = 0; f < 60; f++) one_face(&r, (osp_track_box_t){100, 100, 160, 170}, 1);
    assert_int_equal(r.runs[FACE], 1);
    done(&r);
}

static void test_a_face_walking_across_is_met_where_it_is_expected(void **state) {
    (void)state;
    rig_t r = rig(1);
    /* 25 px a frame with a box 60 wide: the last box overlaps the next by
     * 35/85 (0.41), too little; the filter's prediction, once it has the
     * speed (two frames), by more. Its steps' last run is early, and it
     * is not OSP_STEPS_TRIES that ends them. */
    int last = 0;
    for (int f = 1; f <= 60; f++) {
        int before = r.runs[FACE];
        float x = 10 + 25.0f * (float)f;
        one_face(&r, (osp_track_box_t){x, 100, x + 60, 170}, 1);
        if (r.runs[FACE] > before) last = f;
    }
    assert_true(r.runs[FACE] < OSP_STEPS_TRIES);
    assert_true(last <= 3);
    done(&r);
}

static void test_an_unknown_face_is_tried_again_a_few_times(void **state) {
    (void)state;
    rig_t r = rig(1);
    int at[8], n = 0;
    for (int f = 1; f <= 60; f++) {
        int before = r.runs[FACE];
        one_face(&r, (osp_track_box_t){100, 100, 160, 170}, 0);
        if (r.runs[FACE] > before && n < 8) at[n++] = f;
    }
    assert_int_equal(n, OSP_STEPS_TRIES);
    for (int i = 0; i < n; i++) assert_int_equal(at[i], 1 + i * OSP_STEPS_AGAIN_AFTER);
    done(&r);
    /* an embedder alone (nothing judged): once */
    r = rig(0);
    for (int f = 0; f < 60; f++) one_face(&r, (osp_track_box_t){100, 100, 160, 170}, 0);
    assert_int_equal(r.runs[FACE], 1);
    done(&r);
}

static void test_a_face_coming_closer_is_run_again(void **state) {
    (void)state;
    rig_t r = rig(1);
    /* grows 2 % a side a frame about its centre: 1.5 times the area in
     * about 11 frames */
    float cx = 300, cy = 200, w = 40, h = 50;
    int at[8], n = 0;
    for (int f = 1; f <= 40; f++) {
        int before = r.runs[FACE];
        one_face(&r, (osp_track_box_t){cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2}, 1);
        if (r.runs[FACE] > before && n < 8) at[n++] = f;
        w *= 1.02f, h *= 1.02f;
    }
    assert_int_equal(n, OSP_STEPS_TRIES); /* grown 1.5 times about every 11 frames */
    assert_int_equal(at[0], 1);
    for (int i = 1; i < n; i++) assert_true(at[i] - at[i - 1] >= 9 && at[i] - at[i - 1] <= 12);
    done(&r);
}

static void test_another_label_where_a_face_is_settled_runs(void **state) {
    (void)state;
    rig_t r = rig(1);
    const osp_track_box_t face = {100, 100, 160, 170}, car = {400, 300, 520, 380};
    for (int f = 0; f < 5; f++) one_face(&r, face, 1);
    const osp_track_box_t both[] = {face, face, car};
    const int labels[] = {FACE, CAR, CAR};
    for (int f = 0; f < 20; f++) frame(&r, both, labels, 3, 1);
    assert_int_equal(r.runs[FACE], 1);
    assert_int_equal(r.runs[CAR], 2); /* each car once: their own objects */
    done(&r);
}

static void test_a_face_that_left_is_a_new_object_when_it_is_back(void **state) {
    (void)state;
    rig_t r = rig(1);
    const osp_track_box_t face = {100, 100, 160, 170};
    for (int f = 0; f < 10; f++) one_face(&r, face, 1);
    for (int f = 0; f < 40; f++) frame(&r, NULL, NULL, 0, 1); /* gone: its track removed */
    for (int f = 0; f < 10; f++) one_face(&r, face, 1);
    assert_int_equal(r.runs[FACE], 2);
    done(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_named_face_runs_its_steps_once),
        cmocka_unit_test(test_a_face_walking_across_is_met_where_it_is_expected),
        cmocka_unit_test(test_an_unknown_face_is_tried_again_a_few_times),
        cmocka_unit_test(test_a_face_coming_closer_is_run_again),
        cmocka_unit_test(test_another_label_where_a_face_is_settled_runs),
        cmocka_unit_test(test_a_face_that_left_is_a_new_object_when_it_is_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
