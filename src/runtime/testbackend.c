/*
 * The test backend: a TEST DOUBLE, never for production. Its "model file" is
 * a small JSON script (docs/test-backend.md) that says what the model
 * declares and how load and run behave: how long they take, whether they
 * fail, what the outputs hold. It exists so that the server's fault paths
 * (a load that hangs past its bound, a failed load, a slow or failing run)
 * can be reproduced on any machine, and so that tests can count the runs
 * and batch sizes the model really saw.
 *
 * A hung load is abandoned by the server, never killed: load only sleeps
 * and then returns normally, touching nothing but its own allocations.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define TB_MAX_SCRIPT (1 << 20)        /* bytes of one script */
#define TB_MAX_TENSORS 16              /* what osp_model_predict can take */
#define TB_MAX_MS 2147483647.0         /* any delay, in ms (~24.8 days) */
#define TB_MAX_ELEMS ((size_t)1 << 28) /* elements of one output at run time */
#define TB_MAX_VALUES 65536            /* entries of "values" and of "set" */
#define TB_BLOCK_POLL_MS 10            /* how often a blocked load or run looks for its file */

typedef enum { TB_FILL, TB_VALUES, TB_FROM_INPUT_MEAN, TB_FROM_INPUT_COPY } tb_source_t;

typedef struct {
    int64_t at[OSP_RT_MAX_DIMS]; /* at[0] == -1: every batch item */
    double value;
} tb_set_t;

/* How one output is produced. */
typedef struct {
    int64_t run_dims[OSP_RT_MAX_DIMS]; /* at run time; run_dims[0] == -1 is the batch */
    tb_source_t source;
    double fill;
    double *values; /* n_values, repeated over each batch item */
    int n_values;
    tb_set_t *sets; /* applied after the source, in order */
    int n_sets;
} tb_output_t;

typedef struct {
    int64_t run_delay_ms, run_delay_per_item_ms, run_error_every;
    char *run_error;      /* NULL: no scripted message */
    char *counter_file;   /* NULL: none */
    char *run_block_file; /* NULL: none */
    tb_output_t *outs;    /* parallel to m->outputs */
    /* lock guards runs and the batch log; it is held only to count, never
     * across a sleep, the counter-file write or the output fill. */
    pthread_mutex_t lock;
    int64_t runs;
    int *log; /* batch size of each run, in the order runs started */
    int n_log, cap_log;
} tb_model_t;

/* What only load needs. */
typedef struct {
    int64_t load_delay_ms;
    const char *load_error, *load_block_file; /* point into the cJSON tree */
} tb_load_t;

static void tb_free(osp_rt_model_t *m);

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

static void sleep_ms(int64_t ms) {
    if (ms <= 0) return;
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
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

static int parse_sets(const cJSON *arr, const char *where, int rank, tb_output_t *o,
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
                        tb_output_t *o, const char *path, char *err, size_t errlen) {
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
    o->source = TB_FILL;
    if (fill) {
        if (!cJSON_IsNumber(fill))
            return load_fail(err, errlen, path, "%s.fill must be a number", where);
        o->fill = fill->valuedouble;
    } else if (values) {
        snprintf(w, sizeof w, "%s.values", where);
        if (parse_number_array(values, w, &o->values, &o->n_values, path, err, errlen))
            return OSP_RT_ELOAD;
        o->source = TB_VALUES;
    } else if (from) {
        int copy = cJSON_IsString(from) && strcmp(from->valuestring, "copy") == 0;
        if (!copy && (!cJSON_IsString(from) || strcmp(from->valuestring, "mean") != 0))
            return load_fail(err, errlen, path, "%s.from_input must be \"mean\" or \"copy\"", where);
        if (m->n_inputs < 1 || m->inputs[0].dtype == OSP_DT_F16)
            return load_fail(err, errlen, path,
                             "%s.from_input needs a first input of float32 or an integer type",
                             where);
        o->source = copy ? TB_FROM_INPUT_COPY : TB_FROM_INPUT_MEAN;
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

static int parse_tensors(const cJSON *root, const char *key, osp_rt_model_t *m, tb_model_t *tm,
                         const char *path, char *err, size_t errlen) {
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
        if (!(tm->outs = calloc(n ? (size_t)n : 1, sizeof *tm->outs)))
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
            if (parse_output(t, where, m, i, &tm->outs[i], path, err, errlen)) return OSP_RT_ELOAD;
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

static int parse_script(const cJSON *root, osp_rt_model_t *m, tb_model_t *tm, tb_load_t *ld,
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
    const char *run_error, *counter_file, *run_block_file, *provider;
    if (get_count(root, "load_delay_ms", TB_MAX_MS, &ld->load_delay_ms, path, err, errlen) ||
        get_string(root, "load_block_file", &ld->load_block_file, path, err, errlen) ||
        get_string(root, "load_error", &ld->load_error, path, err, errlen) ||
        get_count(root, "run_delay_ms", TB_MAX_MS, &tm->run_delay_ms, path, err, errlen) ||
        get_count(root, "run_delay_per_item_ms", TB_MAX_MS, &tm->run_delay_per_item_ms, path, err,
                  errlen) ||
        get_string(root, "run_block_file", &run_block_file, path, err, errlen) ||
        get_string(root, "run_error", &run_error, path, err, errlen) ||
        get_count(root, "run_error_every", (double)INT32_MAX, &tm->run_error_every, path, err, errlen) ||
        get_string(root, "counter_file", &counter_file, path, err, errlen) ||
        get_string(root, "provider", &provider, path, err, errlen))
        return OSP_RT_ELOAD;
    if (provider && strlen(provider) >= sizeof m->provider)
        return load_fail(err, errlen, path, "\"provider\" must be shorter than %zu",
                         sizeof m->provider);
    snprintf(m->provider, sizeof m->provider, "%s", provider ? provider : "test");
    if ((run_error && !(tm->run_error = strdup(run_error))) ||
        (counter_file && !(tm->counter_file = strdup(counter_file))) ||
        (run_block_file && !(tm->run_block_file = strdup(run_block_file))))
        return load_fail(err, errlen, path, "out of memory");
    /* A script for a load that fails may leave the tensors out. */
    if (ld->load_error && !cJSON_GetObjectItemCaseSensitive(root, "inputs") &&
        !cJSON_GetObjectItemCaseSensitive(root, "outputs"))
        return 0;
    if (parse_tensors(root, "inputs", m, tm, path, err, errlen) ||
        parse_tensors(root, "outputs", m, tm, path, err, errlen))
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

static int tb_load(const char *path, const osp_rt_opts_t *opts, osp_rt_model_t **out, char *err,
                   size_t errlen) {
    (void)opts; /* device, threads and graph level mean nothing to a script */
    *out = NULL;
    size_t len = 0;
    char *text = read_script(path, &len, err, errlen);
    if (!text) return OSP_RT_ELOAD;

    int rc = OSP_RT_ELOAD;
    cJSON *root = NULL;
    tb_load_t ld = {0};
    osp_rt_model_t *m = calloc(1, sizeof *m);
    tb_model_t *tm = calloc(1, sizeof *tm);
    if (!m || !tm) {
        free(m);
        free(tm);
        load_fail(err, errlen, path, "out of memory");
        rc = OSP_RT_ENOMEM;
        goto cleanup;
    }
    m->backend = &osp_backend_test;
    m->impl = tm;
    pthread_mutex_init(&tm->lock, NULL);

    const char *end = NULL;
    root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        load_fail(err, errlen, path, "invalid JSON near byte %td of the test-backend script",
                  end ? end - text : (ptrdiff_t)0);
        goto fail;
    }
    while (end < text + len && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
        end++;
    if (end < text + len) {
        load_fail(err, errlen, path,
                  "text after the JSON value at byte %td of the test-backend "
                  "script",
                  end - text);
        goto fail;
    }
    if (parse_script(root, m, tm, &ld, path, err, errlen)) goto fail;

    /* The scripted behaviour: a slow compile, then perhaps a hang until the
     * test releases it, then perhaps a failure. */
    sleep_ms(ld.load_delay_ms);
    if (ld.load_block_file)
        while (access(ld.load_block_file, F_OK) != 0) sleep_ms(TB_BLOCK_POLL_MS);
    if (ld.load_error) {
        load_fail(err, errlen, path, "%s", ld.load_error);
        goto fail;
    }
    *out = m;
    m = NULL;
    rc = OSP_RT_OK;
fail:
    tb_free(m);
cleanup:
    cJSON_Delete(root);
    free(text);
    return rc;
}

/* Elements of dims; 0 when any is negative or the count passes the cap. */
static size_t count_capped(const int64_t *dims, int rank) {
    size_t n = osp_dims_count(dims, rank);
    return n > TB_MAX_ELEMS ? 0 : n;
}

static double load_elem(osp_dtype_t t, const void *p, size_t i) {
    switch (t) {
    case OSP_DT_F32: return ((const float *)p)[i];
    case OSP_DT_U8: return ((const uint8_t *)p)[i];
    case OSP_DT_I8: return ((const int8_t *)p)[i];
    case OSP_DT_I32: return ((const int32_t *)p)[i];
    case OSP_DT_I64: return (double)((const int64_t *)p)[i];
    default: return 0;
    }
}

/* Integer outputs are clamped to their type: an out-of-range conversion
 * would be undefined. */
static double clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

static void store_elem(osp_dtype_t t, void *p, size_t i, double v) {
    switch (t) {
    case OSP_DT_F32: ((float *)p)[i] = (float)v; break;
    case OSP_DT_U8: ((uint8_t *)p)[i] = (uint8_t)clamp(v, 0, 255); break;
    case OSP_DT_I8: ((int8_t *)p)[i] = (int8_t)clamp(v, -128, 127); break;
    case OSP_DT_I32: ((int32_t *)p)[i] = (int32_t)clamp(v, INT32_MIN, INT32_MAX); break;
    case OSP_DT_I64:
        /* 2^63 is the first double past INT64_MAX */
        ((int64_t *)p)[i] = v >= 9223372036854775808.0   ? INT64_MAX
                            : v < -9223372036854775808.0 ? INT64_MIN
                                                         : (int64_t)v;
        break;
    default: break;
    }
}

static double input_item_mean(const osp_tensor_t *in, int64_t item) {
    int64_t items = in->rank > 0 ? in->dims[0] : 1;
    size_t n = osp_dims_count(in->dims, in->rank) / (size_t)items;
    size_t base = (size_t)(item % items) * n;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += load_elem(in->dtype, in->data, base + i);
    return n ? sum / (double)n : 0;
}

static void fill_output(const tb_output_t *o, const osp_tensor_t *in0, osp_tensor_t *t) {
    size_t count = osp_dims_count(t->dims, t->rank);
    int64_t items = t->rank > 0 ? t->dims[0] : 1;
    if (count == 0 || items <= 0) return;
    size_t per = count / (size_t)items;
    int64_t in_items = in0 && in0->rank > 0 ? in0->dims[0] : 1;
    for (int64_t b = 0; b < items; b++) {
        size_t base = (size_t)b * per;
        if (o->source == TB_FROM_INPUT_COPY) { /* per equals the input's, checked at load */
            size_t from = (size_t)(b % in_items) * per;
            for (size_t i = 0; i < per; i++)
                store_elem(t->dtype, t->data, base + i, load_elem(in0->dtype, in0->data, from + i));
            continue;
        }
        double v = o->source == TB_FROM_INPUT_MEAN ? input_item_mean(in0, b) : o->fill;
        for (size_t i = 0; i < per; i++)
            store_elem(t->dtype, t->data, base + i,
                       o->source == TB_VALUES ? o->values[i % (size_t)o->n_values] : v);
    }
    for (int s = 0; s < o->n_sets; s++) {
        const tb_set_t *st = &o->sets[s];
        size_t off = 0, stride = 1;
        for (int j = t->rank - 1; j >= 1; j--) {
            off += (size_t)st->at[j] * stride;
            stride *= (size_t)t->dims[j];
        }
        for (int64_t b = 0; b < items; b++)
            if (t->rank == 0 || st->at[0] < 0 || st->at[0] == b)
                store_elem(t->dtype, t->data, (size_t)b * per + off, st->value);
    }
}

static void fmt_dims(char *buf, size_t n, const int64_t *dims, int rank) {
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int j = 0; j < rank && j < OSP_RT_MAX_DIMS && len < n; j++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", j ? "," : "", (long long)dims[j]);
    if (len < n) snprintf(buf + len, n - len, "]");
}

static int check_inputs(const osp_rt_model_t *m, const osp_tensor_t *in, int64_t *batch, char *err,
                        size_t errlen) {
    *batch = 1;
    for (int i = 0; i < m->n_inputs; i++) {
        const osp_tensor_desc_t *d = &m->inputs[i];
        const osp_tensor_t *t = &in[i];
        int shape_ok = t->rank == d->rank && t->dtype == d->dtype;
        for (int j = 0; shape_ok && j < d->rank; j++)
            shape_ok = t->dims[j] >= 0 && (d->dims[j] < 0 || t->dims[j] == d->dims[j]);
        if (!shape_ok) {
            char got[160], want[160];
            fmt_dims(got, sizeof got, t->dims, t->rank);
            fmt_dims(want, sizeof want, d->dims, d->rank);
            snprintf(err, errlen, "input %s: got %s %s, the model declares %s %s", d->name,
                     osp_dtype_name(t->dtype), got, osp_dtype_name(d->dtype), want);
            return OSP_RT_EINVAL;
        }
        size_t need = osp_dims_count(t->dims, t->rank) * osp_dtype_size(t->dtype);
        if (!t->data || need == 0 || t->bytes < need) {
            snprintf(err, errlen, "input %s: %zu bytes given, %zu needed", d->name, t->bytes, need);
            return OSP_RT_EINVAL;
        }
        if (i == 0 && t->rank > 0) *batch = t->dims[0];
    }
    return 0;
}

/* Shapes of this run's outputs into out[i] (dtype, rank, dims, bytes). */
static int shape_outputs(const osp_rt_model_t *m, const tb_model_t *tm, int64_t batch,
                         osp_tensor_t *out, char *err, size_t errlen) {
    for (int i = 0; i < m->n_outputs; i++) {
        const osp_tensor_desc_t *d = &m->outputs[i];
        int64_t dims[OSP_RT_MAX_DIMS];
        memcpy(dims, tm->outs[i].run_dims, sizeof dims);
        if (d->rank > 0 && dims[0] < 0) dims[0] = batch;
        size_t n = count_capped(dims, d->rank);
        if (n == 0 && osp_dims_count(dims, d->rank) != 0) {
            snprintf(err, errlen, "output %s would have more than %zu elements", d->name,
                     TB_MAX_ELEMS);
            return OSP_RT_EINVAL;
        }
        size_t bytes = n * osp_dtype_size(d->dtype);
        if (out[i].data && out[i].bytes < bytes) { /* the caller's buffer */
            snprintf(err, errlen, "output %s: %zu bytes given, %zu needed", d->name, out[i].bytes,
                     bytes);
            return OSP_RT_EINVAL;
        }
        out[i].dtype = d->dtype;
        out[i].rank = d->rank;
        memcpy(out[i].dims, dims, sizeof dims);
        out[i].bytes = bytes;
    }
    return 0;
}

static void release(osp_rt_model_t *m, osp_tensor_t *out) {
    for (int i = 0; i < m->n_outputs; i++) {
        if (out[i].impl) {
            free(out[i].impl);
            out[i].impl = NULL;
            out[i].data = NULL;
        }
    }
}

/* One line "<batch>\n", appended with a single write: O_APPEND keeps the
 * lines of concurrent runs (and processes) whole. */
static int append_counter(const char *file, int64_t batch, char *err, size_t errlen) {
    char line[32];
    int n = snprintf(line, sizeof line, "%lld\n", (long long)batch);
    int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    ssize_t w = fd >= 0 ? write(fd, line, (size_t)n) : -1;
    int e = errno;
    if (fd >= 0) close(fd);
    if (w != n) {
        snprintf(err, errlen, "test backend: cannot append to counter_file %s: %s", file,
                 w < 0 ? strerror(e) : "short write");
        return OSP_RT_ERUN;
    }
    return 0;
}

static int tb_run(osp_rt_model_t *m, const osp_tensor_t *in, osp_tensor_t *out, char *err,
                  size_t errlen) {
    tb_model_t *tm = m->impl;
    int64_t batch;
    int rc;
    if ((rc = check_inputs(m, in, &batch, err, errlen)) ||
        (rc = shape_outputs(m, tm, batch, out, err, errlen)))
        return rc;

    /* From here the model "ran": count it before the delay, so a test can
     * see a run that is still in progress. */
    pthread_mutex_lock(&tm->lock);
    int64_t nth = ++tm->runs;
    if (tm->n_log == tm->cap_log && tm->cap_log < OSP_TEST_BACKEND_MAX_LOG) {
        int cap = tm->cap_log ? tm->cap_log * 2 : 64;
        int *log = realloc(tm->log, (size_t)cap * sizeof *log);
        if (log) { /* on failure the log just stops; runs still counts */
            tm->log = log;
            tm->cap_log = cap;
        }
    }
    if (tm->n_log < tm->cap_log) tm->log[tm->n_log++] = batch > INT32_MAX ? INT32_MAX : (int)batch;
    pthread_mutex_unlock(&tm->lock);

    int64_t per_item = tm->run_delay_per_item_ms;
    int64_t extra = batch > 0 && per_item > 0 && batch > (int64_t)TB_MAX_MS / per_item
                        ? (int64_t)TB_MAX_MS
                        : per_item * batch;
    sleep_ms(tm->run_delay_ms + extra);
    if (tm->run_block_file)
        while (access(tm->run_block_file, F_OK) != 0) sleep_ms(TB_BLOCK_POLL_MS);

    if (tm->counter_file && (rc = append_counter(tm->counter_file, batch, err, errlen))) return rc;
    int fails = tm->run_error_every > 0 ? nth % tm->run_error_every == 0 : tm->run_error != NULL;
    if (fails) {
        if (tm->run_error)
            snprintf(err, errlen, "%s", tm->run_error);
        else
            snprintf(err, errlen, "test backend: scripted failure of run %lld", (long long)nth);
        return OSP_RT_ERUN;
    }
    const osp_tensor_t *in0 = m->n_inputs > 0 ? &in[0] : NULL;
    for (int i = 0; i < m->n_outputs; i++) {
        if (!out[i].data) {
            /* a per-run allocation: acceptable in a test double only */
            if (!(out[i].impl = malloc(out[i].bytes ? out[i].bytes : 1))) {
                release(m, out);
                snprintf(err, errlen, "test backend: out of memory for output %s", m->outputs[i].name);
                return OSP_RT_ENOMEM;
            }
            out[i].data = out[i].impl;
        }
        fill_output(&tm->outs[i], in0, &out[i]);
    }
    return OSP_RT_OK;
}

static void tb_free(osp_rt_model_t *m) {
    if (!m) return;
    tb_model_t *tm = m->impl;
    if (tm) {
        for (int i = 0; tm->outs && i < m->n_outputs; i++) {
            free(tm->outs[i].values);
            free(tm->outs[i].sets);
        }
        free(tm->outs);
        free(tm->run_error);
        free(tm->counter_file);
        free(tm->run_block_file);
        free(tm->log);
        pthread_mutex_destroy(&tm->lock);
        free(tm);
    }
    free(m->inputs);
    free(m->outputs);
    free(m);
}

int64_t osp_test_backend_runs(const osp_rt_model_t *m) {
    if (!m || m->backend != &osp_backend_test) return -1;
    tb_model_t *tm = m->impl;
    pthread_mutex_lock(&tm->lock);
    int64_t n = tm->runs;
    pthread_mutex_unlock(&tm->lock);
    return n;
}

int osp_test_backend_batches(const osp_rt_model_t *m, int *sizes, int cap) {
    if (!m || m->backend != &osp_backend_test) return -1;
    tb_model_t *tm = m->impl;
    pthread_mutex_lock(&tm->lock);
    int n = tm->n_log;
    for (int i = 0; sizes && i < n && i < cap; i++) sizes[i] = tm->log[i];
    pthread_mutex_unlock(&tm->lock);
    return n;
}

const osp_backend_t osp_backend_test = {
    .abi_version = OSP_BACKEND_ABI,
    .name = "test",
    .load = tb_load,
    .run = tb_run,
    .release_outputs = release,
    .free_model = tb_free,
};
