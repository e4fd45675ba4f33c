/* The zones file and the rules a zone configuration keeps; see zones.h. */
#include "track/zones.h"
#include "base/text.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "wire/frame.h"
#include "wire/pyjson.h"

static const char *const TOP_KEYS[] = {"zones", "lines"};
static const char *const ZONE_KEYS[] = {"coordinates", "inertia", "loitering_time", "objects"};
static const char *const LINE_KEYS[] = {"coordinates", "objects"};
/* Frigate's zone keys that osprey does not act on: said so, rather than
 * "unknown", to someone pasting a Frigate config. */
static const char *const FRIGATE_ONLY[] = {"filters", "friendly_name", "distances", "speed_threshold"};
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The reason into err after prefix; OSP_ZONES_EINVAL. */
static int fail_as(char *err, size_t errlen, const char *prefix, const char *fmt, ...) {
    if (err && errlen) {
        size_t off = (size_t)snprintf(err, errlen, "%s", prefix);
        if (off < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + off, errlen - off, fmt, ap);
            va_end(ap);
        }
    }
    return OSP_ZONES_EINVAL;
}
#define fail(err, errlen, ...) fail_as(err, errlen, "zones file: ", __VA_ARGS__)

/* Every key of obj must be one of known[]; the error names the nearest. */
static int known_keys(const cJSON *obj, const char *const *known, size_t n, const char *where,
                      char *err, size_t errlen) {
    for (const cJSON *k = obj->child; k; k = k->next) {
        const char *near = NULL;
        int best = 99, ok = 0;
        for (size_t i = 0; i < n && !ok; i++) {
            ok = strcmp(k->string, known[i]) == 0;
            int d = osp_text_distance(k->string, known[i]);
            /* a known key's start ("loitering") is as near as a typo */
            size_t kl = strlen(k->string);
            if (kl >= 4 && strncasecmp(known[i], k->string, kl) == 0) d = 1;
            if (d < best) best = d, near = known[i];
        }
        if (ok) continue;
        for (size_t i = 0; i < N(FRIGATE_ONLY) && known != TOP_KEYS; i++)
            if (strcmp(k->string, FRIGATE_ONLY[i]) == 0)
                return fail(err, errlen, "%s: \"%s\" (a Frigate zone key) is not supported", where,
                            k->string);
        if (near && best <= 1 + (int)strlen(near) / 3)
            return fail(err, errlen, "%s: unknown key \"%.64s\" (did you mean \"%s\"?)", where,
                        k->string, near);
        return fail(err, errlen, "%s: unknown key \"%.64s\"", where, k->string);
    }
    return 0;
}

static int name_ok(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-') return 0;
    return 1;
}

/* One number of a coordinates string, between commas. */
static int take_number(const char **s, double *v) {
    char *end;
    while (**s == ' ' || **s == '\t') (*s)++;
    if (!**s || **s == ',') return -1;
    *v = strtod(*s, &end);
    if (end == *s) return -1;
    *s = end;
    while (**s == ' ' || **s == '\t') (*s)++;
    if (**s == ',') {
        (*s)++;
        while (**s == ' ' || **s == '\t') (*s)++;
        if (!**s) return -1; /* "…,y," */
    } else if (**s) {
        return -1;
    }
    return 0;
}

int osp_zones_coords_read(const cJSON *c, osp_zones_pt_t *pts, int cap, int *n, const char *where,
                          char *err, size_t errlen) {
    double v[2 * OSP_ZONES_MAX_POINTS + 2]; /* one point past the most, to say so */
    if (cap > OSP_ZONES_MAX_POINTS) cap = OSP_ZONES_MAX_POINTS;
    int nv = 0, max = 2 * cap;
    if (cJSON_IsString(c)) {
        const char *s = c->valuestring;
        while (*s && nv <= max)
            if (take_number(&s, &v[nv++]))
                return fail_as(err, errlen, "", "%s: coordinate %d is not a number", where, nv);
    } else if (cJSON_IsArray(c)) {
        for (const cJSON *e = c->child; e && nv <= max; e = e->next) {
            if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 && cJSON_IsNumber(e->child) &&
                cJSON_IsNumber(e->child->next)) {
                v[nv++] = e->child->valuedouble;
                v[nv++] = e->child->next->valuedouble;
            } else if (cJSON_IsString(e)) {
                const char *s = e->valuestring;
                int bad = take_number(&s, &v[nv]) || !*s || take_number(&s, &v[nv + 1]) || *s;
                if (bad)
                    return fail_as(err, errlen, "", "%s: point %d is not \"x,y\"", where, nv / 2 + 1);
                nv += 2;
            } else {
                return fail_as(err, errlen, "", "%s: point %d is not [x, y] or \"x,y\"", where,
                               nv / 2 + 1);
            }
        }
    } else {
        return fail_as(err, errlen, "",
                       "%s: coordinates must be a string \"x1,y1,x2,y2,...\" or a list "
                       "of [x, y] points",
                       where);
    }
    if (nv > max) return fail_as(err, errlen, "", "%s: more than %d points", where, cap);
    if (nv % 2)
        return fail_as(err, errlen, "", "%s: an odd number of coordinates (%d)", where, nv);
    for (int i = 0; i < nv; i++)
        if (!(v[i] >= 0 && v[i] <= 1))
            return fail_as(err, errlen, "",
                           "%s: coordinate %d (%c of point %d) is %g, outside 0-1 (coordinates are "
                           "relative to the frame)",
                           where, i + 1, i % 2 ? 'y' : 'x', i / 2 + 1, v[i]);
    for (int i = 0; i < nv / 2; i++)
        pts[i] = (osp_zones_pt_t){(float)v[2 * i], (float)v[2 * i + 1]};
    *n = nv / 2;
    return 0;
}

/* osp_zones_coords_read, its reason said to be the zones file's. */
static int read_coords(const cJSON *c, osp_zones_pt_t *pts, int cap, int *n, const char *where,
                       char *err, size_t errlen) {
    char why[256];
    if (osp_zones_coords_read(c, pts, cap, n, where, why, sizeof why))
        return fail(err, errlen, "%s", why);
    return 0;
}

static int read_objects(const cJSON *o, char (*out)[OSP_ZONES_NAME_MAX], int *n, const char *where,
                        char *err, size_t errlen) {
    if (!o) return 0;
    if (!cJSON_IsArray(o)) return fail(err, errlen, "%s: objects must be a list of labels", where);
    for (const cJSON *e = o->child; e; e = e->next) {
        if (!cJSON_IsString(e) || !e->valuestring[0])
            return fail(err, errlen, "%s: objects must be a list of labels", where);
        if (*n == OSP_ZONES_MAX_OBJECTS)
            return fail(err, errlen, "%s: more than %d objects", where, OSP_ZONES_MAX_OBJECTS);
        if (strlen(e->valuestring) >= OSP_ZONES_NAME_MAX)
            return fail(err, errlen, "%s: label \"%.40s...\" is longer than %d bytes", where,
                        e->valuestring, OSP_ZONES_NAME_MAX - 1);
        strcpy(out[(*n)++], e->valuestring);
    }
    return 0;
}

static int read_name(const cJSON *item, char *out, const char *kind, char *err, size_t errlen) {
    if (strlen(item->string) >= OSP_ZONES_NAME_MAX)
        return fail(err, errlen, "%s name \"%.40s...\" is longer than %d bytes", kind,
                    item->string, OSP_ZONES_NAME_MAX - 1);
    strcpy(out, item->string);
    return 0;
}

static int read_zone(const cJSON *item, osp_zone_def_t *z, char *err, size_t errlen) {
    char where[96];
    memset(z, 0, sizeof *z);
    if (read_name(item, z->name, "zone", err, errlen)) return OSP_ZONES_EINVAL;
    snprintf(where, sizeof where, "zone \"%s\"", z->name);
    if (!cJSON_IsObject(item)) return fail(err, errlen, "%s must be an object", where);
    if (known_keys(item, ZONE_KEYS, N(ZONE_KEYS), where, err, errlen)) return OSP_ZONES_EINVAL;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(item, "coordinates");
    if (!c) return fail(err, errlen, "%s has no coordinates", where);
    if (read_coords(c, z->pts, OSP_ZONES_MAX_POINTS, &z->n_pts, where, err, errlen))
        return OSP_ZONES_EINVAL;
    z->inertia = 3;
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(item, "inertia");
    if (in) {
        if (!cJSON_IsNumber(in) || !(in->valuedouble >= 1 && in->valuedouble <= 1000) ||
            in->valuedouble != floor(in->valuedouble))
            return fail(err, errlen, "%s: inertia must be a whole number of frames, 1-1000", where);
        z->inertia = (int)in->valuedouble;
    }
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(item, "loitering_time");
    if (lt) {
        if (!cJSON_IsNumber(lt) || !(lt->valuedouble >= 0 && lt->valuedouble <= 1e7))
            return fail(err, errlen, "%s: loitering_time must be seconds, 0-10000000", where);
        z->loitering_time = lt->valuedouble;
    }
    return read_objects(cJSON_GetObjectItemCaseSensitive(item, "objects"), z->objects,
                        &z->n_objects, where, err, errlen);
}

static int read_line(const cJSON *item, osp_line_def_t *l, char *err, size_t errlen) {
    char where[96];
    osp_zones_pt_t pts[OSP_ZONES_MAX_POINTS];
    int n = 0;
    memset(l, 0, sizeof *l);
    if (read_name(item, l->name, "line", err, errlen)) return OSP_ZONES_EINVAL;
    snprintf(where, sizeof where, "line \"%s\"", l->name);
    if (!cJSON_IsObject(item)) return fail(err, errlen, "%s must be an object", where);
    if (known_keys(item, LINE_KEYS, N(LINE_KEYS), where, err, errlen)) return OSP_ZONES_EINVAL;
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(item, "coordinates");
    if (!c) return fail(err, errlen, "%s has no coordinates", where);
    if (read_coords(c, pts, OSP_ZONES_MAX_POINTS, &n, where, err, errlen)) return OSP_ZONES_EINVAL;
    if (n != 2) return fail(err, errlen, "%s: a line has 2 points, not %d", where, n);
    l->a = pts[0];
    l->b = pts[1];
    return read_objects(cJSON_GetObjectItemCaseSensitive(item, "objects"), l->objects,
                        &l->n_objects, where, err, errlen);
}

static int parse_tree(const cJSON *root, osp_zones_cfg_t *cfg, char *err, size_t errlen) {
    if (!cJSON_IsObject(root))
        return fail(err, errlen, "must be a JSON object with \"zones\" and/or \"lines\"");
    if (known_keys(root, TOP_KEYS, N(TOP_KEYS), "top level", err, errlen)) return OSP_ZONES_EINVAL;
    const cJSON *zs = cJSON_GetObjectItemCaseSensitive(root, "zones");
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "lines");
    if (zs && !cJSON_IsObject(zs))
        return fail(err, errlen, "\"zones\" must be an object of zones by name");
    if (ls && !cJSON_IsObject(ls))
        return fail(err, errlen, "\"lines\" must be an object of lines by name");
    for (const cJSON *z = zs ? zs->child : NULL; z; z = z->next) {
        if (cfg->n_zones == OSP_ZONES_MAX)
            return fail(err, errlen, "more than %d zones", OSP_ZONES_MAX);
        if (read_zone(z, &cfg->zones[cfg->n_zones++], err, errlen)) return OSP_ZONES_EINVAL;
    }
    for (const cJSON *l = ls ? ls->child : NULL; l; l = l->next) {
        if (cfg->n_lines == OSP_ZONES_MAX)
            return fail(err, errlen, "more than %d lines", OSP_ZONES_MAX);
        if (read_line(l, &cfg->lines[cfg->n_lines++], err, errlen)) return OSP_ZONES_EINVAL;
    }
    return osp_zones_cfg_check(cfg, err, errlen);
}

int osp_zones_cfg_parse(const char *text, size_t len, osp_zones_cfg_t *cfg, char *err, size_t errlen) {
    cJSON *root = NULL;
    char jerr[OSP_WIRE_ERRLEN];
    memset(cfg, 0, sizeof *cfg);
    int r = osp_pyjson_parse((const uint8_t *)text, len, &root, jerr, sizeof jerr);
    if (r == OSP_WIRE_ENOMEM) {
        snprintf(err, errlen, "zones file: out of memory");
        return OSP_ZONES_ENOMEM;
    }
    if (r) return fail(err, errlen, "not JSON: %s", jerr);
    r = parse_tree(root, cfg, err, errlen);
    cJSON_Delete(root);
    return r;
}

/* ---- the rules, for a configuration from anywhere ------------------------ */

static int terminated(const char *s, size_t cap) { return memchr(s, '\0', cap) != NULL; }

static int pt_ok(osp_zones_pt_t p) { return p.x >= 0 && p.x <= 1 && p.y >= 0 && p.y <= 1; }

/* o: n names of OSP_ZONES_NAME_MAX bytes each */
static int objects_ok(const char *o, int n) {
    if (n < 0 || n > OSP_ZONES_MAX_OBJECTS) return 0;
    for (int i = 0; i < n; i++, o += OSP_ZONES_NAME_MAX)
        if (!terminated(o, OSP_ZONES_NAME_MAX) || !o[0]) return 0;
    return 1;
}

/* Twice the polygon's signed area (shoelace). */
static double area2(const osp_zones_pt_t *p, int n) {
    double a = 0;
    for (int i = 0; i < n; i++) {
        const osp_zones_pt_t *u = &p[i], *v = &p[(i + 1) % n];
        a += (double)u->x * v->y - (double)v->x * u->y;
    }
    return a;
}

static int check_name(const char *name, const char *kind, char *err, size_t errlen) {
    if (!terminated(name, OSP_ZONES_NAME_MAX))
        return fail(err, errlen, "a %s name is longer than %d bytes", kind, OSP_ZONES_NAME_MAX - 1);
    if (!name_ok(name))
        return fail(err, errlen,
                    "%s name \"%s\" must be letters, digits, '_' and '-' (it is part of MQTT "
                    "topics)",
                    kind, name);
    return 0;
}

int osp_zones_cfg_check(const osp_zones_cfg_t *cfg, char *err, size_t errlen) {
    if (cfg->n_zones < 0 || cfg->n_zones > OSP_ZONES_MAX || cfg->n_lines < 0 ||
        cfg->n_lines > OSP_ZONES_MAX)
        return fail(err, errlen, "at most %d zones and %d lines", OSP_ZONES_MAX, OSP_ZONES_MAX);
    for (int i = 0; i < cfg->n_zones; i++) {
        const osp_zone_def_t *z = &cfg->zones[i];
        if (check_name(z->name, "zone", err, errlen)) return OSP_ZONES_EINVAL;
        if (z->n_pts < 3)
            return fail(err, errlen, "zone \"%s\" has %d points; a zone needs at least 3", z->name,
                        z->n_pts);
        if (z->n_pts > OSP_ZONES_MAX_POINTS)
            return fail(err, errlen, "zone \"%s\": more than %d points", z->name,
                        OSP_ZONES_MAX_POINTS);
        for (int k = 0; k < z->n_pts; k++)
            if (!pt_ok(z->pts[k]))
                return fail(err, errlen, "zone \"%s\": point %d is outside 0-1", z->name, k + 1);
        if (fabs(area2(z->pts, z->n_pts)) < 1e-9)
            return fail(err, errlen, "zone \"%s\" has no area (its points are on one line)", z->name);
        if (z->inertia < 1 || z->inertia > 1000)
            return fail(err, errlen, "zone \"%s\": inertia must be 1-1000", z->name);
        if (!(z->loitering_time >= 0 && z->loitering_time <= 1e7))
            return fail(err, errlen, "zone \"%s\": loitering_time must be 0-10000000", z->name);
        if (!objects_ok(z->objects[0], z->n_objects))
            return fail(err, errlen, "zone \"%s\": bad objects", z->name);
    }
    for (int i = 0; i < cfg->n_lines; i++) {
        const osp_line_def_t *l = &cfg->lines[i];
        if (check_name(l->name, "line", err, errlen)) return OSP_ZONES_EINVAL;
        if (!pt_ok(l->a) || !pt_ok(l->b))
            return fail(err, errlen, "line \"%s\": a point is outside 0-1", l->name);
        if (l->a.x == l->b.x && l->a.y == l->b.y)
            return fail(err, errlen, "line \"%s\" has zero length (its two points are the same)",
                        l->name);
        if (!objects_ok(l->objects[0], l->n_objects))
            return fail(err, errlen, "line \"%s\": bad objects", l->name);
    }
    return 0;
}
