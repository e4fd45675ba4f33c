/* The deadline gate; see gate.h. */
#include "sched/gate.h"

int64_t osp_gate_epoch_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int osp_gate_expired(uint64_t deadline_ms) {
    return deadline_ms != 0 && (uint64_t)osp_gate_epoch_ms() > deadline_ms;
}

double osp_gate_ms_since(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) * 1e3 + (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}
