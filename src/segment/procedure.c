/* procedure: see procedure.h; the rules are documented in docs/segment.md. */
#define _POSIX_C_SOURCE 200809L
#include "segment/procedure.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 64
#define MAX_KEYS 16

typedef struct {
    char *id, *name;
    char *keys[MAX_KEYS]; /* lower-case: id, name, aliases */
    int n_keys;
} step_t;

struct osp_proc {
    osp_proc_thresholds_t t;
    step_t steps[MAX_STEPS];
    int n;
    /* The open cycle. */
    bool open;
    int last;     /* the furthest step reached in order, -1 before any */
    int in_order; /* steps reached in order */
    bool seen[MAX_STEPS];
    /* The stream so far. */
    long checks;
    int cycles, completed;
    cJSON *completions; /* per closed cycle */
    cJSON *missing;     /* per closed cycle: ids never seen */
    cJSON *violations;  /* every violation, with its chunk */
};

void osp_proc_thresholds_default(osp_proc_thresholds_t *t) {
    *t = (osp_proc_thresholds_t){.complete = 0.6, .noise = 0.3, .late_start = 0.8};
}

static char *lower_dup(const char *s) {
    char *d = strdup(s);
    if (d)
        for (char *p = d; *p; p++) *p = (char)tolower((unsigned char)*p);
    return d;
}

void osp_proc_free(osp_proc_t *p) {
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        free(p->steps[i].id);
        free(p->steps[i].name);
        for (int k = 0; k < p->steps[i].n_keys; k++) free(p->steps[i].keys[k]);
    }
    cJSON_Delete(p->completions);
    cJSON_Delete(p->missing);
    cJSON_Delete(p->violations);
    free(p);
}

static int add_key(step_t *s, const char *k) {
    if (!k || !k[0] || s->n_keys >= MAX_KEYS) return 0;
    if (!(s->keys[s->n_keys] = lower_dup(k))) return -1;
    s->n_keys++;
    return 0;
}

int osp_proc_parse(const char *json, const osp_proc_thresholds_t *t, osp_proc_t **out, char *err,
                   size_t errlen) {
    *out = NULL;
    osp_proc_t *p = calloc(1, sizeof(*p));
    cJSON *root = cJSON_Parse(json);
    if (!p) goto oom;
    if (t)
        p->t = *t;
    else
        osp_proc_thresholds_default(&p->t);
    if (!root) {
        snprintf(err, errlen, "the procedure is not valid JSON");
        goto fail;
    }
    cJSON *steps = cJSON_IsArray(root) ? root : cJSON_GetObjectItemCaseSensitive(root, "steps");
    if (!cJSON_IsArray(steps) || cJSON_GetArraySize(steps) < 1) {
        snprintf(err, errlen, "the procedure has no \"steps\" array");
        goto fail;
    }
    if (cJSON_GetArraySize(steps) > MAX_STEPS) {
        snprintf(err, errlen, "the procedure has more than %d steps", MAX_STEPS);
        goto fail;
    }
    cJSON *it;
    cJSON_ArrayForEach(it, steps) {
        step_t *s = &p->steps[p->n];
        cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "name");
        char idbuf[32];
        const char *ids = cJSON_IsString(id) ? id->valuestring : NULL;
        if (cJSON_IsNumber(id)) {
            snprintf(idbuf, sizeof idbuf, "%d", id->valueint);
            ids = idbuf;
        }
        if (!ids || !cJSON_IsString(name) || !name->valuestring[0]) {
            snprintf(err, errlen, "procedure step %d needs an \"id\" and a \"name\"", p->n + 1);
            goto fail;
        }
        p->n++;
        if (!(s->id = strdup(ids)) || !(s->name = strdup(name->valuestring))) goto oom;
        /* A numeric id would match any number in a description: only
         * textual ids are keys. */
        if (!cJSON_IsNumber(id) && add_key(s, ids)) goto oom;
        if (add_key(s, name->valuestring)) goto oom;
        cJSON *al = cJSON_GetObjectItemCaseSensitive(it, "aliases");
        cJSON *a;
        cJSON_ArrayForEach(a, al) {
            if (cJSON_IsString(a) && add_key(s, a->valuestring)) goto oom;
        }
    }
    p->last = -1;
    p->completions = cJSON_CreateArray();
    p->missing = cJSON_CreateArray();
    p->violations = cJSON_CreateArray();
    if (!p->completions || !p->missing || !p->violations) goto oom;
    cJSON_Delete(root);
    *out = p;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    cJSON_Delete(root);
    osp_proc_free(p);
    return -1;
}

int osp_proc_load(const char *path, const osp_proc_thresholds_t *t, osp_proc_t **out, char *err,
                  size_t errlen) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s", path);
        return -1;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = cap <= (1u << 24) ? realloc(buf, cap) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                snprintf(err, errlen, "%s is too large", path);
                return -1;
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, 4096, f);
        len += r;
        if (r < 4096) break;
    }
    fclose(f);
    buf[len] = 0;
    int rc = osp_proc_parse(buf, t, out, err, errlen);
    free(buf);
    return rc;
}

static bool word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

int osp_proc_match(const osp_proc_t *p, const char *description) {
    if (!description || !description[0]) return -1;
    char *d = lower_dup(description);
    if (!d) return -1;
    int best = -1;
    long best_pos = 0;
    size_t best_len = 0;
    for (int i = 0; i < p->n; i++) {
        for (int k = 0; k < p->steps[i].n_keys; k++) {
            const char *key = p->steps[i].keys[k];
            size_t kl = strlen(key);
            for (const char *h = strstr(d, key); h; h = strstr(h + 1, key)) {
                bool left = h == d || !word_char(h[-1]);
                bool right = !word_char(h[kl]);
                if (!left || !right) continue;
                long pos = h - d;
                /* The step named first wins; at the same place, the longer name. */
                if (best < 0 || pos < best_pos || (pos == best_pos && kl > best_len)) {
                    best = i;
                    best_pos = pos;
                    best_len = kl;
                }
                break;
            }
        }
    }
    free(d);
    return best;
}

static double completion(const osp_proc_t *p) { return (double)p->in_order / p->n; }

static void start_cycle(osp_proc_t *p) {
    p->open = true;
    p->last = -1;
    p->in_order = 0;
    memset(p->seen, 0, sizeof p->seen);
    p->cycles++;
}

/* Close the open cycle; returns its record (owned by the caller) or NULL. */
static cJSON *close_cycle(osp_proc_t *p) {
    if (!p->open) return NULL;
    double c = completion(p);
    bool complete = c >= p->t.complete;
    if (complete) p->completed++;
    cJSON *miss = cJSON_CreateArray();
    for (int i = 0; i < p->n; i++)
        if (!p->seen[i]) cJSON_AddItemToArray(miss, cJSON_CreateString(p->steps[i].id));
    cJSON_AddItemToArray(p->completions, cJSON_CreateNumber(c));
    cJSON_AddItemToArray(p->missing, cJSON_Duplicate(miss, 1));
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddNumberToObject(rec, "cycle", p->cycles);
    cJSON_AddNumberToObject(rec, "completion", c);
    cJSON_AddBoolToObject(rec, "complete", complete);
    cJSON_AddItemToObject(rec, "missing_steps", miss);
    p->open = false;
    return rec;
}

static void violation(osp_proc_t *p, cJSON *list, const char *type, int step, int skip_from,
                      int skip_to) {
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "type", type);
    if (step >= 0) cJSON_AddStringToObject(v, "step", p->steps[step].id);
    if (skip_from >= 0) {
        cJSON *st = cJSON_AddArrayToObject(v, "steps");
        for (int i = skip_from; i < skip_to; i++)
            cJSON_AddItemToArray(st, cJSON_CreateString(p->steps[i].id));
    }
    cJSON *copy = cJSON_Duplicate(v, 1);
    cJSON_AddNumberToObject(copy, "chunk", (double)p->checks);
    cJSON_AddNumberToObject(copy, "cycle", p->cycles);
    cJSON_AddItemToArray(p->violations, copy);
    cJSON_AddItemToArray(list, v);
}

/* Step s reached in order (after p->last): the steps between are skipped. */
static void advance(osp_proc_t *p, int s, cJSON *vio) {
    if (s > p->last + 1) violation(p, vio, "skipped", -1, p->last + 1, s);
    p->last = s;
    p->seen[s] = true;
    p->in_order++;
}

static cJSON *step_or_null(const osp_proc_t *p, int i) {
    return i >= 0 ? cJSON_CreateString(p->steps[i].id) : cJSON_CreateNull();
}

static int expected(const osp_proc_t *p) {
    if (!p->open || p->last + 1 >= p->n) return 0;
    return p->last + 1;
}

cJSON *osp_proc_check(osp_proc_t *p, const char *description) {
    cJSON *r = cJSON_CreateObject();
    if (!r) return NULL;
    int s = osp_proc_match(p, description);
    cJSON_AddItemToObject(r, "matched_step", step_or_null(p, s));
    cJSON_AddItemToObject(r, "matched_name",
                          s >= 0 ? cJSON_CreateString(p->steps[s].name) : cJSON_CreateNull());
    cJSON_AddItemToObject(r, "expected_step", step_or_null(p, expected(p)));
    cJSON *vio = cJSON_AddArrayToObject(r, "violations");
    cJSON *closed = NULL;
    bool noise = false;
    if (s >= 0) {
        if (!p->open) {
            start_cycle(p);
            advance(p, s, vio);
        } else if (s > p->last) {
            advance(p, s, vio);
        } else if (s < p->last) {
            double c = completion(p);
            bool closes = (s == 0 && c >= p->t.noise) || c >= p->t.late_start;
            if (closes) {
                closed = close_cycle(p);
                start_cycle(p);
                advance(p, s, vio);
            } else {
                noise = s == 0;
                violation(p, vio, p->seen[s] ? "repeated" : "out_of_order", s, -1, -1);
                p->seen[s] = true;
            }
        }
        /* s == p->last: the same step continues into this chunk. */
    }
    cJSON_AddItemToObject(r, "next_expected", step_or_null(p, p->open ? expected(p) : 0));
    cJSON_AddNumberToObject(r, "cycle", p->cycles);
    cJSON_AddNumberToObject(r, "completion", p->open ? completion(p) : 0.0);
    if (noise) cJSON_AddBoolToObject(r, "noise", true);
    if (closed) cJSON_AddItemToObject(r, "cycle_closed", closed);
    p->checks++;
    return r;
}

cJSON *osp_proc_summary(osp_proc_t *p) {
    cJSON_Delete(close_cycle(p));
    cJSON *r = cJSON_CreateObject();
    if (!r) return NULL;
    cJSON_AddNumberToObject(r, "cycles", p->cycles);
    cJSON_AddNumberToObject(r, "completed", p->completed);
    cJSON_AddItemToObject(r, "cycle_completion", cJSON_Duplicate(p->completions, 1));
    cJSON_AddItemToObject(r, "missing_steps", cJSON_Duplicate(p->missing, 1));
    cJSON_AddItemToObject(r, "violations", cJSON_Duplicate(p->violations, 1));
    cJSON_AddNumberToObject(r, "violation_count", cJSON_GetArraySize(p->violations));
    return r;
}
