/*
 * A camera's frames through its model (camrun.h). One run at a time is in
 * flight: the camera's thread posts the camrun's job to the I/O thread,
 * which puts it through the core's door with the transport below, and
 * waits on the camrun's condition variable for its answer.
 *
 * Ownership: the run's pixels (the camera's frame, or a crop of it) are
 * read by a prepare worker, and by a cascade's steps until the job's
 * release, as is the list of settled objects (srv_camrun_settled); the
 * detections are written by the predict worker and read by the camera's
 * thread once the answer has come (the lock orders them).
 */
#include "server/cameras/camrun.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "model/cascade.h"
#include "model/model.h"
#include "server/core/dispatch.h"
#include "server/core/job.h"
#include "server/core/loop.h"
#include "server/core/slots.h"

struct srv_camrun {
    srv_job_t h; /* the run's trip to the I/O thread: must stay first */
    server_t *s;
    int idx; /* the model's slot */
    double fps;
    const atomic_bool *stop; /* the camera's */
    int regions_mode;
    srv_camregions_t *regions; /* NULL with "regions": false or "motion": false */
    /* the run in flight: the frame, its pixels (the frame, or a crop of
     * it) and which run of the frame's plan it is (-1: the frame whole) */
    const osp_image_t *frame;
    osp_view_t view;
    int run;
    uint64_t deadline_ms;
    /* the answer, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int answered;
    int lent; /* a cascade reads the frame: the answer waits for the job's release */
    srv_outcome_t outcome;
    int n_dets, frame_w, frame_h;
    int cascade, judges;
    srv_cam_det_t dets[SRV_CAM_DETS_MAX];
    /* the objects whose steps are settled, in frame pixels: the camera
     * thread's between runs, the predict worker's during one */
    osp_steps_settled_t settled[SRV_CAM_DETS_MAX];
    int n_settled;
    atomic_llong runs, region_runs; /* model runs for its frames; of them, crops' */
    atomic_llong step_runs;         /* detections a step ran on */
};

/* ---- the transport: on the core's workers and the I/O thread ------------------ */

static int tp_prepare(srv_req_t *req, const osp_model_t *m, osp_infer_ctx_t *ctx, char *err,
                      size_t errlen) {
    srv_camrun_t *r = req->tp_arg;
    return osp_model_prepare(m, ctx, &r->view, 0, 0, err, errlen);
}

static void tp_result(srv_req_t *req, const osp_model_t *m, const osp_result_t *res) {
    srv_camrun_t *r = req->tp_arg;
    int n = r->n_dets; /* a frame's regions add to what its runs before found */
    if (res->kind == OSP_REC_DETECTIONS)
        for (int i = 0; i < res->n_dets && n < SRV_CAM_DETS_MAX; i++) {
            const osp_det_t *d = &res->dets[i];
            const char *label = osp_model_label(m, d->cls);
            srv_cam_det_t *o = &r->dets[n++];
            if (r->run >= 0) {
                srv_camregions_to_frame(r->regions, r->run, r->frame->width, r->frame->height, d, o);
            } else {
                o->box = (osp_track_box_t){d->x1, d->y1, d->x2, d->y2};
                o->score = d->score;
                o->run = 0;
                o->cut = 0;
                o->has_region = 0;
            }
            snprintf(o->label, sizeof o->label, "%s", label ? label : "");
            o->cls = d->cls;
            /* a detection a step ran on has its fields; one settled, of
             * another label or past the deadline has none */
            size_t len = res->extra ? res->extra_at[i + 1] - res->extra_at[i] : 0;
            o->stepped = len > 0;
            if (len)
                osp_event_names_read(res->extra + res->extra_at[i], len, &o->names);
            else
                memset(&o->names, 0, sizeof o->names);
        }
    if (res->kind == OSP_REC_DETECTIONS && res->extra) {
        long stepped = 0;
        for (int i = 0; i < res->n_dets; i++) stepped += res->extra_at[i + 1] > res->extra_at[i];
        atomic_fetch_add(&r->step_runs, stepped);
    }
    r->n_dets = n;
    r->cascade = m->then != NULL;
    r->judges = m->then && osp_cascade_judges(m->then);
    r->frame_w = r->run >= 0 ? r->frame->width : res->frame_w;
    r->frame_h = r->run >= 0 ? r->frame->height : res->frame_h;
}

static void answer(srv_camrun_t *r, srv_outcome_t outcome) {
    pthread_mutex_lock(&r->mu);
    r->outcome = outcome;
    r->answered = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void tp_send(server_t *s, srv_req_t *req) {
    (void)s;
    srv_camrun_t *r = req->tp_arg;
    r->outcome = req->outcome; /* read by tp_release, on this thread */
    if (!r->lent) answer(r, req->outcome);
}

/* Right after tp_send, or once a run given up has returned: the frame a
 * cascade read is the camera thread's again only now. */
static void tp_release(server_t *s, srv_req_t *req) {
    (void)s;
    srv_camrun_t *r = req->tp_arg;
    if (!r->lent) return;
    r->lent = 0;
    answer(r, r->outcome);
}

/* A model with a cascade: its steps crop from the frame in flight. */
static int tp_pixels(srv_req_t *req, osp_view_t *v) {
    srv_camrun_t *r = req->tp_arg;
    *v = r->view; /* a crop's detections are in the crop's pixels until tp_result */
    r->lent = 1;
    return 0;
}

/* A model with a cascade, before its steps: whether d (the run's pixels)
 * is an object whose steps are settled. */
static int tp_skip(srv_req_t *req, const osp_model_t *m, const osp_det_t *d) {
    (void)m;
    srv_camrun_t *r = req->tp_arg;
    if (!r->n_settled) return 0;
    osp_track_box_t box = {d->x1, d->y1, d->x2, d->y2};
    if (r->run >= 0) { /* a crop's detection, in the frame's pixels */
        srv_cam_det_t o;
        srv_camregions_to_frame(r->regions, r->run, r->frame->width, r->frame->height, d, &o);
        box = o.box;
    }
    return osp_steps_is_settled(r->settled, r->n_settled, &box, d->cls);
}

/* paced: a camera has one frame in flight, so its frames wait their turn
 * (up to their deadline) instead of pushing out another camera's */
static const srv_transport_t CAM_TP = {.prepare = tp_prepare,
                                       .result = tp_result,
                                       .send = tp_send,
                                       .release = tp_release,
                                       .pixels = tp_pixels,
                                       .skip = tp_skip,
                                       .paced = 1};

/* The run on the I/O thread: through the door, or refused at once. */
static void on_frame(server_t *s, srv_job_t *h) {
    srv_camrun_t *r = (srv_camrun_t *)h;
    int stopping = s->stopping || atomic_load(r->stop);
    if (stopping || !srv_slot(s, r->idx)) {
        answer(r, SRV_OUTCOME_FAILED(stopping ? SRV_FAIL_NO_MEMORY : SRV_FAIL_NOT_LOADED));
        return;
    }
    if (srv_submit_frame(s, r->idx, r->deadline_ms, &CAM_TP, r))
        answer(r, SRV_OUTCOME_FAILED(SRV_FAIL_NO_MEMORY));
}

/* ---- the camera's thread --------------------------------------------------------- */

/* One run of r->view through the door, with a deadline of one frame
 * interval from now: its answer. One posted as the server stops is
 * answered by whoever drains the mailbox last (cameras_free). */
static srv_outcome_t one_run(srv_camrun_t *r) {
    pthread_mutex_lock(&r->mu);
    r->answered = 0;
    pthread_mutex_unlock(&r->mu);
    r->deadline_ms = (uint64_t)osp_epoch_ms() + (uint64_t)llround(1000 / r->fps);
    atomic_fetch_add(&r->runs, 1);
    srv_post(r->s, &r->h);
    pthread_mutex_lock(&r->mu);
    while (!r->answered) pthread_cond_wait(&r->cv, &r->mu);
    srv_outcome_t out = r->outcome;
    pthread_mutex_unlock(&r->mu);
    return out;
}

srv_outcome_t srv_camrun_frame(srv_camrun_t *r, const osp_image_t *frame,
                               const osp_motion_gate_t *gate, const osp_tracker_t *tracker,
                               double t, srv_camrun_found_t *found) {
    pthread_mutex_lock(&r->mu);
    r->n_dets = 0;
    pthread_mutex_unlock(&r->mu);
    r->frame = frame;
    int whole = 1, n = 1;
    int regions = gate && srv_camregions_wanted(r->regions, r->regions_mode, frame);
    if (regions) {
        const osp_motion_box_t *mb;
        int nm = osp_motion_gate_boxes(gate, &mb);
        n = srv_camregions_plan(r->regions, frame, mb, nm, tracker, t, &whole);
    }
    /* a whole-frame pass of more than one run: the frame whole, then the
     * crops that cover it, merged as a plan's crops are */
    int cover = whole && n > 1;
    srv_outcome_t out = {0};
    for (int i = 0; i < n; i++) {
        r->run = whole && !cover ? -1 : i;
        r->view = r->run < 0 ? osp_image_view(frame)
                             : srv_camregions_view(frame, srv_camregions_at(r->regions, i));
        if (!whole || (cover && i > 0)) atomic_fetch_add(&r->region_runs, 1);
        out = one_run(r);
        if (out.fate != SRV_SERVED) return out;
    }
    if (regions && whole) srv_camregions_full_done(r->regions, t);
    if (!whole || cover)
        r->n_dets = srv_camregions_merge(r->dets, r->n_dets, SRV_REGIONS_MERGE_IOU,
                                         SRV_REGIONS_MERGE_CONTAIN);
    *found = (srv_camrun_found_t){.dets = r->dets,
                                  .n = r->n_dets,
                                  .frame_w = r->frame_w,
                                  .frame_h = r->frame_h,
                                  .cascade = r->cascade,
                                  .judges = r->judges};
    return out;
}

void srv_camrun_counts(srv_camrun_t *r, int64_t *runs, int64_t *region_runs) {
    *runs = atomic_load(&r->runs);
    *region_runs = atomic_load(&r->region_runs);
}

void srv_camrun_settled(srv_camrun_t *r, const osp_steps_settled_t *s, int n) {
    if (n > SRV_CAM_DETS_MAX) n = SRV_CAM_DETS_MAX;
    if (n > 0) memcpy(r->settled, s, (size_t)n * sizeof *s);
    r->n_settled = n > 0 ? n : 0;
}

int64_t srv_camrun_step_runs(srv_camrun_t *r) { return atomic_load(&r->step_runs); }

/* ---- making and taking down ------------------------------------------------------- */

int srv_camrun_new(server_t *s, int idx, double fps, const atomic_bool *stop, int regions_mode,
                   int model_side, srv_camrun_t **out, char *why, size_t cap) {
    srv_camrun_t *r = *out = calloc(1, sizeof *r);
    if (!r) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    r->h.kind = SRV_JOB_EVENT;
    r->h.done = on_frame;
    r->s = s;
    r->idx = idx;
    r->fps = fps;
    r->stop = stop;
    r->regions_mode = regions_mode;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    char err[400];
    if (regions_mode != SRV_REGIONS_OFF &&
        srv_camregions_new(model_side, &r->regions, err, sizeof err)) {
        snprintf(why, cap, "\"regions\": %s", err);
        srv_camrun_free(r);
        *out = NULL;
        return -1;
    }
    return 0;
}

void srv_camrun_free(srv_camrun_t *r) {
    if (!r) return;
    srv_camregions_free(r->regions);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r);
}
