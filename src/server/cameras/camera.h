/*
 * camera: one camera of ospreyd (docs/cameras.md). Its thread reads its
 * source (video/source.h; the newest frame of a live one), takes at most
 * `fps` frames a second, lets through its motion gate those where
 * something moved, submits each to its model through the core's door with
 * a deadline of one frame interval (camrun.h: whole, or as crops around
 * what moved and what is tracked when it is much larger than the model),
 * and turns the detections into tracks, zones and events (track/), logged
 * one JSON record a line, kept in the site's database and published on
 * its MQTT connection. The struct is private to camera.c; cameras.c keeps
 * the list.
 */
#ifndef OSP_CAMERAS_CAMERA_H
#define OSP_CAMERAS_CAMERA_H

#include <stddef.h>

#include "server/cameras/camcfg.h"
#include "server/cameras/site.h"
#include "server/core/srv.h"

typedef struct srv_camera srv_camera_t;

/* On the I/O thread: a camera for cfg, using what site holds (it holds a
 * reference: site.h), its thread started; NULL with err (naming the
 * camera). */
srv_camera_t *srv_camera_new(server_t *s, const srv_camcfg_t *cfg, srv_site_t *site, char *err,
                             size_t errlen);
/* Tell the camera to stop: its reads end, its wait for an answer does not
 * (the core answers every frame it is given). Any thread. */
void srv_camera_signal_stop(srv_camera_t *c);
/* On the I/O thread, after srv_camera_signal_stop: wait for its thread,
 * log its counts, free it. NULL: nothing. */
void srv_camera_free(server_t *s, srv_camera_t *c);
/* The config it was started with. */
const srv_camcfg_t *srv_camera_cfg(const srv_camera_t *c);
/* On the I/O thread (SIGHUP): use site from its next frame on, the
 * source and the tracks kept (camsite.h); the camera holds site from
 * now. */
void srv_camera_switch(srv_camera_t *c, srv_site_t *site);
/* On the I/O thread, before srv_camera_free, for a camera that stops for
 * good (no longer listed): its free removes its Home Assistant entities,
 * once its thread has published its last events. */
void srv_camera_forget(srv_camera_t *c);

#endif
