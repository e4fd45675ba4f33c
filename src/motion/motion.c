/*
 * motion: see motion.h.
 *
 * Everything happens on the small frame: at the default 100 rows a 768x576
 * camera frame is 133x100, 13,300 pixels. On vtest.avi the whole update
 * took 0.44-0.64 ms a frame here, 40-52 % of it libyuv scaling the luma
 * plane down (bench_motion, 2 cores shared with other work).
 * The background is kept in float, so that its slow fade at alpha 0.01 (a
 * hundredth of a level a frame for a one-level difference) is not rounded
 * at every step; 13,300 floats stay in cache.
 */
#include "motion/motion.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libyuv/scale.h>

/* Scratch values in the binary image while labelling. */
#define PX_SET 1
#define PX_SEEN 2

struct osp_motion {
    int width, height; /* of the frames */
    int sw, sh;        /* of the small frame */
    float alpha;
    int threshold, dilate, min_area, settle_frames, max_boxes;
    float lightning;
    int settle_left; /* frames still taken as the background outright */
    osp_motion_state_t settling_as;
    int unmasked;            /* small pixels outside every mask */
    uint8_t *small;          /* sw x sh: this frame, scaled down */
    float *bg;               /* sw x sh: the running average */
    uint8_t *ignore;         /* sw x sh: 1 inside a mask; NULL without masks */
    uint8_t *bin;            /* sw x sh: changed pixels, then dilated, then labelled */
    uint8_t *tmp;            /* sw x sh: the dilation's first pass */
    int32_t *stack;          /* sw x sh: pixels waiting in the component being filled */
    osp_motion_box_t *boxes; /* max_boxes */
};

void osp_motion_defaults(osp_motion_params_t *p) {
    *p = (osp_motion_params_t){
        .frame_height = 100,
        .alpha = 0.01f,
        .threshold = 30,
        .dilate = 1,
        .min_area = 10,
        .lightning = 0.8f,
        .settle_frames = 5,
        .max_boxes = 32,
    };
}

static int bad(char *err, size_t errlen, const char *fmt, double v) {
    snprintf(err, errlen, fmt, v);
    return OSP_MOTION_EINVAL;
}

static int check_params(const osp_motion_params_t *p, int width, int height, char *err, size_t errlen) {
    if (width < 1 || width > OSP_MOTION_MAX_SIDE || height < 1 || height > OSP_MOTION_MAX_SIDE) {
        snprintf(err, errlen, "motion: frame size %dx%d is not within 1..%d a side", width, height,
                 OSP_MOTION_MAX_SIDE);
        return OSP_MOTION_EINVAL;
    }
    if (p->frame_height < 8 || p->frame_height > 2160)
        return bad(err, errlen, "motion: frame_height %g is not within 8..2160", p->frame_height);
    if (!(p->alpha > 0 && p->alpha <= 1))
        return bad(err, errlen, "motion: alpha %g is not within (0, 1]", p->alpha);
    if (p->threshold < 1 || p->threshold > 254)
        return bad(err, errlen, "motion: threshold %g is not within 1..254", p->threshold);
    if (p->dilate < 0 || p->dilate > 8)
        return bad(err, errlen, "motion: dilate %g is not within 0..8", p->dilate);
    if (p->min_area < 1)
        return bad(err, errlen, "motion: min_area %g must be at least 1", p->min_area);
    if (!(p->lightning > 0 && p->lightning <= 1))
        return bad(err, errlen, "motion: lightning %g is not within (0, 1]", p->lightning);
    if (p->settle_frames < 1 || p->settle_frames > 10000)
        return bad(err, errlen, "motion: settle_frames %g is not within 1..10000", p->settle_frames);
    if (p->max_boxes < 1 || p->max_boxes > 1024)
        return bad(err, errlen, "motion: max_boxes %g is not within 1..1024", p->max_boxes);
    if (p->n_masks < 0 || p->n_masks > OSP_MOTION_MAX_MASKS || (p->n_masks > 0 && !p->masks))
        return bad(err, errlen, "motion: n_masks %g is not within 0..64 (with masks set)", p->n_masks);
    for (int i = 0; i < p->n_masks; i++) {
        const osp_motion_poly_t *q = &p->masks[i];
        if (q->n < 3 || q->n > OSP_MOTION_MAX_POLY_POINTS || !q->xy) {
            snprintf(err, errlen, "motion: mask %d has %d points; a polygon needs 3..%d", i, q->n,
                     OSP_MOTION_MAX_POLY_POINTS);
            return OSP_MOTION_EINVAL;
        }
        for (int k = 0; k < 2 * q->n; k++)
            if (!(q->xy[k] >= 0 && q->xy[k] <= 1)) {
                snprintf(err, errlen,
                         "motion: mask %d, point %d: %s %g is not within 0..1 (relative to the frame)",
                         i, k / 2, k % 2 ? "y" : "x", (double)q->xy[k]);
                return OSP_MOTION_EINVAL;
            }
    }
    return 0;
}

/* Mark the small pixels whose centres are inside q (even-odd rule), a row
 * at a time: where the row's centre line crosses the edges, then the spans
 * between pairs of crossings. */
static void fill_poly(uint8_t *ignore, int sw, int sh, const osp_motion_poly_t *q) {
    float xs[OSP_MOTION_MAX_POLY_POINTS];
    for (int j = 0; j < sh; j++) {
        float y = ((float)j + 0.5f) / (float)sh;
        int n = 0;
        for (int k = 0; k < q->n; k++) {
            float x0 = q->xy[2 * k], y0 = q->xy[2 * k + 1];
            int l = (k + 1) % q->n;
            float x1 = q->xy[2 * l], y1 = q->xy[2 * l + 1];
            /* half-open in y, so a vertex on the line is crossed once */
            if ((y0 <= y) != (y1 <= y)) xs[n++] = x0 + (y - y0) * (x1 - x0) / (y1 - y0);
        }
        for (int a = 1; a < n; a++) /* insertion sort: a handful of crossings */
            for (int b = a; b > 0 && xs[b - 1] > xs[b]; b--) {
                float t = xs[b];
                xs[b] = xs[b - 1];
                xs[b - 1] = t;
            }
        for (int k = 0; k + 1 < n; k += 2) {
            /* pixels i whose centre (i + 0.5) / sw lies in [xs[k], xs[k+1]) */
            int i0 = (int)ceilf(xs[k] * (float)sw - 0.5f);
            int i1 = (int)ceilf(xs[k + 1] * (float)sw - 0.5f);
            if (i0 < 0) i0 = 0;
            if (i1 > sw) i1 = sw;
            for (int i = i0; i < i1; i++) ignore[(size_t)j * (size_t)sw + (size_t)i] = 1;
        }
    }
}

int osp_motion_create(const osp_motion_params_t *p, int width, int height, osp_motion_t **out,
                      char *err, size_t errlen) {
    *out = NULL;
    int rc = check_params(p, width, height, err, errlen);
    if (rc) return rc;
    osp_motion_t *m = calloc(1, sizeof *m);
    if (!m) goto nomem;
    m->width = width;
    m->height = height;
    m->sh = height < p->frame_height ? height : p->frame_height;
    m->sw = (int)(((int64_t)width * m->sh + height / 2) / height);
    if (m->sw < 1) m->sw = 1;
    if (m->sw > width) m->sw = width;
    m->alpha = p->alpha;
    m->threshold = p->threshold;
    m->dilate = p->dilate;
    m->min_area = p->min_area;
    m->lightning = p->lightning;
    m->settle_frames = p->settle_frames;
    m->max_boxes = p->max_boxes;
    size_t n = (size_t)m->sw * (size_t)m->sh;
    m->small = malloc(n);
    m->bg = malloc(n * sizeof *m->bg);
    m->bin = malloc(n);
    m->tmp = malloc(n);
    m->stack = malloc(n * sizeof *m->stack);
    m->boxes = malloc((size_t)m->max_boxes * sizeof *m->boxes);
    if (!m->small || !m->bg || !m->bin || !m->tmp || !m->stack || !m->boxes) goto nomem;
    m->unmasked = (int)n;
    if (p->n_masks > 0) {
        m->ignore = calloc(n, 1);
        if (!m->ignore) goto nomem;
        for (int i = 0; i < p->n_masks; i++) fill_poly(m->ignore, m->sw, m->sh, &p->masks[i]);
        for (size_t i = 0; i < n; i++) m->unmasked -= m->ignore[i];
    }
    osp_motion_reset(m);
    *out = m;
    return 0;
nomem:
    osp_motion_free(m);
    snprintf(err, errlen, "motion: out of memory for a %dx%d detector", width, height);
    return OSP_MOTION_ENOMEM;
}

void osp_motion_free(osp_motion_t *m) {
    if (!m) return;
    free(m->small);
    free(m->bg);
    free(m->ignore);
    free(m->bin);
    free(m->tmp);
    free(m->stack);
    free(m->boxes);
    free(m);
}

void osp_motion_reset(osp_motion_t *m) {
    m->settle_left = m->settle_frames;
    m->settling_as = OSP_MOTION_WARMING;
}

void osp_motion_small_size(const osp_motion_t *m, int *width, int *height) {
    *width = m->sw;
    *height = m->sh;
}

/* Each pixel of bin becomes the maximum of the (2r+1) x (2r+1) square
 * around it: a row pass into tmp, then a column pass back; each pass ORs
 * whole shifted rows, which the compiler turns into vector code. */
static void dilate(uint8_t *restrict bin, uint8_t *restrict tmp, int w, int h, int r) {
    for (int j = 0; j < h; j++) {
        const uint8_t *restrict s = bin + (size_t)j * (size_t)w;
        uint8_t *restrict d = tmp + (size_t)j * (size_t)w;
        memcpy(d, s, (size_t)w);
        for (int k = 1; k <= r && k < w; k++) {
            for (int i = 0; i < w - k; i++) d[i] |= s[i + k];
            for (int i = k; i < w; i++) d[i] |= s[i - k];
        }
    }
    for (int j = 0; j < h; j++) {
        uint8_t *restrict d = bin + (size_t)j * (size_t)w;
        memcpy(d, tmp + (size_t)j * (size_t)w, (size_t)w);
        for (int k = j - r < 0 ? 0 : j - r; k <= j + r && k < h; k++) {
            const uint8_t *restrict s = tmp + (size_t)k * (size_t)w;
            if (k != j)
                for (int i = 0; i < w; i++) d[i] |= s[i];
        }
    }
}

/* Keep box b among the largest max_boxes found so far. */
static void keep_box(osp_motion_t *m, osp_motion_result_t *res, const osp_motion_box_t *b) {
    if (res->n_boxes < m->max_boxes) {
        m->boxes[res->n_boxes++] = *b;
        return;
    }
    res->n_dropped++;
    int small = 0;
    for (int i = 1; i < res->n_boxes; i++)
        if (m->boxes[i].small_px < m->boxes[small].small_px) small = i;
    if (b->small_px > m->boxes[small].small_px) m->boxes[small] = *b;
}

/* Small pixel span [a, b) to frame pixels: the frame pixels any part of
 * whose area went into those small pixels. */
static void to_frame(int a, int b, int small, int full, int *lo, int *hi) {
    *lo = (int)((int64_t)a * full / small);
    *hi = (int)(((int64_t)b * full + small - 1) / small);
    if (*hi > full) *hi = full;
}

/* The 8-connected components of bin, flood-filled with an explicit stack:
 * each pixel is pushed once (it is marked seen when pushed), so the stack
 * never holds more than the small frame. */
static void label(osp_motion_t *m, osp_motion_result_t *res) {
    int w = m->sw, h = m->sh;
    uint8_t *bin = m->bin;
    for (int j0 = 0; j0 < h; j0++)
        for (int i0 = 0; i0 < w; i0++) {
            size_t at = (size_t)j0 * (size_t)w + (size_t)i0;
            if (bin[at] != PX_SET) continue;
            int x1 = i0, x2 = i0, y1 = j0, y2 = j0, count = 0, top = 0;
            bin[at] = PX_SEEN;
            m->stack[top++] = (int32_t)at;
            while (top > 0) {
                int32_t p = m->stack[--top];
                int x = p % w, y = p / w;
                count++;
                if (x < x1) x1 = x;
                if (x > x2) x2 = x;
                if (y < y1) y1 = y;
                if (y > y2) y2 = y;
                for (int dy = -1; dy <= 1; dy++) {
                    int ny = y + dy;
                    if (ny < 0 || ny >= h) continue;
                    for (int dx = -1; dx <= 1; dx++) {
                        int nx = x + dx;
                        if (nx < 0 || nx >= w) continue;
                        int32_t q = ny * w + nx;
                        if (bin[q] != PX_SET) continue;
                        bin[q] = PX_SEEN;
                        m->stack[top++] = q;
                    }
                }
            }
            if (count < m->min_area) continue;
            osp_motion_box_t b = {.small_px = count};
            to_frame(x1, x2 + 1, w, m->width, &b.x1, &b.x2);
            to_frame(y1, y2 + 1, h, m->height, &b.y1, &b.y2);
            keep_box(m, res, &b);
        }
}

static int by_size(const void *a, const void *b) {
    const osp_motion_box_t *x = a, *y = b;
    if (x->small_px != y->small_px) return x->small_px > y->small_px ? -1 : 1;
    if (x->y1 != y->y1) return x->y1 < y->y1 ? -1 : 1; /* a stable order for ties */
    return (x->x1 > y->x1) - (x->x1 < y->x1);
}

int osp_motion_update(osp_motion_t *m, const uint8_t *luma, int width, int height, int stride,
                      osp_motion_result_t *res, char *err, size_t errlen) {
    *res = (osp_motion_result_t){.boxes = m->boxes, .state = OSP_MOTION_WARMING};
    if (!luma || width != m->width || height != m->height || stride < width) {
        snprintf(err, errlen, "motion: a %dx%d frame (stride %d%s) for a detector of %dx%d frames",
                 width, height, stride, luma ? "" : ", no pixels", m->width, m->height);
        return OSP_MOTION_EINVAL;
    }
    ScalePlane(luma, stride, width, height, m->small, m->sw, m->sw, m->sh, kFilterBox);
    size_t n = (size_t)m->sw * (size_t)m->sh;
    if (m->settle_left > 0) {
        for (size_t i = 0; i < n; i++) m->bg[i] = (float)m->small[i];
        m->settle_left--;
        res->state = m->settling_as;
        return 0;
    }
    const float thr = (float)m->threshold, a = m->alpha;
    const uint8_t *restrict small = m->small;
    float *restrict bg = m->bg;
    uint8_t *restrict bin = m->bin;
    int changed = 0;
    for (size_t i = 0; i < n; i++) {
        float s = (float)small[i], b = bg[i];
        uint8_t on = fabsf(s - b) > thr;
        bin[i] = on;
        changed += on;
        bg[i] = b + (s - b) * a;
    }
    if (m->ignore) {
        changed = 0;
        for (size_t i = 0; i < n; i++) {
            m->bin[i] &= (uint8_t)!m->ignore[i];
            changed += m->bin[i];
        }
    }
    res->share = m->unmasked > 0 ? (float)changed / (float)m->unmasked : 0;
    if (res->share > m->lightning) {
        for (size_t i = 0; i < n; i++) m->bg[i] = (float)m->small[i];
        m->settle_left = m->settle_frames - 1;
        m->settling_as = OSP_MOTION_RECALIBRATING;
        res->state = OSP_MOTION_RECALIBRATING;
        return 0;
    }
    res->state = OSP_MOTION_ACTIVE;
    if (changed == 0) return 0;
    if (m->dilate > 0) {
        dilate(m->bin, m->tmp, m->sw, m->sh, m->dilate);
        /* grown pixels do not reach into a mask either */
        if (m->ignore)
            for (size_t i = 0; i < n; i++) m->bin[i] &= (uint8_t)!m->ignore[i];
    }
    label(m, res);
    qsort(m->boxes, (size_t)res->n_boxes, sizeof *m->boxes, by_size);
    return 0;
}
