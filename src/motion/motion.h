/*
 * motion: where a camera's picture is changing, so that the detector can be
 * run only there (regions.h). Works on a decoder's luma plane as it comes
 * (the Y of I420 or NV12: pointer, width, height, stride), scaled down to a
 * small grey frame by area averaging. The small frame is compared with a
 * running-average background; pixels that differ by more than a threshold
 * are grown by a small dilation and grouped into 8-connected components,
 * whose boxes (above a minimum area) are reported in the frame's pixels.
 *
 * Masks are polygons in coordinates relative to the frame (0..1), drawn once
 * into the small frame when the detector is created: nothing inside them
 * ever counts as motion (a timestamp overlay, a tree in the wind).
 *
 * When most of the frame changes at once (the lights go on, the camera's IR
 * filter switches) that is not motion: the detector takes the new picture
 * as its background and says it is recalibrating for a few frames instead
 * of reporting boxes, then carries on.
 *
 * Pure and single-threaded: one detector per camera, used by one thread.
 * The caller owns the detector (osp_motion_create / osp_motion_free); all
 * its memory is allocated at create, none per frame.
 */
#ifndef OSP_MOTION_MOTION_H
#define OSP_MOTION_MOTION_H

#include <stddef.h>
#include <stdint.h>

enum {
    OSP_MOTION_OK = 0,
    OSP_MOTION_EINVAL = -1, /* bad parameters, or a frame of another size */
    OSP_MOTION_ENOMEM = -2,
};

/* Largest frame side accepted (as image.h's OSP_IMG_MAX_SIDE). */
#define OSP_MOTION_MAX_SIDE 16384
#define OSP_MOTION_MAX_MASKS 64
#define OSP_MOTION_MAX_POLY_POINTS 256

/* A polygon of n points (n >= 3), xy holding x0,y0,x1,y1,… relative to the
 * frame: 0,0 its top left corner, 1,1 its bottom right. Read only while the
 * detector is created; the caller keeps ownership. */
typedef struct {
    const float *xy;
    int n;
} osp_motion_poly_t;

typedef struct {
    /* rows of the small grey frame the work is done on; its width follows
     * the frame's aspect. 100: a person 20 frame pixels wide in a 576-row
     * frame is still 3 small pixels wide. A smaller frame is not enlarged. */
    int frame_height;
    /* weight of each new frame in the running-average background: 0.01
     * (something that stops moving fades into the background in about
     * 100 frames) */
    float alpha;
    /* a small pixel is changed when it differs from the background by more
     * than this, in luma levels (0..255): 30 */
    int threshold;
    /* changed pixels are grown by this many small pixels each way before
     * grouping, so that one person's limbs make one box: 1 (a 3x3 square) */
    int dilate;
    /* components of fewer small pixels (after the dilation) are noise: 10 */
    int min_area;
    /* a frame where more than this share of the unmasked pixels changed at
     * once is a change of light, not motion: 0.8 */
    float lightning;
    /* frames, after create, a reset or a change of light, that are taken as
     * the background outright and report no motion: 5 (half a second at
     * 10 frames/s, time for a camera's exposure to settle) */
    int settle_frames;
    /* boxes reported per frame at most (the largest are kept): 32 */
    int max_boxes;
    /* areas to ignore; NULL and 0 for none */
    const osp_motion_poly_t *masks;
    int n_masks;
} osp_motion_params_t;

/* The defaults above, no masks. */
void osp_motion_defaults(osp_motion_params_t *p);

/* A moving area in the frame's pixels: x1,y1 inclusive, x2,y2 exclusive.
 * small_px: the small frame's pixels it covers (after the dilation). */
typedef struct {
    int x1, y1, x2, y2;
    int small_px;
} osp_motion_box_t;

typedef enum {
    OSP_MOTION_WARMING = 0,       /* the first frames: learning the background */
    OSP_MOTION_ACTIVE = 1,        /* boxes are this frame's motion */
    OSP_MOTION_RECALIBRATING = 2, /* the light changed: background reset, no boxes */
} osp_motion_state_t;

typedef struct {
    /* this frame's boxes, largest first; owned by the detector and valid
     * until its next osp_motion_update or osp_motion_free */
    const osp_motion_box_t *boxes;
    int n_boxes;
    int n_dropped; /* components big enough but beyond max_boxes */
    /* share of the unmasked small frame that changed (before the
     * dilation), 0..1; reported in every state */
    float share;
    osp_motion_state_t state;
} osp_motion_result_t;

typedef struct osp_motion osp_motion_t;

/* A detector for width x height frames. Returns 0, or OSP_MOTION_EINVAL
 * (which parameter, and why, in err) or OSP_MOTION_ENOMEM; *out is the
 * caller's, to free with osp_motion_free. p is not kept. */
int osp_motion_create(const osp_motion_params_t *p, int width, int height, osp_motion_t **out,
                      char *err, size_t errlen);
void osp_motion_free(osp_motion_t *m);

/* Forget the background: the next settle_frames frames are warm-up. */
void osp_motion_reset(osp_motion_t *m);

/* Look at one frame's luma plane (stride bytes from a row to the next,
 * >= width). The size must be the one the detector was made for: a camera
 * that changes resolution needs a new detector. Returns 0 with *res
 * filled, or OSP_MOTION_EINVAL with the reason in err (*res then says
 * nothing moved and the detector is unchanged). */
int osp_motion_update(osp_motion_t *m, const uint8_t *luma, int width, int height, int stride,
                      osp_motion_result_t *res, char *err, size_t errlen);

/* The size of the small frame the work is done on. */
void osp_motion_small_size(const osp_motion_t *m, int *width, int *height);

#endif
