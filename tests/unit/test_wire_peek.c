/* wire/peek: the infer_raw header from a frame's first bytes, infer_shm and
 * stream_push. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "wire/peek.h"

/* An infer_raw frame at f: w x h of fmt, `pixels` bytes after the header
 * (filled with a pattern), `extra` more; returns its length. */
static size_t raw_frame(uint8_t *f, int version, uint32_t req_id, uint64_t deadline, uint8_t model,
                        uint32_t w, uint32_t h, uint8_t fmt, size_t pixels) {
    size_t at = 9;
    if (version >= 2) {
        osp_wire_wr64(f + at, deadline);
        at += 8;
    }
    f[at] = model;
    osp_wire_wr32(f + at + 1, w);
    osp_wire_wr32(f + at + 5, h);
    f[at + 9] = fmt;
    at += 10;
    for (size_t i = 0; i < pixels; i++) f[at + i] = (uint8_t)(i * 7);
    at += pixels;
    osp_wire_wr32(f, (uint32_t)(at - 4));
    osp_wire_wr32(f + 4, req_id);
    f[8] = OSP_WIRE_MSG_INFER_RAW;
    return at;
}

/* Every prefix of a good frame: "need more" up to the header, then the
 * header, whatever else has arrived; the whole frame agrees with
 * osp_wire_request_parse. */
static void test_raw_every_prefix(void **s) {
    (void)s;
    static uint8_t f[256];
    for (int version = 1; version <= 2; version++) {
        size_t len = raw_frame(f, version, 41, 1700000000123ull, 3, 4, 2, OSP_WIRE_FMT_BGR, 24 + 5);
        size_t head = version >= 2 ? 27 : 19;
        for (size_t avail = 0; avail <= len + 3; avail++) {
            osp_wire_raw_head_t h;
            size_t need = 0;
            char err[OSP_WIRE_ERRLEN] = "";
            int rc = osp_wire_raw_peek(f, avail, len, version, &h, &need, err, sizeof err);
            if (avail < head) {
                assert_int_equal(rc, 0);
                assert_int_equal(need, avail < 9 ? 9 - avail : head - avail);
                continue;
            }
            assert_int_equal(rc, 1);
            assert_int_equal(h.req_id, 41);
            assert_true(h.deadline_ms == (version >= 2 ? 1700000000123ull : 0));
            assert_int_equal(h.model_idx, 3);
            assert_int_equal(h.pixel_off, head);
            assert_int_equal(h.img.width, 4);
            assert_int_equal(h.img.height, 2);
            assert_int_equal(h.img.fmt, OSP_WIRE_FMT_BGR);
            assert_int_equal(h.img.channels, 3);
            assert_int_equal(h.img.len, 24);
            assert_ptr_equal(h.img.pixels, f + head);
        }
        osp_wire_frame_t fr;
        assert_int_equal(osp_wire_scan(f, len, 0, &fr, NULL), 1);
        osp_wire_request_t rq;
        char err[OSP_WIRE_ERRLEN];
        assert_int_equal(osp_wire_request_parse(&fr, version, &rq, err, sizeof err), 0);
        osp_wire_raw_head_t h;
        assert_int_equal(osp_wire_raw_peek(f, len, fr.frame_len, version, &h, NULL, NULL, 0), 1);
        assert_true(rq.deadline_ms == h.deadline_ms);
        assert_int_equal(rq.u.raw.model_idx, h.model_idx);
        assert_ptr_equal(rq.u.raw.img.pixels, h.img.pixels);
        assert_int_equal(rq.u.raw.img.len, h.img.len);
    }
}

static void expect_peek(const uint8_t *f, size_t avail, size_t len, int version, const char *want) {
    osp_wire_raw_head_t h;
    char err[OSP_WIRE_ERRLEN] = "";
    assert_int_equal(osp_wire_raw_peek(f, avail, len, version, &h, NULL, err, sizeof err),
                     OSP_WIRE_EINVAL);
    assert_string_equal(err, want);
}

/* A frame that cannot be right is said so as soon as the bytes given show
 * it, with osp_wire_request_parse's text. */
static void test_raw_errors(void **s) {
    (void)s;
    static uint8_t f[256];
    /* the pixels declared do not fit the declared length: known from the header */
    size_t len = raw_frame(f, 2, 1, 0, 0, 4, 2, OSP_WIRE_FMT_RGB, 23);
    expect_peek(f, 27, len, 2, "raw wrap failed: not enough image data");
    len = raw_frame(f, 1, 1, 0, 0, 4, 2, OSP_WIRE_FMT_GRAY, 7);
    expect_peek(f, 19, len, 1, "raw wrap failed: buffer is not large enough");
    len = raw_frame(f, 1, 1, 0, 0, 4, 2, 9, 100);
    expect_peek(f, len, len, 1, "raw wrap failed: unknown pixel format 9");
    len = raw_frame(f, 1, 1, 0, 0, 0x80000000u, 1, OSP_WIRE_FMT_RGB, 0);
    expect_peek(f, len, len, 1, "raw wrap failed: signed integer is greater than maximum");
    /* too short for the prefix or the header: known from 9 bytes */
    expect_peek(f, 9, 12, 2, "truncated deadline prefix on msg_type=2 (3 bytes, need 8)");
    expect_peek(f, 9, 17, 2, "truncated infer_raw header");
    expect_peek(f, 9, 18, 1, "truncated infer_raw header");
    expect_peek(f, 0, 8, 1, "truncated infer_raw header");
    f[8] = OSP_WIRE_MSG_INFER_JPEG;
    expect_peek(f, 9, 100, 1, "not an infer_raw frame: msg_type=1");
    /* the same texts as the whole-frame parser's */
    for (int version = 1; version <= 2; version++) {
        for (size_t plen = 0; plen < 40; plen++) {
            raw_frame(f, version, 5, 0, 0, 3, 1, OSP_WIRE_FMT_RGB, 9);
            len = 9 + plen; /* the frame cut to plen payload bytes */
            osp_wire_frame_t fr = {.total_len = (uint32_t)(5 + plen),
                                   .req_id = 5,
                                   .msg_type = OSP_WIRE_MSG_INFER_RAW,
                                   .payload = f + 9,
                                   .payload_len = plen,
                                   .frame_len = len};
            osp_wire_request_t rq;
            osp_wire_raw_head_t h;
            char e1[OSP_WIRE_ERRLEN] = "", e2[OSP_WIRE_ERRLEN] = "";
            int r1 = osp_wire_request_parse(&fr, version, &rq, e1, sizeof e1);
            int r2 = osp_wire_raw_peek(f, len, len, version, &h, NULL, e2, sizeof e2);
            assert_int_equal(r1 == 0, r2 == 1);
            assert_string_equal(e1, e2);
        }
    }
}

static size_t shm_payload(uint8_t *p, int version, uint8_t model, uint32_t region, uint64_t offset,
                          uint32_t w, uint32_t h, uint8_t fmt, uint32_t stride) {
    size_t at = 0;
    if (version >= 2) {
        osp_wire_wr64(p, 99);
        at = 8;
    }
    p[at] = model;
    osp_wire_wr32(p + at + 1, region);
    osp_wire_wr64(p + at + 5, offset);
    osp_wire_wr32(p + at + 13, w);
    osp_wire_wr32(p + at + 17, h);
    p[at + 21] = fmt;
    osp_wire_wr32(p + at + 22, stride);
    return at + OSP_WIRE_SHM_HEADER;
}

static void expect_shm(osp_wire_shm_t *m, size_t region, const char *want) {
    char err[OSP_WIRE_ERRLEN] = "";
    assert_int_equal(osp_wire_shm_check(m, region, 16384, err, sizeof err), OSP_WIRE_EINVAL);
    assert_string_equal(err, want);
}

static void test_shm(void **s) {
    (void)s;
    uint8_t p[64];
    osp_wire_shm_t m;
    char err[OSP_WIRE_ERRLEN];
    for (int version = 1; version <= 2; version++) {
        size_t n = shm_payload(p, version, 2, 7, 64, 10, 4, OSP_WIRE_FMT_RGB, 0);
        assert_int_equal(osp_wire_shm_parse(p, n + 3, version, &m, err, sizeof err), 0);
        assert_true(m.deadline_ms == (version >= 2 ? 99u : 0u));
        assert_int_equal(m.model_idx, 2);
        assert_int_equal(m.region, 7);
        assert_true(m.offset == 64);
        assert_int_equal(m.width, 10);
        assert_int_equal(m.height, 4);
        assert_int_equal(m.stride, 0);
        assert_int_equal(osp_wire_shm_check(&m, 64 + 120, 16384, err, sizeof err), 0);
        assert_int_equal(m.stride, 30);
        assert_true(m.len == 120);
        for (size_t k = version >= 2 ? 8 : 0; k < n; k++) {
            assert_int_equal(osp_wire_shm_parse(p, k, version, &m, err, sizeof err), OSP_WIRE_EINVAL);
            assert_string_equal(err, "truncated infer_shm header");
        }
    }
    assert_int_equal(osp_wire_shm_parse(p, 5, 2, &m, err, sizeof err), OSP_WIRE_EINVAL);
    assert_string_equal(err, "truncated deadline prefix on msg_type=6 (5 bytes, need 8)");

    /* one byte short of the region, at either end */
    shm_payload(p, 1, 0, 7, 64, 10, 4, OSP_WIRE_FMT_RGB, 0);
    osp_wire_shm_parse(p, 26, 1, &m, err, sizeof err);
    expect_shm(&m, 64 + 119,
               "infer_shm: frame at offset 64 (120 bytes) is outside region 7 (183 bytes)");
    m.offset = UINT64_MAX;
    expect_shm(&m, 1000,
               "infer_shm: frame at offset 18446744073709551615 (120 bytes) is outside region 7 "
               "(1000 bytes)");
    /* a padded stride: the last row need not be padded */
    shm_payload(p, 1, 0, 1, 0, 10, 4, OSP_WIRE_FMT_GRAY, 16);
    osp_wire_shm_parse(p, 26, 1, &m, err, sizeof err);
    assert_int_equal(osp_wire_shm_check(&m, 58, 16384, err, sizeof err), 0);
    assert_true(m.len == 16 * 3 + 10);
    /* a stride shorter than a row */
    shm_payload(p, 1, 0, 1, 0, 10, 4, OSP_WIRE_FMT_BGR, 29);
    osp_wire_shm_parse(p, 26, 1, &m, err, sizeof err);
    expect_shm(&m, 1 << 20,
               "infer_shm: frame at offset 0 (0 bytes) is outside region 1 (1048576 bytes)");
    /* 4:2:0: the luma plane and two quarter planes, rounded up; stride padding */
    shm_payload(p, 1, 0, 1, 0, 5, 3, OSP_WIRE_FMT_NV12, 0);
    osp_wire_shm_parse(p, 26, 1, &m, err, sizeof err);
    assert_int_equal(osp_wire_shm_check(&m, 1000, 16384, err, sizeof err), 0);
    assert_int_equal(m.stride, 5);
    assert_true(m.len == 15 + 2 * 3 * 2);
    shm_payload(p, 1, 0, 1, 0, 5, 3, OSP_WIRE_FMT_I420, 8);
    osp_wire_shm_parse(p, 26, 1, &m, err, sizeof err);
    assert_int_equal(osp_wire_shm_check(&m, 1000, 16384, err, sizeof err), 0);
    assert_true(m.len == 27 + 3 * 3 * 2);
    /* sizes and formats */
    static const struct {
        uint32_t w, h;
        uint8_t fmt;
        const char *err;
    } t[] = {
        {0, 4, 0, "infer_shm: bad frame size 0x4"},
        {4, 0, 0, "infer_shm: bad frame size 4x0"},
        {16385, 4, 0, "infer_shm: bad frame size 16385x4"},
        {4, 4294967295u, 0, "infer_shm: bad frame size 4x4294967295"},
        {4, 4, 5, "infer_shm: unknown pixel format 5"},
        {4, 4, 255, "infer_shm: unknown pixel format 255"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        shm_payload(p, 1, 0, 1, 0, t[i].w, t[i].h, t[i].fmt, 0);
        osp_wire_shm_parse(p, 26, 1, &m, err, sizeof err);
        expect_shm(&m, SIZE_MAX, t[i].err);
    }
    /* the largest frame: no overflow in the size */
    shm_payload(p, 1, 0, 1, 0, 16384, 16384, OSP_WIRE_FMT_RGB, 4294967295u);
    osp_wire_shm_parse(p, 26, 1, &m, err, sizeof err);
    assert_int_equal(osp_wire_shm_check(&m, SIZE_MAX, 16384, err, sizeof err), 0);
    assert_true(m.len == 4294967295ull * 16383 + 16384 * 3);
}

static void test_push(void **s) {
    (void)s;
    uint8_t p[4 + 12];
    osp_wire_wr32(p, 12345);
    osp_wire_push_t sp;
    char err[OSP_WIRE_ERRLEN];
    assert_int_equal(osp_wire_push_parse(p, sizeof p, &sp, err, sizeof err), 0);
    assert_int_equal(sp.stream_id, 12345);
    assert_ptr_equal(sp.features, p + 4);
    assert_int_equal(sp.len, 12);
    assert_int_equal(osp_wire_push_check(&sp, 3, err, sizeof err), 0);
    assert_int_equal(osp_wire_push_check(&sp, 4, err, sizeof err), OSP_WIRE_EINVAL);
    assert_string_equal(err,
                        "stream_push: stream 12345 takes 4 float32 values per frame, got 12 bytes");
    assert_int_equal(osp_wire_push_parse(p, 4, &sp, err, sizeof err), 0);
    assert_int_equal(sp.len, 0);
    for (size_t n = 0; n < 4; n++) {
        assert_int_equal(osp_wire_push_parse(p, n, &sp, err, sizeof err), OSP_WIRE_EINVAL);
        assert_string_equal(err, "truncated stream_push header");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_every_prefix),
        cmocka_unit_test(test_raw_errors),
        cmocka_unit_test(test_shm),
        cmocka_unit_test(test_push),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
