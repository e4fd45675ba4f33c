/*
 * campages: the cameras' pages of the HTTP door (docs/cameras.md, HTTP):
 * /api/cameras, the cameras' series on /metrics, and the drawing and
 * encoding of /api/cameras/NAME/latest.jpg — all from the camera board
 * (core/camboard.h), never from the cameras themselves. The caller owns
 * the buffers.
 */
#ifndef OSP_CAMPAGES_H
#define OSP_CAMPAGES_H

#include <stddef.h>
#include <stdint.h>

#include "eventdb/eventdb.h"
#include "server/core/srv.h"
#include "wire/http.h"
#include "wire/jsonw.h"

/* /api/cameras. */
void srv_page_cameras(server_t *s, osp_jw_t *w);
/* The per-camera series of /metrics (nothing without cameras). */
void srv_page_camera_metrics(server_t *s, osp_text_t *t);

/* /api/cameras/NAME/latest.jpg into *jpg (malloc'd, the caller's): 200,
 * 404 (no such camera), 503 (no frame yet) or 500; *why says it for a
 * status other than 200. */
unsigned srv_page_camera_latest(server_t *s, const char *name, uint8_t **jpg, size_t *len,
                                const char **why);

/* /api/events for q (crossings: /api/crossings): 200 with the rows (a
 * JSON array, newest first), or 404 (no events database), 503 (the
 * cameras are starting) or 500 with {"error": ...}, into w. */
unsigned srv_page_camera_events(server_t *s, const osp_eventdb_query_t *q, int crossings, osp_jw_t *w);
/* {"error": msg} into w. */
void srv_page_error(osp_jw_t *w, const char *msg);

/* /api/events/ID/snapshot.jpg into *jpg (malloc'd, the caller's): 200,
 * or 404 (an id not made as event ids are, not in the database, or
 * without a snapshot) or 500, with *why. */
unsigned srv_page_event_snapshot(server_t *s, const char *id, uint8_t **jpg, size_t *len,
                                 const char **why);

#endif
