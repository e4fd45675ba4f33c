/* Batch windows; see window.h. */
#include "sched/window.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"

typedef struct {
    void *items[OSP_WINDOW_MAX];
    int n;
    struct timespec t0; /* the first item's arrival */
} slot_t;

struct osp_window {
    int models, max_items, open;
    double window_ms;
    slot_t *slots;
};

osp_window_t *osp_window_new(int models, int max_items, double window_ms) {
    osp_window_t *w = calloc(1, sizeof *w);
    if (!w || !(w->slots = calloc((size_t)(models > 0 ? models : 1), sizeof *w->slots))) {
        free(w);
        return NULL;
    }
    w->models = models;
    w->max_items = max_items < 1 ? 1 : max_items > OSP_WINDOW_MAX ? OSP_WINDOW_MAX : max_items;
    w->window_ms = window_ms;
    return w;
}

void osp_window_free(osp_window_t *w) {
    if (!w) return;
    free(w->slots);
    free(w);
}

int osp_window_add(osp_window_t *w, int idx, void *item) {
    slot_t *s = &w->slots[idx];
    if (s->n == 0) {
        osp_now(&s->t0);
        w->open++;
    }
    s->items[s->n++] = item;
    return s->n >= w->max_items;
}

int osp_window_take(osp_window_t *w, int idx, void **out) {
    slot_t *s = &w->slots[idx];
    int n = s->n;
    if (n == 0) return 0;
    memcpy(out, s->items, (size_t)n * sizeof *out);
    s->n = 0;
    w->open--;
    return n;
}

void osp_window_restore(osp_window_t *w, int idx, void **items, int n) {
    slot_t *s = &w->slots[idx];
    if (n <= 0 || s->n != 0) return;
    memcpy(s->items, items, (size_t)n * sizeof *items);
    s->n = n;
    s->t0.tv_sec = 0; /* due at once */
    s->t0.tv_nsec = 0;
    w->open++;
}

int osp_window_timer_ms(const osp_window_t *w) {
    if (!w->open) return -1;
    double best = 0;
    int any = 0;
    for (int i = 0; i < w->models; i++) {
        if (!w->slots[i].n) continue;
        double left = w->window_ms - osp_ms_since(&w->slots[i].t0);
        if (!any || left < best) best = left;
        any = 1;
    }
    return !any ? -1 : best <= 0 ? 0 : (int)(best + 0.999);
}

int osp_window_due(const osp_window_t *w) {
    if (!w->open) return -1;
    for (int i = 0; i < w->models; i++)
        if (w->slots[i].n && osp_ms_since(&w->slots[i].t0) >= w->window_ms) return i;
    return -1;
}
