/* Frame buffers: alignment and size, reuse of the smallest that fits, the
 * keep limit and its preference for large buffers, osp_buf_align, and
 * sizes too large to allocate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sched/bufpool.h"

#define ALIGNED(p) (((uintptr_t)(p) % 64) == 0)

static void test_get_aligned_and_big_enough(void **s) {
    (void)s;
    osp_bufpool_t *p = osp_bufpool_new(4);
    assert_non_null(p);
    static const size_t sizes[] = {1, 63, 64, 100, 4096, 1920 * 1080 * 3};
    uint8_t *b[6];
    for (int i = 0; i < 6; i++) {
        b[i] = osp_buf_get(p, sizes[i]);
        assert_non_null(b[i]);
        assert_true(ALIGNED(b[i]));
        memset(b[i], 0xab, sizes[i]); /* every byte is the caller's (ASan checks) */
    }
    for (int i = 0; i < 6; i++) osp_buf_put(p, b[i]);
    osp_buf_put(p, NULL); /* ignored */
    assert_int_equal(osp_bufpool_kept(p), 4);
    osp_bufpool_free(p);
}

static void test_reuse_smallest_that_fits(void **s) {
    (void)s;
    osp_bufpool_t *p = osp_bufpool_new(8);
    assert_non_null(p);
    uint8_t *a = osp_buf_get(p, 100), *b = osp_buf_get(p, 1000), *c = osp_buf_get(p, 10000);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    osp_buf_put(p, c);
    osp_buf_put(p, a);
    osp_buf_put(p, b);
    assert_int_equal(osp_bufpool_kept(p), 3);
    assert_ptr_equal(osp_buf_get(p, 500), b);
    assert_ptr_equal(osp_buf_get(p, 50), a);
    assert_int_equal(osp_bufpool_kept(p), 1);
    /* nothing kept fits: a new one, the kept one stays */
    uint8_t *d = osp_buf_get(p, 20000);
    assert_non_null(d);
    assert_ptr_not_equal(d, c);
    assert_int_equal(osp_bufpool_kept(p), 1);
    assert_ptr_equal(osp_buf_get(p, 10000), c); /* exactly its size fits */
    assert_int_equal(osp_bufpool_kept(p), 0);
    osp_buf_put(p, a);
    osp_buf_put(p, b);
    osp_buf_put(p, c);
    osp_buf_put(p, d);
    osp_bufpool_free(p);
}

static void test_keep_limit_prefers_large(void **s) {
    (void)s;
    osp_bufpool_t *p = osp_bufpool_new(2);
    assert_non_null(p);
    uint8_t *a = osp_buf_get(p, 100), *b = osp_buf_get(p, 200), *c = osp_buf_get(p, 300),
            *d = osp_buf_get(p, 10);
    osp_buf_put(p, a);
    osp_buf_put(p, b);
    assert_int_equal(osp_bufpool_kept(p), 2);
    osp_buf_put(p, c); /* full: the smallest kept (a) gives way */
    assert_int_equal(osp_bufpool_kept(p), 2);
    osp_buf_put(p, d); /* full of larger ones: d is freed */
    assert_int_equal(osp_bufpool_kept(p), 2);
    /* what is kept is b and c */
    assert_ptr_equal(osp_buf_get(p, 1), b);
    assert_ptr_equal(osp_buf_get(p, 1), c);
    assert_int_equal(osp_bufpool_kept(p), 0);
    osp_buf_put(p, b);
    osp_buf_put(p, c);
    osp_bufpool_free(p);

    /* keep 0: nothing is kept */
    p = osp_bufpool_new(0);
    assert_non_null(p);
    osp_buf_put(p, osp_buf_get(p, 64));
    assert_int_equal(osp_bufpool_kept(p), 0);
    osp_bufpool_free(p);
}

static void fill(uint8_t *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * 31u + seed);
}

static void test_align_moves_content(void **s) {
    (void)s;
    enum { CAP = 4096, USED = 1000 };
    osp_bufpool_t *p = osp_bufpool_new(2);
    assert_non_null(p);
    uint8_t *b = osp_buf_get(p, CAP);
    assert_non_null(b);
    uint8_t want[USED];
    fill(want, USED, 7);
    memcpy(b, want, USED);
    /* each from where the last one left it */
    static const size_t ats[] = {1, 17, 63, 64, 0, 100, 5, 5, 200, 127};
    for (size_t i = 0; i < sizeof ats / sizeof ats[0]; i++) {
        b = osp_buf_align(b, USED, ats[i]);
        assert_non_null(b);
        assert_true(ALIGNED(b + ats[i]));
        assert_memory_equal(b, want, USED);
        memset(b + USED, 0xcd, CAP - USED); /* the whole capacity is still there (ASan) */
    }
    /* the moved buffer goes back, comes out again, and is freed right */
    osp_buf_put(p, b);
    assert_int_equal(osp_bufpool_kept(p), 1);
    uint8_t *again = osp_buf_get(p, CAP);
    assert_non_null(again);
    assert_int_equal(osp_bufpool_kept(p), 0); /* the kept one, not a new one */
    memset(again, 0, CAP);
    osp_buf_put(p, again);
    osp_bufpool_free(p);
}

/* A buffer that osp_buf_align moved, put back and taken again, must start
 * on a 64-byte boundary like any buffer osp_buf_get returns. */
static void test_reused_after_align_is_aligned(void **s) {
    (void)s;
    osp_bufpool_t *p = osp_bufpool_new(2);
    assert_non_null(p);
    uint8_t *b = osp_buf_get(p, 4096);
    assert_non_null(b);
    b = osp_buf_align(b, 0, 1); /* byte 1 aligned: the start is not */
    assert_false(ALIGNED(b));
    osp_buf_put(p, b);
    uint8_t *again = osp_buf_get(p, 4096);
    assert_non_null(again);
    assert_true(ALIGNED(again));
    memset(again, 0, 4096);
    osp_buf_put(p, again);
    osp_bufpool_free(p);
}

static void test_absurd_sizes(void **s) {
    (void)s;
    osp_bufpool_t *p = osp_bufpool_new(2);
    assert_non_null(p);
    /* sizes whose allocation with the header would wrap */
    assert_null(osp_buf_get(p, SIZE_MAX));
    assert_null(osp_buf_get(p, SIZE_MAX - 8));
    assert_null(osp_buf_get(p, SIZE_MAX - 64));
    assert_int_equal(osp_bufpool_kept(p), 0);
    osp_bufpool_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_aligned_and_big_enough),
        cmocka_unit_test(test_reuse_smallest_that_fits),
        cmocka_unit_test(test_keep_limit_prefers_large),
        cmocka_unit_test(test_align_moves_content),
        cmocka_unit_test(test_reused_after_align_is_aligned),
        cmocka_unit_test(test_absurd_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
