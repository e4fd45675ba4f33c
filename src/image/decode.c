/*
 * decode: JPEG (libjpeg-turbo's TurboJPEG API) and PNG (libpng) bytes to
 * RGB in a reusable osp_image_t. Every failure of the bytes is an
 * OSP_IMG_EDECODE with the library's reason in err; nothing a peer sends
 * may crash or leak, which is why libpng's longjmp is confined to one small
 * function (png_read_body) that owns no memory.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "image/internal.h"

/* A file passed to osp_image_load bigger than this is not a snapshot or a
 * test image but a mistake; refusing it beats reading it all into memory. */
#define OSP_IMG_MAX_FILE (256u << 20)

/* TurboJPEG takes lengths as unsigned long. */
_Static_assert(sizeof(size_t) <= sizeof(unsigned long), "size_t wider than unsigned long");

osp_decoder_t *osp_decoder_new(void) {
    osp_decoder_t *dec = calloc(1, sizeof(*dec));
    if (!dec) return NULL;
    dec->dj = tjInitDecompress();
    if (!dec->dj) {
        free(dec);
        return NULL;
    }
    return dec;
}

void osp_decoder_free(osp_decoder_t *dec) {
    if (!dec) return;
    if (dec->dj) tjDestroy(dec->dj);
    if (dec->cj) tjDestroy(dec->cj);
    osp_image_free(&dec->row);
    free(dec);
}

void osp_decoder_limit_pixels(osp_decoder_t *dec, size_t max_pixels) {
    if (dec) dec->max_pixels = max_pixels;
}

/* Whether a w x h frame may be held whole; the reason in err if not. */
static int whole_ok(const osp_decoder_t *dec, const char *what, int w, int h, char *err,
                    size_t errlen) {
    if (!dec->max_pixels || (size_t)w * (size_t)h <= dec->max_pixels) return 1;
    osp_image_seterr(err, errlen, "%s decode failed: %dx%d is more than the %zu pixels held whole",
                     what, w, h, dec->max_pixels);
    return 0;
}

int osp_jpeg_scale_denom(int w, int h, int want_w, int want_h) {
    if (want_w <= 0 || want_h <= 0 || w <= 0 || h <= 0) return 1;
    static const int denoms[] = {8, 4, 2};
    for (size_t i = 0; i < sizeof(denoms) / sizeof(denoms[0]); i++) {
        int d = denoms[i];
        if ((long long)w >= (long long)want_w * d && (long long)h >= (long long)want_h * d)
            return d;
    }
    return 1;
}

/* The 1/d factor as libjpeg-turbo knows it; d = 1 when this build cannot
 * scale by 1/d (every build since 1.2 can, but the list is the authority). */
static tjscalingfactor jpeg_factor(int d) {
    tjscalingfactor one = {1, 1};
    int n = 0;
    tjscalingfactor *sf = tjGetScalingFactors(&n);
    for (int i = 0; sf && i < n; i++)
        if (sf[i].num == 1 && sf[i].denom == d) return sf[i];
    return one;
}

/* Report a TurboJPEG failure and replace the handle. libjpeg-turbo 2.1's
 * tjDecompressHeader3 returns from its error longjmp without aborting the
 * decompressor, and the next, valid, JPEG then fails too ("Bogus Huffman
 * table definition", found by test_jpeg_corrupt). A fresh handle costs an
 * allocation, on the error path only. */
static int jpeg_fail(osp_decoder_t *dec, char *err, size_t errlen) {
    osp_image_seterr(err, errlen, "jpeg decode failed: %s", tjGetErrorStr2(dec->dj));
    tjDestroy(dec->dj);
    dec->dj = tjInitDecompress(); /* NULL is retried by the next decode */
    return OSP_IMG_EDECODE;
}

/* Whether a JPEG (already read as one by TurboJPEG's header) is
 * progressive: its frame header is SOF2, SOF6, SOF10 or SOF14. Read from
 * the markers, as TurboJPEG 2.1 does not say. */
static int jpeg_progressive(const uint8_t *buf, size_t len) {
    size_t i = 2;
    while (i + 4 <= len) {
        if (buf[i] != 0xFF) return 0;
        uint8_t m = buf[i + 1];
        if (m == 0xFF) { /* fill */
            i++;
            continue;
        }
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC)
            return m == 0xC2 || m == 0xC6 || m == 0xCA || m == 0xCE;
        if (m == 0xDA || m == 0xD9) return 0;
        i += 2 + ((size_t)buf[i + 2] << 8 | buf[i + 3]);
    }
    return 0;
}

static int decode_jpeg(osp_decoder_t *dec, const uint8_t *buf, size_t len, int want_w, int want_h,
                       osp_image_t *out, int *orig_w, int *orig_h, char *err, size_t errlen) {
    if (!dec->dj && !(dec->dj = tjInitDecompress())) {
        osp_image_seterr(err, errlen, "jpeg decode failed: no decompressor (out of memory)");
        return OSP_IMG_ENOMEM;
    }
    int w = 0, h = 0, subsamp = 0, cs = 0;
    if (tjDecompressHeader3(dec->dj, buf, (unsigned long)len, &w, &h, &subsamp, &cs) != 0)
        return jpeg_fail(dec, err, errlen);
    if (w <= 0 || h <= 0 || w > OSP_IMG_MAX_SIDE || h > OSP_IMG_MAX_SIDE) {
        osp_image_seterr(err, errlen, "jpeg decode failed: %dx%d exceeds %d per side", w, h,
                         OSP_IMG_MAX_SIDE);
        return OSP_IMG_EDECODE;
    }
    /* a progressive JPEG is held whole however small it is decoded: its
     * coefficients, 2 bytes a sample, until its last scan (an 845 KB one
     * of 12000 x 12000 pixels takes 430 MB) */
    if (jpeg_progressive(buf, len) && !whole_ok(dec, "progressive jpeg", w, h, err, errlen))
        return OSP_IMG_EDECODE;
    tjscalingfactor sf = jpeg_factor(osp_jpeg_scale_denom(w, h, want_w, want_h));
    int sw = TJSCALED(w, sf), sh = TJSCALED(h, sf);
    if (!whole_ok(dec, "jpeg", sw, sh, err, errlen)) return OSP_IMG_EDECODE;
    if (osp_image_reserve(out, sw, sh, OSP_PIX_RGB) != OSP_IMG_OK) {
        osp_image_seterr(err, errlen, "jpeg decode failed: out of memory for %dx%d", sw, sh);
        return OSP_IMG_ENOMEM;
    }
    /* STOPONWARNING: a truncated or corrupt stream is only a "warning" to
     * libjpeg, which then returns a grey-filled picture; detections on it
     * would be confidently wrong, so it is refused like any other damage.
     * LIMITSCANS: a hostile progressive JPEG can demand thousands of scans
     * and burn seconds of CPU per frame. */
    if (tjDecompress2(dec->dj, buf, (unsigned long)len, out->data, sw, out->stride, sh, TJPF_RGB,
                      TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
        out->width = out->height = 0;
        return jpeg_fail(dec, err, errlen);
    }
    if (orig_w) *orig_w = w;
    if (orig_h) *orig_h = h;
    return OSP_IMG_OK;
}

/* ---- PNG ----------------------------------------------------------------- */

/* State shared with libpng's callbacks; it lives in decode_png's frame, not
 * in png_read_body's, so that longjmp never leaves it indeterminate. */
typedef struct {
    const uint8_t *buf;
    size_t len, pos;
    osp_image_t *out;           /* the picture, or one row of it when sink is set */
    const osp_row_sink_t *sink; /* rows go here as they are read; NULL: whole into out */
    size_t max_pixels;          /* whole: at most this many (0: no limit) */
    int rc;                     /* the error png_read_body reports */
    char msg[160];              /* libpng's reason */
} png_job_t;

static void png_on_error(png_structp png, png_const_charp msg) {
    png_job_t *job = png_get_error_ptr(png);
    snprintf(job->msg, sizeof(job->msg), "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}

/* Warnings (bad gamma chunks, unknown ancillary chunks) do not stop the
 * decode, and stderr is no place for per-frame noise. */
static void png_on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static void png_on_read(png_structp png, png_bytep dst, size_t n) {
    png_job_t *job = png_get_io_ptr(png);
    if (n > job->len - job->pos)
        png_error(png, "truncated data (read past the end of the buffer)");
    memcpy(dst, job->buf + job->pos, n);
    job->pos += n;
}

/* Everything between setjmp and the last libpng call. It allocates nothing
 * itself: the only memory it touches is job->out, which its owner keeps
 * either way, so a longjmp out of libpng cannot leak. */
static int png_read_body(png_structp png, png_infop info, png_job_t *job) {
    if (setjmp(png_jmpbuf(png))) return job->rc ? job->rc : OSP_IMG_EDECODE;

    png_set_user_limits(png, OSP_IMG_MAX_SIDE, OSP_IMG_MAX_SIDE);
    png_read_info(png, info);

    png_uint_32 w = 0, h = 0;
    int depth = 0, ctype = 0, interlace = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &ctype, &interlace, NULL, NULL);

    /* Whatever the file holds, ask libpng for 8-bit RGB: palette and low
     * bit depths expand, 16-bit rounds down to 8 (scale, not strip, so that
     * 0xFFFF stays 255 and rounding is fair), gray replicates, alpha is
     * dropped (the colour under it is kept, as OpenCV's imread does). */
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if ((ctype & PNG_COLOR_MASK_COLOR) == 0 && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_scale_16(png);
    if ((ctype & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
    if (ctype & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, info);

    if (png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8 ||
        png_get_rowbytes(png, info) != (size_t)w * 3)
        png_error(png, "unsupported pixel layout after conversion");
    if (job->sink) {
        /* interlaced rows are complete only after the last pass */
        if (passes != 1) return OSP_IMG_ENOTROWS;
        int rc = job->sink->begin(job->sink->ctx, (int)w, (int)h, job->msg, sizeof job->msg);
        if (rc) return rc;
        job->rc = osp_image_reserve(job->out, (int)w, 1, OSP_PIX_RGB);
        if (job->rc != OSP_IMG_OK) png_error(png, "out of memory");
        job->rc = 0;
        for (png_uint_32 y = 0; y < h; y++) {
            png_read_row(png, job->out->data, NULL);
            job->sink->rows(job->sink->ctx, job->out->data, (size_t)w * 3, 1);
        }
        return OSP_IMG_OK;
    }
    if (job->max_pixels && (size_t)w * h > job->max_pixels) {
        snprintf(job->msg, sizeof job->msg, "%ux%u is more than the %zu pixels held whole",
                 (unsigned)w, (unsigned)h, job->max_pixels);
        return OSP_IMG_EDECODE;
    }
    job->rc = osp_image_reserve(job->out, (int)w, (int)h, OSP_PIX_RGB);
    if (job->rc != OSP_IMG_OK) png_error(png, "out of memory");
    job->rc = 0;

    /* Row by row into the caller's buffer (libpng merges the interlace
     * passes in place), so no row-pointer array is allocated per image. */
    for (int p = 0; p < passes; p++)
        for (png_uint_32 y = 0; y < h; y++)
            png_read_row(png, job->out->data + (size_t)y * job->out->stride, NULL);
    return OSP_IMG_OK;
}

static int decode_png(const uint8_t *buf, size_t len, osp_image_t *out, const osp_row_sink_t *sink,
                      size_t max_pixels, int *orig_w, int *orig_h, char *err, size_t errlen) {
    png_job_t job = {.buf = buf, .len = len, .out = out, .sink = sink, .max_pixels = max_pixels};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, png_on_error,
                                             png_on_warning);
    if (!png) {
        osp_image_seterr(err, errlen, "png decode failed: out of memory");
        return OSP_IMG_ENOMEM;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        osp_image_seterr(err, errlen, "png decode failed: out of memory");
        return OSP_IMG_ENOMEM;
    }
    png_set_read_fn(png, &job, png_on_read);
    int rc = png_read_body(png, info, &job);
    png_destroy_read_struct(&png, &info, NULL);
    if (rc == OSP_IMG_ENOTROWS) return rc;
    if (rc != OSP_IMG_OK) {
        out->width = out->height = 0;
        osp_image_seterr(err, errlen, "png decode failed: %s", job.msg);
        return rc;
    }
    if (sink) return OSP_IMG_OK;
    if (orig_w) *orig_w = out->width;
    if (orig_h) *orig_h = out->height;
    return OSP_IMG_OK;
}

/* ---- entry points ---------------------------------------------------------- */

static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static int is_png(const uint8_t *buf, size_t len) {
    return len >= sizeof(png_sig) && memcmp(buf, png_sig, sizeof(png_sig)) == 0;
}

int osp_image_decode_rows(osp_decoder_t *dec, const uint8_t *buf, size_t len,
                          const osp_row_sink_t *sink, char *err, size_t errlen) {
    if (!dec || !sink || !sink->begin || !sink->rows || (!buf && len)) {
        osp_image_seterr(err, errlen, "bad arguments");
        return OSP_IMG_EINVAL;
    }
    if (!is_png(buf, len)) return OSP_IMG_ENOTROWS;
    return decode_png(buf, len, &dec->row, sink, 0, NULL, NULL, err, errlen);
}

int osp_image_decode(osp_decoder_t *dec, const uint8_t *buf, size_t len, int want_w, int want_h,
                     osp_image_t *out, int *orig_w, int *orig_h, char *err, size_t errlen) {
    if (!dec || !out || (!buf && len)) {
        osp_image_seterr(err, errlen, "bad arguments");
        return OSP_IMG_EINVAL;
    }
    if (len >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF)
        return decode_jpeg(dec, buf, len, want_w, want_h, out, orig_w, orig_h, err, errlen);
    if (is_png(buf, len))
        return decode_png(buf, len, out, NULL, dec->max_pixels, orig_w, orig_h, err, errlen);
    osp_image_seterr(err, errlen, "not a JPEG or PNG image (%zu bytes)", len);
    return OSP_IMG_EDECODE;
}

int osp_image_load(osp_decoder_t *dec, const char *path, osp_image_t *out, char *err, size_t errlen) {
    if (!dec || !path || !out) {
        osp_image_seterr(err, errlen, "bad arguments");
        return OSP_IMG_EINVAL;
    }
    int rc = OSP_IMG_EIO;
    uint8_t *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        osp_image_seterr(err, errlen, "cannot open %s", path);
        return OSP_IMG_EIO;
    }
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0) {
        osp_image_seterr(err, errlen, "cannot read %s", path);
        goto done;
    }
    if (size == 0 || (unsigned long)size > OSP_IMG_MAX_FILE) {
        osp_image_seterr(err, errlen, "%s: %ld bytes is not a plausible image", path, size);
        rc = OSP_IMG_EDECODE;
        goto done;
    }
    buf = malloc((size_t)size);
    if (!buf) {
        osp_image_seterr(err, errlen, "out of memory reading %s", path);
        rc = OSP_IMG_ENOMEM;
        goto done;
    }
    if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
        osp_image_seterr(err, errlen, "short read on %s", path);
        goto done;
    }
    rc = osp_image_decode(dec, buf, (size_t)size, 0, 0, out, NULL, NULL, err, errlen);
done:
    free(buf);
    fclose(f);
    return rc;
}
