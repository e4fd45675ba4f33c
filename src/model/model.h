/*
 * model: what a loaded model is to osprey — its configuration (the seed's
 * keys, plus the built-in catalog), the runtime session, the preprocessing
 * it needs, its postprocessor and labels — and the per-frame path through
 * them: prepare (frame -> input tensor) then predict (run + decode).
 */
#ifndef OSP_MODEL_H
#define OSP_MODEL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "post/decoder.h"
#include "post/post.h"
#include "runtime/runtime.h"

struct cJSON;

enum {
    OSP_MODEL_OK = 0,
    OSP_MODEL_EINVAL = -1, /* a bad configuration */
    OSP_MODEL_ELOAD = -2,  /* the runtime could not load it */
    OSP_MODEL_ERUN = -3,   /* a frame failed */
    OSP_MODEL_ENOMEM = -4,
};


/* A model's configuration. Strings are owned (fixed buffers). */
typedef struct {
    char name[64]; /* catalog name, or the file's stem */
    char path[1024];
    char postprocessor[32];
    int postprocessor_auto;     /* none was given (osprey detect on a model file): the family
                                 * whose outputs fit decodes it, prepared as its catalog
                                 * model is (osp_model_open) */
    char labels_path[1024];     /* "" = <path without extension>.labels if present */
    int labels_none;            /* read no labels file (builtin_labels, or none) */
    const char *builtin_labels; /* static, '\n'-separated; used when no labels file */
    char device[32];
    int width, height, channels; /* 0 = take from the model */
    osp_fit_t fit;
    float mean[3], std[3];
    float confidence;
    float nms_iou;
    int max_detections;
    float cross_iou;    /* "crossClassIou": suppression across labels at this IoU (0: off;
                        * < 0: not set, off like the Python worker; osprey detect: 0.7) */
    float contain;      /* "nmsContainment": same-label boxes this share inside a better one
                         * are dropped (0: off; < 0: not set, off; osprey detect: 0.6) */
    int intra_threads;  /* 0 = runtime default */
    int no_spin;        /* the runtime's helper threads sleep between runs */
    int lone_threads;   /* >1: a second session with this many threads for frames that
                              * run alone (osp_infer_ctx_t.lone); ONNX Runtime only */
    int embedding_b64;  /* "embeddingEncoding": "base64": pack vectors (extension) */
    int graph_opt;      /* runtime graph optimisation: 0 default (all), -1 none, 1, 2, 3 */
    int run_timeout_ms; /* the bound on one run in ospreyd ("runTimeoutMs"); 0 = its default */
    int cascade;        /* the config has "then": a cascade (model/cascade.h) reads it */
} osp_model_cfg_t;

/* ---- catalog --------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *file; /* under <cache>/models */
    const char *postprocessor;
    int width, height, channels;
    const char *layout; /* "NHWC" or "NCHW", for display */
    osp_fit_t fit;
    float mean[3], std[3];
    float confidence, nms_iou; /* what a model config naming the entry starts from */
    float cli_confidence;      /* osprey detect's default threshold, measured on labelled
                                * frames (docs/models.md); 0: confidence */
    int cli_second_look;       /* osprey detect looks at each box again by default
                                * (osp_model_look_again), measured to help */
    float cli_confidence_one;  /* then its threshold with --one-look; 0: cli_confidence */
    const char *labels;        /* built-in labels, '\n'-separated; NULL: a .labels file */
    const char *labels_file;   /* under <cache>/models, when not the model file's own */
    int batches;               /* the model file has a dynamic batch axis */
    const char *description;
} osp_catalog_entry_t;

int osp_catalog_count(void);
const osp_catalog_entry_t *osp_catalog_at(int i);
const osp_catalog_entry_t *osp_catalog_find(const char *name);
/* The asset cache: $OSPREY_CACHE, else $HOME/.cache/osprey. */
void osp_cache_dir(char *buf, size_t n);
/* share/osprey beside the bin/ folder of the running binary — where
 * `make install` puts the catalog's files — or "" when the binary is not
 * in a bin/ folder. Relative to the binary, so an installed tree works
 * wherever it is unpacked. */
void osp_data_dir(char *buf, size_t n);
/* Where a catalog file (a model, a labels file) is: <cache>/models/<file>
 * when it is there, else <data dir>/models/<file> when it is there (1);
 * else <cache>/models/<file>, where scripts/fetch-assets.sh puts it (0). */
int osp_catalog_file(const char *file, char *buf, size_t n);
/* osp_catalog_file of an entry's model file. */
int osp_catalog_path(const osp_catalog_entry_t *e, char *buf, size_t n);

/* ---- configuration --------------------------------------------------------- */

/* Defaults of the protocol (input 640, letterbox, x/255, confidence 0.25,
 * NMS 0.45, 100 detections). */
void osp_model_cfg_defaults(osp_model_cfg_t *cfg);
/* From a catalog name. OSP_MODEL_EINVAL with a message naming the known
 * models when the name is unknown. */
int osp_model_cfg_from_catalog(const char *name, osp_model_cfg_t *cfg, char *err, size_t errlen);
/* "NAME" from the catalog, or a path to a model file (postprocessor then
 * defaults to yolo, as the protocol's, unless given later). */
int osp_model_cfg_resolve(const char *name_or_path, osp_model_cfg_t *cfg, char *err, size_t errlen);
/* From a JSON model config of the protocol (§6): "model" (catalog name,
 * extension) then path, postprocessor, inputSize, inputWidth, inputHeight,
 * inputChannels, preprocessMode, inputNormalization, mean/std (extension),
 * confidence, nmsIouThreshold, maxDetections, crossClassIou and
 * nmsContainment (extensions), device, labels. */
int osp_model_cfg_from_json(const struct cJSON *obj, osp_model_cfg_t *cfg, char *err, size_t errlen);

/* ---- loaded model ------------------------------------------------------------ */

typedef struct osp_model {
    osp_model_cfg_t cfg;
    osp_rt_model_t *rt;
    osp_rt_model_t *rt_lone;  /* the wider session for lone frames, or NULL */
    _Atomic int running;      /* runs in progress on either session */
    _Atomic long lone_runs;   /* runs on rt_lone so far */
    const osp_decoder_t *dec; /* the postprocessor */
    void *dec_state;          /* its set-up (anchors, output roles); shared, read-only */
    osp_prep_t prep;
    int batch_dynamic; /* input 0 has a dynamic batch axis */
    char **labels;     /* owned; n_labels entries */
    int n_labels;
    /* ospreyd: the cascade run on its detections (model/cascade.h), bound
     * to this model and owned by it (osp_model_free frees it); or NULL */
    struct osp_cascade *then;
} osp_model_t;

/* Load a model: runtime session, input description, prep, decoder set-up.
 * Logs one line on stderr naming the execution provider that serves it. */
int osp_model_open(const osp_model_cfg_t *cfg, const osp_backend_t *backend, osp_model_t **out,
                   char *err, size_t errlen);
void osp_model_free(osp_model_t *m);
/* The label of a class, or NULL when the model has none for it. */
const char *osp_model_label(const osp_model_t *m, int cls);

/* Per-thread working memory for the frame path; zero-initialise, reuse,
 * free with osp_infer_ctx_free. */
typedef struct {
    osp_prep_scratch_t scratch;
    osp_image_t rgb; /* a 4:2:0 frame converted to RGB */
    void *tensor;
    size_t tensor_cap;
    osp_geom_t geom;
    int frame_w, frame_h; /* the original frame */
    int view_w, view_h;   /* the pixels prepared (smaller after a scaled JPEG decode) */
    osp_dres_t rec;       /* the decoded result of the last predict */
    double prep_ms;       /* time the last prepare took */
    /* decode settings for this frame instead of the model's (params_set):
     * a server snapshots them per request so a reconfigure never races a
     * running decode */
    int params_set;
    float confidence, nms_iou;
    int max_detections;
    /* set by a server when no other frame of this model is admitted: the run
     * may take the wider session if nothing else runs at that moment */
    int lone;
    float *look;           /* osp_model_look_again: each kept box's second score */
    osp_det_t *look_boxes; /* and the box the look found it at */
    int look_cap;
    struct osp_cascade_ctx *cascade; /* osp_cascade_run's working memory, or NULL */
    /* set by a server: a cascade step that would start after this epoch ms
     * (base/clock.h, osp_epoch_ms) is skipped, its field left out; 0: none */
    uint64_t deadline_ms;
    /* set by a server: a detection of the first model (in the pixels it
     * ran on) for which skip(skip_arg, d) is nonzero runs none of the
     * cascade's steps and gains no field (a camera's object whose steps
     * are settled, track/steps.h); NULL: every detection a step takes */
    int (*skip)(void *skip_arg, const osp_det_t *d);
    void *skip_arg;
} osp_infer_ctx_t;
void osp_infer_ctx_free(osp_infer_ctx_t *c);

typedef struct {
    osp_rec_kind_t kind;
    const osp_dres_t *rec; /* everything decoded; points into the ctx */
    const osp_det_t *dets; /* in original-frame pixels; points into the ctx */
    int n_dets;
    const float *vec; /* embedding, L2-normalised; points into the ctx */
    int vec_dim;
    double preprocess_ms, predict_ms;
    int frame_w, frame_h;
    const float *look; /* after osp_model_look_again: per det, the second look's
                        * score (< 0: the box was not looked at again); else NULL */
    int looks;         /* runs the second look took */
    int look_dropped;  /* boxes it dropped */
    /* set by a caller that tracks objects (osprey detect --track): per det,
     * its object's id, 0 for none (no "trackId"); else NULL */
    const uint64_t *track_ids;
    /* set by osp_cascade_run: detection i's record gains the fields (JSON
     * members, "key": value, ...) extra[extra_at[i] .. extra_at[i+1]);
     * else NULL */
    const char *extra;
    const size_t *extra_at;
} osp_result_t;

/* Preprocess a frame into ctx. orig_w/orig_h: the frame's true size when
 * `frame` is a scaled-down decode of it (else the view's own size). */
int osp_model_prepare(const osp_model_t *m, osp_infer_ctx_t *ctx, const osp_view_t *frame,
                      int orig_w, int orig_h, char *err, size_t errlen);
/* The same for an RGB/BGR frame of w x h whose rows arrive in order (a
 * large frame still being read): begin, hand every row to
 * osp_prep_stream_rows, then end with the time the rows took. Begin fails
 * (OSP_MODEL_EINVAL) for models that need the whole frame (text
 * recognizers) and other formats: prepare those with osp_model_prepare. */
int osp_model_prepare_rows_begin(const osp_model_t *m, osp_infer_ctx_t *ctx, osp_prep_stream_t *st,
                                 int w, int h, osp_pixfmt_t fmt, char *err, size_t errlen);
int osp_model_prepare_rows_end(osp_infer_ctx_t *ctx, osp_prep_stream_t *st, int w, int h,
                               double prep_ms, char *err, size_t errlen);
/* Make sure ctx has room for one input tensor of m (for callers that fill it
 * from a cache). 0 or OSP_MODEL_ENOMEM. */
int osp_model_ensure_tensor(const osp_model_t *m, osp_infer_ctx_t *ctx);
/* The runtime input of n prepared tensors of m stacked at data (the
 * caller's): m's input type, [n, ...] in m's layout, n tensors' bytes. */
osp_tensor_t osp_model_input(const osp_model_t *m, void *data, int n);
/* Run the prepared tensor and decode; fills res (valid until the ctx is
 * used again). */
int osp_model_predict(osp_model_t *m, osp_infer_ctx_t *ctx, osp_result_t *res, char *err,
                      size_t errlen);

/* Prepare then predict one frame: the whole per-frame path in one call. */
int osp_model_infer(osp_model_t *m, osp_infer_ctx_t *ctx, const osp_view_t *frame, int orig_w,
                    int orig_h, osp_result_t *res, char *err, size_t errlen);

/* ---- the second look (look.c; osprey detect) ------------------------------- */

/* A box is looked at again in a square this many times its longer side,
 * centred on it and moved inside the frame; the square is run through the
 * model alone, at the model's input size, so the box is seen about
 * input side / (OSP_LOOK_ZOOM x box side) times closer. A box whose
 * square does not fit in the frame is not looked at again. */
#define OSP_LOOK_ZOOM 3.0f
/* The look's box of the same label that overlaps the first this much gives
 * the second score; none gives 0. */
#define OSP_LOOK_IOU 0.4f
/* The look's own threshold: every box it finds counts. */
#define OSP_LOOK_FLOOR 0.05f
/* Two boxes of a label whose looks found their objects at this IoU are one
 * object: the one of the better mean score stays. */
#define OSP_LOOK_SAME 0.7f

/* The containment pass (post.h, osp_nms_contained) with the second look: a
 * part's own look mostly sees the whole person and takes the part back; of
 * the parts left, those at least this share inside a better box go. At
 * OSP_CONTAINMENT (0.6) the pass would also drop people half hidden behind
 * another (docs/models.md). */
#define OSP_LOOK_CONTAINMENT 0.8f

/* The square of OSP_LOOK_ZOOM (zoom) around box d inside a w x h frame:
 * *x, *y its corner, *side its side; *side = 0 when it would not fit. */
void osp_look_square(const osp_det_t *d, float zoom, int w, int h, int *x, int *y, int *side);

/* Look again at one box d (frame pixels) of a packed RGB/BGR view v whose
 * pixels are sx x sy frame pixels each: run the square of OSP_LOOK_ZOOM
 * around it through the model in `look` (a context of the caller's
 * thread) and find the look's best box of d's label at IoU >= OSP_LOOK_IOU.
 * Returns 1 with *score (0: nothing of the label there) and *at (the look's
 * box, frame pixels); 0 when the square does not fit in the frame (not
 * looked at: *score -1, *at = *d); OSP_MODEL_EINVAL (not a packed view) or
 * OSP_MODEL_ERUN with the reason in err. The run's times are added to
 * *prep_ms and *predict_ms when not NULL. */
int osp_model_look_box(osp_model_t *m, osp_infer_ctx_t *look, const osp_view_t *v, float sx,
                       float sy, const osp_det_t *d, float *score, osp_det_t *at, double *prep_ms,
                       double *predict_ms, char *err, size_t errlen);

/* Look again at each detection of res, the result of osp_model_infer of
 * `frame` in ctx: crop its square (above), run it in `look` (a second
 * context of the same thread), and keep the box when the mean of its two
 * scores reaches the threshold it was found at and no box of its label with
 * a better mean was found at the same place by its look (OSP_LOOK_SAME: a
 * person between two anchors has two boxes). A box not looked at again is
 * kept when its score reaches `once`, the threshold of a single look. The
 * boxes kept, with their
 * first scores and frame boxes, stay in ctx and res (res->look, res->looks
 * set); the looks' times are added to res. Not for text recognizers. */
int osp_model_look_again(osp_model_t *m, osp_infer_ctx_t *ctx, osp_infer_ctx_t *look,
                         const osp_view_t *frame, float once, osp_result_t *res, char *err,
                         size_t errlen);

/* A stacking buffer for batched runs (one per thread; grows only). */
typedef struct {
    void *data;
    size_t cap;
} osp_batch_buf_t;
void osp_batch_buf_free(osp_batch_buf_t *b);

/* Run n prepared frames: as ONE runtime call on a stacked [n,…] tensor when
 * the model's batch axis is dynamic (outputs split per frame), else one call
 * each. rcs[i] is each frame's outcome (its error text, if any, is the last
 * written to err); the return value is nonzero only when the shared run
 * itself failed (then no rcs are set). */
int osp_model_predict_batch(osp_model_t *m, osp_infer_ctx_t *const *ctx, int n, osp_result_t *res,
                            int *rcs, osp_batch_buf_t *buf, char *err, size_t errlen);

/* Write the protocol's result record fields (kind, detections or embedding,
 * inferenceMs, preprocessMs, predictMs, batchSize, frameSize) into the JSON
 * object the caller has opened; docs/protocol.md §4. */
#include "wire/jsonw.h"
void osp_model_put_result(osp_jw_t *w, const osp_model_t *m, const osp_result_t *r, int batch);
/* A detection's "box": [x1, y1, x2, y2], frame pixels to one decimal, as the
 * record writes it; for the commands whose records are their own (ocr,
 * compare). */
void osp_model_put_box(osp_jw_t *w, const osp_det_t *d);
/* Its "landmarks": [[x, y], ...] to one decimal, when it has any. */
void osp_model_put_landmarks(osp_jw_t *w, const osp_det_t *d);
/* The n floats of v as one JSON string: the base64 of their little-endian
 * float32 bytes (a model config's "embeddingEncoding": "base64"); null
 * when out of memory. */
void osp_model_put_b64_floats(osp_jw_t *w, const float *v, int n);

#endif
