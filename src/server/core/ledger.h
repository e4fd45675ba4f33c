/*
 * ledger: what became of every inference request — received, served, shed
 * by reason, answered with an error by kind — per model slot and in total,
 * so that received = served + shed + errors can be checked from outside
 * (mem_stats "requests", /metrics osprey_requests_*). A request counts
 * once whatever it carries: an infer_batch of 8 frames is one request
 * (the per-frame counts are stats.h's).
 *
 * The inference requests are infer_jpeg, infer_raw, infer_batch,
 * infer_cached, infer_shm, Frigate's frames and the fleet's jobs; commands,
 * cache_frame and stream pushes are not in it. Each is counted received
 * where it is read and once more, from its typed outcome, where its one
 * reply is written (account.h). A request whose model
 * index could not be read (a payload too short to hold it) is counted
 * under SRV_LEDGER_NO_MODEL.
 *
 * Counters are relaxed atomics: any thread counts or reads them without a
 * lock. A read taken while requests are in flight sees received ahead of
 * the answers; once nothing is in flight the sum is exact.
 */
#ifndef OSP_LEDGER_H
#define OSP_LEDGER_H

#include <stdint.h>

#include "server/core/srv.h"
#include "wire/jsonw.h"

#define SRV_LEDGER_NO_MODEL (-1)

typedef enum {
    SRV_SHED_DEADLINE,   /* past its deadline before it ran */
    SRV_SHED_QUEUE_FULL, /* pushed out of its model's full queue (drop-oldest) */
    SRV_SHED_COUNT
} srv_shed_t;

typedef enum {
    SRV_FAIL_BAD_REQUEST, /* the payload does not parse (truncated, wrong sizes, bad region) */
    SRV_FAIL_NOT_LOADED,  /* no model at its index */
    SRV_FAIL_NOT_CACHED,  /* infer_cached of a frame id not in the cache */
    SRV_FAIL_FAILED,      /* preparing or running it failed (a JPEG that does not decode) */
    SRV_FAIL_NO_MEMORY,   /* the server could not take it */
    SRV_FAIL_TIMED_OUT,   /* its run passed the model's bound and was given up (watchdog.c) */
    SRV_FAIL_RELOADING,   /* refused while its model is reloaded after such a run */
    SRV_FAIL_COUNT
} srv_fail_t;

/* What became of one inference request, typed: served, shed for a reason,
 * or failed of a kind. A request's one reply carries one outcome, and
 * account.h counts it. */
typedef enum { SRV_SERVED, SRV_SHED, SRV_FAILED } srv_fate_t;
typedef struct {
    srv_fate_t fate;
    srv_shed_t shed; /* SRV_SHED */
    srv_fail_t fail; /* SRV_FAILED */
} srv_outcome_t;
#define SRV_OUTCOME_SERVED ((srv_outcome_t){.fate = SRV_SERVED})
#define SRV_OUTCOME_SHED(why) ((srv_outcome_t){.fate = SRV_SHED, .shed = (why)})
#define SRV_OUTCOME_FAILED(kind) ((srv_outcome_t){.fate = SRV_FAILED, .fail = (kind)})

/* The mem_stats keys: "deadlineExpired", "queueFull"; "badRequest",
 * "notLoaded", "notCached", "failed", "noMemory", "timedOut", "reloading". */
const char *srv_shed_key(srv_shed_t why);
const char *srv_fail_key(srv_fail_t kind);
/* The /metrics label values: "deadline-expired", "queue-full";
 * "bad-request", "not-loaded", "not-cached", "failed", "no-memory",
 * "timed-out", "reloading". */
const char *srv_shed_label(srv_shed_t why);
const char *srv_fail_label(srv_fail_t kind);

srv_ledger_t *srv_ledger_new(void);
void srv_ledger_free(srv_ledger_t *l);

/* The rows' counters, any thread; idx is the slot (0..OSP_MAX_SLOTS-1) or
 * SRV_LEDGER_NO_MODEL (anything else counts there too). The server counts
 * through account.h, which keeps the other counters of an answer with
 * these. */
void srv_req_received(server_t *s, int idx);
void srv_req_served(server_t *s, int idx);
void srv_req_shed(server_t *s, int idx, srv_shed_t why);
void srv_req_error(server_t *s, int idx, srv_fail_t kind);

typedef struct {
    int64_t received, served;
    int64_t shed[SRV_SHED_COUNT];
    int64_t errors[SRV_FAIL_COUNT];
} srv_ledger_row_t;

/* One slot's row (or SRV_LEDGER_NO_MODEL's), and the sum of every row. */
void srv_ledger_read(const srv_ledger_t *l, int idx, srv_ledger_row_t *out);
void srv_ledger_total(const srv_ledger_t *l, srv_ledger_row_t *out);
/* Whether the row has seen a request. */
int srv_ledger_row_used(const srv_ledger_row_t *r);

/* The mem_stats "requests" object into w: the totals, "models" (the slots
 * that have seen a request, by index as a string) and "noModel". */
void srv_ledger_write(const srv_ledger_t *l, osp_jw_t *w);

#endif
