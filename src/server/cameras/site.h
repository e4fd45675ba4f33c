/*
 * site: what the --config file says beyond each camera, and what every
 * camera of it shares — the events database, the MQTT connection (with
 * Home Assistant's discovery prefix), the snapshots' folder and the one
 * counter of track ids (so that no two objects share an event id). Opened
 * before the cameras start and closed after they stop, on the I/O thread;
 * the cameras' threads use what it holds meanwhile (each of those is safe
 * from any thread: eventdb.h, publish/sink.h, track.h). The struct is
 * private to site.c.
 */
#ifndef OSP_CAMERAS_SITE_H
#define OSP_CAMERAS_SITE_H

#include <stddef.h>
#include <stdint.h>

#include "eventdb/eventdb.h"
#include "publish/sink.h"
#include "server/cameras/camcfg.h"

typedef struct srv_site srv_site_t;

/* The config file's cameras into *cfg (the caller's to free) and *n, every
 * other key checked. With out non-NULL, also open what they share (the
 * snapshots' folder made, the MQTT connection, the events database) into
 * *out; with out NULL (a re-read), nothing is opened. 0, or -1 with err
 * (never a password), nothing left open. */
int srv_site_read(const char *path, srv_camcfg_t **cfg, int *n, srv_site_t **out, char *err,
                  size_t errlen);
/* After the cameras: the database closed (their last records are in), the
 * broker given a moment for what is queued, and the connection's counts
 * logged. NULL: nothing. */
void srv_site_close(srv_site_t *site);

osp_eventdb_t *srv_site_db(const srv_site_t *site);     /* or NULL */
const char *srv_site_db_path(const srv_site_t *site);   /* or NULL without a database */
osp_sink_t *srv_site_mqtt(const srv_site_t *site);      /* or NULL */
const char *srv_site_ha(const srv_site_t *site);        /* or NULL: no discovery */
const char *srv_site_snapshots(const srv_site_t *site); /* the folder, or "" */
_Atomic uint64_t *srv_site_track_ids(srv_site_t *site);

#endif
