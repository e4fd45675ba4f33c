/* The frames osprey quantize calibrates on and compares with; see qmedia.h. */
#include "cli/qmedia.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/text.h"
#include "video/video.h"

/* The smallest face crop, in pixels of the decoded frame: smaller ones are
 * mostly false detections and blur to nothing at 112x112. */
#define MIN_FACE 16
#define FACE_MARGIN 0.2f /* osprey compare's default --margin */

int osp_qmedia_parse(const char *arg, osp_qmedia_t *m) {
    m->first = 0;
    m->last = -1;
    const char *colon = strrchr(arg, ':');
    size_t len = strlen(arg);
    if (colon) {
        char *end;
        long first = strtol(colon + 1, &end, 10);
        if (end > colon + 1 && *end == '-' && first >= 0) {
            const char *l = end + 1;
            long last = -1;
            if (*l)
                last = strtol(l, &end, 10);
            else
                end = (char *)l;
            if (!*end && (last < 0 ? !*l : last >= first)) {
                m->first = first;
                m->last = last;
                len = (size_t)(colon - arg);
            }
        }
    }
    if (len >= sizeof m->path) return -1;
    memcpy(m->path, arg, len);
    m->path[len] = '\0';
    return 0;
}

static int read_file(const char *path, uint8_t **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    long n = -1;
    *buf = NULL;
    if (!f) return -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (*buf = malloc(n ? (size_t)n : 1)) && fread(*buf, 1, (size_t)n, f) == (size_t)n) {
        fclose(f);
        *len = (size_t)n;
        return 0;
    }
    fclose(f);
    free(*buf);
    *buf = NULL;
    return -1;
}

typedef struct {
    osp_model_t *m, *faces;
    osp_infer_ctx_t ctx, face_ctx;
    osp_image_t crop; /* the face being prepared */
    osp_qmedia_fn fn;
    void *arg;
    long frames;
} walk_t;

/* One decoded frame (ow x oh at full size): prepared for m, or each face in it. */
static int one_view(walk_t *w, const osp_view_t *v, int ow, int oh, const char *what, char *err,
                    size_t errlen) {
    char inner[512];
    if (!w->faces) {
        if (osp_model_prepare(w->m, &w->ctx, v, ow, oh, inner, sizeof inner)) {
            snprintf(err, errlen, "%s: %s", what, inner);
            return 2;
        }
        w->frames++;
        return w->fn(w->arg, &w->ctx, err, errlen) ? 1 : 0;
    }
    osp_result_t r;
    /* boxes in the decoded frame's pixels, where the crops are cut */
    if (osp_model_infer(w->faces, &w->face_ctx, v, v->width, v->height, &r, inner, sizeof inner)) {
        snprintf(err, errlen, "%s: face detector: %s", what, inner);
        return 1;
    }
    for (int i = 0; i < r.n_dets; i++) {
        /* the square osprey compare embeds: the box's longer side, grown by
         * FACE_MARGIN, around its centre */
        const osp_det_t *d = &r.dets[i];
        float cx = (d->x1 + d->x2) / 2, cy = (d->y1 + d->y2) / 2;
        float side = fmaxf(d->x2 - d->x1, d->y2 - d->y1) * (1 + FACE_MARGIN), h = side / 2;
        if (side < MIN_FACE) continue;
        const float quad[4][2] = {{cx - h, cy - h}, {cx + h, cy - h}, {cx + h, cy + h}, {cx - h, cy + h}};
        int sz = (int)lrintf(side);
        if (osp_crop_quad(v, quad, sz, sz, &w->crop)) {
            snprintf(err, errlen, "%s: cannot crop face %d", what, i);
            return 1;
        }
        osp_view_t crop = osp_image_view(&w->crop);
        if (osp_model_prepare(w->m, &w->ctx, &crop, 0, 0, inner, sizeof inner)) {
            snprintf(err, errlen, "%s: face %d: %s", what, i, inner);
            return 2;
        }
        w->frames++;
        /* the detector's result lives in face_ctx, which fn does not touch */
        if (w->fn(w->arg, &w->ctx, err, errlen)) return 1;
    }
    return 0;
}

int osp_qmedia_each(osp_model_t *m, osp_model_t *faces, osp_decoder_t *dec,
                    const osp_qmedia_t *media, int n_media, int every, osp_qmedia_fn fn, void *arg,
                    long *frames, char *err, size_t errlen) {
    walk_t w = {.m = m, .faces = faces, .fn = fn, .arg = arg};
    osp_image_t img = {0};
    char inner[512], what[1100];
    /* JPEGs decode scaled for the model that sees the whole frame */
    const osp_model_t *whole = faces ? faces : m;
    int rc = 0;
    for (int i = 0; i < n_media && !rc; i++) {
        const osp_qmedia_t *md = &media[i];
        if (osp_path_is_image(md->path)) {
            uint8_t *buf;
            size_t len;
            int ow, oh;
            if (read_file(md->path, &buf, &len)) {
                snprintf(err, errlen, "cannot read %s: %s", md->path, strerror(errno ? errno : EIO));
                rc = 2;
                break;
            }
            int drc = osp_image_decode(dec, buf, len, whole->prep.width, whole->prep.height, &img,
                                       &ow, &oh, inner, sizeof inner);
            free(buf);
            if (drc) {
                snprintf(err, errlen, "%s: %s", md->path, inner);
                rc = 2;
                break;
            }
            osp_view_t v = osp_image_view(&img);
            rc = one_view(&w, &v, ow, oh, md->path, err, errlen);
            continue;
        }
        osp_video_t *vid = NULL;
        if (osp_video_open(md->path, &vid, inner, sizeof inner)) {
            snprintf(err, errlen, "%s", inner);
            rc = 2;
            break;
        }
        for (long f = 0; !rc && (md->last < 0 || f <= md->last); f++) {
            int r = osp_video_read(vid, &img, inner, sizeof inner);
            if (r < 0) {
                snprintf(err, errlen, "%s: %s", md->path, inner);
                rc = 2;
            }
            if (r <= 0) break;
            if (f < md->first || (f - md->first) % every) continue;
            osp_view_t v = osp_image_view(&img);
            snprintf(what, sizeof what, "%s frame %ld", md->path, f);
            rc = one_view(&w, &v, 0, 0, what, err, errlen);
            if (rc == 2) rc = 1; /* a frame that cannot be prepared is not bad input */
        }
        osp_video_close(vid);
    }
    osp_image_free(&img);
    osp_infer_ctx_free(&w.ctx);
    osp_infer_ctx_free(&w.face_ctx);
    osp_image_free(&w.crop);
    *frames = w.frames;
    return rc;
}
