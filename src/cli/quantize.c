/*
 * osprey quantize: static post-training quantization of a float model to
 * int8 in the QDQ form ONNX Runtime fuses into integer kernels.
 *
 * The work is split where the tools are. Rewriting an ONNX graph means
 * reading and writing its protobuf, which Debian's python3-onnx does and C
 * would need a protobuf stack for; tools/quantize.py does that, twice: it
 * writes a calibration copy of the model whose extra outputs are the tensors
 * to quantize, and at the end the QDQ model from their ranges. Everything
 * the ranges depend on happens here, in C: each calibration frame is
 * decoded and prepared exactly as osprey serves it (scaled JPEG decode,
 * resize, normalisation, layout) and run by the same ONNX Runtime, so the
 * ranges are those of the tensors the server will feed. The same holds for
 * the agreement report: the fp32 and int8 models run on one prepared tensor
 * per held-out frame through the whole decode path.
 */
#include <errno.h>
#include <getopt.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/open.h"
#include "model/agree.h"
#include "model/calib.h"
#include "cli/qmedia.h"
#include "model/model.h"
#include "video/video.h"
#include "log/log.h"

#ifndef OSP_TOOLS_DIR
#define OSP_TOOLS_DIR "tools"
#endif

extern char **environ;

#define MAX_MEDIA 64


typedef struct {
    const char *model, *out;
    const char *faces; /* a face detector to crop the frames with, or NULL */
    osp_qmedia_t calib[MAX_MEDIA], hold[MAX_MEDIA];
    int n_calib, n_hold;
    osp_calib_method_t method;
    double pct;
    int every;
    int float_heads;
    float threshold; /* < 0: the model's */
} opts_t;

static void usage(FILE *out) {
    fputs("usage: osprey quantize --model NAME|PATH --calibrate MEDIA... --out OUT.onnx\n"
          "                       [--holdout MEDIA...] [options]\n"
          "\n"
          "Static post-training quantization to int8 (QDQ: uint8 activations, int8 weights\n"
          "per output channel, int32 biases). The model runs in float on the calibration\n"
          "media, prepared as osprey prepares every frame; the range of each tensor that\n"
          "feeds an integer kernel (Conv, Gemm, MatMul, and Add, Mul, Concat between them)\n"
          "is recorded; tools/quantize.py writes the quantized model. A Conv reading the\n"
          "image and the depthwise ones after it stay float (faster there), and so do the\n"
          "output tails (reshapes, softmax, box decoding). Models older than opset 13 are\n"
          "upgraded. With --holdout, both models run on those media and the agreement\n"
          "is printed: detection F1 at IoU 0.5 above the threshold, mean IoU of matched\n"
          "boxes, score differences (embeddings: cosine to the float vector).\n"
          "\n"
          "MEDIA are images (JPEG, PNG) and videos; a video may be limited to frames\n"
          "FIRST..LAST as PATH:FIRST-LAST (PATH:FIRST- to the end).\n"
          "\n"
          "options:\n"
          "  -m, --model NAME|PATH   a catalog model (see 'osprey models') or an ONNX file\n"
          "  -o, --out FILE          the int8 model to write\n"
          "      --calibrate MEDIA...  frames the ranges come from\n"
          "      --holdout MEDIA...  frames to measure agreement on (not for calibration)\n"
          "      --method M          minmax, or percentile (the default): the range between\n"
          "                          the lower and upper --percentile of each tensor's values\n"
          "      --percentile P      50..100 (default 99.999; the catalog's ssd-oidv4-int8: 99.99)\n"
          "  -e, --every N           every Nth video frame (default 10)\n"
          "      --faces DETECTOR    calibrate and compare on the faces DETECTOR (a catalog\n"
          "                          face detector or ONNX file) finds in the media, each\n"
          "                          cropped out: for models that only see face crops\n"
          "      --float-heads       keep float the results of int8 layers that only float\n"
          "                          ones read (a detector's heads); default int8\n"
          "  -t, --threshold T       score threshold for the agreement (default: the model's)\n"
          "  -h, --help              this text\n"
          "\n"
          "Environment: OSPREY_PYTHON (default /usr/bin/python3, with python3-onnx),\n"
          "OSPREY_TOOLS (the directory of quantize.py).\n"
          "Exit status: 0 done, 1 a failure while working, 2 bad usage or input.\n",
          out);
}

/* ---- calibration --------------------------------------------------------------- */

typedef struct {
    const osp_model_t *m; /* whose preparation the frames went through */
    osp_rt_model_t *rt;   /* the calibration model: the tensors are outputs */
    int n;                /* tensors */
    char **names;         /* owned */
    int *index;           /* output index of each tensor; owned */
    osp_calib_t *stats;   /* one per tensor; owned */
    osp_tensor_t *out;    /* rt->n_outputs slots; owned */
    int pass;             /* 1: min/max, 2: histogram */
} calib_t;

static int calib_frame(void *arg, osp_infer_ctx_t *ctx, char *err, size_t errlen) {
    calib_t *c = arg;
    osp_tensor_t in = osp_model_input(c->m, ctx->tensor, 1);
    memset(c->out, 0, (size_t)c->rt->n_outputs * sizeof *c->out);
    if (osp_rt_run(c->rt, &in, c->out, err, errlen)) return -1;
    int rc = 0;
    for (int i = 0; i < c->n; i++) {
        const osp_tensor_t *t = &c->out[c->index[i]];
        if (t->dtype != OSP_DT_F32) {
            snprintf(err, errlen, "tensor %s is %s, not float32", c->names[i],
                     osp_dtype_name(t->dtype));
            rc = -1;
            break;
        }
        size_t n = t->bytes / sizeof(float);
        if (c->pass == 1)
            osp_calib_observe(&c->stats[i], t->data, n);
        else
            osp_calib_count(&c->stats[i], t->data, n);
    }
    osp_rt_release_outputs(c->rt, c->out);
    return rc;
}

static void calib_free(calib_t *c) {
    for (int i = 0; i < c->n; i++) {
        free(c->names[i]);
        if (c->stats) osp_calib_free(&c->stats[i]);
    }
    free(c->names);
    free(c->index);
    free(c->stats);
    free(c->out);
    osp_rt_model_free(c->rt);
    memset(c, 0, sizeof *c);
}

/* Load the calibration model and find the tensors TENSORS.txt names. */
static int calib_open(calib_t *c, const osp_model_t *m, const char *model_path,
                      const char *list_path, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->m = m;
    FILE *f = fopen(list_path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %s: %s", list_path, strerror(errno));
        return -1;
    }
    char line[4096];
    int cap = 0, rc = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0]) continue;
        if (c->n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(c->names, (size_t)cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            c->names = nn;
        }
        if (!(c->names[c->n] = strdup(line)))
            rc = -1;
        else
            c->n++;
    }
    fclose(f);
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    osp_rt_opts_t opts = {0};
    if (osp_backend_onnxruntime.load(model_path, &opts, &c->rt, err, errlen)) return -1;
    c->index = calloc((size_t)c->n + 1, sizeof *c->index);
    c->stats = calloc((size_t)c->n + 1, sizeof *c->stats);
    c->out = calloc((size_t)c->rt->n_outputs, sizeof *c->out);
    if (!c->index || !c->stats || !c->out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        char want[32];
        snprintf(want, sizeof want, "osprey_calib_%d", i); /* tools/quantize.py names them so */
        osp_calib_init(&c->stats[i]);
        c->index[i] = -1;
        for (int k = 0; k < c->rt->n_outputs; k++)
            if (strcmp(c->rt->outputs[k].name, want) == 0) c->index[i] = k;
        if (c->index[i] < 0) {
            snprintf(err, errlen, "the calibration model has no output %s", c->names[i]);
            return -1;
        }
    }
    return 0;
}

static int write_ranges(const calib_t *c, osp_calib_method_t method, double pct, const char *path,
                        char *err, size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        float lo, hi;
        osp_calib_range(&c->stats[i], method, pct, &lo, &hi);
        /* six digits: a last-bit difference between two machines' float
         * kernels does not change the model's bytes */
        fprintf(f, "%s\t%.6g\t%.6g\n", c->names[i], (double)lo, (double)hi);
    }
    if (fclose(f)) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the graph tool ------------------------------------------------------------- */

/* python3 tools/quantize.py STEP A B C [FLAG]; its messages go to stderr. */
static int run_tool(const char *step, const char *a, const char *b, const char *c,
                    const char *flag, char *err, size_t errlen) {
    const char *py = getenv("OSPREY_PYTHON");
    const char *dir = getenv("OSPREY_TOOLS");
    char tool[1100];
    if (!py || !*py) py = "/usr/bin/python3";
    snprintf(tool, sizeof tool, "%s/quantize.py", dir && *dir ? dir : OSP_TOOLS_DIR);
    char *argv[] = {(char *)py, tool,      (char *)step, (char *)a,
                    (char *)b,  (char *)c, (char *)flag, NULL};
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int status = 0;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
    int rc = posix_spawn(&pid, py, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        snprintf(err, errlen, "cannot run %s: %s", py, strerror(rc));
        return -1;
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(err, errlen, "waiting for %s: %s", tool, strerror(errno));
            return -1;
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status)) {
        snprintf(err, errlen, "%s %s %s failed (%s %d)", tool, step, a,
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return -1;
    }
    return 0;
}

/* ---- agreement -------------------------------------------------------------------- */

typedef struct {
    osp_model_t *ref, *test;
    osp_agree_t a;
    osp_det_t *dets; /* the reference's detections of the frame; owned */
    int cap;
    float *vec; /* its embedding; owned */
    int vcap;
} agree_run_t;

static int agree_frame(void *arg, osp_infer_ctx_t *ctx, char *err, size_t errlen) {
    agree_run_t *g = arg;
    osp_result_t r;
    if (osp_model_predict(g->ref, ctx, &r, err, errlen)) return -1;
    /* the ctx's result is overwritten by the next predict: keep the reference's */
    if (r.n_dets > g->cap) {
        osp_det_t *d = realloc(g->dets, (size_t)r.n_dets * sizeof *d);
        if (!d) goto oom;
        g->dets = d;
        g->cap = r.n_dets;
    }
    if (r.vec_dim > g->vcap) {
        float *v = realloc(g->vec, (size_t)r.vec_dim * sizeof *v);
        if (!v) goto oom;
        g->vec = v;
        g->vcap = r.vec_dim;
    }
    int n_ref = r.n_dets, dim = r.vec_dim;
    if (n_ref) memcpy(g->dets, r.dets, (size_t)n_ref * sizeof *g->dets);
    if (dim) memcpy(g->vec, r.vec, (size_t)dim * sizeof *g->vec);
    if (osp_model_predict(g->test, ctx, &r, err, errlen)) return -1;
    if (dim) {
        if (r.vec_dim != dim) {
            snprintf(err, errlen, "the int8 model's embedding has %d values, the float one %d",
                     r.vec_dim, dim);
            return -1;
        }
        osp_agree_vec(&g->a, g->vec, r.vec, dim);
        return 0;
    }
    if (osp_agree_frame(&g->a, g->dets, n_ref, r.dets, r.n_dets, 0.5f)) goto oom;
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static void print_agreement(const agree_run_t *g, float threshold) {
    const osp_agree_t *a = &g->a;
    if (a->vecs) {
        printf("agreement with float on %ld held-out frames: cosine mean %.4f, min %.4f\n",
               a->frames, a->cos_sum / (double)a->vecs, a->cos_min);
        return;
    }
    printf("agreement with float on %ld held-out frames (score >= %.2f, IoU >= 0.5):\n", a->frames,
           (double)threshold);
    printf("  detections  float %ld, int8 %ld, matched %ld\n", a->n_ref, a->n_test, a->matched);
    printf("  F1          %.4f\n", osp_agree_f1(a));
    if (a->matched)
        printf("  mean IoU    %.4f\n  score diff  mean %.4f, max %.4f\n",
               a->iou_sum / (double)a->matched, a->dscore_sum / (double)a->matched, a->dscore_max);
}

/* ---- command ------------------------------------------------------------------------ */

static int parse_args(int argc, char **argv, opts_t *o) {
    enum { O_FLOAT_HEADS = 0x100, O_CALIBRATE, O_HOLDOUT, O_FACES, O_METHOD, O_PERCENTILE };
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                             {"float-heads", no_argument, NULL, O_FLOAT_HEADS},
                                             {"calibrate", no_argument, NULL, O_CALIBRATE},
                                             {"holdout", no_argument, NULL, O_HOLDOUT},
                                             {"model", required_argument, NULL, 'm'},
                                             {"faces", required_argument, NULL, O_FACES},
                                             {"out", required_argument, NULL, 'o'},
                                             {"method", required_argument, NULL, O_METHOD},
                                             {"percentile", required_argument, NULL, O_PERCENTILE},
                                             {"every", required_argument, NULL, 'e'},
                                             {"threshold", required_argument, NULL, 't'},
                                             {NULL, 0, NULL, 0}};
    /* --calibrate and --holdout take the words after them, up to the next
     * option: read in order ("-"), each word lands in the list open then */
    osp_qmedia_t *list = NULL;
    int *n = NULL;
    int c;
    optind = 1;
    opterr = 0; /* the messages below are this command's own */
    while ((c = getopt_long(argc, argv, "-:hm:o:e:t:", longopts, NULL)) != -1) {
        if (c == 1 && list && optarg[0] != '-') {
            if (*n == MAX_MEDIA || osp_qmedia_parse(optarg, &list[*n])) {
                fprintf(stderr, "osprey quantize: too many media or too long a path: %s\n", optarg);
                return -1;
            }
            (*n)++;
            continue;
        }
        list = NULL;
        switch (c) {
        case 'h': usage(stdout); return 1;
        case O_FLOAT_HEADS: o->float_heads = 1; break;
        case O_CALIBRATE:
            list = o->calib;
            n = &o->n_calib;
            break;
        case O_HOLDOUT:
            list = o->hold;
            n = &o->n_hold;
            break;
        case 'm': o->model = optarg; break;
        case O_FACES: o->faces = optarg; break;
        case 'o': o->out = optarg; break;
        case O_METHOD:
            if (strcmp(optarg, "minmax") == 0)
                o->method = OSP_CALIB_MINMAX;
            else if (strcmp(optarg, "percentile") == 0)
                o->method = OSP_CALIB_PERCENTILE;
            else {
                fprintf(stderr, "osprey quantize: --method is minmax or percentile, not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        case O_PERCENTILE: {
            char *end;
            o->pct = strtod(optarg, &end);
            if (*end || end == optarg || !(o->pct >= 50 && o->pct <= 100)) {
                fprintf(stderr, "osprey quantize: --percentile must be from 50 to 100, not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        }
        case 'e':
            if (osp_args_int(optarg, 1, 1000000, &o->every)) {
                fprintf(stderr, "osprey quantize: --every must be a whole number >= 1, not '%s'\n",
                        optarg);
                return -1;
            }
            break;
        case 't':
            if (osp_args_unit("osprey quantize", "--threshold", optarg, &o->threshold)) return -1;
            break;
        default: {
            /* a word outside a list, an unknown option, or an option whose value is
             * missing: the last word of the line is told as a missing value */
            const char *a = c == 1 ? optarg : argv[optind - 1];
            if (c == ':' || optind >= argc)
                fprintf(stderr, "osprey quantize: unknown option or missing value: %s\n", a);
            else
                fprintf(stderr,
                        "osprey quantize: unknown option '%s'; see 'osprey quantize --help'\n", a);
            return -1;
        }
        }
    }
    if (!o->model || !o->out || !o->n_calib) {
        fprintf(stderr,
                "osprey quantize: --model, --out and --calibrate are required; see 'osprey quantize --help'\n");
        return -1;
    }
    for (int k = 0; k < o->n_calib + o->n_hold; k++) {
        const char *p = k < o->n_calib ? o->calib[k].path : o->hold[k - o->n_calib].path;
        struct stat st;
        errno = 0;
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode)) {
            fprintf(stderr, "osprey quantize: cannot open %s: %s\n", p,
                    errno ? strerror(errno) : "not a file");
            return -1;
        }
    }
    return 0;
}

static void remove_dir(const char *dir, const char *const *files, int n) {
    char p[1200];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

int osp_cmd_quantize(int argc, char **argv) {
    opts_t o = {.method = OSP_CALIB_PERCENTILE, .pct = 99.999, .every = 10, .threshold = -1};
    int pr = parse_args(argc, argv, &o);
    if (pr) return pr > 0 ? 0 : 2;

    static const char *const files[] = {"calib.onnx", "tensors.txt", "ranges.txt"};
    char err[4096], dir[512], calib_path[600], list_path[600], ranges_path[600];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/osprey-quantize.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    osp_model_t *m = NULL, *q = NULL, *faces = NULL;
    osp_decoder_t *dec = NULL;
    calib_t c = {0};
    agree_run_t g = {0};
    long frames = 0;
    const char *heads = o.float_heads ? "--float-heads" : NULL;
    int rc, status = osp_cli_open_model("quantize", o.model, o.threshold, &m);
    if (status) return status;
    if (strcmp(m->dec->name, "ctc") == 0) {
        fprintf(stderr,
                "osprey quantize: %s is a text recognizer: lines run at their own width, "
                "which calibration does not cover\n",
                o.model);
        osp_model_free(m);
        return 2;
    }
    if (o.faces && (status = osp_cli_open_model("quantize", o.faces, -1, &faces))) {
        osp_model_free(m);
        return status;
    }
    if (!mkdtemp(dir)) {
        osp_log(OSP_LOG_ERROR, "osprey quantize: cannot create %s: %s", dir, strerror(errno));
        osp_model_free(faces);
        osp_model_free(m);
        return 1;
    }
    snprintf(calib_path, sizeof calib_path, "%s/%s", dir, files[0]);
    snprintf(list_path, sizeof list_path, "%s/%s", dir, files[1]);
    snprintf(ranges_path, sizeof ranges_path, "%s/%s", dir, files[2]);
    status = 1;
    if (!(dec = osp_decoder_new())) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (run_tool("prepare", m->cfg.path, calib_path, list_path, heads, err, sizeof err) ||
        calib_open(&c, m, calib_path, list_path, err, sizeof err))
        goto fail;
    c.pass = 1;
    rc = osp_qmedia_each(m, faces, dec, o.calib, o.n_calib, o.every, calib_frame, &c, &frames, err,
                         sizeof err);
    if (!rc && o.method == OSP_CALIB_PERCENTILE) {
        for (int i = 0; i < c.n; i++)
            if (osp_calib_hist_begin(&c.stats[i])) {
                snprintf(err, sizeof err, "out of memory");
                goto fail;
            }
        c.pass = 2;
        rc = osp_qmedia_each(m, faces, dec, o.calib, o.n_calib, o.every, calib_frame, &c, &frames,
                             err, sizeof err);
    }
    if (rc) {
        status = rc;
        goto fail;
    }
    if (!frames) {
        snprintf(err, sizeof err, "the calibration media gave no frames");
        status = 2;
        goto fail;
    }
    if (write_ranges(&c, o.method, o.pct, ranges_path, err, sizeof err) ||
        run_tool("write", m->cfg.path, ranges_path, o.out, heads, err, sizeof err))
        goto fail;
    printf("osprey quantize: %s -> %s: %d tensors calibrated on %ld frames (%s", m->cfg.name,
           o.out, c.n, frames, o.method == OSP_CALIB_MINMAX ? "min/max" : "percentile");
    if (o.method == OSP_CALIB_PERCENTILE) printf(" %g", o.pct);
    printf("%s)\n", o.float_heads ? ", float heads" : "");
    calib_free(&c);
    if (o.n_hold) {
        osp_model_cfg_t qc = m->cfg;
        snprintf(qc.path, sizeof qc.path, "%s", o.out);
        if (osp_model_open(&qc, NULL, &q, err, sizeof err)) goto fail;
        g.ref = m;
        g.test = q;
        osp_agree_init(&g.a);
        if ((rc = osp_qmedia_each(m, faces, dec, o.hold, o.n_hold, o.every, agree_frame, &g,
                                  &frames, err, sizeof err))) {
            status = rc;
            goto fail;
        }
        print_agreement(&g, m->cfg.confidence);
    }
    fflush(stdout);
    status = 0;
    goto done;
fail:
    osp_log(OSP_LOG_ERROR, "osprey quantize: %s", err);
done:
    calib_free(&c);
    free(g.dets);
    free(g.vec);
    remove_dir(dir, files, 3);
    if (dec) osp_decoder_free(dec);
    osp_model_free(q);
    osp_model_free(faces);
    osp_model_free(m);
    return status;
}
