/* Constant-velocity Kalman filter on centre and size; see kalman.h. */
#include "track/kalman.h"

#include <string.h>

/* Standard deviations as fractions of the box's side: the measured
 * position is trusted to about 1/20 of the box, the velocity changes by
 * about 1/160 of it per frame. Values of this order are the usual ones
 * for detector boxes (SORT and its descendants use the same scale). */
#define STD_POS (1.0 / 20.0)
#define STD_VEL (1.0 / 160.0)
/* A box side never shrinks below a pixel in the estimate: a box that
 * narrowed as its object left the frame (or a crop) would otherwise be
 * predicted on to a sliver no whole pixel holds. */
#define MIN_SIDE 1.0

static void measure(const float box[4], double z[4]) {
    z[0] = 0.5 * ((double)box[0] + box[2]);
    z[1] = 0.5 * ((double)box[1] + box[3]);
    z[2] = (double)box[2] - box[0];
    z[3] = (double)box[3] - box[1];
    if (z[2] < MIN_SIDE) z[2] = MIN_SIDE;
    if (z[3] < MIN_SIDE) z[3] = MIN_SIDE;
}

/* The side a component's noise scales with: width for x and w, height for y and h. */
static double side(const osp_kalman_t *k, int i) { return (i % 2 == 0) ? k->x[2] : k->x[3]; }

void osp_kalman_init(osp_kalman_t *k, const float box[4]) {
    memset(k, 0, sizeof *k);
    measure(box, k->x);
    for (int i = 0; i < 4; i++) {
        double sp = 2.0 * STD_POS * side(k, i), sv = 10.0 * STD_VEL * side(k, i);
        k->p[i][i] = sp * sp;
        k->p[i + 4][i + 4] = sv * sv;
    }
}

void osp_kalman_predict(osp_kalman_t *k) {
    for (int i = 0; i < 4; i++) k->x[i] += k->x[i + 4];
    /* P = F P F^T with F = [I I; 0 I]: rows i < 4 gain row i + 4, then
     * columns j < 4 gain column j + 4. */
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++) k->p[i][j] += k->p[i + 4][j];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) k->p[i][j] += k->p[i][j + 4];
    for (int i = 0; i < 4; i++) {
        double sp = STD_POS * side(k, i), sv = STD_VEL * side(k, i);
        k->p[i][i] += sp * sp;
        k->p[i + 4][i + 4] += sv * sv;
    }
    if (k->x[2] < MIN_SIDE) k->x[2] = MIN_SIDE;
    if (k->x[3] < MIN_SIDE) k->x[3] = MIN_SIDE;
}

/* Inverts a 4x4 matrix by Gauss-Jordan with partial pivoting. S is a
 * covariance plus a positive diagonal, so it is invertible; a pivot of
 * zero (a degenerate box) leaves the identity, i.e. no correction. */
static void invert4(double a[4][4], double inv[4][4]) {
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) inv[i][j] = i == j;
    for (int c = 0; c < 4; c++) {
        int piv = c;
        for (int r = c + 1; r < 4; r++)
            if ((a[r][c] < 0 ? -a[r][c] : a[r][c]) > (a[piv][c] < 0 ? -a[piv][c] : a[piv][c]))
                piv = r;
        if (a[piv][c] == 0) continue;
        for (int j = 0; j < 4; j++) {
            double t = a[c][j];
            a[c][j] = a[piv][j];
            a[piv][j] = t;
            t = inv[c][j];
            inv[c][j] = inv[piv][j];
            inv[piv][j] = t;
        }
        double d = a[c][c];
        for (int j = 0; j < 4; j++) a[c][j] /= d, inv[c][j] /= d;
        for (int r = 0; r < 4; r++) {
            if (r == c || a[r][c] == 0) continue;
            double f = a[r][c];
            for (int j = 0; j < 4; j++) a[r][j] -= f * a[c][j], inv[r][j] -= f * inv[c][j];
        }
    }
}

void osp_kalman_update(osp_kalman_t *k, const float box[4]) {
    double z[4], s[4][4], si[4][4], g[8][4], y[4];
    measure(box, z);
    /* The measurement is the state's first four components: S = P[0:4][0:4] + R. */
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) s[i][j] = k->p[i][j];
        double sp = STD_POS * side(k, i);
        s[i][i] += sp * sp;
        y[i] = z[i] - k->x[i];
    }
    invert4(s, si);
    /* gain K = P[:, 0:4] S^-1 */
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) {
            double v = 0;
            for (int m = 0; m < 4; m++) v += k->p[i][m] * si[m][j];
            g[i][j] = v;
        }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) k->x[i] += g[i][j] * y[j];
    /* P -= K P[0:4, :], then kept symmetric against rounding */
    double np[8][8];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            double v = 0;
            for (int m = 0; m < 4; m++) v += g[i][m] * k->p[m][j];
            np[i][j] = k->p[i][j] - v;
        }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) k->p[i][j] = 0.5 * (np[i][j] + np[j][i]);
    if (k->x[2] < MIN_SIDE) k->x[2] = MIN_SIDE;
    if (k->x[3] < MIN_SIDE) k->x[3] = MIN_SIDE;
}

void osp_kalman_stop(osp_kalman_t *k) {
    for (int i = 4; i < 8; i++) {
        k->x[i] = 0;
        for (int j = 0; j < 8; j++) k->p[i][j] = k->p[j][i] = 0;
    }
    for (int i = 4; i < 8; i++) {
        double sv = STD_VEL * side(k, i - 4);
        k->p[i][i] = sv * sv;
    }
}

void osp_kalman_box(const osp_kalman_t *k, float box[4]) {
    box[0] = (float)(k->x[0] - 0.5 * k->x[2]);
    box[1] = (float)(k->x[1] - 0.5 * k->x[3]);
    box[2] = (float)(k->x[0] + 0.5 * k->x[2]);
    box[3] = (float)(k->x[1] + 0.5 * k->x[3]);
}
