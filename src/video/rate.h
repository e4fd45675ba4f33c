/*
 * rate: `--fps N`, sampling a fixed rate out of a source's frames. A frame
 * at time t (seconds on the source's clock: pts for a file, capture time for
 * a camera) is taken when it is at or past the next due time (less some slack for jitter, rate.c); due times are
 * 1/N apart, and a gap in the stream (a drop) restarts them at the next frame
 * rather than bursting to catch up. Pure; one per reader.
 */
#ifndef OSP_VIDEO_RATE_H
#define OSP_VIDEO_RATE_H

typedef struct {
    double interval; /* 0: take every frame */
    double next, prev;
    int started;
} osp_rate_t;

/* fps <= 0: every frame. */
void osp_rate_init(osp_rate_t *r, double fps);
/* 1: take the frame at time t; 0: skip it. */
int osp_rate_take(osp_rate_t *r, double t);

#endif
