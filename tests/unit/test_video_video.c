/* The video source on the real clip (when the asset cache has it) and on
 * files that are not videos. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/model.h"
#include "video/video.h"

static int clip_path(char *buf, size_t n) {
    char dir[512];
    osp_cache_dir(dir, sizeof dir);
    snprintf(buf, n, "%s/media/vtest.avi", dir);
    return access(buf, R_OK) == 0;
}

static void test_vtest_frames(void **s) {
    (void)s;
    char path[600], err[256];
    if (!clip_path(path, sizeof path)) skip();
    osp_video_t *v = NULL;
    assert_int_equal(osp_video_open(path, &v, err, sizeof err), 0);
    const osp_video_info_t *info = osp_video_info(v);
    assert_int_equal(info->width, 768);
    assert_int_equal(info->height, 576);
    assert_true(info->fps > 9.9 && info->fps < 10.1);
    osp_image_t img = {0};
    int r, n = 0;
    while ((r = osp_video_read(v, &img, err, sizeof err)) == 1) {
        n++;
        assert_int_equal(img.width, 768);
        assert_int_equal(img.stride, 768 * 3);
    }
    assert_int_equal(r, 0);
    assert_int_equal(n, info->frames);
    assert_int_equal(osp_video_position(v), n);
    assert_int_equal(osp_video_read(v, &img, err, sizeof err), 0);
    osp_image_free(&img);
    osp_video_close(v);
}

static void test_truncated(void **s) {
    (void)s;
    char path[600], err[256];
    if (!clip_path(path, sizeof path)) skip();
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    static char buf[1 << 20];
    char tmp[] = "/tmp/osp-cut-XXXXXX";
    int fd = mkstemp(tmp);
    FILE *out = fdopen(fd, "wb");
    size_t got = fread(buf, 1, sizeof buf, in);
    fwrite(buf, 1, got, out); /* the first MiB of an 8 MiB clip */
    fclose(in);
    fclose(out);
    osp_video_t *v = NULL;
    osp_image_t img = {0};
    int r = osp_video_open(tmp, &v, err, sizeof err), n = 0;
    if (r == 0) {
        while ((r = osp_video_read(v, &img, err, sizeof err)) == 1) n++;
        osp_video_close(v);
    }
    unlink(tmp);
    osp_image_free(&img);
    assert_true(r < 0);
    assert_true(strstr(err, "truncated") || strstr(err, "corrupt") || strstr(err, "cannot"));
}

static void test_not_a_video(void **s) {
    (void)s;
    char tmp[] = "/tmp/osp-junk-XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(write(fd, "hello, not a video at all", 25) == 25);
    close(fd);
    osp_video_t *v = (osp_video_t *)1;
    char err[256];
    assert_true(osp_video_open(tmp, &v, err, sizeof err) < 0);
    assert_null(v);
    assert_non_null(strstr(err, tmp));
    assert_true(osp_video_open("/nonexistent.avi", &v, err, sizeof err) < 0);
    assert_non_null(strstr(err, "/nonexistent.avi"));
    assert_false(osp_path_is_image(tmp));
    unlink(tmp);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vtest_frames),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_not_a_video),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
