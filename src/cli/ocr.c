/*
 * osprey ocr: read the text in images. A text detector (DBNet, ocr-det)
 * finds text boxes as rotated rectangles; each box is cropped upright
 * (image/text.h) and read by a CTC recognizer (ocr-rec). One JSON line per
 * text line on stdout, in reading order (top to bottom, then left to right):
 *   {"source","text","score","box":[x1,y1,x2,y2],"polygon":[[x,y]x4],
 *    "boxScore","charScores":[…]}
 * and a summary per image on stderr.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/open.h"
#include "image/text.h"
#include "model/model.h"
#include "post/dbnet.h"
#include "wire/jsonw.h"
#include "log/log.h"

static void usage(FILE *out) {
    fputs("usage: osprey ocr [options] IMAGE...\n"
          "\n"
          "Read the text in images (JPEG, PNG): detect text boxes, turn each upright,\n"
          "recognise it. Prints one JSON line per text line, in reading order:\n"
          "  {\"source\":…,\"text\":…,\"score\":…,\"box\":[x1,y1,x2,y2],\n"
          "   \"polygon\":[[x,y],[x,y],[x,y],[x,y]],\"boxScore\":…,\"charScores\":[…]}\n"
          "score is the mean confidence of the line's characters; box and polygon (the\n"
          "rotated text box, clockwise from its top-left) are in image pixels.\n"
          "\n"
          "options:\n"
          "      --det NAME|PATH    text detector (default ocr-det, PP-OCRv4 DBNet)\n"
          "      --rec NAME|PATH    text recognizer (default ocr-rec, PP-OCRv4 CTC)\n"
          "  -t, --threshold T      minimum box score, 0..1 (default: the detector's, 0.6)\n"
          "  -s, --min-score S      drop lines read with a lower confidence (default 0)\n"
          "      --words            read each detected box alone (by default neighbouring\n"
          "                         boxes on one line are read together, with spaces)\n"
          "  -h, --help             this text\n"
          "\n"
          "Exit status: 0 when every image was read (with or without text), 1 when a\n"
          "model failed, 2 for bad usage, an unreadable image or an unknown model.\n",
          out);
}

/* Reading order as PP-OCR's sorted_boxes: by top, then left; neighbours
 * whose tops are within 10 px are one row, read left to right. */
static int cmp_reading(const void *a, const void *b) {
    const osp_det_t *p = a, *q = b;
    if (p->kp[0][1] != q->kp[0][1]) return p->kp[0][1] < q->kp[0][1] ? -1 : 1;
    return (p->kp[0][0] > q->kp[0][0]) - (p->kp[0][0] < q->kp[0][0]);
}

static void reading_order(osp_det_t *d, int n) {
    if (n < 2) return; /* no text: d may be NULL, which qsort must not see */
    qsort(d, (size_t)n, sizeof *d, cmp_reading);
    for (int i = 0; i + 1 < n; i++)
        for (int j = i; j >= 0; j--) {
            if (fabsf(d[j + 1].kp[0][1] - d[j].kp[0][1]) < 10 && d[j + 1].kp[0][0] < d[j].kp[0][0]) {
                osp_det_t t = d[j];
                d[j] = d[j + 1];
                d[j + 1] = t;
            } else {
                break;
            }
        }
}

/* The detector boxes words more often than lines: neighbours in reading
 * order that are both near-horizontal, overlap vertically by at least half
 * the smaller height and are less than half a height apart are read as one
 * line, so that the recognizer sees (and prints) the spaces between them. */
static int same_line(const osp_det_t *a, const osp_det_t *b) {
    for (int k = 0; k < 2; k++) {
        const osp_det_t *d = k ? b : a;
        float dx = d->kp[1][0] - d->kp[0][0], dy = d->kp[1][1] - d->kp[0][1];
        if (!(dx > 0) || fabsf(dy) > 0.1f * dx) return 0;
    }
    float ha = a->y2 - a->y1, hb = b->y2 - b->y1, h = fminf(ha, hb);
    float overlap = fminf(a->y2, b->y2) - fmaxf(a->y1, b->y1);
    float gap = b->x1 - a->x2;
    return h > 0 && overlap >= 0.5f * h && gap < 0.5f * h && b->x2 > a->x2;
}

static void merge_into(osp_det_t *a, const osp_det_t *b) {
    float pts[8][2], hull[9][2];
    memcpy(pts, a->kp, 4 * sizeof pts[0]);
    memcpy(pts + 4, b->kp, 4 * sizeof pts[0]);
    osp_rrect_t r;
    if (osp_min_area_rect(pts, 8, hull, &r)) return;
    float q[4][2];
    osp_rrect_corners(&r, q);
    osp_quad_order(q);
    a->x1 = fminf(a->x1, b->x1), a->y1 = fminf(a->y1, b->y1);
    a->x2 = fmaxf(a->x2, b->x2), a->y2 = fmaxf(a->y2, b->y2);
    for (int k = 0; k < 4; k++) {
        /* stay inside the union of the two boxes (the frame) */
        a->kp[k][0] = fminf(fmaxf(q[k][0], a->x1), a->x2);
        a->kp[k][1] = fminf(fmaxf(q[k][1], a->y1), a->y2);
    }
    a->score = fminf(a->score, b->score);
}

static int merge_lines(osp_det_t *d, int n) {
    int out = 0;
    for (int i = 0; i < n; i++) {
        if (d[i].n_kp != 4) continue;
        if (out > 0 && same_line(&d[out - 1], &d[i])) {
            merge_into(&d[out - 1], &d[i]);
            continue;
        }
        d[out++] = d[i];
    }
    return out;
}

typedef struct {
    int words; /* keep the detector's boxes as they are */
    osp_model_t *det, *rec;
    float min_score;
    osp_decoder_t *dec;
    osp_image_t img, crop, scratch;
    osp_infer_ctx_t det_ctx, rec_ctx;
    osp_det_t *boxes;
    int box_cap;
    osp_jw_t w;
} ocr_t;

static int ocr_image(ocr_t *o, const char *input) {
    osp_result_t r;
    int rc = osp_cli_run_image("ocr", "text detection", o->dec, input, &o->img, o->det,
                               &o->det_ctx, &r);
    if (rc) return rc;
    osp_view_t v = osp_image_view(&o->img);
    /* the boxes live in the detector's ctx: keep a copy while the recognizer runs */
    int n = r.n_dets;
    if (n > o->box_cap) {
        osp_det_t *b = realloc(o->boxes, (size_t)n * sizeof *b);
        if (!b) {
            osp_log(OSP_LOG_ERROR, "osprey ocr: out of memory");
            return 1;
        }
        o->boxes = b;
        o->box_cap = n;
    }
    if (n) memcpy(o->boxes, r.dets, (size_t)n * sizeof *o->boxes);
    reading_order(o->boxes, n);
    if (!o->words) n = merge_lines(o->boxes, n);
    int lines = 0, status = 0;
    char err[512];
    for (int i = 0; i < n; i++) {
        const osp_det_t *d = &o->boxes[i];
        if (d->n_kp != 4) continue;
        float quad[4][2];
        memcpy(quad, d->kp, sizeof quad);
        if (osp_text_crop(&v, (const float(*)[2])quad, &o->crop, &o->scratch) < 0) continue;
        osp_view_t cv = osp_image_view(&o->crop);
        osp_result_t t;
        if (osp_model_infer(o->rec, &o->rec_ctx, &cv, 0, 0, &t, err, sizeof err)) {
            osp_log(OSP_LOG_ERROR, "osprey ocr: %s: text recognition failed: %s", input, err);
            status = 1;
            continue;
        }
        const osp_dres_t *rec = t.rec;
        if (t.kind != OSP_REC_TEXT || !rec || rec->text_len == 0 || rec->text_score < o->min_score)
            continue;
        osp_jw_t *w = &o->w;
        osp_jw_reset(w);
        osp_jw_obj_open(w);
        osp_jw_key(w, "source");
        osp_jw_str(w, input);
        osp_jw_key(w, "text");
        osp_jw_strn(w, rec->text, rec->text_len);
        osp_jw_key(w, "score");
        osp_jw_num(w, rec->text_score, 4);
        osp_model_put_box(w, d);
        osp_jw_key(w, "polygon");
        osp_jw_arr_open(w);
        for (int k = 0; k < 4; k++) {
            osp_jw_arr_open(w);
            osp_jw_num(w, d->kp[k][0], 1);
            osp_jw_num(w, d->kp[k][1], 1);
            osp_jw_arr_close(w);
        }
        osp_jw_arr_close(w);
        osp_jw_key(w, "boxScore");
        osp_jw_num(w, d->score, 4);
        osp_jw_key(w, "charScores");
        osp_jw_arr_open(w);
        for (int k = 0; k < rec->n_classes; k++) osp_jw_num(w, rec->classes[k].score, 4);
        osp_jw_arr_close(w);
        osp_jw_obj_close(w);
        fwrite(w->buf, 1, w->len, stdout);
        fputc('\n', stdout);
        lines++;
    }
    const char *b = strrchr(input, '/');
    fprintf(stderr, "%s: %d text box%s, %d line%s read\n", b ? b + 1 : input, n,
            n == 1 ? "" : "es", lines, lines == 1 ? "" : "s");
    return status;
}

int osp_cmd_ocr(int argc, char **argv) {
    const char *det_name = "ocr-det", *rec_name = "ocr-rec";
    float threshold = -1, min_score = 0;
    int words = 0;
    static const struct option longopts[] = {{"det", required_argument, NULL, 'D'},
                                             {"rec", required_argument, NULL, 'R'},
                                             {"threshold", required_argument, NULL, 't'},
                                             {"min-score", required_argument, NULL, 's'},
                                             {"words", no_argument, NULL, 'W'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "t:s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'D': det_name = optarg; break;
        case 'R': rec_name = optarg; break;
        case 'W': words = 1; break;
        case 't':
            if (osp_args_unit("osprey ocr", "--threshold", optarg, &threshold)) return 2;
            break;
        case 's':
            if (osp_args_unit("osprey ocr", "--min-score", optarg, &min_score)) return 2;
            break;
        case 'h': usage(stdout); return 0;
        default: fprintf(stderr, "osprey ocr: see 'osprey ocr --help'\n"); return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "osprey ocr: no image given (see 'osprey ocr --help')\n");
        return 2;
    }
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "osprey ocr: cannot open %s: %s\n", argv[i], strerror(errno));
            return 2;
        }
        if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "osprey ocr: %s is not a file\n", argv[i]);
            return 2;
        }
    }
    ocr_t o = {.min_score = min_score, .words = words};
    int status = osp_cli_open_model("ocr", det_name, threshold, &o.det);
    if (!status) status = osp_cli_open_model("ocr", rec_name, -1, &o.rec);
    if (!status && !(o.dec = osp_decoder_new())) {
        osp_log(OSP_LOG_ERROR, "osprey ocr: out of memory");
        status = 1;
    }
    if (!status && strcmp(o.rec->dec->name, "ctc") != 0) {
        fprintf(stderr, "osprey ocr: --rec %s is not a text recognizer (postprocessor %s, not ctc)\n",
                rec_name, o.rec->dec->name);
        status = 2;
    }
    if (!status)
        for (int i = optind; i < argc; i++) {
            int r = ocr_image(&o, argv[i]);
            if (r > status) status = r;
        }
    fflush(stdout);
    if (o.dec) osp_decoder_free(o.dec);
    osp_model_free(o.det);
    osp_model_free(o.rec);
    osp_image_free(&o.img);
    osp_image_free(&o.crop);
    osp_image_free(&o.scratch);
    osp_infer_ctx_free(&o.det_ctx);
    osp_infer_ctx_free(&o.rec_ctx);
    osp_jw_free(&o.w);
    free(o.boxes);
    return status;
}
