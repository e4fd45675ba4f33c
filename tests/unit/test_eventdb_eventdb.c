/* eventdb: the cameras' events and line crossings in a real SQLite file —
 * written by the one writer, read back by a read-only reader with a filter
 * a peer chose, whose every parameter is checked before it is bound; the
 * crossings bounded apart from the events. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "base/clock.h"
#include "eventdb/eventdb.h"
#include "tmpdir.h"

static void test_parameters_are_checked(void **state) {
    (void)state;
    osp_eventdb_query_t q;
    char err[200];
    osp_eventdb_query_init(&q);
    assert_int_equal(q.limit, OSP_EVENTDB_LIMIT);
    assert_int_equal(osp_eventdb_query_set(&q, "camera", "front-door_2", err, sizeof err), 0);
    assert_string_equal(q.camera, "front-door_2");
    assert_int_equal(osp_eventdb_query_set(&q, "label", "Traffic light", err, sizeof err), 0);
    assert_int_equal(osp_eventdb_query_set(&q, "zone", "porch", err, sizeof err), 0);
    assert_int_equal(osp_eventdb_query_set(&q, "after", "1764780000.5", err, sizeof err), 0);
    assert_true(q.has_after && q.after == 1764780000.5);
    assert_int_equal(osp_eventdb_query_set(&q, "before", "1764790000", err, sizeof err), 0);
    assert_int_equal(osp_eventdb_query_set(&q, "limit", "500", err, sizeof err), 0);
    assert_int_equal(q.limit, 500);
    static const struct {
        const char *key, *value, *says;
    } bad[] = {
        {"camera", "a'; DROP TABLE events; --", "camera must be a name"},
        {"camera", "", "camera must be a name"},
        {"zone", "../x", "zone must be a name"},
        {"label", "", "label must be 1 to 63 bytes"},
        {"label", "a\nb", "label must be 1 to 63 bytes"},
        {"label", "0123456789012345678901234567890123456789012345678901234567890123", "label must be"},
        {"after", "yesterday", "after must be a time"},
        {"after", "1e400", "after must be a time"},
        {"after", "nan", "after must be a time"},
        {"before", "-1", "before must be a time"},
        {"before", " 5", "before must be a time"},
        {"limit", "0", "limit must be a whole number from 1 to 500"},
        {"limit", "501", "limit must be"},
        {"limit", "5.5", "limit must be"},
        {"limit", "99999999999999999999", "limit must be"},
        {"camrea", "door", "unknown parameter \"camrea\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(osp_eventdb_query_set(&q, bad[i].key, bad[i].value, err, sizeof err), -1);
        if (!strstr(err, bad[i].says)) fail_msg("%s=%s: %s", bad[i].key, bad[i].value, err);
    }
    assert_int_equal(osp_eventdb_query_set(&q, "camera", NULL, err, sizeof err), -1);
    assert_int_equal(osp_eventdb_query_set(&q, "line", "gate", err, sizeof err), -1);
    assert_non_null(strstr(err, "the parameters are camera, label, zone, after, before and limit"));
}

/* /api/crossings takes camera, line, after, before and limit, by the same
 * rules, and no label or zone. */
static void test_crossings_parameters_are_checked(void **state) {
    (void)state;
    osp_eventdb_query_t q;
    char err[200];
    osp_eventdb_query_init(&q);
    assert_int_equal(osp_eventdb_crossings_set(&q, "camera", "door", err, sizeof err), 0);
    assert_int_equal(osp_eventdb_crossings_set(&q, "line", "front-gate_1", err, sizeof err), 0);
    assert_string_equal(q.line, "front-gate_1");
    assert_int_equal(osp_eventdb_crossings_set(&q, "after", "10", err, sizeof err), 0);
    assert_int_equal(osp_eventdb_crossings_set(&q, "before", "20.5", err, sizeof err), 0);
    assert_true(q.has_after && q.has_before && q.before == 20.5);
    assert_int_equal(osp_eventdb_crossings_set(&q, "limit", "7", err, sizeof err), 0);
    assert_int_equal(q.limit, 7);
    static const struct {
        const char *key, *value, *says;
    } bad[] = {
        {"line", "a b", "line must be a name"},
        {"line", "", "line must be a name"},
        {"camera", "../x", "camera must be a name"},
        {"after", "soon", "after must be a time"},
        {"limit", "501", "limit must be"},
        {"label", "Person", "the parameters are camera, line, after, before and limit"},
        {"zone", "porch", "unknown parameter \"zone\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        assert_int_equal(osp_eventdb_crossings_set(&q, bad[i].key, bad[i].value, err, sizeof err), -1);
        if (!strstr(err, bad[i].says)) fail_msg("%s=%s: %s", bad[i].key, bad[i].value, err);
    }
}

static void test_event_ids(void **state) {
    (void)state;
    assert_true(osp_eventdb_id_ok("1764780000.123456-7"));
    assert_true(osp_eventdb_id_ok("5-1"));
    const char *bad[] = {"",        "-1",   "1-",  "1.2.3-4", "1-2-3", "../1-2",
                         "1-2.jpg", "1 -2", "a-1", "1/-2",    NULL};
    for (int i = 0; bad[i]; i++)
        if (osp_eventdb_id_ok(bad[i])) fail_msg("%s taken for an id", bad[i]);
    assert_false(osp_eventdb_id_ok(NULL));
    char longest[200];
    snprintf(longest, sizeof longest, "1-%0*d", OSP_EVENTDB_ID_MAX - 3, 1);
    assert_true(osp_eventdb_id_ok(longest));
    snprintf(longest, sizeof longest, "1-%0*d", OSP_EVENTDB_ID_MAX - 2, 1);
    assert_false(osp_eventdb_id_ok(longest));
}

static void put(osp_eventdb_t *db, const char *id, const char *camera, const char *label,
                double start, const char *zones) {
    char rec[512];
    snprintf(rec, sizeof rec,
             "{\"type\":\"update\",\"before\":{},\"after\":{\"id\":\"%s\",\"camera\":\"%s\","
             "\"label\":\"%s\",\"entered_zones\":%s}}",
             id, camera, label, zones);
    osp_eventdb_put(db, id, camera, label, start, -1, 0.8, rec, strlen(rec));
}

/* The ids of a query's rows, comma-separated. */
static int ids(osp_eventdb_reader_t *r, const osp_eventdb_query_t *q, char *out, size_t cap) {
    osp_jw_t w = {0};
    char err[200];
    int n = osp_eventdb_query(r, q, &w, err, sizeof err);
    if (n < 0) fail_msg("%s", err);
    cJSON *a = cJSON_ParseWithLength(w.buf, w.len);
    assert_non_null(a);
    out[0] = '\0';
    const cJSON *row;
    cJSON_ArrayForEach(row, a) {
        const cJSON *id = cJSON_GetObjectItem(row, "id");
        const cJSON *rec = cJSON_GetObjectItem(row, "record");
        assert_true(cJSON_IsString(id) && cJSON_IsObject(rec));
        assert_true(cJSON_IsArray(cJSON_GetObjectItem(row, "zones")));
        if (out[0]) strncat(out, ",", cap - strlen(out) - 1);
        strncat(out, id->valuestring, cap - strlen(out) - 1);
    }
    cJSON_Delete(a);
    osp_jw_free(&w);
    return n;
}

/* A reader of the database at path, or the test fails. */
static osp_eventdb_reader_t *reader(const char *path) {
    char err[200];
    osp_eventdb_reader_t *r = osp_eventdb_reader_open(path, err, sizeof err);
    if (!r) fail_msg("%s", err);
    return r;
}

/* The ids of every row of the database at path, comma-separated, newest
 * first. */
static int all_ids(const char *path, char *out, size_t cap) {
    osp_eventdb_reader_t *r = reader(path);
    osp_eventdb_query_t q;
    osp_eventdb_query_init(&q);
    int n = ids(r, &q, out, cap);
    osp_eventdb_reader_close(r);
    return n;
}

static void test_written_rows_are_read_by_filter(void **state) {
    (void)state;
    osp_eventdb_cfg_t cfg = {.retain_days = 0, .retain_rows = 0};
    snprintf(cfg.path, sizeof cfg.path, "%s/events.db", g_dir);
    char err[300];
    osp_eventdb_t *db = osp_eventdb_open(&cfg, err, sizeof err);
    if (!db) fail_msg("%s", err);
    put(db, "100.000000-1", "door", "Person", 100, "[\"porch\"]");
    put(db, "200.000000-2", "door", "Car", 200, "[]");
    put(db, "300.000000-3", "yard", "Person", 300, "[\"porch-2\",\"lawn\"]");
    put(db, "400.000000-4", "yard", "Person", 400, "[\"porch\"]");
    put(db, "100.000000-1", "door", "Person", 100, "[\"porch\",\"lawn\"]"); /* an update */
    osp_eventdb_counts_t c;
    for (int i = 0; i < 500; i++) {
        osp_eventdb_counts(db, &c);
        if (c.written == 5) break;
        osp_sleep_ms(10);
    }
    assert_int_equal(c.written, 5);
    /* a reader while the writer runs (WAL: neither waits) */
    char got[512];
    assert_int_equal(all_ids(cfg.path, got, sizeof got), 4);
    assert_string_equal(got, "400.000000-4,300.000000-3,200.000000-2,100.000000-1");
    osp_eventdb_reader_t *r = reader(cfg.path);
    osp_eventdb_query_t q;
    osp_eventdb_query_init(&q);
    osp_eventdb_query_set(&q, "camera", "door", err, sizeof err);
    ids(r, &q, got, sizeof got);
    assert_string_equal(got, "200.000000-2,100.000000-1");
    osp_eventdb_query_init(&q);
    osp_eventdb_query_set(&q, "zone", "porch", err, sizeof err); /* not porch-2 */
    ids(r, &q, got, sizeof got);
    assert_string_equal(got, "400.000000-4,100.000000-1");
    osp_eventdb_query_set(&q, "zone", "lawn", err, sizeof err); /* from the update */
    ids(r, &q, got, sizeof got);
    assert_string_equal(got, "300.000000-3,100.000000-1");
    osp_eventdb_query_init(&q);
    osp_eventdb_query_set(&q, "label", "Person", err, sizeof err);
    osp_eventdb_query_set(&q, "after", "100", err, sizeof err);
    osp_eventdb_query_set(&q, "before", "400", err, sizeof err);
    ids(r, &q, got, sizeof got);
    assert_string_equal(got, "300.000000-3");
    osp_eventdb_query_init(&q);
    osp_eventdb_query_set(&q, "limit", "2", err, sizeof err);
    assert_int_equal(ids(r, &q, got, sizeof got), 2);
    osp_eventdb_query_set(&q, "camera", "nobody", err, sizeof err);
    assert_int_equal(ids(r, &q, got, sizeof got), 0);
    assert_string_equal(got, "");
    assert_int_equal(osp_eventdb_has(r, "300.000000-3", err, sizeof err), 1);
    assert_int_equal(osp_eventdb_has(r, "300.000000-9", err, sizeof err), 0);
    osp_eventdb_reader_close(r);
    osp_eventdb_close(db);
    /* a file that is not there is not made by a reader */
    char missing[300];
    snprintf(missing, sizeof missing, "%s/none.db", g_dir);
    assert_null(osp_eventdb_reader_open(missing, err, sizeof err));
    assert_non_null(strstr(err, "cannot be opened"));
    assert_int_equal(access(missing, F_OK), -1);
}

static void touch(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fclose(f);
}

static int there(const char *name) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return access(p, F_OK) == 0;
}

/* Retention deletes a row's snapshot with the row, and never a file whose
 * name a row's id would make if the id is not an event id's shape. */
static void test_retention_takes_the_snapshots_with_the_rows(void **state) {
    (void)state;
    osp_eventdb_cfg_t cfg = {.retain_days = 0, .retain_rows = 2};
    snprintf(cfg.path, sizeof cfg.path, "%s/kept.db", g_dir);
    snprintf(cfg.snapshots, sizeof cfg.snapshots, "%s", g_dir);
    const char *id[] = {"10.000000-1", "20.000000-2", "30.000000-3", "40.000000-4"};
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s.jpg", id[i]);
        touch(name);
    }
    touch("kept.jpg");
    char err[300];
    osp_eventdb_t *db = osp_eventdb_open(&cfg, err, sizeof err);
    if (!db) fail_msg("%s", err);
    put(db, "kept", "door", "Person", 5, "[]"); /* the oldest, and not an id: its file stays */
    for (int i = 0; i < 4; i++) put(db, id[i], "door", "Person", 10.0 * (i + 1), "[]");
    osp_eventdb_close(db); /* retention runs at the stop */
    assert_false(there("10.000000-1.jpg"));
    assert_false(there("20.000000-2.jpg"));
    assert_true(there("30.000000-3.jpg"));
    assert_true(there("40.000000-4.jpg"));
    assert_true(there("kept.jpg"));
    char got[512];
    assert_int_equal(all_ids(cfg.path, got, sizeof got), 2);
    assert_string_equal(got, "40.000000-4,30.000000-3");
}

/* New bounds apply to the open database at once, not at its next batch
 * of records nor at the stop. */
static void test_new_retention_applies_to_the_open_database(void **state) {
    (void)state;
    osp_eventdb_cfg_t cfg = {.retain_days = 0, .retain_rows = 0};
    snprintf(cfg.path, sizeof cfg.path, "%s/bounds.db", g_dir);
    char err[300], got[512];
    osp_eventdb_t *db = osp_eventdb_open(&cfg, err, sizeof err);
    if (!db) fail_msg("%s", err);
    for (int i = 0; i < 4; i++) {
        char id[32];
        snprintf(id, sizeof id, "%d.000000-%d", 10 * (i + 1), i + 1);
        put(db, id, "door", "Person", 10.0 * (i + 1), "[]");
    }
    osp_eventdb_counts_t k = {0};
    for (int i = 0; i < 500 && k.written < 4; i++, osp_sleep_ms(10)) osp_eventdb_counts(db, &k);
    assert_int_equal(k.written, 4);
    assert_int_equal(all_ids(cfg.path, got, sizeof got), 4);
    osp_eventdb_retain_set(db, 0, 1);
    int n = 4;
    for (int i = 0; i < 500 && n != 1; i++, osp_sleep_ms(10))
        n = all_ids(cfg.path, got, sizeof got);
    assert_int_equal(n, 1);
    assert_string_equal(got, "40.000000-4");
    osp_eventdb_close(db);
}

static void put_crossing(osp_eventdb_t *db, const char *camera, const char *line, const char *dir,
                         uint64_t id, double t) {
    char rec[256];
    snprintf(rec, sizeof rec,
             "{\"kind\":\"crossing\",\"camera\":\"%s\",\"t\":%.3f,\"line\":\"%s\","
             "\"direction\":\"%s\",\"trackId\":%llu,\"label\":\"Person\"}",
             camera, t, line, dir, (unsigned long long)id);
    osp_eventdb_put_crossing(db, camera, line, dir, id, "Person", t, rec, strlen(rec));
}

/* The crossings of a query, "camera/line/direction/trackId@time" each,
 * comma-separated; each row's record is the one written. */
static int crossings(const char *path, const osp_eventdb_query_t *q, char *out, size_t cap) {
    osp_eventdb_reader_t *r = reader(path);
    osp_jw_t w = {0};
    char err[200];
    int n = osp_eventdb_crossings(r, q, &w, err, sizeof err);
    if (n < 0) fail_msg("%s", err);
    cJSON *a = cJSON_ParseWithLength(w.buf, w.len);
    assert_non_null(a);
    assert_int_equal(cJSON_GetArraySize(a), n);
    out[0] = '\0';
    const cJSON *row;
    cJSON_ArrayForEach(row, a) {
        const cJSON *rec = cJSON_GetObjectItem(row, "record");
        assert_true(cJSON_IsObject(rec));
        assert_string_equal(cJSON_GetObjectItem(rec, "kind")->valuestring, "crossing");
        assert_string_equal(cJSON_GetObjectItem(row, "label")->valuestring, "Person");
        double t = cJSON_GetObjectItem(row, "time")->valuedouble;
        assert_true(fabs(cJSON_GetObjectItem(rec, "t")->valuedouble - t) < 1e-3);
        assert_int_equal(cJSON_GetObjectItem(rec, "trackId")->valuedouble,
                         cJSON_GetObjectItem(row, "trackId")->valuedouble);
        char one[160];
        snprintf(one, sizeof one, "%s%s/%s/%s/%d@%g", out[0] ? "," : "",
                 cJSON_GetObjectItem(row, "camera")->valuestring,
                 cJSON_GetObjectItem(row, "line")->valuestring,
                 cJSON_GetObjectItem(row, "direction")->valuestring,
                 (int)cJSON_GetObjectItem(row, "trackId")->valuedouble, t);
        strncat(out, one, cap - strlen(out) - 1);
    }
    cJSON_Delete(a);
    osp_jw_free(&w);
    osp_eventdb_reader_close(r);
    return n;
}

/* Crossings are rows of their own beside the events, by the same writer,
 * read by filter newest first, and bounded apart from the events. */
static void test_crossings_are_rows_of_their_own(void **state) {
    (void)state;
    osp_eventdb_cfg_t cfg = {.retain_days = 0, .retain_rows = 3};
    snprintf(cfg.path, sizeof cfg.path, "%s/crossings.db", g_dir);
    char err[300], got[1024];
    osp_eventdb_t *db = osp_eventdb_open(&cfg, err, sizeof err);
    if (!db) fail_msg("%s", err);
    put(db, "100.000000-1", "door", "Person", 100, "[]");
    put_crossing(db, "door", "gate", "in", 1, 101);
    put_crossing(db, "door", "gate", "out", 1, 105);
    put_crossing(db, "door", "fence", "in", 2, 106);
    put_crossing(db, "yard", "gate", "in", 3, 107);
    osp_eventdb_counts_t k = {0};
    for (int i = 0; i < 500 && k.written < 5; i++, osp_sleep_ms(10)) osp_eventdb_counts(db, &k);
    assert_int_equal(k.written, 5);
    osp_eventdb_query_t q;
    osp_eventdb_query_init(&q);
    assert_int_equal(crossings(cfg.path, &q, got, sizeof got), 4);
    assert_string_equal(got, "yard/gate/in/3@107,door/fence/in/2@106,door/gate/out/1@105,"
                             "door/gate/in/1@101");
    osp_eventdb_crossings_set(&q, "camera", "door", err, sizeof err);
    osp_eventdb_crossings_set(&q, "line", "gate", err, sizeof err);
    assert_int_equal(crossings(cfg.path, &q, got, sizeof got), 2);
    assert_string_equal(got, "door/gate/out/1@105,door/gate/in/1@101");
    osp_eventdb_crossings_set(&q, "after", "101", err, sizeof err);
    assert_int_equal(crossings(cfg.path, &q, got, sizeof got), 1);
    osp_eventdb_query_init(&q);
    osp_eventdb_crossings_set(&q, "before", "106", err, sizeof err);
    osp_eventdb_crossings_set(&q, "limit", "1", err, sizeof err);
    assert_int_equal(crossings(cfg.path, &q, got, sizeof got), 1);
    assert_string_equal(got, "door/gate/out/1@105");
    /* the events are not crossings, nor the crossings events */
    assert_int_equal(all_ids(cfg.path, got, sizeof got), 1);
    assert_string_equal(got, "100.000000-1");
    osp_eventdb_close(db); /* retention at the stop: 3 crossings kept, the one event too */
    osp_eventdb_query_init(&q);
    assert_int_equal(crossings(cfg.path, &q, got, sizeof got), 3);
    assert_string_equal(got, "yard/gate/in/3@107,door/fence/in/2@106,door/gate/out/1@105");
    assert_int_equal(all_ids(cfg.path, got, sizeof got), 1);
    /* by age: every crossing is from 1970, older than a day */
    cfg.retain_days = 1;
    cfg.retain_rows = 0;
    db = osp_eventdb_open(&cfg, err, sizeof err);
    if (!db) fail_msg("%s", err);
    osp_eventdb_close(db);
    assert_int_equal(crossings(cfg.path, &q, got, sizeof got), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameters_are_checked),
        cmocka_unit_test(test_crossings_parameters_are_checked),
        cmocka_unit_test(test_crossings_are_rows_of_their_own),
        cmocka_unit_test(test_event_ids),
        cmocka_unit_test(test_written_rows_are_read_by_filter),
        cmocka_unit_test(test_retention_takes_the_snapshots_with_the_rows),
        cmocka_unit_test(test_new_retention_applies_to_the_open_database),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
