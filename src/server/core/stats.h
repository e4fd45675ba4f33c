/*
 * stats: every counter the server keeps, and the mem_stats record that
 * reports them with the state of the other parts (memory, admission,
 * caches, threads, model loads). Counters are atomics added with relaxed
 * order, so any thread may count or read them without a lock (the frame
 * path takes none); mem_stats is written on the I/O thread.
 */
#ifndef OSP_STATS_H
#define OSP_STATS_H

#include <stdint.h>

#include "server/core/srv.h"
#include "wire/jsonw.h"

typedef enum {
    SRV_ST_INFER_JPEG,
    SRV_ST_INFER_RAW,
    SRV_ST_INFER_BATCH,
    SRV_ST_INFER_CACHED,
    SRV_ST_INFER_SHM,
    SRV_ST_COMMANDS,
    SRV_ST_FRAMES_CACHED,
    SRV_ST_SHED_DEADLINE,   /* requests (batch items) answered dropped past their deadline */
    SRV_ST_SHED_QUEUE_FULL, /* frames pushed out of a full queue */
    SRV_ST_ERRORS,
    SRV_ST_FRAMES_PARKED,    /* large raw frames whose pixels went through spill pipes */
    SRV_ST_BYTES_RELAYED,    /* bytes read through relay pipes */
    SRV_ST_PREPARED_AS_READ, /* large raw frames prepared row by row as they were read */
    SRV_ST_FRAMES_SKIPPED, /* large raw frames past their deadline, their pixels discarded unread */
    SRV_ST_INFER_ZMQ,      /* Frigate's frames (zmq.c), bad ones included */
    SRV_ST_RUNS_ABANDONED, /* runs past their bound, given up (watchdog.c) */
    /* the fleet's jobs (fleet.c): claimed (new or taken over), taken over
     * from another consumer, filed by outcome, found filed before (a
     * duplicate run), answered as poison (too many deliveries) */
    SRV_ST_JOBS_CLAIMED,
    SRV_ST_JOBS_RECLAIMED,
    SRV_ST_JOBS_SERVED,
    SRV_ST_JOBS_DROPPED,
    SRV_ST_JOBS_FAILED,
    SRV_ST_JOBS_DEDUPLICATED,
    SRV_ST_JOBS_POISONED,
    SRV_ST_HTTP_HEADER_TIMEOUTS, /* HTTP connections closed with a header past its deadline */
    SRV_ST_COUNT
} srv_stat_t;

srv_stats_t *srv_stats_new(void);
void srv_stats_free(srv_stats_t *st);
void srv_stat_add(server_t *s, srv_stat_t which, int64_t n);
int64_t srv_stat_get(const server_t *s, srv_stat_t which);

/* A deadline shed of n frames of model idx, deadline_ms past: counted,
 * and logged sampled (the first, then every 500th, with the total). Both
 * are account.c's, with the request's outcome. */
void srv_stat_shed_deadline(server_t *s, int idx, uint64_t deadline_ms, int64_t n);
/* A queue-full shed of n frames of model idx: counted and logged sampled. */
void srv_stat_shed_queue(server_t *s, int idx, int64_t n);

/* ---- per model, by slot (summed from atomics when read; no lock) ---------------- */

typedef enum {
    SRV_OUT_SERVED,
    SRV_OUT_SHED,
    SRV_OUT_EXPIRED,
    SRV_OUT_ERROR,
    SRV_OUT_COUNT
} srv_frame_out_t;
typedef enum {
    SRV_STAGE_QUEUE,
    SRV_STAGE_PREPROCESS,
    SRV_STAGE_PREDICT,
    SRV_STAGE_TOTAL,
    SRV_STAGE_COUNT
} srv_stage_t;
/* Histogram bounds in seconds, 1 ms to 1 s; a last bucket past them. */
#define SRV_HIST_BOUNDS 18
extern const double srv_hist_bounds_s[SRV_HIST_BOUNDS];

/* n frames (batch items) of model idx answered with outcome: any thread.
 * Shed and expired frames are also counted by the two functions below. */
void srv_stat_frames(server_t *s, int idx, srv_frame_out_t out, int64_t n);
/* A served frame of model idx took ms in stage: any thread. */
void srv_stat_duration(server_t *s, int idx, srv_stage_t stage, double ms);
/* Publish model idx's admission depth (running, waiting): the I/O thread,
 * whenever it changes. */
void srv_stat_depth(server_t *s, int idx);

typedef struct {
    int64_t frames[SRV_OUT_COUNT];
    int64_t buckets[SRV_STAGE_COUNT][SRV_HIST_BOUNDS + 1]; /* not cumulative */
    double sum_s[SRV_STAGE_COUNT];
    int running, pending;
} srv_model_counts_t;
/* Model idx's counters as they are now: any thread. */
void srv_stats_model(srv_stats_t *st, int idx, srv_model_counts_t *out);

/* The mem_stats record ({"cmd": "mem_stats", "status": "ok", ...}) into w. */
void srv_write_mem_stats(server_t *s, osp_jw_t *w);

#endif
