/*
 * track_snap: the best snapshot of each tracked object (osprey detect
 * --track --snapshots DIR, and a camera of ospreyd's with "events":
 * {"snapshots": DIR}): DIR/<event id>.jpg, the whole frame of its best-scoring
 * sighting (the "snapshot" of its event records: frame_time, box, score)
 * with that box and its label drawn. The file is rewritten each time the
 * object is seen with a better score, through a temporary name and a
 * rename, so a reader never sees half a picture; a track that ends without
 * ever being reported (never confirmed, or rejected by its look first)
 * leaves no file. The pictures are written before the frame's events go
 * out, so an automation that gets an event finds its picture.
 *
 * Ownership: the caller's (new / free); one thread, the one that tracks.
 * Cameras may share DIR: event ids start with the object's start time and
 * differ between cameras by their tracks' ids only when they start at
 * once, so each camera's thread writes names of its own objects only.
 */
#ifndef OSP_PUBLISH_TRACK_SNAP_H
#define OSP_PUBLISH_TRACK_SNAP_H

#include <stddef.h>

#include "image/image.h"
#include "track/events.h"
#include "track/track.h"

typedef struct osp_track_snaps osp_track_snaps_t;

/* dir: an existing directory (copied). who names the
 * writer in the one line a write failure gets ("osprey detect:
 * --snapshots"; the caller's string, kept). 0, or -1 with the reason in
 * err. */
int osp_track_snaps_new(const char *dir, const char *who, osp_track_snaps_t **out, char *err,
                        size_t errlen);
/* After osp_events_update: the pictures of the tracks whose best sighting
 * is this frame. pixels: the frame the detections are of, frame_w x
 * frame_h being the frame's size in the boxes' pixels (a decode may be
 * smaller). A file that cannot be written is said once in the log. */
void osp_track_snaps_frame(osp_track_snaps_t *s, const osp_tracker_t *t, const osp_events_t *ev,
                           const osp_view_t *pixels, int frame_w, int frame_h);
void osp_track_snaps_free(osp_track_snaps_t *s);

#endif
