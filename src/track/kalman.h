/*
 * kalman: the constant-velocity Kalman filter the tracker keeps per track,
 * on the box's centre and size (cx, cy, w, h) and their velocities per
 * frame. Noise is proportional to the box's size, so a far, small object
 * and a near, large one are followed with the same relative trust.
 *
 * Plain values: an osp_kalman_t is a struct the caller owns (the tracker
 * keeps one per track); nothing allocates, nothing fails. Boxes are
 * x1,y1,x2,y2 in frame pixels.
 */
#ifndef OSP_TRACK_KALMAN_H
#define OSP_TRACK_KALMAN_H

typedef struct {
    double x[8];    /* cx, cy, w, h, then their velocities per frame */
    double p[8][8]; /* the state's covariance */
} osp_kalman_t;

/* A filter whose state is the box, standing still, with a wide velocity
 * uncertainty (a new track's speed is unknown). */
void osp_kalman_init(osp_kalman_t *k, const float box[4]);
/* One frame ahead. */
void osp_kalman_predict(osp_kalman_t *k);
/* Corrects the state with a measured box. */
void osp_kalman_update(osp_kalman_t *k, const float box[4]);
/* Forgets the velocity: a parked object's estimate must not drift while it
 * goes unseen. */
void osp_kalman_stop(osp_kalman_t *k);
/* The state's box (x1,y1,x2,y2). */
void osp_kalman_box(const osp_kalman_t *k, float box[4]);

#endif
