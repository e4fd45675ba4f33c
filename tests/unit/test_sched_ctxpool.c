/* Inference contexts: reuse, the count of contexts made, decode settings
 * cleared on get, memory kept between frames, and many threads at once. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/ctxpool.h"

static void test_get_put_reuse(void **s) {
    (void)s;
    osp_ctxpool_t *p = osp_ctxpool_new();
    assert_non_null(p);
    assert_int_equal(osp_ctxpool_total(p), 0);
    osp_infer_ctx_t *a = osp_ctxpool_get(p), *b = osp_ctxpool_get(p);
    assert_non_null(a);
    assert_non_null(b);
    assert_ptr_not_equal(a, b);
    assert_int_equal(osp_ctxpool_total(p), 2);
    osp_ctxpool_put(p, a);
    osp_infer_ctx_t *c = osp_ctxpool_get(p);
    assert_ptr_equal(c, a);
    assert_int_equal(osp_ctxpool_total(p), 2); /* made, not taken */
    osp_ctxpool_put(p, b);
    osp_ctxpool_put(p, c);
    /* a steady state of one frame at a time makes no more */
    for (int i = 0; i < 100; i++) osp_ctxpool_put(p, osp_ctxpool_get(p));
    assert_int_equal(osp_ctxpool_total(p), 2);
    osp_ctxpool_free(p);
}

static void test_get_clears_decode_settings_keeps_memory(void **s) {
    (void)s;
    osp_ctxpool_t *p = osp_ctxpool_new();
    assert_non_null(p);
    osp_infer_ctx_t *a = osp_ctxpool_get(p);
    assert_non_null(a);
    assert_int_equal(a->params_set, 0);
    a->params_set = 1;
    a->confidence = 0.9f;
    a->tensor = malloc(256); /* freed by the pool (LSan checks) */
    assert_non_null(a->tensor);
    a->tensor_cap = 256;
    void *tensor = a->tensor;
    osp_ctxpool_put(p, a);
    osp_infer_ctx_t *b = osp_ctxpool_get(p);
    assert_ptr_equal(b, a);
    assert_int_equal(b->params_set, 0);
    assert_ptr_equal(b->tensor, tensor);
    assert_int_equal(b->tensor_cap, 256);
    osp_ctxpool_put(p, b);
    osp_ctxpool_free(p);
}

#define THREADS 4
#define ROUNDS 2000

typedef struct {
    osp_ctxpool_t *pool;
    int id;
    int clashes; /* a context seen changed by another thread while held */
} worker_t;

static void *worker(void *arg) {
    worker_t *w = arg;
    for (int i = 0; i < ROUNDS; i++) {
        osp_infer_ctx_t *c = osp_ctxpool_get(w->pool);
        if (!c) {
            w->clashes++;
            continue;
        }
        c->frame_w = w->id;
        c->frame_h = i;
        if (i % 7 == 0) sched_yield();
        if (c->frame_w != w->id || c->frame_h != i || c->params_set != 0) w->clashes++;
        c->params_set = 1;
        osp_ctxpool_put(w->pool, c);
    }
    return NULL;
}

static void test_threads(void **s) {
    (void)s;
    osp_ctxpool_t *p = osp_ctxpool_new();
    assert_non_null(p);
    pthread_t t[THREADS];
    worker_t w[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){.pool = p, .id = i + 1};
        assert_int_equal(pthread_create(&t[i], NULL, worker, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].clashes, 0);
    }
    /* never more out at once than there are threads */
    int total = osp_ctxpool_total(p);
    assert_true(total >= 1 && total <= THREADS);
    /* every context made is back in the pool */
    osp_infer_ctx_t *out[THREADS + 1];
    for (int i = 0; i < total; i++) assert_non_null(out[i] = osp_ctxpool_get(p));
    assert_int_equal(osp_ctxpool_total(p), total);
    out[total] = osp_ctxpool_get(p);
    assert_non_null(out[total]);
    assert_int_equal(osp_ctxpool_total(p), total + 1);
    for (int i = 0; i <= total; i++) osp_ctxpool_put(p, out[i]);
    osp_ctxpool_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_put_reuse),
        cmocka_unit_test(test_get_clears_decode_settings_keeps_memory),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
