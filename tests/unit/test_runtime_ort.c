/* The ONNX Runtime backend on a real model (UltraFace RFB-320 from the
 * asset cache): what it declares, a run on a made frame and who owns its
 * outputs, outputs into the caller's buffers, bad inputs, files that are not
 * models, the thread and graph options, and runs from several threads. */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/model.h"
#include "runtime/runtime.h"

/* UltraFace RFB-320: input [1,3,240,320] float32, outputs scores [1,4420,2]
 * (softmaxed face/background) and boxes [1,4420,4] (corners in 0..1). */
#define W 320
#define H 240
#define ANCHORS 4420
#define IN_FLOATS (3 * H * W)

static char g_model[1024];
static char g_dir[] = "/tmp/osp_ort_XXXXXX";

/* The model is a fetched asset, found where osprey finds the catalog's
 * ultraface ($OSPREY_CACHE/models, else $HOME/.cache/osprey/models). */
static int find_model(void **s) {
    (void)s;
    osp_catalog_path(osp_catalog_find("ultraface"), g_model, sizeof g_model);
    struct stat st;
    if (stat(g_model, &st) != 0) {
        fprintf(stderr,
                "test_runtime_ort: %s is missing: run `make assets` (it fetches the catalog "
                "models into $OSPREY_CACHE/models, default ~/.cache/osprey/models)\n",
                g_model);
        return -1;
    }
    return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **s) {
    (void)s;
    if (strstr(g_dir, "XXXXXX")) return 0; /* the set-up found no model */
    DIR *d = opendir(g_dir);
    if (!d) return -1;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name);
            unlink(p);
        }
    closedir(d);
    return rmdir(g_dir);
}

static osp_rt_model_t *load(const osp_rt_opts_t *opts) {
    osp_rt_model_t *m = NULL;
    char err[1024] = "";
    int rc = osp_backend_onnxruntime.load(g_model, opts, &m, err, sizeof err);
    if (rc) fail_msg("load %s: %d %s", g_model, rc, err);
    assert_non_null(m);
    assert_ptr_equal(m->backend, &osp_backend_onnxruntime);
    return m;
}

/* A made frame: a bright disc on a dark ground, normalised as UltraFace
 * wants ((x - 127) / 128), so the outputs depend on every pixel. */
static float *made_input(float level) {
    float *x = malloc(IN_FLOATS * sizeof *x);
    assert_non_null(x);
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < H; y++)
            for (int i = 0; i < W; i++) {
                float dx = (float)(i - W / 2), dy = (float)(y - H / 2);
                float px = dx * dx + dy * dy < 60.f * 60.f ? level : 30.f;
                x[(c * H + y) * W + i] = (px - 127.f) / 128.f;
            }
    return x;
}

static osp_tensor_t input_of(float *x) {
    return (osp_tensor_t){.dtype = OSP_DT_F32,
                          .rank = 4,
                          .dims = {1, 3, H, W},
                          .data = x,
                          .bytes = IN_FLOATS * sizeof(float)};
}

static void test_describe(void **s) {
    (void)s;
    osp_rt_opts_t o = {.device = "cpu"};
    osp_rt_model_t *m = load(&o);
    assert_string_equal(m->provider, "CPUExecutionProvider");
    assert_int_equal(m->n_inputs, 1);
    assert_string_equal(m->inputs[0].name, "input");
    assert_int_equal(m->inputs[0].dtype, OSP_DT_F32);
    assert_int_equal(m->inputs[0].rank, 4);
    const int64_t in_dims[4] = {1, 3, H, W};
    assert_memory_equal(m->inputs[0].dims, in_dims, sizeof in_dims);
    assert_int_equal(m->n_outputs, 2);
    assert_string_equal(m->outputs[0].name, "scores");
    assert_string_equal(m->outputs[1].name, "boxes");
    const int64_t sc_dims[3] = {1, ANCHORS, 2}, bx_dims[3] = {1, ANCHORS, 4};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(m->outputs[i].dtype, OSP_DT_F32);
        assert_int_equal(m->outputs[i].rank, 3);
    }
    assert_memory_equal(m->outputs[0].dims, sc_dims, sizeof sc_dims);
    assert_memory_equal(m->outputs[1].dims, bx_dims, sizeof bx_dims);
    osp_rt_model_free(m);

    /* the names a config may give */
    assert_ptr_equal(osp_backend_find("onnxruntime"), &osp_backend_onnxruntime);
    assert_ptr_equal(osp_backend_find("ort"), &osp_backend_onnxruntime);
    assert_ptr_equal(osp_backend_find("onnx"), &osp_backend_onnxruntime);
    assert_ptr_equal(osp_backend_find(""), &osp_backend_onnxruntime);
    assert_int_equal(osp_backend_onnxruntime.abi_version, OSP_BACKEND_ABI);
}

/* The outputs are the backend's until release: shapes and sizes filled in,
 * scores that are probabilities, boxes in the unit square. */
static void check_outputs(const osp_tensor_t *out) {
    assert_int_equal(out[0].dtype, OSP_DT_F32);
    assert_int_equal(out[0].rank, 3);
    assert_int_equal(out[0].dims[0], 1);
    assert_int_equal(out[0].dims[1], ANCHORS);
    assert_int_equal(out[0].dims[2], 2);
    assert_int_equal(out[0].bytes, (size_t)ANCHORS * 2 * sizeof(float));
    assert_int_equal(out[1].dims[2], 4);
    assert_int_equal(out[1].bytes, (size_t)ANCHORS * 4 * sizeof(float));
    for (int i = 0; i < 2; i++) {
        assert_non_null(out[i].data);
        assert_non_null(out[i].impl);
    }
    const float *sc = out[0].data, *bx = out[1].data;
    for (int a = 0; a < ANCHORS; a++) {
        assert_true(sc[2 * a] >= 0.f && sc[2 * a + 1] >= 0.f);
        assert_float_equal(sc[2 * a] + sc[2 * a + 1], 1.f, 1e-3);
        for (int k = 0; k < 4; k++) assert_true(isfinite(bx[4 * a + k]));
    }
}

static float best_face(const osp_tensor_t *out) {
    const float *sc = out[0].data;
    float best = 0.f;
    for (int a = 0; a < ANCHORS; a++)
        if (sc[2 * a + 1] > best) best = sc[2 * a + 1];
    return best;
}

static void test_run_owns_outputs(void **s) {
    (void)s;
    osp_rt_model_t *m = load(NULL);
    float *x = made_input(230.f), *y = made_input(120.f);
    osp_tensor_t in = input_of(x), out[2], again[2];
    memset(out, 0, sizeof out);
    memset(again, 0, sizeof again);
    char err[512] = "";
    assert_int_equal(osp_rt_run(m, &in, out, err, sizeof err), OSP_RT_OK);
    check_outputs(out);
    /* the input stays the caller's, untouched */
    float *copy = made_input(230.f);
    assert_memory_equal(x, copy, IN_FLOATS * sizeof(float));
    /* a second run of the same input has outputs of its own, equal */
    assert_int_equal(osp_rt_run(m, &in, again, err, sizeof err), OSP_RT_OK);
    assert_ptr_not_equal(again[0].data, out[0].data);
    assert_memory_equal(again[0].data, out[0].data, out[0].bytes);
    assert_memory_equal(again[1].data, out[1].data, out[1].bytes);
    osp_rt_release_outputs(m, again);
    /* a different frame gives different scores */
    osp_tensor_t in2 = input_of(y);
    assert_int_equal(osp_rt_run(m, &in2, again, err, sizeof err), OSP_RT_OK);
    assert_true(best_face(again) != best_face(out));
    osp_rt_release_outputs(m, again);
    osp_rt_release_outputs(m, out);
    for (int i = 0; i < 2; i++) {
        assert_null(out[i].data);
        assert_null(out[i].impl);
    }
    osp_rt_release_outputs(m, out); /* twice is harmless */
    free(x);
    free(y);
    free(copy);
    osp_rt_model_free(m);
}

/* Outputs with data set are the caller's buffers, filled in place with
 * what the backend would have returned. */
static void test_run_into_caller_buffers(void **s) {
    (void)s;
    osp_rt_model_t *m = load(NULL);
    float *x = made_input(230.f);
    osp_tensor_t in = input_of(x), own[2];
    memset(own, 0, sizeof own);
    char err[512] = "";
    assert_int_equal(osp_rt_run(m, &in, own, err, sizeof err), OSP_RT_OK);
    static float sc[ANCHORS * 2], bx[ANCHORS * 4];
    osp_tensor_t mine[2] = {
        {.dtype = OSP_DT_F32, .rank = 3, .dims = {1, ANCHORS, 2}, .data = sc, .bytes = sizeof sc},
        {.dtype = OSP_DT_F32, .rank = 3, .dims = {1, ANCHORS, 4}, .data = bx, .bytes = sizeof bx},
    };
    assert_int_equal(osp_rt_run(m, &in, mine, err, sizeof err), OSP_RT_OK);
    assert_ptr_equal(mine[0].data, sc);
    assert_ptr_equal(mine[1].data, bx);
    assert_null(mine[0].impl);
    assert_null(mine[1].impl);
    assert_memory_equal(sc, own[0].data, sizeof sc);
    assert_memory_equal(bx, own[1].data, sizeof bx);
    osp_rt_release_outputs(m, mine);
    assert_ptr_equal(mine[0].data, sc); /* not the backend's to release */
    /* one caller buffer, one backend output */
    memset(sc, 0, sizeof sc);
    osp_tensor_t mixed[2] = {mine[0], {0}};
    assert_int_equal(osp_rt_run(m, &in, mixed, err, sizeof err), OSP_RT_OK);
    assert_memory_equal(sc, own[0].data, sizeof sc);
    assert_non_null(mixed[1].impl);
    assert_memory_equal(mixed[1].data, own[1].data, sizeof bx);
    osp_rt_release_outputs(m, mixed);
    assert_ptr_equal(mixed[0].data, sc);
    assert_null(mixed[1].data);
    /* a caller buffer smaller than the output is refused, not written past */
    static float guard[ANCHORS * 2];
    for (size_t i = 0; i < ANCHORS * 2; i++) guard[i] = -7.f;
    osp_tensor_t small[2] =
        {{.dtype = OSP_DT_F32, .rank = 3, .dims = {1, ANCHORS, 2}, .data = guard, .bytes = 100}, {0}};
    assert_int_equal(osp_rt_run(m, &in, small, err, sizeof err), OSP_RT_EINVAL);
    assert_non_null(strstr(err, "100 bytes given"));
    for (size_t i = 0; i < ANCHORS * 2; i++) assert_true(guard[i] == -7.f);
    assert_null(small[1].data);
    osp_rt_release_outputs(m, own);
    free(x);
    osp_rt_model_free(m);
}

/* Bad inputs fail with a reason and hand back nothing to release. */
static void test_bad_inputs(void **s) {
    (void)s;
    osp_rt_model_t *m = load(NULL);
    float *x = made_input(230.f);
    osp_tensor_t in = input_of(x), out[2];
    char err[512];

    memset(out, 0, sizeof out);
    in.bytes = 1000;
    strcpy(err, "");
    assert_int_equal(osp_rt_run(m, &in, out, err, sizeof err), OSP_RT_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "input input: 1000 bytes given, %zu needed",
             IN_FLOATS * sizeof(float));
    assert_string_equal(err, want);
    assert_null(out[0].data);
    assert_null(out[1].impl);

    in = input_of(x);
    in.data = NULL;
    assert_int_equal(osp_rt_run(m, &in, out, err, sizeof err), OSP_RT_EINVAL);
    assert_non_null(strstr(err, "input input"));

    /* a shape the model does not take: the runtime refuses while running */
    in = input_of(x);
    in.dims[2] = 120;
    in.bytes /= 2;
    strcpy(err, "");
    assert_int_equal(osp_rt_run(m, &in, out, err, sizeof err), OSP_RT_ERUN);
    assert_non_null(strstr(err, "inference failed: "));
    assert_true(strlen(err) > strlen("inference failed: "));
    assert_null(out[0].data);
    assert_null(out[0].impl);
    assert_null(out[1].impl);

    /* the wrong element type */
    in = input_of(x);
    in.dtype = OSP_DT_U8;
    in.bytes = IN_FLOATS;
    assert_int_equal(osp_rt_run(m, &in, out, err, sizeof err), OSP_RT_ERUN);
    assert_non_null(strstr(err, "inference failed: "));

    /* the model still runs after all that */
    in = input_of(x);
    assert_int_equal(osp_rt_run(m, &in, out, err, sizeof err), OSP_RT_OK);
    check_outputs(out);
    osp_rt_release_outputs(m, out);
    free(x);
    osp_rt_model_free(m);
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A file that is not a model: ELOAD, the path and the runtime's reason in
 * the caller's buffer, no model. */
static void expect_load_error(const char *path, const char *reason) {
    osp_rt_model_t *m = (osp_rt_model_t *)1;
    char err[1024] = "", want[600];
    assert_int_equal(osp_backend_onnxruntime.load(path, NULL, &m, err, sizeof err), OSP_RT_ELOAD);
    assert_null(m);
    snprintf(want, sizeof want, "cannot load model %s: ", path);
    if (strncmp(err, want, strlen(want)) != 0)
        fail_msg("error \"%s\" does not start \"%s\"", err, want);
    if (reason && !strstr(err, reason)) fail_msg("error \"%s\" does not say \"%s\"", err, reason);
    assert_true(strlen(err) > strlen(want));
}

static void test_load_errors(void **s) {
    (void)s;
    char path[512];
    snprintf(path, sizeof path, "%s/not-a-model.onnx", g_dir);
    const char text[] = "this is a text file, not an ONNX protobuf\n";
    write_bytes(path, text, sizeof text - 1);
    expect_load_error(path, NULL);

    snprintf(path, sizeof path, "%s/empty.onnx", g_dir);
    write_bytes(path, "", 0);
    expect_load_error(path, NULL);

    /* the first half of the real model */
    FILE *f = fopen(g_model, "rb");
    assert_non_null(f);
    static uint8_t half[1 << 19];
    size_t n = fread(half, 1, sizeof half, f);
    fclose(f);
    assert_true(n > 1000);
    snprintf(path, sizeof path, "%s/truncated.onnx", g_dir);
    write_bytes(path, half, n);
    expect_load_error(path, NULL);

    snprintf(path, sizeof path, "%s/missing.onnx", g_dir);
    expect_load_error(path, "No such file or directory");
    expect_load_error(g_dir, NULL); /* a directory */
}

/* Threads the process has now. */
static int thread_count(void) {
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Threads the process has once that count is want, or after 2 s: a thread
 * just joined can stay listed in /proc/self/task for a moment. */
static int thread_count_settled(int want) {
    int n = thread_count();
    for (int i = 0; i < 200 && n != want; i++) {
        usleep(10000);
        n = thread_count();
    }
    return n;
}

/* intra_threads is the size of the run's thread pool: the session starts
 * intra_threads - 1 helpers (the caller's thread is the first). Every
 * option set gives the same answers. */
static void test_thread_and_graph_options(void **s) {
    (void)s;
    osp_rt_model_t *ref = load(NULL);
    float *x = made_input(230.f);
    osp_tensor_t in = input_of(x), want[2];
    memset(want, 0, sizeof want);
    char err[512];
    assert_int_equal(osp_rt_run(ref, &in, want, err, sizeof err), OSP_RT_OK);

    const osp_rt_opts_t opts[] = {
        {.intra_threads = 1},
        {.intra_threads = 3},
        {.intra_threads = 4, .no_spin = 1},
        {.intra_threads = 1, .graph_opt = -1},
        {.intra_threads = 1, .graph_opt = 1},
        {.intra_threads = 1, .graph_opt = 2},
        {.intra_threads = 1, .graph_opt = 3},
        {.intra_threads = 2, .device = "auto"},
        {.intra_threads = 2, .device = "cuda"}, /* no CUDA here: CPU, with a word on stderr */
    };
    int base = thread_count();
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        int before = thread_count_settled(base);
        osp_rt_model_t *m = load(&opts[k]);
        assert_int_equal(thread_count_settled(before + opts[k].intra_threads - 1) - before,
                         opts[k].intra_threads - 1);
        osp_tensor_t out[2];
        memset(out, 0, sizeof out);
        assert_int_equal(osp_rt_run(m, &in, out, err, sizeof err), OSP_RT_OK);
        check_outputs(out);
        const float *a = out[0].data, *b = want[0].data;
        for (int i = 0; i < ANCHORS * 2; i++) assert_float_equal(a[i], b[i], 1e-4);
        a = out[1].data;
        b = want[1].data;
        for (int i = 0; i < ANCHORS * 4; i++) assert_float_equal(a[i], b[i], 1e-4);
        osp_rt_release_outputs(m, out);
        osp_rt_model_free(m);
        assert_int_equal(thread_count_settled(before), before); /* free stops them */
    }
    osp_rt_release_outputs(ref, want);
    free(x);
    osp_rt_model_free(ref);
}

/* One session, run from several threads at once (ospreyd's predict
 * workers): every run gives the single-thread answer. */
typedef struct {
    osp_rt_model_t *m;
    const osp_tensor_t *in;
    const float *want;
    int runs, wrong, failed;
} runner_t;

static void *run_many(void *arg) {
    runner_t *r = arg;
    char err[512];
    for (int i = 0; i < r->runs; i++) {
        osp_tensor_t out[2];
        memset(out, 0, sizeof out);
        if (osp_rt_run(r->m, r->in, out, err, sizeof err)) {
            r->failed++;
            continue;
        }
        if (memcmp(out[0].data, r->want, out[0].bytes) != 0) r->wrong++;
        osp_rt_release_outputs(r->m, out);
    }
    return NULL;
}

static void test_runs_from_several_threads(void **s) {
    (void)s;
    osp_rt_opts_t o = {.intra_threads = 1};
    osp_rt_model_t *m = load(&o);
    float *x = made_input(230.f);
    osp_tensor_t in = input_of(x), want[2];
    memset(want, 0, sizeof want);
    char err[512];
    assert_int_equal(osp_rt_run(m, &in, want, err, sizeof err), OSP_RT_OK);
    pthread_t th[3];
    runner_t r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = (runner_t){.m = m, .in = &in, .want = want[0].data, .runs = 4};
        assert_int_equal(pthread_create(&th[i], NULL, run_many, &r[i]), 0);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(r[i].failed, 0);
        assert_int_equal(r[i].wrong, 0);
    }
    osp_rt_release_outputs(m, want);
    free(x);
    osp_rt_model_free(m);
}

/* What --version says of the runtime: the library's own version, and the
 * providers it offers, in a buffer of any size. */
static void test_version_and_providers(void **s) {
    (void)s;
    const char *v = osp_ort_version();
    int major = -1, minor = -1;
    assert_int_equal(sscanf(v, "%d.%d", &major, &minor), 2);
    assert_true(major >= 1 && minor >= 16); /* the API osprey is built for */
    char buf[512];
    assert_int_equal(osp_ort_providers(buf, sizeof buf), 0);
    assert_non_null(strstr(buf, "CPUExecutionProvider"));
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    assert_int_equal(osp_ort_providers(tiny, sizeof tiny), 0);
    assert_int_equal(strlen(tiny), sizeof tiny - 1); /* cut, terminated, not overrun */
    assert_memory_equal(tiny, buf, sizeof tiny - 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_run_owns_outputs),
        cmocka_unit_test(test_run_into_caller_buffers),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_thread_and_graph_options),
        cmocka_unit_test(test_runs_from_several_threads),
        cmocka_unit_test(test_version_and_providers),
    };
    return cmocka_run_group_tests(tests, find_model, remove_dir);
}
