/* The multi-object tracker; see track.h and docs/tracking.md. */
#include "track/track.h"

#include <math.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "track/assign.h"
#include "track/kalman.h"

/* Frames a lost track is also met at the box it was last seen at, on top of
 * its prediction: half a second at 10 frames/s. */
#define SEEN_FRAMES 5
/* Least IoU of a detection with a rejected track's place for the two to
 * pair: the false box jitters in place, a person walking by overlaps it
 * less for most of the way. */
#define REJECTED_IOU 0.5f
/* Least IoU of a lost track's box, when it is met again, with the box of a
 * newer track seen in the same frame, for the lost one to be a second
 * track on the newer one's object (drop_duplicates). */
#define DUPLICATE_IOU 0.3f
/* Least IoU of a lost track's prediction with the box of a track seen this
 * frame for the prediction not to stand for its object (osp_track_coasts):
 * when a person's boxes part or merge, the box seen is the person. */
#define COAST_IOU 0.1f
/* What a lost track pays on top of 1 - IoU to be matched (associate). */
#define LOST_COST 0.05
/* Least side of a detection's box, in pixels. A box narrower or shorter is
 * what is left of one cut by the side of the frame or of a crop: its
 * object is elsewhere, and a box that rounds to no pixel is no object. */
#define MIN_SIDE_PX 1.0f

struct trk {
    osp_track_t pub;
    osp_kalman_t kf;
    float ax, ay;           /* the centre when it last moved: stillness is measured from here */
    double still_since;     /* the frame time it was there */
    osp_track_box_t anchor; /* a rejected track's box when it was rejected */
    int hit;                /* matched in the frame being processed */
    int cand;               /* if hit: the candidate it was matched with */
    int back;               /* if hit: it was lost before this frame, */
    double back_from;       /* last seen at this frame time */
    int twin;               /* started on a box overlapping a verified object's (start) */
    int tried;              /* looked at without a verdict (OSP_TRACK_UNVERIFIED) */
    int still_looked;       /* a verdict was recorded while stationary */
    int looked;             /* a verdict was recorded; the score and area it was given at: */
    float look_at_score, look_at_area;
};

/* A detection taken into the frame's association, most confident first. */
struct cand {
    float score;
    int det;
    int used;
};

struct osp_tracker {
    osp_track_params_t p;
    struct trk *trk; /* in id order */
    int n, cap;
    uint64_t next_id;
    _Atomic uint64_t *shared_ids; /* osp_track_share_ids, or NULL */
    double now;
    int started;
    /* scratch, grown to the largest frame seen and reused */
    struct cand *cand;
    int ccap;
    int *pool, *cols, *r2c;
    int pcap;
    double *cost;
    size_t costcap;
    osp_assign_ws_t ws;
};

static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

void osp_track_params_default(osp_track_params_t *p) {
    /* ByteTrack's split of confident and weak detections and its IoU
     * gates; the confirmation, loss and stillness counts are in frames of
     * a camera at 5-10 frames/s, the rate Frigate detects at. */
    *p = (osp_track_params_t){
        .high_score = 0.5f,
        .low_score = 0.1f,
        .new_score = 0.5f,
        .match_iou = 0.2f,
        .low_match_iou = 0.5f,
        .tentative_iou = 0.3f,
        .confirm_hits = 3,
        .lost_frames = 30,
        .lost_seconds = 0,
        .still_fraction = 0.1f,
        .still_frames = 10,
        .still_seconds = 0,
        .parked_lost_frames = 0,
        .parked_lost_seconds = 300,
        .relook_score = 0.2f,
        .relook_area = 2.0f,
        .look_now_score = 0.6f,
        .look_hits = 3,
        .coast_frames = 1,
        .max_tracks = 256,
        .max_dets = 256,
    };
}

static int unit(float v) { return v >= 0 && v <= 1; }
static int iou_gate(float v) { return v > 0 && v <= 1; }
static int seconds(double v) { return v >= 0 && v <= 1e9; }

int osp_track_params_check(const osp_track_params_t *p, char *err, size_t errlen) {
    const char *bad = NULL;
    if (!unit(p->high_score))
        bad = "high_score must be within 0..1";
    else if (!unit(p->low_score))
        bad = "low_score must be within 0..1";
    else if (p->low_score > p->high_score)
        bad = "low_score must not exceed high_score";
    else if (!unit(p->new_score))
        bad = "new_score must be within 0..1";
    else if (!iou_gate(p->match_iou))
        bad = "match_iou must be above 0 and at most 1";
    else if (!iou_gate(p->low_match_iou))
        bad = "low_match_iou must be above 0 and at most 1";
    else if (!iou_gate(p->tentative_iou))
        bad = "tentative_iou must be above 0 and at most 1";
    else if (p->confirm_hits < 1 || p->confirm_hits > 1000)
        bad = "confirm_hits must be 1..1000";
    else if (p->lost_frames < 0 || p->lost_frames > 1000000)
        bad = "lost_frames must be 0..1000000";
    else if (!seconds(p->lost_seconds))
        bad = "lost_seconds must be 0..1e9";
    else if (!(p->still_fraction >= 0 && p->still_fraction <= 10))
        bad = "still_fraction must be 0..10";
    else if (p->still_frames < 1 || p->still_frames > 1000000)
        bad = "still_frames must be 1..1000000";
    else if (!seconds(p->still_seconds))
        bad = "still_seconds must be 0..1e9";
    else if (p->parked_lost_frames < 0)
        bad = "parked_lost_frames must not be negative";
    else if (!seconds(p->parked_lost_seconds))
        bad = "parked_lost_seconds must be 0..1e9";
    else if (!(p->relook_score > 0 && p->relook_score <= 1))
        bad = "relook_score must be in (0, 1]";
    else if (!(p->relook_area > 1 && p->relook_area <= 1e6))
        bad = "relook_area must be above 1";
    else if (!unit(p->look_now_score))
        bad = "look_now_score must be within 0..1";
    else if (p->look_hits < 1 || p->look_hits > 1000)
        bad = "look_hits must be 1..1000";
    else if (p->coast_frames < 0 || p->coast_frames > 1000)
        bad = "coast_frames must be 0..1000";
    else if (p->max_tracks < 1 || p->max_tracks > 4096)
        bad = "max_tracks must be 1..4096";
    else if (p->max_dets < 1 || p->max_dets > 4096)
        bad = "max_dets must be 1..4096";
    if (bad) return fail(err, errlen, OSP_TRACK_EINVAL, "tracker: %s", bad);
    return 0;
}

int osp_track_new(const osp_track_params_t *p, osp_tracker_t **out, char *err, size_t errlen) {
    *out = NULL;
    osp_track_params_t def;
    if (!p) {
        osp_track_params_default(&def);
        p = &def;
    }
    int r = osp_track_params_check(p, err, errlen);
    if (r) return r;
    osp_tracker_t *t = calloc(1, sizeof *t);
    if (!t) return fail(err, errlen, OSP_TRACK_ENOMEM, "tracker: out of memory");
    t->p = *p;
    t->next_id = 1;
    *out = t;
    return 0;
}

void osp_track_share_ids(osp_tracker_t *t, _Atomic uint64_t *counter) { t->shared_ids = counter; }

void osp_track_free(osp_tracker_t *t) {
    if (!t) return;
    free(t->trk);
    free(t->cand);
    free(t->pool);
    free(t->cols);
    free(t->r2c);
    free(t->cost);
    osp_assign_free(&t->ws);
    free(t);
}

float osp_track_iou(const osp_track_box_t *a, const osp_track_box_t *b) {
    double iw = fmin(a->x2, b->x2) - fmax(a->x1, b->x1);
    double ih = fmin(a->y2, b->y2) - fmax(a->y1, b->y1);
    if (!(iw > 0) || !(ih > 0)) return 0;
    double inter = iw * ih;
    double ua = ((double)a->x2 - a->x1) * ((double)a->y2 - a->y1) +
                ((double)b->x2 - b->x1) * ((double)b->y2 - b->y1) - inter;
    double v = inter / ua;
    return (ua > 0 && isfinite(v)) ? (float)v : 0;
}

static int usable(const osp_track_det_t *d) {
    const osp_track_box_t *b = &d->box;
    return isfinite(b->x1) && isfinite(b->y1) && isfinite(b->x2) && isfinite(b->y2) &&
           b->x2 - b->x1 >= MIN_SIDE_PX && b->y2 - b->y1 >= MIN_SIDE_PX && isfinite(d->score) &&
           d->label >= 0;
}

/* Most confident first; the detection's place in the frame breaks ties, so
 * the order (and with it every id) depends on the input alone. */
static int by_score(const void *pa, const void *pb) {
    const struct cand *a = pa, *b = pb;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return (a->det > b->det) - (a->det < b->det);
}

static int grow(void **buf, int *cap, int want, size_t elem) {
    if (want <= *cap) return 0;
    void *nb = realloc(*buf, (size_t)want * elem);
    if (!nb) return -1;
    *buf = nb;
    *cap = want;
    return 0;
}

/* Every allocation the frame can need, made before anything changes, so
 * that a failure leaves the tracker as it was. */
static int reserve(osp_tracker_t *t, int nc) {
    int want_trk = t->n + nc < t->p.max_tracks ? t->n + nc : t->p.max_tracks;
    if (want_trk < t->n) want_trk = t->n;
    if (grow((void **)&t->trk, &t->cap, want_trk, sizeof *t->trk)) return -1;
    /* pool, cols and r2c share one capacity: tracks or candidates, the more */
    int big = t->n > nc ? t->n : nc;
    if (big > t->pcap) {
        int *a = realloc(t->pool, (size_t)big * sizeof *a);
        if (a) t->pool = a;
        int *b = a ? realloc(t->cols, (size_t)big * sizeof *b) : NULL;
        if (b) t->cols = b;
        int *c = b ? realloc(t->r2c, (size_t)big * sizeof *c) : NULL;
        if (!c) return -1;
        t->r2c = c;
        t->pcap = big;
    }
    size_t cells = (size_t)t->n * (size_t)nc;
    if (cells > t->costcap) {
        double *c = realloc(t->cost, cells * sizeof *c);
        if (!c) return -1;
        t->cost = c;
        t->costcap = cells;
    }
    return osp_assign_reserve(&t->ws, t->n, nc);
}

static void box_centre(const osp_track_box_t *b, float *cx, float *cy, float *w, float *h) {
    *cx = 0.5f * (b->x1 + b->x2);
    *cy = 0.5f * (b->y1 + b->y2);
    *w = b->x2 - b->x1;
    *h = b->y2 - b->y1;
}

static void set_box(osp_track_box_t *b, const float v[4]) {
    *b = (osp_track_box_t){v[0], v[1], v[2], v[3]};
}

static void to_arr(const osp_track_box_t *b, float v[4]) {
    v[0] = b->x1, v[1] = b->y1, v[2] = b->x2, v[3] = b->y2;
}

static void match(osp_tracker_t *t, struct trk *k, const osp_track_det_t *d) {
    osp_track_t *o = &k->pub;
    k->back = o->state == OSP_TRACK_LOST;
    k->back_from = o->last_seen;
    float v[4];
    to_arr(&d->box, v);
    osp_kalman_update(&k->kf, v);
    osp_kalman_box(&k->kf, v);
    set_box(&o->smooth, v);
    o->box = o->seen = d->box;
    o->region = d->region;
    o->has_region = d->has_region;
    o->score = d->score;
    if (d->score > o->top_score) {
        o->top_score = d->score;
        o->top_box = d->box;
        o->top_time = t->now;
    }
    o->hits++;
    o->unseen = 0;
    o->last_seen = t->now;
    if (o->state == OSP_TRACK_LOST ||
        (o->state == OSP_TRACK_TENTATIVE && o->hits >= t->p.confirm_hits))
        o->state = OSP_TRACK_CONFIRMED;
    k->hit = 1;

    float cx, cy, w, h, f = t->p.still_fraction;
    box_centre(&d->box, &cx, &cy, &w, &h);
    if (fabsf(cx - k->ax) <= f * w && fabsf(cy - k->ay) <= f * h) {
        o->motionless++;
        if (o->motionless >= t->p.still_frames && t->now - k->still_since >= t->p.still_seconds)
            o->stationary = 1;
    } else {
        k->ax = cx, k->ay = cy;
        k->still_since = t->now;
        o->motionless = 0;
        o->stationary = 0;
    }
}

/* Pairs the tracks in pool with the unused candidates in [from, to) of the
 * same label whose IoU with the track's prediction is at least min_iou,
 * for the largest total IoU. */
static void associate(osp_tracker_t *t, const osp_track_det_t *dets, int np, int from, int to,
                      float min_iou) {
    int nc = 0;
    for (int c = from; c < to; c++)
        if (!t->cand[c].used) t->cols[nc++] = c;
    if (!np || !nc) return;
    for (int r = 0; r < np; r++) {
        const struct trk *k = &t->trk[t->pool[r]];
        const osp_track_t *o = &k->pub;
        for (int c = 0; c < nc; c++) {
            const osp_track_det_t *d = &dets[t->cand[t->cols[c]].det];
            float iou = 0;
            if (d->label != o->label) {
                /* a label never continues another's track */
            } else if (o->verdict == OSP_TRACK_REJECTED) {
                /* A rejected track holds its place and only that: a box
                 * that comes back there, not a person walking past, whose
                 * boxes it would otherwise take, follow and hide (on
                 * vtest.avi the tripod's went off with a passer-by). */
                iou = osp_track_iou(&k->anchor, &d->box);
                if (iou < REJECTED_IOU) iou = 0;
            } else {
                iou = osp_track_iou(&o->smooth, &d->box);
                /* A lost track is also met where it was last seen: its
                 * prediction goes on at the speed it had, and a person who
                 * stopped behind someone (or whose last boxes jittered)
                 * comes back at the old place, not the predicted one.
                 * Without this, such a person came back as a new track and
                 * its look was spent again (docs/tracking.md, States). Only
                 * for a short while: someone who walks in where another
                 * left, later, is someone else. */
                if (o->state == OSP_TRACK_LOST && o->unseen <= SEEN_FRAMES) {
                    float at = osp_track_iou(&k->pub.seen, &d->box);
                    if (at > iou) iou = at;
                }
            }
            /* a pair below the gate costs as much as no pair at all; a
             * lost track pays LOST_COST more, so that a box two tracks
             * meet about as well goes on with the one seen last frame:
             * when two people cross and the detector gives one box, it
             * stays with the person in front instead of passing between
             * the two frame by frame */
            double cost = 1.0 - iou + (o->state == OSP_TRACK_LOST ? LOST_COST : 0.0);
            t->cost[(size_t)r * nc + c] = iou >= min_iou ? (cost < 0.999 ? cost : 0.999) : 1.0;
        }
    }
    osp_assign_solve(&t->ws, t->cost, np, nc, t->r2c); /* reserved: cannot fail */
    for (int r = 0; r < np; r++) {
        int c = t->r2c[r];
        if (c < 0 || t->cost[(size_t)r * nc + c] >= 1.0) continue;
        struct cand *cd = &t->cand[t->cols[c]];
        cd->used = 1;
        t->trk[t->pool[r]].cand = t->cols[c];
        match(t, &t->trk[t->pool[r]], &dets[cd->det]);
    }
}

static void start(osp_tracker_t *t, const osp_track_det_t *d) {
    struct trk *k = &t->trk[t->n++];
    memset(k, 0, sizeof *k);
    osp_track_t *o = &k->pub;
    float v[4], w, h;
    to_arr(&d->box, v);
    osp_kalman_init(&k->kf, v);
    o->id = t->shared_ids ? atomic_fetch_add(t->shared_ids, 1) : t->next_id++;
    o->label = d->label;
    o->state = t->p.confirm_hits <= 1 ? OSP_TRACK_CONFIRMED : OSP_TRACK_TENTATIVE;
    o->verdict = OSP_TRACK_UNVERIFIED;
    o->box = o->smooth = o->top_box = o->seen = d->box;
    o->region = d->region;
    o->has_region = d->has_region;
    o->score = o->top_score = d->score;
    o->top_time = o->first_seen = o->last_seen = t->now;
    o->look_score = -1;
    o->hits = 1;
    box_centre(&d->box, &k->ax, &k->ay, &w, &h);
    k->still_since = t->now;
    k->hit = 1;
    /* A box that overlaps a verified object's box seen this frame is most
     * often the detector's second box on that object: a look at it then
     * passes (it is half on the person), and the track goes on with what
     * that box drifts to. Such a track waits for its look until it has
     * been seen look_hits frames, by when the two boxes have parted or
     * the second one has gone. */
    for (int i = 0; i < t->n - 1 && !k->twin; i++) {
        const osp_track_t *obj = &t->trk[i].pub;
        k->twin = t->trk[i].hit && obj->state == OSP_TRACK_CONFIRMED &&
                  obj->verdict == OSP_TRACK_VERIFIED && obj->label == o->label &&
                  osp_track_iou(&obj->box, &d->box) >= DUPLICATE_IOU;
    }
}

/* A lost track met again on a box that overlaps the box of a newer track
 * seen this frame is a second track on the newer one's object: while it
 * was lost the newer track went on with the object (or had started on it
 * beside the old one: the detector often gives two boxes on a person, side
 * by side), and what the old one meets now is a second box on that object,
 * or what is left of one once the person moves on. On vtest.avi two such
 * tracks, each verified when its object was its own, went on to give
 * false boxes beside the person. The old track ends here, and its
 * detection is free to start a track, which has to earn its look as any
 * new one does. The newer track must have started while the old one was
 * lost, or beside a verified object (a twin): two people who cross are
 * two tracks that met, and the one lost behind the other for a few
 * frames is still its own person when it comes out. */
static void drop_duplicates(osp_tracker_t *t) {
    for (int i = 0; i < t->n; i++) {
        struct trk *k = &t->trk[i];
        if (!k->hit || !k->back || k->pub.verdict == OSP_TRACK_REJECTED) continue;
        for (int j = 0; j < t->n; j++) {
            const struct trk *w = &t->trk[j];
            if (j == i || !w->hit || w->back || w->pub.label != k->pub.label ||
                w->pub.verdict == OSP_TRACK_REJECTED || w->pub.id < k->pub.id ||
                (!w->twin && w->pub.first_seen <= k->back_from) ||
                osp_track_iou(&w->pub.box, &k->pub.box) < DUPLICATE_IOU)
                continue;
            k->pub.state = OSP_TRACK_REMOVED;
            k->hit = 0;
            t->cand[k->cand].used = 0;
            break;
        }
    }
}

/* Whether a track unseen this frame has been unseen too long. */
static int expired(const osp_tracker_t *t, const osp_track_t *o) {
    double gone = t->now - o->last_seen;
    /* A rejected track is the memory that its place holds no object (a
     * tripod, a rock): kept as long as a parked car, so that when the false
     * box comes back it meets its rejected track, not a new one wanting a
     * look. On vtest.avi each of five such boxes came back after the 30
     * frames of lost_frames and cost ten looks again. */
    if (o->stationary || o->verdict == OSP_TRACK_REJECTED)
        return (t->p.parked_lost_frames > 0 && o->unseen > t->p.parked_lost_frames) ||
               (t->p.parked_lost_seconds > 0 && gone > t->p.parked_lost_seconds);
    return o->unseen > t->p.lost_frames || (t->p.lost_seconds > 0 && gone > t->p.lost_seconds);
}

int osp_track_update(osp_tracker_t *t, const osp_track_det_t *dets, int n, double time, char *err,
                     size_t errlen) {
    if (n < 0 || (n > 0 && !dets))
        return fail(err, errlen, OSP_TRACK_EINVAL, "tracker: %d detections", n);
    if (!isfinite(time) || (t->started && time < t->now))
        return fail(err, errlen, OSP_TRACK_EINVAL,
                    "tracker: frame time %.6f is before the previous frame's %.6f", time, t->now);
    int ccap = t->ccap;
    if (grow((void **)&t->cand, &ccap, n, sizeof *t->cand))
        return fail(err, errlen, OSP_TRACK_ENOMEM, "tracker: out of memory");
    t->ccap = ccap;
    int nc = 0;
    for (int i = 0; i < n; i++)
        if (usable(&dets[i]) && dets[i].score >= t->p.low_score)
            t->cand[nc++] = (struct cand){dets[i].score, i, 0};
    if (nc > 1)
        qsort(t->cand, (size_t)nc, sizeof *t->cand, by_score); /* cand is NULL until a frame has one */
    if (nc > t->p.max_dets) nc = t->p.max_dets;
    int nh = 0;
    while (nh < nc && t->cand[nh].score >= t->p.high_score) nh++;

    /* reserved before the tracks that ended last frame are dropped (a few
     * slots more than needed), so that a failure changes nothing */
    if (reserve(t, nc)) return fail(err, errlen, OSP_TRACK_ENOMEM, "tracker: out of memory");
    int kept = 0;
    for (int i = 0; i < t->n; i++)
        if (t->trk[i].pub.state != OSP_TRACK_REMOVED) t->trk[kept++] = t->trk[i];
    t->n = kept;
    t->now = time;
    t->started = 1;

    for (int i = 0; i < t->n; i++) {
        struct trk *k = &t->trk[i];
        if (k->pub.stationary || k->pub.verdict == OSP_TRACK_REJECTED) osp_kalman_stop(&k->kf);
        osp_kalman_predict(&k->kf);
        float v[4];
        osp_kalman_box(&k->kf, v);
        set_box(&k->pub.smooth, v);
        k->pub.age++;
        k->hit = 0;
        k->back = 0;
    }
    /* confident detections: objects, seen last frame or lost */
    int np = 0;
    for (int i = 0; i < t->n; i++)
        if (t->trk[i].pub.state == OSP_TRACK_CONFIRMED || t->trk[i].pub.state == OSP_TRACK_LOST)
            t->pool[np++] = i;
    associate(t, dets, np, 0, nh, t->p.match_iou);
    /* weak ones keep an object seen last frame alive, and never start one */
    np = 0;
    for (int i = 0; i < t->n; i++)
        if (t->trk[i].pub.state == OSP_TRACK_CONFIRMED && !t->trk[i].hit) t->pool[np++] = i;
    associate(t, dets, np, nh, nc, t->p.low_match_iou);
    /* what is left of the confident ones may continue a tentative track */
    np = 0;
    for (int i = 0; i < t->n; i++)
        if (t->trk[i].pub.state == OSP_TRACK_TENTATIVE) t->pool[np++] = i;
    associate(t, dets, np, 0, nh, t->p.tentative_iou);
    drop_duplicates(t);

    for (int i = 0; i < t->n; i++) {
        struct trk *k = &t->trk[i];
        osp_track_t *o = &k->pub;
        if (k->hit) continue;
        o->unseen++;
        o->box = o->smooth;
        /* a tentative track must be seen in every frame until confirmed */
        if (o->state == OSP_TRACK_TENTATIVE) o->state = OSP_TRACK_REMOVED;
        if (o->state == OSP_TRACK_CONFIRMED) o->state = OSP_TRACK_LOST;
        if (o->state == OSP_TRACK_LOST && expired(t, o)) o->state = OSP_TRACK_REMOVED;
    }
    for (int c = 0; c < nh && t->n < t->p.max_tracks; c++)
        if (!t->cand[c].used && t->cand[c].score >= t->p.new_score) {
            t->cand[c].used = 1;
            start(t, &dets[t->cand[c].det]);
        }
    return 0;
}

int osp_track_count(const osp_tracker_t *t) { return t->n; }

const osp_track_t *osp_track_at(const osp_tracker_t *t, int i) {
    return i >= 0 && i < t->n ? &t->trk[i].pub : NULL;
}

static struct trk *find(const osp_tracker_t *t, uint64_t id) {
    int lo = 0, hi = t->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uint64_t v = t->trk[mid].pub.id;
        if (v == id) return &t->trk[mid];
        if (v < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

const osp_track_t *osp_track_find(const osp_tracker_t *t, uint64_t id) {
    struct trk *k = find(t, id);
    return k ? &k->pub : NULL;
}

double osp_track_now(const osp_tracker_t *t) { return t->now; }

int osp_track_ahead(const osp_tracker_t *t, uint64_t id, osp_track_box_t *out) {
    const struct trk *k = find(t, id);
    if (!k) return OSP_TRACK_ENOENT;
    osp_kalman_t kf = k->kf; /* as the next update will move it */
    if (k->pub.stationary || k->pub.verdict == OSP_TRACK_REJECTED) osp_kalman_stop(&kf);
    osp_kalman_predict(&kf);
    float v[4];
    osp_kalman_box(&kf, v);
    set_box(out, v);
    return 0;
}

static float area(const osp_track_box_t *b) { return (b->x2 - b->x1) * (b->y2 - b->y1); }

static int wants_look(const osp_tracker_t *t, const struct trk *k) {
    const osp_track_t *o = &k->pub;
    if (o->unseen || o->state == OSP_TRACK_REMOVED || o->verdict == OSP_TRACK_REJECTED) return 0;
    /* a doubtful new box waits to be seen again: most are not (on vtest.avi
     * 271 of 449 first looks, when every new track had one at once) */
    /* and never past its confirmation: the verdict comes first */
    int hits = t->p.look_hits < t->p.confirm_hits ? t->p.look_hits : t->p.confirm_hits;
    if (!k->looked)
        return k->tried || o->hits >= hits || (o->score >= t->p.look_now_score && !k->twin);
    if (o->state != OSP_TRACK_CONFIRMED || o->verdict != OSP_TRACK_VERIFIED) return 0;
    /* once more when it comes to a stop: a box that passed its look by a
     * hair and never moves (a sign, a post) would otherwise stay an object
     * for as long as it is in view, while a person who stops passes again */
    if (o->stationary && !k->still_looked) return 1;
    if (fabsf(o->score - k->look_at_score) >= t->p.relook_score) return 1;
    float a = area(&o->box), b = k->look_at_area;
    return a >= b * t->p.relook_area || b >= a * t->p.relook_area;
}

int osp_track_needs_look(const osp_tracker_t *t, uint64_t *ids, int cap) {
    int count = 0;
    for (int i = 0; i < t->n; i++) {
        if (!wants_look(t, &t->trk[i])) continue;
        if (count < cap) ids[count] = t->trk[i].pub.id;
        count++;
    }
    return count;
}

/* A track that counts as seen this frame, for osp_track_coasts. */
static int shown(const osp_track_t *o, int verified) {
    return o->unseen == 0 && o->state != OSP_TRACK_REMOVED && o->verdict != OSP_TRACK_REJECTED &&
           (!verified || o->verdict == OSP_TRACK_VERIFIED);
}

int osp_track_coasts(const osp_tracker_t *t, const osp_track_t *o, int verified, float w, float h) {
    if (o->state != OSP_TRACK_LOST || o->unseen > t->p.coast_frames ||
        o->verdict == OSP_TRACK_REJECTED || (verified && o->verdict != OSP_TRACK_VERIFIED))
        return 0;
    const osp_track_box_t *b = &o->box;
    if (!(b->x1 >= 0 && b->y1 >= 0 && b->x2 <= w && b->y2 <= h)) return 0;
    for (int i = 0; i < t->n; i++) {
        const osp_track_t *s = &t->trk[i].pub;
        if (s != o && s->label == o->label && shown(s, verified) &&
            osp_track_iou(&s->box, &o->box) >= COAST_IOU)
            return 0;
    }
    return 1;
}

int osp_track_set_verdict(osp_tracker_t *t, uint64_t id, osp_track_verdict_t verdict, float score) {
    if (verdict != OSP_TRACK_VERIFIED && verdict != OSP_TRACK_REJECTED &&
        verdict != OSP_TRACK_UNVERIFIED)
        return OSP_TRACK_EINVAL;
    struct trk *k = find(t, id);
    if (!k) return OSP_TRACK_ENOENT;
    if (verdict == OSP_TRACK_UNVERIFIED) {
        k->tried = 1;
        return 0;
    }
    osp_track_t *o = &k->pub;
    if (o->verdict != OSP_TRACK_REJECTED) {
        if (verdict == OSP_TRACK_REJECTED) k->anchor = k->pub.seen;
        o->verdict = verdict;
    }
    o->look_score = score;
    k->looked = 1;
    k->still_looked = o->stationary;
    k->look_at_score = o->score;
    k->look_at_area = area(&o->box);
    return 0;
}
