/* track_mqtt: see track_mqtt.h. */
#define _POSIX_C_SOURCE 200809L
#include "publish/track_mqtt.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "wire/jsonw.h"

/* A count as last published. */
typedef struct {
    int zone, label; /* zone -1: the whole camera */
    int count, active;
    bool discovered; /* its configs went out to HA */
} pair_t;

struct osp_track_mqtt {
    osp_sink_t *sink;
    const osp_events_t *events;
    const osp_zones_cfg_t *zc;
    char camera[64];
    char prefix[768];
    char avail[900]; /* PREFIX/CAMERA/available, or "" */
    char ha[256];    /* HA's discovery prefix, or "" */
    char model[64];  /* HA's device "model" */
    /* the camera's availability: 1 online, 0 offline, -1 not said yet
     * (the source's thread may say it: atomic) */
    atomic_int online;
    int64_t lost_seen; /* the sink's retained messages lost, when last republished */
    pair_t *pairs;
    int n_pairs, cap;
    char **labels; /* the model's, in lower case as Frigate's are ("person") */
    int n_labels;
    osp_jw_t w;
};

static const char *label_of_id(const osp_track_mqtt_t *q, int label, char *buf, size_t cap) {
    if (label >= 0 && label < q->n_labels && q->labels[label])
        snprintf(buf, cap, "%s", q->labels[label]);
    else
        snprintf(buf, cap, "%d", label);
    return buf;
}

/* The topic of a count: PREFIX/CAMERA/LABEL or PREFIX/ZONE/LABEL, and
 * /active after it when active. */
static void count_topic(const osp_track_mqtt_t *q, int zone, int label, bool active, char *out,
                        size_t cap) {
    char name[OSP_ZONES_NAME_MAX];
    snprintf(out, cap, "%s/%s/%s%s", q->prefix, zone < 0 ? q->camera : q->zc->zones[zone].name,
             label_of_id(q, label, name, sizeof name), active ? "/active" : "");
}

static void put_int(osp_track_mqtt_t *q, const char *topic, int v) {
    char text[16];
    snprintf(text, sizeof text, "%d", v);
    osp_sink_put_topic(q->sink, topic, text, true);
}

static void publish_count(osp_track_mqtt_t *q, int zone, int label, int count, int active) {
    char topic[1024];
    count_topic(q, zone, label, false, topic, sizeof topic);
    put_int(q, topic, count);
    count_topic(q, zone, label, true, topic, sizeof topic);
    put_int(q, topic, active);
}

/* Remembers a pair's published count; -1 when out of memory. */
static int remember(osp_track_mqtt_t *q, int zone, int label, int count, int active, bool discovered) {
    for (int i = 0; i < q->n_pairs; i++)
        if (q->pairs[i].zone == zone && q->pairs[i].label == label) {
            q->pairs[i].count = count;
            q->pairs[i].active = active;
            return 0;
        }
    if (q->n_pairs == q->cap) {
        int cap = q->cap ? q->cap * 2 : 16;
        pair_t *p = realloc(q->pairs, (size_t)cap * sizeof *p);
        if (!p) return -1;
        q->pairs = p;
        q->cap = cap;
    }
    q->pairs[q->n_pairs++] = (pair_t){zone, label, count, active, discovered};
    return 0;
}

/* An id HA takes in a topic: lower case letters, digits and '_'. */
static void slug(char *s) {
    for (; *s; s++) *s = isalnum((unsigned char)*s) ? (char)tolower((unsigned char)*s) : '_';
}

static void kstr(osp_jw_t *w, const char *k, const char *v) {
    osp_jw_key(w, k);
    osp_jw_str(w, v);
}

static const struct {
    const char *component, *kind;
} ENTITY[] = {{"binary_sensor", "occupancy"}, {"sensor", "count"}};
#define N_ENTITY (sizeof ENTITY / sizeof ENTITY[0])

/* HA's node of the camera ("osprey_door"), and the config topic and id of
 * entity e of a scope and label. */
static void config_topic(const osp_track_mqtt_t *q, size_t e, int zone, int label, char *node,
                         size_t node_cap, char *id, size_t id_cap, char *topic, size_t cap) {
    char name[OSP_ZONES_NAME_MAX];
    const char *scope = zone < 0 ? "all" : q->zc->zones[zone].name;
    label_of_id(q, label, name, sizeof name);
    snprintf(node, node_cap, "osprey_%s", q->camera);
    slug(node);
    snprintf(id, id_cap, "%s_%s_%s", scope, name, ENTITY[e].kind);
    slug(id);
    snprintf(topic, cap, "%s/%s/%s/%s/config", q->ha, ENTITY[e].component, node, id);
}

static void avail_entry(osp_jw_t *w, const char *topic) {
    osp_jw_obj_open(w);
    kstr(w, "topic", topic);
    kstr(w, "payload_available", "online");
    kstr(w, "payload_not_available", "offline");
    osp_jw_obj_close(w);
}

/* The two discovery configs of one scope (the camera, or a zone) and label. */
static void discover(osp_track_mqtt_t *q, int zone, int label) {
    char name[OSP_ZONES_NAME_MAX], state[1024], avail[800], node[80], id[256], topic[1200],
        title[200];
    const char *scope = zone < 0 ? "all" : q->zc->zones[zone].name;
    label_of_id(q, label, name, sizeof name);
    count_topic(q, zone, label, false, state, sizeof state);
    snprintf(avail, sizeof avail, "%s/available", q->prefix);
    for (size_t e = 0; e < N_ENTITY; e++) {
        config_topic(q, e, zone, label, node, sizeof node, id, sizeof id, topic, sizeof topic);
        if (zone < 0)
            snprintf(title, sizeof title, "%s %s", name, ENTITY[e].kind);
        else
            snprintf(title, sizeof title, "%s %s %s", scope, name, ENTITY[e].kind);
        char unique[400];
        snprintf(unique, sizeof unique, "%s_%s", node, id);
        osp_jw_t *w = &q->w;
        osp_jw_reset(w);
        osp_jw_obj_open(w);
        kstr(w, "name", title);
        kstr(w, "unique_id", unique);
        kstr(w, "state_topic", state);
        if (e == 0) {
            kstr(w, "device_class", "occupancy");
            kstr(w, "value_template", "{{ 'ON' if value | int > 0 else 'OFF' }}");
        } else {
            kstr(w, "state_class", "measurement");
            kstr(w, "unit_of_measurement", "objects");
        }
        if (q->avail[0]) {
            /* available while ospreyd is and the camera is */
            osp_jw_key(w, "availability");
            osp_jw_arr_open(w);
            avail_entry(w, avail);
            avail_entry(w, q->avail);
            osp_jw_arr_close(w);
            kstr(w, "availability_mode", "all");
        } else {
            kstr(w, "availability_topic", avail);
            kstr(w, "payload_available", "online");
            kstr(w, "payload_not_available", "offline");
        }
        osp_jw_key(w, "device");
        osp_jw_obj_open(w);
        osp_jw_key(w, "identifiers");
        osp_jw_arr_open(w);
        osp_jw_str(w, node);
        osp_jw_arr_close(w);
        kstr(w, "name", q->camera);
        kstr(w, "manufacturer", "osprey");
        kstr(w, "model", q->model);
        osp_jw_obj_close(w);
        osp_jw_obj_close(w);
        if (!w->oom) osp_sink_put_topic(q->sink, topic, w->buf, true);
    }
}

/* The label index of a zone's "objects" name (the caller checked that the
 * model has it), or -1. */
static int label_of(const char *const *labels, int n_labels, const char *name) {
    for (int c = 0; c < n_labels; c++)
        if (labels[c] && strcmp(labels[c], name) == 0) return c;
    return -1;
}

/* The labels a scope is discovered for, into want (n_labels flags). */
static void scope_labels(const osp_zones_cfg_t *zc, int zone, const char *const *labels,
                         int n_labels, const unsigned char *camera, unsigned char *want) {
    if (zone < 0 || zc->zones[zone].n_objects == 0) {
        memcpy(want, camera, (size_t)n_labels);
        return;
    }
    memset(want, 0, (size_t)n_labels);
    for (int j = 0; j < zc->zones[zone].n_objects; j++) {
        int c = label_of(labels, n_labels, zc->zones[zone].objects[j]);
        if (c >= 0) want[c] = 1;
    }
}

/* Whether name is one of the caller's "discover" labels. */
static bool listed(const osp_track_mqtt_opts_t *o, const char *name) {
    for (int i = 0; i < o->n_discover; i++)
        if (o->discover[i] && strcasecmp(o->discover[i], name) == 0) return true;
    return false;
}

int osp_track_mqtt_labels(osp_track_mqtt_t *q, const char *const *labels, int n) {
    if (n <= q->n_labels) return 0;
    char **grown = realloc(q->labels, (size_t)n * sizeof *grown);
    if (!grown) return -1;
    q->labels = grown;
    for (int c = q->n_labels; c < n; c++) {
        q->labels[c] = labels[c] ? strdup(labels[c]) : NULL;
        if (labels[c] && !q->labels[c]) {
            q->n_labels = c;
            return -1;
        }
        for (char *p = q->labels[c]; p && *p; p++) *p = (char)tolower((unsigned char)*p);
    }
    q->n_labels = n;
    return 0;
}

int osp_track_mqtt_new(osp_sink_t *sink, const osp_track_mqtt_opts_t *o, const osp_events_t *events,
                       const osp_zones_cfg_t *zc, const char *const *labels, int n_labels,
                       osp_track_mqtt_t **out, char *err, size_t errlen) {
    *out = NULL;
    const char *camera = o->camera ? o->camera : "camera";
    osp_track_mqtt_t *q = calloc(1, sizeof *q);
    unsigned char *cam = calloc((size_t)(n_labels > 0 ? n_labels : 1), 2);
    if (!q || !cam) {
        free(q);
        free(cam);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    unsigned char *want = cam + (n_labels > 0 ? n_labels : 1);
    q->sink = sink;
    q->events = events;
    q->zc = zc;
    snprintf(q->camera, sizeof q->camera, "%s", camera);
    snprintf(q->prefix, sizeof q->prefix, "%s", osp_sink_topic(sink));
    snprintf(q->ha, sizeof q->ha, "%s", o->ha_prefix ? o->ha_prefix : "");
    snprintf(q->model, sizeof q->model, "%s",
             o->device_model ? o->device_model : "osprey detect --track");
    if (o->camera_available)
        snprintf(q->avail, sizeof q->avail, "%s/%s/available", q->prefix, q->camera);
    atomic_init(&q->online, -1);
    bool connected;
    q->lost_seen = osp_sink_retained_lost(sink, &connected);
    if (osp_track_mqtt_labels(q, labels, n_labels)) {
        free(cam);
        osp_track_mqtt_free(q);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* the camera's labels: the caller's; else every zone's and line's;
     * else the person */
    int any = 0;
    for (int c = 0; o->discover && c < n_labels; c++)
        if (labels[c] && listed(o, labels[c])) any = cam[c] = 1;
    for (int i = 0; !o->discover && zc && i < zc->n_zones + zc->n_lines; i++) {
        int line = i >= zc->n_zones;
        int n = line ? zc->lines[i - zc->n_zones].n_objects : zc->zones[i].n_objects;
        for (int j = 0; j < n; j++) {
            const char *obj = line ? zc->lines[i - zc->n_zones].objects[j] : zc->zones[i].objects[j];
            int c = label_of(labels, n_labels, obj);
            if (c >= 0) any = cam[c] = 1;
        }
    }
    for (int c = 0; !any && c < n_labels; c++)
        if (labels[c] && strcasecmp(labels[c], "person") == 0) any = cam[c] = 1;
    int rc = 0;
    for (int z = -1; z < (zc ? zc->n_zones : 0) && rc == 0; z++) {
        scope_labels(zc, z, labels, n_labels, cam, want);
        for (int c = 0; c < n_labels && rc == 0; c++) {
            if (!want[c]) continue;
            if (q->ha[0]) discover(q, z, c);
            publish_count(q, z, c, 0, 0);
            rc = remember(q, z, c, 0, 0, q->ha[0] != '\0');
        }
    }
    free(cam);
    if (rc) {
        osp_track_mqtt_free(q);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *out = q;
    return 0;
}

/* The sink dropped retained messages (its queue overflowed while the
 * broker was away): what may be missing is said again, now that it is
 * connected, so that the broker keeps the latest of each (a count, a
 * discovery config, the camera's availability). */
static void republish(osp_track_mqtt_t *q) {
    bool connected;
    int64_t lost = osp_sink_retained_lost(q->sink, &connected);
    if (lost == q->lost_seen || !connected) return;
    q->lost_seen = lost;
    for (int i = 0; i < q->n_pairs; i++) {
        if (q->pairs[i].discovered) discover(q, q->pairs[i].zone, q->pairs[i].label);
        publish_count(q, q->pairs[i].zone, q->pairs[i].label, q->pairs[i].count, q->pairs[i].active);
    }
    int on = atomic_load(&q->online);
    if (on >= 0) osp_track_mqtt_online(q, on == 1);
}

void osp_track_mqtt_crossings(osp_track_mqtt_t *q, const osp_zones_t *z, double t) {
    char topic[1024], label[64];
    const osp_zones_cross_t *x;
    int n = z ? osp_zones_crossings(z, &x) : 0;
    const osp_zones_cfg_t *zc = z ? osp_zones_cfg(z) : NULL;
    snprintf(topic, sizeof topic, "%s/crossings", q->prefix);
    for (int i = 0; i < n; i++) {
        osp_jw_reset(&q->w);
        osp_jw_obj_open(&q->w);
        osp_jw_key(&q->w, "camera");
        osp_jw_str(&q->w, q->camera);
        osp_jw_key(&q->w, "t");
        osp_jw_num(&q->w, t, 3);
        osp_events_put_crossing(&q->w, zc, &x[i], label_of_id(q, x[i].label, label, sizeof label));
        osp_jw_obj_close(&q->w);
        if (!q->w.oom) osp_sink_put_topic(q->sink, topic, q->w.buf, false);
    }
}

void osp_track_mqtt_frame(osp_track_mqtt_t *q) {
    char topic[1024];
    republish(q);
    snprintf(topic, sizeof topic, "%s/events", q->prefix);
    const osp_event_t *ev;
    for (int i = 0; (ev = osp_events_at(q->events, i)) != NULL; i++) {
        osp_jw_reset(&q->w);
        if (osp_events_write_named(q->events, ev, (const char *const *)q->labels, q->n_labels,
                                   &q->w) == 0)
            osp_sink_put_topic(q->sink, topic, q->w.buf, false);
    }
    const osp_events_count_t *c;
    int n = osp_events_counts(q->events, &c);
    for (int i = 0; i < n; i++) {
        if (!c[i].changed) continue;
        publish_count(q, c[i].zone, c[i].label, c[i].count, c[i].active);
        remember(q, c[i].zone, c[i].label, c[i].count, c[i].active, false);
    }
}

void osp_track_mqtt_online(osp_track_mqtt_t *q, bool online) {
    atomic_store(&q->online, online ? 1 : 0);
    if (q->avail[0]) osp_sink_put_topic(q->sink, q->avail, online ? "online" : "offline", true);
}

void osp_track_mqtt_forget(osp_track_mqtt_t *q) {
    char node[80], id[256], topic[1200];
    for (int i = 0; i < q->n_pairs; i++) {
        if (!q->pairs[i].discovered) continue;
        for (size_t e = 0; e < N_ENTITY; e++) {
            config_topic(q, e, q->pairs[i].zone, q->pairs[i].label, node, sizeof node, id,
                         sizeof id, topic, sizeof topic);
            osp_sink_put_topic(q->sink, topic, "", true);
        }
        q->pairs[i].discovered = false;
    }
}

void osp_track_mqtt_free(osp_track_mqtt_t *q) {
    if (!q) return;
    /* the camera is no longer watched: nothing is there as far as we know */
    for (int i = 0; i < q->n_pairs; i++)
        if (q->pairs[i].count || q->pairs[i].active)
            publish_count(q, q->pairs[i].zone, q->pairs[i].label, 0, 0);
    osp_track_mqtt_online(q, false);
    free(q->pairs);
    for (int c = 0; c < q->n_labels; c++) free(q->labels[c]);
    free(q->labels);
    osp_jw_free(&q->w);
    free(q);
}
