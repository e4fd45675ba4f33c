/*
 * The HTTP door (http.h): libmicrohttpd with a thread per connection, so
 * an event stream may wait for its next second inside its callback. The
 * request handling is routing (wire/http.c, fuzzed) and a page writer
 * (pages.c); nothing here touches the I/O thread's structures. Requests
 * are GET or HEAD with no body; the library caps each connection's
 * memory (headers included) at HTTP_CONN_MEMORY.
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
#include "server/http/dashboard.h"
#include "server/core/job.h"
#include "server/core/loop.h"
#include "server/http/pages.h"
#include "server/core/stats.h"
#include "wire/http.h"
#include "log/log.h"

#define HTTP_CONNECTIONS 32 /* threads the door may take */
#define HTTP_STREAMS 8      /* of them, open event streams */
#define HTTP_CONN_MEMORY (32u << 10)
#define HTTP_IDLE_S 30
#define STATS_WAIT_MS 2000 /* a /v1/stats the I/O thread has not written by then: 503 */
#define EVENT_PERIOD_MS 1000

struct srv_http {
    server_t *s;
    struct MHD_Daemon *d;
    pthread_mutex_t mu; /* guards stopping and streams; cv waits on both */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC */
    int stopping;
    int streams;
};

static void cond_init_monotonic(pthread_cond_t *cv) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
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

/* ---- routing ------------------------------------------------------------------------- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
    srv_http_t *h = cls;
    (void)version;
    (void)upload_data;
    (void)req_cls;
    if (*upload_data_size) return answer_text(c, 413, "no request body is accepted\n");
    osp_http_route_t route = osp_http_route(method, url);
    osp_jw_t w = {0};
    enum MHD_Result rc;
    switch (route) {
    case OSP_HTTP_HEALTHZ: rc = answer_text(c, 200, "ok\n"); break;
    case OSP_HTTP_READYZ: {
        int ready = srv_page_readyz(h->s, &w);
        rc = answer_json(c, ready ? 200 : 503, &w);
        break;
    }
    case OSP_HTTP_MODELS:
        srv_page_models(h->s, &w);
        rc = answer_json(c, 200, &w);
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
    case OSP_HTTP_BAD_METHOD: rc = answer_text(c, 405, "only GET and HEAD\n"); break;
    default:
        rc = answer_text(c, 404,
                         "not found: try /, /healthz, /readyz, /v1/models, /v1/stats, /metrics\n");
    }
    osp_jw_free(&w);
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
    pthread_mutex_init(&h->mu, NULL);
    cond_init_monotonic(&h->cv);
    /* poll, not select: ospreyd's own connections may take descriptors past 1024 */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    h->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER,
                            log_mhd, NULL, /* first, or MHD warns */
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)HTTP_CONNECTIONS, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                            (size_t)HTTP_CONN_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)HTTP_IDLE_S, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!h->d) {
        snprintf(err, errlen,
                 "--http %s: cannot listen on %s port %u (in use, or not an address of this machine)",
                 spec, host, port);
        srv_http_stop(h);
        return NULL;
    }
    if (osp_http_host_is_loopback(host))
        osp_log(OSP_LOG_INFO, "ospreyd: http on %s port %u", host, port);
    else
        osp_log(OSP_LOG_WARN,
                "ospreyd: warning: http on %s port %u is reachable from other machines, and "
                "it has no authentication (the default is 127.0.0.1)",
                host, port);
    return h;
}

void srv_http_stop(srv_http_t *h) {
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (h->d) MHD_stop_daemon(h->d);
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
