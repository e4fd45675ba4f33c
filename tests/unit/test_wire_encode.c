/* wire/encode: every request frame read back by the readers (osp_wire_scan,
 * then osp_wire_request_parse or peek.h) gives the fields it was written
 * with; header-only writes match the whole frame's first bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "wire/encode.h"

static uint8_t buf[4096];

/* Scan the frame at buf[0..n) whole and parse it at r's version. */
static void read_back(size_t n, const osp_wire_req_t *r, uint8_t type, osp_wire_frame_t *f,
                      osp_wire_request_t *rq) {
    size_t need;
    assert_true(n > 0);
    assert_int_equal(osp_wire_scan(buf, n, 0, f, &need), 1);
    assert_int_equal(f->frame_len, n);
    assert_int_equal(f->req_id, r->req_id);
    assert_int_equal(f->msg_type, type);
    char err[OSP_WIRE_ERRLEN] = "";
    if (type <= OSP_WIRE_MSG_INFER_CACHED) {
        if (osp_wire_request_parse(f, r->version, rq, err, sizeof err)) fail_msg("%s", err);
        assert_true(rq->deadline_ms ==
                    (osp_wire_sheddable(type) && r->version >= 2 ? r->deadline_ms : 0));
    }
}

/* The header-only write h[0..head) is the whole frame's first bytes. */
static void same_head(const uint8_t *h, size_t head, size_t whole, size_t bulk) {
    assert_true(head > 0 && head <= OSP_WIRE_HEAD_MAX);
    assert_int_equal(head + bulk, whole);
    assert_memory_equal(h, buf, head);
}

static void test_round_trip(void **s) {
    (void)s;
    static const uint8_t px[24] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                   13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
    for (int version = 1; version <= 2; version++) {
        osp_wire_req_t r = {.req_id = 77 + (uint32_t)version,
                            .version = version,
                            .deadline_ms = 1700000000999ull};
        osp_wire_frame_t f;
        osp_wire_request_t rq;
        uint8_t h[OSP_WIRE_HEAD_MAX];

        const char *json = "{\"cmd\":\"status\"}";
        size_t n = osp_wire_encode_command(buf, sizeof buf, &r, json, strlen(json));
        read_back(n, &r, OSP_WIRE_MSG_COMMAND, &f, &rq);
        assert_int_equal(rq.u.command.len, strlen(json));
        assert_memory_equal(rq.u.command.json, json, strlen(json));
        same_head(h, osp_wire_encode_command(h, sizeof h, &r, NULL, strlen(json)), n, strlen(json));

        n = osp_wire_encode_jpeg(buf, sizeof buf, &r, 3, "\xff\xd8JPEG", 6);
        read_back(n, &r, OSP_WIRE_MSG_INFER_JPEG, &f, &rq);
        assert_int_equal(rq.u.jpeg.model_idx, 3);
        assert_int_equal(rq.u.jpeg.len, 6);
        assert_memory_equal(rq.u.jpeg.data, "\xff\xd8JPEG", 6);
        size_t hn = osp_wire_encode_jpeg(h, sizeof h, &r, 3, NULL, 6);
        same_head(h, hn, n, 6);

        n = osp_wire_encode_raw(buf, sizeof buf, &r, 4, 4, 2, OSP_WIRE_FMT_BGR, px, sizeof px);
        read_back(n, &r, OSP_WIRE_MSG_INFER_RAW, &f, &rq);
        assert_int_equal(rq.u.raw.model_idx, 4);
        assert_int_equal(rq.u.raw.img.width, 4);
        assert_int_equal(rq.u.raw.img.height, 2);
        assert_int_equal(rq.u.raw.img.fmt, OSP_WIRE_FMT_BGR);
        assert_memory_equal(rq.u.raw.img.pixels, px, sizeof px);
        hn = osp_wire_encode_raw(h, sizeof h, &r, 4, 4, 2, OSP_WIRE_FMT_BGR, NULL, sizeof px);
        same_head(h, hn, n, sizeof px);
        /* the header alone is what the peek needs */
        osp_wire_raw_head_t ph;
        assert_int_equal(osp_wire_raw_peek(h, hn, n, version, &ph, NULL, NULL, 0), 1);
        assert_int_equal(ph.req_id, r.req_id);
        assert_true(ph.deadline_ms == (version >= 2 ? r.deadline_ms : 0));
        assert_int_equal(ph.model_idx, 4);
        assert_int_equal(ph.pixel_off, hn);
        assert_int_equal(ph.img.len, sizeof px);

        uint8_t items[2 * (13 + sizeof px)];
        size_t in = osp_wire_encode_item(items, sizeof items, 4, 2, OSP_WIRE_FMT_RGB, px, sizeof px);
        assert_int_equal(in, 13 + sizeof px);
        assert_int_equal(osp_wire_encode_item(items + in, sizeof items - in, 8, 1,
                                              OSP_WIRE_FMT_GRAY, NULL, 8),
                         13);
        memcpy(items + in + 13, px, 8);
        in += 13 + 8;
        n = osp_wire_encode_batch(buf, sizeof buf, &r, 1, 2, 9, items, in);
        read_back(n, &r, OSP_WIRE_MSG_INFER_BATCH, &f, &rq);
        assert_int_equal(rq.u.batch.model_idx, 1);
        assert_int_equal(rq.u.batch.count, 2);
        assert_int_equal(rq.u.batch.frame_id, 9);
        osp_wire_batch_iter_t it;
        osp_wire_image_t img;
        char err[OSP_WIRE_ERRLEN];
        osp_wire_batch_iter_init(&it, &rq.u.batch);
        assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 1);
        assert_int_equal(img.width, 4);
        assert_memory_equal(img.pixels, px, sizeof px);
        assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 1);
        assert_int_equal(img.width, 8);
        assert_int_equal(img.fmt, OSP_WIRE_FMT_GRAY);
        assert_int_equal(osp_wire_batch_next(&it, &img, err, sizeof err), 0);
        hn = osp_wire_encode_batch(h, sizeof h, &r, 1, 2, 9, NULL, in);
        same_head(h, hn, n, in);

        n = osp_wire_encode_cache_frame(buf, sizeof buf, &r, 12, 8, 3, OSP_WIRE_FMT_GRAY, px, 24);
        read_back(n, &r, OSP_WIRE_MSG_CACHE_FRAME, &f, &rq);
        assert_int_equal(rq.u.cache.frame_id, 12);
        assert_int_equal(rq.u.cache.img.width, 8);
        assert_int_equal(rq.u.cache.img.height, 3);
        assert_memory_equal(rq.u.cache.img.pixels, px, 24);
        hn = osp_wire_encode_cache_frame(h, sizeof h, &r, 12, 8, 3, OSP_WIRE_FMT_GRAY, NULL, 24);
        same_head(h, hn, n, 24);

        n = osp_wire_encode_cached(buf, sizeof buf, &r, 6, 0xdeadbeef);
        read_back(n, &r, OSP_WIRE_MSG_INFER_CACHED, &f, &rq);
        assert_int_equal(rq.u.cached.model_idx, 6);
        assert_int_equal(rq.u.cached.frame_id, 0xdeadbeef);

        osp_wire_shm_t m = {.model_idx = 2,
                            .region = 5,
                            .offset = 1ull << 40,
                            .width = 640,
                            .height = 480,
                            .fmt = OSP_WIRE_FMT_NV12,
                            .stride = 704};
        n = osp_wire_encode_shm(buf, sizeof buf, &r, &m);
        assert_true(n <= OSP_WIRE_HEAD_MAX);
        read_back(n, &r, OSP_WIRE_MSG_INFER_SHM, &f, &rq);
        osp_wire_shm_t back;
        assert_int_equal(osp_wire_shm_parse(f.payload, f.payload_len, version, &back, err, sizeof err),
                         0);
        assert_true(back.deadline_ms == (version >= 2 ? r.deadline_ms : 0));
        assert_int_equal(back.model_idx, 2);
        assert_int_equal(back.region, 5);
        assert_true(back.offset == 1ull << 40);
        assert_int_equal(back.width, 640);
        assert_int_equal(back.height, 480);
        assert_int_equal(back.fmt, OSP_WIRE_FMT_NV12);
        assert_int_equal(back.stride, 704);

        float feat[3] = {0.5f, -1.0f, 2.0f};
        n = osp_wire_encode_push(buf, sizeof buf, &r, 31, feat, sizeof feat);
        read_back(n, &r, OSP_WIRE_MSG_STREAM_PUSH, &f, &rq);
        osp_wire_push_t sp;
        assert_int_equal(osp_wire_push_parse(f.payload, f.payload_len, &sp, err, sizeof err), 0);
        assert_int_equal(sp.stream_id, 31);
        assert_int_equal(osp_wire_push_check(&sp, 3, err, sizeof err), 0);
        assert_memory_equal(sp.features, feat, sizeof feat);
        hn = osp_wire_encode_push(h, sizeof h, &r, 31, NULL, sizeof feat);
        same_head(h, hn, n, sizeof feat);
    }
}

/* Too little room, or a bulk too long for a u32 total_len: nothing fits, 0. */
static void test_limits(void **s) {
    (void)s;
    osp_wire_req_t r = {.req_id = 1, .version = 2};
    uint8_t h[OSP_WIRE_HEAD_MAX];
    assert_int_equal(osp_wire_encode_raw(h, 26, &r, 0, 1, 1, 0, NULL, 3), 0);
    assert_int_equal(osp_wire_encode_raw(h, 27, &r, 0, 1, 1, 0, NULL, 3), 27);
    assert_int_equal(osp_wire_encode_raw(h, 29, &r, 0, 1, 1, 0, "abc", 3), 0);
    assert_int_equal(osp_wire_encode_raw(h, 30, &r, 0, 1, 1, 0, "abc", 3), 30);
    /* v2 infer_jpeg: 18 header bytes, total_len = 14 + len */
    assert_int_equal(osp_wire_encode_jpeg(h, sizeof h, &r, 0, NULL, UINT32_MAX - 14), 18);
    assert_int_equal(osp_wire_rd32(h), UINT32_MAX);
    assert_int_equal(osp_wire_encode_jpeg(h, sizeof h, &r, 0, NULL, UINT32_MAX - 13), 0);
    assert_int_equal(osp_wire_encode_command(h, 8, &r, NULL, 0), 0);
    assert_int_equal(osp_wire_encode_item(h, 12, 1, 1, 0, NULL, 3), 0);
    osp_wire_shm_t m = {0};
    assert_int_equal(osp_wire_encode_shm(h, 42, &r, &m), 0);
    assert_int_equal(osp_wire_encode_shm(h, 43, &r, &m), 43);
    r.version = 1;
    assert_int_equal(osp_wire_encode_shm(h, 35, &r, &m), 35);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
