/* Objects in zones and across lines (src/track/zones.c), driven through a
 * real tracker: inertia on the way in and out, a box jittering on a zone's
 * edge, loitering, the objects filter, entered zones in order, an unseen
 * or rejected track, line crossings each way (and none beside the segment
 * or standing on the line), and the frame size. Frames are 640x480; a
 * person box is 60x100 and its reference point is its bottom centre; each
 * script moves it in steps the tracker follows (one track throughout). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "track/zones.h"

static const char *const LABELS[] = {"person", "bicycle", "car"};
enum { PERSON = 0, CAR = 2 };

struct rig {
    osp_tracker_t *t;
    osp_zones_t *z;
    double time;
};

static struct rig rig(const char *zones_json) {
    struct rig r = {0};
    char err[256];
    static osp_zones_cfg_t cfg;
    assert_int_equal(osp_zones_cfg_parse(zones_json, strlen(zones_json), &cfg, err, sizeof err), 0);
    assert_int_equal(osp_zones_new(&cfg, &r.z, err, sizeof err), 0);
    osp_track_params_t p;
    osp_track_params_default(&p);
    p.confirm_hits = 1;
    assert_int_equal(osp_track_new(&p, &r.t, err, sizeof err), 0);
    return r;
}

static void done(struct rig *r) {
    osp_zones_free(r->z);
    osp_track_free(r->t);
}

/* One frame with a person (or other label) whose feet are at (fx, fy);
 * fx < 0: nobody. Returns the object's zones (NULL when nobody). */
static const osp_zones_obj_t *frame(struct rig *r, float fx, float fy, int label) {
    char err[128];
    osp_track_det_t d = {.box = {fx - 30, fy - 100, fx + 30, fy}, .score = 0.9f, .label = label};
    assert_int_equal(osp_track_update(r->t, &d, fx >= 0, r->time, err, sizeof err), 0);
    assert_true(osp_track_count(r->t) <= 1);
    assert_int_equal(osp_zones_update(r->z, r->t, 640, 480, LABELS, 3, err, sizeof err), 0);
    r->time += 0.5;
    return osp_track_count(r->t) ? osp_zones_obj(r->z, osp_track_at(r->t, 0)->id) : NULL;
}

/* the right half of the frame */
#define RIGHT "{\"zones\": {\"right\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\"}}}"

static void test_inertia_in_and_out(void **state) {
    (void)state;
    struct rig r = rig(RIGHT);
    const osp_zones_obj_t *o;
    /* the zone starts at x = 320: feet at 295, 305, 315 are outside */
    for (float x = 295; x < 320; x += 10) assert_int_equal(frame(&r, x, 400, PERSON)->current, 0);
    /* inside for one and two frames: not yet */
    assert_int_equal(frame(&r, 325, 400, PERSON)->current, 0);
    assert_int_equal(frame(&r, 335, 400, PERSON)->current, 0);
    o = frame(&r, 345, 400, PERSON); /* the third frame inside */
    assert_int_equal(o->current, 1);
    assert_int_equal(o->entered_now, 1);
    assert_int_equal(o->n_entered, 1);
    assert_int_equal(o->entered[0], 0);
    o = frame(&r, 345, 400, PERSON);
    assert_int_equal(o->current, 1);
    assert_int_equal(o->entered_now, 0);
    /* back out: in the zone until three frames outside */
    assert_int_equal(frame(&r, 335, 400, PERSON)->current, 1);
    assert_int_equal(frame(&r, 325, 400, PERSON)->current, 1);
    o = frame(&r, 315, 400, PERSON);
    assert_int_equal(o->current, 1);
    assert_int_equal(o->left_now, 0);
    assert_int_equal(frame(&r, 305, 400, PERSON)->current, 1);
    o = frame(&r, 295, 400, PERSON);
    assert_int_equal(o->current, 0);
    assert_int_equal(o->left_now, 1);
    assert_int_equal(o->n_entered, 1); /* it did enter */
    done(&r);
}

static void test_jitter_on_the_edge(void **state) {
    (void)state;
    struct rig r = rig(RIGHT);
    for (int f = 0; f < 30; f++) {
        const osp_zones_obj_t *o = frame(&r, f % 2 ? 322 : 318, 400, PERSON);
        assert_int_equal(o->current, 0);
        assert_int_equal(o->n_entered, 0);
    }
    done(&r);
}

static void test_inertia_one(void **state) {
    (void)state;
    struct rig r = rig("{\"zones\": {\"z\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\", "
                       "\"inertia\": 1}}}");
    assert_int_equal(frame(&r, 310, 400, PERSON)->current, 0);
    assert_int_equal(frame(&r, 330, 400, PERSON)->current, 1);
    assert_int_equal(frame(&r, 310, 400, PERSON)->current, 0);
    done(&r);
}

static void test_loitering(void **state) {
    (void)state;
    struct rig r = rig("{\"zones\": {\"a\": {\"coordinates\": \"0,0,0.2,0,0.2,0.2\"},"
                       "\"z\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\", \"inertia\": 1, "
                       "\"loitering_time\": 2}}}");
    const osp_zones_obj_t *o = frame(&r, 400, 300, PERSON); /* enters at t = 0 */
    assert_int_equal(o->current, 2);
    for (int f = 1; f <= 3; f++) assert_int_equal(frame(&r, 400, 300, PERSON)->loitering, 0);
    o = frame(&r, 400, 300, PERSON); /* t = 2 s */
    assert_int_equal(o->loitering, 2);
    assert_int_equal(o->loiter_now, 2);
    o = frame(&r, 402, 300, PERSON);
    assert_int_equal(o->loitering, 2);
    assert_int_equal(o->loiter_now, 0);
    for (float x = 390; x >= 310; x -= 20) o = frame(&r, x, 300, PERSON); /* walks out */
    assert_int_equal(o->left_now, 2);
    assert_int_equal(o->loitering, 0);
    assert_int_equal(o->current, 0);
    done(&r);
}

static void test_objects_filter(void **state) {
    (void)state;
    struct rig r = rig("{\"zones\": {\"drive\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\", "
                       "\"inertia\": 1, \"objects\": [\"car\"]}}}");
    assert_int_equal(frame(&r, 400, 300, PERSON)->current, 0);
    done(&r);
    r = rig("{\"zones\": {\"drive\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\", "
            "\"inertia\": 1, \"objects\": [\"car\"]}}}");
    assert_int_equal(frame(&r, 400, 300, CAR)->current, 1);
    done(&r);
    /* a label without a name passes no filter */
    r = rig("{\"zones\": {\"drive\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\", "
            "\"inertia\": 1, \"objects\": [\"car\"]}}}");
    assert_int_equal(frame(&r, 400, 300, 7)->current, 0);
    done(&r);
}

static void test_entered_in_order(void **state) {
    (void)state;
    /* zone 0 on the right, zone 1 on the left: visited 1, 0, 1 */
    struct rig r = rig("{\"zones\": {\"east\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\", "
                       "\"inertia\": 1}, \"west\": {\"coordinates\": \"0,0,0.5,0,0.5,1,0,1\", "
                       "\"inertia\": 1}}}");
    for (float x = 280; x <= 340; x += 10) frame(&r, x, 300, PERSON);
    const osp_zones_obj_t *o = NULL;
    for (float x = 330; x >= 300; x -= 10) o = frame(&r, x, 300, PERSON);
    assert_int_equal(o->current, 2);
    assert_int_equal(o->n_entered, 2);
    assert_int_equal(o->entered[0], 1);
    assert_int_equal(o->entered[1], 0);
    done(&r);
}

static void test_unseen_keeps_its_zones(void **state) {
    (void)state;
    struct rig r = rig(RIGHT);
    for (int f = 0; f < 4; f++) frame(&r, 400, 300, PERSON);
    const osp_zones_obj_t *o = frame(&r, -1, 0, PERSON);
    assert_non_null(o);
    assert_int_equal(osp_track_at(r.t, 0)->state, OSP_TRACK_LOST);
    assert_int_equal(o->current, 1);
    assert_int_equal(o->left_now, 0);
    done(&r);
}

static void test_rejected_is_nowhere(void **state) {
    (void)state;
    /* the zone is x >= 320, the line y = 300 */
    struct rig r = rig("{\"zones\": {\"z\": {\"coordinates\": \"0.5,0,1,0,1,1,0.5,1\", "
                       "\"inertia\": 1}}, \"lines\": {\"l\": {\"coordinates\": \"0,0.625,1,0.625\"}}}");
    assert_int_equal(frame(&r, 314, 294, PERSON)->current, 0);
    assert_int_equal(osp_track_set_verdict(r.t, osp_track_at(r.t, 0)->id, OSP_TRACK_REJECTED, 0), 0);
    /* its box jitters into the zone and across the line (a rejected track
     * keeps to its place: IoU 0.54 with it), unseen by either */
    for (int i = 1; i <= 8; i++) {
        const osp_zones_obj_t *o = frame(&r, i % 2 ? 326 : 314, i % 2 ? 306 : 294, PERSON);
        assert_int_equal(o->current, 0);
        const osp_zones_cross_t *c;
        assert_int_equal(osp_zones_crossings(r.z, &c), 0);
    }
    uint64_t in, out;
    osp_zones_line_totals(r.z, 0, &in, &out);
    assert_int_equal(in + out, 0);
    done(&r);
}

/* Walks from (x, y0) to (x, y1) in steps of 20 px; returns the crossings seen. */
static int walk(struct rig *r, float x, float y0, float y1, osp_zones_cross_t *seen, int cap) {
    int n = 0;
    float step = y1 > y0 ? 20 : -20;
    for (float y = y0; (step > 0) ? y <= y1 : y >= y1; y += step) {
        frame(r, x, y, PERSON);
        const osp_zones_cross_t *c;
        int k = osp_zones_crossings(r->z, &c);
        for (int i = 0; i < k && n < cap; i++) seen[n++] = c[i];
    }
    return n;
}

static void test_line_crossings(void **state) {
    (void)state;
    /* left to right across the middle: "in" is up the image */
    struct rig r = rig("{\"lines\": {\"mid\": {\"coordinates\": \"0,0.5,1,0.5\"}}}");
    osp_zones_cross_t c[8];
    assert_int_equal(walk(&r, 300, 400, 100, c, 8), 1);
    assert_int_equal(c[0].dir, OSP_ZONES_IN);
    assert_string_equal(osp_zones_dir_name(c[0].dir), "in");
    assert_int_equal(c[0].line, 0);
    assert_int_equal(c[0].label, PERSON);
    assert_int_equal(c[0].id, osp_track_at(r.t, 0)->id);
    assert_int_equal(walk(&r, 300, 120, 420, c, 8), 1);
    assert_int_equal(c[0].dir, OSP_ZONES_OUT);
    assert_string_equal(osp_zones_dir_name(c[0].dir), "out");
    uint64_t in, out;
    osp_zones_line_totals(r.z, 0, &in, &out);
    assert_int_equal(in, 1);
    assert_int_equal(out, 1);
    done(&r);
}

static void test_line_direction_vertical(void **state) {
    (void)state;
    /* top to bottom: walking down the image, the left hand is the image's right */
    struct rig r = rig("{\"lines\": {\"v\": {\"coordinates\": \"0.5,0,0.5,1\"}}}");
    osp_zones_cross_t c[4];
    int n = 0;
    for (float x = 200; x <= 440; x += 20) {
        frame(&r, x, 300, PERSON);
        const osp_zones_cross_t *k;
        int m = osp_zones_crossings(r.z, &k);
        for (int i = 0; i < m && n < 4; i++) c[n++] = k[i];
    }
    assert_int_equal(n, 1);
    assert_int_equal(c[0].dir, OSP_ZONES_IN);
    done(&r);
}

static void test_line_beside_the_segment(void **state) {
    (void)state;
    /* the line covers the left third only; the walk is at x = 500 */
    struct rig r = rig("{\"lines\": {\"short\": {\"coordinates\": \"0,0.5,0.33,0.5\"}}}");
    osp_zones_cross_t c[4];
    assert_int_equal(walk(&r, 500, 400, 100, c, 4), 0);
    done(&r);
}

static void test_standing_on_the_line(void **state) {
    (void)state;
    struct rig r = rig("{\"lines\": {\"mid\": {\"coordinates\": \"0,0.5,1,0.5\"}}}");
    /* feet 3 px either side of y = 240, within the 4.8 px margin */
    for (int f = 0; f < 20; f++) {
        frame(&r, 300, f % 2 ? 243 : 237, PERSON);
        const osp_zones_cross_t *c;
        assert_int_equal(osp_zones_crossings(r.z, &c), 0);
    }
    /* from 20 px above to 20 px below and back, twice: four crossings */
    osp_zones_cross_t c[8];
    int n = 0;
    for (int f = 0; f < 4; f++)
        n += walk(&r, 300, f % 2 ? 260 : 220, f % 2 ? 220 : 260, c + n, 8 - n);
    assert_int_equal(n, 4);
    assert_int_equal(c[0].dir, OSP_ZONES_OUT);
    assert_int_equal(c[1].dir, OSP_ZONES_IN);
    done(&r);
}

static void test_frame_size_and_gone_tracks(void **state) {
    (void)state;
    struct rig r = rig(RIGHT);
    char err[128];
    assert_int_equal(osp_zones_update(r.z, r.t, 0, 480, LABELS, 3, err, sizeof err), OSP_ZONES_EINVAL);
    assert_non_null(strstr(err, "frame size"));
    frame(&r, 400, 300, PERSON);
    uint64_t id = osp_track_at(r.t, 0)->id;
    for (int f = 0; f < 40; f++) frame(&r, -1, 0, PERSON); /* lost, then removed */
    assert_null(osp_zones_obj(r.z, id));
    done(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inertia_in_and_out),
        cmocka_unit_test(test_jitter_on_the_edge),
        cmocka_unit_test(test_inertia_one),
        cmocka_unit_test(test_loitering),
        cmocka_unit_test(test_objects_filter),
        cmocka_unit_test(test_entered_in_order),
        cmocka_unit_test(test_unseen_keeps_its_zones),
        cmocka_unit_test(test_rejected_is_nowhere),
        cmocka_unit_test(test_line_crossings),
        cmocka_unit_test(test_line_direction_vertical),
        cmocka_unit_test(test_line_beside_the_segment),
        cmocka_unit_test(test_standing_on_the_line),
        cmocka_unit_test(test_frame_size_and_gone_tracks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
