/* Worker pool and mailbox; see pool.h. */
#include "sched/pool.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct osp_pool {
    pthread_mutex_t mu; /* guards head, tail, queued, stopping, started, gen, abandoned, freed */
    pthread_cond_t cv;
    pthread_cond_t started_cv; /* a worker has its name and niceness */
    int started;
    osp_qnode_t *head, *tail;
    int queued, stopping, nthreads;
    int nice;
    char name[12];
    osp_pool_fn fn;
    void *ctx;
    pthread_t *threads;
    unsigned *gen; /* per worker index: bumped when its thread is given up */
    int abandoned; /* threads given up that have not returned yet */
    int freed;     /* osp_pool_free ran: the last abandoned thread to return frees p */
};

typedef struct {
    osp_pool_t *p;
    int index;
    unsigned gen;
} worker_arg_t;

static void pool_destroy(osp_pool_t *p) {
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->started_cv);
    free(p->threads);
    free(p->gen);
    free(p);
}

/* After each item: whether this thread was given up meanwhile (it then
 * leaves, freeing the pool if it was the last one out after osp_pool_free). */
static int given_up(osp_pool_t *p, const worker_arg_t *wa) {
    pthread_mutex_lock(&p->mu);
    int gone = p->gen[wa->index] != wa->gen;
    int last = gone && --p->abandoned == 0 && p->freed;
    pthread_mutex_unlock(&p->mu);
    if (last) pool_destroy(p);
    return gone;
}

static void *worker_main(void *arg) {
    worker_arg_t wa = *(worker_arg_t *)arg;
    free(arg);
    osp_pool_t *p = wa.p;
#ifdef __linux__
    char tname[16]; /* what top -H and perf show */
    snprintf(tname, sizeof tname, "%s%d", p->name, wa.index);
    (void)pthread_setname_np(pthread_self(), tname);
    if (p->nice > 0) { /* a thread starts at its creator's niceness */
        id_t tid = (id_t)syscall(SYS_gettid);
        int now = getpriority(PRIO_PROCESS, tid); /* -1 is also a niceness: no error check */
        (void)setpriority(PRIO_PROCESS, tid, now + p->nice > 19 ? 19 : now + p->nice);
    }
#endif
    pthread_mutex_lock(&p->mu);
    p->started++;
    pthread_cond_signal(&p->started_cv);
    pthread_mutex_unlock(&p->mu);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping) pthread_cond_wait(&p->cv, &p->mu);
        osp_qnode_t *item = p->head;
        if (!item) { /* stopping and drained */
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        p->head = item->next;
        if (!p->head) p->tail = NULL;
        p->queued--;
        pthread_mutex_unlock(&p->mu);
        item->next = NULL;
        p->fn(p->ctx, item, wa.index);
        if (given_up(p, &wa)) return NULL;
    }
}

osp_pool_t *osp_pool_new(const char *name, int threads, int nice, osp_pool_fn fn, void *ctx) {
    if (threads < 1) threads = 1;
    osp_pool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    p->gen = calloc((size_t)threads, sizeof *p->gen);
    if (!p->threads || !p->gen) {
        free(p->threads);
        free(p->gen);
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_cond_init(&p->started_cv, NULL);
    p->fn = fn;
    p->ctx = ctx;
    p->nice = nice;
    snprintf(p->name, sizeof p->name, "%s", name ? name : "osp-worker");
    for (int i = 0; i < threads; i++) {
        worker_arg_t *wa = malloc(sizeof *wa);
        if (!wa) break;
        *wa = (worker_arg_t){p, i, 0};
        if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            free(wa);
            break;
        }
        p->nthreads++;
    }
    if (p->nthreads == 0) {
        osp_pool_free(p);
        return NULL;
    }
    /* back only when every worker runs as promised (named, at its
     * niceness): a caller that looks at its threads sees them so */
    pthread_mutex_lock(&p->mu);
    while (p->started < p->nthreads) pthread_cond_wait(&p->started_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return p;
}

void osp_pool_push(osp_pool_t *p, osp_qnode_t *item) {
    item->next = NULL;
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = item;
    else
        p->head = item;
    p->tail = item;
    p->queued++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int osp_pool_queued(osp_pool_t *p) {
    pthread_mutex_lock(&p->mu);
    int n = p->queued;
    pthread_mutex_unlock(&p->mu);
    return n;
}

int osp_pool_threads(const osp_pool_t *p) { return p->nthreads; }

int osp_pool_abandon(osp_pool_t *p, int worker) {
    if (worker < 0 || worker >= p->nthreads) return -1;
    worker_arg_t *wa = malloc(sizeof *wa);
    if (!wa) return -1;
    pthread_mutex_lock(&p->mu);
    pthread_t old = p->threads[worker];
    *wa = (worker_arg_t){p, worker, p->gen[worker] + 1};
    p->started--; /* the new thread counts itself in */
    if (pthread_create(&p->threads[worker], NULL, worker_main, wa) != 0) {
        /* nothing changes: the old thread keeps its index */
        p->started++;
        p->threads[worker] = old;
        pthread_mutex_unlock(&p->mu);
        free(wa);
        return -1;
    }
    p->gen[worker]++;
    p->abandoned++;
    while (p->started < p->nthreads) pthread_cond_wait(&p->started_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_detach(old); /* never joined: it may never return */
    return 0;
}

int osp_pool_abandoned(osp_pool_t *p) {
    pthread_mutex_lock(&p->mu);
    int n = p->abandoned;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void osp_pool_free(osp_pool_t *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_lock(&p->mu);
    int out = p->abandoned;
    p->freed = 1;
    pthread_mutex_unlock(&p->mu);
    if (!out) pool_destroy(p);
}

int osp_mailbox_init(osp_mailbox_t *mb) {
    mb->head = mb->tail = NULL;
    mb->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (mb->efd < 0) return -1;
    pthread_mutex_init(&mb->mu, NULL);
    return 0;
}

void osp_mailbox_destroy(osp_mailbox_t *mb) {
    if (mb->efd >= 0) close(mb->efd);
    mb->efd = -1;
    pthread_mutex_destroy(&mb->mu);
}

void osp_mailbox_post(osp_mailbox_t *mb, osp_qnode_t *item) {
    item->next = NULL;
    pthread_mutex_lock(&mb->mu);
    int was_empty = mb->head == NULL;
    if (mb->tail)
        mb->tail->next = item;
    else
        mb->head = item;
    mb->tail = item;
    pthread_mutex_unlock(&mb->mu);
    if (was_empty) osp_eventfd_wake(mb->efd);
}

osp_qnode_t *osp_mailbox_take(osp_mailbox_t *mb) {
    uint64_t v;
    ssize_t r = read(mb->efd, &v, sizeof v);
    (void)r;
    pthread_mutex_lock(&mb->mu);
    osp_qnode_t *all = mb->head;
    mb->head = mb->tail = NULL;
    pthread_mutex_unlock(&mb->mu);
    return all;
}

int osp_mailbox_waiting(osp_mailbox_t *mb) {
    pthread_mutex_lock(&mb->mu);
    int any = mb->head != NULL;
    pthread_mutex_unlock(&mb->mu);
    return any;
}

void osp_eventfd_wake(int efd) {
    uint64_t one = 1;
    ssize_t r = write(efd, &one, sizeof one);
    (void)r; /* a full counter still wakes the poller */
}
