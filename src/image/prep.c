/*
 * prep: fit a frame into a model input (letterbox or resize, PROTOCOL.md §6)
 * and pack it as the tensor the model declares.
 *
 * A colour frame is resampled row by row in its own interleaved format:
 * each content row is blended vertically from its two source rows, then
 * resampled across into one interleaved row of the content width, then
 * packed (as it is for NHWC, through planes for NCHW). Converting a whole
 * 1920x1080 frame first (to ARGB or to planes) costs ~0.8-1 ms alone, more
 * than everything else together, and staging the frame at the content
 * height for libyuv's ScalePlane cost another pass over memory at the end.
 * Both directions are bilinear with pixel-centre alignment, like OpenCV's
 * INTER_LINEAR that the models were trained with, in 1/256 steps; across,
 * a table gives each output pixel its two source pixels and weights
 * (cols_fill, across_linear). Gray frames take one ScalePlane call.
 *
 * Memory: all staging lives in osp_prep_scratch_t and only grows; a colour
 * frame makes no allocation at all once it has been seen. libyuv's
 * ScalePlane (gray frames) allocates one row buffer per call internally,
 * which no public libyuv API avoids.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <libyuv/planar_functions.h>
#include <libyuv/scale.h>

#include "image/internal.h"

/* BT.601 luma, the weights OpenCV's RGB2GRAY uses: Y = .299 R + .587 G + .114 B. */
#define LUMA_R 0.299f
#define LUMA_G 0.587f
#define LUMA_B 0.114f

int osp_norm_named(const char *name, float mean[3], float std[3]) {
    static const struct {
        const char *name;
        float mean[3], std[3];
    } norms[] = {
        {"none", {0, 0, 0}, {255, 255, 255}},
        {"zero-one", {0, 0, 0}, {255, 255, 255}},
        {"imagenet",
         {0.485f * 255, 0.456f * 255, 0.406f * 255},
         {0.229f * 255, 0.224f * 255, 0.225f * 255}},
        {"scrfd", {127.5f, 127.5f, 127.5f}, {128, 128, 128}},
    };
    if (!name || !*name) name = "none";
    for (size_t i = 0; i < sizeof(norms) / sizeof(norms[0]); i++) {
        if (strcmp(name, norms[i].name) == 0) {
            memcpy(mean, norms[i].mean, sizeof(norms[i].mean));
            memcpy(std, norms[i].std, sizeof(norms[i].std));
            return OSP_IMG_OK;
        }
    }
    return OSP_IMG_EINVAL;
}

void osp_prep_scratch_free(osp_prep_scratch_t *s) {
    if (!s) return;
    osp_image_free(&s->resized);
    osp_image_free(&s->cols);
    osp_image_free(&s->row);
}

static int prep_valid(const osp_prep_t *p) {
    if (!p || p->width <= 0 || p->height <= 0 || p->width > OSP_IMG_MAX_SIDE ||
        p->height > OSP_IMG_MAX_SIDE || (p->channels != 1 && p->channels != 3) ||
        (p->fit != OSP_FIT_LETTERBOX && p->fit != OSP_FIT_RESIZE) ||
        (p->layout != OSP_LAYOUT_NCHW && p->layout != OSP_LAYOUT_NHWC) ||
        (p->elem != OSP_ELEM_F32 && p->elem != OSP_ELEM_U8))
        return 0;
    if (p->elem == OSP_ELEM_F32)
        for (int c = 0; c < p->channels; c++)
            if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0.0f) return 0;
    return 1;
}

size_t osp_prep_tensor_bytes(const osp_prep_t *p) {
    if (!prep_valid(p)) return 0;
    return (size_t)p->width * (size_t)p->height * (size_t)p->channels *
           (p->elem == OSP_ELEM_F32 ? sizeof(float) : 1);
}

/* ---- packing ---------------------------------------------------------- */

#define PACK_PERIOD 48 /* values in a block of u8_to_f32 */

/* Everything the per-row packer needs, worked out once per call. f32
 * values are px * a[c] + b[c] with a = 1/std, b = -mean/std: one multiply
 * and add per value instead of a subtract and a divide. */
typedef struct {
    uint8_t *dst;
    int tw, th, ch;
    osp_layout_t layout;
    osp_elem_t elem;
    osp_geom_t g;
    float a[3], b[3];
    float luma[3]; /* channels == 1, f32: luma weight * a[0] for R, G, B */
    float pad_f32[3];
    /* a and b by position in a block of u8_to_f32, for an interleaved RGB
     * row (a plane's are one a and b: plane_to_f32) */
    float fa[PACK_PERIOD], fo[PACK_PERIOD];
    uint8_t pad_u8;
} pack_t;

/* The packing loops run over blocks of 8 with a fixed inner count: GCC's
 * -O2 vectoriser (the "very cheap" model) only takes loops it needs no
 * remainder code for, and a plain loop here stayed scalar. Callgrind on a
 * 640x640 letterbox: 9 instructions a value as a plain loop, 4 as blocks,
 * and packing went from the largest cost of the call to a fifth of it. */
#define BLOCK 8

static void planes_to_f32_nhwc(float *restrict d, const uint8_t *restrict r,
                               const uint8_t *restrict g, const uint8_t *restrict b, int n,
                               const float a[3], const float o[3]) {
    const float a0 = a[0], a1 = a[1], a2 = a[2], o0 = o[0], o1 = o[1], o2 = o[2];
    int i = 0;
    for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++) {
            d[3 * (i + j) + 0] = (float)r[i + j] * a0 + o0;
            d[3 * (i + j) + 1] = (float)g[i + j] * a1 + o1;
            d[3 * (i + j) + 2] = (float)b[i + j] * a2 + o2;
        }
    for (; i < n; i++) {
        d[3 * i + 0] = (float)r[i] * a0 + o0;
        d[3 * i + 1] = (float)g[i] * a1 + o1;
        d[3 * i + 2] = (float)b[i] * a2 + o2;
    }
}

/* n bytes to floats, s[i] * a[i % 48] + o[i % 48] (pack_t.fa, fo: R, G,
 * B's factors in turn for an interleaved row). In blocks of 48, whole
 * pixels and whole registers, GCC's -O2 vectoriser makes full-width loads
 * and stores of it; blocks of 8 gave
 * two-float stores, and R, G, B planes packed into NHWC stayed scalar
 * (0.24 ms of a 0.8 ms 1080p -> 300x300 preparation on this machine). */
static void u8_to_f32(float *restrict d, const uint8_t *restrict s, int n, const float *restrict a,
                      const float *restrict o) {
    int i = 0;
    for (; i + PACK_PERIOD <= n; i += PACK_PERIOD)
        for (int j = 0; j < PACK_PERIOD; j++) d[i + j] = (float)s[i + j] * a[j] + o[j];
    int j = 0; /* the rest, under PACK_PERIOD: eights, then ones */
    for (; i + 8 <= n; i += 8, j += 8)
        for (int k = 0; k < 8; k++) d[i + k] = (float)s[i + k] * a[j + k] + o[j + k];
    for (; i < n; i++, j++) d[i] = (float)s[i] * a[j] + o[j];
}

/* One plane's n bytes to floats, s[i] * a + o: the same blocks as
 * u8_to_f32 with one factor and offset instead of two arrays to load
 * beside the bytes, which made the tensor of a 320x240 NCHW frame 20 %
 * slower to pack (0.040 against 0.032 ms here, the tensor in cache). */
static void plane_to_f32(float *restrict d, const uint8_t *restrict s, int n, float a, float o) {
    int i = 0;
    for (; i + PACK_PERIOD <= n; i += PACK_PERIOD)
        for (int j = 0; j < PACK_PERIOD; j++) d[i + j] = (float)s[i + j] * a + o;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) d[i + k] = (float)s[i + k] * a + o;
    for (; i < n; i++) d[i] = (float)s[i] * a + o;
}

static void rgb_to_luma_f32(float *restrict d, const uint8_t *restrict r, const uint8_t *restrict g,
                            const uint8_t *restrict b, int n, const float w[3], float o) {
    const float wr = w[0], wg = w[1], wb = w[2];
    int i = 0;
    for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++)
            d[i + j] = (float)r[i + j] * wr + (float)g[i + j] * wg + (float)b[i + j] * wb + o;
    for (; i < n; i++) d[i] = (float)r[i] * wr + (float)g[i] * wg + (float)b[i] * wb + o;
}

/* The same weights in 8.8 fixed point (77 + 150 + 29 = 256). */
static void rgb_to_luma_u8(uint8_t *restrict d, const uint8_t *restrict r,
                           const uint8_t *restrict g, const uint8_t *restrict b, int n) {
    for (int i = 0; i < n; i++)
        d[i] = (uint8_t)((77u * r[i] + 150u * g[i] + 29u * b[i] + 128u) >> 8);
}

/* Pack content row y from its R, G, B rows (all three the same row for a
 * gray frame). */
static void pack_row(const pack_t *k, int y, const uint8_t *r, const uint8_t *g, const uint8_t *b,
                     int n) {
    size_t plane = (size_t)k->tw * (size_t)k->th;
    size_t at = (size_t)(k->g.pad_y + y) * (size_t)k->tw + (size_t)k->g.pad_x;
    if (k->elem == OSP_ELEM_F32) {
        float *base = (float *)(void *)k->dst;
        if (k->ch == 1) {
            rgb_to_luma_f32(base + at, r, g, b, n, k->luma, k->b[0]);
        } else if (k->layout == OSP_LAYOUT_NCHW) {
            plane_to_f32(base + at, r, n, k->a[0], k->b[0]);
            plane_to_f32(base + at + plane, g, n, k->a[1], k->b[1]);
            plane_to_f32(base + at + 2 * plane, b, n, k->a[2], k->b[2]);
        } else {
            planes_to_f32_nhwc(base + at * 3, r, g, b, n, k->a, k->b);
        }
    } else if (k->ch == 1) {
        rgb_to_luma_u8(k->dst + at, r, g, b, n);
    } else if (k->layout == OSP_LAYOUT_NCHW) {
        memcpy(k->dst + at, r, (size_t)n);
        memcpy(k->dst + at + plane, g, (size_t)n);
        memcpy(k->dst + at + 2 * plane, b, (size_t)n);
    } else {
        MergeRGBPlane(r, n, g, n, b, n, k->dst + at * 3, n * 3, n, 1);
    }
}

/* Fill `bytes` at d with copies of a pattern (one pixel's worth of pad),
 * doubling with memcpy so that wide pad bands fill at memcpy speed. */
static void fill_pattern(uint8_t *d, size_t bytes, const void *pat, size_t pat_bytes) {
    if (bytes == 0) return;
    size_t done = pat_bytes < bytes ? pat_bytes : bytes;
    memcpy(d, pat, done);
    while (done < bytes) {
        size_t n = done < bytes - done ? done : bytes - done;
        memcpy(d + done, d, n);
        done += n;
    }
}

/* Pad around the content: top and bottom bands, then left and right of
 * every content row. Letterboxing pads one axis only, so one of the two
 * is empty. */
static void pack_pad(const pack_t *k) {
    const osp_geom_t *g = &k->g;
    if (g->content_w == k->tw && g->content_h == k->th) return;
    size_t es = k->elem == OSP_ELEM_F32 ? sizeof(float) : 1;
    int planes = k->layout == OSP_LAYOUT_NCHW ? k->ch : 1;
    size_t px = (size_t)(k->layout == OSP_LAYOUT_NCHW ? 1 : k->ch) * es; /* bytes a pixel */
    size_t row = (size_t)k->tw * px;
    uint8_t u8pad[3] = {k->pad_u8, k->pad_u8, k->pad_u8};
    int right = g->pad_x + g->content_w, bottom = g->pad_y + g->content_h;
    for (int p = 0; p < planes; p++) {
        uint8_t *base = k->dst + (size_t)p * k->th * row;
        const void *pat = k->elem == OSP_ELEM_F32 ? (const void *)&k->pad_f32[planes > 1 ? p : 0]
                                                  : (const void *)u8pad;
        fill_pattern(base, (size_t)g->pad_y * row, pat, px);
        fill_pattern(base + (size_t)bottom * row, (size_t)(k->th - bottom) * row, pat, px);
        if (g->pad_x == 0 && right == k->tw) continue;
        for (int y = g->pad_y; y < bottom; y++) {
            uint8_t *r = base + (size_t)y * row;
            fill_pattern(r, (size_t)g->pad_x * px, pat, px);
            fill_pattern(r + (size_t)right * px, (size_t)(k->tw - right) * px, pat, px);
        }
    }
}

static void pack_setup(pack_t *k, const osp_prep_t *p, const osp_geom_t *g, void *dst) {
    memset(k, 0, sizeof(*k));
    k->dst = dst;
    k->tw = p->width;
    k->th = p->height;
    k->ch = p->channels;
    k->layout = p->layout;
    k->elem = p->elem;
    k->g = *g;
    k->pad_u8 = p->pad_value;
    if (p->elem != OSP_ELEM_F32) return;
    for (int c = 0; c < p->channels; c++) {
        k->a[c] = 1.0f / p->std[c];
        k->b[c] = -p->mean[c] / p->std[c];
        k->pad_f32[c] = (float)p->pad_value * k->a[c] + k->b[c];
    }
    for (int j = 0; j < PACK_PERIOD; j++) {
        k->fa[j] = k->a[j % 3];
        k->fo[j] = k->b[j % 3];
    }
    k->luma[0] = LUMA_R * k->a[0];
    k->luma[1] = LUMA_G * k->a[0];
    k->luma[2] = LUMA_B * k->a[0];
}

/* ---- resampling --------------------------------------------------------- */

/* Planar images in an osp_image_t: `n` planes of width x height, stride
 * width, one after the other. */
static int planes_reserve(osp_image_t *img, int w, int h, int n) {
    int rc = osp_image_grow(img, (size_t)w * (size_t)h * (size_t)n);
    if (rc == OSP_IMG_OK) {
        img->width = w;
        img->height = h;
        img->stride = w;
    }
    return rc;
}

/* Split interleaved rows into R, G, B planes. libyuv's SplitRGBPlane takes
 * the bytes in memory order, so BGR just swaps the R and B destinations. */
static void split_rows(const uint8_t *src, int stride, osp_pixfmt_t fmt, uint8_t *r, uint8_t *g,
                       uint8_t *b, int dst_stride, int w, int h) {
    if (fmt == OSP_PIX_BGR)
        SplitRGBPlane(src, stride, b, dst_stride, g, dst_stride, r, dst_stride, w, h);
    else
        SplitRGBPlane(src, stride, r, dst_stride, g, dst_stride, b, dst_stride, w, h);
}

/* Source row and blend weight (0..255, libyuv's 1/256 units) for content row
 * y: centre-aligned, sy = (y + 0.5) * h / ch - 0.5, clamped to the frame.
 * The same mapping across, with w and cw, gives the columns (cols_fill). */
static void vmap(int y, int h, int ch, int *y0, int *frac) {
    int64_t num = (int64_t)(2 * y + 1) * h - ch; /* sy * 2ch */
    int64_t s256 = num <= 0 ? 0 : (num * 256 + ch) / (2 * (int64_t)ch);
    *y0 = (int)(s256 >> 8);
    *frac = (int)(s256 & 255);
    if (*y0 >= h - 1) {
        *y0 = h - 1;
        *frac = 0;
    }
}

/* Content row y of the vertical pass from its source rows a (y0) and b
 * (y0 + 1, used only when f > 0): a itself, or the two blended into
 * `blend` (n bytes). */
static const uint8_t *vertical_row(const uint8_t *a, const uint8_t *b, int f, int n, uint8_t *blend) {
    if (f == 0) return a;
    InterpolatePlane(a, 0, b, 0, blend, n, n, 1, f);
    return blend;
}

/* ---- row by row --------------------------------------------------------

A colour frame is prepared one source row after another, in order: content
row y is made as soon as its source rows (vmap) are in, and only two are
ever needed at once. The blended row is resampled across into one
interleaved row of the content width (across_linear) and packed into the
tensor at once (pack_rgb_row), so nothing the size of the frame, or even
of the content, is ever staged. osp_prep_run hands over all rows at once;
a server reading a large frame off a pipe hands them over as they arrive,
so the frame is prepared by the time its last byte is read and never sits
whole in memory. Either way the same code makes the same tensor. */

/* Output pixel x of a row resampled across: source pixels x0 and x0 + 1
 * (byte offset a = 3 * x0) weighted 256 - f and f, and the same weights
 * as 16-bit lanes for the vector loop: e, e, e against the three bytes of
 * x0, f, f, f against those of x0 + 1. */
typedef struct {
    int32_t a, f;
    uint16_t wv[8];
} col_t;

struct osp_prep_stream {
    pack_t k;
    osp_prep_scratch_t *s;
    osp_pixfmt_t fmt;
    int w, h, cw, ch;
    int seen;          /* source rows handed over so far */
    int next;          /* the next content row to make */
    int nomem;         /* the carry row could not be kept */
    osp_image_t carry; /* the last source row handed over, when still needed
                          (allocated only when rows come in pieces) */
};

osp_prep_stream_t *osp_prep_stream_new(void) { return calloc(1, sizeof(osp_prep_stream_t)); }

void osp_prep_stream_free(osp_prep_stream_t *st) {
    if (!st) return;
    osp_image_free(&st->carry);
    free(st);
}

static int stream_row_bytes(const osp_prep_stream_t *st) { return st->w * 3; }

/* The table for w -> cw: vmap's mapping, across. A whole-factor shrink
 * needs no case of its own: an odd factor lands on pixel centres (f = 0)
 * and an even one half-way between two (f = 128, their rounded mean). */
static void cols_fill(col_t *c, int w, int cw) {
    for (int x = 0; x < cw; x++) {
        int x0, f;
        vmap(x, w, cw, &x0, &f);
        c[x].a = x0 * 3;
        c[x].f = f;
        for (int j = 0; j < 3; j++) {
            c[x].wv[j] = (uint16_t)(256 - f);
            c[x].wv[3 + j] = (uint16_t)f;
        }
        c[x].wv[6] = c[x].wv[7] = 0;
    }
}

/* One interleaved row of w pixels resampled across through the table into
 * an interleaved row of n pixels, (p * (256 - f) + q * f + 128) >> 8 a
 * byte. dst has room for one byte more than the n pixels. */
static void across_linear(const uint8_t *src, int w, uint8_t *dst, int n, const col_t *c) {
    int x = 0;
#if defined(__SSE2__)
    /* A pixel a step: eight bytes from x0 widened to 16 bits, multiplied by
     * its weight lanes, x0 + 1's half shifted onto x0's and added, and four
     * bytes stored (the fourth is the next pixel's first, overwritten).
     * A 1080p -> 300x300 preparation spent half its time in the byte loop
     * below; with this and the packing of interleaved rows it went from
     * 0.79 to 0.37 ms here. Stops where the eight-byte load would pass the
     * end of the row. */
    const __m128i zero = _mm_setzero_si128(), half = _mm_set1_epi16(128);
    for (; x < n && c[x].a + 8 <= w * 3; x++) {
        __m128i v = _mm_loadl_epi64((const __m128i *)(const void *)(src + c[x].a));
        v = _mm_unpacklo_epi8(v, zero);
        v = _mm_mullo_epi16(v, _mm_loadu_si128((const __m128i *)(const void *)c[x].wv));
        v = _mm_add_epi16(_mm_add_epi16(v, _mm_srli_si128(v, 6)), half);
        v = _mm_packus_epi16(_mm_srli_epi16(v, 8), zero);
        int32_t out = _mm_cvtsi128_si32(v);
        memcpy(dst + 3 * x, &out, 4);
    }
#endif
    for (; x < n; x++) {
        const uint8_t *p = src + c[x].a;
        const uint8_t *q = c[x].f ? p + 3 : p;
        const int f = c[x].f, e = 256 - f;
        for (int j = 0; j < 3; j++) dst[3 * x + j] = (uint8_t)((p[j] * e + q[j] * f + 128) >> 8);
    }
}

/* The colour frame's share of the scratch (resized): the row resampled
 * across (3 cw bytes, and ACROSS_SPARE for across_linear's last store),
 * then as much again for it split into planes or with R and B swapped. */
#define ACROSS_SPARE 16
static size_t colour_scratch_bytes(int cw) { return (size_t)cw * 6 + ACROSS_SPARE; }
static uint8_t *work_row(const osp_prep_scratch_t *s, int cw) {
    return s->resized.data + (size_t)cw * 3 + ACROSS_SPARE;
}

/* Pack content row y from one interleaved row of n pixels in fmt (RGB or
 * BGR; tensors are RGB). NHWC takes the row as it is, or with R and B
 * swapped; NCHW and gray tensors go through planes. */
static void pack_rgb_row(const pack_t *k, osp_prep_scratch_t *s, int y, const uint8_t *row,
                         osp_pixfmt_t fmt, int n) {
    size_t plane_size = (size_t)k->tw * (size_t)k->th;
    size_t at = (size_t)(k->g.pad_y + y) * (size_t)k->tw + (size_t)k->g.pad_x;
    uint8_t *work = work_row(s, n);
    if (k->ch == 3 && k->layout == OSP_LAYOUT_NHWC) {
        if (k->elem == OSP_ELEM_U8) {
            if (fmt == OSP_PIX_BGR)
                RAWToRGB24(row, 0, k->dst + at * 3, 0, n, 1);
            else
                memcpy(k->dst + at * 3, row, (size_t)n * 3);
            return;
        }
        if (fmt == OSP_PIX_BGR) {
            RAWToRGB24(row, 0, work, 0, n, 1);
            row = work;
        }
        u8_to_f32((float *)(void *)k->dst + at * 3, row, n * 3, k->fa, k->fo);
        return;
    }
    if (k->ch == 3 && k->elem == OSP_ELEM_U8) {
        split_rows(row, 0, fmt, k->dst + at, k->dst + at + plane_size,
                   k->dst + at + 2 * plane_size, 0, n, 1);
        return;
    }
    uint8_t *r = work, *g = work + n, *b = work + 2 * (size_t)n;
    split_rows(row, 0, fmt, r, g, b, 0, n, 1);
    pack_row(k, y, r, g, b, n);
}

int osp_prep_stream_begin(osp_prep_stream_t *st, int w, int h, osp_pixfmt_t fmt, const osp_prep_t *p,
                          void *dst, osp_prep_scratch_t *scratch, char *err, size_t errlen) {
    if ((fmt != OSP_PIX_RGB && fmt != OSP_PIX_BGR) || w <= 0 || h <= 0 || w > OSP_IMG_MAX_SIDE ||
        h > OSP_IMG_MAX_SIDE) {
        osp_image_seterr(err, errlen, "bad source frame");
        return OSP_IMG_EINVAL;
    }
    if (!prep_valid(p) || !dst || !scratch) {
        osp_image_seterr(err, errlen, "bad preprocessing spec");
        return OSP_IMG_EINVAL;
    }
    osp_geom_t g;
    osp_geom_compute(w, h, p->width, p->height, p->fit, &g);
    pack_setup(&st->k, p, &g, dst);
    st->s = scratch;
    st->fmt = fmt;
    st->w = w;
    st->h = h;
    st->cw = g.content_w;
    st->ch = g.content_h;
    st->seen = st->next = 0;
    int rc = osp_image_grow(&scratch->resized, colour_scratch_bytes(st->cw));
    if (rc == OSP_IMG_OK && w != st->cw &&
        (rc = osp_image_grow(&scratch->cols, (size_t)st->cw * sizeof(col_t))) == OSP_IMG_OK)
        cols_fill((col_t *)(void *)scratch->cols.data, w, st->cw);
    if (rc == OSP_IMG_OK) rc = osp_image_grow(&scratch->row, (size_t)w * 3);
    st->nomem = 0;
    if (rc != OSP_IMG_OK) {
        osp_image_seterr(err, errlen, "out of memory preparing %dx%d", w, h);
        return OSP_IMG_ENOMEM;
    }
    return OSP_IMG_OK;
}

/* Content row y, made from its vertically resampled source row and packed. */
static void stream_emit(osp_prep_stream_t *st, int y, const uint8_t *row) {
    osp_prep_scratch_t *s = st->s;
    if (st->w != st->cw) {
        uint8_t *out = s->resized.data;
        across_linear(row, st->w, out, st->cw, (const col_t *)(void *)s->cols.data);
        row = out;
    }
    pack_rgb_row(&st->k, s, y, row, st->fmt, st->cw);
}

void osp_prep_stream_rows(osp_prep_stream_t *st, const uint8_t *rows, size_t stride, int n) {
    if (n <= 0 || st->nomem) return;
    const int r0 = st->seen, r1 = st->seen + n, bytes = stream_row_bytes(st);
    while (st->next < st->ch) {
        int y0, f;
        vmap(st->next, st->h, st->ch, &y0, &f);
        if (y0 + (f ? 1 : 0) >= r1) break;
        /* rows before r0 were all used by earlier calls except the last one,
         * kept in carry: y0 >= r0 - 1 here, and y0 + 1 >= r0 */
        const uint8_t *a = y0 >= r0 ? rows + (size_t)(y0 - r0) * stride : st->carry.data;
        const uint8_t *b = f ? rows + (size_t)(y0 + 1 - r0) * stride : NULL;
        stream_emit(st, st->next, vertical_row(a, b, f, bytes, st->s->row.data));
        st->next++;
    }
    st->seen = r1;
    if (st->next < st->ch) {
        int y0, f;
        vmap(st->next, st->h, st->ch, &y0, &f);
        if (y0 == r1 - 1) {
            if (osp_image_grow(&st->carry, (size_t)bytes) == OSP_IMG_OK)
                memcpy(st->carry.data, rows + (size_t)(n - 1) * stride, (size_t)bytes);
            else
                st->nomem = 1;
        }
    }
}

int osp_prep_stream_end(osp_prep_stream_t *st, osp_geom_t *geom, char *err, size_t errlen) {
    if (st->nomem) {
        osp_image_seterr(err, errlen, "out of memory preparing %dx%d", st->w, st->h);
        return OSP_IMG_ENOMEM;
    }
    if (st->next < st->ch) {
        osp_image_seterr(err, errlen, "frame ended after %d of %d rows", st->seen, st->h);
        return OSP_IMG_EINVAL;
    }
    pack_pad(&st->k);
    if (geom) *geom = st->k.g;
    return OSP_IMG_OK;
}

int osp_prep_run(const osp_view_t *src, const osp_prep_t *p, void *dst,
                 osp_prep_scratch_t *scratch, osp_geom_t *geom, char *err, size_t errlen) {
    int bpp = src ? osp_pixfmt_channels(src->fmt) : 0;
    if (!src || !src->data || bpp == 0 || src->width <= 0 || src->height <= 0 ||
        src->width > OSP_IMG_MAX_SIDE || src->height > OSP_IMG_MAX_SIDE ||
        src->stride < src->width * bpp) {
        osp_image_seterr(err, errlen, "bad source frame");
        return OSP_IMG_EINVAL;
    }
    if (!prep_valid(p) || !dst || !scratch) {
        osp_image_seterr(err, errlen, "bad preprocessing spec");
        return OSP_IMG_EINVAL;
    }
    if (src->fmt != OSP_PIX_GRAY) {
        /* colour: every row at once through the row-by-row path */
        osp_prep_stream_t st = {0};
        int rc = osp_prep_stream_begin(&st, src->width, src->height, src->fmt, p, dst, scratch,
                                       err, errlen);
        if (rc == OSP_IMG_OK) {
            osp_prep_stream_rows(&st, src->data, (size_t)src->stride, src->height);
            rc = osp_prep_stream_end(&st, geom, err, errlen);
        }
        osp_image_free(&st.carry);
        return rc;
    }
    const int w = src->width, h = src->height;
    osp_geom_t g;
    osp_geom_compute(w, h, p->width, p->height, p->fit, &g);
    const int cw = g.content_w, ch = g.content_h;
    pack_t k;
    pack_setup(&k, p, &g, dst);
    if (w == cw && h == ch) {
        /* The protocol's shortcuts: at the target size (packed as is) or at
         * the content size (only padded). No resampling at all. */
        for (int y = 0; y < h; y++) {
            const uint8_t *row = src->data + (size_t)y * src->stride;
            pack_row(&k, y, row, row, row, w);
        }
    } else {
        if (planes_reserve(&scratch->resized, cw, ch, 1) != OSP_IMG_OK) {
            osp_image_seterr(err, errlen, "out of memory preparing %dx%d", w, h);
            return OSP_IMG_ENOMEM;
        }
        ScalePlane(src->data, src->stride, w, h, scratch->resized.data, cw, cw, ch, kFilterBilinear);
        for (int y = 0; y < ch; y++) {
            const uint8_t *row = scratch->resized.data + (size_t)y * cw;
            pack_row(&k, y, row, row, row, cw);
        }
    }
    pack_pad(&k);
    if (geom) *geom = g;
    return OSP_IMG_OK;
}
