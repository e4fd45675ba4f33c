/*
 * camregions: a camera's frame as regions (docs/cameras.md, Regions). A
 * frame much larger than its model, shrunk whole into the model's input,
 * makes a person a few input pixels wide; run as crops around what moved
 * and what is tracked (motion/regions.h plans them), each crop one model
 * run, the model sees them near its own scale. The crops' detections are
 * moved into the frame's pixels and merged into one frame's detections,
 * so the tracker and the events see a frame as they see a whole one.
 *
 * One camera's, used by its thread only (the detections of a run are
 * written by the predict worker, ordered by the camera's lock, as a whole
 * frame's are). Memory is allocated at create, none per frame.
 */
#ifndef OSP_CAMERAS_CAMREGIONS_H
#define OSP_CAMERAS_CAMREGIONS_H

#include <stddef.h>

#include "image/image.h"
#include "motion/regions.h"
#include "track/events.h"
#include "track/track.h"

/* A camera's "regions" key (camcfg.h) */
enum { SRV_REGIONS_AUTO = -1, SRV_REGIONS_OFF = 0, SRV_REGIONS_ON = 1 };

/* "auto" runs a frame as regions when its shorter side is at least this
 * many times the model's input side (docs/cameras.md says why). */
#define SRV_REGIONS_AUTO_RATIO 3

/* The merge of a frame's regions (srv_camregions_merge): boxes of one
 * label overlapping this much (IoU) are one object, and so are boxes of
 * two runs, one this share inside the other. */
#define SRV_REGIONS_MERGE_IOU 0.5f
#define SRV_REGIONS_MERGE_CONTAIN 0.6f

/* Runs of one frame planned around motion at most: motion/regions.h's
 * max_regions. */
#define SRV_REGIONS_MAX 4
/* Crops of the cover a whole-frame pass runs at most (motion/regions.h's
 * cover_max); the pass runs the frame whole first, then these. */
#define SRV_REGIONS_COVER_MAX 16

/* One detection of a camera's frame, in the frame's pixels. */
typedef struct {
    osp_track_box_t box;
    float score;
    char label[64];
    osp_event_names_t names; /* its cascade's name and plate, if any */
    int cls;                 /* the model's class */
    int stepped;             /* a step of its cascade ran on it (camobjs.h) */
    int run;                 /* the run of its frame that found it */
    osp_track_box_t region;  /* its crop, in the frame's pixels, if has_region */
    int has_region;          /* found in a crop (not the frame whole) */
    int cut;                 /* it touches a side of its crop that is not a side of the frame: the
              * object may go on past it */
} srv_cam_det_t;

typedef struct srv_camregions srv_camregions_t;

/* Regions for a model whose input side is model_side: 0, or -1 with err. */
int srv_camregions_new(int model_side, srv_camregions_t **out, char *err, size_t errlen);
void srv_camregions_free(srv_camregions_t *r);

/* Whether frame is run as regions under mode (SRV_REGIONS_*): "on"
 * always, "auto" when its shorter side is at least SRV_REGIONS_AUTO_RATIO
 * x the model side; never for a frame that is not packed RGB, BGR or
 * grey (a crop of it is not a view). */
int srv_camregions_wanted(const srv_camregions_t *r, int mode, const osp_image_t *frame);

/* The runs of frame at time t (seconds), from its motion boxes and the
 * tracker's objects: how many (1 to SRV_REGIONS_MAX). When a whole-frame
 * pass is due (the first frame, then every full_every_s of regions.h) the
 * frame whole, then, for a frame larger than a cover's crop, the crops
 * that cover it (osp_regions_cover: up to SRV_REGIONS_COVER_MAX); and a
 * single run of the frame whole when nothing is to be looked at (the
 * motion gate sent a frame it could not judge). *whole is 1 for both,
 * and run 0 is then the frame whole (its region's `from` is 0). */
int srv_camregions_plan(srv_camregions_t *r, const osp_image_t *frame, const osp_motion_box_t *m,
                        int n_motion, const osp_tracker_t *tracker, double t, int *whole);
/* Run i of the last plan, a rectangle of the frame. */
const osp_region_t *srv_camregions_at(const srv_camregions_t *r, int i);
/* The pixels of g in frame (a view into the frame's buffer). */
osp_view_t srv_camregions_view(const osp_image_t *frame, const osp_region_t *g);
/* The last plan's whole-frame pass was answered at t. */
void srv_camregions_full_done(srv_camregions_t *r, double t);

/* Detection d, found by run `run` of the last plan in its crop's pixels,
 * into *o in the frame's pixels (o->run and o->cut set; the caller fills
 * label and names). The frame whole of a cover is no crop: has_region 0. */
void srv_camregions_to_frame(const srv_camregions_t *r, int run, int frame_w, int frame_h,
                             const osp_det_t *d, srv_cam_det_t *o);

/* One frame's detections from all its runs merged, in place: of boxes of
 * one label, a cut box mostly inside a box of another run that is not cut
 * goes, then suppression by IoU (iou) and, across runs, by containment
 * (a box this share inside a better one: contain), the best kept. The
 * order of what is kept is best first. Returns how many are kept. */
int srv_camregions_merge(srv_cam_det_t *d, int n, float iou, float contain);

#endif
