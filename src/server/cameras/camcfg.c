/* The "cameras" list of the config file; see camcfg.h. */
#include "server/cameras/camcfg.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/text.h"
#include "log/log.h"

#define CONFIG_MAX (1u << 20) /* a config file larger than this is not read for cameras */

static const char *const KEYS[] = {"name", "url", "model", "fps", "objects", "zones"};
#define N_KEYS (int)(sizeof KEYS / sizeof KEYS[0])

static int name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-') return 0;
    return 1;
}

/* ${NAME} replaced by the environment's value; an unset one is an error. */
static int expand(const char *in, char *out, size_t cap, char *err, size_t errlen) {
    size_t o = 0;
    for (const char *p = in; *p;) {
        if (p[0] == '$' && p[1] == '{') {
            const char *end = strchr(p + 2, '}');
            char var[128];
            size_t len = end ? (size_t)(end - p - 2) : 0;
            if (!end || len == 0 || len >= sizeof var) {
                snprintf(err, errlen, "a ${NAME} in \"url\" is not closed or is empty");
                return -1;
            }
            memcpy(var, p + 2, len);
            var[len] = '\0';
            const char *v = getenv(var);
            if (!v) {
                snprintf(err, errlen, "\"url\" names ${%s}, which is not set", var);
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
    snprintf(err, errlen, "\"url\" is longer than %zu bytes", cap - 1);
    return -1;
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
        str_key(cam, "zones", c->zones, sizeof c->zones, 0, err, errlen))
        return -1;
    const cJSON *fps = cJSON_GetObjectItemCaseSensitive(cam, "fps");
    if (fps && !cJSON_IsNull(fps)) {
        if (!cJSON_IsNumber(fps) || !(fps->valuedouble >= 0.1 && fps->valuedouble <= 60)) {
            snprintf(err, errlen, "\"fps\" must be a number from 0.1 to 60");
            return -1;
        }
        c->fps = fps->valuedouble;
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
    for (const cJSON *k = cam->child; k; k = k->next) {
        int known = 0, best = -1, best_d = 1 << 30;
        for (int i = 0; i < N_KEYS; i++) {
            if (strcmp(k->string, KEYS[i]) == 0) known = 1;
            int d = osp_text_distance(k->string, KEYS[i]);
            if (d < best_d) best_d = d, best = i;
        }
        if (!known)
            osp_log(OSP_LOG_WARN, "ospreyd: camera %s: unknown key \"%.64s\" ignored%s%s%s",
                    c->name, k->string, best_d <= 3 ? " (did you mean \"" : "",
                    best_d <= 3 ? KEYS[best] : "", best_d <= 3 ? "\"?)" : "");
    }
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

int srv_camcfg_present(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    char *buf = malloc(CONFIG_MAX + 1);
    size_t n = buf ? fread(buf, 1, CONFIG_MAX + 1, f) : 0;
    fclose(f);
    int yes = 0;
    if (buf && n <= CONFIG_MAX) {
        cJSON *root = cJSON_ParseWithLength(buf, n);
        const cJSON *cams = cJSON_GetObjectItemCaseSensitive(root, "cameras");
        yes = cJSON_IsArray(cams) && cJSON_GetArraySize(cams) > 0;
        cJSON_Delete(root);
    }
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
    for (const cJSON *k = ev->child; k; k = k->next)
        if (strcmp(k->string, "db") && strcmp(k->string, "retainDays") &&
            strcmp(k->string, "retainRows") && strcmp(k->string, "snapshots"))
            osp_log(OSP_LOG_WARN, "ospreyd: \"events\": unknown key \"%.64s\" ignored", k->string);
    snprintf(path, path_cap, "%s", db->valuestring);
    if (d) *days = d->valuedouble;
    if (r) *rows = (long long)r->valuedouble;
    return 1;
}

int srv_camcfg_snapshots(const cJSON *root, char *out, size_t cap, char *err, size_t errlen) {
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "events");
    const cJSON *dir = cJSON_IsObject(ev) ? cJSON_GetObjectItemCaseSensitive(ev, "snapshots") : NULL;
    out[0] = '\0';
    if (!dir || cJSON_IsNull(dir)) return 0;
    if (!cJSON_IsString(dir) || !dir->valuestring[0] || strlen(dir->valuestring) >= cap) {
        snprintf(err, errlen, "\"events\": \"snapshots\" must be the path of a directory");
        return -1;
    }
    snprintf(out, cap, "%s", dir->valuestring);
    return 0;
}
