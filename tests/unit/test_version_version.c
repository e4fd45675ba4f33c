/* The --version text: four lines, each saying what it names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/runtime.h"
#include "version/version.h"

static void test_text(void **s) {
    (void)s;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    osp_version_print(f, "ospreyd");
    fclose(f);
    char want[1024], providers[512];
    assert_int_equal(osp_ort_providers(providers, sizeof providers), 0);
    snprintf(want, sizeof want, "ospreyd %s\ngit: %s\nonnxruntime: %s\nproviders: %s\n",
             osp_version(), osp_version_git(), osp_ort_version(), providers);
    assert_string_equal(text, want);
    free(text);
}

static void test_fields(void **s) {
    (void)s;
    int a, b, c;
    assert_int_equal(sscanf(osp_version(), "%d.%d.%d", &a, &b, &c), 3);
    /* one word: a describe, a hash, or "unknown" — never empty or two lines */
    const char *g = osp_version_git();
    assert_true(g[0] != '\0');
    assert_null(strpbrk(g, " \n\t\""));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
