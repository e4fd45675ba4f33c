/*
 * tally: what `osprey detect` counts over one input — frames, detections
 * per label — and the best frame for its snapshot: a copy of the pixels
 * and boxes of the frame with the most people (a label "person"), or, for
 * a model without people or a frame without any, the most detections.
 */
#ifndef OSP_CLI_TALLY_H
#define OSP_CLI_TALLY_H

#include "image/image.h"
#include "model/model.h"

typedef struct osp_tally osp_tally_t;

/* NULL when out of memory. The model must outlive the tally. */
osp_tally_t *osp_tally_new(const osp_model_t *m);
void osp_tally_free(osp_tally_t *t);

/* Count a frame's result; pixels (the decoded frame, NULL: none kept) are
 * copied when the frame is the best so far. */
void osp_tally_add(osp_tally_t *t, const osp_result_t *r, long frame, const osp_view_t *pixels);
/* A frame that failed: counted, nothing else. */
void osp_tally_add_failed(osp_tally_t *t);
long osp_tally_frames(const osp_tally_t *t);

/* The summary line on stderr: "NAME: N frames in S s (F frames/s); Label n, …"
 * and, after a second look, "; L second looks, D boxes taken back", then
 * `more` (NULL: nothing). */
void osp_tally_print(const osp_tally_t *t, const char *name, double secs, const char *more);

/* The best frame, or 0 when no frame had a detection. Pointers stay the
 * tally's, valid until the next osp_tally_add. sx, sy: kept pixels per
 * original pixel (a scaled decode keeps fewer); people: the person count
 * (-1 when the model has no person label). */
typedef struct {
    osp_image_t *pixels;
    const osp_det_t *dets;
    int n_dets;
    float sx, sy;
    long frame;
    int people;
} osp_tally_best_t;
int osp_tally_best(osp_tally_t *t, osp_tally_best_t *out);

#endif
