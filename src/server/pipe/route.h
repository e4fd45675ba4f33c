/*
 * route: a host connection's whole request frame, on the I/O thread, to
 * what answers it (route.c). The handshake first; then commands, the
 * extensions (shared memory, streams) and the inference requests, which
 * enter the core through its door (dispatch.h).
 */
#ifndef OSP_ROUTE_H
#define OSP_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "server/core/job.h"
#include "server/core/srv.h"

/* A whole request frame read from c: `frame` (from s->bufs) is taken;
 * spill, if not NULL, holds the part of its pixels parked in pipes (taken
 * too). */
void srv_route_frame(server_t *s, conn_t *c, uint8_t *frame, size_t len, spill_t *spill);

#endif
