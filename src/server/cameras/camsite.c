/*
 * A camera's hold on its site (camsite.h): the site in use, the one a
 * SIGHUP gave and the camera's thread has not taken yet, and the old ones
 * still held for the objects first seen on them, so that each object's
 * row begins and ends in one database.
 */
#include "server/cameras/camsite.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log.h"

#define OLD_SITES 4   /* sites held for a camera's objects after quick switches */
#define OLD_HOLD_S 20 /* and for at most this many seconds of its frames after a switch */

struct srv_camsite {
    srv_camsite_cam_t cam;
    char who[96];                    /* names the snapshot writer in the log */
    srv_site_t *site;                /* in use (held) */
    _Atomic(srv_site_t *) next_site; /* a SIGHUP's new site, held, taken between two frames */
    /* sites switched from while objects first seen before `until` (the
     * first frame on the next) are tracked, held so that they end in the
     * database they started in; oldest first */
    struct {
        srv_site_t *site;
        double until;
    } old[OLD_SITES];
    int n_old;
    pthread_mutex_t mu;       /* guards mq against the threads other than the camera's */
    osp_track_mqtt_t *mq;     /* written by the camera's thread under mu */
    osp_track_snaps_t *snaps; /* or NULL */
};

/* The camera's Frigate topics on site's connection. */
static int make_mqtt(const srv_camsite_t *cs, srv_site_t *site, osp_track_mqtt_t **out, char *why,
                     size_t cap) {
    const srv_camsite_cam_t *c = &cs->cam;
    osp_track_mqtt_opts_t o = {.camera = c->camera,
                               .ha_prefix = srv_site_ha(site),
                               .device_model = "ospreyd",
                               .camera_available = true,
                               .discover = c->discover ? c->labels : NULL,
                               .n_discover = c->discover ? *c->n_labels : 0};
    return osp_track_mqtt_new(srv_site_mqtt(site), &o, c->events,
                              c->zones ? osp_zones_cfg(c->zones) : NULL, c->labels, *c->n_labels,
                              out, why, cap);
}

int srv_camsite_new(const srv_camsite_cam_t *cam, srv_site_t *site, srv_camsite_t **out, char *why,
                    size_t cap) {
    *out = NULL;
    srv_camsite_t *cs = calloc(1, sizeof *cs);
    if (!cs) {
        snprintf(why, cap, "out of memory");
        return -1;
    }
    cs->cam = *cam;
    snprintf(cs->who, sizeof cs->who, "ospreyd: camera %s: snapshots", cam->camera);
    pthread_mutex_init(&cs->mu, NULL);
    cs->site = srv_site_ref(site);
    if ((srv_site_mqtt(site) && make_mqtt(cs, site, &cs->mq, why, cap)) ||
        (srv_site_snapshots(site)[0] &&
         osp_track_snaps_new(srv_site_snapshots(site), cs->who, &cs->snaps, why, cap))) {
        srv_camsite_free(cs);
        return -1;
    }
    *out = cs;
    return 0;
}

void srv_camsite_free(srv_camsite_t *cs) {
    if (!cs) return;
    osp_track_mqtt_free(cs->mq); /* its counts back to 0, the camera offline */
    osp_track_snaps_free(cs->snaps);
    srv_site_unref(cs->site);
    for (int k = 0; k < cs->n_old; k++) srv_site_unref(cs->old[k].site);
    srv_site_unref(atomic_load(&cs->next_site));
    pthread_mutex_destroy(&cs->mu);
    free(cs);
}

void srv_camsite_switch(srv_camsite_t *cs, srv_site_t *site) {
    srv_site_unref(atomic_exchange(&cs->next_site, srv_site_ref(site))); /* a newer one wins */
}

/* Whether an object the tracker still holds was first seen in [from, to). */
static int tracked_in(const srv_camsite_t *cs, double from, double to) {
    const osp_tracker_t *tr = cs->cam.tracker;
    for (int i = 0; i < osp_track_count(tr); i++) {
        double t = osp_track_at(tr, i)->first_seen;
        if (t >= from && t < to) return 1;
    }
    return 0;
}

/* Onto the site a SIGHUP opened (site.h). The MQTT topics go to the new
 * connection at once (its discovery and the camera online); objects first
 * seen before t end in the old database, held until the last of them has
 * ended. */
void srv_camsite_between(srv_camsite_t *cs, double t) {
    char why[400];
    srv_site_t *site = atomic_exchange(&cs->next_site, NULL);
    if (!site) return;
    const char *camera = cs->cam.camera;
    osp_track_mqtt_t *mq = cs->mq;
    osp_track_snaps_t *snaps = cs->snaps;
    if (srv_site_mqtt(site) != srv_site_mqtt(cs->site)) { /* not the connection it has */
        mq = NULL;
        if (srv_site_mqtt(site) && make_mqtt(cs, site, &mq, why, sizeof why))
            osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: MQTT: %s", camera, why);
    }
    if (strcmp(srv_site_snapshots(site), srv_site_snapshots(cs->site)) != 0) {
        snaps = NULL;
        if (srv_site_snapshots(site)[0] &&
            osp_track_snaps_new(srv_site_snapshots(site), cs->who, &snaps, why, sizeof why))
            osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: snapshots: %s", camera, why);
        osp_track_snaps_free(cs->snaps);
    }
    if (mq != cs->mq) {
        pthread_mutex_lock(&cs->mu);
        osp_track_mqtt_t *old_mq = cs->mq;
        cs->mq = mq;
        pthread_mutex_unlock(&cs->mu);
        osp_track_mqtt_free(old_mq); /* its counts back to 0, the camera offline there */
        if (mq) osp_track_mqtt_online(mq, true);
    }
    cs->snaps = snaps;
    srv_site_t *old = cs->site;
    if (srv_site_db(old) && srv_site_db(old) != srv_site_db(site) &&
        tracked_in(cs, cs->n_old ? cs->old[cs->n_old - 1].until : -1e300, t)) {
        if (cs->n_old == OLD_SITES) { /* the oldest's objects end in the next one's */
            srv_site_unref(cs->old[0].site);
            memmove(&cs->old[0], &cs->old[1], (OLD_SITES - 1) * sizeof cs->old[0]);
            cs->n_old--;
        }
        cs->old[cs->n_old].site = old;
        cs->old[cs->n_old++].until = t;
    } else {
        srv_site_unref(old);
    }
    cs->site = site;
    osp_log(OSP_LOG_INFO,
            "ospreyd: camera %s: switched to the re-read MQTT and events at %.3f, its source and "
            "%d tracks kept",
            camera, t, osp_track_count(cs->cam.tracker));
}

/* The old sites none of whose objects is tracked any more let go, and
 * those held OLD_HOLD_S (a parked object may stay for minutes): the
 * objects left end in the newer database, their rows made whole there
 * from their records. */
void srv_camsite_tracked(srv_camsite_t *cs, double t) {
    for (int k = 0; k < cs->n_old;) {
        int held = t >= cs->old[k].until + OLD_HOLD_S;
        if (!held && tracked_in(cs, k ? cs->old[k - 1].until : -1e300, cs->old[k].until)) {
            k++;
            continue;
        }
        if (held)
            osp_log(OSP_LOG_INFO,
                    "ospreyd: camera %s: lets go of the database of its objects first seen "
                    "before %.3f, held %d s; those still tracked end in the newer one",
                    cs->cam.camera, cs->old[k].until, OLD_HOLD_S);
        else
            osp_log(OSP_LOG_INFO,
                    "ospreyd: camera %s: lets go of the database of its objects first seen "
                    "before %.3f: they have ended",
                    cs->cam.camera, cs->old[k].until);
        srv_site_unref(cs->old[k].site);
        memmove(&cs->old[k], &cs->old[k + 1], (size_t)(cs->n_old - k - 1) * sizeof cs->old[0]);
        cs->n_old--;
    }
}

osp_eventdb_t *srv_camsite_db_of(const srv_camsite_t *cs, double start_time) {
    for (int k = 0; k < cs->n_old; k++)
        if (start_time < cs->old[k].until) return srv_site_db(cs->old[k].site);
    return srv_site_db(cs->site);
}

osp_eventdb_t *srv_camsite_db(const srv_camsite_t *cs) { return srv_site_db(cs->site); }
osp_track_mqtt_t *srv_camsite_mqtt(const srv_camsite_t *cs) { return cs->mq; }
osp_track_snaps_t *srv_camsite_snaps(const srv_camsite_t *cs) { return cs->snaps; }

void srv_camsite_online(srv_camsite_t *cs, bool online) {
    pthread_mutex_lock(&cs->mu);
    if (cs->mq) osp_track_mqtt_online(cs->mq, online);
    pthread_mutex_unlock(&cs->mu);
}

void srv_camsite_forget(srv_camsite_t *cs) {
    pthread_mutex_lock(&cs->mu);
    if (cs->mq) osp_track_mqtt_forget(cs->mq);
    pthread_mutex_unlock(&cs->mu);
}
