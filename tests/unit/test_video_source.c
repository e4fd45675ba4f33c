/* The source layer (video/source.h) on what runs without a camera: a real
 * clip, inputs that cannot be opened, a login that must not be printed, and
 * the event lines. The camera cases (drop, reconnect, giving up) run
 * against a real RTSP server in tests/e2e/test_sources.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* this cmocka has no assert_double_equal */
#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

#include "model/model.h"
#include "video/source.h"

static void test_file_is_not_live(void **s) {
    (void)s;
    char dir[512], path[600], err[512];
    osp_cache_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/media/vtest.avi", dir);
    if (access(path, R_OK) != 0) skip();
    osp_source_t *src = NULL;
    assert_int_equal(osp_source_open(path, NULL, &src, err, sizeof err), 0);
    assert_false(osp_source_live(src));
    assert_string_equal(osp_source_name(src), path);
    osp_image_t img = {0};
    osp_frame_meta_t m;
    double last = 0;
    for (int i = 0; i < 12; i++) {
        assert_int_equal(osp_source_read(src, &img, &m, err, sizeof err), 1);
        assert_int_equal(m.index, i);
        assert_near(m.pts, i / 10.0, 1e-9);
        assert_true(m.captured >= last);
        last = m.captured;
    }
    osp_source_cancel(src);
    assert_int_equal(osp_source_read(src, &img, &m, err, sizeof err), 0);
    osp_source_stats_t st = osp_source_stats(src);
    assert_int_equal(st.drops, 0);
    osp_image_free(&img);
    osp_source_close(src);
}

static void test_cannot_open(void **s) {
    (void)s;
    char err[512];
    osp_source_t *src = (osp_source_t *)1;
    assert_int_equal(osp_source_open("/nonexistent/clip.mp4", NULL, &src, err, sizeof err),
                     OSP_SOURCE_EINPUT);
    assert_null(src);
    assert_non_null(strstr(err, "/nonexistent/clip.mp4"));
    assert_int_equal(osp_source_open("gopher://h/x", NULL, &src, err, sizeof err), OSP_SOURCE_EINPUT);
    assert_non_null(strstr(err, "not a source"));
    /* a character device that is no camera */
    assert_int_equal(osp_source_open("/dev/null", NULL, &src, err, sizeof err), OSP_SOURCE_EINPUT);
    assert_non_null(strstr(err, "/dev/null"));
}

static void test_login_never_in_messages(void **s) {
    (void)s;
    char err[512];
    osp_source_t *src = NULL;
    /* nothing listens on port 1: refused at once */
    assert_int_equal(osp_source_open("rtsp://admin:hunter2@127.0.0.1:1/cam", NULL, &src, err,
                                     sizeof err),
                     OSP_SOURCE_EINPUT);
    assert_null(strstr(err, "hunter2"));
    assert_null(strstr(err, "admin"));
    assert_non_null(strstr(err, "rtsp://***@127.0.0.1:1/cam"));
}

static void test_event_text(void **s) {
    (void)s;
    char buf[512];
    osp_source_event_t e = {.kind = OSP_SOURCE_DROP,
                            .name = "rtsp://***@h/cam",
                            .reason = "End of file",
                            .frame = 41,
                            .retry_in_s = 0.5};
    osp_source_event_text(&e, buf, sizeof buf);
    assert_string_equal(buf, "rtsp://***@h/cam: dropped after frame 41 (End of file); "
                             "reconnecting, first try in 0.5 s");
    e.kind = OSP_SOURCE_RECONNECT;
    e.down_s = 3.26;
    e.attempts = 3;
    e.frames_lost = 32;
    osp_source_event_text(&e, buf, sizeof buf);
    assert_string_equal(buf, "rtsp://***@h/cam: reconnected after 3.3 s (3 attempts), 32 frames lost");
    e.kind = OSP_SOURCE_GAVE_UP;
    e.attempts = 1;
    e.reason = "Connection refused";
    osp_source_event_text(&e, buf, sizeof buf);
    assert_string_equal(buf, "rtsp://***@h/cam: gave up reconnecting after 3.3 s (1 attempt; "
                             "last: Connection refused)");
    assert_string_equal(osp_source_event_name(OSP_SOURCE_DROP), "drop");
    assert_string_equal(osp_source_event_name(OSP_SOURCE_RECONNECT), "reconnect");
    assert_string_equal(osp_source_event_name(OSP_SOURCE_GAVE_UP), "gave-up");
}

static void test_defaults(void **s) {
    (void)s;
    osp_source_cfg_t c;
    osp_source_cfg_default(&c);
    assert_false(c.rtsp_udp);
    assert_true(c.reconnect_for_s < 0);
    assert_near(c.backoff_first_s, 0.5, 0);
    assert_near(c.backoff_max_s, 10, 0);
    assert_near(c.io_timeout_s, 5, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_is_not_live),
        cmocka_unit_test(test_cannot_open),
        cmocka_unit_test(test_login_never_in_messages),
        cmocka_unit_test(test_event_text),
        cmocka_unit_test(test_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
