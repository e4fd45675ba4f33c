/* Which output is which: osp_pdesc_find and the finders built on it, and
 * the rows and columns of a [1,R,C] or [R,C] output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "post/decoder.h"

static osp_pdesc_t out3(int64_t n, int64_t c) {
    return (osp_pdesc_t){.name = "o", .dtype = OSP_PDT_F32, .rank = 3, .dims = {1, n, c}};
}

static void test_find_by_last_dim(void **state) {
    (void)state;
    osp_pdesc_t o[3] = {out3(100, 91), out3(100, 4), out3(100, 4)};
    assert_int_equal(osp_pdesc_find(o, 3, 3, 4, 0, -1), 1);
    assert_int_equal(osp_pdesc_find(o, 3, 3, 4, 0, 1), 2);
    assert_int_equal(osp_pdesc_find(o, 3, 3, 4, 1, -1), 0);
    assert_int_equal(osp_pdesc_find(o, 3, 2, 4, 0, -1), -1);
    o[1].dtype = OSP_PDT_I64;
    assert_int_equal(osp_pdesc_find(o, 3, 3, 4, 0, -1), 2);
}

static void test_find_pair(void **state) {
    (void)state;
    int b, s;
    /* scores first, as some exports leave them */
    osp_pdesc_t ssd[2] = {out3(1917, 91), out3(1917, 4)};
    assert_int_equal(osp_pdesc_find_pair(ssd, 2, 0, &b, &s), 0);
    assert_int_equal(b, 1);
    assert_int_equal(s, 0);
    /* a width asked for passes over the others */
    osp_pdesc_t uf[3] = {out3(4420, 3), out3(4420, 4), out3(4420, 2)};
    assert_int_equal(osp_pdesc_find_pair(uf, 3, 2, &b, &s), 0);
    assert_int_equal(b, 1);
    assert_int_equal(s, 2);
    assert_int_equal(osp_pdesc_find_pair(uf, 2, 2, &b, &s), -1);
    /* two [1,N,4]: the second is the scores of a 4-class model */
    osp_pdesc_t two[2] = {out3(100, 4), out3(100, 4)};
    assert_int_equal(osp_pdesc_find_pair(two, 2, 4, &b, &s), 0);
    assert_int_equal(s, 1);
    assert_int_equal(osp_pdesc_find_pair(two, 2, 0, &b, &s), -1);
    assert_int_equal(osp_pdesc_find_pair(two, 0, 0, &b, &s), -1);
}

static void test_find_matrix(void **state) {
    (void)state;
    osp_pdesc_t o[4] = {
        {.dtype = OSP_PDT_F32, .rank = 4, .dims = {1, 3, 80, 80}},
        {.dtype = OSP_PDT_I64, .rank = 2, .dims = {10, 7}},
        {.dtype = OSP_PDT_F32, .rank = 2, .dims = {10, 7}},
        out3(8400, 85),
    };
    assert_int_equal(osp_pdesc_find_matrix(o, 4), 2);
    assert_int_equal(osp_pdesc_find_matrix(o, 2), -1);
}

static void test_rows_cols(void **state) {
    (void)state;
    int64_t r = 0, c = 0;
    assert_int_equal(osp_pdims_rows_cols((int64_t[]){1, 84, 8400}, 3, &r, &c), 0);
    assert_true(r == 84 && c == 8400);
    assert_int_equal(osp_pdims_rows_cols((int64_t[]){300, 6}, 2, &r, &c), 0);
    assert_true(r == 300 && c == 6);
    assert_int_equal(osp_pdims_rows_cols((int64_t[]){-1, 8400, 85}, 3, &r, &c), 0);
    assert_true(r == 8400 && c == 85);
    r = c = 0;
    assert_int_equal(osp_pdims_rows_cols((int64_t[]){2, 8400, 85}, 3, &r, &c), -1);
    assert_int_equal(osp_pdims_rows_cols((int64_t[]){1, 1, 8400, 85}, 4, &r, &c), -1);
    assert_int_equal(osp_pdims_rows_cols((int64_t[]){8400}, 1, &r, &c), -1);
    assert_true(r == 0 && c == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_by_last_dim),
        cmocka_unit_test(test_find_pair),
        cmocka_unit_test(test_find_matrix),
        cmocka_unit_test(test_rows_cols),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
