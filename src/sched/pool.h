/*
 * pool: a fixed set of worker threads draining one FIFO of work items, and
 * a mailbox that hands finished items back to the I/O thread through an
 * eventfd. Items are intrusive (an osp_qnode_t at the start of the caller's
 * struct); neither structure allocates per item.
 */
#ifndef OSP_POOL_H
#define OSP_POOL_H

#include <pthread.h>

typedef struct osp_qnode {
    struct osp_qnode *next;
} osp_qnode_t;

/* Runs on a worker thread; `worker` is 0..threads-1 (for per-thread state). */
typedef void (*osp_pool_fn)(void *ctx, osp_qnode_t *item, int worker);

typedef struct osp_pool osp_pool_t;

/* Start `threads` workers, each `nice` steps nicer than the caller (0 =
 * as the caller; at most 19; on Linux, where a thread has its own
 * niceness; elsewhere it is not applied). On Linux the workers are named
 * `name` and their index (at most 11 characters of `name` are kept), as
 * top -H and perf show them. Returns once every worker runs named and at
 * its niceness; NULL on failure (nothing started). */
osp_pool_t *osp_pool_new(const char *name, int threads, int nice, osp_pool_fn fn, void *ctx);
void osp_pool_push(osp_pool_t *p, osp_qnode_t *item);
/* Items queued and not yet taken by a worker. */
int osp_pool_queued(osp_pool_t *p);
int osp_pool_threads(const osp_pool_t *p);
/* Give up the thread running as `worker` (its item will not return in
 * time, and may never): it is detached and a new thread takes its index
 * and the queue; the old one leaves when its item returns, without taking
 * another. Call it only while that worker is inside fn, and exclude fn's
 * own return meanwhile (the caller's lock). 0, or -1 when no thread could
 * be started (nothing changed). */
int osp_pool_abandon(osp_pool_t *p, int worker);
/* Threads given up that have not returned. */
int osp_pool_abandoned(osp_pool_t *p);
/* Let the workers finish what is queued, join them, free the pool (or,
 * while a thread given up has not returned, leave the last of them to). */
void osp_pool_free(osp_pool_t *p);

/* A many-producer, one-consumer hand-off to an event loop. */
typedef struct {
    pthread_mutex_t mu; /* guards head/tail */
    osp_qnode_t *head, *tail;
    int efd; /* readable while items wait */
} osp_mailbox_t;

int osp_mailbox_init(osp_mailbox_t *mb);
void osp_mailbox_destroy(osp_mailbox_t *mb);
void osp_mailbox_post(osp_mailbox_t *mb, osp_qnode_t *item);
/* Take everything posted so far, oldest first (a NULL-terminated list). */
osp_qnode_t *osp_mailbox_take(osp_mailbox_t *mb);
/* Whether anything waits, without touching the eventfd. */
int osp_mailbox_waiting(osp_mailbox_t *mb);

/* Make an eventfd readable (add one to its counter): the thread polling it
 * wakes, to find an item, a freed slot or a stop flag set before the call. */
void osp_eventfd_wake(int efd);

#endif
