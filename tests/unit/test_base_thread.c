/* A detached thread runs its function with its argument and is never
 * joined; a caller learns it ran only from what the function does. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/thread.h"

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ran;
    int detached; /* as the thread's own attributes say */
} seen_t;

static void *note(void *arg) {
    seen_t *s = arg;
    pthread_attr_t a;
    int state = PTHREAD_CREATE_JOINABLE;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getdetachstate(&a, &state);
        pthread_attr_destroy(&a);
    }
    pthread_mutex_lock(&s->mu);
    s->ran++;
    s->detached = state == PTHREAD_CREATE_DETACHED;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void test_runs_fn_on_a_detached_thread(void **st) {
    (void)st;
    seen_t s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    assert_int_equal(osp_thread_detached(note, &s), 0);
    pthread_mutex_lock(&s.mu);
    while (!s.ran) pthread_cond_wait(&s.cv, &s.mu);
    int ran = s.ran, detached = s.detached;
    pthread_mutex_unlock(&s.mu);
    assert_int_equal(ran, 1);
    assert_int_equal(detached, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runs_fn_on_a_detached_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
