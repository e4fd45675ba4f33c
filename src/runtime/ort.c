/*
 * The ONNX Runtime backend. One OrtEnv per process (created on first load,
 * logging through osprey's stderr so that stdout stays a clean frame
 * stream); one OrtSession per loaded model, shared by every thread that
 * runs it (OrtSession Run is thread-safe).
 */
#include "runtime/runtime.h"
#include "log/log.h"
#include "base/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <onnxruntime_c_api.h>

static const OrtApi *g_api;
static OrtEnv *g_env;
static char g_init_err[256];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

typedef struct {
    OrtSession *session;
    OrtMemoryInfo *meminfo;
    const char **in_names, **out_names; /* point into the descs */
} ort_model_t;

/* Set while probing optional providers: their failures are expected on
 * machines without the hardware and are reported in one line instead. */
static _Thread_local int tl_probing;

static void ort_log(void *param, OrtLoggingLevel severity, const char *category, const char *logid,
                    const char *code_location, const char *message) {
    (void)param;
    (void)category;
    (void)logid;
    (void)code_location;
    if (tl_probing) return;
    static const char *const names[] = {"verbose", "info", "warning", "error", "fatal"};
    static const osp_log_level_t levels[] = {OSP_LOG_DEBUG, OSP_LOG_INFO, OSP_LOG_WARN,
                                             OSP_LOG_ERROR, OSP_LOG_ERROR};
    int s = (int)severity;
    osp_log((s >= 0 && s <= 4) ? levels[s] : OSP_LOG_INFO, "osprey: onnxruntime %s: %s",
            (s >= 0 && s <= 4) ? names[s] : "log", message);
}

static void ort_start(void) {
    const OrtApiBase *base = OrtGetApiBase();
    g_api = base ? base->GetApi(ORT_API_VERSION) : NULL;
    if (!g_api) {
        snprintf(g_init_err, sizeof g_init_err,
                 "ONNX Runtime %s does not provide C API version %d (need >= 1.%d)",
                 base ? base->GetVersionString() : "?", ORT_API_VERSION, ORT_API_VERSION);
        return;
    }
    OrtStatus *st = g_api->CreateEnvWithCustomLogger(ort_log, NULL, ORT_LOGGING_LEVEL_WARNING,
                                                     "osprey", &g_env);
    if (st) {
        snprintf(g_init_err, sizeof g_init_err, "cannot start ONNX Runtime: %s",
                 g_api->GetErrorMessage(st));
        g_api->ReleaseStatus(st);
        g_env = NULL;
    }
}

/* ONNX Runtime reads /proc/self/cmdline as it starts and parses it
 * recursively, some 80 bytes of stack for each byte: `osprey detect` over
 * 4000 files (110 KB of arguments) overflowed the main thread's 8 MB. So it
 * starts on a thread of its own with room for the longest command line
 * Linux takes (ARG_MAX, 2 MB: about 170 MB of stack), reserved and touched
 * only as deep as the start goes. Without that thread it starts here. */
#define START_STACK ((size_t)256 << 20)

static void *ort_start_thread(void *arg) {
    (void)arg;
    osp_thread_name("osp-ort-start");
    ort_start();
    return NULL;
}

static void ort_init(void) {
    pthread_attr_t a;
    pthread_t t;
    int made = 0;
    if (pthread_attr_init(&a) == 0) {
        made = pthread_attr_setstacksize(&a, START_STACK) == 0 &&
               pthread_create(&t, &a, ort_start_thread, NULL) == 0;
        pthread_attr_destroy(&a);
    }
    if (made)
        pthread_join(t, NULL);
    else
        ort_start();
}

/* Copy a status message into err, release the status; returns code. */
static int fail(OrtStatus *st, int code, char *err, size_t errlen, const char *what) {
    snprintf(err, errlen, "%s: %s", what, st ? g_api->GetErrorMessage(st) : "unknown error");
    if (st) g_api->ReleaseStatus(st);
    return code;
}

static osp_dtype_t from_onnx(ONNXTensorElementDataType t) {
    switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: return OSP_DT_F32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: return OSP_DT_U8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: return OSP_DT_I8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: return OSP_DT_I32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: return OSP_DT_I64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: return OSP_DT_F16;
    default: return OSP_DT_UNKNOWN;
    }
}

static ONNXTensorElementDataType to_onnx(osp_dtype_t t) {
    switch (t) {
    case OSP_DT_F32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
    case OSP_DT_U8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
    case OSP_DT_I8: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
    case OSP_DT_I32: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
    case OSP_DT_I64: return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
    case OSP_DT_F16: return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
    default: return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    }
}

/* Fill desc from a type info; the caller releases info. */
static OrtStatus *describe(OrtTypeInfo *info, osp_tensor_desc_t *d) {
    const OrtTensorTypeAndShapeInfo *ti = NULL;
    OrtStatus *st = g_api->CastTypeInfoToTensorInfo(info, &ti);
    if (st) return st;
    if (!ti) { /* a sequence or map: not a tensor osprey can feed */
        d->dtype = OSP_DT_UNKNOWN;
        d->rank = 0;
        return NULL;
    }
    ONNXTensorElementDataType et;
    size_t rank = 0;
    if ((st = g_api->GetTensorElementType(ti, &et))) return st;
    if ((st = g_api->GetDimensionsCount(ti, &rank))) return st;
    if (rank > OSP_RT_MAX_DIMS) rank = OSP_RT_MAX_DIMS;
    if ((st = g_api->GetDimensions(ti, d->dims, rank))) return st;
    d->dtype = from_onnx(et);
    d->rank = (int)rank;
    for (size_t i = 0; i < rank; i++)
        if (d->dims[i] < 0) d->dims[i] = -1;
    return NULL;
}

static OrtStatus *describe_all(OrtSession *s, OrtAllocator *alloc, int is_input, int n,
                               osp_tensor_desc_t *descs) {
    OrtStatus *st = NULL;
    for (int i = 0; i < n && !st; i++) {
        char *name = NULL;
        OrtTypeInfo *info = NULL;
        st = is_input ? g_api->SessionGetInputName(s, (size_t)i, alloc, &name)
                      : g_api->SessionGetOutputName(s, (size_t)i, alloc, &name);
        if (st) break;
        snprintf(descs[i].name, sizeof descs[i].name, "%s", name);
        alloc->Free(alloc, name);
        st = is_input ? g_api->SessionGetInputTypeInfo(s, (size_t)i, &info)
                      : g_api->SessionGetOutputTypeInfo(s, (size_t)i, &info);
        if (st) break;
        st = describe(info, &descs[i]);
        g_api->ReleaseTypeInfo(info);
    }
    return st;
}

const char *osp_ort_version(void) {
    const OrtApiBase *base = OrtGetApiBase();
    const char *v = base ? base->GetVersionString() : NULL;
    return v && *v ? v : "unknown";
}

int osp_ort_providers(char *buf, size_t len) {
    const OrtApiBase *base = OrtGetApiBase();
    const OrtApi *api = base ? base->GetApi(ORT_API_VERSION) : NULL;
    if (!api) {
        snprintf(buf, len, "ONNX Runtime %s does not provide C API version %d", osp_ort_version(),
                 ORT_API_VERSION);
        return -1;
    }
    char **avail = NULL;
    int n = 0;
    OrtStatus *st = api->GetAvailableProviders(&avail, &n);
    if (st) {
        snprintf(buf, len, "%s", api->GetErrorMessage(st));
        api->ReleaseStatus(st);
        return -1;
    }
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? ", " : "", avail[i]);
    if ((st = api->ReleaseAvailableProviders(avail, n))) api->ReleaseStatus(st);
    return 0;
}

/* Append the hardware providers in order; the first that appends is the one
 * that serves. Providers the library lacks or that fail are dropped. */
static void choose_providers(OrtSessionOptions *so, const char *device, char *chosen,
                             size_t chosen_len) {
    char **avail = NULL;
    int navail = 0;
    OrtStatus *st = g_api->GetAvailableProviders(&avail, &navail);
    if (st) {
        g_api->ReleaseStatus(st);
        navail = 0;
    }
    struct utsname u;
    const char *plat = "linux", *mach = "";
    if (uname(&u) == 0) {
        mach = u.machine;
        plat = strcmp(u.sysname, "Darwin") == 0 ? "darwin" : "linux";
    }
    const char *order[4];
    int n = osp_rt_provider_order(device, plat, mach, (const char *const *)avail, navail, order, 4);
    snprintf(chosen, chosen_len, "CPUExecutionProvider");
    for (int i = 0; i < n; i++) {
        if (strcmp(order[i], "CPUExecutionProvider") == 0) break;
        tl_probing = 1;
        if (strcmp(order[i], "CUDAExecutionProvider") == 0) {
            OrtCUDAProviderOptionsV2 *cuda = NULL;
            st = g_api->CreateCUDAProviderOptions(&cuda);
            if (!st) st = g_api->SessionOptionsAppendExecutionProvider_CUDA_V2(so, cuda);
            if (cuda) g_api->ReleaseCUDAProviderOptions(cuda);
        } else {
            st = g_api->SessionOptionsAppendExecutionProvider(so, "CoreML", NULL, NULL, 0);
        }
        tl_probing = 0;
        if (st) {
            /* auto mode tries what the platform suggests: silence is right
             * when it is absent; a pin the user asked for deserves a word */
            if (device && *device && strcmp(device, "auto") != 0)
                osp_log(OSP_LOG_WARN, "osprey: onnxruntime: %s not usable here, using the next (%s)",
                        order[i], g_api->GetErrorMessage(st));
            g_api->ReleaseStatus(st);
            continue;
        }
        snprintf(chosen, chosen_len, "%s", order[i]);
        break;
    }
    if (avail && (st = g_api->ReleaseAvailableProviders(avail, navail))) g_api->ReleaseStatus(st);
}

static void ort_free(osp_rt_model_t *m);

static int ort_load(const char *path, const osp_rt_opts_t *opts, osp_rt_model_t **out, char *err,
                    size_t errlen) {
    *out = NULL;
    pthread_once(&g_once, ort_init);
    if (!g_env) {
        snprintf(err, errlen, "cannot load model %s: %s", path, g_init_err);
        return OSP_RT_ELOAD;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot load model %s: %s", path, strerror(errno));
        return OSP_RT_ELOAD;
    }
    fclose(f);

    osp_rt_opts_t o = opts ? *opts : (osp_rt_opts_t){0};
    osp_rt_model_t *m = calloc(1, sizeof *m);
    ort_model_t *om = calloc(1, sizeof *om);
    OrtSessionOptions *so = NULL;
    OrtStatus *st = NULL;
    int rc = OSP_RT_ELOAD;
    char what[600];
    snprintf(what, sizeof what, "cannot load model %s", path);
    if (!m || !om) {
        free(m);
        free(om);
        snprintf(err, errlen, "%s: out of memory", what);
        return OSP_RT_ENOMEM;
    }
    m->backend = &osp_backend_onnxruntime;
    m->impl = om;

    if ((st = g_api->CreateSessionOptions(&so))) goto ort_fail;
    if (o.intra_threads > 0 && (st = g_api->SetIntraOpNumThreads(so, o.intra_threads)))
        goto ort_fail;
    if ((st = g_api->SetInterOpNumThreads(so, 1))) goto ort_fail;
    /* helper threads spin while a run lasts (the waits between its
     * operators are short) and sleep as soon as it returns; not spinning at
     * all made a 2-thread ssd-oidv4 run about 1.5 ms slower here */
    if (o.no_spin && (st = g_api->AddSessionConfigEntry(so, "session.force_spinning_stop", "1")))
        goto ort_fail;
    GraphOptimizationLevel lvl = ORT_ENABLE_ALL;
    switch (o.graph_opt) {
    case 1: lvl = ORT_ENABLE_BASIC; break;
    case 2: lvl = ORT_ENABLE_EXTENDED; break;
    case -1: lvl = ORT_DISABLE_ALL; break;
    default: break;
    }
    if ((st = g_api->SetSessionGraphOptimizationLevel(so, lvl))) goto ort_fail;
    choose_providers(so, o.device, m->provider, sizeof m->provider);
    /* the session's helper threads (intra-op, spinning while a run lasts)
     * take the name of the thread that makes them: osp-ort, so that the
     * CPU they spend is counted with the model's (base/thread.h) */
    char was[16] = "";
#ifdef __linux__
    (void)pthread_getname_np(pthread_self(), was, sizeof was);
#endif
    osp_thread_name("osp-ort");
    st = g_api->CreateSession(g_env, path, so, &om->session);
    osp_thread_name("%s", was);
    if (st) goto ort_fail;
    if ((st = g_api->CreateCpuMemoryInfo(OrtDeviceAllocator, OrtMemTypeDefault, &om->meminfo)))
        goto ort_fail;

    size_t nin = 0, nout = 0;
    if ((st = g_api->SessionGetInputCount(om->session, &nin))) goto ort_fail;
    if ((st = g_api->SessionGetOutputCount(om->session, &nout))) goto ort_fail;
    m->n_inputs = (int)nin;
    m->n_outputs = (int)nout;
    m->inputs = calloc(nin ? nin : 1, sizeof *m->inputs);
    m->outputs = calloc(nout ? nout : 1, sizeof *m->outputs);
    om->in_names = calloc(nin ? nin : 1, sizeof *om->in_names);
    om->out_names = calloc(nout ? nout : 1, sizeof *om->out_names);
    if (!m->inputs || !m->outputs || !om->in_names || !om->out_names) {
        snprintf(err, errlen, "%s: out of memory", what);
        rc = OSP_RT_ENOMEM;
        goto cleanup;
    }
    OrtAllocator *alloc = NULL;
    if ((st = g_api->GetAllocatorWithDefaultOptions(&alloc))) goto ort_fail;
    if ((st = describe_all(om->session, alloc, 1, m->n_inputs, m->inputs))) goto ort_fail;
    if ((st = describe_all(om->session, alloc, 0, m->n_outputs, m->outputs))) goto ort_fail;
    for (int i = 0; i < m->n_inputs; i++) om->in_names[i] = m->inputs[i].name;
    for (int i = 0; i < m->n_outputs; i++) om->out_names[i] = m->outputs[i].name;
    g_api->ReleaseSessionOptions(so);
    *out = m;
    return OSP_RT_OK;

ort_fail:
    rc = fail(st, OSP_RT_ELOAD, err, errlen, what);
cleanup:
    if (so) g_api->ReleaseSessionOptions(so);
    ort_free(m);
    return rc;
}

static int ort_run(osp_rt_model_t *m, const osp_tensor_t *in, osp_tensor_t *out, char *err,
                   size_t errlen) {
    ort_model_t *om = m->impl;
    OrtValue *vin[16] = {0}, *vout_small[16] = {0};
    OrtStatus *st = NULL;
    int rc = OSP_RT_OK;
    if (m->n_inputs > 16) {
        snprintf(err, errlen, "model has too many inputs (%d; at most 16)", m->n_inputs);
        return OSP_RT_EINVAL;
    }
    /* models served have a few outputs; a calibration model (osprey
     * quantize) has one per tensor it measures, and only it pays for this */
    OrtValue **vout = vout_small;
    if (m->n_outputs > 16 && !(vout = calloc((size_t)m->n_outputs, sizeof *vout))) {
        snprintf(err, errlen, "out of memory");
        return OSP_RT_ENOMEM;
    }
    for (int i = 0; i < m->n_inputs; i++) {
        size_t need = osp_dims_count(in[i].dims, in[i].rank) * osp_dtype_size(in[i].dtype);
        if (!in[i].data || need == 0 || in[i].bytes < need) {
            snprintf(err, errlen, "input %s: %zu bytes given, %zu needed", m->inputs[i].name,
                     in[i].bytes, need);
            rc = OSP_RT_EINVAL;
            goto done;
        }
        st = g_api->CreateTensorWithDataAsOrtValue(om->meminfo, in[i].data, need, in[i].dims,
                                                   (size_t)in[i].rank, to_onnx(in[i].dtype), &vin[i]);
        if (st) {
            rc = fail(st, OSP_RT_EINVAL, err, errlen, "cannot wrap input");
            goto done;
        }
    }
    for (int i = 0; i < m->n_outputs; i++) {
        if (!out[i].data) continue;
        size_t need = osp_dims_count(out[i].dims, out[i].rank) * osp_dtype_size(out[i].dtype);
        if (need == 0 || out[i].bytes < need) { /* the runtime would write past it */
            snprintf(err, errlen, "output %s: %zu bytes given, %zu needed", m->outputs[i].name,
                     out[i].bytes, need);
            rc = OSP_RT_EINVAL;
            goto done;
        }
        st = g_api->CreateTensorWithDataAsOrtValue(om->meminfo, out[i].data, need, out[i].dims,
                                                   (size_t)out[i].rank, to_onnx(out[i].dtype),
                                                   &vout[i]);
        if (st) {
            rc = fail(st, OSP_RT_EINVAL, err, errlen, "cannot wrap output");
            goto done;
        }
    }
    st = g_api->Run(om->session, NULL, om->in_names, (const OrtValue *const *)vin,
                    (size_t)m->n_inputs, om->out_names, (size_t)m->n_outputs, vout);
    if (st) {
        rc = fail(st, OSP_RT_ERUN, err, errlen, "inference failed");
        goto done;
    }
    for (int i = 0; i < m->n_outputs; i++) {
        if (out[i].data) { /* the caller's buffer: nothing to hand over */
            g_api->ReleaseValue(vout[i]);
            vout[i] = NULL;
            continue;
        }
        OrtTensorTypeAndShapeInfo *ti = NULL;
        ONNXTensorElementDataType et;
        size_t rank = 0;
        if ((st = g_api->GetTensorTypeAndShape(vout[i], &ti))) break;
        if (!(st = g_api->GetTensorElementType(ti, &et)) &&
            !(st = g_api->GetDimensionsCount(ti, &rank))) {
            if (rank > OSP_RT_MAX_DIMS) rank = OSP_RT_MAX_DIMS;
            st = g_api->GetDimensions(ti, out[i].dims, rank);
        }
        g_api->ReleaseTensorTypeAndShapeInfo(ti);
        if (st) break;
        if ((st = g_api->GetTensorMutableData(vout[i], &out[i].data))) break;
        out[i].dtype = from_onnx(et);
        out[i].rank = (int)rank;
        out[i].bytes = osp_dims_count(out[i].dims, out[i].rank) * osp_dtype_size(out[i].dtype);
        out[i].impl = vout[i];
        vout[i] = NULL;
    }
    if (st) {
        rc = fail(st, OSP_RT_ERUN, err, errlen, "cannot read outputs");
        for (int i = 0; i < m->n_outputs; i++)
            if (out[i].impl) {
                g_api->ReleaseValue(out[i].impl);
                out[i].impl = NULL;
                out[i].data = NULL;
            }
    }
done:
    for (int i = 0; i < 16; i++)
        if (vin[i]) g_api->ReleaseValue(vin[i]);
    for (int i = 0; i < m->n_outputs; i++)
        if (vout[i]) g_api->ReleaseValue(vout[i]);
    if (vout != vout_small) free(vout);
    return rc;
}

static void ort_release_outputs(osp_rt_model_t *m, osp_tensor_t *out) {
    for (int i = 0; i < m->n_outputs; i++) {
        if (out[i].impl) {
            g_api->ReleaseValue(out[i].impl);
            out[i].impl = NULL;
            out[i].data = NULL;
        }
    }
}

static void ort_free(osp_rt_model_t *m) {
    if (!m) return;
    ort_model_t *om = m->impl;
    if (om) {
        if (om->session) g_api->ReleaseSession(om->session);
        if (om->meminfo) g_api->ReleaseMemoryInfo(om->meminfo);
        free(om->in_names);
        free(om->out_names);
        free(om);
    }
    free(m->inputs);
    free(m->outputs);
    free(m);
}

const osp_backend_t osp_backend_onnxruntime = {
    .abi_version = OSP_BACKEND_ABI,
    .name = "onnxruntime",
    .load = ort_load,
    .run = ort_run,
    .release_outputs = ort_release_outputs,
    .free_model = ort_free,
};
