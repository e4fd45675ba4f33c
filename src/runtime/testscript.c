/*
 * The test backend's script (docs/test-backend.md), read and checked: the
 * JSON object that says what the model declares and how its load and runs
 * behave. Every key is checked here, once, when the model loads (an
 * unknown or repeated key, a wrong type, a value out of bounds, an output
 * whose shape or source cannot be played), so that testbackend.c plays
 * the script without checks of its own and a typo in a test's script
 * fails the load instead of being ignored. TEST DOUBLE only.
 */
#include "runtime/testscript.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define TB_MAX_SCRIPT (1 << 20) /* bytes of one script */
#define TB_MAX_TENSORS 16       /* what osp_model_predict can take */
#define TB_MAX_VALUES 65536     /* entries of "values" and of "set" */

/* "cannot load model <path>: <reason>", the real backend's wording. */
static int load_fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "cannot load model %s: %s", path, reason);
    return OSP_RT_ELOAD;
}

static osp_dtype_t dtype_from_name(const char *s) {
    static const osp_dtype_t all[] = {OSP_DT_F32, OSP_DT_U8,  OSP_DT_I8,
                                      OSP_DT_I32, OSP_DT_I64, OSP_DT_F16};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(s, osp_dtype_name(all[i])) == 0) return all[i];
    return OSP_DT_UNKNOWN;
}

static int is_int_in(const cJSON *j, double lo, double hi) {
    return cJSON_IsNumber(j) && j->valuedouble == floor(j->valuedouble) && j->valuedouble >= lo &&
           j->valuedouble <= hi;
}

/* Every key of obj must be in `known` (NULL-terminated) and appear once.
 * `where` prefixes the message ("" at the top level). */
static int check_keys(const cJSON *obj, const char *const *known, const char *where,
                      const char *path, char *err, size_t errlen) {
    for (const cJSON *c = obj->child; c; c = c->next) {
        int ok = 0;
        for (int k = 0; known[k] && !ok; k++) ok = strcmp(c->string, known[k]) == 0;
        if (!ok) return load_fail(err, errlen, path, "%sunknown key \"%s\"", where, c->string);
        if (cJSON_GetObjectItemCaseSensitive(obj, c->string) != c)
            return load_fail(err, errlen, path, "%skey \"%s\" appears twice", where, c->string);
    }
    return 0;
}

/* An optional non-negative integer (absent or null: 0). */
static int get_count(const cJSON *obj, const char *key, double max, int64_t *out, const char *path,
                     char *err, size_t errlen) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = 0;
    if (!j || cJSON_IsNull(j)) return 0;
    if (!is_int_in(j, 0, max))
        return load_fail(err, errlen, path, "\"%s\" must be an integer from 0 to %.0f", key, max);
    *out = (int64_t)j->valuedouble;
    return 0;
}

/* An optional non-empty string (absent or null: NULL). */
static int get_string(const cJSON *obj, const char *key, const char **out, const char *path,
                      char *err, size_t errlen) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!j || cJSON_IsNull(j)) return 0;
    if (!cJSON_IsString(j) || !j->valuestring[0])
        return load_fail(err, errlen, path, "\"%s\" must be a non-empty string or null", key);
    *out = j->valuestring;
    return 0;
}

/* A shape: up to OSP_RT_MAX_DIMS integers, each >= -1. */
static int parse_dims(const cJSON *arr, const char *where, int *rank, int64_t *dims,
                      const char *path, char *err, size_t errlen) {
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > OSP_RT_MAX_DIMS)
        return load_fail(err, errlen, path, "%s must be an array of at most %d integers", where,
                         OSP_RT_MAX_DIMS);
    int n = 0;
    for (const cJSON *d = arr->child; d; d = d->next, n++) {
        if (!is_int_in(d, -1, (double)INT32_MAX))
            return load_fail(err, errlen, path, "%s[%d] must be an integer >= -1 (-1 = dynamic)",
                             where, n);
        dims[n] = (int64_t)d->valuedouble;
    }
    *rank = n;
    return 0;
}

static int parse_desc(const cJSON *t, const char *where, osp_tensor_desc_t *d, const char *path,
                      char *err, size_t errlen) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(t, "name");
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(t, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
    if (!cJSON_IsString(name) || !name->valuestring[0] || strlen(name->valuestring) >= sizeof d->name)
        return load_fail(err, errlen, path, "%s.name must be a non-empty string shorter than %zu",
                         where, sizeof d->name);
    snprintf(d->name, sizeof d->name, "%s", name->valuestring);
    d->dtype = cJSON_IsString(dtype) ? dtype_from_name(dtype->valuestring) : OSP_DT_UNKNOWN;
    if (d->dtype == OSP_DT_UNKNOWN)
        return load_fail(err, errlen, path,
                         "%s.dtype must be one of float32, uint8, int8, int32, int64, float16",
                         where);
    char w[64];
    snprintf(w, sizeof w, "%s.shape", where);
    if (!shape) return load_fail(err, errlen, path, "%s is missing", w);
    return parse_dims(shape, w, &d->rank, d->dims, path, err, errlen);
}

static int parse_number_array(const cJSON *arr, const char *where, double **out, int *n,
                              const char *path, char *err, size_t errlen) {
    int len = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (len < 1 || len > TB_MAX_VALUES)
        return load_fail(err, errlen, path, "%s must be an array of 1 to %d numbers", where,
                         TB_MAX_VALUES);
    if (!(*out = malloc((size_t)len * sizeof **out)))
        return load_fail(err, errlen, path, "out of memory");
    int i = 0;
    for (const cJSON *v = arr->child; v; v = v->next, i++) {
        if (!cJSON_IsNumber(v))
            return load_fail(err, errlen, path, "%s[%d] must be a number", where, i);
        (*out)[i] = v->valuedouble;
    }
    *n = len;
    return 0;
}

static int parse_sets(const cJSON *arr, const char *where, int rank, osp_test_output_t *o,
                      const char *path, char *err, size_t errlen) {
    static const char *const keys[] = {"at", "value", NULL};
    int len = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    if (len < 0 || len > TB_MAX_VALUES)
        return load_fail(err, errlen, path, "%s must be an array of at most %d {\"at\",\"value\"}",
                         where, TB_MAX_VALUES);
    if (len == 0) return 0;
    if (!(o->sets = calloc((size_t)len, sizeof *o->sets)))
        return load_fail(err, errlen, path, "out of memory");
    o->n_sets = len;
    int i = 0;
    for (const cJSON *s = arr->child; s; s = s->next, i++) {
        char w[128];
        snprintf(w, sizeof w, "%s[%d]", where, i);
        if (!cJSON_IsObject(s)) return load_fail(err, errlen, path, "%s must be an object", w);
        char wk[136];
        snprintf(wk, sizeof wk, "%s: ", w);
        if (check_keys(s, keys, wk, path, err, errlen)) return OSP_RT_ELOAD;
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(s, "at");
        const cJSON *value = cJSON_GetObjectItemCaseSensitive(s, "value");
        if (!cJSON_IsNumber(value))
            return load_fail(err, errlen, path, "%s.value must be a number", w);
        o->sets[i].value = value->valuedouble;
        if (!cJSON_IsArray(at) || cJSON_GetArraySize(at) != rank)
            return load_fail(err, errlen, path, "%s.at must be an array of %d indices (the rank)",
                             w, rank);
        int j = 0;
        for (const cJSON *a = at->child; a; a = a->next, j++) {
            int64_t dim = o->run_dims[j];
            /* axis 0 may be -1 (every item) or any item when it is the batch */
            double lo = j == 0 ? -1 : 0;
            double hi = dim < 0 ? (double)INT32_MAX : (double)dim - 1;
            if (!is_int_in(a, lo, hi))
                return load_fail(err, errlen, path, "%s.at[%d] must be an integer from %.0f to %.0f%s",
                                 w, j, lo, hi, j == 0 ? " (-1 = every batch item)" : "");
            o->sets[i].at[j] = (int64_t)a->valuedouble;
        }
    }
    return 0;
}

static int parse_output(const cJSON *t, const char *where, osp_rt_model_t *m, int idx,
                        osp_test_output_t *o, const char *path, char *err, size_t errlen) {
    static const char *const keys[] = {"name",   "dtype",      "shape", "run_shape", "fill",
                                       "values", "from_input", "set",   NULL};
    osp_tensor_desc_t *d = &m->outputs[idx];
    char wk[64], w[96];
    snprintf(wk, sizeof wk, "%s: ", where);
    if (check_keys(t, keys, wk, path, err, errlen)) return OSP_RT_ELOAD;
    if (parse_desc(t, where, d, path, err, errlen)) return OSP_RT_ELOAD;
    if (d->dtype == OSP_DT_F16)
        return load_fail(err, errlen, path,
                         "%s.dtype float16: the test backend writes float32, uint8, int8, int32 "
                         "or int64 outputs",
                         where);

    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(t, "run_shape");
    memcpy(o->run_dims, d->dims, sizeof o->run_dims);
    if (rs) {
        int rank = 0;
        snprintf(w, sizeof w, "%s.run_shape", where);
        if (parse_dims(rs, w, &rank, o->run_dims, path, err, errlen)) return OSP_RT_ELOAD;
        if (rank != d->rank)
            return load_fail(err, errlen, path, "%s has %d dims, shape %d", w, rank, d->rank);
        for (int j = 0; j < rank; j++)
            if (d->dims[j] >= 0 && o->run_dims[j] != d->dims[j])
                return load_fail(err, errlen, path, "%s[%d] is %lld but shape declares %lld", w, j,
                                 (long long)o->run_dims[j], (long long)d->dims[j]);
    }
    for (int j = 1; j < d->rank; j++)
        if (o->run_dims[j] < 0)
            return load_fail(err, errlen, path,
                             "%s%s[%d] is dynamic; give \"run_shape\" with its size at run time "
                             "(only axis 0 may be -1, the batch)",
                             where, rs ? ".run_shape" : ".shape", j);

    const cJSON *fill = cJSON_GetObjectItemCaseSensitive(t, "fill");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(t, "values");
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(t, "from_input");
    if (!!fill + !!values + !!from > 1)
        return load_fail(err, errlen, path,
                         "%s: give at most one of \"fill\", \"values\", "
                         "\"from_input\"",
                         where);
    o->source = OSP_TEST_FILL;
    if (fill) {
        if (!cJSON_IsNumber(fill))
            return load_fail(err, errlen, path, "%s.fill must be a number", where);
        o->fill = fill->valuedouble;
    } else if (values) {
        snprintf(w, sizeof w, "%s.values", where);
        if (parse_number_array(values, w, &o->values, &o->n_values, path, err, errlen))
            return OSP_RT_ELOAD;
        o->source = OSP_TEST_VALUES;
    } else if (from) {
        int copy = cJSON_IsString(from) && strcmp(from->valuestring, "copy") == 0;
        if (!copy && (!cJSON_IsString(from) || strcmp(from->valuestring, "mean") != 0))
            return load_fail(err, errlen, path, "%s.from_input must be \"mean\" or \"copy\"", where);
        if (m->n_inputs < 1 || m->inputs[0].dtype == OSP_DT_F16)
            return load_fail(err, errlen, path,
                             "%s.from_input needs a first input of float32 or an integer type",
                             where);
        o->source = copy ? OSP_TEST_FROM_INPUT_COPY : OSP_TEST_FROM_INPUT_MEAN;
        long long in_per = 1, out_per = 1;
        for (int j = 1; copy && j < m->inputs[0].rank; j++)
            in_per = m->inputs[0].dims[j] < 0 ? -1 : in_per * m->inputs[0].dims[j];
        for (int j = 1; copy && j < d->rank; j++) out_per *= o->run_dims[j];
        if (copy && in_per != out_per)
            return load_fail(err, errlen, path,
                             "%s.from_input \"copy\" needs as many values per item as the first "
                             "input declares (%lld), not %lld",
                             where, in_per, out_per);
    }
    const cJSON *sets = cJSON_GetObjectItemCaseSensitive(t, "set");
    if (sets) {
        snprintf(w, sizeof w, "%s.set", where);
        if (parse_sets(sets, w, d->rank, o, path, err, errlen)) return OSP_RT_ELOAD;
    }
    return 0;
}

static int parse_tensors(const cJSON *root, const char *key, osp_rt_model_t *m,
                         osp_test_script_t *sc, const char *path, char *err, size_t errlen) {
    static const char *const in_keys[] = {"name", "dtype", "shape", NULL};
    int is_out = strcmp(key, "outputs") == 0;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    if (n < 0 || n > TB_MAX_TENSORS)
        return load_fail(err, errlen, path, "\"%s\" must be an array of at most %d tensors%s", key,
                         TB_MAX_TENSORS, arr ? "" : " (it is missing)");
    osp_tensor_desc_t *descs = calloc(n ? (size_t)n : 1, sizeof *descs);
    if (!descs) return load_fail(err, errlen, path, "out of memory");
    if (is_out) {
        m->outputs = descs;
        m->n_outputs = n;
        if (!(sc->outs = calloc(n ? (size_t)n : 1, sizeof *sc->outs)))
            return load_fail(err, errlen, path, "out of memory");
    } else {
        m->inputs = descs;
        m->n_inputs = n;
    }
    int i = 0;
    for (const cJSON *t = arr->child; t; t = t->next, i++) {
        char where[48];
        snprintf(where, sizeof where, "%s[%d]", key, i);
        if (!cJSON_IsObject(t)) return load_fail(err, errlen, path, "%s must be an object", where);
        if (is_out) {
            if (parse_output(t, where, m, i, &sc->outs[i], path, err, errlen)) return OSP_RT_ELOAD;
            continue;
        }
        char wk[56];
        snprintf(wk, sizeof wk, "%s: ", where);
        if (check_keys(t, in_keys, wk, path, err, errlen) ||
            parse_desc(t, where, &descs[i], path, err, errlen))
            return OSP_RT_ELOAD;
    }
    return 0;
}

static int parse_script(const cJSON *root, osp_rt_model_t *m, osp_test_script_t *sc,
                        const char *path, char *err, size_t errlen) {
    static const char *const keys[] = {"load_delay_ms",
                                       "load_block_file",
                                       "load_error",
                                       "run_delay_ms",
                                       "run_delay_per_item_ms",
                                       "run_block_file",
                                       "run_error",
                                       "run_error_every",
                                       "counter_file",
                                       "provider",
                                       "inputs",
                                       "outputs",
                                       NULL};
    if (!cJSON_IsObject(root))
        return load_fail(err, errlen, path, "a test-backend script must be a JSON object");
    if (check_keys(root, keys, "", path, err, errlen)) return OSP_RT_ELOAD;
    const char *load_block_file, *load_error, *run_error, *counter_file, *run_block_file, *provider;
    if (get_count(root, "load_delay_ms", OSP_TEST_MAX_MS, &sc->load_delay_ms, path, err, errlen) ||
        get_string(root, "load_block_file", &load_block_file, path, err, errlen) ||
        get_string(root, "load_error", &load_error, path, err, errlen) ||
        get_count(root, "run_delay_ms", OSP_TEST_MAX_MS, &sc->run_delay_ms, path, err, errlen) ||
        get_count(root, "run_delay_per_item_ms", OSP_TEST_MAX_MS, &sc->run_delay_per_item_ms, path,
                  err, errlen) ||
        get_string(root, "run_block_file", &run_block_file, path, err, errlen) ||
        get_string(root, "run_error", &run_error, path, err, errlen) ||
        get_count(root, "run_error_every", (double)INT32_MAX, &sc->run_error_every, path, err, errlen) ||
        get_string(root, "counter_file", &counter_file, path, err, errlen) ||
        get_string(root, "provider", &provider, path, err, errlen))
        return OSP_RT_ELOAD;
    if (provider && strlen(provider) >= sizeof m->provider)
        return load_fail(err, errlen, path, "\"provider\" must be shorter than %zu",
                         sizeof m->provider);
    snprintf(m->provider, sizeof m->provider, "%s", provider ? provider : "test");
    if ((load_block_file && !(sc->load_block_file = strdup(load_block_file))) ||
        (load_error && !(sc->load_error = strdup(load_error))) ||
        (run_error && !(sc->run_error = strdup(run_error))) ||
        (counter_file && !(sc->counter_file = strdup(counter_file))) ||
        (run_block_file && !(sc->run_block_file = strdup(run_block_file))))
        return load_fail(err, errlen, path, "out of memory");
    /* A script for a load that fails may leave the tensors out. */
    if (load_error && !cJSON_GetObjectItemCaseSensitive(root, "inputs") &&
        !cJSON_GetObjectItemCaseSensitive(root, "outputs"))
        return 0;
    if (parse_tensors(root, "inputs", m, sc, path, err, errlen) ||
        parse_tensors(root, "outputs", m, sc, path, err, errlen))
        return OSP_RT_ELOAD;
    return 0;
}

/* Read the whole script; NULL with err set on failure. The caller frees. */
static char *read_script(const char *path, size_t *len, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot load model %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(TB_MAX_SCRIPT + 1);
    size_t n = buf ? fread(buf, 1, TB_MAX_SCRIPT + 1, f) : 0;
    int rd_err = ferror(f);
    fclose(f);
    if (!buf) {
        load_fail(err, errlen, path, "out of memory");
    } else if (rd_err) {
        load_fail(err, errlen, path, "read error");
    } else if (n > TB_MAX_SCRIPT) {
        load_fail(err, errlen, path, "a test-backend script is at most %d bytes", TB_MAX_SCRIPT);
    } else {
        *len = n;
        return buf;
    }
    free(buf);
    return NULL;
}

int osp_test_script_read(const char *path, osp_rt_model_t *m, osp_test_script_t *sc, char *err,
                         size_t errlen) {
    size_t len = 0;
    char *text = read_script(path, &len, err, errlen);
    if (!text) return OSP_RT_ELOAD;
    int rc = OSP_RT_ELOAD;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        load_fail(err, errlen, path, "invalid JSON near byte %td of the test-backend script",
                  end ? end - text : (ptrdiff_t)0);
        goto done;
    }
    while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end < text + len) {
        load_fail(err, errlen, path,
                  "text after the JSON value at byte %td of the test-backend "
                  "script",
                  end - text);
        goto done;
    }
    if (parse_script(root, m, sc, path, err, errlen) == 0) rc = OSP_RT_OK;
done:
    cJSON_Delete(root);
    free(text);
    return rc;
}

void osp_test_script_free(osp_test_script_t *sc, int n_outputs) {
    for (int i = 0; sc->outs && i < n_outputs; i++) {
        free(sc->outs[i].values);
        free(sc->outs[i].sets);
    }
    free(sc->outs);
    free(sc->load_error);
    free(sc->load_block_file);
    free(sc->run_error);
    free(sc->counter_file);
    free(sc->run_block_file);
}
