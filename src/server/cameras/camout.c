/*
 * camout (camout.h). The events' records are Frigate's shape, their
 * labels the camera's spelling; a crossing's record has "kind":
 * "crossing" (the events' have no "kind"). An object ends in the database
 * of the site it started on, so one seen before a SIGHUP's switch of
 * site keeps its row there.
 */
#include "server/cameras/camout.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "eventdb/eventdb.h"
#include "log/log.h"
#include "publish/track_mqtt.h"
#include "wire/jsonw.h"

struct srv_camout {
    srv_camsite_cam_t cam;
    osp_events_t *events; /* cam's */
    srv_camsite_t *site;
    osp_jw_t line;
    atomic_llong n_events, n_crossings; /* records out */
};

srv_camout_t *srv_camout_new(const srv_camsite_cam_t *cam, osp_events_t *events, srv_camsite_t *site) {
    srv_camout_t *o = calloc(1, sizeof *o);
    if (!o) return NULL;
    o->cam = *cam;
    o->events = events;
    o->site = site;
    return o;
}

void srv_camout_free(srv_camout_t *o) {
    if (!o) return;
    osp_jw_free(&o->line);
    free(o);
}

void srv_camout_counts(const srv_camout_t *o, int64_t *events, int64_t *crossings) {
    *events = atomic_load(&o->n_events);
    *crossings = atomic_load(&o->n_crossings);
}

static const char *label_of(const srv_camout_t *o, int label) {
    return label >= 0 && label < *o->cam.n_labels ? o->cam.labels[label] : "";
}

/* One record a line on stdout, whole (stdio's lock). */
static void put_line(const osp_jw_t *w) {
    flockfile(stdout);
    fwrite(w->buf, 1, w->len, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    funlockfile(stdout);
}

/* The frame's line crossings (at time t), as `osprey detect --track`
 * reports them: a record each on stdout, a row each in the database, and
 * on MQTT. */
static void put_crossings(srv_camout_t *o, double t) {
    const osp_zones_t *z = o->cam.zones;
    const osp_zones_cross_t *x;
    int n = z ? osp_zones_crossings(z, &x) : 0;
    const osp_zones_cfg_t *zc = z ? osp_zones_cfg(z) : NULL;
    osp_eventdb_t *db = srv_camsite_db(o->site);
    for (int i = 0; i < n; i++) {
        osp_jw_reset(&o->line);
        osp_jw_obj_open(&o->line);
        osp_jw_key(&o->line, "kind");
        osp_jw_str(&o->line, "crossing");
        osp_jw_key(&o->line, "camera");
        osp_jw_str(&o->line, o->cam.camera);
        osp_jw_key(&o->line, "t");
        osp_jw_num(&o->line, t, 3);
        const char *label = label_of(o, x[i].label);
        osp_events_put_crossing(&o->line, zc, &x[i], label);
        osp_jw_obj_close(&o->line);
        if (o->line.oom) continue;
        put_line(&o->line);
        atomic_fetch_add(&o->n_crossings, 1);
        if (db)
            osp_eventdb_put_crossing(db, o->cam.camera, zc->lines[x[i].line].name,
                                     osp_zones_dir_name(x[i].dir), x[i].id, label, t, o->line.buf,
                                     o->line.len);
    }
    osp_track_mqtt_t *mq = srv_camsite_mqtt(o->site);
    if (mq && n) osp_track_mqtt_crossings(mq, z, t);
}

/* The events' records of this update (ne of them) on stdout and each
 * into its object's row. */
static void put_events(srv_camout_t *o, int ne) {
    for (int i = 0; i < ne; i++) {
        osp_jw_reset(&o->line);
        if (osp_events_write_named(o->events, osp_events_at(o->events, i), o->cam.labels,
                                   *o->cam.n_labels, &o->line))
            continue;
        put_line(&o->line);
        atomic_fetch_add(&o->n_events, 1);
        const osp_event_obj_t *a = &osp_events_at(o->events, i)->after;
        osp_eventdb_t *db = srv_camsite_db_of(o->site, a->start_time);
        if (db) {
            char id[96];
            osp_events_id(a->start_time, a->id, id, sizeof id);
            osp_eventdb_put(db, id, o->cam.camera, label_of(o, a->label), a->start_time,
                            a->end_time, a->top_score, o->line.buf, o->line.len);
        }
    }
}

/* This update's records and counts on the camera's Frigate topics. */
static void put_mqtt(srv_camout_t *o) {
    osp_track_mqtt_t *mq = srv_camsite_mqtt(o->site);
    if (!mq) return;
    if (osp_track_mqtt_labels(mq, o->cam.labels, *o->cam.n_labels))
        osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: MQTT: out of memory", o->cam.camera);
    osp_track_mqtt_frame(mq);
}

void srv_camout_frame(srv_camout_t *o, int ne, double t) {
    put_events(o, ne);
    put_crossings(o, t);
    put_mqtt(o);
}

/* On stdout, in its row and on MQTT (the site's close gives the broker
 * what is queued), so that no object is left without its end. */
void srv_camout_end(srv_camout_t *o) {
    char err[256];
    int ne = osp_events_end_all(o->events, o->cam.tracker, err, sizeof err);
    if (ne < 0) {
        osp_log(OSP_LOG_ERROR, "ospreyd: camera %s: its objects not ended: %s", o->cam.camera, err);
        return;
    }
    if (ne)
        osp_log(OSP_LOG_INFO, "ospreyd: camera %s: %d objects still tracked end as it stops",
                o->cam.camera, ne);
    put_events(o, ne);
    put_mqtt(o);
}
