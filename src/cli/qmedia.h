/*
 * qmedia: the frames osprey quantize calibrates on and compares with, for
 * src/cli/quantize.c. Media are images and videos (a video limited to
 * frames FIRST..LAST as PATH:FIRST-LAST); each frame is decoded and
 * prepared exactly as osprey serves it. For a model that only ever sees
 * face crops (an embedder), a face detector can cut the faces out of each
 * frame first, and each face becomes a frame of its own.
 */
#ifndef OSP_CLI_QMEDIA_H
#define OSP_CLI_QMEDIA_H

#include <stddef.h>

#include "model/model.h"

typedef struct {
    char path[1024];
    long first, last; /* video frames first..last; last < 0: to the end */
} osp_qmedia_t;

/* Parse PATH or PATH:FIRST-LAST into m. 0, or -1 when the path is too long. */
int osp_qmedia_parse(const char *arg, osp_qmedia_t *m);

/* Called with each prepared frame: 0, or nonzero (with err filled) to stop. */
typedef int (*osp_qmedia_fn)(void *arg, osp_infer_ctx_t *ctx, char *err, size_t errlen);

/* Prepare for m every frame the media name — each image, every Nth frame
 * of each video's range — and hand each to fn. With faces (a face
 * detector; may be NULL), each face it finds in a frame is cropped out and
 * prepared for m instead of the frame. *frames counts what fn was given.
 * 0; 1 when fn or a run failed; 2 when a medium cannot be read. */
int osp_qmedia_each(osp_model_t *m, osp_model_t *faces, osp_decoder_t *dec,
                    const osp_qmedia_t *media, int n_media, int every, osp_qmedia_fn fn, void *arg,
                    long *frames, char *err, size_t errlen);

#endif
