/* onnxscore: see onnxscore.h. */
#include "segment/onnxscore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"
#include "stream/stream.h"

struct osp_onnxscore {
    osp_onnxscore_cfg_t cfg;
    osp_rt_model_t *model;
    osp_stream_ort_t *bind;
    osp_stream_t *stream;
    osp_onnxscore_sink_fn sink;
    void *ctx;
    float *frame; /* size * size * 3, reused */
    int64_t pushed;
};

static void on_window(void *ctx, int64_t frame, const float *out, int out_len) {
    osp_onnxscore_t *s = ctx;
    if (out_len >= 1) s->sink(s->ctx, frame, out[0]);
}

int osp_onnxscore_open(const osp_onnxscore_cfg_t *cfg, osp_onnxscore_sink_fn sink, void *ctx,
                       osp_onnxscore_t **out, char *err, size_t errlen) {
    *out = NULL;
    osp_onnxscore_t *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->cfg = *cfg;
    if (s->cfg.size <= 0) s->cfg.size = 64;
    if (s->cfg.window <= 0) s->cfg.window = 2;
    if (s->cfg.backlog <= 0) s->cfg.backlog = 64;
    s->sink = sink;
    s->ctx = ctx;
    int frame_len = s->cfg.size * s->cfg.size * 3;
    if (s->cfg.size > 1024 || !(s->frame = malloc(sizeof(float) * (size_t)frame_len))) {
        snprintf(err, errlen, "scorer frame size %d is out of range", s->cfg.size);
        goto fail;
    }
    osp_rt_opts_t ro = {.intra_threads = 1, .device = "cpu"};
    if (osp_backend_onnxruntime.load(cfg->path, &ro, &s->model, err, errlen)) goto fail;
    if (s->model->n_inputs < 1 || s->model->n_outputs < 1) {
        snprintf(err, errlen, "%s has no input or no output", cfg->path);
        goto fail;
    }
    osp_stream_ort_spec_t spec = {
        .input = cfg->input ? cfg->input : s->model->inputs[0].name,
        .output = cfg->output ? cfg->output : s->model->outputs[0].name,
    };
    if (osp_stream_ort_new(s->model, &spec, &s->bind, err, errlen)) goto fail;
    osp_stream_config_t sc = {.frame_len = frame_len,
                              .window = s->cfg.window,
                              .stride = 1,
                              .backlog = s->cfg.backlog,
                              .channels = 1};
    osp_stream_fn_t fn = osp_stream_ort_fn(s->bind);
    if (osp_stream_new(&sc, &fn, &s->stream, err, errlen)) goto fail;
    osp_stream_set_sink(s->stream, on_window, s);
    if (osp_stream_start(s->stream, err, errlen)) goto fail;
    *out = s;
    return 0;
fail:
    osp_onnxscore_close(s);
    return -1;
}

int osp_onnxscore_push(osp_onnxscore_t *s, const osp_image_t *rgb) {
    int n = s->cfg.size;
    float *f = s->frame;
    for (int y = 0; y < n; y++) {
        const uint8_t *row = rgb->data + (size_t)((long)y * rgb->height / n) * (size_t)rgb->stride;
        for (int x = 0; x < n; x++) {
            const uint8_t *p = row + 3 * ((long)x * rgb->width / n);
            *f++ = p[0] * (1.0f / 255);
            *f++ = p[1] * (1.0f / 255);
            *f++ = p[2] * (1.0f / 255);
        }
    }
    int rc = osp_stream_push(s->stream, s->frame);
    s->pushed++;
    if (!s->cfg.live && rc == 0) {
        /* A file waits for the worker before it could skip a window. */
        osp_stream_reading_t r;
        osp_stream_latest(s->stream, &r);
        int64_t done = r.warming_up ? s->cfg.window - 2 : r.frame_index;
        if (s->pushed - 1 - done > s->cfg.backlog / 2) osp_stream_drain(s->stream, 600000);
    }
    return rc;
}

int64_t osp_onnxscore_finish(osp_onnxscore_t *s) {
    if (!s->cfg.live) osp_stream_drain(s->stream, 600000);
    osp_stream_stop(s->stream);
    osp_stream_reading_t r;
    osp_stream_latest(s->stream, &r);
    return r.skipped;
}

void osp_onnxscore_close(osp_onnxscore_t *s) {
    if (!s) return;
    osp_stream_free(s->stream);
    osp_stream_ort_free(s->bind);
    if (s->model) osp_rt_model_free(s->model);
    free(s->frame);
    free(s);
}
