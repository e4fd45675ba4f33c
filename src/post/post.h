/*
 * post: decoders that turn a model's output tensors into detections, plus
 * the shared NMS and the mapping of boxes back into the original frame.
 * Pure functions of arrays: no threads, no I/O, no allocation unless stated.
 */
#ifndef OSP_POST_H
#define OSP_POST_H

#include <stddef.h>

#define OSP_MAX_KP 8 /* landmarks one detection can carry (SCRFD 5, BlazeFace 6) */

/* One detection. Coordinates are x1,y1,x2,y2; which space they are in
 * (normalised model input, model-input pixels, frame pixels) is stated by
 * the function that produces or transforms them. Landmarks (n_kp points)
 * live in the same space as the box. */
typedef struct {
    float x1, y1, x2, y2;
    float score;
    int cls;
    int n_kp;
    float kp[OSP_MAX_KP][2];
} osp_det_t;

/* ---- SSD (TF object-detection API) -------------------------------------- */

typedef struct {
    float y, x, h, w; /* centre and size, normalised to the input */
} osp_anchor_t;

/* The "ssd_anchor_generator" of the TF object-detection API. */
typedef struct {
    int num_layers;             /* 6 */
    int feature_maps[8];        /* 19,10,5,3,2,1 for a 300x300 MobileNetV2 SSD */
    float min_scale, max_scale; /* 0.2, 0.95 */
    float aspect_ratios[8];
    int num_aspect_ratios;                 /* 1,2,0.5,3,1/3 */
    int reduce_boxes_in_lowest_layer;      /* 1 */
    float interpolated_scale_aspect_ratio; /* 1.0; 0 disables the extra anchor */
} osp_ssd_anchor_cfg_t;

/* The configuration of the default 300x300 model (1917 anchors). */
void osp_ssd_anchor_cfg_default(osp_ssd_anchor_cfg_t *cfg);
/* Generate anchors in the order y, x, anchor. Returns how many the config
 * makes (which may exceed cap; only cap are written). */
int osp_ssd_anchors(const osp_ssd_anchor_cfg_t *cfg, osp_anchor_t *out, int cap);

/* Decode SSD outputs: box encodings [n][4] (ty,tx,th,tw with scales
 * 10,10,5,5) and class logits [n][ncls] (sigmoid; class 0 = background,
 * skipped). Emits one detection per (anchor, class) whose score >= thresh,
 * boxes normalised to [0,1] of the model input. Returns the number found
 * (which may exceed cap; only cap are written). */
int osp_post_ssd(const float *box_enc, const float *logits, int n, int ncls,
                 const osp_anchor_t *anchors, float thresh, osp_det_t *out, int cap);

/* ---- UltraFace ----------------------------------------------------------- */

/* scores [n][2] (softmaxed, column 1 = face) and boxes [n][4] already
 * decoded by the graph to corners normalised to [0,1] of the input. Emits
 * class 0 detections with score >= thresh; normalised boxes. Returns the
 * number found (may exceed cap). */
int osp_post_ultraface(const float *scores, const float *boxes, int n, float thresh,
                       osp_det_t *out, int cap);

/* ---- BlazeFace ----------------------------------------------------------- */

/* The 896 anchors of the 128x128 front-camera model (centres normalised,
 * fixed size 1). Returns how many (only cap written). */
int osp_blazeface_anchors(int input_size, osp_anchor_t *out, int cap);
/* Decode one output pair: scores [n] (logits) and regressors [n][reg_len]
 * (dx, dy, w, h in input pixels, then keypoints). Emits class 0 detections
 * with score >= thresh, boxes normalised to the input. Returns the number
 * found (may exceed cap). */
int osp_post_blazeface(const float *scores, const float *regs, int n, int reg_len,
                       const osp_anchor_t *anchors, int input_size, float thresh, osp_det_t *out,
                       int cap);

/* ---- shared --------------------------------------------------------------- */

/* Intersection over union of two boxes (0 when either is empty). */
float osp_iou(const osp_det_t *a, const osp_det_t *b);

/* Non-maximum suppression in place: sorts by score (descending, stable),
 * suppresses boxes whose IoU with a kept box of the same class (or any
 * class when per_class is 0) exceeds iou_thresh, keeps at most max_keep
 * (<= 0: no limit). Returns the number kept, at dets[0..k). */
int osp_nms(osp_det_t *dets, int n, float iou_thresh, int per_class, int max_keep);

/* The overlap at which boxes of different labels are taken for one object
 * when suppression across labels is on (osprey detect's default; the
 * "crossClassIou" model config key): the SSD's parked van in vtest.avi is
 * "Car" 0.47 and "Vehicle" 0.31 on one box (IoU 1.0), while a person and
 * their "Footwear" stay apart (IoU below 0.2). */
#define OSP_CROSS_CLASS_IOU 0.7f

/* Suppression across labels, after osp_nms: dets[0..n) sorted best first
 * (as osp_nms leaves them); a box whose IoU with a better box kept is at
 * least iou_min is dropped, whatever either's label. Order kept. Returns
 * the number kept. iou_min <= 0 (or above 1) keeps all. */
int osp_nms_across(osp_det_t *dets, int n, float iou_min);

/* The share of the smaller box's area that must lie inside a better box of
 * the same label for the two to be one object (osprey detect's default; the
 * "nmsContainment" model config key). The SSD at 300x300 gives a person in
 * vtest.avi a second, partial box (upper body, or shifted half a width)
 * whose IoU with the whole one is under 0.45; on the 27 labelled vtest
 * frames (tests/e2e/fixtures/truth/) this pass at 0.6 drops 3 of the 14
 * false boxes at threshold 0.4 and no true one (0.5 loses one). */
#define OSP_CONTAINMENT 0.6f

/* Suppression of contained boxes, after osp_nms: dets[0..n) sorted best
 * first; a box of the same label as a better box kept, whose intersection
 * with it is at least share_min of the smaller one's area, is dropped (a
 * partial box inside a whole one, or a whole one around a better part).
 * Order kept. Returns the number kept. share_min <= 0 (or above 1) keeps
 * all. */
int osp_nms_contained(osp_det_t *dets, int n, float share_min);

/* Map boxes (and their landmarks) from normalised input coordinates back to
 * frame pixels:
 * input px = norm * (in_w, in_h); frame px = (input px - pad) / scale;
 * then clamped to [0, frame_w] x [0, frame_h]. Boxes that end up empty
 * keep zero size (the caller may drop them). */
void osp_boxes_to_frame(osp_det_t *dets, int n, int in_w, int in_h, float scale_x, float scale_y,
                        float pad_x, float pad_y, int frame_w, int frame_h);

#endif
