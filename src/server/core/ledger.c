/* Every inference request's outcome, per slot and in total; see ledger.h. */
#include "server/core/ledger.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct {
    _Atomic int64_t received, served;
    _Atomic int64_t shed[SRV_SHED_COUNT];
    _Atomic int64_t errors[SRV_FAIL_COUNT];
} row_t;

/* one row per slot and a last one for the requests that named none */
struct srv_ledger {
    row_t rows[OSP_MAX_SLOTS + 1];
};

static const char *const SHED_KEY[SRV_SHED_COUNT] = {"deadlineExpired", "queueFull"};
static const char *const SHED_LABEL[SRV_SHED_COUNT] = {"deadline-expired", "queue-full"};
static const char *const FAIL_KEY[SRV_FAIL_COUNT] = {"badRequest", "notLoaded", "notCached",
                                                     "failed",     "noMemory",  "timedOut",
                                                     "reloading"};
static const char *const FAIL_LABEL[SRV_FAIL_COUNT] = {"bad-request", "not-loaded", "not-cached",
                                                       "failed",      "no-memory",  "timed-out",
                                                       "reloading"};

const char *srv_shed_key(srv_shed_t why) { return SHED_KEY[why]; }
const char *srv_fail_key(srv_fail_t kind) { return FAIL_KEY[kind]; }
const char *srv_shed_label(srv_shed_t why) { return SHED_LABEL[why]; }
const char *srv_fail_label(srv_fail_t kind) { return FAIL_LABEL[kind]; }

srv_ledger_t *srv_ledger_new(void) { return calloc(1, sizeof(srv_ledger_t)); }
void srv_ledger_free(srv_ledger_t *l) { free(l); }

static row_t *row_of(const srv_ledger_t *l, int idx) {
    return (row_t *)&l->rows[idx >= 0 && idx < OSP_MAX_SLOTS ? idx : OSP_MAX_SLOTS];
}

static void bump(_Atomic int64_t *v) { atomic_fetch_add_explicit(v, 1, memory_order_relaxed); }

void srv_req_received(server_t *s, int idx) { bump(&row_of(s->ledger, idx)->received); }
void srv_req_served(server_t *s, int idx) { bump(&row_of(s->ledger, idx)->served); }
void srv_req_shed(server_t *s, int idx, srv_shed_t why) {
    bump(&row_of(s->ledger, idx)->shed[why]);
}

void srv_req_error(server_t *s, int idx, srv_fail_t kind) {
    bump(&row_of(s->ledger, idx)->errors[kind]);
}

static int64_t load(const _Atomic int64_t *v) {
    return atomic_load_explicit((_Atomic int64_t *)v, memory_order_relaxed);
}

static void add_row(const row_t *r, srv_ledger_row_t *out) {
    out->received += load(&r->received);
    out->served += load(&r->served);
    for (int i = 0; i < SRV_SHED_COUNT; i++) out->shed[i] += load(&r->shed[i]);
    for (int i = 0; i < SRV_FAIL_COUNT; i++) out->errors[i] += load(&r->errors[i]);
}

void srv_ledger_read(const srv_ledger_t *l, int idx, srv_ledger_row_t *out) {
    memset(out, 0, sizeof *out);
    add_row(row_of(l, idx), out);
}

void srv_ledger_total(const srv_ledger_t *l, srv_ledger_row_t *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i <= OSP_MAX_SLOTS; i++) add_row(&l->rows[i], out);
}

int srv_ledger_row_used(const srv_ledger_row_t *r) {
    int64_t n = r->received + r->served;
    for (int i = 0; i < SRV_SHED_COUNT; i++) n += r->shed[i];
    for (int i = 0; i < SRV_FAIL_COUNT; i++) n += r->errors[i];
    return n != 0;
}

/* {"received", "served", "shed": {...}, "errors": {...}}, without braces */
static void put_row(osp_jw_t *w, const srv_ledger_row_t *r) {
    osp_jw_key(w, "received");
    osp_jw_int(w, r->received);
    osp_jw_key(w, "served");
    osp_jw_int(w, r->served);
    osp_jw_key(w, "shed");
    osp_jw_obj_open(w);
    for (int i = 0; i < SRV_SHED_COUNT; i++) {
        osp_jw_key(w, SHED_KEY[i]);
        osp_jw_int(w, r->shed[i]);
    }
    osp_jw_obj_close(w);
    osp_jw_key(w, "errors");
    osp_jw_obj_open(w);
    for (int i = 0; i < SRV_FAIL_COUNT; i++) {
        osp_jw_key(w, FAIL_KEY[i]);
        osp_jw_int(w, r->errors[i]);
    }
    osp_jw_obj_close(w);
}

void srv_ledger_write(const srv_ledger_t *l, osp_jw_t *w) {
    srv_ledger_row_t r;
    srv_ledger_total(l, &r);
    osp_jw_obj_open(w);
    put_row(w, &r);
    osp_jw_key(w, "models");
    osp_jw_obj_open(w);
    for (int i = 0; i < OSP_MAX_SLOTS; i++) {
        srv_ledger_read(l, i, &r);
        if (!srv_ledger_row_used(&r)) continue;
        char key[16];
        snprintf(key, sizeof key, "%d", i);
        osp_jw_key(w, key);
        osp_jw_obj_open(w);
        put_row(w, &r);
        osp_jw_obj_close(w);
    }
    osp_jw_obj_close(w);
    srv_ledger_read(l, SRV_LEDGER_NO_MODEL, &r);
    osp_jw_key(w, "noModel");
    osp_jw_obj_open(w);
    put_row(w, &r);
    osp_jw_obj_close(w);
    osp_jw_obj_close(w);
}
