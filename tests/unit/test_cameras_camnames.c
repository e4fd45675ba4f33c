/* A camera's names for its objects (src/server/cameras/camnames.c) and
 * the event records that carry them (src/track/events.c): a detection's
 * cascade fields read (a name, "unknown" left out, names inside its
 * objects, a plate's text, fields that do not parse); a real tracker's
 * track keeping the best-scored name, a better one an update; records of
 * events without names as they were (sub_label null, no plate keys). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "server/cameras/camnames.h"
#include "track/events.h"

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
    read_of("\"name\": ", &n); /* does not parse */
    assert_string_equal(n.name, "");
    read_of("\"name\": \"eve\"", &n); /* no score */
    assert_string_equal(n.name, "");
    osp_event_names_read(NULL, 0, &n);
    assert_string_equal(n.name, "");
}

struct rig {
    osp_tracker_t *t;
    osp_events_t *e;
    srv_camnames_t *names;
    double time;
    osp_event_t log[32];
    int n_log;
};

static void setup(struct rig *r, int named) {
    char err[256];
    memset(r, 0, sizeof *r);
    r->time = 1700000000.0;
    assert_int_equal(osp_track_new(NULL, &r->t, err, sizeof err), 0);
    assert_int_equal(osp_events_new("door", LABELS, 2, NULL, NULL, &r->e, err, sizeof err), 0);
    if (named) {
        assert_non_null(r->names = srv_camnames_new());
        osp_events_set_names(r->e, srv_camnames_of, r->names);
    }
}

static void teardown(struct rig *r) {
    osp_events_free(r->e);
    osp_track_free(r->t);
    srv_camnames_free(r->names);
}

/* One frame of one face whose cascade gave members (NULL: nothing). */
static void frame(struct rig *r, const char *members) {
    char err[128];
    osp_track_det_t d = {.box = {100, 100, 140, 150}, .score = 0.9f, .label = 0};
    osp_event_names_t n;
    osp_event_names_read(members, members ? strlen(members) : 0, &n);
    assert_int_equal(osp_track_update(r->t, &d, 1, r->time, err, sizeof err), 0);
    if (r->names) assert_int_equal(srv_camnames_update(r->names, r->t, &d, &n, 1), 0);
    int ne = osp_events_update(r->e, r->t, err, sizeof err);
    assert_true(ne >= 0);
    for (int i = 0; i < ne && r->n_log < 32; i++) r->log[r->n_log++] = *osp_events_at(r->e, i);
    r->time += 0.2;
}

static char *text_of(const struct rig *r, const osp_event_t *ev) {
    osp_jw_t w = {0};
    assert_int_equal(osp_events_write(r->e, ev, &w), 0);
    char *s = strdup(w.buf);
    osp_jw_free(&w);
    return s;
}

static void test_a_track_keeps_its_best_name(void **state) {
    (void)state;
    struct rig r;
    setup(&r, 1);
    for (int f = 0; f < 3; f++) frame(&r, NULL);
    assert_int_equal(r.n_log, 1); /* new, no name yet */
    char *s = text_of(&r, &r.log[0]);
    assert_non_null(strstr(s, "\"sub_label\": null, \"recognized_license_plate\": null, "
                              "\"recognized_license_plate_score\": null, \"score\""));
    free(s);
    frame(&r, "\"name\": \"bob\", \"nameScore\": 0.6");
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
    frame(&r, "\"name\": \"carol\", \"nameScore\": 0.5"); /* less sure: bob stays */
    frame(&r, "\"name\": \"unknown\", \"nameScore\": 0.1");
    frame(&r, NULL);
    assert_int_equal(r.n_log, 2);
    frame(&r, "\"name\": \"dave\", \"nameScore\": 0.9, \"text\": \"KA01AB\", \"textScore\": 0.8");
    assert_int_equal(r.n_log, 3);
    assert_string_equal(r.log[2].after.names.name, "dave");
    assert_string_equal(r.log[2].after.names.plate, "KA01AB");
    s = text_of(&r, &r.log[2]);
    assert_non_null(strstr(s, "\"sub_label\": [\"dave\", 0.9], \"recognized_license_plate\": "
                              "\"KA01AB\", \"recognized_license_plate_score\": 0.8"));
    free(s);
    teardown(&r);
}

static void test_records_without_names_are_as_they_were(void **state) {
    (void)state;
    struct rig r;
    setup(&r, 0);
    for (int f = 0; f < 3; f++) frame(&r, "\"name\": \"bob\", \"nameScore\": 0.6");
    assert_int_equal(r.n_log, 1);
    char *s = text_of(&r, &r.log[0]);
    assert_non_null(strstr(s, "\"label\": \"face\", \"sub_label\": null, \"score\""));
    assert_null(strstr(s, "recognized_license_plate"));
    free(s);
    teardown(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read),
        cmocka_unit_test(test_a_track_keeps_its_best_name),
        cmocka_unit_test(test_records_without_names_are_as_they_were),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
