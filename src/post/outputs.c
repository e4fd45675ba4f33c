/*
 * outputs: which of a model's outputs is which, for the decoders' set-up
 * and decode: by rank and last dim, the boxes + scores pair, the one
 * output of a single-output family and its rows and columns.
 */
#include "post/decoder.h"

int osp_pdesc_find(const osp_pdesc_t *outs, int n, int rank, int64_t last, int other, int skip) {
    for (int i = 0; i < n; i++) {
        if (i == skip || outs[i].rank != rank || outs[i].dtype != OSP_PDT_F32) continue;
        if ((outs[i].dims[rank - 1] == last) != !!other) return i;
    }
    return -1;
}

int osp_pdesc_find_pair(const osp_pdesc_t *outs, int n, int64_t score_cols, int *boxes, int *scores) {
    *boxes = osp_pdesc_find(outs, n, 3, 4, 0, -1);
    *scores = score_cols ? osp_pdesc_find(outs, n, 3, score_cols, 0, *boxes)
                         : osp_pdesc_find(outs, n, 3, 4, 1, *boxes);
    return *boxes >= 0 && *scores >= 0 ? 0 : -1;
}

int osp_pdesc_find_matrix(const osp_pdesc_t *outs, int n) {
    for (int i = 0; i < n; i++)
        if (outs[i].dtype == OSP_PDT_F32 && (outs[i].rank == 3 || outs[i].rank == 2)) return i;
    return -1;
}

int osp_pdims_rows_cols(const int64_t *dims, int rank, int64_t *rows, int64_t *cols) {
    if (rank == 3 && dims[0] != 1 && dims[0] >= 0) return -1;
    if (rank != 2 && rank != 3) return -1;
    *rows = dims[rank - 2];
    *cols = dims[rank - 1];
    return 0;
}
