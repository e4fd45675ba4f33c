/* The speech segmenter (src/stream/vad.c): hysteresis, minimum silence and
 * speech, gaps in frame indices, the end of input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stream/stream.h"

/* Feed probs[0..n) as frames 0..n-1; collect the segments. */
static int run(osp_vad_seg_t *v, const float *probs, int n, osp_vad_segment_t *out, int cap) {
    int k = 0;
    osp_vad_segment_t s;
    for (int i = 0; i < n; i++)
        if (osp_vad_seg_feed(v, i, probs[i], &s) && k < cap) out[k++] = s;
    if (osp_vad_seg_finish(v, &s) && k < cap) out[k++] = s;
    return k;
}

static void test_two_segments(void **state) {
    (void)state;
    /*                 0    1    2    3    4    5    6    7    8    9   10   11   12   13 */
    float p[] = {0.1f, 0.9f, 0.8f, 0.9f, 0.1f, 0.1f, 0.1f,
                 0.1f, 0.7f, 0.9f, 0.6f, 0.2f, 0.1f, 0.1f};
    osp_vad_seg_t v;
    osp_vad_seg_init(&v, 0.5f, 3, 2);
    osp_vad_segment_t s[4];
    assert_int_equal(run(&v, p, 14, s, 4), 2);
    assert_int_equal(s[0].start, 1);
    assert_int_equal(s[0].end, 4);
    assert_float_equal(s[0].peak, 0.9f, 0);
    assert_int_equal(s[1].start, 8);
    assert_int_equal(s[1].end, 11);
}

static void test_hysteresis_keeps_a_dip(void **state) {
    (void)state;
    /* 0.4 is below T = 0.5 but above T - 0.15: the segment holds */
    float p[] = {0.9f, 0.4f, 0.4f, 0.4f, 0.4f, 0.9f, 0.0f, 0.0f, 0.0f};
    osp_vad_seg_t v;
    osp_vad_seg_init(&v, 0.5f, 2, 1);
    osp_vad_segment_t s[4];
    assert_int_equal(run(&v, p, 9, s, 4), 1);
    assert_int_equal(s[0].start, 0);
    assert_int_equal(s[0].end, 6);
}

static void test_short_speech_dropped_and_open_end_closed(void **state) {
    (void)state;
    float p[] = {0.9f, 0.0f, 0.0f, 0.0f, 0.0f, 0.8f, 0.8f, 0.8f};
    osp_vad_seg_t v;
    osp_vad_seg_init(&v, 0.5f, 2, 2);
    osp_vad_segment_t s[4];
    assert_int_equal(run(&v, p, 8, s, 4), 1); /* frame 0 alone is too short */
    assert_int_equal(s[0].start, 5);
    assert_int_equal(s[0].end, 8); /* closed by finish */
}

static void test_gap_is_silence(void **state) {
    (void)state;
    osp_vad_seg_t v;
    osp_vad_seg_init(&v, 0.5f, 3, 1);
    osp_vad_segment_t s;
    assert_int_equal(osp_vad_seg_feed(&v, 0, 0.9f, &s), 0);
    assert_int_equal(osp_vad_seg_feed(&v, 1, 0.9f, &s), 0);
    /* frames 2..9 never scored: the segment ended at 2; frame 10 opens another */
    assert_int_equal(osp_vad_seg_feed(&v, 10, 0.9f, &s), 1);
    assert_int_equal(s.start, 0);
    assert_int_equal(s.end, 2);
    assert_int_equal(osp_vad_seg_feed(&v, 5, 0.9f, &s), 0); /* out of order: ignored */
    assert_int_equal(osp_vad_seg_finish(&v, &s), 1);
    assert_int_equal(s.start, 10);
    assert_int_equal(s.end, 11);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_segments),
        cmocka_unit_test(test_hysteresis_keeps_a_dip),
        cmocka_unit_test(test_short_speech_dropped_and_open_end_closed),
        cmocka_unit_test(test_gap_is_silence),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
