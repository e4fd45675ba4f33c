/*
 * site: what the --config file says beyond each camera, and what every
 * camera of it shares — the events database, the MQTT connection (with
 * Home Assistant's discovery prefix), the snapshots' folder — and the one
 * counter of track ids (so that no two objects share an event id). Opened
 * on the I/O thread, at the start and when a SIGHUP changes what they
 * share; each camera holds the site it uses (a reference), so a re-read
 * opens a new site, the cameras switch to it between two frames, and the
 * old one is closed, on a thread of its own, once the last camera has let
 * go of it. The cameras' threads use what it holds meanwhile (each of
 * those is safe from any thread: eventdb.h, publish/sink.h, track.h). The
 * struct is private to site.c.
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
 * other key checked, and what they share opened (the snapshots' folder
 * made, the MQTT connection, the events database) into *out, held once
 * (the caller's reference). 0, or -1 with err (never a password), nothing
 * left open. */
int srv_site_read(const char *path, srv_camcfg_t **cfg, int *n, srv_site_t **out, char *err,
                  size_t errlen);
/* SIGHUP: the file read again against cur, the site in use. When its
 * "mqtt", "events": "db" or "events": "snapshots" changed, a new site is
 * opened into *next (the caller's reference); when not, *next is NULL and
 * cur is not touched, but for a changed retention, which applies to its
 * open database. 0, or -1 with err naming the key (never a password):
 * nothing opened, cur kept. */
int srv_site_reread(const char *path, srv_site_t *cur, srv_camcfg_t **cfg, int *n,
                    srv_site_t **next, char *err, size_t errlen);
/* One more holder of site; returns it (NULL: nothing). */
srv_site_t *srv_site_ref(srv_site_t *site);
/* A holder lets go; the last one closes it on a thread of its own (the
 * database's last records written, the broker given up to 3 s for what
 * is queued, the connection's counts logged), so no camera and not the
 * I/O thread waits for it. Any thread; NULL: nothing. */
void srv_site_unref(srv_site_t *site);
/* Wait for every site being closed (at the stop, after the cameras). */
void srv_site_wait_closed(void);

osp_eventdb_t *srv_site_db(const srv_site_t *site);     /* or NULL */
const char *srv_site_db_path(const srv_site_t *site);   /* or NULL without a database */
osp_sink_t *srv_site_mqtt(const srv_site_t *site);      /* or NULL */
const char *srv_site_ha(const srv_site_t *site);        /* or NULL: no discovery */
const char *srv_site_snapshots(const srv_site_t *site); /* the folder, or "" */
_Atomic uint64_t *srv_site_track_ids(srv_site_t *site);

#endif
