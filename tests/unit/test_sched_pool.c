/* Worker pool and mailbox: FIFO order, every item run once by many workers
 * fed by many producers, queued items finished on free, thread names and
 * niceness; the mailbox's eventfd readable exactly while items wait, oldest
 * first, no wake-up lost under many producers. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sched/pool.h"

/* A wait that would otherwise hang a broken pool fails after this long. */
#define WAIT_S 20

typedef struct {
    osp_qnode_t q;
    int id;
    int producer;
} item_t;

/* What the workers saw; one lock guards it all. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gate_open; /* items wait for it when `gated` */
    int gated;
    int started; /* items that entered fn */
    int linked;  /* items handed over with next still set */
    int done;
    int order[4096]; /* ids in the order they ran */
    int runs[4096];  /* times each id ran */
    int worker_of[4096];
    int barrier; /* the first `barrier` items wait until that many run at once */
    char names[8][16];
    int nices[8];
} seen_t;

static void seen_init(seen_t *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
}

static void seen_destroy(seen_t *s) {
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
}

static struct timespec deadline(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += WAIT_S;
    return ts;
}

/* Wait under s->mu until *what >= n; 0 on time-out. */
static int wait_for(seen_t *s, const int *what, int n) {
    struct timespec dl = deadline();
    int ok = 1;
    pthread_mutex_lock(&s->mu);
    while (*what < n && ok)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT) ok = *what >= n;
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static void open_gate(seen_t *s) {
    pthread_mutex_lock(&s->mu);
    s->gate_open = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void record(void *ctx, osp_qnode_t *node, int worker) {
    seen_t *s = ctx;
    item_t *it = (item_t *)node;
    pthread_mutex_lock(&s->mu);
    if (node->next) s->linked++; /* cmocka asserts only on the test's thread */
    int nth = s->started++;
    pthread_cond_broadcast(&s->cv);
    if (nth < s->barrier) {
        struct timespec dl = deadline();
        while (s->started < s->barrier)
            if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT) break;
    }
    if (s->gated) {
        struct timespec dl = deadline();
        while (!s->gate_open)
            if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT) break;
    }
    s->order[s->done++] = it->id;
    s->runs[it->id]++;
    s->worker_of[it->id] = worker;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void test_one_worker_runs_in_push_order(void **st) {
    (void)st;
    static seen_t s;
    seen_init(&s);
    s.gated = 1;
    osp_pool_t *p = osp_pool_new("fifo", 1, 0, record, &s);
    assert_non_null(p);
    assert_int_equal(osp_pool_threads(p), 1);
    static item_t items[100];
    for (int i = 0; i < 100; i++) {
        items[i].id = i;
        osp_pool_push(p, &items[i].q);
    }
    /* the worker holds item 0 at the gate: the other 99 are queued */
    assert_true(wait_for(&s, &s.started, 1));
    assert_int_equal(osp_pool_queued(p), 99);
    open_gate(&s);
    assert_true(wait_for(&s, &s.done, 100));
    assert_int_equal(osp_pool_queued(p), 0);
    for (int i = 0; i < 100; i++) {
        assert_int_equal(s.order[i], i);
        assert_int_equal(s.worker_of[i], 0);
    }
    osp_pool_free(p);
    seen_destroy(&s);
}

/* Three workers really run three items at once, each with its own index. */
static void test_workers_run_in_parallel(void **st) {
    (void)st;
    static seen_t s;
    seen_init(&s);
    s.barrier = 3;
    osp_pool_t *p = osp_pool_new("par", 3, 0, record, &s);
    assert_non_null(p);
    assert_int_equal(osp_pool_threads(p), 3);
    static item_t items[3];
    for (int i = 0; i < 3; i++) {
        items[i].id = i;
        osp_pool_push(p, &items[i].q);
    }
    assert_true(wait_for(&s, &s.done, 3));
    int seen_idx[3] = {0};
    for (int i = 0; i < 3; i++) {
        assert_in_range(s.worker_of[i], 0, 2);
        seen_idx[s.worker_of[i]]++;
    }
    for (int w = 0; w < 3; w++) assert_int_equal(seen_idx[w], 1);
    osp_pool_free(p);
    seen_destroy(&s);
}

#define PRODUCERS 4
#define PER_PRODUCER 1000

typedef struct {
    osp_pool_t *p;
    item_t *items;
} producer_arg_t;

static void *produce(void *arg) {
    producer_arg_t *a = arg;
    for (int i = 0; i < PER_PRODUCER; i++) osp_pool_push(a->p, &a->items[i].q);
    return NULL;
}

static void test_many_producers_every_item_once(void **st) {
    (void)st;
    static seen_t s;
    seen_init(&s);
    osp_pool_t *p = osp_pool_new("many", 3, 0, record, &s);
    assert_non_null(p);
    static item_t items[PRODUCERS * PER_PRODUCER];
    pthread_t th[PRODUCERS];
    producer_arg_t args[PRODUCERS];
    for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++) items[i].id = i;
    for (int k = 0; k < PRODUCERS; k++) {
        args[k] = (producer_arg_t){p, &items[k * PER_PRODUCER]};
        assert_int_equal(pthread_create(&th[k], NULL, produce, &args[k]), 0);
    }
    for (int k = 0; k < PRODUCERS; k++) pthread_join(th[k], NULL);
    assert_true(wait_for(&s, &s.done, PRODUCERS * PER_PRODUCER));
    for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++) assert_int_equal(s.runs[i], 1);
    assert_int_equal(s.linked, 0); /* items are handed over unlinked */
    assert_int_equal(osp_pool_queued(p), 0);
    osp_pool_free(p);
    seen_destroy(&s);
}

static void *open_gate_soon(void *arg) {
    /* long enough for osp_pool_free to be waiting with the items queued */
    struct timespec ts = {.tv_nsec = 200 * 1000000L};
    nanosleep(&ts, NULL);
    open_gate(arg);
    return NULL;
}

/* Free with items still queued: they all run before free returns. */
static void test_free_finishes_queued_items(void **st) {
    (void)st;
    static seen_t s;
    seen_init(&s);
    s.gated = 1;
    osp_pool_t *p = osp_pool_new("drain", 2, 0, record, &s);
    assert_non_null(p);
    static item_t items[50];
    for (int i = 0; i < 50; i++) {
        items[i].id = i;
        osp_pool_push(p, &items[i].q);
    }
    assert_true(wait_for(&s, &s.started, 2));
    pthread_t opener;
    assert_int_equal(pthread_create(&opener, NULL, open_gate_soon, &s), 0);
    osp_pool_free(p);
    pthread_join(opener, NULL);
    assert_int_equal(s.done, 50);
    for (int i = 0; i < 50; i++) assert_int_equal(s.runs[i], 1);
    seen_destroy(&s);
}

/* A pool with nothing to do stops at once; fewer than one thread is one. */
static void test_idle_free_and_thread_floor(void **st) {
    (void)st;
    static seen_t s;
    seen_init(&s);
    osp_pool_t *p = osp_pool_new(NULL, 0, 0, record, &s);
    assert_non_null(p);
    assert_int_equal(osp_pool_threads(p), 1);
    assert_int_equal(osp_pool_queued(p), 0);
    osp_pool_free(p);
    osp_pool_free(NULL);
    assert_int_equal(s.started, 0);
    seen_destroy(&s);
}

static void name_and_nice(void *ctx, osp_qnode_t *node, int worker) {
    seen_t *s = ctx;
    (void)node;
    pthread_mutex_lock(&s->mu);
    pthread_getname_np(pthread_self(), s->names[worker], sizeof s->names[worker]);
    errno = 0;
    s->nices[worker] = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    s->started++;
    pthread_cond_broadcast(&s->cv);
    /* hold the worker so that each item lands on a different one */
    struct timespec dl = deadline();
    while (s->started < s->barrier)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &dl) == ETIMEDOUT) break;
    s->done++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void run_name_and_nice(seen_t *s, const char *name, int threads, int nice) {
    seen_init(s);
    s->barrier = threads;
    osp_pool_t *p = osp_pool_new(name, threads, nice, name_and_nice, s);
    assert_non_null(p);
    item_t items[8];
    for (int i = 0; i < threads; i++) osp_pool_push(p, &items[i].q);
    assert_true(wait_for(s, &s->done, threads));
    osp_pool_free(p);
    seen_destroy(s);
}

/* What top -H and perf show: the name and the index; a long name is cut to
 * 11 characters so the index still fits the kernel's 15. */
static void test_thread_names(void **st) {
    (void)st;
    static seen_t s;
    run_name_and_nice(&s, "predict", 2, 0);
    assert_string_equal(s.names[0], "predict0");
    assert_string_equal(s.names[1], "predict1");
    run_name_and_nice(&s, "averyverylongpoolname", 2, 0);
    assert_string_equal(s.names[0], "averyverylo0");
    assert_string_equal(s.names[1], "averyverylo1");
    run_name_and_nice(&s, NULL, 1, 0);
    assert_string_equal(s.names[0], "osp-worker0");
}

/* Workers are `nice` steps nicer than their creator, at most 19; the caller
 * keeps its own niceness. */
static void test_thread_niceness(void **st) {
    (void)st;
    static seen_t s;
    errno = 0;
    int base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    assert_int_equal(errno, 0);
    if (base > 15) skip(); /* nothing left to observe */
    run_name_and_nice(&s, "nice", 2, 3);
    assert_int_equal(s.nices[0], base + 3);
    assert_int_equal(s.nices[1], base + 3);
    run_name_and_nice(&s, "nicer", 1, 40);
    assert_int_equal(s.nices[0], 19);
    run_name_and_nice(&s, "same", 1, 0);
    assert_int_equal(s.nices[0], base);
    assert_int_equal(getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)), base);
}

/* ---- mailbox --------------------------------------------------------------- */

/* Whether the eventfd would wake a poll now. */
static int readable(int fd, int timeout_ms) {
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n = poll(&pfd, 1, timeout_ms);
    assert_true(n >= 0);
    return n == 1 && (pfd.revents & POLLIN);
}

static void test_mailbox_empty(void **st) {
    (void)st;
    osp_mailbox_t mb;
    assert_int_equal(osp_mailbox_init(&mb), 0);
    assert_true(mb.efd >= 0);
    assert_false(readable(mb.efd, 0));
    assert_false(osp_mailbox_waiting(&mb));
    assert_null(osp_mailbox_take(&mb));
    assert_false(readable(mb.efd, 0));
    osp_mailbox_destroy(&mb);
    assert_int_equal(mb.efd, -1);
}

static void test_mailbox_wakes_then_quiets(void **st) {
    (void)st;
    osp_mailbox_t mb;
    assert_int_equal(osp_mailbox_init(&mb), 0);
    item_t items[5];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 5; i++) {
            items[i].id = i;
            osp_mailbox_post(&mb, &items[i].q);
            assert_true(readable(mb.efd, 0));
            assert_true(osp_mailbox_waiting(&mb));
        }
        /* oldest first, NULL-terminated */
        osp_qnode_t *n = osp_mailbox_take(&mb);
        for (int i = 0; i < 5; i++) {
            assert_non_null(n);
            assert_int_equal(((item_t *)n)->id, i);
            n = n->next;
        }
        assert_null(n);
        /* everything taken: the loop must not spin on a readable eventfd */
        assert_false(readable(mb.efd, 0));
        assert_false(osp_mailbox_waiting(&mb));
        assert_null(osp_mailbox_take(&mb));
    }
    osp_mailbox_destroy(&mb);
}

/* a wake with nothing posted: the consumer polls, takes nothing, and the
 * eventfd quiets (how the fleet and Frigate stop their threads) */
static void test_mailbox_woken_empty(void **st) {
    (void)st;
    osp_mailbox_t mb;
    assert_int_equal(osp_mailbox_init(&mb), 0);
    osp_eventfd_wake(mb.efd);
    osp_eventfd_wake(mb.efd);
    assert_true(readable(mb.efd, 0));
    assert_false(osp_mailbox_waiting(&mb));
    assert_null(osp_mailbox_take(&mb));
    assert_false(readable(mb.efd, 0));
    osp_mailbox_destroy(&mb);
}

typedef struct {
    osp_mailbox_t *mb;
    item_t *items;
    int n;
} poster_arg_t;

static void *post_all(void *arg) {
    poster_arg_t *a = arg;
    for (int i = 0; i < a->n; i++) {
        osp_mailbox_post(a->mb, &a->items[i].q);
        if (i % 64 == 0) sched_yield(); /* let the consumer empty it between */
    }
    return NULL;
}

#define POSTERS 4
#define PER_POSTER 5000

/* The event loop's own pattern: sleep in poll, take everything, repeat. A
 * post that leaves the eventfd quiet while an item waits would stall it. */
static void test_mailbox_many_producers_no_lost_wakeup(void **st) {
    (void)st;
    osp_mailbox_t mb;
    assert_int_equal(osp_mailbox_init(&mb), 0);
    static item_t items[POSTERS * PER_POSTER];
    pthread_t th[POSTERS];
    poster_arg_t args[POSTERS];
    for (int k = 0; k < POSTERS; k++) {
        for (int i = 0; i < PER_POSTER; i++)
            items[k * PER_POSTER + i] = (item_t){.id = i, .producer = k};
        args[k] = (poster_arg_t){&mb, &items[k * PER_POSTER], PER_POSTER};
        assert_int_equal(pthread_create(&th[k], NULL, post_all, &args[k]), 0);
    }
    int next[POSTERS] = {0}, got = 0;
    while (got < POSTERS * PER_POSTER) {
        if (!readable(mb.efd, WAIT_S * 1000)) {
            fail_msg("eventfd quiet with %d of %d items received (%s)", got, POSTERS * PER_POSTER,
                     osp_mailbox_waiting(&mb) ? "items wait" : "none wait");
        }
        for (osp_qnode_t *n = osp_mailbox_take(&mb); n; n = n->next) {
            item_t *it = (item_t *)n;
            /* each producer's items arrive in the order it posted them */
            assert_int_equal(it->id, next[it->producer]);
            next[it->producer]++;
            got++;
        }
    }
    for (int k = 0; k < POSTERS; k++) pthread_join(th[k], NULL);
    assert_false(osp_mailbox_waiting(&mb));
    osp_mailbox_destroy(&mb);
}


/* ---- a worker given up ---------------------------------------------------------- */

/* Item 0 blocks until `release`; every item notes the thread that ran it. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int release, returned;
    int runs[8];
    pthread_t by[8];
} stuck_t;

typedef struct {
    osp_qnode_t q;
    int id;
} sitem_t;

static void stuck_fn(void *ctx, osp_qnode_t *node, int worker) {
    stuck_t *st = ctx;
    sitem_t *it = (sitem_t *)node;
    assert_int_equal(worker, 0);
    pthread_mutex_lock(&st->mu);
    st->runs[it->id]++;
    st->by[it->id] = pthread_self();
    pthread_cond_broadcast(&st->cv);
    while (it->id == 0 && !st->release) pthread_cond_wait(&st->cv, &st->mu);
    if (it->id == 0) st->returned = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

static void stuck_wait_runs(stuck_t *st, int id, int n) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_S;
    pthread_mutex_lock(&st->mu);
    while (st->runs[id] < n)
        assert_int_not_equal(pthread_cond_timedwait(&st->cv, &st->mu, &until), ETIMEDOUT);
    pthread_mutex_unlock(&st->mu);
}

static void stuck_release(stuck_t *st) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_S;
    pthread_mutex_lock(&st->mu);
    st->release = 1;
    pthread_cond_broadcast(&st->cv);
    while (!st->returned)
        assert_int_not_equal(pthread_cond_timedwait(&st->cv, &st->mu, &until), ETIMEDOUT);
    pthread_mutex_unlock(&st->mu);
}

static void test_abandoned_worker_is_replaced(void **state) {
    (void)state;
    static stuck_t st = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    sitem_t items[4] = {{.id = 0}, {.id = 1}, {.id = 2}, {.id = 3}};
    osp_pool_t *p = osp_pool_new("osp-test", 1, 0, stuck_fn, &st);
    assert_non_null(p);
    osp_pool_push(p, &items[0].q);
    stuck_wait_runs(&st, 0, 1);
    osp_pool_push(p, &items[1].q);
    assert_int_equal(osp_pool_abandoned(p), 0);
    assert_int_equal(osp_pool_abandon(p, 0), 0);
    assert_int_equal(osp_pool_abandoned(p), 1);
    stuck_wait_runs(&st, 1, 1); /* the new thread took the queue */
    assert_false(pthread_equal(st.by[0], st.by[1]));
    stuck_release(&st);
    /* the old thread left without taking more: only the new one runs */
    osp_pool_push(p, &items[2].q);
    osp_pool_push(p, &items[3].q);
    stuck_wait_runs(&st, 3, 1);
    for (int i = 0; i < 4; i++) assert_int_equal(st.runs[i], 1);
    assert_true(pthread_equal(st.by[2], st.by[1]) && pthread_equal(st.by[3], st.by[1]));
    for (int i = 0; i < 200 && osp_pool_abandoned(p); i++) usleep(10000);
    assert_int_equal(osp_pool_abandoned(p), 0);
    assert_int_equal(osp_pool_abandon(p, 1), -1); /* no such worker */
    osp_pool_free(p);
}

/* Freed while a thread given up is still inside fn: the free does not wait
 * for it, and the thread frees the pool when it returns. */
static void test_free_leaves_an_abandoned_thread(void **state) {
    (void)state;
    static stuck_t st = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    sitem_t item = {.id = 0};
    osp_pool_t *p = osp_pool_new("osp-test", 1, 0, stuck_fn, &st);
    assert_non_null(p);
    osp_pool_push(p, &item.q);
    stuck_wait_runs(&st, 0, 1);
    assert_int_equal(osp_pool_abandon(p, 0), 0);
    osp_pool_free(p); /* joins the new thread only */
    stuck_release(&st);
    usleep(100000); /* let it finish freeing before the process ends */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_worker_runs_in_push_order),
        cmocka_unit_test(test_workers_run_in_parallel),
        cmocka_unit_test(test_many_producers_every_item_once),
        cmocka_unit_test(test_free_finishes_queued_items),
        cmocka_unit_test(test_idle_free_and_thread_floor),
        cmocka_unit_test(test_thread_names),
        cmocka_unit_test(test_thread_niceness),
        cmocka_unit_test(test_abandoned_worker_is_replaced),
        cmocka_unit_test(test_free_leaves_an_abandoned_thread),
        cmocka_unit_test(test_mailbox_empty),
        cmocka_unit_test(test_mailbox_wakes_then_quiets),
        cmocka_unit_test(test_mailbox_woken_empty),
        cmocka_unit_test(test_mailbox_many_producers_no_lost_wakeup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
