/*
 * camsite: one camera's hold on the site it uses (site.h), and what it
 * made on that site: its Frigate topics on the site's MQTT connection and
 * its writer of best snapshots into the site's folder. A SIGHUP that opens
 * a new site hands it over (srv_camsite_switch); the camera's thread takes
 * it between two frames (srv_camsite_between), its source and tracks
 * kept: the topics move to the new connection at once, while the objects
 * first seen before the switch keep ending in the database they started
 * in, the old site held until the last of them has ended (or for at most
 * a few tens of seconds of frames: then they end in the newer one).
 *
 * Threads: made, switched to and freed as the camera is; everything else
 * on the camera's thread, but srv_camsite_online and srv_camsite_forget,
 * which any thread may call (they take the camsite's lock). The struct is
 * private to camsite.c.
 */
#ifndef OSP_CAMERAS_CAMSITE_H
#define OSP_CAMERAS_CAMSITE_H

#include <stdbool.h>
#include <stddef.h>

#include "eventdb/eventdb.h"
#include "publish/track_mqtt.h"
#include "publish/track_snap.h"
#include "server/cameras/site.h"
#include "track/events.h"
#include "track/track.h"
#include "track/zones.h"

typedef struct srv_camsite srv_camsite_t;

/* What of the camera the camsite reads (the camera's, outliving it): its
 * topics are made from these, and its tracker says which objects are
 * still tracked. */
typedef struct {
    const char *camera; /* its name */
    const osp_tracker_t *tracker;
    const osp_events_t *events;
    const osp_zones_t *zones;  /* or NULL */
    const char *const *labels; /* the camera's label names, labels[0..*n_labels) */
    const int *n_labels;       /* which grow as labels are seen */
    bool discover;             /* its labels are discovered in Home Assistant ("objects" given) */
} srv_camsite_cam_t;

/* The camera's hold on site (a reference taken), its topics made when the
 * site has MQTT and its snapshot writer when it has a folder. 0, or -1
 * with why (nothing held). */
int srv_camsite_new(const srv_camsite_cam_t *cam, srv_site_t *site, srv_camsite_t **out, char *why,
                    size_t cap);
/* Its topics freed (the camera offline there), every site it holds let
 * go. NULL: nothing. */
void srv_camsite_free(srv_camsite_t *cs);

/* On the I/O thread (SIGHUP): site is used from the camera's next frame
 * on (a reference taken; a newer switch before that frame wins). */
void srv_camsite_switch(srv_camsite_t *cs, srv_site_t *site);
/* Between two frames, the next at time t: onto the site a switch gave,
 * if any. */
void srv_camsite_between(srv_camsite_t *cs, double t);
/* After a frame at time t has been tracked: the old sites none of whose
 * objects is tracked any more, and those held too long, let go. */
void srv_camsite_tracked(srv_camsite_t *cs, double t);

/* The database of an object first seen at start_time (that of the site
 * it started on), or NULL. */
osp_eventdb_t *srv_camsite_db_of(const srv_camsite_t *cs, double start_time);
/* The database of the site in use, or NULL. */
osp_eventdb_t *srv_camsite_db(const srv_camsite_t *cs);
/* Its topics, or NULL without MQTT; its snapshot writer, or NULL. */
osp_track_mqtt_t *srv_camsite_mqtt(const srv_camsite_t *cs);
osp_track_snaps_t *srv_camsite_snaps(const srv_camsite_t *cs);

/* Any thread: the camera online or offline on its topics (if any). */
void srv_camsite_online(srv_camsite_t *cs, bool online);
/* Any thread, before the camera stops for good: its Home Assistant
 * entities removed. */
void srv_camsite_forget(srv_camsite_t *cs);

#endif
