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
#include "server/srv.h"
#include "wire/frame.h"

struct cJSON;

/* ---- commands.c ---------------------------------------------------------------- */

srv_cmds_t *srv_cmds_new(void);
void srv_cmds_free(srv_cmds_t *q);
void srv_on_command(server_t *s, conn_t *c, const osp_wire_request_t *rq);
/* Nothing in flight: no job, no load, no queued command. */
int srv_idle(server_t *s);

/* A command reply: begin writes {"cmd": name[, "index": i], "status":
 * status (index < 0: none); the caller adds its keys; send closes the
 * object and sends the frame to connection conn_id, if it is still there. */
size_t srv_cmd_begin(osp_jw_t *w, const char *name, int index, const char *status);
void srv_cmd_send(server_t *s, uint32_t conn_id, osp_jw_t *w, size_t at, uint32_t req_id);
/* {"cmd": name[, "index"], "status": "error", "error": msg} */
void srv_cmd_error(server_t *s, uint32_t conn_id, uint32_t req_id, const char *name, int index,
                   const char *msg);

/* ---- hello.c ------------------------------------------------------------------- */

/* The first frame of c: the startup config. */
void srv_on_hello(server_t *s, conn_t *c, const osp_wire_frame_t *f);
/* --listen --config: start the pools and load the file's models. 0, or
 * the exit status (1: could not start; 2: the file is unusable). */
int srv_hello_preload(server_t *s);
/* Who named a model config's files, which says what they may reach
 * (docs/security.md). */
typedef enum {
    SRV_FROM_HOST,     /* the stdio host that started the worker: as given, as the Python worker */
    SRV_FROM_OPERATOR, /* the --config file: as given, resolved; its folders become roots */
    SRV_FROM_PEER,     /* a socket connection: confined to the model roots */
} srv_from_t;
/* The trust of a connection's requests (NULL, a connection gone: a peer's). */
srv_from_t srv_from(const conn_t *c);
/* A model config from its JSON, with the server's defaults for what it
 * leaves out (device, threads). A peer's model and labels paths are
 * resolved inside the roots, or refused with one text for "not found or
 * not allowed". */
int srv_model_cfg(server_t *s, srv_from_t from, const struct cJSON *config, osp_model_cfg_t *cfg,
                  char *err, size_t errlen);
/* The largest runTimeoutMs (and --run-timeout-ms): a day. */
#define SRV_RUN_TIMEOUT_MAX_MS 86400000

#endif
