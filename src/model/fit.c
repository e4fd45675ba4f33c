/* Which postprocessor decodes a model file whose config names none. */
#include "model/fit.h"

#include <stdio.h>
#include <string.h>

/* "name [1,1917,4], …": a model's outputs, for messages. */
static void describe_outputs(const osp_pdesc_t *d, int n, char *buf, size_t len) {
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++) {
        at += (size_t)snprintf(buf + at, len - at, "%s%s [", i ? ", " : "",
                               d[i].name ? d[i].name : "?");
        for (int k = 0; k < d[i].rank && k < OSP_POUT_MAX_DIMS && at < len; k++)
            at += (size_t)snprintf(buf + at, len - at, "%s%lld", k ? "," : "",
                                   (long long)d[i].dims[k]);
        if (at < len) at += (size_t)snprintf(buf + at, len - at, "]");
    }
}

/* One [N,K] output whose N is left open: a batch of K-wide vectors, an
 * embedder's or a classifier's (face-embed-batch.onnx is [N,512]). A
 * detector's set-up cannot tell its rows from that, and one that took it
 * would fail on the first frame; a list of boxes after NMS ([N,6], [N,7])
 * is still one. */
static int batch_rows(const osp_pdesc_t *d, int n) {
    return n == 1 && d[0].rank == 2 && d[0].dims[0] < 0 && d[0].dims[1] > 7;
}

/* No postprocessor given: the first family (post/decoder.h, in its order)
 * whose set-up takes the outputs decodes them; the model is then prepared
 * and labelled as the catalog's model of that family is, when there is one
 * (a copy of ssd-oidv4.onnx is resized and scaled to [-1, 1] as it is). */
int osp_model_fit_decoder(osp_model_t *m, const osp_pdesc_t *descs, int n, const osp_dparams_t *p,
                          char *err, size_t errlen) {
    const osp_decoder_t *fit[8];
    int k = batch_rows(descs, n) ? 0 : osp_decoder_fits(descs, n, p, fit, 8);
    if (k == 0) {
        char outs[512], names[256];
        describe_outputs(descs, n, outs, sizeof outs);
        osp_decoder_names(names, sizeof names);
        /* not a detector: an embedder's or a classifier's single [1,N] output? */
        static const char *const others[] = {"embedding", "classifier"};
        char fits[64] = "";
        for (int i = 0, at = 0; i < 2 && n == 1 && descs[0].rank == 2; i++) {
            const osp_decoder_t *d = osp_decoder_find(others[i]);
            void *st = NULL;
            char e2[128];
            if (!d || (d->setup && d->setup(descs, n, p, &st, e2, sizeof e2))) continue;
            if (st && d->free_state) d->free_state(st);
            at += snprintf(fits + at, sizeof fits - (size_t)at, "%s%s", at ? " or " : "", d->name);
        }
        if (fits[0])
            snprintf(err, errlen,
                     "its outputs (%s) fit no detector layout osprey knows; they fit "
                     "--postprocessor %s",
                     outs, fits);
        else
            snprintf(err, errlen,
                     "its outputs (%s) fit no layout osprey knows; give --postprocessor (%s)",
                     outs, names);
        return OSP_MODEL_EINVAL;
    }
    m->dec = fit[0];
    if (m->dec->setup && m->dec->setup(descs, n, p, &m->dec_state, err, errlen))
        return OSP_MODEL_EINVAL;
    snprintf(m->cfg.postprocessor, sizeof m->cfg.postprocessor, "%s", m->dec->name);
    char also[128] = "";
    for (int i = 1, at = 0; i < k && i < 8 && at < (int)sizeof also; i++)
        at += snprintf(also + at, sizeof also - (size_t)at, "%s%s", i > 1 ? ", " : "; also ",
                       fit[i]->name);
    const osp_catalog_entry_t *e = NULL;
    for (int i = 0; i < osp_catalog_count() && !e; i++)
        if (strcmp(osp_catalog_at(i)->postprocessor, m->dec->name) == 0) e = osp_catalog_at(i);
    if (e) {
        m->prep.fit = m->cfg.fit = e->fit;
        memcpy(m->prep.mean, e->mean, sizeof m->prep.mean);
        memcpy(m->prep.std, e->std, sizeof m->prep.std);
        memcpy(m->cfg.mean, e->mean, sizeof m->cfg.mean);
        memcpy(m->cfg.std, e->std, sizeof m->cfg.std);
        m->cfg.nms_iou = e->nms_iou;
        if (!m->cfg.builtin_labels) m->cfg.builtin_labels = e->labels;
    }
    fprintf(stderr, "osprey: model %s: outputs fit postprocessor %s%s%s%s%s\n", m->cfg.name,
            m->dec->name, also, e ? "; prepared as " : "", e ? e->name : "", e ? " is" : "");
    return 0;
}
