/*
 * gate: whether a detector needs to run on a frame at all. A camera mostly
 * films a scene where nothing happens, and a frame in which nothing moved
 * holds the objects the last frame held. Its user hands each frame here,
 * in order: the motion detector (motion.h) runs on its luma, and the
 * model is to run when something moved, when the detector starts and
 * stops learning a background (its first frames, a change of light: it
 * cannot tell meanwhile), and every OSP_MOTION_GATE_FULL_S seconds of the
 * frames' clock whatever it says, so that what stands still and was never
 * seen is found. The gate does not say where to look: its user may plan
 * regions (regions.h) from the boxes of the frame it let through
 * (osp_motion_gate_boxes), as ospreyd's cameras do on frames much larger
 * than their model; on vtest.avi they cost 1.43 model runs a frame, where a
 * whole frame costs one (docs/tracking.md, Motion and regions).
 *
 * Users: `osprey detect --track` (its reader thread) and each of
 * ospreyd's cameras (its thread). A gate is one thread's; it owns its
 * detector, made for the first frame's size and again on a new size, and
 * its copy of the masks.
 */
#ifndef OSP_MOTION_GATE_H
#define OSP_MOTION_GATE_H

#include <stddef.h>

#include "image/image.h"
#include "motion/motion.h"

/* Seconds between whole-frame runs when nothing moves: as Frigate's, and
 * regions.h's full_every_s. */
#define OSP_MOTION_GATE_FULL_S 10.0

typedef struct osp_motion_gate osp_motion_gate_t;

/* A gate whose motion ignores masks (n_masks polygons, as motion.h's,
 * copied; NULL and 0 for none). 0, or -1 with err (a mask motion.h
 * refuses is refused here, at once). */
int osp_motion_gate_new(const osp_motion_poly_t *masks, int n_masks, osp_motion_gate_t **out,
                        char *err, size_t errlen);
void osp_motion_gate_free(osp_motion_gate_t *g);

/* One frame at time t (seconds, the frames' clock): 1 when the model is
 * to run on it, 0 when nothing moved since the last run; -1 with the
 * reason in err (the caller runs the model: it costs time, not a result).
 * *moved (may be NULL) says whether motion was found in it. Motion reads
 * a 4:2:0 frame's Y plane as it is and makes the luma of a packed RGB/BGR
 * one; a frame of another format (grey) is always run, and not looked at. */
int osp_motion_gate_frame(osp_motion_gate_t *g, const osp_image_t *img, double t, int *moved,
                          char *err, size_t errlen);

/* The last frame the gate let through never reached the model (a server
 * shed it, or its run failed): the next frame goes, whatever moved. */
void osp_motion_gate_not_run(osp_motion_gate_t *g);

/* The motion boxes of the last frame given (frame pixels, largest first)
 * into *boxes: how many (0 when nothing moved, or the frame was not
 * looked at). Valid until the next osp_motion_gate_frame. */
int osp_motion_gate_boxes(const osp_motion_gate_t *g, const osp_motion_box_t **boxes);

#endif
