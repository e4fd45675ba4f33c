/*
 * track: objects over time. A multi-object tracker in the manner of
 * ByteTrack: each frame's detections are paired with the tracks by box
 * overlap (IoU) after a constant-velocity Kalman prediction, confident
 * detections first, then weak ones so that a track stays alive while its
 * object is half hidden; a label never continues a track of another label.
 * The rules and every parameter are in docs/tracking.md.
 *
 * A tracker follows one camera and is used by one thread. It is pure:
 * no threads, no I/O, no clock (the caller gives each frame's time), and
 * the same frames give the same tracks and ids.
 *
 * Ownership: the tracker is the caller's (osp_track_new / osp_track_free).
 * The osp_track_t pointers it hands out are the tracker's, valid until the
 * next osp_track_update or osp_track_free. Detections are read during the
 * call and not kept.
 */
#ifndef OSP_TRACK_TRACK_H
#define OSP_TRACK_TRACK_H

#include <stddef.h>
#include <stdint.h>

#define OSP_TRACK_EINVAL (-1) /* a bad parameter or argument; the reason is in err */
#define OSP_TRACK_ENOMEM (-2)
#define OSP_TRACK_ENOENT (-3) /* no track has that id */

/* x1,y1,x2,y2 in pixels of the frame. */
typedef struct {
    float x1, y1, x2, y2;
} osp_track_box_t;

typedef struct {
    osp_track_box_t box;
    float score; /* 0..1 */
    int label;   /* the model's label index, >= 0 */
    /* The part of the frame the detector ran on, when the caller knows it
     * (reported as Frigate's "region"); has_region 0 otherwise. */
    osp_track_box_t region;
    int has_region;
} osp_track_det_t;

typedef enum {
    OSP_TRACK_TENTATIVE, /* seen, not yet confirm_hits times in a row */
    OSP_TRACK_CONFIRMED, /* an object, seen this frame */
    OSP_TRACK_LOST,      /* a confirmed object not seen this frame; its box is predicted */
    OSP_TRACK_REMOVED,   /* gone: listed for the frame it ended in, then dropped */
} osp_track_state_t;

/* The second look's verdict on a track (osp_track_set_verdict). */
typedef enum {
    OSP_TRACK_UNVERIFIED,
    OSP_TRACK_VERIFIED,
    OSP_TRACK_REJECTED, /* for good: never an object, never looked at again */
} osp_track_verdict_t;

typedef struct {
    uint64_t id; /* 1, 2, 3, ... in order of creation; never reused */
    int label;
    osp_track_state_t state;
    osp_track_verdict_t verdict;
    osp_track_box_t box;    /* the detection matched this frame; while unseen, the prediction */
    osp_track_box_t smooth; /* the filter's estimate */
    osp_track_box_t seen;   /* the detection it was last matched with */
    osp_track_box_t region; /* of the last matched detection, if has_region */
    int has_region;
    float score;             /* of the last matched detection */
    float top_score;         /* the best score so far, and where and when it was seen: */
    osp_track_box_t top_box; /* the object's best snapshot */
    double top_time;
    float look_score;             /* the last verdict's score; -1 before any */
    int hits;                     /* frames it was matched in */
    int age;                      /* frames since it was created (0 on its first) */
    int unseen;                   /* frames since it was last matched (0: this frame) */
    int motionless;               /* frames its centre has stayed put */
    int stationary;               /* 1: parked (docs/tracking.md, Stationary objects) */
    double first_seen, last_seen; /* frame times */
} osp_track_t;

/* Every threshold of the tracker; osp_track_params_default gives the
 * defaults listed here (docs/tracking.md says why each). */
typedef struct {
    float high_score;     /* 0.5: a detection at or above is matched first and may start a track */
    float low_score;      /* 0.1: below, a detection is ignored */
    float new_score;      /* 0.5: a new track needs an unmatched detection at least this sure */
    float match_iou;      /* 0.2: least IoU to pair a confident detection with a track */
    float low_match_iou;  /* 0.5: the same for a weak detection (only tracks seen last frame) */
    float tentative_iou;  /* 0.3: the same for a tentative track */
    int confirm_hits;     /* 3: frames in a row before a track is an object */
    int lost_frames;      /* 30: a lost track is removed after this many frames unseen, */
    double lost_seconds;  /* 0 (off): or this many seconds unseen, whichever comes first */
    float still_fraction; /* 0.1: a centre that stays within this fraction of the box's */
    int still_frames;     /* 10:  width and height for this many frames */
    double still_seconds; /* 0:   and at least this many seconds is stationary */
    int parked_lost_frames;     /* 0 (off): a stationary track unseen this many frames is */
    double parked_lost_seconds; /* 300: or this many seconds, is removed; both 0: never */
    float relook_score;         /* 0.2: a verified track's score moved this much since */
    float relook_area;          /* 2.0: or its box area by this factor: look again */
    float look_now_score;       /* 0.6: a new track's box this sure is looked at at once, */
    int look_hits;              /* 3: a more doubtful one once seen this many frames
                                 * (at most confirm_hits: the verdict comes first) */
    int coast_frames;           /* 1: a lost object's prediction stands for it this many
                                 * frames (osp_track_coasts); 0: never */
    int max_tracks;             /* 256: tracks kept at once; more detections start none */
    int max_dets;               /* 256: the most confident detections of a frame taken */
} osp_track_params_t;

typedef struct osp_tracker osp_tracker_t;

void osp_track_params_default(osp_track_params_t *p);
/* Checks each parameter's range and low_score <= high_score. Returns 0 or
 * OSP_TRACK_EINVAL with the first offending field named in err. */
int osp_track_params_check(const osp_track_params_t *p, char *err, size_t errlen);

/* NULL params: the defaults. Returns 0, OSP_TRACK_EINVAL or OSP_TRACK_ENOMEM. */
int osp_track_new(const osp_track_params_t *p, osp_tracker_t **out, char *err, size_t errlen);
void osp_track_free(osp_tracker_t *t);
/* Draw the ids of t's new tracks from *counter (its current value, then
 * one more), which several trackers of one process may share (any
 * thread: atomic), so that no two of them give the same id and their
 * event ids (track/events.h: start time and track id) never collide,
 * even for cameras that see the same frames at the same time. Set before
 * the first update; *counter starts at 1 and outlives t. */
void osp_track_share_ids(osp_tracker_t *t, _Atomic uint64_t *counter);

/* One frame: n detections at time `t` (seconds, any origin; never less
 * than the previous frame's). A detection with a non-finite value, an
 * empty box or a negative label is ignored. Returns 0, OSP_TRACK_EINVAL
 * (time going back, NaN, n < 0) or OSP_TRACK_ENOMEM (the tracker keeps
 * its previous state). */
int osp_track_update(osp_tracker_t *t, const osp_track_det_t *dets, int n, double time, char *err,
                     size_t errlen);

/* The tracks after the last update, in id order, REMOVED ones included
 * for the frame they ended in. */
int osp_track_count(const osp_tracker_t *t);
const osp_track_t *osp_track_at(const osp_tracker_t *t, int i);
/* The track with that id, or NULL. */
const osp_track_t *osp_track_find(const osp_tracker_t *t, uint64_t id);
/* The last update's frame time (0 before the first). */
double osp_track_now(const osp_tracker_t *t);
/* Where track id's box is expected in the next frame (its filter one
 * frame ahead, as the next update predicts it), into *out: 0, or
 * OSP_TRACK_ENOENT. */
int osp_track_ahead(const osp_tracker_t *t, uint64_t id, osp_track_box_t *out);

/* The second look, once per object: the ids of the tracks seen this frame
 * that want a look, in id order: those never looked at whose score is at
 * least look_now_score, or that were seen look_hits frames (or were looked
 * at without a verdict), and verified confirmed ones whose score or box
 * area changed by relook_score / relook_area since their last look.
 * Rejected tracks never do. Writes up to cap ids and returns how many want
 * one (which may exceed cap). */
int osp_track_needs_look(const osp_tracker_t *t, uint64_t *ids, int cap);
/* Records the look's verdict (OSP_TRACK_VERIFIED or OSP_TRACK_REJECTED)
 * and its score. A rejected track stays rejected whatever comes later.
 * OSP_TRACK_UNVERIFIED records a look that settled nothing (it failed, and
 * the caller will look again): the verdict and score stay, and a track
 * never verified wants a look in its next frames whatever its score and
 * hits. Returns 0, OSP_TRACK_ENOENT or OSP_TRACK_EINVAL (no such verdict). */
int osp_track_set_verdict(osp_tracker_t *t, uint64_t id, osp_track_verdict_t verdict, float score);

/* Whether lost track o's box (its prediction) stands for its object in
 * this frame's output, as if it had been seen: the object was seen at most
 * coast_frames frames ago (a detector misses a person for a frame now and
 * then), it is not rejected, its box lies wholly inside the frame (w x h
 * pixels; one that reaches an edge is most likely leaving), and it
 * overlaps (IoU >= 0.1) no box of a track of its label seen this frame,
 * which is then most likely what became of it. verified 1: o must be
 * verified, and only verified tracks' boxes count as seen (a caller that
 * reports only verified objects). */
int osp_track_coasts(const osp_tracker_t *t, const osp_track_t *o, int verified, float w, float h);

/* IoU of two boxes; 0 when either is empty. */
float osp_track_iou(const osp_track_box_t *a, const osp_track_box_t *b);

#endif
