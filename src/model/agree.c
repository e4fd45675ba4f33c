/* Agreement of a model with a reference: detections matched by IoU, cosine. */
#include "model/agree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void osp_agree_init(osp_agree_t *a) {
    memset(a, 0, sizeof *a);
    a->cos_min = 1.0;
}

typedef struct {
    float iou;
    int r, t;
} pair_t;

static int by_iou_desc(const void *x, const void *y) {
    const pair_t *p = x, *q = y;
    if (p->iou != q->iou) return p->iou < q->iou ? 1 : -1;
    if (p->r != q->r) return p->r - q->r; /* ties in a fixed order */
    return p->t - q->t;
}

int osp_agree_frame(osp_agree_t *a, const osp_det_t *ref, int n_ref, const osp_det_t *test,
                    int n_test, float iou_min) {
    pair_t *pairs = NULL;
    char *used = NULL;
    int np = 0;
    if (n_ref > 0 && n_test > 0) {
        pairs = malloc((size_t)n_ref * (size_t)n_test * sizeof *pairs);
        used = calloc((size_t)n_ref + (size_t)n_test, 1);
        if (!pairs || !used) {
            free(pairs);
            free(used);
            return -1;
        }
        for (int r = 0; r < n_ref; r++)
            for (int t = 0; t < n_test; t++) {
                if (ref[r].cls != test[t].cls) continue;
                float iou = osp_iou(&ref[r], &test[t]);
                if (iou >= iou_min) pairs[np++] = (pair_t){iou, r, t};
            }
        qsort(pairs, (size_t)np, sizeof *pairs, by_iou_desc);
    }
    for (int i = 0; i < np; i++) {
        const pair_t *p = &pairs[i];
        if (used[p->r] || used[n_ref + p->t]) continue;
        used[p->r] = used[n_ref + p->t] = 1;
        double d = fabs((double)ref[p->r].score - test[p->t].score);
        a->matched++;
        a->iou_sum += p->iou;
        a->dscore_sum += d;
        if (d > a->dscore_max) a->dscore_max = d;
    }
    a->frames++;
    a->n_ref += n_ref;
    a->n_test += n_test;
    free(pairs);
    free(used);
    return 0;
}

void osp_agree_vec(osp_agree_t *a, const float *ref, const float *test, int dim) {
    double dot = 0, nr = 0, nt = 0;
    for (int i = 0; i < dim; i++) {
        dot += (double)ref[i] * test[i];
        nr += (double)ref[i] * ref[i];
        nt += (double)test[i] * test[i];
    }
    double c = nr > 0 && nt > 0 ? dot / sqrt(nr * nt) : 0;
    a->frames++;
    a->vecs++;
    a->cos_sum += c;
    if (c < a->cos_min) a->cos_min = c;
}

double osp_agree_f1(const osp_agree_t *a) {
    long n = a->n_ref + a->n_test;
    return n ? 2.0 * (double)a->matched / (double)n : 1.0;
}
