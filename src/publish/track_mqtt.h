/*
 * track_mqtt: one camera's objects on MQTT in Frigate's topics, so that an
 * automation written for Frigate works unchanged, and Home Assistant's MQTT
 * discovery, so that HA shows the camera's sensors with no YAML. Used by
 * osprey detect --track --mqtt (one camera, one sink) and by ospreyd's
 * cameras (one of these per camera, all on one sink).
 *
 *   PREFIX/events             each event record, {"type","before","after"}
 *   PREFIX/crossings          each line crossing (osp_track_mqtt_crossings):
 *                             {"camera","t","line","direction","trackId","label"}
 *   PREFIX/CAMERA/LABEL       objects of LABEL on the camera now (retained)
 *   PREFIX/CAMERA/LABEL/active  of which not stationary (retained)
 *   PREFIX/ZONE/LABEL[/active]  the same in a zone (retained)
 *   PREFIX/available          "online" / "offline" (the sink's, sink.h)
 *   PREFIX/CAMERA/available   "online" / "offline" as the camera's source is
 *                             up or down (with camera_available; retained)
 *   HA/binary_sensor/osprey_CAMERA/SCOPE_LABEL_occupancy/config  (retained)
 *   HA/sensor/osprey_CAMERA/SCOPE_LABEL_count/config             (retained)
 *
 * LABEL is the model's label in lower case, as Frigate's are ("person" for
 * OIDv4's "Person"), in the topics and in the events' "label" alike, so
 * that an automation that names it works unchanged; the records on stdout
 * keep the model's spelling.
 *
 * SCOPE is the camera ("all") or a zone. The discovered labels: a zone's
 * "objects", the camera's the caller's "discover" list when it gives one,
 * else the union of every zone's and line's, and without any the model's
 * person label. Counts start at 0 for every
 * discovered pair, so HA shows 0 rather than "unknown", and a retained
 * count left by an earlier run is cleared; at the end each count still
 * above 0 goes back to 0.
 *
 * Ownership: the caller's (new / free); it keeps sink, events and zc (the
 * caller's, which outlive it) and frees none of them. One thread uses it
 * at a time (the camera's); several may each use their own on one sink,
 * whose put is safe from any thread and never blocks on the broker.
 */
#ifndef OSP_PUBLISH_TRACK_MQTT_H
#define OSP_PUBLISH_TRACK_MQTT_H

#include <stdbool.h>
#include <stddef.h>

#include "publish/sink.h"
#include "track/events.h"
#include "track/zones.h"

typedef struct osp_track_mqtt osp_track_mqtt_t;

/* What a camera publishes besides its events and counts. The strings are
 * the caller's, read during osp_track_mqtt_new only. */
typedef struct {
    const char *camera;       /* its name, in the topics and HA's device */
    const char *ha_prefix;    /* HA's discovery prefix ("homeassistant"); NULL: no discovery */
    const char *device_model; /* HA's device "model"; NULL: "osprey detect --track" */
    /* PREFIX/CAMERA/available (osp_track_mqtt_online), which HA's entities
     * then wait on beside PREFIX/available; "offline" at free */
    bool camera_available;
    /* the camera's discovered labels, compared without case with labels;
     * NULL: the zones' and lines', else the person */
    const char *const *discover;
    int n_discover;
} osp_track_mqtt_opts_t;

/* sink: open, with the Frigate prefix as its topic. zc: NULL without
 * zones. labels: the events' label names by index (more may follow:
 * osp_track_mqtt_labels). Publishes the discovery configs and the zero
 * counts. Returns 0, or -1 (out of memory) with the reason in err. */
int osp_track_mqtt_new(osp_sink_t *sink, const osp_track_mqtt_opts_t *o, const osp_events_t *events,
                       const osp_zones_cfg_t *zc, const char *const *labels, int n_labels,
                       osp_track_mqtt_t **out, char *err, size_t errlen);
/* The label names grew to n (the first ones unchanged): a camera that
 * learns its labels as it sees them. 0, or -1 when out of memory. */
int osp_track_mqtt_labels(osp_track_mqtt_t *q, const char *const *labels, int n);
/* After osp_events_update: the frame's events and the counts that changed. */
void osp_track_mqtt_frame(osp_track_mqtt_t *q);
/* After osp_zones_update: the frame's line crossings (zones.h), the frame
 * at epoch seconds t, one message each on PREFIX/crossings (not retained:
 * each is a happening, as an event is). */
void osp_track_mqtt_crossings(osp_track_mqtt_t *q, const osp_zones_t *z, double t);
/* With camera_available: the camera's source is up (or down). */
void osp_track_mqtt_online(osp_track_mqtt_t *q, bool online);
/* The camera is gone for good: its discovery configs removed from HA
 * (an empty retained payload each). Before free. */
void osp_track_mqtt_forget(osp_track_mqtt_t *q);
/* Every count still above 0 back to 0 (with camera_available, the camera
 * "offline"), then free (NULL: nothing). */
void osp_track_mqtt_free(osp_track_mqtt_t *q);

#endif
