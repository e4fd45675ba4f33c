/*
 * cameras: ospreyd watching cameras itself (docs/cameras.md), one more
 * front end of the core. Each camera of the --config file's "cameras" list
 * has a thread that reads its source (a file, rtsp://, http(s)://, a
 * device: video/source.h; the newest frame of a live one), takes at most
 * `fps` frames a second, submits each to its model through the core's door
 * with a deadline of one frame interval (a slow model sheds the stale
 * frame, not the camera), and turns the detections into tracks, zones and
 * events (track/), logged one JSON record a line (camera.h). The list is
 * private to cameras.c.
 */
#ifndef OSP_CAMERAS_H
#define OSP_CAMERAS_H

#include "server/core/frontend.h"
#include "server/core/srv.h"

/* The front end, as server.c starts and stops it (core/frontend.h). */
extern const srv_frontend_t srv_cameras_frontend;

#endif
