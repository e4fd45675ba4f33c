/*
 * Streams (an osprey extension, docs/protocol.md): a host opens a stream on
 * a windowed or stateful sequence model, pushes frames of features (audio
 * chunks, per-frame embeddings) with message type 0x07, and every push is
 * answered at once with the newest reading and its age — the scoring runs
 * on the stream's own worker (src/stream/), never on the I/O thread and
 * never holding up a push. Opening loads the model on a thread of its own.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/model.h"
#include "sched/pool.h"
#include "server/cmds.h"
#include "server/conn.h"
#include "server/dispatch.h"
#include "server/job.h"
#include "server/loop.h"
#include "server/stats.h"
#include "server/streams.h"
#include "stream/stream.h"
#include "wire/peek.h"

#define STREAM_JOIN_MS 1000

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
};

/* An open_stream in progress: loaded on a thread of its own, handed back
 * as an event job. */
typedef struct {
    srv_job_t h;
    server_t *s;
    uint32_t conn_id, req_id;
    char path[1024];
    osp_stream_ort_spec_t spec;
    char names[2 + 2 * OSP_STREAM_ORT_MAX_STATE + 1][128]; /* storage for the spec's names */
    osp_stream_config_t cfg;
    srv_stream_t *made;
    char err[512];
} open_arg_t;

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

static void *open_main(void *arg) {
    open_arg_t *a = arg;
    (void)pthread_setname_np(pthread_self(), "osp-stream-open");
    srv_stream_t *st = calloc(1, sizeof *st);
    osp_rt_opts_t ro = {.intra_threads = 1, .device = "cpu"};
    if (!st) {
        snprintf(a->err, sizeof a->err, "out of memory");
    } else if (osp_backend_onnxruntime.load(a->path, &ro, &st->model, a->err, sizeof a->err) == 0 &&
               osp_stream_ort_new(st->model, &a->spec, &st->bind, a->err, sizeof a->err) == 0) {
        osp_stream_fn_t fn = osp_stream_ort_fn(st->bind);
        if (osp_stream_new(&a->cfg, &fn, &st->scorer, a->err, sizeof a->err) == 0 &&
            osp_stream_start(st->scorer, a->err, sizeof a->err) == 0) {
            st->frame_len = a->cfg.frame_len;
            a->made = st;
            st = NULL;
        }
    }
    stream_free(st);
    srv_post(a->s, &a->h);
    return NULL;
}

static void stream_opened(server_t *s, srv_job_t *h) {
    open_arg_t *a = (open_arg_t *)h;
    conn_t *c = srv_conn_find(s, a->conn_id);
    srv_jobs_hold(s, -1);
    if (c) srv_conn_inflight(c, -1);
    if (!a->made) {
        reply_cmd(s, a->conn_id, a->req_id, "open_stream", a->err, NULL, NULL);
    } else if (!c) {
        stream_free(a->made); /* the host is gone */
    } else {
        srv_stream_t *st = a->made;
        st->id = ++s->streams->next_id;
        st->owner = a->conn_id;
        st->next = s->streams->head;
        s->streams->head = st;
        fprintf(stderr, "ospreyd: stream %u open on %s (%d values per frame)\n", st->id, a->path,
                st->frame_len);
        reply_cmd(s, a->conn_id, a->req_id, "open_stream", NULL, st, NULL);
    }
    free(a);
}

static const char *str_key(const cJSON *o, const char *k, const char *dflt) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

static int int_key(const cJSON *o, const char *k, int dflt, int lo, int hi, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return -1;
    *out = (int)v->valuedouble;
    return 0;
}

/* Fill a from {"model": "silero-vad"} or {"path", "frameLen", "window",
 * "stride", "backlog", "channels", "input", "output", "state": [[in, out]…],
 * "intInput", "intValue"}. */
static int parse_open(open_arg_t *a, const cJSON *cfg, char *err, size_t errlen) {
    int n = 0;
    const char *model = str_key(cfg, "model", NULL);
    if (model && strcmp(model, "silero-vad") == 0) {
        char dir[900];
        osp_cache_dir(dir, sizeof dir);
        snprintf(a->path, sizeof a->path, "%s/models/silero_vad_v5.onnx", dir);
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
        return 0;
    }
    if (model) {
        snprintf(err, errlen,
                 "open_stream: unknown model '%s' (known: silero-vad; or give a path)", model);
        return -1;
    }
    const char *path = str_key(cfg, "path", NULL);
    if (!path || strlen(path) >= sizeof a->path) {
        snprintf(err, errlen, "open_stream needs \"config\" with \"model\" or \"path\"");
        return -1;
    }
    snprintf(a->path, sizeof a->path, "%s", path);
    osp_stream_config_t c = {.join_timeout_ms = STREAM_JOIN_MS};
    int window, stride, backlog, channels, frame_len, iv;
    if (int_key(cfg, "frameLen", 0, 1, 1 << 20, &frame_len) || frame_len == 0 ||
        int_key(cfg, "window", 1, 1, 1 << 16, &window) ||
        int_key(cfg, "stride", 0, 0, 1 << 16, &stride) ||
        int_key(cfg, "backlog", 0, 0, 1 << 16, &backlog) ||
        int_key(cfg, "channels", 1, 1, OSP_STREAM_MAX_CHANNELS, &channels) ||
        int_key(cfg, "intValue", 0, -2147483647, 2147483647, &iv)) {
        snprintf(err, errlen,
                 "open_stream: frameLen (required), window, stride, backlog, channels and intValue must be whole numbers in range");
        return -1;
    }
    c.frame_len = frame_len;
    c.window = window;
    c.stride = stride;
    c.backlog = backlog;
    c.channels = channels;
    a->cfg = c;
    snprintf(a->names[n], 128, "%s", str_key(cfg, "input", "input"));
    a->spec.input = a->names[n++];
    snprintf(a->names[n], 128, "%s", str_key(cfg, "output", "output"));
    a->spec.output = a->names[n++];
    const char *ii = str_key(cfg, "intInput", NULL);
    if (ii) {
        snprintf(a->names[n], 128, "%s", ii);
        a->spec.int_input = a->names[n++];
        a->spec.int_value = iv;
    }
    const cJSON *state = cJSON_GetObjectItemCaseSensitive(cfg, "state"), *pair;
    cJSON_ArrayForEach(pair, state) {
        const cJSON *in = cJSON_GetArrayItem(pair, 0), *out = cJSON_GetArrayItem(pair, 1);
        if (a->spec.n_state == OSP_STREAM_ORT_MAX_STATE || !cJSON_IsString(in) ||
            !cJSON_IsString(out)) {
            snprintf(err, errlen,
                     "open_stream: \"state\" is a list of up to %d [input, output] name pairs",
                     OSP_STREAM_ORT_MAX_STATE);
            return -1;
        }
        snprintf(a->names[n], 128, "%s", in->valuestring);
        a->spec.state_in[a->spec.n_state] = a->names[n++];
        snprintf(a->names[n], 128, "%s", out->valuestring);
        a->spec.state_out[a->spec.n_state++] = a->names[n++];
    }
    return 0;
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
        open_arg_t *a = calloc(1, sizeof *a);
        if (!a) {
            reply_cmd(s, srv_conn_id(c), req_id, name, "out of memory", NULL, NULL);
            return 1;
        }
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(cmd, "config");
        if (!cJSON_IsObject(cfg) || parse_open(a, cfg, err, sizeof err)) {
            if (!cJSON_IsObject(cfg))
                snprintf(err, sizeof err, "open_stream needs a \"config\" object");
            reply_cmd(s, srv_conn_id(c), req_id, name, err, NULL, NULL);
            free(a);
            return 1;
        }
        a->h.kind = SRV_JOB_EVENT;
        a->h.done = stream_opened;
        a->s = s;
        a->conn_id = srv_conn_id(c);
        a->req_id = req_id;
        if (osp_thread_detached(open_main, a)) {
            reply_cmd(s, srv_conn_id(c), req_id, name, "cannot start a thread", NULL, NULL);
            free(a);
            return 1;
        }
        srv_jobs_hold(s, 1);
        srv_conn_inflight(c, 1);
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

srv_streams_t *srv_streams_new(void) { return calloc(1, sizeof(srv_streams_t)); }

int srv_streams_open(const server_t *s) { return s->streams->head != NULL; }

void srv_streams_free(srv_streams_t *sts) {
    if (!sts) return;
    while (sts->head) {
        srv_stream_t *st = sts->head;
        sts->head = st->next;
        stream_free(st);
    }
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
