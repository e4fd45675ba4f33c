/*
 * camnames (camnames.h). A track's name and plate are the best-scored
 * ones any of its detections gave: a face seen side-on one frame and
 * full-face the next keeps the surer name, and a plate read well once is
 * not replaced by a worse reading.
 */
#include "server/cameras/camnames.h"

#include <cjson/cJSON.h>
#include <math.h>
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

/* A string member and its numeric score member of o, when both are there. */
static int pair(const cJSON *o, const char *key, const char *score_key, const char **text,
                float *score) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, score_key);
    if (!cJSON_IsString(s) || !s->valuestring[0] || !cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return 0;
    *text = s->valuestring;
    *score = (float)v->valuedouble;
    return 1;
}

static void take(const cJSON *o, osp_event_names_t *out, int depth) {
    const char *text;
    float score;
    if (pair(o, "name", "nameScore", &text, &score) && strcmp(text, "unknown") != 0 &&
        (!out->name[0] || score > out->name_score)) {
        snprintf(out->name, sizeof out->name, "%s", text);
        out->name_score = score;
    }
    if (pair(o, "text", "textScore", &text, &score) && (!out->plate[0] || score > out->plate_score)) {
        snprintf(out->plate, sizeof out->plate, "%s", text);
        out->plate_score = score;
    }
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(o, "objects");
    const cJSON *e;
    if (depth < 8 && cJSON_IsArray(inner))
        cJSON_ArrayForEach(e, inner) if (cJSON_IsObject(e)) take(e, out, depth + 1);
}

void srv_camnames_read(const char *members, size_t len, osp_event_names_t *out) {
    memset(out, 0, sizeof *out);
    if (!members || !len) return;
    char *obj = malloc(len + 3);
    if (!obj) return;
    obj[0] = '{';
    memcpy(obj + 1, members, len);
    obj[len + 1] = '}';
    obj[len + 2] = 0;
    cJSON *o = cJSON_ParseWithLength(obj, len + 2);
    free(obj);
    if (cJSON_IsObject(o)) take(o, out, 0);
    cJSON_Delete(o);
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
