/*
 * A cascade's configuration (cascade.h): its steps read from a model
 * config's "then" and checked against the catalog. Binding them to the
 * models and face libraries they name is cascade_open.c's, the runs
 * cascade_run.c's; this file needs neither a runtime nor SQLite, so the
 * config fuzzer reaches it alone.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/text.h"
#include "model/cascade_int.h"
#include "post/decoder.h"

/* Every key a step may carry. Unlike a model config's, an unknown one is
 * an error: no host's config predates them. */
static const char *const STEP_KEYS[] = {
    "model", "labels",      "align",          "as",      "maxObjects", "margin",
    "then",  "faceLibrary", "matchThreshold", "pattern", "batch",
};

/* The fields a detection's record has already: a step's "as" may not be one. */
static const char *const RECORD_KEYS[] = {"label", "class",     "score",  "lookScore",
                                          "box",   "landmarks", "trackId"};

/* The cosine at or above which an embedding is taken for a library's
 * name: measured on the photos of the set-up (docs/cascades.md). */
#define MATCH_THRESHOLD_DEF 0.45f

/* The decoders whose detections carry the landmarks osp_align_landmarks reads. */
static int gives_landmarks(const char *postprocessor) {
    return strcmp(postprocessor, "blazeface") == 0 || strcmp(postprocessor, "scrfd") == 0;
}

static void free_steps(osp_step_t *steps, int n) {
    for (int i = 0; steps && i < n; i++) {
        free_steps(steps[i].then, steps[i].n_then);
        if (steps[i].re) regfree(steps[i].re);
        free(steps[i].re);
    }
    free(steps);
}

/* s->pattern compiled into s->re, anchored to the whole text: 0, or -1
 * with the reason in err. A repeat count above 32 is refused: it would
 * make regcomp build a large automaton out of a short pattern. */
static int compile_pattern(osp_step_t *s, char *err, size_t errlen) {
    for (const char *p = s->pattern; *p; p++)
        if (*p == '{')
            for (const char *q = p + 1; *q && *q != '}'; q++)
                if (isdigit((unsigned char)*q) && atoi(q) > 32) {
                    snprintf(err, errlen, "a repeat count is at most 32");
                    return -1;
                }
    char whole[OSP_CASCADE_PATTERN_MAX + 8];
    snprintf(whole, sizeof whole, "^(%s)$", s->pattern);
    if (!(s->re = malloc(sizeof *s->re))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = regcomp(s->re, whole, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char why[128];
        regerror(rc, s->re, why, sizeof why);
        free(s->re);
        s->re = NULL;
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

int osp_cascade_text_fits(const osp_step_t *s, const char *text, size_t len) {
    if (!s->re) return 1;
    char packed[256];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') continue;
        if (text[i] == '\0' || n + 1 >= sizeof packed) return 0; /* no plate is that long */
        packed[n++] = text[i];
    }
    packed[n] = '\0';
    return regexec(s->re, packed, 0, NULL, 0) == 0;
}

void osp_cascade_free(osp_cascade_t *c) {
    if (!c) return;
    if (c->close) c->close(c); /* the models and libraries osp_cascade_open bound */
    free_steps(c->steps, c->n);
    free(c);
}

static int unknown_key(const cJSON *step, const char *where, char *err, size_t errlen) {
    for (const cJSON *k = step->child; k; k = k->next) {
        const char *near = NULL;
        int best = 99, known = 0;
        for (size_t i = 0; i < sizeof STEP_KEYS / sizeof STEP_KEYS[0] && !known; i++) {
            known = strcmp(k->string, STEP_KEYS[i]) == 0;
            int d = osp_text_distance(k->string, STEP_KEYS[i]);
            if (d < best) best = d, near = STEP_KEYS[i];
        }
        if (known) continue;
        if (near && best <= 1 + (int)strlen(near) / 4)
            snprintf(err, errlen, "%s: unknown key \"%.64s\" (did you mean \"%s\"?)", where,
                     k->string, near);
        else
            snprintf(err, errlen,
                     "%s: unknown key \"%.64s\" (a step has %s, %s, %s, %s, %s, %s, "
                     "%s, %s, %s, %s)",
                     where, k->string, STEP_KEYS[0], STEP_KEYS[1], STEP_KEYS[2], STEP_KEYS[3],
                     STEP_KEYS[4], STEP_KEYS[5], STEP_KEYS[6], STEP_KEYS[7], STEP_KEYS[8],
                     STEP_KEYS[9]);
        return -1;
    }
    return 0;
}

/* The models from the first to the step being read: a step may not name one. */
typedef struct {
    const char *names[OSP_CASCADE_DEPTH + 1];
    int n;
    int steps; /* read so far, in the whole cascade */
    int b64;   /* the first model's "embeddingEncoding" is "base64" */
} path_t;

/* A step's KEY, when it is there: a whole number of objects, 1 to
 * OSP_CASCADE_OBJECTS, into *out. */
static int objects_key(const cJSON *step, const char *key, const char *where, int *out, char *err,
                       size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(step, key);
    if (!v) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!(d >= 1 && d <= OSP_CASCADE_OBJECTS) || d != floor(d)) {
        snprintf(err, errlen, "%s: %s is a whole number from 1 to %d", where, key,
                 OSP_CASCADE_OBJECTS);
        return -1;
    }
    *out = (int)d;
    return 0;
}

static int parse_steps(const cJSON *then, const char *before, const char *before_post,
                       path_t *path, osp_step_t **out, int *n_out, char *err, size_t errlen);

static int parse_step(const cJSON *js, const char *before, const char *before_post, path_t *path,
                      osp_step_t *s, char *err, size_t errlen) {
    char where[128];
    snprintf(where, sizeof where, "cascade after %s", before);
    if (!cJSON_IsObject(js)) {
        snprintf(err, errlen, "%s: a step is a JSON object", where);
        return -1;
    }
    if (unknown_key(js, where, err, errlen)) return -1;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(js, "model");
    if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= sizeof s->model) {
        snprintf(err, errlen, "%s: a step names its \"model\" (a catalog name)", where);
        return -1;
    }
    const osp_catalog_entry_t *e = osp_catalog_find(v->valuestring);
    if (!e) {
        char known[512];
        size_t len = 0;
        known[0] = '\0';
        for (int i = 0; i < osp_catalog_count() && len < sizeof known; i++)
            len += (size_t)snprintf(known + len, sizeof known - len, "%s%s", i ? ", " : "",
                                    osp_catalog_at(i)->name);
        snprintf(err, errlen, "%s: model \"%.64s\" is not in the catalog (known: %s)", where,
                 v->valuestring, known);
        return -1;
    }
    snprintf(s->model, sizeof s->model, "%s", e->name);
    snprintf(where, sizeof where, "cascade step %s", s->model);
    for (int i = 0; i < path->n; i++)
        if (strcmp(path->names[i], s->model) == 0) {
            snprintf(err, errlen, "%s: a cycle: %s runs on its own output", where, s->model);
            return -1;
        }
    if (osp_decoder_gives(before_post) != OSP_GIVES_BOXES) {
        snprintf(err, errlen, "%s: %s gives no boxes to crop (only a detector is followed)", where,
                 before);
        return -1;
    }
    s->depth = path->n - 1;
    s->margin = OSP_CASCADE_MARGIN_DEF;
    s->max_objects = OSP_CASCADE_OBJECTS_DEF;
    s->threshold = MATCH_THRESHOLD_DEF;
    s->b64 = path->b64; /* an embedding is written as the model's own would be */

    if ((v = cJSON_GetObjectItemCaseSensitive(js, "labels"))) {
        int n = cJSON_GetArraySize(v);
        if (!cJSON_IsArray(v) || n < 1 || n > OSP_CASCADE_LABELS) {
            snprintf(err, errlen, "%s: labels is an array of 1 to %d labels of %s", where,
                     OSP_CASCADE_LABELS, before);
            return -1;
        }
        for (const cJSON *l = v->child; l; l = l->next) {
            if (!cJSON_IsString(l) || !l->valuestring[0] || strlen(l->valuestring) >= 64) {
                snprintf(err, errlen, "%s: each label is a string of 1 to 63 bytes", where);
                return -1;
            }
            snprintf(s->labels[s->n_labels++], 64, "%s", l->valuestring);
        }
    }
    osp_gives_t fam = osp_decoder_gives(e->postprocessor);
    s->kind = fam == OSP_GIVES_EMBEDDING ? OSP_STEP_EMBEDDING
              : fam == OSP_GIVES_CLASSES ? OSP_STEP_CLASS
              : fam == OSP_GIVES_TEXT    ? OSP_STEP_TEXT
                                         : OSP_STEP_OBJECTS;
    /* a text line is read as it stands; a detector looks at the box and its
     * margin; an embedder or classifier at the square around it */
    s->crop = fam == OSP_GIVES_TEXT    ? OSP_CROP_RECT
              : fam == OSP_GIVES_BOXES ? OSP_CROP_RECT
                                       : OSP_CROP_SQUARE;
    if ((v = cJSON_GetObjectItemCaseSensitive(js, "align"))) {
        if (!cJSON_IsString(v) ||
            (strcmp(v->valuestring, "box") != 0 && strcmp(v->valuestring, "landmarks") != 0)) {
            snprintf(err, errlen, "%s: align is \"box\" or \"landmarks\"", where);
            return -1;
        }
        if (strcmp(v->valuestring, "landmarks") == 0) {
            if (!gives_landmarks(before_post)) {
                snprintf(err, errlen,
                         "%s: align \"landmarks\" needs landmarks, and %s gives none (blazeface "
                         "does; or align \"box\")",
                         where, before);
                return -1;
            }
            if (fam != OSP_GIVES_EMBEDDING && fam != OSP_GIVES_CLASSES) {
                snprintf(err, errlen,
                         "%s: align \"landmarks\" is for a face embedder or classifier", where);
                return -1;
            }
            s->crop = OSP_CROP_LANDMARKS;
        }
    }
    double d;
    if (objects_key(js, "maxObjects", where, &s->max_objects, err, errlen) ||
        objects_key(js, "batch", where, &s->batch, err, errlen))
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(js, "margin"))) {
        d = cJSON_IsNumber(v) ? v->valuedouble : -1;
        if (!(d >= 0 && d <= 2)) {
            snprintf(err, errlen, "%s: margin is a number from 0 to 2", where);
            return -1;
        }
        s->margin = (float)d;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(js, "faceLibrary"))) {
        if (!cJSON_IsString(v) || !v->valuestring[0] || strlen(v->valuestring) >= sizeof s->library) {
            snprintf(err, errlen, "%s: faceLibrary is the path of a face library", where);
            return -1;
        }
        if (fam != OSP_GIVES_EMBEDDING) {
            snprintf(err, errlen, "%s: faceLibrary needs an embedder (face-embed), not %s", where,
                     s->model);
            return -1;
        }
        snprintf(s->library, sizeof s->library, "%s", v->valuestring);
        s->kind = OSP_STEP_NAME;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(js, "matchThreshold"))) {
        d = cJSON_IsNumber(v) ? v->valuedouble : -2;
        if (!(d >= -1 && d <= 1) || !s->library[0]) {
            snprintf(err, errlen, "%s: matchThreshold is a cosine from -1 to 1, with faceLibrary",
                     where);
            return -1;
        }
        s->threshold = (float)d;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(js, "pattern"))) {
        char why[160];
        if (!cJSON_IsString(v) || !v->valuestring[0] ||
            strlen(v->valuestring) > OSP_CASCADE_PATTERN_MAX) {
            snprintf(err, errlen, "%s: pattern is a regular expression of 1 to %d bytes", where,
                     OSP_CASCADE_PATTERN_MAX);
            return -1;
        }
        if (s->kind != OSP_STEP_TEXT) {
            snprintf(err, errlen, "%s: pattern needs a text recognizer (ocr-rec), not %s", where,
                     s->model);
            return -1;
        }
        snprintf(s->pattern, sizeof s->pattern, "%s", v->valuestring);
        if (compile_pattern(s, why, sizeof why)) {
            snprintf(err, errlen, "%s: pattern \"%s\" is not a POSIX extended regular expression: %s",
                     where, s->pattern, why);
            return -1;
        }
    }
    const char *as = s->kind == OSP_STEP_EMBEDDING ? "embedding"
                     : s->kind == OSP_STEP_NAME    ? "name"
                     : s->kind == OSP_STEP_CLASS   ? "subLabel"
                     : s->kind == OSP_STEP_TEXT    ? "text"
                                                   : "objects";
    if ((v = cJSON_GetObjectItemCaseSensitive(js, "as"))) {
        int ok = cJSON_IsString(v) && isalpha((unsigned char)v->valuestring[0]) &&
                 strlen(v->valuestring) < sizeof s->as;
        for (const char *p = ok ? v->valuestring : ""; *p; p++)
            ok = ok && (isalnum((unsigned char)*p) || *p == '_');
        if (!ok) {
            snprintf(err, errlen,
                     "%s: as is a field name (a letter, then letters, digits or _; "
                     "at most 31)",
                     where);
            return -1;
        }
        as = v->valuestring;
    }
    for (size_t i = 0; i < sizeof RECORD_KEYS / sizeof RECORD_KEYS[0]; i++)
        if (strcmp(as, RECORD_KEYS[i]) == 0) {
            snprintf(err, errlen, "%s: as \"%s\" is a field every detection has already", where, as);
            return -1;
        }
    snprintf(s->as, sizeof s->as, "%s", as);
    snprintf(s->score_key, sizeof s->score_key, "%sScore", as);
    if ((v = cJSON_GetObjectItemCaseSensitive(js, "then"))) {
        if (path->n >= OSP_CASCADE_DEPTH) {
            snprintf(err, errlen, "%s: steps nest at most %d deep", where, OSP_CASCADE_DEPTH);
            return -1;
        }
        path->names[path->n++] = s->model;
        int rc = parse_steps(v, s->model, e->postprocessor, path, &s->then, &s->n_then, err, errlen);
        path->n--;
        if (rc) return -1;
    }
    return 0;
}

static int parse_steps(const cJSON *then, const char *before, const char *before_post,
                       path_t *path, osp_step_t **out, int *n_out, char *err, size_t errlen) {
    int n = cJSON_IsArray(then) ? cJSON_GetArraySize(then) : cJSON_IsObject(then) ? 1 : 0;
    if (n < 1) {
        snprintf(err, errlen, "cascade after %s: \"then\" is a step or an array of steps", before);
        return -1;
    }
    if (path->steps + n > OSP_CASCADE_STEPS) {
        snprintf(err, errlen, "cascade: at most %d steps", OSP_CASCADE_STEPS);
        return -1;
    }
    path->steps += n;
    osp_step_t *steps = calloc((size_t)n, sizeof *steps);
    if (!steps) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const cJSON *js = cJSON_IsArray(then) ? then->child : then;
    for (int i = 0; i < n; i++, js = js->next) {
        if (parse_step(js, before, before_post, path, &steps[i], err, errlen)) {
            free_steps(steps, n);
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(steps[j].as, steps[i].as) == 0) {
                snprintf(err, errlen,
                         "cascade after %s: two steps write \"%s\" (give one another \"as\")",
                         before, steps[i].as);
                free_steps(steps, n);
                return -1;
            }
    }
    *out = steps;
    *n_out = n;
    return 0;
}

int osp_cascade_parse(const cJSON *obj, const osp_model_cfg_t *cfg, osp_cascade_t **out, char *err,
                      size_t errlen) {
    *out = NULL;
    const cJSON *then = cJSON_GetObjectItemCaseSensitive(obj, "then");
    if (!then) return OSP_MODEL_OK;
    osp_cascade_t *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    path_t path = {.names = {cfg->name}, .n = 1, .b64 = cfg->embedding_b64};
    if (parse_steps(then, cfg->name, cfg->postprocessor, &path, &c->steps, &c->n, err, errlen)) {
        free(c);
        return OSP_MODEL_EINVAL;
    }
    *out = c;
    return OSP_MODEL_OK;
}

/* steps[0 .. n) copied into *out, unbound; -1 when out of memory. */
static int copy_steps(const osp_step_t *steps, int n, osp_step_t **out) {
    *out = NULL;
    if (n == 0) return 0;
    osp_step_t *c = calloc((size_t)n, sizeof *c);
    if (!c) return -1;
    for (int i = 0; i < n; i++) {
        c[i] = steps[i];
        c[i].m = NULL;
        c[i].faces = NULL;
        c[i].count = NULL;
        c[i].then = NULL;
        c[i].n_then = 0;
        c[i].re = NULL;
        char why[160];
        if ((c[i].pattern[0] && compile_pattern(&c[i], why, sizeof why)) ||
            copy_steps(steps[i].then, steps[i].n_then, &c[i].then)) {
            free_steps(c, i + 1);
            return -1;
        }
        c[i].n_then = steps[i].n_then;
    }
    *out = c;
    return 0;
}

osp_cascade_t *osp_cascade_copy(const osp_cascade_t *c) {
    osp_cascade_t *out = calloc(1, sizeof *out);
    if (!out || copy_steps(c->steps, c->n, &out->steps)) {
        free(out);
        return NULL;
    }
    out->n = c->n;
    return out;
}

static int same_steps(const osp_step_t *a, const osp_step_t *b, int n) {
    for (int i = 0; i < n; i++) {
        const osp_step_t *x = &a[i], *y = &b[i];
        if (strcmp(x->model, y->model) || x->n_labels != y->n_labels || x->crop != y->crop ||
            x->margin != y->margin || x->kind != y->kind || strcmp(x->as, y->as) ||
            x->max_objects != y->max_objects || x->batch != y->batch ||
            strcmp(x->library, y->library) || x->threshold != y->threshold || x->b64 != y->b64 ||
            x->n_then != y->n_then || strcmp(x->pattern, y->pattern))
            return 0;
        for (int k = 0; k < x->n_labels; k++)
            if (strcmp(x->labels[k], y->labels[k])) return 0;
        if (!same_steps(x->then, y->then, x->n_then)) return 0;
    }
    return 1;
}

int osp_cascade_same(const osp_cascade_t *a, const osp_cascade_t *b) {
    if (!a || !b) return !a && !b;
    return a->n == b->n && same_steps(a->steps, b->steps, a->n);
}

static int each_library(osp_step_t *steps, int n, int (*fn)(void *, char *, size_t), void *arg) {
    for (int i = 0; i < n; i++) {
        int rc = steps[i].library[0] ? fn(arg, steps[i].library, sizeof steps[i].library) : 0;
        if (!rc) rc = each_library(steps[i].then, steps[i].n_then, fn, arg);
        if (rc) return rc;
    }
    return 0;
}

int osp_cascade_each_library(osp_cascade_t *c, int (*fn)(void *arg, char *path, size_t cap),
                             void *arg) {
    return each_library(c->steps, c->n, fn, arg);
}

static void counts(const osp_step_t *steps, int n, osp_cascade_count_t *out, int cap, int *at) {
    for (int i = 0; i < n; i++) {
        if (*at < cap) {
            const osp_step_t *s = &steps[i];
            out[*at] = (osp_cascade_count_t){
                .model = s->model,
                .depth = s->depth,
                .runs = s->count ? atomic_load_explicit(&s->count->runs, memory_order_relaxed) : 0,
                .skipped = s->count ? atomic_load_explicit(&s->count->skipped, memory_order_relaxed)
                                    : 0};
        }
        (*at)++;
        counts(steps[i].then, steps[i].n_then, out, cap, at);
    }
}

int osp_cascade_counts(const osp_cascade_t *c, osp_cascade_count_t *out, int cap) {
    int at = 0;
    counts(c->steps, c->n, out, cap, &at);
    return at;
}

int osp_cascade_simple(const osp_model_cfg_t *cfg, const char *model, const char *library,
                       osp_cascade_t **out, char *err, size_t errlen) {
    cJSON *obj = cJSON_CreateObject(), *step = cJSON_CreateObject();
    int rc = OSP_MODEL_ENOMEM;
    if (obj && step) {
        cJSON_AddItemToObject(obj, "then", step);
        cJSON_AddStringToObject(step, "model", model);
        if (gives_landmarks(cfg->postprocessor) && osp_catalog_find(model) &&
            osp_decoder_gives(osp_catalog_find(model)->postprocessor) == OSP_GIVES_EMBEDDING)
            cJSON_AddStringToObject(step, "align", "landmarks");
        if (library) {
            /* names are for faces: a detector of other things is a mistake
             * osp_cascade_open names, not a chair called "unknown" */
            const char *face[] = {"face"};
            cJSON_AddItemToObject(step, "labels", cJSON_CreateStringArray(face, 1));
            cJSON_AddStringToObject(step, "faceLibrary", library);
        }
        rc = osp_cascade_parse(obj, cfg, out, err, errlen);
    } else {
        cJSON_Delete(step);
        snprintf(err, errlen, "out of memory");
    }
    cJSON_Delete(obj);
    return rc;
}
