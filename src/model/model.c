/* A loaded model and the per-frame path: prepare, then predict + decode. */
#include "model/model.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int post_kind(const char *name, osp_post_kind_t *k) {
    static const struct { const char *name; osp_post_kind_t kind; } kinds[] = {
        {"ssd", OSP_POST_SSD},
        {"ultraface", OSP_POST_ULTRAFACE},
        {"embedding", OSP_POST_EMBEDDING},
        {"blazeface", OSP_POST_BLAZEFACE},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(name, kinds[i].name) == 0) {
            *k = kinds[i].kind;
            return 0;
        }
    return -1;
}

/* One label per line; a missing file is not an error (labels are optional). */
static int load_labels(osp_model_t *m, const char *path, const char *builtin, char *err,
                       size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f && errno == ENOENT && builtin) f = fmemopen((void *)builtin, strlen(builtin), "r");
    if (!f) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "cannot read labels %s: %s", path, strerror(errno));
        return OSP_MODEL_EINVAL;
    }
    char line[256];
    int cap = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (m->n_labels == cap) {
            cap = cap ? cap * 2 : 64;
            char **nl = realloc(m->labels, (size_t)cap * sizeof *nl);
            if (!nl) goto oom;
            m->labels = nl;
        }
        if (!(m->labels[m->n_labels] = strdup(line))) goto oom;
        m->n_labels++;
    }
    fclose(f);
    return 0;
oom:
    fclose(f);
    snprintf(err, errlen, "out of memory reading labels");
    return OSP_MODEL_ENOMEM;
}

static void default_labels_path(const char *model_path, char *out, size_t n) {
    snprintf(out, n, "%s", model_path);
    char *slash = strrchr(out, '/');
    char *dot = strrchr(out, '.');
    if (dot && (!slash || dot > slash)) *dot = '\0';
    size_t len = strlen(out);
    snprintf(out + len, n - len, ".labels");
}

/* Find an output of rank 3 whose last dim is `last` (or not `last` when
 * want_other), skipping `skip`. */
static int find_output(const osp_rt_model_t *rt, int64_t last, int want_other, int skip) {
    for (int i = 0; i < rt->n_outputs; i++) {
        const osp_tensor_desc_t *d = &rt->outputs[i];
        if (i == skip || d->rank != 3 || d->dtype != OSP_DT_F32) continue;
        if ((d->dims[2] == last) != !!want_other) return i;
    }
    return -1;
}

static int setup_decoder(osp_model_t *m, char *err, size_t errlen) {
    const osp_rt_model_t *rt = m->rt;
    switch (m->post) {
    case OSP_POST_SSD: {
        m->out_boxes = find_output(rt, 4, 0, -1);
        m->out_scores = find_output(rt, 4, 1, m->out_boxes);
        if (m->out_boxes < 0 || m->out_scores < 0) {
            snprintf(err, errlen, "postprocessor ssd needs outputs [1,N,4] (boxes) and [1,N,C] (class logits)");
            return OSP_MODEL_EINVAL;
        }
        osp_ssd_anchor_cfg_t acfg;
        osp_ssd_anchor_cfg_default(&acfg);
        int n = osp_ssd_anchors(&acfg, NULL, 0);
        int64_t want = rt->outputs[m->out_boxes].dims[1];
        if (want >= 0 && want != n) {
            snprintf(err, errlen, "postprocessor ssd: model has %lld boxes, the anchor set %d",
                     (long long)want, n);
            return OSP_MODEL_EINVAL;
        }
        if (!(m->anchors = malloc((size_t)n * sizeof *m->anchors))) return OSP_MODEL_ENOMEM;
        m->n_anchors = osp_ssd_anchors(&acfg, m->anchors, n);
        return 0;
    }
    case OSP_POST_ULTRAFACE:
        m->out_boxes = find_output(rt, 4, 0, -1);
        m->out_scores = find_output(rt, 2, 0, m->out_boxes);
        if (m->out_boxes < 0 || m->out_scores < 0) {
            snprintf(err, errlen, "postprocessor ultraface needs outputs scores [1,N,2] and boxes [1,N,4]");
            return OSP_MODEL_EINVAL;
        }
        return 0;
    case OSP_POST_EMBEDDING:
        m->out_boxes = -1;
        m->out_scores = 0;
        return 0;
    case OSP_POST_BLAZEFACE: {
        /* two grids, each a scores [1,n,1] and a regressors [1,n,16] output */
        int sc[2] = {-1, -1}, rg[2] = {-1, -1}, ns = 0, nr = 0;
        for (int i = 0; i < rt->n_outputs; i++) {
            const osp_tensor_desc_t *d = &rt->outputs[i];
            if (d->rank != 3 || d->dtype != OSP_DT_F32) continue;
            if (d->dims[2] == 1 && ns < 2) sc[ns++] = i;
            else if (d->dims[2] >= 4 && nr < 2) rg[nr++] = i;
        }
        int n = osp_blazeface_anchors(m->prep.width, NULL, 0);
        if (ns != 2 || nr != 2 ||
            rt->outputs[sc[0]].dims[1] + rt->outputs[sc[1]].dims[1] != n) {
            snprintf(err, errlen, "postprocessor blazeface needs two scores [1,n,1] and two regressor [1,n,16] outputs over %d anchors", n);
            return OSP_MODEL_EINVAL;
        }
        /* pair each scores output with the regressors of the same length,
         * the larger grid (more anchors) first, as the anchors are ordered */
        if (rt->outputs[sc[0]].dims[1] < rt->outputs[sc[1]].dims[1]) {
            int t = sc[0]; sc[0] = sc[1]; sc[1] = t;
        }
        if (rt->outputs[rg[0]].dims[1] != rt->outputs[sc[0]].dims[1]) {
            int t = rg[0]; rg[0] = rg[1]; rg[1] = t;
        }
        m->out_scores = sc[0];
        m->out_boxes = rg[0];
        m->out_scores2 = sc[1];
        m->out_boxes2 = rg[1];
        if (!(m->anchors = malloc((size_t)n * sizeof *m->anchors))) return OSP_MODEL_ENOMEM;
        m->n_anchors = osp_blazeface_anchors(m->prep.width, m->anchors, n);
        return 0;
    }
    }
    return OSP_MODEL_EINVAL;
}

/* Input geometry, layout and element type from what the model declares. */
static int setup_prep(osp_model_t *m, char *err, size_t errlen) {
    const osp_tensor_desc_t *in = &m->rt->inputs[0];
    if (m->rt->n_inputs < 1 || in->rank != 4) {
        snprintf(err, errlen, "model input %s has rank %d; an image model needs [N,C,H,W] or [N,H,W,C]",
                 m->rt->n_inputs ? in->name : "(none)", m->rt->n_inputs ? in->rank : 0);
        return OSP_MODEL_EINVAL;
    }
    if (in->dtype != OSP_DT_F32 && in->dtype != OSP_DT_U8) {
        snprintf(err, errlen, "model input %s is %s; osprey feeds float32 or uint8", in->name,
                 osp_dtype_name(in->dtype));
        return OSP_MODEL_EINVAL;
    }
    /* NHWC when the last dim is a channel count and the second is not. */
    int nhwc = (in->dims[3] == 1 || in->dims[3] == 3) && in->dims[1] > 3;
    int64_t mh = nhwc ? in->dims[1] : in->dims[2];
    int64_t mw = nhwc ? in->dims[2] : in->dims[3];
    int64_t mc = nhwc ? in->dims[3] : in->dims[1];
    osp_prep_t *p = &m->prep;
    p->width = m->cfg.width > 0 ? m->cfg.width : (mw > 0 ? (int)mw : 640);
    p->height = m->cfg.height > 0 ? m->cfg.height : (mh > 0 ? (int)mh : 640);
    if ((mw > 0 && mw != p->width) || (mh > 0 && mh != p->height)) {
        snprintf(err, errlen, "model input %s is %lldx%lld but the config says %dx%d", in->name,
                 (long long)mw, (long long)mh, p->width, p->height);
        return OSP_MODEL_EINVAL;
    }
    p->channels = mc > 0 ? (int)mc : m->cfg.channels;
    if (p->channels != 1 && p->channels != 3) {
        snprintf(err, errlen, "model input %s has %d channels; osprey feeds 1 or 3", in->name, p->channels);
        return OSP_MODEL_EINVAL;
    }
    p->fit = m->cfg.fit;
    p->layout = nhwc ? OSP_LAYOUT_NHWC : OSP_LAYOUT_NCHW;
    p->elem = in->dtype == OSP_DT_U8 ? OSP_ELEM_U8 : OSP_ELEM_F32;
    memcpy(p->mean, m->cfg.mean, sizeof p->mean);
    memcpy(p->std, m->cfg.std, sizeof p->std);
    p->pad_value = 114;
    m->batch_dynamic = in->dims[0] < 0;
    return 0;
}

int osp_model_open(const osp_model_cfg_t *cfg, const osp_backend_t *backend, osp_model_t **out,
                   char *err, size_t errlen) {
    *out = NULL;
    osp_model_t *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    m->cfg = *cfg;
    int rc;
    if (post_kind(cfg->postprocessor, &m->post)) {
        snprintf(err, errlen, "unknown postprocessor '%s' (known: ssd, ultraface, embedding, blazeface)",
                 cfg->postprocessor);
        rc = OSP_MODEL_EINVAL;
        goto fail;
    }
    osp_rt_opts_t opts = {.intra_threads = cfg->intra_threads, .device = cfg->device};
    if (!backend) backend = &osp_backend_onnxruntime;
    if (backend->load(cfg->path, &opts, &m->rt, err, errlen)) {
        rc = OSP_MODEL_ELOAD;
        goto fail;
    }
    if ((rc = setup_prep(m, err, errlen)) || (rc = setup_decoder(m, err, errlen))) {
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, errlen, "cannot use model %s: %s", cfg->path, inner);
        goto fail;
    }
    char lp[1100];
    if (cfg->labels_path[0])
        snprintf(lp, sizeof lp, "%s", cfg->labels_path);
    else
        default_labels_path(cfg->path, lp, sizeof lp);
    if ((rc = load_labels(m, lp, cfg->builtin_labels, err, errlen))) goto fail;
    fprintf(stderr, "osprey: model %s loaded on %s (input %dx%d %s %s)\n", cfg->name,
            m->rt->provider, m->prep.width, m->prep.height,
            m->prep.layout == OSP_LAYOUT_NHWC ? "NHWC" : "NCHW",
            m->prep.elem == OSP_ELEM_U8 ? "uint8" : "float32");
    *out = m;
    return OSP_MODEL_OK;
fail:
    osp_model_free(m);
    return rc;
}

void osp_model_free(osp_model_t *m) {
    if (!m) return;
    osp_rt_model_free(m->rt);
    for (int i = 0; i < m->n_labels; i++) free(m->labels[i]);
    free(m->labels);
    free(m->anchors);
    free(m);
}

const char *osp_model_label(const osp_model_t *m, int cls) {
    return (cls >= 0 && cls < m->n_labels && m->labels[cls][0]) ? m->labels[cls] : NULL;
}

void osp_infer_ctx_free(osp_infer_ctx_t *c) {
    osp_prep_scratch_free(&c->scratch);
    free(c->tensor);
    free(c->dets);
    free(c->vec);
    memset(c, 0, sizeof *c);
}

int osp_model_ensure_tensor(const osp_model_t *m, osp_infer_ctx_t *ctx) {
    size_t need = osp_prep_tensor_bytes(&m->prep);
    if (ctx->tensor_cap < need) {
        void *t = realloc(ctx->tensor, need);
        if (!t) return OSP_MODEL_ENOMEM;
        ctx->tensor = t;
        ctx->tensor_cap = need;
    }
    return OSP_MODEL_OK;
}

int osp_model_prepare(const osp_model_t *m, osp_infer_ctx_t *ctx, const osp_view_t *frame,
                      int orig_w, int orig_h, char *err, size_t errlen) {
    if (osp_model_ensure_tensor(m, ctx)) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    double t0 = now_ms();
    if (osp_prep_run(frame, &m->prep, ctx->tensor, &ctx->scratch, &ctx->geom, err, errlen))
        return OSP_MODEL_EINVAL;
    ctx->prep_ms = now_ms() - t0;
    ctx->view_w = frame->width;
    ctx->view_h = frame->height;
    ctx->frame_w = orig_w > 0 ? orig_w : frame->width;
    ctx->frame_h = orig_h > 0 ? orig_h : frame->height;
    /* After a scaled decode the view is smaller than the frame: fold that
     * into the scale so boxes map straight back to original pixels. */
    ctx->geom.scale_x *= (float)ctx->view_w / (float)ctx->frame_w;
    ctx->geom.scale_y *= (float)ctx->view_h / (float)ctx->frame_h;
    return OSP_MODEL_OK;
}

static int grow_dets(osp_infer_ctx_t *ctx, int n) {
    if (ctx->det_cap >= n) return 0;
    int cap = ctx->det_cap ? ctx->det_cap : 256;
    while (cap < n) cap *= 2;
    osp_det_t *d = realloc(ctx->dets, (size_t)cap * sizeof *d);
    if (!d) return -1;
    ctx->dets = d;
    ctx->det_cap = cap;
    return 0;
}

static int decode(osp_model_t *m, osp_infer_ctx_t *ctx, const osp_tensor_t *out,
                  osp_result_t *res, char *err, size_t errlen) {
    res->kind = m->post;
    if (m->post == OSP_POST_EMBEDDING) {
        const osp_tensor_t *o = &out[m->out_scores];
        int dim = (int)(o->bytes / sizeof(float));
        if (o->dtype != OSP_DT_F32 || dim <= 0) {
            snprintf(err, errlen, "embedding output is not a float32 vector");
            return OSP_MODEL_ERUN;
        }
        if (ctx->vec_cap < dim) {
            float *v = realloc(ctx->vec, (size_t)dim * sizeof *v);
            if (!v) return OSP_MODEL_ENOMEM;
            ctx->vec = v;
            ctx->vec_cap = dim;
        }
        const float *src = o->data;
        double ss = 0;
        for (int i = 0; i < dim; i++) ss += (double)src[i] * src[i];
        float inv = ss > 0 ? (float)(1.0 / sqrt(ss)) : 0.f;
        for (int i = 0; i < dim; i++) ctx->vec[i] = src[i] * inv;
        res->vec = ctx->vec;
        res->vec_dim = dim;
        return 0;
    }
    const osp_tensor_t *boxes = &out[m->out_boxes], *scores = &out[m->out_scores];
    int n = (int)boxes->dims[1];
    int found;
    float conf = ctx->params_set ? ctx->confidence : m->cfg.confidence;
    float nms_iou = ctx->params_set ? ctx->nms_iou : m->cfg.nms_iou;
    int max_det = ctx->params_set ? ctx->max_detections : m->cfg.max_detections;
    for (;;) {
        if (m->post == OSP_POST_SSD) {
            int ncls = (int)scores->dims[2];
            if (n != m->n_anchors || scores->dims[1] != n) {
                snprintf(err, errlen, "ssd outputs do not match the anchors (%d vs %d)", n, m->n_anchors);
                return OSP_MODEL_ERUN;
            }
            found = osp_post_ssd(boxes->data, scores->data, n, ncls, m->anchors, conf,
                                 ctx->dets, ctx->det_cap);
        } else if (m->post == OSP_POST_BLAZEFACE) {
            const osp_tensor_t *s2 = &out[m->out_scores2], *b2 = &out[m->out_boxes2];
            int n1 = (int)scores->dims[1], n2 = (int)s2->dims[1];
            if (n1 + n2 != m->n_anchors || boxes->dims[1] != n1 || b2->dims[1] != n2) {
                snprintf(err, errlen, "blazeface outputs do not match the anchors");
                return OSP_MODEL_ERUN;
            }
            found = osp_post_blazeface(scores->data, boxes->data, n1, (int)boxes->dims[2],
                                       m->anchors, m->prep.width, conf, ctx->dets,
                                       ctx->det_cap);
            int cap2 = found < ctx->det_cap ? ctx->det_cap - found : 0;
            found += osp_post_blazeface(s2->data, b2->data, n2, (int)b2->dims[2],
                                        m->anchors + n1, m->prep.width, conf,
                                        ctx->dets + (found < ctx->det_cap ? found : ctx->det_cap),
                                        cap2);
        } else {
            if (scores->dims[1] != n) {
                snprintf(err, errlen, "ultraface outputs disagree on the box count");
                return OSP_MODEL_ERUN;
            }
            found = osp_post_ultraface(scores->data, boxes->data, n, conf, ctx->dets,
                                       ctx->det_cap);
        }
        if (found <= ctx->det_cap) break;
        if (grow_dets(ctx, found)) {
            snprintf(err, errlen, "out of memory");
            return OSP_MODEL_ENOMEM;
        }
    }
    int kept = osp_nms(ctx->dets, found, nms_iou, 1, max_det);
    osp_boxes_to_frame(ctx->dets, kept, m->prep.width, m->prep.height, ctx->geom.scale_x,
                       ctx->geom.scale_y, (float)ctx->geom.pad_x, (float)ctx->geom.pad_y,
                       ctx->frame_w, ctx->frame_h);
    res->dets = ctx->dets;
    res->n_dets = kept;
    return 0;
}

int osp_model_predict(osp_model_t *m, osp_infer_ctx_t *ctx, osp_result_t *res, char *err,
                      size_t errlen) {
    memset(res, 0, sizeof *res);
    double t0 = now_ms();
    const osp_tensor_desc_t *d = &m->rt->inputs[0];
    osp_tensor_t in = {.dtype = d->dtype, .rank = 4, .data = ctx->tensor,
                       .bytes = osp_prep_tensor_bytes(&m->prep)};
    int nhwc = m->prep.layout == OSP_LAYOUT_NHWC;
    in.dims[0] = 1;
    in.dims[1] = nhwc ? m->prep.height : m->prep.channels;
    in.dims[2] = nhwc ? m->prep.width : m->prep.height;
    in.dims[3] = nhwc ? m->prep.channels : m->prep.width;
    if (m->rt->n_outputs > 16) {
        snprintf(err, errlen, "model has too many outputs");
        return OSP_MODEL_ERUN;
    }
    osp_tensor_t out[16];
    memset(out, 0, sizeof out);
    if (osp_rt_run(m->rt, &in, out, err, errlen)) return OSP_MODEL_ERUN;
    int rc = decode(m, ctx, out, res, err, errlen);
    osp_rt_release_outputs(m->rt, out);
    res->predict_ms = now_ms() - t0;
    res->preprocess_ms = ctx->prep_ms;
    res->frame_w = ctx->frame_w;
    res->frame_h = ctx->frame_h;
    return rc;
}
