/*
 * libFuzzer target for the image bytes a peer sends (infer_jpeg, a batch's
 * JPEG items): src/image/decode.c, osprey's wrapper over TurboJPEG and
 * libpng, as the server calls it (osp_image_decode with the model's input
 * size, so a large JPEG takes the scaled path).
 *
 * For every input:
 *  - a decode either fails with a reason that names the format ("jpeg
 *    decode failed: …", "png decode failed: …", "not a JPEG or PNG image
 *    …") and leaves an empty picture, or gives RGB within the side cap
 *    whose every byte is read here (an overread of the buffer shows); a
 *    JPEG decoded smaller is exactly its size over the factor
 *    osp_jpeg_scale_denom chose, a PNG is never scaled;
 *  - the same bytes again into the same picture and decoder give the same
 *    answer (a failure must not spoil the decoder for what follows);
 *  - the same bytes row by row (osp_image_decode_rows, how the server
 *    reads a PNG into a tensor): every row once, in order, within the
 *    picture, and the same picture (size and bytes) a whole decode gave;
 *    declined (ENOTROWS) only for what is not a non-interlaced PNG; and
 *    under a pixel limit below its size a whole decode fails;
 *  - then a small valid JPEG and PNG made here must still decode (the
 *    handle a failed decode left behind is still good).
 * The target keeps the two reference images between inputs (made once, the
 * same each time) and nothing else. See README.md.
 *
 * Input: [u8 ctl][image bytes]; ctl's low and high nibbles times 16 are
 * the width and height the caller wants (0: full size).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <png.h>
#include <turbojpeg.h>

#include "image/image.h"
#include "check.h"

#define REF_SIDE 16

static unsigned char *ref_jpeg;
static unsigned long ref_jpeg_len;
static uint8_t *ref_png;
static size_t ref_png_len;

static void ref_pixels(uint8_t *px) {
    for (int i = 0; i < REF_SIDE * REF_SIDE * 3; i++) px[i] = (uint8_t)(i * 7);
}

static void make_ref_jpeg(void) {
    uint8_t px[REF_SIDE * REF_SIDE * 3];
    ref_pixels(px);
    tjhandle cj = tjInitCompress();
    CHECK(cj);
    CHECK(tjCompress2(cj, px, REF_SIDE, 0, REF_SIDE, TJPF_RGB, &ref_jpeg, &ref_jpeg_len,
                      TJSAMP_420, 90, 0) == 0);
    tjDestroy(cj);
}

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* One chunk: length, type, data, CRC over type and data. */
static size_t put_chunk(uint8_t *out, const char *type, const uint8_t *data, uint32_t n) {
    put32(out, n);
    memcpy(out + 4, type, 4);
    if (n) memcpy(out + 8, data, n);
    put32(out + 8 + n, (uint32_t)crc32(0, out + 4, n + 4));
    return 12 + n;
}

/* An 8-bit RGB PNG, written by hand so the target needs only the decoder. */
static void make_ref_png(void) {
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t px[REF_SIDE * REF_SIDE * 3], raw[REF_SIDE * (1 + REF_SIDE * 3)];
    ref_pixels(px);
    for (int y = 0; y < REF_SIDE; y++) {
        raw[y * (1 + REF_SIDE * 3)] = 0; /* filter: none */
        memcpy(raw + y * (1 + REF_SIDE * 3) + 1, px + y * REF_SIDE * 3, REF_SIDE * 3);
    }
    uLongf zlen = compressBound(sizeof raw);
    uint8_t *z = malloc(zlen);
    CHECK(z && compress(z, &zlen, raw, sizeof raw) == Z_OK);
    uint8_t ihdr[13] = {0};
    put32(ihdr, REF_SIDE);
    put32(ihdr + 4, REF_SIDE);
    ihdr[8] = 8; /* depth */
    ihdr[9] = 2; /* RGB */
    ref_png = malloc(8 + 25 + 12 + zlen + 12);
    CHECK(ref_png);
    memcpy(ref_png, sig, 8);
    size_t n = 8;
    n += put_chunk(ref_png + n, "IHDR", ihdr, sizeof ihdr);
    n += put_chunk(ref_png + n, "IDAT", z, (uint32_t)zlen);
    n += put_chunk(ref_png + n, "IEND", NULL, 0);
    ref_png_len = n;
    free(z);
}

/* What one decode gave, to compare a second decode of the same bytes. */
typedef struct {
    int rc, w, h, ow, oh;
    unsigned long sum;
} outcome_t;

static outcome_t decode(osp_decoder_t *dec, const uint8_t *buf, size_t len, int want_w, int want_h,
                        osp_image_t *img) {
    outcome_t o = {0};
    char err[256] = "";
    o.ow = o.oh = -1;
    o.rc = osp_image_decode(dec, buf, len, want_w, want_h, img, &o.ow, &o.oh, err, sizeof err);
    CHECK(strlen(err) < sizeof err);
    if (o.rc != OSP_IMG_OK) {
        CHECK(o.rc == OSP_IMG_EDECODE || o.rc == OSP_IMG_ENOMEM);
        CHECK(strncmp(err, "jpeg decode failed: ", 20) == 0 ||
              strncmp(err, "png decode failed: ", 19) == 0 ||
              strncmp(err, "not a JPEG or PNG image", 23) == 0);
        CHECK(img->width == 0 && img->height == 0);
        return o;
    }
    o.w = img->width;
    o.h = img->height;
    CHECK(img->fmt == OSP_PIX_RGB && img->stride == o.w * 3);
    CHECK(o.w >= 1 && o.h >= 1 && o.ow <= OSP_IMG_MAX_SIDE && o.oh <= OSP_IMG_MAX_SIDE);
    int is_jpeg = len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF;
    if (is_jpeg) {
        int d = osp_jpeg_scale_denom(o.ow, o.oh, want_w, want_h);
        CHECK(o.w == (o.ow + d - 1) / d && o.h == (o.oh + d - 1) / d);
    } else {
        CHECK(o.w == o.ow && o.h == o.oh);
    }
    for (size_t i = 0; i < (size_t)o.h * (size_t)img->stride; i++) o.sum += img->data[i];
    return o;
}

/* A sink that checks the rows it is handed and sums them. */
typedef struct {
    int w, h, began, seen;
    unsigned long sum;
} rows_seen_t;

static int sink_begin(void *arg, int w, int h, char *err, size_t errlen) {
    (void)err, (void)errlen;
    rows_seen_t *r = arg;
    CHECK(!r->began && w >= 1 && h >= 1 && w <= OSP_IMG_MAX_SIDE && h <= OSP_IMG_MAX_SIDE);
    r->began = 1, r->w = w, r->h = h;
    return 0;
}

static void sink_rows(void *arg, const uint8_t *rows, size_t stride, int n) {
    rows_seen_t *r = arg;
    CHECK(r->began && n >= 1 && r->seen + n <= r->h && stride >= (size_t)r->w * 3);
    for (int y = 0; y < n; y++)
        for (int x = 0; x < r->w * 3; x++) r->sum += rows[(size_t)y * stride + (size_t)x];
    r->seen += n;
}

static void by_rows(osp_decoder_t *dec, const uint8_t *buf, size_t len, const outcome_t *whole) {
    rows_seen_t r = {0};
    osp_row_sink_t sink = {sink_begin, sink_rows, &r};
    char err[256] = "";
    int rc = osp_image_decode_rows(dec, buf, len, &sink, err, sizeof err);
    int is_png = len >= 8 && memcmp(buf, "\x89PNG\r\n\x1a\n", 8) == 0;
    if (rc == OSP_IMG_ENOTROWS) {
        CHECK(!r.began);
        /* a PNG declined is an interlaced one: byte 28 of a well-formed IHDR */
        if (is_png && whole->rc == OSP_IMG_OK) CHECK(len > 28 && buf[28] == 1);
        return;
    }
    CHECK(is_png);
    if (rc != OSP_IMG_OK) {
        CHECK(strncmp(err, "png decode failed: ", 19) == 0);
        CHECK(whole->rc != OSP_IMG_OK);
        return;
    }
    CHECK(whole->rc == OSP_IMG_OK && r.seen == r.h && r.w == whole->w && r.h == whole->h);
    CHECK(r.sum == whole->sum);
    /* held whole under a limit below its size, it is refused */
    if ((size_t)r.w * (size_t)r.h > 1) {
        osp_image_t img = {0};
        osp_decoder_limit_pixels(dec, (size_t)r.w * (size_t)r.h - 1);
        outcome_t o = decode(dec, buf, len, 0, 0, &img);
        CHECK(o.rc == OSP_IMG_EDECODE);
        osp_decoder_limit_pixels(dec, 0);
        osp_image_free(&img);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!ref_jpeg) {
        make_ref_jpeg();
        make_ref_png();
    }
    if (size < 1) return 0;
    int want_w = (data[0] & 0x0f) * 16, want_h = (data[0] >> 4) * 16;
    size_t n = size - 1;
    uint8_t *buf = malloc(n ? n : 1); /* exactly sized: an overread shows */
    CHECK(buf);
    if (n) memcpy(buf, data + 1, n);

    osp_decoder_t *dec = osp_decoder_new();
    CHECK(dec);
    osp_image_t img = {0};
    outcome_t a = decode(dec, buf, n, want_w, want_h, &img);
    outcome_t b = decode(dec, buf, n, want_w, want_h, &img);
    CHECK(a.rc == b.rc && a.w == b.w && a.h == b.h && a.sum == b.sum);
    if (a.rc == OSP_IMG_OK) CHECK(a.ow == b.ow && a.oh == b.oh);
    by_rows(dec, buf, n, &a);

    outcome_t j = decode(dec, ref_jpeg, ref_jpeg_len, 0, 0, &img);
    CHECK(j.rc == OSP_IMG_OK && j.w == REF_SIDE && j.h == REF_SIDE);
    outcome_t p = decode(dec, ref_png, ref_png_len, 0, 0, &img);
    CHECK(p.rc == OSP_IMG_OK && p.w == REF_SIDE && p.h == REF_SIDE);

    osp_image_free(&img);
    osp_decoder_free(dec);
    free(buf);
    return 0;
}
