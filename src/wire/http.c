/* The pure parts of the HTTP door; see http.h. */
#include "wire/http.h"

#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- routes ---------------------------------------------------------------------- */

/* Pages whose path has a name in it: prefix NAME suffix. */
typedef struct {
    const char *prefix, *suffix;
    osp_http_route_t route;
} named_t;

static const named_t NAMED[] = {{"/api/cameras/", "/latest.jpg", OSP_HTTP_CAMERA_LATEST},
                                {"/api/events/", "/snapshot.jpg", OSP_HTTP_EVENT_SNAPSHOT}};

/* Whether path is n's page; its name into out. The name's characters are
 * the ones camera names and event ids are made of, so a name is never a
 * path of its own ('/', "..") nor anything a file name could misread. */
static int named(const char *path, const named_t *n, char out[OSP_HTTP_NAME_MAX]) {
    size_t pl = strlen(n->prefix), sl = strlen(n->suffix), len = strlen(path);
    if (len <= pl + sl || strncmp(path, n->prefix, pl) != 0 || strcmp(path + len - sl, n->suffix) != 0)
        return 0;
    size_t nl = len - pl - sl;
    if (nl >= OSP_HTTP_NAME_MAX) return 0;
    int dots = 0;
    for (size_t i = 0; i < nl; i++) {
        char c = path[pl + i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
        dots += c == '.';
    }
    if ((size_t)dots == nl) return 0; /* ".", "..": never a name */
    memcpy(out, path + pl, nl);
    out[nl] = '\0';
    return 1;
}

osp_http_route_t osp_http_route(const char *method, const char *path) {
    static const struct {
        const char *path;
        osp_http_route_t route;
    } pages[] = {{"/", OSP_HTTP_DASHBOARD},
                 {"/healthz", OSP_HTTP_HEALTHZ},
                 {"/readyz", OSP_HTTP_READYZ},
                 {"/v1/models", OSP_HTTP_MODELS},
                 {"/v1/stats", OSP_HTTP_STATS},
                 {"/metrics", OSP_HTTP_METRICS},
                 {"/events", OSP_HTTP_EVENTS},
                 {"/api/cameras", OSP_HTTP_CAMERAS},
                 {"/api/events", OSP_HTTP_CAMERA_EVENTS},
                 {"/api/crossings", OSP_HTTP_CROSSINGS}};
    if (!method || !path) return OSP_HTTP_NOT_FOUND;
    osp_http_route_t route = OSP_HTTP_NOT_FOUND;
    char name[OSP_HTTP_NAME_MAX];
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        if (strcmp(path, pages[i].path) == 0) route = pages[i].route;
    if (route == OSP_HTTP_NOT_FOUND) {
        for (size_t i = 0; i < sizeof NAMED / sizeof NAMED[0]; i++)
            if (named(path, &NAMED[i], name)) route = NAMED[i].route;
    }
    if (route == OSP_HTTP_NOT_FOUND) return route;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) return OSP_HTTP_BAD_METHOD;
    return route;
}

int osp_http_route_name(const char *path, char out[OSP_HTTP_NAME_MAX]) {
    for (size_t i = 0; path && i < sizeof NAMED / sizeof NAMED[0]; i++)
        if (named(path, &NAMED[i], out)) return 0;
    return -1;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int osp_http_target_has_nul(const char *raw) {
    if (!raw) return 0;
    for (const char *p = raw; *p; p++) {
        if (p[0] != '%') continue;
        int hi = hex_value(p[1]), lo = hi < 0 ? -1 : hex_value(p[2]);
        if (hi == 0 && lo == 0) return 1;
    }
    return 0;
}

int osp_http_bearer(const char *value, const char **tok, size_t *len) {
    if (!value || strncasecmp(value, "Bearer ", 7) != 0) return -1;
    const char *t = value + 7;
    while (*t == ' ') t++;
    size_t n = strlen(t);
    while (n && t[n - 1] == ' ') n--;
    if (!n) return -1;
    *tok = t;
    *len = n;
    return 0;
}

/* ---- the bind spec ----------------------------------------------------------------- */

static int parse_port(const char *s, unsigned *port) {
    unsigned v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9') return -1;
        v = v * 10 + (unsigned)(*s - '0');
        if (v > 65535) return -1;
    }
    if (v == 0) return -1;
    *port = v;
    return 0;
}

int osp_http_bind_parse(const char *spec, char *host, size_t hostlen, unsigned *port, char *err,
                        size_t errlen) {
    const char *h = NULL, *p = spec;
    size_t hl = 0;
    if (!spec || !*spec) {
        snprintf(err, errlen, "--http needs [HOST:]PORT");
        return -1;
    }
    if (spec[0] == '[') { /* [v6]:port */
        const char *close = strchr(spec, ']');
        if (!close || close[1] != ':') {
            snprintf(err, errlen, "--http [ADDRESS]:PORT, got '%s'", spec);
            return -1;
        }
        h = spec + 1;
        hl = (size_t)(close - h);
        p = close + 2;
    } else {
        const char *colon = strrchr(spec, ':');
        if (colon) {
            if (memchr(spec, ':', (size_t)(colon - spec))) {
                snprintf(err, errlen,
                         "--http: put an IPv6 address in brackets ([::1]:PORT), got '%s'", spec);
                return -1;
            }
            h = spec;
            hl = (size_t)(colon - spec);
            p = colon + 1;
        }
    }
    if (parse_port(p, port)) {
        snprintf(err, errlen, "--http: the port must be a number from 1 to 65535, got '%s'", spec);
        return -1;
    }
    if (!h || hl == 0) { /* PORT or :PORT: loopback, the safe default */
        h = "127.0.0.1";
        hl = strlen(h);
    }
    if (hl >= hostlen || memchr(h, '\0', hl)) {
        snprintf(err, errlen, "--http: host too long in '%s'", spec);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = '\0';
    return 0;
}

int osp_http_host_is_loopback(const char *host) {
    unsigned char a[16];
    if (!host) return 0;
    if (strcmp(host, "localhost") == 0) return 1;
    if (inet_pton(AF_INET, host, a) == 1) return a[0] == 127;
    if (inet_pton(AF_INET6, host, a) == 1) {
        static const unsigned char one[16] = {[15] = 1};
        return memcmp(a, one, 16) == 0;
    }
    return 0;
}

/* ---- text -------------------------------------------------------------------------- */

void osp_text_reset(osp_text_t *t) {
    t->len = 0;
    t->oom = 0;
    if (t->buf) t->buf[0] = '\0';
}

void osp_text_free(osp_text_t *t) {
    free(t->buf);
    memset(t, 0, sizeof *t);
}

static int grow(osp_text_t *t, size_t more) {
    if (t->oom) return -1;
    if (t->len + more + 1 <= t->cap) return 0;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + more + 1) cap *= 2;
    char *b = realloc(t->buf, cap);
    if (!b) {
        t->oom = 1;
        return -1;
    }
    t->buf = b;
    t->cap = cap;
    return 0;
}

void osp_text_put(osp_text_t *t, const char *s, size_t n) {
    if (grow(t, n)) return;
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

void osp_text_printf(osp_text_t *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        osp_text_put(t, small, (size_t)n);
        return;
    }
    if (grow(t, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(t->buf + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

/* ---- the exposition format ------------------------------------------------------------ */

void osp_prom_family(osp_text_t *t, const char *name, const char *type, const char *help) {
    osp_text_printf(t, "# HELP %s ", name);
    for (const char *c = help; *c; c++) {
        if (*c == '\\')
            osp_text_put(t, "\\\\", 2);
        else if (*c == '\n')
            osp_text_put(t, "\\n", 2);
        else
            osp_text_put(t, c, 1);
    }
    osp_text_printf(t, "\n# TYPE %s %s\n", name, type);
}

int osp_prom_labels(char *out, size_t cap, int n, const char *const *kv) {
    size_t len = 0;
    if (cap == 0) return -1;
#define PUT(ch)                            \
    do {                                   \
        if (len + 1 >= cap) goto too_long; \
        out[len++] = (ch);                 \
    } while (0)
    for (int i = 0; i < n; i++) {
        if (i) PUT(',');
        for (const char *k = kv[2 * i]; *k; k++) PUT(*k);
        PUT('=');
        PUT('"');
        for (const char *v = kv[2 * i + 1]; *v; v++) {
            if (*v == '\\' || *v == '"') {
                PUT('\\');
                PUT(*v);
            } else if (*v == '\n') {
                PUT('\\');
                PUT('n');
            } else {
                PUT(*v);
            }
        }
        PUT('"');
    }
#undef PUT
    out[len] = '\0';
    return (int)len;
too_long:
    out[0] = '\0';
    return -1;
}

static void put_value(osp_text_t *t, double v) {
    if (isnan(v))
        osp_text_put(t, "NaN", 3);
    else if (isinf(v))
        osp_text_printf(t, "%sInf", v > 0 ? "+" : "-");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        osp_text_printf(t, "%.0f", v);
    else
        osp_text_printf(t, "%.9g", v);
}

void osp_prom_sample(osp_text_t *t, const char *name, const char *labels, double v) {
    if (labels && *labels)
        osp_text_printf(t, "%s{%s} ", name, labels);
    else
        osp_text_printf(t, "%s ", name);
    put_value(t, v);
    osp_text_put(t, "\n", 1);
}

void osp_prom_histogram(osp_text_t *t, const char *name, const char *labels, const double *bounds,
                        int nb, const int64_t *buckets, double sum) {
    const char *sep = labels && *labels ? "," : "";
    const char *ls = labels ? labels : "";
    double cum = 0;
    for (int i = 0; i <= nb; i++) {
        cum += buckets[i] > 0 ? (double)buckets[i] : 0;
        if (i < nb)
            osp_text_printf(t, "%s_bucket{%s%sle=\"%g\"} ", name, ls, sep, bounds[i]);
        else
            osp_text_printf(t, "%s_bucket{%s%sle=\"+Inf\"} ", name, ls, sep);
        put_value(t, cum);
        osp_text_put(t, "\n", 1);
    }
    osp_text_printf(t, "%s_sum%s%s%s ", name, *ls ? "{" : "", ls, *ls ? "}" : "");
    put_value(t, sum);
    osp_text_printf(t, "\n%s_count%s%s%s ", name, *ls ? "{" : "", ls, *ls ? "}" : "");
    put_value(t, cum);
    osp_text_put(t, "\n", 1);
}

double osp_hist_quantile(double q, const double *bounds, int nb, const int64_t *buckets) {
    double total = 0;
    for (int i = 0; i <= nb; i++) total += buckets[i] > 0 ? (double)buckets[i] : 0;
    if (total <= 0 || nb <= 0) return -1;
    if (!(q >= 0)) q = 0;
    if (q > 1) q = 1;
    double rank = q * total, cum = 0;
    for (int i = 0; i < nb; i++) {
        double c = buckets[i] > 0 ? (double)buckets[i] : 0;
        if (c > 0 && cum + c >= rank) {
            double lo = i == 0 ? 0 : bounds[i - 1];
            return lo + (bounds[i] - lo) * ((rank - cum) / c);
        }
        cum += c;
    }
    return bounds[nb - 1];
}
