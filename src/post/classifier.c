/*
 * The "classifier" postprocessor: the model's first float32 output as one
 * score per class, reported as the top p->top_k classes whose score reaches
 * p->confidence, best first (kind classes).
 *
 * Scores: the decoder option (the config's "postprocessor":
 * "classifier:sigmoid" or "classifier:softmax") chooses the activation.
 *   softmax (the default): outputs that are already probabilities summing to
 *     1 (a graph ending in Softmax) are used as they are, anything else is
 *     treated as logits and softmaxed;
 *   sigmoid: independent labels, each logit through the logistic function.
 * A non-finite output is skipped: it takes part in no softmax sum and is
 * never reported.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "post/decoder.h"

#define OSP_CLS_MAX 100000

enum { ACT_SOFTMAX = 0, ACT_SIGMOID = 1 };

static int act_of(const char *option) {
    return option && strcmp(option, "sigmoid") == 0 ? ACT_SIGMOID : ACT_SOFTMAX;
}

static int cls_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                     char *err, size_t errlen) {
    (void)state;
    if (n < 1 || outs[0].dtype != OSP_PDT_F32) {
        snprintf(err, errlen, "postprocessor classifier needs a float32 first output");
        return -1;
    }
    if (p->option && *p->option && strcmp(p->option, "sigmoid") && strcmp(p->option, "softmax")) {
        snprintf(err, errlen,
                 "postprocessor classifier: unknown activation '%s' (softmax or sigmoid)", p->option);
        return -1;
    }
    return 0;
}

/* Insert (cls, score) into the best-first list top (*n entries, at most k);
 * on ties the lower class stays first. */
static void top_insert(osp_class_t *top, int *n, int k, int cls, float score) {
    int i;
    if (*n < k)
        i = (*n)++;
    else if (score > top[k - 1].score)
        i = k - 1;
    else
        return;
    while (i > 0 && top[i - 1].score < score) {
        top[i] = top[i - 1];
        i--;
    }
    top[i].cls = cls;
    top[i].score = score;
}

static int cls_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                      osp_dres_t *res, char *err, size_t errlen) {
    (void)state;
    (void)n;
    size_t count = 1;
    for (int i = 0; i < outs[0].rank; i++) {
        if (outs[0].dims[i] < 0 || count > OSP_CLS_MAX)
            count = OSP_CLS_MAX + 1;
        else
            count *= (size_t)outs[0].dims[i];
    }
    if (count > OSP_CLS_MAX) {
        snprintf(err, errlen, "classifier output has too many values");
        return -1;
    }
    int k = p->top_k > 0 ? p->top_k : 5;
    if ((size_t)k > count) k = (int)count;
    res->kind = OSP_REC_CLASSES;
    res->n_classes = 0;
    if (count == 0 || k == 0) return 0;
    if (osp_dres_reserve_classes(res, k)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const float *v = outs[0].data;
    int act = act_of(p->option);
    double sum = 0, z = 0;
    float mx = -INFINITY;
    int probs = 1, finite = 0;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(v[i])) continue;
        finite++;
        if (v[i] < 0 || v[i] > 1) probs = 0;
        sum += v[i];
        if (v[i] > mx) mx = v[i];
    }
    if (!finite) return 0;
    int as_is = act == ACT_SOFTMAX && probs && fabs(sum - 1.0) < 1e-3 * (1 + sqrt((double)finite));
    if (act == ACT_SOFTMAX && !as_is)
        for (size_t i = 0; i < count; i++)
            if (isfinite(v[i])) z += exp((double)v[i] - mx);
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(v[i])) continue;
        float s;
        if (act == ACT_SIGMOID)
            s = (float)(1.0 / (1.0 + exp(-(double)v[i])));
        else if (as_is)
            s = v[i];
        else
            s = (float)(exp((double)v[i] - mx) / z);
        if (!(s >= p->confidence)) continue;
        top_insert(res->classes, &res->n_classes, k, (int)i, s);
    }
    return 0;
}

const osp_decoder_t osp_decoder_classifier = {"classifier", cls_setup, cls_decode, NULL,
                                              OSP_GIVES_CLASSES};
