/* Crops, rotation, resizing and packing of text lines for OCR (image/text.h). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "image/internal.h"
#include "image/text.h"

/* The RGB of pixel (x, y) of a view of any wire format. */
static inline void px_rgb(const osp_view_t *v, int x, int y, float out[3]) {
    const uint8_t *p = v->data + (size_t)y * (size_t)v->stride;
    switch (v->fmt) {
    case OSP_PIX_GRAY: out[0] = out[1] = out[2] = p[x]; break;
    case OSP_PIX_BGR:
        p += (size_t)x * 3;
        out[0] = p[2], out[1] = p[1], out[2] = p[0];
        break;
    default: p += (size_t)x * 3; out[0] = p[0], out[1] = p[1], out[2] = p[2];
    }
}

static int view_ok(const osp_view_t *v) {
    int ch = osp_pixfmt_channels(v->fmt);
    return v && v->data && ch && v->width >= 1 && v->height >= 1 && v->width <= OSP_IMG_MAX_SIDE &&
           v->height <= OSP_IMG_MAX_SIDE && v->stride >= v->width * ch;
}

static inline int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
static inline uint8_t to_u8(float v) { return (uint8_t)(v <= 0 ? 0 : v >= 255 ? 255 : lrintf(v)); }

/* Taps of one output coordinate: source index of the first tap, weights. */
typedef struct {
    int i0;
    float w[4];
} taps_t;

static int taps_of(float pos, int n, int bicubic, taps_t *t) {
    int i = (int)floorf(pos);
    float f = pos - (float)i;
    if (!bicubic) {
        /* OpenCV clamps a position left of the first centre to it */
        if (pos < 0) i = 0, f = 0;
        if (i >= n - 1) i = n - 1, f = 0;
        t->i0 = i;
        t->w[0] = 1 - f;
        t->w[1] = f;
        return 2;
    }
    const float a = -0.75f;
    float x;
    x = 1 + f;
    t->w[0] = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
    x = f;
    t->w[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
    x = 1 - f;
    t->w[2] = ((a + 2) * x - (a + 3)) * x * x + 1;
    t->w[3] = 1 - t->w[0] - t->w[1] - t->w[2];
    t->i0 = i - 1;
    return 4;
}

int osp_image_resize(const osp_view_t *src, int w, int h, int bicubic, osp_image_t *dst) {
    if (!view_ok(src) || !dst) return OSP_IMG_EINVAL;
    int rc = osp_image_reserve(dst, w, h, OSP_PIX_RGB);
    if (rc) return rc;
    float sx = (float)src->width / (float)w, sy = (float)src->height / (float)h;
    for (int y = 0; y < h; y++) {
        taps_t ty;
        int ny = taps_of(((float)y + 0.5f) * sy - 0.5f, src->height, bicubic, &ty);
        uint8_t *out = dst->data + (size_t)y * (size_t)dst->stride;
        for (int x = 0; x < w; x++) {
            taps_t tx;
            int nx = taps_of(((float)x + 0.5f) * sx - 0.5f, src->width, bicubic, &tx);
            float acc[3] = {0, 0, 0}, p[3];
            for (int j = 0; j < ny; j++) {
                int yy = clampi(ty.i0 + j, 0, src->height - 1);
                for (int i = 0; i < nx; i++) {
                    float wt = ty.w[j] * tx.w[i];
                    if (wt == 0) continue;
                    px_rgb(src, clampi(tx.i0 + i, 0, src->width - 1), yy, p);
                    acc[0] += wt * p[0], acc[1] += wt * p[1], acc[2] += wt * p[2];
                }
            }
            out[3 * x] = to_u8(acc[0]), out[3 * x + 1] = to_u8(acc[1]),
                    out[3 * x + 2] = to_u8(acc[2]);
        }
    }
    return OSP_IMG_OK;
}

static int tp_ok(const osp_text_prep_t *tp) {
    if (!tp || tp->height < 1 || tp->height > OSP_IMG_MAX_SIDE || tp->min_w < 1 ||
        tp->max_w < tp->min_w || tp->max_w > OSP_IMG_MAX_SIDE ||
        (tp->channels != 1 && tp->channels != 3))
        return 0;
    for (int c = 0; c < 3; c++)
        if (!(tp->std[c] != 0) || !isfinite(tp->std[c]) || !isfinite(tp->mean[c])) return 0;
    return 1;
}

int osp_text_content_width(int src_w, int src_h, const osp_text_prep_t *tp) {
    if (!tp_ok(tp) || src_w < 1 || src_h < 1) return 0;
    double w = ceil((double)src_w * tp->height / src_h);
    if (w < 1) w = 1;
    if (w > tp->max_w) w = tp->max_w;
    return (int)w;
}

int osp_text_tensor_width(int src_w, int src_h, const osp_text_prep_t *tp) {
    int w = osp_text_content_width(src_w, src_h, tp);
    if (w <= 0) return 0;
    if (tp->min_w == tp->max_w) return tp->max_w;
    if (w < tp->min_w) w = tp->min_w;
    w = (w + 7) / 8 * 8;
    return w > tp->max_w ? tp->max_w : w;
}

size_t osp_text_tensor_bytes(const osp_text_prep_t *tp) {
    if (!tp_ok(tp)) return 0;
    return (size_t)tp->height * (size_t)tp->max_w * (size_t)tp->channels * sizeof(float);
}

int osp_text_pack(const osp_view_t *src, const osp_text_prep_t *tp, float *dst, int *out_w,
                  osp_image_t *scratch, char *err, size_t errlen) {
    if (!view_ok(src) || !tp_ok(tp) || !dst || !scratch) {
        osp_image_seterr(err, errlen, "text prep: bad arguments");
        return OSP_IMG_EINVAL;
    }
    int cw = osp_text_content_width(src->width, src->height, tp);
    int tw = osp_text_tensor_width(src->width, src->height, tp);
    int rc = osp_image_resize(src, cw, tp->height, tp->bicubic, scratch);
    if (rc) {
        osp_image_seterr(err, errlen, "text prep: cannot resize %dx%d to %dx%d", src->width,
                         src->height, cw, tp->height);
        return rc;
    }
    int nc = tp->channels, h = tp->height;
    float inv[3], m[3];
    for (int c = 0; c < 3; c++) inv[c] = 1.f / tp->std[c], m[c] = tp->mean[c];
    for (int y = 0; y < h; y++) {
        const uint8_t *row = scratch->data + (size_t)y * (size_t)scratch->stride;
        for (int x = 0; x < tw; x++) {
            int sxp = x < cw ? x : cw - 1;
            const uint8_t *p = row + 3 * (size_t)sxp;
            float v[3];
            if (x >= cw && !tp->pad_edge) {
                v[0] = v[1] = v[2] = 0.f;
            } else if (nc == 1) {
                /* luminance as OpenCV's RGB2GRAY */
                float l = 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];
                v[0] = (l - m[0]) * inv[0];
            } else {
                for (int c = 0; c < 3; c++) v[c] = ((float)p[c] - m[c]) * inv[c];
            }
            for (int c = 0; c < nc; c++) {
                size_t at = tp->nhwc ? ((size_t)y * tw + x) * nc + c : ((size_t)c * h + y) * tw + x;
                dst[at] = v[c];
            }
        }
    }
    if (out_w) *out_w = tw;
    return OSP_IMG_OK;
}

/* The perspective map of the unit square onto quad (Heckbert): corners
 * (0,0), (1,0), (1,1), (0,1) go to quad[0..3]. */
typedef struct {
    double a, b, c, d, e, f, g, h;
} persp_t;

static int persp_from_quad(const float q[4][2], persp_t *m) {
    double x0 = q[0][0], y0 = q[0][1], x1 = q[1][0], y1 = q[1][1];
    double x2 = q[2][0], y2 = q[2][1], x3 = q[3][0], y3 = q[3][1];
    double sx = x0 - x1 + x2 - x3, sy = y0 - y1 + y2 - y3;
    if (fabs(sx) < 1e-9 && fabs(sy) < 1e-9) {
        m->g = m->h = 0;
    } else {
        double dx1 = x1 - x2, dx2 = x3 - x2, dy1 = y1 - y2, dy2 = y3 - y2;
        double det = dx1 * dy2 - dx2 * dy1;
        if (fabs(det) < 1e-12) return -1;
        m->g = (sx * dy2 - dx2 * sy) / det;
        m->h = (dx1 * sy - sx * dy1) / det;
    }
    m->a = x1 - x0 + m->g * x1, m->b = x3 - x0 + m->h * x3, m->c = x0;
    m->d = y1 - y0 + m->g * y1, m->e = y3 - y0 + m->h * y3, m->f = y0;
    return 0;
}

int osp_crop_quad(const osp_view_t *src, const float quad[4][2], int out_w, int out_h,
                  osp_image_t *dst) {
    if (!view_ok(src) || !quad || !dst) return OSP_IMG_EINVAL;
    for (int i = 0; i < 4; i++)
        if (!isfinite(quad[i][0]) || !isfinite(quad[i][1])) return OSP_IMG_EINVAL;
    persp_t m;
    if (persp_from_quad(quad, &m)) return OSP_IMG_EINVAL;
    int rc = osp_image_reserve(dst, out_w, out_h, OSP_PIX_RGB);
    if (rc) return rc;
    for (int y = 0; y < out_h; y++) {
        uint8_t *out = dst->data + (size_t)y * (size_t)dst->stride;
        double v = (double)y / out_h;
        for (int x = 0; x < out_w; x++) {
            double u = (double)x / out_w;
            double z = m.g * u + m.h * v + 1;
            double X = (m.a * u + m.b * v + m.c) / z, Y = (m.d * u + m.e * v + m.f) / z;
            if (!isfinite(X) || !isfinite(Y)) X = Y = 0;
            if (X < -1e6) X = -1e6;
            if (X > 1e6) X = 1e6;
            if (Y < -1e6) Y = -1e6;
            if (Y > 1e6) Y = 1e6;
            int ix = (int)floor(X), iy = (int)floor(Y);
            float fx = (float)(X - ix), fy = (float)(Y - iy), p[4][3];
            for (int k = 0; k < 4; k++)
                px_rgb(src, clampi(ix + (k & 1), 0, src->width - 1),
                       clampi(iy + (k >> 1), 0, src->height - 1), p[k]);
            for (int c = 0; c < 3; c++) {
                float top = p[0][c] + (p[1][c] - p[0][c]) * fx;
                float bot = p[2][c] + (p[3][c] - p[2][c]) * fx;
                out[3 * x + c] = to_u8(top + (bot - top) * fy);
            }
        }
    }
    return OSP_IMG_OK;
}

int osp_image_rot90(const osp_view_t *src, osp_image_t *dst) {
    if (!view_ok(src) || !dst) return OSP_IMG_EINVAL;
    int rc = osp_image_reserve(dst, src->height, src->width, OSP_PIX_RGB);
    if (rc) return rc;
    /* counter-clockwise: out(x, y) = src(W-1-y, x) */
    for (int y = 0; y < dst->height; y++) {
        uint8_t *out = dst->data + (size_t)y * (size_t)dst->stride;
        for (int x = 0; x < dst->width; x++) {
            float p[3];
            px_rgb(src, src->width - 1 - y, x, p);
            out[3 * x] = (uint8_t)p[0], out[3 * x + 1] = (uint8_t)p[1],
                    out[3 * x + 2] = (uint8_t)p[2];
        }
    }
    return OSP_IMG_OK;
}

static double dist(const float a[2], const float b[2]) {
    return hypot((double)a[0] - b[0], (double)a[1] - b[1]);
}

int osp_text_crop(const osp_view_t *src, const float quad[4][2], osp_image_t *dst,
                  osp_image_t *scratch) {
    if (!view_ok(src) || !quad || !dst || !scratch) return OSP_IMG_EINVAL;
    double w = fmax(dist(quad[0], quad[1]), dist(quad[2], quad[3]));
    double h = fmax(dist(quad[0], quad[3]), dist(quad[1], quad[2]));
    if (!isfinite(w) || !isfinite(h)) return OSP_IMG_EINVAL;
    int iw = w < 1 ? 1 : w > OSP_IMG_MAX_SIDE ? OSP_IMG_MAX_SIDE : (int)w;
    int ih = h < 1 ? 1 : h > OSP_IMG_MAX_SIDE ? OSP_IMG_MAX_SIDE : (int)h;
    if ((double)ih / iw < 1.5) return osp_crop_quad(src, quad, iw, ih, dst);
    int rc = osp_crop_quad(src, quad, iw, ih, scratch);
    if (rc) return rc;
    osp_view_t v = osp_image_view(scratch);
    rc = osp_image_rot90(&v, dst);
    return rc ? rc : 1;
}

void osp_quad_order(float q[4][2]) {
    /* sort by x (4 elements: insertion) */
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && q[j][0] < q[j - 1][0]; j--) {
            float t0 = q[j][0], t1 = q[j][1];
            q[j][0] = q[j - 1][0], q[j][1] = q[j - 1][1];
            q[j - 1][0] = t0, q[j - 1][1] = t1;
        }
    float tl[2], bl[2], tr[2], br[2];
    int a = q[0][1] <= q[1][1];
    memcpy(tl, q[a ? 0 : 1], sizeof tl);
    memcpy(bl, q[a ? 1 : 0], sizeof bl);
    int b = q[2][1] <= q[3][1];
    memcpy(tr, q[b ? 2 : 3], sizeof tr);
    memcpy(br, q[b ? 3 : 2], sizeof br);
    memcpy(q[0], tl, sizeof tl);
    memcpy(q[1], tr, sizeof tr);
    memcpy(q[2], br, sizeof br);
    memcpy(q[3], bl, sizeof bl);
}
