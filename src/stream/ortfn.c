/* stream: the ONNX Runtime scoring function, with recurrent state carried
 * from one run's outputs to the next run's inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/stream.h"

enum { ROLE_FRAMES, ROLE_STATE, ROLE_INT };

typedef struct {
    int in_idx, out_idx;
    float *data; /* the state fed to the next run */
    size_t n;
} ort_state_t;

struct osp_stream_ort {
    osp_rt_model_t *m;
    int frames_in, score_out;
    int n_state;
    ort_state_t state[OSP_STREAM_ORT_MAX_STATE];
    int *role; /* per input */
    osp_tensor_t *in, *out;
    int64_t int_value;
};

static int find(const osp_tensor_desc_t *d, int n, const char *name) {
    for (int i = 0; name && i < n; i++)
        if (strcmp(d[i].name, name) == 0) return i;
    return -1;
}

void osp_stream_ort_free(osp_stream_ort_t *o) {
    if (!o) return;
    for (int k = 0; k < o->n_state; k++) free(o->state[k].data);
    free(o->role);
    free(o->in);
    free(o->out);
    free(o);
}

int osp_stream_ort_new(osp_rt_model_t *m, const osp_stream_ort_spec_t *spec,
                       osp_stream_ort_t **out, char *err, size_t errlen) {
    *out = NULL;
    if (spec->n_state < 0 || spec->n_state > OSP_STREAM_ORT_MAX_STATE) {
        snprintf(err, errlen, "at most %d state pairs", OSP_STREAM_ORT_MAX_STATE);
        return OSP_STREAM_EINVAL;
    }
    osp_stream_ort_t *o = calloc(1, sizeof *o);
    if (!o) goto nomem;
    o->m = m;
    o->int_value = spec->int_value;
    o->role = calloc((size_t)m->n_inputs + 1, sizeof *o->role);
    o->in = calloc((size_t)m->n_inputs + 1, sizeof *o->in);
    o->out = calloc((size_t)m->n_outputs + 1, sizeof *o->out);
    if (!o->role || !o->in || !o->out) goto nomem;
    for (int i = 0; i < m->n_inputs; i++) o->role[i] = -1;

    o->frames_in = find(m->inputs, m->n_inputs, spec->input);
    o->score_out = find(m->outputs, m->n_outputs, spec->output);
    if (o->frames_in < 0 || o->score_out < 0) {
        snprintf(err, errlen, "the model has no %s \"%s\"", o->frames_in < 0 ? "input" : "output",
                 o->frames_in < 0 ? (spec->input ? spec->input : "")
                                  : (spec->output ? spec->output : ""));
        goto inval;
    }
    if (m->inputs[o->frames_in].dtype != OSP_DT_F32 || m->outputs[o->score_out].dtype != OSP_DT_F32) {
        snprintf(err, errlen, "input \"%s\" and output \"%s\" must be float32", spec->input,
                 spec->output);
        goto inval;
    }
    o->role[o->frames_in] = ROLE_FRAMES;
    for (int k = 0; k < spec->n_state; k++) {
        ort_state_t *st = &o->state[k];
        st->in_idx = find(m->inputs, m->n_inputs, spec->state_in[k]);
        st->out_idx = find(m->outputs, m->n_outputs, spec->state_out[k]);
        if (st->in_idx < 0 || st->out_idx < 0 || o->role[st->in_idx] != -1) {
            snprintf(err, errlen,
                     "state pair %d (\"%s\" -> \"%s\") is not an unused input and an output of the model",
                     k, spec->state_in[k] ? spec->state_in[k] : "",
                     spec->state_out[k] ? spec->state_out[k] : "");
            goto inval;
        }
        const osp_tensor_desc_t *d = &m->inputs[st->in_idx];
        if (d->dtype != OSP_DT_F32) {
            snprintf(err, errlen, "state input \"%s\" must be float32", d->name);
            goto inval;
        }
        o->role[st->in_idx] = ROLE_STATE;
        osp_tensor_t *t = &o->in[st->in_idx];
        t->dtype = OSP_DT_F32;
        t->rank = d->rank;
        for (int j = 0; j < d->rank; j++) t->dims[j] = d->dims[j] < 0 ? 1 : d->dims[j];
        st->n = osp_dims_count(t->dims, t->rank);
        st->data = calloc(st->n ? st->n : 1, sizeof(float));
        if (!st->data) goto nomem;
        o->n_state = k + 1;
        t->data = st->data;
        t->bytes = st->n * sizeof(float);
    }
    int ii = find(m->inputs, m->n_inputs, spec->int_input);
    if (spec->int_input && (ii < 0 || o->role[ii] != -1 || m->inputs[ii].dtype != OSP_DT_I64)) {
        snprintf(err, errlen, "\"%s\" is not an unused int64 input of the model", spec->int_input);
        goto inval;
    }
    if (ii >= 0) {
        const osp_tensor_desc_t *d = &m->inputs[ii];
        o->role[ii] = ROLE_INT;
        osp_tensor_t *t = &o->in[ii];
        t->dtype = OSP_DT_I64;
        t->rank = d->rank;
        for (int j = 0; j < d->rank; j++) t->dims[j] = 1;
        if (osp_dims_count(t->dims, t->rank) != 1) {
            snprintf(err, errlen, "\"%s\" must hold one value", d->name);
            goto inval;
        }
        t->data = &o->int_value;
        t->bytes = sizeof o->int_value;
    }
    for (int i = 0; i < m->n_inputs; i++)
        if (o->role[i] == -1) {
            snprintf(err, errlen, "model input \"%s\" is not fed by the stream spec",
                     m->inputs[i].name);
            goto inval;
        }
    *out = o;
    return OSP_STREAM_OK;
nomem:
    osp_stream_ort_free(o);
    snprintf(err, errlen, "out of memory binding the model to a stream");
    return OSP_STREAM_ENOMEM;
inval:
    osp_stream_ort_free(o);
    return OSP_STREAM_EINVAL;
}

static void ort_reset(void *ctx) {
    osp_stream_ort_t *o = ctx;
    for (int k = 0; k < o->n_state; k++)
        memset(o->state[k].data, 0, o->state[k].n * sizeof(float));
}

/* The frames tensor: the declared dims, batch 1, and the one other dynamic
 * dim sized to the element count. */
static int frames_dims(const osp_tensor_desc_t *d, size_t n, osp_tensor_t *t, char *err,
                       size_t errlen) {
    size_t fixed = 1;
    int dyn = -1;
    t->rank = d->rank;
    for (int j = 0; j < d->rank; j++) {
        t->dims[j] = d->dims[j];
        if (d->dims[j] >= 0) {
            fixed *= (size_t)d->dims[j];
        } else if (j == 0 && d->rank > 1) {
            t->dims[0] = 1;
        } else if (dyn < 0) {
            dyn = j;
        } else {
            snprintf(err, errlen, "input \"%s\" has more than one dynamic dim after the batch",
                     d->name);
            return OSP_STREAM_EINVAL;
        }
    }
    if (fixed == 0 || (dyn < 0 && fixed != n) || (dyn >= 0 && n % fixed != 0)) {
        snprintf(err, errlen, "input \"%s\" cannot hold %zu floats", d->name, n);
        return OSP_STREAM_EINVAL;
    }
    if (dyn >= 0) t->dims[dyn] = (int64_t)(n / fixed);
    return OSP_STREAM_OK;
}

static int ort_score(void *ctx, const float *frames, int n_frames, int frame_len,
                     const osp_stream_span_t *span, float *out, int out_len, char *err,
                     size_t errlen) {
    (void)span;
    osp_stream_ort_t *o = ctx;
    osp_rt_model_t *m = o->m;
    size_t n = (size_t)n_frames * (size_t)frame_len;
    osp_tensor_t *fin = &o->in[o->frames_in];
    fin->dtype = OSP_DT_F32;
    if (frames_dims(&m->inputs[o->frames_in], n, fin, err, errlen) != 0) return OSP_STREAM_EINVAL;
    fin->data = (void *)frames;
    fin->bytes = n * sizeof(float);
    memset(o->out, 0, (size_t)m->n_outputs * sizeof *o->out);
    if (osp_rt_run(m, o->in, o->out, err, errlen) != 0) return OSP_STREAM_ESCORE;
    int rc = OSP_STREAM_OK;
    const osp_tensor_t *so = &o->out[o->score_out];
    size_t got = so->dtype == OSP_DT_F32 ? osp_dims_count(so->dims, so->rank) : 0;
    if (got != (size_t)out_len) {
        snprintf(err, errlen, "output \"%s\" has %zu floats, the stream expects %d",
                 m->outputs[o->score_out].name, got, out_len);
        rc = OSP_STREAM_ESCORE;
        goto done;
    }
    memcpy(out, so->data, got * sizeof(float));
    for (int k = 0; k < o->n_state; k++) {
        const osp_tensor_t *t = &o->out[o->state[k].out_idx];
        if (t->dtype != OSP_DT_F32 || osp_dims_count(t->dims, t->rank) != o->state[k].n) {
            snprintf(err, errlen, "state output \"%s\" does not match its input",
                     m->outputs[o->state[k].out_idx].name);
            rc = OSP_STREAM_ESCORE;
            goto done;
        }
        memcpy(o->state[k].data, t->data, o->state[k].n * sizeof(float));
    }
done:
    osp_rt_release_outputs(m, o->out);
    return rc;
}

osp_stream_fn_t osp_stream_ort_fn(osp_stream_ort_t *o) {
    return (osp_stream_fn_t){.score = ort_score, .reset = ort_reset, .ctx = o};
}
