/* Option values: what each parser takes, what it refuses, and the one
 * line a person reads when it refuses (the same for ospreyd and osprey). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/args.h"

/* stderr caught between listen_stderr and said. */
static char g_said[512];
static int g_saved = -1;
static FILE *g_tmp;

static void listen_stderr(void) {
    fflush(stderr);
    g_tmp = tmpfile();
    g_saved = dup(2);
    dup2(fileno(g_tmp), 2);
}

static const char *said(void) {
    fflush(stderr);
    dup2(g_saved, 2);
    close(g_saved);
    rewind(g_tmp);
    size_t n = fread(g_said, 1, sizeof g_said - 1, g_tmp);
    g_said[n] = 0;
    fclose(g_tmp);
    return g_said;
}

static void test_whole_takes_the_whole_string_in_range(void **s) {
    (void)s;
    long long v = 7;
    assert_int_equal(osp_args_whole("16", 10, 16, 0xFFFFFFFFll, &v), 0);
    assert_int_equal(v, 16);
    assert_int_equal(osp_args_whole("4294967295", 10, 16, 0xFFFFFFFFll, &v), 0);
    assert_int_equal(v, 4294967295ll);
    const char *bad[] = {"", "15", "4294967296", "12x", "x", "1.5", "-1", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 7;
        assert_int_equal(osp_args_whole(bad[i], 10, 16, 0xFFFFFFFFll, &v), -1);
        assert_int_equal(v, 7); /* untouched */
    }
    /* octal, for permissions */
    assert_int_equal(osp_args_whole("0660", 8, 1, 0777, &v), 0);
    assert_int_equal(v, 0660);
    assert_int_equal(osp_args_whole("0", 8, 1, 0777, &v), -1);
    assert_int_equal(osp_args_whole("1000", 8, 1, 0777, &v), -1);
    assert_int_equal(osp_args_whole("0680", 8, 1, 0777, &v), -1);
}

static void test_int_is_silent(void **s) {
    (void)s;
    int v = 0;
    listen_stderr();
    assert_int_equal(osp_args_int("64", 1, 64, &v), 0);
    assert_int_equal(osp_args_int("65", 1, 64, &v), -1);
    assert_int_equal(osp_args_int("0", 1, 64, &v), -1);
    assert_string_equal(said(), "");
    assert_int_equal(v, 64);
}

static void test_int_in_says_the_range(void **s) {
    (void)s;
    int v = 0;
    listen_stderr();
    assert_int_equal(osp_args_int_in("ospreyd", "--run-timeout-ms", "86400001", 1, 86400000, &v), -1);
    assert_string_equal(said(), "ospreyd: --run-timeout-ms must be from 1 to 86400000, not "
                                "'86400001'\n");
    assert_int_equal(osp_args_int_in("osprey detect", "--workers", "3", 1, 64, &v), 0);
    assert_int_equal(v, 3);
}

static void test_num_says_the_range_or_the_floor(void **s) {
    (void)s;
    double v = 0;
    assert_int_equal(osp_args_num("osprey detect", "--fps", "2.5", 0.001, 1000, &v), 0);
    assert_true(v == 2.5);
    listen_stderr();
    assert_int_equal(osp_args_num("osprey detect", "--fps", "0", 0.001, 1000, &v), -1);
    assert_string_equal(said(), "osprey detect: --fps must be a number from 0.001 to 1000, not '0'\n");
    listen_stderr();
    assert_int_equal(osp_args_num("osprey detect", "--reconnect-for", "-1", 0, 0, &v), -1);
    assert_string_equal(said(), "osprey detect: --reconnect-for must be a number >= 0, not '-1'\n");
    assert_int_equal(osp_args_num("osprey detect", "--reconnect-for", "1e9", 0, 0, &v), 0);
    listen_stderr();
    assert_int_equal(osp_args_num("osprey x", "--y", "nan", 0, 1, &v), -1);
    assert_int_equal(osp_args_num("osprey x", "--y", "1x", 0, 1, &v), -1);
    said();
    assert_true(v == 1e9);
}

static void test_unit_is_zero_to_one(void **s) {
    (void)s;
    float f = 0;
    assert_int_equal(osp_args_unit("osprey ocr", "--threshold", "0.25", &f), 0);
    assert_true(f == 0.25f);
    listen_stderr();
    assert_int_equal(osp_args_unit("osprey ocr", "--threshold", "1.5", &f), -1);
    assert_string_equal(said(), "osprey ocr: --threshold must be a number from 0 to 1, not '1.5'\n");
    assert_true(f == 0.25f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_takes_the_whole_string_in_range),
        cmocka_unit_test(test_int_is_silent),
        cmocka_unit_test(test_int_in_says_the_range),
        cmocka_unit_test(test_num_says_the_range_or_the_floor),
        cmocka_unit_test(test_unit_is_zero_to_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
