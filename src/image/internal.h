/*
 * Private to src/image: what more than one file of the module shares and no
 * caller outside it may rely on.
 */
#ifndef OSP_IMAGE_INTERNAL_H
#define OSP_IMAGE_INTERNAL_H

#include <stddef.h>
#include <turbojpeg.h>

#include "image/image.h"

/* The libjpeg-turbo handles of one thread. The compressor is made on the
 * first snapshot, since most workers never save one. */
struct osp_decoder {
    tjhandle dj;       /* decompressor, made by osp_decoder_new */
    tjhandle cj;       /* compressor, NULL until osp_image_save needs it */
    size_t max_pixels; /* held whole at most (osp_decoder_limit_pixels); 0: no limit */
    osp_image_t row;   /* one row of a PNG decoded row by row */
};

/* Grow img->data to at least `bytes` (contents not kept); the only place
 * the module allocates pixel memory, so that "grow only" holds everywhere. */
int osp_image_grow(osp_image_t *img, size_t bytes);

/* snprintf into a caller's err buffer, tolerating err == NULL. */
void osp_image_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
