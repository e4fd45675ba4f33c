/*
 * A cascade bound (cascade.h, osp_cascade_open): the models its steps
 * name loaded, their face libraries read, and each step's labels checked
 * against the model before it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/cascade_int.h"

static void close_steps(osp_step_t *steps, int n) {
    for (int i = 0; steps && i < n; i++) {
        close_steps(steps[i].then, steps[i].n_then);
        osp_model_free(steps[i].m);
        osp_faces_close(steps[i].faces);
        free(steps[i].count);
        steps[i].m = NULL;
        steps[i].faces = NULL;
        steps[i].count = NULL;
    }
}

static void close_models(osp_cascade_t *c) { close_steps(c->steps, c->n); }

/* The labels the model before gives, for a message. */
static void label_list(const osp_model_t *m, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->n_labels && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", m->labels[i]);
    if (len >= n && n > 4) snprintf(buf + n - 4, 4, "...");
}

static int open_steps(osp_step_t *steps, int n, const osp_model_t *before,
                      const osp_backend_t *backend, int threads, char *err, size_t errlen) {
    for (int i = 0; i < n; i++) {
        osp_step_t *s = &steps[i];
        for (int k = 0; k < s->n_labels; k++) {
            s->label_ids[k] = -1;
            for (int c = 0; c < before->n_labels && s->label_ids[k] < 0; c++)
                if (strcmp(before->labels[c], s->labels[k]) == 0) s->label_ids[k] = c;
            if (s->label_ids[k] >= 0) continue;
            char known[256];
            label_list(before, known, sizeof known);
            const char *near = NULL;
            for (int c = 0; c < before->n_labels && !near; c++)
                if (strcasecmp(before->labels[c], s->labels[k]) == 0) near = before->labels[c];
            if (near)
                snprintf(err, errlen,
                         "cascade step %s: %s never gives the label \"%s\" (did you mean \"%s\"?)",
                         s->model, before->cfg.name, s->labels[k], near);
            else
                snprintf(err, errlen,
                         "cascade step %s: %s never gives the label \"%s\" (its labels: %s)",
                         s->model, before->cfg.name, s->labels[k], known[0] ? known : "none");
            return OSP_MODEL_EINVAL;
        }
        if (!s->count && !(s->count = calloc(1, sizeof *s->count))) {
            snprintf(err, errlen, "cascade step %s: out of memory", s->model);
            return OSP_MODEL_ENOMEM;
        }
        osp_model_cfg_t cfg;
        char inner[768];
        if (osp_model_cfg_from_catalog(s->model, &cfg, inner, sizeof inner)) {
            snprintf(err, errlen, "cascade step %s: %s", s->model, inner);
            return OSP_MODEL_EINVAL;
        }
        cfg.intra_threads = threads;
        if (osp_model_open(&cfg, backend, &s->m, inner, sizeof inner)) {
            snprintf(err, errlen, "cascade step %s: %s", s->model, inner);
            return OSP_MODEL_ELOAD;
        }
        if (s->library[0]) {
            if (osp_faces_open(s->library, 0, &s->faces, inner, sizeof inner) ||
                osp_faces_load(s->faces, inner, sizeof inner)) {
                snprintf(err, errlen, "cascade step %s: %s", s->model, inner);
                return OSP_MODEL_EINVAL;
            }
        }
        int rc = open_steps(s->then, s->n_then, s->m, backend, threads, err, errlen);
        if (rc) return rc;
    }
    return OSP_MODEL_OK;
}

int osp_cascade_open(osp_cascade_t *c, const osp_model_t *first, const osp_backend_t *backend,
                     int intra_threads, char *err, size_t errlen) {
    c->close = close_models;
    return open_steps(c->steps, c->n, first, backend, intra_threads, err, errlen);
}
