/*
 * Streams (an osprey extension, docs/protocol.md): a host opens a stream on
 * a windowed or stateful sequence model, pushes frames of features (audio
 * chunks, per-frame embeddings) with message type 0x07, and every push is
 * answered at once with the newest reading and its age — the scoring runs
 * on the stream's own worker (src/stream/), never on the I/O thread and
 * never holding up a push. Opening loads the model through the server's
 * one bounded loader (core/loads.h), as every model load does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "model/paths.h"
#include "base/clock.h"
#include "server/pipe/cmds.h"
#include "server/pipe/policy.h"
#include "server/pipe/reply.h"
#include "server/pipe/conn.h"
#include "server/core/dispatch.h"
#include "server/core/job.h"
#include "server/core/loads.h"
#include "server/core/loop.h"
#include "server/core/stats.h"
#include "server/pipe/streams.h"
#include "stream/stream.h"
#include "wire/cmdargs.h"
#include "wire/peek.h"
#include "log/log.h"

#define STREAM_JOIN_MS 1000
/* What one peer may hold (docs/security.md): each stream is a scoring
 * thread and a ring; its parameters are bounded by wire/cmdargs.h. */
#define STREAMS_PER_CONN 8 /* open or opening */
#define STREAMS_MAX 64     /* in all */
_Static_assert(OSP_WIRE_STREAM_MAX_CHANNELS == OSP_STREAM_MAX_CHANNELS, "channel bounds differ");
_Static_assert(OSP_WIRE_STREAM_MAX_STATE == OSP_STREAM_ORT_MAX_STATE, "state bounds differ");

typedef struct srv_stream srv_stream_t;

struct srv_stream {
    struct srv_stream *next;
    uint32_t id, owner;
    osp_rt_model_t *model;
    osp_stream_ort_t *bind;
    osp_stream_t *scorer;
    int frame_len;
};

struct srv_streams {
    srv_stream_t *head;
    uint32_t next_id;
    int opening;          /* open_stream loads queued or under way */
    uint32_t *opening_by; /* ... the connection of each (STREAMS_MAX entries) */
};

/* What the loader's thread opens a stream from (osp_load_how_t's arg). */
typedef struct {
    const osp_backend_t *backend;
    char path[1024];
    osp_stream_ort_spec_t spec;
    char names[2 + 2 * OSP_STREAM_ORT_MAX_STATE + 1][128]; /* storage for the spec's names */
    osp_stream_config_t cfg;
} open_spec_t;

/* An open_stream waiting for its load, on the I/O thread. */
typedef struct {
    uint32_t conn_id, req_id;
    char path[1024];
} open_req_t;

static void stream_free(srv_stream_t *st) {
    if (!st) return;
    if (st->scorer) {
        osp_stream_stop(st->scorer);
        osp_stream_free(st->scorer);
    }
    osp_stream_ort_free(st->bind);
    osp_rt_model_free(st->model);
    free(st);
}

static void reply_cmd(server_t *s, uint32_t conn_id, uint32_t req_id, const char *cmd,
                      const char *error, const srv_stream_t *st, const osp_stream_reading_t *r) {
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = srv_cmd_begin(w, cmd, -1, error ? "error" : "ok");
    if (error) {
        osp_jw_key(w, "error");
        osp_jw_str(w, error);
    }
    if (st) {
        osp_jw_key(w, "streamId");
        osp_jw_uint(w, st->id);
        osp_jw_key(w, "frameLen");
        osp_jw_int(w, st->frame_len);
        osp_jw_key(w, "channels");
        osp_jw_int(w, osp_stream_out_len(st->scorer));
    }
    if (r) {
        osp_jw_key(w, "pushed");
        osp_jw_int(w, r->pushed);
        osp_jw_key(w, "windowsCompleted");
        osp_jw_int(w, r->windows_completed);
        osp_jw_key(w, "failures");
        osp_jw_int(w, r->failures);
    }
    srv_cmd_send(s, conn_id, w, at, req_id);
}

/* On the loader's thread: the model, its binding and its scoring thread. */
static int stream_open(void *arg, void **made, char *err, size_t errlen) {
    open_spec_t *a = arg;
    srv_stream_t *st = calloc(1, sizeof *st);
    osp_rt_opts_t ro = {.intra_threads = 1, .device = "cpu"};
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (a->backend->load(a->path, &ro, &st->model, err, errlen) == 0 &&
        osp_stream_ort_new(st->model, &a->spec, &st->bind, err, errlen) == 0) {
        osp_stream_fn_t fn = osp_stream_ort_fn(st->bind);
        if (osp_stream_new(&a->cfg, &fn, &st->scorer, err, errlen) == 0 &&
            osp_stream_start(st->scorer, err, errlen) == 0) {
            st->frame_len = a->cfg.frame_len;
            *made = st;
            return 0;
        }
    }
    stream_free(st);
    return -1;
}

static void stream_drop(void *made) { stream_free(made); }

static const osp_load_how_t OPEN_HOW = {stream_open, stream_drop, free};

static void opening_add(srv_streams_t *sts, uint32_t conn_id) {
    sts->opening_by[sts->opening++] = conn_id;
}

static void opening_remove(srv_streams_t *sts, uint32_t conn_id) {
    for (int i = 0; i < sts->opening; i++)
        if (sts->opening_by[i] == conn_id) {
            sts->opening_by[i] = sts->opening_by[--sts->opening];
            return;
        }
}

/* Streams open or opening: on connection conn_id, and in all. */
static int streams_of(const srv_streams_t *sts, uint32_t conn_id, int *all) {
    int mine = 0;
    *all = sts->opening;
    for (int i = 0; i < sts->opening; i++) mine += sts->opening_by[i] == conn_id;
    for (const srv_stream_t *st = sts->head; st; st = st->next) {
        (*all)++;
        mine += st->owner == conn_id;
    }
    return mine;
}

/* The load of an open_stream answered (core/loads.h): the stream is the
 * connection's, or the reply says why not. */
static void stream_loaded(server_t *s, void *arg, srv_load_end_t *end) {
    open_req_t *q = arg;
    conn_t *c = srv_conn_find(s, q->conn_id);
    opening_remove(s->streams, q->conn_id);
    srv_jobs_hold(s, -1);
    if (c) srv_conn_inflight(c, -1);
    char err[1400];
    if (end->status == SRV_LOAD_OK && c) {
        srv_stream_t *st = end->made;
        end->made = NULL;
        st->id = ++s->streams->next_id;
        st->owner = q->conn_id;
        st->next = s->streams->head;
        s->streams->head = st;
        osp_log(OSP_LOG_INFO, "ospreyd: stream %u open on %s (%d values per frame)", st->id,
                q->path, st->frame_len);
        reply_cmd(s, q->conn_id, q->req_id, "open_stream", NULL, st, NULL);
    } else if (end->status == SRV_LOAD_TIMED_OUT) {
        snprintf(err, sizeof err,
                 "open_stream: loading %s took longer than %lld ms; left to finish, then dropped, "
                 "and no model load starts until it does",
                 q->path, (long long)end->bound_ms);
        reply_cmd(s, q->conn_id, q->req_id, "open_stream", err, NULL, NULL);
    } else if (end->status != SRV_LOAD_OK) {
        snprintf(err, sizeof err, "%s%s", end->status == SRV_LOAD_POISONED ? "open_stream: " : "",
                 end->err);
        reply_cmd(s, q->conn_id, q->req_id, "open_stream", err, NULL, NULL);
    } /* else the host is gone: the stream is dropped with end */
    free(q);
}

/* The model file must be a regular file: ONNX Runtime's open of a FIFO
 * would hold the opening thread (and the connection's answer) forever. */
static int check_file(const open_spec_t *a, char *err, size_t errlen) {
    int fd = osp_paths_open(a->path, "model file", OSP_MODEL_MAX_BYTES, NULL, err, errlen);
    if (fd >= 0) close(fd);
    return fd < 0 && fd != OSP_PATHS_ENOENT ? -1 : 0; /* a missing one: the runtime says so */
}

/* Fill a from the command's config (osp_wire_stream_open_parse): the
 * built-in Silero VAD, or a model file (a peer's confined to the model
 * roots) with the stream's parameters. */
static int parse_open(server_t *s, const conn_t *conn, open_spec_t *a, const cJSON *cfg, char *err,
                      size_t errlen) {
    osp_wire_stream_open_t o;
    if (osp_wire_stream_open_parse(cfg, &o, err, errlen)) return -1;
    if (o.silero) {
        osp_catalog_file("silero_vad_v5.onnx", a->path, sizeof a->path);
        a->spec = (osp_stream_ort_spec_t){.input = "input",
                                          .output = "output",
                                          .n_state = 1,
                                          .state_in = {"state"},
                                          .state_out = {"stateN"},
                                          .int_input = "sr",
                                          .int_value = 16000};
        a->cfg = (osp_stream_config_t){.frame_len = 512,
                                       .window = 1,
                                       .stride = 1,
                                       .backlog = 64,
                                       .channels = 1,
                                       .join_timeout_ms = STREAM_JOIN_MS};
        return check_file(a, err, errlen);
    }
    if (srv_from(conn) == SRV_FROM_PEER) {
        if (osp_paths_confine(s->roots, o.path, "model file", a->path, sizeof a->path, err, errlen))
            return -1;
    } else {
        snprintf(a->path, sizeof a->path, "%s", o.path);
    }
    a->cfg = (osp_stream_config_t){.frame_len = o.frame_len,
                                   .window = o.window,
                                   .stride = o.stride,
                                   .backlog = o.backlog,
                                   .channels = o.channels,
                                   .join_timeout_ms = STREAM_JOIN_MS};
    int n = 0;
    snprintf(a->names[n], 128, "%s", o.input);
    a->spec.input = a->names[n++];
    snprintf(a->names[n], 128, "%s", o.output);
    a->spec.output = a->names[n++];
    if (o.int_input) {
        snprintf(a->names[n], 128, "%s", o.int_input);
        a->spec.int_input = a->names[n++];
        a->spec.int_value = o.int_value;
    }
    for (int i = 0; i < o.n_state; i++) {
        snprintf(a->names[n], 128, "%s", o.state_in[i]);
        a->spec.state_in[i] = a->names[n++];
        snprintf(a->names[n], 128, "%s", o.state_out[i]);
        a->spec.state_out[i] = a->names[n++];
    }
    a->spec.n_state = o.n_state;
    return check_file(a, err, errlen);
}

static srv_stream_t *find(server_t *s, const cJSON *id) {
    if (!cJSON_IsNumber(id)) return NULL;
    for (srv_stream_t *st = s->streams->head; st; st = st->next)
        if ((double)st->id == id->valuedouble) return st;
    return NULL;
}

static void unlink_stream(server_t *s, srv_stream_t *st) {
    srv_stream_t **pp = &s->streams->head;
    while (*pp && *pp != st) pp = &(*pp)->next;
    if (*pp) *pp = st->next;
}

int srv_stream_command(server_t *s, conn_t *c, uint32_t req_id, const char *name, const cJSON *cmd) {
    char err[512];
    if (strcmp(name, "open_stream") == 0) {
        open_spec_t *a = calloc(1, sizeof *a);
        open_req_t *q = calloc(1, sizeof *q);
        if (!a || !q) {
            free(a);
            free(q);
            reply_cmd(s, srv_conn_id(c), req_id, name, "out of memory", NULL, NULL);
            return 1;
        }
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(cmd, "config");
        int all, mine = streams_of(s->streams, srv_conn_id(c), &all);
        if (mine >= STREAMS_PER_CONN || all >= STREAMS_MAX) {
            snprintf(err, sizeof err, "open_stream: at most %d streams on a connection and %d in all",
                     STREAMS_PER_CONN, STREAMS_MAX);
            reply_cmd(s, srv_conn_id(c), req_id, name, err, NULL, NULL);
            free(a);
            free(q);
            return 1;
        }
        if (parse_open(s, c, a, cfg, err, sizeof err)) {
            reply_cmd(s, srv_conn_id(c), req_id, name, err, NULL, NULL);
            free(a);
            free(q);
            return 1;
        }
        /* a stream's model loads through the runtime every model does */
        a->backend = s->set.backend ? s->set.backend : &osp_backend_onnxruntime;
        q->conn_id = srv_conn_id(c);
        q->req_id = req_id;
        snprintf(q->path, sizeof q->path, "%s", a->path);
        char model_id[128];
        srv_model_id(a->path, model_id, sizeof model_id);
        /* held until stream_loaded, which may run before srv_load_how returns */
        srv_jobs_hold(s, 1);
        srv_conn_inflight(c, 1);
        opening_add(s->streams, q->conn_id);
        if (srv_load_how(s, &OPEN_HOW, a, model_id, stream_loaded, q)) { /* a is given back */
            opening_remove(s->streams, q->conn_id);
            srv_jobs_hold(s, -1);
            srv_conn_inflight(c, -1);
            reply_cmd(s, q->conn_id, req_id, name, "out of memory", NULL, NULL);
            free(q);
        }
        return 1;
    }
    if (strcmp(name, "close_stream") == 0) {
        srv_stream_t *st = find(s, cJSON_GetObjectItemCaseSensitive(cmd, "streamId"));
        if (!st || st->owner != srv_conn_id(c)) {
            reply_cmd(s, srv_conn_id(c), req_id, name,
                      "close_stream: no such \"streamId\" on this connection", NULL, NULL);
            return 1;
        }
        unlink_stream(s, st);
        osp_stream_stop(st->scorer);
        osp_stream_reading_t r;
        osp_stream_latest(st->scorer, &r);
        reply_cmd(s, srv_conn_id(c), req_id, name, NULL, NULL, &r);
        stream_free(st);
        return 1;
    }
    return 0;
}

void srv_streams_conn_closed(server_t *s, uint32_t conn_id) {
    for (srv_stream_t *st = s->streams->head, *n; st; st = n) {
        n = st->next;
        if (st->owner == conn_id) {
            unlink_stream(s, st);
            stream_free(st);
        }
    }
}

srv_streams_t *srv_streams_new(void) {
    srv_streams_t *sts = calloc(1, sizeof *sts);
    if (sts && !(sts->opening_by = calloc(STREAMS_MAX, sizeof *sts->opening_by))) {
        free(sts);
        return NULL;
    }
    return sts;
}

int srv_streams_open(const server_t *s) { return s->streams->head != NULL; }

void srv_streams_free(srv_streams_t *sts) {
    if (!sts) return;
    while (sts->head) {
        srv_stream_t *st = sts->head;
        sts->head = st->next;
        stream_free(st);
    }
    free(sts->opening_by);
    free(sts);
}

/* 0x07 stream_push: [u32 stream][frameLen float32, little-endian]. Answered
 * at once with the newest reading; the frame is copied into the stream's
 * ring and scored by its worker when it gets there. */
void srv_on_stream_push(server_t *s, conn_t *c, const osp_wire_frame_t *f) {
    char err[256];
    osp_jw_t *w = srv_reply_buf(s);
    size_t at = osp_wire_reply_begin(w);
    srv_stream_t *st = NULL;
    osp_wire_push_t sp;
    if (osp_wire_push_parse(f->payload, f->payload_len, &sp, err, sizeof err) == 0) {
        for (st = s->streams->head; st && !(st->id == sp.stream_id && st->owner == srv_conn_id(c));
             st = st->next) {
        }
        if (!st)
            snprintf(err, sizeof err, "stream %u is not open on this connection", sp.stream_id);
    }
    if (st && osp_wire_push_check(&sp, st->frame_len, err, sizeof err)) st = NULL;
    if (!st) {
        srv_stat_add(s, SRV_ST_ERRORS, 1);
        osp_wire_json_error(w, err);
    } else {
        float stack[4096], *frame = st->frame_len <= 4096 ? stack : malloc((size_t)st->frame_len * 4);
        int rc = -1;
        if (frame) {
            memcpy(frame, sp.features, (size_t)st->frame_len * 4); /* aligned copy */
            rc = osp_stream_push(st->scorer, frame);
            if (frame != stack) free(frame);
        }
        osp_stream_reading_t r;
        osp_stream_latest(st->scorer, &r);
        osp_jw_obj_open(w);
        osp_jw_key(w, "streamId");
        osp_jw_uint(w, st->id);
        osp_jw_key(w, "pushed");
        osp_jw_int(w, r.pushed);
        osp_jw_key(w, "accepted");
        osp_jw_bool(w, rc == 0);
        osp_jw_key(w, "warmingUp");
        osp_jw_bool(w, r.warming_up);
        osp_jw_key(w, "frame");
        osp_jw_int(w, r.frame_index);
        osp_jw_key(w, "ageFrames");
        osp_jw_int(w, r.warming_up ? 0 : r.age_frames);
        osp_jw_key(w, "scores");
        osp_jw_arr_open(w);
        for (int i = 0; !r.warming_up && i < r.channels; i++) osp_jw_num(w, r.scores[i], 6);
        osp_jw_arr_close(w);
        osp_jw_key(w, "windowsCompleted");
        osp_jw_int(w, r.windows_completed);
        osp_jw_key(w, "failures");
        osp_jw_int(w, r.failures);
        osp_jw_obj_close(w);
    }
    osp_wire_reply_end(w, at, f->req_id);
    srv_send(s, c, w);
}
