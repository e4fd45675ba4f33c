/* What a camera keeps of its objects (src/server/cameras/camobjs.c with a
 * real tracker).
 *
 * Its cascade once per object: scripted frames of faces go through what a frame's job
 * does (a detection that is one of the settled objects the camera listed
 * runs no step, osp_steps_is_settled; the others of the step's label do)
 * and the tracker. A face named on its first frame runs its steps once in
 * 60 frames, standing or walking across the picture; one left "unknown"
 * is tried OSP_STEPS_TRIES times, OSP_STEPS_AGAIN_AFTER frames apart; one
 * walking up to the camera is run again as its box grows; a box of
 * another label where a settled face is runs as it always did; a face
 * that leaves and comes back is a new object and is run again.
 *
 * Its objects' names, and the event records that carry them
 * (src/track/events.c): a detection's cascade fields read (a name,
 * "unknown" left out, names inside its objects, a plate's text, fields
 * that do not parse); a real tracker's track keeping the best-scored
 * name, a better one an update; records of events without names as they
 * were (sub_label null, no plate keys). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "server/cameras/camobjs.h"
#include "track/events.h"

#define FACE 1 /* the step's label */
#define CAR 2  /* another: its steps are not the cascade's business here */

typedef struct {
    osp_tracker_t *t;
    srv_camobjs_t *k;
    double time;
    int runs[3]; /* step runs by label */
} rig_t;

static rig_t rig(int judges) {
    rig_t r = {0};
    char err[256];
    assert_int_equal(osp_track_new(NULL, &r.t, err, sizeof err), 0);
    assert_non_null(r.k = srv_camobjs_new(judges));
    return r;
}

static void done(rig_t *r) {
    srv_camobjs_free(r->k);
    osp_track_free(r->t);
}

/* One frame of n boxes (labels[i]; a face is named when sure): the
 * settled list made before it, each box's steps run unless it is a
 * settled object's (cars too: a cascade on every label), then tracked. */
static void frame(rig_t *r, const osp_track_box_t *boxes, const int *labels, int n, int sure) {
    osp_steps_settled_t settled[16];
    int ns = srv_camobjs_settled(r->k, r->t, settled, 16);
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
    assert_int_equal(srv_camobjs_update(r->k, r->t, dets, cls, stepped, names, n), 0);
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

/* One entry holds both: a face named on its first frame is settled and
 * keeps its name; once its track is gone both are forgotten together. */
static void test_a_face_keeps_its_steps_and_its_name_until_it_goes(void **state) {
    (void)state;
    rig_t r = rig(1);
    const osp_track_box_t face = {100, 100, 160, 170};
    for (int f = 0; f < 5; f++) one_face(&r, face, 1);
    assert_int_equal(osp_track_count(r.t), 1);
    uint64_t id = osp_track_at(r.t, 0)->id;
    osp_event_names_t n = {0};
    srv_camobjs_names(r.k, id, &n);
    assert_string_equal(n.name, "alice");
    assert_float_equal(n.name_score, 0.8f, 1e-6);
    osp_steps_settled_t settled[4];
    assert_int_equal(srv_camobjs_settled(r.k, r.t, settled, 4), 1);
    assert_int_equal(settled[0].label, FACE);
    for (int f = 0; f < 40; f++) frame(&r, NULL, NULL, 0, 1); /* gone: its track removed */
    memset(&n, 0, sizeof n);
    srv_camobjs_names(r.k, id, &n);
    assert_string_equal(n.name, "");
    assert_int_equal(srv_camobjs_settled(r.k, r.t, settled, 4), 0);
    done(&r);
}

/* ---- names ---- */

static const char *const LABELS[] = {"face", "car"};

static void read_of(const char *members, osp_event_names_t *n) {
    osp_event_names_read(members, strlen(members), n);
}

static void test_read(void **state) {
    (void)state;
    osp_event_names_t n;
    read_of("\"name\": \"alice\", \"nameScore\": 0.71", &n);
    assert_string_equal(n.name, "alice");
    assert_float_equal(n.name_score, 0.71f, 1e-6);
    assert_string_equal(n.plate, "");
    read_of("\"name\": \"unknown\", \"nameScore\": 0.2", &n);
    assert_string_equal(n.name, "");
    read_of("\"objects\": [{\"label\": \"face\", \"name\": \"bob\", \"nameScore\": 0.6},"
            " {\"label\": \"face\", \"name\": \"carol\", \"nameScore\": 0.8}]",
            &n);
    assert_string_equal(n.name, "carol");
    read_of("\"objects\": [{\"text\": \"KA01\", \"textScore\": 0.5}, {\"text\": \"AB1234\","
            " \"textScore\": 0.93}]",
            &n);
    assert_string_equal(n.plate, "AB1234");
    assert_float_equal(n.plate_score, 0.93f, 1e-6);
    /* a detector step's objects under the member its "as" named: a
     * car's plates, their text read inside them */
    read_of("\"landmarks\": [[1, 2]], \"plates\": [{\"label\": \"text\", \"objects\": [],"
            " \"text\": \"127-RFS\", \"textScore\": 0.91}]",
            &n);
    assert_string_equal(n.plate, "127-RFS");
    assert_float_equal(n.plate_score, 0.91f, 1e-6);
    read_of("\"name\": ", &n); /* does not parse */
    assert_string_equal(n.name, "");
    read_of("\"name\": \"eve\"", &n); /* no score */
    assert_string_equal(n.name, "");
    osp_event_names_read(NULL, 0, &n);
    assert_string_equal(n.name, "");
}

struct named_rig {
    osp_tracker_t *t;
    osp_events_t *e;
    srv_camobjs_t *names;
    double time;
    osp_event_t log[32];
    int n_log;
};

static void named_setup(struct named_rig *r, int named) {
    char err[256];
    memset(r, 0, sizeof *r);
    r->time = 1700000000.0;
    assert_int_equal(osp_track_new(NULL, &r->t, err, sizeof err), 0);
    assert_int_equal(osp_events_new("door", LABELS, 2, NULL, NULL, &r->e, err, sizeof err), 0);
    if (named) {
        assert_non_null(r->names = srv_camobjs_new(1));
        osp_events_set_names(r->e, srv_camobjs_names, r->names);
    }
}

static void named_teardown(struct named_rig *r) {
    osp_events_free(r->e);
    osp_track_free(r->t);
    srv_camobjs_free(r->names);
}

/* One frame of one face whose cascade gave members (NULL: nothing). */
static void named_frame(struct named_rig *r, const char *members) {
    char err[128];
    osp_track_det_t d = {.box = {100, 100, 140, 150}, .score = 0.9f, .label = 0};
    osp_event_names_t n;
    osp_event_names_read(members, members ? strlen(members) : 0, &n);
    assert_int_equal(osp_track_update(r->t, &d, 1, r->time, err, sizeof err), 0);
    int cls = 0, stepped = members != NULL; /* a step ran on it when it gave fields */
    if (r->names)
        assert_int_equal(srv_camobjs_update(r->names, r->t, &d, &cls, &stepped, &n, 1), 0);
    int ne = osp_events_update(r->e, r->t, err, sizeof err);
    assert_true(ne >= 0);
    for (int i = 0; i < ne && r->n_log < 32; i++) r->log[r->n_log++] = *osp_events_at(r->e, i);
    r->time += 0.2;
}

static char *text_of(const struct named_rig *r, const osp_event_t *ev) {
    osp_jw_t w = {0};
    assert_int_equal(osp_events_write(r->e, ev, &w), 0);
    char *s = strdup(w.buf);
    osp_jw_free(&w);
    return s;
}

static void test_a_track_keeps_its_best_name(void **state) {
    (void)state;
    struct named_rig r;
    named_setup(&r, 1);
    for (int f = 0; f < 3; f++) named_frame(&r, NULL);
    assert_int_equal(r.n_log, 1); /* new, no name yet */
    char *s = text_of(&r, &r.log[0]);
    assert_non_null(strstr(s, "\"sub_label\": null, \"recognized_license_plate\": null, "
                              "\"recognized_license_plate_score\": null, \"score\""));
    free(s);
    named_frame(&r, "\"name\": \"bob\", \"nameScore\": 0.6");
    assert_int_equal(r.n_log, 2);
    assert_int_equal(r.log[1].type, OSP_EVENT_UPDATE);
    assert_int_equal(r.log[1].why, OSP_EVENT_NAMES);
    s = text_of(&r, &r.log[1]);
    cJSON *j = cJSON_Parse(s);
    free(s);
    cJSON *before = cJSON_GetObjectItem(j, "before"), *after = cJSON_GetObjectItem(j, "after");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(before, "sub_label")));
    cJSON *sl = cJSON_GetObjectItem(after, "sub_label");
    assert_int_equal(cJSON_GetArraySize(sl), 2);
    assert_string_equal(cJSON_GetArrayItem(sl, 0)->valuestring, "bob");
    assert_float_equal(cJSON_GetArrayItem(sl, 1)->valuedouble, 0.6, 1e-4);
    cJSON_Delete(j);
    named_frame(&r, "\"name\": \"carol\", \"nameScore\": 0.5"); /* less sure: bob stays */
    named_frame(&r, "\"name\": \"unknown\", \"nameScore\": 0.1");
    named_frame(&r, NULL);
    assert_int_equal(r.n_log, 2);
    named_frame(&r, "\"name\": \"dave\", \"nameScore\": 0.9, \"text\": \"KA01AB\", \"textScore\": 0.8");
    assert_int_equal(r.n_log, 3);
    assert_string_equal(r.log[2].after.names.name, "dave");
    assert_string_equal(r.log[2].after.names.plate, "KA01AB");
    s = text_of(&r, &r.log[2]);
    assert_non_null(strstr(s, "\"sub_label\": [\"dave\", 0.9], \"recognized_license_plate\": "
                              "\"KA01AB\", \"recognized_license_plate_score\": 0.8"));
    free(s);
    named_teardown(&r);
}

static void test_records_without_names_are_as_they_were(void **state) {
    (void)state;
    struct named_rig r;
    named_setup(&r, 0);
    for (int f = 0; f < 3; f++) named_frame(&r, "\"name\": \"bob\", \"nameScore\": 0.6");
    assert_int_equal(r.n_log, 1);
    char *s = text_of(&r, &r.log[0]);
    assert_non_null(strstr(s, "\"label\": \"face\", \"sub_label\": null, \"score\""));
    assert_null(strstr(s, "recognized_license_plate"));
    free(s);
    named_teardown(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_named_face_runs_its_steps_once),
        cmocka_unit_test(test_a_face_walking_across_is_met_where_it_is_expected),
        cmocka_unit_test(test_an_unknown_face_is_tried_again_a_few_times),
        cmocka_unit_test(test_a_face_coming_closer_is_run_again),
        cmocka_unit_test(test_another_label_where_a_face_is_settled_runs),
        cmocka_unit_test(test_a_face_that_left_is_a_new_object_when_it_is_back),
        cmocka_unit_test(test_a_face_keeps_its_steps_and_its_name_until_it_goes),
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_a_track_keeps_its_best_name),
        cmocka_unit_test(test_records_without_names_are_as_they_were),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
