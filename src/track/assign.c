/* Minimum-cost assignment; see assign.h. */
#include "track/assign.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

static int grow(osp_assign_ws_t *ws, size_t nd, size_t ni) {
    if (nd > ws->dcap) {
        double *d = realloc(ws->d, nd * sizeof *d);
        if (!d) return -1;
        ws->d = d;
        ws->dcap = nd;
    }
    if (ni > ws->icap) {
        int *i = realloc(ws->i, ni * sizeof *i);
        if (!i) return -1;
        ws->i = i;
        ws->icap = ni;
    }
    return 0;
}

/* Rows 1..n onto columns 1..m, n <= m; a is n x m, 0-based. p[j] is the
 * row holding column j (0: none). Row 0 and column 0 are the method's
 * virtual start. */
static void solve(const double *a, int n, int m, double *u, double *v, double *minv, int *p,
                  int *way, int *used) {
    for (int i = 0; i <= n; i++) u[i] = 0;
    for (int j = 0; j <= m; j++) v[j] = 0, p[j] = 0, way[j] = 0;
    for (int i = 1; i <= n; i++) {
        p[0] = i;
        int j0 = 0;
        for (int j = 0; j <= m; j++) minv[j] = DBL_MAX, used[j] = 0;
        do {
            used[j0] = 1;
            int i0 = p[j0], j1 = 0;
            double delta = DBL_MAX;
            for (int j = 1; j <= m; j++) {
                if (used[j]) continue;
                double cur = a[(size_t)(i0 - 1) * m + (j - 1)] - u[i0] - v[j];
                if (cur < minv[j]) minv[j] = cur, way[j] = j0;
                if (minv[j] < delta) delta = minv[j], j1 = j;
            }
            for (int j = 0; j <= m; j++) {
                if (used[j]) {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            int j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0);
    }
}

/* What a problem of n x m needs: potentials and slack for the larger
 * side, the transposed costs, and three int arrays over the larger side. */
static void need(int n, int m, size_t *nd, size_t *ni) {
    size_t big = (size_t)(n > m ? n : m) + 1;
    *nd = 3 * big + (size_t)n * (size_t)m;
    *ni = 3 * big;
}

int osp_assign_reserve(osp_assign_ws_t *ws, int n, int m) {
    if (n < 0 || m < 0 || (m > 0 && (size_t)n > SIZE_MAX / sizeof(double) / 4 / (size_t)m))
        return -1;
    size_t nd, ni;
    need(n, m, &nd, &ni);
    return grow(ws, nd, ni);
}

int osp_assign_solve(osp_assign_ws_t *ws, const double *cost, int n, int m, int *row_to_col) {
    for (int r = 0; r < n; r++) row_to_col[r] = -1;
    if (n <= 0 || m <= 0) return 0;
    int tr = n > m; /* more rows than columns: solve the transpose */
    int rows = tr ? m : n, cols = tr ? n : m;
    if (osp_assign_reserve(ws, n, m)) return -1;
    double *u = ws->d, *v = u + rows + 1, *minv = v + cols + 1, *t = minv + cols + 1;
    int *p = ws->i, *way = p + cols + 1, *used = way + cols + 1;
    if (tr)
        for (int r = 0; r < n; r++)
            for (int c = 0; c < m; c++) t[(size_t)c * n + r] = cost[(size_t)r * m + c];
    const double *a = tr ? t : cost;
    solve(a, rows, cols, u, v, minv, p, way, used);
    for (int j = 1; j <= cols; j++) {
        if (!p[j]) continue;
        if (tr)
            row_to_col[j - 1] = p[j] - 1;
        else
            row_to_col[p[j] - 1] = j - 1;
    }
    return 0;
}

void osp_assign_free(osp_assign_ws_t *ws) {
    free(ws->d);
    free(ws->i);
    ws->d = NULL;
    ws->i = NULL;
    ws->dcap = ws->icap = 0;
}
