/* model/paths: confinement inside the model roots, one answer for every
 * refusal, and opens that never block or read without a bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/paths.h"

static char g_dir[64];

static void put(const char *rel, const char *text) {
    char p[256];
    snprintf(p, sizeof p, "%s/%s", g_dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void at(char *out, size_t n, const char *rel) { snprintf(out, n, "%s/%s", g_dir, rel); }

static int setup(void **s) {
    (void)s;
    snprintf(g_dir, sizeof g_dir, "/tmp/osp-paths-XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    char p[256];
    at(p, sizeof p, "root");
    mkdir(p, 0700);
    at(p, sizeof p, "root2");
    mkdir(p, 0700);
    at(p, sizeof p, "outside");
    mkdir(p, 0700);
    put("root/model.onnx", "m");
    put("outside/secret", "s");
    put("root2/x", "x");
    char target[256];
    at(target, sizeof target, "outside/secret");
    at(p, sizeof p, "root/escape");
    assert_int_equal(symlink(target, p), 0);
    at(p, sizeof p, "root/fifo");
    assert_int_equal(mkfifo(p, 0600), 0);
    return 0;
}

static int teardown(void **s) {
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_confine(void **s) {
    (void)s;
    osp_paths_t *p = osp_paths_new();
    char dir[256], path[256], out[512], err[512], err2[512];
    at(dir, sizeof dir, "root");
    assert_int_equal(osp_paths_add(p, dir, err, sizeof err), 0);
    assert_int_equal(osp_paths_add(p, dir, err, sizeof err), 0); /* once only */
    assert_int_equal(osp_paths_count(p), 1);
    at(path, sizeof path, "root2/../root/model.onnx");
    assert_int_equal(osp_paths_confine(p, path, "model file", out, sizeof out, err, sizeof err), 0);
    at(path, sizeof path, "root/model.onnx");
    char real[512];
    assert_non_null(realpath(path, real));
    assert_string_equal(out, real);

    /* outside, through a link, missing, a sibling sharing the prefix: the
     * same words, naming only what the peer sent */
    const char *refused[] = {"outside/secret", "root/escape", "root/missing", "root2/x", ".."};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        at(path, sizeof path, refused[i]);
        assert_int_equal(osp_paths_confine(p, path, "model file", out, sizeof out, err, sizeof err),
                         OSP_PATHS_ENOENT);
        snprintf(err2, sizeof err2, "model file not found or not allowed: %s", path);
        assert_string_equal(err, err2);
    }
    assert_int_equal(osp_paths_confine(p, "/etc/passwd", "x", out, sizeof out, err, sizeof err),
                     OSP_PATHS_ENOENT);
    assert_int_equal(osp_paths_confine(NULL, path, "x", out, sizeof out, err, sizeof err),
                     OSP_PATHS_ENOENT);

    /* the directory of a file; a missing directory is said so */
    at(path, sizeof path, "outside/secret");
    assert_int_equal(osp_paths_add_dir_of(p, path, err, sizeof err), 0);
    assert_int_equal(osp_paths_count(p), 2);
    assert_int_equal(osp_paths_confine(p, path, "x", out, sizeof out, err, sizeof err), 0);
    assert_int_equal(osp_paths_add(p, "/nonexistent-osp-dir", err, sizeof err), OSP_PATHS_ENOENT);
    osp_paths_free(p);
}

static void test_open(void **s) {
    (void)s;
    char path[256], err[512];
    uint64_t size = 0;
    at(path, sizeof path, "root/model.onnx");
    int fd = osp_paths_open(path, "model file", 10, &size, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(size, 1);
    close(fd);
    /* a link is followed to a regular file (the stdio host's paths) */
    at(path, sizeof path, "root/escape");
    fd = osp_paths_open(path, "labels file", 10, NULL, err, sizeof err);
    assert_true(fd >= 0);
    close(fd);
    /* a FIFO is refused at once, not waited on; so is a device */
    at(path, sizeof path, "root/fifo");
    assert_int_equal(osp_paths_open(path, "model file", 10, NULL, err, sizeof err), OSP_PATHS_EKIND);
    assert_non_null(strstr(err, "is not a regular file"));
    assert_int_equal(osp_paths_open("/dev/zero", "labels file", 10, NULL, err, sizeof err),
                     OSP_PATHS_EKIND);
    assert_int_equal(osp_paths_open(g_dir, "labels file", 10, NULL, err, sizeof err), OSP_PATHS_EKIND);
    /* over the cap */
    put("root/big", "0123456789abc");
    at(path, sizeof path, "root/big");
    assert_int_equal(osp_paths_open(path, "labels file", 10, NULL, err, sizeof err), OSP_PATHS_EBIG);
    assert_non_null(strstr(err, "larger than 10 bytes"));
    at(path, sizeof path, "root/none");
    assert_int_equal(osp_paths_open(path, "labels file", 10, NULL, err, sizeof err), OSP_PATHS_ENOENT);
}

/* the name a model takes from its file: config.c and the watchdog's
 * messages spell it alike */
static void test_stem(void **s) {
    (void)s;
    static const char *const cases[][2] = {
        {"/m/ssd.v2.onnx", "ssd.v2"},
        {"yolo.onnx", "yolo"},
        {"/m/.onnx", ".onnx"}, /* a leading dot is no extension */
        {"/m.d/model", "model"},
        {"/m/", ""},
        {"/m/a-very-long-model-name.onnx", "a-very-long-mod"}, /* cut to fit */
    };
    char out[16];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        osp_paths_stem(cases[i][0], out, sizeof out);
        assert_string_equal(out, cases[i][1]);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_confine),
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_stem),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
