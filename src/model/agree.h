/*
 * agree: how a model's results agree with a reference model's on the same
 * frames (an int8 model against its fp32 original, osprey quantize).
 * Detections are matched per frame, one to one, within a class and at an
 * IoU of at least iou_min, best pairs first; embeddings by cosine. The
 * totals are kept across frames. Pure: no threads, no I/O.
 */
#ifndef OSP_AGREE_H
#define OSP_AGREE_H

#include "post/post.h"

typedef struct {
    long frames;
    long n_ref, n_test, matched;   /* detections in each, and pairs matched */
    double iou_sum;                /* over matched pairs */
    double dscore_sum, dscore_max; /* |score difference| of matched pairs */
    long vecs;                     /* embeddings compared */
    double cos_sum, cos_min;
} osp_agree_t;

void osp_agree_init(osp_agree_t *a);
/* Add one frame's detections. 0, or -1 out of memory (nothing added). */
int osp_agree_frame(osp_agree_t *a, const osp_det_t *ref, int n_ref, const osp_det_t *test,
                    int n_test, float iou_min);
/* Add one frame's embeddings (any scale; compared by cosine). */
void osp_agree_vec(osp_agree_t *a, const float *ref, const float *test, int dim);
/* F1 of the test detections against the reference ones: 2·matched /
 * (n_ref + n_test); 1 when neither has any. */
double osp_agree_f1(const osp_agree_t *a);

#endif
