/*
 * SSD anchors and box decoding for the TF object-detection API models
 * (the default detector: SSD-MobileNetV2, Open Images V4, 1917 anchors).
 *
 * Anchors follow create_ssd_anchors() + MultipleGridAnchorGenerator of the
 * TF object-detection API, which is also what MediaPipe's SsdAnchorsCalculator
 * reproduces for this very model (objectron's oid_v4 graph): base anchor size
 * 1.0, stride 1/f, offset 0.5/f, h = s/sqrt(r), w = s*sqrt(r), order layer,
 * y, x, anchor. No clipping: create_ssd_anchors passes no clip window and
 * MediaPipe does not clip, and clipping would move the centres the box
 * encodings were trained against.
 */
#include "post/post.h"

#include <limits.h>
#include <math.h>

void osp_ssd_anchor_cfg_default(osp_ssd_anchor_cfg_t *cfg) {
    static const int fm[] = {19, 10, 5, 3, 2, 1};
    /* The model's order (MediaPipe's objectron oid_v4 graph lists 1, 2, 0.5,
     * 3, 0.3333), not create_ssd_anchors' default (1, 2, 3, 0.5, 1/3): the
     * order fixes which box-encoding slot belongs to which anchor. 1/3 and
     * 0.3333 give sizes that differ by 5e-5 relative. */
    static const float ar[] = {1.0f, 2.0f, 0.5f, 3.0f, 1.0f / 3.0f};
    *cfg = (osp_ssd_anchor_cfg_t){0};
    cfg->num_layers = 6;
    for (int i = 0; i < 6; i++) cfg->feature_maps[i] = fm[i];
    cfg->min_scale = 0.2f;
    cfg->max_scale = 0.95f;
    for (int i = 0; i < 5; i++) cfg->aspect_ratios[i] = ar[i];
    cfg->num_aspect_ratios = 5;
    cfg->reduce_boxes_in_lowest_layer = 1;
    cfg->interpolated_scale_aspect_ratio = 1.0f;
}

/* Scale of layer i; i == num_layers is the "next" scale of the last layer. */
static double layer_scale(const osp_ssd_anchor_cfg_t *cfg, int i) {
    if (i >= cfg->num_layers) return 1.0;
    /* TF divides by zero here; MediaPipe takes the midpoint. */
    if (cfg->num_layers == 1) return 0.5 * ((double)cfg->min_scale + (double)cfg->max_scale);
    return (double)cfg->min_scale +
           ((double)cfg->max_scale - (double)cfg->min_scale) * i / (cfg->num_layers - 1);
}

/* The (scale, ratio) pairs placed at every cell of layer i. */
static int layer_specs(const osp_ssd_anchor_cfg_t *cfg, int i, double *scales, double *ratios) {
    double s = layer_scale(cfg, i);
    int k = 0;
    if (i == 0 && cfg->reduce_boxes_in_lowest_layer) {
        scales[k] = 0.1, ratios[k++] = 1.0;
        scales[k] = s, ratios[k++] = 2.0;
        scales[k] = s, ratios[k++] = 0.5;
        return k;
    }
    for (int a = 0; a < cfg->num_aspect_ratios; a++)
        scales[k] = s, ratios[k++] = cfg->aspect_ratios[a];
    if (cfg->interpolated_scale_aspect_ratio > 0.0f) {
        scales[k] = sqrt(s * layer_scale(cfg, i + 1));
        ratios[k++] = cfg->interpolated_scale_aspect_ratio;
    }
    return k;
}

static int cfg_valid(const osp_ssd_anchor_cfg_t *cfg) {
    if (!cfg || cfg->num_layers < 1 || cfg->num_layers > 8) return 0;
    if (cfg->num_aspect_ratios < 0 || cfg->num_aspect_ratios > 8) return 0;
    for (int i = 0; i < cfg->num_layers; i++)
        if (cfg->feature_maps[i] < 1 || cfg->feature_maps[i] > 4096) return 0;
    for (int a = 0; a < cfg->num_aspect_ratios; a++)
        if (!(cfg->aspect_ratios[a] > 0.0f)) return 0;
    return 1;
}

/* An invalid config (no layers, a non-positive map size or ratio, more
 * entries than the arrays hold) makes no anchors: returns 0. */
int osp_ssd_anchors(const osp_ssd_anchor_cfg_t *cfg, osp_anchor_t *out, int cap) {
    if (!cfg_valid(cfg)) return 0;
    if (!out) cap = 0;
    int n = 0;
    for (int layer = 0; layer < cfg->num_layers; layer++) {
        double scales[9], ratios[9], hs[9], ws[9];
        int k = layer_specs(cfg, layer, scales, ratios);
        for (int a = 0; a < k; a++) {
            double r = sqrt(ratios[a]);
            hs[a] = scales[a] / r;
            ws[a] = scales[a] * r;
        }
        int f = cfg->feature_maps[layer];
        for (int y = 0; y < f; y++) {
            for (int x = 0; x < f; x++) {
                for (int a = 0; a < k; a++, n++) {
                    if (n >= cap) continue;
                    out[n].y = (float)((y + 0.5) / f);
                    out[n].x = (float)((x + 0.5) / f);
                    out[n].h = (float)hs[a];
                    out[n].w = (float)ws[a];
                }
            }
        }
    }
    return n;
}

static inline float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The logit below which no score can reach thresh. It sits a little below
 * log(t/(1-t)) so that float rounding in the sigmoid never drops a box the
 * exact test (score >= thresh, done afterwards) would keep: near 1 one ulp of
 * the score is worth a lot of logit, hence the 1/(1-t) term. */
static float logit_floor(float thresh) {
    if (!(thresh > 0.0f)) return -INFINITY;
    if (thresh >= 1.0f) return 15.0f; /* expf(-15) still keeps the float sigmoid below 1 */
    double t = thresh;
    return (float)(log(t / (1.0 - t)) - 1e-3 - 1e-6 / (1.0 - t));
}

int osp_post_ssd(const float *box_enc, const float *logits, int n, int ncls,
                 const osp_anchor_t *anchors, float thresh, osp_det_t *out, int cap) {
    if (!box_enc || !logits || !anchors || n <= 0 || ncls < 2 || thresh > 1.0f) return 0;
    if (!out) cap = 0;
    const float lt = logit_floor(thresh);
    int found = 0;
    for (int i = 0; i < n; i++) {
        const float *lg = logits + (size_t)i * (size_t)ncls;
        int decoded = 0;
        float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
        for (int c = 1; c < ncls; c++) {
            /* Written so that a NaN logit is skipped too. */
            if (!(lg[c] >= lt)) continue;
            float score = sigmoidf(lg[c]);
            if (!(score >= thresh)) continue;
            if (!decoded) {
                const float *e = box_enc + (size_t)i * 4;
                const osp_anchor_t *an = &anchors[i];
                float yc = e[0] / 10.0f * an->h + an->y;
                float xc = e[1] / 10.0f * an->w + an->x;
                float h = expf(e[2] / 5.0f) * an->h;
                float w = expf(e[3] / 5.0f) * an->w;
                x1 = xc - w * 0.5f;
                y1 = yc - h * 0.5f;
                x2 = xc + w * 0.5f;
                y2 = yc + h * 0.5f;
                decoded = 1;
            }
            if (found < cap)
                out[found] = (osp_det_t){.x1 = x1, .y1 = y1, .x2 = x2, .y2 = y2, .score = score, .cls = c};
            if (found < INT_MAX) found++;
        }
    }
    return found;
}

/* ---- the "ssd" postprocessor ------------------------------------------------ */

#include <stdio.h>
#include <stdlib.h>

#include "post/decoder.h"

typedef struct {
    int boxes, scores;
    int n;
    osp_anchor_t *anchors;
} ssd_state_t;

static int ssd_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                     char *err, size_t errlen) {
    (void)p;
    int ob, os;
    if (osp_pdesc_find_pair(outs, n, 0, &ob, &os)) {
        snprintf(err, errlen,
                 "postprocessor ssd needs outputs [1,N,4] (boxes) and [1,N,C] (class logits)");
        return -1;
    }
    osp_ssd_anchor_cfg_t cfg;
    osp_ssd_anchor_cfg_default(&cfg);
    int na = osp_ssd_anchors(&cfg, NULL, 0);
    if ((outs[ob].dims[1] >= 0 && outs[ob].dims[1] != na) ||
        (outs[os].dims[1] >= 0 && outs[os].dims[1] != na)) {
        snprintf(err, errlen, "postprocessor ssd: the model has %lld boxes, the anchor set %d",
                 (long long)outs[ob].dims[1], na);
        return -1;
    }
    ssd_state_t *st = calloc(1, sizeof *st);
    if (!st || !(st->anchors = malloc((size_t)na * sizeof *st->anchors))) {
        free(st);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    st->boxes = ob;
    st->scores = os;
    st->n = osp_ssd_anchors(&cfg, st->anchors, na);
    *state = st;
    return 0;
}

static int ssd_fill(const void *state, const osp_pout_t *outs, const osp_dparams_t *p,
                    osp_det_t *out, int cap) {
    const ssd_state_t *st = state;
    const osp_pout_t *b = &outs[st->boxes], *s = &outs[st->scores];
    return osp_post_ssd(b->data, s->data, st->n, (int)s->dims[2], st->anchors, p->confidence, out,
                        cap);
}

static int ssd_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                      osp_dres_t *res, char *err, size_t errlen) {
    (void)n;
    const ssd_state_t *st = state;
    const osp_pout_t *b = &outs[st->boxes], *s = &outs[st->scores];
    if (b->dims[1] != st->n || s->dims[1] != st->n) {
        snprintf(err, errlen, "ssd outputs have %lld boxes, the anchor set %d",
                 (long long)b->dims[1], st->n);
        return -1;
    }
    return osp_dres_fill_normalised(res, ssd_fill, st, outs, p, err, errlen);
}

static void ssd_free(void *state) {
    ssd_state_t *st = state;
    if (st) free(st->anchors);
    free(st);
}

const osp_decoder_t osp_decoder_ssd = {"ssd", ssd_setup, ssd_decode, ssd_free, OSP_GIVES_BOXES};
