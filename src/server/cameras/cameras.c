/*
 * Cameras (cameras.h): the front end that keeps the list. It reads the
 * --config file's cameras and opens what they share (site.h), starts a
 * camera (camera.h) for each, and on SIGHUP reads the list again, and what
 * they share when it changed (a new site the cameras switch to); on stop,
 * every camera is told to stop at once, then each is waited for, and what
 * they shared is closed last. All of it on the I/O thread.
 */
#include "server/cameras/cameras.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log.h"
#include "server/cameras/camcfg.h"
#include "server/cameras/camera.h"
#include "server/cameras/site.h"
#include "server/core/camboard.h"

struct srv_cameras {
    srv_camera_t *cams[SRV_CAM_MAX]; /* each the I/O thread's to make and free */
    int n;
    srv_site_t *site; /* what they share, the newest: held (site.h) */
};
static void cameras_free(server_t *s, srv_cameras_t *cs) {
    if (!cs) return;
    for (int i = 0; i < cs->n; i++) srv_camera_signal_stop(cs->cams[i]); /* all at once */
    for (int i = 0; i < cs->n; i++) srv_camera_free(s, cs->cams[i]);
    srv_site_unref(cs->site); /* after the cameras: their last records are in */
    srv_site_wait_closed();
    free(cs);
}

/* ---- the front end's table (core/frontend.h) --------------------------------------- */

static int fe_wanted(const osp_server_opts_t *o) {
    return o->config_path && srv_camcfg_present(o->config_path);
}

static int fe_start(server_t *s, char *err, size_t errlen) {
    srv_camcfg_t *cfg;
    int n;
    srv_cameras_t *cs = calloc(1, sizeof *cs);
    if (!cs) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->cameras = cs;
    if (srv_site_read(s->opts.config_path, &cfg, &n, &cs->site, err, errlen)) return -1;
    srv_camboard_set_events(s->camboard, srv_site_db_path(cs->site), srv_site_snapshots(cs->site));
    for (int i = 0; i < n; i++) {
        if (!(cs->cams[i] = srv_camera_new(s, &cfg[i], cs->site, err, errlen))) {
            free(cfg);
            return -1; /* stop takes down what started */
        }
        cs->n = i + 1;
    }
    free(cfg);
    return 0;
}

static void fe_quiesce(server_t *s) {
    for (int i = 0; s->cameras && i < s->cameras->n; i++)
        srv_camera_signal_stop(s->cameras->cams[i]);
}

static void fe_stop(server_t *s) {
    srv_camboard_set_events(s->camboard, NULL, NULL);
    cameras_free(s, s->cameras);
    s->cameras = NULL;
}

/* SIGHUP: the list read again. A camera no longer listed stops (and its
 * Home Assistant entities are removed), one whose keys changed restarts, a
 * new one starts; the others are not touched, but for a change of what
 * they share ("mqtt", "events"): then a new site is opened, the kept
 * cameras switch to it between two frames, the started ones use it, and
 * the old one is closed when the last camera lets go of it. A file that
 * does not read, or a new site that does not open, changes nothing. */
static int fe_reload(server_t *s) {
    srv_cameras_t *cs = s->cameras;
    srv_camcfg_t *cfg;
    int n;
    char err[1400];
    if (!cs) return 0;
    srv_site_t *site = NULL;
    if (srv_site_reread(s->opts.config_path, cs->site, &cfg, &n, &site, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "ospreyd: cameras: %s; the cameras are left as they were", err);
        return 1;
    }
    srv_site_t *old_site = NULL;
    if (site) { /* the list's reference moves to the new one */
        old_site = cs->site;
        cs->site = site;
        srv_camboard_set_events(s->camboard, srv_site_db_path(site), srv_site_snapshots(site));
    }
    int kept = 0, stopped = 0, started = 0, failed = 0;
    srv_camera_t *next[SRV_CAM_MAX] = {0};
    for (int i = 0; i < cs->n; i++) { /* each old camera: kept as it is, or stopped */
        srv_camera_t *c = cs->cams[i];
        int same = -1;
        for (int j = 0; j < n && same < 0; j++)
            if (strcmp(cfg[j].name, srv_camera_cfg(c)->name) == 0 &&
                memcmp(&cfg[j], srv_camera_cfg(c), sizeof cfg[j]) == 0)
                same = j;
        int listed = 0;
        for (int j = 0; j < n && !listed; j++)
            listed = strcmp(cfg[j].name, srv_camera_cfg(c)->name) == 0;
        if (same >= 0) {
            next[same] = c;
            if (site) srv_camera_switch(c, site);
            kept++;
        } else {
            if (!listed) srv_camera_forget(c);
            srv_camera_signal_stop(c);
            srv_camera_free(s, c);
            stopped++;
        }
    }
    for (int j = 0; j < n; j++) { /* new or changed: started */
        if (next[j]) continue;
        if ((next[j] = srv_camera_new(s, &cfg[j], cs->site, err, sizeof err)))
            started++;
        else {
            osp_log(OSP_LOG_ERROR, "ospreyd: cameras: %s", err);
            failed++;
        }
    }
    cs->n = 0;
    for (int j = 0; j < n; j++)
        if (next[j]) cs->cams[cs->n++] = next[j];
    free(cfg);
    srv_site_unref(old_site); /* closed once the cameras have let go */
    osp_log(OSP_LOG_INFO,
            "ospreyd: cameras re-read: %d kept, %d stopped, %d started, %d failed to start", kept,
            stopped, started, failed);
    return 1;
}

const srv_frontend_t srv_cameras_frontend = {"cameras: ", 0,       fe_wanted, fe_start,
                                             fe_quiesce,  fe_stop, fe_reload};
