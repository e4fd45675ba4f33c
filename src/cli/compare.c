/*
 * osprey compare: how alike are the faces in two images. In each image the
 * most confident face of a face detector (ultraface) is cropped as a square
 * around its box, grown by a margin, and embedded (face-embed); the result
 * is the cosine similarity of the two L2-normalised embeddings, one JSON
 * line on stdout:
 *   {"a":…,"b":…,"similarity":…,"faceA":{"box","score"},"faceB":{…}}
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
#include "wire/jsonw.h"
#include "log/log.h"

#define EMB_MAX 4096

static void usage(FILE *out) {
    fputs("usage: osprey compare [options] IMAGE_A IMAGE_B\n"
          "\n"
          "Compare the faces in two images (JPEG, PNG): the most confident face of each\n"
          "is found, cropped with a margin and embedded; prints one JSON line:\n"
          "  {\"a\":…,\"b\":…,\"similarity\":S,\"faceA\":{\"box\":[x1,y1,x2,y2],\"score\":…},\n"
          "   \"faceB\":{…}}\n"
          "S is the cosine similarity of the two embeddings, -1..1: the same person\n"
          "scores high (about 0.8 and more), different people low (0.3 and less).\n"
          "\n"
          "options:\n"
          "      --detector NAME|PATH  face detector (default ultraface)\n"
          "      --embedder NAME|PATH  face embedder (default face-embed)\n"
          "  -M, --margin M            grow the face box by M of its size (default 0.2)\n"
          "  -h, --help                this text\n"
          "\n"
          "Exit status: 0 when both faces were compared, 1 when an image has no face or a\n"
          "model failed, 2 for bad usage, an unreadable image or an unknown model.\n",
          out);
}

typedef struct {
    osp_model_t *det, *emb;
    float margin;
    osp_decoder_t *dec;
    osp_image_t img, crop;
    osp_infer_ctx_t ctx;
} cmp_t;

/* Find, crop and embed the face of one image into vec (L2-normalised). */
static int embed_face(cmp_t *c, const char *input, float *vec, int *dim, osp_det_t *face) {
    osp_result_t r;
    int rc = osp_cli_run_image("compare", "face detection", c->dec, input, &c->img, c->det,
                               &c->ctx, &r);
    if (rc) return rc;
    osp_view_t v = osp_image_view(&c->img);
    int best = -1;
    for (int i = 0; i < r.n_dets; i++)
        if (best < 0 || r.dets[i].score > r.dets[best].score) best = i;
    if (best < 0) {
        osp_log(OSP_LOG_ERROR, "osprey compare: %s: no face found", input);
        return 1;
    }
    *face = r.dets[best];
    float cx = (face->x1 + face->x2) / 2, cy = (face->y1 + face->y2) / 2;
    float side = fmaxf(face->x2 - face->x1, face->y2 - face->y1) * (1 + c->margin);
    if (side < 8) side = 8;
    float h = side / 2;
    const float quad[4][2] = {{cx - h, cy - h}, {cx + h, cy - h}, {cx + h, cy + h}, {cx - h, cy + h}};
    int s = (int)lrintf(side);
    if (osp_crop_quad(&v, quad, s, s, &c->crop)) {
        osp_log(OSP_LOG_ERROR, "osprey compare: %s: cannot crop the face", input);
        return 1;
    }
    osp_view_t fv = osp_image_view(&c->crop);
    char err[512];
    if (osp_model_infer(c->emb, &c->ctx, &fv, 0, 0, &r, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey compare: %s: embedding failed: %s", input, err);
        return 1;
    }
    if (r.kind != OSP_REC_EMBEDDING || r.vec_dim < 1 || r.vec_dim > EMB_MAX) {
        osp_log(OSP_LOG_ERROR, "osprey compare: the embedder gave no embedding (postprocessor %s)",
                c->emb->dec->name);
        return 1;
    }
    memcpy(vec, r.vec, (size_t)r.vec_dim * sizeof *vec);
    *dim = r.vec_dim;
    return 0;
}

static void put_face(osp_jw_t *w, const char *key, const osp_det_t *d) {
    osp_jw_key(w, key);
    osp_jw_obj_open(w);
    osp_model_put_box(w, d);
    osp_jw_key(w, "score");
    osp_jw_num(w, d->score, 4);
    osp_jw_obj_close(w);
}

int osp_cmd_compare(int argc, char **argv) {
    const char *det_name = "ultraface", *emb_name = "face-embed";
    float margin = 0.2f;
    static const struct option longopts[] = {{"detector", required_argument, NULL, 'D'},
                                             {"embedder", required_argument, NULL, 'E'},
                                             {"margin", required_argument, NULL, 'M'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "M:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'D': det_name = optarg; break;
        case 'E': emb_name = optarg; break;
        case 'M': {
            double m;
            if (osp_args_num("osprey compare", "--margin", optarg, 0, 2, &m)) return 2;
            margin = (float)m;
            break;
        }
        case 'h': usage(stdout); return 0;
        default: fprintf(stderr, "osprey compare: see 'osprey compare --help'\n"); return 2;
        }
    }
    if (argc - optind != 2) {
        fprintf(stderr, "osprey compare: give exactly two images (see 'osprey compare --help')\n");
        return 2;
    }
    for (int i = optind; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0 || !S_ISREG(st.st_mode)) {
            fprintf(stderr, "osprey compare: cannot open %s: %s\n", argv[i],
                    errno ? strerror(errno) : "not a file");
            return 2;
        }
    }
    cmp_t cm = {.margin = margin};
    static float va[EMB_MAX], vb[EMB_MAX];
    int da = 0, db = 0;
    osp_det_t fa, fb;
    int status = osp_cli_open_model("compare", det_name, -1, &cm.det);
    if (!status) status = osp_cli_open_model("compare", emb_name, -1, &cm.emb);
    if (!status && !(cm.dec = osp_decoder_new())) {
        osp_log(OSP_LOG_ERROR, "osprey compare: out of memory");
        status = 1;
    }
    if (!status) status = embed_face(&cm, argv[optind], va, &da, &fa);
    if (!status) status = embed_face(&cm, argv[optind + 1], vb, &db, &fb);
    if (!status && da != db) {
        osp_log(OSP_LOG_ERROR, "osprey compare: embeddings differ in size (%d, %d)", da, db);
        status = 1;
    }
    if (!status) {
        double dot = 0;
        for (int i = 0; i < da; i++) dot += (double)va[i] * vb[i];
        osp_jw_t w = {0};
        osp_jw_obj_open(&w);
        osp_jw_key(&w, "a");
        osp_jw_str(&w, argv[optind]);
        osp_jw_key(&w, "b");
        osp_jw_str(&w, argv[optind + 1]);
        osp_jw_key(&w, "similarity");
        osp_jw_num(&w, dot, 4);
        put_face(&w, "faceA", &fa);
        put_face(&w, "faceB", &fb);
        osp_jw_obj_close(&w);
        fwrite(w.buf, 1, w.len, stdout);
        fputc('\n', stdout);
        osp_jw_free(&w);
    }
    fflush(stdout);
    if (cm.dec) osp_decoder_free(cm.dec);
    osp_model_free(cm.det);
    osp_model_free(cm.emb);
    osp_image_free(&cm.img);
    osp_image_free(&cm.crop);
    osp_infer_ctx_free(&cm.ctx);
    return status;
}
