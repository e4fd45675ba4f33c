/* osprey detect on one still image (JPEG, PNG). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "cli/detect.h"
#include "cli/snapshot.h"
#include "cli/tally.h"
#include "log/log.h"

int osp_detect_image(const osp_detect_opts_t *o, osp_model_t *m, osp_decoder_t *dec,
                     const char *input) {
    osp_image_t img = {0};
    osp_infer_ctx_t ctx = {0}, look = {0};
    osp_jw_t w = {0};
    osp_tally_t *t = NULL;
    char err[512];
    int rc = 0, ow = 0, oh = 0;
    double t0 = osp_now_s();
    FILE *f = fopen(input, "rb");
    uint8_t *buf = NULL;
    long len = 0;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc(len ? (size_t)len : 1)) && fread(buf, 1, (size_t)len, f) == (size_t)len) {
        /* ok */
    } else {
        osp_log(OSP_LOG_ERROR, "osprey detect: cannot read %s: %s", input,
                strerror(errno ? errno : EIO));
        rc = 2;
        goto done;
    }
    if (!(t = osp_tally_new(m))) {
        osp_log(OSP_LOG_ERROR, "osprey detect: out of memory");
        rc = 1;
        goto done;
    }
    /* a cascade crops from the whole picture: no scaled decode */
    int want_w = o->cascade ? 0 : m->prep.width, want_h = o->cascade ? 0 : m->prep.height;
    if (osp_image_decode(dec, buf, (size_t)len, want_w, want_h, &img, &ow, &oh, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s: %s", input, err);
        rc = 2;
        goto done;
    }
    osp_view_t v = osp_image_view(&img);
    osp_result_t r;
    if (osp_detect_infer(o, m, &ctx, &look, &v, ow, oh, &r, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s: %s", input, err);
        osp_detect_format(&w, input, 0, -1, m, NULL, err);
        osp_detect_emit(o, &w, t0, 0);
        rc = 1;
        goto done;
    }
    osp_detect_format(&w, input, 0, -1, m, &r, NULL);
    osp_detect_emit(o, &w, t0, 0);
    osp_tally_add(t, &r, 0, &v);
    osp_tally_print(t, osp_detect_base_name(input), osp_now_s() - t0, NULL);
    osp_snapshot_write(o->out_dir, input, t, m, dec);
done:
    if (f) fclose(f);
    free(buf);
    osp_image_free(&img);
    osp_infer_ctx_free(&ctx);
    osp_infer_ctx_free(&look);
    osp_jw_free(&w);
    osp_tally_free(t);
    return rc;
}
