/* Event records (src/track/events.c) from a real tracker and zones: the
 * records of a person who walks through a zone and out of the frame, and
 * their JSON; nothing for a rejected track, an end marked false positive
 * for one rejected after its "new"; a parked car's new and stationary
 * update and no end while parked; waiting for the verdict; snapshot
 * updates; the per-label and per-zone counts; an end for every object
 * still tracked when the camera stops; the camera's name. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "track/events.h"

static const char *const LABELS[] = {"person", "bicycle", "car"};
enum { PERSON = 0, CAR = 2 };

/* Times are near 1.7e9 s: cmocka's assert_float_equal, in float, would
 * pass anything within a minute or two. */
#define assert_time(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-4)

/* the middle third of a 640x480 frame */
#define YARD "{\"zones\": {\"yard\": {\"coordinates\": \"0.33,0,0.66,0,0.66,1,0.33,1\"}}}"

struct rig {
    osp_tracker_t *t;
    osp_zones_t *z;
    osp_events_t *e;
    double time;
    int n;               /* records of the last frame */
    osp_event_t log[64]; /* every record so far */
    int n_log;
};

static void setup_with(struct rig *r, const osp_track_params_t *tp, const osp_events_params_t *ep) {
    static osp_zones_cfg_t cfg;
    char err[256];
    memset(r, 0, sizeof *r);
    r->time = 1700000000.0;
    assert_int_equal(osp_zones_cfg_parse(YARD, strlen(YARD), &cfg, err, sizeof err), 0);
    assert_int_equal(osp_zones_new(&cfg, &r->z, err, sizeof err), 0);
    assert_int_equal(osp_track_new(tp, &r->t, err, sizeof err), 0);
    assert_int_equal(osp_events_new("front_door", LABELS, 3, r->z, ep, &r->e, err, sizeof err), 0);
}

static void setup(struct rig *r, const osp_events_params_t *ep) { setup_with(r, NULL, ep); }

static void teardown(struct rig *r) {
    osp_events_free(r->e);
    osp_zones_free(r->z);
    osp_track_free(r->t);
}

static void frame(struct rig *r, const osp_track_det_t *d, int n) {
    char err[128];
    assert_int_equal(osp_track_update(r->t, d, n, r->time, err, sizeof err), 0);
    assert_int_equal(osp_zones_update(r->z, r->t, 640, 480, LABELS, 3, err, sizeof err), 0);
    r->n = osp_events_update(r->e, r->t, err, sizeof err);
    assert_true(r->n >= 0);
    for (int i = 0; i < r->n; i++) {
        assert_true(r->n_log < 64);
        r->log[r->n_log++] = *osp_events_at(r->e, i);
    }
    r->time += 0.2;
}

static osp_track_det_t person(float x, float score) {
    return (osp_track_det_t){.box = {x - 25, 200, x + 25, 400}, .score = score, .label = PERSON};
}

static cJSON *json_of(const struct rig *r, const osp_event_t *ev) {
    osp_jw_t w = {0};
    assert_int_equal(osp_events_write(r->e, ev, &w), 0);
    cJSON *j = cJSON_Parse(w.buf);
    assert_non_null(j);
    osp_jw_free(&w);
    return j;
}

static cJSON *at(cJSON *j, const char *a, const char *b) {
    cJSON *v = cJSON_GetObjectItemCaseSensitive(j, a);
    if (b) v = cJSON_GetObjectItemCaseSensitive(v, b);
    assert_non_null(v);
    return v;
}

/* The names in a JSON list of zones, comma-joined. */
static const char *names(cJSON *list) {
    static char buf[128];
    buf[0] = '\0';
    for (cJSON *e = list->child; e; e = e->next) {
        if (buf[0]) strcat(buf, ",");
        strcat(buf, e->valuestring);
    }
    return buf;
}

static void test_walk_through_a_zone_and_out(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    /* from x = 100 to 600, 20 px a frame: the yard is x 211-422 */
    for (float x = 100; x <= 600; x += 20) {
        osp_track_det_t d = person(x, 0.8f);
        frame(&r, &d, 1);
    }
    for (int f = 0; f < 31; f++) frame(&r, NULL, 0); /* gone for 31 frames: removed */
    assert_int_equal(r.n_log, 4);
    assert_int_equal(r.log[0].type, OSP_EVENT_NEW);
    assert_int_equal(r.log[1].type, OSP_EVENT_UPDATE);
    assert_int_equal(r.log[1].why, OSP_EVENT_ZONES);
    assert_int_equal(r.log[1].before.current_zones, 0);
    assert_int_equal(r.log[1].after.current_zones, 1);
    assert_int_equal(r.log[2].type, OSP_EVENT_UPDATE);
    assert_int_equal(r.log[2].after.current_zones, 0);
    assert_int_equal(r.log[2].after.n_entered, 1);
    assert_int_equal(r.log[3].type, OSP_EVENT_END);
    for (int i = 0; i < 4; i++) assert_int_equal(r.log[i].after.id, 1);

    /* the "new": before and after alike, Frigate's fields */
    cJSON *j = json_of(&r, &r.log[0]);
    assert_string_equal(at(j, "type", NULL)->valuestring, "new");
    assert_string_equal(at(j, "after", "id")->valuestring, "1700000000.000000-1");
    assert_string_equal(at(j, "after", "camera")->valuestring, "front_door");
    assert_string_equal(at(j, "after", "label")->valuestring, "person");
    assert_true(cJSON_IsNull(at(j, "after", "region")));
    assert_true(cJSON_IsNull(at(j, "after", "end_time")));
    assert_true(cJSON_IsFalse(at(j, "after", "false_positive")));
    assert_true(cJSON_IsFalse(at(j, "after", "stationary")));
    assert_float_equal(at(j, "after", "score")->valuedouble, 0.8, 1e-6);
    assert_time(at(j, "after", "start_time")->valuedouble, 1700000000.0);
    assert_time(at(j, "after", "frame_time")->valuedouble, 1700000000.4);
    assert_int_equal(cJSON_GetArraySize(at(j, "after", "box")), 4);
    assert_int_equal(at(j, "after", "area")->valueint, 50 * 200);
    assert_float_equal(at(at(j, "after", "snapshot"), "score", NULL)->valuedouble, 0.8, 1e-6);
    assert_int_equal(cJSON_GetArraySize(at(at(j, "after", "snapshot"), "box", NULL)), 4);
    assert_string_equal(at(j, "after", "verdict")->valuestring, "unverified");
    assert_int_equal(at(j, "after", "track_id")->valueint, 1);
    assert_string_equal(at(j, "before", "id")->valuestring, "1700000000.000000-1");
    cJSON_Delete(j);
    /* the same record with another spelling of the labels: only "label" differs */
    {
        static const char *const OTHER[] = {"PERSON"};
        osp_jw_t w = {0}, plain = {0};
        assert_int_equal(osp_events_write_named(r.e, &r.log[0], OTHER, 1, &w), 0);
        assert_int_equal(osp_events_write(r.e, &r.log[0], &plain), 0);
        j = cJSON_Parse(w.buf);
        assert_string_equal(at(j, "after", "label")->valuestring, "PERSON");
        assert_string_equal(at(j, "before", "label")->valuestring, "PERSON");
        cJSON_Delete(j);
        assert_int_equal(w.len, plain.len); /* "PERSON" for "person": nothing else moved */
        const char *p = strstr(w.buf, "PERSON"), *q = strstr(plain.buf, "person");
        assert_int_equal(p - w.buf, q - plain.buf);
        osp_jw_free(&w);
        osp_jw_free(&plain);
    }

    j = json_of(&r, &r.log[1]);
    assert_string_equal(at(j, "type", NULL)->valuestring, "update");
    assert_string_equal(names(at(j, "before", "current_zones")), "");
    assert_string_equal(names(at(j, "after", "current_zones")), "yard");
    assert_string_equal(names(at(j, "after", "entered_zones")), "yard");
    cJSON_Delete(j);
    j = json_of(&r, &r.log[2]);
    assert_string_equal(names(at(j, "before", "current_zones")), "yard");
    assert_string_equal(names(at(j, "after", "current_zones")), "");
    assert_string_equal(names(at(j, "after", "entered_zones")), "yard");
    cJSON_Delete(j);
    /* the end: when it was last seen (frame 25) */
    j = json_of(&r, &r.log[3]);
    assert_string_equal(at(j, "type", NULL)->valuestring, "end");
    assert_time(at(j, "after", "end_time")->valuedouble, 1700000000.0 + 25 * 0.2);
    assert_true(cJSON_IsNull(at(j, "before", "end_time")));
    assert_true(cJSON_IsFalse(at(j, "after", "false_positive")));
    cJSON_Delete(j);
    /* and nothing after the end */
    for (int f = 0; f < 3; f++) frame(&r, NULL, 0);
    assert_int_equal(r.n_log, 4);
    teardown(&r);
}

static void test_rejected_makes_no_record(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    osp_track_det_t d = person(300, 0.9f);
    frame(&r, &d, 1);
    uint64_t ids[2];
    assert_int_equal(osp_track_needs_look(r.t, ids, 2), 1);
    assert_int_equal(osp_track_set_verdict(r.t, ids[0], OSP_TRACK_REJECTED, 0.2f), 0);
    for (int f = 0; f < 20; f++) frame(&r, &d, 1);
    for (int f = 0; f < 40; f++) frame(&r, NULL, 0);
    assert_int_equal(r.n_log, 0);
    const osp_events_count_t *c;
    assert_int_equal(osp_events_counts(r.e, &c), 0);
    teardown(&r);
}

static void test_rejected_after_new_ends_as_false_positive(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    osp_track_det_t d = person(100, 0.9f);
    for (int f = 0; f < 5; f++) frame(&r, &d, 1);
    assert_int_equal(r.n_log, 1);
    assert_int_equal(osp_track_set_verdict(r.t, 1, OSP_TRACK_REJECTED, 0.1f), 0);
    frame(&r, &d, 1);
    assert_int_equal(r.n_log, 2);
    assert_int_equal(r.log[1].type, OSP_EVENT_END);
    assert_true(r.log[1].after.false_positive);
    assert_time(r.log[1].after.end_time, r.time - 0.2);
    cJSON *j = json_of(&r, &r.log[1]);
    assert_true(cJSON_IsTrue(at(j, "after", "false_positive")));
    assert_string_equal(at(j, "after", "verdict")->valuestring, "rejected");
    cJSON_Delete(j);
    for (int f = 0; f < 10; f++) frame(&r, &d, 1);
    assert_int_equal(r.n_log, 2);
    teardown(&r);
}

static void test_parked_car(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    osp_track_det_t d = {.box = {400, 300, 600, 420}, .score = 0.9f, .label = CAR};
    for (int f = 0; f < 60; f++) frame(&r, &d, 1);
    /* unseen for a minute (300 frames), then seen again */
    for (int f = 0; f < 300; f++) frame(&r, NULL, 0);
    for (int f = 0; f < 10; f++) frame(&r, &d, 1);
    assert_int_equal(r.n_log, 2);
    assert_int_equal(r.log[0].type, OSP_EVENT_NEW);
    assert_int_equal(r.log[1].type, OSP_EVENT_UPDATE);
    assert_int_equal(r.log[1].why, OSP_EVENT_STATIONARY);
    assert_false(r.log[1].before.stationary);
    assert_true(r.log[1].after.stationary);
    cJSON *j = json_of(&r, &r.log[1]);
    assert_true(cJSON_IsTrue(at(j, "after", "stationary")));
    assert_true(cJSON_IsFalse(at(j, "after", "active")));
    assert_string_equal(at(j, "after", "label")->valuestring, "car");
    cJSON_Delete(j);
    const osp_events_count_t *c;
    assert_int_equal(osp_events_counts(r.e, &c), 1);
    assert_int_equal(c[0].zone, -1);
    assert_int_equal(c[0].label, CAR);
    assert_int_equal(c[0].count, 1);
    assert_int_equal(c[0].active, 0);
    teardown(&r);
}

static void test_wait_for_verdict(void **state) {
    (void)state;
    struct rig r;
    osp_events_params_t p;
    osp_events_params_default(&p);
    p.wait_for_verdict = 1;
    setup(&r, &p);
    osp_track_det_t d = person(100, 0.9f);
    for (int f = 0; f < 10; f++) frame(&r, &d, 1);
    assert_int_equal(r.n_log, 0);
    assert_int_equal(osp_track_set_verdict(r.t, 1, OSP_TRACK_VERIFIED, 0.9f), 0);
    frame(&r, &d, 1);
    assert_int_equal(r.n_log, 1);
    assert_int_equal(r.log[0].type, OSP_EVENT_NEW);
    assert_int_equal(r.log[0].after.verdict, OSP_TRACK_VERIFIED);
    teardown(&r);
}

static void test_snapshot_updates(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    osp_track_det_t d = person(100, 0.6f);
    for (int f = 0; f < 4; f++) frame(&r, &d, 1);
    assert_int_equal(r.n_log, 1);
    d.score = 0.63f; /* below the 0.05 gain: nothing */
    frame(&r, &d, 1);
    assert_int_equal(r.n_log, 1);
    d.score = 0.66f; /* 0.06 above the last record's */
    frame(&r, &d, 1);
    assert_int_equal(r.n_log, 2);
    assert_int_equal(r.log[1].why, OSP_EVENT_SNAPSHOT);
    assert_float_equal(r.log[1].after.snap_score, 0.66f, 1e-6);
    assert_time(r.log[1].after.snap_time, r.time - 0.2);
    d.score = 0.5f; /* lower: the snapshot stays */
    frame(&r, &d, 1);
    assert_int_equal(r.n_log, 2);
    teardown(&r);
}

static const osp_events_count_t *find(struct rig *r, int zone, int label, int *n) {
    const osp_events_count_t *c;
    *n = osp_events_counts(r->e, &c);
    for (int i = 0; i < *n; i++)
        if (c[i].zone == zone && c[i].label == label) return &c[i];
    return NULL;
}

static void test_counts(void **state) {
    (void)state;
    struct rig r;
    osp_track_params_t tp;
    osp_track_params_default(&tp);
    tp.parked_lost_seconds = 0.9; /* they stand still: parked after 10 frames */
    setup_with(&r, &tp, NULL);
    osp_track_det_t d[3] = {person(100, 0.9f),
                            person(300, 0.8f),
                            {.box = {500, 300, 620, 400}, .score = 0.7f, .label = CAR}};
    int n;
    for (int f = 0; f < 5; f++) frame(&r, d, 3);
    const osp_events_count_t *c = find(&r, -1, PERSON, &n);
    assert_int_equal(n, 3); /* camera: person, car; yard: person */
    assert_int_equal(c->count, 2);
    assert_int_equal(c->active, 2);
    assert_int_equal(find(&r, -1, CAR, &n)->count, 1);
    assert_int_equal(find(&r, 0, PERSON, &n)->count, 1);
    assert_null(find(&r, 0, CAR, &n));
    frame(&r, d, 3);
    assert_false(find(&r, -1, PERSON, &n)->changed);
    /* the first person leaves */
    for (int f = 0; f < 31; f++) frame(&r, d + 1, 2); /* not parked yet: 31 frames */
    c = find(&r, -1, PERSON, &n);
    assert_int_equal(c->count, 1);
    assert_true(c->changed);
    /* everyone leaves: the counts fall to 0 once, then are gone */
    for (int f = 0; f < 5; f++) frame(&r, NULL, 0); /* 1 s unseen */
    c = find(&r, 0, PERSON, &n);
    assert_non_null(c);
    assert_int_equal(c->count, 0);
    assert_true(c->changed);
    assert_int_equal(n, 3);
    frame(&r, NULL, 0);
    find(&r, 0, PERSON, &n);
    assert_int_equal(n, 0);
    teardown(&r);
}

/* The camera stops with three objects tracked, one only just seen: each
 * gets its end at the last frame's time, the counts fall to 0, and none
 * is reported again. */
static void test_end_all_at_the_stop(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    osp_track_det_t d[3] = {person(100, 0.9f),
                            person(300, 0.8f),
                            {.box = {500, 300, 620, 400}, .score = 0.7f, .label = CAR}};
    for (int f = 0; f < 5; f++) frame(&r, d, 3);
    frame(&r, d, 1); /* the last frame sees only the first person */
    double last = r.time - 0.2;
    int before = r.n_log;
    assert_int_equal(before, 3);
    char err[128];
    int n = osp_events_end_all(r.e, r.t, err, sizeof err);
    assert_int_equal(n, 3);
    for (int i = 0; i < n; i++) {
        const osp_event_t *ev = osp_events_at(r.e, i);
        assert_int_equal(ev->type, OSP_EVENT_END);
        assert_time(ev->after.end_time, last);
        assert_false(ev->after.false_positive);
        cJSON *j = json_of(&r, ev);
        assert_string_equal(cJSON_GetObjectItem(j, "type")->valuestring, "end");
        assert_time(at(j, "after", "end_time")->valuedouble, last);
        assert_true(cJSON_IsFalse(at(j, "after", "false_positive")));
        cJSON_Delete(j);
    }
    int k;
    const osp_events_count_t *c = find(&r, -1, PERSON, &k);
    assert_non_null(c);
    assert_int_equal(c->count, 0);
    assert_true(c->changed);
    assert_int_equal(find(&r, 0, PERSON, &k)->count, 0);
    assert_int_equal(find(&r, -1, CAR, &k)->count, 0);
    assert_int_equal(osp_events_end_all(r.e, r.t, err, sizeof err), 0);
    frame(&r, d, 3); /* the same objects again: already ended */
    assert_int_equal(r.n, 0);
    teardown(&r);
}

static void test_camera_name_and_labels(void **state) {
    (void)state;
    osp_events_t *e;
    char err[128], buf[32];
    assert_int_equal(osp_events_new("front/door", LABELS, 3, NULL, NULL, &e, err, sizeof err),
                     OSP_EVENTS_EINVAL);
    assert_non_null(strstr(err, "camera"));
    assert_int_equal(osp_events_new("", LABELS, 3, NULL, NULL, &e, err, sizeof err),
                     OSP_EVENTS_EINVAL);
    assert_int_equal(osp_events_new("cam", NULL, 3, NULL, NULL, &e, err, sizeof err),
                     OSP_EVENTS_EINVAL);
    assert_int_equal(osp_events_new("cam", LABELS, 3, NULL, NULL, &e, err, sizeof err), 0);
    assert_string_equal(osp_events_label(e, 2, buf, sizeof buf), "car");
    assert_string_equal(osp_events_label(e, 7, buf, sizeof buf), "7");
    osp_events_free(e);
}

/* The id --snapshots names a picture by is the records' "id" (checked
 * against a record in test_walk_through_a_zone_and_out). */
static void test_event_id(void **state) {
    (void)state;
    char buf[48];
    assert_string_equal(osp_events_id(1700000000.0, 1, buf, sizeof buf), "1700000000.000000-1");
    assert_string_equal(osp_events_id(0.25, 18446744073709551615u, buf, sizeof buf),
                        "0.250000-18446744073709551615");
}

/* A box one pixel wide whose sides fall on halves: rounded to the nearest
 * even pixel both sides would be 302; the record's box keeps its pixel. */
static void test_box_a_pixel_wide_keeps_it(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    for (int f = 0; f < 5 && r.n_log == 0; f++) {
        osp_track_det_t d = {.box = {301.5f, 201.5f, 302.5f, 202.5f}, .score = 0.8f, .label = PERSON};
        frame(&r, &d, 1);
    }
    assert_int_equal(r.n_log, 1);
    assert_int_equal(r.log[0].type, OSP_EVENT_NEW);
    cJSON *j = json_of(&r, &r.log[0]);
    cJSON *b = at(j, "after", "box");
    int x1 = cJSON_GetArrayItem(b, 0)->valueint, y1 = cJSON_GetArrayItem(b, 1)->valueint;
    int x2 = cJSON_GetArrayItem(b, 2)->valueint, y2 = cJSON_GetArrayItem(b, 3)->valueint;
    assert_int_equal(x2 - x1, 1);
    assert_int_equal(y2 - y1, 1);
    assert_true(x1 >= 301 && x2 <= 303 && y1 >= 201 && y2 <= 203);
    cJSON_Delete(j);
    teardown(&r);
}

/* A person who walks away shrinks as they go; once out of sight their
 * track is predicted on, shrinking still, until it is given up. The "end"
 * record has the box they were last seen in, not the prediction's. */
static void test_end_has_the_box_last_seen(void **state) {
    (void)state;
    struct rig r;
    setup(&r, NULL);
    float h = 200;
    for (int f = 0; f < 20; f++, h -= 6) { /* 200 px tall down to 86 */
        osp_track_det_t d = {.box = {100, 300 - h, 100 + h / 3, 300}, .score = 0.8f, .label = PERSON};
        frame(&r, &d, 1);
    }
    h += 6; /* the last box seen */
    int ends = 0;
    for (int f = 0; f < 40 && !ends; f++) {
        frame(&r, NULL, 0);
        for (int i = 0; i < r.n; i++) ends += osp_events_at(r.e, i)->type == OSP_EVENT_END;
    }
    assert_int_equal(ends, 1);
    cJSON *j = json_of(&r, &r.log[r.n_log - 1]);
    cJSON *b = at(j, "after", "box");
    assert_int_equal(cJSON_GetArrayItem(b, 0)->valueint, 100);
    assert_int_equal(cJSON_GetArrayItem(b, 1)->valueint, (int)(300 - h));
    assert_int_equal(cJSON_GetArrayItem(b, 3)->valueint, 300);
    assert_false(cJSON_IsTrue(at(j, "after", "false_positive")));
    cJSON_Delete(j);
    teardown(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_through_a_zone_and_out),
        cmocka_unit_test(test_rejected_makes_no_record),
        cmocka_unit_test(test_rejected_after_new_ends_as_false_positive),
        cmocka_unit_test(test_parked_car),
        cmocka_unit_test(test_wait_for_verdict),
        cmocka_unit_test(test_snapshot_updates),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_end_all_at_the_stop),
        cmocka_unit_test(test_camera_name_and_labels),
        cmocka_unit_test(test_event_id),
        cmocka_unit_test(test_box_a_pixel_wide_keeps_it),
        cmocka_unit_test(test_end_has_the_box_last_seen),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
