/* A loaded model and the per-frame path: prepare, then predict + decode. */
#include "model/model.h"
#include "base/clock.h"
#include "base/thread.h"
#include "image/text.h"
#include "model/cascade.h"
#include "model/fit.h"
#include "model/paths.h"
#include "log/log.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* post/labels_coco.c: the built-in labels of a postprocessor family, or NULL */
const char *osp_post_default_labels(const char *postprocessor);

/* One label per line; a missing file is not an error (labels are optional).
 * Only a regular file is read, and at most OSP_LABELS_MAX_BYTES of it in
 * OSP_LABELS_MAX_COUNT lines: a labels key naming /dev/zero once grew the
 * server by 250 MB/s until the load's bound. */
static int load_labels(osp_model_t *m, const char *path, const char *builtin, char *err,
                       size_t errlen) {
    FILE *f = NULL;
    int fd = path[0] ? osp_paths_open(path, "labels file", OSP_LABELS_MAX_BYTES, NULL, err, errlen)
                     : OSP_PATHS_ENOENT;
    if (fd >= 0 && !(f = fdopen(fd, "r"))) close(fd);
    if (fd == OSP_PATHS_ENOENT) {
        if (!builtin) return 0;
        f = fmemopen((void *)builtin, strlen(builtin), "r");
    }
    if (!f) {
        if (fd >= 0) snprintf(err, errlen, "cannot read labels %s: %s", path, strerror(errno));
        return OSP_MODEL_EINVAL;
    }
    char line[256];
    int cap = 0;
    size_t bytes = 0;
    while (m->n_labels < OSP_LABELS_MAX_COUNT && bytes < OSP_LABELS_MAX_BYTES &&
           fgets(line, sizeof line, f)) {
        bytes += strlen(line);
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

static osp_pdtype_t pdtype(osp_dtype_t t) {
    switch (t) {
    case OSP_DT_F32: return OSP_PDT_F32;
    case OSP_DT_I64: return OSP_PDT_I64;
    case OSP_DT_I32: return OSP_PDT_I32;
    case OSP_DT_U8: return OSP_PDT_U8;
    default: return OSP_PDT_OTHER;
    }
}

/* "classifier:sigmoid": the decoder's name, then its option from the config. */
static const char *dec_option(const osp_model_t *m) {
    const char *c = strchr(m->cfg.postprocessor, ':');
    return c && c[1] ? c + 1 : NULL;
}

/* A CTC recognizer reads one text line: resized to the input height keeping
 * its aspect (image/text.h) rather than letterboxed and, when the model's
 * width is dynamic (PP-OCR), run at the line's own width, at least 320. */
static int text_prep(const osp_model_t *m, osp_text_prep_t *tp) {
    if (!m->dec || strcmp(m->dec->name, "ctc") != 0 || m->prep.elem != OSP_ELEM_F32) return 0;
    int nhwc = m->prep.layout == OSP_LAYOUT_NHWC;
    int dyn = m->rt->inputs[0].dims[nhwc ? 2 : 3] < 0 && m->prep.channels == 3;
    memset(tp, 0, sizeof *tp);
    tp->height = m->prep.height;
    tp->max_w = m->prep.width;
    tp->min_w = dyn && tp->max_w > 320 ? 320 : tp->max_w;
    tp->channels = m->prep.channels;
    tp->nhwc = nhwc;
    tp->bicubic = tp->pad_edge = m->prep.channels == 1; /* the seed's 1-channel recognizers */
    memcpy(tp->mean, m->prep.mean, sizeof tp->mean);
    memcpy(tp->std, m->prep.std, sizeof tp->std);
    return 1;
}

/* The decode parameters of a frame: the model's settings, or the ctx's
 * per-request snapshot, and the frame geometry of the last prepare. */
static void dparams(const osp_model_t *m, const osp_infer_ctx_t *ctx, osp_dparams_t *p) {
    memset(p, 0, sizeof *p);
    p->in_w = m->prep.width;
    p->in_h = m->prep.height;
    p->in_c = m->prep.channels;
    p->confidence = ctx && ctx->params_set ? ctx->confidence : m->cfg.confidence;
    p->nms_iou = ctx && ctx->params_set ? ctx->nms_iou : m->cfg.nms_iou;
    p->max_detections = ctx && ctx->params_set ? ctx->max_detections : m->cfg.max_detections;
    p->cross_iou = m->cfg.cross_iou > 0 ? m->cfg.cross_iou : 0;
    p->contain = m->cfg.contain > 0 ? m->cfg.contain : 0;
    p->top_k = 5;
    p->option = dec_option(m);
    if (ctx) {
        p->scale_x = ctx->geom.scale_x;
        p->scale_y = ctx->geom.scale_y;
        p->pad_x = (float)ctx->geom.pad_x;
        p->pad_y = (float)ctx->geom.pad_y;
        p->frame_w = ctx->frame_w;
        p->frame_h = ctx->frame_h;
    }
}

static int setup_decoder(osp_model_t *m, char *err, size_t errlen) {
    const osp_rt_model_t *rt = m->rt;
    osp_pdesc_t descs[16];
    if (rt->n_outputs > 16) {
        snprintf(err, errlen, "model has %d outputs; osprey reads at most 16", rt->n_outputs);
        return OSP_MODEL_EINVAL;
    }
    for (int i = 0; i < rt->n_outputs; i++) {
        descs[i].name = rt->outputs[i].name;
        descs[i].dtype = pdtype(rt->outputs[i].dtype);
        descs[i].rank = rt->outputs[i].rank;
        memcpy(descs[i].dims, rt->outputs[i].dims, sizeof descs[i].dims);
    }
    osp_dparams_t p;
    dparams(m, NULL, &p);
    char lp[1100];
    if (strcmp(m->dec->name, "ctc") == 0) {
        /* the CTC alphabet is the model's labels file; the decoder reads it here */
        if (m->cfg.labels_path[0] || m->cfg.labels_none)
            snprintf(lp, sizeof lp, "%s", m->cfg.labels_path);
        else
            default_labels_path(m->cfg.path, lp, sizeof lp);
        /* the decoder reads it whole: a regular file of bounded size only */
        int fd = osp_paths_open(lp, "alphabet", OSP_LABELS_MAX_BYTES, NULL, err, errlen);
        if (fd >= 0) close(fd);
        if (fd < 0 && fd != OSP_PATHS_ENOENT) return OSP_MODEL_EINVAL;
        p.option = lp;
    }
    if (m->cfg.postprocessor_auto)
        return osp_model_fit_decoder(m, descs, rt->n_outputs, &p, err, errlen);
    if (m->dec->setup && m->dec->setup(descs, rt->n_outputs, &p, &m->dec_state, err, errlen)) {
        /* say which names would fit, when some would */
        const osp_decoder_t *fit[8];
        int k = osp_decoder_fits(descs, rt->n_outputs, &p, fit, 8);
        size_t len = strlen(err);
        for (int i = 0; i < k && i < 8 && len < errlen; i++)
            len += (size_t)snprintf(err + len, errlen - len, "%s%s",
                                    i ? ", " : "; its outputs fit --postprocessor ", fit[i]->name);
        return OSP_MODEL_EINVAL;
    }
    return 0;
}

/* Input geometry, layout and element type from what the model declares. */
static int setup_prep(osp_model_t *m, char *err, size_t errlen) {
    const osp_tensor_desc_t *in = &m->rt->inputs[0];
    if (m->rt->n_inputs < 1 || in->rank != 4) {
        snprintf(err, errlen,
                 "model input %s has rank %d; an image model needs [N,C,H,W] or [N,H,W,C]",
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
        snprintf(err, errlen, "model input %s has %d channels; osprey feeds 1 or 3", in->name,
                 p->channels);
        return OSP_MODEL_EINVAL;
    }
    p->fit = m->cfg.fit;
    p->layout = nhwc ? OSP_LAYOUT_NHWC : OSP_LAYOUT_NCHW;
    p->elem = in->dtype == OSP_DT_U8 ? OSP_ELEM_U8 : OSP_ELEM_F32;
    memcpy(p->mean, m->cfg.mean, sizeof p->mean);
    memcpy(p->std, m->cfg.std, sizeof p->std);
    p->pad_value = 114;
    m->batch_dynamic = in->dims[0] < 0;
    osp_text_prep_t tp;
    if (text_prep(m, &tp) && tp.min_w < tp.max_w) m->batch_dynamic = 0; /* lines differ in width */
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
    char dname[sizeof cfg->postprocessor];
    snprintf(dname, sizeof dname, "%s", cfg->postprocessor);
    dname[strcspn(dname, ":")] = '\0';
    if (!(m->dec = osp_decoder_find(dname))) {
        char names[256];
        osp_decoder_names(names, sizeof names);
        snprintf(err, errlen, "unknown postprocessor '%s' (known: %s)", cfg->postprocessor, names);
        rc = OSP_MODEL_EINVAL;
        goto fail;
    }
    osp_rt_opts_t opts = {.intra_threads = cfg->intra_threads,
                          .device = cfg->device,
                          .graph_opt = cfg->graph_opt,
                          .no_spin = cfg->no_spin};
    if (!backend) backend = &osp_backend_onnxruntime;
    /* a FIFO or a device would block the runtime's open (and this loader
     * thread with it) or feed it without end; a missing file is left to
     * the runtime, whose words a host already knows */
    int fd = osp_paths_open(cfg->path, "model file", OSP_MODEL_MAX_BYTES, NULL, err, errlen);
    if (fd >= 0) close(fd);
    if (fd < 0 && fd != OSP_PATHS_ENOENT) {
        rc = OSP_MODEL_ELOAD;
        goto fail;
    }
    if (backend->load(cfg->path, &opts, &m->rt, err, errlen)) {
        rc = OSP_MODEL_ELOAD;
        goto fail;
    }
    if (cfg->lone_threads > 1 && cfg->lone_threads != cfg->intra_threads &&
        backend == &osp_backend_onnxruntime) {
        /* its helper threads sleep between runs: they must not spin on the
         * cores the other workers' single-thread runs need */
        osp_rt_opts_t lo = opts;
        lo.intra_threads = cfg->lone_threads;
        lo.no_spin = 1;
        if (backend->load(cfg->path, &lo, &m->rt_lone, err, errlen)) {
            rc = OSP_MODEL_ELOAD;
            goto fail;
        }
    }
    if ((rc = setup_prep(m, err, errlen)) || (rc = setup_decoder(m, err, errlen))) {
        char inner[512];
        snprintf(inner, sizeof inner, "%s", err);
        snprintf(err, errlen, "cannot use model %s: %s", cfg->path, inner);
        goto fail;
    }
    char lp[1100];
    if (cfg->labels_path[0] || cfg->labels_none)
        snprintf(lp, sizeof lp, "%s", cfg->labels_path);
    else
        default_labels_path(cfg->path, lp, sizeof lp);
    /* no catalog labels: the family's own (COCO for YOLO, post/labels_coco.c) */
    const char *builtin = m->cfg.builtin_labels ? m->cfg.builtin_labels
                                                : osp_post_default_labels(m->cfg.postprocessor);
    if ((rc = load_labels(m, lp, builtin, err, errlen))) goto fail;
    osp_log(OSP_LOG_INFO, "osprey: model %s loaded on %s (input %dx%d %s %s)", cfg->name,
            m->rt->provider, m->prep.width, m->prep.height,
            m->prep.layout == OSP_LAYOUT_NHWC ? "NHWC" : "NCHW",
            m->prep.elem == OSP_ELEM_U8 ? "uint8" : "float32");
    *out = m;
    return OSP_MODEL_OK;
fail:
    osp_model_free(m);
    return rc;
}

/* What a model held — its runtime sessions' graphs, weights and arenas,
 * and what building them allocated and freed — lies in glibc's malloc
 * arenas, one per thread that allocated (each load runs on a thread of its
 * own), and an arena other than the main heap gives back only the free
 * memory at its top. Under model churn the rest stayed resident, in holes
 * the next loads did not fit: the soak (docs/bench.md) with a model
 * replaced, unloaded or loaded every second grew from 57 MB to 320 MB in
 * 70 s and kept rising; with malloc_trim after each model freed it stayed
 * within 100-170 MB. (ospreyd itself is linked with jemalloc, which
 * returns such memory on its own; this is for the programs that keep
 * glibc's allocator.) malloc_trim returns every whole free page of every
 * arena to the kernel, but took 5 ms (up to 34 ms) there, so it runs on a
 * thread of its own, not on the caller's (ospreyd's I/O thread): one at a
 * time, once more if a model was freed while it ran. */
#ifdef __GLIBC__
static atomic_int g_trim; /* 0 idle, 1 trimming, 2 trimming and asked again */

static void *trim_main(void *arg) {
    (void)arg;
    for (;;) {
        malloc_trim(0);
        int busy = 1;
        if (atomic_compare_exchange_strong(&g_trim, &busy, 0)) return NULL;
        atomic_store(&g_trim, 1); /* asked again while trimming */
    }
}

static void give_back_memory(void) {
    for (;;) {
        int st = atomic_load(&g_trim);
        if (st == 2) return;
        if (st == 1) {
            if (atomic_compare_exchange_strong(&g_trim, &st, 2)) return;
            continue;
        }
        if (!atomic_compare_exchange_strong(&g_trim, &st, 1)) continue;
        if (osp_thread_detached(trim_main, NULL))
            trim_main(NULL); /* no thread to spare: here, then */
        return;
    }
}
#else
static void give_back_memory(void) {}
#endif

void osp_model_free(osp_model_t *m) {
    if (!m) return;
    if (m->dec && m->dec->free_state && m->dec_state) m->dec->free_state(m->dec_state);
    osp_rt_model_free(m->rt);
    osp_rt_model_free(m->rt_lone);
    for (int i = 0; i < m->n_labels; i++) free(m->labels[i]);
    free(m->labels);
    osp_cascade_free(m->then);
    free(m);
    give_back_memory();
}

const char *osp_model_label(const osp_model_t *m, int cls) {
    return (cls >= 0 && cls < m->n_labels && m->labels[cls][0]) ? m->labels[cls] : NULL;
}

void osp_infer_ctx_free(osp_infer_ctx_t *c) {
    osp_prep_scratch_free(&c->scratch);
    osp_image_free(&c->rgb);
    free(c->tensor);
    osp_dres_free(&c->rec);
    free(c->look);
    free(c->look_boxes);
    osp_cascade_ctx_free(c->cascade);
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

/* What a prepared ctx records of its frame: the view that was prepared
 * (view_w x view_h) and the frame it came from (orig, 0 = the view). */
static void set_frame_size(osp_infer_ctx_t *ctx, int view_w, int view_h, int orig_w, int orig_h,
                           double prep_ms) {
    ctx->prep_ms = prep_ms;
    ctx->view_w = view_w;
    ctx->view_h = view_h;
    ctx->frame_w = orig_w > 0 ? orig_w : view_w;
    ctx->frame_h = orig_h > 0 ? orig_h : view_h;
    /* After a scaled decode the view is smaller than the frame: fold that
     * into the scale so boxes map straight back to original pixels. */
    ctx->geom.scale_x *= (float)ctx->view_w / (float)ctx->frame_w;
    ctx->geom.scale_y *= (float)ctx->view_h / (float)ctx->frame_h;
}

int osp_model_prepare(const osp_model_t *m, osp_infer_ctx_t *ctx, const osp_view_t *frame,
                      int orig_w, int orig_h, char *err, size_t errlen) {
    if (osp_model_ensure_tensor(m, ctx)) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    double t0 = osp_now_ms();
    osp_view_t rgb;
    if (osp_pixfmt_yuv420(frame->fmt)) {
        if (osp_yuv_to_rgb(frame, &ctx->rgb, err, errlen)) return OSP_MODEL_EINVAL;
        rgb = osp_image_view(&ctx->rgb);
        frame = &rgb;
    }
    osp_text_prep_t tp;
    if (text_prep(m, &tp)) {
        if (osp_text_pack(frame, &tp, ctx->tensor, NULL, &ctx->scratch.resized, err, errlen))
            return OSP_MODEL_EINVAL;
        memset(&ctx->geom, 0, sizeof ctx->geom);
        ctx->geom.scale_x = ctx->geom.scale_y = (float)tp.height / (float)frame->height;
        ctx->geom.content_w = osp_text_content_width(frame->width, frame->height, &tp);
        ctx->geom.content_h = tp.height;
    } else if (osp_prep_run(frame, &m->prep, ctx->tensor, &ctx->scratch, &ctx->geom, err, errlen)) {
        return OSP_MODEL_EINVAL;
    }
    set_frame_size(ctx, frame->width, frame->height, orig_w, orig_h, osp_now_ms() - t0);
    return OSP_MODEL_OK;
}

int osp_model_prepare_rows_begin(const osp_model_t *m, osp_infer_ctx_t *ctx, osp_prep_stream_t *st,
                                 int w, int h, osp_pixfmt_t fmt, char *err, size_t errlen) {
    osp_text_prep_t tp;
    if (text_prep(m, &tp) || (fmt != OSP_PIX_RGB && fmt != OSP_PIX_BGR)) {
        snprintf(err, errlen, "frame not prepared row by row for this model");
        return OSP_MODEL_EINVAL;
    }
    if (osp_model_ensure_tensor(m, ctx)) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    if (osp_prep_stream_begin(st, w, h, fmt, &m->prep, ctx->tensor, &ctx->scratch, err, errlen))
        return OSP_MODEL_EINVAL;
    return OSP_MODEL_OK;
}

int osp_model_prepare_rows_end(osp_infer_ctx_t *ctx, osp_prep_stream_t *st, int w, int h,
                               double prep_ms, char *err, size_t errlen) {
    if (osp_prep_stream_end(st, &ctx->geom, err, errlen)) return OSP_MODEL_EINVAL;
    set_frame_size(ctx, w, h, 0, 0, prep_ms);
    return OSP_MODEL_OK;
}

/* Decode item `item` of a run over `batch` frames: each output is viewed as
 * that item's slice with a leading dim of 1. */
static int decode(osp_model_t *m, osp_infer_ctx_t *ctx, const osp_tensor_t *out, int item,
                  int batch, osp_result_t *res, char *err, size_t errlen) {
    osp_pout_t outs[16];
    for (int i = 0; i < m->rt->n_outputs; i++) {
        outs[i].name = m->rt->outputs[i].name;
        outs[i].dtype = pdtype(out[i].dtype);
        outs[i].rank = out[i].rank;
        memcpy(outs[i].dims, out[i].dims, sizeof outs[i].dims);
        outs[i].data = out[i].data;
        if (batch > 1) {
            if (out[i].rank < 1 || out[i].dims[0] != batch) {
                snprintf(err, errlen, "output %s does not carry the batch of %d", outs[i].name, batch);
                return OSP_MODEL_ERUN;
            }
            size_t per = out[i].bytes / (size_t)batch;
            outs[i].data = (const uint8_t *)out[i].data + per * (size_t)item;
            outs[i].dims[0] = 1;
        }
    }
    osp_dparams_t p;
    dparams(m, ctx, &p);
    osp_dres_reset(&ctx->rec);
    if (m->dec->decode(m->dec_state, outs, m->rt->n_outputs, &p, &ctx->rec, err, errlen))
        return OSP_MODEL_ERUN;
    res->kind = ctx->rec.kind;
    res->rec = &ctx->rec;
    res->dets = ctx->rec.dets;
    res->n_dets = ctx->rec.n_dets;
    res->vec = ctx->rec.vec;
    res->vec_dim = ctx->rec.vec_dim;
    return 0;
}

/* The session for the next run, counted in m->running (the caller takes it
 * off after the run). A lone run takes every core when nothing else runs:
 * latency at one frame in flight is the wide run's, not a single thread's. */
static osp_rt_model_t *run_begin(osp_model_t *m, int lone) {
    int others = atomic_fetch_add(&m->running, 1);
    if (!lone || others != 0 || !m->rt_lone) return m->rt;
    atomic_fetch_add(&m->lone_runs, 1);
    return m->rt_lone;
}

osp_tensor_t osp_model_input(const osp_model_t *m, void *data, int n) {
    osp_tensor_t in = {.dtype = m->rt->inputs[0].dtype,
                       .rank = 4,
                       .data = data,
                       .bytes = osp_prep_tensor_bytes(&m->prep) * (size_t)n};
    int nhwc = m->prep.layout == OSP_LAYOUT_NHWC;
    in.dims[0] = n;
    in.dims[1] = nhwc ? m->prep.height : m->prep.channels;
    in.dims[2] = nhwc ? m->prep.width : m->prep.height;
    in.dims[3] = nhwc ? m->prep.channels : m->prep.width;
    return in;
}

int osp_model_predict(osp_model_t *m, osp_infer_ctx_t *ctx, osp_result_t *res, char *err,
                      size_t errlen) {
    memset(res, 0, sizeof *res);
    double t0 = osp_now_ms();
    osp_tensor_t in = osp_model_input(m, ctx->tensor, 1);
    osp_text_prep_t tp;
    if (text_prep(m, &tp)) { /* a text line runs at its own width */
        int tw = osp_text_tensor_width(ctx->view_w, ctx->view_h, &tp);
        in.dims[m->prep.layout == OSP_LAYOUT_NHWC ? 2 : 3] = tw;
        in.bytes = (size_t)tw * (size_t)tp.height * (size_t)tp.channels * sizeof(float);
    }
    if (m->rt->n_outputs > 16) {
        snprintf(err, errlen, "model has too many outputs");
        return OSP_MODEL_ERUN;
    }
    osp_tensor_t out[16];
    memset(out, 0, sizeof out);
    osp_rt_model_t *rt = run_begin(m, ctx->lone);
    int run_rc = osp_rt_run(rt, &in, out, err, errlen);
    atomic_fetch_sub(&m->running, 1);
    if (run_rc) return OSP_MODEL_ERUN;
    int rc = decode(m, ctx, out, 0, 1, res, err, errlen);
    osp_rt_release_outputs(rt, out);
    res->predict_ms = osp_now_ms() - t0;
    res->preprocess_ms = ctx->prep_ms;
    res->frame_w = ctx->frame_w;
    res->frame_h = ctx->frame_h;
    return rc;
}

void osp_batch_buf_free(osp_batch_buf_t *b) {
    free(b->data);
    b->data = NULL;
    b->cap = 0;
}

int osp_model_predict_batch(osp_model_t *m, osp_infer_ctx_t *const *ctx, int n, osp_result_t *res,
                            int *rcs, osp_batch_buf_t *buf, char *err, size_t errlen) {
    if (n <= 0) return 0;
    if (!m->batch_dynamic || n == 1) {
        /* a static batch of 1: the per-item path */
        for (int i = 0; i < n; i++) rcs[i] = osp_model_predict(m, ctx[i], &res[i], err, errlen);
        return 0;
    }
    for (int i = 0; i < n; i++) memset(&res[i], 0, sizeof res[i]);
    double t0 = osp_now_ms();
    size_t one = osp_prep_tensor_bytes(&m->prep), need = one * (size_t)n;
    if (buf->cap < need) {
        void *d = realloc(buf->data, need);
        if (!d) {
            snprintf(err, errlen, "out of memory");
            return OSP_MODEL_ENOMEM;
        }
        buf->data = d;
        buf->cap = need;
    }
    for (int i = 0; i < n; i++)
        memcpy((uint8_t *)buf->data + one * (size_t)i, ctx[i]->tensor, one);
    osp_tensor_t in = osp_model_input(m, buf->data, n);
    osp_tensor_t out[16];
    memset(out, 0, sizeof out);
    osp_rt_model_t *rt = run_begin(m, ctx[0]->lone); /* a stacked run may go wide too */
    int run_rc = osp_rt_run(rt, &in, out, err, errlen);
    atomic_fetch_sub(&m->running, 1);
    if (run_rc) return OSP_MODEL_ERUN;
    double run_ms = osp_now_ms() - t0;
    char item_err[256];
    for (int i = 0; i < n; i++) {
        double t1 = osp_now_ms();
        rcs[i] = decode(m, ctx[i], out, i, n, &res[i], item_err, sizeof item_err);
        if (rcs[i]) snprintf(err, errlen, "%s", item_err);
        /* the run is shared: each frame carries it whole, plus its own decode */
        res[i].predict_ms = run_ms + (osp_now_ms() - t1);
        res[i].preprocess_ms = ctx[i]->prep_ms;
        res[i].frame_w = ctx[i]->frame_w;
        res[i].frame_h = ctx[i]->frame_h;
    }
    osp_rt_release_outputs(rt, out);
    return 0;
}

int osp_model_infer(osp_model_t *m, osp_infer_ctx_t *ctx, const osp_view_t *frame, int orig_w,
                    int orig_h, osp_result_t *res, char *err, size_t errlen) {
    int rc = osp_model_prepare(m, ctx, frame, orig_w, orig_h, err, errlen);
    return rc ? rc : osp_model_predict(m, ctx, res, err, errlen);
}
