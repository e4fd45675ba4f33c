/*
 * zmq: Frigate's `zmq` detector (docs/frigate.md) as a transport of
 * ospreyd. A thread of its own (osp-zmq) owns the ZeroMQ socket and the
 * protocol's bytes (wire/frigate.h); the I/O thread owns everything
 * else: each request goes to it as an event through the loop's mailbox
 * (srv_post), frames become frame jobs that pass the same deadline gate,
 * admission and pools as a host's (srv_dispatch_submit), and the answers
 * come back to the zmq thread through a mailbox of its own. The struct is
 * private to zmq.c.
 */
#ifndef OSP_ZMQ_H
#define OSP_ZMQ_H

#include <stddef.h>

#include "server/core/frontend.h"
#include "server/core/srv.h"

/* Bind s->opts.zmq_endpoint and start the thread. NULL with the reason
 * in err (a bad endpoint or labelmap, a directory that cannot be used). */
srv_zmq_t *srv_zmq_start(server_t *s, char *err, size_t errlen);
/* Stop the thread and free everything it made (after the pools: no job
 * may hold one of its requests any more). NULL is ignored. */
void srv_zmq_free(srv_zmq_t *z);

/* The front end, as server.c starts and stops it (core/frontend.h). */
extern const srv_frontend_t srv_zmq_frontend;

#endif
