/*
 * osprey detect on a video with a cascade (--recognize, --then, a config's
 * "then"; docs/cascades.md): the steps run once per object, not on every
 * box of every frame. Each frame read alone (--per-frame) a face seen for
 * 300 frames is cropped and embedded 300 times, and its name is the same
 * each time; here an object's steps run when it becomes one (its track
 * confirmed, and with the second look verified: the boxes --track's record
 * gives a "trackId"), and again under the rules ospreyd's cameras share
 * (track/steps.h: when its box has grown, or its result was below its
 * threshold, a few times at most).
 *
 * The result kept is the surest so far, and every record of the object
 * carries its fields, as do its events ("sub_label",
 * "recognized_license_plate", as ospreyd's cameras write them).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/detect.h"
#include "track/events.h"
#include "track/steps.h"

typedef struct {
    uint64_t id;
    osp_steps_obj_t st; /* its runs; the frames of this input's, counted here */
    osp_event_names_t names;
    char *fields; /* JSON members, or NULL */
    size_t len;
} obj_t;

struct osp_detect_steps {
    const osp_cascade_t *c;
    osp_infer_ctx_t ctx; /* the cascade's working memory, this thread's */
    int judges;          /* the cascade names or reads: a result can fall below */
    obj_t *objs;
    int n, cap;
    long frame;
    /* per frame, grown and reused */
    osp_det_t *run;
    int *run_of; /* run[j] is the record's det run_of[j] */
    uint16_t *take;
    int run_cap;
    osp_jw_t out;
    size_t *at;
    int at_cap;
    /* the summary */
    long runs, objects;
};

int osp_detect_steps_new(const osp_cascade_t *c, osp_detect_steps_t **out) {
    osp_detect_steps_t *k = calloc(1, sizeof *k);
    if (!k) return -1;
    k->c = c;
    k->judges = osp_cascade_judges(c);
    *out = k;
    return 0;
}

void osp_detect_steps_free(osp_detect_steps_t *k) {
    if (!k) return;
    for (int i = 0; i < k->n; i++) free(k->objs[i].fields);
    free(k->objs);
    free(k->run);
    free(k->run_of);
    free(k->take);
    free(k->at);
    osp_jw_free(&k->out);
    osp_infer_ctx_free(&k->ctx);
    free(k);
}

static obj_t *find(osp_detect_steps_t *k, uint64_t id) {
    for (int i = 0; i < k->n; i++)
        if (k->objs[i].id == id) return &k->objs[i];
    return NULL;
}

static float area(const osp_det_t *d) { return (d->x2 - d->x1) * (d->y2 - d->y1); }

/* Whether object o (NULL: never run) wants its steps run on box d now. */
static int wants(const osp_detect_steps_t *k, const obj_t *o, const osp_det_t *d) {
    return osp_steps_wants(o ? &o->st : NULL, area(d), k->frame, k->judges);
}

static int grow(osp_detect_steps_t *k, int n) {
    if (n <= k->run_cap) return 0;
    osp_det_t *d = realloc(k->run, (size_t)n * sizeof *d);
    if (d) k->run = d;
    int *r = realloc(k->run_of, (size_t)n * sizeof *r);
    if (r) k->run_of = r;
    uint16_t *t = realloc(k->take, (size_t)n * sizeof *t);
    if (t) k->take = t;
    if (!d || !r || !t) return -1;
    k->run_cap = n;
    return 0;
}

/* Run i of this frame gave fields f (len bytes) for object id's box d. */
static int keep(osp_detect_steps_t *k, uint64_t id, const osp_det_t *d, const char *f, size_t len) {
    obj_t *o = find(k, id);
    if (!o) {
        if (k->n == k->cap) {
            int cap = k->cap ? 2 * k->cap : 16;
            obj_t *no = realloc(k->objs, (size_t)cap * sizeof *no);
            if (!no) return -1;
            k->objs = no, k->cap = cap;
        }
        o = &k->objs[k->n++];
        memset(o, 0, sizeof *o);
        o->id = id;
        k->objects++;
    }
    osp_event_names_t names;
    osp_event_names_read(f, len, &names);
    if (!osp_steps_ran(&o->st, area(d), k->frame, &names)) return 0;
    char *copy = NULL;
    if (len && !(copy = malloc(len))) return -1;
    if (len) memcpy(copy, f, len);
    free(o->fields);
    o->fields = copy;
    o->len = len;
    o->names = names;
    return 0;
}

/* res's fields from each of its boxes' objects. */
static int fields(osp_detect_steps_t *k, osp_result_t *res, const uint64_t *ids) {
    int n = res->n_dets;
    if (k->at_cap < n + 1) {
        size_t *at = realloc(k->at, (size_t)(n + 1) * sizeof *at);
        if (!at) return -1;
        k->at = at;
        k->at_cap = n + 1;
    }
    osp_jw_reset(&k->out);
    for (int i = 0; i < n; i++) {
        k->at[i] = k->out.len;
        const obj_t *o = ids && ids[i] ? find(k, ids[i]) : NULL;
        k->out.need_comma = 0; /* each box's fields stand alone, as the record adds them */
        if (o && o->len) osp_jw_raw(&k->out, o->fields, o->len);
    }
    k->at[n] = k->out.len;
    if (k->out.oom) return -1;
    res->extra = k->out.buf;
    res->extra_at = k->at;
    return 0;
}

int osp_detect_steps_frame(osp_detect_steps_t *k, const osp_tracker_t *t, osp_result_t *res,
                           const osp_view_t *pixels, char *err, size_t errlen) {
    k->frame++;
    int kept = 0; /* forget the objects the tracker no longer has */
    for (int i = 0; i < k->n; i++) {
        if (osp_track_find(t, k->objs[i].id))
            k->objs[kept++] = k->objs[i];
        else
            free(k->objs[i].fields);
    }
    k->n = kept;
    int n = res->n_dets;
    if (grow(k, n > 0 ? n : 1)) goto oom;
    int nr = 0;
    for (int i = 0; i < n; i++) {
        uint64_t id = res->track_ids ? res->track_ids[i] : 0;
        if (id && wants(k, find(k, id), &res->dets[i])) {
            k->run[nr] = res->dets[i];
            k->run_of[nr++] = i;
        }
    }
    /* the boxes no step takes (another label) cost nothing and get nothing;
     * those past a step's maxObjects this frame are taken in the next */
    if (nr && osp_cascade_takes(k->c, k->run, nr, k->take)) {
        osp_result_t sr = {.kind = OSP_REC_DETECTIONS,
                           .dets = k->run,
                           .n_dets = nr,
                           .frame_w = res->frame_w,
                           .frame_h = res->frame_h};
        if (osp_cascade_run_view(k->c, &k->ctx, pixels, &sr, err, errlen)) return -1;
        for (int j = 0; j < nr; j++) {
            if (!k->take[j]) continue;
            k->runs++;
            if (keep(k, res->track_ids[k->run_of[j]], &k->run[j], sr.extra + sr.extra_at[j],
                     sr.extra_at[j + 1] - sr.extra_at[j]))
                goto oom;
        }
        res->preprocess_ms += sr.preprocess_ms;
        res->predict_ms += sr.predict_ms;
    }
    if (fields(k, res, res->track_ids)) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

int osp_detect_steps_still(osp_detect_steps_t *k, osp_result_t *res) {
    return fields(k, res, res->track_ids);
}

void osp_detect_steps_names(void *arg, uint64_t id, osp_event_names_t *out) {
    const obj_t *o = find(arg, id);
    if (o) *out = o->names;
}

void osp_detect_steps_counts(const osp_detect_steps_t *k, long *runs, long *objects) {
    *runs = k->runs;
    *objects = k->objects;
}
