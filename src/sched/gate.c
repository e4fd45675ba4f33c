/* The deadline gate; see gate.h. */
#include "sched/gate.h"

#include "base/clock.h"

int osp_gate_expired(uint64_t deadline_ms) {
    return deadline_ms != 0 && (uint64_t)osp_epoch_ms() > deadline_ms;
}
