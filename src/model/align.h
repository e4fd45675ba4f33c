/*
 * align: where a cascade's crop of a detection lies in the frame — the
 * square around its box, or the face turned upright from its landmarks —
 * as the four corners osp_crop_quad (image/text.h) samples into the next
 * model's input. Pure geometry on floats: no allocation, no state.
 */
#ifndef OSP_MODEL_ALIGN_H
#define OSP_MODEL_ALIGN_H

#include "post/post.h"

/* The square around box d, its side the box's longer side grown by
 * margin (0.2: a fifth), centred on the box: corners clockwise from the
 * top-left, in d's pixels. */
void osp_align_square(const osp_det_t *d, float margin, float quad[4][2]);

/* The box itself, corners clockwise from the top-left. */
void osp_align_rect(const osp_det_t *d, float quad[4][2]);

/* The similarity (rotation, one scale, shift; no reflection) that maps
 * src[i] nearest to dst[i] in least squares, n >= 2 points:
 * x' = t[0] x - t[1] y + t[2], y' = t[1] x + t[0] y + t[3].
 * 0, or -1 when the points are degenerate (all at one place, not finite). */
int osp_align_similarity(const float (*src)[2], const float (*dst)[2], int n, float t[4]);

/* The corners in the source of an out_w x out_h output made by t (source
 * to output): where output pixels (0,0), (out_w,0), (out_w,out_h),
 * (0,out_h) come from, clockwise from the top-left, as osp_crop_quad wants
 * them. 0, or -1 when t has no inverse. */
int osp_align_quad(const float t[4], int out_w, int out_h, float quad[4][2]);

/* ArcFace's five points of a 112 x 112 face (eye, eye, nose tip, mouth
 * corners, in the image's left-to-right order), the points the face
 * embedders of this family were trained on. */
extern const float OSP_ALIGN_ARCFACE[5][2];

/* The face of d turned upright and scaled to out_w x out_h from its
 * landmarks: BlazeFace's 6 (eyes, nose tip, mouth centre, ears) or
 * SCRFD's 5 (eyes, nose tip, mouth corners), mapped to ArcFace's points
 * scaled from 112 to the output. 0, or -1 when d has neither. */
int osp_align_landmarks(const osp_det_t *d, int out_w, int out_h, float quad[4][2]);

#endif
