/* 4:2:0 frames (NV12, I420) to RGB with libyuv; see image.h. */
#include <stdio.h>

#include <libyuv.h>

#include "image/image.h"
#include "image/internal.h"

size_t osp_yuv420_bytes(int w, int h) {
    if (w <= 0 || h <= 0 || w > OSP_IMG_MAX_SIDE || h > OSP_IMG_MAX_SIDE) return 0;
    size_t cw = (size_t)(w + 1) / 2, ch = (size_t)(h + 1) / 2;
    return (size_t)w * (size_t)h + 2 * cw * ch;
}

int osp_pixfmt_yuv420(int fmt) {
    return fmt == OSP_PIX_NV12 || fmt == OSP_PIX_I420 || fmt == OSP_PIX_J420;
}

int osp_yuv_to_rgb(const osp_view_t *src, osp_image_t *dst, char *err, size_t errlen) {
    int w = src->width, h = src->height, stride = src->stride > 0 ? src->stride : src->width;
    if (!src->data || osp_yuv420_bytes(w, h) == 0 || stride < w) {
        snprintf(err, errlen, "bad 4:2:0 frame %dx%d", w, h);
        return OSP_IMG_EINVAL;
    }
    if (osp_image_reserve(dst, w, h, OSP_PIX_RGB)) {
        snprintf(err, errlen, "out of memory");
        return OSP_IMG_ENOMEM;
    }
    const uint8_t *y = src->data, *c = src->data + (size_t)stride * (size_t)h;
    int rc;
    /* libyuv's "RAW" is R,G,B in memory: the wire's RGB */
    if (src->fmt == OSP_PIX_NV12) {
        rc = NV12ToRAW(y, stride, c, stride, dst->data, dst->stride, w, h);
    } else if (src->fmt == OSP_PIX_I420 || src->fmt == OSP_PIX_J420) {
        int cs = (stride + 1) / 2;
        const uint8_t *v = c + (size_t)cs * (size_t)((h + 1) / 2);
        rc = (src->fmt == OSP_PIX_I420 ? I420ToRAW : J420ToRAW)(y, stride, c, cs, v, cs, dst->data,
                                                                dst->stride, w, h);
    } else {
        snprintf(err, errlen, "pixel format %d is not 4:2:0", (int)src->fmt);
        return OSP_IMG_EINVAL;
    }
    if (rc) {
        snprintf(err, errlen, "4:2:0 conversion failed");
        return OSP_IMG_EINVAL;
    }
    return OSP_IMG_OK;
}
