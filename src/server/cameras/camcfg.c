/* The "cameras" list of the config file; see camcfg.h. */
#include "server/cameras/camcfg.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "log/log.h"
#include "track/zones.h"


static const char *const KEYS[] = {"name",  "url",    "model",      "fps",           "objects",
                                   "zones", "motion", "motionMask", "decodeThreads", "regions"};
#define N_KEYS (int)(sizeof KEYS / sizeof KEYS[0])

/* Each key of obj not in keys warned about, with the nearest known one
 * when it is close (where: "camera door", "\"mqtt\""). */
static void warn_unknown(const cJSON *obj, const char *where, const char *const *keys, int n) {
    for (const cJSON *k = obj->child; k; k = k->next) {
        int known = 0, best = -1, best_d = 1 << 30;
        for (int i = 0; i < n; i++) {
            if (strcmp(k->string, keys[i]) == 0) known = 1;
            int d = osp_text_distance(k->string, keys[i]);
            if (d < best_d) best_d = d, best = i;
        }
        if (!known)
            osp_log(OSP_LOG_WARN, "ospreyd: %s: unknown key \"%.64s\" ignored%s%s%s", where,
                    k->string, best_d <= 3 ? " (did you mean \"" : "",
                    best_d <= 3 ? keys[best] : "", best_d <= 3 ? "\"?)" : "");
    }
}

static int name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-') return 0;
    return 1;
}

/* ${NAME} replaced by the environment's value; an unset one is an error.
 * key names the value in err (which never holds the value). */
static int expand_key(const char *key, const char *in, char *out, size_t cap, char *err,
                      size_t errlen) {
    size_t o = 0;
    for (const char *p = in; *p;) {
        if (p[0] == '$' && p[1] == '{') {
            const char *end = strchr(p + 2, '}');
            char var[128];
            size_t len = end ? (size_t)(end - p - 2) : 0;
            if (!end || len == 0 || len >= sizeof var) {
                snprintf(err, errlen, "a ${NAME} in \"%s\" is not closed or is empty", key);
                return -1;
            }
            memcpy(var, p + 2, len);
            var[len] = '\0';
            const char *v = getenv(var);
            if (!v) {
                snprintf(err, errlen, "\"%s\" names ${%s}, which is not set", key, var);
                return -1;
            }
            size_t vl = strlen(v);
            if (o + vl >= cap) goto too_long;
            memcpy(out + o, v, vl);
            o += vl;
            p = end + 1;
            continue;
        }
        if (o + 1 >= cap) goto too_long;
        out[o++] = *p++;
    }
    out[o] = '\0';
    return 0;
too_long:
    snprintf(err, errlen, "\"%s\" is longer than %zu bytes", key, cap - 1);
    return -1;
}

static int expand(const char *in, char *out, size_t cap, char *err, size_t errlen) {
    return expand_key("url", in, out, cap, err, errlen);
}

static int str_key(const cJSON *cam, const char *key, char *out, size_t cap, int required,
                   char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cam, key);
    if (!v || cJSON_IsNull(v)) {
        if (required) snprintf(err, errlen, "\"%s\" is required", key);
        return required ? -1 : 0;
    }
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= cap) {
        snprintf(err, errlen, "\"%s\" must be a string of 1 to %zu bytes", key, cap - 1);
        return -1;
    }
    snprintf(out, cap, "%s", v->valuestring);
    return 0;
}

/* "motion": true or false, "regions": "auto", true or false, and
 * "motionMask": a polygon (Frigate's string
 * "x1,y1,x2,y2,...") or a list of them, each a string or a list of [x, y]
 * points, relative to the frame as a zones file's (docs/cameras.md). */
static int motion_keys(const cJSON *cam, srv_camcfg_t *c, char *err, size_t errlen) {
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(cam, "motion");
    c->motion = 1;
    if (on && !cJSON_IsNull(on)) {
        if (!cJSON_IsBool(on)) {
            snprintf(err, errlen, "\"motion\" must be true or false");
            return -1;
        }
        c->motion = cJSON_IsTrue(on);
    }
    const cJSON *reg = cJSON_GetObjectItemCaseSensitive(cam, "regions");
    c->regions = -1;
    if (reg && !cJSON_IsNull(reg)) {
        if (cJSON_IsBool(reg)) {
            c->regions = cJSON_IsTrue(reg);
        } else if (!cJSON_IsString(reg) || strcmp(reg->valuestring, "auto") != 0) {
            snprintf(err, errlen, "\"regions\" must be \"auto\", true or false");
            return -1;
        }
    }
    if (c->regions == 1 && !c->motion) {
        snprintf(err, errlen,
                 "\"regions\": true needs the motion pass (\"motion\": false): regions are "
                 "planned around what moved");
        return -1;
    }
    const cJSON *mask = cJSON_GetObjectItemCaseSensitive(cam, "motionMask"), *poly;
    if (!mask || cJSON_IsNull(mask)) return 0;
    if (cJSON_IsString(mask)) {
        poly = mask; /* one polygon */
        mask = NULL;
    } else if (!cJSON_IsArray(mask) || cJSON_GetArraySize(mask) > SRV_CAM_MASKS_MAX) {
        snprintf(err, errlen,
                 "\"motionMask\" must be a polygon \"x1,y1,x2,y2,...\" or a list of at most %d "
                 "polygons",
                 SRV_CAM_MASKS_MAX);
        return -1;
    } else {
        poly = mask->child;
    }
    for (; poly; poly = mask ? poly->next : NULL) {
        osp_zones_pt_t pts[SRV_CAM_MASK_POINTS];
        char where[64], why[400];
        int n = 0, i = c->n_masks;
        snprintf(where, sizeof where, "\"motionMask\" polygon %d", i + 1);
        if (osp_zones_coords_read(poly, pts, SRV_CAM_MASK_POINTS, &n, where, why, sizeof why)) {
            snprintf(err, errlen, "%s", why);
            return -1;
        }
        if (n < 3) {
            snprintf(err, errlen, "%s has %d points; a polygon needs at least 3", where, n);
            return -1;
        }
        for (int k = 0; k < n; k++) {
            c->masks[i].xy[2 * k] = pts[k].x;
            c->masks[i].xy[2 * k + 1] = pts[k].y;
        }
        c->masks[i].n = n;
        c->n_masks++;
    }
    return 0;
}

static int one(const cJSON *cam, srv_camcfg_t *c, char *err, size_t errlen) {
    char url[sizeof c->url];
    memset(c, 0, sizeof *c);
    c->fps = 5;
    if (!cJSON_IsObject(cam)) {
        snprintf(err, errlen, "each camera must be an object");
        return -1;
    }
    if (str_key(cam, "name", c->name, sizeof c->name, 1, err, errlen)) return -1;
    if (!name_ok(c->name)) {
        snprintf(err, errlen, "\"name\" must be 1-63 letters, digits, '_' or '-'");
        return -1;
    }
    if (str_key(cam, "url", url, sizeof url, 1, err, errlen) ||
        expand(url, c->url, sizeof c->url, err, errlen) ||
        str_key(cam, "model", c->model, sizeof c->model, 0, err, errlen) ||
        str_key(cam, "zones", c->zones, sizeof c->zones, 0, err, errlen) ||
        motion_keys(cam, c, err, errlen))
        return -1;
    const cJSON *fps = cJSON_GetObjectItemCaseSensitive(cam, "fps");
    if (fps && !cJSON_IsNull(fps)) {
        if (!cJSON_IsNumber(fps) || !(fps->valuedouble >= 0.1 && fps->valuedouble <= 60)) {
            snprintf(err, errlen, "\"fps\" must be a number from 0.1 to 60");
            return -1;
        }
        c->fps = fps->valuedouble;
    }
    c->decode_threads = 1;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(cam, "decodeThreads");
    if (dt && !cJSON_IsNull(dt)) {
        if (!cJSON_IsNumber(dt) || !(dt->valuedouble >= 1 && dt->valuedouble <= 16) ||
            dt->valuedouble != floor(dt->valuedouble)) {
            snprintf(err, errlen, "\"decodeThreads\" must be a whole number from 1 to 16");
            return -1;
        }
        c->decode_threads = (int)dt->valuedouble;
    }
    const cJSON *objs = cJSON_GetObjectItemCaseSensitive(cam, "objects"), *o;
    if (objs && !cJSON_IsNull(objs)) {
        if (!cJSON_IsArray(objs) || cJSON_GetArraySize(objs) > SRV_CAM_OBJECTS_MAX) {
            snprintf(err, errlen, "\"objects\" must be a list of at most %d labels",
                     SRV_CAM_OBJECTS_MAX);
            return -1;
        }
        cJSON_ArrayForEach(o, objs) {
            if (!cJSON_IsString(o) || !o->valuestring[0] || strlen(o->valuestring) >= 64) {
                snprintf(err, errlen, "each of \"objects\" must be a label of 1 to 63 bytes");
                return -1;
            }
            snprintf(c->objects[c->n_objects++], 64, "%s", o->valuestring);
        }
    }
    char where[80];
    snprintf(where, sizeof where, "camera %s", c->name);
    warn_unknown(cam, where, KEYS, N_KEYS);
    return 0;
}

int srv_camcfg_parse(const cJSON *root, srv_camcfg_t **out, int *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    const cJSON *cams = cJSON_GetObjectItemCaseSensitive(root, "cameras");
    if (!cams || cJSON_IsNull(cams)) return 0;
    int count = cJSON_IsArray(cams) ? cJSON_GetArraySize(cams) : -1;
    if (count < 0 || count > SRV_CAM_MAX) {
        snprintf(err, errlen, "\"cameras\" must be a list of at most %d cameras", SRV_CAM_MAX);
        return -1;
    }
    if (count == 0) return 0;
    srv_camcfg_t *c = calloc((size_t)count, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int i = 0;
    const cJSON *cam;
    cJSON_ArrayForEach(cam, cams) {
        char why[512];
        if (one(cam, &c[i], why, sizeof why)) {
            const cJSON *nm = cJSON_IsObject(cam) ? cJSON_GetObjectItemCaseSensitive(cam, "name")
                                                  : NULL;
            snprintf(err, errlen, "camera %d%s%.63s%s: %s", i, cJSON_IsString(nm) ? " (" : "",
                     cJSON_IsString(nm) ? nm->valuestring : "", cJSON_IsString(nm) ? ")" : "", why);
            free(c);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(c[j].name, c[i].name) == 0) {
                snprintf(err, errlen, "two cameras are named \"%s\"", c[i].name);
                free(c);
                return -1;
            }
        i++;
    }
    *out = c;
    *n = count;
    return 0;
}

int srv_camcfg_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s", path);
        return -1;
    }
    char *buf = malloc(SRV_CAMCFG_FILE_MAX + 1);
    size_t n = buf ? fread(buf, 1, SRV_CAMCFG_FILE_MAX + 1, f) : 0;
    fclose(f);
    if (!buf || n > SRV_CAMCFG_FILE_MAX) {
        free(buf);
        snprintf(err, errlen, "%s is larger than %u bytes", path, SRV_CAMCFG_FILE_MAX);
        return -1;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int srv_camcfg_present(const char *path) {
    char *buf, err[64];
    size_t n;
    if (srv_camcfg_read_file(path, &buf, &n, err, sizeof err)) return 0;
    cJSON *root = cJSON_ParseWithLength(buf, n);
    const cJSON *cams = cJSON_GetObjectItemCaseSensitive(root, "cameras");
    int yes = cJSON_IsArray(cams) && cJSON_GetArraySize(cams) > 0;
    cJSON_Delete(root);
    free(buf);
    return yes;
}

int srv_camcfg_events(const cJSON *root, char *path, size_t path_cap, double *days,
                      long long *rows, char *err, size_t errlen) {
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "events");
    *days = 10;
    *rows = 100000;
    if (!ev || cJSON_IsNull(ev)) return 0;
    if (!cJSON_IsObject(ev)) {
        snprintf(err, errlen, "\"events\" must be an object");
        return -1;
    }
    const cJSON *db = cJSON_GetObjectItemCaseSensitive(ev, "db");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(ev, "retainDays");
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(ev, "retainRows");
    static const char *const EV_KEYS[] = {"db", "retainDays", "retainRows", "snapshots"};
    warn_unknown(ev, "\"events\"", EV_KEYS, (int)(sizeof EV_KEYS / sizeof EV_KEYS[0]));
    if ((!db || cJSON_IsNull(db)) && cJSON_GetObjectItemCaseSensitive(ev, "snapshots"))
        return 0; /* snapshots without a database */
    if (!cJSON_IsString(db) || !db->valuestring[0] || strlen(db->valuestring) >= path_cap) {
        snprintf(err, errlen, "\"events\": \"db\" must be the path of a database file");
        return -1;
    }
    if (d && !(cJSON_IsNumber(d) && d->valuedouble >= 0 && d->valuedouble <= 36500)) {
        snprintf(err, errlen,
                 "\"events\": \"retainDays\" must be a number from 0 (no bound) to 36500");
        return -1;
    }
    if (r && !(cJSON_IsNumber(r) && r->valuedouble >= 0 && r->valuedouble <= 1e9 &&
               r->valuedouble == floor(r->valuedouble))) {
        snprintf(err, errlen,
                 "\"events\": \"retainRows\" must be a whole number from 0 (no bound) to 1000000000");
        return -1;
    }
    snprintf(path, path_cap, "%s", db->valuestring);
    if (d) *days = d->valuedouble;
    if (r) *rows = (long long)r->valuedouble;
    return 1;
}

int srv_camcfg_snapshots(const cJSON *root, char *dir, size_t cap, char *err, size_t errlen) {
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "events");
    const cJSON *d = cJSON_IsObject(ev) ? cJSON_GetObjectItemCaseSensitive(ev, "snapshots") : NULL;
    dir[0] = '\0';
    if (!d || cJSON_IsNull(d)) return 0;
    if (!cJSON_IsString(d) || !d->valuestring[0] || strlen(d->valuestring) >= cap) {
        snprintf(err, errlen, "\"events\": \"snapshots\" must be the path of a directory");
        return -1;
    }
    snprintf(dir, cap, "%s", d->valuestring);
    return 1;
}

#define SECRET_MAX 4096

/* The first line of a password file (a regular file of at most 4 KiB; one
 * others can read is warned about, by name). err never holds the content. */
static int read_secret(const char *path, char *out, size_t cap, char *err, size_t errlen) {
    /* O_NONBLOCK: a FIFO named by mistake does not hang the start */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char buf[SECRET_MAX + 1];
    int rc = -1;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "\"mqtt\": \"passwordFile\" %s: %s", path, strerror(errno));
        goto done;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > SECRET_MAX) {
        snprintf(err, errlen, "\"mqtt\": \"passwordFile\" %s: not a regular file of at most %d bytes",
                 path, SECRET_MAX);
        goto done;
    }
    ssize_t got = read(fd, buf, SECRET_MAX);
    if (got < 0) {
        snprintf(err, errlen, "\"mqtt\": \"passwordFile\" %s: %s", path, strerror(errno));
        goto done;
    }
    buf[got] = '\0';
    size_t len = strcspn(buf, "\r\n");
    if (len == 0 || len >= cap) {
        snprintf(err, errlen, "\"mqtt\": \"passwordFile\" %s: the first line must be 1 to %zu bytes",
                 path, cap - 1);
        goto done;
    }
    memcpy(out, buf, len);
    out[len] = '\0';
    if (st.st_mode & S_IROTH)
        osp_log(OSP_LOG_WARN, "ospreyd: \"mqtt\": \"passwordFile\" %s can be read by other users",
                path);
    rc = 0;
done:
    if (fd >= 0) close(fd);
    for (volatile char *p = buf; p < buf + sizeof buf; p++) *p = 0;
    return rc;
}

/* A string key of "mqtt", its ${NAME}s replaced: 0 (absent: out
 * untouched), or -1 with err. */
static int mqtt_str(const cJSON *mq, const char *key, char *out, size_t cap, char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(mq, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsString(v) || !v->valuestring[0]) {
        snprintf(err, errlen, "\"mqtt\": \"%s\" must be a string of 1 to %zu bytes", key, cap - 1);
        return -1;
    }
    char where[40];
    snprintf(where, sizeof where, "mqtt\": \"%s", key);
    return expand_key(where, v->valuestring, out, cap, err, errlen);
}

int srv_camcfg_mqtt(const cJSON *root, srv_mqttcfg_t *out, char *err, size_t errlen) {
    static const char *const KEYS_MQTT[] = {"url",    "user",        "password", "passwordFile",
                                            "prefix", "haDiscovery", "tls",      "queue"};
    const cJSON *mq = cJSON_GetObjectItemCaseSensitive(root, "mqtt");
    memset(out, 0, sizeof *out);
    snprintf(out->prefix, sizeof out->prefix, "frigate");
    snprintf(out->ha, sizeof out->ha, "homeassistant");
    out->queue = 1024;
    if (!mq || cJSON_IsNull(mq)) return 0;
    if (!cJSON_IsObject(mq)) {
        snprintf(err, errlen, "\"mqtt\" must be an object");
        return -1;
    }
    warn_unknown(mq, "\"mqtt\"", KEYS_MQTT, (int)(sizeof KEYS_MQTT / sizeof KEYS_MQTT[0]));
    if (!cJSON_GetObjectItemCaseSensitive(mq, "url")) {
        snprintf(err, errlen, "\"mqtt\": \"url\" is required");
        return -1;
    }
    const cJSON *pf = cJSON_GetObjectItemCaseSensitive(mq, "passwordFile");
    const cJSON *ha = cJSON_GetObjectItemCaseSensitive(mq, "haDiscovery");
    const cJSON *tls = cJSON_GetObjectItemCaseSensitive(mq, "tls");
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(mq, "queue");
    if (mqtt_str(mq, "url", out->url, sizeof out->url, err, errlen) ||
        mqtt_str(mq, "user", out->user, sizeof out->user, err, errlen) ||
        mqtt_str(mq, "password", out->password, sizeof out->password, err, errlen) ||
        mqtt_str(mq, "prefix", out->prefix, sizeof out->prefix, err, errlen))
        goto fail;
    if (pf && !cJSON_IsNull(pf)) {
        if (out->password[0]) {
            snprintf(err, errlen, "\"mqtt\": \"password\" and \"passwordFile\" are one or the other");
            goto fail;
        }
        if (!cJSON_IsString(pf) || !pf->valuestring[0]) {
            snprintf(err, errlen, "\"mqtt\": \"passwordFile\" must be the path of a file");
            goto fail;
        }
        if (read_secret(pf->valuestring, out->password, sizeof out->password, err, errlen))
            goto fail;
    }
    if (out->password[0] && !out->user[0] && !strchr(out->url, '@')) {
        snprintf(err, errlen, "\"mqtt\": a password needs a \"user\"");
        goto fail;
    }
    for (const char *p = out->prefix; *p; p++)
        if (*p == '+' || *p == '#') {
            snprintf(err, errlen, "\"mqtt\": \"prefix\" must not hold '+' or '#'");
            goto fail;
        }
    if (cJSON_IsFalse(ha)) {
        out->ha[0] = '\0';
    } else if (ha && !cJSON_IsNull(ha) && !cJSON_IsTrue(ha)) {
        if (!cJSON_IsString(ha) || !ha->valuestring[0] ||
            strlen(ha->valuestring) >= sizeof out->ha || strpbrk(ha->valuestring, "+#")) {
            snprintf(err, errlen,
                     "\"mqtt\": \"haDiscovery\" must be a topic prefix (\"homeassistant\") or false");
            goto fail;
        }
        snprintf(out->ha, sizeof out->ha, "%s", ha->valuestring);
    }
    if (tls && !cJSON_IsNull(tls)) {
        static const char *const KEYS_TLS[] = {"ca"};
        const cJSON *ca = cJSON_IsObject(tls) ? cJSON_GetObjectItemCaseSensitive(tls, "ca") : NULL;
        if (!cJSON_IsObject(tls) || (ca && !cJSON_IsNull(ca) &&
                                     (!cJSON_IsString(ca) || !ca->valuestring[0] ||
                                      strlen(ca->valuestring) >= sizeof out->ca))) {
            snprintf(err, errlen, "\"mqtt\": \"tls\" must be {\"ca\": the path of a CA file}");
            goto fail;
        }
        warn_unknown(tls, "\"mqtt\": \"tls\"", KEYS_TLS, 1);
        if (cJSON_IsString(ca)) snprintf(out->ca, sizeof out->ca, "%s", ca->valuestring);
    }
    if (q && !cJSON_IsNull(q)) {
        if (!cJSON_IsNumber(q) || !(q->valuedouble >= 16 && q->valuedouble <= 1000000) ||
            q->valuedouble != floor(q->valuedouble)) {
            snprintf(err, errlen, "\"mqtt\": \"queue\" must be a whole number from 16 to 1000000");
            goto fail;
        }
        out->queue = (int)q->valuedouble;
    }
    return 1;
fail:
    for (volatile char *p = out->password; p < out->password + sizeof out->password; p++) *p = 0;
    return -1;
}
