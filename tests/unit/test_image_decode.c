/*
 * Decoding and encoding: JPEG through TurboJPEG (with its scaled decode),
 * PNG through libpng in every pixel layout the format has, snapshots
 * written and read back, and damaged input of every kind refused with a
 * reason rather than a crash. Images are made here; the real media of the
 * asset cache ($OSPREY_CACHE/media, else ~/.cache/osprey/media) is used only
 * when present.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <png.h>
#include <turbojpeg.h>

#include "image/image.h"
#include "model/model.h"

/* ---- helpers ------------------------------------------------------------ */

/* Smooth, channel-asymmetric RGB: red grows to the right, green down, blue
 * is their mix, so a swapped channel or a flipped axis is visible. */
static uint8_t *make_rgb(int w, int h) {
    uint8_t *p = malloc((size_t)w * h * 3);
    assert_non_null(p);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *d = p + ((size_t)y * w + x) * 3;
            d[0] = (uint8_t)(20 + 215 * x / (w > 1 ? w - 1 : 1));
            d[1] = (uint8_t)(20 + 215 * y / (h > 1 ? h - 1 : 1));
            d[2] = (uint8_t)((d[0] + 3 * d[1]) / 4);
        }
    return p;
}

static unsigned char *jpeg_encode_flags(const uint8_t *rgb, int w, int h, int samp, int q,
                                        int flags, unsigned long *len) {
    tjhandle tj = tjInitCompress();
    assert_non_null(tj);
    unsigned char *jpg = NULL;
    *len = 0;
    assert_int_equal(tjCompress2(tj, rgb, w, w * 3, h, TJPF_RGB, &jpg, len, samp, q, flags), 0);
    tjDestroy(tj);
    return jpg;
}

static unsigned char *jpeg_encode(const uint8_t *rgb, int w, int h, int samp, int q,
                                  unsigned long *len) {
    return jpeg_encode_flags(rgb, w, h, samp, q, 0, len);
}

static double mean_abs_diff(const uint8_t *a, const uint8_t *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += abs((int)a[i] - (int)b[i]);
    return s / n;
}

static void tmp_path(char *buf, size_t len, const char *name) {
    snprintf(buf, len, "/tmp/osp_test_image_%d_%s", (int)getpid(), name);
}

/* ---- JPEG ----------------------------------------------------------------- */

static void test_scale_denom(void **state) {
    (void)state;
    assert_int_equal(osp_jpeg_scale_denom(1920, 1080, 300, 300), 2);
    assert_int_equal(osp_jpeg_scale_denom(1920, 1080, 640, 640), 1);
    assert_int_equal(osp_jpeg_scale_denom(2400, 2400, 300, 300), 8);
    assert_int_equal(osp_jpeg_scale_denom(1200, 1200, 300, 300), 4);
    assert_int_equal(osp_jpeg_scale_denom(1199, 1200, 300, 300), 2); /* 1199/4 < 300 */
    assert_int_equal(osp_jpeg_scale_denom(3840, 2160, 640, 640), 2);
    assert_int_equal(osp_jpeg_scale_denom(3840, 2160, 480, 270), 8);
    assert_int_equal(osp_jpeg_scale_denom(599, 599, 300, 300), 1);
    assert_int_equal(osp_jpeg_scale_denom(1920, 1080, 0, 300), 1);
    assert_int_equal(osp_jpeg_scale_denom(1920, 1080, -1, -1), 1);
    assert_int_equal(osp_jpeg_scale_denom(100000, 100000, 1, 1), 8); /* never beyond 1/8 */
}

static void test_jpeg_round_trip(void **state) {
    (void)state;
    int w = 320, h = 240;
    uint8_t *rgb = make_rgb(w, h);
    unsigned long len;
    unsigned char *jpg = jpeg_encode(rgb, w, h, TJSAMP_444, 95, &len);
    osp_decoder_t *dec = osp_decoder_new();
    assert_non_null(dec);
    osp_image_t img = {0};
    int ow = 0, oh = 0;
    char err[256] = "";
    assert_int_equal(osp_image_decode(dec, jpg, len, 0, 0, &img, &ow, &oh, err, sizeof(err)),
                     OSP_IMG_OK);
    assert_int_equal(img.width, w);
    assert_int_equal(img.height, h);
    assert_int_equal(img.stride, w * 3);
    assert_int_equal(img.fmt, OSP_PIX_RGB);
    assert_int_equal(ow, w);
    assert_int_equal(oh, h);
    assert_true(mean_abs_diff(img.data, rgb, (size_t)w * h * 3) < 1.5);
    /* Channel order: top-right is red-heavy, bottom-left green-heavy. */
    const uint8_t *tr = img.data + (size_t)(w - 1) * 3, *bl = img.data + (size_t)(h - 1) * w * 3;
    assert_true(tr[0] > 220 && tr[1] < 40);
    assert_true(bl[0] < 40 && bl[1] > 220);
    osp_image_free(&img);
    osp_decoder_free(dec);
    tjFree(jpg);
    free(rgb);
}

static void test_jpeg_scaled_decode(void **state) {
    (void)state;
    static const struct {
        int w, h, want, out_w, out_h;
    } cases[] = {
        {1920, 1080, 300, 960, 540}, {1920, 1080, 640, 1920, 1080}, {2400, 2400, 300, 300, 300},
        {1200, 1200, 300, 300, 300}, {1201, 1199, 300, 601, 600}, /* ceil(1201/2), ceil(1199/2) */
    };
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int w = cases[i].w, h = cases[i].h;
        uint8_t *rgb = make_rgb(w, h);
        unsigned long len;
        unsigned char *jpg = jpeg_encode(rgb, w, h, TJSAMP_420, 90, &len);
        int ow = 0, oh = 0;
        char err[256] = "";
        assert_int_equal(osp_image_decode(dec, jpg, len, cases[i].want, cases[i].want, &img, &ow,
                                          &oh, err, sizeof(err)),
                         OSP_IMG_OK);
        assert_int_equal(img.width, cases[i].out_w);
        assert_int_equal(img.height, cases[i].out_h);
        assert_int_equal(ow, w);
        assert_int_equal(oh, h);
        /* The small picture is the big one: compare a few points with the
         * source around the matching position. */
        int d = (w + img.width / 2) / img.width;
        for (int k = 1; k < 4; k++) {
            int x = img.width * k / 4, y = img.height * k / 4;
            const uint8_t *got = img.data + ((size_t)y * img.width + x) * 3;
            const uint8_t *src = rgb + ((size_t)(y * d + d / 2) * w + (x * d + d / 2)) * 3;
            for (int c = 0; c < 3; c++)
                if (abs(got[c] - src[c]) > 4)
                    fail_msg("%dx%d at 1/%d: (%d,%d)[%d] = %d, source %d", w, h, d, x, y, c,
                             got[c], src[c]);
        }
        tjFree(jpg);
        free(rgb);
    }
    osp_image_free(&img);
    osp_decoder_free(dec);
}

/* Damaged JPEGs: refused with libjpeg's reason, never a crash (ASan and
 * UBSan builds run this too). */
static void test_jpeg_corrupt(void **state) {
    (void)state;
    int w = 160, h = 120;
    uint8_t *rgb = make_rgb(w, h);
    unsigned long len;
    unsigned char *jpg = jpeg_encode(rgb, w, h, TJSAMP_420, 90, &len);
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    char err[256];

    /* A JPEG start followed by garbage. */
    uint8_t garbage[4096];
    uint32_t lcg = 7;
    for (size_t i = 0; i < sizeof(garbage); i++) {
        lcg = lcg * 1103515245u + 12345u;
        garbage[i] = (uint8_t)(lcg >> 24);
    }
    garbage[0] = 0xFF, garbage[1] = 0xD8, garbage[2] = 0xFF;
    err[0] = 0;
    assert_int_equal(osp_image_decode(dec, garbage, sizeof(garbage), 0, 0, &img, NULL, NULL, err,
                                      sizeof(err)),
                     OSP_IMG_EDECODE);
    assert_int_equal(strncmp(err, "jpeg decode failed: ", 20), 0);
    assert_true(strlen(err) > 20);

    /* Truncated to half: libjpeg calls it a warning, we call it an error. */
    err[0] = 0;
    assert_int_equal(osp_image_decode(dec, jpg, len / 2, 0, 0, &img, NULL, NULL, err, sizeof(err)),
                     OSP_IMG_EDECODE);
    assert_int_equal(strncmp(err, "jpeg decode failed: ", 20), 0);
    assert_int_equal(img.width, 0); /* nothing half-decoded is offered */

    /* Every truncation, and random byte damage: any answer but a crash is
     * fine, and an answer is OK or EDECODE, nothing else. */
    for (unsigned long cut = 0; cut < len; cut += 13) {
        int rc = osp_image_decode(dec, jpg, cut, 0, 0, &img, NULL, NULL, err, sizeof(err));
        assert_int_equal(rc, OSP_IMG_EDECODE);
    }
    unsigned char *bad = malloc(len);
    for (int round = 0; round < 300; round++) {
        memcpy(bad, jpg, len);
        for (int k = 0; k < 4; k++) {
            lcg = lcg * 1103515245u + 12345u;
            bad[3 + (lcg >> 8) % (len - 3)] = (unsigned char)(lcg >> 24);
        }
        int rc = osp_image_decode(dec, bad, len, round % 3 ? 0 : 40, 40, &img, NULL, NULL, err,
                                  sizeof(err));
        assert_true(rc == OSP_IMG_OK || rc == OSP_IMG_EDECODE);
    }
    free(bad);

    /* Not an image at all, empty, and bad arguments. */
    assert_int_equal(osp_image_decode(dec, (const uint8_t *)"hello", 5, 0, 0, &img, NULL, NULL,
                                      err, sizeof(err)),
                     OSP_IMG_EDECODE);
    assert_non_null(strstr(err, "not a JPEG or PNG"));
    assert_int_equal(osp_image_decode(dec, jpg, 0, 0, 0, &img, NULL, NULL, err, sizeof(err)),
                     OSP_IMG_EDECODE);
    assert_int_equal(osp_image_decode(NULL, jpg, len, 0, 0, &img, NULL, NULL, NULL, 0),
                     OSP_IMG_EINVAL);

    /* The decoder still works after all that. */
    assert_int_equal(osp_image_decode(dec, jpg, len, 0, 0, &img, NULL, NULL, err, sizeof(err)),
                     OSP_IMG_OK);
    assert_int_equal(img.width, w);
    osp_image_free(&img);
    osp_decoder_free(dec);
    tjFree(jpg);
    free(rgb);
}

/* A header claiming 20000 x 20000 is refused before anything is allocated
 * for it. */
static void test_jpeg_too_big(void **state) {
    (void)state;
    uint8_t *rgb = make_rgb(16, 16);
    unsigned long len;
    unsigned char *jpg = jpeg_encode(rgb, 16, 16, TJSAMP_444, 90, &len);
    int patched = 0;
    for (unsigned long i = 2; i + 8 < len; i++) {
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) { /* SOF0: len(2) prec(1) h(2) w(2) */
            jpg[i + 5] = 20000 >> 8, jpg[i + 6] = 20000 & 255;
            jpg[i + 7] = 20000 >> 8, jpg[i + 8] = 20000 & 255;
            patched = 1;
            break;
        }
    }
    assert_true(patched);
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    char err[256] = "";
    assert_int_equal(osp_image_decode(dec, jpg, len, 0, 0, &img, NULL, NULL, err, sizeof(err)),
                     OSP_IMG_EDECODE);
    assert_non_null(strstr(err, "20000x20000"));
    assert_null(img.data);
    osp_decoder_free(dec);
    tjFree(jpg);
    free(rgb);
}

/* A progressive JPEG is held whole (its coefficients) however small it is
 * decoded: with a limit, one past it is refused before its decode, and a
 * baseline one of the same size, decoded at 1/8, is not. */
static void test_progressive_jpeg_is_held_whole(void **state) {
    (void)state;
    uint8_t *rgb = make_rgb(200, 160);
    unsigned long plen, blen;
    unsigned char *prog = jpeg_encode_flags(rgb, 200, 160, TJSAMP_420, 80, TJFLAG_PROGRESSIVE, &plen);
    unsigned char *base = jpeg_encode(rgb, 200, 160, TJSAMP_420, 80, &blen);
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    char err[256] = "";
    /* no limit: decoded, at 1/8 */
    assert_int_equal(osp_image_decode(dec, prog, plen, 25, 20, &img, NULL, NULL, err, sizeof err),
                     OSP_IMG_OK);
    assert_int_equal(img.width, 25);
    osp_decoder_limit_pixels(dec, 10000); /* 200 x 160 is 32000 */
    assert_int_equal(osp_image_decode(dec, base, blen, 25, 20, &img, NULL, NULL, err, sizeof err),
                     OSP_IMG_OK);
    assert_int_equal(img.width, 25);
    assert_int_equal(osp_image_decode(dec, prog, plen, 25, 20, &img, NULL, NULL, err, sizeof err),
                     OSP_IMG_EDECODE);
    assert_non_null(strstr(err, "progressive jpeg decode failed: 200x160 is more than the 10000"));
    /* under the limit it is decoded as before */
    osp_decoder_limit_pixels(dec, 32000);
    assert_int_equal(osp_image_decode(dec, prog, plen, 25, 20, &img, NULL, NULL, err, sizeof err),
                     OSP_IMG_OK);
    osp_image_free(&img);
    osp_decoder_free(dec);
    tjFree(prog);
    tjFree(base);
    free(rgb);
}

static void test_decode_reuses_buffer(void **state) {
    (void)state;
    uint8_t *rgb = make_rgb(640, 480);
    unsigned long len;
    unsigned char *jpg = jpeg_encode(rgb, 640, 480, TJSAMP_420, 90, &len);
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    assert_int_equal(osp_image_decode(dec, jpg, len, 0, 0, &img, NULL, NULL, NULL, 0), OSP_IMG_OK);
    uint8_t *first = img.data;
    size_t cap = img.cap;
    for (int i = 0; i < 3; i++) {
        /* Same size, then the 1/2 scaled decode: both fit what is there. */
        assert_int_equal(osp_image_decode(dec, jpg, len, i == 1 ? 300 : 0, i == 1 ? 200 : 0, &img,
                                          NULL, NULL, NULL, 0),
                         OSP_IMG_OK);
        assert_ptr_equal(img.data, first);
        assert_int_equal(img.cap, cap);
    }
    assert_int_equal(img.width, 640);
    osp_image_free(&img);
    osp_decoder_free(dec);
    tjFree(jpg);
    free(rgb);
}

/* ---- PNG ------------------------------------------------------------------ */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} membuf_t;

static void mem_write(png_structp png, png_bytep data, size_t n) {
    membuf_t *m = png_get_io_ptr(png);
    if (m->len + n > m->cap) {
        m->cap = (m->len + n) * 2;
        m->data = realloc(m->data, m->cap);
        assert_non_null(m->data);
    }
    memcpy(m->data + m->len, data, n);
    m->len += n;
}

static void mem_flush(png_structp png) { (void)png; }

/* Encode rows (rowbytes each, already in the PNG's own sample layout) as a
 * PNG of the given colour type and depth. */
static membuf_t png_make(int w, int h, int ctype, int depth, int interlace, const uint8_t *rows,
                         size_t rowbytes, const png_color *pal, int npal) {
    membuf_t m = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(png))) fail_msg("libpng could not write the test image");
    png_set_write_fn(png, &m, mem_write, mem_flush);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, depth, ctype, interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (pal) png_set_PLTE(png, info, pal, npal);
    png_write_info(png, info);
    int passes = png_set_interlace_handling(png);
    for (int p = 0; p < passes; p++)
        for (int y = 0; y < h; y++) png_write_row(png, rows + (size_t)y * rowbytes);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return m;
}

/* Decode and compare with the expected RGB; tol in levels. */
static void expect_png(const membuf_t *m, int w, int h, const uint8_t *want, int tol) {
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    char err[256] = "";
    int ow = 0, oh = 0;
    int rc = osp_image_decode(dec, m->data, m->len, 0, 0, &img, &ow, &oh, err, sizeof(err));
    if (rc != OSP_IMG_OK) fail_msg("decode failed: %s", err);
    assert_int_equal(img.width, w);
    assert_int_equal(img.height, h);
    assert_int_equal(ow, w);
    assert_int_equal(oh, h);
    for (size_t i = 0; i < (size_t)w * h * 3; i++)
        if (abs(img.data[i] - want[i]) > tol)
            fail_msg("byte %zu: got %d want %d", i, img.data[i], want[i]);
    osp_image_free(&img);
    osp_decoder_free(dec);
}

static void test_png_layouts(void **state) {
    (void)state;
    enum { W = 13, H = 7 }; /* odd sizes: row padding and interlace edges */
    uint8_t want[H][W][3];
    uint8_t rows[H][W * 8];

    /* 8-bit RGB, plain and Adam7-interlaced. */
    uint8_t *rgb = make_rgb(W, H);
    for (int il = 0; il < 2; il++) {
        membuf_t m = png_make(W, H, PNG_COLOR_TYPE_RGB, 8, il ? PNG_INTERLACE_ADAM7 : 0, rgb,
                              W * 3, NULL, 0);
        expect_png(&m, W, H, rgb, 0);
        free(m.data);
    }

    /* 16-bit RGB: scaled to 8 bits with rounding, v / 257 to the nearest.
     * 0x01F0 is 1.93 -> 2 (stripping the low byte would give 1). */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int c = 0; c < 3; c++) {
                unsigned v = c == 0 ? 0x01F0u : c == 1 ? (unsigned)(x * 5000 + y) : 0xFFFFu;
                rows[y][(x * 3 + c) * 2] = (uint8_t)(v >> 8);
                rows[y][(x * 3 + c) * 2 + 1] = (uint8_t)v;
                want[y][x][c] = (uint8_t)((v + 128) / 257);
            }
    membuf_t m = png_make(W, H, PNG_COLOR_TYPE_RGB, 16, 0, &rows[0][0], W * 8, NULL, 0);
    expect_png(&m, W, H, &want[0][0][0], 0);
    free(m.data);

    /* 8-bit gray: replicated into R, G, B. */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            rows[y][x] = (uint8_t)(x * 19 + y * 3);
            memset(want[y][x], rows[y][x], 3);
        }
    m = png_make(W, H, PNG_COLOR_TYPE_GRAY, 8, 0, &rows[0][0], sizeof(rows[0]), NULL, 0);
    expect_png(&m, W, H, &want[0][0][0], 0);
    free(m.data);

    /* 1-bit gray: 0 -> 0, 1 -> 255. */
    memset(rows, 0, sizeof(rows));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int on = (x + y) % 3 == 0;
            if (on) rows[y][x / 8] |= (uint8_t)(0x80 >> (x % 8));
            memset(want[y][x], on ? 255 : 0, 3);
        }
    m = png_make(W, H, PNG_COLOR_TYPE_GRAY, 1, 0, &rows[0][0], sizeof(rows[0]), NULL, 0);
    expect_png(&m, W, H, &want[0][0][0], 0);
    free(m.data);

    /* 4-bit palette. */
    const png_color pal[3] = {{255, 0, 0}, {0, 128, 0}, {10, 20, 250}};
    memset(rows, 0, sizeof(rows));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            int idx = (x * 7 + y) % 3;
            rows[y][x / 2] |= (uint8_t)(idx << (x % 2 ? 0 : 4));
            want[y][x][0] = pal[idx].red;
            want[y][x][1] = pal[idx].green;
            want[y][x][2] = pal[idx].blue;
        }
    m = png_make(W, H, PNG_COLOR_TYPE_PALETTE, 4, 0, &rows[0][0], sizeof(rows[0]), pal, 3);
    expect_png(&m, W, H, &want[0][0][0], 0);
    free(m.data);

    /* 8-bit RGBA: the alpha goes, the colour under it stays. */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const uint8_t *s = rgb + ((size_t)y * W + x) * 3;
            memcpy(&rows[y][x * 4], s, 3);
            rows[y][x * 4 + 3] = (uint8_t)(x * 20);
            memcpy(want[y][x], s, 3);
        }
    m = png_make(W, H, PNG_COLOR_TYPE_RGB_ALPHA, 8, 0, &rows[0][0], sizeof(rows[0]), NULL, 0);
    expect_png(&m, W, H, &want[0][0][0], 0);
    free(m.data);

    /* 16-bit gray + alpha. */
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            unsigned v = (unsigned)(x * 4000 + y * 100);
            rows[y][x * 4] = (uint8_t)(v >> 8), rows[y][x * 4 + 1] = (uint8_t)v;
            rows[y][x * 4 + 2] = 0x12, rows[y][x * 4 + 3] = 0x34;
            memset(want[y][x], (int)((v + 128) / 257), 3);
        }
    m = png_make(W, H, PNG_COLOR_TYPE_GRAY_ALPHA, 16, 0, &rows[0][0], sizeof(rows[0]), NULL, 0);
    expect_png(&m, W, H, &want[0][0][0], 0);
    free(m.data);
    free(rgb);
}

static void test_png_corrupt(void **state) {
    (void)state;
    uint8_t *rgb = make_rgb(64, 48);
    membuf_t m = png_make(64, 48, PNG_COLOR_TYPE_RGB, 8, 0, rgb, 64 * 3, NULL, 0);
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    char err[256] = "";

    assert_int_equal(osp_image_decode(dec, m.data, m.len / 2, 0, 0, &img, NULL, NULL, err, sizeof(err)),
                     OSP_IMG_EDECODE);
    assert_int_equal(strncmp(err, "png decode failed: ", 19), 0);
    assert_true(strlen(err) > 19);

    for (size_t cut = 0; cut < m.len - 12; cut += 7) { /* the last 12 bytes are IEND */
        int rc = osp_image_decode(dec, m.data, cut, 0, 0, &img, NULL, NULL, err, sizeof(err));
        assert_int_equal(rc, OSP_IMG_EDECODE);
    }
    uint8_t *bad = malloc(m.len);
    uint32_t lcg = 99;
    for (int round = 0; round < 300; round++) {
        memcpy(bad, m.data, m.len);
        for (int k = 0; k < 3; k++) {
            lcg = lcg * 1103515245u + 12345u;
            bad[8 + (lcg >> 8) % (m.len - 8)] = (uint8_t)(lcg >> 24);
        }
        int rc = osp_image_decode(dec, bad, m.len, 0, 0, &img, NULL, NULL, err, sizeof(err));
        assert_true(rc == OSP_IMG_OK || rc == OSP_IMG_EDECODE);
    }
    free(bad);

    /* A genuine PNG wider than the limit: refused by its header. */
    size_t wide = OSP_IMG_MAX_SIDE + 1;
    uint8_t *row = calloc(1, wide);
    membuf_t big = png_make((int)wide, 1, PNG_COLOR_TYPE_GRAY, 8, 0, row, wide, NULL, 0);
    assert_int_equal(osp_image_decode(dec, big.data, big.len, 0, 0, &img, NULL, NULL, err, sizeof(err)),
                     OSP_IMG_EDECODE);
    assert_int_equal(strncmp(err, "png decode failed: ", 19), 0);
    free(big.data);
    free(row);

    osp_image_free(&img);
    osp_decoder_free(dec);
    free(m.data);
    free(rgb);
}

/* ---- saving ----------------------------------------------------------------- */

static void test_png_save_round_trip(void **state) {
    (void)state;
    int w = 37, h = 23;
    uint8_t *rgb = make_rgb(w, h);
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    char path[256], err[256] = "";
    tmp_path(path, sizeof(path), "rt.png");

    /* RGB, exact. */
    osp_view_t v;
    assert_int_equal(osp_view_wrap(rgb, (size_t)w * h * 3, w, h, OSP_PIX_RGB, &v, NULL, 0),
                     OSP_IMG_OK);
    assert_int_equal(osp_image_save(dec, &v, path, err, sizeof(err)), OSP_IMG_OK);
    assert_int_equal(osp_image_load(dec, path, &img, err, sizeof(err)), OSP_IMG_OK);
    assert_int_equal(img.width, w);
    assert_int_equal(img.height, h);
    assert_memory_equal(img.data, rgb, (size_t)w * h * 3);

    /* The same bytes as BGR come back with R and B swapped. */
    v.fmt = OSP_PIX_BGR;
    assert_int_equal(osp_image_save(dec, &v, path, err, sizeof(err)), OSP_IMG_OK);
    assert_int_equal(osp_image_load(dec, path, &img, err, sizeof(err)), OSP_IMG_OK);
    for (int i = 0; i < w * h; i++) {
        assert_int_equal(img.data[i * 3], rgb[i * 3 + 2]);
        assert_int_equal(img.data[i * 3 + 1], rgb[i * 3 + 1]);
        assert_int_equal(img.data[i * 3 + 2], rgb[i * 3]);
    }

    /* Gray, from a view with a stride wider than its rows. */
    osp_view_t g = {rgb, w, h, w * 3, OSP_PIX_GRAY};
    assert_int_equal(osp_image_save(dec, &g, path, err, sizeof(err)), OSP_IMG_OK);
    assert_int_equal(osp_image_load(dec, path, &img, err, sizeof(err)), OSP_IMG_OK);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                assert_int_equal(img.data[(y * w + x) * 3 + c], rgb[y * w * 3 + x]);

    remove(path);
    osp_image_free(&img);
    osp_decoder_free(dec);
    free(rgb);
}

static void test_jpeg_save_and_errors(void **state) {
    (void)state;
    int w = 64, h = 48;
    uint8_t *rgb = make_rgb(w, h);
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    osp_view_t v = {rgb, w, h, w * 3, OSP_PIX_RGB};
    char path[256], err[256] = "";

    tmp_path(path, sizeof(path), "snap.JPG"); /* extensions are case-blind */
    assert_int_equal(osp_image_save(dec, &v, path, err, sizeof(err)), OSP_IMG_OK);
    assert_int_equal(osp_image_load(dec, path, &img, err, sizeof(err)), OSP_IMG_OK);
    assert_int_equal(img.width, w);
    assert_true(mean_abs_diff(img.data, rgb, (size_t)w * h * 3) < 3);
    remove(path);

    tmp_path(path, sizeof(path), "snap.bmp");
    assert_int_equal(osp_image_save(dec, &v, path, err, sizeof(err)), OSP_IMG_EINVAL);
    assert_non_null(strstr(err, "extension"));
    assert_int_equal(osp_image_save(dec, &v, "/nonexistent-dir/x.png", err, sizeof(err)), OSP_IMG_EIO);
    assert_int_equal(osp_image_load(dec, "/nonexistent-dir/x.png", &img, err, sizeof(err)),
                     OSP_IMG_EIO);
    osp_view_t bad = v;
    bad.stride = 2;
    assert_int_equal(osp_image_save(dec, &bad, "/tmp/x.png", err, sizeof(err)), OSP_IMG_EINVAL);

    /* A file that is not an image. */
    tmp_path(path, sizeof(path), "not.png");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs("definitely not a png", f);
    fclose(f);
    assert_int_equal(osp_image_load(dec, path, &img, err, sizeof(err)), OSP_IMG_EDECODE);
    remove(path);

    osp_image_free(&img);
    osp_decoder_free(dec);
    free(rgb);
}

/* ---- real media, when the cache has it ------------------------------------ */

static void test_real_media(void **state) {
    (void)state;
    char cache[400], jpg[512], png[512];
    osp_cache_dir(cache, sizeof cache);
    snprintf(jpg, sizeof(jpg), "%s/media/messi5.jpg", cache);
    snprintf(png, sizeof(png), "%s/media/chelsea.png", cache);
    if (access(jpg, R_OK) != 0 || access(png, R_OK) != 0) {
        print_message("media cache absent, skipping\n");
        skip();
    }
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    char err[256] = "";
    assert_int_equal(osp_image_load(dec, jpg, &img, err, sizeof(err)), OSP_IMG_OK);
    assert_true(img.width > 100 && img.height > 100);
    /* A real photo is not flat: its channels differ somewhere. */
    size_t differ = 0;
    for (size_t i = 0; i < (size_t)img.width * img.height; i++)
        differ += img.data[i * 3] != img.data[i * 3 + 2];
    assert_true(differ > (size_t)img.width * img.height / 4);
    assert_int_equal(osp_image_load(dec, png, &img, err, sizeof(err)), OSP_IMG_OK);
    assert_true(img.width > 100 && img.height > 100);
    osp_image_free(&img);
    osp_decoder_free(dec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_denom),
        cmocka_unit_test(test_jpeg_round_trip),
        cmocka_unit_test(test_jpeg_scaled_decode),
        cmocka_unit_test(test_jpeg_corrupt),
        cmocka_unit_test(test_jpeg_too_big),
        cmocka_unit_test(test_decode_reuses_buffer),
        cmocka_unit_test(test_png_layouts),
        cmocka_unit_test(test_png_corrupt),
        cmocka_unit_test(test_png_save_round_trip),
        cmocka_unit_test(test_jpeg_save_and_errors),
        cmocka_unit_test(test_real_media),
        cmocka_unit_test(test_progressive_jpeg_is_held_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
