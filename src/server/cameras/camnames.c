/*
 * camnames (camnames.h). A track's name and plate are the best-scored
 * ones any of its detections gave: a face seen side-on one frame and
 * full-face the next keeps the surer name, and a plate read well once is
 * not replaced by a worse reading.
 */
#include "server/cameras/camnames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t id;
    osp_event_names_t best;
} kept_t;

struct srv_camnames {
    kept_t *k;
    int n, cap;
};

srv_camnames_t *srv_camnames_new(void) { return calloc(1, sizeof(srv_camnames_t)); }

void srv_camnames_free(srv_camnames_t *t) {
    if (!t) return;
    free(t->k);
    free(t);
}

static kept_t *find(srv_camnames_t *t, uint64_t id) {
    for (int i = 0; i < t->n; i++)
        if (t->k[i].id == id) return &t->k[i];
    return NULL;
}

static int same_box(const osp_track_box_t *a, const osp_track_box_t *b) {
    return a->x1 == b->x1 && a->y1 == b->y1 && a->x2 == b->x2 && a->y2 == b->y2;
}

int srv_camnames_update(srv_camnames_t *t, const osp_tracker_t *tr, const osp_track_det_t *dets,
                        const osp_event_names_t *names, int n) {
    int w = 0; /* forget the tracks the tracker no longer has */
    for (int i = 0; i < t->n; i++)
        if (osp_track_find(tr, t->k[i].id)) t->k[w++] = t->k[i];
    t->n = w;
    for (int i = 0; i < osp_track_count(tr); i++) {
        const osp_track_t *o = osp_track_at(tr, i);
        if (o->unseen != 0 || o->state == OSP_TRACK_REMOVED) continue;
        const osp_event_names_t *got = NULL; /* the detection it matched: its box is the track's */
        for (int d = 0; d < n && !got; d++)
            if (dets[d].label == o->label && same_box(&dets[d].box, &o->box)) got = &names[d];
        if (!got || (!got->name[0] && !got->plate[0])) continue;
        kept_t *k = find(t, o->id);
        if (!k) {
            if (t->n == t->cap) {
                int cap = t->cap ? 2 * t->cap : 16;
                kept_t *nk = realloc(t->k, (size_t)cap * sizeof *nk);
                if (!nk) return -1;
                t->k = nk, t->cap = cap;
            }
            k = &t->k[t->n++];
            memset(k, 0, sizeof *k);
            k->id = o->id;
        }
        if (got->name[0] && (!k->best.name[0] || got->name_score > k->best.name_score)) {
            memcpy(k->best.name, got->name, sizeof k->best.name);
            k->best.name_score = got->name_score;
        }
        if (got->plate[0] && (!k->best.plate[0] || got->plate_score > k->best.plate_score)) {
            memcpy(k->best.plate, got->plate, sizeof k->best.plate);
            k->best.plate_score = got->plate_score;
        }
    }
    return 0;
}

void srv_camnames_of(void *arg, uint64_t id, osp_event_names_t *out) {
    kept_t *k = find(arg, id);
    if (k) *out = k->best;
}
