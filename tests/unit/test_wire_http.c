/* wire/http: routes, the --http bind spec, the Prometheus text format and
 * the histogram quantile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "wire/http.h"

static void test_routes(void **state) {
    (void)state;
    assert_int_equal(osp_http_route("GET", "/"), OSP_HTTP_DASHBOARD);
    assert_int_equal(osp_http_route("GET", "/healthz"), OSP_HTTP_HEALTHZ);
    assert_int_equal(osp_http_route("HEAD", "/readyz"), OSP_HTTP_READYZ);
    assert_int_equal(osp_http_route("GET", "/v1/models"), OSP_HTTP_MODELS);
    assert_int_equal(osp_http_route("GET", "/v1/stats"), OSP_HTTP_STATS);
    assert_int_equal(osp_http_route("GET", "/metrics"), OSP_HTTP_METRICS);
    assert_int_equal(osp_http_route("GET", "/events"), OSP_HTTP_EVENTS);
    assert_int_equal(osp_http_route("POST", "/metrics"), OSP_HTTP_BAD_METHOD);
    assert_int_equal(osp_http_route("DELETE", "/v1/models"), OSP_HTTP_BAD_METHOD);
    assert_int_equal(osp_http_route("GET", "/metrics/"), OSP_HTTP_NOT_FOUND);
    assert_int_equal(osp_http_route("GET", "/../metrics"), OSP_HTTP_NOT_FOUND);
    assert_int_equal(osp_http_route("GET", ""), OSP_HTTP_NOT_FOUND);
    assert_int_equal(osp_http_route("POST", "/nothing"), OSP_HTTP_NOT_FOUND);
    assert_int_equal(osp_http_route(NULL, "/"), OSP_HTTP_NOT_FOUND);
    assert_int_equal(osp_http_route("GET", NULL), OSP_HTTP_NOT_FOUND);
}

static void test_named_routes(void **state) {
    (void)state;
    char name[OSP_HTTP_NAME_MAX];
    assert_int_equal(osp_http_route("GET", "/api/cameras"), OSP_HTTP_CAMERAS);
    assert_int_equal(osp_http_route("GET", "/api/events"), OSP_HTTP_CAMERA_EVENTS);
    assert_int_equal(osp_http_route("GET", "/api/crossings"), OSP_HTTP_CROSSINGS);
    assert_int_equal(osp_http_route("GET", "/api/crossings/x"), OSP_HTTP_NOT_FOUND);
    assert_int_equal(osp_http_route("GET", "/api/cameras/door/latest.jpg"), OSP_HTTP_CAMERA_LATEST);
    assert_int_equal(osp_http_route_name("/api/cameras/door/latest.jpg", name), 0);
    assert_string_equal(name, "door");
    assert_int_equal(osp_http_route("HEAD", "/api/events/1764780000.123456-7/snapshot.jpg"),
                     OSP_HTTP_EVENT_SNAPSHOT);
    assert_int_equal(osp_http_route_name("/api/events/1764780000.123456-7/snapshot.jpg", name), 0);
    assert_string_equal(name, "1764780000.123456-7");
    assert_int_equal(osp_http_route("POST", "/api/cameras/door/latest.jpg"), OSP_HTTP_BAD_METHOD);
    /* names that are paths, or empty, or too long: no page */
    const char *bad[] = {"/api/cameras//latest.jpg",       "/api/cameras/../latest.jpg",
                         "/api/cameras/./latest.jpg",      "/api/cameras/a/b/latest.jpg",
                         "/api/events/..%2f/snapshot.jpg", "/api/events/a b/snapshot.jpg",
                         "/api/cameras/latest.jpg",        "/api/events/x/snapshot.png",
                         "/api/cameras/door/latest.jpg/",  "/api/cameras/door"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(osp_http_route("GET", bad[i]), OSP_HTTP_NOT_FOUND);
        assert_int_equal(osp_http_route_name(bad[i], name), -1);
    }
    char longest[200];
    snprintf(longest, sizeof longest, "/api/cameras/%0*d/latest.jpg", OSP_HTTP_NAME_MAX - 1, 0);
    assert_int_equal(osp_http_route("GET", longest), OSP_HTTP_CAMERA_LATEST);
    snprintf(longest, sizeof longest, "/api/cameras/%0*d/latest.jpg", OSP_HTTP_NAME_MAX, 0);
    assert_int_equal(osp_http_route("GET", longest), OSP_HTTP_NOT_FOUND);
    assert_int_equal(osp_http_route_name(NULL, name), -1);
}

static void bind_ok(const char *spec, const char *host, unsigned port) {
    char h[64], err[200];
    unsigned p = 0;
    assert_int_equal(osp_http_bind_parse(spec, h, sizeof h, &p, err, sizeof err), 0);
    assert_string_equal(h, host);
    assert_int_equal(p, port);
}

static void bind_bad(const char *spec, const char *why) {
    char h[64], err[200] = "";
    unsigned p = 0;
    assert_int_equal(osp_http_bind_parse(spec, h, sizeof h, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, why));
}

static void test_target_nul(void **state) {
    (void)state;
    assert_int_equal(osp_http_target_has_nul("/healthz"), 0);
    assert_int_equal(osp_http_target_has_nul("/healthz%00.txt"), 1);
    assert_int_equal(osp_http_target_has_nul("/metrics?name=a%00b"), 1);
    assert_int_equal(osp_http_target_has_nul("/a%2500"), 0); /* "%00" as text, no NUL */
    assert_int_equal(osp_http_target_has_nul("/a%0"), 0);
    assert_int_equal(osp_http_target_has_nul("/a%"), 0);
    assert_int_equal(osp_http_target_has_nul("/a%%00"), 1);
    assert_int_equal(osp_http_target_has_nul(NULL), 0);
}

static void test_bearer(void **state) {
    (void)state;
    const char *t = NULL;
    size_t n = 0;
    assert_int_equal(osp_http_bearer("Bearer abc ", &t, &n), 0);
    assert_int_equal(n, 3);
    assert_memory_equal(t, "abc", 3);
    assert_int_equal(osp_http_bearer("bearer   xyz", &t, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(osp_http_bearer("Basic abc", &t, &n), -1);
    assert_int_equal(osp_http_bearer("Bearer ", &t, &n), -1);
    assert_int_equal(osp_http_bearer("Bearer", &t, &n), -1);
    assert_int_equal(osp_http_bearer(NULL, &t, &n), -1);
}

static void test_bind(void **state) {
    (void)state;
    bind_ok("8080", "127.0.0.1", 8080);
    bind_ok(":9", "127.0.0.1", 9);
    bind_ok("0.0.0.0:65535", "0.0.0.0", 65535);
    bind_ok("localhost:80", "localhost", 80);
    bind_ok("[::1]:8080", "::1", 8080);
    bind_bad("", "[HOST:]PORT");
    bind_bad("0", "from 1 to 65535");
    bind_bad("65536", "from 1 to 65535");
    bind_bad("host:", "from 1 to 65535");
    bind_bad("8o80", "from 1 to 65535");
    bind_bad("::1:8080", "brackets");
    bind_bad("[::1]8080", "[ADDRESS]:PORT");
    bind_bad("a-very-long-host-name-that-does-not-fit-in-the-buffer-given-here.example:1", "too long");
    assert_true(osp_http_host_is_loopback("127.0.0.1"));
    assert_true(osp_http_host_is_loopback("127.1.2.3"));
    assert_true(osp_http_host_is_loopback("::1"));
    assert_true(osp_http_host_is_loopback("localhost"));
    assert_false(osp_http_host_is_loopback("0.0.0.0"));
    assert_false(osp_http_host_is_loopback("::"));
    assert_false(osp_http_host_is_loopback("10.0.0.1"));
    assert_false(osp_http_host_is_loopback("example.org"));
}

static void test_labels(void **state) {
    (void)state;
    char out[64];
    const char *kv[] = {"model", "a\"b\\c\nd", "outcome", "served"};
    int n = osp_prom_labels(out, sizeof out, 2, kv);
    assert_string_equal(out, "model=\"a\\\"b\\\\c\\nd\",outcome=\"served\"");
    assert_int_equal(n, (int)strlen(out));
    char tiny[12];
    assert_int_equal(osp_prom_labels(tiny, sizeof tiny, 2, kv), -1);
    assert_string_equal(tiny, "");
}

static void test_text(void **state) {
    (void)state;
    osp_text_t t = {0};
    osp_prom_family(&t, "osprey_x_total", "counter", "Things\nand \\ more.");
    osp_prom_sample(&t, "osprey_x_total", "model=\"m\"", 3);
    osp_prom_sample(&t, "osprey_y", NULL, 0.25);
    assert_string_equal(t.buf, "# HELP osprey_x_total Things\\nand \\\\ more.\n"
                               "# TYPE osprey_x_total counter\n"
                               "osprey_x_total{model=\"m\"} 3\n"
                               "osprey_y 0.25\n");
    osp_text_reset(&t);
    const double bounds[] = {0.001, 0.01};
    const int64_t buckets[] = {2, 3, 1};
    osp_prom_histogram(&t, "h", "m=\"a\"", bounds, 2, buckets, 0.5);
    assert_string_equal(t.buf, "h_bucket{m=\"a\",le=\"0.001\"} 2\n"
                               "h_bucket{m=\"a\",le=\"0.01\"} 5\n"
                               "h_bucket{m=\"a\",le=\"+Inf\"} 6\n"
                               "h_sum{m=\"a\"} 0.5\n"
                               "h_count{m=\"a\"} 6\n");
    osp_text_reset(&t);
    for (int i = 0; i < 2000; i++)
        osp_text_printf(&t, "%04d %s\n", i, "a line long enough to grow the buffer");
    assert_false(t.oom);
    assert_int_equal(t.len, 2000 * 43);
    osp_text_free(&t);
}

static void test_quantile(void **state) {
    (void)state;
    const double bounds[] = {0.01, 0.02, 0.05};
    const int64_t none[] = {0, 0, 0, 0};
    assert_true(osp_hist_quantile(0.5, bounds, 3, none) < 0);
    const int64_t even[] = {0, 10, 0, 0}; /* all between 10 and 20 ms */
    assert_float_equal(osp_hist_quantile(0.5, bounds, 3, even), 0.015, 1e-9);
    assert_float_equal(osp_hist_quantile(1.0, bounds, 3, even), 0.02, 1e-9);
    const int64_t first[] = {4, 0, 0, 0};
    assert_float_equal(osp_hist_quantile(0.5, bounds, 3, first), 0.005, 1e-9);
    const int64_t tail[] = {99, 0, 0, 1}; /* the slowest past the last bound */
    assert_float_equal(osp_hist_quantile(1.0, bounds, 3, tail), 0.05, 1e-9);
    assert_true(osp_hist_quantile(0.99, bounds, 3, tail) <= 0.01);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes), cmocka_unit_test(test_named_routes),
        cmocka_unit_test(test_bind),   cmocka_unit_test(test_target_nul),
        cmocka_unit_test(test_bearer), cmocka_unit_test(test_labels),
        cmocka_unit_test(test_text),   cmocka_unit_test(test_quantile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
