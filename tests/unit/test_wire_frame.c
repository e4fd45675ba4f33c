/* The wire codec: framing, handshake, deadlines, payloads, replies. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "wire/frame.h"

/* ---- a byte builder ---------------------------------------------------------- */

typedef struct {
    uint8_t b[8192];
    size_t n;
} bb_t;

static void put8(bb_t *b, uint8_t v) { b->b[b->n++] = v; }
static void put32(bb_t *b, uint32_t v) {
    for (int i = 0; i < 4; i++) put8(b, (uint8_t)(v >> (8 * i)));
}
static void put64(bb_t *b, uint64_t v) {
    for (int i = 0; i < 8; i++) put8(b, (uint8_t)(v >> (8 * i)));
}
static void putn(bb_t *b, const void *p, size_t n) {
    memcpy(b->b + b->n, p, n);
    b->n += n;
}
static void putfill(bb_t *b, uint8_t v, size_t n) {
    memset(b->b + b->n, v, n);
    b->n += n;
}

/* A request frame around payload p. */
static void frame(bb_t *b, uint32_t req_id, uint8_t type, const void *p, size_t n) {
    put32(b, (uint32_t)(5 + n));
    put32(b, req_id);
    put8(b, type);
    if (n) putn(b, p, n);
}

/* Parse a payload as a frame of the given type. */
static int parse(uint8_t type, const uint8_t *p, size_t n, int version, osp_wire_request_t *rq,
                 char *err) {
    osp_wire_frame_t f = {.total_len = (uint32_t)(5 + n),
                          .req_id = 7,
                          .msg_type = type,
                          .payload = p,
                          .payload_len = n,
                          .frame_len = 9 + n};
    err[0] = '\0';
    return osp_wire_request_parse(&f, version, rq, err, OSP_WIRE_ERRLEN);
}

static void expect_err(uint8_t type, const uint8_t *p, size_t n, int version, const char *text,
                       osp_wire_err_shape_t shape) {
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(parse(type, p, n, version, &rq, err), OSP_WIRE_EINVAL);
    assert_string_equal(err, text);
    assert_int_equal(rq.err_shape, shape);
}

/* ---- framing ---------------------------------------------------------------------- */

static void test_scan_prefixes(void **s) {
    (void)s;
    bb_t b = {0};
    frame(&b, 0x01020304, 0x02, "abcdef", 6);
    osp_wire_frame_t f;
    size_t need;
    for (size_t len = 0; len < b.n; len++) {
        assert_int_equal(osp_wire_scan(b.b, len, 0, &f, &need), 0);
        assert_true(need >= 1);
        if (len < 4) assert_int_equal(need, 4 - len); /* 4 bytes may decide "below the header" */
        if (len >= 4) {
            assert_int_equal(need, b.n - len);
            assert_int_equal(f.frame_len, 15);
            assert_int_equal(f.total_len, 11);
        }
        if (len >= 9) {
            assert_int_equal(f.req_id, 0x01020304);
            assert_int_equal(f.msg_type, 2);
        }
    }
    assert_int_equal(osp_wire_scan(b.b, b.n, 0, &f, &need), 1);
    assert_int_equal(f.frame_len, b.n);
    assert_int_equal(f.payload_len, 6);
    assert_memory_equal(f.payload, "abcdef", 6);
    assert_ptr_equal(f.payload, b.b + 9);
    /* bytes after the frame are not part of it */
    put8(&b, 0xAA);
    assert_int_equal(osp_wire_scan(b.b, b.n, 0, &f, &need), 1);
    assert_int_equal(f.frame_len, b.n - 1);
}

/* total_len < 5 cannot hold its own header: refused once the req_id is
 * readable, so the reply can name it; 5 is an empty payload. */
static void test_scan_short_total_len(void **s) {
    (void)s;
    for (uint32_t tl = 0; tl <= 5; tl++) {
        bb_t b = {0};
        put32(&b, tl);
        put32(&b, 99);
        put8(&b, 0x01);
        frame(&b, 100, 0x05, "\x01\x02\x03\x04\x05", 5);
        osp_wire_frame_t f;
        size_t need;
        if (tl < 5) {
            /* known from the 4 + tl bytes the host wrote for it */
            assert_int_equal(osp_wire_scan(b.b, 3 + tl, 0, &f, &need), 0);
            assert_int_equal(need, 1);
            assert_int_equal(osp_wire_scan(b.b, 4 + tl, 0, &f, &need), OSP_WIRE_ESHORT);
            assert_int_equal(f.req_id, tl == 4 ? 99 : 0);
            assert_int_equal(osp_wire_scan(b.b, b.n, 0, &f, &need), OSP_WIRE_ESHORT);
            assert_int_equal(f.total_len, tl);
            assert_int_equal(f.req_id, tl == 4 ? 99 : 0);
            continue;
        }
        assert_int_equal(osp_wire_scan(b.b, b.n, 0, &f, &need), 1);
        assert_int_equal(f.frame_len, 9);
        assert_int_equal(f.payload_len, 0);
        assert_int_equal(f.req_id, 99);
        assert_int_equal(osp_wire_scan(b.b + 9, b.n - 9, 0, &f, &need), 1);
        assert_int_equal(f.req_id, 100);
        assert_int_equal(f.payload_len, 5);
    }
}

static void test_scan_too_large(void **s) {
    (void)s;
    bb_t b = {0};
    put32(&b, OSP_WIRE_MAX_FRAME_DEFAULT + 1);
    put32(&b, 0xCAFE);
    put8(&b, 1);
    osp_wire_frame_t f;
    size_t need;
    for (size_t len = 4; len < 8; len++) {
        assert_int_equal(osp_wire_scan(b.b, len, 0, &f, &need), 0);
        assert_int_equal(need, 8 - len);
    }
    assert_int_equal(osp_wire_scan(b.b, 8, 0, &f, &need), OSP_WIRE_ETOOBIG);
    assert_int_equal(f.req_id, 0xCAFE);
    assert_int_equal(f.total_len, OSP_WIRE_MAX_FRAME_DEFAULT + 1);
    /* exactly the cap is allowed */
    bb_t c = {0};
    put32(&c, OSP_WIRE_MAX_FRAME_DEFAULT);
    put32(&c, 1);
    put8(&c, 1);
    assert_int_equal(osp_wire_scan(c.b, c.n, 0, &f, &need), 0);
    assert_int_equal(need, OSP_WIRE_MAX_FRAME_DEFAULT + 4 - 9);
    /* a configured cap, and one below the minimum frame */
    bb_t d = {0};
    frame(&d, 5, 1, "0123456789", 10);
    assert_int_equal(osp_wire_scan(d.b, d.n, 15, &f, &need), 1);
    assert_int_equal(osp_wire_scan(d.b, d.n, 14, &f, &need), OSP_WIRE_ETOOBIG);
    assert_int_equal(f.req_id, 5);
    assert_int_equal(osp_wire_scan(d.b, d.n, 1, &f, &need), OSP_WIRE_ETOOBIG);
    bb_t e = {0};
    frame(&e, 6, 0, NULL, 0);
    assert_int_equal(osp_wire_scan(e.b, e.n, 1, &f, &need), 1);
}

/* A stream of mixed frames, and what each should come out as. */
typedef struct {
    uint32_t req_id;
    uint8_t type;
    size_t off, len; /* payload within the stream */
} want_t;

static size_t build_stream(bb_t *b, want_t *w) {
    static const size_t lens[] = {0, 1, 5, 13, 200, 3000, 2, 0, 64};
    size_t k = 0;
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        uint8_t p[3000];
        for (size_t j = 0; j < lens[i]; j++) p[j] = (uint8_t)(i * 31 + j);
        w[k] = (want_t){(uint32_t)(1000 + i), (uint8_t)(i % 7), b->n + 9, lens[i]};
        frame(b, w[k].req_id, w[k].type, p, lens[i]);
        k++;
    }
    return k;
}

/* A staging buffer read the way ospreyd's connections read theirs
 * (src/server/pipe/conn.c): bytes appended as they arrive, whole frames taken
 * off the front with osp_wire_scan, the rest kept for the next read. */
typedef struct {
    uint8_t b[8192];
    size_t n;
} stage_t;

static void stage_feed(stage_t *st, const void *data, size_t n) {
    assert_true(st->n + n <= sizeof st->b);
    memcpy(st->b + st->n, data, n);
    st->n += n;
}

/* Every whole frame in the stage checked against w[k...]; returns the new k. */
static size_t drain(stage_t *st, const bb_t *b, const want_t *w, size_t k) {
    osp_wire_frame_t f;
    size_t off = 0, need = 0;
    int rc;
    while ((rc = osp_wire_scan(st->b + off, st->n - off, 0, &f, &need)) == 1) {
        assert_true(k < 100);
        assert_int_equal(f.req_id, w[k].req_id);
        assert_int_equal(f.msg_type, w[k].type);
        assert_int_equal(f.payload_len, w[k].len);
        if (f.payload_len) assert_memory_equal(f.payload, b->b + w[k].off, w[k].len);
        off += f.frame_len;
        k++;
    }
    assert_int_equal(rc, 0);
    assert_true(need >= 1);
    memmove(st->b, st->b + off, st->n - off);
    st->n -= off;
    return k;
}

static void test_scan_byte_by_byte(void **s) {
    (void)s;
    bb_t b = {0};
    want_t w[16];
    size_t nw = build_stream(&b, w);
    static stage_t st;
    st.n = 0;
    size_t got = 0;
    for (size_t i = 0; i < b.n; i++) {
        stage_feed(&st, b.b + i, 1);
        got = drain(&st, &b, w, got);
    }
    assert_int_equal(got, nw);
    assert_int_equal(st.n, 0);
}

static void test_scan_splits(void **s) {
    (void)s;
    bb_t b = {0};
    want_t w[16];
    size_t nw = build_stream(&b, w);
    static stage_t st;
    /* two reads split at every offset */
    for (size_t cut = 0; cut <= b.n; cut++) {
        st.n = 0;
        stage_feed(&st, b.b, cut);
        size_t got = drain(&st, &b, w, 0);
        stage_feed(&st, b.b + cut, b.n - cut);
        got = drain(&st, &b, w, got);
        assert_int_equal(got, nw);
        assert_int_equal(st.n, 0);
    }
    /* pseudo-random read sizes */
    uint32_t x = 12345;
    for (int round = 0; round < 50; round++) {
        st.n = 0;
        size_t off = 0, got = 0;
        while (off < b.n) {
            x = x * 1103515245u + 12345u;
            size_t want = 1 + (x >> 16) % 700;
            if (want > b.n - off) want = b.n - off;
            stage_feed(&st, b.b + off, want);
            off += want;
            got = drain(&st, &b, w, got);
        }
        assert_int_equal(got, nw);
    }
}

static void test_scan_stream_too_large(void **s) {
    (void)s;
    bb_t b = {0};
    frame(&b, 1, 1, "ok", 2);
    put32(&b, 1000);
    put32(&b, 0xBEEF);
    put8(&b, 2);
    putfill(&b, 0, 20);
    osp_wire_frame_t f;
    size_t need = 0;
    /* the frame before the bad one is still delivered */
    assert_int_equal(osp_wire_scan(b.b, 15, 100, &f, &need), 1);
    assert_int_equal(f.req_id, 1);
    /* 4 bytes of the next: its req_id is not there yet, so no verdict */
    assert_int_equal(osp_wire_scan(b.b + 11, 4, 100, &f, &need), 0);
    assert_true(need >= 1);
    assert_int_equal(osp_wire_scan(b.b + 11, 8, 100, &f, &need), OSP_WIRE_ETOOBIG);
    assert_int_equal(f.req_id, 0xBEEF);
    assert_int_equal(f.total_len, 1000);
    osp_jw_t w = {0};
    osp_wire_json_too_large(&w, f.total_len, 100);
    assert_string_equal(w.buf, "{\"error\": \"frame too large: 1000 bytes (max 100)\"}");
    osp_jw_free(&w);
}

static void test_scan_eof_partial(void **s) {
    (void)s;
    bb_t b = {0};
    frame(&b, 1, 1, "hello", 5);
    osp_wire_frame_t f;
    size_t need = 0;
    assert_int_equal(osp_wire_scan(b.b, b.n - 1, 0, &f, &need), 0);
    assert_int_equal(need, 1);
    assert_int_equal(f.frame_len, b.n); /* sized before it is whole */
    assert_int_equal(osp_wire_scan(b.b, b.n, 0, &f, &need), 1);
    assert_int_equal(f.payload_len, 5);
}

/* ---- handshake ------------------------------------------------------------------- */

static int hello(const char *json, osp_wire_hello_t *h, char *err) {
    err[0] = '\0';
    return osp_wire_hello_parse(0, (const uint8_t *)json, strlen(json), OSP_WIRE_VERSION, h, err,
                                OSP_WIRE_ERRLEN);
}

static void test_negotiate_table(void **s) {
    (void)s;
    static const struct {
        const char *json;
        int version;
        int64_t declared;
    } t[] = {
        {"{}", 1, 1},
        {"{\"protocolVersion\":\"2\"}", 2, 2},
        {"{\"protocolVersion\":2.5}", 2, 2},
        {"{\"protocolVersion\":-1}", 1, -1},
        {"{\"protocolVersion\":1}", 1, 1},
        {"{\"protocolVersion\":2}", 2, 2},
        {"{\"protocolVersion\":3}", 2, 3},
        {"{\"protocolVersion\":99}", 2, 99},
        {"{\"protocolVersion\":0}", 1, 1}, /* 0 is falsy: `or 1` */
        {"{\"protocolVersion\":null}", 1, 1},
        {"{\"protocolVersion\":true}", 1, 1},
        {"{\"protocolVersion\":false}", 1, 1},
        {"{\"protocolVersion\":\"abc\"}", 1, 1},
        {"{\"protocolVersion\":\"\"}", 1, 1},
        {"{\"protocolVersion\":\" 2 \"}", 2, 2},
        {"{\"protocolVersion\":\"+2\"}", 2, 2},
        {"{\"protocolVersion\":\"2.5\"}", 1, 1},
        {"{\"protocolVersion\":\"1_0\"}", 2, 10},
        {"{\"protocolVersion\":\"1__0\"}", 1, 1},
        {"{\"protocolVersion\":\"0x2\"}", 1, 1},
        {"{\"protocolVersion\":1.9}", 1, 1},
        {"{\"protocolVersion\":[2]}", 1, 1},
        {"{\"protocolVersion\":[]}", 1, 1},
        {"{\"protocolVersion\":{}}", 1, 1},
        {"{\"protocolVersion\":1e400}", 1, 1},
        {"{\"protocolVersion\":99999999999999999999999}", 2, INT64_MAX},
        {"{\"protocolVersion\":\"-99999999999999999999999\"}", 1, INT64_MIN},
        {"{\"protocolVersion\":1,\"protocolVersion\":2}", 2, 2}, /* last key wins */
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        osp_wire_hello_t h;
        char err[OSP_WIRE_ERRLEN];
        int rc = hello(t[i].json, &h, err);
        if (rc) fail_msg("%s: %s", t[i].json, err);
        if (h.wire_version != t[i].version || h.protocol_declared != t[i].declared)
            fail_msg("%s: version %d declared %lld", t[i].json, h.wire_version,
                     (long long)h.protocol_declared);
        osp_wire_hello_free(&h);
    }
    /* the worker's own highest bounds it */
    cJSON *five = cJSON_CreateNumber(5);
    assert_int_equal(osp_wire_negotiate(five, 3), 3);
    assert_int_equal(osp_wire_negotiate(five, 1), 1);
    assert_int_equal(osp_wire_negotiate(five, 0), 1);
    assert_int_equal(osp_wire_negotiate(NULL, 2), 1);
    cJSON_Delete(five);
}

static void test_hello_defaults(void **s) {
    (void)s;
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(hello(" {} ", &h, err), 0);
    assert_null(h.runtime);
    assert_string_equal(h.device, "");
    assert_int_equal(h.concurrency, 1);
    assert_int_equal(h.batch_mode, OSP_WIRE_BATCH_NONE);
    assert_int_equal(h.window_ms, 0);
    assert_int_equal(h.max_batch_size, 1);
    assert_true(h.model_load_timeout_ms == 120000.0);
    assert_null(h.models);
    assert_int_equal(h.wire_version, 1);
    osp_wire_hello_free(&h);
}

static void test_hello_values(void **s) {
    (void)s;
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(hello("{\"runtime\":\"onnxruntime\",\"device\":\"cuda\",\"concurrency\":2.7,"
                           "\"batch_mode\":\"window\",\"window_ms\":\"15\",\"max_batch_size\":4,"
                           "\"modelLoadTimeoutMs\":5000,\"protocolVersion\":2,"
                           "\"models\":[{\"path\":\"a.onnx\"},{\"path\":\"b.onnx\"}]}",
                           &h, err),
                     0);
    assert_string_equal(h.runtime, "onnxruntime");
    assert_string_equal(h.device, "cuda");
    assert_int_equal(h.concurrency, 2);
    assert_int_equal(h.batch_mode, OSP_WIRE_BATCH_WINDOW);
    assert_int_equal(h.window_ms, 15);
    assert_int_equal(h.max_batch_size, 4);
    assert_true(h.model_load_timeout_ms == 5000.0);
    assert_int_equal(h.wire_version, 2);
    assert_non_null(h.models);
    assert_int_equal(cJSON_GetArraySize(h.models), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(h.models, 1), "path")->valuestring,
                        "b.onnx");
    osp_wire_hello_free(&h);

    static const struct {
        const char *json;
        int concurrency, mode, window, maxb;
        double timeout;
        const char *device;
    } t[] = {
        {"{\"batch_mode\":\"list\"}", 1, OSP_WIRE_BATCH_LIST, 0, 1, 120000, ""},
        {"{\"batch_mode\":\"LIST\"}", 1, OSP_WIRE_BATCH_NONE, 0, 1, 120000, ""},
        {"{\"batch_mode\":5}", 1, OSP_WIRE_BATCH_NONE, 0, 1, 120000, ""},
        {"{\"batch_mode\":\"none\"}", 1, OSP_WIRE_BATCH_NONE, 0, 1, 120000, ""},
        {"{\"window_ms\":-5,\"max_batch_size\":0}", 1, 0, 0, 1, 120000, ""},
        {"{\"max_batch_size\":-3}", 1, 0, 0, 1, 120000, ""},
        {"{\"concurrency\":-3}", -3, 0, 0, 1, 120000, ""},
        {"{\"concurrency\":0}", 1, 0, 0, 1, 120000, ""},
        {"{\"concurrency\":[]}", 1, 0, 0, 1, 120000, ""},
        {"{\"concurrency\":true}", 1, 0, 0, 1, 120000, ""},
        {"{\"concurrency\":\" 8\\n\"}", 8, 0, 0, 1, 120000, ""},
        {"{\"modelLoadTimeoutMs\":\"5000\"}", 1, 0, 0, 1, 120000, ""},
        {"{\"modelLoadTimeoutMs\":true}", 1, 0, 0, 1, 120000, ""},
        {"{\"modelLoadTimeoutMs\":-1}", 1, 0, 0, 1, 120000, ""},
        {"{\"modelLoadTimeoutMs\":0.5}", 1, 0, 0, 1, 0.5, ""},
        {"{\"device\":null}", 1, 0, 0, 1, 120000, ""},
        {"{\"device\":false}", 1, 0, 0, 1, 120000, ""},
        {"{\"device\":true}", 1, 0, 0, 1, 120000, "True"},
        {"{\"device\":1}", 1, 0, 0, 1, 120000, "1"},
        {"{\"device\":\"usb:1\"}", 1, 0, 0, 1, 120000, "usb:1"},
        {"{\"device\":1.5}", 1, 0, 0, 1, 120000, "1.5"},
        {"{\"models\":\"\"}", 1, 0, 0, 1, 120000, ""},
        {"{\"models\":{}}", 1, 0, 0, 1, 120000, ""},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        int rc = hello(t[i].json, &h, err);
        if (rc) fail_msg("%s: %s", t[i].json, err);
        if (h.concurrency != t[i].concurrency || (int)h.batch_mode != t[i].mode ||
            h.window_ms != t[i].window || h.max_batch_size != t[i].maxb ||
            h.model_load_timeout_ms != t[i].timeout || strcmp(h.device, t[i].device))
            fail_msg("%s: got %d %d %d %d %g '%s'", t[i].json, h.concurrency, h.batch_mode,
                     h.window_ms, h.max_batch_size, h.model_load_timeout_ms, h.device);
        osp_wire_hello_free(&h);
    }
}

static void test_hello_errors(void **s) {
    (void)s;
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(osp_wire_hello_parse(1, (const uint8_t *)"{}", 2, 2, &h, err, sizeof err),
                     OSP_WIRE_EINVAL);
    assert_string_equal(err, "Expected startup config (cmd), got msg_type=1");
    assert_null(h.root);
    static const struct {
        const char *json, *err;
    } t[] = {
        {"", "Expecting value: line 1 column 1 (char 0)"},
        {"[]", "startup config must be a JSON object"},
        {"{\"concurrency\":\"abc\"}", "concurrency: invalid literal for int() with base 10: 'abc'"},
        {"{\"window_ms\":[1]}",
         "window_ms: int() argument must be a string, a bytes-like object or a real number, not "
         "'list'"},
        {"{\"max_batch_size\":1e999}", "max_batch_size: cannot convert float infinity to integer"},
        {"{\"runtime\":5}", "runtime must be a string"},
        {"{\"runtime\":null}", "runtime must be a string"},
        {"{\"device\":[1]}", "device must be a string"},
        {"{\"models\":5}", "models must be a list"},
        {"{\"models\":null}", "models must be a list"},
        {"{\"models\":\"ab\"}", "models must be a list"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        int rc = hello(t[i].json, &h, err);
        assert_int_equal(rc, OSP_WIRE_EINVAL);
        if (strcmp(err, t[i].err)) fail_msg("%s: got '%s'", t[i].json, err);
        assert_null(h.root);
    }
}

/* ---- deadlines ---------------------------------------------------------------------- */

static void test_deadline_per_type(void **s) {
    (void)s;
    uint8_t p[16];
    for (int i = 0; i < 16; i++) p[i] = (uint8_t)(0x10 + i);
    for (int version = 1; version <= 3; version++) {
        for (int t = 0; t < 256; t++) {
            uint64_t dl = 1;
            const uint8_t *rest;
            size_t n;
            char err[OSP_WIRE_ERRLEN];
            assert_int_equal(osp_wire_split_deadline((uint8_t)t, p, sizeof p, version, &dl, &rest,
                                                     &n, err, sizeof err),
                             0);
            int shed = t >= 1 && t <= 5 && t != 4;
            assert_int_equal(osp_wire_sheddable((uint8_t)t), shed);
            if (version >= 2 && shed) {
                assert_true(dl == 0x1716151413121110ull);
                assert_ptr_equal(rest, p + 8);
                assert_int_equal(n, 8);
            } else {
                assert_true(dl == 0);
                assert_ptr_equal(rest, p);
                assert_int_equal(n, 16);
            }
        }
    }
}

static void test_deadline_truncated(void **s) {
    (void)s;
    uint8_t p[8] = {0};
    for (int t = 1; t <= 5; t++) {
        for (size_t n = 0; n < 8; n++) {
            char want[OSP_WIRE_ERRLEN];
            snprintf(want, sizeof want,
                     "truncated deadline prefix on msg_type=%d (%zu bytes, need 8)", t, n);
            if (t == 4) {
                /* cache_frame carries no prefix: its own header check speaks */
                expect_err((uint8_t)t, p, n, 2, "truncated cache_frame header", OSP_WIRE_ERR_PLAIN);
                continue;
            }
            expect_err((uint8_t)t, p, n, 2, want, OSP_WIRE_ERR_PLAIN);
        }
    }
    /* exactly the prefix: the type's own check follows on an empty body */
    expect_err(1, p, 8, 2, "empty infer_jpeg payload", OSP_WIRE_ERR_PLAIN);
    expect_err(3, p, 8, 2, "truncated infer_batch header", OSP_WIRE_ERR_PLAIN);
    /* v1: the same bytes are the payload itself */
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    uint8_t q[9] = {3, 0xff, 0xd8, 0, 0, 0, 0, 0, 0};
    assert_int_equal(parse(1, q, 9, 1, &rq, err), 0);
    assert_int_equal(rq.u.jpeg.model_idx, 3);
    assert_int_equal(rq.u.jpeg.len, 8);
    assert_true(rq.deadline_ms == 0);
    /* v2: deadline read little-endian, body after it */
    bb_t b = {0};
    put64(&b, 1700000000123ull);
    put8(&b, 2);
    putn(&b, "JPEG", 4);
    assert_int_equal(parse(1, b.b, b.n, 2, &rq, err), 0);
    assert_true(rq.deadline_ms == 1700000000123ull);
    assert_int_equal(rq.u.jpeg.model_idx, 2);
    assert_int_equal(rq.u.jpeg.len, 4);
    assert_memory_equal(rq.u.jpeg.data, "JPEG", 4);
    /* commands never carry one */
    assert_int_equal(parse(0, (const uint8_t *)"{\"cmd\":\"status\"}", 16, 2, &rq, err), 0);
    assert_int_equal(rq.u.command.len, 16);
    assert_true(rq.deadline_ms == 0);
}

/* An extension type the seed did not know (infer_shm) strips the prefix
 * at v2 whatever osp_wire_sheddable says, with the same text when short. */
static void test_deadline_strip_extension(void **s) {
    (void)s;
    uint8_t p[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    uint64_t dl = 7;
    const uint8_t *rest;
    size_t n;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(osp_wire_strip_deadline(OSP_WIRE_MSG_INFER_SHM, p, sizeof p, 2, &dl, &rest,
                                             &n, err, sizeof err),
                     0);
    assert_true(dl == 0x0807060504030201ull);
    assert_ptr_equal(rest, p + 8);
    assert_int_equal(n, 4);
    assert_int_equal(osp_wire_strip_deadline(OSP_WIRE_MSG_INFER_SHM, p, sizeof p, 1, &dl, &rest,
                                             &n, err, sizeof err),
                     0);
    assert_true(dl == 0);
    assert_ptr_equal(rest, p);
    assert_int_equal(n, sizeof p);
    assert_int_equal(osp_wire_strip_deadline(OSP_WIRE_MSG_INFER_SHM, p, 7, 2, &dl, &rest, &n, err,
                                             sizeof err),
                     OSP_WIRE_EINVAL);
    assert_string_equal(err, "truncated deadline prefix on msg_type=6 (7 bytes, need 8)");
    /* the writers are the readers' inverse */
    uint8_t b[8];
    osp_wire_wr32(b, 0xa1b2c3d4u);
    assert_memory_equal(b, "\xd4\xc3\xb2\xa1", 4);
    assert_true(osp_wire_rd32(b) == 0xa1b2c3d4u);
    osp_wire_wr64(b, 0x0102030405060708ull);
    assert_memory_equal(b, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
    assert_true(osp_wire_rd64(b) == 0x0102030405060708ull);
}

/* ---- payloads ------------------------------------------------------------------------- */

static void test_payload_errors(void **s) {
    (void)s;
    uint8_t z[16] = {0};
    expect_err(1, z, 0, 1, "empty infer_jpeg payload", OSP_WIRE_ERR_PLAIN);
    for (size_t n = 0; n < 10; n++)
        expect_err(2, z, n, 1, "truncated infer_raw header", OSP_WIRE_ERR_PLAIN);
    for (size_t n = 0; n < 6; n++)
        expect_err(3, z, n, 1, "truncated infer_batch header", OSP_WIRE_ERR_PLAIN);
    for (size_t n = 0; n < 13; n++)
        expect_err(4, z, n, 1, "truncated cache_frame header", OSP_WIRE_ERR_PLAIN);
    for (size_t n = 0; n < 5; n++)
        expect_err(5, z, n, 1, "truncated infer_cached header", OSP_WIRE_ERR_PLAIN);
    expect_err(6, z, 3, 1, "unknown msg_type: 6", OSP_WIRE_ERR_PLAIN);
    expect_err(255, z, 0, 2, "unknown msg_type: 255", OSP_WIRE_ERR_PLAIN);
    /* infer_jpeg with only the model index: the decoder says the rest */
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(parse(1, (const uint8_t *)"\x04", 1, 1, &rq, err), 0);
    assert_int_equal(rq.u.jpeg.model_idx, 4);
    assert_int_equal(rq.u.jpeg.len, 0);
    /* infer_cached */
    bb_t b = {0};
    put8(&b, 9);
    put32(&b, 0xDEADBEEF);
    assert_int_equal(parse(5, b.b, b.n, 1, &rq, err), 0);
    assert_int_equal(rq.u.cached.model_idx, 9);
    assert_int_equal(rq.u.cached.frame_id, 0xDEADBEEF);
}

static void raw_payload(bb_t *b, uint8_t model, uint32_t w, uint32_t h, uint8_t fmt, size_t n) {
    put8(b, model);
    put32(b, w);
    put32(b, h);
    put8(b, fmt);
    for (size_t i = 0; i < n; i++) put8(b, (uint8_t)i);
}

static void test_infer_raw(void **s) {
    (void)s;
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    bb_t b = {0};
    raw_payload(&b, 1, 4, 3, 0, 36);
    assert_int_equal(parse(2, b.b, b.n, 1, &rq, err), 0);
    assert_int_equal(rq.u.raw.model_idx, 1);
    assert_int_equal(rq.u.raw.img.width, 4);
    assert_int_equal(rq.u.raw.img.height, 3);
    assert_int_equal(rq.u.raw.img.channels, 3);
    assert_int_equal(rq.u.raw.img.len, 36);
    assert_ptr_equal(rq.u.raw.img.pixels, b.b + 10);
    /* trailing bytes: accepted and ignored, as the seed did */
    b.n = 0;
    raw_payload(&b, 1, 4, 3, 1, 40);
    assert_int_equal(parse(2, b.b, b.n, 1, &rq, err), 0);
    assert_int_equal(rq.u.raw.img.fmt, OSP_WIRE_FMT_BGR);
    assert_int_equal(rq.u.raw.img.len, 36);
    b.n = 0;
    raw_payload(&b, 1, 4, 3, 2, 12);
    assert_int_equal(parse(2, b.b, b.n, 1, &rq, err), 0);
    assert_int_equal(rq.u.raw.img.channels, 1);
    assert_int_equal(rq.u.raw.img.len, 12);

    static const struct {
        uint32_t w, h;
        uint8_t fmt;
        size_t n;
        const char *err;
    } t[] = {
        {4, 3, 0, 35, "raw wrap failed: not enough image data"},
        {4, 3, 1, 0, "raw wrap failed: not enough image data"},
        {4, 3, 2, 11, "raw wrap failed: buffer is not large enough"},
        {4, 3, 5, 36, "raw wrap failed: unknown pixel format 5"},
        {4, 3, 3, 19, "raw wrap failed: buffer is not large enough"}, /* NV12 4x3 needs 20 */
        {4, 3, 255, 36, "raw wrap failed: unknown pixel format 255"},
        {0, 3, 0, 36, "raw wrap failed: width and height must be > 0"},
        {4, 0, 2, 36, "raw wrap failed: width and height must be > 0"},
        /* sizes that overflow 32 (or 64) bits when multiplied */
        {0x10000, 0x10000, 0, 64, "raw wrap failed: not enough image data"},
        {0x10000, 0x10000, 2, 64, "raw wrap failed: buffer is not large enough"},
        {0x7FFFFFFF, 0x7FFFFFFF, 0, 64, "raw wrap failed: not enough image data"},
        {0x80000000u, 1, 0, 64, "raw wrap failed: signed integer is greater than maximum"},
        {1, 0xFFFFFFFFu, 2, 64, "raw wrap failed: signed integer is greater than maximum"},
        {0xFFFFFFFFu, 0xFFFFFFFFu, 0, 64, "raw wrap failed: signed integer is greater than maximum"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        b.n = 0;
        raw_payload(&b, 0, t[i].w, t[i].h, t[i].fmt, t[i].n);
        expect_err(2, b.b, b.n, 1, t[i].err, OSP_WIRE_ERR_PLAIN);
        /* cache_frame words the same reasons its own way */
        bb_t c = {0};
        put32(&c, 77);
        put32(&c, t[i].w);
        put32(&c, t[i].h);
        put8(&c, t[i].fmt);
        putfill(&c, 1, t[i].n);
        char want[OSP_WIRE_ERRLEN];
        snprintf(want, sizeof want, "cache_frame wrap failed: %s", t[i].err + 17);
        expect_err(4, c.b, c.n, 2, want, OSP_WIRE_ERR_PLAIN);
    }
}

static void test_cache_frame(void **s) {
    (void)s;
    bb_t b = {0};
    put32(&b, 42);
    put32(&b, 2);
    put32(&b, 2);
    put8(&b, 2);
    putn(&b, "abcd", 4);
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    /* no deadline prefix at v2 */
    assert_int_equal(parse(4, b.b, b.n, 2, &rq, err), 0);
    assert_int_equal(rq.u.cache.frame_id, 42);
    assert_int_equal(rq.u.cache.img.len, 4);
    assert_memory_equal(rq.u.cache.img.pixels, "abcd", 4);
}

/* A valid batch: RGB 2x1, BGR 1x1 with 2 spare bytes, GRAY 3x2. */
static size_t batch_payload(bb_t *b, size_t *item_off, uint32_t *item_size) {
    static const struct {
        uint32_t w, h;
        uint8_t fmt;
        uint32_t size;
    } it[] = {{2, 1, 0, 6}, {1, 1, 1, 5}, {3, 2, 2, 6}};
    put8(b, 3);           /* model */
    put8(b, 3);           /* count */
    put32(b, 0x11223344); /* frame_id */
    for (int i = 0; i < 3; i++) {
        item_off[i] = b->n;
        item_size[i] = it[i].size;
        put32(b, it[i].w);
        put32(b, it[i].h);
        put8(b, it[i].fmt);
        put32(b, it[i].size);
        for (uint32_t k = 0; k < it[i].size; k++) put8(b, (uint8_t)(16 * i + k));
    }
    return 3;
}

static void test_batch_iterate(void **s) {
    (void)s;
    bb_t b = {0};
    size_t off[3];
    uint32_t size[3];
    batch_payload(&b, off, size);
    put8(&b, 0xEE); /* trailing bytes after the items: ignored */
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(parse(3, b.b, b.n, 1, &rq, err), 0);
    assert_int_equal(rq.u.batch.model_idx, 3);
    assert_int_equal(rq.u.batch.count, 3);
    assert_int_equal(rq.u.batch.frame_id, 0x11223344);
    osp_wire_batch_iter_t it;
    osp_wire_image_t img;
    osp_wire_batch_iter_init(&it, &rq.u.batch);
    static const uint32_t w[] = {2, 1, 3}, h[] = {1, 1, 2}, len[] = {6, 3, 6};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 1);
        assert_int_equal(img.width, w[i]);
        assert_int_equal(img.height, h[i]);
        assert_int_equal(img.fmt, i);
        assert_int_equal(img.len, len[i]);
        assert_ptr_equal(img.pixels, b.b + off[i] + 13);
        assert_int_equal(img.pixels[0], 16 * i);
    }
    assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 0);
    assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 0);
    /* the same at v2, behind a deadline */
    bb_t d = {0};
    put64(&d, 5);
    putn(&d, b.b, b.n);
    assert_int_equal(parse(3, d.b, d.n, 2, &rq, err), 0);
    assert_true(rq.deadline_ms == 5);
    assert_int_equal(rq.u.batch.count, 3);
}

/* Truncate a valid batch at every byte: the seed's error for each length. */
static void test_batch_truncated_everywhere(void **s) {
    (void)s;
    bb_t b = {0};
    size_t off[3];
    uint32_t size[3];
    batch_payload(&b, off, size);
    for (int version = 1; version <= 2; version++) {
        for (size_t len = 0; len <= b.n; len++) {
            bb_t p = {0};
            if (version == 2) put64(&p, 0);
            putn(&p, b.b, len);
            const char *want = NULL;
            osp_wire_err_shape_t shape = OSP_WIRE_ERR_RESULTS;
            if (len < 6) {
                want = "truncated infer_batch header";
                shape = OSP_WIRE_ERR_PLAIN;
            } else {
                for (int i = 0; i < 3 && !want; i++) {
                    if (len < off[i] + 13)
                        want = "truncated batch item header";
                    else if (len < off[i] + 13 + size[i])
                        want = "truncated batch item payload";
                }
            }
            osp_wire_request_t rq;
            char err[OSP_WIRE_ERRLEN];
            int rc = parse(3, p.b, p.n, version, &rq, err);
            if (!want) {
                assert_int_equal(rc, 0);
                continue;
            }
            assert_int_equal(rc, OSP_WIRE_EINVAL);
            assert_string_equal(err, want);
            assert_int_equal(rq.err_shape, shape);
        }
    }
}

static void test_batch_edges(void **s) {
    (void)s;
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    /* count 0: valid, no items (the seed answers {"results": []}) */
    bb_t b = {0};
    put8(&b, 0);
    put8(&b, 0);
    put32(&b, 0);
    assert_int_equal(parse(3, b.b, b.n, 1, &rq, err), 0);
    assert_int_equal(rq.u.batch.count, 0);
    osp_wire_batch_iter_t it;
    osp_wire_image_t img;
    osp_wire_batch_iter_init(&it, &rq.u.batch);
    assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 0);
    /* an item whose size is short of w*h*c */
    b.n = 0;
    put8(&b, 0);
    put8(&b, 2);
    put32(&b, 0);
    put32(&b, 2);
    put32(&b, 2);
    put8(&b, 2);
    put32(&b, 4);
    putn(&b, "abcd", 4);
    put32(&b, 2);
    put32(&b, 2);
    put8(&b, 0);
    put32(&b, 4); /* RGB 2x2 needs 12 */
    putn(&b, "abcd", 4);
    expect_err(3, b.b, b.n, 1, "raw wrap failed: not enough image data", OSP_WIRE_ERR_RESULTS);
    /* the iterator stops at the bad item and says so again if asked */
    osp_wire_batch_t bt = {.count = 2, .items = b.b + 6, .items_len = b.n - 6};
    osp_wire_batch_iter_init(&it, &bt);
    assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 1);
    for (int i = 0; i < 3; i++) {
        err[0] = '\0';
        assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), OSP_WIRE_EINVAL);
        assert_string_equal(err, "raw wrap failed: not enough image data");
    }
    /* a first item with a bad format masks a truncation after it */
    b.n = 0;
    put8(&b, 0);
    put8(&b, 2);
    put32(&b, 0);
    put32(&b, 1);
    put32(&b, 1);
    put8(&b, 9);
    put32(&b, 3);
    putn(&b, "abc", 3);
    put32(&b, 1);
    expect_err(3, b.b, b.n, 1, "raw wrap failed: unknown pixel format 9", OSP_WIRE_ERR_RESULTS);
    /* a size near 2^32 on a small payload */
    b.n = 0;
    put8(&b, 0);
    put8(&b, 1);
    put32(&b, 0);
    put32(&b, 0x10000);
    put32(&b, 0x10000);
    put8(&b, 0);
    put32(&b, 0xFFFFFFFFu);
    putfill(&b, 0, 64);
    expect_err(3, b.b, b.n, 1, "truncated batch item payload", OSP_WIRE_ERR_RESULTS);
    /* 255 one-pixel gray items */
    b.n = 0;
    put8(&b, 1);
    put8(&b, 255);
    put32(&b, 9);
    for (int i = 0; i < 255; i++) {
        put32(&b, 1);
        put32(&b, 1);
        put8(&b, 2);
        put32(&b, 1);
        put8(&b, (uint8_t)i);
    }
    assert_int_equal(parse(3, b.b, b.n, 1, &rq, err), 0);
    osp_wire_batch_iter_init(&it, &rq.u.batch);
    int n = 0;
    while (osp_wire_batch_next(&it, &img, err, sizeof err) == 1) {
        assert_int_equal(img.pixels[0], (uint8_t)n);
        n++;
    }
    assert_int_equal(n, 255);
}

/* ---- commands ------------------------------------------------------------------------ */

/* The command parser is osp_pyjson_parse (test_wire_pyjson.c) plus one rule
 * of its own: the value must be an object. Its errors pass through. */
static void test_command_parse(void **s) {
    (void)s;
    static const struct {
        const char *json, *err; /* err NULL: parses, and "cmd" is "load" */
    } t[] = {
        {"\xef\xbb\xbf {\"cmd\":\"x\",\"cmd\":\"load\"}\n", NULL},
        {"", "Expecting value: line 1 column 1 (char 0)"},
        {"{\"a\":\"\xff\"}", "'utf-8' codec can't decode byte 0xff in position 6: invalid start byte"},
        {"[1]", "command must be a JSON object"},
        {"\"status\"", "command must be a JSON object"},
        {"null", "command must be a JSON object"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        cJSON *c = NULL;
        char err[OSP_WIRE_ERRLEN] = "";
        int rc = osp_wire_command_parse((const uint8_t *)t[i].json, strlen(t[i].json), &c, err,
                                        sizeof err);
        if (!t[i].err) {
            assert_int_equal(rc, 0);
            assert_string_equal(cJSON_GetObjectItem(c, "cmd")->valuestring, "load");
            cJSON_Delete(c);
            continue;
        }
        assert_int_equal(rc, OSP_WIRE_EINVAL);
        assert_null(c);
        if (strcmp(err, t[i].err)) fail_msg("%s: got '%s'", t[i].json, err);
    }
}

/* ---- replies --------------------------------------------------------------------------- */

static void test_reply_frames(void **s) {
    (void)s;
    osp_jw_t w = {0};
    assert_int_equal(osp_wire_reply_error(&w, 0x01020304, OSP_WIRE_ERR_PLAIN, "x"), 0);
    const char *j1 = "{\"error\": \"x\"}";
    assert_int_equal(w.len, 8 + strlen(j1));
    assert_int_equal((uint8_t)w.buf[0], 4 + strlen(j1));
    assert_memory_equal(w.buf + 1, "\x00\x00\x00\x04\x03\x02\x01", 7);
    assert_memory_equal(w.buf + 8, j1, strlen(j1));
    /* a second frame appended after the first */
    size_t at = w.len;
    assert_int_equal(osp_wire_reply_dropped(&w, 9, OSP_WIRE_SHED_DEADLINE), 0);
    const char *j2 = "{\"kind\": \"detections\", \"detections\": [], \"inferenceMs\": 0, "
                     "\"dropped\": true, \"shedReason\": \"deadline-expired\"}";
    uint8_t hdr[8];
    assert_int_equal(osp_wire_reply_header(hdr, 9, strlen(j2)), 0);
    assert_memory_equal(w.buf + at, hdr, 8);
    assert_memory_equal(w.buf + at + 8, j2, strlen(j2));
    assert_int_equal(w.len, at + 8 + strlen(j2));
    /* the event channel */
    osp_jw_reset(&w);
    osp_wire_late_t e = {.index = 2, .model_id = "yolo", .ok = 0, .elapsed_ms = 130512, .error = "boom"};
    assert_int_equal(osp_wire_reply_event_late(&w, &e), 0);
    assert_memory_equal(w.buf + 4, "\xff\xff\xff\xff", 4);
    assert_string_equal(w.buf + 8, "{\"event\": \"compile-finished-late\", \"index\": 2, "
                                   "\"modelId\": \"yolo\", \"ok\": false, \"elapsedMs\": 130512, "
                                   "\"error\": \"boom\"}");
    assert_int_equal(osp_wire_reply_header(hdr, 1, (size_t)UINT32_MAX - 3), OSP_WIRE_ETOOBIG);
    assert_int_equal(osp_wire_reply_header(hdr, 1, (size_t)UINT32_MAX - 4), 0);
    assert_memory_equal(hdr, "\xff\xff\xff\xff\x01\x00\x00\x00", 8);
    osp_jw_free(&w);
}

static void expect_json(osp_jw_t *w, const char *want) {
    assert_false(w->oom);
    assert_string_equal(w->buf, want);
    osp_jw_reset(w);
}

static void test_reply_bodies(void **s) {
    (void)s;
    osp_jw_t w = {0};
    osp_wire_json_error_shaped(&w, OSP_WIRE_ERR_RESULTS, "truncated batch item header");
    expect_json(&w, "{\"error\": \"truncated batch item header\", \"results\": []}");
    osp_wire_json_infer_error(&w, "boom");
    expect_json(&w, "{\"error\": \"boom\", \"kind\": \"detections\", \"detections\": [], "
                    "\"inferenceMs\": 0}");
    osp_wire_json_cmd_error(&w, "unknown", "Expecting value: line 1 column 1 (char 0)");
    expect_json(&w, "{\"cmd\": \"unknown\", \"status\": \"error\", "
                    "\"error\": \"Expecting value: line 1 column 1 (char 0)\"}");
    osp_wire_json_dropped(&w, OSP_WIRE_SHED_QUEUE_FULL);
    expect_json(&w, "{\"kind\": \"detections\", \"detections\": [], \"inferenceMs\": 0, "
                    "\"dropped\": true, \"shedReason\": \"queue-full\"}");
    osp_wire_json_dropped(&w, OSP_WIRE_SHED_BARE);
    expect_json(&w, "{\"kind\": \"detections\", \"detections\": [], \"inferenceMs\": 0, "
                    "\"dropped\": true}");
    osp_wire_json_dropped_batch(&w, OSP_WIRE_SHED_DEADLINE, 2);
    expect_json(&w, "{\"results\": [{\"kind\": \"detections\", \"detections\": [], \"inferenceMs\": 0, "
                    "\"dropped\": true, \"shedReason\": \"deadline-expired\"}, {\"kind\": \"detections\", "
                    "\"detections\": [], \"inferenceMs\": 0, \"dropped\": true, "
                    "\"shedReason\": \"deadline-expired\"}]}");
    osp_wire_json_dropped_batch(&w, OSP_WIRE_SHED_DEADLINE, 0);
    expect_json(&w, "{\"results\": []}");
    osp_wire_json_not_loaded(&w, OSP_WIRE_MSG_INFER_RAW, 3);
    expect_json(&w, "{\"error\": \"Model 3 not loaded\", \"kind\": \"detections\", \"detections\": [], "
                    "\"inferenceMs\": 0}");
    osp_wire_json_not_loaded(&w, OSP_WIRE_MSG_INFER_BATCH, 0);
    expect_json(&w, "{\"error\": \"Model 0 not loaded\", \"results\": []}");
    osp_wire_json_not_loaded(&w, OSP_WIRE_MSG_INFER_CACHED, 255);
    expect_json(&w, "{\"error\": \"model 255 not loaded\"}");
    osp_wire_json_not_cached(&w, 4294967295u);
    expect_json(&w, "{\"error\": \"frame 4294967295 not in cache\"}");
    osp_wire_json_cached(&w, 7, 1920, 1080);
    expect_json(&w, "{\"status\": \"cached\", \"frameId\": 7, \"width\": 1920, \"height\": 1080}");
    osp_wire_ready_t r = {.models = 1,
                          .total = 2,
                          .startup_ms = 1234,
                          .runtime = "onnxruntime",
                          .workers = 2,
                          .protocol_version = OSP_WIRE_VERSION};
    osp_wire_json_ready(&w, &r);
    expect_json(&w, "{\"status\": \"ready\", \"models\": 1, \"total\": 2, \"startupMs\": 1234, "
                    "\"runtime\": \"onnxruntime\", \"workers\": 2, \"protocolVersion\": 2}");
    osp_wire_late_t e = {.index = 0, .model_id = "m", .ok = 1, .elapsed_ms = 5};
    osp_wire_json_late(&w, &e);
    expect_json(&w, "{\"event\": \"compile-finished-late\", \"index\": 0, \"modelId\": \"m\", "
                    "\"ok\": true, \"elapsedMs\": 5}");
    osp_wire_json_error(&w, "a\"b\n");
    expect_json(&w, "{\"error\": \"a\\\"b\\n\"}");
    osp_jw_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_prefixes),
        cmocka_unit_test(test_scan_short_total_len),
        cmocka_unit_test(test_scan_too_large),
        cmocka_unit_test(test_scan_byte_by_byte),
        cmocka_unit_test(test_scan_splits),
        cmocka_unit_test(test_scan_stream_too_large),
        cmocka_unit_test(test_scan_eof_partial),
        cmocka_unit_test(test_negotiate_table),
        cmocka_unit_test(test_hello_defaults),
        cmocka_unit_test(test_hello_values),
        cmocka_unit_test(test_hello_errors),
        cmocka_unit_test(test_deadline_per_type),
        cmocka_unit_test(test_deadline_truncated),
        cmocka_unit_test(test_deadline_strip_extension),
        cmocka_unit_test(test_payload_errors),
        cmocka_unit_test(test_infer_raw),
        cmocka_unit_test(test_cache_frame),
        cmocka_unit_test(test_batch_iterate),
        cmocka_unit_test(test_batch_truncated_everywhere),
        cmocka_unit_test(test_batch_edges),
        cmocka_unit_test(test_command_parse),
        cmocka_unit_test(test_reply_frames),
        cmocka_unit_test(test_reply_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
