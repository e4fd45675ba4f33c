/*
 * buffer: the owned pixel buffer (osp_image_t) and borrowed views of wire
 * pixels. Every allocation of pixel memory in the module goes through
 * osp_image_grow, which is what makes reused buffers stop allocating.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "image/internal.h"

void osp_image_seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int osp_image_grow(osp_image_t *img, size_t bytes) {
    if (bytes <= img->cap) return OSP_IMG_OK;
    /* free + malloc rather than realloc: the old pixels are dead, and
     * realloc would copy them. */
    uint8_t *p = malloc(bytes);
    if (!p) return OSP_IMG_ENOMEM;
    free(img->data);
    img->data = p;
    img->cap = bytes;
    return OSP_IMG_OK;
}

void osp_image_free(osp_image_t *img) {
    if (!img) return;
    free(img->data);
    img->data = NULL;
    img->cap = 0;
    img->width = img->height = img->stride = 0;
}

osp_view_t osp_image_view(const osp_image_t *img) {
    osp_view_t v = {img->data, img->width, img->height, img->stride, img->fmt};
    return v;
}

int osp_pixfmt_channels(int fmt) {
    switch (fmt) {
    case OSP_PIX_RGB:
    case OSP_PIX_BGR: return 3;
    case OSP_PIX_GRAY: return 1;
    default: return 0;
    }
}

int osp_image_reserve(osp_image_t *img, int width, int height, osp_pixfmt_t fmt) {
    int ch = osp_pixfmt_channels(fmt);
    if (!img || ch == 0 || width <= 0 || height <= 0 || width > OSP_IMG_MAX_SIDE ||
        height > OSP_IMG_MAX_SIDE)
        return OSP_IMG_EINVAL;
    int rc = osp_image_grow(img, (size_t)width * ch * (size_t)height);
    if (rc != OSP_IMG_OK) return rc;
    img->width = width;
    img->height = height;
    img->stride = width * ch;
    img->fmt = fmt;
    return OSP_IMG_OK;
}

int osp_view_wrap(const uint8_t *data, size_t len, int width, int height, int fmt, osp_view_t *out,
                  char *err, size_t errlen) {
    int ch = osp_pixfmt_channels(fmt);
    if (ch == 0) {
        osp_image_seterr(err, errlen, "unknown pixel format %d", fmt);
        return OSP_IMG_EINVAL;
    }
    if (width <= 0 || height <= 0 || width > OSP_IMG_MAX_SIDE || height > OSP_IMG_MAX_SIDE) {
        osp_image_seterr(err, errlen, "bad frame size %dx%d (sides 1..%d)", width, height,
                         OSP_IMG_MAX_SIDE);
        return OSP_IMG_EINVAL;
    }
    /* Sides are capped above, so this product fits comfortably in 64 bits. */
    size_t want = (size_t)width * (size_t)height * (size_t)ch;
    if (len != want) {
        osp_image_seterr(err, errlen, "%zu bytes of pixels for %dx%d with %d channels (want %zu)",
                         len, width, height, ch, want);
        return OSP_IMG_EINVAL;
    }
    if (!data || !out) {
        osp_image_seterr(err, errlen, "null pixels");
        return OSP_IMG_EINVAL;
    }
    out->data = data;
    out->width = width;
    out->height = height;
    out->stride = width * ch;
    out->fmt = (osp_pixfmt_t)fmt;
    return OSP_IMG_OK;
}
