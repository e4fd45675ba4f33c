/*
 * libFuzzer target for src/wire/ (frame.c, peek.c, encode.c): the stream
 * read as ospreyd reads it, osp_wire_scan over a staging buffer fed in
 * arbitrary splits (checked against one whole-buffer scan),
 * every payload parser and the batch iterator at versions 1 and 2, the
 * infer_raw peek at every prefix length (as a server has a frame after a
 * partial read), the infer_shm and stream_push parsers, the request
 * encoders (what the parsers read must encode back to the same bytes), the
 * handshake and command JSON parsers, and the reply encoders (whose output
 * must parse back as JSON). fuzz_json.c drives the JSON reader harder.
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

#include "wire/encode.h"
#include "wire/frame.h"
#include "wire/peek.h"
#include "check.h"

#define MAX_FRAMES 2048

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
    uint64_t chroma = yuv ? 2 * (((uint64_t)img->width + 1) / 2) * (((uint64_t)img->height + 1) / 2)
                          : 0;
    CHECK((uint64_t)img->width * img->height * img->channels + chroma == img->len);
    CHECK(inside(img->pixels, img->len, p, n));
    volatile uint8_t sink = 0;
    if (img->len) sink ^= img->pixels[0] ^ img->pixels[img->len - 1];
    (void)sink;
}

static void parse_payload(const ref_t *r, const uint8_t *stream, int version, osp_jw_t *w) {
    size_t plen = r->len - 9;
    uint8_t *p = dup(stream + r->off + 9, plen);
    osp_wire_frame_t f = {.total_len = (uint32_t)(r->len - 4),
                          .req_id = r->req_id,
                          .msg_type = r->type,
                          .payload = p,
                          .payload_len = plen,
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
        osp_wire_json_cached(w, rq.u.cache.frame_id, rq.u.cache.img.width, rq.u.cache.img.height);
        break;
    case OSP_WIRE_MSG_INFER_CACHED: osp_wire_json_not_cached(w, rq.u.cached.frame_id); break;
    default: CHECK(0);
    }
    check_reply(w, at, rq.req_id);
    free(p);
}

/* The infer_raw peek over the first `avail` bytes of the frame, given in
 * a copy of exactly that size. */
static int peek_prefix(const uint8_t *fr, size_t avail, size_t len, int version,
                       osp_wire_raw_head_t *h, size_t *need, char *err) {
    uint8_t *p = dup(fr, avail);
    err[0] = '\0';
    int rc = osp_wire_raw_peek(p, avail, len, version, h, need, err, OSP_WIRE_ERRLEN);
    if (rc == 1) CHECK(h->pixel_off <= avail && h->img.pixels == p + h->pixel_off);
    free(p);
    return rc;
}

/* The peek agrees with the whole-frame parser, and every shorter prefix
 * either asks for more bytes (never past the header) or already gives the
 * whole frame's answer. What it read encodes back to the frame's header. */
static void check_peek(const ref_t *r, const uint8_t *stream, int version) {
    const uint8_t *fr = stream + r->off;
    size_t len = r->len;
    osp_wire_frame_t f = {.total_len = osp_wire_rd32(fr),
                          .req_id = r->req_id,
                          .msg_type = r->type,
                          .payload = fr + 9,
                          .payload_len = len - 9,
                          .frame_len = len};
    osp_wire_request_t rq;
    osp_wire_raw_head_t whole, h;
    char perr[OSP_WIRE_ERRLEN], err[OSP_WIRE_ERRLEN];
    size_t need;
    int prc = osp_wire_request_parse(&f, version, &rq, perr, sizeof perr);
    int wrc = peek_prefix(fr, len, len, version, &whole, &need, err);
    if (r->type != OSP_WIRE_MSG_INFER_RAW) {
        CHECK(wrc == OSP_WIRE_EINVAL && strncmp(err, "not an infer_raw frame", 22) == 0);
        return;
    }
    CHECK(wrc == (prc == 0 ? 1 : OSP_WIRE_EINVAL));
    if (wrc == 1) {
        CHECK(whole.req_id == rq.req_id && whole.deadline_ms == rq.deadline_ms);
        CHECK(whole.model_idx == rq.u.raw.model_idx && whole.img.len == rq.u.raw.img.len);
        CHECK(whole.img.width == rq.u.raw.img.width && whole.img.fmt == rq.u.raw.img.fmt);
        CHECK(rq.u.raw.img.pixels == fr + whole.pixel_off);
        uint8_t enc[OSP_WIRE_HEAD_MAX];
        osp_wire_req_t er = {.req_id = whole.req_id,
                             .version = version,
                             .deadline_ms = whole.deadline_ms};
        size_t n = osp_wire_encode_raw(enc, sizeof enc, &er, whole.model_idx, whole.img.width,
                                       whole.img.height, whole.img.fmt, NULL, len - whole.pixel_off);
        CHECK(n == whole.pixel_off && memcmp(enc, fr, n) == 0);
    } else {
        CHECK(strcmp(err, perr) == 0);
    }
    /* Every prefix. Up to 40 bytes each in a copy of exactly that size (the
     * header is at most 27: an overread shows); past that, one copy of the
     * whole frame serves, as the answer must no longer change. */
    uint8_t *all = dup(fr, len);
    for (size_t avail = 0; avail <= len; avail++) {
        int rc;
        if (avail <= 40) {
            rc = peek_prefix(fr, avail, len, version, &h, &need, err);
        } else {
            err[0] = '\0';
            rc = osp_wire_raw_peek(all, avail, len, version, &h, &need, err, sizeof err);
        }
        if (rc == 0) {
            CHECK(need >= 1 && avail + need <= 27);
            continue;
        }
        CHECK(rc == wrc);
        if (rc == 1)
            CHECK(h.pixel_off == whole.pixel_off && h.img.len == whole.img.len &&
                  h.model_idx == whole.model_idx && h.deadline_ms == whole.deadline_ms);
        else
            CHECK(strcmp(err, perr) == 0);
    }
    free(all);
}

/* An encoded frame and the frame it was read from: the same req_id and
 * payload bytes (the type may differ: every payload is read as each
 * extension). */
static int same_body(const uint8_t *enc, const uint8_t *fr, size_t n) {
    return memcmp(enc + 4, fr + 4, 4) == 0 && memcmp(enc + 9, fr + 9, n - 9) == 0;
}

/* Any payload read as infer_shm (checked against a region size taken from
 * the input) and as stream_push; what parses encodes back to the same
 * bytes. */
static void check_extensions(const ref_t *r, const uint8_t *stream, int version, uint64_t region_seed) {
    const uint8_t *fr = stream + r->off;
    size_t plen = r->len - 9;
    uint8_t *p = dup(fr + 9, plen);
    char err[OSP_WIRE_ERRLEN] = "";
    osp_wire_shm_t m;
    int rc = osp_wire_shm_parse(p, plen, version, &m, err, sizeof err);
    CHECK(rc == 0 || (rc == OSP_WIRE_EINVAL && err[0]));
    if (rc == 0) {
        size_t prefix = version >= 2 ? 8 : 0;
        uint8_t enc[OSP_WIRE_HEAD_MAX];
        osp_wire_req_t er = {.req_id = r->req_id, .version = version, .deadline_ms = m.deadline_ms};
        size_t n = osp_wire_encode_shm(enc, sizeof enc, &er, &m);
        CHECK(n == 9 + prefix + OSP_WIRE_SHM_HEADER);
        CHECK(same_body(enc, fr, n));
        uint32_t stride = m.stride;
        size_t region = (size_t)(region_seed % 3 == 0 ? region_seed : region_seed >> 20);
        rc = osp_wire_shm_check(&m, region, 16384, err, sizeof err);
        CHECK(rc == 0 || (rc == OSP_WIRE_EINVAL && err[0]));
        if (rc == 0) {
            uint64_t row = (uint64_t)m.width * (m.fmt <= OSP_WIRE_FMT_BGR ? 3 : 1);
            CHECK(m.width >= 1 && m.width <= 16384 && m.height >= 1 && m.height <= 16384);
            CHECK(m.fmt <= OSP_WIRE_FMT_I420 && m.stride >= m.width && m.stride >= row / 3);
            CHECK(stride == 0 || m.stride == stride);
            CHECK(m.len > 0 && m.offset <= region && m.len <= region - m.offset);
            CHECK(m.len >= (uint64_t)m.stride * (m.height - 1) + row || m.fmt >= OSP_WIRE_FMT_NV12);
        }
    }
    osp_wire_push_t sp;
    rc = osp_wire_push_parse(p, plen, &sp, err, sizeof err);
    CHECK(rc == (plen >= 4 ? 0 : OSP_WIRE_EINVAL));
    if (rc == 0) {
        CHECK(inside(sp.features, sp.len, p, plen) && sp.len == plen - 4);
        CHECK(osp_wire_push_check(&sp, (int)(sp.len / 4), err, sizeof err) ==
              (sp.len % 4 ? OSP_WIRE_EINVAL : 0));
        CHECK(osp_wire_push_check(&sp, (int)(sp.len / 4) + 1, err, sizeof err) == OSP_WIRE_EINVAL);
        uint8_t *enc = malloc(r->len);
        CHECK(enc);
        osp_wire_req_t er = {.req_id = r->req_id, .version = version};
        CHECK(osp_wire_encode_push(enc, r->len, &er, sp.stream_id, sp.features, sp.len) == r->len);
        CHECK(same_body(enc, fr, r->len));
        free(enc);
    }
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
        osp_wire_ready_t r = {.models = 0,
                              .total = h.models ? cJSON_GetArraySize(h.models) : 0,
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
        CHECK(f.frame_len >= 9 && f.frame_len <= n - off && f.frame_len == 4 + (size_t)f.total_len);
        CHECK(f.payload == s + off + 9 && f.payload_len == f.frame_len - 9);
        ref[nref++] = (ref_t){off, f.frame_len, f.req_id, f.msg_type};
        off += f.frame_len;
    }

    /* the stream read the way ospreyd reads it (src/server/pipe/conn.c): reads
     * of sizes chosen by the input into a staging buffer, whole frames
     * taken off its front with osp_wire_scan, the rest kept */
    static uint8_t stage[1 << 20];
    size_t have = 0, fed = 0, got = 0, from;
    uint32_t x = (uint32_t)ctl << 8 | ctl2;
    int rc = 0;
    while (n <= sizeof stage && got < nref) {
        CHECK(fed < n); /* all read, a frame missing */
        x = x * 1103515245u + 12345u;
        size_t k = 1 + (x >> 16) % ((x & 0x100) ? 7 : 1500);
        if (k > n - fed) k = n - fed;
        memcpy(stage + have, s + fed, k);
        have += k;
        fed += k;
        from = 0;
        while (got < nref && (rc = osp_wire_scan(stage + from, have - from, cap, &f, &need)) == 1) {
            const ref_t *e = &ref[got++];
            CHECK(f.frame_len == e->len && f.req_id == e->req_id && f.msg_type == e->type);
            CHECK(memcmp(f.payload, s + e->off + 9, e->len - 9) == 0);
            from += f.frame_len;
        }
        CHECK(rc >= 0 || got == nref);
        memmove(stage, stage + from, have - from);
        have -= from;
    }
    if (nref < MAX_FRAMES) {
        /* what is left ends the same way, read whole */
        rc = osp_wire_scan(s + off, n - off, cap, &f, &need);
        CHECK(rc == end_rc);
        if (rc < 0) {
            CHECK(f.req_id == bad.req_id && f.total_len == bad.total_len);
            CHECK(rc == OSP_WIRE_ETOOBIG || rc == OSP_WIRE_ESHORT);
            CHECK(rc != OSP_WIRE_ESHORT || f.total_len < 5);
            size_t at2 = osp_wire_reply_begin(&w);
            if (rc == OSP_WIRE_ESHORT)
                osp_wire_json_too_short(&w, f.total_len);
            else
                osp_wire_json_too_large(&w, f.total_len, cap);
            check_reply(&w, at2, f.req_id);
        }
    }

    /* every frame through every parser, at both versions */
    for (size_t i = 0; i < nref; i++) {
        osp_jw_reset(&w);
        parse_payload(&ref[i], s, 1, &w);
        parse_payload(&ref[i], s, 2, &w);
        for (int version = 1; version <= 2; version++) {
            check_peek(&ref[i], s, version);
            check_extensions(&ref[i], s, version, (uint64_t)ctl2 << 56 | ref[i].len * 977u);
        }
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
    osp_wire_late_t late = {.index = ctl,
                            .model_id = text,
                            .ok = ctl2 & 1,
                            .elapsed_ms = (int64_t)n,
                            .error = (ctl2 & 2) ? text : NULL};
    at = osp_wire_reply_begin(&w);
    osp_wire_json_late(&w, &late);
    check_reply(&w, at, OSP_WIRE_EVENT_REQ_ID);
    CHECK(memcmp(w.buf + at + 4, "\xff\xff\xff\xff", 4) == 0);
    /* the whole-frame shortcuts, appended to the same buffer */
    at = w.len;
    CHECK(osp_wire_reply_error(&w, 2, ctl & 8 ? OSP_WIRE_ERR_RESULTS : OSP_WIRE_ERR_PLAIN, text) == 0);
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
