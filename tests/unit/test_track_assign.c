/* The assignment behind the tracker's pairing (src/track/assign.c): the
 * least total cost where greedy picking is wrong, rectangular problems both
 * ways, empty ones, and random matrices against every permutation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "track/assign.h"

static double total(const double *c, int n, int m, const int *r2c) {
    double s = 0;
    for (int r = 0; r < n; r++)
        if (r2c[r] >= 0) s += c[r * m + r2c[r]];
    return s;
}

static void test_beats_greedy(void **state) {
    (void)state;
    /* greedy takes the 0.1 and is left with 0.9; the best is 0.2 + 0.15 */
    double c[4] = {0.1, 0.2, 0.15, 0.9};
    int r2c[2];
    osp_assign_ws_t ws = {0};
    assert_int_equal(osp_assign_solve(&ws, c, 2, 2, r2c), 0);
    assert_int_equal(r2c[0], 1);
    assert_int_equal(r2c[1], 0);
    osp_assign_free(&ws);
}

static void test_rectangular(void **state) {
    (void)state;
    osp_assign_ws_t ws = {0};
    /* 2 rows, 3 columns: each row gets its cheap column */
    double wide[6] = {5, 1, 5, 0, 5, 5};
    int r2c[3];
    assert_int_equal(osp_assign_solve(&ws, wide, 2, 3, r2c), 0);
    assert_int_equal(r2c[0], 1);
    assert_int_equal(r2c[1], 0);
    /* 3 rows, 2 columns: one row goes without */
    double tall[6] = {5, 5, 1, 5, 5, 0};
    assert_int_equal(osp_assign_solve(&ws, tall, 3, 2, r2c), 0);
    assert_int_equal(r2c[0], -1);
    assert_int_equal(r2c[1], 0);
    assert_int_equal(r2c[2], 1);
    /* nothing on one side */
    assert_int_equal(osp_assign_solve(&ws, tall, 3, 0, r2c), 0);
    for (int r = 0; r < 3; r++) assert_int_equal(r2c[r], -1);
    assert_int_equal(osp_assign_solve(&ws, tall, 0, 2, r2c), 0);
    osp_assign_free(&ws);
}

static uint32_t rng = 12345;
static double next(void) {
    rng = rng * 1664525u + 1013904223u;
    return (double)(rng >> 8) / (double)(1u << 24);
}

/* The least total over every way of giving the rows distinct columns. */
static double best(const double *c, int n, int m, int r, unsigned used) {
    if (r == n) return 0;
    double b = 1e300;
    int free_cols = m - __builtin_popcount(used);
    if (n - r > free_cols) { /* more rows left than columns: this row may go without */
        double v = best(c, n, m, r + 1, used);
        if (v < b) b = v;
    }
    for (int j = 0; j < m; j++) {
        if (used & (1u << j)) continue;
        double v = c[r * m + j] + best(c, n, m, r + 1, used | (1u << j));
        if (v < b) b = v;
    }
    return b;
}

static void test_random_against_brute_force(void **state) {
    (void)state;
    osp_assign_ws_t ws = {0};
    const int shapes[][2] = {{1, 1}, {3, 3}, {5, 5}, {4, 6}, {6, 4}, {6, 6}, {2, 7}, {7, 2}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int n = shapes[s][0], m = shapes[s][1];
        for (int trial = 0; trial < 20; trial++) {
            double c[49];
            int r2c[7];
            /* coarse values, so that ties happen */
            for (int i = 0; i < n * m; i++) c[i] = (int)(next() * 5) / 4.0;
            assert_int_equal(osp_assign_solve(&ws, c, n, m, r2c), 0);
            unsigned seen = 0;
            int assigned = 0;
            for (int r = 0; r < n; r++) {
                if (r2c[r] < 0) continue;
                assert_true(r2c[r] < m);
                assert_false(seen & (1u << r2c[r]));
                seen |= 1u << r2c[r];
                assigned++;
            }
            assert_int_equal(assigned, n < m ? n : m);
            assert_float_equal(total(c, n, m, r2c), best(c, n, m, 0, 0), 1e-9);
        }
    }
    osp_assign_free(&ws);
}

static void test_same_answer_twice(void **state) {
    (void)state;
    osp_assign_ws_t ws = {0};
    double c[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    int a[4], b[4];
    assert_int_equal(osp_assign_solve(&ws, c, 4, 4, a), 0);
    assert_int_equal(osp_assign_solve(&ws, c, 4, 4, b), 0);
    assert_memory_equal(a, b, sizeof a);
    osp_assign_free(&ws);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_beats_greedy),
        cmocka_unit_test(test_rectangular),
        cmocka_unit_test(test_random_against_brute_force),
        cmocka_unit_test(test_same_answer_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
