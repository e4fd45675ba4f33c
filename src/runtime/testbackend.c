/*
 * The test backend: a TEST DOUBLE, never for production. Its "model file" is
 * a small JSON script (docs/test-backend.md) that says what the model
 * declares and how load and run behave: how long they take, whether they
 * fail, what the outputs hold. It exists so that the server's fault paths
 * (a load that hangs past its bound, a failed load, a slow or failing run)
 * can be reproduced on any machine, and so that tests can count the runs
 * and batch sizes the model really saw. testscript.c reads and checks the
 * script; this file plays it: load's delay, hang and failure, and each
 * run's inputs checked, its count, delay, failure and outputs.
 *
 * A hung load is abandoned by the server, never killed: load only sleeps
 * and then returns normally, touching nothing but its own allocations.
 */
#include "runtime/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "runtime/testscript.h"

#define TB_MAX_ELEMS ((size_t)1 << 28) /* elements of one output at run time */
#define TB_BLOCK_POLL_MS 10            /* how often a blocked load or run looks for its file */

typedef struct {
    osp_test_script_t sc;
    /* lock guards runs and the batch log; it is held only to count, never
     * across a sleep, the counter-file write or the output fill. */
    pthread_mutex_t lock;
    int64_t runs;
    int *log; /* batch size of each run, in the order runs started */
    int n_log, cap_log;
} tb_model_t;

static void tb_free(osp_rt_model_t *m);

static int tb_load(const char *path, const osp_rt_opts_t *opts, osp_rt_model_t **out, char *err,
                   size_t errlen) {
    (void)opts; /* device, threads and graph level mean nothing to a script */
    *out = NULL;
    osp_rt_model_t *m = calloc(1, sizeof *m);
    tb_model_t *tm = calloc(1, sizeof *tm);
    if (!m || !tm) {
        free(m);
        free(tm);
        snprintf(err, errlen, "cannot load model %s: out of memory", path);
        return OSP_RT_ENOMEM;
    }
    m->backend = &osp_backend_test;
    m->impl = tm;
    pthread_mutex_init(&tm->lock, NULL);
    const osp_test_script_t *sc = &tm->sc;
    if (osp_test_script_read(path, m, &tm->sc, err, errlen)) goto fail;

    /* The scripted behaviour: a slow compile, then perhaps a hang until the
     * test releases it, then perhaps a failure. */
    osp_sleep_ms(sc->load_delay_ms);
    if (sc->load_block_file)
        while (access(sc->load_block_file, F_OK) != 0) osp_sleep_ms(TB_BLOCK_POLL_MS);
    if (sc->load_error) {
        /* cut where the script's other reasons are */
        snprintf(err, errlen, "cannot load model %s: %.511s", path, sc->load_error);
        goto fail;
    }
    *out = m;
    return OSP_RT_OK;
fail:
    tb_free(m);
    return OSP_RT_ELOAD;
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

static void fill_output(const osp_test_output_t *o, const osp_tensor_t *in0, osp_tensor_t *t) {
    size_t count = osp_dims_count(t->dims, t->rank);
    int64_t items = t->rank > 0 ? t->dims[0] : 1;
    if (count == 0 || items <= 0) return;
    size_t per = count / (size_t)items;
    int64_t in_items = in0 && in0->rank > 0 ? in0->dims[0] : 1;
    for (int64_t b = 0; b < items; b++) {
        size_t base = (size_t)b * per;
        if (o->source == OSP_TEST_FROM_INPUT_COPY) { /* per equals the input's, checked at load */
            size_t from = (size_t)(b % in_items) * per;
            for (size_t i = 0; i < per; i++)
                store_elem(t->dtype, t->data, base + i, load_elem(in0->dtype, in0->data, from + i));
            continue;
        }
        double v = o->source == OSP_TEST_FROM_INPUT_MEAN ? input_item_mean(in0, b) : o->fill;
        for (size_t i = 0; i < per; i++)
            store_elem(t->dtype, t->data, base + i,
                       o->source == OSP_TEST_VALUES ? o->values[i % (size_t)o->n_values] : v);
    }
    for (int s = 0; s < o->n_sets; s++) {
        const osp_test_set_t *st = &o->sets[s];
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
        memcpy(dims, tm->sc.outs[i].run_dims, sizeof dims);
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

    int64_t per_item = tm->sc.run_delay_per_item_ms;
    int64_t extra = batch > 0 && per_item > 0 && batch > (int64_t)OSP_TEST_MAX_MS / per_item
                        ? (int64_t)OSP_TEST_MAX_MS
                        : per_item * batch;
    osp_sleep_ms(tm->sc.run_delay_ms + extra);
    if (tm->sc.run_block_file)
        while (access(tm->sc.run_block_file, F_OK) != 0) osp_sleep_ms(TB_BLOCK_POLL_MS);

    if (tm->sc.counter_file && (rc = append_counter(tm->sc.counter_file, batch, err, errlen)))
        return rc;
    int fails = tm->sc.run_error_every > 0 ? nth % tm->sc.run_error_every == 0
                                           : tm->sc.run_error != NULL;
    if (fails) {
        if (tm->sc.run_error)
            snprintf(err, errlen, "%s", tm->sc.run_error);
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
        fill_output(&tm->sc.outs[i], in0, &out[i]);
    }
    return OSP_RT_OK;
}

static void tb_free(osp_rt_model_t *m) {
    if (!m) return;
    tb_model_t *tm = m->impl;
    if (tm) {
        osp_test_script_free(&tm->sc, m->n_outputs);
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
