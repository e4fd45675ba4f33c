/* The face library (src/faces/faces.c) on real SQLite files: made, filled,
 * matched, listed, emptied; and every file that is not one refused. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "faces/faces.h"

static char dir[64];

static int setup(void **state) {
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/osp-faces-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void path_of(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", dir, name);
}

/* A unit vector along axis k of 4, turned by angle toward axis k+1. */
static void unit(float v[4], int k, float angle) {
    memset(v, 0, 4 * sizeof *v);
    v[k] = cosf(angle);
    v[(k + 1) % 4] = sinf(angle);
}

static void names(void *arg, const char *name, int n, int dim) {
    char *out = arg;
    snprintf(out + strlen(out), 256 - strlen(out), "%s:%d:%d;", name, n, dim);
}

static void test_add_match_list_remove(void **state) {
    (void)state;
    char path[128], err[512];
    path_of(path, sizeof path, "sub/dir/faces.db"); /* its folders are made */
    osp_faces_t *f = NULL;
    assert_int_equal(osp_faces_open(path, 1, &f, err, sizeof err), 0);
    float a[4], b[4], q[4];
    unit(a, 0, 0);
    unit(b, 2, 0);
    assert_int_equal(osp_faces_add(f, "alice", a, 4, "a.jpg", err, sizeof err), 0);
    unit(a, 0, 0.2f);
    assert_int_equal(osp_faces_add(f, "alice", a, 4, "a2.jpg", err, sizeof err), 0);
    assert_int_equal(osp_faces_add(f, "bob", b, 4, "b.jpg", err, sizeof err), 0);
    osp_faces_close(f);

    assert_int_equal(osp_faces_open(path, 0, &f, err, sizeof err), 0);
    assert_int_equal(osp_faces_load(f, err, sizeof err), 0);
    assert_int_equal(osp_faces_count(f), 3);
    const char *name;
    float score;
    unit(q, 0, 0.25f); /* nearest alice's second: cos 0.05 */
    osp_faces_match(f, q, 4, &name, &score);
    assert_string_equal(name, "alice");
    assert_true(fabsf(score - cosf(0.05f)) < 1e-5f);
    unit(q, 2, 0.1f);
    osp_faces_match(f, q, 4, &name, &score);
    assert_string_equal(name, "bob");
    osp_faces_match(f, q, 3, &name, &score); /* another size: no match */
    assert_null(name);

    char listed[256] = "";
    assert_int_equal(osp_faces_list(f, names, listed, err, sizeof err), 0);
    assert_string_equal(listed, "alice:2:4;bob:1:4;");
    assert_int_equal(osp_faces_remove(f, "alice", err, sizeof err), 2);
    assert_int_equal(osp_faces_remove(f, "alice", err, sizeof err), 0);
    listed[0] = '\0';
    assert_int_equal(osp_faces_list(f, names, listed, err, sizeof err), 0);
    assert_string_equal(listed, "bob:1:4;");
    osp_faces_close(f);
}

static void test_bad_names_and_vectors(void **state) {
    (void)state;
    char path[128], err[512];
    path_of(path, sizeof path, "bad.db");
    osp_faces_t *f = NULL;
    assert_int_equal(osp_faces_open(path, 1, &f, err, sizeof err), 0);
    float v[4] = {1, 0, 0, 0};
    assert_int_equal(osp_faces_add(f, "", v, 4, "", err, sizeof err), OSP_FACES_EINVAL);
    assert_int_equal(osp_faces_add(f, "a\nb", v, 4, "", err, sizeof err), OSP_FACES_EINVAL);
    char longname[80];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(osp_faces_add(f, longname, v, 4, "", err, sizeof err), OSP_FACES_EINVAL);
    assert_int_equal(osp_faces_add(f, "a", v, 0, "", err, sizeof err), OSP_FACES_EINVAL);
    v[1] = NAN;
    assert_int_equal(osp_faces_add(f, "a", v, 4, "", err, sizeof err), OSP_FACES_EINVAL);
    osp_faces_close(f);
}

static void test_files_that_are_not_libraries(void **state) {
    (void)state;
    char path[128], err[512];
    osp_faces_t *f = NULL;
    path_of(path, sizeof path, "missing.db");
    assert_int_equal(osp_faces_open(path, 0, &f, err, sizeof err), OSP_FACES_EFILE);
    assert_non_null(strstr(err, "cannot open face library"));
    assert_int_equal(access(path, F_OK), -1); /* not made when not asked */

    path_of(path, sizeof path, "text.db");
    FILE *t = fopen(path, "w");
    fputs("these are not the faces you are looking for, not at all, no\n", t);
    fclose(t);
    assert_int_equal(osp_faces_open(path, 1, &f, err, sizeof err), OSP_FACES_EFILE);
    assert_non_null(strstr(err, "is not a face library"));
    assert_null(f);

    path_of(path, sizeof path, "other.db"); /* SQLite, of something else */
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(osp_faces_open(path, 1, &f, err, sizeof err), OSP_FACES_EFILE);
    assert_non_null(strstr(err, "a SQLite database of something else"));

    assert_int_equal(osp_faces_open(dir, 0, &f, err, sizeof err), OSP_FACES_EFILE);
    assert_non_null(strstr(err, "not a file"));
}

static void test_damaged_rows_are_refused(void **state) {
    (void)state;
    char path[128], err[512];
    path_of(path, sizeof path, "damaged.db");
    osp_faces_t *f = NULL;
    float v[4] = {1, 0, 0, 0};
    assert_int_equal(osp_faces_open(path, 1, &f, err, sizeof err), 0);
    assert_int_equal(osp_faces_add(f, "a", v, 4, "", err, sizeof err), 0);
    osp_faces_close(f);
    static const char *const damage[] = {
        "UPDATE faces SET embedding = x'0000'", /* the wrong size */
        "UPDATE faces SET dim = 100000",        /* a size past the bound */
        "UPDATE faces SET embedding = x'0000c07f000000000000000000000000'", /* NaN */
        "UPDATE faces SET name = ''",
        "INSERT INTO faces(name, dim, embedding) VALUES ('b', 3, x'000000000000000000000000')",
        "DROP TABLE faces",
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        char copy[160], cmd[400];
        snprintf(copy, sizeof copy, "%s/damaged%zu.db", dir, i);
        snprintf(cmd, sizeof cmd, "cp %s %s", path, copy);
        assert_int_equal(system(cmd), 0);
        sqlite3 *db;
        assert_int_equal(sqlite3_open(copy, &db), SQLITE_OK);
        sqlite3_exec(db, damage[i], NULL, NULL, NULL);
        sqlite3_close(db);
        int rc = osp_faces_open(copy, 0, &f, err, sizeof err);
        if (rc == 0) {
            rc = osp_faces_load(f, err, sizeof err);
            if (osp_faces_count(f) != 0)
                fail_msg("damage %zu: %d rows loaded", i, osp_faces_count(f));
            osp_faces_close(f);
        }
        if (rc != OSP_FACES_EFILE) fail_msg("damage %zu: %d", i, rc);
        assert_non_null(strstr(err, "damaged"));
    }
}

static void test_default_path(void **state) {
    (void)state;
    char p[256];
    setenv("XDG_DATA_HOME", "/data", 1);
    osp_faces_default_path(p, sizeof p);
    assert_string_equal(p, "/data/osprey/faces.db");
    setenv("XDG_DATA_HOME", "relative", 1); /* not absolute: ignored, as the spec says */
    setenv("HOME", "/home/u", 1);
    osp_faces_default_path(p, sizeof p);
    assert_string_equal(p, "/home/u/.local/share/osprey/faces.db");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_match_list_remove),
        cmocka_unit_test(test_bad_names_and_vectors),
        cmocka_unit_test(test_files_that_are_not_libraries),
        cmocka_unit_test(test_damaged_rows_are_refused),
        cmocka_unit_test(test_default_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
