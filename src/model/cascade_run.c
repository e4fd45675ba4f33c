/*
 * A cascade's runs (cascade.h, osp_cascade_run). Each step picks the
 * detections of its labels, the largest first up to its maxObjects, crops
 * each from the pixels the first model was run on (no re-encode: the
 * frame is already decoded), sizes the crop in C to the step's input and
 * runs it; its result becomes fields of the detection's record, written
 * here as JSON text once, so the record writer only copies them.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "image/text.h"
#include "model/align.h"
#include "model/cascade_int.h"

/* A box or text crop at its own size is capped to this longer side: a
 * detector or recognizer sizes it down anyway. */
#define CROP_SIDE_MAX 1280

typedef struct {
    struct osp_cascade_ctx *cc;
    const osp_view_t *view; /* the pixels the first model saw */
    float sx, sy;           /* frame pixels per view pixel */
    osp_result_t *res;      /* the times are added to it */
    uint64_t deadline_ms;   /* a step past it is skipped; 0: none */
    char *err;
    size_t errlen;
} run_t;

static int reserve_dets(struct osp_cascade_ctx *cc, int depth, int n) {
    if (cc->det_cap[depth] >= n) return 0;
    osp_det_t *d = realloc(cc->dets[depth], (size_t)n * sizeof *d);
    if (!d) return -1;
    cc->dets[depth] = d;
    cc->det_cap[depth] = n;
    return 0;
}

static int matches(const osp_step_t *s, const osp_det_t *d) {
    int ok = s->n_labels == 0;
    for (int k = 0; k < s->n_labels && !ok; k++) ok = s->label_ids[k] == d->cls;
    return ok;
}

static float area(const osp_det_t *d) { return (d->x2 - d->x1) * (d->y2 - d->y1); }

/* Which of the n dets each of the steps takes, as bit k of take[i]: the
 * detections of step k's labels, the largest maxObjects (the earlier first
 * when as large), leaving out those ctx's skip names (the top steps; ctx
 * NULL: none). A skipped box takes no place of maxObjects: another object
 * is run instead. Each step keeps its best in a short sorted list: n x
 * maxObjects at most, however many boxes a frame has. */
static void choose(const osp_step_t *steps, int n_steps, const osp_det_t *dets, int n,
                   const osp_infer_ctx_t *ctx, uint16_t *take) {
    memset(take, 0, (size_t)n * sizeof *take);
    for (int k = 0; k < n_steps; k++) {
        int best[OSP_CASCADE_OBJECTS], nb = 0, cap = steps[k].max_objects;
        for (int i = 0; i < n; i++) {
            if (!matches(&steps[k], &dets[i])) continue;
            if (ctx && ctx->skip && ctx->skip(ctx->skip_arg, &dets[i])) continue;
            float a = area(&dets[i]);
            int at = nb;
            while (at > 0 && area(&dets[best[at - 1]]) < a) at--;
            if (at >= cap) continue;
            if (nb < cap) nb++;
            memmove(best + at + 1, best + at, (size_t)(nb - 1 - at) * sizeof *best);
            best[at] = i;
        }
        for (int b = 0; b < nb; b++) take[best[b]] |= (uint16_t)(1u << k);
    }
}

static int reserve_take(struct osp_cascade_ctx *cc, int level, int n) {
    if (cc->take_cap[level] >= n) return 0;
    uint16_t *t = realloc(cc->take[level], (size_t)n * sizeof *t);
    if (!t) return -1;
    cc->take[level] = t;
    cc->take_cap[level] = n;
    return 0;
}

/* The square around d, or d turned upright from its landmarks when asked
 * and it has them (a box of a detector that gives landmarks has none only
 * when decoded without them). */
static void face_quad(const osp_det_t *d, int w, int h, int landmarks, float margin, float quad[4][2]) {
    if (!landmarks || osp_align_landmarks(d, w, h, quad) != 0) osp_align_square(d, margin, quad);
}

int osp_cascade_face_crop(const osp_view_t *v, const osp_det_t *d, const osp_model_t *m,
                          int landmarks, float margin, osp_image_t *out) {
    float quad[4][2];
    int w = m->prep.width > 0 ? m->prep.width : 112, h = m->prep.height > 0 ? m->prep.height : 112;
    face_quad(d, w, h, landmarks, margin, quad);
    return osp_crop_quad(v, (const float(*)[2])quad, w, h, out) ? -1 : 0;
}

/* The crop of d (frame pixels) for step s into cc->crop[depth]: 0, 1 when
 * there is nothing to crop (an empty box), < 0 on failure. */
static int crop_for(run_t *r, const osp_step_t *s, const osp_det_t *d, int depth, float quad[4][2]) {
    osp_det_t v = *d; /* in view pixels */
    v.x1 /= r->sx, v.x2 /= r->sx, v.y1 /= r->sy, v.y2 /= r->sy;
    for (int k = 0; k < v.n_kp && k < OSP_MAX_KP; k++) v.kp[k][0] /= r->sx, v.kp[k][1] /= r->sy;
    if (!(v.x2 - v.x1 >= 1) || !(v.y2 - v.y1 >= 1)) return 1;
    int w = s->m->prep.width, h = s->m->prep.height;
    switch (s->crop) {
    case OSP_CROP_LANDMARKS:
    case OSP_CROP_SQUARE:
        face_quad(&v, w, h, s->crop == OSP_CROP_LANDMARKS, s->margin, quad);
        break;
    case OSP_CROP_RECT: {
        float mx = (v.x2 - v.x1) * s->margin / 2, my = (v.y2 - v.y1) * s->margin / 2;
        if (s->kind == OSP_STEP_TEXT) mx = my = 0; /* a line, as it stands */
        osp_det_t g = v;
        g.x1 -= mx, g.x2 += mx, g.y1 -= my, g.y2 += my;
        osp_align_rect(&g, quad);
        float gw = g.x2 - g.x1, gh = g.y2 - g.y1, k = fmaxf(gw, gh) / CROP_SIDE_MAX;
        if (k < 1) k = 1;
        w = (int)lrintf(gw / k), h = (int)lrintf(gh / k);
        if (w < 1) w = 1;
        if (h < 1) h = 1;
        break;
    }
    }
    if (osp_crop_quad(r->view, (const float(*)[2])quad, w, h, &r->cc->crop[depth])) {
        snprintf(r->err, r->errlen, "cascade step %s: cannot crop a detection", s->model);
        return -1;
    }
    return 0;
}

static int put_fields(run_t *r, const osp_step_t *steps, int n_steps, const osp_det_t *dets, int i,
                      uint16_t take, int depth, osp_jw_t *w);
static int prebatch(run_t *r, const osp_step_t *steps, int n_steps, const osp_det_t *dets, int n,
                    const uint16_t *take, int depth);

/* The detections of an "objects" step, inside the crop at quad (an
 * axis-aligned rectangle of view pixels sampled at cw x ch), as frame
 * pixels, each with its own steps' fields. */
static int put_objects(run_t *r, const osp_step_t *s, const osp_result_t *sr, float quad[4][2],
                       int cw, int ch, int depth, osp_jw_t *w) {
    int n = sr->n_dets;
    if (reserve_dets(r->cc, depth + 1, n > 0 ? n : 1) ||
        reserve_take(r->cc, depth + 1, n > 0 ? n : 1)) {
        snprintf(r->err, r->errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    osp_det_t *dets = r->cc->dets[depth + 1];
    uint16_t *take = r->cc->take[depth + 1];
    float kx = (quad[1][0] - quad[0][0]) / (float)cw, ky = (quad[3][1] - quad[0][1]) / (float)ch;
    for (int i = 0; i < n; i++) {
        osp_det_t d = sr->dets[i];
        d.x1 = (quad[0][0] + d.x1 * kx) * r->sx, d.x2 = (quad[0][0] + d.x2 * kx) * r->sx;
        d.y1 = (quad[0][1] + d.y1 * ky) * r->sy, d.y2 = (quad[0][1] + d.y2 * ky) * r->sy;
        for (int k = 0; k < d.n_kp && k < OSP_MAX_KP; k++) {
            d.kp[k][0] = (quad[0][0] + d.kp[k][0] * kx) * r->sx;
            d.kp[k][1] = (quad[0][1] + d.kp[k][1] * ky) * r->sy;
        }
        dets[i] = d;
    }
    choose(s->then, s->n_then, dets, n, NULL, take);
    int rc = prebatch(r, s->then, s->n_then, dets, n, take, depth + 1);
    if (rc) return rc;
    osp_jw_key(w, s->as);
    osp_jw_arr_open(w);
    for (int i = 0; i < n; i++) {
        const osp_det_t *d = &dets[i];
        osp_jw_obj_open(w);
        const char *label = osp_model_label(s->m, d->cls);
        osp_jw_key(w, "label");
        if (label)
            osp_jw_str(w, label);
        else
            osp_jw_int(w, d->cls);
        osp_jw_key(w, "class");
        osp_jw_int(w, d->cls);
        osp_jw_key(w, "score");
        osp_jw_num(w, d->score, 4);
        osp_model_put_box(w, d);
        osp_model_put_landmarks(w, d);
        rc = put_fields(r, s->then, s->n_then, dets, i, take[i], depth + 1, w);
        if (rc) return rc;
        osp_jw_obj_close(w);
    }
    osp_jw_arr_close(w);
    return 0;
}

/* Write step s's result sr as its field(s) into w; an "objects" step's
 * boxes are inside the crop at quad, sampled at cw x ch. */
static int put_result(run_t *r, const osp_step_t *s, const osp_result_t *sr, float quad[4][2],
                      int cw, int ch, int depth, osp_jw_t *w) {
    const osp_dres_t *rec = sr->rec;
    switch (s->kind) {
    case OSP_STEP_EMBEDDING:
    case OSP_STEP_NAME:
        if (sr->kind != OSP_REC_EMBEDDING) break;
        if (s->kind == OSP_STEP_EMBEDDING) {
            osp_jw_key(w, s->as);
            if (s->b64) {
                osp_model_put_b64_floats(w, sr->vec, sr->vec_dim);
                return 0;
            }
            osp_jw_arr_open(w);
            for (int k = 0; k < sr->vec_dim; k++) osp_jw_num(w, sr->vec[k], 6);
            osp_jw_arr_close(w);
        } else {
            const char *name;
            float score;
            osp_faces_match(s->faces, sr->vec, sr->vec_dim, &name, &score);
            osp_jw_key(w, s->as);
            osp_jw_str(w, name && score >= s->threshold ? name : "unknown");
            osp_jw_key(w, s->score_key);
            if (name)
                osp_jw_num(w, score, 4);
            else
                osp_jw_null(w); /* an empty library: nothing to be near */
        }
        return 0;
    case OSP_STEP_CLASS:
        if (sr->kind != OSP_REC_CLASSES || !rec || rec->n_classes < 1) break;
        {
            const char *label = osp_model_label(s->m, rec->classes[0].cls);
            osp_jw_key(w, s->as);
            if (label)
                osp_jw_str(w, label);
            else
                osp_jw_int(w, rec->classes[0].cls);
            osp_jw_key(w, s->score_key);
            osp_jw_num(w, rec->classes[0].score, 4);
        }
        return 0;
    case OSP_STEP_TEXT:
        if (sr->kind != OSP_REC_TEXT || !rec) break;
        if (!osp_cascade_text_fits(s, rec->text, rec->text_len)) return 0; /* as if not read */
        osp_jw_key(w, s->as);
        osp_jw_strn(w, rec->text ? rec->text : "", rec->text_len);
        osp_jw_key(w, s->score_key);
        osp_jw_num(w, rec->text_score, 4);
        return 0;
    case OSP_STEP_OBJECTS:
        if (sr->kind != OSP_REC_DETECTIONS) break;
        return put_objects(r, s, sr, quad, cw, ch, depth, w);
    }
    snprintf(r->err, r->errlen, "cascade step %s: its model gave no %s", s->model,
             s->kind == OSP_STEP_TEXT      ? "text"
             : s->kind == OSP_STEP_CLASS   ? "class"
             : s->kind == OSP_STEP_OBJECTS ? "detections"
                                           : "embedding");
    return OSP_MODEL_ERUN;
}

/* Run step s on det d and write its field(s) into w. */
static int run_step(run_t *r, const osp_step_t *s, const osp_det_t *d, int depth, osp_jw_t *w) {
    float quad[4][2];
    int rc = crop_for(r, s, d, depth, quad);
    if (rc) return rc < 0 ? OSP_MODEL_ERUN : 0;
    osp_view_t cv = osp_image_view(&r->cc->crop[depth]);
    osp_infer_ctx_t *ctx = &r->cc->ctx[depth];
    osp_result_t sr;
    char inner[256];
    if (osp_model_infer(s->m, ctx, &cv, 0, 0, &sr, inner, sizeof inner)) {
        snprintf(r->err, r->errlen, "cascade step %s: %s", s->model, inner);
        return OSP_MODEL_ERUN;
    }
    r->res->preprocess_ms += sr.preprocess_ms;
    r->res->predict_ms += sr.predict_ms;
    return put_result(r, s, &sr, quad, cv.width, cv.height, depth, w);
}

/* pre_at's mark of a (step, detection) not run ahead: it runs alone */
#define PRE_NONE SIZE_MAX
/* ... and of one skipped, past the deadline */
#define PRE_SKIP (SIZE_MAX - 1)

/* Whether step s's crops run together, ahead of the records: its model
 * takes any batch, and its result is fields (a detector's boxes are
 * followed inside its crop, one crop at a time). */
static int batches(const osp_step_t *s) {
    return s->m->batch_dynamic && s->kind != OSP_STEP_OBJECTS && s->batch != 1 && s->max_objects > 1;
}

static int reserve_bctx(struct osp_cascade_ctx *cc, int depth, int n) {
    if (cc->bctx_n[depth] >= n) return 0;
    osp_infer_ctx_t *b = realloc(cc->bctx[depth], (size_t)n * sizeof *b);
    if (!b) return -1;
    memset(b + cc->bctx_n[depth], 0, (size_t)(n - cc->bctx_n[depth]) * sizeof *b);
    cc->bctx[depth] = b;
    cc->bctx_n[depth] = n;
    return 0;
}

/* One run of step s (the k-th of its level) on the nb detections idx of
 * dets: each cropped and prepared in a context of its own, the tensors
 * stacked into one run, each result's fields written into pre[depth]. */
static int run_batch(run_t *r, const osp_step_t *s, int k, const osp_det_t *dets, const int *idx,
                     int nb, int depth) {
    struct osp_cascade_ctx *cc = r->cc;
    size_t *at = cc->pre_at[depth];
    int n = cc->pre_n[depth];
    if (r->deadline_ms && (uint64_t)osp_epoch_ms() > r->deadline_ms) {
        if (s->count) atomic_fetch_add_explicit(&s->count->skipped, nb, memory_order_relaxed);
        for (int j = 0; j < nb; j++) at[2 * ((size_t)k * n + idx[j])] = PRE_SKIP;
        return 0;
    }
    if (s->count) atomic_fetch_add_explicit(&s->count->runs, nb, memory_order_relaxed);
    osp_infer_ctx_t *ctxs[OSP_CASCADE_OBJECTS];
    osp_result_t res[OSP_CASCADE_OBJECTS];
    int rcs[OSP_CASCADE_OBJECTS], item[OSP_CASCADE_OBJECTS], m = 0;
    char inner[256];
    osp_jw_t *w = &cc->pre[depth];
    for (int j = 0; j < nb; j++) {
        size_t *a = &at[2 * ((size_t)k * n + idx[j])];
        float quad[4][2];
        int rc = crop_for(r, s, &dets[idx[j]], depth, quad);
        if (rc < 0) return OSP_MODEL_ERUN;
        if (rc > 0) { /* nothing to crop: no fields */
            a[0] = a[1] = w->len;
            continue;
        }
        osp_view_t cv = osp_image_view(&cc->crop[depth]);
        osp_infer_ctx_t *ctx = &cc->bctx[depth][m];
        if (osp_model_prepare(s->m, ctx, &cv, 0, 0, inner, sizeof inner)) {
            snprintf(r->err, r->errlen, "cascade step %s: %s", s->model, inner);
            return OSP_MODEL_ERUN;
        }
        r->res->preprocess_ms += ctx->prep_ms;
        ctxs[m] = ctx;
        item[m++] = idx[j];
    }
    if (m == 0) return 0;
    double t0 = osp_now_ms();
    if (osp_model_predict_batch(s->m, ctxs, m, res, rcs, &cc->bbuf, inner, sizeof inner)) {
        snprintf(r->err, r->errlen, "cascade step %s: %s", s->model, inner);
        return OSP_MODEL_ERUN;
    }
    r->res->predict_ms += osp_now_ms() - t0; /* the one run, once */
    for (int j = 0; j < m; j++) {
        if (rcs[j]) {
            snprintf(r->err, r->errlen, "cascade step %s: %s", s->model, inner);
            return OSP_MODEL_ERUN;
        }
        size_t *a = &at[2 * ((size_t)k * n + item[j])];
        w->need_comma = 0; /* each detection's fields stand alone */
        a[0] = w->len;
        int rc = put_result(r, s, &res[j], NULL, 0, 0, depth, w);
        if (rc) return rc;
        a[1] = w->len;
    }
    return 0;
}

/* Run ahead, in batches, the steps of a level whose models take any batch,
 * on the n dets each takes (take); put_fields then copies their fields. */
static int prebatch(run_t *r, const osp_step_t *steps, int n_steps, const osp_det_t *dets, int n,
                    const uint16_t *take, int depth) {
    struct osp_cascade_ctx *cc = r->cc;
    int any = 0;
    for (int k = 0; k < n_steps && !any; k++) any = batches(&steps[k]);
    cc->pre_n[depth] = 0;
    if (!any || n < 1) return 0;
    int need = 2 * n_steps * n;
    if (cc->pre_cap[depth] < need) {
        size_t *p = realloc(cc->pre_at[depth], (size_t)need * sizeof *p);
        if (!p) {
            snprintf(r->err, r->errlen, "out of memory");
            return OSP_MODEL_ENOMEM;
        }
        cc->pre_at[depth] = p;
        cc->pre_cap[depth] = need;
    }
    for (int j = 0; j < need; j++) cc->pre_at[depth][j] = PRE_NONE;
    cc->pre_n[depth] = n;
    osp_jw_reset(&cc->pre[depth]);
    for (int k = 0; k < n_steps; k++) {
        const osp_step_t *s = &steps[k];
        if (!batches(s)) continue;
        int cap = s->batch > 0 && s->batch < s->max_objects ? s->batch : s->max_objects;
        if (reserve_bctx(cc, depth, cap)) {
            snprintf(r->err, r->errlen, "out of memory");
            return OSP_MODEL_ENOMEM;
        }
        int idx[OSP_CASCADE_OBJECTS], nb = 0;
        for (int i = 0; i < n; i++) {
            if (!(take[i] & (1u << k))) continue;
            idx[nb++] = i;
            if (nb == cap) {
                int rc = run_batch(r, s, k, dets, idx, nb, depth);
                if (rc) return rc;
                nb = 0;
            }
        }
        int rc = nb ? run_batch(r, s, k, dets, idx, nb, depth) : 0;
        if (rc) return rc;
    }
    if (cc->pre[depth].oom) {
        snprintf(r->err, r->errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    return 0;
}

/* The fields of dets[i] from each step that takes it (bit k of take): run
 * ahead (prebatch) or run now. */
static int put_fields(run_t *r, const osp_step_t *steps, int n_steps, const osp_det_t *dets, int i,
                      uint16_t take, int depth, osp_jw_t *w) {
    const struct osp_cascade_ctx *cc = r->cc;
    for (int k = 0; k < n_steps; k++) {
        if (!(take & (1u << k))) continue;
        if (cc->pre_n[depth] > 0) {
            const size_t *a = &cc->pre_at[depth][2 * ((size_t)k * cc->pre_n[depth] + i)];
            if (a[0] == PRE_SKIP) continue;
            if (a[0] != PRE_NONE) {
                if (a[1] > a[0]) osp_jw_members(w, cc->pre[depth].buf + a[0], a[1] - a[0]);
                continue;
            }
        }
        struct osp_step_count *count = steps[k].count;
        if (r->deadline_ms && (uint64_t)osp_epoch_ms() > r->deadline_ms) {
            if (count) atomic_fetch_add_explicit(&count->skipped, 1, memory_order_relaxed);
            continue;
        }
        if (count) atomic_fetch_add_explicit(&count->runs, 1, memory_order_relaxed);
        int rc = run_step(r, &steps[k], &dets[i], depth, w);
        if (rc) return rc;
    }
    return 0;
}

/* c on res's detections, cropped from v (RGB or BGR) whose pixels are
 * frame pixels divided by sx, sy; working memory in ctx->cascade. */
static int run_on(const osp_cascade_t *c, osp_infer_ctx_t *ctx, const osp_view_t *v, float sx,
                  float sy, osp_result_t *res, char *err, size_t errlen) {
    if (!ctx->cascade && !(ctx->cascade = calloc(1, sizeof *ctx->cascade))) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    struct osp_cascade_ctx *cc = ctx->cascade;
    int n = res->n_dets;
    if (reserve_take(cc, 0, n > 0 ? n : 1)) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    if (cc->at_cap < n + 1) {
        size_t *at = realloc(cc->at, (size_t)(n + 1) * sizeof *at);
        if (!at) {
            snprintf(err, errlen, "out of memory");
            return OSP_MODEL_ENOMEM;
        }
        cc->at = at;
        cc->at_cap = n + 1;
    }
    run_t r = {.cc = cc,
               .view = v,
               .sx = sx,
               .sy = sy,
               .res = res,
               .deadline_ms = ctx->deadline_ms,
               .err = err,
               .errlen = errlen};
    osp_jw_reset(&cc->out);
    choose(c->steps, c->n, res->dets, n, ctx, cc->take[0]);
    int brc = prebatch(&r, c->steps, c->n, res->dets, n, cc->take[0], 0);
    if (brc) return brc;
    for (int i = 0; i < n; i++) {
        cc->at[i] = cc->out.len;
        cc->out.need_comma = 0; /* each detection's fields stand alone */
        int rc = put_fields(&r, c->steps, c->n, res->dets, i, cc->take[0][i], 0, &cc->out);
        if (rc) return rc;
    }
    cc->at[n] = cc->out.len;
    if (cc->out.oom) {
        snprintf(err, errlen, "out of memory");
        return OSP_MODEL_ENOMEM;
    }
    res->extra = cc->out.buf;
    res->extra_at = cc->at;
    return OSP_MODEL_OK;
}

int osp_cascade_run(const osp_cascade_t *c, const osp_model_t *first, osp_infer_ctx_t *ctx,
                    const osp_view_t *frame, osp_result_t *res, char *err, size_t errlen) {
    (void)first;
    res->extra = NULL;
    res->extra_at = NULL;
    if (res->kind != OSP_REC_DETECTIONS) return OSP_MODEL_OK;
    osp_view_t v = *frame;
    if (osp_pixfmt_yuv420(v.fmt)) v = osp_image_view(&ctx->rgb);
    if (osp_pixfmt_channels(v.fmt) == 0 || v.width != ctx->view_w || v.height != ctx->view_h) {
        snprintf(err, errlen, "cascade: no frame to crop from");
        return OSP_MODEL_EINVAL;
    }
    return run_on(c, ctx, &v, (float)ctx->frame_w / (float)ctx->view_w,
                  (float)ctx->frame_h / (float)ctx->view_h, res, err, errlen);
}

int osp_cascade_run_view(const osp_cascade_t *c, osp_infer_ctx_t *ctx, const osp_view_t *frame,
                         osp_result_t *res, char *err, size_t errlen) {
    res->extra = NULL;
    res->extra_at = NULL;
    if (osp_pixfmt_channels(frame->fmt) == 0 || frame->width < 1 || frame->height < 1 ||
        res->frame_w < 1 || res->frame_h < 1) {
        snprintf(err, errlen, "cascade: no frame to crop from");
        return OSP_MODEL_EINVAL;
    }
    return run_on(c, ctx, frame, (float)res->frame_w / (float)frame->width,
                  (float)res->frame_h / (float)frame->height, res, err, errlen);
}

int osp_cascade_takes(const osp_cascade_t *c, const osp_det_t *dets, int n, uint16_t *take) {
    choose(c->steps, c->n, dets, n, NULL, take);
    int any = 0;
    for (int i = 0; i < n; i++) any += take[i] != 0;
    return any;
}

/* Whether s or a step inside it names a face or reads text. */
static int judges(const osp_step_t *s, int n) {
    for (int k = 0; k < n; k++)
        if (s[k].kind == OSP_STEP_NAME || s[k].kind == OSP_STEP_TEXT || judges(s[k].then, s[k].n_then))
            return 1;
    return 0;
}

int osp_cascade_judges(const osp_cascade_t *c) { return judges(c->steps, c->n); }

void osp_cascade_ctx_free(struct osp_cascade_ctx *cc) {
    if (!cc) return;
    for (int i = 0; i < OSP_CASCADE_DEPTH; i++) {
        osp_infer_ctx_free(&cc->ctx[i]);
        osp_image_free(&cc->crop[i]);
        for (int b = 0; b < cc->bctx_n[i]; b++) osp_infer_ctx_free(&cc->bctx[i][b]);
        free(cc->bctx[i]);
        osp_jw_free(&cc->pre[i]);
        free(cc->pre_at[i]);
    }
    osp_batch_buf_free(&cc->bbuf);
    for (int i = 0; i <= OSP_CASCADE_DEPTH; i++) {
        free(cc->dets[i]);
        free(cc->take[i]);
    }
    osp_jw_free(&cc->out);
    free(cc->at);
    free(cc);
}
