/*
 * camnames: what a camera's cascade made of its objects — the name a
 * face took from a face library, a plate's text — kept per track, the
 * best seen so far, for the camera's event records (track/events.h,
 * osp_events_set_names). One per camera, its thread's.
 */
#ifndef OSP_SRV_CAMNAMES_H
#define OSP_SRV_CAMNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "track/events.h"
#include "track/track.h"

typedef struct srv_camnames srv_camnames_t;

srv_camnames_t *srv_camnames_new(void);
void srv_camnames_free(srv_camnames_t *t);

/* After osp_track_update on dets[0..n) (names[i]: detection i's): each
 * track matched this frame keeps the name, and the plate, of the
 * detection it matched when scored above the best it kept. Tracks no
 * longer in tr are forgotten. 0, or -1 out of memory (nothing kept of
 * this frame's). */
int srv_camnames_update(srv_camnames_t *t, const osp_tracker_t *tr, const osp_track_det_t *dets,
                        const osp_event_names_t *names, int n);

/* What is kept of track id (osp_events_set_names's fn; arg: the
 * srv_camnames_t). */
void srv_camnames_of(void *arg, uint64_t id, osp_event_names_t *out);

#endif
