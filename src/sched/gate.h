/*
 * gate: the deadline gate. A request's deadline is wall-clock milliseconds
 * since the epoch (the host's clock, as the protocol says, read with
 * base/clock.h's osp_epoch_ms); 0 means none. The gate is applied wherever
 * a request could still start work: when it is admitted, when it is
 * promoted from the queue, and immediately before it runs. A pure read of
 * the clock: any thread.
 */
#ifndef OSP_GATE_H
#define OSP_GATE_H

#include <stdint.h>

/* Whether a request with this deadline must not start now. */
int osp_gate_expired(uint64_t deadline_ms);

#endif
