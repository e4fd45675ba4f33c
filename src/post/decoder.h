/*
 * decoder: the interface every postprocessor family implements, and the
 * registry that finds one by the name a model config gives
 * ("postprocessor": "ssd", "yolo", …). A decoder sees the model's outputs as
 * plain arrays and fills a result; it knows nothing of runtimes, threads or
 * I/O. One file per family implements one osp_decoder_t and is listed in
 * registry.c; what the families share (finding their outputs, keeping their
 * state, filling and finishing the result) is declared here too.
 */
#ifndef OSP_DECODER_H
#define OSP_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "post/post.h"

#define OSP_POUT_MAX_DIMS 8

/* Element types a decoder may be handed (the runtime's, narrowed). */
typedef enum {
    OSP_PDT_F32 = 0,
    OSP_PDT_I64 = 1,
    OSP_PDT_I32 = 2,
    OSP_PDT_U8 = 3,
    OSP_PDT_OTHER = 9
} osp_pdtype_t;

/* An output as declared by the model (at load time; dims < 0 are dynamic). */
typedef struct {
    const char *name;
    osp_pdtype_t dtype;
    int rank;
    int64_t dims[OSP_POUT_MAX_DIMS];
} osp_pdesc_t;

/* An output of one run, for ONE frame: a batch of N is handed over as N
 * single-frame views with dims[0] == 1. */
typedef struct {
    const char *name;
    osp_pdtype_t dtype;
    const void *data;
    int rank;
    int64_t dims[OSP_POUT_MAX_DIMS];
} osp_pout_t;

/* What a decode needs besides the outputs. Boxes go from the model input
 * (in_w x in_h) back to the frame: frame px = (input px - pad) / scale. */
typedef struct {
    int in_w, in_h, in_c;
    float confidence, nms_iou;
    int max_detections;
    float contain;   /* > 0: then same-label boxes this far inside (osp_nms_contained) */
    float cross_iou; /* > 0: then across labels at this IoU (osp_nms_across); 0: off */
    float scale_x, scale_y, pad_x, pad_y;
    int frame_w, frame_h;
    int top_k;          /* classifiers: how many classes to report */
    const char *option; /* a decoder-specific setting from the config, or NULL */
} osp_dparams_t;

typedef enum {
    OSP_REC_DETECTIONS = 0,
    OSP_REC_CLASSES = 1,
    OSP_REC_EMBEDDING = 2,
    OSP_REC_TEXT = 3,
} osp_rec_kind_t;

typedef struct {
    int cls;
    float score;
} osp_class_t;

/* A decoded result. Buffers are owned by the caller (a per-thread context),
 * grown with osp_dres_reserve_* and reused frame after frame. */
typedef struct {
    osp_rec_kind_t kind;
    osp_det_t *dets;
    int n_dets, det_cap;
    float *vec; /* embedding */
    int vec_dim, vec_cap;
    osp_class_t *classes;
    int n_classes, class_cap;
    char *text; /* OCR: UTF-8 */
    size_t text_len, text_cap;
    float text_score;
} osp_dres_t;

int osp_dres_reserve_dets(osp_dres_t *r, int n);
/* Append d to r->dets, growing them; -1 when memory ran out. */
int osp_dres_push(osp_dres_t *r, const osp_det_t *d);
/* Append a box given by its corners in input pixels, normalised by inv_w
 * and inv_h (1 / the input's width and height), with its score and class.
 * A box with a corner that is not finite is skipped (0). -1 when memory
 * ran out. */
int osp_dres_push_px(osp_dres_t *r, float x1, float y1, float x2, float y2, float score, int cls,
                     float inv_w, float inv_h);
int osp_dres_reserve_vec(osp_dres_t *r, int n);
int osp_dres_reserve_classes(osp_dres_t *r, int n);
int osp_dres_reserve_text(osp_dres_t *r, size_t n);
void osp_dres_reset(osp_dres_t *r);
void osp_dres_free(osp_dres_t *r);

/* Per-class NMS (p->nms_iou, p->max_detections), suppression across
 * labels when p->cross_iou is set, then mapping from
 * normalised input coordinates to frame pixels: the usual end of a
 * detector's decode. */
void osp_dres_finish_normalised(osp_dres_t *r, const osp_dparams_t *p);

/* Put r->dets in the order osp_nms sorts them into (score descending,
 * NaN last, ties in their present order), so that its sort finds them
 * sorted (presort.c says why). Keys live in r->vec, which a detections
 * record does not use. Leaves the order alone when memory runs out. */
void osp_post_presort(osp_dres_t *r);

/* A decode in the manner of osp_post_ssd, given a decoder's own state and
 * outputs: writes at most cap detections (normalised boxes) to out and
 * returns how many it found. */
typedef int (*osp_dfill_fn)(const void *state, const osp_pout_t *outs, const osp_dparams_t *p,
                            osp_det_t *out, int cap);

/* r->dets = all that fill finds, calling it again with room for them when
 * they did not fit; then osp_dres_finish_normalised. -1 with "out of
 * memory" in err when there is no room. */
int osp_dres_fill_normalised(osp_dres_t *r, osp_dfill_fn fill, const void *state,
                             const osp_pout_t *outs, const osp_dparams_t *p, char *err,
                             size_t errlen);

/* What a decoder's records hold: boxes (every detector, text detectors
 * included), or one result for the whole input. Only boxes can be cropped
 * by a cascade or followed by a tracker. */
typedef enum {
    OSP_GIVES_BOXES,
    OSP_GIVES_EMBEDDING,
    OSP_GIVES_CLASSES,
    OSP_GIVES_TEXT
} osp_gives_t;

typedef struct osp_decoder {
    const char *name;
    /* Check the outputs the model declares and prepare any state (anchors,
     * which output is which). *state may stay NULL. */
    int (*setup)(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state, char *err,
                 size_t errlen);
    /* Decode one frame's outputs into res (reset by the caller). Must not
     * change *state: several threads decode with the same state at once. */
    int (*decode)(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                  osp_dres_t *res, char *err, size_t errlen);
    void (*free_state)(void *state);
    osp_gives_t gives;
} osp_decoder_t;

/* For a setup whose state is a plain struct: *state = a heap copy of the
 * size bytes at st, which the decoder's free_state (`free`) releases;
 * -1 with "out of memory" in err when there is no room. */
int osp_decoder_state_dup(const void *st, size_t size, void **state, char *err, size_t errlen);

/* dst = src / |src| (dim values); -1 when a value is not finite. */
int osp_l2_normalise(const float *src, float *dst, int dim);

/* Index of the first float32 output of `rank` whose last dim is `last`
 * (or is not `last` when `other`), skipping index `skip`; -1 if none. */
int osp_pdesc_find(const osp_pdesc_t *outs, int n, int rank, int64_t last, int other, int skip);

/* The two outputs of a boxes + scores detector: *boxes the first float32
 * [1,N,4], *scores the first other float32 rank-3 output whose last dim is
 * score_cols (0: is not 4). 0 when both are there, else -1. */
int osp_pdesc_find_pair(const osp_pdesc_t *outs, int n, int64_t score_cols, int *boxes, int *scores);

/* Index of the first float32 output of rank 2 or 3 (the one output of a
 * single-output family: [1,R,C] or [R,C]); -1 if none. */
int osp_pdesc_find_matrix(const osp_pdesc_t *outs, int n);

/* The rows and columns of a [1,R,C] or [R,C] output: its last two dims.
 * -1 for another rank or a batch dim other than 1 (a dynamic one, < 0,
 * passes). */
int osp_pdims_rows_cols(const int64_t *dims, int rank, int64_t *rows, int64_t *cols);

/* The decoder registered under name, or NULL. */
const osp_decoder_t *osp_decoder_find(const char *name);
/* What the decoder registered under name gives; boxes for a name that is
 * not registered (the config's check refuses it elsewhere). */
osp_gives_t osp_decoder_gives(const char *name);
/* "ssd, ultraface, …": the registered names, for error messages. */
void osp_decoder_names(char *buf, size_t n);
/* The detector families whose set-up accepts these outputs, most specific
 * first (ssd and blazeface check their anchor counts, scrfd its strides,
 * ssd-nms its four outputs; yolonas takes any boxes + scores pair and yolo
 * any single output of its layouts, so they come last). Writes up to cap
 * into fit and returns how many fit. For a model file whose config names
 * no postprocessor. */
int osp_decoder_fits(const osp_pdesc_t *outs, int n, const osp_dparams_t *p,
                     const osp_decoder_t **fit, int cap);

#endif
