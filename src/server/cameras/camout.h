/*
 * camout: a camera's records out, after each frame it tracked and as it
 * stops. Each event record and each line crossing is a JSON line on
 * stdout (as `osprey detect --track --events -` writes them), a row in
 * the site's database and a message on the camera's MQTT topics, which
 * also get the frame's counts (camsite.h holds the database and topics).
 *
 * One per camera, made and freed as the camera is; its calls on the
 * camera's thread, but srv_camout_counts, any thread's. The struct is
 * private to camout.c.
 */
#ifndef OSP_CAMERAS_CAMOUT_H
#define OSP_CAMERAS_CAMOUT_H

#include <stdint.h>

#include "server/cameras/camsite.h"
#include "track/events.h"
#include "track/track.h"
#include "track/zones.h"

typedef struct srv_camout srv_camout_t;

/* The records of cam (what its camsite reads of the camera, site) through
 * site's database and topics; events: cam's events, through which its
 * objects end as it stops. NULL out of memory. */
srv_camout_t *srv_camout_new(const srv_camsite_cam_t *cam, osp_events_t *events, srv_camsite_t *site);
void srv_camout_free(srv_camout_t *o);

/* After a frame at time t went through the tracker, the zones and the
 * events (ne records, osp_events_update's): the records, the crossings and
 * the counts out. */
void srv_camout_frame(srv_camout_t *o, int ne, double t);

/* The camera stops (ospreyd's stop, a SIGHUP that removes or restarts
 * it) or its source ended: every object still open ends at the last
 * frame's time, out as a frame's records are. */
void srv_camout_end(srv_camout_t *o);

/* Records and crossings out so far. Any thread. */
void srv_camout_counts(const srv_camout_t *o, int64_t *events, int64_t *crossings);

#endif
