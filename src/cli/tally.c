/* Per-input counts of osprey detect and the frame its snapshot shows. */
#include "cli/tally.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_LABELS 256

struct osp_tally {
    const osp_model_t *m;
    int person; /* the class labelled "person", or -1 */
    long frames;
    long per_label[MAX_LABELS];
    long other;               /* detections of classes past MAX_LABELS */
    long looks, look_dropped; /* the second look's runs, and the boxes it dropped */
    int best_people;          /* people in the best frame so far (0 without a person label) */
    long best_frame;
    osp_image_t best; /* copy of that frame, RGB */
    osp_image_t made; /* a 4:2:0 frame made RGB, before it is the best */
    float best_sx, best_sy;
    osp_det_t *best_dets;
    int best_n, best_cap;
};

osp_tally_t *osp_tally_new(const osp_model_t *m) {
    osp_tally_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->m = m;
    t->person = -1;
    for (int i = 0; i < m->n_labels; i++)
        if (strcasecmp(m->labels[i], "person") == 0) {
            t->person = i;
            break;
        }
    return t;
}

void osp_tally_free(osp_tally_t *t) {
    if (!t) return;
    osp_image_free(&t->best);
    osp_image_free(&t->made);
    free(t->best_dets);
    free(t);
}

long osp_tally_frames(const osp_tally_t *t) { return t->frames; }

void osp_tally_add_failed(osp_tally_t *t) { t->frames++; }

/* Keep a copy of the frame and its boxes; 0, or -1 out of memory (the
 * previous best is then kept as it was). */
static int keep(osp_tally_t *t, const osp_result_t *r, const osp_view_t *pixels) {
    char err[128];
    if (osp_pixfmt_yuv420(pixels->fmt)) { /* a frame the model did not read */
        if (osp_yuv_to_rgb(pixels, &t->made, err, sizeof err)) return -1;
        osp_view_t made = osp_image_view(&t->made);
        return keep(t, r, &made);
    }
    size_t need = (size_t)pixels->height * (size_t)pixels->width * 3;
    if (t->best.cap < need) {
        uint8_t *d = realloc(t->best.data, need);
        if (!d) return -1;
        t->best.data = d;
        t->best.cap = need;
    }
    if (t->best_cap < r->n_dets) {
        osp_det_t *d = realloc(t->best_dets, (size_t)r->n_dets * sizeof *d);
        if (!d) return -1;
        t->best_dets = d;
        t->best_cap = r->n_dets;
    }
    for (int y = 0; y < pixels->height; y++)
        memcpy(t->best.data + (size_t)y * pixels->width * 3,
               pixels->data + (size_t)y * pixels->stride, (size_t)pixels->width * 3);
    t->best.width = pixels->width;
    t->best.height = pixels->height;
    t->best.stride = pixels->width * 3;
    t->best.fmt = OSP_PIX_RGB;
    t->best_sx = (float)pixels->width / (float)r->frame_w;
    t->best_sy = (float)pixels->height / (float)r->frame_h;
    if (r->n_dets) memcpy(t->best_dets, r->dets, (size_t)r->n_dets * sizeof *r->dets);
    t->best_n = r->n_dets;
    return 0;
}

void osp_tally_add(osp_tally_t *t, const osp_result_t *r, long frame, const osp_view_t *pixels) {
    t->frames++;
    t->looks += r->looks;
    t->look_dropped += r->look_dropped;
    int people = 0;
    for (int i = 0; i < r->n_dets; i++) {
        int c = r->dets[i].cls;
        if (c >= 0 && c < MAX_LABELS)
            t->per_label[c]++;
        else
            t->other++;
        people += c == t->person;
    }
    /* the most people, then the most detections: a cat photo has a best frame too */
    if (!pixels || r->n_dets == 0 ||
        (t->best.data &&
         (people < t->best_people || (people == t->best_people && r->n_dets <= t->best_n))))
        return;
    if (keep(t, r, pixels)) return;
    t->best_people = people;
    t->best_frame = frame;
}

int osp_tally_best(osp_tally_t *t, osp_tally_best_t *out) {
    memset(out, 0, sizeof *out);
    if (!t->best.data) return 0;
    out->pixels = &t->best;
    out->dets = t->best_dets;
    out->n_dets = t->best_n;
    out->sx = t->best_sx;
    out->sy = t->best_sy;
    out->frame = t->best_frame;
    out->people = t->person >= 0 ? t->best_people : -1;
    return 1;
}

void osp_tally_print(const osp_tally_t *t, const char *name, double secs, const char *more) {
    fprintf(stderr, "%s: %ld frame%s in %.2f s (%.1f frames/s)", name, t->frames,
            t->frames == 1 ? "" : "s", secs, secs > 0 ? (double)t->frames / secs : 0.0);
    /* labels by count, most first */
    int order[MAX_LABELS], n = 0;
    for (int c = 0; c < MAX_LABELS; c++)
        if (t->per_label[c]) order[n++] = c;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && t->per_label[order[j]] > t->per_label[order[j - 1]]; j--) {
            int tmp = order[j];
            order[j] = order[j - 1];
            order[j - 1] = tmp;
        }
    if (n == 0 && t->other == 0) fprintf(stderr, "; no detections");
    for (int i = 0; i < n; i++) {
        const char *label = osp_model_label(t->m, order[i]);
        if (label)
            fprintf(stderr, "%s %s %ld", i ? "," : ";", label, t->per_label[order[i]]);
        else
            fprintf(stderr, "%s class %d %ld", i ? "," : ";", order[i], t->per_label[order[i]]);
    }
    if (t->looks) /* each frame read alone: one run, and one a look */
        fprintf(stderr, "; %ld second look%s, %ld box%s taken back, %.2f model runs a frame",
                t->looks, t->looks == 1 ? "" : "s", t->look_dropped, t->look_dropped == 1 ? "" : "es",
                t->frames ? (double)(t->frames + t->looks) / (double)t->frames : 0.0);
    if (more) fputs(more, stderr);
    fputc('\n', stderr);
}
