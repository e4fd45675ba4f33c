/*
 * runtime: the backend interface between osprey and an inference library.
 * A backend is a const table of functions with an ABI version; a loaded
 * model carries its backend, its input/output descriptions and the name
 * of the execution provider that actually initialised. The ONNX Runtime
 * backend is the production one.
 */
#ifndef OSP_RUNTIME_H
#define OSP_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

enum {
    OSP_RT_OK = 0,
    OSP_RT_EINVAL = -1, /* bad arguments, wrong input shape or type */
    OSP_RT_ELOAD = -2,  /* the model file could not be loaded */
    OSP_RT_ERUN = -3,   /* the runtime failed while running */
    OSP_RT_ENOMEM = -4,
};

typedef enum {
    OSP_DT_UNKNOWN = 0,
    OSP_DT_F32,
    OSP_DT_U8,
    OSP_DT_I8,
    OSP_DT_I32,
    OSP_DT_I64,
    OSP_DT_F16,
} osp_dtype_t;

#define OSP_RT_MAX_DIMS 8

/* What a model declares for one input or output. dims[i] < 0 is dynamic. */
typedef struct {
    char name[128];
    osp_dtype_t dtype;
    int rank;
    int64_t dims[OSP_RT_MAX_DIMS];
} osp_tensor_desc_t;

/* A tensor passed to or returned by run. For inputs, data is the caller's.
 * For outputs, the backend fills data/dims and keeps ownership in `impl`
 * until osp_rt_release_outputs. */
typedef struct {
    osp_dtype_t dtype;
    int rank;
    int64_t dims[OSP_RT_MAX_DIMS];
    void *data;
    size_t bytes;
    void *impl;
} osp_tensor_t;

typedef struct {
    int intra_threads;  /* threads inside one run; 0 = the library's default */
    int no_spin;        /* helper threads sleep as soon as a run returns instead of
                           spinning on, waiting for the next */
    int graph_opt;      /* 0 default (= all), -1 none, 1 basic, 2 extended, 3 all */
    const char *device; /* "", "auto", "cpu", "cuda", "coreml" */
} osp_rt_opts_t;

typedef struct osp_backend osp_backend_t;

/* A loaded model. Created by backend->load, freed by osp_rt_model_free.
 * run may be called from several threads at once. */
typedef struct {
    const osp_backend_t *backend;
    int n_inputs, n_outputs;
    osp_tensor_desc_t *inputs, *outputs; /* owned by the model */
    char provider[48];                   /* the provider that initialised */
    void *impl;
} osp_rt_model_t;

struct osp_backend {
    int abi_version; /* OSP_BACKEND_ABI */
    const char *name;
    int (*load)(const char *path, const osp_rt_opts_t *opts, osp_rt_model_t **out, char *err,
                size_t errlen);
    /* in: n_inputs tensors in declaration order; out: n_outputs slots. */
    int (*run)(osp_rt_model_t *m, const osp_tensor_t *in, osp_tensor_t *out, char *err, size_t errlen);
    void (*release_outputs)(osp_rt_model_t *m, osp_tensor_t *out);
    void (*free_model)(osp_rt_model_t *m);
};

#define OSP_BACKEND_ABI 1

/* The ONNX Runtime backend. */
extern const osp_backend_t osp_backend_onnxruntime;

/* The test backend ("test"): a TEST DOUBLE, never for production. Its model
 * files are JSON scripts of load/run delays, failures and output values
 * (docs/test-backend.md), for fault tests on machines without a GPU. */
extern const osp_backend_t osp_backend_test;

/* Runs of a test-backend model so far, counted when a run with valid inputs
 * enters the backend (before its scripted delay and failure); -1 when m is
 * not a test-backend model. Safe from any thread while m is loaded. */
int64_t osp_test_backend_runs(const osp_rt_model_t *m);

/* Batch sizes of the first OSP_TEST_BACKEND_MAX_LOG runs, in the order they
 * entered: copies at most cap into sizes (the caller's) and returns how many
 * are recorded; -1 when m is not a test-backend model. */
#define OSP_TEST_BACKEND_MAX_LOG 65536
int osp_test_backend_batches(const osp_rt_model_t *m, int *sizes, int cap);

/* Find a backend by name ("onnxruntime", "onnx", "ort", "" = default;
 * "test" = the test double).
 * NULL when unknown. */
const osp_backend_t *osp_backend_find(const char *name);

static inline int osp_rt_run(osp_rt_model_t *m, const osp_tensor_t *in, osp_tensor_t *out,
                             char *err, size_t errlen) {
    return m->backend->run(m, in, out, err, errlen);
}
static inline void osp_rt_release_outputs(osp_rt_model_t *m, osp_tensor_t *out) {
    m->backend->release_outputs(m, out);
}
static inline void osp_rt_model_free(osp_rt_model_t *m) {
    if (m) m->backend->free_model(m);
}

/* The version of the ONNX Runtime library loaded at run time ("1.20.1");
 * a static string, "unknown" when the library does not say. */
const char *osp_ort_version(void);
/* The execution providers that library was built with, in its order,
 * joined by ", " into buf (the caller's); the CPU provider is always
 * among them. 0, or -1 with the reason in buf. */
int osp_ort_providers(char *buf, size_t len);

size_t osp_dtype_size(osp_dtype_t t);
const char *osp_dtype_name(osp_dtype_t t);
/* Element count of dims (every dim must be >= 0); 0 on overflow. */
size_t osp_dims_count(const int64_t *dims, int rank);

/* Execution-provider order, as the seed resolves it: a "cuda"/"coreml" pin
 * puts that provider first, "cpu" is CPU only, anything else is derived from
 * the platform (darwin: CoreML; linux/win on x86_64: CUDA); providers not in
 * `available` are dropped; CPUExecutionProvider is always last. Writes at
 * most cap names (static strings) and returns how many. */
int osp_rt_provider_order(const char *device, const char *platform, const char *machine,
                          const char *const *available, int n_available, const char **out, int cap);

#endif
