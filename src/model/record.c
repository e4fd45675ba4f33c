/* The protocol's JSON record of one inference result (docs/protocol.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/model.h"

static void put_label(osp_jw_t *w, const osp_model_t *m, int cls) {
    const char *label = osp_model_label(m, cls);
    char num[16];
    if (!label) {
        snprintf(num, sizeof num, "%d", cls);
        label = num;
    }
    osp_jw_key(w, "label");
    osp_jw_str(w, label);
    osp_jw_key(w, "class");
    osp_jw_int(w, cls);
}

void osp_model_put_box(osp_jw_t *w, const osp_det_t *d) {
    osp_jw_key(w, "box");
    osp_jw_arr_open(w);
    osp_jw_num(w, d->x1, 1);
    osp_jw_num(w, d->y1, 1);
    osp_jw_num(w, d->x2, 1);
    osp_jw_num(w, d->y2, 1);
    osp_jw_arr_close(w);
}

void osp_model_put_landmarks(osp_jw_t *w, const osp_det_t *d) {
    if (d->n_kp <= 0) return;
    osp_jw_key(w, "landmarks");
    osp_jw_arr_open(w);
    for (int k = 0; k < d->n_kp && k < OSP_MAX_KP; k++) {
        osp_jw_arr_open(w);
        osp_jw_num(w, d->kp[k][0], 1);
        osp_jw_num(w, d->kp[k][1], 1);
        osp_jw_arr_close(w);
    }
    osp_jw_arr_close(w);
}

/* look: each box's second-look score (< 0: none), or NULL; ids: each
 * box's track id (0: none), or NULL; extra: each box's fields from a
 * cascade (osp_result_t), or NULL */
static void put_detections(osp_jw_t *w, const osp_model_t *m, const osp_det_t *dets, const float *look,
                           const uint64_t *ids, const char *extra, const size_t *extra_at, int n) {
    osp_jw_key(w, "detections");
    osp_jw_arr_open(w);
    for (int i = 0; i < n; i++) {
        const osp_det_t *d = &dets[i];
        osp_jw_obj_open(w);
        put_label(w, m, d->cls);
        osp_jw_key(w, "score");
        osp_jw_num(w, d->score, 4);
        if (look && look[i] >= 0) {
            osp_jw_key(w, "lookScore");
            osp_jw_num(w, look[i], 4);
        }
        if (ids && ids[i]) {
            osp_jw_key(w, "trackId");
            osp_jw_uint(w, ids[i]);
        }
        osp_model_put_box(w, d);
        osp_model_put_landmarks(w, d);
        if (extra && extra_at[i + 1] > extra_at[i])
            osp_jw_members(w, extra + extra_at[i], extra_at[i + 1] - extra_at[i]);
        osp_jw_obj_close(w);
    }
    osp_jw_arr_close(w);
}

/* The vector as base64 of its little-endian float32 bytes: about half the
 * JSON text of the numbers at six decimals, and exact. */
void osp_model_put_b64_floats(osp_jw_t *w, const float *v, int n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t bytes = (size_t)n * 4, len = (bytes + 2) / 3 * 4;
    char *out = malloc(len + 1);
    if (!out) {
        osp_jw_null(w);
        return;
    }
    const uint8_t *b = (const uint8_t *)v; /* x86 and ARM are little-endian */
    size_t o = 0;
    for (size_t i = 0; i < bytes; i += 3) {
        uint32_t x = (uint32_t)b[i] << 16 | (i + 1 < bytes ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < bytes ? b[i + 2] : 0);
        out[o++] = tab[x >> 18 & 63];
        out[o++] = tab[x >> 12 & 63];
        out[o++] = i + 1 < bytes ? tab[x >> 6 & 63] : '=';
        out[o++] = i + 2 < bytes ? tab[x & 63] : '=';
    }
    osp_jw_strn(w, out, o);
    free(out);
}

void osp_model_put_result(osp_jw_t *w, const osp_model_t *m, const osp_result_t *r, int batch) {
    const osp_dres_t *rec = r->rec;
    switch (r->kind) {
    case OSP_REC_EMBEDDING:
        osp_jw_key(w, "kind");
        osp_jw_str(w, "embedding");
        if (m->cfg.embedding_b64) {
            osp_jw_key(w, "embeddingB64");
            osp_model_put_b64_floats(w, r->vec, r->vec_dim);
            break;
        }
        osp_jw_key(w, "embedding");
        osp_jw_arr_open(w);
        for (int i = 0; i < r->vec_dim; i++) osp_jw_num(w, r->vec[i], 6);
        osp_jw_arr_close(w);
        break;
    case OSP_REC_CLASSES:
        osp_jw_key(w, "kind");
        osp_jw_str(w, "classes");
        osp_jw_key(w, "classes");
        osp_jw_arr_open(w);
        for (int i = 0; rec && i < rec->n_classes; i++) {
            osp_jw_obj_open(w);
            put_label(w, m, rec->classes[i].cls);
            osp_jw_key(w, "score");
            osp_jw_num(w, rec->classes[i].score, 4);
            osp_jw_obj_close(w);
        }
        osp_jw_arr_close(w);
        break;
    case OSP_REC_TEXT:
        osp_jw_key(w, "kind");
        osp_jw_str(w, "text");
        osp_jw_key(w, "text");
        osp_jw_strn(w, rec && rec->text ? rec->text : "", rec ? rec->text_len : 0);
        osp_jw_key(w, "textScore");
        osp_jw_num(w, rec ? rec->text_score : 0, 4);
        if (rec && rec->n_dets)
            put_detections(w, m, rec->dets, NULL, NULL, NULL, NULL, rec->n_dets);
        break;
    default:
        osp_jw_key(w, "kind");
        osp_jw_str(w, "detections");
        put_detections(w, m, r->dets, r->look, r->track_ids, r->extra, r->extra_at, r->n_dets);
    }
    osp_jw_key(w, "inferenceMs");
    osp_jw_num(w, r->preprocess_ms + r->predict_ms, 2);
    osp_jw_key(w, "preprocessMs");
    osp_jw_num(w, r->preprocess_ms, 2);
    osp_jw_key(w, "predictMs");
    osp_jw_num(w, r->predict_ms, 2);
    osp_jw_key(w, "batchSize");
    osp_jw_int(w, batch);
    char fs[32];
    snprintf(fs, sizeof fs, "%dx%d", r->frame_w, r->frame_h);
    osp_jw_key(w, "frameSize");
    osp_jw_str(w, fs);
}
