/*
 * admit: per-model admission. At most `running_max` requests of a model run
 * at once; at most `pending_max` more wait; a newer arrival beyond that
 * sheds the OLDEST waiting request (the newest frame is the one a live
 * camera pipeline still wants). Owned and used by the I/O thread only; it
 * stores the caller's pointers and never frees them.
 */
#ifndef OSP_ADMIT_H
#define OSP_ADMIT_H

#define OSP_ADMIT_PENDING_CAP 80 /* pending_max, and the paced sources waiting past it */

typedef struct {
    int running, running_max, pending_max;
    void *pending[OSP_ADMIT_PENDING_CAP]; /* ring, oldest at head */
    int head, count;
} osp_admit_t;

void osp_admit_init(osp_admit_t *a, int running_max, int pending_max);

/* Offer a new request. Returns 1 when it may run now (running was
 * incremented), 0 when it waits. *shed receives the oldest waiting request
 * pushed out by this arrival (answer it as dropped), or NULL. */
int osp_admit_offer(osp_admit_t *a, void *item, void **shed);

/* Offer a request of a paced source: one that has at most one request in
 * flight at a time (a camera's frame). It waits past pending_max instead
 * of pushing out another's, while the ring has room, so that N paced
 * sources wait in N places and none is pushed out for arriving first;
 * their own deadlines still shed what waits too long. Returns as
 * osp_admit_offer. */
int osp_admit_offer_paced(osp_admit_t *a, void *item, void **shed);

/* A running request finished (or was answered without running). */
void osp_admit_done(osp_admit_t *a);

/* The oldest waiting request when a run slot is free (running is
 * incremented for it), else NULL. The caller applies the deadline gate and
 * calls osp_admit_done for one it sheds. */
void *osp_admit_promote(osp_admit_t *a);

/* Remove every waiting request (shutdown); returns them via out (cap). */
int osp_admit_drain(osp_admit_t *a, void **out, int cap);

#endif
