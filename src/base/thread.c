/* Detached threads; see thread.h. */
#include "base/thread.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

int osp_thread_detached(void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr) != 0) return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc ? -1 : 0;
}

void osp_thread_name(const char *fmt, ...) {
    char name[16]; /* Linux's TASK_COMM_LEN, its NUL included */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap); /* cut, not refused */
    va_end(ap);
#ifdef __linux__
    (void)pthread_setname_np(pthread_self(), name);
#endif
}
