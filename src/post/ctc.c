/*
 * The "ctc" postprocessor: greedy CTC decoding of a text recognizer's
 * output [1, T, C] (or [T, C]): per time step the most likely class, repeats
 * collapsed, blanks dropped. Class 0 is the blank, classes 1..N are the N
 * lines of the alphabet file (the model's labels file, handed over as
 * p->option at setup), and a class N+1, when the model has one, is a space
 * (PP-OCR's use_space_char). Rows that are already probabilities (PP-OCR
 * ends in a softmax) are used as they are; logits (EasyOCR) are softmaxed.
 *
 * The result is kind text: the UTF-8 string, the mean confidence of its
 * characters (0 for an empty string), and one (class, probability) per
 * character in res->classes. A time step whose values are all non-finite
 * counts as a blank; non-finite values never win a step.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "post/decoder.h"

typedef struct {
    char **sym; /* the alphabet: UTF-8 strings of classes 1..n */
    int n;
    int out; /* which output is the sequence */
} ctc_state_t;

static void ctc_free(void *state) {
    ctc_state_t *s = state;
    if (!s) return;
    for (int i = 0; i < s->n; i++) free(s->sym[i]);
    free(s->sym);
    free(s);
}

static int load_alphabet(ctc_state_t *s, const char *path, char *err, size_t errlen) {
    FILE *f = path && *path ? fopen(path, "r") : NULL;
    if (!f) {
        snprintf(err, errlen,
                 "postprocessor ctc needs an alphabet: one symbol a line in the labels file (%s: %s)",
                 path && *path ? path : "none given",
                 path && *path ? strerror(errno) : "set \"labels\"");
        return -1;
    }
    char line[256];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (s->n == cap) {
            cap = cap ? cap * 2 : 256;
            char **ns = realloc(s->sym, (size_t)cap * sizeof *ns);
            if (!ns) goto oom;
            s->sym = ns;
        }
        if (!(s->sym[s->n] = strdup(line))) goto oom;
        s->n++;
    }
    fclose(f);
    if (s->n == 0) {
        snprintf(err, errlen, "postprocessor ctc: the alphabet %s is empty", path);
        return -1;
    }
    return 0;
oom:
    fclose(f);
    snprintf(err, errlen, "out of memory reading the alphabet %s", path);
    return -1;
}

static int ctc_setup(const osp_pdesc_t *outs, int n, const osp_dparams_t *p, void **state,
                     char *err, size_t errlen) {
    int o = osp_pdesc_find_matrix(outs, n);
    if (o < 0) {
        snprintf(err, errlen, "postprocessor ctc needs a float32 output [N,T,C] or [T,C]");
        return -1;
    }
    ctc_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    s->out = o;
    if (load_alphabet(s, p->option, err, errlen)) {
        ctc_free(s);
        return -1;
    }
    int64_t c = outs[o].dims[outs[o].rank - 1];
    if (c > 0 && c != s->n + 1 && c != s->n + 2) {
        snprintf(err, errlen,
                 "postprocessor ctc: the model has %lld classes but the alphabet has %d symbols "
                 "(expected %d: blank + alphabet, or %d with a trailing space)",
                 (long long)c, s->n, s->n + 1, s->n + 2);
        ctc_free(s);
        return -1;
    }
    *state = s;
    return 0;
}

/* The winning class of one step and its probability; -1 when no value is
 * finite. */
static int step_best(const float *row, int64_t c, float *prob) {
    int best = -1;
    float mx = 0;
    double sum = 0;
    int probs = 1;
    for (int64_t k = 0; k < c; k++) {
        float v = row[k];
        if (!isfinite(v)) continue;
        if (best < 0 || v > mx) best = (int)k, mx = v;
        if (v < 0 || v > 1) probs = 0;
        sum += v;
    }
    if (best < 0) return -1;
    if (probs && fabs(sum - 1.0) < 1e-2) {
        *prob = mx;
        return best;
    }
    double z = 0;
    for (int64_t k = 0; k < c; k++)
        if (isfinite(row[k])) z += exp((double)row[k] - mx);
    *prob = (float)(1.0 / z);
    return best;
}

static int ctc_decode(const void *state, const osp_pout_t *outs, int n, const osp_dparams_t *p,
                      osp_dres_t *res, char *err, size_t errlen) {
    (void)p;
    const ctc_state_t *s = state;
    if (s->out >= n || outs[s->out].dtype != OSP_PDT_F32) {
        snprintf(err, errlen, "ctc: the sequence output is missing");
        return -1;
    }
    const osp_pout_t *o = &outs[s->out];
    int64_t t = o->rank == 3 ? o->dims[1] : o->dims[0], c = o->dims[o->rank - 1];
    if (o->rank == 3 && o->dims[0] != 1) {
        snprintf(err, errlen, "ctc: output batch is %lld, expected 1", (long long)o->dims[0]);
        return -1;
    }
    if (t < 0 || c < 1 || t > (1 << 20) || (c != s->n + 1 && c != s->n + 2)) {
        snprintf(err, errlen, "ctc: output [%lld,%lld] does not fit an alphabet of %d",
                 (long long)t, (long long)c, s->n);
        return -1;
    }
    res->kind = OSP_REC_TEXT;
    res->text_len = 0;
    res->text_score = 0;
    if (osp_dres_reserve_text(res, 1)) goto oom;
    res->text[0] = '\0';
    const float *data = o->data;
    int prev = 0;
    double conf = 0;
    for (int64_t i = 0; i < t; i++) {
        float prob = 0;
        int k = step_best(data + i * c, c, &prob);
        if (k < 0) k = 0; /* nothing finite: a blank */
        if (k != 0 && k != prev) {
            const char *sym = k <= s->n ? s->sym[k - 1] : " ";
            size_t len = strlen(sym);
            if (osp_dres_reserve_text(res, res->text_len + len + 1) ||
                osp_dres_reserve_classes(res, res->n_classes + 1))
                goto oom;
            memcpy(res->text + res->text_len, sym, len + 1);
            res->text_len += len;
            res->classes[res->n_classes].cls = k;
            res->classes[res->n_classes].score = prob;
            res->n_classes++;
            conf += prob;
        }
        prev = k;
    }
    res->text_score = res->n_classes ? (float)(conf / res->n_classes) : 0.f;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

const osp_decoder_t osp_decoder_ctc = {"ctc", ctc_setup, ctc_decode, ctc_free, OSP_GIVES_TEXT};
