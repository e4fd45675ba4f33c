/* The tracker (src/track/tracker.c) on scripted detections: two people
 * crossing keep their ids; an occlusion (weak detections, then none) keeps
 * the id; a parked car becomes stationary and outlives the loss limit; an
 * object that leaves and one that enters where it left get different ids;
 * a single false detection is never confirmed; a label never continues
 * another's track; the same frames give the same tracks whatever the
 * detections' order; the second look's bookkeeping; a lost track is met
 * where it was last seen, but not on a newer track's object; a second box
 * on an object waits for its look; a rejected
 * track is kept as long as a parked one; a person missed for a frame is
 * stood for by their prediction; bad arguments. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "track/track.h"

enum { PERSON = 0, CAR = 2 };
#define W 768.0f /* the frame, for osp_track_coasts */
#define H 576.0f

static osp_track_det_t det(float x1, float y1, float x2, float y2, float score, int label) {
    return (osp_track_det_t){.box = {x1, y1, x2, y2}, .score = score, .label = label};
}

static osp_tracker_t *tracker(const osp_track_params_t *p) {
    osp_tracker_t *t;
    char err[128];
    assert_int_equal(osp_track_new(p, &t, err, sizeof err), 0);
    return t;
}

static void step(osp_tracker_t *t, const osp_track_det_t *d, int n, double time) {
    char err[128];
    assert_int_equal(osp_track_update(t, d, n, time, err, sizeof err), 0);
}

/* The one track (not removed) whose box contains the point, or NULL. */
static const osp_track_t *at_point(const osp_tracker_t *t, float x, float y) {
    const osp_track_t *found = NULL;
    for (int i = 0; i < osp_track_count(t); i++) {
        const osp_track_t *o = osp_track_at(t, i);
        if (o->state == OSP_TRACK_REMOVED) continue;
        if (x >= o->box.x1 && x <= o->box.x2 && y >= o->box.y1 && y <= o->box.y2) {
            assert_null(found);
            found = o;
        }
    }
    return found;
}

static int live(const osp_tracker_t *t) {
    int n = 0;
    for (int i = 0; i < osp_track_count(t); i++)
        n += osp_track_at(t, i)->state != OSP_TRACK_REMOVED;
    return n;
}

static void test_crossing_people_keep_their_ids(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    uint64_t a = 0, b = 0;
    /* A walks right, B walks left, 16 px a frame, boxes 40 wide, 10 px
     * apart vertically: at the crossing they overlap almost whole */
    for (int f = 0; f <= 40; f++) {
        float ax = 100 + 16.0f * f, bx = 740 - 16.0f * f;
        osp_track_det_t d[2] = {det(ax, 200, ax + 40, 300, 0.9f, PERSON),
                                det(bx, 210, bx + 40, 310, 0.85f, PERSON)};
        step(t, d, 2, f * 0.1);
        if (f == 5) {
            a = at_point(t, ax + 20, 205)->id;
            b = at_point(t, bx + 20, 305)->id;
            assert_int_not_equal(a, b);
        }
    }
    /* now A is at the right and B at the left */
    const osp_track_t *ra = at_point(t, 100 + 16.0f * 40 + 20, 205);
    const osp_track_t *rb = at_point(t, 740 - 16.0f * 40 + 20, 305);
    assert_non_null(ra);
    assert_non_null(rb);
    assert_int_equal(ra->id, a);
    assert_int_equal(rb->id, b);
    assert_int_equal(ra->state, OSP_TRACK_CONFIRMED);
    assert_int_equal(live(t), 2);
    osp_track_free(t);
}

/* Two people cross and the detector gives one box for both while one is
 * behind the other: the one behind is lost for those frames, and when the
 * two boxes part each person is the track they were before. The newer
 * track (B) did not start on A's object while A was lost, so A met again
 * beside it is no second track on B's object (drop_duplicates). */
static void test_crossing_behind_one_box_keeps_both_ids(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    uint64_t a = 0, b = 0;
    /* 3 px a frame each way: level at frame 20, still overlapping by an
     * IoU over 0.3 when the boxes part at 22 */
    for (int f = 0; f <= 40; f++) {
        float ax = 300 + 3.0f * f, bx = 420 - 3.0f * f;
        osp_track_det_t d[2] = {det(ax, 200, ax + 40, 300, 0.8f, PERSON),
                                det(bx, 206, bx + 40, 306, 0.8f, PERSON)};
        int n = 2;
        if (f >= 18 && f <= 21) { /* one box for the two, in front: B */
            d[0] = d[1];
            n = 1;
        }
        step(t, d, n, f * 0.1);
        if (f == 5) {
            a = at_point(t, ax + 20, 202)->id;
            b = at_point(t, bx + 20, 304)->id;
            assert_int_not_equal(a, b);
            assert_int_equal(osp_track_set_verdict(t, a, OSP_TRACK_VERIFIED, 0.9f), 0);
            assert_int_equal(osp_track_set_verdict(t, b, OSP_TRACK_VERIFIED, 0.9f), 0);
        }
    }
    const osp_track_t *ra = at_point(t, 300 + 3.0f * 40 + 20, 202);
    const osp_track_t *rb = at_point(t, 420 - 3.0f * 40 + 20, 304);
    assert_non_null(ra);
    assert_non_null(rb);
    assert_int_equal(ra->id, a);
    assert_int_equal(rb->id, b);
    assert_int_equal(live(t), 2);
    osp_track_free(t);
}

static void test_occlusion_keeps_the_id(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    uint64_t id = 0;
    for (int f = 0; f < 40; f++) {
        float x = 50 + 8.0f * f;
        osp_track_det_t d = det(x, 100, x + 50, 250, 0.8f, PERSON);
        int n = 1;
        if (f >= 10 && f < 15) d.score = 0.3f; /* half hidden: a weak detection */
        if (f >= 20 && f < 24) n = 0;          /* hidden whole */
        step(t, &d, n, f / 10.0);
        if (f == 5) id = at_point(t, x + 25, 175)->id;
        if (f >= 10 && f < 15) { /* the weak detections kept it seen */
            const osp_track_t *o = osp_track_find(t, id);
            assert_int_equal(o->state, OSP_TRACK_CONFIRMED);
            assert_int_equal(o->unseen, 0);
            assert_float_equal(o->score, 0.3f, 1e-6);
        }
        if (f >= 20 && f < 24) {
            const osp_track_t *o = osp_track_find(t, id);
            assert_int_equal(o->state, OSP_TRACK_LOST);
            assert_int_equal(o->unseen, f - 19);
            /* predicted along its way */
            assert_true(o->box.x1 > 50 + 8.0f * 19);
        }
    }
    const osp_track_t *o = at_point(t, 50 + 8.0f * 39 + 25, 175);
    assert_non_null(o);
    assert_int_equal(o->id, id);
    assert_int_equal(o->state, OSP_TRACK_CONFIRMED);
    assert_float_equal(o->top_score, 0.8f, 1e-6);
    assert_int_equal(o->hits, 36);
    assert_int_equal(live(t), 1);
    osp_track_free(t);
}

/* A weak detection never starts a track, nor continues a lost one. */
static void test_weak_detections_start_nothing(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    osp_track_det_t d = det(10, 10, 60, 110, 0.4f, PERSON);
    for (int f = 0; f < 10; f++) step(t, &d, 1, f);
    assert_int_equal(osp_track_count(t), 0);
    osp_track_free(t);
}

static void test_parked_car_becomes_stationary_and_stays(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    uint64_t id = 0;
    int f = 0;
    /* drives in and parks */
    for (; f < 20; f++) {
        float x = 100 + 10.0f * (f < 10 ? f : 10);
        osp_track_det_t d = det(x, 300, x + 200, 400, 0.9f, CAR);
        step(t, &d, 1, f * 0.2);
        if (f == 3) id = osp_track_at(t, 0)->id;
        const osp_track_t *o = osp_track_find(t, id);
        if (f < 19) assert_int_equal(o ? o->stationary : 0, 0);
    }
    /* it jitters a pixel or two in place */
    for (; f < 100; f++) {
        float j = (float)(f % 3) - 1.0f;
        osp_track_det_t d = det(200 + j, 300 - j, 400 + j, 400 + j, 0.85f, CAR);
        step(t, &d, 1, f * 0.2);
    }
    const osp_track_t *o = osp_track_find(t, id);
    assert_non_null(o);
    assert_true(o->stationary);
    assert_true(o->motionless >= 10);
    /* unseen for ten times the loss limit (60 s): kept, where it was */
    for (; f < 400; f++) step(t, NULL, 0, f * 0.2);
    o = osp_track_find(t, id);
    assert_non_null(o);
    assert_int_equal(o->state, OSP_TRACK_LOST);
    assert_true(o->stationary);
    assert_float_equal(o->box.x1, 200, 2.0);
    assert_float_equal(o->box.x2, 400, 2.0);
    /* seen again: the same object */
    osp_track_det_t d = det(200, 300, 400, 400, 0.9f, CAR);
    step(t, &d, 1, f++ * 0.2);
    assert_int_equal(osp_track_at(t, 0)->id, id);
    assert_int_equal(osp_track_at(t, 0)->state, OSP_TRACK_CONFIRMED);
    assert_int_equal(osp_track_count(t), 1);
    /* and driving off makes it active */
    for (int i = 1; i <= 5; i++) {
        d = det(200 + 30.0f * i, 300, 400 + 30.0f * i, 400, 0.9f, CAR);
        step(t, &d, 1, f++ * 0.2);
    }
    assert_int_equal(osp_track_at(t, 0)->id, id);
    assert_false(osp_track_at(t, 0)->stationary);
    osp_track_free(t);
}

/* A parked object's own limit: gone after parked_lost_seconds unseen. */
static void test_parked_limit(void **state) {
    (void)state;
    osp_track_params_t p;
    osp_track_params_default(&p);
    p.parked_lost_seconds = 10;
    osp_tracker_t *t = tracker(&p);
    osp_track_det_t d = det(200, 300, 400, 400, 0.9f, CAR);
    int f = 0;
    for (; f < 20; f++) step(t, &d, 1, f);
    assert_true(osp_track_at(t, 0)->stationary);
    for (; f < 30; f++) step(t, NULL, 0, f);
    assert_int_equal(osp_track_at(t, 0)->state, OSP_TRACK_LOST); /* 10 s */
    step(t, NULL, 0, f++);
    assert_int_equal(osp_track_at(t, 0)->state, OSP_TRACK_REMOVED); /* 11 s */
    step(t, NULL, 0, f++);
    assert_int_equal(osp_track_count(t), 0);
    osp_track_free(t);
}

static void test_leaving_and_entering_get_different_ids(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    uint64_t first = 0;
    int f = 0;
    /* walks out at the right edge (x 640) */
    for (; f < 20; f++) {
        float x = 240 + 20.0f * f;
        osp_track_det_t d = det(x, 100, x + 60, 260, 0.9f, PERSON);
        step(t, &d, 1, f * 0.1);
    }
    first = osp_track_at(t, 0)->id;
    /* ten frames later, well inside the loss limit, someone walks in
     * where it left, going the other way */
    for (; f < 30; f++) step(t, NULL, 0, f * 0.1);
    assert_int_equal(osp_track_find(t, first)->state, OSP_TRACK_LOST);
    uint64_t second = 0;
    for (int i = 0; f < 45; f++, i++) {
        float x = 600 - 20.0f * i;
        osp_track_det_t d = det(x, 100, x + 60, 260, 0.9f, PERSON);
        step(t, &d, 1, f * 0.1);
        const osp_track_t *o = at_point(t, x + 30, 180);
        assert_non_null(o);
        if (!second) second = o->id;
        assert_int_equal(o->id, second);
    }
    assert_true(second > first);
    /* the first ends at the loss limit: 31 frames unseen */
    const osp_track_t *o = osp_track_find(t, first);
    assert_non_null(o);
    for (; f < 20 + 31; f++) step(t, NULL, 0, f * 0.1);
    o = osp_track_find(t, first);
    assert_non_null(o);
    assert_int_equal(o->state, OSP_TRACK_REMOVED);
    step(t, NULL, 0, f * 0.1);
    assert_null(osp_track_find(t, first));
    osp_track_free(t);
}

static void test_false_detection_never_confirmed(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    osp_track_det_t d = det(10, 10, 60, 110, 0.95f, PERSON);
    /* one frame in every two, for twenty frames */
    for (int f = 0; f < 20; f++) {
        step(t, &d, f % 2 == 0, f);
        for (int i = 0; i < osp_track_count(t); i++) {
            const osp_track_t *o = osp_track_at(t, i);
            assert_int_not_equal(o->state, OSP_TRACK_CONFIRMED);
            assert_int_not_equal(o->state, OSP_TRACK_LOST);
        }
    }
    /* three in a row confirm */
    for (int f = 20; f < 23; f++) step(t, &d, 1, f);
    assert_int_equal(osp_track_at(t, 0)->state, OSP_TRACK_CONFIRMED);
    osp_track_free(t);
}

static void test_labels_never_share_a_track(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    osp_track_det_t p = det(100, 100, 150, 250, 0.9f, PERSON);
    for (int f = 0; f < 5; f++) step(t, &p, 1, f);
    uint64_t person = osp_track_at(t, 0)->id;
    osp_track_det_t c = det(100, 100, 150, 250, 0.9f, CAR);
    step(t, &c, 1, 5);
    assert_int_equal(osp_track_count(t), 2);
    assert_int_equal(osp_track_find(t, person)->state, OSP_TRACK_LOST);
    const osp_track_t *car = osp_track_at(t, 1);
    assert_int_equal(car->label, CAR);
    assert_int_equal(car->state, OSP_TRACK_TENTATIVE);
    osp_track_free(t);
}

/* A scene of a dozen walkers with noise, entries, exits and misses. */
static int scene(int f, osp_track_det_t *d, int reverse) {
    int n = 0;
    for (int k = 0; k < 12; k++) {
        int start = k * 7, len = 60 + (k * 13) % 40;
        if (f < start || f >= start + len || (f + k) % 11 == 0) continue;
        float dir = (k % 2) ? 1.0f : -1.0f, x = 320 + dir * (f - start) * (4.0f + k % 5);
        float y = 40.0f + 35.0f * k, s = 0.55f + 0.03f * k + ((f * 7 + k) % 5) * 0.001f;
        if ((f + 2 * k) % 9 == 0) s = 0.2f + 0.01f * k;
        float jit = (float)((f * 31 + k * 17) % 7) - 3.0f;
        d[n++] = det(x + jit, y, x + 40 + jit, y + 90, s, k % 3);
    }
    if (reverse)
        for (int i = 0; i < n / 2; i++) {
            osp_track_det_t tmp = d[i];
            d[i] = d[n - 1 - i];
            d[n - 1 - i] = tmp;
        }
    return n;
}

static void test_deterministic(void **state) {
    (void)state;
    osp_tracker_t *a = tracker(NULL), *b = tracker(NULL), *c = tracker(NULL);
    int confirmed = 0;
    for (int f = 0; f < 200; f++) {
        osp_track_det_t da[16], db[16];
        int n = scene(f, da, 0);
        assert_int_equal(scene(f, db, 1), n);
        step(a, da, n, f * 0.1);
        step(b, da, n, f * 0.1);
        step(c, db, n, f * 0.1); /* the same detections in another order */
        assert_int_equal(osp_track_count(a), osp_track_count(b));
        assert_int_equal(osp_track_count(a), osp_track_count(c));
        for (int i = 0; i < osp_track_count(a); i++) {
            const osp_track_t *x = osp_track_at(a, i), *y = osp_track_at(b, i),
                              *z = osp_track_at(c, i);
            assert_memory_equal(x, y, sizeof *x);
            assert_int_equal(x->id, z->id);
            assert_int_equal(x->state, z->state);
            assert_memory_equal(&x->box, &z->box, sizeof x->box);
            confirmed += x->state == OSP_TRACK_CONFIRMED;
        }
    }
    assert_true(confirmed > 500); /* the scene does make objects */
    osp_track_free(a);
    osp_track_free(b);
    osp_track_free(c);
}

/* Two cameras that see the same people at the same time (two copies of one
 * clip) make the same tracks; with one shared counter their ids still
 * differ, so their event ids (start time and id) cannot collide. */
static void test_shared_ids_never_collide(void **state) {
    (void)state;
    _Atomic uint64_t counter = 1;
    osp_tracker_t *a = tracker(NULL), *b = tracker(NULL), *alone = tracker(NULL);
    osp_track_share_ids(a, &counter);
    osp_track_share_ids(b, &counter);
    int compared = 0;
    for (int f = 0; f < 200; f++) {
        osp_track_det_t d[16];
        int n = scene(f, d, 0);
        step(a, d, n, f * 0.1);
        step(b, d, n, f * 0.1);
        step(alone, d, n, f * 0.1);
        /* the same tracks, in the same states, as a tracker alone makes... */
        assert_int_equal(osp_track_count(a), osp_track_count(alone));
        assert_int_equal(osp_track_count(b), osp_track_count(alone));
        for (int i = 0; i < osp_track_count(a); i++) {
            assert_int_equal(osp_track_at(a, i)->state, osp_track_at(alone, i)->state);
            /* ...but under ids no other tracker of the counter gave */
            for (int j = 0; j < osp_track_count(b); j++, compared++)
                assert_true(osp_track_at(a, i)->id != osp_track_at(b, j)->id);
        }
    }
    assert_true(compared > 500);
    assert_true(counter > 2 && (counter - 1) % 2 == 0); /* as many from each */
    osp_track_free(a);
    osp_track_free(b);
    osp_track_free(alone);
}

static void test_second_look_once_per_object(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    osp_track_det_t d[2] = {det(10, 10, 60, 110, 0.9f, PERSON), det(300, 10, 350, 110, 0.9f, PERSON)};
    uint64_t ids[4];
    step(t, d, 2, 0);
    /* both new: both want a look */
    assert_int_equal(osp_track_needs_look(t, ids, 4), 2);
    assert_int_equal(osp_track_needs_look(t, ids, 1), 2); /* count beyond cap */
    uint64_t good = osp_track_at(t, 0)->id, bad = osp_track_at(t, 1)->id;
    assert_int_equal(osp_track_set_verdict(t, good, OSP_TRACK_VERIFIED, 0.8f), 0);
    assert_int_equal(osp_track_set_verdict(t, bad, OSP_TRACK_REJECTED, 0.1f), 0);
    for (int f = 1; f < 6; f++) {
        step(t, d, 2, f);
        assert_int_equal(osp_track_needs_look(t, ids, 4), 0);
    }
    /* rejected stays rejected, even when told otherwise */
    assert_int_equal(osp_track_set_verdict(t, bad, OSP_TRACK_VERIFIED, 0.9f), 0);
    assert_int_equal(osp_track_find(t, bad)->verdict, OSP_TRACK_REJECTED);
    assert_int_equal(osp_track_find(t, good)->verdict, OSP_TRACK_VERIFIED);
    assert_float_equal(osp_track_find(t, good)->look_score, 0.8f, 1e-6);
    /* the verified one's box doubles: one more look */
    d[0] = det(10, 10, 110, 110, 0.9f, PERSON);
    d[1].box.x2 = 400;
    step(t, d, 2, 6);
    assert_int_equal(osp_track_needs_look(t, ids, 4), 1);
    assert_int_equal(ids[0], good);
    assert_int_equal(osp_track_set_verdict(t, good, OSP_TRACK_VERIFIED, 0.85f), 0);
    assert_int_equal(osp_track_needs_look(t, ids, 4), 0);
    /* its score drops a lot: another */
    d[0].score = 0.6f;
    step(t, d, 2, 8);
    assert_int_equal(osp_track_needs_look(t, ids, 4), 1);
    /* errors */
    assert_int_equal(osp_track_set_verdict(t, 999, OSP_TRACK_VERIFIED, 1), OSP_TRACK_ENOENT);
    assert_int_equal(osp_track_set_verdict(t, good, (osp_track_verdict_t)7, 1), OSP_TRACK_EINVAL);
    /* a look that settles nothing changes no verdict */
    assert_int_equal(osp_track_set_verdict(t, good, OSP_TRACK_UNVERIFIED, 0.1f), 0);
    assert_int_equal(osp_track_find(t, good)->verdict, OSP_TRACK_VERIFIED);
    assert_float_equal(osp_track_find(t, good)->look_score, 0.85f, 1e-6);
    osp_track_free(t);
}

/* A verified object that comes to a stop is looked at once more: a box
 * that passed by a hair and never moves (a sign taken for a person)
 * would otherwise stay an object as long as it is in view. Once. */
static void test_stopped_object_looked_at_once_more(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    uint64_t ids[4], id = 0;
    int asked = 0;
    for (int f = 0; f < 40; f++) {
        float x = 100 + 6.0f * (f < 10 ? f : 10); /* walks, then stands */
        osp_track_det_t d = det(x, 100, x + 40, 200, 0.9f, PERSON);
        step(t, &d, 1, f / 10.0);
        if (f == 0) {
            id = osp_track_at(t, 0)->id;
            assert_int_equal(osp_track_set_verdict(t, id, OSP_TRACK_VERIFIED, 0.8f), 0);
            continue;
        }
        int n = osp_track_needs_look(t, ids, 4);
        if (!osp_track_find(t, id)->stationary) {
            assert_int_equal(n, 0);
            continue;
        }
        asked += n;
        if (n) {
            assert_int_equal(ids[0], id);
            assert_int_equal(osp_track_set_verdict(t, id, OSP_TRACK_VERIFIED, 0.7f), 0);
        }
    }
    assert_true(osp_track_find(t, id)->stationary);
    assert_int_equal(asked, 1);
    osp_track_free(t);
}

/* A person walks fast, stops behind something and is hidden for a while,
 * then is seen again where they stopped: the lost track's prediction has
 * gone on at the old speed, far from there, yet the person keeps the id
 * (and so needs no second look). */
static void test_lost_track_met_where_it_was_last_seen(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    uint64_t id = 0;
    float x = 0;
    for (int f = 0; f < 24; f++) {
        if (f < 10) x = 20.0f * f;
        osp_track_det_t d = det(x, 100, x + 50, 250, 0.8f, PERSON);
        int hidden = f >= 10 && f < 14;
        step(t, &d, hidden ? 0 : 1, f / 10.0);
        if (f == 5) id = at_point(t, x + 25, 175)->id;
        if (f == 13) { /* the prediction is past where it stopped, not touching it */
            const osp_track_t *o = osp_track_find(t, id);
            assert_int_equal(o->state, OSP_TRACK_LOST);
            assert_true(o->box.x1 > x + 50);
        }
    }
    assert_int_equal(at_point(t, x + 25, 175)->id, id);
    assert_int_equal(osp_track_find(t, id)->state, OSP_TRACK_CONFIRMED);
    assert_int_equal(live(t), 1);
    osp_track_free(t);
}

/* Returns the track (not removed) whose box is exactly b, or NULL. */
static const osp_track_t *with_box(const osp_tracker_t *t, const osp_track_box_t *b) {
    for (int i = 0; i < osp_track_count(t); i++) {
        const osp_track_t *o = osp_track_at(t, i);
        if (o->state != OSP_TRACK_REMOVED && o->box.x1 == b->x1 && o->box.y1 == b->y1 &&
            o->box.x2 == b->x2 && o->box.y2 == b->y2)
            return o;
    }
    return NULL;
}

/* Person A is seen, then lost while track B (a box beside A's place)
 * goes on; then A's old place gives a box again, one that overlaps B's:
 * with B the newer track, A's return is a second track on B's object, and
 * A ends (the box starts a new, tentative track). The same frames with B
 * seen a frame before A: A is the newer track, and comes back as itself. */
static void test_lost_track_back_on_a_newer_ones_object(void **state) {
    (void)state;
    for (int before = 0; before <= 1; before++) {
        osp_tracker_t *t = tracker(NULL);
        osp_track_det_t a = det(200, 100, 250, 250, 0.8f, PERSON);
        osp_track_det_t b = det(245, 100, 295, 250, 0.8f, PERSON);
        int f = 0;
        for (; f < 6; f++) {
            osp_track_det_t d[2] = {b, a};
            if (before)
                step(t, f ? d : &b, f ? 2 : 1, f / 10.0);
            else
                step(t, &a, 1, f / 10.0);
        }
        uint64_t ida = with_box(t, &a.box)->id;
        for (; f < 10; f++) step(t, &b, 1, f / 10.0);
        const osp_track_t *ob = with_box(t, &b.box);
        assert_non_null(ob);
        assert_int_equal(ob->state, OSP_TRACK_CONFIRMED);
        uint64_t idb = ob->id;
        assert_int_equal(osp_track_find(t, ida)->state, OSP_TRACK_LOST);
        osp_track_det_t d[2] = {a, det(225, 100, 275, 250, 0.8f, PERSON)};
        assert_true(osp_track_iou(&d[0].box, &d[1].box) >= 0.3f);
        step(t, d, 2, f / 10.0);
        const osp_track_t *back = with_box(t, &a.box);
        assert_non_null(back);
        assert_int_equal(with_box(t, &d[1].box)->id, idb);
        if (before) {
            assert_int_equal(back->id, ida);
            assert_int_equal(back->state, OSP_TRACK_CONFIRMED);
        } else {
            assert_int_equal(osp_track_find(t, ida)->state, OSP_TRACK_REMOVED);
            assert_true(back->id > idb);
            assert_int_equal(back->state, OSP_TRACK_TENTATIVE);
        }
        osp_track_free(t);
    }
}

/* A sure new box that overlaps a verified object's box is taken for the
 * detector's second box on that object: its look waits until its track
 * has been seen look_hits frames, while a sure new box apart from any
 * object is looked at on its first frame. */
static void test_second_box_on_an_object_waits_for_its_look(void **state) {
    (void)state;
    osp_track_params_t p;
    osp_track_params_default(&p);
    osp_tracker_t *t = tracker(&p);
    osp_track_det_t a = det(200, 100, 250, 250, 0.8f, PERSON);
    int f = 0;
    for (; f < 3; f++) step(t, &a, 1, f / 10.0);
    uint64_t ida = with_box(t, &a.box)->id, ids[4];
    assert_int_equal(osp_track_needs_look(t, ids, 4), 1);
    assert_int_equal(osp_track_set_verdict(t, ida, OSP_TRACK_VERIFIED, 0.7f), 0);
    osp_track_det_t d[3] = {a, det(225, 100, 275, 250, 0.8f, PERSON),
                            det(500, 100, 550, 250, 0.8f, PERSON)};
    assert_true(osp_track_iou(&d[0].box, &d[1].box) >= 0.3f);
    step(t, d, 3, f++ / 10.0);
    uint64_t twin = with_box(t, &d[1].box)->id, apart = with_box(t, &d[2].box)->id;
    assert_int_equal(osp_track_needs_look(t, ids, 4), 1);
    assert_int_equal(ids[0], apart);
    assert_int_equal(osp_track_set_verdict(t, apart, OSP_TRACK_VERIFIED, 0.7f), 0);
    for (int hits = 2; hits <= p.look_hits; hits++) {
        step(t, d, 3, f++ / 10.0);
        int n = osp_track_needs_look(t, ids, 4);
        assert_int_equal(n, hits == p.look_hits);
        if (n) assert_int_equal(ids[0], twin);
    }
    osp_track_free(t);
}

/* A rejected track (the second look's "no person here": a tripod) is kept
 * unseen as long as a parked car, and stays where it was: the false box
 * that comes back after longer than lost_frames meets it again, still
 * rejected, and wants no new look. */
static void test_rejected_track_outlives_the_loss_limit(void **state) {
    (void)state;
    osp_track_params_t p;
    osp_track_params_default(&p);
    osp_tracker_t *t = tracker(&p);
    uint64_t ids[4];
    int f = 0;
    for (; f < 5; f++) { /* it drifts a little, as a false box does */
        osp_track_det_t d = det(400 + 2.0f * f, 300, 430 + 2.0f * f, 360, 0.6f, PERSON);
        step(t, &d, 1, f / 10.0);
    }
    uint64_t id = osp_track_at(t, 0)->id;
    assert_int_equal(osp_track_set_verdict(t, id, OSP_TRACK_REJECTED, 0.05f), 0);
    for (; f < 5 + p.lost_frames + 20; f++) step(t, NULL, 0, f / 10.0);
    const osp_track_t *o = osp_track_find(t, id);
    assert_non_null(o);
    assert_int_equal(o->state, OSP_TRACK_LOST);
    assert_true(o->box.x1 < 420); /* no drift at its old speed */
    osp_track_det_t d = det(408, 300, 438, 360, 0.6f, PERSON);
    step(t, &d, 1, f / 10.0);
    assert_int_equal(osp_track_count(t), 1);
    assert_int_equal(osp_track_at(t, 0)->id, id);
    assert_int_equal(osp_track_at(t, 0)->verdict, OSP_TRACK_REJECTED);
    assert_int_equal(osp_track_needs_look(t, ids, 4), 0);
    /* gone for longer than a parked car may be: removed */
    for (f++; f < 5 + p.lost_frames + 20 + 3010 + 2; f++) step(t, NULL, 0, f / 10.0);
    assert_null(osp_track_find(t, id));
    osp_track_free(t);
}

/* A person steps out from behind a rejected false box (the tripod) and
 * walks off: the rejected track may take their first boxes, where it
 * stands, but does not go off with them (hiding them all the way): it
 * stays where it was rejected, and the person gets a track of their own. */
static void test_rejected_track_keeps_to_its_place(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    osp_track_det_t tripod = det(300, 200, 340, 300, 0.6f, PERSON);
    for (int f = 0; f < 4; f++) step(t, &tripod, 1, f / 10.0);
    uint64_t rejected = osp_track_at(t, 0)->id;
    assert_int_equal(osp_track_set_verdict(t, rejected, OSP_TRACK_REJECTED, 0.05f), 0);
    float x = 0;
    for (int f = 4; f < 40; f++) {
        x = 296 + 8.0f * (f - 4);
        osp_track_det_t d = det(x, 196, x + 40, 300, 0.7f, PERSON);
        step(t, &d, 1, f / 10.0);
    }
    const osp_track_t *o = osp_track_find(t, rejected);
    assert_non_null(o);
    assert_true(o->box.x1 < 320); /* still at the tripod */
    const osp_track_t *walker = at_point(t, x + 20, 250);
    assert_non_null(walker);
    assert_int_not_equal(walker->id, rejected);
    assert_int_equal(walker->verdict, OSP_TRACK_UNVERIFIED);
    osp_track_free(t);
}

static void test_bad_arguments(void **state) {
    (void)state;
    char err[128];
    osp_tracker_t *t = tracker(NULL);
    osp_track_det_t d = det(10, 10, 60, 110, 0.9f, PERSON);
    step(t, &d, 1, 5.0);
    assert_int_equal(osp_track_update(t, &d, 1, 4.0, err, sizeof err), OSP_TRACK_EINVAL);
    assert_non_null(strstr(err, "before the previous frame"));
    assert_int_equal(osp_track_update(t, &d, -1, 6.0, err, sizeof err), OSP_TRACK_EINVAL);
    assert_int_equal(osp_track_update(t, NULL, 1, 6.0, err, sizeof err), OSP_TRACK_EINVAL);
    /* unusable detections are skipped, not fatal */
    osp_track_det_t junk[3] = {det(10, 10, 5, 110, 0.9f, PERSON), det(0, 0, 1e30f, 1, 0.9f, -1),
                               det(0, 0, 10, 10, NAN, PERSON)};
    step(t, junk, 3, 6.0);
    assert_int_equal(live(t), 0);
    osp_track_free(t);

    osp_track_params_t p;
    osp_track_params_default(&p);
    p.low_score = 0.7f;
    assert_int_equal(osp_track_new(&p, &t, err, sizeof err), OSP_TRACK_EINVAL);
    assert_null(t);
    assert_non_null(strstr(err, "low_score"));
    osp_track_params_default(&p);
    p.match_iou = 0;
    assert_int_equal(osp_track_params_check(&p, err, sizeof err), OSP_TRACK_EINVAL);
    assert_non_null(strstr(err, "match_iou"));
    osp_track_params_default(&p);
    p.look_hits = 0;
    assert_int_equal(osp_track_params_check(&p, err, sizeof err), OSP_TRACK_EINVAL);
    assert_non_null(strstr(err, "look_hits"));
    osp_track_params_default(&p);
    p.coast_frames = -1;
    assert_int_equal(osp_track_params_check(&p, err, sizeof err), OSP_TRACK_EINVAL);
    assert_non_null(strstr(err, "coast_frames"));
}

/* A sure new box (look_now_score) wants its look on its first frame; a
 * doubtful one once it has been seen look_hits frames, as it is
 * confirmed, and a flicker seen once never does. A look that settled
 * nothing (OSP_TRACK_UNVERIFIED) is taken again the next frame, however
 * doubtful the box has become. */
static void test_doubtful_new_box_waits_for_its_look(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL); /* look_now_score 0.6, look_hits 3 = confirm_hits */
    osp_track_det_t d[3] = {det(10, 10, 60, 110, 0.9f, PERSON), det(300, 10, 350, 110, 0.55f, PERSON),
                            det(600, 10, 650, 110, 0.55f, PERSON)};
    uint64_t ids[4];
    step(t, d, 3, 0);
    uint64_t sure = osp_track_at(t, 0)->id, doubtful = osp_track_at(t, 1)->id;
    assert_int_equal(osp_track_needs_look(t, ids, 4), 1);
    assert_int_equal(ids[0], sure);
    /* the sure one's look settles nothing; its box is doubtful now */
    assert_int_equal(osp_track_set_verdict(t, sure, OSP_TRACK_UNVERIFIED, 0.2f), 0);
    d[0].score = 0.55f;
    step(t, d, 2, 1); /* the third was a flicker: gone, never looked at */
    assert_int_equal(osp_track_needs_look(t, ids, 4), 1);
    assert_int_equal(ids[0], sure);
    assert_int_equal(osp_track_set_verdict(t, sure, OSP_TRACK_VERIFIED, 0.7f), 0);
    step(t, d, 2, 2);
    assert_int_equal(osp_track_find(t, doubtful)->state, OSP_TRACK_CONFIRMED);
    assert_int_equal(osp_track_needs_look(t, ids, 4), 1);
    assert_int_equal(ids[0], doubtful);
    osp_track_free(t);
    /* look_hits above confirm_hits: still looked at as it is confirmed */
    osp_track_params_t p;
    osp_track_params_default(&p);
    p.look_hits = 10;
    t = tracker(&p);
    for (int f = 0; f < 3; f++) {
        step(t, &d[1], 1, f);
        assert_int_equal(osp_track_needs_look(t, ids, 4), f == 2);
    }
    osp_track_free(t);
}

/* A person the detector misses for a frame: their lost track's prediction
 * stands for them that frame (osp_track_coasts), not the next, and only
 * inside the frame; not when a box seen this frame overlaps it (what
 * became of the person), unless that box is one the caller does not
 * report (verified 1: an unverified track's); never for a rejected track,
 * an unverified one when verdicts count, or with coast_frames 0. */
static void test_missed_person_coasts_one_frame(void **state) {
    (void)state;
    for (int frames = 0; frames <= 1; frames++) {
        osp_track_params_t p;
        osp_track_params_default(&p);
        p.coast_frames = frames;
        osp_tracker_t *t = tracker(&p);
        /* A walks right 10 px a frame; B stands 200 px away and is never verified */
        osp_track_det_t d[3];
        int f = 0;
        for (; f < 5; f++) {
            d[0] = det(100 + 10.0f * f, 100, 140 + 10.0f * f, 200, 0.8f, PERSON);
            d[1] = det(400, 100, 440, 200, 0.8f, PERSON);
            step(t, d, 2, f / 10.0);
        }
        const osp_track_t *a = at_point(t, 160, 150), *b = at_point(t, 420, 150);
        uint64_t ida = a->id, idb = b->id;
        assert_int_equal(osp_track_set_verdict(t, ida, OSP_TRACK_VERIFIED, 0.8f), 0);
        /* both missed this frame */
        step(t, NULL, 0, f++ / 10.0);
        a = osp_track_find(t, ida), b = osp_track_find(t, idb);
        assert_int_equal(a->state, OSP_TRACK_LOST);
        assert_int_equal(osp_track_coasts(t, a, 1, W, H), frames);
        assert_int_equal(osp_track_coasts(t, a, 0, W, H), frames);
        assert_int_equal(osp_track_coasts(t, b, 1, W, H), 0); /* not verified */
        assert_int_equal(osp_track_coasts(t, b, 0, W, H), frames);
        /* its prediction went on walking */
        assert_true(a->box.x1 > 140 && a->box.x1 < 160);
        /* one that reaches past the frame's edge is most likely leaving */
        assert_int_equal(osp_track_coasts(t, a, 1, a->box.x2, a->box.y2), frames);
        assert_int_equal(osp_track_coasts(t, a, 1, a->box.x2 - 1, H), 0);
        assert_int_equal(osp_track_coasts(t, a, 1, W, a->box.y2 - 1), 0);
        /* two frames missed: no longer */
        step(t, NULL, 0, f++ / 10.0);
        assert_int_equal(osp_track_coasts(t, osp_track_find(t, ida), 1, W, H), 0);
        assert_int_equal(osp_track_coasts(t, osp_track_find(t, ida), 0, W, H), 0);
        osp_track_free(t);
        if (!frames) continue;

        /* a box seen this frame overlapping the prediction by IoU 0.1 or
         * more: a new unverified track on it hides the prediction only
         * when every track counts */
        t = tracker(&p);
        for (f = 0; f < 5; f++) {
            d[0] = det(100 + 10.0f * f, 100, 140 + 10.0f * f, 200, 0.8f, PERSON);
            step(t, d, 1, f / 10.0);
        }
        ida = at_point(t, 160, 150)->id;
        assert_int_equal(osp_track_set_verdict(t, ida, OSP_TRACK_VERIFIED, 0.8f), 0);
        d[0] = det(176, 100, 216, 200, 0.8f, PERSON); /* IoU 0.15 with the prediction, too
                                                        * little to continue the track */
        step(t, d, 1, f++ / 10.0);
        a = osp_track_find(t, ida);
        assert_int_equal(a->state, OSP_TRACK_LOST);
        float v = osp_track_iou(&a->box, &d[0].box);
        assert_true(v >= 0.1f && v < 0.2f);
        const osp_track_t *n = at_point(t, 215, 150);
        assert_non_null(n);
        assert_int_not_equal(n->id, ida);
        assert_int_equal(osp_track_coasts(t, a, 1, W, H), 1);
        assert_int_equal(osp_track_coasts(t, a, 0, W, H), 0);
        /* once that track is verified, it hides the prediction either way */
        assert_int_equal(osp_track_set_verdict(t, n->id, OSP_TRACK_VERIFIED, 0.8f), 0);
        assert_int_equal(osp_track_coasts(t, a, 1, W, H), 0);
        /* a seen track of another label hides nothing */
        osp_track_free(t);
        t = tracker(&p);
        for (f = 0; f < 5; f++) {
            d[0] = det(100 + 10.0f * f, 100, 140 + 10.0f * f, 200, 0.8f, PERSON);
            step(t, d, 1, f / 10.0);
        }
        ida = at_point(t, 160, 150)->id;
        d[0] = det(150, 100, 190, 200, 0.8f, CAR);
        step(t, d, 1, f / 10.0);
        assert_int_equal(osp_track_coasts(t, osp_track_find(t, ida), 0, W, H), 1);
        /* a rejected track never stands for anything */
        assert_int_equal(osp_track_set_verdict(t, ida, OSP_TRACK_REJECTED, 0.1f), 0);
        assert_int_equal(osp_track_coasts(t, osp_track_find(t, ida), 0, W, H), 0);
        /* nor does one seen this frame */
        for (int i = 0; i < osp_track_count(t); i++)
            if (osp_track_at(t, i)->label == CAR)
                assert_int_equal(osp_track_coasts(t, osp_track_at(t, i), 0, W, H), 0);
        osp_track_free(t);
    }
}

static void test_max_tracks(void **state) {
    (void)state;
    osp_track_params_t p;
    osp_track_params_default(&p);
    p.max_tracks = 3;
    osp_tracker_t *t = tracker(&p);
    osp_track_det_t d[5];
    for (int i = 0; i < 5; i++) d[i] = det(100.0f * i, 0, 100.0f * i + 50, 80, 0.9f - 0.1f * i, 0);
    step(t, d, 5, 0);
    assert_int_equal(osp_track_count(t), 3);
    /* the most confident were kept */
    assert_float_equal(osp_track_at(t, 2)->score, 0.7f, 1e-6);
    osp_track_free(t);
}

/* osp_track_ahead: a person walking 20 px a frame is expected 20 px on
 * once the filter has the speed, and asking moves nothing (the same
 * answer twice); no such id. */
static void test_ahead_is_where_the_next_frame_should_show_it(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    for (int f = 0; f < 10; f++) {
        osp_track_det_t d = det(100 + 20.0f * f, 100, 160 + 20.0f * f, 250, 0.9f, PERSON);
        step(t, &d, 1, f * 0.2);
    }
    const osp_track_t *o = at_point(t, 310, 200);
    assert_non_null(o);
    osp_track_box_t a, b;
    assert_int_equal(osp_track_ahead(t, o->id, &a), 0);
    assert_int_equal(osp_track_ahead(t, o->id, &b), 0);
    assert_memory_equal(&a, &b, sizeof a);
    assert_float_equal(a.x1, 300, 4);
    assert_float_equal(a.x2, 360, 4);
    assert_float_equal(a.y1, 100, 2);
    assert_float_equal(a.y2, 250, 2);
    assert_int_equal(osp_track_ahead(t, o->id + 100, &b), OSP_TRACK_ENOENT);
    osp_track_free(t);
}

/* A box under a pixel wide or high (one cut to a sliver by the side of a
 * crop or the frame) starts no track, however confident and often seen. */
static void test_box_under_a_pixel_is_no_object(void **state) {
    (void)state;
    osp_tracker_t *t = tracker(NULL);
    for (int f = 0; f < 10; f++) {
        osp_track_det_t d[2] = {det(852.0f, 248, 852.4f, 261, 0.9f, PERSON),
                                det(100, 300.0f, 140, 300.6f, 0.9f, PERSON)};
        step(t, d, 2, f * 0.1);
    }
    assert_int_equal(live(t), 0);
    /* a pixel is enough */
    for (int f = 10; f < 20; f++) {
        osp_track_det_t d = det(852.0f, 248, 853.0f, 261, 0.9f, PERSON);
        step(t, &d, 1, f * 0.1);
    }
    assert_int_equal(live(t), 1);
    osp_track_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_box_under_a_pixel_is_no_object),
        cmocka_unit_test(test_crossing_people_keep_their_ids),
        cmocka_unit_test(test_crossing_behind_one_box_keeps_both_ids),
        cmocka_unit_test(test_occlusion_keeps_the_id),
        cmocka_unit_test(test_weak_detections_start_nothing),
        cmocka_unit_test(test_parked_car_becomes_stationary_and_stays),
        cmocka_unit_test(test_parked_limit),
        cmocka_unit_test(test_leaving_and_entering_get_different_ids),
        cmocka_unit_test(test_false_detection_never_confirmed),
        cmocka_unit_test(test_labels_never_share_a_track),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_shared_ids_never_collide),
        cmocka_unit_test(test_second_look_once_per_object),
        cmocka_unit_test(test_stopped_object_looked_at_once_more),
        cmocka_unit_test(test_doubtful_new_box_waits_for_its_look),
        cmocka_unit_test(test_lost_track_met_where_it_was_last_seen),
        cmocka_unit_test(test_lost_track_back_on_a_newer_ones_object),
        cmocka_unit_test(test_second_box_on_an_object_waits_for_its_look),
        cmocka_unit_test(test_rejected_track_outlives_the_loss_limit),
        cmocka_unit_test(test_rejected_track_keeps_to_its_place),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_missed_person_coasts_one_frame),
        cmocka_unit_test(test_max_tracks),
        cmocka_unit_test(test_ahead_is_where_the_next_frame_should_show_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
