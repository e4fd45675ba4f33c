/* Source kinds and credential masking (video/url.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "video/url.h"

static void check_mask(const char *in, const char *want) {
    char out[256];
    assert_string_equal(osp_url_mask(in, out, sizeof out), want);
}

static void test_userinfo(void **s) {
    (void)s;
    check_mask("rtsp://admin:secret@10.0.0.5:554/Streaming/101",
               "rtsp://***@10.0.0.5:554/Streaming/101");
    check_mask("rtsp://admin@cam/live", "rtsp://***@cam/live");
    /* a password holding '@' and ':' still ends at the last '@' of the authority */
    check_mask("rtsp://u:p@ss:w@rd@cam:8554/a@b", "rtsp://***@cam:8554/a@b");
    check_mask("http://u:p@host", "http://***@host");
    check_mask("rtsp://cam:8554/front", "rtsp://cam:8554/front");
}

static void test_query(void **s) {
    (void)s;
    check_mask("http://cam/video.cgi?user=admin&password=hunter2&res=hd",
               "http://cam/video.cgi?user=admin&password=***&res=hd");
    check_mask("https://h/s.m3u8?Token=abc#frag", "https://h/s.m3u8?Token=***#frag");
    check_mask("rtsp://a:b@h/p?pwd=x&key=y", "rtsp://***@h/p?pwd=***&key=***");
    check_mask("http://h/p?keyframe=1", "http://h/p?keyframe=1");
}

static void test_not_urls(void **s) {
    (void)s;
    check_mask("/media/user:pass@x.avi", "/media/user:pass@x.avi"); /* a path, as given */
    check_mask("-", "-");
    check_mask("", "");
}

static void test_short_buffer(void **s) {
    (void)s;
    char out[12];
    osp_url_mask("rtsp://admin:secret@cam/x", out, sizeof out);
    assert_int_equal(strlen(out), sizeof out - 1);
    assert_null(strstr(out, "secret"));
    assert_null(strstr(out, "admin"));
    char one[1];
    osp_url_mask("rtsp://a:b@c", one, 1);
    assert_int_equal(one[0], '\0');
}

static void test_kinds(void **s) {
    (void)s;
    assert_int_equal(osp_url_kind("-"), OSP_URL_STDIN);
    assert_int_equal(osp_url_kind("clip.mp4"), OSP_URL_FILE);
    assert_int_equal(osp_url_kind("/tmp/rtsp://x"), OSP_URL_FILE);
    assert_int_equal(osp_url_kind("/dev/video0"), OSP_URL_DEVICE);
    assert_int_equal(osp_url_kind("rtsp://h/p"), OSP_URL_RTSP);
    assert_int_equal(osp_url_kind("RTSPS://h/p"), OSP_URL_RTSP);
    assert_int_equal(osp_url_kind("http://h/mjpg"), OSP_URL_NETWORK);
    assert_int_equal(osp_url_kind("https://h/a.m3u8"), OSP_URL_NETWORK);
    assert_int_equal(osp_url_kind("srt://h:9000"), OSP_URL_NETWORK);
    assert_int_equal(osp_url_kind("gopher://h"), OSP_URL_UNKNOWN);
    assert_int_equal(osp_url_kind("file:///etc/passwd"), OSP_URL_UNKNOWN);
    assert_true(osp_url_is_stream(OSP_URL_RTSP));
    assert_true(osp_url_is_stream(OSP_URL_DEVICE));
    assert_false(osp_url_is_stream(OSP_URL_FILE));
    assert_false(osp_url_is_stream(OSP_URL_STDIN));
}

static void test_split(void **s) {
    (void)s;
    osp_url_parts_t p;
    assert_int_equal(osp_url_split("mqtt://ha:secret@127.0.0.1:18831/osprey/cam1", &p), 0);
    assert_string_equal(p.scheme, "mqtt");
    assert_string_equal(p.user, "ha");
    assert_string_equal(p.password, "secret");
    assert_true(p.has_user && p.has_password);
    assert_string_equal(p.host, "127.0.0.1");
    assert_int_equal(p.port, 18831);
    assert_string_equal(p.path, "osprey/cam1");
    osp_url_forget(&p);
    assert_string_equal(p.password, "");
    /* percent-encoded and literal '@' in a password; a user alone */
    assert_int_equal(osp_url_split("MQTTS://u%40x:p%3A%2F@ss@[::1]:8883/t", &p), 0);
    assert_string_equal(p.scheme, "mqtts");
    assert_string_equal(p.user, "u@x");
    assert_string_equal(p.password, "p:/@ss");
    assert_string_equal(p.host, "::1");
    assert_int_equal(p.port, 8883);
    assert_int_equal(osp_url_split("mqtt://ha@broker/a/b", &p), 0);
    assert_true(p.has_user && !p.has_password);
    assert_int_equal(p.port, 0);
    assert_string_equal(p.host, "broker");
    assert_string_equal(p.path, "a/b");
    assert_int_equal(osp_url_split("mqtt://broker", &p), 0);
    assert_string_equal(p.path, "");
    assert_int_equal(osp_url_split("mqtt://:1/t", &p), -1);
    assert_int_equal(osp_url_split("mqtt://h:0/t", &p), -1);
    assert_int_equal(osp_url_split("mqtt://h:65536/t", &p), -1);
    assert_int_equal(osp_url_split("mqtt://h:12x/t", &p), -1);
    assert_int_equal(osp_url_split("mqtt://u:%4@h/t", &p), -1);
    assert_string_equal(p.user, "");
    assert_int_equal(osp_url_split("host/t", &p), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_userinfo), cmocka_unit_test(test_query),
        cmocka_unit_test(test_not_urls), cmocka_unit_test(test_short_buffer),
        cmocka_unit_test(test_kinds),    cmocka_unit_test(test_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
