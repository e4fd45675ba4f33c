/*
 * frontend: what server.c asks of a front end (http/, frigate/, fleet/),
 * one const table each, in h2o's handler shape: whether the options ask
 * for it, start, quiesce when the server stops taking work, stop. A front
 * end sees only the core; the core names no front end.
 */
#ifndef OSP_FRONTEND_H
#define OSP_FRONTEND_H

#include <stddef.h>

#include "server/core/srv.h"

typedef struct {
    const char *prefix; /* before its start error in the log ("--zmq: "), or "" */
    int early; /* starts before the startup models load and stops before the pools (it reports
                * on them); otherwise it starts once they are loaded and stops after the pools
                * (no job holds one of its requests any more) */
    int (*wanted)(const osp_server_opts_t *o);
    /* 0, or -1 with err a sentence (logged, and the server exits 1) */
    int (*start)(server_t *s, char *err, size_t errlen);
    /* the server stops: take no new work (NULL: nothing to do) */
    void (*quiesce)(server_t *s);
    /* take it down; nothing when it was not started */
    void (*stop)(server_t *s);
    /* SIGHUP: re-read what it serves; 1 when it did, 0 when it serves
     * nothing to re-read (NULL: never) */
    int (*reload)(server_t *s);
} srv_frontend_t;

#endif
