/*
 * camrun: one camera's frames through its model (camera.h). The camera's
 * thread hands over a frame the motion gate let through; it goes to the
 * I/O thread (the core's door is the I/O thread's) whole, or as the
 * regions planned around what moved and what is tracked (camregions.h),
 * one run after the other, each with a deadline of one frame interval.
 * The thread waits for each run's answer, which the transport's send (or,
 * when a cascade read the frame, its release) hands back under the
 * camrun's lock; the frame's detections are then the thread's to read.
 *
 * Threads: srv_camrun_frame and the reads of what it found on the
 * camera's thread; the transport on the core's workers and the I/O
 * thread; made and freed as the camera is. The struct is private to
 * camrun.c. Memory is allocated at create, none per frame.
 */
#ifndef OSP_CAMERAS_CAMRUN_H
#define OSP_CAMERAS_CAMRUN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "motion/gate.h"
#include "server/cameras/camregions.h"
#include "server/core/ledger.h"
#include "server/core/srv.h"
#include "track/steps.h"
#include "track/track.h"

/* Detections of one frame kept (a frame's runs together). */
#define SRV_CAM_DETS_MAX 256

typedef struct srv_camrun srv_camrun_t;

/* What a served frame found, valid until the next srv_camrun_frame. */
typedef struct {
    const srv_cam_det_t *dets; /* in the frame's pixels, dets[0..n) */
    int n;
    int frame_w, frame_h;
    bool cascade; /* its model has one: the detections carry names */
    bool judges;  /* a step of it names or reads (osp_cascade_judges) */
} srv_camrun_found_t;

/* Runs for the model in slot idx of s, fps frames a second, and frames
 * as regions under regions_mode (SRV_REGIONS_*; SRV_REGIONS_OFF for a
 * camera without a motion gate: regions are planned around motion) for a
 * model whose input side is model_side. stop is the camera's flag, which
 * must outlive the camrun: a run posted once it is set is refused. 0, or
 * -1 with why (a "regions" key it could not follow says so). */
int srv_camrun_new(server_t *s, int idx, double fps, const atomic_bool *stop, int regions_mode,
                   int model_side, srv_camrun_t **out, char *why, size_t cap);
/* After the camera's thread has returned and the mailbox has been
 * drained (no run of its is posted). NULL: nothing. */
void srv_camrun_free(srv_camrun_t *r);

/* The frame taken at t (seconds) through the model: whole, or as regions
 * planned from gate's motion boxes (gate: NULL without one) and
 * tracker's objects, one run each, one after the other, each with its own
 * deadline (a crop that waited a frame interval for the model is stale,
 * as a frame would be). A run not served ends the frame with its
 * outcome: the frame is shed (or failed) whole, what its runs before
 * found is dropped. The core answers every run it is given, stopping or
 * not. Served: *found says what was found. frame is the camera's and is
 * read by the core's workers until this returns. */
srv_outcome_t srv_camrun_frame(srv_camrun_t *r, const osp_image_t *frame,
                               const osp_motion_gate_t *gate, const osp_tracker_t *tracker,
                               double t, srv_camrun_found_t *found);

/* Any thread: the model runs made for the camera's frames, and of them
 * the crops'. */
void srv_camrun_counts(srv_camrun_t *r, int64_t *runs, int64_t *region_runs);

/* The camera's thread, before srv_camrun_frame: the objects whose steps
 * are settled (track/steps.h), as the next frame is expected to show
 * them; a detection of the next frame that is one of them runs no step
 * of the model's cascade and carries no name (its object keeps the one it
 * has). Copied: up to SRV_CAM_DETS_MAX of them, the others run. */
void srv_camrun_settled(srv_camrun_t *r, const osp_steps_settled_t *s, int n);

/* Any thread: the detections a step of the model's cascade ran on. */
int64_t srv_camrun_step_runs(srv_camrun_t *r);

#endif
