/* Event records and counts of tracked objects; see events.h. */
#include "track/events.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the events know of one track. */
struct et {
    uint64_t id;
    int reported;         /* its "new" went out */
    int done;             /* its "end" went out, or it will never be reported */
    osp_event_obj_t last; /* as the last record showed it */
};

struct osp_events {
    char camera[64];
    const char *const *labels;
    int n_labels;
    const osp_zones_t *zones;
    osp_events_params_t p;
    struct et *et, *spare; /* in track id order */
    int n, cap, spare_cap;
    osp_event_t *ev;
    int n_ev, ev_cap;
    osp_events_count_t *counts, *prev; /* this update's and the previous one's */
    int n_counts, n_prev, counts_cap, prev_cap;
    void (*names)(void *arg, uint64_t id, osp_event_names_t *out); /* or NULL */
    void *names_arg;
};

void osp_events_set_names(osp_events_t *e,
                          void (*fn)(void *arg, uint64_t id, osp_event_names_t *out), void *arg) {
    e->names = fn;
    e->names_arg = arg;
}

void osp_events_params_default(osp_events_params_t *p) {
    *p = (osp_events_params_t){.snapshot_gain = 0.05f, .wait_for_verdict = 0};
}

static int fail(char *err, size_t errlen, int code, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "events: %s", msg);
    return code;
}

int osp_events_new(const char *camera, const char *const *labels, int n_labels,
                   const osp_zones_t *zones, const osp_events_params_t *p, osp_events_t **out,
                   char *err, size_t errlen) {
    *out = NULL;
    size_t len = camera ? strlen(camera) : 0;
    int ok = len >= 1 && len < 64;
    for (size_t i = 0; ok && i < len; i++)
        ok = isalnum((unsigned char)camera[i]) || camera[i] == '_' || camera[i] == '-';
    if (!ok)
        return fail(err, errlen, OSP_EVENTS_EINVAL,
                    "the camera's name must be 1-63 letters, digits, '_' or '-'");
    if (n_labels < 0 || (n_labels > 0 && !labels))
        return fail(err, errlen, OSP_EVENTS_EINVAL, "no labels table");
    osp_events_params_t def;
    if (!p) {
        osp_events_params_default(&def);
        p = &def;
    }
    if (!(p->snapshot_gain >= 0 && p->snapshot_gain <= 1))
        return fail(err, errlen, OSP_EVENTS_EINVAL, "snapshot_gain must be within 0..1");
    osp_events_t *e = calloc(1, sizeof *e);
    if (!e) return fail(err, errlen, OSP_EVENTS_ENOMEM, "out of memory");
    memcpy(e->camera, camera, len + 1);
    e->labels = labels;
    e->n_labels = n_labels;
    e->zones = zones;
    e->p = *p;
    *out = e;
    return 0;
}

void osp_events_free(osp_events_t *e) {
    if (!e) return;
    free(e->et);
    free(e->spare);
    free(e->ev);
    free(e->counts);
    free(e->prev);
    free(e);
}

static void obj_of(const osp_events_t *e, const osp_track_t *tr, double now, osp_event_obj_t *o) {
    memset(o, 0, sizeof *o);
    o->id = tr->id;
    o->label = tr->label;
    o->verdict = tr->verdict;
    o->score = tr->score;
    o->top_score = tr->top_score;
    o->box = tr->box;
    o->region = tr->region;
    o->has_region = tr->has_region;
    o->stationary = tr->stationary;
    o->motionless = tr->motionless;
    o->frame_time = now;
    o->start_time = tr->first_seen;
    o->end_time = -1;
    o->snap_time = tr->top_time;
    o->snap_box = tr->top_box;
    o->snap_score = tr->top_score;
    const osp_zones_obj_t *z = e->zones ? osp_zones_obj(e->zones, tr->id) : NULL;
    if (z) {
        o->current_zones = z->current;
        o->loitering = z->loitering;
        o->n_entered = z->n_entered;
        memcpy(o->entered, z->entered, sizeof o->entered);
    }
    if (e->names) e->names(e->names_arg, tr->id, &o->names);
}

static unsigned changes(const osp_events_t *e, const osp_event_obj_t *a, const osp_event_obj_t *b) {
    unsigned why = 0;
    if (a->current_zones != b->current_zones || a->n_entered != b->n_entered)
        why |= OSP_EVENT_ZONES;
    if (b->loitering & ~a->loitering) why |= OSP_EVENT_LOITERING;
    if (a->stationary != b->stationary) why |= OSP_EVENT_STATIONARY;
    if (b->snap_score >= a->snap_score + e->p.snapshot_gain && b->snap_score > a->snap_score)
        why |= OSP_EVENT_SNAPSHOT;
    if (e->names &&
        (strcmp(a->names.name, b->names.name) != 0 || strcmp(a->names.plate, b->names.plate) != 0))
        why |= OSP_EVENT_NAMES;
    return why;
}

static void emit(osp_events_t *e, osp_event_type_t type, unsigned why,
                 const osp_event_obj_t *before, const osp_event_obj_t *after) {
    e->ev[e->n_ev++] = (osp_event_t){type, why, *before, *after};
}

static int grow(void **buf, int *cap, int want, size_t elem) {
    if (want <= *cap) return 0;
    void *nb = realloc(*buf, (size_t)want * elem);
    if (!nb) return -1;
    *buf = nb;
    *cap = want;
    return 0;
}

/* Adds one object to the (zone, label) count. */
static void count(osp_events_t *e, int zone, int label, int active) {
    for (int i = 0; i < e->n_counts; i++) {
        osp_events_count_t *c = &e->counts[i];
        if (c->zone == zone && c->label == label) {
            c->count++;
            c->active += active;
            return;
        }
    }
    e->counts[e->n_counts++] = (osp_events_count_t){zone, label, 1, active, 0};
}

static int by_zone_label(const void *pa, const void *pb) {
    const osp_events_count_t *a = pa, *b = pb;
    if (a->zone != b->zone) return a->zone < b->zone ? -1 : 1;
    return (a->label > b->label) - (a->label < b->label);
}

/* This update's counts, with the pairs that emptied since the last one. */
static void recount(osp_events_t *e, const osp_tracker_t *t) {
    osp_events_count_t *tmp = e->prev;
    int tcap = e->prev_cap;
    e->prev = e->counts, e->prev_cap = e->counts_cap, e->n_prev = e->n_counts;
    e->counts = tmp, e->counts_cap = tcap, e->n_counts = 0;
    for (int i = 0; i < e->n; i++) {
        const struct et *s = &e->et[i];
        if (!s->reported || s->done) continue;
        const osp_track_t *tr = osp_track_at(t, i);
        int active = !tr->stationary;
        count(e, -1, tr->label, active);
        for (int z = 0; z < OSP_ZONES_MAX; z++)
            if (s->last.current_zones & (1u << z)) count(e, z, tr->label, active);
    }
    int fresh = e->n_counts;
    for (int i = 0; i < e->n_prev; i++) {
        const osp_events_count_t *p = &e->prev[i];
        int found = 0;
        for (int k = 0; k < fresh && !found; k++) {
            osp_events_count_t *c = &e->counts[k];
            if (c->zone != p->zone || c->label != p->label) continue;
            found = 1;
            c->changed = c->count != p->count || c->active != p->active;
        }
        if (!found && p->count > 0)
            e->counts[e->n_counts++] = (osp_events_count_t){p->zone, p->label, 0, 0, 1};
    }
    for (int k = 0; k < fresh; k++) {
        int was = 0;
        for (int i = 0; i < e->n_prev && !was; i++)
            was = e->prev[i].zone == e->counts[k].zone && e->prev[i].label == e->counts[k].label;
        if (!was) e->counts[k].changed = 1;
    }
    if (e->n_counts > 1) qsort(e->counts, (size_t)e->n_counts, sizeof *e->counts, by_zone_label);
}

int osp_events_update(osp_events_t *e, const osp_tracker_t *t, char *err, size_t errlen) {
    int nt = osp_track_count(t);
    /* a count per label and zone of each track, and the previous ones that emptied */
    int want_counts = nt * (OSP_ZONES_MAX + 1) + e->n_counts;
    if (grow((void **)&e->spare, &e->spare_cap, nt, sizeof *e->spare) ||
        grow((void **)&e->ev, &e->ev_cap, nt, sizeof *e->ev) ||
        grow((void **)&e->prev, &e->prev_cap, want_counts, sizeof *e->prev))
        return fail(err, errlen, OSP_EVENTS_ENOMEM, "out of memory");
    double now = osp_track_now(t);
    e->n_ev = 0;
    int old = 0;
    for (int i = 0; i < nt; i++) {
        const osp_track_t *tr = osp_track_at(t, i);
        struct et *s = &e->spare[i];
        while (old < e->n && e->et[old].id < tr->id) old++;
        if (old < e->n && e->et[old].id == tr->id) {
            *s = e->et[old];
        } else {
            memset(s, 0, sizeof *s);
            s->id = tr->id;
        }
        if (s->done) continue;
        osp_event_obj_t o;
        obj_of(e, tr, now, &o);
        if (tr->verdict == OSP_TRACK_REJECTED || tr->state == OSP_TRACK_REMOVED) {
            if (s->reported) {
                o.false_positive = tr->verdict == OSP_TRACK_REJECTED;
                o.end_time = o.false_positive ? now : tr->last_seen;
                /* an object that went out of sight ends where it was last
                 * seen, not where its prediction drifted to meanwhile (one
                 * walking away, predicted on while unseen, shrank to a
                 * point) */
                if (!o.false_positive) o.box = tr->seen;
                emit(e, OSP_EVENT_END, 0, &s->last, &o);
                s->last = o;
            }
            s->done = 1;
            continue;
        }
        if (!s->reported) {
            int ready = tr->state == OSP_TRACK_CONFIRMED &&
                        (!e->p.wait_for_verdict || tr->verdict == OSP_TRACK_VERIFIED);
            if (!ready) continue;
            emit(e, OSP_EVENT_NEW, 0, &o, &o);
            s->reported = 1;
            s->last = o;
            continue;
        }
        unsigned why = changes(e, &s->last, &o);
        if (why) {
            emit(e, OSP_EVENT_UPDATE, why, &s->last, &o);
            s->last = o;
        }
    }
    struct et *tmp = e->et;
    int tcap = e->cap;
    e->et = e->spare, e->cap = e->spare_cap, e->n = nt;
    e->spare = tmp, e->spare_cap = tcap;
    recount(e, t);
    return e->n_ev;
}

int osp_events_end_all(osp_events_t *e, const osp_tracker_t *t, char *err, size_t errlen) {
    if (grow((void **)&e->ev, &e->ev_cap, e->n, sizeof *e->ev) ||
        grow((void **)&e->prev, &e->prev_cap, e->n_counts, sizeof *e->prev))
        return fail(err, errlen, OSP_EVENTS_ENOMEM, "out of memory");
    double now = osp_track_now(t);
    e->n_ev = 0;
    for (int i = 0; i < e->n; i++) {
        struct et *s = &e->et[i];
        if (!s->reported || s->done) continue;
        /* the tracker as the last update saw it: each object is there,
         * unless an update failed since (then its last record stands) */
        const osp_track_t *tr = osp_track_find(t, s->id);
        osp_event_obj_t o;
        if (tr) {
            obj_of(e, tr, now, &o);
        } else {
            o = s->last;
            o.frame_time = now;
        }
        o.false_positive = tr && tr->verdict == OSP_TRACK_REJECTED;
        o.end_time = now;
        emit(e, OSP_EVENT_END, 0, &s->last, &o);
        s->last = o;
        s->done = 1;
    }
    recount(e, t);
    return e->n_ev;
}

const osp_event_t *osp_events_at(const osp_events_t *e, int i) {
    return i >= 0 && i < e->n_ev ? &e->ev[i] : NULL;
}

int osp_events_counts(const osp_events_t *e, const osp_events_count_t **out) {
    *out = e->counts;
    return e->n_counts;
}

static const char *label_name(const char *const *labels, int n_labels, int label, char *buf,
                              size_t cap) {
    if (label >= 0 && label < n_labels && labels[label])
        snprintf(buf, cap, "%s", labels[label]);
    else
        snprintf(buf, cap, "%d", label);
    return buf;
}

const char *osp_events_label(const osp_events_t *e, int label, char *buf, size_t cap) {
    return label_name(e->labels, e->n_labels, label, buf, cap);
}

const char *osp_events_id(double start_time, uint64_t track_id, char *buf, size_t cap) {
    /* Frigate's ids are "<start time>-<random>"; the track id in its place
     * keeps them unique across restarts, which restart track ids at 1 */
    snprintf(buf, cap, "%.6f-%" PRIu64, start_time, track_id);
    return buf;
}

/* Frigate writes boxes as whole pixels. Rounding to the nearest (even on
 * a tie) may bring the two sides of a box a pixel wide together, as
 * 851.5 and 852.5 both round to 852: a box keeps at least one pixel. */
static void box(osp_jw_t *w, const osp_track_box_t *b) {
    long x1 = lrintf(b->x1), y1 = lrintf(b->y1), x2 = lrintf(b->x2), y2 = lrintf(b->y2);
    if (x2 <= x1 && b->x2 > b->x1) x2 = x1 + 1;
    if (y2 <= y1 && b->y2 > b->y1) y2 = y1 + 1;
    osp_jw_arr_open(w);
    osp_jw_int(w, (int64_t)x1);
    osp_jw_int(w, (int64_t)y1);
    osp_jw_int(w, (int64_t)x2);
    osp_jw_int(w, (int64_t)y2);
    osp_jw_arr_close(w);
}

static void zone_list(const osp_events_t *e, osp_jw_t *w, const uint8_t *idx, int n) {
    const osp_zones_cfg_t *cfg = e->zones ? osp_zones_cfg(e->zones) : NULL;
    osp_jw_arr_open(w);
    for (int i = 0; cfg && i < n; i++)
        if (idx[i] < cfg->n_zones) osp_jw_str(w, cfg->zones[idx[i]].name);
    osp_jw_arr_close(w);
}

static void kstr(osp_jw_t *w, const char *k, const char *v) {
    osp_jw_key(w, k);
    osp_jw_str(w, v);
}

static void knum(osp_jw_t *w, const char *k, double v, int digits) {
    osp_jw_key(w, k);
    osp_jw_num(w, v, digits);
}

static void kbool(osp_jw_t *w, const char *k, int v) {
    osp_jw_key(w, k);
    osp_jw_bool(w, v);
}

static void kzones(const osp_events_t *e, osp_jw_t *w, const char *k, uint32_t mask) {
    uint8_t idx[OSP_ZONES_MAX];
    int n = 0;
    for (int z = 0; z < OSP_ZONES_MAX; z++)
        if (mask & (1u << z)) idx[n++] = (uint8_t)z;
    osp_jw_key(w, k);
    zone_list(e, w, idx, n);
}

static void write_obj(const osp_events_t *e, const char *const *labels, int n_labels,
                      const osp_event_obj_t *o, osp_jw_t *w) {
    static const char *const VERDICT[] = {"unverified", "verified", "rejected"};
    char id[64], label[OSP_ZONES_NAME_MAX];
    osp_events_id(o->start_time, o->id, id, sizeof id);
    osp_jw_obj_open(w);
    kstr(w, "id", id);
    kstr(w, "camera", e->camera);
    knum(w, "frame_time", o->frame_time, 6);
    kstr(w, "label", label_name(labels, n_labels, o->label, label, sizeof label));
    osp_jw_key(w, "sub_label");
    if (e->names && o->names.name[0]) { /* Frigate's [name, score] */
        osp_jw_arr_open(w);
        osp_jw_str(w, o->names.name);
        osp_jw_num(w, o->names.name_score, 4);
        osp_jw_arr_close(w);
    } else {
        osp_jw_null(w);
    }
    if (e->names) {
        osp_jw_key(w, "recognized_license_plate");
        if (o->names.plate[0])
            osp_jw_str(w, o->names.plate);
        else
            osp_jw_null(w);
        osp_jw_key(w, "recognized_license_plate_score");
        if (o->names.plate[0])
            osp_jw_num(w, o->names.plate_score, 4);
        else
            osp_jw_null(w);
    }
    knum(w, "score", o->score, 4);
    knum(w, "top_score", o->top_score, 4);
    osp_jw_key(w, "box");
    box(w, &o->box);
    knum(w, "area", round(((double)o->box.x2 - o->box.x1) * ((double)o->box.y2 - o->box.y1)), 0);
    osp_jw_key(w, "region");
    if (o->has_region)
        box(w, &o->region);
    else
        osp_jw_null(w);
    kbool(w, "stationary", o->stationary);
    kbool(w, "active", !o->stationary);
    osp_jw_key(w, "motionless_count");
    osp_jw_int(w, o->motionless);
    kzones(e, w, "current_zones", o->current_zones);
    osp_jw_key(w, "entered_zones");
    zone_list(e, w, o->entered, o->n_entered);
    knum(w, "start_time", o->start_time, 6);
    osp_jw_key(w, "end_time");
    if (o->end_time >= 0)
        osp_jw_num(w, o->end_time, 6);
    else
        osp_jw_null(w);
    osp_jw_key(w, "snapshot");
    osp_jw_obj_open(w);
    knum(w, "frame_time", o->snap_time, 6);
    osp_jw_key(w, "box");
    box(w, &o->snap_box);
    knum(w, "score", o->snap_score, 4);
    osp_jw_obj_close(w);
    kbool(w, "false_positive", o->false_positive);
    /* osprey's own */
    osp_jw_key(w, "track_id");
    osp_jw_uint(w, o->id);
    kstr(w, "verdict", VERDICT[o->verdict]);
    kzones(e, w, "loitering_zones", o->loitering);
    osp_jw_obj_close(w);
}

int osp_events_write(const osp_events_t *e, const osp_event_t *ev, osp_jw_t *w) {
    return osp_events_write_named(e, ev, e->labels, e->n_labels, w);
}

int osp_events_write_named(const osp_events_t *e, const osp_event_t *ev, const char *const *labels,
                           int n_labels, osp_jw_t *w) {
    static const char *const TYPE[] = {"new", "update", "end"};
    osp_jw_obj_open(w);
    kstr(w, "type", TYPE[ev->type]);
    osp_jw_key(w, "before");
    write_obj(e, labels, n_labels, &ev->before, w);
    osp_jw_key(w, "after");
    write_obj(e, labels, n_labels, &ev->after, w);
    osp_jw_obj_close(w);
    return w->oom ? OSP_EVENTS_ENOMEM : 0;
}

void osp_events_put_crossing(osp_jw_t *w, const osp_zones_cfg_t *zc, const osp_zones_cross_t *x,
                             const char *label) {
    osp_jw_key(w, "line");
    osp_jw_str(w, zc->lines[x->line].name);
    osp_jw_key(w, "direction");
    osp_jw_str(w, osp_zones_dir_name(x->dir));
    osp_jw_key(w, "trackId");
    osp_jw_uint(w, x->id);
    osp_jw_key(w, "label");
    osp_jw_str(w, label);
}
