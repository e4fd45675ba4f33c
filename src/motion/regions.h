/*
 * regions: where to run the detector on a frame, from what moved (motion.h)
 * and what is being tracked. A camera's frame shrunk whole into a 300x300
 * model makes a person a dozen input pixels wide; a crop around the person
 * lets the model see them at close to its own scale. The planner returns a
 * few such crops ("regions"), each run through the model on its own.
 *
 * The rules, in frame pixels:
 *  - a region is a square of side factor x the longer side of what it must
 *    hold (2 by default), never less than min_side (the model's side, or
 *    320 for models larger than 320: a crop of 320 enlarged to 640 still
 *    shows the model more than the frame would), centred on what it holds;
 *  - a region that would stick out of the frame is moved inside it, and a
 *    side longer than the frame's is the frame's (so a region bigger than
 *    the frame is the whole frame);
 *  - each tracked box gets a region; a motion box inside a tracked box's
 *    region needs none of its own;
 *  - motion boxes that overlap, are within cluster_gap pixels of each
 *    other, or fit together in a region of min_side are one cluster, with
 *    one region;
 *  - two regions whose overlap is at least merge_overlap of the smaller one
 *    become one region around what both held;
 *  - past max_regions, the two regions whose union is smallest become one,
 *    until there are max_regions.
 * The whole frame is also looked at now and then (osp_regions_full_due), so
 * that what stands still and was never tracked is found too, as a cover of
 * model-sized crops (osp_regions_cover).
 *
 * Pure and single-threaded: one planner per camera, used by one thread.
 * The caller owns the planner (osp_regions_create / osp_regions_free); its
 * memory is allocated at create, none per frame.
 */
#ifndef OSP_MOTION_REGIONS_H
#define OSP_MOTION_REGIONS_H

#include <stddef.h>

#include "motion/motion.h"
#include "post/post.h"

typedef struct {
    /* the model's input side (its larger side for a model that is not
     * square); required */
    int model_side;
    /* the smallest region side; 0: the model side, or 320 when the model
     * is larger than 320 */
    int min_side;
    /* region side / the longer side of what it holds: 2 */
    float factor;
    /* frame pixels between two motion boxes that are one cluster: 16 */
    int cluster_gap;
    /* overlap, as a share of the smaller region, at which two regions are
     * one: 0.5 */
    float merge_overlap;
    /* regions per frame at most: 4 */
    int max_regions;
    /* corners and sides are multiples of this where the frame allows, so a
     * region cut from a 4:2:0 frame starts on a chroma sample: 2 (at the
     * far edge of a frame of odd size a side may be one pixel longer than
     * the other, to keep what the region holds) */
    int align;
    /* seconds between whole-frame passes; 0: only the first: 5 (what
     * stands still is found by these alone) */
    double full_every_s;
    /* boxes (tracked and motion) a plan holds apart; more than this are
     * joined to the box they enlarge least: 64 */
    int max_inputs;
    /* the side of a cover's crops (osp_regions_cover); 0: twice min_side
     * (600 for a 300 model): a crop shrunk to half, as vtest's 768x576
     * frame is to a 300 model, where the model finds its people; a
     * 1920x1080 frame is 8 crops */
    int cover_side;
    /* the least overlap of two neighbouring crops of a cover, as a share
     * of their side: an object up to this share of a crop long is whole in
     * one crop (0.2: 120 of 600) */
    float cover_overlap;
    /* crops of a cover at most: a frame that needs more gets larger crops
     * (16) */
    int cover_max;
} osp_regions_params_t;

/* The defaults above for a model of side model_side. */
void osp_regions_defaults(osp_regions_params_t *p, int model_side);

/* What led to a region (bits of osp_region_t.from). */
#define OSP_REGION_MOTION 1u
#define OSP_REGION_TRACKED 2u
#define OSP_REGION_COVER 4u

/* A rectangle of the frame, in pixels: x, y its top left corner, w x h its
 * size (square unless the frame is narrower than the region). */
typedef struct {
    int x, y, w, h;
    unsigned from;
} osp_region_t;

typedef struct osp_regions osp_regions_t;

/* A planner; 0, or OSP_MOTION_EINVAL (which parameter and why in err) or
 * OSP_MOTION_ENOMEM. *out is the caller's, to free with osp_regions_free. */
int osp_regions_create(const osp_regions_params_t *p, osp_regions_t **out, char *err, size_t errlen);
void osp_regions_free(osp_regions_t *r);

/* The regions of one frame_w x frame_h frame, from its motion boxes and
 * the tracked objects' boxes (frame pixels; either list may be empty),
 * into out (cap >= 1 entries). Returns how many (0: nothing to look at), at
 * most min(cap, max_regions), or OSP_MOTION_EINVAL (err says why). Boxes
 * that are empty or off the frame are skipped. */
int osp_regions_plan(osp_regions_t *r, int frame_w, int frame_h, const osp_motion_box_t *motion,
                     int n_motion, const osp_det_t *tracked, int n_tracked, osp_region_t *out,
                     int cap, char *err, size_t errlen);

/* Is a whole-frame pass due at now_s (seconds on the caller's clock)? Yes
 * before the first one, then full_every_s after the last one (never again
 * when full_every_s is 0). */
int osp_regions_full_due(const osp_regions_t *r, double now_s);
/* The caller ran a whole-frame pass at now_s. */
void osp_regions_full_done(osp_regions_t *r, double now_s);

/* The cover of a frame_w x frame_h frame by square crops of cover_side
 * (a side is the frame's where the frame is shorter), spread evenly so
 * that neighbours overlap by at least cover_overlap of the side, corners
 * aligned, into out (cap entries): how many (at most min(cap, cover_max);
 * crops grow past cover_side until that many cover the frame), or
 * OSP_MOTION_EINVAL. One crop, the frame whole, when the frame is no
 * larger than a crop. The whole-frame pass runs these: what stands still
 * is found at the scale a crop shows, not shrunk with the frame. */
int osp_regions_cover(const osp_regions_t *r, int frame_w, int frame_h, osp_region_t *out, int cap);

/* Detections found in region g's crop, in the crop's pixels, moved into
 * the frame's pixels (landmarks too) and kept inside the region. */
void osp_region_to_frame(const osp_region_t *g, osp_det_t *dets, int n);

#endif
