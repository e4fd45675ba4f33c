/*
 * image/text: crops and input packing for text recognition (OCR).
 *
 * A text recognizer reads one line: the crop of a (possibly rotated) text
 * box, turned upright, resized to the model's input height keeping its
 * aspect, normalised, and padded to the tensor width. Two conventions:
 *   - PP-OCR (3 channels, height 48, dynamic width): bilinear, width at
 *     least min_w, padded with normalised 0;
 *   - the seed's EasyOCR recognizers (1 channel, fixed width,
 *     docs/protocol.md §6): luminance, bicubic, width capped at the input
 *     width, padded by repeating the last column.
 * Pure functions of the buffers they are given, like the rest of image/.
 */
#ifndef OSP_IMAGE_TEXT_H
#define OSP_IMAGE_TEXT_H

#include <stddef.h>

#include "image/image.h"

/* How a text line goes into the recognizer's float32 tensor. */
typedef struct {
    int height;            /* the model's input height */
    int min_w, max_w;      /* tensor width bounds; min_w == max_w: a fixed width */
    int channels;          /* 1: luminance, 3: RGB */
    int nhwc;              /* layout; 0 = NCHW */
    int bicubic;           /* resampling: bicubic (a = -0.75) or bilinear */
    int pad_edge;          /* pad by repeating the last column, else with 0 */
    float mean[3], std[3]; /* value = (px - mean) / std */
} osp_text_prep_t;

/* The width the line is resized to: round(src_w * height / src_h), at
 * least 1, at most max_w. 0 for bad sizes. */
int osp_text_content_width(int src_w, int src_h, const osp_text_prep_t *tp);
/* The tensor width for a line of src_w x src_h: the content width raised to
 * min_w (and to a multiple of 8 when the width is dynamic, so that CTC
 * models that downsample by 8 see every column). 0 for bad sizes. */
int osp_text_tensor_width(int src_w, int src_h, const osp_text_prep_t *tp);
/* Bytes of the largest tensor tp can produce (max_w wide). */
size_t osp_text_tensor_bytes(const osp_text_prep_t *tp);

/* Resize src into a height x tensor-width float tensor at dst (room for
 * osp_text_tensor_bytes, owned by the caller); *out_w receives the tensor
 * width. scratch: a reusable RGB buffer. */
int osp_text_pack(const osp_view_t *src, const osp_text_prep_t *tp, float *dst, int *out_w,
                  osp_image_t *scratch, char *err, size_t errlen);

/* Resize src to w x h RGB into dst (grown as needed): bilinear or bicubic
 * with pixel centres aligned (as OpenCV's resize), edges replicated. */
int osp_image_resize(const osp_view_t *src, int w, int h, int bicubic, osp_image_t *dst);

/* Sample the quadrilateral quad (corners clockwise from the top-left, in
 * src pixels) into an out_w x out_h RGB image dst (grown as needed) by a
 * perspective map of the corners to the output's corners; bilinear,
 * edges replicated. */
int osp_crop_quad(const osp_view_t *src, const float quad[4][2], int out_w, int out_h,
                  osp_image_t *dst);

/* PP-OCR's crop of a text box: output width = the longer of the top and
 * bottom edges, height = the longer of the left and right edges (each at
 * least 1, at most OSP_IMG_MAX_SIDE); a crop at least 1.5 times as tall as
 * wide is turned 90 degrees counter-clockwise (vertical text, read as a
 * line). Returns 1 when it was turned, 0 when not, < 0 on error. */
int osp_text_crop(const osp_view_t *src, const float quad[4][2], osp_image_t *dst,
                  osp_image_t *scratch);

/* Rotate src by 90 degrees counter-clockwise into dst (RGB). */
int osp_image_rot90(const osp_view_t *src, osp_image_t *dst);

/* Order 4 points clockwise from the top-left: the two leftmost (by x) are
 * the left edge, each edge's upper point first (PP-OCR's get_mini_boxes). */
void osp_quad_order(float quad[4][2]);

#endif
