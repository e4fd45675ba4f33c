/*
 * The HTTP door (http.h): libmicrohttpd with a thread per connection, so
 * an event stream may wait for its next second inside its callback. The
 * request handling is routing (wire/http.c, fuzzed) and a page writer
 * (pages.c); nothing here touches the I/O thread's structures. Requests
 * are GET or HEAD with no body; the library caps each connection's
 * memory (headers included) at HTTP_CONN_MEMORY.
 *
 * Slow clients: 64 connections that each sent a header byte a second
 * once kept /healthz from answering for ~50 s — the door held 32
 * connections, and a connection that is never idle never met the idle
 * timeout. So the door holds many (a waiting connection is a sleeping
 * thread and its 32 KiB), at most half of them from one address, and a
 * request's header must be complete within HTTP_HEADER_S of the
 * connection's start or of its previous answer (nginx's
 * client_header_timeout): a reaper thread shuts down the socket of one
 * that is not, and its thread ends as if the peer had closed.
 */
#include "server/http/http.h"

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <microhttpd.h>

#include "base/clock.h"
#include "base/thread.h"
#include "server/core/auth.h"
#include "server/http/campages.h"
#include "server/http/dashboard.h"
#include "server/core/job.h"
#include "server/core/loop.h"
#include "server/http/pages.h"
#include "server/core/stats.h"
#include "wire/http.h"
#include "log/log.h"

#define HTTP_CONNECTIONS 512 /* threads the door may take: slow clients wait in them */
#define HTTP_PER_IP 256      /* of them, from one address: one host cannot fill the door */
#define HTTP_STREAMS 8       /* of them, open event streams */
#define HTTP_CONN_MEMORY (32u << 10)
#define HTTP_IDLE_S 30
#define HTTP_HEADER_MS 10000 /* a request's header, from the connection's start or last answer */
#define STATS_WAIT_MS 2000   /* a /v1/stats the I/O thread has not written by then: 503 */
#define EVENT_PERIOD_MS 1000

/* A connection waiting for a request's header: on the door's waiting list,
 * oldest deadline first (every deadline is HTTP_HEADER_MS after its arming,
 * so arming at the tail keeps the order). Owned by the library's
 * connection (its socket context), freed when it closes. */
typedef struct waiting {
    struct waiting *prev, *next;
    int fd;
    int linked;
    struct timespec deadline; /* CLOCK_MONOTONIC */
} waiting_t;

struct srv_http {
    server_t *s;
    const srv_auth_t *auth; /* the server's token (s->auth), or NULL: no token asked */
    struct MHD_Daemon *d;
    pthread_mutex_t mu; /* guards stopping and streams; cv waits on both */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC */
    int stopping;
    int streams;
    /* the reaper of headers past their deadline */
    pthread_mutex_t wmu; /* guards the waiting list, wstop and every waiting_t's links */
    pthread_cond_t wcv;  /* CLOCK_MONOTONIC */
    waiting_t *head, *tail;
    int wstop;
    pthread_t reaper;
    int reaper_running;
};

static void cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
}

/* ---- the header deadline ------------------------------------------------------------ */

static void waiting_unlink(srv_http_t *h, waiting_t *w) { /* under wmu */
    if (!w->linked) return;
    if (w->prev)
        w->prev->next = w->next;
    else
        h->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    else
        h->tail = w->prev;
    w->prev = w->next = NULL;
    w->linked = 0;
}

/* The connection now waits for a request's header: from now it has
 * HTTP_HEADER_MS. */
static void waiting_arm(srv_http_t *h, waiting_t *w) {
    pthread_mutex_lock(&h->wmu);
    waiting_unlink(h, w);
    w->deadline = osp_deadline_in(CLOCK_MONOTONIC, HTTP_HEADER_MS);
    w->prev = h->tail;
    if (h->tail)
        h->tail->next = w;
    else
        h->head = w;
    h->tail = w;
    w->linked = 1;
    pthread_mutex_unlock(&h->wmu);
}

static void waiting_disarm(srv_http_t *h, waiting_t *w) {
    pthread_mutex_lock(&h->wmu);
    waiting_unlink(h, w);
    pthread_mutex_unlock(&h->wmu);
}

/* Shuts down the socket of each connection past its deadline. Under wmu,
 * so the library cannot close that descriptor (and reuse its number) in
 * between: it tells of a close (on_connection) before it closes. */
static void *reaper_main(void *arg) {
    srv_http_t *h = arg;
    osp_thread_name("osp-http-reap");
    pthread_mutex_lock(&h->wmu);
    while (!h->wstop) {
        struct timespec now;
        osp_now(&now);
        while (h->head && osp_timespec_diff_ms(&h->head->deadline, &now) <= 0) {
            waiting_t *w = h->head;
            waiting_unlink(h, w);
            shutdown(w->fd, SHUT_RDWR);
            srv_stat_add(h->s, SRV_ST_HTTP_HEADER_TIMEOUTS, 1); /* not logged: a flood would flood it */
        }
        struct timespec until = h->head ? h->head->deadline : osp_deadline_in(CLOCK_MONOTONIC, 1000);
        osp_timespec_add_ms(&until, 1); /* osp_timespec_diff_ms truncates */
        pthread_cond_timedwait(&h->wcv, &h->wmu, &until);
    }
    pthread_mutex_unlock(&h->wmu);
    return NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
    srv_http_t *h = cls;
    waiting_t *w = *socket_context;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!fd || !(w = calloc(1, sizeof *w))) {
            /* no deadline for it: the idle timeout still holds */
            osp_log(OSP_LOG_WARN, "ospreyd: http: out of memory for a connection's header deadline");
            return;
        }
        w->fd = fd->connect_fd;
        *socket_context = w;
        waiting_arm(h, w);
    } else if (w) { /* closed */
        waiting_disarm(h, w);
        free(w);
        *socket_context = NULL;
    }
}

static waiting_t *waiting_of(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

/* An answer sent whole: the connection, kept alive, waits for the next
 * request's header. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode code) {
    (void)req_cls;
    waiting_t *w = waiting_of(c);
    if (w && code == MHD_REQUEST_TERMINATED_COMPLETED_OK) waiting_arm(cls, w);
}

/* The request line as the peer sent it, before the library unescapes it
 * (and a %00 would cut its path): a request whose target decodes to a NUL
 * is marked, and refused once its header is read.
 *
 * A raw NUL byte in the target cuts it before anything of ours sees it.
 * When the library calls this it has ended the target where the version
 * begins (the space before "HTTP/1.1" is its NUL), in the line it read:
 * so the target's own end, one byte before the version the request
 * handler is given, is where strlen stops unless a raw NUL stopped it
 * first. That end is the request's req_cls, and on_request compares. The
 * end-to-end test of a raw NUL holds this to the library in use. */
static char nul_target; /* the mark of a %00, as the request's req_cls */

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
    (void)cls;
    (void)c;
    if (!uri) return NULL;
    if (osp_http_target_has_nul(uri)) return &nul_target;
    return (void *)(uri + strlen(uri) + 1); /* where the version begins, without a raw NUL */
}

/* ---- answers --------------------------------------------------------------------- */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type,
                              const void *body, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result answer_json(struct MHD_Connection *c, unsigned status, osp_jw_t *w) {
    if (w->oom) return answer(c, 500, "text/plain", "out of memory\n", 14);
    return answer(c, status, "application/json", w->buf, w->len);
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text) {
    return answer(c, status, "text/plain; charset=utf-8", text, strlen(text));
}

/* ---- /v1/stats: written by the I/O thread ------------------------------------------ */

/* Shared by the asking HTTP thread and the I/O thread; the last to let go
 * frees it (the asker may have given up waiting). */
typedef struct {
    srv_job_t h;
    pthread_mutex_t mu; /* guards done and refs */
    pthread_cond_t cv;
    int done, refs;
    osp_jw_t out;
} stats_ask_t;

static void ask_release(stats_ask_t *a) {
    pthread_mutex_lock(&a->mu);
    int last = --a->refs == 0;
    pthread_mutex_unlock(&a->mu);
    if (!last) return;
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    osp_jw_free(&a->out);
    free(a);
}

static void stats_written(server_t *s, srv_job_t *h) {
    stats_ask_t *a = (stats_ask_t *)h;
    srv_write_mem_stats(s, &a->out);
    pthread_mutex_lock(&a->mu);
    a->done = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    ask_release(a);
}

static enum MHD_Result page_stats(srv_http_t *h, struct MHD_Connection *c) {
    stats_ask_t *a = calloc(1, sizeof *a);
    if (!a) return answer_text(c, 500, "out of memory\n");
    pthread_mutex_init(&a->mu, NULL);
    cond_init_monotonic(&a->cv);
    a->refs = 2;
    a->h.kind = SRV_JOB_EVENT;
    a->h.done = stats_written;
    srv_post(h->s, &a->h);
    struct timespec until = osp_deadline_in(CLOCK_MONOTONIC, STATS_WAIT_MS);
    pthread_mutex_lock(&a->mu);
    while (!a->done && pthread_cond_timedwait(&a->cv, &a->mu, &until) != ETIMEDOUT) {
    }
    int done = a->done;
    pthread_mutex_unlock(&a->mu);
    enum MHD_Result rc = done ? answer_json(c, 200, &a->out)
                              : answer_text(c, 503, "the server is busy starting; try again\n");
    ask_release(a);
    return rc;
}

/* ---- /events ------------------------------------------------------------------------- */

typedef struct {
    srv_http_t *h;
    srv_page_stream_t st;
    osp_jw_t json;
    osp_text_t out; /* the event being sent */
    size_t sent;
    int events; /* sent so far */
} stream_t;

/* 1 when the door is stopping; else waits out the rest of the second. */
static int stream_wait(stream_t *e) {
    srv_http_t *h = e->h;
    struct timespec until = osp_deadline_in(CLOCK_MONOTONIC, e->events ? EVENT_PERIOD_MS : 0);
    pthread_mutex_lock(&h->mu);
    while (!h->stopping && pthread_cond_timedwait(&h->cv, &h->mu, &until) != ETIMEDOUT) {
    }
    int stop = h->stopping;
    pthread_mutex_unlock(&h->mu);
    return stop;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    stream_t *e = cls;
    (void)pos;
    while (e->sent == e->out.len) {
        if (stream_wait(e)) return MHD_CONTENT_READER_END_OF_STREAM;
        osp_jw_reset(&e->json);
        srv_page_event(e->h->s, &e->st, &e->json);
        osp_text_reset(&e->out);
        if (e->events == 0) osp_text_put(&e->out, "retry: 2000\n", 12);
        osp_text_put(&e->out, "data: ", 6);
        osp_text_put(&e->out, e->json.buf, e->json.len);
        osp_text_put(&e->out, "\n\n", 2);
        if (e->json.oom || e->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        e->sent = 0;
        e->events++;
    }
    size_t n = e->out.len - e->sent < max ? e->out.len - e->sent : max;
    memcpy(buf, e->out.buf + e->sent, n);
    e->sent += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) {
    stream_t *e = cls;
    srv_http_t *h = e->h;
    pthread_mutex_lock(&h->mu);
    h->streams--;
    pthread_mutex_unlock(&h->mu);
    osp_jw_free(&e->json);
    osp_text_free(&e->out);
    free(e);
}

static enum MHD_Result page_events(srv_http_t *h, struct MHD_Connection *c) {
    pthread_mutex_lock(&h->mu);
    int full = h->streams >= HTTP_STREAMS;
    if (!full) h->streams++;
    pthread_mutex_unlock(&h->mu);
    if (full) return answer_text(c, 503, "too many event streams open\n");
    stream_t *e = calloc(1, sizeof *e);
    struct MHD_Response *r = e ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
                                                                   stream_read, e, stream_free)
                               : NULL;
    if (!r) {
        if (e) {
            e->h = h;
            stream_free(e);
        } else {
            pthread_mutex_lock(&h->mu);
            h->streams--;
            pthread_mutex_unlock(&h->mu);
        }
        return answer_text(c, 500, "out of memory\n");
    }
    e->h = h;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* ---- the cameras' frames and events ---------------------------------------------- */

/* A picture page: the name the route ends with (a camera's, an event's)
 * handed to what makes its JPEG (campages.h), answered with the JPEG or
 * the status and reason it gave. */
typedef unsigned (*picture_fn)(server_t *s, const char *name, uint8_t **jpg, size_t *len,
                               const char **why);

static enum MHD_Result page_picture(srv_http_t *h, struct MHD_Connection *c, const char *url,
                                    picture_fn make) {
    char name[OSP_HTTP_NAME_MAX];
    if (osp_http_route_name(url, name)) return answer_text(c, 404, "not found\n");
    uint8_t *jpg = NULL;
    size_t len = 0;
    const char *why = NULL;
    unsigned status = make(h->s, name, &jpg, &len, &why);
    enum MHD_Result rc = status == 200 ? answer(c, 200, "image/jpeg", jpg, len)
                                       : answer_text(c, status, why);
    free(jpg);
    return rc;
}

/* Each query parameter of /api/events (or /api/crossings: set) into the
 * query; the first bad one stops the walk and says why. */
typedef struct {
    osp_eventdb_query_t q;
    int (*set)(osp_eventdb_query_t *q, const char *key, const char *value, char *err, size_t errlen);
    char err[300];
    int bad;
} events_args_t;

static enum MHD_Result on_events_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value) {
    events_args_t *a = cls;
    (void)kind;
    if (a->set(&a->q, key, value, a->err, sizeof a->err)) {
        a->bad = 1;
        return MHD_NO;
    }
    return MHD_YES;
}

static enum MHD_Result page_camera_events(srv_http_t *h, struct MHD_Connection *c, osp_jw_t *w,
                                          int crossings) {
    events_args_t a = {.set = crossings ? osp_eventdb_crossings_set : osp_eventdb_query_set};
    osp_eventdb_query_init(&a.q);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_events_arg, &a);
    if (a.bad) {
        srv_page_error(w, a.err);
        return answer_json(c, 400, w);
    }
    return answer_json(c, srv_page_camera_events(h->s, &a.q, crossings, w), w);
}

/* ---- routing ------------------------------------------------------------------------- */

static const char UNAUTHORIZED[] =
    "this door needs its token: Authorization: Bearer <the --auth-token-file's token>\n";

/* Whether the request carries the door's token (always, without one). */
static int authorized(srv_http_t *h, struct MHD_Connection *c) {
    if (!h->auth) return 1;
    const char *value = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const char *tok = NULL;
    size_t len = 0;
    if (osp_http_bearer(value, &tok, &len)) return 0;
    return srv_auth_check(h->auth, tok, len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    srv_http_t *h = cls;
    (void)upload_data;
    waiting_t *w = waiting_of(c);
    if (w) waiting_disarm(h, w); /* its header is here */
    if (*req_cls == &nul_target || (*req_cls && *req_cls != (const void *)version))
        return answer_text(c, 400, "a NUL byte (raw or %00) in the path or the query is refused\n");
    osp_http_route_t route = osp_http_route(method, url);
    /* the liveness probe, and the page, which is the same bytes in every
     * build and names nothing: a browser's address bar cannot send the
     * header, so the page takes the token from its URL's fragment and
     * sends it with what it reads (docs/http.md) */
    int open = route == OSP_HTTP_HEALTHZ || route == OSP_HTTP_DASHBOARD;
    if (!open && !authorized(h, c)) {
        struct MHD_Response *r = MHD_create_response_from_buffer(sizeof UNAUTHORIZED - 1,
                                                                 (void *)UNAUTHORIZED,
                                                                 MHD_RESPMEM_PERSISTENT);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"ospreyd\"");
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        enum MHD_Result rc = MHD_queue_response(c, 401, r);
        MHD_destroy_response(r);
        return rc;
    }
    if (*upload_data_size) return answer_text(c, 413, "no request body is accepted\n");
    osp_jw_t jw = {0};
    enum MHD_Result rc;
    switch (route) {
    case OSP_HTTP_HEALTHZ: rc = answer_text(c, 200, "ok\n"); break;
    case OSP_HTTP_READYZ: {
        int ready = srv_page_readyz(h->s, &jw);
        rc = answer_json(c, ready ? 200 : 503, &jw);
        break;
    }
    case OSP_HTTP_MODELS:
        srv_page_models(h->s, &jw);
        rc = answer_json(c, 200, &jw);
        break;
    case OSP_HTTP_STATS: rc = page_stats(h, c); break;
    case OSP_HTTP_METRICS: {
        osp_text_t t = {0};
        srv_page_metrics(h->s, &t);
        rc = t.oom ? answer_text(c, 500, "out of memory\n")
                   : answer(c, 200, "text/plain; version=0.0.4; charset=utf-8", t.buf, t.len);
        osp_text_free(&t);
        break;
    }
    case OSP_HTTP_DASHBOARD:
        rc = answer(c, 200, "text/html; charset=utf-8", srv_dashboard_html, srv_dashboard_html_len);
        break;
    case OSP_HTTP_EVENTS: rc = page_events(h, c); break;
    case OSP_HTTP_CAMERAS:
        srv_page_cameras(h->s, &jw);
        rc = answer_json(c, 200, &jw);
        break;
    case OSP_HTTP_CAMERA_LATEST: rc = page_picture(h, c, url, srv_page_camera_latest); break;
    case OSP_HTTP_CAMERA_EVENTS: rc = page_camera_events(h, c, &jw, 0); break;
    case OSP_HTTP_CROSSINGS: rc = page_camera_events(h, c, &jw, 1); break;
    case OSP_HTTP_EVENT_SNAPSHOT: rc = page_picture(h, c, url, srv_page_event_snapshot); break;
    case OSP_HTTP_BAD_METHOD: rc = answer_text(c, 405, "only GET and HEAD\n"); break;
    default:
        rc = answer_text(c, 404,
                         "not found: try /, /healthz, /readyz, /v1/models, /v1/stats, /metrics, /api/cameras, "
                         "/api/events, /api/crossings\n");
    }
    osp_jw_free(&jw);
    return rc;
}

/* ---- start and stop ---------------------------------------------------------------------- */

static void log_mhd(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    osp_log(OSP_LOG_WARN, "ospreyd: http: %s", msg);
}

srv_http_t *srv_http_start(server_t *s, const char *spec, char *err, size_t errlen) {
    char host[256];
    unsigned port;
    if (osp_http_bind_parse(spec, host, sizeof host, &port, err, errlen)) return NULL;
    char service[8];
    snprintf(service, sizeof service, "%u", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                    *ai = NULL;
    int gr = getaddrinfo(host, service, &hints, &ai);
    if (gr != 0) {
        snprintf(err, errlen, "--http %s: cannot resolve %s: %s", spec, host, gai_strerror(gr));
        return NULL;
    }
    srv_http_t *h = calloc(1, sizeof *h);
    if (!h) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    h->s = s;
    h->auth = s->auth;
    pthread_mutex_init(&h->mu, NULL);
    cond_init_monotonic(&h->cv);
    pthread_mutex_init(&h->wmu, NULL);
    cond_init_monotonic(&h->wcv);
    if (pthread_create(&h->reaper, NULL, reaper_main, h)) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "--http %s: cannot start a thread", spec);
        srv_http_stop(h);
        return NULL;
    }
    h->reaper_running = 1;
    /* poll, not select: ospreyd's own connections may take descriptors past 1024 */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
                            log_mhd, NULL, /* first, or MHD warns */
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)HTTP_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)HTTP_CONN_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)HTTP_IDLE_S, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                            (unsigned)HTTP_PER_IP, MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_URI_LOG_CALLBACK, on_uri, h, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        snprintf(err, errlen,
                 "--http %s: cannot listen on %s port %u (in use, or not an address of this machine)",
                 spec, host, port);
        srv_http_stop(h);
        return NULL;
    }
    if (osp_http_host_is_loopback(host))
        osp_log(OSP_LOG_INFO, "ospreyd: http on %s port %u%s", host, port,
                h->auth ? ", every page but /healthz and / behind the token" : "");
    else /* main() refuses a host beyond loopback without the token */
        osp_log(OSP_LOG_INFO,
                "ospreyd: http on %s port %u, reachable from other machines: every page but "
                "/healthz and / behind the token",
                host, port);
    return h;
}

void srv_http_stop(srv_http_t *h) {
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (h->d) MHD_stop_daemon(h->d); /* every connection closed: the waiting list is empty */
    if (h->reaper_running) {
        pthread_mutex_lock(&h->wmu);
        h->wstop = 1;
        pthread_cond_signal(&h->wcv);
        pthread_mutex_unlock(&h->wmu);
        pthread_join(h->reaper, NULL);
    }
    pthread_mutex_destroy(&h->wmu);
    pthread_cond_destroy(&h->wcv);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}

/* ---- the front end's table (core/frontend.h) ---------------------------------- */

static int fe_wanted(const osp_server_opts_t *o) { return o->http != NULL; }

static int fe_start(server_t *s, char *err, size_t errlen) {
    return (s->http = srv_http_start(s, s->opts.http, err, errlen)) ? 0 : -1;
}

static void fe_stop(server_t *s) {
    if (!s->http) return;
    srv_http_stop(s->http); /* its threads read the core's parts */
    s->http = NULL;
    srv_drain(s); /* a /v1/stats it asked for that the loop had not taken */
}

const srv_frontend_t srv_http_frontend = {"", 1, fe_wanted, fe_start, NULL, fe_stop, NULL};
