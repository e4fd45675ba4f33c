/* The clocks and their deadline arithmetic; see clock.h. */
#include "base/clock.h"

#include <errno.h>

void osp_now(struct timespec *t) { clock_gettime(CLOCK_MONOTONIC, t); }

double osp_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

double osp_now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

double osp_ms_since(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

int64_t osp_timespec_diff_ms(const struct timespec *a, const struct timespec *b) {
    return (int64_t)(a->tv_sec - b->tv_sec) * 1000 + (a->tv_nsec - b->tv_nsec) / 1000000;
}

int64_t osp_ms_until(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return osp_timespec_diff_ms(t, &now);
}

void osp_timespec_add_ms(struct timespec *t, double ms) {
    int64_t ns = (int64_t)t->tv_nsec + (int64_t)(ms * 1e6);
    int64_t secs = ns / 1000000000;
    ns %= 1000000000;
    if (ns < 0) { /* C's division truncates toward zero: borrow a second */
        ns += 1000000000;
        secs--;
    }
    t->tv_sec += (time_t)secs;
    t->tv_nsec = (long)ns;
}

struct timespec osp_deadline_in(clockid_t clock, double ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    osp_timespec_add_ms(&t, ms);
    return t;
}

int64_t osp_epoch_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

double osp_epoch_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void osp_sleep_ms(double ms) {
    if (ms <= 0) return;
    struct timespec t = {0, 0};
    osp_timespec_add_ms(&t, ms);
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

void osp_sleep_until(const struct timespec *t) {
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL) == EINTR) {
    }
}
