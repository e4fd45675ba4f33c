/*
 * What cascade.c (the config, the models it loads) and cascade_run.c (the
 * runs) share of a cascade: its steps. Private to the two.
 */
#ifndef OSP_MODEL_CASCADE_INT_H
#define OSP_MODEL_CASCADE_INT_H

#include <regex.h>
#include <stdatomic.h>
#include <stdint.h>

#include "faces/faces.h"
#include "image/image.h"
#include "model/cascade.h"
#include "wire/jsonw.h"

typedef enum {
    OSP_STEP_EMBEDDING, /* "as": the vector */
    OSP_STEP_NAME,      /* an embedding matched in a face library: "as", "asScore" */
    OSP_STEP_CLASS,     /* a classifier's best class: "as", "asScore" */
    OSP_STEP_TEXT,      /* a recognizer's text: "as", "asScore" */
    OSP_STEP_OBJECTS,   /* a detector's boxes inside the crop: "as": [...] */
} osp_step_kind_t;

typedef enum { OSP_CROP_SQUARE, OSP_CROP_LANDMARKS, OSP_CROP_RECT } osp_crop_t;

typedef struct osp_cascade_step {
    char model[64];
    char labels[OSP_CASCADE_LABELS][64];
    int n_labels;                      /* 0: every label */
    int label_ids[OSP_CASCADE_LABELS]; /* the labels' classes in the model before (open) */
    osp_crop_t crop;
    float margin;
    osp_step_kind_t kind;
    char as[32];
    char score_key[40]; /* as + "Score" */
    int max_objects;
    int batch;          /* "batch": crops a run at most; 0: up to max_objects */
    char library[1024]; /* "faceLibrary", or "" */
    float threshold;    /* "matchThreshold" */
    char pattern[OSP_CASCADE_PATTERN_MAX + 1]; /* "pattern", or "" */
    regex_t *re;                               /* it compiled, whole-text anchored; or NULL */
    int b64; /* the model config's "embeddingEncoding" is "base64" */
    struct osp_cascade_step *then;
    int n_then;
    int depth; /* 0 for the top steps */
    /* bound by osp_cascade_open */
    osp_model_t *m;
    osp_faces_t *faces;
    struct osp_step_count *count; /* runs and skips so far (atomic), or NULL */
} osp_step_t;

/* Whether text (len bytes, spaces ignored) fits step s's "pattern": any
 * text does when it has none. Text that does not is left out, as if not
 * read. */
int osp_cascade_text_fits(const osp_step_t *s, const char *text, size_t len);

struct osp_step_count {
    _Atomic long runs, skipped;
};

struct osp_cascade {
    osp_step_t *steps;
    int n;
    void (*close)(struct osp_cascade *c); /* set by osp_cascade_open: its models, libraries */
};

/* Per-thread working memory: a context and a crop per depth (a step's own
 * steps run while its detections are still read), the chosen detections
 * per depth, and the fields written per detection. */
struct osp_cascade_ctx {
    osp_infer_ctx_t ctx[OSP_CASCADE_DEPTH];
    osp_image_t crop[OSP_CASCADE_DEPTH];
    osp_det_t *dets[OSP_CASCADE_DEPTH + 1]; /* [d + 1]: the boxes a detector at d found */
    int det_cap[OSP_CASCADE_DEPTH + 1];
    uint16_t *take[OSP_CASCADE_DEPTH + 1]; /* [level][i]: bit k, step k takes det i */
    int take_cap[OSP_CASCADE_DEPTH + 1];
    /* a step whose model takes any batch runs its crops together, ahead of
     * the records: per level, a context per crop of a run, and each (step,
     * detection)'s fields, written ahead into pre[level] */
    osp_infer_ctx_t *bctx[OSP_CASCADE_DEPTH];
    int bctx_n[OSP_CASCADE_DEPTH];
    osp_batch_buf_t bbuf;
    osp_jw_t pre[OSP_CASCADE_DEPTH];
    size_t *pre_at[OSP_CASCADE_DEPTH]; /* [2 * (k * n + i)]: start, end in pre, or PRE_NONE */
    int pre_cap[OSP_CASCADE_DEPTH];
    int pre_n[OSP_CASCADE_DEPTH]; /* n: the detections of the level */
    osp_jw_t out;                 /* the fields of every detection, one after another */
    size_t *at;                   /* detection i's are out.buf[at[i] .. at[i+1]) */
    int at_cap;
};

#endif
