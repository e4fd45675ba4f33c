/*
 * sched: the scheduler boundary. Every transport hands its frames to one
 * enqueue and reports each finished run to one complete; between the two
 * sit the per-model admission (admit.h: at most `running_max` running and
 * `pending_max` waiting, drop-oldest beyond), the memory of which models
 * are shedding, and the policies read off that state: whether a frame
 * arriving now will probably be shed before it runs (so that its bytes
 * need not be read, or prepared, yet), and whether a frame would run
 * alone (so that its run may take every core). I/O thread only; stores
 * the caller's pointers and never frees them.
 */
#ifndef OSP_SCHED_H
#define OSP_SCHED_H

typedef struct osp_sched osp_sched_t;

/* Models 0..models-1, each with its own admission. */
osp_sched_t *osp_sched_new(int models, int running_max, int pending_max);
void osp_sched_free(osp_sched_t *s);

/* Offer a frame of model idx. 1: it may run now (it holds a run slot); 0:
 * it waits. *shed receives the oldest waiting frame this arrival pushed
 * out (answer it as dropped, "queue-full"), or NULL. */
int osp_sched_enqueue(osp_sched_t *s, int idx, void *item, void **shed);
/* The same for a frame of a paced source (admit.h: osp_admit_offer_paced). */
int osp_sched_enqueue_paced(osp_sched_t *s, int idx, void *item, void **shed);

/* A frame of model idx that held a run slot finished, or was answered
 * without running: its slot goes to the oldest waiting frame, which is
 * returned (it now holds the slot: run it, or complete it too), or NULL. */
void *osp_sched_complete(osp_sched_t *s, int idx);

/* Whether a frame for model idx arriving now will probably be shed before
 * it runs: its run slots are taken and its queue is full, or holds
 * another while the model has been shedding this last second. */
int osp_sched_likely_shed(const osp_sched_t *s, int idx);

/* Whether model idx has nothing admitted but `mine` running frames. */
int osp_sched_alone(const osp_sched_t *s, int idx, int mine);

/* Frames of model idx running and waiting now. */
void osp_sched_depth(const osp_sched_t *s, int idx, int *running, int *pending);

/* Frames shed from queues so far (all models). */
long long osp_sched_shed_total(const osp_sched_t *s);

#endif
