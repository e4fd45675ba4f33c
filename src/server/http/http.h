/*
 * http: ospreyd's HTTP door (--http [HOST:]PORT, docs/http.md) —
 * /healthz, /readyz, /v1/models, /v1/stats, /metrics, the dashboard at /
 * and its event stream /events. libmicrohttpd serves it on threads of its
 * own (one accepting, one per connection, at most HTTP_CONNECTIONS; a
 * request's header within HTTP_HEADER_MS), never
 * on the I/O thread. What it shows comes from the counters (stats.h,
 * atomics), the model board (board.h, its own lock) and /proc; the
 * mem_stats record of /v1/stats is asked of the I/O thread through its
 * mailbox and written there, as the pipe's is. The struct is private to
 * http.c.
 */
#ifndef OSP_HTTP_H
#define OSP_HTTP_H

#include <stddef.h>

#include "server/core/frontend.h"
#include "server/core/srv.h"

/* Listen on spec and serve; NULL with the reason in err. With the
 * server's token (s->auth) every page but /healthz and the dashboard's
 * static page asks for it as `Authorization: Bearer`; main() refuses a
 * host beyond loopback without one. */
srv_http_t *srv_http_start(server_t *s, const char *spec, char *err, size_t errlen);
/* Stop serving: open event streams end, the threads are joined. NULL is
 * ignored. */
void srv_http_stop(srv_http_t *h);

/* The front end, as server.c starts and stops it (core/frontend.h). */
extern const srv_frontend_t srv_http_frontend;

#endif
