/* Per-model admission with drop-oldest; see admit.h. */
#include "sched/admit.h"

#include <stddef.h>

void osp_admit_init(osp_admit_t *a, int running_max, int pending_max) {
    a->running = 0;
    a->running_max = running_max > 0 ? running_max : 1;
    a->pending_max = pending_max < 0                       ? 0
                     : pending_max > OSP_ADMIT_PENDING_CAP ? OSP_ADMIT_PENDING_CAP
                                                           : pending_max;
    a->head = a->count = 0;
}

int osp_admit_offer(osp_admit_t *a, void *item, void **shed) {
    *shed = NULL;
    if (a->running < a->running_max) {
        a->running++;
        return 1;
    }
    if (a->pending_max == 0) {
        *shed = item; /* no waiting room: the arrival itself is the oldest */
        return 0;
    }
    if (a->count >= a->pending_max) { /* (more wait only when paced: admit.h) */
        *shed = a->pending[a->head];
        a->head = (a->head + 1) % OSP_ADMIT_PENDING_CAP;
        a->count--;
    }
    a->pending[(a->head + a->count) % OSP_ADMIT_PENDING_CAP] = item;
    a->count++;
    return 0;
}

int osp_admit_offer_paced(osp_admit_t *a, void *item, void **shed) {
    if (a->running >= a->running_max && a->count < OSP_ADMIT_PENDING_CAP) {
        *shed = NULL;
        a->pending[(a->head + a->count) % OSP_ADMIT_PENDING_CAP] = item;
        a->count++;
        return 0;
    }
    return osp_admit_offer(a, item, shed);
}

void osp_admit_done(osp_admit_t *a) {
    if (a->running > 0) a->running--;
}

void *osp_admit_promote(osp_admit_t *a) {
    if (a->count == 0 || a->running >= a->running_max) return NULL;
    void *item = a->pending[a->head];
    a->head = (a->head + 1) % OSP_ADMIT_PENDING_CAP;
    a->count--;
    a->running++;
    return item;
}

int osp_admit_drain(osp_admit_t *a, void **out, int cap) {
    int n = 0;
    while (a->count > 0 && n < cap) {
        out[n++] = a->pending[a->head];
        a->head = (a->head + 1) % OSP_ADMIT_PENDING_CAP;
        a->count--;
    }
    return n;
}
