/* Model states published for other threads; see board.h. */
#include "server/core/board.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "server/core/slots.h"

struct srv_board {
    pthread_mutex_t mu; /* guards everything below */
    int configured;
    srv_board_entry_t e[OSP_MAX_SLOTS];
    srv_board_event_t ev[SRV_BOARD_EVENTS]; /* a ring: seq n at n % SRV_BOARD_EVENTS */
    uint64_t seq;                           /* the last event's */
    struct timespec started;
};

const char *srv_model_state_name(srv_model_state_t st) {
    static const char *const names[] = {"empty", "loading", "loaded", "failed", "poisoned"};
    return (unsigned)st < sizeof names / sizeof names[0] ? names[st] : "unknown";
}

srv_board_t *srv_board_new(void) {
    srv_board_t *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_init(&b->mu, NULL);
    for (int i = 0; i < OSP_MAX_SLOTS; i++) b->e[i].index = i;
    osp_now(&b->started);
    return b;
}

void srv_board_free(srv_board_t *b) {
    if (!b) return;
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* src into dst of n bytes, cut to fit (paths may be longer than shown). */
static void copy(char *dst, size_t n, const char *src) {
    size_t len = strnlen(src, n - 1);
    memmove(dst, src, len);
    dst[len] = '\0';
}

/* Under the lock. */
static void add_event(srv_board_t *b, int idx, srv_model_state_t st, const char *detail) {
    srv_board_event_t *ev = &b->ev[++b->seq % SRV_BOARD_EVENTS];
    ev->seq = b->seq;
    ev->at_s = osp_ms_since(&b->started) / 1000.0;
    ev->index = idx;
    copy(ev->name, sizeof ev->name, b->e[idx].name);
    ev->state = st;
    snprintf(ev->detail, sizeof ev->detail, "%s", detail ? detail : "");
}

static int in_range(int idx) { return idx >= 0 && idx < OSP_MAX_SLOTS; }

void srv_board_configured(server_t *s) {
    pthread_mutex_lock(&s->board->mu);
    s->board->configured = 1;
    pthread_mutex_unlock(&s->board->mu);
}

void srv_board_loading(server_t *s, int idx, const osp_model_cfg_t *cfg) {
    if (!in_range(idx)) return;
    srv_board_t *b = s->board;
    pthread_mutex_lock(&b->mu);
    srv_board_entry_t *e = &b->e[idx];
    if (e->state != SRV_MODEL_LOADED) { /* a replace keeps serving the old one meanwhile */
        e->state = SRV_MODEL_LOADING;
        snprintf(e->name, sizeof e->name, "%s", cfg->name);
        copy(e->file, sizeof e->file, cfg->path);
        snprintf(e->postprocessor, sizeof e->postprocessor, "%s", cfg->postprocessor);
        e->input[0] = '\0';
    }
    char detail[200];
    snprintf(detail, sizeof detail, "loading %s", cfg->name);
    add_event(b, idx, SRV_MODEL_LOADING, detail);
    pthread_mutex_unlock(&b->mu);
}

static void describe_input(const osp_model_t *m, char *out, size_t n) {
    snprintf(out, n, "%dx%dx%d %s %s", m->prep.width, m->prep.height, m->prep.channels,
             m->prep.layout == OSP_LAYOUT_NHWC ? "nhwc" : "nchw",
             m->prep.elem == OSP_ELEM_U8 ? "uint8" : "float32");
}

void srv_board_sync(server_t *s, int idx, double ms) {
    if (!in_range(idx)) return;
    loaded_t *l = srv_slot(s, idx);
    srv_board_t *b = s->board;
    pthread_mutex_lock(&b->mu);
    srv_board_entry_t *e = &b->e[idx];
    srv_model_state_t was = e->state;
    if (l) {
        const osp_model_t *m = srv_loaded_model(l);
        e->state = SRV_MODEL_LOADED;
        snprintf(e->name, sizeof e->name, "%s", m->cfg.name);
        copy(e->file, sizeof e->file, srv_loaded_path(l));
        snprintf(e->postprocessor, sizeof e->postprocessor, "%s", srv_loaded_postprocessor(l));
        describe_input(m, e->input, sizeof e->input);
        e->error[0] = '\0';
        if (ms >= 0) e->load_ms = ms;
    } else {
        e->state = SRV_MODEL_EMPTY;
    }
    if (ms >= 0 || was != e->state) {
        char detail[200];
        if (l && ms >= 0)
            snprintf(detail, sizeof detail, "loaded in %.0f ms", ms);
        else
            snprintf(detail, sizeof detail, "%s", l ? "loaded" : "unloaded");
        add_event(b, idx, e->state, detail);
    }
    pthread_mutex_unlock(&b->mu);
}

void srv_board_failed(server_t *s, int idx, const char *name, const char *err) {
    if (!in_range(idx)) return;
    int held = srv_slot(s, idx) != NULL;
    srv_board_t *b = s->board;
    pthread_mutex_lock(&b->mu);
    srv_board_entry_t *e = &b->e[idx];
    if (!held) {
        e->state = SRV_MODEL_FAILED;
        if (name && *name) snprintf(e->name, sizeof e->name, "%s", name);
        if (!e->name[0]) snprintf(e->name, sizeof e->name, "model-%d", idx);
    }
    snprintf(e->error, sizeof e->error, "%s", err ? err : "");
    add_event(b, idx, SRV_MODEL_FAILED, e->error);
    pthread_mutex_unlock(&b->mu);
}

void srv_board_poisoned(server_t *s, int idx, const char *name, double bound_ms) {
    if (!in_range(idx)) return;
    int held = srv_slot(s, idx) != NULL;
    srv_board_t *b = s->board;
    pthread_mutex_lock(&b->mu);
    srv_board_entry_t *e = &b->e[idx];
    if (!held) e->state = SRV_MODEL_POISONED;
    if (name && *name && !held) snprintf(e->name, sizeof e->name, "%s", name);
    char detail[200];
    snprintf(detail, sizeof detail, "load still running past its %.0f ms bound", bound_ms);
    snprintf(e->error, sizeof e->error, "%s", detail);
    add_event(b, idx, SRV_MODEL_POISONED, detail);
    pthread_mutex_unlock(&b->mu);
}

int srv_board_is_configured(srv_board_t *b) {
    pthread_mutex_lock(&b->mu);
    int c = b->configured;
    pthread_mutex_unlock(&b->mu);
    return c;
}

int srv_board_read(srv_board_t *b, srv_board_entry_t *out, int max) {
    int n = 0;
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < OSP_MAX_SLOTS && n < max; i++)
        if (b->e[i].state != SRV_MODEL_EMPTY) out[n++] = b->e[i];
    pthread_mutex_unlock(&b->mu);
    return n;
}

int srv_board_events(srv_board_t *b, uint64_t after, srv_board_event_t *out, int max) {
    int n = 0;
    pthread_mutex_lock(&b->mu);
    uint64_t first = b->seq > SRV_BOARD_EVENTS ? b->seq - SRV_BOARD_EVENTS + 1 : 1;
    if (after + 1 > first) first = after + 1;
    for (uint64_t q = first; q <= b->seq && n < max; q++) out[n++] = b->ev[q % SRV_BOARD_EVENTS];
    pthread_mutex_unlock(&b->mu);
    return n;
}
