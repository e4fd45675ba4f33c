/*
 * camsteps (camsteps.h). A detection is an object's when the tracker
 * matched it: the track's box is then the detection's own (as camnames
 * finds it). The expected box of a settled object is the tracker's
 * prediction one frame ahead, so a face walking across the picture is
 * still met by its settled box; one that is not met runs its steps again,
 * which costs a run and changes no name.
 */
#include "server/cameras/camsteps.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t id;
    int cls; /* the model's class its steps ran on */
    osp_steps_obj_t st;
} obj_t;

struct srv_camsteps {
    int judges;
    long frame; /* frames tracked */
    obj_t *o;
    int n, cap;
};

srv_camsteps_t *srv_camsteps_new(int judges) {
    srv_camsteps_t *k = calloc(1, sizeof *k);
    if (k) k->judges = judges;
    return k;
}

void srv_camsteps_free(srv_camsteps_t *k) {
    if (!k) return;
    free(k->o);
    free(k);
}

static obj_t *find(srv_camsteps_t *k, uint64_t id) {
    for (int i = 0; i < k->n; i++)
        if (k->o[i].id == id) return &k->o[i];
    return NULL;
}

static float area(const osp_track_box_t *b) { return (b->x2 - b->x1) * (b->y2 - b->y1); }

static int same_box(const osp_track_box_t *a, const osp_track_box_t *b) {
    return a->x1 == b->x1 && a->y1 == b->y1 && a->x2 == b->x2 && a->y2 == b->y2;
}

int srv_camsteps_settled(srv_camsteps_t *k, const osp_tracker_t *tr, osp_steps_settled_t *out,
                         int cap) {
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

int srv_camsteps_update(srv_camsteps_t *k, const osp_tracker_t *tr, const osp_track_det_t *dets,
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
        if (d == n || !stepped[d]) continue;
        obj_t *o = find(k, t->id);
        if (!o) {
            if (k->n == k->cap) {
                int c = k->cap ? 2 * k->cap : 16;
                obj_t *no = realloc(k->o, (size_t)c * sizeof *no);
                if (!no) return -1;
                k->o = no, k->cap = c;
            }
            o = &k->o[k->n++];
            memset(o, 0, sizeof *o);
            o->id = t->id;
        }
        o->cls = cls[d];
        osp_steps_ran(&o->st, area(&t->box), k->frame, &names[d]);
    }
    return 0;
}
