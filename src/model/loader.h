/*
 * loader: bounded model loads (docs/protocol.md, "model loads"). One load
 * at a time runs on a thread of its own while the caller's event loop
 * keeps serving; the loop bounds it with a timer. A load past its bound is
 * abandoned, not killed (a native compile cannot be interrupted): the
 * loader is then poisoned — no other load may start — until the abandoned
 * thread returns, and that late return is reported so the caller can
 * announce it. The loader thread hands its result to the caller's `post`
 * callback (which must be safe to call from any thread, e.g. a mailbox
 * post); everything else is called on the caller's one thread.
 *
 * Ownership: a result is the caller's from `post` on and is freed with
 * osp_loader_result_free; a result classified OSP_LOAD_IN_TIME carries the
 * model, which the caller takes by clearing result->model.
 */
#ifndef OSP_LOADER_H
#define OSP_LOADER_H

#include <stdint.h>

#include "model/model.h"

typedef struct osp_loader osp_loader_t;

typedef struct {
    int seq;                  /* which load this is */
    osp_model_t *model;       /* NULL when it failed */
    void *made;               /* osp_loader_start_how's: what its open made, or NULL */
    void (*drop)(void *made); /* ... and how it is freed when nobody takes it */
    int rc;
    char err[512];
    double load_ms;
} osp_load_result_t;

typedef void (*osp_loader_post_fn)(void *arg, osp_load_result_t *r);

/* bound_ms: the bound on each load (> 0). */
osp_loader_t *osp_loader_new(double bound_ms, osp_loader_post_fn post, void *arg);
/* Abandoned loads still running keep their own copies: nothing of theirs is freed here. */
void osp_loader_free(osp_loader_t *ld);
void osp_loader_result_free(osp_load_result_t *r);

double osp_loader_bound_ms(const osp_loader_t *ld);
/* A load is in flight within its bound. */
int osp_loader_busy(const osp_loader_t *ld);

typedef struct {
    int index;
    char model_id[128];
    double elapsed_ms; /* since the load started */
    int64_t at_ms;     /* poisoned: epoch ms when the bound passed */
} osp_load_info_t;

/* 1 and *info when an abandoned load still runs (no load may start). */
int osp_loader_poisoned(const osp_loader_t *ld, osp_load_info_t *info);
/* 1 and *info when a load is in flight. */
int osp_loader_in_flight(const osp_loader_t *ld, osp_load_info_t *info);

/* Start loading cfg into slot `index` (model_id names it in messages).
 * 0, or -1 when busy, poisoned, or no thread could be started. */
int osp_loader_start(osp_loader_t *ld, const osp_model_cfg_t *cfg, const osp_backend_t *backend,
                     int index, const char *model_id);

/* The same, and then the cascade `then` (model/cascade.h, parsed; the
 * loader's from here on, whatever happens) opened on the loader's thread
 * within the same bound: the model is given to the caller with it
 * (model->then). A step that fails fails the load, its error naming the
 * step. */
struct osp_cascade;
int osp_loader_start_then(osp_loader_t *ld, const osp_model_cfg_t *cfg, const osp_backend_t *backend,
                          struct osp_cascade *then, int index, const char *model_id);

/* A load of something other than a model config (a stream's model): on
 * the loader's thread, open(arg) makes *made (0) or fails (-1, err says
 * why); arg_free(arg) follows on that thread. The result carries made,
 * which the caller takes by clearing result->made, else it is given to
 * drop. Bounded, poisoning and late exactly as osp_loader_start's. */
typedef struct {
    int (*open)(void *arg, void **made, char *err, size_t errlen);
    void (*drop)(void *made);
    void (*arg_free)(void *arg);
} osp_load_how_t;
/* 0, or -1 when busy, poisoned, or no thread could be started (arg is
 * then still the caller's). */
int osp_loader_start_how(osp_loader_t *ld, const osp_load_how_t *how, void *arg, int index,
                         const char *model_id);

/* Milliseconds until the load in flight reaches its bound (0: now), -1: none. */
int osp_loader_timer_ms(const osp_loader_t *ld);
/* 1 when the load in flight has passed its bound: it is abandoned now, the
 * loader poisoned, *info says which. */
int osp_loader_expire(osp_loader_t *ld, osp_load_info_t *info);

typedef enum {
    OSP_LOAD_IN_TIME = 0, /* the load in flight, back before osp_loader_expire found its bound passed */
    OSP_LOAD_LATE = 1,  /* the abandoned load returned: the loader is free again */
    OSP_LOAD_STALE = 2, /* nothing to do */
} osp_load_outcome_t;
/* Classify a result the loader posted, and count it; *info says which
 * load it was (for OSP_LOAD_IN_TIME and OSP_LOAD_LATE; elapsed since it
 * started). */
osp_load_outcome_t osp_loader_finish(osp_loader_t *ld, const osp_load_result_t *r,
                                     osp_load_info_t *info);

/* A load refused before it started (a bad config): counted as failed. */
void osp_loader_note_failed(osp_loader_t *ld);

typedef struct {
    int64_t completed, failed, timed_out, finished_late;
} osp_loader_counts_t;
void osp_loader_counts(const osp_loader_t *ld, osp_loader_counts_t *c);

#endif
