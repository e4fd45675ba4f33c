/*
 * camobjs (camobjs.h). A detection is an object's when the tracker
 * matched it: the track's box is then the detection's own, of the same
 * label. The expected box of a settled object is the tracker's prediction
 * one frame ahead, so a face walking across the picture is still met by
 * its settled box; one that is not met runs its steps again, which costs
 * a run and changes no name.
 *
 * A track's name and plate are the best-scored ones any of its detections
 * gave: a face seen side-on one frame and full-face the next keeps the
 * surer name, and a plate read well once is not replaced by a worse
 * reading.
 */
#include "server/cameras/camobjs.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t id;
    int cls;                /* the model's class its steps ran on */
    osp_steps_obj_t st;     /* its steps' runs; zeroed: none yet */
    osp_event_names_t best; /* the surest name and plate seen */
} obj_t;

struct srv_camobjs {
    int judges;
    long frame; /* frames tracked */
    obj_t *o;
    int n, cap;
};

srv_camobjs_t *srv_camobjs_new(int judges) {
    srv_camobjs_t *k = calloc(1, sizeof *k);
    if (k) k->judges = judges;
    return k;
}

void srv_camobjs_free(srv_camobjs_t *k) {
    if (!k) return;
    free(k->o);
    free(k);
}

static obj_t *find(const srv_camobjs_t *k, uint64_t id) {
    for (int i = 0; i < k->n; i++)
        if (k->o[i].id == id) return &k->o[i];
    return NULL;
}

/* Track id's entry, added (zeroed) when it has none; NULL out of memory. */
static obj_t *find_or_add(srv_camobjs_t *k, uint64_t id) {
    obj_t *o = find(k, id);
    if (o) return o;
    if (k->n == k->cap) {
        int c = k->cap ? 2 * k->cap : 16;
        obj_t *no = realloc(k->o, (size_t)c * sizeof *no);
        if (!no) return NULL;
        k->o = no, k->cap = c;
    }
    o = &k->o[k->n++];
    memset(o, 0, sizeof *o);
    o->id = id;
    return o;
}

static float area(const osp_track_box_t *b) { return (b->x2 - b->x1) * (b->y2 - b->y1); }

static int same_box(const osp_track_box_t *a, const osp_track_box_t *b) {
    return a->x1 == b->x1 && a->y1 == b->y1 && a->x2 == b->x2 && a->y2 == b->y2;
}

int srv_camobjs_settled(srv_camobjs_t *k, const osp_tracker_t *tr, osp_steps_settled_t *out, int cap) {
    int m = 0;
    for (int i = 0; i < k->n && m < cap; i++) {
        const osp_track_t *t = osp_track_find(tr, k->o[i].id);
        osp_track_box_t box;
        if (!t || t->state == OSP_TRACK_REMOVED || osp_track_ahead(tr, t->id, &box)) continue;
        if (osp_steps_wants(&k->o[i].st, area(&box), k->frame + 1, k->judges)) continue;
        out[m++] = (osp_steps_settled_t){.box = box, .label = k->o[i].cls};
    }
    return m;
}

/* Keep got's name and plate in best where surer than best's. */
static void keep_best(osp_event_names_t *best, const osp_event_names_t *got) {
    if (got->name[0] && (!best->name[0] || got->name_score > best->name_score)) {
        memcpy(best->name, got->name, sizeof best->name);
        best->name_score = got->name_score;
    }
    if (got->plate[0] && (!best->plate[0] || got->plate_score > best->plate_score)) {
        memcpy(best->plate, got->plate, sizeof best->plate);
        best->plate_score = got->plate_score;
    }
}

int srv_camobjs_update(srv_camobjs_t *k, const osp_tracker_t *tr, const osp_track_det_t *dets,
                       const int *cls, const int *stepped, const osp_event_names_t *names, int n) {
    k->frame++;
    int w = 0; /* forget the tracks the tracker no longer has */
    for (int i = 0; i < k->n; i++)
        if (osp_track_find(tr, k->o[i].id)) k->o[w++] = k->o[i];
    k->n = w;
    for (int i = 0; i < osp_track_count(tr); i++) {
        const osp_track_t *t = osp_track_at(tr, i);
        if (t->unseen != 0 || t->state == OSP_TRACK_REMOVED) continue;
        int d = 0; /* the detection it matched: its box is the track's */
        while (d < n && !(dets[d].label == t->label && same_box(&dets[d].box, &t->box))) d++;
        if (d == n) continue;
        const osp_event_names_t *got = &names[d];
        int named = got->name[0] || got->plate[0];
        if (!named && !stepped[d]) continue;
        obj_t *o = find_or_add(k, t->id);
        if (!o) return -1;
        if (named) keep_best(&o->best, got);
        if (stepped[d]) {
            o->cls = cls[d];
            osp_steps_ran(&o->st, area(&t->box), k->frame, got);
        }
    }
    return 0;
}

void srv_camobjs_names(void *arg, uint64_t id, osp_event_names_t *out) {
    const obj_t *o = find(arg, id);
    if (o) *out = o->best;
}
