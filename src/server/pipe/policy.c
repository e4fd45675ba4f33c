/* Who may name which files, and a model config from a request; see policy.h. */
#include "server/pipe/policy.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "model/cascade.h"
#include "model/paths.h"
#include "server/pipe/conn.h"

srv_from_t srv_from(const conn_t *c) {
    return c && srv_conn_is_stdio(c) ? SRV_FROM_HOST : SRV_FROM_PEER;
}

/* A peer's files: the model inside the roots, its labels too (the one
 * next to the model only if it resolves inside them: a link there must
 * not lead out). */
static int confine_files(server_t *s, osp_model_cfg_t *cfg, char *err, size_t errlen) {
    char real[sizeof cfg->path];
    if (osp_paths_confine(s->roots, cfg->path, "model file", real, sizeof real, err, errlen))
        return -1;
    snprintf(cfg->path, sizeof cfg->path, "%s", real);
    if (cfg->labels_path[0]) {
        if (osp_paths_confine(s->roots, cfg->labels_path, "labels file", real, sizeof real, err, errlen))
            return -1;
        snprintf(cfg->labels_path, sizeof cfg->labels_path, "%s", real);
        return 0;
    }
    char next[sizeof cfg->path + 8], scratch[64];
    snprintf(next, sizeof next, "%s", cfg->path);
    char *slash = strrchr(next, '/'), *dot = strrchr(next, '.');
    if (dot && (!slash || dot > slash)) *dot = '\0';
    strcat(next, ".labels");
    if (osp_paths_confine(s->roots, next, "labels file", real, sizeof real, scratch,
                          sizeof scratch) == 0)
        snprintf(cfg->labels_path, sizeof cfg->labels_path, "%s", real);
    else
        cfg->labels_none = 1;
    return 0;
}

/* A peer's face library: inside the roots, as its model. */
typedef struct {
    server_t *s;
    char *err;
    size_t errlen;
} confine_arg_t;

static int confine_library(void *arg, char *path, size_t cap) {
    confine_arg_t *a = arg;
    char real[PATH_MAX];
    if (osp_paths_confine(a->s->roots, path, "face library", real, sizeof real, a->err, a->errlen))
        return -1;
    if (strlen(real) >= cap) {
        snprintf(a->err, a->errlen, "face library: its path is too long");
        return -1;
    }
    snprintf(path, cap, "%s", real);
    return 0;
}

int srv_model_cfg(server_t *s, srv_from_t from, const cJSON *config, osp_cascade_t **then,
                  osp_model_cfg_t *cfg, char *err, size_t errlen) {
    osp_cascade_t *c = NULL;
    if (then) *then = NULL;
    if (osp_model_cfg_from_json(config, cfg, err, errlen)) return -1;
    if (cfg->cascade) {
        char inner[600];
        if (osp_cascade_parse(config, cfg, &c, inner, sizeof inner)) {
            snprintf(err, errlen, "\"then\": %s", inner);
            return -1;
        }
        confine_arg_t a = {s, inner, sizeof inner};
        if (c && from == SRV_FROM_PEER && osp_cascade_each_library(c, confine_library, &a)) {
            snprintf(err, errlen, "\"then\": %s", inner);
            osp_cascade_free(c);
            return -1;
        }
    }
    const cJSON *rt = cJSON_GetObjectItemCaseSensitive(config, "runTimeoutMs");
    if (rt && !cJSON_IsNull(rt)) {
        if (!cJSON_IsNumber(rt) || rt->valuedouble != floor(rt->valuedouble) ||
            rt->valuedouble < 1 || rt->valuedouble > SRV_RUN_TIMEOUT_MAX_MS) {
            snprintf(err, errlen, "runTimeoutMs must be a whole number of milliseconds from 1 to %d",
                     SRV_RUN_TIMEOUT_MAX_MS);
            goto fail;
        }
        cfg->run_timeout_ms = (int)rt->valuedouble;
    }
    if (from == SRV_FROM_PEER && confine_files(s, cfg, err, errlen)) goto fail;
    if (from == SRV_FROM_OPERATOR) {
        /* a peer naming the same file shares its slot: compare resolved names */
        char real[PATH_MAX];
        if (realpath(cfg->path, real) && strlen(real) < sizeof cfg->path)
            snprintf(cfg->path, sizeof cfg->path, "%s", real);
    }
    if (!cfg->device[0]) snprintf(cfg->device, sizeof cfg->device, "%s", s->set.device);
    if (!cfg->intra_threads) cfg->intra_threads = s->set.intra_threads;
    if (!cfg->lone_threads) cfg->lone_threads = s->set.lone_threads;
    if (then)
        *then = c;
    else
        osp_cascade_free(c);
    return 0;
fail:
    osp_cascade_free(c);
    return -1;
}
