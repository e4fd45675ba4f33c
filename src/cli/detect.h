/*
 * detect: what the files of `osprey detect` share. detect.c parses the
 * command line into an osp_detect_opts_t and opens the model, and
 * detect_usage.c is its --help;
 * detect_image.c runs a still image, detect_video.c a video source through
 * its reader/worker pipeline; detect_lines.c prints the per-frame records
 * both write; tally.c and snapshot.c count an input's detections and draw
 * its best frame; detect_track.c follows a video's objects (--track).
 */
#ifndef OSP_CLI_DETECT_H
#define OSP_CLI_DETECT_H

#include <stdatomic.h>
#include <stdio.h>

#include "cli/sinkopt.h"
#include "image/image.h"
#include "model/cascade.h"
#include "model/model.h"
#include "track/events.h"
#include "track/track.h"
#include "track/zones.h"
#include "video/source.h"
#include "wire/jsonw.h"

/* The command line, read-only once parsed. */
typedef struct {
    const char *model;
    float threshold; /* < 0: the model's default */
    int every;
    const char *out_dir;
    int workers;
    int quiet; /* no progress bar */
    int no_json;
    const char *postprocessor; /* NULL: the model's */
    const char *config;        /* a JSON model config file, or NULL */
    int per_class_nms;         /* --per-class-nms: no suppression across labels */
    int second_look;           /* look at each box again (model.h, osp_model_look_again) */
    float once_threshold;      /* then the threshold of a box seen once (too large to
                         * look at again): the model's for --one-look */
    const char *labels;        /* --labels FILE, or NULL */
    const char *then_model;    /* --then MODEL: run on each detection, or NULL */
    const char *recognize;     /* --recognize FILE: a face library, or NULL */
    osp_cascade_t *cascade;    /* --then, --recognize or a config's "then", opened; or NULL */
    double fps;                /* --fps: frames per second taken; 0: all */
    osp_source_cfg_t source;   /* transport, reconnection */
    atomic_bool *stop;         /* set by SIGINT/SIGTERM: inputs end as if they ended */
    osp_cli_mqtt_t mqtt;       /* --mqtt and its login (cli/sinkopt.h) */
    osp_sink_t *sink;          /* NULL without --mqtt: each record is also published */

    /* A video's objects over time (detect_track.c), the default: a motion
   * gate, tracks, and the second look and a cascade once per object; off
   * with --per-frame (every frame read alone, as an image is). Images are
   * always read alone. */
    int tracked;
    int per_frame; /* --per-frame */
    /* --track: the tracked pipeline's records also give each box's
   * "trackId", and its events and crossings are written */
    int track;
    const osp_zones_cfg_t *zones; /* --zones, parsed; NULL: none */
    FILE *events;                 /* --events FILE: event and crossing lines go there; NULL: on
                 * stdout among the records */
    const char *camera;           /* --camera: the events' camera; NULL: from the input's name */
    const char *snapshots;        /* --snapshots DIR: each object's best picture; NULL: none */
    osp_sink_t *frigate;          /* --mqtt with --track: Frigate's topics; NULL: none */
    const char *ha_prefix;        /* Home Assistant's discovery prefix; NULL: no discovery */
} osp_detect_opts_t;

/* Run one still image / one video source (file, camera, stream, stdin):
 * records on stdout, summary on stderr, the snapshot into out_dir. The
 * exit status of the input: 0, 1 (a failure while running), 2 (bad input). */
int osp_detect_image(const osp_detect_opts_t *o, osp_model_t *m, osp_decoder_t *dec,
                     const char *input);
int osp_detect_video(const osp_detect_opts_t *o, osp_model_t *m, osp_decoder_t *dec,
                     const char *input);

/* --help's text, to out (detect_usage.c). */
void osp_detect_usage(FILE *out);

/* Infer one frame into ctx and res, then, with the second look and read
 * alone (not tracked), look again from `look` (a second context of the
 * same thread) and run the cascade. */
int osp_detect_infer(const osp_detect_opts_t *o, osp_model_t *m, osp_infer_ctx_t *ctx,
                     osp_infer_ctx_t *look, const osp_view_t *frame, int orig_w, int orig_h,
                     osp_result_t *res, char *err, size_t errlen);

/* ---- records (detect_lines.c) ---------------------------------------------
 */

/* "stdin" for "-", else the last path component. */
const char *osp_detect_base_name(const char *path);
/* Start one result line in w: {"source","frame",["t",] record…} (t < 0:
 * none), the record of r, or an empty one carrying error. The object is
 * left open for osp_detect_emit. */
void osp_detect_format(osp_jw_t *w, const char *input, long frame, double t, const osp_model_t *m,
                       const osp_result_t *r, const char *error);
/* Close the line with its age (now - captured, monotonic seconds) and
 * print it unless --no-json; flush: at once (a live source). */
void osp_detect_emit(const osp_detect_opts_t *o, osp_jw_t *w, double captured, int flush);
/* Print a finished line whole (a source's thread prints event records too). */
void osp_detect_put_line(const osp_jw_t *w, int flush);

/* ---- objects over time (detect_track.c) --------------------------------- */

/* One video input's tracker, zones and events, used by the thread that
 * writes its records; input is its printable name (kept, not copied).
 * Without --track the same objects are kept, but the caller writes no
 * "trackId" and no event lines. */
typedef struct osp_detect_track osp_detect_track_t;
int osp_detect_track_new(const osp_detect_opts_t *o, osp_model_t *m, const char *input,
                         osp_detect_track_t **out, char *err, size_t errlen);
void osp_detect_track_free(osp_detect_track_t *k);
/* One frame, in frame order, at time t (seconds): track its detections,
 * take the looks its tracks ask for on pixels (the frame the detections
 * are of: it must stay valid during the call), and rewrite res for the
 * record: res->dets, res->track_ids and res->look pointing into k until
 * the next call, the boxes of dets (the caller's array, read only) without
 * those of rejected objects, then the predicted boxes of objects missed
 * this frame (osp_track_coasts). 0, or -1 with the reason in err. */
int osp_detect_track_frame(osp_detect_track_t *k, osp_result_t *res, const osp_det_t *dets,
                           const osp_view_t *pixels, double t, char *err, size_t errlen);
/* A frame the model was not run on (motion/gate.h: nothing moved):
 * the objects are as they were, so res becomes the last run frame's record
 * (its boxes, ids and look scores, pointing into k until the next call)
 * and nothing is tracked, looked at or recorded as an event. */
void osp_detect_track_still(osp_detect_track_t *k, osp_result_t *res);
/* The last frame's event and line-crossing records, one line each, after
 * the frame's own record (opts->events, else stdout; and the sink). */
void osp_detect_track_emit(osp_detect_track_t *k, long frame, double t, int flush);
/* What the summary line adds: objects per label, looks, line crossings,
 * and with a cascade the objects its steps ran on. */
void osp_detect_track_summary(const osp_detect_track_t *k, char *buf, size_t cap);

/* ---- a cascade once per object (detect_steps.c) ------------------------- */

/* With --track, the cascade's steps run on each object when it becomes one
 * and again only when its box has grown or its last result was below its
 * threshold (detect_steps.c has the rule); the result is kept per object.
 * One per input, the tracking thread's; c is the caller's (opened). */
typedef struct osp_detect_steps osp_detect_steps_t;
int osp_detect_steps_new(const osp_cascade_t *c, osp_detect_steps_t **out);
void osp_detect_steps_free(osp_detect_steps_t *k);
/* One tracked frame (after osp_track_update, res's boxes those of the
 * record and res->track_ids their objects, t the tracker): run the steps
 * of the objects that want them, cropped from pixels (the frame of res),
 * and point res->extra at each box's object's fields (k's, until the next
 * call); the steps' times are added to res. 0, or -1 with the reason. */
int osp_detect_steps_frame(osp_detect_steps_t *k, const osp_tracker_t *t, osp_result_t *res,
                           const osp_view_t *pixels, char *err, size_t errlen);
/* A frame not run: res's boxes (res->track_ids) get their objects' fields
 * as kept. 0, or -1 out of memory. */
int osp_detect_steps_still(osp_detect_steps_t *k, osp_result_t *res);
/* What is kept of object id, for its event records (osp_events_set_names's
 * fn; arg: the osp_detect_steps_t). */
void osp_detect_steps_names(void *arg, uint64_t id, osp_event_names_t *out);
/* Objects run on so far, and the runs (an object's steps on one frame). */
void osp_detect_steps_counts(const osp_detect_steps_t *k, long *runs, long *objects);

#endif
