/* The HTTP door's texts; see pages.h. */
#include "server/http/pages.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "server/core/ledger.h"
#include "server/http/campages.h"

static const char *const OUTCOME[SRV_OUT_COUNT] = {"served", "shed", "expired", "error"};
static const char *const STAGE[SRV_STAGE_COUNT] = {"queue", "preprocess", "predict", "total"};

int srv_pages_models(server_t *s, srv_page_model_t *out) {
    srv_board_entry_t *e = malloc(OSP_MAX_SLOTS * sizeof *e);
    if (!e) return 0;
    int n = srv_board_read(s->board, e, OSP_MAX_SLOTS);
    for (int i = 0; i < n; i++) {
        out[i].e = e[i];
        srv_stats_model(s->stats, e[i].index, &out[i].c);
        int dup = 0;
        for (int k = 0; k < i; k++) dup |= strcmp(e[k].name, e[i].name) == 0;
        if (dup)
            snprintf(out[i].label, sizeof out[i].label, "%s#%d", e[i].name, e[i].index);
        else
            snprintf(out[i].label, sizeof out[i].label, "%s", e[i].name);
    }
    free(e);
    return n;
}

int64_t srv_pages_rss_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    long long size = 0, resident = 0;
    int got = fscanf(f, "%lld %lld", &size, &resident);
    fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    return got == 2 && page > 0 ? (int64_t)resident * page : -1;
}

/* ---- /metrics ------------------------------------------------------------------ */

static void labels_model(char *out, size_t cap, const char *model, const char *key, const char *val) {
    const char *kv[4] = {"model", model, key, val};
    osp_prom_labels(out, cap, key ? 2 : 1, kv);
}

/* The request ledger (ledger.h): one series set per slot that has seen a
 * request or is configured, and one for the requests that named no model
 * (model="none"). A slot not configured is labelled by its index ("#3"). */
static void put_requests(server_t *s, osp_text_t *t, const srv_page_model_t *m, int n) {
    const char *name[OSP_MAX_SLOTS + 1] = {0};
    char spare[OSP_MAX_SLOTS + 1][8];
    srv_ledger_row_t r[OSP_MAX_SLOTS + 1];
    for (int i = 0; i < n; i++) name[m[i].e.index] = m[i].label;
    for (int i = 0; i <= OSP_MAX_SLOTS; i++) {
        srv_ledger_read(s->ledger, i < OSP_MAX_SLOTS ? i : SRV_LEDGER_NO_MODEL, &r[i]);
        if (!name[i] && srv_ledger_row_used(&r[i])) {
            if (i < OSP_MAX_SLOTS)
                snprintf(spare[i], sizeof spare[i], "#%d", i);
            else
                snprintf(spare[i], sizeof spare[i], "none");
            name[i] = spare[i];
        }
    }
    char lb[256];
    osp_prom_family(t, "osprey_requests_received_total", "counter",
                    "Inference requests read, by the model they name (a batch is one request).");
    for (int i = 0; i <= OSP_MAX_SLOTS; i++)
        if (name[i]) {
            labels_model(lb, sizeof lb, name[i], NULL, NULL);
            osp_prom_sample(t, "osprey_requests_received_total", lb, (double)r[i].received);
        }
    osp_prom_family(t, "osprey_requests_served_total", "counter",
                    "Inference requests answered with a result.");
    for (int i = 0; i <= OSP_MAX_SLOTS; i++)
        if (name[i]) {
            labels_model(lb, sizeof lb, name[i], NULL, NULL);
            osp_prom_sample(t, "osprey_requests_served_total", lb, (double)r[i].served);
        }
    osp_prom_family(t, "osprey_requests_shed_total", "counter",
                    "Inference requests answered dropped, by reason: deadline-expired, queue-full.");
    for (int i = 0; i <= OSP_MAX_SLOTS; i++)
        for (int k = 0; name[i] && k < SRV_SHED_COUNT; k++) {
            labels_model(lb, sizeof lb, name[i], "reason", srv_shed_label((srv_shed_t)k));
            osp_prom_sample(t, "osprey_requests_shed_total", lb, (double)r[i].shed[k]);
        }
    osp_prom_family(t, "osprey_requests_errors_total", "counter",
                    "Inference requests answered with an error, by kind: bad-request, not-loaded, "
                    "not-cached, failed, no-memory.");
    for (int i = 0; i <= OSP_MAX_SLOTS; i++)
        for (int k = 0; name[i] && k < SRV_FAIL_COUNT; k++) {
            labels_model(lb, sizeof lb, name[i], "kind", srv_fail_label((srv_fail_t)k));
            osp_prom_sample(t, "osprey_requests_errors_total", lb, (double)r[i].errors[k]);
        }
}

void srv_page_metrics(server_t *s, osp_text_t *t) {
    srv_page_model_t *m = malloc(OSP_MAX_SLOTS * sizeof *m);
    int n = m ? srv_pages_models(s, m) : 0;
    char lb[256];
    osp_prom_family(t, "osprey_frames_total", "counter",
                    "Frames answered, by model and outcome: served (a result), shed (pushed out "
                    "of a full queue), expired (past its deadline, not run), error.");
    for (int i = 0; i < n; i++)
        for (int o = 0; o < SRV_OUT_COUNT; o++) {
            labels_model(lb, sizeof lb, m[i].label, "outcome", OUTCOME[o]);
            osp_prom_sample(t, "osprey_frames_total", lb, (double)m[i].c.frames[o]);
        }
    put_requests(s, t, m, n);
    osp_prom_family(t, "osprey_frame_duration_seconds", "histogram",
                    "Served frames' time by stage: queue (waiting for a run slot and a worker), "
                    "preprocess (decode, resize, pack), predict (run and decode the outputs), "
                    "total (from the whole request read to its reply).");
    for (int i = 0; i < n; i++)
        for (int g = 0; g < SRV_STAGE_COUNT; g++) {
            labels_model(lb, sizeof lb, m[i].label, "stage", STAGE[g]);
            osp_prom_histogram(t, "osprey_frame_duration_seconds", lb, srv_hist_bounds_s,
                               SRV_HIST_BOUNDS, m[i].c.buckets[g], m[i].c.sum_s[g]);
        }
    osp_prom_family(t, "osprey_queue_depth", "gauge",
                    "Frames admitted for the model and waiting for a run slot.");
    for (int i = 0; i < n; i++) {
        labels_model(lb, sizeof lb, m[i].label, NULL, NULL);
        osp_prom_sample(t, "osprey_queue_depth", lb, m[i].c.pending);
    }
    osp_prom_family(t, "osprey_frames_running", "gauge",
                    "Frames of the model holding a run slot (being prepared or run).");
    for (int i = 0; i < n; i++) {
        labels_model(lb, sizeof lb, m[i].label, NULL, NULL);
        osp_prom_sample(t, "osprey_frames_running", lb, m[i].c.running);
    }
    osp_prom_family(t, "osprey_model_loaded", "gauge",
                    "1 when the configured model is loaded and serving, else 0 (loading, failed, poisoned).");
    for (int i = 0; i < n; i++) {
        labels_model(lb, sizeof lb, m[i].label, NULL, NULL);
        osp_prom_sample(t, "osprey_model_loaded", lb, m[i].e.state == SRV_MODEL_LOADED);
    }
    if (s->opts.jobs) {
        static const struct {
            const char *event;
            srv_stat_t which;
        } jobs[] = {{"claimed", SRV_ST_JOBS_CLAIMED},  {"reclaimed", SRV_ST_JOBS_RECLAIMED},
                    {"served", SRV_ST_JOBS_SERVED},    {"dropped", SRV_ST_JOBS_DROPPED},
                    {"failed", SRV_ST_JOBS_FAILED},    {"deduplicated", SRV_ST_JOBS_DEDUPLICATED},
                    {"poisoned", SRV_ST_JOBS_POISONED}};
        osp_prom_family(t, "osprey_jobs_total", "counter",
                        "Fleet jobs (--jobs), by event: claimed (new or taken over), reclaimed "
                        "(taken over from a worker that stopped answering), served, dropped, "
                        "failed (results filed by status), deduplicated (filed before by another "
                        "worker), poisoned (delivered too often: answered with an error).");
        for (size_t i = 0; i < sizeof jobs / sizeof jobs[0]; i++) {
            const char *kv[2] = {"event", jobs[i].event};
            osp_prom_labels(lb, sizeof lb, 1, kv);
            osp_prom_sample(t, "osprey_jobs_total", lb, (double)srv_stat_get(s, jobs[i].which));
        }
    }
    srv_page_camera_metrics(s, t);
    osp_prom_family(t, "osprey_http_header_timeouts_total", "counter",
                    "HTTP connections closed because a request's header was not complete within "
                    "10 s (slow or stalled clients).");
    osp_prom_sample(t, "osprey_http_header_timeouts_total", NULL,
                    (double)srv_stat_get(s, SRV_ST_HTTP_HEADER_TIMEOUTS));
    osp_prom_family(t, "osprey_resident_memory_bytes", "gauge", "Resident set size of ospreyd.");
    osp_prom_sample(t, "osprey_resident_memory_bytes", NULL, (double)srv_pages_rss_bytes());
    osp_prom_family(t, "osprey_uptime_seconds", "gauge", "Seconds since ospreyd started.");
    osp_prom_sample(t, "osprey_uptime_seconds", NULL, osp_ms_since(&s->started) / 1000.0);
    free(m);
}

/* ---- JSON ------------------------------------------------------------------------ */

static void put_ms_or_null(osp_jw_t *w, const char *key, double s) {
    osp_jw_key(w, key);
    if (s >= 0)
        osp_jw_num(w, s * 1000.0, 2);
    else
        osp_jw_null(w);
}

static void put_counters(osp_jw_t *w, const srv_model_counts_t *c) {
    osp_jw_key(w, "counters");
    osp_jw_obj_open(w);
    for (int o = 0; o < SRV_OUT_COUNT; o++) {
        osp_jw_key(w, OUTCOME[o]);
        osp_jw_int(w, c->frames[o]);
    }
    osp_jw_key(w, "queueDepth");
    osp_jw_int(w, c->pending);
    osp_jw_key(w, "running");
    osp_jw_int(w, c->running);
    const int64_t *tot = c->buckets[SRV_STAGE_TOTAL];
    put_ms_or_null(w, "p50Ms", osp_hist_quantile(0.5, srv_hist_bounds_s, SRV_HIST_BOUNDS, tot));
    put_ms_or_null(w, "p99Ms", osp_hist_quantile(0.99, srv_hist_bounds_s, SRV_HIST_BOUNDS, tot));
    osp_jw_obj_close(w);
}

void srv_page_models(server_t *s, osp_jw_t *w) {
    srv_page_model_t *m = malloc(OSP_MAX_SLOTS * sizeof *m);
    int n = m ? srv_pages_models(s, m) : 0;
    osp_jw_obj_open(w);
    osp_jw_key(w, "models");
    osp_jw_arr_open(w);
    for (int i = 0; i < n; i++) {
        const srv_board_entry_t *e = &m[i].e;
        osp_jw_obj_open(w);
        osp_jw_key(w, "index");
        osp_jw_int(w, e->index);
        osp_jw_key(w, "name");
        osp_jw_str(w, m[i].label);
        osp_jw_key(w, "file");
        osp_jw_str(w, e->file);
        osp_jw_key(w, "input");
        if (e->input[0])
            osp_jw_str(w, e->input);
        else
            osp_jw_null(w);
        osp_jw_key(w, "postprocessor");
        osp_jw_str(w, e->postprocessor);
        osp_jw_key(w, "state");
        osp_jw_str(w, srv_model_state_name(e->state));
        osp_jw_key(w, "loadMs");
        if (e->state == SRV_MODEL_LOADED)
            osp_jw_num(w, e->load_ms, 1);
        else
            osp_jw_null(w);
        osp_jw_key(w, "error");
        if (e->error[0])
            osp_jw_str(w, e->error);
        else
            osp_jw_null(w);
        put_counters(w, &m[i].c);
        osp_jw_obj_close(w);
    }
    osp_jw_arr_close(w);
    osp_jw_obj_close(w);
    free(m);
}

int srv_page_readyz(server_t *s, osp_jw_t *w) {
    srv_page_model_t *m = malloc(OSP_MAX_SLOTS * sizeof *m);
    int n = m ? srv_pages_models(s, m) : 0;
    int configured = srv_board_is_configured(s->board), waiting = 0;
    for (int i = 0; i < n; i++) waiting += m[i].e.state != SRV_MODEL_LOADED;
    int ready = m && configured && waiting == 0;
    osp_jw_obj_open(w);
    osp_jw_key(w, "ready");
    osp_jw_bool(w, ready);
    if (!configured) {
        osp_jw_key(w, "reason");
        osp_jw_str(w, "waiting for the startup config");
    }
    osp_jw_key(w, "models");
    osp_jw_int(w, n);
    osp_jw_key(w, "notReady");
    osp_jw_arr_open(w);
    for (int i = 0; i < n; i++) {
        if (m[i].e.state == SRV_MODEL_LOADED) continue;
        osp_jw_obj_open(w);
        osp_jw_key(w, "index");
        osp_jw_int(w, m[i].e.index);
        osp_jw_key(w, "name");
        osp_jw_str(w, m[i].label);
        osp_jw_key(w, "state");
        osp_jw_str(w, srv_model_state_name(m[i].e.state));
        osp_jw_key(w, "error");
        if (m[i].e.error[0])
            osp_jw_str(w, m[i].e.error);
        else
            osp_jw_null(w);
        osp_jw_obj_close(w);
    }
    osp_jw_arr_close(w);
    osp_jw_obj_close(w);
    free(m);
    return ready;
}

/* ---- an event of /events --------------------------------------------------------------- */

static void put_rate(osp_jw_t *w, const char *key, int64_t now, int64_t before, double dt) {
    osp_jw_key(w, key);
    osp_jw_num(w, dt > 0 && now >= before ? (double)(now - before) / dt : 0, 2);
}

static void put_stream_model(osp_jw_t *w, const srv_page_model_t *m, srv_page_prev_t *p, double dt) {
    const srv_model_counts_t *c = &m->c;
    const int64_t *tot = c->buckets[SRV_STAGE_TOTAL];
    int64_t d[SRV_HIST_BOUNDS + 1];
    for (int b = 0; b <= SRV_HIST_BOUNDS; b++) d[b] = p->seen ? tot[b] - p->total[b] : 0;
    osp_jw_obj_open(w);
    osp_jw_key(w, "index");
    osp_jw_int(w, m->e.index);
    osp_jw_key(w, "name");
    osp_jw_str(w, m->label);
    osp_jw_key(w, "state");
    osp_jw_str(w, srv_model_state_name(m->e.state));
    const char *rate_key[SRV_OUT_COUNT] = {"fps", "shedPerS", "expiredPerS", "errorPerS"};
    for (int o = 0; o < SRV_OUT_COUNT; o++)
        put_rate(w, rate_key[o], c->frames[o], p->seen ? p->frames[o] : c->frames[o], dt);
    put_ms_or_null(w, "p50Ms", osp_hist_quantile(0.5, srv_hist_bounds_s, SRV_HIST_BOUNDS, d));
    put_ms_or_null(w, "p99Ms", osp_hist_quantile(0.99, srv_hist_bounds_s, SRV_HIST_BOUNDS, d));
    osp_jw_key(w, "queueDepth");
    osp_jw_int(w, c->pending);
    osp_jw_key(w, "running");
    osp_jw_int(w, c->running);
    osp_jw_key(w, "totals");
    osp_jw_obj_open(w);
    for (int o = 0; o < SRV_OUT_COUNT; o++) {
        osp_jw_key(w, OUTCOME[o]);
        osp_jw_int(w, c->frames[o]);
    }
    osp_jw_obj_close(w);
    osp_jw_obj_close(w);
    memcpy(p->frames, c->frames, sizeof p->frames);
    memcpy(p->total, tot, sizeof p->total);
    p->seen = 1;
}

void srv_page_event(server_t *s, srv_page_stream_t *st, osp_jw_t *w) {
    srv_page_model_t *m = malloc(OSP_MAX_SLOTS * sizeof *m);
    int n = m ? srv_pages_models(s, m) : 0;
    struct timespec now;
    osp_now(&now);
    double dt = st->started ? osp_ms_since(&st->at) / 1000.0 : 0;
    st->at = now;
    st->started = 1;
    osp_jw_obj_open(w);
    osp_jw_key(w, "uptimeS");
    osp_jw_num(w, osp_ms_since(&s->started) / 1000.0, 1);
    osp_jw_key(w, "intervalS");
    osp_jw_num(w, dt, 3);
    osp_jw_key(w, "rssBytes");
    osp_jw_int(w, srv_pages_rss_bytes());
    osp_jw_key(w, "models");
    osp_jw_arr_open(w);
    for (int i = 0; i < n; i++) put_stream_model(w, &m[i], &st->prev[m[i].e.index], dt);
    osp_jw_arr_close(w);
    srv_board_event_t ev[SRV_BOARD_EVENTS];
    int ne = srv_board_events(s->board, st->event_seq, ev, SRV_BOARD_EVENTS);
    osp_jw_key(w, "loadEvents");
    osp_jw_arr_open(w);
    for (int i = 0; i < ne; i++) {
        osp_jw_obj_open(w);
        osp_jw_key(w, "atS");
        osp_jw_num(w, ev[i].at_s, 2);
        osp_jw_key(w, "index");
        osp_jw_int(w, ev[i].index);
        osp_jw_key(w, "name");
        osp_jw_str(w, ev[i].name);
        osp_jw_key(w, "state");
        osp_jw_str(w, srv_model_state_name(ev[i].state));
        osp_jw_key(w, "detail");
        osp_jw_str(w, ev[i].detail);
        osp_jw_obj_close(w);
        st->event_seq = ev[i].seq;
    }
    osp_jw_arr_close(w);
    osp_jw_obj_close(w);
    free(m);
}
