/*
 * What a cascade's fields say of an object, for its event records
 * (events.h, osp_event_names_read): the best-scored name a face took from
 * a face library and the best-scored text read, its own or those of the
 * objects found inside it (a detector step's, under any member name).
 * Read back from the JSON members a result carries, so that every caller
 * of a cascade (ospreyd's cameras, osprey detect --track) takes the same
 * from the same fields.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "track/events.h"

/* A string member and its numeric score member of o, when both are there. */
static int pair(const cJSON *o, const char *key, const char *score_key, const char **text,
                float *score) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, score_key);
    if (!cJSON_IsString(s) || !s->valuestring[0] || !cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return 0;
    *text = s->valuestring;
    *score = (float)v->valuedouble;
    return 1;
}

static void take(const cJSON *o, osp_event_names_t *out, int depth) {
    const char *text;
    float score;
    if (pair(o, "name", "nameScore", &text, &score) && strcmp(text, "unknown") != 0 &&
        (!out->name[0] || score > out->name_score)) {
        snprintf(out->name, sizeof out->name, "%s", text);
        out->name_score = score;
    }
    if (pair(o, "text", "textScore", &text, &score) && (!out->plate[0] || score > out->plate_score)) {
        snprintf(out->plate, sizeof out->plate, "%s", text);
        out->plate_score = score;
    }
    /* the objects a detector step found inside it, under "objects" or
     * whatever member the step's "as" named: every list of objects */
    const cJSON *m, *e;
    if (depth < 8)
        cJSON_ArrayForEach(m, o) if (cJSON_IsArray(m))
            cJSON_ArrayForEach(e, m) if (cJSON_IsObject(e)) take(e, out, depth + 1);
}

void osp_event_names_read(const char *members, size_t len, osp_event_names_t *out) {
    memset(out, 0, sizeof *out);
    if (!members || !len) return;
    char *obj = malloc(len + 3);
    if (!obj) return;
    obj[0] = '{';
    memcpy(obj + 1, members, len);
    obj[len + 1] = '}';
    obj[len + 2] = 0;
    cJSON *o = cJSON_ParseWithLength(obj, len + 2);
    free(obj);
    if (cJSON_IsObject(o)) take(o, out, 0);
    cJSON_Delete(o);
}
