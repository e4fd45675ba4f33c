/*
 * cascade: models run on each detection of another, from the pixels of
 * the frame the detection was found in — a face's embedding (and the name
 * it matches in a face library), a crop's class, a plate's text, or the
 * objects a second detector finds inside a box. A model config's "then"
 * (docs/cascades.md):
 *
 *   {"model": "blazeface", "then": [{"model": "face-embed", "labels": ["face"],
 *     "align": "landmarks", "as": "embedding", "maxObjects": 8}]}
 *
 * Parsed and checked against the catalog (osp_cascade_parse), bound to
 * the models it names once the first model is loaded (osp_cascade_open),
 * run on one result (osp_cascade_run, cascade_run.c) into fields each
 * detection's record gains. The cascade owns its steps' models; one
 * cascade serves many threads, each with its own osp_infer_ctx_t.
 */
#ifndef OSP_MODEL_CASCADE_H
#define OSP_MODEL_CASCADE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

struct cJSON;
struct osp_cascade_ctx;

#define OSP_CASCADE_DEPTH 4         /* steps inside steps at most */
#define OSP_CASCADE_STEPS 16        /* steps in one cascade at most */
#define OSP_CASCADE_LABELS 16       /* labels one step names at most */
#define OSP_CASCADE_OBJECTS 64      /* "maxObjects" at most */
#define OSP_CASCADE_OBJECTS_DEF 8   /* ... and when not given */
#define OSP_CASCADE_MARGIN_DEF 0.2f /* a box crop is grown by this share */
#define OSP_CASCADE_PATTERN_MAX 128 /* a text step's "pattern", bytes at most */

typedef struct osp_cascade osp_cascade_t;

/* The "then" of the model config obj (an array of steps, or one step
 * object), for the first model cfg (its name and postprocessor say what it
 * can be followed by). *out NULL and 0 when obj has no "then"; else the
 * caller's, freed with osp_cascade_free. OSP_MODEL_EINVAL with the reason:
 * an unknown key (with the nearest known one), a model not in the catalog,
 * a step after a model that gives no boxes, "landmarks" after a detector
 * that gives none, a model that follows itself (a cycle), too deep. */
int osp_cascade_parse(const struct cJSON *obj, const osp_model_cfg_t *cfg, osp_cascade_t **out,
                      char *err, size_t errlen);

/* Load the steps' models (through backend, NULL: the default; intra_threads
 * each, as osp_model_cfg_t's) and their face libraries, and check each step's labels against the model
 * before it (first for the top steps). OSP_MODEL_EINVAL (a label the model
 * never gives, a library that is not one) or OSP_MODEL_ELOAD with the
 * reason. */
int osp_cascade_open(osp_cascade_t *c, const osp_model_t *first, const osp_backend_t *backend,
                     int intra_threads, char *err, size_t errlen);
void osp_cascade_free(osp_cascade_t *c);

/* Run c on res, the result of first on frame in ctx (after any second
 * look): crop each chosen detection from frame (the view ctx prepared:
 * an RGB/BGR view, or the RGB ctx converted a 4:2:0 frame to), run each
 * step, and leave the fields each detection's record gains in ctx
 * (res->extra, res->extra_at). The steps' runs are added to res's times.
 * A step that would start after ctx->deadline_ms (when set) is skipped:
 * its fields are left out; so are a detection's that ctx->skip (when set)
 * names. OSP_MODEL_ERUN / ENOMEM with the reason. */
int osp_cascade_run(const osp_cascade_t *c, const osp_model_t *first, osp_infer_ctx_t *ctx,
                    const osp_view_t *frame, osp_result_t *res, char *err, size_t errlen);

/* The same on res's detections (frame pixels, res->frame_w x frame_h)
 * cropped from frame, an RGB or BGR view of that frame at any size: for a
 * caller that picks the detections itself (osprey detect --track runs
 * each object's steps once, not every box of every frame). Only ctx's
 * cascade memory is used; the fields stay there, as osp_cascade_run's. */
int osp_cascade_run_view(const osp_cascade_t *c, osp_infer_ctx_t *ctx, const osp_view_t *frame,
                         osp_result_t *res, char *err, size_t errlen);

/* Which of dets[0..n) the top steps of c would take in one run (their
 * labels, the largest up to each step's maxObjects): take[i] nonzero
 * (bit k: step k). Returns how many are taken. c must be opened. */
int osp_cascade_takes(const osp_cascade_t *c, const osp_det_t *dets, int n, uint16_t *take);

/* Whether a step of c (at any depth) names a face from a library or reads
 * text: its result can come out below its threshold ("unknown", or text
 * that does not fit the pattern) and another crop may do better. */
int osp_cascade_judges(const osp_cascade_t *c);

/* A cascade as parsed, unbound (for a reload to open afresh): NULL when
 * out of memory. */
osp_cascade_t *osp_cascade_copy(const osp_cascade_t *c);

/* Whether a and b (either NULL: none) ask for the same steps, as parsed:
 * a server shares a loaded model only with a config of the same cascade. */
int osp_cascade_same(const osp_cascade_t *a, const osp_cascade_t *b);

/* Call fn on each step's "faceLibrary" (a path the caller may rewrite in
 * place, cap bytes) before the cascade is opened: a server confines the
 * files a peer names. The first nonzero fn returns is returned. */
int osp_cascade_each_library(osp_cascade_t *c, int (*fn)(void *arg, char *path, size_t cap),
                             void *arg);

/* What each step of an opened cascade did so far, in the config's order
 * (a step, then its own steps): runs of its model, and runs skipped
 * because ctx->deadline_ms had passed. Fills up to cap; returns the
 * steps there are. Any thread. */
typedef struct {
    const char *model; /* the step's model; the cascade's */
    int depth;
    long runs, skipped;
} osp_cascade_count_t;
int osp_cascade_counts(const osp_cascade_t *c, osp_cascade_count_t *out, int cap);

/* Per-thread working memory of osp_cascade_run, kept in the ctx. */
void osp_cascade_ctx_free(struct osp_cascade_ctx *cc);

/* The crop a cascade gives an embedder or classifier m of detection d
 * (pixels of v): turned upright from its landmarks when asked and it has
 * them, else the square around its box grown by margin; at m's input size,
 * into out (the caller's, grown as needed). 0 or -1. The face library is
 * filled from the same crops as it is matched against. */
int osp_cascade_face_crop(const osp_view_t *v, const osp_det_t *d, const osp_model_t *m,
                          int landmarks, float margin, osp_image_t *out);

/* What a user asked for on the command line (osprey detect --then MODEL
 * --recognize FILE) as a cascade of one step on every detection of cfg's
 * model (with a library, on its faces: label "face"): the crop aligned
 * from landmarks when cfg's model gives them. */
int osp_cascade_simple(const osp_model_cfg_t *cfg, const char *model, const char *library,
                       osp_cascade_t **out, char *err, size_t errlen);

#endif
