/* The models and images a one-shot subcommand opens (open.h). */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/open.h"
#include "log/log.h"

int osp_cli_open_model(const char *cmd, const char *name, float threshold, osp_model_t **out) {
    char err[1024];
    osp_model_cfg_t cfg;
    *out = NULL;
    if (osp_model_cfg_resolve(name, &cfg, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey %s: %s", cmd, err);
        return 2;
    }
    struct stat st;
    if (stat(cfg.path, &st) != 0) {
        if (osp_catalog_find(name))
            osp_log(OSP_LOG_ERROR,
                    "osprey %s: model %s is not downloaded (expected %s); run scripts/fetch-assets.sh",
                    cmd, name, cfg.path);
        else
            osp_log(OSP_LOG_ERROR, "osprey %s: cannot open model %s: %s", cmd, cfg.path,
                    strerror(errno));
        return 2;
    }
    if (threshold >= 0) cfg.confidence = threshold;
    if (osp_model_open(&cfg, NULL, out, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey %s: %s", cmd, err);
        return 2;
    }
    return 0;
}

int osp_cli_run_image(const char *cmd, const char *what, osp_decoder_t *dec, const char *input,
                      osp_image_t *img, osp_model_t *m, osp_infer_ctx_t *ctx, osp_result_t *r) {
    char err[512];
    if (osp_image_load(dec, input, img, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey %s: %s: %s", cmd, input, err);
        return 2;
    }
    osp_view_t v = osp_image_view(img);
    if (osp_model_infer(m, ctx, &v, 0, 0, r, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey %s: %s: %s failed: %s", cmd, input, what, err);
        return 1;
    }
    return 0;
}
