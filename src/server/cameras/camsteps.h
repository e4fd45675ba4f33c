/*
 * camsteps: a camera's cascade once per object (track/steps.h), as
 * `osprey detect --track` runs it. The steps run inside each frame's job,
 * on a predict worker, before the frame's detections are tracked; so before
 * a frame goes, the camera lists the objects whose steps are settled, where
 * the tracker expects them (srv_camsteps_settled, for srv_camrun_settled),
 * and a detection that is one of them runs no step. After the frame is
 * tracked, each object a step ran on counts the run and keeps whether its
 * result was sure (srv_camsteps_update). Its name stays camnames'.
 *
 * One per camera, its thread's; made once its model is seen to have a
 * cascade. The struct is private to camsteps.c.
 */
#ifndef OSP_SRV_CAMSTEPS_H
#define OSP_SRV_CAMSTEPS_H

#include <stdint.h>

#include "track/events.h"
#include "track/steps.h"
#include "track/track.h"

typedef struct srv_camsteps srv_camsteps_t;

/* judges: a step of the cascade names or reads (osp_cascade_judges). NULL
 * when out of memory. */
srv_camsteps_t *srv_camsteps_new(int judges);
void srv_camsteps_free(srv_camsteps_t *k);

/* The objects of tr whose steps are settled for the next frame (tried
 * OSP_STEPS_TRIES times, or sure and not grown since), with the box the
 * tracker expects and the class their steps ran on, into out (up to cap).
 * Returns how many. */
int srv_camsteps_settled(srv_camsteps_t *k, const osp_tracker_t *tr, osp_steps_settled_t *out,
                         int cap);

/* After osp_track_update on dets[0..n): a frame more; each track matched
 * this frame to a detection a step ran on (stepped[i]; cls[i] its class,
 * names[i] what the steps found) counts the run. Tracks no longer in tr
 * are forgotten. 0, or -1 out of memory (that frame's runs not kept). */
int srv_camsteps_update(srv_camsteps_t *k, const osp_tracker_t *tr, const osp_track_det_t *dets,
                        const int *cls, const int *stepped, const osp_event_names_t *names, int n);

#endif
