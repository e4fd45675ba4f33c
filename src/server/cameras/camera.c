/*
 * Camera (camera.h). A camera's thread owns its source, its frame buffer
 * and its tracker. A live source keeps decoding meanwhile (video/newest.h),
 * so the next frame taken is the newest, never a backlog.
 *
 * Each frame a camera takes first goes through its motion gate
 * (motion/gate.h), as `osprey detect --track`'s frames do: a frame where
 * nothing moved is not sent to the model, and its objects are those the
 * last frame sent left (the tracker is not updated, no event is written),
 * so a still scene costs the decode, the luma and the motion pass. The
 * source hands on 4:2:0 frames as decoded (video/source.h), whose luma
 * the gate reads in place; a frame is made RGB, once, into a buffer the
 * camera reuses, only when the gate lets it through (the model, the
 * snapshots and latest.jpg read RGB). A frame the gate sends goes to
 * the model through the camera's camrun
 * (camrun.h: whole or as regions, one run in flight at a time, the thread
 * waiting for each answer, the core's workers reading the frame
 * meanwhile), and what it found through the tracker, the zones and the
 * events, whose records go out through its camout (camout.h).
 *
 * What the cameras share (the database, the MQTT connection, the track
 * ids) is the site's (site.h), opened before the cameras and closed after
 * them; each camera's hold on it, with its publisher of Frigate's topics
 * and its snapshot writer, is its camsite (camsite.h), which also follows
 * a SIGHUP's switch of site.
 */
#include "server/cameras/camera.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/thread.h"
#include "image/image.h"
#include "log/log.h"
#include "model/model.h"
#include "motion/gate.h"
#include "publish/track_snap.h"
#include "server/cameras/camobjs.h"
#include "server/cameras/camout.h"
#include "server/cameras/camregions.h"
#include "server/cameras/camrun.h"
#include "server/cameras/camsite.h"
#include "server/core/camboard.h"
#include "server/core/ledger.h"
#include "server/core/loop.h"
#include "server/core/slots.h"
#include "track/events.h"
#include "track/track.h"
#include "track/zones.h"
#include "video/backoff.h"
#include "video/newest.h"
#include "video/source.h"

#define LABELS_MAX 256 /* distinct labels a camera tracks */

struct srv_camera {
    srv_camsite_t *site; /* what it shares with the others, its topics and snapshots (camsite.h) */
    srv_camcfg_t cfg;
    int idx; /* the model's slot */
    pthread_t t;
    int running;
    atomic_bool stop;
    atomic_bool exited; /* its thread has returned (or never ran) */
    bool forget;        /* no longer listed: its Home Assistant entities go at its free */
    pthread_mutex_t mu; /* guards src, which srv_camera_signal_stop cancels from any thread */
    osp_source_t *src;
    osp_image_t frame;        /* the frame in flight, or the next: 4:2:0 as decoded, or RGB */
    osp_image_t rgb;          /* frame made RGB, for a frame sent on (frame_rgb) */
    osp_motion_gate_t *gate;  /* NULL with "motion": false */
    int gate_failed;          /* it said why once */
    srv_camrun_t *run;        /* its frames through the model (camrun.h) */
    srv_camrun_found_t found; /* what the last frame served found */
    /* objects over time: the camera thread's */
    osp_tracker_t *tracker;
    osp_zones_t *zones;
    osp_events_t *events;
    char labels[LABELS_MAX][64];
    const char *label_ptrs[LABELS_MAX];
    int n_labels;
    osp_track_det_t tdets[SRV_CAM_DETS_MAX];
    osp_event_names_t tnames[SRV_CAM_DETS_MAX]; /* tdets[i]'s, */
    int tcls[SRV_CAM_DETS_MAX];                 /* its model's class, */
    int tstepped[SRV_CAM_DETS_MAX];             /* and whether a step ran on it */
    /* made once its model is seen to have a cascade: */
    srv_camobjs_t *objs; /* its objects' steps (once per object) and names */
    osp_steps_settled_t settled[SRV_CAM_DETS_MAX]; /* the objects whose steps are, for a frame */
    srv_camout_t *out;                             /* its records out (camout.h) */
    /* counters, any thread */
    atomic_llong frames_in, submitted, served, shed, failed, reconnects;
    atomic_llong looked, moved, skipped; /* frames the gate looked at, found motion in, held back */
    atomic_llong made_rgb;               /* 4:2:0 frames made RGB (frame_rgb) */
    /* what other threads see of it (core/camboard.h): published by its thread */
    srv_cam_pub_t *pub;
    double decode_ms; /* a file's read and decode, averaged; < 0: not measured (a live source) */
    srv_cam_box_t boxes[SRV_CAMBOARD_BOXES];
};

/* ---- the camera's thread --------------------------------------------------------- */

static void on_source_event(void *ctx, const osp_source_event_t *e) {
    srv_camera_t *c = ctx;
    char text[600];
    osp_source_event_text(e, text, sizeof text);
    if (e->kind == OSP_SOURCE_RECONNECT) atomic_fetch_add(&c->reconnects, 1);
    srv_camboard_state(c->pub, e->kind == OSP_SOURCE_DROP        ? SRV_CAM_RECONNECTING
                               : e->kind == OSP_SOURCE_RECONNECT ? SRV_CAM_UP
                                                                 : SRV_CAM_DOWN);
    srv_camsite_online(c->site, e->kind == OSP_SOURCE_RECONNECT);
    osp_log(e->kind == OSP_SOURCE_RECONNECT ? OSP_LOG_INFO : OSP_LOG_WARN,
            "ospreyd: camera %s: %s", c->cfg.name, text);
}

static int wanted(const srv_camera_t *c, const char *label) {
    if (!c->cfg.n_objects) return 1;
    for (int i = 0; i < c->cfg.n_objects; i++)
        if (strcasecmp(c->cfg.objects[i], label) == 0) return 1;
    return 0;
}

/* The camera's own index of a label (its tracker's), added on first sight. */
static int label_index(srv_camera_t *c, const char *label) {
    for (int i = 0; i < c->n_labels; i++)
        if (strcmp(c->labels[i], label) == 0) return i;
    if (c->n_labels >= LABELS_MAX) return -1;
    snprintf(c->labels[c->n_labels], 64, "%s", label);
    c->label_ptrs[c->n_labels] = c->labels[c->n_labels];
    return c->n_labels++;
}

/* One answered frame (px, RGB) through the tracker, the zones and the
 * events. */
static void track_frame(srv_camera_t *c, const osp_image_t *px, double t) {
    char err[256];
    int n = 0;
    const srv_cam_det_t *d = c->found.dets;
    for (int i = 0; i < c->found.n; i++) {
        if (!wanted(c, d[i].label)) continue;
        int label = label_index(c, d[i].label);
        if (label < 0) continue;
        c->tnames[n] = d[i].names;
        c->tcls[n] = d[i].cls;
        c->tstepped[n] = d[i].stepped;
        c->tdets[n++] = (osp_track_det_t){.box = d[i].box,
                                          .score = d[i].score,
                                          .label = label,
                                          .region = d[i].region,
                                          .has_region = d[i].has_region};
    }
    if (c->found.cascade && !c->objs) {
        if ((c->objs = srv_camobjs_new(c->found.judges)))
            osp_events_set_names(c->events, srv_camobjs_names, c->objs);
        else
            osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: out of memory: its steps run on every box",
                    c->cfg.name);
    }
    if (osp_track_update(c->tracker, c->tdets, n, t, err, sizeof err) ||
        (c->zones && osp_zones_update(c->zones, c->tracker, c->found.frame_w, c->found.frame_h,
                                      c->label_ptrs, c->n_labels, err, sizeof err))) {
        osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: %s", c->cfg.name, err);
        return;
    }
    if (c->objs &&
        srv_camobjs_update(c->objs, c->tracker, c->tdets, c->tcls, c->tstepped, c->tnames, n))
        osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: out of memory keeping its objects' names",
                c->cfg.name);
    int ne = osp_events_update(c->events, c->tracker, err, sizeof err);
    /* the pictures first: whoever gets an event finds its picture */
    osp_track_snaps_t *snaps = srv_camsite_snaps(c->site);
    if (snaps) {
        osp_view_t v = osp_image_view(px);
        osp_track_snaps_frame(snaps, c->tracker, c->events, &v, c->found.frame_w, c->found.frame_h);
    }
    srv_camout_frame(c->out, ne, t);
    srv_camsite_tracked(c->site, t);
}

/* The camera's counts, and the frame just answered (served: the frame,
 * RGB, with its boxes; NULL: none), onto the board for other threads
 * (core/camboard.h). */
static void publish(srv_camera_t *c, const osp_image_t *served, double t) {
    int64_t events, crossings;
    srv_camout_counts(c->out, &events, &crossings);
    srv_cam_counts_t k = {.frames_in = atomic_load(&c->frames_in),
                          .submitted = atomic_load(&c->submitted),
                          .detected = atomic_load(&c->served),
                          .shed = atomic_load(&c->shed),
                          .failed = atomic_load(&c->failed),
                          .events = events,
                          .reconnects = atomic_load(&c->reconnects),
                          .skipped = atomic_load(&c->skipped),
                          .crossings = crossings,
                          .decode_threads = c->cfg.decode_threads,
                          .decode_ms = c->decode_ms,
                          .motion = -1};
    srv_camrun_counts(c->run, &k.runs, &k.region_runs);
    k.step_runs = srv_camrun_step_runs(c->run);
    int64_t looked = atomic_load(&c->looked);
    if (c->gate && looked > 0) k.motion = (double)atomic_load(&c->moved) / (double)looked;
    for (int i = 0; i < osp_track_count(c->tracker); i++) {
        osp_track_state_t st = osp_track_at(c->tracker, i)->state;
        k.tracks_active += st == OSP_TRACK_CONFIRMED || st == OSP_TRACK_LOST;
    }
    srv_camboard_counts(c->pub, &k);
    if (!served) return;
    int n = 0;
    for (int i = 0; i < c->found.n && n < SRV_CAMBOARD_BOXES; i++) {
        const srv_cam_det_t *d = &c->found.dets[i];
        if (!wanted(c, d->label)) continue;
        c->boxes[n] = (srv_cam_box_t){d->box.x1, d->box.y1, d->box.x2, d->box.y2, d->score, ""};
        /* the board keeps a label's first 47 bytes */
        snprintf(c->boxes[n++].label, sizeof c->boxes[0].label, "%.*s",
                 (int)sizeof c->boxes[0].label - 1, d->label);
    }
    osp_view_t v = osp_image_view(served);
    srv_camboard_frame(c->pub, &v, c->boxes, n, t);
}

/* Open the camera's source, again and again with backoff while it cannot
 * be opened (a camera that is down when ospreyd starts is not an error of
 * the config): 0, or -1 when stopping. */
static int open_source(srv_camera_t *c) {
    osp_source_cfg_t sc;
    osp_source_cfg_default(&sc);
    sc.stop = &c->stop;
    sc.decode_threads = c->cfg.decode_threads;
    sc.yuv420 = 1; /* the gate reads the luma; frame_rgb makes RGB of what it sends */
    sc.on_event = on_source_event;
    sc.ctx = c;
    for (int attempt = 0; !atomic_load(&c->stop); attempt++) {
        char why[600];
        osp_source_t *src = NULL;
        if (osp_source_open(c->cfg.url, &sc, &src, why, sizeof why) == 0) {
            pthread_mutex_lock(&c->mu);
            c->src = src;
            pthread_mutex_unlock(&c->mu);
            srv_camboard_state(c->pub, SRV_CAM_UP);
            osp_log(OSP_LOG_INFO, "ospreyd: camera %s: watching %s with model %d at %g frames/s",
                    c->cfg.name, osp_source_name(src), c->idx, c->cfg.fps);
            srv_camsite_online(c->site, true);
            return 0;
        }
        srv_camboard_state(c->pub, SRV_CAM_DOWN);
        double wait = osp_backoff_delay(OSP_BACKOFF_FIRST_S, OSP_BACKOFF_MAX_S, attempt + 1);
        osp_log(OSP_LOG_WARN, "ospreyd: camera %s: cannot open its source (%s); retrying in %.1f s",
                c->cfg.name, why, wait);
        for (double left = wait * 1000; left > 0 && !atomic_load(&c->stop); left -= 100)
            osp_sleep_ms(left > 100 ? 100 : left);
    }
    return -1;
}

/* Whether the frame just taken (at time t) goes to the model: it does when
 * something moved in it, and now and then regardless (motion/gate.h). */
static int through_gate(srv_camera_t *c, double t) {
    char err[256];
    int moved = 0, run = osp_motion_gate_frame(c->gate, &c->frame, t, &moved, err, sizeof err);
    if (run < 0) { /* the model runs: it costs time, not a result */
        if (!c->gate_failed)
            osp_log(OSP_LOG_WARN, "ospreyd: camera %s: motion: %s; its frames go to the model",
                    c->cfg.name, err);
        c->gate_failed = 1;
        return 1;
    }
    atomic_fetch_add(&c->looked, 1);
    if (moved) atomic_fetch_add(&c->moved, 1);
    if (!run) atomic_fetch_add(&c->skipped, 1);
    return run;
}

/* The frame taken, RGB: itself, or its 4:2:0 planes made RGB into the
 * camera's buffer (once a frame: the model, the snapshots and the board
 * read the one copy); NULL with err. */
static const osp_image_t *frame_rgb(srv_camera_t *c, char *err, size_t errlen) {
    if (!osp_pixfmt_yuv420(c->frame.fmt)) return &c->frame;
    osp_view_t yuv = osp_image_view(&c->frame);
    if (osp_yuv_to_rgb(&yuv, &c->rgb, err, errlen)) return NULL;
    atomic_fetch_add(&c->made_rgb, 1);
    return &c->rgb;
}

static void *cam_main(void *arg) {
    srv_camera_t *c = arg;
    char err[600];
    osp_newest_t *newest = NULL;
    /* the decoder's threads (FFmpeg's, made as the source opens, and the
     * newest frame's) take the name this thread has as they start */
    osp_thread_name("osp-dec-%s", c->cfg.name);
    if (open_source(c)) {
        atomic_store(&c->exited, 1);
        return NULL;
    }
    int live = osp_source_live(c->src);
    if (live && osp_newest_start(c->src, &newest, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: %s", c->cfg.name, err);
        srv_camboard_state(c->pub, SRV_CAM_DOWN);
        atomic_store(&c->exited, 1); /* the stop waits for it */
        return NULL;
    }
    osp_thread_name("osp-cam-%s", c->cfg.name);
    /* a file plays on its own timeline, in real time, as a camera would
     * show it; a live source's frames are taken as they come */
    const osp_video_info_t *vi = osp_source_info(c->src);
    int timeline = !live && vi && vi->fps > 0;
    struct timespec start;
    osp_now(&start);
    double start_epoch = (double)osp_epoch_ms() / 1000;
    double interval = 1.0 / c->cfg.fps, next = -1;
    int64_t replaced_seen = 0;
    c->decode_ms = -1;
    while (!atomic_load(&c->stop)) {
        osp_frame_meta_t meta;
        struct timespec read_at;
        osp_now(&read_at);
        int rc = live ? osp_newest_read(newest, &c->frame, &meta, err, sizeof err)
                      : osp_source_read(c->src, &c->frame, &meta, err, sizeof err);
        if (!live && rc == 1) { /* a live source decodes on its own thread: not measured here */
            double ms = osp_ms_since(&read_at);
            c->decode_ms = c->decode_ms < 0 ? ms : 0.9 * c->decode_ms + 0.1 * ms;
        }
        if (rc != 1) {
            if (rc < 0 && !atomic_load(&c->stop))
                osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: %s", c->cfg.name, err);
            else if (rc == 0 && !atomic_load(&c->stop))
                osp_log(OSP_LOG_INFO, "ospreyd: camera %s: the source ended", c->cfg.name);
            break;
        }
        /* every frame the source gave counts, those a newer one replaced
         * before this thread took them too: a camera faster than its fps
         * shows as many more frames in than submitted */
        int64_t replaced = live ? osp_newest_dropped(newest) : 0;
        atomic_fetch_add(&c->frames_in, 1 + (replaced - replaced_seen));
        replaced_seen = replaced;
        /* the frame's time on the wall clock (events carry epoch seconds, as
         * Frigate's do) */
        double t = timeline ? start_epoch + meta.pts : (double)osp_epoch_ms() / 1000;
        srv_camsite_between(c->site, t);
        if (next >= 0 && t + 1e-6 < next) continue; /* more frames than fps asks for */
        next = (next < 0 || t - next > interval) ? t + interval : next + interval;
        if (timeline) {
            double ahead_ms = meta.pts * 1000 - osp_ms_since(&start);
            while (ahead_ms > 0 && !atomic_load(&c->stop)) {
                osp_sleep_ms(ahead_ms > 100 ? 100 : ahead_ms);
                ahead_ms = meta.pts * 1000 - osp_ms_since(&start);
            }
        }
        if (c->gate && !through_gate(c, t)) {
            publish(c, NULL, t);
            continue;
        }
        atomic_fetch_add(&c->submitted, 1);
        const osp_image_t *px = frame_rgb(c, err, sizeof err);
        if (!px) {
            osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: %s", c->cfg.name, err);
            atomic_fetch_add(&c->failed, 1);
            if (c->gate) osp_motion_gate_not_run(c->gate);
            publish(c, NULL, t);
            continue;
        }
        /* the objects whose steps are settled run none in this frame */
        if (c->objs)
            srv_camrun_settled(c->run, c->settled,
                               srv_camobjs_settled(c->objs, c->tracker, c->settled, SRV_CAM_DETS_MAX));
        srv_outcome_t out = srv_camrun_frame(c->run, px, c->gate, c->tracker, t, &c->found);
        if (out.fate == SRV_SERVED) {
            atomic_fetch_add(&c->served, 1);
            if (!atomic_load(&c->stop)) track_frame(c, px, t);
        } else if (out.fate == SRV_SHED) {
            atomic_fetch_add(&c->shed, 1);
        } else {
            atomic_fetch_add(&c->failed, 1);
        }
        /* a frame the gate sent that found no model: the next one goes, or a
         * still scene would wait its next whole-frame run (10 s) for it */
        if (out.fate != SRV_SERVED && c->gate) osp_motion_gate_not_run(c->gate);
        publish(c, out.fate == SRV_SERVED ? px : NULL, t);
    }
    if (newest) osp_newest_stop(newest);
    srv_camout_end(c->out);
    publish(c, NULL, 0);
    srv_camboard_state(c->pub, SRV_CAM_DOWN);
    srv_camsite_online(c->site, false);
    atomic_store(&c->exited, 1);
    return NULL;
}

/* ---- making and taking down ------------------------------------------------------- */

/* The camera's labels known before any frame, in the model's spelling:
 * its "objects" (then its discovered labels), the zones' and lines', and
 * without "objects" the model's person (discovered, as osprey detect
 * --track does). Others are added as they are seen. */
static void seed_labels(srv_camera_t *c, const osp_model_t *m) {
    for (int i = 0; i < c->cfg.n_objects; i++) {
        const char *name = c->cfg.objects[i];
        for (int k = 0; m && k < m->n_labels; k++)
            if (m->labels[k] && strcasecmp(m->labels[k], name) == 0) {
                name = m->labels[k];
                break;
            }
        label_index(c, name);
    }
    const osp_zones_cfg_t *zc = c->zones ? osp_zones_cfg(c->zones) : NULL;
    for (int i = 0; zc && i < zc->n_zones; i++)
        for (int j = 0; j < zc->zones[i].n_objects; j++) label_index(c, zc->zones[i].objects[j]);
    for (int i = 0; zc && i < zc->n_lines; i++)
        for (int j = 0; j < zc->lines[i].n_objects; j++) label_index(c, zc->lines[i].objects[j]);
    for (int k = 0; !c->cfg.n_objects && m && k < m->n_labels; k++)
        if (m->labels[k] && strcasecmp(m->labels[k], "person") == 0) label_index(c, m->labels[k]);
}

static int cam_open(server_t *s, srv_camera_t *c, srv_site_t *site, char *err, size_t errlen) {
    c->idx = c->cfg.model[0] ? srv_slots_find(s, c->cfg.model, SRV_FIND_NAME_STEM) : 0;
    if (c->idx < 0 || !srv_slot(s, c->idx)) {
        snprintf(err, errlen, "camera %s: no model %s is served", c->cfg.name,
                 c->cfg.model[0] ? c->cfg.model : "at index 0");
        return -1;
    }
    if (c->cfg.zones[0]) {
        char *text = NULL, why[400];
        size_t len = 0;
        osp_zones_cfg_t zc;
        int rc = srv_camcfg_read_file(c->cfg.zones, &text, &len, why, sizeof why) ||
                 osp_zones_cfg_parse(text, len, &zc, why, sizeof why) ||
                 osp_zones_new(&zc, &c->zones, why, sizeof why);
        free(text);
        if (rc) {
            snprintf(err, errlen, "camera %s: zones: %s", c->cfg.name, why);
            return -1;
        }
    }
    const osp_model_t *m = srv_loaded_model(srv_slot(s, c->idx));
    if (!(c->pub = srv_camboard_add(s->camboard, c->cfg.name, m->cfg.name, c->cfg.fps,
                                    c->zones ? osp_zones_cfg(c->zones) : NULL))) {
        snprintf(err, errlen, "camera %s: out of memory", c->cfg.name);
        return -1;
    }
    char why[400];
    if (c->cfg.motion) {
        osp_motion_poly_t masks[SRV_CAM_MASKS_MAX];
        for (int i = 0; i < c->cfg.n_masks; i++)
            masks[i] = (osp_motion_poly_t){c->cfg.masks[i].xy, c->cfg.masks[i].n};
        if (osp_motion_gate_new(masks, c->cfg.n_masks, &c->gate, why, sizeof why)) {
            snprintf(err, errlen, "camera %s: \"motionMask\": %s", c->cfg.name, why);
            return -1;
        }
    }
    /* regions are planned around what motion found: none without it */
    if (srv_camrun_new(s, c->idx, c->cfg.fps, &c->stop, c->gate ? c->cfg.regions : SRV_REGIONS_OFF,
                       m->prep.width > m->prep.height ? m->prep.width : m->prep.height, &c->run,
                       why, sizeof why)) {
        snprintf(err, errlen, "camera %s: %s", c->cfg.name, why);
        return -1;
    }
    seed_labels(c, srv_loaded_model(srv_slot(s, c->idx)));
    if (osp_track_new(NULL, &c->tracker, why, sizeof why) == 0)
        osp_track_share_ids(c->tracker, srv_site_track_ids(site));
    if (!c->tracker ||
        osp_events_new(c->cfg.name, NULL, 0, c->zones, NULL, &c->events, why, sizeof why)) {
        snprintf(err, errlen, "camera %s: %s", c->cfg.name, why);
        return -1;
    }
    srv_camsite_cam_t view = {.camera = c->cfg.name,
                              .tracker = c->tracker,
                              .events = c->events,
                              .zones = c->zones,
                              .labels = c->label_ptrs,
                              .n_labels = &c->n_labels,
                              .discover = c->cfg.n_objects > 0};
    if (srv_camsite_new(&view, site, &c->site, why, sizeof why)) {
        snprintf(err, errlen, "camera %s: %s", c->cfg.name, why);
        return -1;
    }
    if (!(c->out = srv_camout_new(&view, c->events, c->site))) {
        snprintf(err, errlen, "camera %s: out of memory", c->cfg.name);
        return -1;
    }
    if (pthread_create(&c->t, NULL, cam_main, c)) {
        snprintf(err, errlen, "camera %s: cannot start its thread", c->cfg.name);
        return -1;
    }
    c->running = 1;
    return 0;
}

/* Tell camera c to stop: its reads end, its wait for an answer does not
 * (the core answers every frame it is given). */
void srv_camera_signal_stop(srv_camera_t *c) {
    atomic_store(&c->stop, 1);
    pthread_mutex_lock(&c->mu);
    if (c->src) osp_source_cancel(c->src);
    pthread_mutex_unlock(&c->mu);
}

/* On the I/O thread, after srv_camera_signal_stop: wait for its thread (a frame
 * it posted meanwhile waits in the mailbox: it is answered here, refused
 * as the camera stops), log its counts, free it. */
void srv_camera_free(server_t *s, srv_camera_t *c) {
    if (!c) return;
    if (c->running) {
        int64_t runs, region_runs, events, crossings;
        while (!atomic_load(&c->exited)) {
            srv_drain(s);
            osp_sleep_ms(2);
        }
        pthread_join(c->t, NULL);
        srv_drain(s);
        srv_camrun_counts(c->run, &runs, &region_runs);
        srv_camout_counts(c->out, &events, &crossings);
        osp_log(OSP_LOG_INFO,
                "ospreyd: camera %s: %lld frames in, %lld submitted, %lld detected, %lld shed, "
                "%lld failed, %lld events, %lld reconnects, %lld skipped (nothing moved), "
                "%lld model runs, %lld region runs, %lld step runs, %lld made RGB",
                c->cfg.name, (long long)c->frames_in, (long long)c->submitted, (long long)c->served,
                (long long)c->shed, (long long)c->failed, (long long)events, (long long)c->reconnects,
                (long long)c->skipped, (long long)runs, (long long)region_runs,
                (long long)srv_camrun_step_runs(c->run), (long long)c->made_rgb);
    }
    /* after its thread's last publish (its objects' ends) */
    if (c->forget && c->site) srv_camsite_forget(c->site);
    srv_camboard_remove(s->camboard, c->pub);
    osp_source_close(c->src);
    srv_camsite_free(c->site); /* its topics first: they read its events */
    osp_image_free(&c->frame);
    osp_image_free(&c->rgb);
    osp_motion_gate_free(c->gate);
    srv_camrun_free(c->run); /* its thread has returned, the mailbox drained */
    osp_track_free(c->tracker);
    osp_zones_free(c->zones);
    osp_events_free(c->events);
    srv_camobjs_free(c->objs);
    srv_camout_free(c->out);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* A camera for cfg, started; NULL with err. */
srv_camera_t *srv_camera_new(server_t *s, const srv_camcfg_t *cfg, srv_site_t *site, char *err,
                             size_t errlen) {
    srv_camera_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->cfg = *cfg;
    pthread_mutex_init(&c->mu, NULL);
    if (cam_open(s, c, site, err, errlen)) {
        srv_camera_free(s, c);
        return NULL;
    }
    return c;
}

const srv_camcfg_t *srv_camera_cfg(const srv_camera_t *c) { return &c->cfg; }

void srv_camera_switch(srv_camera_t *c, srv_site_t *site) {
    if (c->site) srv_camsite_switch(c->site, site);
}

void srv_camera_forget(srv_camera_t *c) { c->forget = true; }
