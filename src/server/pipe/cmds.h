/*
 * cmds: commands and the handshake, on the I/O thread.
 *
 * commands.c: load / replace / unload / reconfigure / status run in
 * arrival order on one queue, a load bounded like every load (loads.h); mem_stats, uncache_frame and the extensions' commands
 * (shm.c, streams.c) are answered at once: a host's liveness probe never
 * waits behind a compile.
 *
 * hello.c: the startup config — the first frame of a connection, or the
 * --config file of --listen: the worker pools start with the first one,
 * and its models load (on stdio before the ready reply, as the Python
 * worker did; on a socket on a thread of their own, so everyone else is
 * still served).
 */
#ifndef OSP_CMDS_H
#define OSP_CMDS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "server/core/srv.h"
#include "wire/frame.h"

struct cJSON;

/* ---- commands.c ---------------------------------------------------------------- */

srv_cmds_t *srv_cmds_new(void);
void srv_cmds_free(srv_cmds_t *q);
void srv_on_command(server_t *s, conn_t *c, const osp_wire_request_t *rq);
/* Nothing in flight: no job, no load, no queued command. */
int srv_idle(server_t *s);

/* ---- hello.c ------------------------------------------------------------------- */

/* The first frame of c: the startup config. */
void srv_on_hello(server_t *s, conn_t *c, const osp_wire_frame_t *f);
/* --listen --config: start the pools and load the file's models. 0, or
 * the exit status (1: could not start; 2: the file is unusable). */
int srv_hello_preload(server_t *s);
#endif
