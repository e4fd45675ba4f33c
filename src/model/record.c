/* The protocol's JSON record of one inference result. */
#include <stdio.h>

#include "model/model.h"

void osp_model_put_result(osp_jw_t *w, const osp_model_t *m, const osp_result_t *r, int batch) {
    if (r->kind == OSP_POST_EMBEDDING) {
        osp_jw_key(w, "kind");
        osp_jw_str(w, "embedding");
        osp_jw_key(w, "embedding");
        osp_jw_arr_open(w);
        for (int i = 0; i < r->vec_dim; i++) osp_jw_num(w, r->vec[i], 6);
        osp_jw_arr_close(w);
    } else {
        osp_jw_key(w, "kind");
        osp_jw_str(w, "detections");
        osp_jw_key(w, "detections");
        osp_jw_arr_open(w);
        for (int i = 0; i < r->n_dets; i++) {
            const osp_det_t *d = &r->dets[i];
            const char *label = osp_model_label(m, d->cls);
            char num[16];
            if (!label) {
                snprintf(num, sizeof num, "%d", d->cls);
                label = num;
            }
            osp_jw_obj_open(w);
            osp_jw_key(w, "label");
            osp_jw_str(w, label);
            osp_jw_key(w, "class");
            osp_jw_int(w, d->cls);
            osp_jw_key(w, "score");
            osp_jw_num(w, d->score, 4);
            osp_jw_key(w, "box");
            osp_jw_arr_open(w);
            osp_jw_num(w, d->x1, 1);
            osp_jw_num(w, d->y1, 1);
            osp_jw_num(w, d->x2, 1);
            osp_jw_num(w, d->y2, 1);
            osp_jw_arr_close(w);
            osp_jw_obj_close(w);
        }
        osp_jw_arr_close(w);
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
