/* The scripted test backend: descriptions, outputs, scripted delays and
 * failures, run counters and batch records, blocking files, bad scripts. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "runtime/runtime.h"

#include "tmpdir.h"

/* g_dir/<name> into path (256 bytes). */
static void in_dir(char *path, const char *name) { snprintf(path, 256, "%s/%s", g_dir, name); }

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void write_script(char *path, const char *name, const char *json) {
    in_dir(path, name);
    write_file(path, json);
}

static osp_rt_model_t *load_ok(const char *name, const char *json) {
    char path[256], err[512] = "";
    write_script(path, name, json);
    osp_rt_model_t *m = NULL;
    int rc = osp_backend_test.load(path, NULL, &m, err, sizeof err);
    if (rc) print_error("%s\n", err);
    assert_int_equal(rc, OSP_RT_OK);
    assert_non_null(m);
    assert_ptr_equal(m->backend, &osp_backend_test);
    return m;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* An input [batch,3,4,4] float32 whose item b has mean b + 1 (alternating
 * b + 2 and b, so the mean is computed, not copied). */
#define ITEM 48
typedef struct {
    float data[8 * ITEM];
    osp_tensor_t t;
} input_t;

static void make_input(input_t *in, int batch) {
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < ITEM; j++)
            in->data[b * ITEM + j] = (float)(b + 1) + (j % 2 ? 1.f : -1.f);
    in->t = (osp_tensor_t){.dtype = OSP_DT_F32,
                           .rank = 4,
                           .dims = {batch, 3, 4, 4},
                           .data = in->data,
                           .bytes = (size_t)batch * ITEM * sizeof(float)};
}

#define IMAGES "\"inputs\":[{\"name\":\"images\",\"dtype\":\"float32\",\"shape\":[-1,3,4,4]}]"

static const char SSD_LIKE[] =
    "{" IMAGES ",\"outputs\":["
    "{\"name\":\"boxes\",\"dtype\":\"float32\",\"shape\":[-1,5,4],\"values\":[0.1,0.2,0.3,0.4]},"
    "{\"name\":\"scores\",\"dtype\":\"float32\",\"shape\":[-1,5,3],\"fill\":-10,"
    " \"set\":[{\"at\":[-1,2,1],\"value\":10},{\"at\":[1,4,2],\"value\":7}]},"
    "{\"name\":\"mean\",\"dtype\":\"float32\",\"shape\":[-1,1],\"from_input\":\"mean\"},"
    "{\"name\":\"count\",\"dtype\":\"int64\",\"shape\":[1],\"fill\":42},"
    "{\"name\":\"dets\",\"dtype\":\"uint8\",\"shape\":[-1,3],\"run_shape\":[2,3],"
    " \"values\":[1,2,300]}"
    "]}";

static void test_describe(void **s) {
    (void)s;
    osp_rt_model_t *m = load_ok("describe.json", SSD_LIKE);
    assert_int_equal(m->n_inputs, 1);
    assert_string_equal(m->inputs[0].name, "images");
    assert_int_equal(m->inputs[0].dtype, OSP_DT_F32);
    assert_int_equal(m->inputs[0].rank, 4);
    int64_t want_in[4] = {-1, 3, 4, 4};
    assert_memory_equal(m->inputs[0].dims, want_in, sizeof want_in);
    assert_int_equal(m->n_outputs, 5);
    assert_string_equal(m->outputs[0].name, "boxes");
    assert_int_equal(m->outputs[0].rank, 3);
    assert_int_equal(m->outputs[0].dims[0], -1);
    assert_int_equal(m->outputs[0].dims[1], 5);
    assert_int_equal(m->outputs[0].dims[2], 4);
    assert_int_equal(m->outputs[3].dtype, OSP_DT_I64);
    /* the declaration, not the run shape */
    assert_int_equal(m->outputs[4].dims[0], -1);
    assert_int_equal(m->outputs[4].dtype, OSP_DT_U8);
    assert_string_equal(m->provider, "test");
    assert_int_equal(osp_test_backend_runs(m), 0);
    assert_int_equal(osp_test_backend_batches(m, NULL, 0), 0);
    osp_rt_model_free(m);

    m = load_ok("provider.json", "{\"provider\":\"CUDAExecutionProvider\",\"inputs\":[],"
                                 "\"outputs\":[]}");
    assert_string_equal(m->provider, "CUDAExecutionProvider");
    assert_int_equal(m->n_inputs, 0);
    assert_int_equal(m->n_outputs, 0);
    osp_rt_model_free(m);
}

static void check_outputs(const osp_tensor_t *out, int batch) {
    /* boxes: the values repeated */
    assert_int_equal(out[0].dtype, OSP_DT_F32);
    assert_int_equal(out[0].rank, 3);
    assert_int_equal(out[0].dims[0], batch);
    assert_int_equal(out[0].dims[1], 5);
    assert_int_equal(out[0].dims[2], 4);
    assert_int_equal(out[0].bytes, (size_t)batch * 20 * sizeof(float));
    const float *boxes = out[0].data;
    static const float want_box[4] = {0.1f, 0.2f, 0.3f, 0.4f};
    for (int i = 0; i < batch * 20; i++) assert_true(boxes[i] == want_box[i % 4]);
    /* scores: fill, one hot logit per item, one only in item 1 */
    assert_int_equal(out[1].dims[0], batch);
    const float *sc = out[1].data;
    for (int b = 0; b < batch; b++)
        for (int a = 0; a < 5; a++)
            for (int c = 0; c < 3; c++) {
                float want = -10.f;
                if (a == 2 && c == 1) want = 10.f;
                if (b == 1 && a == 4 && c == 2) want = 7.f;
                assert_true(sc[(b * 5 + a) * 3 + c] == want);
            }
    /* mean of each input item */
    assert_int_equal(out[2].dims[0], batch);
    assert_int_equal(out[2].dims[1], 1);
    for (int b = 0; b < batch; b++) assert_true(((const float *)out[2].data)[b] == (float)(b + 1));
    /* a static output ignores the batch */
    assert_int_equal(out[3].rank, 1);
    assert_int_equal(out[3].dims[0], 1);
    assert_int_equal(((const int64_t *)out[3].data)[0], 42);
    /* run_shape fixes the size at run time; 300 is clamped to uint8 */
    assert_int_equal(out[4].dims[0], 2);
    assert_int_equal(out[4].bytes, 6);
    static const uint8_t want_dets[6] = {1, 2, 255, 1, 2, 255};
    assert_memory_equal(out[4].data, want_dets, 6);
}

static void test_run_batches(void **s) {
    (void)s;
    osp_rt_model_t *m = load_ok("run.json", SSD_LIKE);
    static input_t in;
    char err[256];
    const int batches[2] = {1, 3};
    for (int k = 0; k < 2; k++) {
        osp_tensor_t out[16];
        memset(out, 0, sizeof out);
        make_input(&in, batches[k]);
        assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_OK);
        check_outputs(out, batches[k]);
        osp_rt_release_outputs(m, out);
        for (int i = 0; i < 5; i++) {
            assert_null(out[i].data);
            assert_null(out[i].impl);
        }
    }
    assert_int_equal(osp_test_backend_runs(m), 2);
    int sizes[4] = {0};
    assert_int_equal(osp_test_backend_batches(m, sizes, 4), 2);
    assert_int_equal(sizes[0], 1);
    assert_int_equal(sizes[1], 3);
    /* cap smaller than the record: copies only cap, still says how many */
    memset(sizes, 0, sizeof sizes);
    assert_int_equal(osp_test_backend_batches(m, sizes, 1), 2);
    assert_int_equal(sizes[0], 1);
    assert_int_equal(sizes[1], 0);
    osp_rt_model_free(m);
}

/* "from_input": "copy": each item's output is its input, value for value
 * (in the output's dtype, clamped). */
static void test_copy_of_input(void **s) {
    (void)s;
    osp_rt_model_t *m = load_ok("copy.json", "{" IMAGES ",\"outputs\":["
                                             "{\"name\":\"same\",\"dtype\":\"float32\","
                                             "\"shape\":[-1,48],\"from_input\":\"copy\"},"
                                             "{\"name\":\"u8\",\"dtype\":\"uint8\","
                                             "\"shape\":[-1,3,16],\"from_input\":\"copy\"}]}");
    static input_t in;
    char err[256];
    osp_tensor_t out[16];
    memset(out, 0, sizeof out);
    make_input(&in, 3);
    in.data[ITEM + 5] = 300.f;
    assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_OK);
    assert_int_equal(out[0].dims[0], 3);
    assert_memory_equal(out[0].data, in.data, 3 * ITEM * sizeof(float));
    const uint8_t *u = out[1].data;
    assert_int_equal(u[ITEM + 5], 255);
    assert_int_equal(u[2 * ITEM + 1], 4); /* item 2: 3 + 1 */
    assert_int_equal(u[0], 0);
    osp_rt_release_outputs(m, out);
    osp_rt_model_free(m);
}

static void test_caller_output_buffer(void **s) {
    (void)s;
    osp_rt_model_t *m = load_ok("callerbuf.json",
                                "{" IMAGES ",\"outputs\":[{\"name\":\"o\",\"dtype\":\"int32\","
                                "\"shape\":[-1,2],\"values\":[7,-7]}]}");
    input_t in;
    make_input(&in, 2);
    char err[256];
    int32_t buf[4] = {0};
    osp_tensor_t out[1] = {{.data = buf, .bytes = sizeof buf}};
    assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_OK);
    assert_ptr_equal(out[0].data, buf);
    assert_null(out[0].impl);
    static const int32_t want[4] = {7, -7, 7, -7};
    assert_memory_equal(buf, want, sizeof want);
    osp_rt_release_outputs(m, out);
    assert_ptr_equal(out[0].data, buf); /* the caller's: not touched */

    out[0] = (osp_tensor_t){.data = buf, .bytes = 8};
    assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_EINVAL);
    assert_non_null(strstr(err, "output o: 8 bytes given, 16 needed"));
    assert_int_equal(osp_test_backend_runs(m), 1);
    osp_rt_model_free(m);
}

static void test_bad_input_not_counted(void **s) {
    (void)s;
    osp_rt_model_t *m = load_ok("badin.json", SSD_LIKE);
    input_t in;
    char err[256];
    osp_tensor_t out[16];
    memset(out, 0, sizeof out);
    make_input(&in, 1);
    in.t.dtype = OSP_DT_U8;
    assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_EINVAL);
    assert_string_equal(err, "input images: got uint8 [1,3,4,4], the model declares float32 "
                             "[-1,3,4,4]");
    make_input(&in, 1);
    in.t.dims[2] = 5;
    assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_EINVAL);
    assert_non_null(strstr(err, "input images"));
    make_input(&in, 2);
    in.t.bytes = 10;
    assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_EINVAL);
    assert_non_null(strstr(err, "10 bytes given"));
    assert_int_equal(osp_test_backend_runs(m), 0);
    assert_int_equal(osp_test_backend_batches(m, NULL, 0), 0);
    osp_rt_model_free(m);
}

static void test_load_delay(void **s) {
    (void)s;
    double t0 = now_ms();
    osp_rt_model_t *m = load_ok("delay.json", "{\"load_delay_ms\":150," IMAGES ",\"outputs\":[]}");
    assert_true(now_ms() - t0 >= 150.0);
    osp_rt_model_free(m);
}

static void test_load_error(void **s) {
    (void)s;
    char path[256], err[512], want[512];
    write_script(path, "loaderr.json",
                 "{\"load_delay_ms\":60,\"load_error\":\"compiler exploded\"," IMAGES
                 ",\"outputs\":[]}");
    osp_rt_model_t *m = (osp_rt_model_t *)1;
    double t0 = now_ms();
    assert_int_equal(osp_backend_test.load(path, NULL, &m, err, sizeof err), OSP_RT_ELOAD);
    assert_true(now_ms() - t0 >= 60.0); /* it fails after the delay */
    assert_null(m);
    snprintf(want, sizeof want, "cannot load model %s: compiler exploded", path);
    assert_string_equal(err, want);

    /* a script for a failing load needs no tensors */
    write_script(path, "loaderr2.json", "{\"load_error\":\"no\"}");
    assert_int_equal(osp_backend_test.load(path, NULL, &m, err, sizeof err), OSP_RT_ELOAD);
    snprintf(want, sizeof want, "cannot load model %s: no", path);
    assert_string_equal(err, want);
}

static void test_run_delay(void **s) {
    (void)s;
    osp_rt_model_t *m = load_ok("rundelay.json",
                                "{\"run_delay_ms\":30,\"run_delay_per_item_ms\":20," IMAGES
                                ",\"outputs\":[]}");
    input_t in;
    make_input(&in, 3);
    char err[256];
    osp_tensor_t out[1];
    memset(out, 0, sizeof out);
    double t0 = now_ms();
    assert_int_equal(osp_rt_run(m, &in.t, out, err, sizeof err), OSP_RT_OK);
    assert_true(now_ms() - t0 >= 30.0 + 3 * 20.0);
    osp_rt_model_free(m);
}

static void test_run_errors(void **s) {
    (void)s;
    osp_rt_model_t *m = load_ok("every.json",
                                "{\"run_error_every\":3,\"run_error\":\"gpu fell off\"," IMAGES
                                ",\"outputs\":[{\"name\":\"o\",\"dtype\":\"float32\","
                                "\"shape\":[-1,1]}]}");
    input_t in;
    make_input(&in, 1);
    char err[256];
    for (int i = 1; i <= 6; i++) {
        osp_tensor_t out[1];
        memset(out, 0, sizeof out);
        err[0] = '\0';
        int rc = osp_rt_run(m, &in.t, out, err, sizeof err);
        if (i % 3 == 0) {
            assert_int_equal(rc, OSP_RT_ERUN);
            assert_string_equal(err, "gpu fell off");
            assert_null(out[0].data);
        } else {
            assert_int_equal(rc, OSP_RT_OK);
            assert_true(((float *)out[0].data)[0] == 0.f); /* default fill */
            osp_rt_release_outputs(m, out);
        }
    }
    assert_int_equal(osp_test_backend_runs(m), 6); /* failed runs ran too */
    osp_rt_model_free(m);

    m = load_ok("every2.json", "{\"run_error_every\":2," IMAGES ",\"outputs\":[]}");
    osp_tensor_t none[1] = {{0}};
    assert_int_equal(osp_rt_run(m, &in.t, none, err, sizeof err), OSP_RT_OK);
    assert_int_equal(osp_rt_run(m, &in.t, none, err, sizeof err), OSP_RT_ERUN);
    assert_string_equal(err, "test backend: scripted failure of run 2");
    osp_rt_model_free(m);

    m = load_ok("always.json", "{\"run_error\":\"always\"," IMAGES ",\"outputs\":[]}");
    for (int i = 0; i < 3; i++) {
        assert_int_equal(osp_rt_run(m, &in.t, none, err, sizeof err), OSP_RT_ERUN);
        assert_string_equal(err, "always");
    }
    osp_rt_model_free(m);
}

#define PER_THREAD 40

typedef struct {
    osp_rt_model_t *m;
    int batch;
    int failures;
} runner_t;

static void *runner(void *arg) {
    runner_t *r = arg;
    input_t *in = malloc(sizeof *in);
    if (!in) {
        r->failures = PER_THREAD;
        return NULL;
    }
    make_input(in, r->batch);
    char err[256];
    for (int i = 0; i < PER_THREAD; i++) {
        osp_tensor_t out[1];
        memset(out, 0, sizeof out);
        if (osp_rt_run(r->m, &in->t, out, err, sizeof err) != OSP_RT_OK || out[0].dims[0] != r->batch ||
            ((const float *)out[0].data)[r->batch - 1] != (float)r->batch)
            r->failures++;
        osp_rt_release_outputs(r->m, out);
    }
    free(in);
    return NULL;
}

static void test_concurrent_counters(void **s) {
    (void)s;
    char counter[256], json[1024];
    in_dir(counter, "runs.txt");
    snprintf(json, sizeof json,
             "{\"run_delay_ms\":1,\"counter_file\":\"%s\"," IMAGES
             ",\"outputs\":[{\"name\":\"m\",\"dtype\":\"float32\",\"shape\":[-1,1],"
             "\"from_input\":\"mean\"}]}",
             counter);
    osp_rt_model_t *m = load_ok("concurrent.json", json);
    runner_t r[2] = {{.m = m, .batch = 1}, {.m = m, .batch = 2}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, runner, &r[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(r[0].failures, 0);
    assert_int_equal(r[1].failures, 0);

    assert_int_equal(osp_test_backend_runs(m), 2 * PER_THREAD);
    int sizes[2 * PER_THREAD + 1], per[3] = {0};
    assert_int_equal(osp_test_backend_batches(m, sizes, 2 * PER_THREAD + 1), 2 * PER_THREAD);
    for (int i = 0; i < 2 * PER_THREAD; i++) {
        assert_in_range(sizes[i], 1, 2);
        per[sizes[i]]++;
    }
    assert_int_equal(per[1], PER_THREAD);
    assert_int_equal(per[2], PER_THREAD);

    /* the same, as another process would count it */
    FILE *f = fopen(counter, "r");
    assert_non_null(f);
    int lines = 0, from_file[3] = {0}, b;
    char line[32];
    while (fgets(line, sizeof line, f)) {
        assert_int_equal(sscanf(line, "%d", &b), 1);
        assert_in_range(b, 1, 2);
        from_file[b]++;
        lines++;
    }
    fclose(f);
    assert_int_equal(lines, 2 * PER_THREAD);
    assert_int_equal(from_file[1], PER_THREAD);
    assert_int_equal(from_file[2], PER_THREAD);
    osp_rt_model_free(m);
}

typedef struct {
    const char *path;
    osp_rt_model_t *m;
    int rc;
    char err[512];
    atomic_int done;
} loader_t;

static void *loader(void *arg) {
    loader_t *l = arg;
    l->rc = osp_backend_test.load(l->path, NULL, &l->m, l->err, sizeof l->err);
    atomic_store(&l->done, 1);
    return NULL;
}

static void test_load_block_file(void **s) {
    (void)s;
    char path[256], gate[256], json[512];
    in_dir(gate, "load.gate");
    snprintf(json, sizeof json, "{\"load_block_file\":\"%s\"," IMAGES ",\"outputs\":[]}", gate);
    write_script(path, "block.json", json);
    loader_t l = {.path = path};
    atomic_init(&l.done, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, loader, &l), 0);
    sleep_ms(100);
    assert_int_equal(atomic_load(&l.done), 0); /* cannot return before the file exists */
    write_file(gate, "");
    pthread_join(th, NULL);
    assert_int_equal(l.rc, OSP_RT_OK);
    assert_non_null(l.m);
    assert_int_equal(l.m->n_inputs, 1);
    osp_rt_model_free(l.m);
}

typedef struct {
    osp_rt_model_t *m;
    int rc;
    atomic_int done;
} run_job_t;

static void *run_once(void *arg) {
    run_job_t *j = arg;
    input_t in;
    make_input(&in, 2);
    char err[256];
    osp_tensor_t out[1];
    memset(out, 0, sizeof out);
    j->rc = osp_rt_run(j->m, &in.t, out, err, sizeof err);
    atomic_store(&j->done, 1);
    return NULL;
}

/* A run is counted when it enters, so a test can see a run in progress. */
static void test_run_block_file(void **s) {
    (void)s;
    char gate[256], json[512];
    in_dir(gate, "run.gate");
    snprintf(json, sizeof json, "{\"run_block_file\":\"%s\"," IMAGES ",\"outputs\":[]}", gate);
    run_job_t j = {.m = load_ok("runblock.json", json)};
    atomic_init(&j.done, 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, run_once, &j), 0);
    /* a guard against a hang, not a timing assertion */
    for (int i = 0; i < 1000 && osp_test_backend_runs(j.m) == 0; i++) sleep_ms(10);
    assert_int_equal(osp_test_backend_runs(j.m), 1);
    int size = 0;
    assert_int_equal(osp_test_backend_batches(j.m, &size, 1), 1);
    assert_int_equal(size, 2);
    assert_int_equal(atomic_load(&j.done), 0);
    write_file(gate, "");
    pthread_join(th, NULL);
    assert_int_equal(j.rc, OSP_RT_OK);
    osp_rt_model_free(j.m);
}

static void test_missing_file(void **s) {
    (void)s;
    const char *path = "/nonexistent/model.json";
    char err_test[512], err_ort[512];
    osp_rt_model_t *m = (osp_rt_model_t *)1;
    assert_int_equal(osp_backend_test.load(path, NULL, &m, err_test, sizeof err_test), OSP_RT_ELOAD);
    assert_null(m);
    assert_string_equal(err_test, "cannot load model /nonexistent/model.json: No such file or "
                                  "directory");
    /* word for word what the real backend says */
    assert_int_equal(osp_backend_onnxruntime.load(path, NULL, &m, err_ort, sizeof err_ort),
                     OSP_RT_ELOAD);
    assert_string_equal(err_test, err_ort);
}

static void test_find(void **s) {
    (void)s;
    assert_ptr_equal(osp_backend_find("test"), &osp_backend_test);
    assert_string_equal(osp_backend_test.name, "test");
    assert_int_equal(osp_backend_test.abi_version, OSP_BACKEND_ABI);
    assert_ptr_equal(osp_backend_find(""), &osp_backend_onnxruntime);
    assert_null(osp_backend_find("Test"));
    osp_rt_model_t other = {.backend = &osp_backend_onnxruntime};
    assert_int_equal(osp_test_backend_runs(&other), -1);
    assert_int_equal(osp_test_backend_batches(&other, NULL, 0), -1);
    assert_int_equal(osp_test_backend_runs(NULL), -1);
}

#define OUT1(body) "{" IMAGES ",\"outputs\":[{\"name\":\"o\",\"dtype\":\"float32\"," body "}]}"

static const struct {
    const char *script, *want;
} BAD[] = {
    {"{", "invalid JSON near byte"},
    {"[]", "must be a JSON object"},
    {"{\"inputs\":[],\"outputs\":[]} x", "text after the JSON value at byte 27"},
    {"{\"load_dealy_ms\":5," IMAGES ",\"outputs\":[]}", "unknown key \"load_dealy_ms\""},
    {"{\"load_delay_ms\":-1}", "\"load_delay_ms\" must be an integer"},
    {"{\"load_delay_ms\":\"5\"}", "\"load_delay_ms\" must be an integer"},
    {"{\"run_delay_ms\":1.5}", "\"run_delay_ms\" must be an integer"},
    {"{\"run_delay_per_item_ms\":true}", "\"run_delay_per_item_ms\" must be an integer"},
    {"{\"run_error_every\":-2}", "\"run_error_every\" must be an integer"},
    {"{\"load_error\":3}", "\"load_error\" must be a non-empty string"},
    {"{\"run_error\":\"\"}", "\"run_error\" must be a non-empty string"},
    {"{\"counter_file\":1}", "\"counter_file\" must be a non-empty string"},
    {"{\"load_block_file\":false}", "\"load_block_file\" must be a non-empty string"},
    {"{\"run_block_file\":[]}", "\"run_block_file\" must be a non-empty string"},
    {"{\"provider\":\"0123456789012345678901234567890123456789012345678\"}",
     "\"provider\" must be shorter"},
    {"{\"run_delay_ms\":1,\"run_delay_ms\":2}", "key \"run_delay_ms\" appears twice"},
    {"{\"outputs\":[]}", "\"inputs\" must be an array of at most 16 tensors (it is missing)"},
    {"{\"inputs\":{},\"outputs\":[]}", "\"inputs\" must be an array"},
    {"{" IMAGES "}", "\"outputs\" must be an array of at most 16 tensors (it is missing)"},
    {"{\"inputs\":[{\"dtype\":\"float32\",\"shape\":[1]}],\"outputs\":[]}", "inputs[0].name must be"},
    {"{\"inputs\":[{\"name\":\"x\",\"dtype\":\"float\",\"shape\":[1]}],\"outputs\":[]}",
     "inputs[0].dtype must be one of"},
    {"{\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[1,-2]}],\"outputs\":[]}",
     "inputs[0].shape[1] must be an integer >= -1"},
    {"{\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\"}],\"outputs\":[]}",
     "inputs[0].shape is missing"},
    {"{\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[1],\"layout\":\"nchw\"}],"
     "\"outputs\":[]}",
     "inputs[0]: unknown key \"layout\""},
    {"{\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[1,2,3,4,5,6,7,8,9]}],"
     "\"outputs\":[]}",
     "inputs[0].shape must be an array of at most 8"},
    {OUT1("\"shape\":[1],\"fil\":0"), "outputs[0]: unknown key \"fil\""},
    {OUT1("\"shape\":[-1,-1,4]"), "outputs[0].shape[1] is dynamic; give \"run_shape\""},
    {OUT1("\"shape\":[-1,6],\"run_shape\":[1,5]"), "outputs[0].run_shape[1] is 5 but shape"},
    {OUT1("\"shape\":[-1,-1],\"run_shape\":[-1,-1]"), "outputs[0].run_shape[1] is dynamic"},
    {OUT1("\"shape\":[-1,6],\"run_shape\":[1]"), "outputs[0].run_shape has 1 dims, shape 2"},
    {OUT1("\"shape\":[1],\"fill\":0,\"values\":[1]"),
     "outputs[0]: give at most one of \"fill\", \"values\""},
    {OUT1("\"shape\":[1],\"fill\":\"a\""), "outputs[0].fill must be a number"},
    {OUT1("\"shape\":[1],\"values\":[]"), "outputs[0].values must be an array of 1 to"},
    {OUT1("\"shape\":[1],\"values\":[1,\"a\"]"), "outputs[0].values[1] must be a number"},
    {OUT1("\"shape\":[1],\"from_input\":\"median\""),
     "outputs[0].from_input must be \"mean\" or \"copy\""},
    {OUT1("\"shape\":[-1,3,4,3],\"from_input\":\"copy\""),
     "outputs[0].from_input \"copy\" needs as many values per item as the first input declares (48), not 36"},
    {"{\"inputs\":[],\"outputs\":[{\"name\":\"o\",\"dtype\":\"float32\",\"shape\":[1],"
     "\"from_input\":\"mean\"}]}",
     "outputs[0].from_input needs a first input"},
    {OUT1("\"shape\":[-1,5],\"set\":[{\"at\":[0,9],\"value\":1}]"),
     "outputs[0].set[0].at[1] must be an integer from 0 to 4"},
    {OUT1("\"shape\":[-1,5],\"set\":[{\"at\":[-2,0],\"value\":1}]"),
     "outputs[0].set[0].at[0] must be an integer from -1"},
    {OUT1("\"shape\":[-1,5],\"set\":[{\"at\":[0],\"value\":1}]"),
     "outputs[0].set[0].at must be an array of 2 indices"},
    {OUT1("\"shape\":[-1,5],\"set\":[{\"at\":[0,1]}]"), "outputs[0].set[0].value must be a number"},
    {OUT1("\"shape\":[-1,5],\"set\":[{\"at\":[0,1],\"value\":1,\"v\":2}]"),
     "outputs[0].set[0]: unknown key \"v\""},
    {OUT1("\"shape\":[-1,5],\"set\":{}"), "outputs[0].set must be an array"},
    {"{" IMAGES ",\"outputs\":[{\"name\":\"o\",\"dtype\":\"float16\",\"shape\":[1]}]}",
     "outputs[0].dtype float16"},
    {"{" IMAGES ",\"outputs\":[{\"name\":\"a\",\"dtype\":\"float32\",\"shape\":[1]},"
     "{\"name\":\"b\",\"dtype\":\"double\",\"shape\":[1]}]}",
     "outputs[1].dtype must be one of"},
    {"{" IMAGES ",\"outputs\":[3]}", "outputs[0] must be an object"},
};

static void test_malformed(void **s) {
    (void)s;
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char path[256], name[32], err[512], prefix[300];
        snprintf(name, sizeof name, "bad%zu.json", i);
        write_script(path, name, BAD[i].script);
        osp_rt_model_t *m = (osp_rt_model_t *)1;
        int rc = osp_backend_test.load(path, NULL, &m, err, sizeof err);
        snprintf(prefix, sizeof prefix, "cannot load model %s: ", path);
        if (rc != OSP_RT_ELOAD || m || strncmp(err, prefix, strlen(prefix)) != 0 ||
            !strstr(err, BAD[i].want))
            fail_msg("script %s\n  gave rc %d: %s\n  wanted: %s", BAD[i].script, rc,
                     rc ? err : "(loaded)", BAD[i].want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_describe),
        cmocka_unit_test(test_run_batches),
        cmocka_unit_test(test_copy_of_input),
        cmocka_unit_test(test_caller_output_buffer),
        cmocka_unit_test(test_bad_input_not_counted),
        cmocka_unit_test(test_load_delay),
        cmocka_unit_test(test_load_error),
        cmocka_unit_test(test_run_delay),
        cmocka_unit_test(test_run_errors),
        cmocka_unit_test(test_concurrent_counters),
        cmocka_unit_test(test_load_block_file),
        cmocka_unit_test(test_run_block_file),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
