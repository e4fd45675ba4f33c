/*
 * steps: when a cascade's steps (docs/cascades.md) run on a tracked object.
 * A face seen for 300 frames is the same face each time: its name is
 * taken once, not 300 times. An object's steps run
 *
 * - when it is first met (osprey detect --track: its track confirmed and
 *   verified; a camera: its first detection a step takes);
 * - again when its box has grown OSP_STEPS_GROW_AGAIN times since the
 *   last run (it came closer: a larger crop, a surer result), or when the
 *   last result was below its threshold (no name but "unknown", no text
 *   that fits the pattern) and OSP_STEPS_AGAIN_AFTER frames have passed;
 * - OSP_STEPS_TRIES times at most in all.
 *
 * The result kept is the surest so far: a name or a text beats none, then
 * the higher score; two results without either, the latest (the larger
 * crop). Shared by `osprey detect --track` (cli/detect_steps.c) and
 * ospreyd's cameras (server/cameras/camobjs.c). Pure: plain values that
 * the caller owns, nothing allocated.
 */
#ifndef OSP_TRACK_STEPS_H
#define OSP_TRACK_STEPS_H

#include "track/events.h"
#include "track/track.h"

/* Runs of an object's steps at most. */
#define OSP_STEPS_TRIES 4
/* A box whose area is this many times its area at the last run is run
 * again: a face walking up to the camera is named from its nearest crop. */
#define OSP_STEPS_GROW_AGAIN 1.5f
/* Frames between runs of an object whose result was below its threshold:
 * the next frame's crop is nearly the same one. */
#define OSP_STEPS_AGAIN_AFTER 5
/* Least IoU of a detection with the expected box of an object whose steps
 * are settled, of its label, for the detection to be that object. */
#define OSP_STEPS_SAME_IOU 0.5f

/* What an object's runs so far left; zeroed: never run. */
typedef struct {
    int runs;
    long last;   /* the frame of its last run (the caller counts frames) */
    float area;  /* its box's area then */
    int sure;    /* the kept result has a name or a text */
    float score; /* its best name's or text's score */
} osp_steps_obj_t;

/* Whether object o (NULL: never run) wants its steps run in frame `frame`
 * on a box of that area; judges: a step of the cascade names or reads, so
 * a result can come out below its threshold (osp_cascade_judges). */
int osp_steps_wants(const osp_steps_obj_t *o, float area, long frame, int judges);

/* Object o's steps ran in frame `frame` on a box of that area and gave
 * names (osp_event_names_read of their fields): counted, and 1 when the
 * result is the surest so far and is kept (o's sure and score are then
 * its), 0 when the result kept before stands. */
int osp_steps_ran(osp_steps_obj_t *o, float area, long frame, const osp_event_names_t *names);

/* An object whose steps are settled (it does not want them run), as the
 * next frame is expected to show it: its box (the tracker's prediction)
 * and its label (the first model's class). */
typedef struct {
    osp_track_box_t box;
    int label;
} osp_steps_settled_t;

/* Whether a detection (box, label) is one of the n settled objects: one of
 * its label whose box overlaps it by OSP_STEPS_SAME_IOU or more. Its steps
 * are then not run; it keeps what its object has. */
int osp_steps_is_settled(const osp_steps_settled_t *settled, int n, const osp_track_box_t *box,
                         int label);

#endif
