/*
 * libFuzzer target for what an HTTP peer's request reaches in code of
 * osprey's own (src/wire/http.c): the method and path through the router,
 * and any bytes as a label value (a model's name comes from a config file,
 * but ends up in every scrape) and as histogram counts for the quantile.
 * libmicrohttpd parses the request line and headers; this is what is left.
 * Checks: a route is one of the enum's values and only the known pages
 * route; an escaped label value has no raw newline or unescaped quote and
 * unescapes to the input; the bind spec parser either fails with a reason
 * or gives a host that fits and a port 1-65535; a quantile lies within
 * [0, last bound] or is -1 for an empty histogram; a target found to hold
 * a NUL has a literal %00 in it; a Bearer header's token lies inside the
 * value and is not empty. Deterministic.
 *
 * Input: [u8 split][method bytes][path bytes...]: split = the method's
 * length; the whole input is also used as the label value, the bind spec
 * and (as int64s) bucket counts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/http.h"
#include "check.h"

static void check_route(const uint8_t *data, size_t size) {
    if (size < 1) return;
    size_t split = data[0] < size - 1 ? data[0] : size - 1;
    char *method = cstr(data + 1, split), *path = cstr(data + 1 + split, size - 1 - split);
    osp_http_route_t r = osp_http_route(method, path);
    CHECK(r >= OSP_HTTP_NOT_FOUND && r <= OSP_HTTP_CROSSINGS);
    static const char *const pages[] = {"/",           "/healthz",      "/readyz", "/v1/models",
                                        "/v1/stats",   "/metrics",      "/events", "/api/cameras",
                                        "/api/events", "/api/crossings"};
    int known = 0;
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++)
        known |= strcmp(path, pages[i]) == 0;
    /* a page with a name in its path: the name is never a path of its own */
    char name[OSP_HTTP_NAME_MAX];
    if (osp_http_route_name(path, name) == 0) {
        size_t n = strlen(name), dots = 0;
        CHECK(n > 0 && n < OSP_HTTP_NAME_MAX && !strchr(name, '/'));
        for (size_t i = 0; i < n; i++) dots += name[i] == '.';
        CHECK(dots < n);
        CHECK(strstr(path, name) != NULL);
        known = 1;
    }
    if (!known) CHECK(r == OSP_HTTP_NOT_FOUND);
    if (known && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        CHECK(r == OSP_HTTP_BAD_METHOD);
    if (known && (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0))
        CHECK(r != OSP_HTTP_NOT_FOUND && r != OSP_HTTP_BAD_METHOD);
    free(method);
    free(path);
}

static void check_label(const char *v, size_t vlen) {
    size_t cap = 2 * vlen + 16;
    char *out = malloc(cap);
    CHECK(out);
    const char *kv[2] = {"model", v};
    int n = osp_prom_labels(out, cap, 1, kv);
    CHECK(n >= 0 && (size_t)n == strlen(out));
    CHECK(strncmp(out, "model=\"", 7) == 0 && out[n - 1] == '"');
    /* unescape the value back */
    char *back = malloc(vlen + 1);
    CHECK(back);
    size_t k = 0;
    for (int i = 7; i < n - 1; i++) {
        CHECK(out[i] != '\n');
        if (out[i] == '\\') {
            i++;
            CHECK(i < n - 1);
            CHECK(out[i] == '\\' || out[i] == '"' || out[i] == 'n');
            back[k++] = out[i] == 'n' ? '\n' : out[i];
        } else {
            CHECK(out[i] != '"');
            back[k++] = out[i];
        }
    }
    CHECK(k == strlen(v) && memcmp(back, v, k) == 0);
    /* too small a buffer: refused, never overrun */
    if (n > 1) CHECK(osp_prom_labels(out, (size_t)n, 1, kv) == -1 && out[0] == '\0');
    free(back);
    free(out);
}

static void check_bind(const char *spec) {
    char host[64], err[300];
    unsigned port = 0;
    err[0] = '\0';
    if (osp_http_bind_parse(spec, host, sizeof host, &port, err, sizeof err) == 0) {
        CHECK(port >= 1 && port <= 65535);
        CHECK(strlen(host) < sizeof host && host[0]);
        (void)osp_http_host_is_loopback(host);
    } else {
        CHECK(err[0]);
    }
}

static void check_quantile(const uint8_t *data, size_t size) {
    static const double bounds[] = {0.001, 0.002, 0.005, 0.01, 0.1, 1.0};
    int64_t b[7] = {0};
    memcpy(b, data, size < sizeof b ? size : sizeof b);
    for (int i = 0; i < 7; i++) b[i] %= (int64_t)1 << 40; /* counts a server could hold */
    double q = size ? data[size - 1] / 255.0 : 0.5;
    double v = osp_hist_quantile(q, bounds, 6, b);
    int any = 0;
    for (int i = 0; i < 7; i++) any |= b[i] > 0;
    if (!any)
        CHECK(v == -1);
    else
        CHECK(v >= 0 && v <= 1.0);
    osp_text_t t = {0};
    osp_prom_histogram(&t, "h", "m=\"x\"", bounds, 6, b, 1.5);
    CHECK(!t.oom && t.len > 0 && t.buf[t.len - 1] == '\n');
    osp_text_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_route(data, size);
    char *s = cstr(data, size); /* up to the first NUL: what a C string of it is */
    check_label(s, strlen(s));
    check_bind(s);
    int nul = osp_http_target_has_nul(s);
    CHECK(nul == 0 || nul == 1);
    if (nul) CHECK(strstr(s, "%00") != NULL);
    const char *tok = NULL;
    size_t tn = 0;
    if (osp_http_bearer(s, &tok, &tn) == 0) CHECK(tn > 0 && tok >= s && tok + tn <= s + strlen(s));
    free(s);
    check_quantile(data, size);
    return 0;
}
