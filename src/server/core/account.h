/*
 * account: the one place that counts what became of an inference request.
 * A request is counted received where it is read, and its one typed
 * outcome (ledger.h: served, shed for a reason, failed of a kind) once,
 * where its one reply is written: srv_job_answer for a request that became
 * a job, the answering site for one refused before (a payload that does
 * not parse, no model at its index). From that outcome it keeps every
 * counter an answer moves together — the ledger's row, the model's frame
 * counts (by items: an infer_batch of 8 frames is one request of 8
 * items), the shed totals and their sampled log lines, counters.errors —
 * so received = served + shed + errors holds after every path, per model
 * and in total. Any thread.
 */
#ifndef OSP_ACCOUNT_H
#define OSP_ACCOUNT_H

#include <stdint.h>

#include "server/core/ledger.h"
#include "server/core/srv.h"

/* An inference request for slot idx (or SRV_LEDGER_NO_MODEL) was read. */
void srv_account_received(server_t *s, int idx);
/* Its one answer: outcome o for its items; deadline_ms (0: none) is what a
 * deadline shed logs. */
void srv_account(server_t *s, int idx, int64_t items, srv_outcome_t o, uint64_t deadline_ms);

#endif
