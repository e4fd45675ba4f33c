/*
 * image: frame decoding (JPEG, PNG, raw), geometry (letterbox, resize) and
 * packing of model input tensors. Pure: no threads, no sockets, no globals;
 * every function works on the buffers it is given, so it can be unit tested
 * and fuzzed alone. Geometry follows docs/protocol.md §6 exactly.
 */
#ifndef OSP_IMAGE_H
#define OSP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* Largest side any image function accepts: bigger frames are refused before
 * anything is allocated for them (a 4-byte JPEG header can claim 65535^2). */
#define OSP_IMG_MAX_SIDE 16384

enum {
    OSP_IMG_OK = 0,
    OSP_IMG_EINVAL = -1,  /* bad arguments or sizes */
    OSP_IMG_EDECODE = -2, /* the bytes are not a decodable image */
    OSP_IMG_ENOMEM = -3,
    OSP_IMG_EIO = -4,      /* a file could not be read or written */
    OSP_IMG_ENOTROWS = -5, /* osp_image_decode_rows: decode this one whole */
};

/* Pixel formats of frames as they arrive on the wire (values are the wire's).
 * NV12 and I420 (osprey's extension: what video decoders emit) are planar
 * 4:2:0: a view's data is the Y plane (stride = its row bytes, normally the
 * width) and the chroma follows it contiguously — NV12 one interleaved UV
 * plane of the same stride, I420 a U then a V plane of stride (w+1)/2. */
typedef enum {
    OSP_PIX_RGB = 0,
    OSP_PIX_BGR = 1,
    OSP_PIX_GRAY = 2,
    OSP_PIX_NV12 = 3,
    OSP_PIX_I420 = 4,
    /* I420 at full range (JPEG's levels, what an MJPEG decoder emits): a
     * video reader's frame only, never a wire value */
    OSP_PIX_J420 = 5,
} osp_pixfmt_t;

/* A borrowed view of interleaved pixels; owns nothing. stride is in bytes. */
typedef struct {
    const uint8_t *data;
    int width, height, stride;
    osp_pixfmt_t fmt;
} osp_view_t;

/* An owned, reusable pixel buffer. Zero-initialise; functions that fill it
 * grow `data` only when `cap` is too small, so a buffer reused frame after
 * frame stops allocating. Free with osp_image_free. */
typedef struct {
    uint8_t *data;
    size_t cap;
    int width, height, stride;
    osp_pixfmt_t fmt;
} osp_image_t;

void osp_image_free(osp_image_t *img);
/* Make img describe a width x height frame of fmt (stride = width * channels),
 * growing data only when cap is too small; the old pixels are not kept.
 * Sides must be 1..OSP_IMG_MAX_SIDE. Returns OSP_IMG_OK, OSP_IMG_EINVAL or
 * OSP_IMG_ENOMEM (img unchanged on error). */
int osp_image_reserve(osp_image_t *img, int width, int height, osp_pixfmt_t fmt);
osp_view_t osp_image_view(const osp_image_t *img);
/* Bytes per pixel of a format (3, 3, 1); 0 for an unknown or planar one. */
int osp_pixfmt_channels(int fmt);
/* Bytes a tightly packed 4:2:0 frame (NV12 or I420) of w x h takes; 0 when
 * the sides are not positive. */
size_t osp_yuv420_bytes(int w, int h);
/* NV12, I420 or J420: a 4:2:0 format, converted to RGB before a model reads it. */
int osp_pixfmt_yuv420(int fmt);
/* Convert an NV12, I420 or J420 view to RGB into dst (grown as needed). */
int osp_yuv_to_rgb(const osp_view_t *src, osp_image_t *dst, char *err, size_t errlen);
/* Wrap raw wire pixels as a view after checking len == w*h*channels without
 * overflow; on mismatch writes the reason to err and returns OSP_IMG_EINVAL. */
int osp_view_wrap(const uint8_t *data, size_t len, int width, int height, int fmt, osp_view_t *out,
                  char *err, size_t errlen);

/* ---- decoding ---------------------------------------------------------- */

/* A decoder owns the libjpeg-turbo handle; one per thread. */
typedef struct osp_decoder osp_decoder_t;
osp_decoder_t *osp_decoder_new(void);
void osp_decoder_free(osp_decoder_t *dec);

/* The libjpeg-turbo scale denominator (1, 2, 4 or 8) for a w x h JPEG that
 * will be fitted into a want_w x want_h model input: the largest d such that
 * w/d >= want_w and h/d >= want_h (so the frame is decoded smaller only when
 * it is at least twice the input on both sides). want_w/h <= 0 means 1. */
int osp_jpeg_scale_denom(int w, int h, int want_w, int want_h);

/* Decode JPEG or PNG bytes (sniffed by magic) to RGB in `out`. JPEGs use the
 * scaled decode above; orig_w/orig_h receive the image's full size (which
 * differs from out->width/height after a scaled decode). */
int osp_image_decode(osp_decoder_t *dec, const uint8_t *buf, size_t len, int want_w, int want_h,
                     osp_image_t *out, int *orig_w, int *orig_h, char *err, size_t errlen);
/* The most pixels osp_image_decode may hold whole for this decoder (a
 * JPEG's after its scaling); 0, the default: any frame within
 * OSP_IMG_MAX_SIDE. A PNG of 2 MB can be 16384 x 16384 pixels, 805 MB
 * decoded: a server sets this for what its peers send. */
void osp_decoder_limit_pixels(osp_decoder_t *dec, size_t max_pixels);

/* Where osp_image_decode_rows hands a picture over. begin gets its size and
 * returns 0 to go on, OSP_IMG_ENOTROWS to have it decoded whole instead, or
 * another error with err set; rows then gets its n next rows of RGB, stride
 * bytes apart, every row once and in order. */
typedef struct {
    int (*begin)(void *ctx, int w, int h, char *err, size_t errlen);
    void (*rows)(void *ctx, const uint8_t *rows, size_t stride, int n);
    void *ctx;
} osp_row_sink_t;

/* Decode a non-interlaced PNG into sink a row at a time: one row in memory
 * whatever the picture's size, and no limit but OSP_IMG_MAX_SIDE. Returns
 * OSP_IMG_OK; OSP_IMG_ENOTROWS, with nothing handed over, for bytes that
 * are not such a PNG (a JPEG, an interlaced PNG, anything else) or that
 * begin declined (decode those with osp_image_decode); or an error, the
 * sink maybe part-filled. */
int osp_image_decode_rows(osp_decoder_t *dec, const uint8_t *buf, size_t len,
                          const osp_row_sink_t *sink, char *err, size_t errlen);

/* Read a whole file and decode it as above (full size: no scaling). */
int osp_image_load(osp_decoder_t *dec, const char *path, osp_image_t *out, char *err, size_t errlen);

/* Encoders for snapshots: JPEG (quality 1..100) or PNG by file extension. */
/* src (RGB, BGR or GRAY) as a JPEG of quality 1-100 into *out (malloc'd,
 * the caller's to free) and *len: OSP_IMG_OK, or an error with err. */
int osp_image_encode_jpeg(osp_decoder_t *dec, const osp_view_t *src, int quality, uint8_t **out,
                          size_t *len, char *err, size_t errlen);
int osp_image_save(osp_decoder_t *dec, const osp_view_t *src, const char *path, char *err,
                   size_t errlen);

/* ---- geometry ---------------------------------------------------------- */

typedef enum { OSP_FIT_LETTERBOX = 0, OSP_FIT_RESIZE = 1 } osp_fit_t;

/* How a frame maps into the model input: input = frame * scale + pad.
 * content_w/h is the resized frame inside the input (before padding). */
typedef struct {
    float scale_x, scale_y;
    int pad_x, pad_y;
    int content_w, content_h;
} osp_geom_t;

/* Letterbox into tw x th: scale = min(tw/w, th/h) (side/max(w,h) when square),
 * content = floor(w*scale) x floor(h*scale), pad split evenly with the
 * left/top half rounded down. Resize: scale per axis, no pad. */
void osp_geom_compute(int w, int h, int tw, int th, osp_fit_t fit, osp_geom_t *g);

/* ---- tensor packing ---------------------------------------------------- */

typedef enum { OSP_LAYOUT_NCHW = 0, OSP_LAYOUT_NHWC = 1 } osp_layout_t;
typedef enum { OSP_ELEM_F32 = 0, OSP_ELEM_U8 = 1 } osp_elem_t;

/* What a model wants. value = (pixel - mean[c]) / std[c], in RGB channel
 * order, for f32 tensors; u8 tensors get the pixels as they are. */
typedef struct {
    int width, height, channels; /* channels 3 (RGB) or 1 (luminance) */
    osp_fit_t fit;
    osp_layout_t layout;
    osp_elem_t elem;
    float mean[3], std[3];
    uint8_t pad_value; /* 114 per the protocol */
} osp_prep_t;

/* Named normalizations of the protocol: "none"/"zero-one" (x/255),
 * "imagenet", "scrfd" ((x-127.5)/128). NULL or "" means "none". Returns
 * OSP_IMG_EINVAL for an unknown name. */
int osp_norm_named(const char *name, float mean[3], float std[3]);

/* Reusable per-thread working memory for osp_prep_run. */
typedef struct {
    osp_image_t resized; /* one content row, resampled across and then
                            split or swapped (a colour frame), or the
                            gray frame at content size */
    osp_image_t cols;    /* the table of a bilinear resample across: source
                            pixels and weights for each output pixel */
    osp_image_t row;     /* one source row: blended, or split into planes */
} osp_prep_scratch_t;
void osp_prep_scratch_free(osp_prep_scratch_t *s);

/* Bytes one packed input of p takes (w*h*c*elem size). */
size_t osp_prep_tensor_bytes(const osp_prep_t *p);

/* Fit src into the model input and pack it into dst (osp_prep_tensor_bytes
 * bytes, owned by the caller). Shortcuts of the protocol: a frame already
 * at the target size is packed as is; one already at the content size is
 * only padded. geom receives the mapping used. */
int osp_prep_run(const osp_view_t *src, const osp_prep_t *p, void *dst,
                 osp_prep_scratch_t *scratch, osp_geom_t *geom, char *err, size_t errlen);

/* The same for an RGB or BGR frame whose rows arrive in order, a few at a
 * time (a large frame still being read): begin with its size, hand over
 * every row, in any number of pieces, then end. The tensor equals
 * osp_prep_run's for the whole frame. A stream is reused from frame to
 * frame; it keeps at most one source row of its own. */
typedef struct osp_prep_stream osp_prep_stream_t;
osp_prep_stream_t *osp_prep_stream_new(void);
void osp_prep_stream_free(osp_prep_stream_t *st);
int osp_prep_stream_begin(osp_prep_stream_t *st, int w, int h, osp_pixfmt_t fmt, const osp_prep_t *p,
                          void *dst, osp_prep_scratch_t *scratch, char *err, size_t errlen);
/* The next n rows of the frame, stride bytes apart. */
void osp_prep_stream_rows(osp_prep_stream_t *st, const uint8_t *rows, size_t stride, int n);
/* Every row handed over: finish the tensor; an error if rows are missing. */
int osp_prep_stream_end(osp_prep_stream_t *st, osp_geom_t *geom, char *err, size_t errlen);

/* ---- drawing (annotated snapshots) -------------------------------------- */

/* Draw a rectangle outline (thickness px) and a text label with a built-in
 * bitmap font onto an RGB image, clipped to it. Rectangle corners are
 * inclusive pixels; the outline grows inwards from them. (BGR images get
 * the colours swapped, GRAY ones their luminance.) */
void osp_draw_rect(osp_image_t *img, int x1, int y1, int x2, int y2, int thickness,
                   const uint8_t rgb[3]);
/* A segment from x1,y1 to x2,y2 (thickness px, centred on it), clipped;
 * a segment far outside the image draws nothing. */
void osp_draw_line(osp_image_t *img, int x1, int y1, int x2, int y2, int thickness,
                   const uint8_t rgb[3]);
/* x, y is the top-left corner of the label's background box (bg NULL: no
 * box, glyphs only). Glyphs (ASCII 32..126; others print as '?') are scaled
 * up on big images so that they stay legible; osp_draw_label_size says how
 * big the box will be, e.g. to put it above a detection box. */
void osp_draw_label(osp_image_t *img, int x, int y, const char *text, const uint8_t fg[3],
                    const uint8_t bg[3]);
void osp_draw_label_size(const osp_image_t *img, const char *text, int *w, int *h);

/* The colour of class i on snapshots: twelve that tell apart on a frame
 * and from each other, in turn (i < 0 counts as 0). */
void osp_draw_class_colour(int i, uint8_t rgb[3]);

/* Where n labels go, one for each box (inclusive corners; label i is w[i]
 * by h[i]): just above the box or just below it, at its left or right
 * edge, or slid along that edge beside a label placed before, or one row
 * further out, or inside its top; whichever covers the least of the boxes
 * (as a share of each box's area, so a small box counts as much as a big
 * one) and of the labels placed before it, a label hidden counting as four
 * boxes; a row further out or a slide is taken only when it hides less.
 * Labels are placed in index order, so put the best detection first.
 * Every label stays inside img_w x img_h when it fits. Writes x[i], y[i],
 * the top-left corners. */
typedef struct {
    int x1, y1, x2, y2;
} osp_draw_box_t;
void osp_draw_place_labels(const osp_draw_box_t *boxes, const int *w, const int *h, int n,
                           int img_w, int img_h, int *x, int *y);

#endif
