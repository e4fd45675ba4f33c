/*
 * The site (site.h): the config file read for its cameras and for what
 * they share, those shared things opened, held by the cameras that use
 * them, and closed once the last has let go.
 */
#include "server/cameras/site.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log/log.h"

#define MQTT_CLOSE_S 3.0 /* at the close, waiting for the broker to take what is queued */

/* What a site was opened from, compared on a re-read: the MQTT settings
 * (the password as a hash only: the site keeps no secret), the database's
 * file and the snapshots' folder. Retention is not in it: it changes on
 * the open database. */
typedef struct {
    int has_mqtt, has_db;
    srv_mqttcfg_t mqtt; /* its password wiped */
    uint64_t password_hash;
    char db_path[1024];
    char snapshots[1024];
} site_keys_t;

/* A connection or a database a re-read left unchanged is shared by the
 * old site and the new one: each is held by the sites that have it. */
typedef struct {
    atomic_int refs;
    osp_sink_t *sink;
} mqtt_hold_t;
typedef struct {
    atomic_int refs;
    osp_eventdb_t *db;
} db_hold_t;

struct srv_site {
    atomic_int refs;
    site_keys_t keys;
    double retain_days;
    int64_t retain_rows;
    db_hold_t *db;     /* "events": {"db": ...}, or NULL */
    mqtt_hold_t *mqtt; /* "mqtt", or NULL */
};

/* One counter of track ids for every site of the process: a camera's
 * tracker keeps it across a switch of site. */
static _Atomic uint64_t track_ids = 1;

/* Sites closing on threads of their own, joined by srv_site_wait_closed. */
typedef struct closer {
    struct closer *next;
    pthread_t t;
    srv_site_t *site;
} closer_t;
static pthread_mutex_t closers_mu = PTHREAD_MUTEX_INITIALIZER;
static closer_t *closers;

static void wipe(char *p, size_t n) {
    for (volatile char *v = p; v < p + n; v++) *v = 0;
}

static uint64_t hash_secret(const char *p) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a: tells a changed password, keeps none */
    for (; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* The cameras' one MQTT connection: 0, or -1 with err (never the
 * password). A broker that cannot be reached is not an error: the sink
 * retries it, and drops (counted) what does not fit its queue meanwhile,
 * so no camera waits for it. */
static int open_mqtt(srv_site_t *site, const srv_mqttcfg_t *mc, char *err, size_t errlen) {
    osp_sink_opts_t so = {.cap = mc->queue,
                          .prog = "cameras",
                          .who = "ospreyd: cameras: MQTT",
                          .user = mc->user[0] ? mc->user : NULL,
                          .password = mc->password[0] ? mc->password : NULL,
                          .ca_file = mc->ca[0] ? mc->ca : NULL,
                          .default_topic = mc->prefix,
                          .available = "available"};
    char why[1200];
    if (!(site->mqtt = calloc(1, sizeof *site->mqtt))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    atomic_init(&site->mqtt->refs, 1);
    if (osp_sink_open(mc->url, &so, &site->mqtt->sink, why, sizeof why)) {
        snprintf(err, errlen, "\"mqtt\": %s", why);
        return -1;
    }
    osp_log(OSP_LOG_INFO, "ospreyd: cameras: publishing on MQTT %s%s%s",
            osp_sink_name(site->mqtt->sink), mc->ha[0] ? ", Home Assistant discovery under " : "",
            mc->ha);
    return 0;
}

/* What the cameras share, opened in the order a failure costs least: the
 * folder, the broker (never waited for), the database; with cur (a
 * re-read), its connection and its database are shared when their keys
 * did not change. */
static int open_shared(srv_site_t *site, srv_site_t *cur, const srv_mqttcfg_t *mc, char *err,
                       size_t errlen) {
    const site_keys_t *k = &site->keys;
    if (cur && k->has_mqtt && cur->mqtt && k->password_hash == cur->keys.password_hash &&
        memcmp(&k->mqtt, &cur->keys.mqtt, sizeof k->mqtt) == 0) {
        site->mqtt = cur->mqtt;
        atomic_fetch_add(&site->mqtt->refs, 1);
    }
    if (cur && k->has_db && cur->db && strcmp(k->db_path, cur->keys.db_path) == 0 &&
        strcmp(k->snapshots, cur->keys.snapshots) == 0) {
        site->db = cur->db;
        atomic_fetch_add(&site->db->refs, 1);
    }
    if (k->snapshots[0] && mkdir(k->snapshots, 0750) && errno != EEXIST) {
        snprintf(err, errlen, "\"events\": \"snapshots\": cannot make %s: %s", k->snapshots,
                 strerror(errno));
        return -1;
    }
    if (k->has_mqtt && !site->mqtt && open_mqtt(site, mc, err, errlen)) return -1;
    if (k->has_db && !site->db) {
        osp_eventdb_cfg_t dbc;
        memset(&dbc, 0, sizeof dbc);
        snprintf(dbc.path, sizeof dbc.path, "%s", k->db_path);
        snprintf(dbc.snapshots, sizeof dbc.snapshots, "%s", k->snapshots); /* pruned with rows */
        dbc.retain_days = site->retain_days;
        dbc.retain_rows = site->retain_rows;
        char why[1400];
        if (!(site->db = calloc(1, sizeof *site->db))) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        atomic_init(&site->db->refs, 1);
        if (!(site->db->db = osp_eventdb_open(&dbc, why, sizeof why))) {
            snprintf(err, errlen, "\"events\": \"db\": %s", why);
            return -1;
        }
    }
    return 0;
}

/* The file read and every key checked: the cameras into *cfg, the rest
 * into a site not opened yet (*out), mc its MQTT settings with the
 * password (the caller wipes it). 0, or -1 with err and nothing kept. */
static int read_site(const char *path, srv_camcfg_t **cfg, int *n, srv_site_t **out,
                     srv_mqttcfg_t *mc, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    *cfg = NULL;
    *n = 0;
    *out = NULL;
    memset(mc, 0, sizeof *mc);
    if (srv_camcfg_read_file(path, &text, &len, err, errlen)) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s is not JSON", path);
        return -1;
    }
    srv_site_t *site = calloc(1, sizeof *site);
    long long rows = 0;
    int rc = site ? srv_camcfg_parse(root, cfg, n, err, errlen) : -1;
    if (!site) snprintf(err, errlen, "out of memory");
    site_keys_t *k = site ? &site->keys : NULL;
    if (!rc && (k->has_db = srv_camcfg_events(root, k->db_path, sizeof k->db_path,
                                              &site->retain_days, &rows, err, errlen)) < 0)
        rc = -1;
    if (!rc && srv_camcfg_snapshots(root, k->snapshots, sizeof k->snapshots, err, errlen) < 0)
        rc = -1;
    if (!rc && (k->has_mqtt = srv_camcfg_mqtt(root, mc, err, errlen)) < 0) rc = -1;
    cJSON_Delete(root);
    if (rc) {
        wipe(mc->password, sizeof mc->password);
        free(site);
        free(*cfg);
        *cfg = NULL;
        return -1;
    }
    site->retain_rows = rows;
    if (k->has_mqtt) {
        k->mqtt = *mc;
        k->password_hash = hash_secret(mc->password);
        wipe(k->mqtt.password, sizeof k->mqtt.password);
    }
    atomic_init(&site->refs, 1);
    *out = site;
    return 0;
}

/* Closed now, on the calling thread. */
static void site_close(srv_site_t *site) {
    if (!site) return;
    if (site->db && atomic_fetch_sub(&site->db->refs, 1) == 1) {
        osp_eventdb_close(site->db->db);
        free(site->db);
    }
    if (site->mqtt && atomic_fetch_sub(&site->mqtt->refs, 1) == 1) {
        if (site->mqtt->sink) { /* NULL: it did not open */
            osp_sink_stats_t st;
            char name[1200];
            snprintf(name, sizeof name, "%s", osp_sink_name(site->mqtt->sink));
            osp_sink_close(site->mqtt->sink, MQTT_CLOSE_S, &st);
            osp_log(OSP_LOG_INFO,
                    "ospreyd: cameras: MQTT %s: %lld messages queued, %lld published, %lld "
                    "acknowledged, %lld dropped, %lld connection failures",
                    name, (long long)st.queued, (long long)st.published, (long long)st.acked,
                    (long long)st.dropped, (long long)st.failures);
        }
        free(site->mqtt);
    }
    free(site);
}

int srv_site_read(const char *path, srv_camcfg_t **cfg, int *n, srv_site_t **out, char *err,
                  size_t errlen) {
    srv_mqttcfg_t mc;
    srv_site_t *site;
    if (read_site(path, cfg, n, &site, &mc, err, errlen)) return -1;
    int rc = open_shared(site, NULL, &mc, err, errlen);
    wipe(mc.password, sizeof mc.password);
    if (rc) {
        site_close(site);
        free(*cfg);
        *cfg = NULL;
        return -1;
    }
    *out = site;
    return 0;
}

/* What a change of the shared keys is, in words for the log. */
static const char *what_changed(const site_keys_t *a, const site_keys_t *b) {
    if (a->has_mqtt != b->has_mqtt || a->password_hash != b->password_hash ||
        memcmp(&a->mqtt, &b->mqtt, sizeof a->mqtt) != 0)
        return "\"mqtt\"";
    if (a->has_db != b->has_db || strcmp(a->db_path, b->db_path) != 0) return "\"events\": \"db\"";
    if (strcmp(a->snapshots, b->snapshots) != 0) return "\"events\": \"snapshots\"";
    return NULL;
}

int srv_site_reread(const char *path, srv_site_t *cur, srv_camcfg_t **cfg, int *n,
                    srv_site_t **next, char *err, size_t errlen) {
    srv_mqttcfg_t mc;
    srv_site_t *site;
    *next = NULL;
    if (read_site(path, cfg, n, &site, &mc, err, errlen)) return -1;
    const char *changed = what_changed(&cur->keys, &site->keys);
    int rc = 0;
    if (changed) {
        rc = open_shared(site, cur, &mc, err, errlen);
        if (!rc) {
            osp_log(OSP_LOG_INFO,
                    "ospreyd: cameras: %s changed: %s MQTT connection, %s events database; "
                    "each camera switches between two frames",
                    changed,
                    !site->mqtt               ? "no"
                    : site->mqtt == cur->mqtt ? "the same"
                                              : "a new",
                    !site->db             ? "no"
                    : site->db == cur->db ? "the same"
                                          : "a new");
            *next = site;
            site = NULL;
        }
    } else if (cur->db &&
               (site->retain_days != cur->retain_days || site->retain_rows != cur->retain_rows)) {
        cur->retain_days = site->retain_days;
        cur->retain_rows = site->retain_rows;
        osp_eventdb_retain_set(cur->db->db, cur->retain_days, cur->retain_rows);
        osp_log(OSP_LOG_INFO,
                "ospreyd: cameras: events database %s: now kept %g days, %lld rows (0: no bound)",
                cur->keys.db_path, cur->retain_days, (long long)cur->retain_rows);
    }
    wipe(mc.password, sizeof mc.password);
    site_close(site); /* not opened, or refused */
    if (rc) {
        free(*cfg);
        *cfg = NULL;
        return -1;
    }
    return 0;
}

static void *closer_main(void *arg) {
    closer_t *k = arg;
    (void)pthread_setname_np(pthread_self(), "osp-siteclose");
    site_close(k->site);
    return NULL;
}

srv_site_t *srv_site_ref(srv_site_t *site) {
    if (site) atomic_fetch_add(&site->refs, 1);
    return site;
}

void srv_site_unref(srv_site_t *site) {
    if (!site || atomic_fetch_sub(&site->refs, 1) != 1) return;
    closer_t *k = calloc(1, sizeof *k);
    if (k) {
        k->site = site;
        pthread_mutex_lock(&closers_mu);
        int ok = pthread_create(&k->t, NULL, closer_main, k) == 0;
        if (ok) {
            k->next = closers;
            closers = k;
        }
        pthread_mutex_unlock(&closers_mu);
        if (ok) return;
        free(k);
    }
    site_close(site); /* no thread to spare: here, slower */
}

void srv_site_wait_closed(void) {
    pthread_mutex_lock(&closers_mu);
    closer_t *k = closers;
    closers = NULL;
    pthread_mutex_unlock(&closers_mu);
    while (k) {
        closer_t *next = k->next;
        pthread_join(k->t, NULL);
        free(k);
        k = next;
    }
}

osp_eventdb_t *srv_site_db(const srv_site_t *site) { return site->db ? site->db->db : NULL; }
const char *srv_site_db_path(const srv_site_t *site) {
    return site->db ? site->keys.db_path : NULL;
}
osp_sink_t *srv_site_mqtt(const srv_site_t *site) { return site->mqtt ? site->mqtt->sink : NULL; }
const char *srv_site_ha(const srv_site_t *site) {
    return site->mqtt && site->keys.mqtt.ha[0] ? site->keys.mqtt.ha : NULL;
}
const char *srv_site_snapshots(const srv_site_t *site) { return site->keys.snapshots; }
_Atomic uint64_t *srv_site_track_ids(srv_site_t *site) {
    (void)site;
    return &track_ids;
}
