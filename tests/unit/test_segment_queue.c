/* The stages' hand-offs (src/segment/queue.c): a full queue with
 * drop_oldest loses its oldest item and counts it; a closed queue still
 * gives what it holds, then 0; frames are taken only before a chunk's end,
 * and a live producer never waits on a full frame queue. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "segment/queue.h"

static void test_bq_drop_oldest_and_close(void **state) {
    (void)state;
    osp_bq_t *q;
    assert_int_equal(osp_bq_new(sizeof(int), 3, &q), 0);
    for (int i = 0; i < 5; i++) osp_bq_put(q, &i, true);
    assert_int_equal(osp_bq_dropped(q), 2);
    osp_bq_close(q);
    int v, got[3], n = 0;
    while (osp_bq_get(q, &v)) got[n++] = v;
    assert_int_equal(n, 3);
    assert_int_equal(got[0], 2);
    assert_int_equal(got[2], 4);
    osp_bq_free(q);
    osp_bq_free(NULL);
}

static void test_frameq_take_and_live_drops(void **state) {
    (void)state;
    osp_frameq_t *r;
    assert_int_equal(osp_frameq_new(2, &r), 0);
    osp_image_t scratch = {0}, img = {0};
    for (int i = 0; i < 3; i++) { /* the third finds it full: frame 0.0 goes */
        /* each put hands back the slot's old (here empty) buffer */
        assert_int_equal(osp_image_reserve(&scratch, 4 + i, 4, OSP_PIX_RGB), 0);
        osp_frameq_put(r, 0.5 * i, 10.0 + 0.5 * i, &scratch, true, NULL);
    }
    assert_int_equal(osp_frameq_dropped(r), 1);
    double pts, wall;
    assert_int_equal(osp_frameq_take(r, 1.0, &pts, &wall, &img), 1);
    assert_true(pts == 0.5 && wall == 10.5);
    assert_int_equal(img.width, 5);                                  /* its pixels came along */
    assert_int_equal(osp_frameq_take(r, 1.0, &pts, &wall, &img), 2); /* the next chunk's */
    osp_frameq_close(r);
    assert_int_equal(osp_frameq_take(r, 2.0, &pts, &wall, &img), 1);
    assert_int_equal(osp_frameq_take(r, 2.0, &pts, &wall, &img), 0);
    osp_image_free(&scratch);
    osp_image_free(&img);
    osp_frameq_free(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bq_drop_oldest_and_close),
        cmocka_unit_test(test_frameq_take_and_live_drops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
