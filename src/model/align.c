/*
 * The geometry of a cascade's crops (align.h). A face embedder of the
 * ArcFace family was trained on faces warped so that the eyes, nose and
 * mouth sit at five fixed points of 112 x 112; a square around the box
 * gives it the face at whatever tilt and scale the detector's box had.
 */
#include <math.h>

#include "model/align.h"

const float OSP_ALIGN_ARCFACE[5][2] = {
    {38.2946f, 51.6963f}, {73.5318f, 51.5014f}, {56.0252f, 71.7366f},
    {41.5493f, 92.3655f}, {70.7299f, 92.2041f},
};

void osp_align_square(const osp_det_t *d, float margin, float quad[4][2]) {
    float cx = (d->x1 + d->x2) / 2, cy = (d->y1 + d->y2) / 2;
    float side = fmaxf(d->x2 - d->x1, d->y2 - d->y1) * (1 + margin);
    float h = side / 2;
    quad[0][0] = cx - h, quad[0][1] = cy - h;
    quad[1][0] = cx + h, quad[1][1] = cy - h;
    quad[2][0] = cx + h, quad[2][1] = cy + h;
    quad[3][0] = cx - h, quad[3][1] = cy + h;
}

void osp_align_rect(const osp_det_t *d, float quad[4][2]) {
    quad[0][0] = d->x1, quad[0][1] = d->y1;
    quad[1][0] = d->x2, quad[1][1] = d->y1;
    quad[2][0] = d->x2, quad[2][1] = d->y2;
    quad[3][0] = d->x1, quad[3][1] = d->y2;
}

/* Umeyama's estimate restricted to rotations: with both point sets
 * centred, a = sum(x.x' + y.y') / sum|p|^2 and b = sum(x.y' - y.x') /
 * sum|p|^2 minimise the squared error of x' = a x - b y, y' = b x + a y. */
int osp_align_similarity(const float (*src)[2], const float (*dst)[2], int n, float t[4]) {
    if (n < 2) return -1;
    double sx = 0, sy = 0, dx = 0, dy = 0;
    for (int i = 0; i < n; i++) {
        sx += src[i][0], sy += src[i][1], dx += dst[i][0], dy += dst[i][1];
    }
    sx /= n, sy /= n, dx /= n, dy /= n;
    double num_a = 0, num_b = 0, den = 0;
    for (int i = 0; i < n; i++) {
        double x = src[i][0] - sx, y = src[i][1] - sy;
        double u = dst[i][0] - dx, v = dst[i][1] - dy;
        num_a += x * u + y * v;
        num_b += x * v - y * u;
        den += x * x + y * y;
    }
    if (!(den > 1e-9) || !isfinite(den) || !isfinite(num_a) || !isfinite(num_b)) return -1;
    double a = num_a / den, b = num_b / den;
    if (!(a * a + b * b > 1e-12)) return -1;
    t[0] = (float)a;
    t[1] = (float)b;
    t[2] = (float)(dx - (a * sx - b * sy));
    t[3] = (float)(dy - (b * sx + a * sy));
    return 0;
}

int osp_align_quad(const float t[4], int out_w, int out_h, float quad[4][2]) {
    double a = t[0], b = t[1], det = a * a + b * b;
    if (!(det > 1e-12) || !isfinite(det)) return -1;
    /* the inverse of [a -b; b a] is [a b; -b a] / det */
    const double corner[4][2] = {{0, 0}, {out_w, 0}, {out_w, out_h}, {0, out_h}};
    for (int i = 0; i < 4; i++) {
        double u = corner[i][0] - t[2], v = corner[i][1] - t[3];
        quad[i][0] = (float)((a * u + b * v) / det);
        quad[i][1] = (float)((-b * u + a * v) / det);
    }
    return 0;
}

int osp_align_landmarks(const osp_det_t *d, int out_w, int out_h, float quad[4][2]) {
    float src[5][2], dst[5][2];
    int n;
    float sx = (float)out_w / 112.f, sy = (float)out_h / 112.f;
    if (d->n_kp == 5) { /* SCRFD: ArcFace's own five */
        n = 5;
        for (int i = 0; i < 5; i++) {
            src[i][0] = d->kp[i][0], src[i][1] = d->kp[i][1];
            dst[i][0] = OSP_ALIGN_ARCFACE[i][0] * sx, dst[i][1] = OSP_ALIGN_ARCFACE[i][1] * sy;
        }
    } else if (d->n_kp == 6) {
        /* BlazeFace: the eyes (the subject's right first, on the image's
         * left), the nose tip, the mouth's centre: the mean of ArcFace's
         * corners; its ears have no ArcFace point */
        n = 4;
        for (int i = 0; i < 4; i++) src[i][0] = d->kp[i][0], src[i][1] = d->kp[i][1];
        for (int i = 0; i < 3; i++)
            dst[i][0] = OSP_ALIGN_ARCFACE[i][0] * sx, dst[i][1] = OSP_ALIGN_ARCFACE[i][1] * sy;
        dst[3][0] = (OSP_ALIGN_ARCFACE[3][0] + OSP_ALIGN_ARCFACE[4][0]) / 2 * sx;
        dst[3][1] = (OSP_ALIGN_ARCFACE[3][1] + OSP_ALIGN_ARCFACE[4][1]) / 2 * sy;
    } else {
        return -1;
    }
    float t[4];
    if (osp_align_similarity((const float(*)[2])src, (const float(*)[2])dst, n, t)) return -1;
    return osp_align_quad(t, out_w, out_h, quad);
}
