/*
 * track_mqtt: one camera's objects on MQTT in Frigate's topics, so that an
 * automation written for Frigate works unchanged, and Home Assistant's MQTT
 * discovery, so that HA shows the camera's sensors with no YAML.
 *
 *   PREFIX/events             each event record, {"type","before","after"}
 *   PREFIX/CAMERA/LABEL       objects of LABEL on the camera now (retained)
 *   PREFIX/CAMERA/LABEL/active  of which not stationary (retained)
 *   PREFIX/ZONE/LABEL[/active]  the same in a zone (retained)
 *   PREFIX/available          "online" / "offline" (the sink's, sink.h)
 *   HA/binary_sensor/osprey_CAMERA/SCOPE_LABEL_occupancy/config  (retained)
 *   HA/sensor/osprey_CAMERA/SCOPE_LABEL_count/config             (retained)
 *
 * LABEL is the model's label in lower case, as Frigate's are ("person" for
 * OIDv4's "Person"), in the topics and in the events' "label" alike, so
 * that an automation that names it works unchanged; the records on stdout
 * keep the model's spelling.
 *
 * SCOPE is the camera ("all") or a zone. The discovered labels: a zone's
 * "objects", the camera's the union of every zone's and line's, and
 * without any the model's person label. Counts start at 0 for every
 * discovered pair, so HA shows 0 rather than "unknown", and a retained
 * count left by an earlier run is cleared; at the end each count still
 * above 0 goes back to 0.
 *
 * Ownership: the caller's (new / free); it keeps sink, events and zc (the
 * caller's, which outlive it) and frees none of them. One thread.
 */
#ifndef OSP_CLI_TRACK_MQTT_H
#define OSP_CLI_TRACK_MQTT_H

#include <stddef.h>

#include "segment/sink.h"
#include "track/events.h"
#include "track/zones.h"

typedef struct osp_track_mqtt osp_track_mqtt_t;

/* sink: open, with the Frigate prefix as its topic. zc: NULL without
 * zones. ha_prefix: HA's discovery prefix ("homeassistant"), NULL for no
 * discovery. Publishes the discovery configs and the zero counts.
 * Returns 0, or -1 (out of memory) with the reason in err. */
int osp_track_mqtt_new(osp_sink_t *sink, const char *camera, const osp_events_t *events,
                       const osp_zones_cfg_t *zc, const char *const *labels, int n_labels,
                       const char *ha_prefix, osp_track_mqtt_t **out, char *err, size_t errlen);
/* After osp_events_update: the frame's events and the counts that changed. */
void osp_track_mqtt_frame(osp_track_mqtt_t *q);
/* Every count still above 0 back to 0, then free (NULL: nothing). */
void osp_track_mqtt_free(osp_track_mqtt_t *q);

#endif
