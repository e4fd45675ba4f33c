/*
 * libFuzzer target for what a peer sends /api/events and /api/crossings
 * (src/eventdb/query.c): a query parameter's key and value through
 * osp_eventdb_query_set and osp_eventdb_crossings_set, and an event id of
 * /api/events/ID/snapshot.jpg through osp_eventdb_id_ok.
 * Checks: a parameter taken leaves every name and label whole and within
 * its field, a camera's, a zone's and a line's name of letters, digits,
 * '_' and '-', a crossings query never taking a label or a zone,
 * times finite and in range, the limit from 1 to OSP_EVENTDB_LIMIT_MAX; a
 * refusal says why; an id taken has only digits, '.' and '-' (never a
 * path). Deterministic.
 *
 * Input: [u8 key length][key][value].
 */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "eventdb/eventdb.h"
#include "check.h"

static void name_ok(const char *v) {
    size_t n = strlen(v);
    CHECK(n < 64);
    for (size_t i = 0; i < n; i++)
        CHECK(isalnum((unsigned char)v[i]) || v[i] == '_' || v[i] == '-');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t kl = data[0] < size - 1 ? data[0] : size - 1;
    char *key = cstr(data + 1, kl), *value = cstr(data + 1 + kl, size - 1 - kl);
    osp_eventdb_query_t q;
    osp_eventdb_query_init(&q);
    char err[300] = "";
    if (osp_eventdb_query_set(&q, key, value, err, sizeof err) == 0) {
        name_ok(q.camera);
        name_ok(q.zone);
        CHECK(!q.line[0]);
        CHECK(strlen(q.label) < sizeof q.label);
        CHECK(!q.has_after || (isfinite(q.after) && q.after >= 0 && q.after <= 1e11));
        CHECK(!q.has_before || (isfinite(q.before) && q.before >= 0 && q.before <= 1e11));
        CHECK(q.limit >= 1 && q.limit <= OSP_EVENTDB_LIMIT_MAX);
        /* the value is taken whole, or not at all */
        if (q.camera[0]) CHECK(strcmp(q.camera, value) == 0);
        if (q.label[0]) CHECK(strcmp(q.label, value) == 0);
    } else {
        CHECK(err[0]);
    }
    /* /api/crossings: the same rules, its own keys */
    osp_eventdb_query_init(&q);
    err[0] = '\0';
    if (osp_eventdb_crossings_set(&q, key, value, err, sizeof err) == 0) {
        name_ok(q.camera);
        name_ok(q.line);
        CHECK(!q.label[0] && !q.zone[0]);
        CHECK(!q.has_after || (isfinite(q.after) && q.after >= 0 && q.after <= 1e11));
        CHECK(!q.has_before || (isfinite(q.before) && q.before >= 0 && q.before <= 1e11));
        CHECK(q.limit >= 1 && q.limit <= OSP_EVENTDB_LIMIT_MAX);
        if (q.camera[0]) CHECK(strcmp(q.camera, value) == 0);
        if (q.line[0]) CHECK(strcmp(q.line, value) == 0);
    } else {
        CHECK(err[0]);
    }
    if (osp_eventdb_id_ok(value)) {
        size_t n = strlen(value);
        CHECK(n > 0 && n < OSP_EVENTDB_ID_MAX);
        for (size_t i = 0; i < n; i++)
            CHECK(isdigit((unsigned char)value[i]) || value[i] == '.' || value[i] == '-');
        CHECK(strcmp(value, ".") && strcmp(value, ".."));
    }
    free(key);
    free(value);
    return 0;
}
