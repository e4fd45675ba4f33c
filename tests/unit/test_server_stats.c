/* server/stats: the per-model counters the HTTP door reads (frames by
 * outcome, stage histograms), summed from atomics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "server/core/stats.h"

static server_t *mini_server(void) {
    server_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    assert_non_null(s->stats = srv_stats_new());
    return s;
}

static void mini_free(server_t *s) {
    srv_stats_free(s->stats);
    free(s);
}

static void test_model_counters(void **state) {
    (void)state;
    server_t *s = mini_server();
    srv_model_counts_t c;
    srv_stat_frames(s, 2, SRV_OUT_SERVED, 5);
    srv_stat_frames(s, 2, SRV_OUT_ERROR, 1);
    srv_stat_shed_queue(s, 2, 1);
    srv_stat_shed_deadline(s, 2, 1, 3);
    srv_stat_frames(s, 300, SRV_OUT_SERVED, 1);     /* out of range: ignored */
    srv_stat_duration(s, 2, SRV_STAGE_TOTAL, 0.5);  /* <= 1 ms */
    srv_stat_duration(s, 2, SRV_STAGE_TOTAL, 12);   /* 10-15 ms */
    srv_stat_duration(s, 2, SRV_STAGE_TOTAL, 5000); /* past 1 s */
    srv_stat_duration(s, 2, SRV_STAGE_QUEUE, -3);   /* a clock step: counted as 0 */
    srv_stats_model(s->stats, 2, &c);
    assert_int_equal(c.frames[SRV_OUT_SERVED], 5);
    assert_int_equal(c.frames[SRV_OUT_ERROR], 1);
    assert_int_equal(c.frames[SRV_OUT_SHED], 1);
    assert_int_equal(c.frames[SRV_OUT_EXPIRED], 3);
    assert_int_equal(srv_stat_get(s, SRV_ST_SHED_QUEUE_FULL), 1);
    assert_int_equal(srv_stat_get(s, SRV_ST_SHED_DEADLINE), 3);
    assert_int_equal(c.buckets[SRV_STAGE_TOTAL][0], 1);
    assert_int_equal(c.buckets[SRV_STAGE_TOTAL][6], 1); /* up to 0.015 */
    assert_int_equal(c.buckets[SRV_STAGE_TOTAL][SRV_HIST_BOUNDS], 1);
    assert_int_equal(c.buckets[SRV_STAGE_QUEUE][0], 1);
    assert_float_equal(c.sum_s[SRV_STAGE_TOTAL], 5.0125, 1e-6);
    srv_stats_model(s->stats, 1, &c);
    assert_int_equal(c.frames[SRV_OUT_SERVED], 0);
    mini_free(s);
}

static void test_bounds_ascend_from_1ms_to_1s(void **state) {
    (void)state;
    assert_float_equal(srv_hist_bounds_s[0], 0.001, 1e-12);
    assert_float_equal(srv_hist_bounds_s[SRV_HIST_BOUNDS - 1], 1.0, 1e-12);
    for (int i = 1; i < SRV_HIST_BOUNDS; i++)
        assert_true(srv_hist_bounds_s[i] > srv_hist_bounds_s[i - 1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_counters),
        cmocka_unit_test(test_bounds_ascend_from_1ms_to_1s),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
