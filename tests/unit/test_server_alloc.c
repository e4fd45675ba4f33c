/*
 * Steady-state serving allocates nothing per frame: over a few hundred
 * frames served in process (srv_harness.h, the test backend as the model:
 * a test double), the allocations made are those the runtime makes for
 * the same number of runs of the same model called directly, and no more.
 * Allocations are counted by wrapping malloc and friends in this program,
 * so it does not run under a sanitizer (which wraps them itself).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>

#include "model/model.h"
#include "srv_harness.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#if !SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_long g_allocs;

void *malloc(size_t n) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t k) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return __libc_calloc(n, k);
}
void *realloc(void *p, size_t n) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t a, size_t n) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    return __libc_memalign(a, n);
}
int posix_memalign(void **out, size_t a, size_t n) {
    atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
    *out = __libc_memalign(a, n);
    return *out ? 0 : 12;
}
#endif

#define N 300
#define WARM 40
#define REPLY_CAP 8192

static long allocs(void) {
#if SANITIZED
    return 0;
#else
    return atomic_load(&g_allocs);
#endif
}

/* Allocations of N runs of the model alone: prepare and predict a frame. */
static long direct_allocs(const char *script, uint32_t w, uint32_t h) {
    osp_model_cfg_t cfg;
    osp_model_cfg_defaults(&cfg);
    snprintf(cfg.path, sizeof cfg.path, "%s", script);
    snprintf(cfg.postprocessor, sizeof cfg.postprocessor, "ultraface");
    osp_model_t *m = NULL;
    char err[256];
    assert_int_equal(osp_model_open(&cfg, osp_backend_find("test"), &m, err, sizeof err), 0);
    uint8_t *px = calloc((size_t)w * h * 3, 1);
    assert_non_null(px);
    osp_view_t v = {.data = px, .width = (int)w, .height = (int)h, .stride = (int)w * 3, .fmt = OSP_PIX_RGB};
    osp_infer_ctx_t ctx = {0};
    osp_result_t res;
    long before = 0;
    for (int i = 0; i < WARM + N; i++) {
        if (i == WARM) before = allocs();
        assert_int_equal(osp_model_infer(m, &ctx, &v, 0, 0, &res, err, sizeof err), 0);
    }
    long n = allocs() - before;
    osp_infer_ctx_free(&ctx);
    free(px);
    osp_model_free(m);
    return n;
}

/* Allocations of the whole server while it serves N frames of w x h,
 * one in flight at a time. */
static long served_allocs(harness_t *hs, uint32_t w, uint32_t h) {
    size_t len = 0;
    uint8_t *frame = harness_raw(10, 1, 0, 0, w, h, 0, &len);
    static char reply[REPLY_CAP];
    assert_non_null(frame);
    long before = 0;
    for (int i = 0; i < WARM + N; i++) {
        if (i == WARM) before = allocs();
        uint32_t id = 0;
        assert_int_equal(harness_write(hs, frame, len, 0), 0);
        assert_int_equal(harness_reply(hs, &id, reply, sizeof reply, 10000), 1);
        if (id != 10 || !strstr(reply, "\"kind\": \"detections\"")) fail_msg("reply: %s", reply);
    }
    long n = allocs() - before;
    free(frame);
    return n;
}

static void check(uint32_t w, uint32_t h) {
    harness_t hs;
    char cfg[512], hello[1024];
    assert_int_equal(harness_start(&hs), 0);
    harness_model(&hs, "face.json", 32, NULL, cfg, sizeof cfg);
    snprintf(hello, sizeof hello,
             "{\"runtime\": \"test\", \"protocolVersion\": 2, \"models\": [%s]}", cfg);
    assert_int_equal(harness_command(&hs, 1, hello), 0);
    char ready[4096];
    uint32_t id;
    assert_int_equal(harness_reply(&hs, &id, ready, sizeof ready, 10000), 1);
    char script[256];
    snprintf(script, sizeof script, "%s/face.json", hs.dir);
    long direct = direct_allocs(script, w, h);
    long served = served_allocs(&hs, w, h);
    print_message("%ux%u RGB: %d frames served made %ld allocations; %d direct runs of the model made %ld\n",
                  w, h, N, served, N, direct);
    assert_true(served <= direct + 8); /* a per-frame allocation would add N */
    assert_int_equal(harness_stop(&hs), 0);
}

static void test_small_frames_allocate_nothing(void **state) {
    (void)state;
    if (SANITIZED) skip();
    check(32, 32); /* read through the staging buffer */
}

static void test_frames_prepared_as_read_allocate_nothing(void **state) {
    (void)state;
    if (SANITIZED) skip();
    check(320, 240); /* 230 kB: prepared as read */
}

static void test_large_frames_allocate_nothing(void **state) {
    (void)state;
    if (SANITIZED) skip();
    check(1280, 720); /* 2.7 MB: prepared as read, through the relay */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_frames_allocate_nothing),
        cmocka_unit_test(test_frames_prepared_as_read_allocate_nothing),
        cmocka_unit_test(test_large_frames_allocate_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
