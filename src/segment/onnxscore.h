/*
 * onnxscore: a boundary scorer from any ONNX model, run through the
 * streaming scorer (src/stream/). Each frame becomes size x size x 3 floats
 * in [0, 1] (RGB, rows of pixels, nearest-neighbour scaled); the model gets
 * a window of `window` consecutive frames, oldest first, concatenated on
 * its input's one dynamic dimension (batch 1), and its output's first float
 * is the boundary score of the window's newest frame. Frames are scored in
 * order (stride 1) on the scorer's worker thread; the scores reach the
 * caller through the sink, frame index first.
 *
 * A file source must not lose scores: osp_onnxscore_push waits when the
 * worker falls `backlog` / 2 windows behind. A live source never waits;
 * a worker that falls further behind skips windows (their frames get no
 * score) and counts them.
 *
 * Owned by the caller (osp_onnxscore_open / osp_onnxscore_close). push from
 * one thread.
 */
#ifndef OSP_SEGMENT_ONNXSCORE_H
#define OSP_SEGMENT_ONNXSCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

typedef struct osp_onnxscore osp_onnxscore_t;

typedef void (*osp_onnxscore_sink_fn)(void *ctx, int64_t frame, float score);

typedef struct {
    const char *path;
    const char *input, *output; /* NULL: the model's first input / output */
    int size;                   /* side of the frame fed to the model: 64 */
    int window;                 /* frames per window: 2 */
    int backlog;                /* windows the worker may lag: 64 */
    bool live;
} osp_onnxscore_cfg_t;

int osp_onnxscore_open(const osp_onnxscore_cfg_t *cfg, osp_onnxscore_sink_fn sink, void *ctx,
                       osp_onnxscore_t **out, char *err, size_t errlen);
/* Push the next frame (RGB). */
int osp_onnxscore_push(osp_onnxscore_t *s, const osp_image_t *rgb);
/* Score everything pushed (file) and stop the worker; then no more sink calls.
 * Returns windows skipped. */
int64_t osp_onnxscore_finish(osp_onnxscore_t *s);
void osp_onnxscore_close(osp_onnxscore_t *s);

#endif
