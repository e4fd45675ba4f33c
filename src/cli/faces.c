/*
 * osprey faces: the face library that `osprey detect --recognize` and a
 * cascade's "faceLibrary" name faces from (faces/faces.h).
 *   osprey faces add NAME IMAGE...   each image's one face, embedded, under NAME
 *   osprey faces list                the names, each with its embeddings
 *   osprey faces remove NAME         forget NAME
 * A face is found by a detector (ultraface), cropped as a cascade crops it
 * (model/cascade.h, osp_cascade_face_crop) and embedded (face-embed), so
 * the library holds what a cascade will compare against.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/open.h"
#include "faces/faces.h"
#include "log/log.h"
#include "model/cascade.h"
#include "model/model.h"

static void usage(FILE *out) {
    fputs("usage: osprey faces [options] add NAME IMAGE...\n"
          "       osprey faces [options] list\n"
          "       osprey faces [options] remove NAME\n"
          "\n"
          "The face library 'osprey detect --recognize FILE' names faces from (SQLite).\n"
          "add: each image must show exactly one face; it is found, cropped and embedded\n"
          "as a cascade does (docs/cascades.md) and stored under NAME. An image with no\n"
          "face, or with several, is refused and nothing is stored.\n"
          "list: one line per name: NAME, the embeddings stored, their size.\n"
          "remove: every embedding of NAME.\n"
          "\n"
          "options:\n"
          "  -l, --library FILE     the library (default $XDG_DATA_HOME/osprey/faces.db,\n"
          "                         else ~/.local/share/osprey/faces.db); add makes it\n"
          "      --detector NAME    face detector (default ultraface; blazeface aligns the\n"
          "                         face from its landmarks, for close-up photos)\n"
          "  -h, --help             this text\n"
          "\n"
          "Exit status: 0 when done, 1 when an image was refused or a model failed, 2 for\n"
          "bad usage, an unreadable image, or a file that is not a face library.\n",
          out);
}

/* The one face of input, embedded, into vec (dim floats). */
static int embed_one(const char *input, osp_model_t *det, osp_model_t *emb, osp_decoder_t *dec,
                     osp_image_t *img, osp_image_t *crop, osp_infer_ctx_t *ctx, float *vec, int *dim) {
    osp_result_t r;
    int rc = osp_cli_run_image("faces", "face detection", dec, input, img, det, ctx, &r);
    if (rc) return rc;
    if (r.n_dets == 0) {
        osp_log(OSP_LOG_ERROR, "osprey faces: %s: no face found; give a photo of one face", input);
        return 1;
    }
    if (r.n_dets > 1) {
        osp_log(OSP_LOG_ERROR, "osprey faces: %s: %d faces found; give a photo of one face", input,
                r.n_dets);
        return 1;
    }
    osp_det_t face = r.dets[0];
    osp_view_t v = osp_image_view(img);
    char err[512];
    int landmarks = strcmp(det->cfg.postprocessor, "blazeface") == 0 ||
                    strcmp(det->cfg.postprocessor, "scrfd") == 0;
    if (osp_cascade_face_crop(&v, &face, emb, landmarks, OSP_CASCADE_MARGIN_DEF, crop)) {
        osp_log(OSP_LOG_ERROR, "osprey faces: %s: cannot crop the face", input);
        return 1;
    }
    osp_view_t fv = osp_image_view(crop);
    if (osp_model_infer(emb, ctx, &fv, 0, 0, &r, err, sizeof err) || r.kind != OSP_REC_EMBEDDING ||
        r.vec_dim < 1 || r.vec_dim > OSP_FACES_DIM_MAX) {
        osp_log(OSP_LOG_ERROR, "osprey faces: %s: embedding failed: %s", input,
                err[0] ? err : "no embedding");
        return 1;
    }
    memcpy(vec, r.vec, (size_t)r.vec_dim * sizeof *vec);
    *dim = r.vec_dim;
    return 0;
}

static int cmd_add(osp_faces_t *lib, const char *name, char **images, int n, const char *detector) {
    char err[512];
    if (osp_faces_check_name(name, err, sizeof err)) {
        fprintf(stderr, "osprey faces: name '%s': %s\n", name, err);
        return 2;
    }
    osp_model_t *det = NULL, *emb = NULL;
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0}, crop = {0};
    osp_infer_ctx_t ctx = {0};
    float *vecs = malloc((size_t)n * OSP_FACES_DIM_MAX * sizeof *vecs);
    int status = !dec || !vecs ? 1 : 0, dim = 0;
    if (status) osp_log(OSP_LOG_ERROR, "osprey faces: out of memory");
    const osp_catalog_entry_t *e = osp_catalog_find(detector);
    float thresh = e && e->cli_confidence > 0 ? e->cli_confidence : -1;
    if (!status) status = osp_cli_open_model("faces", detector, thresh, &det);
    if (!status) status = osp_cli_open_model("faces", "face-embed", -1, &emb);
    /* every image first: one refused stores none */
    for (int i = 0; i < n && !status; i++) {
        int d = 0;
        status = embed_one(images[i], det, emb, dec, &img, &crop, &ctx,
                           vecs + (size_t)i * OSP_FACES_DIM_MAX, &d);
        if (!status && dim && d != dim) {
            osp_log(OSP_LOG_ERROR, "osprey faces: embeddings differ in size");
            status = 1;
        }
        dim = d;
    }
    for (int i = 0; i < n && !status; i++) {
        const char *base = strrchr(images[i], '/');
        if (osp_faces_add(lib, name, vecs + (size_t)i * OSP_FACES_DIM_MAX, dim,
                          base ? base + 1 : images[i], err, sizeof err)) {
            osp_log(OSP_LOG_ERROR, "osprey faces: %s", err);
            status = 1;
        }
    }
    if (!status) printf("%s: %d face%s added\n", name, n, n == 1 ? "" : "s");
    free(vecs);
    if (dec) osp_decoder_free(dec);
    osp_model_free(det);
    osp_model_free(emb);
    osp_image_free(&img);
    osp_image_free(&crop);
    osp_infer_ctx_free(&ctx);
    return status;
}

static void print_name(void *arg, const char *name, int embeddings, int dim) {
    (void)arg;
    printf("%s\t%d\t%d\n", name, embeddings, dim);
}

int osp_cmd_faces(int argc, char **argv) {
    char lib_path[1024];
    const char *library = NULL, *detector = "ultraface";
    static const struct option longopts[] = {{"library", required_argument, NULL, 'l'},
                                             {"detector", required_argument, NULL, 'D'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+l:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': library = optarg; break;
        case 'D': detector = optarg; break;
        case 'h': usage(stdout); return 0;
        default: fprintf(stderr, "osprey faces: see 'osprey faces --help'\n"); return 2;
        }
    }
    const char *verb = optind < argc ? argv[optind] : NULL;
    int rest = argc - optind - 1;
    int add = verb && strcmp(verb, "add") == 0, list = verb && strcmp(verb, "list") == 0,
        remove = verb && strcmp(verb, "remove") == 0;
    if (!add && !list && !remove) {
        fprintf(stderr, "osprey faces: give add, list or remove (see 'osprey faces --help')\n");
        return 2;
    }
    if ((add && rest < 2) || (list && rest != 0) || (remove && rest != 1)) {
        fprintf(stderr, "osprey faces: %s takes %s\n", verb,
                add    ? "a NAME and at least one IMAGE"
                : list ? "nothing more"
                       : "one NAME");
        return 2;
    }
    if (!library) {
        osp_faces_default_path(lib_path, sizeof lib_path);
        library = lib_path;
    }
    osp_faces_t *lib = NULL;
    char err[1200];
    if (osp_faces_open(library, add, &lib, err, sizeof err) ||
        (list && osp_faces_load(lib, err, sizeof err))) {
        fprintf(stderr, "osprey faces: %s\n", err);
        osp_faces_close(lib);
        return 2;
    }
    int status = 0;
    if (add) {
        status = cmd_add(lib, argv[optind + 1], argv + optind + 2, rest - 1, detector);
    } else if (list) {
        if (osp_faces_list(lib, print_name, NULL, err, sizeof err)) {
            fprintf(stderr, "osprey faces: %s\n", err);
            status = 2;
        }
    } else {
        int n = osp_faces_remove(lib, argv[optind + 1], err, sizeof err);
        if (n < 0) {
            fprintf(stderr, "osprey faces: %s\n", err);
            status = 2;
        } else if (n == 0) {
            fprintf(stderr, "osprey faces: no face named '%s' in %s\n", argv[optind + 1], library);
            status = 1;
        } else {
            printf("%s: %d face%s removed\n", argv[optind + 1], n, n == 1 ? "" : "s");
        }
    }
    osp_faces_close(lib);
    fflush(stdout);
    return status;
}
