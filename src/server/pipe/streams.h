/*
 * streams: sequence models over streams of features (an osprey
 * extension, docs/protocol.md): open_stream / close_stream commands and
 * the 0x07 stream_push frames, each answered at once with the newest
 * reading. I/O thread only; the structs are private to streams.c.
 */
#ifndef OSP_STREAMS_H
#define OSP_STREAMS_H

#include <stdint.h>

#include "server/core/srv.h"
#include "wire/frame.h"

struct cJSON;

srv_streams_t *srv_streams_new(void);
/* Stops and frees every stream. */
void srv_streams_free(srv_streams_t *st);
/* Whether any stream is open (otherwise 0x07 is an unknown type). */
int srv_streams_open(const server_t *s);
/* open_stream / close_stream: 1 when cmd was one (it is answered, or will
 * be once the stream's model is loaded: through the one bounded loader,
 * core/loads.h, like every model load). */
int srv_stream_command(server_t *s, conn_t *c, uint32_t req_id, const char *name,
                       const struct cJSON *cmd);
void srv_on_stream_push(server_t *s, conn_t *c, const osp_wire_frame_t *f);
void srv_streams_conn_closed(server_t *s, uint32_t conn_id);
#endif
