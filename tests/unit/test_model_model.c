/* A loaded model and its frame path, on the scripted test backend
 * (docs/test-backend.md): open and its errors in the caller's buffer, input
 * layout and labels, prepare (colour order, normalisation, row by row),
 * predict with the model's or the request's decode settings, run failures,
 * batch predict (one stacked run split per frame, or one run each), and the
 * lone-frame session (scripted, and opened on ONNX Runtime). */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/model.h"

#include "tmpdir.h"

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Write the script g_dir/<name> and a config for it: postprocessor pp,
 * stretched to the input (no letterbox pad to shift a mean), value =
 * pixel / 51 so that gray 0, 102 and 255 give 0, 2 and 5. */
static void script_cfg(osp_model_cfg_t *cfg, const char *name, const char *json, const char *pp) {
    osp_model_cfg_defaults(cfg);
    snprintf(cfg->name, sizeof cfg->name, "%s", name);
    snprintf(cfg->path, sizeof cfg->path, "%s/%s", g_dir, name);
    snprintf(cfg->postprocessor, sizeof cfg->postprocessor, "%s", pp);
    cfg->fit = OSP_FIT_RESIZE;
    for (int c = 0; c < 3; c++) {
        cfg->mean[c] = 0.f;
        cfg->std[c] = 51.f;
    }
    write_file(cfg->path, json);
}

static osp_model_t *open_ok(const osp_model_cfg_t *cfg) {
    osp_model_t *m = NULL;
    char err[512] = "";
    int rc = osp_model_open(cfg, &osp_backend_test, &m, err, sizeof err);
    if (rc) fail_msg("open %s: %d %s", cfg->path, rc, err);
    assert_non_null(m);
    return m;
}

#define IN_NCHW(batch) \
    "\"inputs\":[{\"name\":\"images\",\"dtype\":\"float32\",\"shape\":[" batch ",3,8,8]}]"

/* One logit per frame: the mean of that frame's input tensor. Through a
 * sigmoid classifier the score says which pixels reached the run. */
static const char MEAN_LOGIT[] = "{" IN_NCHW("-1") ",\"outputs\":[{\"name\":\"logit\",\"dtype\":\"float32\","
                                                   "\"shape\":[-1,1],\"from_input\":\"mean\"}]}";

static float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

typedef struct {
    uint8_t px[64 * 64 * 3];
    osp_view_t v;
} frame_t;

/* A w x h frame of fmt whose every pixel is (a, b, c) in memory order. */
static void make_frame(frame_t *f, int w, int h, osp_pixfmt_t fmt, uint8_t a, uint8_t b, uint8_t c) {
    int ch = fmt == OSP_PIX_GRAY ? 1 : 3;
    assert_true((size_t)w * (size_t)h * (size_t)ch <= sizeof f->px);
    for (int i = 0; i < w * h; i++) {
        f->px[i * ch] = a;
        if (ch == 3) {
            f->px[i * ch + 1] = b;
            f->px[i * ch + 2] = c;
        }
    }
    f->v = (osp_view_t){.data = f->px, .width = w, .height = h, .stride = w * ch, .fmt = fmt};
}

static void gray_frame(frame_t *f, uint8_t v) { make_frame(f, 16, 16, OSP_PIX_RGB, v, v, v); }

static void test_open_describes_the_input(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "mean.json", MEAN_LOGIT, "classifier:sigmoid");
    char lpath[1100];
    snprintf(lpath, sizeof lpath, "%s/mean.labels", g_dir);
    write_file(lpath, "person\r\n\nbicycle\n");
    osp_model_t *m = open_ok(&cfg);
    assert_ptr_equal(m->rt->backend, &osp_backend_test);
    assert_null(m->rt_lone); /* the wide session is ONNX Runtime's only */
    assert_string_equal(m->dec->name, "classifier");
    assert_int_equal(m->prep.width, 8);
    assert_int_equal(m->prep.height, 8);
    assert_int_equal(m->prep.channels, 3);
    assert_int_equal(m->prep.layout, OSP_LAYOUT_NCHW);
    assert_int_equal(m->prep.elem, OSP_ELEM_F32);
    assert_int_equal(m->batch_dynamic, 1);
    /* labels from <model>.labels beside it, CR LF stripped; an empty line is no label */
    assert_int_equal(m->n_labels, 3);
    assert_string_equal(osp_model_label(m, 0), "person");
    assert_null(osp_model_label(m, 1));
    assert_string_equal(osp_model_label(m, 2), "bicycle");
    assert_null(osp_model_label(m, 3));
    assert_null(osp_model_label(m, -1));
    osp_model_free(m);
    unlink(lpath);

    /* uint8 NHWC, a fixed batch of 1, labels from a named file */
    static const char U8_NHWC[] =
        "{\"inputs\":[{\"name\":\"x\",\"dtype\":\"uint8\",\"shape\":[1,6,10,3]}],"
        "\"outputs\":[{\"name\":\"p\",\"dtype\":\"float32\",\"shape\":[1,2],\"fill\":0.5}]}";
    script_cfg(&cfg, "u8.json", U8_NHWC, "classifier");
    snprintf(cfg.labels_path, sizeof cfg.labels_path, "%s/names.txt", g_dir);
    write_file(cfg.labels_path, "a\nb\n");
    m = open_ok(&cfg);
    assert_int_equal(m->prep.width, 10);
    assert_int_equal(m->prep.height, 6);
    assert_int_equal(m->prep.layout, OSP_LAYOUT_NHWC);
    assert_int_equal(m->prep.elem, OSP_ELEM_U8);
    assert_int_equal(m->batch_dynamic, 0);
    assert_int_equal(m->n_labels, 2);
    assert_string_equal(osp_model_label(m, 1), "b");
    osp_model_free(m);
}

/* Without a labels file the catalog's built-in labels serve; a file wins. */
static void test_builtin_labels(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "builtin.json", MEAN_LOGIT, "classifier:sigmoid");
    cfg.builtin_labels = "cat\ndog\n";
    osp_model_t *m = open_ok(&cfg);
    assert_int_equal(m->n_labels, 2);
    assert_string_equal(osp_model_label(m, 1), "dog");
    osp_model_free(m);
    char lpath[1100];
    snprintf(lpath, sizeof lpath, "%s/builtin.labels", g_dir);
    write_file(lpath, "owl\n");
    m = open_ok(&cfg);
    assert_int_equal(m->n_labels, 1);
    assert_string_equal(osp_model_label(m, 0), "owl");
    osp_model_free(m);
    unlink(lpath);
}

/* Every failure says why in the caller's buffer, returns its code and
 * hands back no model (ASan checks that nothing half-made leaks). */
static void expect_open_error(const osp_model_cfg_t *cfg, int want_rc, const char *want_text) {
    osp_model_t *m = (osp_model_t *)1;
    char err[512] = "";
    int rc = osp_model_open(cfg, &osp_backend_test, &m, err, sizeof err);
    if (rc != want_rc || !strstr(err, want_text))
        fail_msg("open %s: got %d \"%s\", want %d \"%s\"", cfg->path, rc, err, want_rc, want_text);
    assert_null(m);
}

static void test_open_errors(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    char want[1200];

    script_cfg(&cfg, "gone.json", MEAN_LOGIT, "classifier");
    unlink(cfg.path);
    expect_open_error(&cfg, OSP_MODEL_ELOAD, "No such file or directory");

    script_cfg(&cfg, "loadfail.json", "{\"load_error\":\"out of GPU memory\"}", "classifier");
    snprintf(want, sizeof want, "cannot load model %s: out of GPU memory", cfg.path);
    expect_open_error(&cfg, OSP_MODEL_ELOAD, want);

    script_cfg(&cfg, "pp.json", MEAN_LOGIT, "nope");
    expect_open_error(&cfg, OSP_MODEL_EINVAL, "unknown postprocessor 'nope' (known: ");
    char err[512];
    osp_model_t *m;
    osp_model_open(&cfg, &osp_backend_test, &m, err, sizeof err);
    assert_non_null(strstr(err, "classifier"));

    script_cfg(&cfg, "rank2.json",
               "{\"inputs\":[{\"name\":\"vec\",\"dtype\":\"float32\",\"shape\":[1,16]}],"
               "\"outputs\":[{\"name\":\"o\",\"dtype\":\"float32\",\"shape\":[1,2]}]}",
               "classifier");
    snprintf(want, sizeof want, "cannot use model %s: model input vec has rank 2", cfg.path);
    expect_open_error(&cfg, OSP_MODEL_EINVAL, want);

    script_cfg(&cfg, "int8.json",
               "{\"inputs\":[{\"name\":\"q\",\"dtype\":\"int8\",\"shape\":[1,3,8,8]}],"
               "\"outputs\":[{\"name\":\"o\",\"dtype\":\"float32\",\"shape\":[1,2]}]}",
               "classifier");
    expect_open_error(&cfg, OSP_MODEL_EINVAL, "model input q is int8; osprey feeds float32 or uint8");

    script_cfg(&cfg, "size.json", MEAN_LOGIT, "classifier");
    cfg.width = 16;
    expect_open_error(&cfg, OSP_MODEL_EINVAL, "model input images is 8x8 but the config says 16x8");

    script_cfg(&cfg, "chan.json",
               "{\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[1,2,8,8]}],"
               "\"outputs\":[{\"name\":\"o\",\"dtype\":\"float32\",\"shape\":[1,2]}]}",
               "classifier");
    expect_open_error(&cfg, OSP_MODEL_EINVAL, "has 2 channels; osprey feeds 1 or 3");

    /* the postprocessor's own set-up refuses the outputs */
    script_cfg(&cfg, "i64.json",
               "{" IN_NCHW("1") ",\"outputs\":[{\"name\":\"o\",\"dtype\":\"int64\","
                                "\"shape\":[1,2]}]}",
               "classifier");
    snprintf(want, sizeof want,
             "cannot use model %s: postprocessor classifier needs a float32 first output", cfg.path);
    expect_open_error(&cfg, OSP_MODEL_EINVAL, want);

    script_cfg(&cfg, "act.json", MEAN_LOGIT, "classifier:tanh");
    expect_open_error(&cfg, OSP_MODEL_EINVAL, "unknown activation 'tanh'");
}

/* The whole frame path: the frame's pixels, normalised, reach the run
 * (the score is sigmoid of their mean) and the result carries the frame. */
static void test_prepare_predict(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "predict.json", MEAN_LOGIT, "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    osp_infer_ctx_t ctx = {0};
    osp_result_t res;
    char err[256];
    static frame_t f;
    const uint8_t grays[3] = {0, 102, 255};
    for (int i = 0; i < 3; i++) {
        gray_frame(&f, grays[i]);
        assert_int_equal(osp_model_prepare(m, &ctx, &f.v, 0, 0, err, sizeof err), 0);
        assert_int_equal(osp_model_predict(m, &ctx, &res, err, sizeof err), 0);
        assert_int_equal(res.kind, OSP_REC_CLASSES);
        assert_ptr_equal(res.rec, &ctx.rec);
        assert_int_equal(res.rec->n_classes, 1);
        assert_int_equal(res.rec->classes[0].cls, 0);
        assert_float_equal(res.rec->classes[0].score, sigmoid((float)grays[i] / 51.f), 1e-4);
        assert_int_equal(res.frame_w, 16);
        assert_int_equal(res.frame_h, 16);
        assert_true(res.predict_ms >= 0);
    }
    assert_int_equal(osp_test_backend_runs(m->rt), 3);
    assert_int_equal(atomic_load(&m->running), 0);

    /* a scaled-down decode of a 64x32 frame: the result is in its pixels */
    assert_int_equal(osp_model_infer(m, &ctx, &f.v, 64, 32, &res, err, sizeof err), 0);
    assert_int_equal(res.frame_w, 64);
    assert_int_equal(res.frame_h, 32);
    assert_int_equal(ctx.view_w, 16);
    assert_float_equal(ctx.geom.scale_x, 8.f / 64.f, 1e-6);
    assert_float_equal(ctx.geom.scale_y, 8.f / 32.f, 1e-6);
    osp_infer_ctx_free(&ctx);
    osp_model_free(m);
}

/* What the tensor holds: RGB order whatever the frame's order, one plane a
 * channel for NCHW float, pixels as they are for uint8 NHWC. */
static void test_prepare_tensor_layout(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "nchw.json", MEAN_LOGIT, "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    osp_infer_ctx_t ctx = {0};
    char err[256];
    static frame_t f;
    make_frame(&f, 16, 16, OSP_PIX_BGR, 153, 102, 51); /* r 51, g 102, b 153 */
    assert_int_equal(osp_model_prepare(m, &ctx, &f.v, 0, 0, err, sizeof err), 0);
    assert_true(ctx.tensor_cap >= 3 * 8 * 8 * sizeof(float));
    const float *t = ctx.tensor;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 64; i++) assert_float_equal(t[c * 64 + i], (float)(c + 1), 1e-5);
    osp_tensor_t in = osp_model_input(m, ctx.tensor, 2); /* two frames stacked */
    assert_int_equal(in.dtype, OSP_DT_F32);
    assert_int_equal(in.rank, 4);
    assert_int_equal(in.dims[0], 2);
    assert_int_equal(in.dims[1], 3);
    assert_int_equal(in.dims[2], 8);
    assert_int_equal(in.dims[3], 8);
    assert_int_equal(in.bytes, 2 * 3 * 8 * 8 * sizeof(float));
    assert_ptr_equal(in.data, ctx.tensor);
    osp_infer_ctx_free(&ctx);
    assert_null(ctx.tensor);
    osp_model_free(m);

    static const char U8_NHWC[] =
        "{\"inputs\":[{\"name\":\"x\",\"dtype\":\"uint8\",\"shape\":[1,8,8,3]}],"
        "\"outputs\":[{\"name\":\"p\",\"dtype\":\"float32\",\"shape\":[1,2],\"fill\":0.5}]}";
    script_cfg(&cfg, "nhwc.json", U8_NHWC, "classifier");
    m = open_ok(&cfg);
    make_frame(&f, 16, 16, OSP_PIX_BGR, 30, 20, 10);
    assert_int_equal(osp_model_prepare(m, &ctx, &f.v, 0, 0, err, sizeof err), 0);
    const uint8_t *u = ctx.tensor;
    for (int i = 0; i < 64; i++) {
        assert_int_equal(u[i * 3 + 0], 10);
        assert_int_equal(u[i * 3 + 1], 20);
        assert_int_equal(u[i * 3 + 2], 30);
    }
    in = osp_model_input(m, ctx.tensor, 1);
    assert_int_equal(in.dtype, OSP_DT_U8);
    assert_int_equal(in.dims[0], 1);
    assert_int_equal(in.dims[1], 8);
    assert_int_equal(in.dims[2], 8);
    assert_int_equal(in.dims[3], 3);
    assert_int_equal(in.bytes, 8 * 8 * 3);
    osp_result_t res;
    assert_int_equal(osp_model_predict(m, &ctx, &res, err, sizeof err), 0);
    assert_int_equal(res.rec->n_classes, 2); /* probabilities as they are: 0.5 each */
    assert_float_equal(res.rec->classes[0].score, 0.5f, 1e-6);
    osp_infer_ctx_free(&ctx);
    osp_model_free(m);
}

/* A frame whose rows arrive one read at a time makes the same tensor as the
 * whole frame; formats the row path cannot take are refused with a reason. */
static void test_prepare_rows(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "rows.json", MEAN_LOGIT, "classifier:sigmoid");
    cfg.fit = OSP_FIT_LETTERBOX;
    osp_model_t *m = open_ok(&cfg);
    static frame_t f;
    make_frame(&f, 24, 12, OSP_PIX_RGB, 0, 0, 0);
    for (int i = 0; i < 24 * 12 * 3; i++) f.px[i] = (uint8_t)(i * 7);
    osp_infer_ctx_t whole = {0}, rows = {0};
    char err[256];
    assert_int_equal(osp_model_prepare(m, &whole, &f.v, 0, 0, err, sizeof err), 0);
    osp_prep_stream_t *st = osp_prep_stream_new();
    assert_non_null(st);
    assert_int_equal(osp_model_prepare_rows_begin(m, &rows, st, 24, 12, OSP_PIX_RGB, err, sizeof err),
                     0);
    for (int y = 0; y < 12; y += 5) {
        int n = 12 - y < 5 ? 12 - y : 5;
        osp_prep_stream_rows(st, f.px + (size_t)y * 72, 72, n);
    }
    assert_int_equal(osp_model_prepare_rows_end(&rows, st, 24, 12, 1.5, err, sizeof err), 0);
    assert_memory_equal(rows.tensor, whole.tensor, osp_prep_tensor_bytes(&m->prep));
    assert_memory_equal(&rows.geom, &whole.geom, sizeof rows.geom);
    assert_int_equal(rows.frame_w, 24);
    assert_int_equal(rows.frame_h, 12);
    assert_true(rows.prep_ms == 1.5);
    osp_result_t a, b;
    assert_int_equal(osp_model_predict(m, &whole, &a, err, sizeof err), 0);
    assert_int_equal(osp_model_predict(m, &rows, &b, err, sizeof err), 0);
    assert_float_equal(a.rec->classes[0].score, b.rec->classes[0].score, 1e-6);

    strcpy(err, "");
    assert_int_equal(osp_model_prepare_rows_begin(m, &rows, st, 24, 12, OSP_PIX_GRAY, err, sizeof err),
                     OSP_MODEL_EINVAL);
    assert_string_equal(err, "frame not prepared row by row for this model");
    osp_prep_stream_free(st);
    osp_infer_ctx_free(&whole);
    osp_infer_ctx_free(&rows);
    osp_model_free(m);
}

/* A server snapshots decode settings per request: they win over the model's. */
static void test_request_decode_settings(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "params.json", MEAN_LOGIT, "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    osp_infer_ctx_t ctx = {0};
    osp_result_t res;
    char err[256];
    static frame_t f;
    gray_frame(&f, 102); /* score sigmoid(2) = 0.88 */
    assert_int_equal(osp_model_infer(m, &ctx, &f.v, 0, 0, &res, err, sizeof err), 0);
    assert_int_equal(res.rec->n_classes, 1);
    ctx.params_set = 1;
    ctx.confidence = 0.9f;
    assert_int_equal(osp_model_infer(m, &ctx, &f.v, 0, 0, &res, err, sizeof err), 0);
    assert_int_equal(res.rec->n_classes, 0);
    ctx.confidence = 0.85f;
    assert_int_equal(osp_model_infer(m, &ctx, &f.v, 0, 0, &res, err, sizeof err), 0);
    assert_int_equal(res.rec->n_classes, 1);
    /* the model's own setting was not touched */
    assert_float_equal(m->cfg.confidence, 0.25f, 1e-6);
    osp_infer_ctx_free(&ctx);
    osp_model_free(m);
}

static void test_predict_run_failure(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "runfail.json",
               "{\"run_error\":\"device lost\"," IN_NCHW("-1") ",\"outputs\":[{\"name\":"
                                                               "\"logit\",\"dtype\":\"float32\",\"shape\":[-1,1]}]}",
               "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    osp_infer_ctx_t ctx = {0};
    osp_result_t res;
    char err[256] = "";
    static frame_t f;
    gray_frame(&f, 1);
    assert_int_equal(osp_model_infer(m, &ctx, &f.v, 0, 0, &res, err, sizeof err), OSP_MODEL_ERUN);
    assert_non_null(strstr(err, "device lost"));
    assert_null(res.rec);
    assert_int_equal(atomic_load(&m->running), 0); /* a failed run is not left counted */
    assert_int_equal(osp_test_backend_runs(m->rt), 1);
    osp_infer_ctx_free(&ctx);
    osp_model_free(m);
}

/* Frames 0, 102 and 255 in one call: one stacked run of 3 on a dynamic
 * batch axis, each result from its own slice of the outputs. */
static void test_predict_batch_stacked(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "batch.json", MEAN_LOGIT, "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    static osp_infer_ctx_t ctx[3];
    osp_infer_ctx_t *pc[3] = {&ctx[0], &ctx[1], &ctx[2]};
    static frame_t f;
    const uint8_t grays[3] = {0, 102, 255};
    char err[256];
    for (int i = 0; i < 3; i++) {
        memset(&ctx[i], 0, sizeof ctx[i]);
        gray_frame(&f, grays[i]);
        f.v.width = 16 - 4 * i; /* and sizes, to see each result's own frame */
        assert_int_equal(osp_model_prepare(m, &ctx[i], &f.v, 0, 0, err, sizeof err), 0);
    }
    osp_result_t res[3];
    int rcs[3] = {-9, -9, -9};
    osp_batch_buf_t buf = {0};
    assert_int_equal(osp_model_predict_batch(m, pc, 3, res, rcs, &buf, err, sizeof err), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rcs[i], 0);
        assert_ptr_equal(res[i].rec, &ctx[i].rec);
        assert_int_equal(res[i].rec->n_classes, 1);
        assert_float_equal(res[i].rec->classes[0].score, sigmoid((float)grays[i] / 51.f), 1e-4);
        assert_int_equal(res[i].frame_w, 16 - 4 * i);
    }
    int sizes[4];
    assert_int_equal(osp_test_backend_batches(m->rt, sizes, 4), 1);
    assert_int_equal(sizes[0], 3);
    assert_true(buf.cap >= 3 * osp_prep_tensor_bytes(&m->prep));
    /* the buffer is reused, and one frame runs as itself */
    assert_int_equal(osp_model_predict_batch(m, pc, 1, res, rcs, &buf, err, sizeof err), 0);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(osp_model_predict_batch(m, pc, 0, res, rcs, &buf, err, sizeof err), 0);
    assert_int_equal(osp_test_backend_batches(m->rt, sizes, 4), 2);
    assert_int_equal(sizes[1], 1);
    osp_batch_buf_free(&buf);
    assert_null(buf.data);
    for (int i = 0; i < 3; i++) osp_infer_ctx_free(&ctx[i]);
    osp_model_free(m);
}

/* A fixed batch of 1: one run per frame, each frame's outcome its own. */
static void test_predict_batch_per_frame(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "static.json",
               "{\"run_error_every\":2," IN_NCHW("1") ",\"outputs\":[{\"name\":\"logit\","
                                                      "\"dtype\":\"float32\",\"shape\":[1,1],\"from_input\":\"mean\"}]}",
               "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    assert_int_equal(m->batch_dynamic, 0);
    static osp_infer_ctx_t ctx[3];
    osp_infer_ctx_t *pc[3] = {&ctx[0], &ctx[1], &ctx[2]};
    static frame_t f;
    char err[256];
    for (int i = 0; i < 3; i++) {
        memset(&ctx[i], 0, sizeof ctx[i]);
        gray_frame(&f, (uint8_t)(51 * i));
        assert_int_equal(osp_model_prepare(m, &ctx[i], &f.v, 0, 0, err, sizeof err), 0);
    }
    osp_result_t res[3];
    int rcs[3] = {-9, -9, -9};
    osp_batch_buf_t buf = {0};
    assert_int_equal(osp_model_predict_batch(m, pc, 3, res, rcs, &buf, err, sizeof err), 0);
    assert_int_equal(rcs[0], 0);
    assert_int_equal(rcs[1], OSP_MODEL_ERUN);
    assert_int_equal(rcs[2], 0);
    assert_non_null(strstr(err, "scripted failure of run 2"));
    assert_float_equal(res[0].rec->classes[0].score, sigmoid(0.f), 1e-4);
    assert_float_equal(res[2].rec->classes[0].score, sigmoid(2.f), 1e-4);
    int sizes[4];
    assert_int_equal(osp_test_backend_batches(m->rt, sizes, 4), 3);
    for (int i = 0; i < 3; i++) assert_int_equal(sizes[i], 1);
    osp_batch_buf_free(&buf);
    for (int i = 0; i < 3; i++) osp_infer_ctx_free(&ctx[i]);
    osp_model_free(m);
}

/* A model that declares a batch axis but answers with one item: every frame
 * of the stacked run fails, with the reason, and the call itself does not. */
static void test_predict_batch_item_failure(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "nobatch.json",
               "{" IN_NCHW("-1") ",\"outputs\":[{\"name\":\"logit\",\"dtype\":\"float32\","
                                 "\"shape\":[1,1],\"fill\":3}]}",
               "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    static osp_infer_ctx_t ctx[2];
    osp_infer_ctx_t *pc[2] = {&ctx[0], &ctx[1]};
    static frame_t f;
    char err[256] = "";
    gray_frame(&f, 10);
    for (int i = 0; i < 2; i++) {
        memset(&ctx[i], 0, sizeof ctx[i]);
        assert_int_equal(osp_model_prepare(m, &ctx[i], &f.v, 0, 0, err, sizeof err), 0);
    }
    osp_result_t res[2];
    int rcs[2] = {-9, -9};
    osp_batch_buf_t buf = {0};
    assert_int_equal(osp_model_predict_batch(m, pc, 2, res, rcs, &buf, err, sizeof err), 0);
    assert_int_equal(rcs[0], OSP_MODEL_ERUN);
    assert_int_equal(rcs[1], OSP_MODEL_ERUN);
    assert_string_equal(err, "output logit does not carry the batch of 2");
    osp_batch_buf_free(&buf);
    for (int i = 0; i < 2; i++) osp_infer_ctx_free(&ctx[i]);
    osp_model_free(m);
}

/* The shared run itself fails: nonzero, the reason, no per-frame outcome. */
static void test_predict_batch_run_failure(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "batchfail.json",
               "{\"run_error\":\"batch too big for the GPU\"," IN_NCHW(
                   "-1") ",\"outputs\":"
                         "[{\"name\":\"logit\",\"dtype\":\"float32\",\"shape\":[-1,1]}]}",
               "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    static osp_infer_ctx_t ctx[2];
    osp_infer_ctx_t *pc[2] = {&ctx[0], &ctx[1]};
    static frame_t f;
    char err[256] = "";
    gray_frame(&f, 10);
    for (int i = 0; i < 2; i++) {
        memset(&ctx[i], 0, sizeof ctx[i]);
        assert_int_equal(osp_model_prepare(m, &ctx[i], &f.v, 0, 0, err, sizeof err), 0);
    }
    osp_result_t res[2];
    int rcs[2] = {-9, -9};
    osp_batch_buf_t buf = {0};
    assert_int_equal(osp_model_predict_batch(m, pc, 2, res, rcs, &buf, err, sizeof err),
                     OSP_MODEL_ERUN);
    assert_non_null(strstr(err, "batch too big for the GPU"));
    assert_int_equal(rcs[0], -9);
    assert_int_equal(rcs[1], -9);
    assert_int_equal(atomic_load(&m->running), 0);
    osp_batch_buf_free(&buf);
    for (int i = 0; i < 2; i++) osp_infer_ctx_free(&ctx[i]);
    osp_model_free(m);
}

/* ---- the lone-frame session ------------------------------------------------ */

static osp_rt_model_t *load_script(const char *name, const char *json) {
    char path[512], err[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    write_file(path, json);
    osp_rt_model_t *rt = NULL;
    if (osp_backend_test.load(path, NULL, &rt, err, sizeof err)) fail_msg("%s", err);
    return rt;
}

typedef struct {
    osp_model_t *m;
    osp_infer_ctx_t ctx;
    int rc;
} runner_t;

static void *predict_on_thread(void *arg) {
    runner_t *r = arg;
    osp_result_t res;
    char err[256];
    r->rc = osp_model_predict(r->m, &r->ctx, &res, err, sizeof err);
    return NULL;
}

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Wait (at most 20 s) until rt has had n runs enter it. */
static void wait_runs(const osp_rt_model_t *rt, int64_t n) {
    for (int i = 0; i < 2000 && osp_test_backend_runs(rt) < n; i++) sleep_ms(10);
    assert_int_equal(osp_test_backend_runs(rt), n);
}

/* A frame marked lone takes the wide session only when no other run is in
 * progress on the model; everything else takes the shared one. The wide
 * session is put in by hand: osp_model_open makes it on ONNX Runtime only. */
static void test_lone_frame_takes_the_wide_session(void **s) {
    (void)s;
    char release[512];
    snprintf(release, sizeof release, "%s/release", g_dir);
    char json[1024];
    snprintf(json, sizeof json,
             "{\"run_block_file\":\"%s\"," IN_NCHW("-1") ",\"outputs\":[{\"name\":\"logit\","
                                                         "\"dtype\":\"float32\",\"shape\":[-1,1],\"from_input\":\"mean\"}]}",
             release);
    osp_model_cfg_t cfg;
    script_cfg(&cfg, "shared.json", json, "classifier:sigmoid");
    osp_model_t *m = open_ok(&cfg);
    m->rt_lone = load_script("wide.json", MEAN_LOGIT); /* freed with m */
    static frame_t f;
    gray_frame(&f, 102);
    char err[256];
    osp_result_t res;

    static runner_t busy, alone;
    memset(&busy, 0, sizeof busy);
    memset(&alone, 0, sizeof alone);
    busy.m = alone.m = m;
    assert_int_equal(osp_model_prepare(m, &busy.ctx, &f.v, 0, 0, err, sizeof err), 0);
    assert_int_equal(osp_model_prepare(m, &alone.ctx, &f.v, 0, 0, err, sizeof err), 0);
    alone.ctx.lone = 1;

    /* nothing else runs: the lone frame goes wide */
    write_file(release, "");
    assert_int_equal(osp_model_predict(m, &alone.ctx, &res, err, sizeof err), 0);
    assert_float_equal(res.rec->classes[0].score, sigmoid(2.f), 1e-4);
    assert_int_equal(osp_test_backend_runs(m->rt_lone), 1);
    assert_int_equal(osp_test_backend_runs(m->rt), 0);
    assert_int_equal(atomic_load(&m->lone_runs), 1);
    /* not lone: the shared session */
    assert_int_equal(osp_model_predict(m, &busy.ctx, &res, err, sizeof err), 0);
    assert_int_equal(osp_test_backend_runs(m->rt), 1);
    unlink(release);

    /* another run in progress: the lone frame shares the session */
    pthread_t tb, ta;
    assert_int_equal(pthread_create(&tb, NULL, predict_on_thread, &busy), 0);
    wait_runs(m->rt, 2);
    assert_int_equal(atomic_load(&m->running), 1);
    assert_int_equal(pthread_create(&ta, NULL, predict_on_thread, &alone), 0);
    wait_runs(m->rt, 3);
    write_file(release, "");
    pthread_join(tb, NULL);
    pthread_join(ta, NULL);
    assert_int_equal(busy.rc, 0);
    assert_int_equal(alone.rc, 0);
    assert_int_equal(osp_test_backend_runs(m->rt_lone), 1);
    assert_int_equal(atomic_load(&m->lone_runs), 1);
    assert_int_equal(atomic_load(&m->running), 0);

    /* a stacked batch led by a lone frame goes wide too */
    osp_infer_ctx_t *pc[2] = {&alone.ctx, &busy.ctx};
    osp_result_t br[2];
    int rcs[2];
    osp_batch_buf_t buf = {0};
    assert_int_equal(osp_model_predict_batch(m, pc, 2, br, rcs, &buf, err, sizeof err), 0);
    int sizes[4];
    assert_int_equal(osp_test_backend_batches(m->rt_lone, sizes, 4), 2);
    assert_int_equal(sizes[1], 2);
    assert_int_equal(atomic_load(&m->lone_runs), 2);
    osp_batch_buf_free(&buf);
    osp_infer_ctx_free(&busy.ctx);
    osp_infer_ctx_free(&alone.ctx);
    osp_model_free(m);
}

/* On ONNX Runtime a model with lone_threads > 1 opens the second session,
 * and a lone frame runs on it with the same result as on the shared one. */
static void test_lone_session_on_onnxruntime(void **s) {
    (void)s;
    osp_model_cfg_t cfg;
    char err[512];
    assert_int_equal(osp_model_cfg_from_catalog("ultraface", &cfg, err, sizeof err), 0);
    struct stat sb;
    if (stat(cfg.path, &sb) != 0)
        fail_msg("%s is missing: run `make assets` (it fetches the catalog models into "
                 "$OSPREY_CACHE/models, default ~/.cache/osprey/models)",
                 cfg.path);
    cfg.intra_threads = 1;
    cfg.lone_threads = 2;
    cfg.device[0] = '\0';
    osp_model_t *m = NULL;
    int rc = osp_model_open(&cfg, NULL, &m, err, sizeof err);
    if (rc) fail_msg("open %s: %s", cfg.path, err);
    assert_ptr_equal(m->rt->backend, &osp_backend_onnxruntime);
    assert_non_null(m->rt_lone);
    assert_ptr_not_equal(m->rt_lone, m->rt);
    static frame_t f;
    make_frame(&f, 64, 48, OSP_PIX_RGB, 90, 120, 200);
    osp_infer_ctx_t ctx = {0};
    osp_result_t res;
    assert_int_equal(osp_model_infer(m, &ctx, &f.v, 0, 0, &res, err, sizeof err), 0);
    int shared_dets = res.n_dets;
    assert_int_equal(atomic_load(&m->lone_runs), 0);
    ctx.lone = 1;
    assert_int_equal(osp_model_infer(m, &ctx, &f.v, 0, 0, &res, err, sizeof err), 0);
    assert_int_equal(atomic_load(&m->lone_runs), 1);
    assert_int_equal(res.n_dets, shared_dets);
    osp_infer_ctx_free(&ctx);
    osp_model_free(m);

    /* as many lone threads as shared ones: no second session */
    cfg.lone_threads = 1;
    assert_int_equal(osp_model_open(&cfg, NULL, &m, err, sizeof err), 0);
    assert_null(m->rt_lone);
    osp_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_describes_the_input),
        cmocka_unit_test(test_builtin_labels),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_prepare_predict),
        cmocka_unit_test(test_prepare_tensor_layout),
        cmocka_unit_test(test_prepare_rows),
        cmocka_unit_test(test_request_decode_settings),
        cmocka_unit_test(test_predict_run_failure),
        cmocka_unit_test(test_predict_batch_stacked),
        cmocka_unit_test(test_predict_batch_per_frame),
        cmocka_unit_test(test_predict_batch_item_failure),
        cmocka_unit_test(test_predict_batch_run_failure),
        cmocka_unit_test(test_lone_frame_takes_the_wide_session),
        cmocka_unit_test(test_lone_session_on_onnxruntime),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
