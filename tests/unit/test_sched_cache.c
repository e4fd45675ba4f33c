/* Frame and tensor caches: copies in and out, bounds by count and by bytes,
 * oldest evicted first (tensors before frames), replaced and dropped frames
 * taking their tensors along, referenced frames outliving eviction, the
 * bench hit/miss counters, and many threads at once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/cache.h"

/* A w x h RGB frame whose every byte is `fill`, rows `stride` apart; the
 * bytes past each row (stride > 3w) are 0xEE so a copy that takes them
 * shows. */
typedef struct {
    uint8_t px[64 * 64 * 3 + 64 * 16];
    osp_view_t v;
} frame_t;

static void make_frame(frame_t *f, int w, int h, int stride, uint8_t fill) {
    assert_true((size_t)stride * (size_t)h <= sizeof f->px);
    memset(f->px, 0xEE, sizeof f->px);
    for (int y = 0; y < h; y++) memset(f->px + (size_t)y * (size_t)stride, fill, (size_t)w * 3);
    f->v = (osp_view_t){.data = f->px, .width = w, .height = h, .stride = stride, .fmt = OSP_PIX_RGB};
}

static void put_frame(osp_cache_t *c, uint32_t id, int w, int h, uint8_t fill) {
    frame_t f;
    make_frame(&f, w, h, w * 3, fill);
    assert_int_equal(osp_cache_put_frame(c, id, &f.v), 0);
}

/* Whether frame id is cached; if so its first pixel byte is *fill. */
static int has_frame(osp_cache_t *c, uint32_t id, uint8_t *fill) {
    osp_cframe_t *f = osp_cache_get_frame(c, id);
    if (!f) return 0;
    if (fill) *fill = f->img.data[0];
    osp_cache_release_frame(c, f);
    return 1;
}

static void all_bytes(const uint8_t *p, size_t n, uint8_t want) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != want) fail_msg("byte %zu is 0x%02x, want 0x%02x", i, p[i], want);
}

static osp_tmeta_t meta_of(int k) {
    osp_tmeta_t m = {.geom = {.scale_x = 0.5f * (float)k,
                              .scale_y = 0.25f,
                              .pad_x = k,
                              .pad_y = 2,
                              .content_w = 10,
                              .content_h = 20},
                     .frame_w = 100 + k,
                     .frame_h = 50,
                     .view_w = 30,
                     .view_h = 40};
    return m;
}

static void put_tensor(osp_cache_t *c, osp_tcache_kind_t kind, uint32_t id, uint32_t key,
                       size_t bytes, uint8_t fill) {
    uint8_t buf[4096];
    assert_true(bytes <= sizeof buf);
    memset(buf, fill, bytes);
    osp_tmeta_t m = meta_of(fill);
    osp_cache_put_tensor(c, kind, id, key, buf, bytes, &m);
}

/* 1 when the tensor is cached with `bytes` bytes; then *fill is its first. */
static int has_tensor(osp_cache_t *c, osp_tcache_kind_t kind, uint32_t id, uint32_t key,
                      size_t bytes, uint8_t *fill) {
    uint8_t buf[4096];
    osp_tmeta_t m;
    assert_true(bytes <= sizeof buf);
    int hit = osp_cache_get_tensor(c, kind, id, key, buf, bytes, &m);
    if (hit && fill) *fill = buf[0];
    return hit;
}

static osp_cache_stats_t stats(osp_cache_t *c) {
    osp_cache_stats_t s;
    osp_cache_stats(c, &s);
    return s;
}

/* The cache keeps its own tight copy: the caller's stride and later writes
 * to the caller's pixels do not reach it. */
static void test_frame_is_a_tight_copy(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(4, 4, 0);
    assert_non_null(c);
    static frame_t f;
    make_frame(&f, 5, 3, 5 * 3 + 7, 0x42);
    assert_int_equal(osp_cache_put_frame(c, 7, &f.v), 0);
    memset(f.px, 0x00, sizeof f.px);
    osp_cframe_t *cf = osp_cache_get_frame(c, 7);
    assert_non_null(cf);
    assert_int_equal(cf->id, 7);
    assert_int_equal(cf->img.width, 5);
    assert_int_equal(cf->img.height, 3);
    assert_int_equal(cf->img.stride, 15);
    assert_int_equal(cf->img.fmt, OSP_PIX_RGB);
    all_bytes(cf->img.data, 5 * 3 * 3, 0x42);
    osp_cache_release_frame(c, cf);
    assert_null(osp_cache_get_frame(c, 8));
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.frames, 1);
    assert_int_equal(s.bytes, 45);
    /* a gray frame: one byte a pixel */
    frame_t g;
    make_frame(&g, 4, 4, 4, 9);
    g.v.fmt = OSP_PIX_GRAY;
    assert_int_equal(osp_cache_put_frame(c, 8, &g.v), 0);
    assert_int_equal(stats(c).bytes, 45 + 16);
    osp_cache_free(c);
}

static void test_frames_bounded_by_count_oldest_first(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(3, 8, 0);
    for (uint32_t id = 1; id <= 5; id++) put_frame(c, id, 2, 2, (uint8_t)id);
    assert_int_equal(stats(c).frames, 3);
    assert_false(has_frame(c, 1, NULL));
    assert_false(has_frame(c, 2, NULL));
    for (uint32_t id = 3; id <= 5; id++) {
        uint8_t fill = 0;
        assert_true(has_frame(c, id, &fill));
        assert_int_equal(fill, id);
    }
    assert_int_equal(stats(c).bytes, 3 * 12);
    /* the evicted frame's tensors go with it */
    put_tensor(c, OSP_TCACHE_FRAME, 3, 0, 16, 1);
    put_tensor(c, OSP_TCACHE_BENCH, 3, 0, 16, 1);
    put_tensor(c, OSP_TCACHE_FRAME, 4, 0, 16, 1);
    put_frame(c, 6, 2, 2, 6);
    assert_false(has_frame(c, 3, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 3, 0, 16, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_BENCH, 3, 0, 16, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 4, 0, 16, NULL));
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.frames, 3);
    assert_int_equal(s.tensors_frame, 1);
    assert_int_equal(s.tensors_bench, 0);
    assert_int_equal(s.bytes, 3 * 12 + 16);
    osp_cache_free(c);
}

/* A 10x10 RGB frame is 300 bytes; 1000 bytes hold three of them. */
static void test_frames_bounded_by_bytes(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(100, 100, 1000);
    for (uint32_t id = 1; id <= 3; id++) put_frame(c, id, 10, 10, (uint8_t)id);
    assert_int_equal(stats(c).bytes, 900);
    put_frame(c, 4, 10, 10, 4);
    assert_int_equal(stats(c).frames, 3);
    assert_int_equal(stats(c).bytes, 900);
    assert_false(has_frame(c, 1, NULL));
    assert_true(has_frame(c, 2, NULL));
    assert_true(has_frame(c, 4, NULL));
    /* one larger frame pushes out as many of the oldest as it needs */
    put_frame(c, 5, 20, 10, 5);
    assert_true(stats(c).bytes <= 1000);
    assert_false(has_frame(c, 2, NULL));
    assert_false(has_frame(c, 3, NULL));
    assert_true(has_frame(c, 4, NULL));
    assert_true(has_frame(c, 5, NULL));
    assert_int_equal(stats(c).bytes, 900);
    osp_cache_free(c);
}

/* Tensors can be made again from their frame; a frame is the host's data.
 * When bytes run out the tensors go first, oldest first. */
static void test_bytes_evict_tensors_before_frames(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(10, 10, 1000);
    put_frame(c, 1, 10, 10, 1);                    /* 300 */
    put_frame(c, 2, 10, 10, 2);                    /* 600 */
    put_tensor(c, OSP_TCACHE_FRAME, 1, 0, 100, 1); /* 700, oldest tensor */
    put_tensor(c, OSP_TCACHE_BENCH, 2, 0, 100, 2); /* 800 */
    put_tensor(c, OSP_TCACHE_FRAME, 2, 9, 100, 3); /* 900 */
    put_frame(c, 3, 10, 10, 3);                    /* needs 200 out: the two oldest tensors */
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.frames, 3);
    assert_int_equal(s.tensors_frame, 1);
    assert_int_equal(s.tensors_bench, 0);
    assert_int_equal(s.bytes, 1000);
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 2, 9, 100, NULL));
    for (uint32_t id = 1; id <= 3; id++) assert_true(has_frame(c, id, NULL));
    /* a tensor that does not fit takes the last tensor, then the oldest frame */
    put_tensor(c, OSP_TCACHE_FRAME, 3, 0, 200, 4);
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 2, 9, 100, NULL));
    assert_false(has_frame(c, 1, NULL));
    assert_true(has_frame(c, 2, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 3, 0, 200, NULL));
    assert_int_equal(stats(c).bytes, 800);
    osp_cache_free(c);
}

static void test_replace_frame_drops_its_tensors(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(4, 8, 0);
    put_frame(c, 1, 4, 4, 0x11);
    put_frame(c, 2, 4, 4, 0x22);
    put_tensor(c, OSP_TCACHE_FRAME, 1, 5, 32, 1);
    put_tensor(c, OSP_TCACHE_BENCH, 1, 6, 32, 1);
    put_tensor(c, OSP_TCACHE_FRAME, 2, 5, 32, 2);
    put_frame(c, 1, 2, 2, 0x33); /* new pixels under the same id */
    uint8_t fill = 0;
    assert_true(has_frame(c, 1, &fill));
    assert_int_equal(fill, 0x33);
    osp_cframe_t *f = osp_cache_get_frame(c, 1);
    assert_int_equal(f->img.width, 2);
    osp_cache_release_frame(c, f);
    /* the old frame's tensors were made from the old pixels */
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 1, 5, 32, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_BENCH, 1, 6, 32, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 2, 5, 32, NULL));
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.frames, 2);
    assert_int_equal(s.bytes, 12 + 48 + 32);
    osp_cache_free(c);
}

static void test_drop_frame(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(4, 8, 0);
    put_frame(c, 1, 4, 4, 1);
    put_frame(c, 2, 4, 4, 2);
    put_tensor(c, OSP_TCACHE_FRAME, 1, 0, 32, 1);
    put_tensor(c, OSP_TCACHE_BENCH, 1, 3, 32, 1);
    put_tensor(c, OSP_TCACHE_BENCH, 2, 3, 32, 2);
    osp_cache_drop_frame(c, 1);
    assert_false(has_frame(c, 1, NULL));
    assert_true(has_frame(c, 2, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 1, 0, 32, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_BENCH, 1, 3, 32, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_BENCH, 2, 3, 32, NULL));
    assert_int_equal(stats(c).bytes, 48 + 32);
    osp_cache_drop_frame(c, 99); /* unknown: nothing happens */
    osp_cache_drop_frame(c, 2);
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.frames, 0);
    assert_int_equal(s.tensors_frame + s.tensors_bench, 0);
    assert_int_equal(s.bytes, 0);
    osp_cache_free(c);
}

/* A frame a job holds stays readable after eviction, replacement or a drop,
 * and goes when the job releases it (ASan sees both halves). The 32x32
 * frames are big enough that freed pixels would not still read back. */
static void test_referenced_frame_outlives_eviction(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(2, 4, 0);
    put_frame(c, 1, 32, 32, 0xA1);
    osp_cframe_t *held = osp_cache_get_frame(c, 1);
    osp_cframe_t *again = osp_cache_get_frame(c, 1);
    assert_ptr_equal(held, again);
    osp_cache_release_frame(c, again);
    put_frame(c, 2, 32, 32, 0xA2);
    put_frame(c, 3, 32, 32, 0xA3); /* evicts 1 from the table */
    assert_false(has_frame(c, 1, NULL));
    assert_int_equal(held->linked, 0);
    assert_int_equal(held->id, 1);
    all_bytes(held->img.data, 32 * 32 * 3, 0xA1);
    /* it no longer counts against the cache */
    assert_int_equal(stats(c).bytes, 2 * 32 * 32 * 3);
    osp_cache_release_frame(c, held);

    /* replaced while held: the holder keeps the old pixels */
    held = osp_cache_get_frame(c, 2);
    put_frame(c, 2, 32, 32, 0xB2);
    uint8_t fill = 0;
    assert_true(has_frame(c, 2, &fill));
    assert_int_equal(fill, 0xB2);
    all_bytes(held->img.data, 32 * 32 * 3, 0xA2);
    osp_cache_release_frame(c, held);

    /* dropped while held */
    held = osp_cache_get_frame(c, 3);
    osp_cache_drop_frame(c, 3);
    assert_false(has_frame(c, 3, NULL));
    all_bytes(held->img.data, 32 * 32 * 3, 0xA3);
    osp_cache_release_frame(c, held);

    /* a released frame still in the table stays there */
    held = osp_cache_get_frame(c, 2);
    osp_cache_release_frame(c, held);
    assert_true(has_frame(c, 2, &fill));
    assert_int_equal(fill, 0xB2);
    osp_cache_release_frame(c, NULL);
    osp_cache_free(c);
}

static void test_tensor_copy_in_and_out(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(4, 8, 0);
    uint8_t src[64], dst[64];
    for (int i = 0; i < 64; i++) src[i] = (uint8_t)(i * 3);
    osp_tmeta_t m = meta_of(3), got;
    osp_cache_put_tensor(c, OSP_TCACHE_FRAME, 1, 77, src, sizeof src, &m);
    memset(src, 0, sizeof src); /* copied in: the caller may reuse its buffer */
    memset(&got, 0, sizeof got);
    assert_int_equal(osp_cache_get_tensor(c, OSP_TCACHE_FRAME, 1, 77, dst, sizeof dst, &got), 1);
    for (int i = 0; i < 64; i++) assert_int_equal(dst[i], (uint8_t)(i * 3));
    assert_memory_equal(&got, &m, sizeof m);
    /* the key, the id, the kind and the size all must match */
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 1, 78, 64, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 2, 77, 64, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_BENCH, 1, 77, 64, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 1, 77, 32, NULL));
    /* the same (kind, id, key) again replaces it */
    put_tensor(c, OSP_TCACHE_FRAME, 1, 77, 64, 0x5A);
    uint8_t fill = 0;
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 1, 77, 64, &fill));
    assert_int_equal(fill, 0x5A);
    /* the other kind under the same id and key is a separate entry */
    put_tensor(c, OSP_TCACHE_BENCH, 1, 77, 64, 0x6B);
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 1, 77, 64, &fill));
    assert_int_equal(fill, 0x5A);
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.tensors_frame, 1);
    assert_int_equal(s.tensors_bench, 1);
    assert_int_equal(s.bytes, 128);
    osp_cache_free(c);
}

/* Bounded by count; the entry read or written longest ago goes first. */
static void test_tensors_bounded_by_count(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(4, 3, 0);
    put_tensor(c, OSP_TCACHE_FRAME, 1, 0, 16, 1);
    put_tensor(c, OSP_TCACHE_FRAME, 2, 0, 16, 2);
    put_tensor(c, OSP_TCACHE_FRAME, 3, 0, 16, 3);
    put_tensor(c, OSP_TCACHE_FRAME, 4, 0, 16, 4);
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 1, 0, 16, NULL));
    /* a hit makes 2 the newest: 3 is now the oldest */
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 2, 0, 16, NULL));
    put_tensor(c, OSP_TCACHE_FRAME, 5, 0, 16, 5);
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 3, 0, 16, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 2, 0, 16, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 4, 0, 16, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 5, 0, 16, NULL));
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.tensors_frame, 3);
    assert_int_equal(s.bytes, 48);
    osp_cache_free(c);
}

static void test_bench_counters(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(4, 8, 0);
    osp_cache_stats_t s = stats(c);
    assert_int_equal(s.bench_hits, 0);
    assert_int_equal(s.bench_misses, 0);
    assert_false(has_tensor(c, OSP_TCACHE_BENCH, 1, 320, 16, NULL));
    put_tensor(c, OSP_TCACHE_BENCH, 1, 320, 16, 1);
    assert_true(has_tensor(c, OSP_TCACHE_BENCH, 1, 320, 16, NULL));
    assert_true(has_tensor(c, OSP_TCACHE_BENCH, 1, 320, 16, NULL));
    assert_false(has_tensor(c, OSP_TCACHE_BENCH, 1, 640, 16, NULL));
    /* frame-kind lookups are not counted */
    assert_false(has_tensor(c, OSP_TCACHE_FRAME, 1, 320, 16, NULL));
    put_tensor(c, OSP_TCACHE_FRAME, 1, 320, 16, 1);
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 1, 320, 16, NULL));
    s = stats(c);
    assert_int_equal(s.bench_hits, 2);
    assert_int_equal(s.bench_misses, 2);
    assert_int_equal(s.tensors_bench, 1);
    assert_int_equal(s.tensors_frame, 1);
    osp_cache_free(c);
}

/* Bounds below one entry mean one entry. */
static void test_degenerate_bounds(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(0, -1, 0);
    assert_non_null(c);
    put_frame(c, 1, 2, 2, 1);
    put_frame(c, 2, 2, 2, 2);
    assert_int_equal(stats(c).frames, 1);
    assert_true(has_frame(c, 2, NULL));
    put_tensor(c, OSP_TCACHE_FRAME, 2, 0, 8, 1);
    put_tensor(c, OSP_TCACHE_FRAME, 2, 1, 8, 1);
    assert_int_equal(stats(c).tensors_frame, 1);
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 2, 1, 8, NULL));
    osp_cache_free(c);
    osp_cache_free(NULL);
}

/* Connections' I/O thread stores and drops while workers read frames and
 * tensors; TSan checks the locking, the counts check the bookkeeping. */
typedef struct {
    osp_cache_t *c;
    int seed;
    int bad;
} hammer_t;

static void *hammer(void *arg) {
    hammer_t *h = arg;
    uint32_t r = (uint32_t)h->seed * 2654435761u + 1;
    frame_t *f = malloc(sizeof *f);
    uint8_t buf[256];
    osp_tmeta_t m = meta_of(1);
    for (int i = 0; i < 3000; i++) {
        r = r * 1103515245u + 12345u;
        uint32_t id = (r >> 8) % 12, op = (r >> 4) % 6;
        if (op == 0) {
            make_frame(f, 4, 4, 12, (uint8_t)id);
            if (osp_cache_put_frame(h->c, id, &f->v)) h->bad++;
        } else if (op == 1) {
            osp_cframe_t *cf = osp_cache_get_frame(h->c, id);
            if (cf && (cf->id != id || cf->img.data[0] != (uint8_t)id)) h->bad++;
            osp_cache_release_frame(h->c, cf);
        } else if (op == 2) {
            osp_cache_drop_frame(h->c, id);
        } else if (op == 3) {
            memset(buf, (int)id, sizeof buf);
            osp_cache_put_tensor(h->c, (osp_tcache_kind_t)(id % 2), id, 0, buf, sizeof buf, &m);
        } else {
            osp_tmeta_t got;
            if (osp_cache_get_tensor(h->c, (osp_tcache_kind_t)(id % 2), id, 0, buf, sizeof buf, &got) &&
                buf[0] != (uint8_t)id)
                h->bad++;
        }
    }
    free(f);
    return NULL;
}

static void test_threads(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(6, 6, 6 * 48 + 3 * 256);
    pthread_t th[4];
    hammer_t h[4];
    for (int i = 0; i < 4; i++) {
        h[i] = (hammer_t){c, i + 1, 0};
        assert_int_equal(pthread_create(&th[i], NULL, hammer, &h[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(h[i].bad, 0);
    }
    osp_cache_stats_t s = stats(c);
    assert_true(s.frames <= 6);
    assert_true(s.tensors_frame + s.tensors_bench <= 6);
    assert_true(s.bytes <= 6 * 48 + 3 * 256);
    /* the byte count is the sum of what is left */
    size_t sum = (size_t)s.frames * 48 + (size_t)(s.tensors_frame + s.tensors_bench) * 256;
    assert_int_equal(s.bytes, sum);
    osp_cache_free(c);
}

/* A worker's tensor made from a frame that was replaced, or evicted and
 * cached again, while it was being prepared is not stored: the next
 * infer_cached of that id would be answered from the old pixels. */
static void put_held_tensor(osp_cache_t *c, const osp_cframe_t *f, uint8_t fill) {
    uint8_t buf[16];
    memset(buf, fill, sizeof buf);
    osp_tmeta_t m = meta_of(fill);
    osp_cache_put_frame_tensor(c, f, 0, buf, sizeof buf, &m);
}

static void test_tensor_of_replaced_frame_not_served(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(4, 8, 0);
    put_frame(c, 1, 4, 4, 0xAA);
    osp_cframe_t *held = osp_cache_get_frame(c, 1); /* the worker's job */
    put_frame(c, 1, 4, 4, 0xBB);                    /* the host re-caches id 1 */
    put_held_tensor(c, held, 0xAA);                 /* made from the old pixels */
    osp_cache_release_frame(c, held);
    uint8_t fill = 0;
    if (has_tensor(c, OSP_TCACHE_FRAME, 1, 0, 16, &fill))
        fail_msg("frame 1 is now 0xBB but its cached tensor was made from 0x%02X", fill);
    /* the frame still cached gets its tensor stored as before */
    held = osp_cache_get_frame(c, 1);
    put_held_tensor(c, held, 0xBB);
    osp_cache_release_frame(c, held);
    assert_true(has_tensor(c, OSP_TCACHE_FRAME, 1, 0, 16, &fill));
    assert_int_equal(fill, 0xBB);
    osp_cache_free(c);
}

static void test_tensor_of_evicted_frame_not_served(void **st) {
    (void)st;
    osp_cache_t *c = osp_cache_new(1, 8, 0);
    put_frame(c, 1, 4, 4, 0xAA);
    osp_cframe_t *held = osp_cache_get_frame(c, 1);
    put_frame(c, 2, 4, 4, 0x22); /* evicts frame 1 */
    put_held_tensor(c, held, 0xAA);
    osp_cache_release_frame(c, held);
    put_frame(c, 1, 4, 4, 0xBB); /* cached again */
    uint8_t fill = 0;
    if (has_tensor(c, OSP_TCACHE_FRAME, 1, 0, 16, &fill))
        fail_msg("frame 1 is now 0xBB but its cached tensor was made from 0x%02X", fill);
    osp_cache_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_is_a_tight_copy),
        cmocka_unit_test(test_frames_bounded_by_count_oldest_first),
        cmocka_unit_test(test_frames_bounded_by_bytes),
        cmocka_unit_test(test_bytes_evict_tensors_before_frames),
        cmocka_unit_test(test_replace_frame_drops_its_tensors),
        cmocka_unit_test(test_drop_frame),
        cmocka_unit_test(test_referenced_frame_outlives_eviction),
        cmocka_unit_test(test_tensor_copy_in_and_out),
        cmocka_unit_test(test_tensors_bounded_by_count),
        cmocka_unit_test(test_bench_counters),
        cmocka_unit_test(test_degenerate_bounds),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_tensor_of_replaced_frame_not_served),
        cmocka_unit_test(test_tensor_of_evicted_frame_not_served),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
