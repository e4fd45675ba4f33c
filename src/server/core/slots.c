/* The loaded models by index; see slots.h. */
#include "server/core/slots.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct loaded {
    osp_model_t *m;
    int refs; /* the slot's own + one per job holding it */
    char config_path[1024];
    char postprocessor[32];
    float confidence, nms_iou;
    int max_detections;
    char stuck[320]; /* "": serving; else why its frames are refused (watchdog.c) */
};

struct srv_slots {
    loaded_t *slot[OSP_MAX_SLOTS];
    int n; /* one past the highest index named */
};

srv_slots_t *srv_slots_new(void) { return calloc(1, sizeof(srv_slots_t)); }

void srv_slots_free(srv_slots_t *sl) {
    if (!sl) return;
    for (int i = 0; i < sl->n; i++) srv_loaded_release(sl->slot[i]);
    free(sl);
}

loaded_t *srv_slot(const server_t *s, int idx) {
    return idx >= 0 && idx < s->slots->n ? s->slots->slot[idx] : NULL;
}

int srv_slots_count(const server_t *s) { return s->slots->n; }

void srv_slots_grow(server_t *s, int index) {
    if (index >= s->slots->n && index < OSP_MAX_SLOTS) s->slots->n = index + 1;
}

void srv_slot_install(server_t *s, int index, loaded_t *l) {
    if (index < 0 || index >= OSP_MAX_SLOTS) {
        srv_loaded_release(l);
        return;
    }
    srv_slots_grow(s, index);
    loaded_t *old = s->slots->slot[index];
    s->slots->slot[index] = l;
    srv_loaded_release(old); /* a predict holding it finishes first */
}

int srv_slot_clear(server_t *s, int index) {
    loaded_t *l = srv_slot(s, index);
    if (!l) return 0;
    s->slots->slot[index] = NULL;
    srv_loaded_release(l);
    return 1;
}

int srv_slots_loaded(const server_t *s) {
    int n = 0;
    for (int i = 0; i < s->slots->n; i++) n += s->slots->slot[i] != NULL;
    return n;
}

/* The length of s without its extension (a leading dot is none). */
static size_t stem_len(const char *s) {
    const char *dot = strrchr(s, '.');
    return dot && dot != s ? (size_t)(dot - s) : strlen(s);
}

static int names(const char *name, const loaded_t *l, srv_find_t how) {
    const char *own = l->m->cfg.name, *base = strrchr(l->config_path, '/');
    base = base ? base + 1 : l->config_path;
    if (strcmp(name, base) == 0 || strcmp(name, own) == 0) return 1;
    if (how == SRV_FIND_FILE_STEM) {
        size_t n = stem_len(base);
        return strlen(name) == n && strncmp(name, base, n) == 0;
    }
    size_t n = stem_len(name);
    return strlen(own) == n && strncmp(name, own, n) == 0;
}

int srv_slots_find(const server_t *s, const char *name, srv_find_t how) {
    for (int i = 0; i < s->slots->n; i++)
        if (s->slots->slot[i] && names(name, s->slots->slot[i], how)) return i;
    return -1;
}

loaded_t *srv_loaded_new(osp_model_t *m, const osp_model_cfg_t *cfg) {
    loaded_t *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->m = m;
    l->refs = 1;
    snprintf(l->config_path, sizeof l->config_path, "%s", cfg->path);
    snprintf(l->postprocessor, sizeof l->postprocessor, "%s", cfg->postprocessor);
    l->confidence = cfg->confidence;
    l->nms_iou = cfg->nms_iou;
    l->max_detections = cfg->max_detections;
    return l;
}

loaded_t *srv_loaded_ref(loaded_t *l) {
    l->refs++;
    return l;
}

void srv_loaded_release(loaded_t *l) {
    if (l && --l->refs == 0) {
        osp_model_free(l->m);
        free(l);
    }
}

osp_model_t *srv_loaded_model(const loaded_t *l) { return l->m; }
const char *srv_loaded_path(const loaded_t *l) { return l->config_path; }
const char *srv_loaded_postprocessor(const loaded_t *l) { return l->postprocessor; }

void srv_loaded_params(const loaded_t *l, float *confidence, float *nms_iou, int *max_detections) {
    *confidence = l->confidence;
    *nms_iou = l->nms_iou;
    *max_detections = l->max_detections;
}

void srv_loaded_set_params(loaded_t *l, float confidence, float nms_iou, int max_detections) {
    l->confidence = confidence;
    l->nms_iou = nms_iou;
    l->max_detections = max_detections;
}

const char *srv_loaded_stuck(const loaded_t *l) { return l && l->stuck[0] ? l->stuck : NULL; }

void srv_loaded_set_stuck(loaded_t *l, const char *why) {
    snprintf(l->stuck, sizeof l->stuck, "%s", why);
}
