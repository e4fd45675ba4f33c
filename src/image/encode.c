/*
 * encode: annotated snapshots to disk, JPEG (TurboJPEG) or PNG (libpng) by
 * the path's extension. Not a per-frame path; it may allocate.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <png.h>

#include "image/internal.h"

/* Snapshots are for people looking at detections: 90 keeps edges and text
 * crisp at about a third of the size of 100. */
#define OSP_SNAPSHOT_JPEG_QUALITY 90

static int ext_is(const char *path, const char *ext) {
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/')) return 0;
    dot++;
    for (; *dot && *ext; dot++, ext++)
        if (tolower((unsigned char)*dot) != *ext) return 0;
    return *dot == 0 && *ext == 0;
}

/* Write to "<path>.tmp" then rename, so whoever watches the snapshot
 * (a browser polling latest.jpg) never reads half a file. */
static int write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        osp_image_seterr(err, errlen, "path too long: %s", path);
        return OSP_IMG_EINVAL;
    }
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        osp_image_seterr(err, errlen, "cannot create %s", tmp);
        return OSP_IMG_EIO;
    }
    int ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        osp_image_seterr(err, errlen, "cannot write %s", path);
        return OSP_IMG_EIO;
    }
    return OSP_IMG_OK;
}

int osp_image_encode_jpeg(osp_decoder_t *dec, const osp_view_t *src, int quality, uint8_t **out,
                          size_t *len, char *err, size_t errlen) {
    *out = NULL;
    *len = 0;
    if (!dec->cj) {
        dec->cj = tjInitCompress();
        if (!dec->cj) {
            osp_image_seterr(err, errlen, "jpeg encode failed: %s", tjGetErrorStr2(NULL));
            return OSP_IMG_ENOMEM;
        }
    }
    int pf = src->fmt == OSP_PIX_BGR ? TJPF_BGR : src->fmt == OSP_PIX_GRAY ? TJPF_GRAY : TJPF_RGB;
    int samp = src->fmt == OSP_PIX_GRAY ? TJSAMP_GRAY : TJSAMP_420;
    unsigned char *jpg = NULL;
    unsigned long jpg_len = 0;
    if (tjCompress2(dec->cj, src->data, src->width, src->stride, src->height, pf, &jpg, &jpg_len,
                    samp, quality, 0) != 0) {
        osp_image_seterr(err, errlen, "jpeg encode failed: %s", tjGetErrorStr2(dec->cj));
        tjFree(jpg);
        return OSP_IMG_EINVAL;
    }
    *out = malloc(jpg_len ? jpg_len : 1);
    if (!*out) {
        tjFree(jpg);
        osp_image_seterr(err, errlen, "out of memory");
        return OSP_IMG_ENOMEM;
    }
    memcpy(*out, jpg, jpg_len);
    *len = jpg_len;
    tjFree(jpg);
    return OSP_IMG_OK;
}

static int save_jpeg(osp_decoder_t *dec, const osp_view_t *src, const char *path, char *err,
                     size_t errlen) {
    uint8_t *jpg = NULL;
    size_t jpg_len = 0;
    int rc = osp_image_encode_jpeg(dec, src, OSP_SNAPSHOT_JPEG_QUALITY, &jpg, &jpg_len, err, errlen);
    if (rc == OSP_IMG_OK) rc = write_file(path, jpg, jpg_len, err, errlen);
    free(jpg);
    return rc;
}

/* ---- PNG: encoded into memory, then written like the JPEG ---------------- */

typedef struct {
    uint8_t *data;
    size_t len, cap;
    char msg[160];
} png_sink_t;

static void png_on_error(png_structp png, png_const_charp msg) {
    png_sink_t *sink = png_get_error_ptr(png);
    snprintf(sink->msg, sizeof(sink->msg), "%s", msg ? msg : "unknown error");
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static void png_on_write(png_structp png, png_bytep data, size_t n) {
    png_sink_t *sink = png_get_io_ptr(png);
    if (n > sink->cap - sink->len) {
        size_t cap = sink->cap ? sink->cap : 65536;
        while (cap - sink->len < n) cap *= 2;
        uint8_t *p = realloc(sink->data, cap);
        if (!p) png_error(png, "out of memory");
        sink->data = p;
        sink->cap = cap;
    }
    memcpy(sink->data + sink->len, data, n);
    sink->len += n;
}

static void png_on_flush(png_structp png) { (void)png; }

/* The setjmp lives here, and the only memory it grows (sink->data) belongs
 * to the caller, who frees it on either return. */
static int png_write_body(png_structp png, png_infop info, const osp_view_t *src) {
    if (setjmp(png_jmpbuf(png))) return OSP_IMG_EINVAL;
    int ctype = src->fmt == OSP_PIX_GRAY ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB;
    png_set_IHDR(png, info, (png_uint_32)src->width, (png_uint_32)src->height, 8, ctype,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    /* Level 3 is a few times faster than the default 6 for a few % more
     * bytes; a snapshot is written while frames keep arriving. */
    png_set_compression_level(png, 3);
    png_write_info(png, info);
    if (src->fmt == OSP_PIX_BGR) png_set_bgr(png);
    for (int y = 0; y < src->height; y++) png_write_row(png, src->data + (size_t)y * src->stride);
    png_write_end(png, NULL);
    return OSP_IMG_OK;
}

static int save_png(const osp_view_t *src, const char *path, char *err, size_t errlen) {
    png_sink_t sink = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, png_on_error,
                                              png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        osp_image_seterr(err, errlen, "png encode failed: out of memory");
        return OSP_IMG_ENOMEM;
    }
    png_set_write_fn(png, &sink, png_on_write, png_on_flush);
    int rc = png_write_body(png, info, src);
    png_destroy_write_struct(&png, &info);
    if (rc == OSP_IMG_OK)
        rc = write_file(path, sink.data, sink.len, err, errlen);
    else
        osp_image_seterr(err, errlen, "png encode failed: %s", sink.msg);
    free(sink.data);
    return rc;
}

int osp_image_save(osp_decoder_t *dec, const osp_view_t *src, const char *path, char *err,
                   size_t errlen) {
    if (!dec || !src || !path || !src->data || osp_pixfmt_channels(src->fmt) == 0 ||
        src->width <= 0 || src->height <= 0 || src->width > OSP_IMG_MAX_SIDE ||
        src->height > OSP_IMG_MAX_SIDE || src->stride < src->width * osp_pixfmt_channels(src->fmt)) {
        osp_image_seterr(err, errlen, "bad image to save");
        return OSP_IMG_EINVAL;
    }
    if (ext_is(path, "jpg") || ext_is(path, "jpeg")) return save_jpeg(dec, src, path, err, errlen);
    if (ext_is(path, "png")) return save_png(src, path, err, errlen);
    osp_image_seterr(err, errlen, "%s: unknown image extension (want .jpg, .jpeg or .png)", path);
    return OSP_IMG_EINVAL;
}
