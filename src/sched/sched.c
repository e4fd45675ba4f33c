/* The scheduler boundary; see sched.h. */
#include "sched/sched.h"

#include <stdlib.h>
#include <time.h>

#include "sched/admit.h"
#include "base/clock.h"

#define SHEDDING_MS 1000.0 /* a model that shed a frame this recently is overloaded */

struct osp_sched {
    int models;
    osp_admit_t *admit; /* one per model */
    double *shed_at_ms; /* when each model last shed a frame (since created), 0 = never */
    struct timespec t0;
    long long shed_total;
};

osp_sched_t *osp_sched_new(int models, int running_max, int pending_max) {
    osp_sched_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->models = models > 0 ? models : 1;
    s->admit = calloc((size_t)s->models, sizeof *s->admit);
    s->shed_at_ms = calloc((size_t)s->models, sizeof *s->shed_at_ms);
    if (!s->admit || !s->shed_at_ms) {
        osp_sched_free(s);
        return NULL;
    }
    for (int i = 0; i < s->models; i++) osp_admit_init(&s->admit[i], running_max, pending_max);
    osp_now(&s->t0);
    return s;
}

void osp_sched_free(osp_sched_t *s) {
    if (!s) return;
    free(s->admit);
    free(s->shed_at_ms);
    free(s);
}

static int enqueued(osp_sched_t *s, int idx, int run, void *shed) {
    if (shed) {
        s->shed_total++;
        s->shed_at_ms[idx] = osp_ms_since(&s->t0);
    }
    return run;
}

int osp_sched_enqueue(osp_sched_t *s, int idx, void *item, void **shed) {
    int run = osp_admit_offer(&s->admit[idx], item, shed); /* before *shed is read */
    return enqueued(s, idx, run, *shed);
}

int osp_sched_enqueue_paced(osp_sched_t *s, int idx, void *item, void **shed) {
    int run = osp_admit_offer_paced(&s->admit[idx], item, shed);
    return enqueued(s, idx, run, *shed);
}

void *osp_sched_complete(osp_sched_t *s, int idx) {
    osp_admit_done(&s->admit[idx]);
    return osp_admit_promote(&s->admit[idx]);
}

int osp_sched_likely_shed(const osp_sched_t *s, int idx) {
    const osp_admit_t *a = &s->admit[idx];
    if (a->running < a->running_max) return 0;
    if (a->count >= a->pending_max) return 1; /* it will push out the oldest, and be next */
    /* it waits behind another while the model sheds: two more arrivals
     * before two run slots free up push it out */
    return a->count > 0 && s->shed_at_ms[idx] > 0 &&
           osp_ms_since(&s->t0) - s->shed_at_ms[idx] < SHEDDING_MS;
}

int osp_sched_alone(const osp_sched_t *s, int idx, int mine) {
    return s->admit[idx].running == mine && s->admit[idx].count == 0;
}

void osp_sched_depth(const osp_sched_t *s, int idx, int *running, int *pending) {
    *running = s->admit[idx].running;
    *pending = s->admit[idx].count;
}

long long osp_sched_shed_total(const osp_sched_t *s) { return s->shed_total; }
