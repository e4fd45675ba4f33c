/*
 * gate: the deadline gate, and the clocks osprey's scheduling reads. A
 * request's deadline is wall-clock milliseconds since the epoch (the
 * host's clock, as the protocol says); 0 means none. The gate is applied
 * wherever a request could still start work: when it is admitted, when it
 * is promoted from the queue, and immediately before it runs. Pure reads
 * of the clock: any thread.
 */
#ifndef OSP_GATE_H
#define OSP_GATE_H

#include <stdint.h>
#include <time.h>

/* Wall-clock milliseconds since the epoch. */
int64_t osp_gate_epoch_ms(void);

/* Whether a request with this deadline must not start now. */
int osp_gate_expired(uint64_t deadline_ms);

/* Monotonic milliseconds since *t (taken with CLOCK_MONOTONIC). */
double osp_gate_ms_since(const struct timespec *t);

#endif
