/*
 * http: the pure parts of ospreyd's HTTP door (src/server/http/http.c): which
 * page a request asks for, the --http bind spec, and the Prometheus text
 * exposition format (version 0.0.4) that /metrics is written in, with the
 * quantile the dashboard reads off a histogram. No I/O, no threads, no
 * allocation but the caller's text buffer: fuzzed (tests/fuzz/fuzz_http.c)
 * and unit tested (tests/unit/test_wire_http.c).
 */
#ifndef OSP_WIRE_HTTP_H
#define OSP_WIRE_HTTP_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    OSP_HTTP_NOT_FOUND,  /* 404 */
    OSP_HTTP_BAD_METHOD, /* 405: a known page asked with another method than GET or HEAD */
    OSP_HTTP_DASHBOARD,  /* / */
    OSP_HTTP_HEALTHZ,
    OSP_HTTP_READYZ,
    OSP_HTTP_MODELS, /* /v1/models */
    OSP_HTTP_STATS,  /* /v1/stats */
    OSP_HTTP_METRICS,
    OSP_HTTP_EVENTS,         /* server-sent events */
    OSP_HTTP_CAMERAS,        /* /api/cameras */
    OSP_HTTP_CAMERA_LATEST,  /* /api/cameras/NAME/latest.jpg */
    OSP_HTTP_CAMERA_EVENTS,  /* /api/events */
    OSP_HTTP_EVENT_SNAPSHOT, /* /api/events/ID/snapshot.jpg */
    OSP_HTTP_CROSSINGS,      /* /api/crossings */
    /* the last: tests/fuzz/fuzz_http.c checks routes up to it */
} osp_http_route_t;

/* The page for method and path (the path without its query, as the HTTP
 * library hands it over). NULL for either is NOT_FOUND. A path with a
 * name in it (NAME, ID above) names it with 1 to OSP_HTTP_NAME_MAX - 1
 * letters, digits, '_', '-' or '.', and not only dots; any other is
 * NOT_FOUND. */
osp_http_route_t osp_http_route(const char *method, const char *path);

#define OSP_HTTP_NAME_MAX 96
/* The name in a path that osp_http_route found a named page for, into out
 * (OSP_HTTP_NAME_MAX bytes): 0, or -1 for a path without one. */
int osp_http_route_name(const char *path, char out[OSP_HTTP_NAME_MAX]);

/* 1 when raw, a request target as the peer sent it (before any
 * unescaping), decodes to a NUL byte anywhere (%00 in its path or its
 * query): C would cut the name there, so the server refuses the request
 * rather than answer for a shorter name than was asked. */
int osp_http_target_has_nul(const char *raw);

/* The token of an `Authorization: Bearer TOKEN` header value (the scheme
 * case-insensitive, spaces after it skipped): 0 with *tok pointing into
 * value and *len its length (up to trailing spaces), -1 for any other
 * value or NULL. */
int osp_http_bearer(const char *value, const char **tok, size_t *len);

/* "[HOST:]PORT", "[V6ADDR]:PORT" or ":PORT": host (default 127.0.0.1) and
 * port 1-65535. 0, or -1 with the reason in err. */
int osp_http_bind_parse(const char *spec, char *host, size_t hostlen, unsigned *port, char *err,
                        size_t errlen);
/* 1 when host is a numeric loopback address (127.0.0.0/8 or ::1) or
 * "localhost". */
int osp_http_host_is_loopback(const char *host);

/* ---- text for /metrics ------------------------------------------------------- */

/* A growable text buffer the caller owns (zeroed to start; reset keeps the
 * memory). oom is set when a grow failed: the text is then incomplete. */
typedef struct {
    char *buf;
    size_t len, cap;
    int oom;
} osp_text_t;

void osp_text_reset(osp_text_t *t);
void osp_text_free(osp_text_t *t);
void osp_text_put(osp_text_t *t, const char *s, size_t n);
void osp_text_printf(osp_text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* `# HELP name help` and `# TYPE name type` (help escaped as the format says). */
void osp_prom_family(osp_text_t *t, const char *name, const char *type, const char *help);
/* A label set `k1="v1",k2="v2"` from n key/value pairs (values escaped:
 * backslash, double quote, newline) into out. Its length, or -1 when it
 * does not fit in cap (out is then ""). */
int osp_prom_labels(char *out, size_t cap, int n, const char *const *kv);
/* `name{labels} value` (labels may be NULL or ""). */
void osp_prom_sample(osp_text_t *t, const char *name, const char *labels, double v);
/* A histogram's series: name_bucket for each bound (in seconds, ascending)
 * and +Inf, cumulative, then name_sum and name_count (= the +Inf bucket).
 * buckets has nb + 1 counts, not cumulative, the last past the last bound. */
void osp_prom_histogram(osp_text_t *t, const char *name, const char *labels, const double *bounds,
                        int nb, const int64_t *buckets, double sum);

/* The q-quantile (0..1) of a histogram of the same shape, interpolated
 * linearly inside its bucket as Prometheus's histogram_quantile does (from
 * 0 in the first bucket; the last bound for the +Inf bucket). -1 when it
 * holds nothing. */
double osp_hist_quantile(double q, const double *bounds, int nb, const int64_t *buckets);

#endif
