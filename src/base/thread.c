/* Detached threads; see thread.h. */
#include "base/thread.h"

#include <pthread.h>

int osp_thread_detached(void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0) return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc ? -1 : 0;
}
