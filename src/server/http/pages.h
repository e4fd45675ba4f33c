/*
 * pages: the texts the HTTP door answers with, written from what any
 * thread may read — the model board (board.h), the counters (stats.h) and
 * /proc — never from the I/O thread's own structures. Each call takes a
 * consistent copy of the board and sums the counters as they are at that
 * moment. The caller owns the buffers.
 */
#ifndef OSP_PAGES_H
#define OSP_PAGES_H

#include <stdint.h>

#include "server/core/board.h"
#include "server/core/stats.h"
#include "server/core/srv.h"
#include "wire/http.h"
#include "wire/jsonw.h"

/* One configured model as the pages show it. label is its name, made
 * unique among the models shown (name#index for a second slot of it). */
typedef struct {
    srv_board_entry_t e;
    srv_model_counts_t c;
    char label[80];
} srv_page_model_t;

/* The configured models into out (OSP_MAX_SLOTS entries); how many. */
int srv_pages_models(server_t *s, srv_page_model_t *out);

/* Resident memory in bytes, or -1. */
int64_t srv_pages_rss_bytes(void);

/* /metrics, the Prometheus text format. */
void srv_page_metrics(server_t *s, osp_text_t *t);
/* /v1/models. */
void srv_page_models(server_t *s, osp_jw_t *w);
/* /readyz: 1 when ready; the JSON body into w either way. */
int srv_page_readyz(server_t *s, osp_jw_t *w);

/* What an event stream remembers between its events: the counters at
 * its last one, per slot, to turn them into rates. */
typedef struct {
    int64_t frames[SRV_OUT_COUNT];
    int64_t total[SRV_HIST_BOUNDS + 1];
    int seen;
} srv_page_prev_t;
typedef struct {
    srv_page_prev_t prev[OSP_MAX_SLOTS];
    struct timespec at;
    uint64_t event_seq;
    int started;
} srv_page_stream_t;

/* One /events record (a JSON object): per model frames/s, p50/p99 of the
 * frames served since the last, drops per second by reason, queue depth,
 * state; memory; the load events since the last. */
void srv_page_event(server_t *s, srv_page_stream_t *st, osp_jw_t *w);

#endif
