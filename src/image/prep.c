/*
 * prep: fit a frame into a model input (letterbox or resize, PROTOCOL.md §6)
 * and pack it as the tensor the model declares.
 *
 * A colour frame is resampled row by row in its own interleaved format:
 * each content row is blended vertically from its two source rows, then
 * resampled across straight into R, G, B rows of the content width, then
 * packed. Converting a whole 1920x1080 frame first (to ARGB or to planes)
 * costs ~0.8-1 ms alone, more than everything else together, and staging
 * the frame at the content height for libyuv's ScalePlane cost another
 * pass over memory at the end. Both directions are bilinear with
 * pixel-centre alignment, like OpenCV's INTER_LINEAR that the models were
 * trained with, in 1/256 steps. Whole-factor shrinks of the width (1920 ->
 * 640, 1920 -> 320) need no weights at all (split_row_every,
 * split_row_pairs); gray frames take one ScalePlane call.
 *
 * Memory: all staging lives in osp_prep_scratch_t and only grows; a colour
 * frame makes no allocation at all once it has been seen. libyuv's
 * ScalePlane (gray frames) allocates one row buffer per call internally,
 * which no public libyuv API avoids.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <libyuv/planar_functions.h>
#include <libyuv/scale.h>

#include "image/internal.h"

/* BT.601 luma, the weights OpenCV's RGB2GRAY uses: Y = .299 R + .587 G + .114 B. */
#define LUMA_R 0.299f
#define LUMA_G 0.587f
#define LUMA_B 0.114f

int osp_norm_named(const char *name, float mean[3], float std[3])
{
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
    if (!name || !*name)
        name = "none";
    for (size_t i = 0; i < sizeof(norms) / sizeof(norms[0]); i++) {
        if (strcmp(name, norms[i].name) == 0) {
            memcpy(mean, norms[i].mean, sizeof(norms[i].mean));
            memcpy(std, norms[i].std, sizeof(norms[i].std));
            return OSP_IMG_OK;
        }
    }
    return OSP_IMG_EINVAL;
}

void osp_prep_scratch_free(osp_prep_scratch_t *s)
{
    if (!s)
        return;
    osp_image_free(&s->resized);
    osp_image_free(&s->cols);
    osp_image_free(&s->row);
}

static int prep_valid(const osp_prep_t *p)
{
    if (!p || p->width <= 0 || p->height <= 0 || p->width > OSP_IMG_MAX_SIDE ||
        p->height > OSP_IMG_MAX_SIDE || (p->channels != 1 && p->channels != 3) ||
        (p->fit != OSP_FIT_LETTERBOX && p->fit != OSP_FIT_RESIZE) ||
        (p->layout != OSP_LAYOUT_NCHW && p->layout != OSP_LAYOUT_NHWC) ||
        (p->elem != OSP_ELEM_F32 && p->elem != OSP_ELEM_U8))
        return 0;
    if (p->elem == OSP_ELEM_F32)
        for (int c = 0; c < p->channels; c++)
            if (!isfinite(p->mean[c]) || !isfinite(p->std[c]) || p->std[c] == 0.0f)
                return 0;
    return 1;
}

size_t osp_prep_tensor_bytes(const osp_prep_t *p)
{
    if (!prep_valid(p))
        return 0;
    return (size_t)p->width * (size_t)p->height * (size_t)p->channels *
           (p->elem == OSP_ELEM_F32 ? sizeof(float) : 1);
}

/* ---- packing ---------------------------------------------------------- */

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
    uint8_t pad_u8;
} pack_t;

/* The packing loops run over blocks of 8 with a fixed inner count: GCC's
 * -O2 vectoriser (the "very cheap" model) only takes loops it needs no
 * remainder code for, and a plain loop here stayed scalar. Callgrind on a
 * 640x640 letterbox: 9 instructions a value as a plain loop, 4 as blocks,
 * and packing went from the largest cost of the call to a fifth of it. */
#define BLOCK 8

static void u8_to_f32(float *restrict d, const uint8_t *restrict s, int n, float a, float o)
{
    int i = 0;
    for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++)
            d[i + j] = (float)s[i + j] * a + o;
    for (; i < n; i++)
        d[i] = (float)s[i] * a + o;
}

static void rgb_to_f32_nhwc(float *restrict d, const uint8_t *restrict r,
                            const uint8_t *restrict g, const uint8_t *restrict b, int n,
                            const float a[3], const float o[3])
{
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

static void rgb_to_luma_f32(float *restrict d, const uint8_t *restrict r,
                            const uint8_t *restrict g, const uint8_t *restrict b, int n,
                            const float w[3], float o)
{
    const float wr = w[0], wg = w[1], wb = w[2];
    int i = 0;
    for (; i + BLOCK <= n; i += BLOCK)
        for (int j = 0; j < BLOCK; j++)
            d[i + j] = (float)r[i + j] * wr + (float)g[i + j] * wg + (float)b[i + j] * wb + o;
    for (; i < n; i++)
        d[i] = (float)r[i] * wr + (float)g[i] * wg + (float)b[i] * wb + o;
}

/* The same weights in 8.8 fixed point (77 + 150 + 29 = 256). */
static void rgb_to_luma_u8(uint8_t *restrict d, const uint8_t *restrict r,
                           const uint8_t *restrict g, const uint8_t *restrict b, int n)
{
    for (int i = 0; i < n; i++)
        d[i] = (uint8_t)((77u * r[i] + 150u * g[i] + 29u * b[i] + 128u) >> 8);
}

/* Pack content row y from its R, G, B rows (all three the same row for a
 * gray frame). */
static void pack_row(const pack_t *k, int y, const uint8_t *r, const uint8_t *g,
                     const uint8_t *b, int n)
{
    size_t plane = (size_t)k->tw * (size_t)k->th;
    size_t at = (size_t)(k->g.pad_y + y) * (size_t)k->tw + (size_t)k->g.pad_x;
    if (k->elem == OSP_ELEM_F32) {
        float *base = (float *)(void *)k->dst;
        if (k->ch == 1) {
            rgb_to_luma_f32(base + at, r, g, b, n, k->luma, k->b[0]);
        } else if (k->layout == OSP_LAYOUT_NCHW) {
            u8_to_f32(base + at, r, n, k->a[0], k->b[0]);
            u8_to_f32(base + at + plane, g, n, k->a[1], k->b[1]);
            u8_to_f32(base + at + 2 * plane, b, n, k->a[2], k->b[2]);
        } else {
            rgb_to_f32_nhwc(base + at * 3, r, g, b, n, k->a, k->b);
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
static void fill_pattern(uint8_t *d, size_t bytes, const void *pat, size_t pat_bytes)
{
    if (bytes == 0)
        return;
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
static void pack_pad(const pack_t *k)
{
    const osp_geom_t *g = &k->g;
    if (g->content_w == k->tw && g->content_h == k->th)
        return;
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
        if (g->pad_x == 0 && right == k->tw)
            continue;
        for (int y = g->pad_y; y < bottom; y++) {
            uint8_t *r = base + (size_t)y * row;
            fill_pattern(r, (size_t)g->pad_x * px, pat, px);
            fill_pattern(r + (size_t)right * px, (size_t)(k->tw - right) * px, pat, px);
        }
    }
}

static void pack_setup(pack_t *k, const osp_prep_t *p, const osp_geom_t *g, void *dst)
{
    memset(k, 0, sizeof(*k));
    k->dst = dst;
    k->tw = p->width;
    k->th = p->height;
    k->ch = p->channels;
    k->layout = p->layout;
    k->elem = p->elem;
    k->g = *g;
    k->pad_u8 = p->pad_value;
    if (p->elem != OSP_ELEM_F32)
        return;
    for (int c = 0; c < p->channels; c++) {
        k->a[c] = 1.0f / p->std[c];
        k->b[c] = -p->mean[c] / p->std[c];
        k->pad_f32[c] = (float)p->pad_value * k->a[c] + k->b[c];
    }
    k->luma[0] = LUMA_R * k->a[0];
    k->luma[1] = LUMA_G * k->a[0];
    k->luma[2] = LUMA_B * k->a[0];
}

/* ---- resampling --------------------------------------------------------- */

/* Planar images in an osp_image_t: `n` planes of width x height, stride
 * width, one after the other. */
static int planes_reserve(osp_image_t *img, int w, int h, int n)
{
    int rc = osp_image_grow(img, (size_t)w * (size_t)h * (size_t)n);
    if (rc == OSP_IMG_OK) {
        img->width = w;
        img->height = h;
        img->stride = w;
    }
    return rc;
}

static uint8_t *plane(const osp_image_t *img, int c)
{
    return img->data + (size_t)c * img->width * img->height;
}

/* Split interleaved rows into R, G, B planes. libyuv's SplitRGBPlane takes
 * the bytes in memory order, so BGR just swaps the R and B destinations. */
static void split_rows(const uint8_t *src, int stride, osp_pixfmt_t fmt, uint8_t *r, uint8_t *g,
                       uint8_t *b, int dst_stride, int w, int h)
{
    if (fmt == OSP_PIX_BGR)
        SplitRGBPlane(src, stride, b, dst_stride, g, dst_stride, r, dst_stride, w, h);
    else
        SplitRGBPlane(src, stride, r, dst_stride, g, dst_stride, b, dst_stride, w, h);
}

/* Source row and blend weight (0..255, libyuv's 1/256 units) for content row
 * y: centre-aligned, sy = (y + 0.5) * h / ch - 0.5, clamped to the frame.
 * The same mapping across, with w and cw, gives the columns (cols_fill). */
static void vmap(int y, int h, int ch, int *y0, int *frac)
{
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
static const uint8_t *vertical_row(const uint8_t *a, const uint8_t *b, int f, int n,
                                   uint8_t *blend)
{
    if (f == 0)
        return a;
    InterpolatePlane(a, 0, b, 0, blend, n, n, 1, f);
    return blend;
}

/* Split one interleaved row into planes keeping every k-th pixel from
 * `first`. When the width shrinks by an odd whole factor k, the centre of
 * output pixel x falls exactly on source pixel k*x + (k-1)/2, so bilinear
 * is this and nothing more. 1920 -> 640 (3x) is the common case, which
 * libyuv point-samples with a plain C loop (ScaleCols_C, the top entry in
 * callgrind); gathering here instead, fused with the split, took a 1080p
 * -> 640x640 letterbox from 1.7 to 0.9 ms on this machine. */
static void split_row_every(const uint8_t *src, osp_pixfmt_t fmt, uint8_t *r, uint8_t *g,
                            uint8_t *b, int n, int k, int first)
{
    if (fmt == OSP_PIX_BGR) {
        uint8_t *t = r;
        r = b;
        b = t;
    }
    const uint8_t *p = src + (size_t)first * 3;
    const size_t step = (size_t)k * 3;
    for (int x = 0; x < n; x++, p += step) {
        r[x] = p[0];
        g[x] = p[1];
        b[x] = p[2];
    }
}

/* The same for an even whole factor k: the centre of output pixel x falls
 * half-way between source pixels k*x + k/2 - 1 and k*x + k/2, so bilinear
 * is their rounded mean. 1920 -> 320 (6x, UltraFace from 1080p) is the
 * common case: this replaces a full-width split and a ScalePlane pass. */
static void split_row_pairs(const uint8_t *src, osp_pixfmt_t fmt, uint8_t *r, uint8_t *g,
                            uint8_t *b, int n, int k)
{
    if (fmt == OSP_PIX_BGR) {
        uint8_t *t = r;
        r = b;
        b = t;
    }
    const uint8_t *p = src + (size_t)(k / 2 - 1) * 3;
    const size_t step = (size_t)k * 3;
    for (int x = 0; x < n; x++, p += step) {
        r[x] = (uint8_t)((p[0] + p[3] + 1) >> 1);
        g[x] = (uint8_t)((p[1] + p[4] + 1) >> 1);
        b[x] = (uint8_t)((p[2] + p[5] + 1) >> 1);
    }
}

/* ---- row by row --------------------------------------------------------

A colour frame is prepared one source row after another, in order: content
row y is made as soon as its source rows (vmap) are in, and only two are
ever needed at once. The blended row is resampled across straight into
R, G, B rows of the content width and packed into the tensor at once, so
nothing the size of the frame, or even of the content, is ever staged.
osp_prep_run hands over all rows at once; a server reading a large frame
off a pipe hands them over as they arrive, so the frame is prepared by the
time its last byte is read and never sits whole in memory. Either way the
same code makes the same tensor. */

enum {
    ACROSS_SPLIT,  /* the width is kept: split the row */
    ACROSS_EVERY,  /* odd whole-factor shrink (split_row_every) */
    ACROSS_PAIRS,  /* even whole-factor shrink (split_row_pairs) */
    ACROSS_LINEAR, /* any other width: two taps a pixel from a table (col_t) */
};

/* Output pixel x of a bilinear row: source pixels at byte offsets a and b,
 * weighted (256 - f) and f. */
typedef struct {
    int32_t a, b;
    int32_t f;
} col_t;

struct osp_prep_stream {
    pack_t k;
    osp_prep_scratch_t *s;
    osp_pixfmt_t fmt;
    int w, h, cw, ch;
    int across, factor;
    int seen;          /* source rows handed over so far */
    int next;          /* the next content row to make */
    int nomem;         /* the carry row could not be kept */
    osp_image_t carry; /* the last source row handed over, when still needed
                          (allocated only when rows come in pieces) */
};

osp_prep_stream_t *osp_prep_stream_new(void)
{
    return calloc(1, sizeof(osp_prep_stream_t));
}

void osp_prep_stream_free(osp_prep_stream_t *st)
{
    if (!st)
        return;
    osp_image_free(&st->carry);
    free(st);
}

static int stream_row_bytes(const osp_prep_stream_t *st) { return st->w * 3; }

/* The bilinear table for w -> cw: vmap's mapping, across. */
static void cols_fill(col_t *c, int w, int cw)
{
    for (int x = 0; x < cw; x++) {
        int x0, f;
        vmap(x, w, cw, &x0, &f);
        c[x].a = x0 * 3;
        c[x].b = (x0 + (f ? 1 : 0)) * 3;
        c[x].f = f;
    }
}

/* One interleaved row resampled across through the table into planes. */
static void split_row_linear(const uint8_t *src, osp_pixfmt_t fmt, uint8_t *r, uint8_t *g,
                             uint8_t *b, int n, const col_t *c)
{
    if (fmt == OSP_PIX_BGR) {
        uint8_t *t = r;
        r = b;
        b = t;
    }
    for (int x = 0; x < n; x++) {
        const uint8_t *p = src + c[x].a, *q = src + c[x].b;
        const int f = c[x].f, e = 256 - f;
        r[x] = (uint8_t)((p[0] * e + q[0] * f + 128) >> 8);
        g[x] = (uint8_t)((p[1] * e + q[1] * f + 128) >> 8);
        b[x] = (uint8_t)((p[2] * e + q[2] * f + 128) >> 8);
    }
}

int osp_prep_stream_begin(osp_prep_stream_t *st, int w, int h, osp_pixfmt_t fmt,
                          const osp_prep_t *p, void *dst, osp_prep_scratch_t *scratch,
                          char *err, size_t errlen)
{
    if ((fmt != OSP_PIX_RGB && fmt != OSP_PIX_BGR) || w <= 0 || h <= 0 ||
        w > OSP_IMG_MAX_SIDE || h > OSP_IMG_MAX_SIDE) {
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
    st->factor = 1;
    int rc = planes_reserve(&scratch->resized, st->cw, 1, 3);
    if (w == st->cw) {
        st->across = ACROSS_SPLIT;
    } else if (st->cw < w && w % st->cw == 0) {
        st->factor = w / st->cw;
        st->across = st->factor % 2 ? ACROSS_EVERY : ACROSS_PAIRS;
    } else {
        st->across = ACROSS_LINEAR;
        if (rc == OSP_IMG_OK &&
            (rc = osp_image_grow(&scratch->cols, (size_t)st->cw * sizeof(col_t))) == OSP_IMG_OK)
            cols_fill((col_t *)(void *)scratch->cols.data, w, st->cw);
    }
    if (rc == OSP_IMG_OK)
        rc = osp_image_grow(&scratch->row, (size_t)w * 3);
    st->nomem = 0;
    if (rc != OSP_IMG_OK) {
        osp_image_seterr(err, errlen, "out of memory preparing %dx%d", w, h);
        return OSP_IMG_ENOMEM;
    }
    return OSP_IMG_OK;
}

/* Content row y, made from its vertically resampled source row and packed. */
static void stream_emit(osp_prep_stream_t *st, int y, const uint8_t *row)
{
    osp_prep_scratch_t *s = st->s;
    uint8_t *r = plane(&s->resized, 0), *g = plane(&s->resized, 1), *b = plane(&s->resized, 2);
    switch (st->across) {
    case ACROSS_SPLIT:
        split_rows(row, st->w * 3, st->fmt, r, g, b, st->w, st->w, 1);
        break;
    case ACROSS_EVERY:
        split_row_every(row, st->fmt, r, g, b, st->cw, st->factor, (st->factor - 1) / 2);
        break;
    case ACROSS_PAIRS:
        split_row_pairs(row, st->fmt, r, g, b, st->cw, st->factor);
        break;
    default:
        split_row_linear(row, st->fmt, r, g, b, st->cw, (const col_t *)(void *)s->cols.data);
        break;
    }
    pack_row(&st->k, y, r, g, b, st->cw);
}

void osp_prep_stream_rows(osp_prep_stream_t *st, const uint8_t *rows, size_t stride, int n)
{
    if (n <= 0 || st->nomem)
        return;
    const int r0 = st->seen, r1 = st->seen + n, bytes = stream_row_bytes(st);
    while (st->next < st->ch) {
        int y0, f;
        vmap(st->next, st->h, st->ch, &y0, &f);
        if (y0 + (f ? 1 : 0) >= r1)
            break;
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

int osp_prep_stream_end(osp_prep_stream_t *st, osp_geom_t *geom, char *err, size_t errlen)
{
    if (st->nomem) {
        osp_image_seterr(err, errlen, "out of memory preparing %dx%d", st->w, st->h);
        return OSP_IMG_ENOMEM;
    }
    if (st->next < st->ch) {
        osp_image_seterr(err, errlen, "frame ended after %d of %d rows", st->seen, st->h);
        return OSP_IMG_EINVAL;
    }
    pack_pad(&st->k);
    if (geom)
        *geom = st->k.g;
    return OSP_IMG_OK;
}

int osp_prep_run(const osp_view_t *src, const osp_prep_t *p, void *dst,
                 osp_prep_scratch_t *scratch, osp_geom_t *geom, char *err, size_t errlen)
{
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
        ScalePlane(src->data, src->stride, w, h, scratch->resized.data, cw, cw, ch,
                   kFilterBilinear);
        for (int y = 0; y < ch; y++) {
            const uint8_t *row = scratch->resized.data + (size_t)y * cw;
            pack_row(&k, y, row, row, row, cw);
        }
    }
    pack_pad(&k);
    if (geom)
        *geom = g;
    return OSP_IMG_OK;
}
