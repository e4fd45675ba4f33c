/*
 * libFuzzer target for src/wire/frame.c: the frame reader fed in arbitrary
 * splits (checked against one whole-buffer scan), every payload parser and
 * the batch iterator at versions 1 and 2, the handshake and command JSON
 * parsers, and the reply encoders (whose output must parse back as JSON).
 * Deterministic: every choice comes from the input. See README.md.
 *
 * Input: [u8 ctl][u8 ctl2][stream bytes]
 *   ctl bit 0:    use the default frame cap, else a small one from ctl2
 *   ctl bit 1:    feed through space/commit instead of feed
 *   ctl bit 2:    also parse the whole stream as a startup config / command
 *   ctl bits 3-7, ctl2: seed of the chunk sizes
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/frame.h"

#define MAX_FRAMES 2048

#define CHECK(c)                                                                             \
    do {                                                                                     \
        if (!(c)) __builtin_trap();                                                          \
    } while (0)

typedef struct {
    size_t off, len; /* the frame within the stream */
    uint32_t req_id;
    uint8_t type;
} ref_t;

/* A copy the exact size of the bytes, so the sanitizer sees any overread. */
static uint8_t *dup(const uint8_t *p, size_t n) {
    uint8_t *q = malloc(n ? n : 1);
    CHECK(q);
    if (n) memcpy(q, p, n);
    return q;
}

static int inside(const uint8_t *p, size_t n, const uint8_t *lo, size_t len) {
    return p >= lo && n <= len && (size_t)(p - lo) <= len - n;
}

/* A reply frame at w->buf + at: its header right, its body JSON that
 * json.loads would accept. */
static void check_frame(osp_jw_t *w, size_t at, uint32_t req_id) {
    uint8_t hdr[8];
    CHECK(osp_wire_reply_header(hdr, req_id, w->len - at - 8) == 0);
    CHECK(memcmp(hdr, w->buf + at, 8) == 0);
    cJSON *j = NULL;
    char err[OSP_WIRE_ERRLEN];
    uint8_t *body = dup((const uint8_t *)w->buf + at + 8, w->len - at - 8);
    CHECK(osp_wire_command_parse(body, w->len - at - 8, &j, err, sizeof err) == 0);
    cJSON_Delete(j);
    free(body);
}

static void check_reply(osp_jw_t *w, size_t at, uint32_t req_id) {
    CHECK(osp_wire_reply_end(w, at, req_id) == 0);
    check_frame(w, at, req_id);
}

static void check_image(const osp_wire_image_t *img, const uint8_t *p, size_t n) {
    CHECK(img->fmt <= OSP_WIRE_FMT_I420);
    int yuv = img->fmt == OSP_WIRE_FMT_NV12 || img->fmt == OSP_WIRE_FMT_I420;
    CHECK(img->channels == (img->fmt <= OSP_WIRE_FMT_BGR ? 3 : 1));
    CHECK(img->width > 0 && img->height > 0);
    uint64_t chroma = yuv ? 2 * (((uint64_t)img->width + 1) / 2) * (((uint64_t)img->height + 1) / 2) : 0;
    CHECK((uint64_t)img->width * img->height * img->channels + chroma == img->len);
    CHECK(inside(img->pixels, img->len, p, n));
    volatile uint8_t sink = 0;
    if (img->len) sink ^= img->pixels[0] ^ img->pixels[img->len - 1];
    (void)sink;
}

static void parse_payload(const ref_t *r, const uint8_t *stream, int version, osp_jw_t *w) {
    size_t plen = r->len - 9;
    uint8_t *p = dup(stream + r->off + 9, plen);
    osp_wire_frame_t f = {.total_len = (uint32_t)(r->len - 4), .req_id = r->req_id,
                          .msg_type = r->type, .payload = p, .payload_len = plen,
                          .frame_len = r->len};
    osp_wire_request_t rq;
    char err[OSP_WIRE_ERRLEN];
    err[0] = '\0';
    int rc = osp_wire_request_parse(&f, version, &rq, err, sizeof err);
    size_t at = osp_wire_reply_begin(w);
    if (rc) {
        CHECK(rc == OSP_WIRE_EINVAL && err[0]);
        osp_wire_json_error_shaped(w, rq.err_shape, err);
        check_reply(w, at, rq.req_id);
        free(p);
        return;
    }
    CHECK(inside(rq.body, rq.body_len, p, plen));
    CHECK(rq.deadline_ms == 0 || (version >= 2 && osp_wire_sheddable(rq.msg_type)));
    switch (rq.msg_type) {
    case OSP_WIRE_MSG_COMMAND: {
        cJSON *c = NULL;
        uint8_t *json = dup(rq.u.command.json, rq.u.command.len);
        rc = osp_wire_command_parse(json, rq.u.command.len, &c, err, sizeof err);
        CHECK(rc == 0 ? c != NULL : c == NULL && err[0]);
        if (rc)
            osp_wire_json_cmd_error(w, "unknown", err);
        else
            osp_wire_json_cmd_error(w, "x", "y");
        cJSON_Delete(c);
        free(json);
        break;
    }
    case OSP_WIRE_MSG_INFER_JPEG:
        CHECK(inside(rq.u.jpeg.data, rq.u.jpeg.len, p, plen));
        osp_wire_json_not_loaded(w, rq.msg_type, rq.u.jpeg.model_idx);
        break;
    case OSP_WIRE_MSG_INFER_RAW:
        check_image(&rq.u.raw.img, p, plen);
        osp_wire_json_dropped(w, OSP_WIRE_SHED_QUEUE_FULL);
        break;
    case OSP_WIRE_MSG_INFER_BATCH: {
        osp_wire_batch_iter_t it;
        osp_wire_image_t img;
        unsigned n = 0;
        osp_wire_batch_iter_init(&it, &rq.u.batch);
        while ((rc = osp_wire_batch_next(&it, &img, err, sizeof err)) == 1) {
            check_image(&img, p, plen);
            n++;
        }
        CHECK(rc == 0 && n == rq.u.batch.count);
        osp_wire_json_dropped_batch(w, OSP_WIRE_SHED_DEADLINE, n);
        break;
    }
    case OSP_WIRE_MSG_CACHE_FRAME:
        check_image(&rq.u.cache.img, p, plen);
        osp_wire_json_cached(w, rq.u.cache.frame_id, rq.u.cache.img.width,
                             rq.u.cache.img.height);
        break;
    case OSP_WIRE_MSG_INFER_CACHED:
        osp_wire_json_not_cached(w, rq.u.cached.frame_id);
        break;
    default:
        CHECK(0);
    }
    check_reply(w, at, rq.req_id);
    free(p);
}

static void parse_hello(const uint8_t *data, size_t n, uint8_t type, osp_jw_t *w) {
    uint8_t *p = dup(data, n);
    osp_wire_hello_t h;
    char err[OSP_WIRE_ERRLEN];
    err[0] = '\0';
    int rc = osp_wire_hello_parse(type, p, n, OSP_WIRE_VERSION, &h, err, sizeof err);
    if (rc == 0) {
        CHECK(h.wire_version >= 1 && h.wire_version <= OSP_WIRE_VERSION);
        CHECK(h.device && h.window_ms >= 0 && h.max_batch_size >= 1);
        CHECK(h.model_load_timeout_ms > 0);
        size_t at = osp_wire_reply_begin(w);
        osp_wire_ready_t r = {.models = 0, .total = h.models ? cJSON_GetArraySize(h.models) : 0,
                              .runtime = h.runtime ? h.runtime : "coreml",
                              .workers = h.concurrency < 1 ? 1 : h.concurrency,
                              .protocol_version = OSP_WIRE_VERSION};
        osp_wire_json_ready(w, &r);
        check_reply(w, at, 0);
        osp_wire_hello_free(&h);
    } else {
        CHECK(h.root == NULL && err[0]);
    }
    cJSON *c = NULL;
    rc = osp_wire_command_parse(p, n, &c, err, sizeof err);
    CHECK(rc == 0 ? c != NULL : c == NULL);
    cJSON_Delete(c);
    free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    uint8_t ctl = data[0], ctl2 = data[1];
    const uint8_t *s = data + 2;
    size_t n = size - 2;
    uint32_t cap = (ctl & 1) ? 0 : 5u + ctl2 * 41u;
    osp_jw_t w = {0};

    if (ctl & 4) parse_hello(s, n, 0, &w);

    /* the reference: one scan over the whole stream */
    static ref_t ref[MAX_FRAMES];
    size_t nref = 0, off = 0, need;
    int end_rc = 0;
    osp_wire_frame_t f, bad = {0};
    while (nref < MAX_FRAMES) {
        int rc = osp_wire_scan(s + off, n - off, cap, &f, &need);
        if (rc != 1) {
            end_rc = rc;
            bad = f;
            CHECK(rc < 0 || need >= 1);
            break;
        }
        CHECK(f.frame_len >= 9 && f.frame_len <= n - off);
        CHECK(f.payload == s + off + 9 && f.payload_len == f.frame_len - 9);
        ref[nref++] = (ref_t){off, f.frame_len, f.req_id, f.msg_type};
        off += f.frame_len;
    }

    /* the reader, fed in chunks chosen by the input */
    osp_wire_reader_t r;
    osp_wire_reader_init(&r, cap);
    uint32_t x = (uint32_t)ctl << 8 | ctl2;
    size_t fed = 0, got = 0;
    int rc = 0;
    while (rc >= 0 && got < nref) {
        if (fed < n) {
            x = x * 1103515245u + 12345u;
            size_t k = 1 + (x >> 16) % ((x & 0x100) ? 7 : 1500);
            if (k > n - fed) k = n - fed;
            if (ctl & 2) {
                size_t room;
                uint8_t *dst = osp_wire_reader_space(&r, (x >> 4) & 0xfff, &room);
                CHECK(dst && room >= 1);
                if (k > room) k = room;
                memcpy(dst, s + fed, k);
                osp_wire_reader_commit(&r, k);
            } else {
                CHECK(osp_wire_reader_feed(&r, s + fed, k) == 0);
            }
            fed += k;
        }
        while (got < nref && (rc = osp_wire_reader_next(&r, &f)) == 1) {
            const ref_t *e = &ref[got++];
            CHECK(f.frame_len == e->len && f.req_id == e->req_id && f.msg_type == e->type);
            CHECK(memcmp(f.payload, s + e->off + 9, e->len - 9) == 0);
        }
        if (fed == n && rc == 0 && got < nref) CHECK(0); /* all fed, a frame missing */
    }
    CHECK(got == nref && rc >= 0);
    if (nref < MAX_FRAMES) {
        /* what is left ends the same way for both */
        if (fed < n) CHECK(osp_wire_reader_feed(&r, s + fed, n - fed) == 0);
        rc = osp_wire_reader_next(&r, &f);
        CHECK(rc == end_rc);
        if (rc < 0) {
            CHECK(f.req_id == bad.req_id && f.total_len == bad.total_len);
            size_t at = osp_wire_reply_begin(&w);
            osp_wire_json_too_large(&w, f.total_len, cap);
            check_reply(&w, at, f.req_id);
            /* sticky until reset; after it the same bytes read the same way */
            size_t room;
            CHECK(osp_wire_reader_next(&r, &f) == rc && f.req_id == bad.req_id);
            CHECK(osp_wire_reader_space(&r, 1, &room) == NULL && room == 0);
            CHECK(osp_wire_reader_feed(&r, s, 1) == rc);
            osp_wire_reader_reset(&r);
            CHECK(osp_wire_reader_feed(&r, s, n) == 0);
            for (size_t i = 0; i < nref; i++) CHECK(osp_wire_reader_next(&r, &f) == 1);
            CHECK(osp_wire_reader_next(&r, &f) == rc);
        } else {
            CHECK(osp_wire_reader_buffered(&r) == n - off);
        }
    }
    osp_wire_reader_free(&r);

    /* every frame through every parser, at both versions */
    for (size_t i = 0; i < nref; i++) {
        osp_jw_reset(&w);
        parse_payload(&ref[i], s, 1, &w);
        parse_payload(&ref[i], s, 2, &w);
        if (i == 0) parse_hello(s + ref[i].off + 9, ref[i].len - 9, ref[i].type, &w);
    }
    /* peer bytes as reply text (an error naming what it got): still JSON */
    char text[96];
    size_t tn = n < sizeof text - 1 ? n : sizeof text - 1;
    memcpy(text, s, tn);
    text[tn] = '\0';
    osp_jw_reset(&w);
    size_t at = osp_wire_reply_begin(&w);
    osp_wire_json_infer_error(&w, text);
    check_reply(&w, at, 1);
    osp_wire_late_t late = {.index = ctl, .model_id = text, .ok = ctl2 & 1,
                            .elapsed_ms = (int64_t)n, .error = (ctl2 & 2) ? text : NULL};
    at = osp_wire_reply_begin(&w);
    osp_wire_json_late(&w, &late);
    check_reply(&w, at, OSP_WIRE_EVENT_REQ_ID);
    CHECK(memcmp(w.buf + at + 4, "\xff\xff\xff\xff", 4) == 0);
    /* the whole-frame shortcuts, appended to the same buffer */
    at = w.len;
    CHECK(osp_wire_reply_error(&w, 2, ctl & 8 ? OSP_WIRE_ERR_RESULTS : OSP_WIRE_ERR_PLAIN,
                               text) == 0);
    check_frame(&w, at, 2);
    at = w.len;
    CHECK(osp_wire_reply_dropped(&w, 3, (osp_wire_shed_t)(ctl2 % 3)) == 0);
    check_frame(&w, at, 3);
    at = w.len;
    CHECK(osp_wire_reply_event_late(&w, &late) == 0);
    check_frame(&w, at, OSP_WIRE_EVENT_REQ_ID);
    osp_jw_free(&w);
    return 0;
}
