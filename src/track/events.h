/*
 * events: tracked objects as event records, one per change of an object,
 * in the shape of Frigate's frigate/events messages: {"type": "new" |
 * "update" | "end", "before": {...}, "after": {...}} with Frigate's field
 * names where they mean the same thing (docs/tracking.md lists them).
 *
 * - "new": a track is confirmed and not rejected (and, with
 *   wait_for_verdict, verified).
 * - "update": it entered or left a zone, began loitering, became
 *   stationary or active again, or its best score rose by snapshot_gain
 *   since the last record. A track's label never changes.
 * - "end": it was removed (a stationary track is removed only past the
 *   tracker's parked limits), or it was rejected after its "new" (then
 *   false_positive is true).
 * A track never reported (rejected early, or never confirmed) makes no
 * record. Counts of the reported objects, per label and per zone and
 * label, are kept for retained count topics.
 *
 * Ownership: one osp_events_t per camera, the caller's (osp_events_new /
 * osp_events_free), used by one thread. It keeps the labels table and the
 * zones it is given (both the caller's, which must outlive it) and never
 * frees them. Records and counts are its own, valid until the next update.
 */
#ifndef OSP_TRACK_EVENTS_H
#define OSP_TRACK_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "track/track.h"
#include "track/zones.h"
#include "wire/jsonw.h"

#define OSP_EVENTS_EINVAL (-1)
#define OSP_EVENTS_ENOMEM (-2)

typedef enum { OSP_EVENT_NEW, OSP_EVENT_UPDATE, OSP_EVENT_END } osp_event_type_t;

/* Why an update was sent (osp_event_t.why), any of: */
#define OSP_EVENT_ZONES 1u      /* entered or left a zone */
#define OSP_EVENT_LOITERING 2u  /* began loitering in a zone */
#define OSP_EVENT_STATIONARY 4u /* became stationary, or active again */
#define OSP_EVENT_SNAPSHOT 8u   /* a better snapshot */
#define OSP_EVENT_NAMES 16u     /* its name or plate text changed (osp_events_set_names) */

/* What a model's cascade made of an object so far (osp_events_set_names):
 * the name its face took and the plate text read, each with its score;
 * an empty text: none. */
typedef struct {
    char name[64];
    float name_score;
    char plate[32];
    float plate_score;
} osp_event_names_t;

/* What one detection's cascade fields say (JSON members, as a result's
 * extra holds them, docs/cascades.md): the best-scored "name" that is not
 * "unknown" with its "nameScore", and the best-scored "text" with its
 * "textScore", its own or those of the "objects" found inside it. out is
 * zeroed first; fields that do not parse leave it so (names.c). */
void osp_event_names_read(const char *members, size_t len, osp_event_names_t *out);

/* An object as one record shows it. */
typedef struct {
    uint64_t id; /* the track's */
    int label;
    osp_track_verdict_t verdict;
    float score, top_score;
    osp_track_box_t box;
    osp_track_box_t region;
    int has_region;
    uint32_t current_zones; /* bit i: zone i of the zones file */
    uint32_t loitering;
    int n_entered;
    uint8_t entered[OSP_ZONES_MAX]; /* in the order entered */
    int stationary, motionless;
    double frame_time, start_time, end_time; /* end_time < 0: not ended */
    double snap_time;                        /* the snapshot: the best-scoring sighting */
    osp_track_box_t snap_box;
    float snap_score;
    int false_positive;
    osp_event_names_t names; /* with osp_events_set_names; else zeroed */
} osp_event_obj_t;

typedef struct {
    osp_event_type_t type;
    unsigned why;                  /* OSP_EVENT_* bits, for an update */
    osp_event_obj_t before, after; /* the same for "new" */
} osp_event_t;

typedef struct {
    float snapshot_gain;  /* 0.05: a best score this much above the last record's is an update */
    int wait_for_verdict; /* 0: "new" at confirmation; 1: only once verified */
} osp_events_params_t;

typedef struct osp_events osp_events_t;

void osp_events_params_default(osp_events_params_t *p);

/* camera: 1-63 letters, digits, '_' or '-' (it is part of topics).
 * labels[0..n_labels) name the tracker's labels (a label without one is
 * written as its number). zones may be NULL. p NULL: the defaults.
 * Returns 0, OSP_EVENTS_EINVAL or OSP_EVENTS_ENOMEM. */
int osp_events_new(const char *camera, const char *const *labels, int n_labels,
                   const osp_zones_t *zones, const osp_events_params_t *p, osp_events_t **out,
                   char *err, size_t errlen);
void osp_events_free(osp_events_t *e);

/* Records name their objects: at each update, fn(arg, track id, out)
 * fills what is known of that object (out zeroed first). From then on
 * each record writes "sub_label" as Frigate does, [name, score] (null
 * without a name), and "recognized_license_plate" and
 * "recognized_license_plate_score" (null without a plate), and a name or
 * plate that changes is an update (OSP_EVENT_NAMES). Without it, records
 * are as they were: "sub_label" null, no plate keys. */
void osp_events_set_names(osp_events_t *e,
                          void (*fn)(void *arg, uint64_t id, osp_event_names_t *out), void *arg);

/* One frame, after osp_track_update and osp_zones_update: the records of
 * this frame's changes, in track id order. Returns how many (0 or more),
 * or OSP_EVENTS_ENOMEM (nothing changed). */
int osp_events_update(osp_events_t *e, const osp_tracker_t *t, char *err, size_t errlen);
const osp_event_t *osp_events_at(const osp_events_t *e, int i);
/* The camera (or its source) stops, after the last osp_events_update on
 * t: an "end" for every object reported and not ended, its end_time the
 * last frame's time (osp_track_now) and false_positive as an end sets it
 * (its verdict rejected), and every count back to 0 (the emptied pairs
 * listed as changed). The records, as osp_events_update gives them; no
 * later update reports these objects again. Returns how many (0 or more),
 * or OSP_EVENTS_ENOMEM (nothing changed). */
int osp_events_end_all(osp_events_t *e, const osp_tracker_t *t, char *err, size_t errlen);

/* Writes a record as one JSON object, Frigate's shape. Returns 0 or
 * OSP_EVENTS_ENOMEM (the writer ran out of memory). */
int osp_events_write(const osp_events_t *e, const osp_event_t *ev, osp_jw_t *w);
/* The same with the labels named by labels[0..n_labels) (the caller's)
 * instead of the table osp_events_new was given: for a reader that spells
 * them its own way (Frigate's lower case, publish/track_mqtt.h). */
int osp_events_write_named(const osp_events_t *e, const osp_event_t *ev, const char *const *labels,
                           int n_labels, osp_jw_t *w);

/* Objects reported and not ended, by zone (-1: the whole camera) and
 * label. Listed: every pair with objects now, and every pair that had some
 * at the previous update (now 0, so a retained count can be cleared); in
 * zone then label order. */
typedef struct {
    int zone;
    int label;
    int count;   /* objects */
    int active;  /* of which not stationary */
    int changed; /* count or active differs from the previous update */
} osp_events_count_t;
int osp_events_counts(const osp_events_t *e, const osp_events_count_t **out);

/* An object's "id" as records write it, from its start time and track id,
 * into buf (48 bytes hold any); returns buf. */
const char *osp_events_id(double start_time, uint64_t track_id, char *buf, size_t cap);

/* A line crossing's own keys ("line", "direction", "trackId", "label")
 * into w's open object, as every crossing record writes them (label: the
 * object's label name). */
void osp_events_put_crossing(osp_jw_t *w, const osp_zones_cfg_t *zc, const osp_zones_cross_t *x,
                             const char *label);

/* The label's name as records write it (its number when it has none),
 * into buf; returns buf. */
const char *osp_events_label(const osp_events_t *e, int label, char *buf, size_t cap);

#endif
