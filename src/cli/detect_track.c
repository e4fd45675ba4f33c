/*
 * osprey detect on a video: one input's objects over time (src/track/),
 * the default (--per-frame: each frame read alone). The thread that writes
 * the records in frame order hands each frame's detections here: one
 * tracker, zones and lines (--zones), event records (written with --track
 * only), and the second look spent once per object instead of once per box.
 *
 * Read alone, the workers look at every box again: about ten model runs a
 * frame on vtest.avi. Here they run the model once a frame, and a
 * box is looked at when its track asks for it (osp_track_needs_look): a
 * new track on its first frame when its box is sure (LOOK_NOW_ABOVE), a
 * doubtful one when it is confirmed; a verified one when its score or size
 * has changed a lot since. A track whose looks fail LOOK_TRIES times in a
 * row is rejected and kept by the tracker, so the same false box is not
 * looked at again; its boxes are left out of the records and it makes no
 * events. docs/tracking.md, osprey detect --track, has the figures.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/detect.h"
#include "publish/track_mqtt.h"
#include "publish/track_snap.h"
#include "track/events.h"
#include "track/track.h"
#include "track/zones.h"

#define MAX_LABELS 256
/* Failed looks in a row that reject a track. The look fails a real person
 * now and then (a box at 0.53 whose look finds nothing there, on a frame
 * of vtest.avi): read alone that costs the box one frame, but a
 * rejected track is rejected for good, and the tracker went on following
 * the person under it (a rejected track now keeps to its place). F1 on
 * the labelled vtest frames (threshold 0.35) with 1, 3, 6 and 10 failures
 * in a row, measured then: 0.80, 0.90, 0.93, 0.94 (0.96 with the per-box
 * look), at 0.96 to 1.12 looks a frame; with 10, no static false person
 * over the whole clip (tools/threshold.py's test). */
#define LOOK_TRIES 10
/* A new track whose box scores this much above the threshold is looked at
 * on its first frame; a more doubtful one when it is confirmed (seen
 * confirm_hits, 3, frames running), before it is reported. Of the 449 first looks
 * on vtest.avi when every new track was looked at on its first frame, 271
 * were at boxes never seen again. Looks a frame and F1 on the labelled
 * vtest frames (0.35) with 0.05, 0.10 and 0.15 here: 0.59, 0.48, 0.46 and
 * 0.945, 0.954, 0.950 (every new track at once: 1.08 and 0.942). */
#define LOOK_NOW_ABOVE 0.10f

typedef struct {
    uint64_t id;
    int n;
} fails_t;

struct osp_detect_track {
    const osp_detect_opts_t *o;
    osp_model_t *m;
    const char *input; /* the source's printable name */
    osp_tracker_t *tracker;
    osp_zones_t *zones; /* NULL without --zones */
    osp_events_t *events;
    osp_track_mqtt_t *mqtt;    /* NULL without --mqtt */
    osp_track_snaps_t *snaps;  /* NULL without --snapshots */
    osp_detect_steps_t *steps; /* a cascade's results per object; NULL without one */
    osp_infer_ctx_t look;      /* this thread's own context for the looks */
    float thresh;              /* a look keeps a box when its mean score reaches this */
    double last_t;
    int n_events; /* of the last frame */
    /* per frame, grown to the largest frame seen and reused */
    osp_det_t *out; /* the record's boxes: the detections kept, then the coasting objects' */
    int out_cap;
    osp_track_det_t *tdets;
    uint64_t *ids;     /* per det: its track's id, 0 for none (written as none) */
    uint64_t *track;   /* per det: its track's id, confirmed or not */
    float *look_score; /* per det: its track's last look score, -1 for none */
    int cap;
    uint64_t *want;
    int want_cap;
    /* the last run frame's record, for the frames after it that were not run */
    osp_det_t *last_dets;
    uint64_t *last_ids;
    float *last_look;
    int last_n, last_cap, last_w, last_h;
    fails_t *fails; /* the tracks whose last looks failed, and how many in a row */
    int n_fails, fails_cap;
    osp_jw_t line, ev;
    /* the summary */
    long still;                                 /* frames not run (osp_detect_track_still) */
    long looks, frames, rejected;               /* rejected: tracks their look took for false */
    long looks_first, looks_retry, looks_again; /* of looks: a new track's first, one after
                                                 * a failed look, one after a change */
    long objects[MAX_LABELS];                   /* reported ("new") and not taken back as false */
};

/* The events' camera: the input's name without its extension, in the
 * letters a topic allows. */
static void camera_name(const char *input, char *out, size_t cap) {
    const char *base = osp_detect_base_name(input);
    size_t n = 0;
    for (const char *c = base; *c && *c != '.' && n + 1 < cap && n < 63; c++)
        out[n++] = isalnum((unsigned char)*c) || *c == '-' ? *c : '_';
    if (n == 0) n = (size_t)snprintf(out, cap, "camera");
    out[n] = '\0';
}

int osp_detect_track_new(const osp_detect_opts_t *o, osp_model_t *m, const char *input,
                         osp_detect_track_t **out, char *err, size_t errlen) {
    osp_detect_track_t *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    k->o = o;
    k->m = m;
    k->input = input;
    k->thresh = m->cfg.confidence;
    /* every box the detector reports is confident here: the threshold that
     * let it through is the tracker's, so each one either continues an
     * object or starts a track (and gets its look) */
    osp_track_params_t tp;
    osp_track_params_default(&tp);
    tp.high_score = tp.new_score = m->cfg.confidence;
    if (tp.low_score > tp.high_score) tp.low_score = tp.high_score;
    tp.look_now_score = m->cfg.confidence + LOOK_NOW_ABOVE;
    if (tp.look_now_score > 1) tp.look_now_score = 1;
    tp.look_hits = tp.confirm_hits;
    /* with looks, an object is reported once its look has passed it */
    osp_events_params_t ep;
    osp_events_params_default(&ep);
    ep.wait_for_verdict = o->second_look;
    char camera[64];
    if (o->camera)
        snprintf(camera, sizeof camera, "%s", o->camera);
    else
        camera_name(input, camera, sizeof camera);
    if (osp_track_new(&tp, &k->tracker, err, errlen) ||
        (o->zones && osp_zones_new(o->zones, &k->zones, err, errlen)) ||
        osp_events_new(camera, (const char *const *)m->labels, m->n_labels, k->zones, &ep,
                       &k->events, err, errlen) ||
        (o->frigate &&
         osp_track_mqtt_new(o->frigate,
                            &(osp_track_mqtt_opts_t){.camera = camera, .ha_prefix = o->ha_prefix},
                            k->events, o->zones, (const char *const *)m->labels, m->n_labels,
                            &k->mqtt, err, errlen)) ||
        (o->snapshots &&
         osp_track_snaps_new(o->snapshots, "osprey detect: --snapshots", &k->snaps, err, errlen))) {
        osp_detect_track_free(k);
        return -1;
    }
    if (o->cascade) {
        if (osp_detect_steps_new(o->cascade, &k->steps)) {
            snprintf(err, errlen, "out of memory");
            osp_detect_track_free(k);
            return -1;
        }
        /* the events name their objects: sub_label, recognized_license_plate */
        osp_events_set_names(k->events, osp_detect_steps_names, k->steps);
    }
    *out = k;
    return 0;
}

void osp_detect_track_free(osp_detect_track_t *k) {
    if (!k) return;
    osp_track_mqtt_free(k->mqtt);
    osp_track_snaps_free(k->snaps);
    osp_detect_steps_free(k->steps);
    osp_track_free(k->tracker);
    osp_zones_free(k->zones);
    osp_events_free(k->events);
    osp_infer_ctx_free(&k->look);
    free(k->out);
    free(k->tdets);
    free(k->ids);
    free(k->track);
    free(k->look_score);
    free(k->want);
    free(k->last_dets);
    free(k->last_ids);
    free(k->last_look);
    free(k->fails);
    osp_jw_free(&k->line);
    osp_jw_free(&k->ev);
    free(k);
}

static int grow(osp_detect_track_t *k, int n) {
    if (n <= k->cap) return 0;
    int cap = n < 64 ? 64 : n;
    osp_track_det_t *d = realloc(k->tdets, (size_t)cap * sizeof *d);
    if (d) k->tdets = d;
    uint64_t *a = realloc(k->ids, (size_t)cap * sizeof *a);
    if (a) k->ids = a;
    uint64_t *b = realloc(k->track, (size_t)cap * sizeof *b);
    if (b) k->track = b;
    float *l = realloc(k->look_score, (size_t)cap * sizeof *l);
    if (l) k->look_score = l;
    if (!d || !a || !b || !l) return -1;
    k->cap = cap;
    return 0;
}

static int same_box(const osp_track_box_t *b, const osp_det_t *d) {
    return b->x1 == d->x1 && b->y1 == d->y1 && b->x2 == d->x2 && b->y2 == d->y2;
}

/* Each det's track: a track seen this frame holds its detection's box as
 * it was given (tracker.c, match and start), so the box says which. */
static void link_tracks(osp_detect_track_t *k, const osp_det_t *dets, int n) {
    int nt = osp_track_count(k->tracker);
    for (int i = 0; i < n; i++) {
        k->track[i] = 0;
        for (int j = 0; j < nt; j++) {
            const osp_track_t *tr = osp_track_at(k->tracker, j);
            if (tr->unseen == 0 && tr->state != OSP_TRACK_REMOVED && tr->label == dets[i].cls &&
                same_box(&tr->box, &dets[i])) {
                k->track[i] = tr->id;
                break;
            }
        }
    }
}

static int det_of(const osp_detect_track_t *k, uint64_t id, int n) {
    for (int i = 0; i < n; i++)
        if (k->track[i] == id) return i;
    return -1;
}

/* How many looks in a row of track id have failed. */
static int fails_of(const osp_detect_track_t *k, uint64_t id) {
    for (int i = 0; i < k->n_fails; i++)
        if (k->fails[i].id == id) return k->fails[i].n;
    return 0;
}

/* A track's look passed (failed 0) or failed (1): whether that failure is
 * its LOOK_TRIES-th in a row; -1 out of memory. Entries of tracks gone are
 * dropped first. */
static int count_look(osp_detect_track_t *k, uint64_t id, int failed) {
    int kept = 0, at = -1;
    for (int i = 0; i < k->n_fails; i++) {
        if (!osp_track_find(k->tracker, k->fails[i].id)) continue;
        if (k->fails[i].id == id) at = kept;
        k->fails[kept++] = k->fails[i];
    }
    k->n_fails = kept;
    if (!failed) {
        if (at >= 0) k->fails[at] = k->fails[--k->n_fails];
        return 0;
    }
    if (at >= 0) return ++k->fails[at].n >= LOOK_TRIES;
    if (k->n_fails == k->fails_cap) {
        int cap = k->fails_cap ? k->fails_cap * 2 : 16;
        fails_t *f = realloc(k->fails, (size_t)cap * sizeof *f);
        if (!f) return -1;
        k->fails = f;
        k->fails_cap = cap;
    }
    k->fails[k->n_fails++] = (fails_t){id, 1};
    return LOOK_TRIES <= 1;
}

/* The looks the tracks ask for, on this frame's pixels. */
static int look_at_tracks(osp_detect_track_t *k, const osp_det_t *dets, int n,
                          const osp_view_t *pixels, const osp_result_t *res, char *err,
                          size_t errlen) {
    int want = osp_track_needs_look(k->tracker, k->want, k->want_cap);
    if (want > k->want_cap) {
        uint64_t *w = realloc(k->want, (size_t)want * sizeof *w);
        if (!w) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        k->want = w;
        k->want_cap = want;
        want = osp_track_needs_look(k->tracker, k->want, k->want_cap);
    }
    float sx = (float)res->frame_w / (float)pixels->width;
    float sy = (float)res->frame_h / (float)pixels->height;
    for (int w = 0; w < want; w++) {
        int i = det_of(k, k->want[w], n);
        if (i < 0) continue;
        const osp_track_t *tr = osp_track_find(k->tracker, k->want[w]);
        int retry = fails_of(k, k->want[w]) > 0;
        float score;
        osp_det_t at;
        int rc = osp_model_look_box(k->m, &k->look, pixels, sx, sy, &dets[i], &score, &at, NULL,
                                    NULL, err, errlen);
        if (rc < 0) return -1;
        if (rc == 0) {
            /* too large to look at from closer: kept at the threshold of a
             * single look, and asked again next frame (no model run) */
            if (dets[i].score >= k->o->once_threshold)
                osp_track_set_verdict(k->tracker, k->want[w], OSP_TRACK_VERIFIED, -1);
            continue;
        }
        k->looks++;
        if (retry)
            k->looks_retry++;
        else if (tr->look_score < 0)
            k->looks_first++;
        else
            k->looks_again++;
        /* judged as a box is without --track: the mean of its two scores
         * reaches the threshold; a track that fails is looked at again in
         * its next frames (a new one's boxes left out meanwhile, a verified
         * one's kept) until it passes, or fails LOOK_TRIES times in a row */
        int keep = (dets[i].score + score) / 2 >= k->thresh;
        int last = count_look(k, k->want[w], !keep);
        if (last < 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        if (!keep && !last) { /* looked at again in its next frames */
            osp_track_set_verdict(k->tracker, k->want[w], OSP_TRACK_UNVERIFIED, score);
            continue;
        }
        osp_track_set_verdict(k->tracker, k->want[w],
                              keep ? OSP_TRACK_VERIFIED : OSP_TRACK_REJECTED, score);
        k->rejected += !keep;
    }
    return 0;
}

static int grow_out(osp_detect_track_t *k, int n) {
    if (n <= k->out_cap) return 0;
    int cap = n < 64 ? 64 : n;
    osp_det_t *d = realloc(k->out, (size_t)cap * sizeof *d);
    if (!d) return -1;
    k->out = d;
    k->out_cap = cap;
    return 0;
}

/* After the kept boxes: the objects the detector missed this frame that
 * the tracker still stands for (osp_track_coasts), at their predicted
 * boxes, with their last detection's score. On vtest.avi the detector
 * loses a walking person for a frame now and then; without this, each
 * such frame was a miss. Returns the record's box count. */
static int coasting(osp_detect_track_t *k, int kept, int fw, int fh) {
    int nt = osp_track_count(k->tracker);
    for (int j = 0; j < nt; j++) {
        const osp_track_t *o = osp_track_at(k->tracker, j);
        if (!osp_track_coasts(k->tracker, o, k->o->second_look, (float)fw, (float)fh)) continue;
        osp_det_t *d = &k->out[kept];
        memset(d, 0, sizeof *d);
        d->x1 = o->box.x1;
        d->y1 = o->box.y1;
        d->x2 = o->box.x2;
        d->y2 = o->box.y2;
        d->score = o->score;
        d->cls = o->label;
        k->ids[kept] = o->id;
        k->look_score[kept++] = o->look_score;
    }
    return kept;
}

/* A copy of the record's boxes for the frames not run that follow. */
static int keep_last(osp_detect_track_t *k, const osp_result_t *res) {
    int n = res->n_dets;
    if (n > k->last_cap) {
        osp_det_t *d = realloc(k->last_dets, (size_t)n * sizeof *d);
        if (d) k->last_dets = d;
        uint64_t *i = realloc(k->last_ids, (size_t)n * sizeof *i);
        if (i) k->last_ids = i;
        float *l = realloc(k->last_look, (size_t)n * sizeof *l);
        if (l) k->last_look = l;
        if (!d || !i || !l) return -1;
        k->last_cap = n;
    }
    if (n) {
        memcpy(k->last_dets, res->dets, (size_t)n * sizeof *k->last_dets);
        memcpy(k->last_ids, res->track_ids, (size_t)n * sizeof *k->last_ids);
        if (res->look) memcpy(k->last_look, res->look, (size_t)n * sizeof *k->last_look);
    }
    k->last_n = n;
    k->last_w = res->frame_w;
    k->last_h = res->frame_h;
    return 0;
}

void osp_detect_track_still(osp_detect_track_t *k, osp_result_t *res) {
    *res = (osp_result_t){
        .kind = OSP_REC_DETECTIONS,
        .dets = k->last_dets,
        .n_dets = k->last_n,
        .frame_w = k->last_w,
        .frame_h = k->last_h,
        .look = k->o->second_look ? k->last_look : NULL,
        .track_ids = k->last_ids,
    };
    k->n_events = 0;
    k->frames++;
    k->still++;
    /* out of memory: the boxes without their fields, as a frame whose
     * steps were not run */
    if (k->steps && osp_detect_steps_still(k->steps, res)) res->extra = NULL;
}

int osp_detect_track_frame(osp_detect_track_t *k, osp_result_t *res, const osp_det_t *dets,
                           const osp_view_t *pixels, double t, char *err, size_t errlen) {
    int n = res->n_dets;
    k->n_events = 0;
    if (grow(k, n)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        k->tdets[i] = (osp_track_det_t){
            .box = {dets[i].x1, dets[i].y1, dets[i].x2, dets[i].y2},
            .score = dets[i].score,
            .label = dets[i].cls,
        };
    /* a camera's clock may step back when it reconnects; the tracker's may not */
    if (t < k->last_t) t = k->last_t;
    k->last_t = t;
    if (osp_track_update(k->tracker, k->tdets, n, t, err, errlen)) return -1;
    link_tracks(k, dets, n);
    int looking = k->o->second_look;
    if (looking && look_at_tracks(k, dets, n, pixels, res, err, errlen)) return -1;

    int nt = osp_track_count(k->tracker);
    if (grow(k, n + nt) || grow_out(k, n + nt)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        const osp_track_t *o = k->track[i] ? osp_track_find(k->tracker, k->track[i]) : NULL;
        if (o && (o->verdict == OSP_TRACK_REJECTED || (looking && o->verdict == OSP_TRACK_UNVERIFIED)))
            continue;
        k->out[kept] = dets[i];
        k->ids[kept] = o && o->state == OSP_TRACK_CONFIRMED ? o->id : 0;
        k->look_score[kept++] = o ? o->look_score : -1;
    }
    kept = coasting(k, kept, res->frame_w, res->frame_h);
    res->dets = k->out;
    res->n_dets = kept;
    res->track_ids = k->ids;
    res->look = looking ? k->look_score : NULL;
    k->frames++;
    if (k->steps && osp_detect_steps_frame(k->steps, k->tracker, res, pixels, err, errlen))
        return -1;
    if (keep_last(k, res)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }

    if (k->zones && osp_zones_update(k->zones, k->tracker, res->frame_w, res->frame_h,
                                     (const char *const *)k->m->labels, k->m->n_labels, err, errlen))
        return -1;
    int ne = osp_events_update(k->events, k->tracker, err, errlen);
    if (ne < 0) return -1;
    k->n_events = ne;
    if (k->snaps)
        osp_track_snaps_frame(k->snaps, k->tracker, k->events, pixels, res->frame_w, res->frame_h);
    for (int i = 0; i < ne; i++) {
        const osp_event_t *ev = osp_events_at(k->events, i);
        int label = ev->after.label;
        if (label < 0 || label >= MAX_LABELS) continue;
        if (ev->type == OSP_EVENT_NEW) k->objects[label]++;
        if (ev->type == OSP_EVENT_END && ev->after.false_positive) k->objects[label]--;
    }
    return 0;
}

/* {"source","frame","t","kind": ... : the start of an event's or a crossing's line */
static void line_head(osp_detect_track_t *k, long frame, double t, const char *kind) {
    osp_jw_reset(&k->line);
    osp_jw_obj_open(&k->line);
    osp_jw_key(&k->line, "source");
    osp_jw_str(&k->line, k->input);
    osp_jw_key(&k->line, "frame");
    osp_jw_int(&k->line, frame);
    if (t >= 0) {
        osp_jw_key(&k->line, "t");
        osp_jw_num(&k->line, t, 3);
    }
    osp_jw_key(&k->line, "kind");
    osp_jw_str(&k->line, kind);
}

static void put(osp_detect_track_t *k, int flush) {
    osp_jw_obj_close(&k->line);
    if (k->line.oom) return;
    const osp_detect_opts_t *o = k->o;
    if (o->events) {
        fwrite(k->line.buf, 1, k->line.len, o->events);
        fputc('\n', o->events);
        if (flush) fflush(o->events);
    } else if (!o->no_json) {
        osp_detect_put_line(&k->line, flush);
    }
    if (o->sink) osp_sink_put(o->sink, k->line.buf);
}

void osp_detect_track_emit(osp_detect_track_t *k, long frame, double t, int flush) {
    if (k->mqtt) osp_track_mqtt_frame(k->mqtt);
    for (int i = 0; i < k->n_events; i++) {
        osp_jw_reset(&k->ev);
        if (osp_events_write(k->events, osp_events_at(k->events, i), &k->ev) || k->ev.len < 2)
            continue;
        line_head(k, frame, t, "event");
        /* the record's own keys, after ours: {"type", "before", "after"} */
        osp_jw_raw(&k->line, k->ev.buf + 1, k->ev.len - 2);
        put(k, flush);
    }
    const osp_zones_cross_t *c;
    int nc = k->zones ? osp_zones_crossings(k->zones, &c) : 0;
    const osp_zones_cfg_t *zc = k->zones ? osp_zones_cfg(k->zones) : NULL;
    for (int i = 0; i < nc; i++) {
        char label[64];
        line_head(k, frame, t, "crossing");
        osp_events_put_crossing(&k->line, zc, &c[i],
                                osp_events_label(k->events, c[i].label, label, sizeof label));
        put(k, flush);
    }
}

void osp_detect_track_summary(const osp_detect_track_t *k, char *buf, size_t cap) {
    size_t n = 0;
#define ADD(...)                                                           \
    do {                                                                   \
        if (n < cap) n += (size_t)snprintf(buf + n, cap - n, __VA_ARGS__); \
    } while (0)
    ADD("; tracked");
    int any = 0;
    for (int c = 0; c < MAX_LABELS; c++) {
        if (k->objects[c] <= 0) continue;
        char label[64];
        ADD("%s %s %ld", any++ ? "," : "", osp_events_label(k->events, c, label, sizeof label),
            k->objects[c]);
    }
    if (!any) ADD(" no objects");
    long ran = k->frames - k->still;
    ADD("; the model ran on %ld of %ld frames (nothing moved in the others), %.2f runs a frame "
        "with the looks",
        ran, k->frames, k->frames ? (double)(ran + k->looks) / (double)k->frames : 0.0);
    if (k->o->second_look)
        ADD("; %ld look%s (%.2f a frame: %ld first, %ld after a failure, %ld after a change), "
            "%ld track%s rejected",
            k->looks, k->looks == 1 ? "" : "s",
            k->frames ? (double)k->looks / (double)k->frames : 0.0, k->looks_first, k->looks_retry,
            k->looks_again, k->rejected, k->rejected == 1 ? "" : "s");
    if (k->steps) {
        long runs, objects;
        osp_detect_steps_counts(k->steps, &runs, &objects);
        ADD("; the cascade ran on %ld object%s, %ld time%s (%.2f an object)", objects,
            objects == 1 ? "" : "s", runs, runs == 1 ? "" : "s",
            objects ? (double)runs / (double)objects : 0.0);
    }
    const osp_zones_cfg_t *zc = k->zones ? osp_zones_cfg(k->zones) : NULL;
    for (int i = 0; zc && i < zc->n_lines; i++) {
        uint64_t in, out;
        osp_zones_line_totals(k->zones, i, &in, &out);
        ADD("; line %s: in %llu, out %llu", zc->lines[i].name, (unsigned long long)in,
            (unsigned long long)out);
    }
#undef ADD
}
