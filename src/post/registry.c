/* The postprocessor registry, the state a decoder keeps, and the result
 * buffers decoders fill. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "post/decoder.h"

extern const osp_decoder_t osp_decoder_ssd;
extern const osp_decoder_t osp_decoder_ultraface;
extern const osp_decoder_t osp_decoder_blazeface;
extern const osp_decoder_t osp_decoder_embedding;
extern const osp_decoder_t osp_decoder_ctc;
extern const osp_decoder_t osp_decoder_dbnet;
extern const osp_decoder_t osp_decoder_classifier;
extern const osp_decoder_t osp_decoder_yolo;
extern const osp_decoder_t osp_decoder_yolox;
extern const osp_decoder_t osp_decoder_yolonas;
extern const osp_decoder_t osp_decoder_ssd_nms;
extern const osp_decoder_t osp_decoder_scrfd;

/* One line per family; a new family adds its file and its line here. */
static const osp_decoder_t *const REGISTRY[] = {
    &osp_decoder_ssd,   &osp_decoder_ultraface, &osp_decoder_blazeface,  &osp_decoder_embedding,
    &osp_decoder_ctc,   &osp_decoder_dbnet,     &osp_decoder_classifier, &osp_decoder_yolo,
    &osp_decoder_yolox, &osp_decoder_yolonas,   &osp_decoder_ssd_nms,    &osp_decoder_scrfd,
};

const osp_decoder_t *osp_decoder_find(const char *name) {
    for (size_t i = 0; name && i < sizeof REGISTRY / sizeof REGISTRY[0]; i++)
        if (strcmp(REGISTRY[i]->name, name) == 0) return REGISTRY[i];
    return NULL;
}

osp_gives_t osp_decoder_gives(const char *name) {
    const osp_decoder_t *d = osp_decoder_find(name);
    return d ? d->gives : OSP_GIVES_BOXES;
}

void osp_decoder_names(char *buf, size_t n) {
    size_t len = 0;
    if (n) buf[0] = '\0';
    for (size_t i = 0; i < sizeof REGISTRY / sizeof REGISTRY[0] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", REGISTRY[i]->name);
}

/* The families osp_decoder_fits tries, in its order of preference. */
static const osp_decoder_t *const FAMILIES[] = {
    &osp_decoder_ssd,       &osp_decoder_blazeface, &osp_decoder_scrfd, &osp_decoder_ssd_nms,
    &osp_decoder_ultraface, &osp_decoder_yolonas,   &osp_decoder_yolo,  &osp_decoder_yolox,
};

int osp_decoder_fits(const osp_pdesc_t *outs, int n, const osp_dparams_t *p,
                     const osp_decoder_t **fit, int cap) {
    int k = 0;
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++) {
        const osp_decoder_t *d = FAMILIES[i];
        void *state = NULL;
        char err[256];
        if (d->setup && d->setup(outs, n, p, &state, err, sizeof err)) continue;
        if (state && d->free_state) d->free_state(state);
        if (k < cap) fit[k] = d;
        k++;
    }
    return k;
}

int osp_decoder_state_dup(const void *st, size_t size, void **state, char *err, size_t errlen) {
    void *copy = malloc(size);
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(copy, st, size);
    *state = copy;
    return 0;
}

static int grow(void **p, int *cap, int want, size_t elem) {
    if (want <= *cap) return 0;
    int c = *cap ? *cap : 64;
    while (c < want) c *= 2;
    void *n = realloc(*p, (size_t)c * elem);
    if (!n) return -1;
    *p = n;
    *cap = c;
    return 0;
}

int osp_dres_reserve_dets(osp_dres_t *r, int n) {
    return grow((void **)&r->dets, &r->det_cap, n, sizeof *r->dets);
}
int osp_dres_push(osp_dres_t *r, const osp_det_t *d) {
    if (r->n_dets == r->det_cap && osp_dres_reserve_dets(r, r->n_dets + 1)) return -1;
    r->dets[r->n_dets++] = *d;
    return 0;
}

int osp_dres_push_px(osp_dres_t *r, float x1, float y1, float x2, float y2, float score, int cls,
                     float inv_w, float inv_h) {
    if (!isfinite(x1) || !isfinite(y1) || !isfinite(x2) || !isfinite(y2)) return 0;
    return osp_dres_push(r, &(osp_det_t){.x1 = x1 * inv_w,
                                         .y1 = y1 * inv_h,
                                         .x2 = x2 * inv_w,
                                         .y2 = y2 * inv_h,
                                         .score = score,
                                         .cls = cls});
}

int osp_dres_reserve_vec(osp_dres_t *r, int n) {
    return grow((void **)&r->vec, &r->vec_cap, n, sizeof *r->vec);
}
int osp_dres_reserve_classes(osp_dres_t *r, int n) {
    return grow((void **)&r->classes, &r->class_cap, n, sizeof *r->classes);
}
int osp_dres_reserve_text(osp_dres_t *r, size_t n) {
    if (n <= r->text_cap) return 0;
    size_t c = r->text_cap ? r->text_cap : 64;
    while (c < n) c *= 2;
    char *t = realloc(r->text, c);
    if (!t) return -1;
    r->text = t;
    r->text_cap = c;
    return 0;
}

void osp_dres_reset(osp_dres_t *r) {
    r->kind = OSP_REC_DETECTIONS;
    r->n_dets = r->vec_dim = r->n_classes = 0;
    r->text_len = 0;
    if (r->text) r->text[0] = '\0';
    r->text_score = 0;
}

void osp_dres_free(osp_dres_t *r) {
    free(r->dets);
    free(r->vec);
    free(r->classes);
    free(r->text);
    memset(r, 0, sizeof *r);
}

void osp_dres_finish_normalised(osp_dres_t *r, const osp_dparams_t *p) {
    r->n_dets = osp_nms(r->dets, r->n_dets, p->nms_iou, 1, p->max_detections);
    r->n_dets = osp_nms_contained(r->dets, r->n_dets, p->contain);
    r->n_dets = osp_nms_across(r->dets, r->n_dets, p->cross_iou);
    osp_boxes_to_frame(r->dets, r->n_dets, p->in_w, p->in_h, p->scale_x, p->scale_y, p->pad_x,
                       p->pad_y, p->frame_w, p->frame_h);
}

int osp_dres_fill_normalised(osp_dres_t *r, osp_dfill_fn fill, const void *state,
                             const osp_pout_t *outs, const osp_dparams_t *p, char *err,
                             size_t errlen) {
    int found;
    while ((found = fill(state, outs, p, r->dets, r->det_cap)) > r->det_cap)
        if (osp_dres_reserve_dets(r, found)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    r->n_dets = found;
    osp_dres_finish_normalised(r, p);
    return 0;
}
