/*
 * scene: the built-in boundary scorer. How much the picture changed since
 * the previous frame, from a cheap descriptor of each frame — a colour
 * histogram (16 bins per RGB channel) and a 16x12 grid of mean luma — read
 * from a fixed lattice of sample pixels, so the cost does not grow with the
 * resolution. The score is in [0, 1]; the first frame (and the first after
 * a reset) scores 0.
 *
 * One scorer per stream, used by one thread. Owned by the caller
 * (osp_scene_create / osp_scene_free); no allocation per frame.
 */
#ifndef OSP_SEGMENT_SCENE_H
#define OSP_SEGMENT_SCENE_H

#include "image/image.h"

typedef struct osp_scene osp_scene_t;

int osp_scene_create(osp_scene_t **out);
void osp_scene_free(osp_scene_t *s);
void osp_scene_reset(osp_scene_t *s);

/* Score an RGB (or BGR: the histogram is symmetric in the channels) frame.
 * Returns the score, or a negative value for a frame of another format. */
float osp_scene_score(osp_scene_t *s, const osp_view_t *rgb);

/* The two raw distances behind the last score, each in [0, 1], for tools
 * that calibrate: histogram (half the L1 distance) and luma (mean absolute
 * difference of the grid, / 255). */
void osp_scene_last_distances(const osp_scene_t *s, float *hist, float *luma);

#endif
