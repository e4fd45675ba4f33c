/*
 * zones: where tracked objects are. Zones are polygons and lines are
 * directed segments, both in coordinates relative to the frame (0..1, as
 * Frigate writes its zones), so one file serves any resolution. An
 * object's place is its reference point, the bottom centre of its box
 * (where it stands).
 *
 * - An object is in a zone once its point has been inside for `inertia`
 *   of its frames (a count that rises by one per frame inside and falls by
 *   one per frame outside, between 0 and inertia), and leaves it when the
 *   count is back to 0: a box jittering on the edge neither enters nor
 *   leaves on every frame.
 * - It is loitering in a zone once it has been in it loitering_time seconds.
 * - A line counts a crossing when the point goes from one side of it to the
 *   other through the segment: "in" when it goes to the left-hand side of
 *   the line as one walks from its first point to its second on the image,
 *   "out" the other way. A point within 1 % of the frame's smaller side of
 *   the line is on neither side, so a box standing on it counts nothing.
 * docs/tracking.md has the file format and an example.
 *
 * Ownership: the parser fills a configuration the caller owns (a plain
 * struct, no pointers); osp_zones_new copies it into a zone state for one
 * camera, the caller's (osp_zones_free), used by one thread. Pointers it
 * returns are its own, valid until the next osp_zones_update or free.
 */
#ifndef OSP_TRACK_ZONES_H
#define OSP_TRACK_ZONES_H

#include <stddef.h>
#include <stdint.h>

#include "track/track.h"

struct cJSON;

#define OSP_ZONES_EINVAL (-1) /* a bad file or argument; the reason is in err */
#define OSP_ZONES_ENOMEM (-2)

#define OSP_ZONES_MAX 32         /* zones in a file, and lines (a 32-bit mask each) */
#define OSP_ZONES_MAX_POINTS 64  /* corners of a zone */
#define OSP_ZONES_MAX_OBJECTS 16 /* labels in one "objects" filter */
#define OSP_ZONES_NAME_MAX 64    /* a name or label and its terminating NUL */

typedef struct {
    float x, y; /* relative to the frame, 0..1 */
} osp_zones_pt_t;

typedef struct {
    char name[OSP_ZONES_NAME_MAX];
    osp_zones_pt_t pts[OSP_ZONES_MAX_POINTS];
    int n_pts;             /* at least 3 */
    int inertia;           /* frames: 3 */
    double loitering_time; /* seconds: 0 (off) */
    char objects[OSP_ZONES_MAX_OBJECTS][OSP_ZONES_NAME_MAX];
    int n_objects; /* 0: every label counts */
} osp_zone_def_t;

typedef struct {
    char name[OSP_ZONES_NAME_MAX];
    osp_zones_pt_t a, b; /* from a to b: "in" is to its left on the image */
    char objects[OSP_ZONES_MAX_OBJECTS][OSP_ZONES_NAME_MAX];
    int n_objects;
} osp_line_def_t;

typedef struct {
    osp_zone_def_t zones[OSP_ZONES_MAX]; /* in the file's order */
    int n_zones;
    osp_line_def_t lines[OSP_ZONES_MAX];
    int n_lines;
} osp_zones_cfg_t;

/* Reads a zones file's text (JSON, docs/tracking.md) into cfg. Every
 * error is one: not JSON (with line and column), an unknown key (with the
 * nearest known one), a polygon of fewer than 3 points, a coordinate
 * outside 0..1, a line of zero length, a name too long or with characters
 * other than letters, digits, '_' and '-'. Returns 0 or OSP_ZONES_EINVAL
 * / OSP_ZONES_ENOMEM with the reason in err; cfg is then partly filled. */
int osp_zones_cfg_parse(const char *text, size_t len, osp_zones_cfg_t *cfg, char *err, size_t errlen);
/* One polygon's or line's coordinates, as a zones file writes them (a
 * string "x1,y1,x2,y2,...", a list of [x, y] points or of "x,y" strings)
 * into pts (at most cap points, cap <= OSP_ZONES_MAX_POINTS; *n of them): each value within 0..1.
 * Counts other than the cap are the caller's to check. 0, or
 * OSP_ZONES_EINVAL with the reason in err, which starts with where. */
int osp_zones_coords_read(const struct cJSON *c, osp_zones_pt_t *pts, int cap, int *n,
                          const char *where, char *err, size_t errlen);
/* The same checks on a configuration built otherwise. */
int osp_zones_cfg_check(const osp_zones_cfg_t *cfg, char *err, size_t errlen);

typedef struct osp_zones osp_zones_t;

int osp_zones_new(const osp_zones_cfg_t *cfg, osp_zones_t **out, char *err, size_t errlen);
void osp_zones_free(osp_zones_t *z);
/* The configuration it was made from (its copy). */
const osp_zones_cfg_t *osp_zones_cfg(const osp_zones_t *z);

/* An object's zones; bit i of a mask is zone i of the configuration. */
typedef struct {
    uint64_t id;          /* the track's */
    uint32_t current;     /* the zones it is in */
    uint32_t entered_now; /* entered in the last update */
    uint32_t left_now;    /* left in the last update */
    uint32_t loitering;   /* in for at least the zone's loitering_time */
    uint32_t loiter_now;  /* began loitering in the last update */
    int n_entered;
    uint8_t entered[OSP_ZONES_MAX]; /* every zone it has entered, in order (Frigate's entered_zones) */
} osp_zones_obj_t;

typedef enum { OSP_ZONES_IN = 1, OSP_ZONES_OUT = 2 } osp_zones_dir_t;

typedef struct {
    uint64_t id; /* the track's */
    int label;
    int line; /* index in the configuration */
    osp_zones_dir_t dir;
} osp_zones_cross_t;

/* One frame, after osp_track_update: each track the tracker saw this
 * frame (not rejected) moves through the zones and lines its label is let
 * into; labels[label] names a label for the "objects" filters (a label
 * without a name counts only where there is no filter). A track unseen
 * this frame keeps its zones. frame_w and frame_h are the frame's size in
 * pixels, the space of the tracker's boxes. Returns 0, OSP_ZONES_EINVAL (a
 * size below 1) or OSP_ZONES_ENOMEM (the state is then as before). */
int osp_zones_update(osp_zones_t *z, const osp_tracker_t *t, int frame_w, int frame_h,
                     const char *const *labels, int n_labels, char *err, size_t errlen);
/* The track's zones after the last update; NULL for an id the tracker
 * did not list. */
const osp_zones_obj_t *osp_zones_obj(const osp_zones_t *z, uint64_t id);
/* The crossings of the last update, in track id then line order. */
int osp_zones_crossings(const osp_zones_t *z, const osp_zones_cross_t **out);
/* Crossings of a line since osp_zones_new, each way. */
void osp_zones_line_totals(const osp_zones_t *z, int line, uint64_t *in, uint64_t *out);
/* "in" or "out". */
const char *osp_zones_dir_name(osp_zones_dir_t d);

#endif
