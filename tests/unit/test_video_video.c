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

/* With yuv420 a 4:2:0 clip's frames come as decoded, tightly packed I420,
 * and made RGB they are the frames osp_video_read gives without it, byte
 * for byte. */
static void test_vtest_frames_as_decoded(void **s) {
    (void)s;
    char path[600], err[256];
    if (!clip_path(path, sizeof path)) skip();
    osp_video_opts_t o = {.yuv420 = 1};
    osp_video_t *v = NULL, *w = NULL;
    assert_int_equal(osp_video_open_opts(path, &o, &v, err, sizeof err), 0);
    assert_int_equal(osp_video_open(path, &w, err, sizeof err), 0);
    osp_image_t yuv = {0}, made = {0}, rgb = {0};
    for (int i = 0; i < 30; i++) {
        assert_int_equal(osp_video_read(v, &yuv, err, sizeof err), 1);
        assert_int_equal(osp_video_read(w, &rgb, err, sizeof err), 1);
        assert_int_equal(yuv.fmt, OSP_PIX_I420); /* MPEG-4 part 2: video levels */
        assert_int_equal(yuv.width, 768);
        assert_int_equal(yuv.height, 576);
        assert_int_equal(yuv.stride, 768);
        assert_true(yuv.cap >= osp_yuv420_bytes(768, 576));
        osp_view_t view = osp_image_view(&yuv);
        assert_int_equal(osp_yuv_to_rgb(&view, &made, err, sizeof err), 0);
        assert_int_equal(made.stride, rgb.stride);
        assert_memory_equal(made.data, rgb.data, (size_t)rgb.stride * 576);
    }
    osp_image_free(&yuv);
    osp_image_free(&made);
    osp_image_free(&rgb);
    osp_video_close(v);
    osp_video_close(w);
}

/* A file whose demuxer seeks while it opens (vtest.avi's index is at its
 * end, 6 MB in) under a bound far below that: the seek is no packet, so
 * the packets after it, each under the bound, are read. */
static void test_a_seek_at_open_is_no_packet(void **s) {
    (void)s;
    char path[600], err[256];
    if (!clip_path(path, sizeof path)) skip();
    osp_video_opts_t o = {.max_packet = 64 << 10};
    osp_video_t *v = NULL;
    assert_int_equal(osp_video_open_opts(path, &o, &v, err, sizeof err), 0);
    osp_image_t img = {0};
    for (int i = 0; i < 20; i++) assert_int_equal(osp_video_read(v, &img, err, sizeof err), 1);
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

/* An MJPEG stream from memory, read in pieces of `piece` bytes. */
typedef struct {
    const uint8_t *d;
    size_t n, at, piece;
} mem_t;

static int mem_read(void *ctx, uint8_t *buf, int n) {
    mem_t *m = ctx;
    size_t k = m->piece < (size_t)n ? m->piece : (size_t)n;
    if (k > m->n - m->at) k = m->n - m->at;
    memcpy(buf, m->d + m->at, k);
    m->at += k;
    return (int)k;
}

static uint8_t *messi(size_t *n) {
    char dir[512], path[600];
    osp_cache_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/media/messi5.jpg", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static uint8_t buf[1 << 20];
    *n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

/* nparts parts of jpeg with a Content-Length, the last cut to `last` bytes */
static size_t mjpeg(uint8_t *out, const uint8_t *jpeg, size_t n, int nparts, size_t last) {
    size_t o = 0;
    for (int i = 0; i < nparts; i++) {
        o += (size_t)sprintf((char *)out + o,
                             "--osprey\r\nContent-Type: image/jpeg\r\nContent-Length: %zu\r\n\r\n",
                             n);
        size_t k = i == nparts - 1 ? last : n;
        memcpy(out + o, jpeg, k);
        o += k;
        if (k == n) o += (size_t)sprintf((char *)out + o, "\r\n");
    }
    return o;
}

/* Count the packets of a stream, each no larger than the bound; the last
 * call's result in *rc. */
static int packets(const uint8_t *d, size_t n, size_t piece, size_t bound, size_t want, int *rc,
                   char *err, size_t errlen) {
    mem_t m = {d, n, 0, piece};
    osp_video_opts_t o = {.format = "mpjpeg", .max_packet = bound, .read = mem_read, .read_ctx = &m};
    osp_video_t *v = NULL;
    *rc = osp_video_open_opts("mem.mjpg", &o, &v, err, errlen);
    if (*rc) return -1;
    const uint8_t *p;
    size_t len;
    int got = 0;
    while ((*rc = osp_video_packet(v, &p, &len, err, errlen)) == 1) {
        assert_int_equal(len, want);
        got++;
    }
    osp_video_close(v);
    return got;
}

/* Parts of exactly --max-frame bytes, arriving a byte at a time: the bound
 * is the part's, not its header lines' and the look-ahead's too. */
static void test_mjpeg_parts_at_the_bound(void **s) {
    (void)s;
    size_t n;
    const uint8_t *jpeg = messi(&n);
    if (!jpeg) skip();
    static uint8_t stream[4 << 20];
    size_t len = mjpeg(stream, jpeg, n, 3, n);
    char err[256] = "";
    int rc;
    assert_int_equal(packets(stream, len, 1, n, n, &rc, err, sizeof err), 3);
    /* one byte less is refused, saying why */
    assert_int_equal(packets(stream, len, 1, n - 1, n, &rc, err, sizeof err), 0);
    assert_true(rc < 0);
    assert_non_null(strstr(err, "(--max-frame)"));
}

/* An MJPEG stream's frames, with yuv420, are J420 (JPEG's full range),
 * made RGB as osp_video_read makes them without it. */
static void test_mjpeg_frames_as_decoded(void **s) {
    (void)s;
    size_t n;
    const uint8_t *jpeg = messi(&n);
    if (!jpeg) skip();
    static uint8_t stream[4 << 20];
    size_t len = mjpeg(stream, jpeg, n, 2, n);
    char err[256] = "";
    osp_image_t img[2] = {{0}, {0}}, made = {0};
    for (int yuv = 0; yuv < 2; yuv++) {
        mem_t m = {stream, len, 0, 4096};
        osp_video_opts_t o = {.format = "mpjpeg", .read = mem_read, .read_ctx = &m, .yuv420 = yuv};
        osp_video_t *v = NULL;
        assert_int_equal(osp_video_open_opts("mem.mjpg", &o, &v, err, sizeof err), 0);
        assert_int_equal(osp_video_read(v, &img[yuv], err, sizeof err), 1);
        osp_video_close(v);
    }
    assert_int_equal(img[0].fmt, OSP_PIX_RGB);
    assert_int_equal(img[1].fmt, OSP_PIX_J420);
    osp_view_t view = osp_image_view(&img[1]);
    assert_int_equal(osp_yuv_to_rgb(&view, &made, err, sizeof err), 0);
    assert_int_equal(made.width, img[0].width);
    assert_int_equal(made.height, img[0].height);
    assert_memory_equal(made.data, img[0].data, (size_t)made.stride * (size_t)made.height);
    osp_image_free(&img[0]);
    osp_image_free(&img[1]);
    osp_image_free(&made);
}

/* A stream that ends inside a part with a Content-Length hands nothing of
 * that part on, and says so. */
static void test_mjpeg_cut_part(void **s) {
    (void)s;
    size_t n;
    const uint8_t *jpeg = messi(&n);
    if (!jpeg) skip();
    static uint8_t stream[4 << 20];
    size_t len = mjpeg(stream, jpeg, n, 3, n / 2);
    char err[256] = "";
    int rc;
    assert_int_equal(packets(stream, len, 4096, 1 << 20, n, &rc, err, sizeof err), 2);
    assert_true(rc < 0);
    assert_non_null(strstr(err, "ended inside"));
}

/* Parts without a Content-Length (a part then ends at the next boundary),
 * the last one cut where the camera hung up, before its boundary: nothing
 * of it is handed on, whatever the pieces the bytes come in and wherever
 * the cut falls (inside the JPEG, or after it with part of the CR LF "--"
 * that would have ended it). */
static void test_mjpeg_cut_part_without_length(void **s) {
    (void)s;
    size_t n;
    const uint8_t *jpeg = messi(&n);
    if (!jpeg) skip();
    static uint8_t stream[4 << 20];
    const char *head = "--osprey\r\nContent-Type: image/jpeg\r\n\r\n";
    size_t o = 0;
    for (int i = 0; i < 2; i++) {
        o += (size_t)sprintf((char *)stream + o, "%s", head);
        memcpy(stream + o, jpeg, n);
        o += n;
        o += (size_t)sprintf((char *)stream + o, "\r\n");
    }
    o += (size_t)sprintf((char *)stream + o, "%s", head);
    const size_t part = o;
    memcpy(stream + o, jpeg, n);
    memcpy(stream + o + n, "\r\n-", 3);
    const size_t cuts[] = {1, n / 2, n - 1, n, n + 1, n + 2, n + 3};
    const size_t pieces[] = {1, 7, 4096, 65536};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++)
        for (size_t p = 0; p < sizeof pieces / sizeof pieces[0]; p++) {
            char err[256] = "";
            int rc;
            assert_int_equal(packets(stream, part + cuts[c], pieces[p], 1 << 20, n, &rc, err,
                                     sizeof err),
                             2);
            assert_true(rc < 0);
            assert_non_null(strstr(err, "ended inside"));
        }
}

/* A first part past the bound fails the opening, naming --max-frame. */
static void test_mjpeg_open_past_the_bound(void **s) {
    (void)s;
    size_t n;
    const uint8_t *jpeg = messi(&n);
    if (!jpeg) skip();
    static uint8_t stream[4 << 20];
    size_t len = mjpeg(stream, jpeg, n, 2, n);
    char err[256] = "";
    int rc;
    for (size_t piece = 1; piece <= 65536; piece *= 16) {
        err[0] = '\0';
        int got = packets(stream, len, piece, n / 2, n, &rc, err, sizeof err);
        assert_true(got <= 0);
        assert_true(rc < 0);
        assert_non_null(strstr(err, "a packet of more than"));
        assert_non_null(strstr(err, "(--max-frame)"));
    }
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
        cmocka_unit_test(test_vtest_frames_as_decoded),
        cmocka_unit_test(test_mjpeg_frames_as_decoded),
        cmocka_unit_test(test_a_seek_at_open_is_no_packet),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_not_a_video),
        cmocka_unit_test(test_mjpeg_parts_at_the_bound),
        cmocka_unit_test(test_mjpeg_cut_part),
        cmocka_unit_test(test_mjpeg_cut_part_without_length),
        cmocka_unit_test(test_mjpeg_open_past_the_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
