/*
 * The site (site.h): the config file read once for its cameras and for
 * what they share, and those shared things opened and closed.
 */
#include "server/cameras/site.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log/log.h"

#define MQTT_CLOSE_S 3.0 /* at the stop, waiting for the broker to take what is queued */

struct srv_site {
    osp_eventdb_t *db;    /* "events": {"db": ...}, or NULL */
    char db_path[1024];   /* its file, or "" */
    osp_sink_t *mqtt;     /* "mqtt", or NULL */
    char ha[256];         /* HA's discovery prefix, or "" */
    char snapshots[1024]; /* "events": {"snapshots": DIR}, or "" */
    _Atomic uint64_t track_ids;
};

static void wipe(char *p, size_t n) {
    for (volatile char *v = p; v < p + n; v++) *v = 0;
}

/* The cameras' one MQTT connection ("mqtt" in the config): 0, or -1 with
 * err (never the password). A broker that cannot be reached is not an
 * error: the sink retries it, and drops (counted) what does not fit its
 * queue meanwhile, so no camera waits for it. */
static int open_mqtt(srv_site_t *site, srv_mqttcfg_t *mc, char *err, size_t errlen) {
    osp_sink_opts_t so = {.cap = mc->queue,
                          .prog = "cameras",
                          .who = "ospreyd: cameras: MQTT",
                          .user = mc->user[0] ? mc->user : NULL,
                          .password = mc->password[0] ? mc->password : NULL,
                          .ca_file = mc->ca[0] ? mc->ca : NULL,
                          .default_topic = mc->prefix,
                          .available = "available"};
    char why[1200];
    int rc = osp_sink_open(mc->url, &so, &site->mqtt, why, sizeof why);
    wipe(mc->password, sizeof mc->password);
    if (rc) {
        snprintf(err, errlen, "\"mqtt\": %s", why);
        return -1;
    }
    snprintf(site->ha, sizeof site->ha, "%s", mc->ha);
    osp_log(OSP_LOG_INFO, "ospreyd: cameras: publishing on MQTT %s%s%s", osp_sink_name(site->mqtt),
            mc->ha[0] ? ", Home Assistant discovery under " : "", mc->ha);
    return 0;
}

/* What the cameras share, opened in the order a failure costs least: the
 * folder, the broker (never waited for), the database. */
static int open_shared(srv_site_t *site, const osp_eventdb_cfg_t *dbc, int has_db,
                       srv_mqttcfg_t *mc, int has_mqtt, char *err, size_t errlen) {
    atomic_init(&site->track_ids, 1);
    if (site->snapshots[0] && mkdir(site->snapshots, 0750) && errno != EEXIST) {
        snprintf(err, errlen, "\"events\": \"snapshots\": cannot make %s: %s", site->snapshots,
                 strerror(errno));
        return -1;
    }
    if (has_mqtt && open_mqtt(site, mc, err, errlen)) return -1;
    if (has_db) {
        if (!(site->db = osp_eventdb_open(dbc, err, errlen))) return -1;
        snprintf(site->db_path, sizeof site->db_path, "%s", dbc->path);
    }
    return 0;
}

int srv_site_read(const char *path, srv_camcfg_t **cfg, int *n, srv_site_t **out, char *err,
                  size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    *cfg = NULL;
    *n = 0;
    if (out) *out = NULL;
    if (srv_camcfg_read_file(path, &text, &len, err, errlen)) return -1;
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!root) {
        snprintf(err, errlen, "%s is not JSON", path);
        return -1;
    }
    srv_site_t *site = calloc(1, sizeof *site);
    osp_eventdb_cfg_t dbc;
    srv_mqttcfg_t mc;
    long long rows = 0;
    memset(&dbc, 0, sizeof dbc);
    int rc = site ? srv_camcfg_parse(root, cfg, n, err, errlen) : -1;
    if (!site) snprintf(err, errlen, "out of memory");
    int has_db = rc ? 0
                    : srv_camcfg_events(root, dbc.path, sizeof dbc.path, &dbc.retain_days, &rows,
                                        err, errlen);
    if (!rc && has_db >= 0 &&
        srv_camcfg_snapshots(root, site->snapshots, sizeof site->snapshots, err, errlen) < 0)
        rc = -1;
    int has_mqtt = 0;
    if (!rc && has_db >= 0 && out && (has_mqtt = srv_camcfg_mqtt(root, &mc, err, errlen)) < 0)
        rc = -1;
    cJSON_Delete(root);
    dbc.retain_rows = rows;
    if (site)
        memcpy(dbc.snapshots, site->snapshots, sizeof dbc.snapshots); /* pruned with their rows */
    if (!rc && has_db >= 0 && out && open_shared(site, &dbc, has_db, &mc, has_mqtt, err, errlen))
        rc = -1;
    if (has_mqtt) wipe(mc.password, sizeof mc.password);
    if (rc || has_db < 0) {
        srv_site_close(site);
        free(*cfg);
        *cfg = NULL;
        return -1;
    }
    if (out)
        *out = site;
    else
        srv_site_close(site);
    return 0;
}

void srv_site_close(srv_site_t *site) {
    if (!site) return;
    osp_eventdb_close(site->db);
    if (site->mqtt) {
        osp_sink_stats_t st;
        char name[1200];
        snprintf(name, sizeof name, "%s", osp_sink_name(site->mqtt));
        osp_sink_close(site->mqtt, MQTT_CLOSE_S, &st);
        osp_log(OSP_LOG_INFO,
                "ospreyd: cameras: MQTT %s: %lld messages queued, %lld published, %lld "
                "acknowledged, %lld dropped, %lld connection failures",
                name, (long long)st.queued, (long long)st.published, (long long)st.acked,
                (long long)st.dropped, (long long)st.failures);
    }
    free(site);
}

osp_eventdb_t *srv_site_db(const srv_site_t *site) { return site->db; }
const char *srv_site_db_path(const srv_site_t *site) { return site->db ? site->db_path : NULL; }
osp_sink_t *srv_site_mqtt(const srv_site_t *site) { return site->mqtt; }
const char *srv_site_ha(const srv_site_t *site) { return site->ha[0] ? site->ha : NULL; }
const char *srv_site_snapshots(const srv_site_t *site) { return site->snapshots; }
_Atomic uint64_t *srv_site_track_ids(srv_site_t *site) { return &site->track_ids; }
