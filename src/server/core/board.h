/*
 * board: what other threads may know of the models — each configured
 * slot's name, file, input, postprocessor and load state, and the last
 * load events — published by the thread that owns the slots (the I/O
 * thread, or main while the startup config loads before the loop runs).
 * slots.c is that thread's alone; the HTTP threads read this copy instead.
 * One mutex guards it; it is taken only when a model's state changes
 * (never per frame) and while a reader copies it out.
 */
#ifndef OSP_BOARD_H
#define OSP_BOARD_H

#include <stdint.h>

#include "model/model.h"
#include "server/core/srv.h"

typedef enum {
    SRV_MODEL_EMPTY, /* not configured (never named, or unloaded) */
    SRV_MODEL_LOADING,
    SRV_MODEL_LOADED,
    SRV_MODEL_FAILED,   /* its last load failed and nothing is in its slot */
    SRV_MODEL_POISONED, /* its load ran past the bound and is still running */
} srv_model_state_t;

/* "empty", "loading", "loaded", "failed", "poisoned" */
const char *srv_model_state_name(srv_model_state_t st);

typedef struct {
    int index;
    srv_model_state_t state;
    char name[64];  /* catalog name or the file's stem */
    char file[512]; /* as configured (cut to fit) */
    char postprocessor[32];
    char input[64];  /* e.g. "300x300x3 nhwc uint8" */
    char error[256]; /* the last load failure, or "" */
    double load_ms;  /* the last load's duration */
} srv_board_entry_t;

typedef struct {
    uint64_t seq; /* 1, 2, ...: readers ask for what follows theirs */
    double at_s;  /* seconds since the server started */
    int index;
    char name[64];
    srv_model_state_t state;
    char detail[200];
} srv_board_event_t;

srv_board_t *srv_board_new(void);
void srv_board_free(srv_board_t *b);

/* ---- the owning thread ------------------------------------------------------- */

/* The first startup config was applied: a server without one is not ready. */
void srv_board_configured(server_t *s);
void srv_board_loading(server_t *s, int idx, const osp_model_cfg_t *cfg);
/* Slot idx as it is now (a model installed: loaded; else empty), after a
 * load of ms (< 0: no load, e.g. shared or unchanged). */
void srv_board_sync(server_t *s, int idx, double ms);
/* A load of slot idx failed with err: failed, unless the slot still holds
 * a model (a replace that failed), which stays loaded. */
void srv_board_failed(server_t *s, int idx, const char *name, const char *err);
void srv_board_poisoned(server_t *s, int idx, const char *name, double bound_ms);

/* ---- any thread ---------------------------------------------------------------- */

/* Whether a startup config was applied. */
int srv_board_is_configured(srv_board_t *b);
/* The configured slots (state not empty), by index, into out (max
 * entries); returns how many. */
int srv_board_read(srv_board_t *b, srv_board_entry_t *out, int max);
/* Events after seq `after`, oldest first (only the last few are kept). */
int srv_board_events(srv_board_t *b, uint64_t after, srv_board_event_t *out, int max);

#define SRV_BOARD_EVENTS 32

#endif
