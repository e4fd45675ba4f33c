/*
 * The "dbnet" postprocessor: a DB text detector's probability map
 * [1,1,H,W] (PP-OCR's det model) to text boxes, as PP-OCR's DBPostProcess
 * does it: pixels above OSP_DB_PIXEL_THRESH form regions (8-connected);
 * each region's minimum-area rotated rectangle is kept when its shorter
 * side is at least OSP_DB_MIN_SIZE and its score (the mean probability over
 * the region) reaches p->confidence (PP-OCR's box_thresh, 0.6); the
 * rectangle is then grown by area * OSP_DB_UNCLIP / perimeter on every side
 * (the "unclip" that undoes the shrunk training targets). PP-OCR's ratio
 * is 1.5; 2.0 leaves the recognizer the margin above and below a line that
 * it needs to read the spaces between words (measured on DejaVu Sans Bold
 * renders: "OSPREY 2026" is read "OSPREY2026" at 1.5).
 *
 * Each detection is class 0 with the axis box of the grown rectangle and its
 * 4 corners as landmarks (clockwise from the top-left), in frame pixels,
 * clamped to the frame. Non-finite probabilities count as 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "post/dbnet.h"

#define OSP_DB_PIXEL_THRESH 0.3f
#define OSP_DB_MIN_SIZE 3.0f
#define OSP_DB_UNCLIP 2.0f

static int db_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                    char *err, size_t errlen) {
    (void)p;
    (void)state;
    if (n < 1 || outs[0].dtype != OSP_PDT_F32 || (outs[0].rank != 4 && outs[0].rank != 3) ||
        (outs[0].rank == 4 && outs[0].dims[1] != 1 && outs[0].dims[1] > 0)) {
        snprintf(err, errlen,
                 "postprocessor dbnet needs a float32 probability map [1,1,H,W] or [1,H,W]");
        return -1;
    }
    return 0;
}

static double cross(const float o[2], const float a[2], const float b[2]) {
    return ((double)a[0] - o[0]) * ((double)b[1] - o[1]) -
           ((double)a[1] - o[1]) * ((double)b[0] - o[0]);
}

static int cmp_pt(const void *a, const void *b) {
    const float *p = a, *q = b;
    if (p[0] != q[0]) return p[0] < q[0] ? -1 : 1;
    return p[1] < q[1] ? -1 : p[1] > q[1];
}

/* Andrew's monotone chain; pts is sorted in place, the hull (counter-
 * clockwise in a y-up frame) written to hull (room for n + 1). */
static int convex_hull(float (*pts)[2], int n, float (*hull)[2]) {
    if (n < 3) {
        memcpy(hull, pts, (size_t)n * sizeof *pts);
        return n;
    }
    qsort(pts, (size_t)n, sizeof *pts, cmp_pt);
    int k = 0;
    for (int i = 0; i < n; i++) {
        while (k >= 2 && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0) k--;
        memcpy(hull[k++], pts[i], sizeof *pts);
    }
    for (int i = n - 2, lo = k + 1; i >= 0; i--) {
        while (k >= lo && cross(hull[k - 2], hull[k - 1], pts[i]) <= 0) k--;
        memcpy(hull[k++], pts[i], sizeof *pts);
    }
    return k - 1;
}

int osp_min_area_rect(float (*pts)[2], int n, float (*scratch)[2], osp_rrect_t *r) {
    if (n < 1) return -1;
    int h = convex_hull(pts, n, scratch);
    memset(r, 0, sizeof *r);
    if (h < 3) {
        /* a point or a segment: a degenerate rectangle along it */
        const float *a = scratch[0], *b = scratch[h - 1];
        r->cx = (a[0] + b[0]) / 2, r->cy = (a[1] + b[1]) / 2;
        r->w = (float)hypot((double)b[0] - a[0], (double)b[1] - a[1]);
        r->angle = r->w > 0 ? atan2f(b[1] - a[1], b[0] - a[0]) : 0;
        return 0;
    }
    double best = INFINITY;
    for (int i = 0; i < h; i++) {
        const float *a = scratch[i], *b = scratch[(i + 1) % h];
        double ex = (double)b[0] - a[0], ey = (double)b[1] - a[1], len = hypot(ex, ey);
        if (len == 0) continue;
        ex /= len, ey /= len;
        double u0 = INFINITY, u1 = -INFINITY, v0 = INFINITY, v1 = -INFINITY;
        for (int j = 0; j < h; j++) {
            double u = scratch[j][0] * ex + scratch[j][1] * ey;
            double v = -scratch[j][0] * ey + scratch[j][1] * ex;
            u0 = fmin(u0, u), u1 = fmax(u1, u), v0 = fmin(v0, v), v1 = fmax(v1, v);
        }
        double area = (u1 - u0) * (v1 - v0);
        if (area < best) {
            best = area;
            double cu = (u0 + u1) / 2, cv = (v0 + v1) / 2;
            r->cx = (float)(cu * ex - cv * ey);
            r->cy = (float)(cu * ey + cv * ex);
            r->w = (float)(u1 - u0);
            r->h = (float)(v1 - v0);
            r->angle = (float)atan2(ey, ex);
        }
    }
    return 0;
}

void osp_rrect_corners(const osp_rrect_t *r, float q[4][2]) {
    float c = cosf(r->angle), s = sinf(r->angle), hw = r->w / 2, hh = r->h / 2;
    static const float sx[4] = {-1, 1, 1, -1}, sy[4] = {-1, -1, 1, 1};
    for (int i = 0; i < 4; i++) {
        q[i][0] = r->cx + sx[i] * hw * c - sy[i] * hh * s;
        q[i][1] = r->cy + sx[i] * hw * s + sy[i] * hh * c;
    }
}

/* Order corners clockwise from the top-left, as PP-OCR's get_mini_boxes. */
static void order_quad(float q[4][2]) {
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && q[j][0] < q[j - 1][0]; j--) {
            float t0 = q[j][0], t1 = q[j][1];
            q[j][0] = q[j - 1][0], q[j][1] = q[j - 1][1];
            q[j - 1][0] = t0, q[j - 1][1] = t1;
        }
    float o[4][2];
    int a = q[0][1] <= q[1][1], b = q[2][1] <= q[3][1];
    memcpy(o[0], q[a ? 0 : 1], sizeof o[0]);
    memcpy(o[3], q[a ? 1 : 0], sizeof o[0]);
    memcpy(o[1], q[b ? 2 : 3], sizeof o[0]);
    memcpy(o[2], q[b ? 3 : 2], sizeof o[0]);
    memcpy(q, o, sizeof o);
}

/* A text pixel: above the threshold and finite (NaN and Inf count as 0). */
static inline int text_px(float v) { return isfinite(v) && v > OSP_DB_PIXEL_THRESH; }

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

static int db_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                     osp_dres_t *res, char *err, size_t errlen) {
    (void)state;
    (void)n;
    const osp_pout_t *o = &outs[0];
    int64_t mh = o->dims[o->rank - 2], mw = o->dims[o->rank - 1];
    if (mh < 1 || mw < 1 || mh > 16384 || mw > 16384 || o->dims[0] != 1 ||
        (o->rank == 4 && o->dims[1] != 1)) {
        snprintf(err, errlen, "dbnet: probability map of unexpected shape");
        return -1;
    }
    res->kind = OSP_REC_DETECTIONS;
    const float *prob = o->data;
    size_t npx = (size_t)mh * (size_t)mw;
    /* one allocation per frame: region labels, the BFS queue, the row
     * extremes and the hull points (the map decodes once per frame) */
    int32_t *lab = calloc(npx, sizeof *lab);
    int32_t *queue = malloc(npx * sizeof *queue);
    int32_t *rmin = malloc((size_t)mh * 2 * sizeof *rmin), *rmax = rmin ? rmin + mh : NULL;
    float(*pts)[2] = malloc((size_t)mh * 4 * sizeof *pts);
    float(*hull)[2] = malloc(((size_t)mh * 4 + 1) * sizeof *hull);
    int rc = -1;
    if (!lab || !queue || !rmin || !pts || !hull) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    /* map pixels -> model input pixels -> frame pixels */
    float kx = (float)p->in_w / (float)mw, ky = (float)p->in_h / (float)mh;
    float sx = p->scale_x > 0 ? p->scale_x : 1, sy = p->scale_y > 0 ? p->scale_y : 1;
    float fw = p->frame_w > 0 ? (float)p->frame_w : (float)p->in_w;
    float fh = p->frame_h > 0 ? (float)p->frame_h : (float)p->in_h;
    int max_keep = p->max_detections > 0 ? p->max_detections : 1000;
    int32_t next = 0;
    for (int64_t y = 0; y < mh; y++) rmin[y] = INT32_MAX, rmax[y] = -1;
    for (size_t start = 0; start < npx; start++) {
        if (lab[start] || !text_px(prob[start])) continue;
        int32_t id = ++next;
        size_t qh = 0, qt = 0;
        queue[qt++] = (int32_t)start;
        lab[start] = id;
        int y0 = (int)(start / (size_t)mw), y1 = y0;
        double sum = 0;
        while (qh < qt) {
            int32_t i = queue[qh++];
            int y = (int)(i / mw), x = (int)(i % mw);
            sum += prob[i];
            if (x < rmin[y]) rmin[y] = x;
            if (x > rmax[y]) rmax[y] = x;
            if (y < y0) y0 = y;
            if (y > y1) y1 = y;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int nx = x + dx, ny = y + dy;
                    if ((!dx && !dy) || nx < 0 || ny < 0 || nx >= mw || ny >= mh) continue;
                    size_t j = (size_t)ny * (size_t)mw + (size_t)nx;
                    if (lab[j] || !text_px(prob[j])) continue;
                    lab[j] = id;
                    queue[qt++] = (int32_t)j;
                }
        }
        /* the region's outline: the outer corners of each row's end pixels
         * (rows put back to empty for the next region) */
        int np = 0;
        for (int y = y0; y <= y1; y++) {
            if (rmax[y] < 0) continue;
            float l = (float)rmin[y], r = (float)rmax[y] + 1;
            pts[np][0] = l, pts[np++][1] = (float)y;
            pts[np][0] = l, pts[np++][1] = (float)y + 1;
            pts[np][0] = r, pts[np++][1] = (float)y;
            pts[np][0] = r, pts[np++][1] = (float)y + 1;
            rmin[y] = INT32_MAX, rmax[y] = -1;
        }
        float score = (float)(sum / (double)qt);
        if (!(score >= p->confidence)) continue;
        osp_rrect_t rr;
        if (osp_min_area_rect(pts, np, hull, &rr) || fminf(rr.w, rr.h) < OSP_DB_MIN_SIZE) continue;
        float d = rr.w * rr.h * OSP_DB_UNCLIP / (2 * (rr.w + rr.h));
        rr.w += 2 * d, rr.h += 2 * d;
        if (fminf(rr.w, rr.h) < OSP_DB_MIN_SIZE + 2) continue;
        float q[4][2];
        osp_rrect_corners(&rr, q);
        for (int k = 0; k < 4; k++) {
            q[k][0] = clampf((q[k][0] * kx - p->pad_x) / sx, 0, fw);
            q[k][1] = clampf((q[k][1] * ky - p->pad_y) / sy, 0, fh);
        }
        order_quad(q);
        if (osp_dres_reserve_dets(res, res->n_dets + 1)) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        osp_det_t *det = &res->dets[res->n_dets++];
        memset(det, 0, sizeof *det);
        det->x1 = det->x2 = q[0][0], det->y1 = det->y2 = q[0][1];
        for (int k = 0; k < 4; k++) {
            det->x1 = fminf(det->x1, q[k][0]), det->x2 = fmaxf(det->x2, q[k][0]);
            det->y1 = fminf(det->y1, q[k][1]), det->y2 = fmaxf(det->y2, q[k][1]);
            det->kp[k][0] = q[k][0], det->kp[k][1] = q[k][1];
        }
        det->n_kp = 4;
        det->score = score;
        det->cls = 0;
    }
    /* keep the best max_keep (no NMS: regions do not overlap) */
    if (res->n_dets > max_keep) res->n_dets = osp_nms(res->dets, res->n_dets, 1.0f, 0, max_keep);
    rc = 0;
done:
    free(lab);
    free(queue);
    free(rmin);
    free(pts);
    free(hull);
    return rc;
}

const osp_decoder_t osp_decoder_dbnet = {"dbnet", db_setup, db_decode, NULL, OSP_GIVES_BOXES};
