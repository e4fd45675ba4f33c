/* base/text: the edit distance behind every "did you mean". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/text.h"

static void test_distance(void **state) {
    (void)state;
    assert_int_equal(osp_text_distance("confidence", "confidence"), 0);
    assert_int_equal(osp_text_distance("Confidence", "confidence"), 0); /* case-blind */
    assert_int_equal(osp_text_distance("confidenc", "confidence"), 1);
    assert_int_equal(osp_text_distance("inertai", "inertia"), 2); /* a swap is two edits */
    assert_int_equal(osp_text_distance("", "abc"), 3);
    assert_int_equal(osp_text_distance("abc", ""), 3);
    assert_int_equal(osp_text_distance("kitten", "sitting"), 3);
    char longer[80];
    for (int i = 0; i < 79; i++) longer[i] = 'a';
    longer[79] = '\0';
    assert_int_equal(osp_text_distance(longer, "a"), 99);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_distance)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
