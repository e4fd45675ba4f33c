/* The chunker (src/segment/chunk.c) on score sequences with known answers:
 * threshold, the anti-jitter window picking its best candidate, min and max
 * length, the end of a file and of a live stream, uniform mode. Frames are
 * at 10 fps, so frame i has timestamp i / 10. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "segment/chunk.h"

#define FPS 10.0
#define MAXC 64

typedef struct {
    osp_chunk_t c[MAXC];
    int n;
} got_t;

/* Runs n frames whose scores are all 0 except the (frame, score) pairs in
 * hits, then finishes the stream. */
static void run(const osp_chunk_params_t *p, int n, const double *hits, int nhits, got_t *g) {
    osp_chunker_t ch;
    assert_int_equal(osp_chunker_init(&ch, p), 0);
    g->n = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int k = 0; k < nhits; k++)
            if ((int)hits[2 * k] == i) s = hits[2 * k + 1];
        g->n += osp_chunker_push(&ch, i / FPS, s, &g->c[g->n], MAXC - g->n);
    }
    while (g->n < MAXC && osp_chunker_finish(&ch, &g->c[g->n])) g->n++;
}

static void assert_chunk(const osp_chunk_t *c, int idx, double start, double end, double score) {
    assert_int_equal(c->idx, idx);
    assert_float_equal(c->start, start, 1e-9);
    assert_float_equal(c->end, end, 1e-9);
    assert_float_equal(c->score, score, 1e-9);
}

static void test_below_threshold_no_cut(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.duration = 5.0;
    double hits[] = {20, 0.79, 30, 0.5};
    got_t g;
    run(&p, 50, hits, 2, &g);
    assert_int_equal(g.n, 1);
    assert_chunk(&g.c[0], 0, 0.0, 5.0, 0.0);
}

static void test_window_picks_best(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.duration = 6.0;
    /* A trigger at frame 20, a stronger candidate 5 frames later (inside the
     * window of 8 more frames), a stronger one still at 29 (outside). */
    double hits[] = {20, 0.85, 25, 0.95, 29, 0.99};
    got_t g;
    run(&p, 60, hits, 3, &g);
    assert_int_equal(g.n, 2);
    assert_chunk(&g.c[0], 0, 0.0, 2.5, 0.95);
    /* 29 is 0.4 s after the cut at 2.5: below min length, skipped. */
    assert_chunk(&g.c[1], 1, 2.5, 6.0, 0.0);
}

static void test_min_length_skips(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.duration = 4.0;
    double hits[] = {5, 0.9, 25, 0.9};
    got_t g;
    run(&p, 40, hits, 2, &g);
    assert_int_equal(g.n, 2);
    assert_chunk(&g.c[0], 0, 0.0, 2.5, 0.9);
    assert_chunk(&g.c[1], 1, 2.5, 4.0, 0.0);
}

static void test_max_length_cuts(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.max_len = 3.0;
    p.duration = 8.0;
    got_t g;
    run(&p, 80, NULL, 0, &g);
    assert_int_equal(g.n, 3);
    assert_chunk(&g.c[0], 0, 0.0, 3.0, 0.0);
    assert_chunk(&g.c[1], 1, 3.0, 6.0, 0.0);
    assert_chunk(&g.c[2], 2, 6.0, 8.0, 0.0);
}

static void test_event_resets_max_length(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.max_len = 3.0;
    p.duration = 7.0;
    double hits[] = {20, 1.0};
    got_t g;
    run(&p, 70, hits, 1, &g);
    assert_int_equal(g.n, 3);
    assert_chunk(&g.c[0], 0, 0.0, 2.0, 1.0);
    assert_chunk(&g.c[1], 1, 2.0, 5.0, 0.0);
    assert_chunk(&g.c[2], 2, 5.0, 7.0, 0.0);
}

static void test_live_ends_at_newest_frame(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.live = true;
    p.duration = 100.0; /* ignored for live */
    double hits[] = {15, 0.9};
    got_t g;
    run(&p, 42, hits, 1, &g);
    assert_int_equal(g.n, 2);
    assert_chunk(&g.c[0], 0, 0.0, 1.5, 0.9);
    assert_chunk(&g.c[1], 1, 1.5, 4.1, 0.0);
}

static void test_file_without_duration_ends_at_last_frame(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    got_t g;
    run(&p, 30, NULL, 0, &g);
    assert_int_equal(g.n, 1);
    assert_chunk(&g.c[0], 0, 0.0, 2.9, 0.0);
}

static void test_trigger_at_end_is_not_cut(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.duration = 3.0;
    double hits[] = {27, 0.9}; /* the window never completes */
    got_t g;
    run(&p, 30, hits, 1, &g);
    assert_int_equal(g.n, 1);
    assert_chunk(&g.c[0], 0, 0.0, 3.0, 0.0);
}

static void test_uniform(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.uniform = true;
    p.uniform_len = 2.0;
    p.duration = 7.0;
    double hits[] = {10, 1.0}; /* scores are ignored */
    got_t g;
    run(&p, 70, hits, 1, &g);
    assert_int_equal(g.n, 4);
    assert_chunk(&g.c[0], 0, 0.0, 2.0, 1.0);
    assert_chunk(&g.c[1], 1, 2.0, 4.0, 1.0);
    assert_chunk(&g.c[2], 2, 4.0, 6.0, 1.0);
    assert_chunk(&g.c[3], 3, 6.0, 7.0, 1.0);
}

static void test_uniform_gap_and_bad_params(void **state) {
    (void)state;
    osp_chunk_params_t p;
    osp_chunk_params_default(&p);
    p.uniform = true;
    p.uniform_len = 1.0;
    p.live = true;
    osp_chunker_t ch;
    osp_chunk_t out[2];
    assert_int_equal(osp_chunker_init(&ch, &p), 0);
    assert_int_equal(osp_chunker_push(&ch, 0.0, 0, out, 2), 0);
    /* A 3.5 s gap owes three chunks: two now, one on the next push. */
    assert_int_equal(osp_chunker_push(&ch, 3.5, 0, out, 2), 2);
    assert_chunk(&out[1], 1, 1.0, 2.0, 1.0);
    assert_int_equal(osp_chunker_push(&ch, 3.6, 0, out, 2), 1);
    assert_chunk(&out[0], 2, 2.0, 3.0, 1.0);
    assert_int_equal(osp_chunker_finish(&ch, out), 1);
    assert_chunk(&out[0], 3, 3.0, 3.6, 1.0);
    assert_int_equal(osp_chunker_finish(&ch, out), 0);
    p.uniform_len = 0;
    assert_int_equal(osp_chunker_init(&ch, &p), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_below_threshold_no_cut),
        cmocka_unit_test(test_window_picks_best),
        cmocka_unit_test(test_min_length_skips),
        cmocka_unit_test(test_max_length_cuts),
        cmocka_unit_test(test_event_resets_max_length),
        cmocka_unit_test(test_live_ends_at_newest_frame),
        cmocka_unit_test(test_file_without_duration_ends_at_last_frame),
        cmocka_unit_test(test_trigger_at_end_is_not_cut),
        cmocka_unit_test(test_uniform),
        cmocka_unit_test(test_uniform_gap_and_bad_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
