/*
 * loads: every model load the server starts goes through the one bounded
 * loader (model/loader.h): a command's load or replace, the models a
 * socket connection's handshake names, and the models Frigate's detector
 * names or uploads. Loads wait in one queue and run one at a time, each
 * within the load bound; each is answered once, on the I/O thread, through
 * its done callback: loaded (the model is the callback's), failed, past
 * its bound (the load is abandoned, not killed: the loader is poisoned
 * until it returns, and its late return is announced to every connection),
 * or refused because an abandoned load still runs. The board (board.h)
 * follows each load. I/O thread only.
 */
#ifndef OSP_LOADS_H
#define OSP_LOADS_H

#include <stdint.h>

#include "model/loader.h"
#include "model/model.h"
#include "server/core/srv.h"

typedef struct srv_loads srv_loads_t;

typedef enum {
    SRV_LOAD_OK,        /* model holds it */
    SRV_LOAD_FAILED,    /* err says why */
    SRV_LOAD_TIMED_OUT, /* past its bound after elapsed_ms: abandoned, the loader poisoned */
    SRV_LOAD_POISONED,  /* not started: the load of poisoned_by is still running past its bound */
} srv_load_status_t;

typedef struct {
    srv_load_status_t status;
    osp_model_t *model; /* SRV_LOAD_OK: the callback takes it by clearing this; freed otherwise */
    void *made;         /* the same for a srv_load_how's (given to its drop otherwise) */
    int index;
    char model_id[128];
    double load_ms;        /* SRV_LOAD_OK, SRV_LOAD_FAILED */
    double elapsed_ms;     /* TIMED_OUT: its time; POISONED: the poisoning load's time */
    int64_t bound_ms;      /* the bound it ran under */
    char poisoned_by[128]; /* POISONED: that load's model id, at poisoned_index */
    int poisoned_index;
    char err[600]; /* FAILED, TIMED_OUT, POISONED: a sentence a person reads */
} srv_load_end_t;

typedef void (*srv_load_done_fn)(server_t *s, void *arg, srv_load_end_t *end);

/* The id a model's file gives it in messages and events: its name without
 * folder or extension ("unknown" for none). */
void srv_model_id(const char *path, char *out, size_t n);

srv_loads_t *srv_loads_new(void);
/* Loads still queued are answered nowhere: the server is going away. */
void srv_loads_free(srv_loads_t *l);

/* Queue the load of cfg into slot index (model_id names it in messages and
 * events); done is called once. 0, or -1 when out of memory (done is not
 * called). */
int srv_load(server_t *s, const osp_model_cfg_t *cfg, int index, const char *model_id,
             srv_load_done_fn done, void *arg);
/* The same with the model's cascade `then` (model/cascade.h, parsed, or
 * NULL; taken, whatever happens): opened after the model within the same
 * load, the model given with it (model->then). */
struct osp_cascade;
int srv_load_then(server_t *s, const osp_model_cfg_t *cfg, struct osp_cascade *then, int index,
                  const char *model_id, srv_load_done_fn done, void *arg);
/* The same for a load of something other than a model config (a stream's
 * model, model/loader.h's osp_load_how_t): no model slot (index -1: the
 * board is not told), the same queue, bound and poisoning. how_arg is
 * taken (given to how->arg_free, on whichever thread ends with it). */
int srv_load_how(server_t *s, const osp_load_how_t *how, void *how_arg, const char *model_id,
                 srv_load_done_fn done, void *arg);
/* Whether an abandoned load still runs (no load starts until it returns):
 * 1 with its model id, index and time so far. */
int srv_loads_poisoned(server_t *s, char *model_id, size_t n, int *index, double *elapsed_ms);
/* A load refused before it was queued (a bad config): counted as failed. */
void srv_loads_note_failed(server_t *s);
/* No load queued or running. */
int srv_loads_idle(const server_t *s);
/* The bound's timer (loop.h): milliseconds to it (-1: none), and what to
 * do once it has passed. */
int srv_loads_timer_ms(server_t *s);
void srv_loads_check(server_t *s);

#endif
