/*
 * core: the server's core made, started and taken down (core.c), with no
 * front end. server.c makes the core and then the host connections and
 * the front ends around it; a unit test can make the core alone and drive
 * its door (dispatch.h) with a transport of its own.
 */
#ifndef OSP_CORE_H
#define OSP_CORE_H

#include "server/core/srv.h"

/* The core's parts for opts (copied): the loop, model slots, jobs, loads,
 * counters, the board, the watchdog, caches and pools of buffers and
 * contexts, the model roots. No worker runs yet. NULL when out of memory. */
server_t *srv_core_new(const osp_server_opts_t *opts);
/* Start admission (and batch windows when s->set.batch_mode asks) and the
 * worker pools from s->set, which the caller filled (the first handshake:
 * pipe/hello.c); s->set.started is set. 0, or -1 (logged). */
int srv_core_start(server_t *s);
/* Stop the pools: their workers finish what is queued, and what they
 * posted is drained (no job is left holding a front end's request). */
void srv_core_stop(server_t *s);
/* The pools (if still running), then what the jobs referenced, then the
 * rest. The caller has freed every front end and the host connections'
 * parts. */
void srv_core_free(server_t *s);

#endif
