/* Geometry of the dbnet postprocessor, exposed for its unit tests and for
 * callers that turn regions into rotated boxes. */
#ifndef OSP_POST_DBNET_H
#define OSP_POST_DBNET_H

#include "post/decoder.h"

/* A rotated rectangle: centre, side along `angle` (w) and across it (h),
 * angle in radians. */
typedef struct {
    float cx, cy, w, h, angle;
} osp_rrect_t;

/* The minimum-area rectangle enclosing pts (n points; pts is reordered).
 * scratch: room for n + 1 points (the convex hull). -1 when n < 1. */
int osp_min_area_rect(float (*pts)[2], int n, float (*scratch)[2], osp_rrect_t *r);
/* The 4 corners of r. */
void osp_rrect_corners(const osp_rrect_t *r, float q[4][2]);

#endif
