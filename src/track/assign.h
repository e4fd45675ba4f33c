/*
 * assign: the minimum-cost assignment of rows to columns (the Hungarian
 * method, shortest augmenting paths with potentials, O(n^2 m)). The
 * tracker pairs tracks with detections by it; the answer for a given
 * matrix is always the same (ties go to the lower index as the search
 * meets them), which keeps track ids reproducible.
 *
 * The workspace is the caller's and grows to the largest problem it has
 * seen, so a warm tracker allocates nothing per frame.
 */
#ifndef OSP_TRACK_ASSIGN_H
#define OSP_TRACK_ASSIGN_H

#include <stddef.h>

typedef struct {
    double *d; /* potentials, slack and a transposed copy of the costs */
    size_t dcap;
    int *i; /* the matching, the path and the visited marks */
    size_t icap;
} osp_assign_ws_t;

/* cost is n rows by m columns, row-major, finite. Writes row_to_col[r]:
 * the column given to row r, or -1 when there are more rows than columns
 * and r got none. Every row gets a column when n <= m (and every column a
 * row when n >= m); the total cost is the least possible. n or m of 0 is
 * allowed. Returns 0, or -1 when the workspace cannot grow (n * m too
 * large or out of memory). */
int osp_assign_solve(osp_assign_ws_t *ws, const double *cost, int n, int m, int *row_to_col);
/* Grows the workspace for any problem of at most n rows and m columns, in
 * either orientation, so that osp_assign_solve on it cannot fail. Returns 0
 * or -1 (out of memory). */
int osp_assign_reserve(osp_assign_ws_t *ws, int n, int m);
void osp_assign_free(osp_assign_ws_t *ws);

#endif
