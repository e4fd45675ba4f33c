/*
 * What a peer asks the events database (eventdb.h, readers): the query
 * parameters of /api/events and /api/crossings, and an event id of a
 * snapshot's path, each checked here before a reader binds it. Apart from
 * the reader and the writer (eventdb.c) because it is what a peer
 * reaches: fuzzed on its own (tests/fuzz/fuzz_eventdb.c).
 */
#include "eventdb/eventdb.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void osp_eventdb_query_init(osp_eventdb_query_t *q) {
    memset(q, 0, sizeof *q);
    q->limit = OSP_EVENTDB_LIMIT;
}

/* 1-63 letters, digits, '_' or '-': a camera's, a zone's or a line's name. */
static int name_ok(const char *v) {
    size_t n = strlen(v);
    if (n == 0 || n > 63) return 0;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)v[i]) && v[i] != '_' && v[i] != '-') return 0;
    return 1;
}

static int time_of(const char *v, double *out) {
    char *end = NULL;
    if (!*v || strlen(v) > 32 || isspace((unsigned char)*v)) return -1;
    double d = strtod(v, &end);
    if (*end || !isfinite(d) || d < 0 || d > 1e11) return -1;
    *out = d;
    return 0;
}

/* key=value into q, key one of those the page takes (keys, listed in
 * the refusal of any other). */
static int set(osp_eventdb_query_t *q, const char *key, const char *value, const char *const *keys,
               const char *listed, char *err, size_t errlen) {
    const char *v = value ? value : "";
    int known = 0;
    for (int i = 0; keys[i] && !known; i++) known = strcmp(key, keys[i]) == 0;
    if (!known) {
        snprintf(err, errlen, "unknown parameter \"%.32s\": the parameters are %s", key, listed);
        return -1;
    }
    char *name = strcmp(key, "camera") == 0 ? q->camera
                 : strcmp(key, "zone") == 0 ? q->zone
                 : strcmp(key, "line") == 0 ? q->line
                                            : NULL;
    if (name) {
        if (!name_ok(v)) {
            snprintf(err, errlen, "%s must be a name of 1 to 63 letters, digits, '_' or '-'", key);
            return -1;
        }
        snprintf(name, sizeof q->camera, "%s", v);
        return 0;
    }
    if (strcmp(key, "label") == 0) {
        size_t n = strlen(v);
        int ok = n > 0 && n < sizeof q->label;
        for (size_t i = 0; ok && i < n; i++) ok = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f;
        if (!ok) {
            snprintf(err, errlen, "label must be 1 to 63 bytes of text");
            return -1;
        }
        snprintf(q->label, sizeof q->label, "%s", v);
        return 0;
    }
    if (strcmp(key, "after") == 0 || strcmp(key, "before") == 0) {
        double d;
        if (time_of(v, &d)) {
            snprintf(err, errlen,
                     "%s must be a time in seconds since 1970 (a number from 0 to 1e11)", key);
            return -1;
        }
        if (key[0] == 'a') {
            q->after = d;
            q->has_after = 1;
        } else {
            q->before = d;
            q->has_before = 1;
        }
        return 0;
    }
    /* limit */
    size_t n = strlen(v);
    long lim = 0;
    int ok = n > 0 && n <= 4;
    for (size_t i = 0; ok && i < n; i++) ok = isdigit((unsigned char)v[i]);
    if (ok) lim = strtol(v, NULL, 10);
    if (!ok || lim < 1 || lim > OSP_EVENTDB_LIMIT_MAX) {
        snprintf(err, errlen, "limit must be a whole number from 1 to %d", OSP_EVENTDB_LIMIT_MAX);
        return -1;
    }
    q->limit = (int)lim;
    return 0;
}

int osp_eventdb_query_set(osp_eventdb_query_t *q, const char *key, const char *value, char *err,
                          size_t errlen) {
    static const char *const KEYS[] = {"camera", "label", "zone", "after",
                                       "before", "limit", NULL};
    return set(q, key, value, KEYS, "camera, label, zone, after, before and limit", err, errlen);
}

int osp_eventdb_crossings_set(osp_eventdb_query_t *q, const char *key, const char *value,
                              char *err, size_t errlen) {
    static const char *const KEYS[] = {"camera", "line", "after", "before", "limit", NULL};
    return set(q, key, value, KEYS, "camera, line, after, before and limit", err, errlen);
}

int osp_eventdb_id_ok(const char *id) {
    /* osp_events_id: "%.6f-%llu" */
    size_t n = id ? strlen(id) : 0;
    int dots = 0, dashes = 0;
    if (n == 0 || n >= OSP_EVENTDB_ID_MAX || !isdigit((unsigned char)id[0]) ||
        !isdigit((unsigned char)id[n - 1]))
        return 0;
    for (size_t i = 0; i < n; i++) {
        if (id[i] == '.' && !dashes)
            dots++;
        else if (id[i] == '-')
            dashes++;
        else if (!isdigit((unsigned char)id[i]))
            return 0;
    }
    return dots <= 1 && dashes == 1;
}
