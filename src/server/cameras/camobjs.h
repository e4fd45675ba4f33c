/*
 * camobjs: what a camera keeps of each of its tracked objects, a track id
 * an entry: when its cascade's steps ran (track/steps.h), and the best
 * name and plate they gave (for the camera's event records,
 * osp_events_set_names).
 *
 * The steps run once per object, as `osprey detect --track` runs them.
 * They run inside each frame's job, on a predict worker, before the
 * frame's detections are tracked; so before a frame goes, the camera lists
 * the objects whose steps are settled, where the tracker expects them
 * (srv_camobjs_settled, for srv_camrun_settled), and a detection that is
 * one of them runs no step. After the frame is tracked, one call
 * (srv_camobjs_update) forgets the tracks the tracker no longer has, and
 * each track matched this frame counts the run a step made on its
 * detection and keeps the surer of its name and plate.
 *
 * One per camera, its thread's; made once its model is seen to have a
 * cascade. The struct is private to camobjs.c.
 */
#ifndef OSP_SRV_CAMOBJS_H
#define OSP_SRV_CAMOBJS_H

#include <stdint.h>

#include "track/events.h"
#include "track/steps.h"
#include "track/track.h"

typedef struct srv_camobjs srv_camobjs_t;

/* judges: a step of the cascade names or reads (osp_cascade_judges). NULL
 * when out of memory. */
srv_camobjs_t *srv_camobjs_new(int judges);
void srv_camobjs_free(srv_camobjs_t *k);

/* The objects of tr whose steps are settled for the next frame (tried
 * OSP_STEPS_TRIES times, or sure and not grown since), with the box the
 * tracker expects and the class their steps ran on, into out (up to cap).
 * Returns how many. */
int srv_camobjs_settled(srv_camobjs_t *k, const osp_tracker_t *tr, osp_steps_settled_t *out, int cap);

/* After osp_track_update on dets[0..n): a frame more; tracks no longer in
 * tr are forgotten; each track matched this frame to detection i keeps
 * names[i]'s name, and its plate, when scored above the best it kept, and
 * when a step ran on it (stepped[i]; cls[i] its class) counts the run.
 * 0, or -1 out of memory (what is left of that frame's not kept). */
int srv_camobjs_update(srv_camobjs_t *k, const osp_tracker_t *tr, const osp_track_det_t *dets,
                       const int *cls, const int *stepped, const osp_event_names_t *names, int n);

/* The name and plate kept of track id (osp_events_set_names's fn; arg:
 * the srv_camobjs_t); out left as it is for an id not kept. */
void srv_camobjs_names(void *arg, uint64_t id, osp_event_names_t *out);

#endif
