/* Execution-provider ordering and small tensor helpers shared by backends. */
#include "runtime/runtime.h"

#include <string.h>
#include <strings.h>

static const char EP_CPU[] = "CPUExecutionProvider";
static const char EP_CUDA[] = "CUDAExecutionProvider";
static const char EP_COREML[] = "CoreMLExecutionProvider";

static int is_available(const char *ep, const char *const *available, int n) {
    for (int i = 0; i < n; i++)
        if (available[i] && strcmp(available[i], ep) == 0) return 1;
    return 0;
}

int osp_rt_provider_order(const char *device, const char *platform, const char *machine,
                          const char *const *available, int n_available, const char **out, int cap) {
    const char *wanted[2];
    int nw = 0, n = 0;
    const char *dev = device ? device : "";
    const char *plat = platform ? platform : "";
    const char *mach = machine ? machine : "";

    if (strcasecmp(dev, "cuda") == 0) {
        wanted[nw++] = EP_CUDA;
    } else if (strcasecmp(dev, "coreml") == 0) {
        wanted[nw++] = EP_COREML;
    } else if (strcasecmp(dev, "cpu") != 0) {
        if (strcmp(plat, "darwin") == 0) wanted[nw++] = EP_COREML;
        /* prefix match: a substring test for "win" would also match "darwin" */
        if ((strncmp(plat, "linux", 5) == 0 || strncmp(plat, "win", 3) == 0) &&
            (strcmp(mach, "x86_64") == 0 || strcmp(mach, "AMD64") == 0))
            wanted[nw++] = EP_CUDA;
    }
    for (int i = 0; i < nw && n < cap; i++)
        if (is_available(wanted[i], available, n_available)) out[n++] = wanted[i];
    if (n < cap) out[n++] = EP_CPU;
    return n;
}

size_t osp_dtype_size(osp_dtype_t t) {
    switch (t) {
    case OSP_DT_F32:
    case OSP_DT_I32: return 4;
    case OSP_DT_U8:
    case OSP_DT_I8: return 1;
    case OSP_DT_I64: return 8;
    case OSP_DT_F16: return 2;
    default: return 0;
    }
}

const char *osp_dtype_name(osp_dtype_t t) {
    switch (t) {
    case OSP_DT_F32: return "float32";
    case OSP_DT_U8: return "uint8";
    case OSP_DT_I8: return "int8";
    case OSP_DT_I32: return "int32";
    case OSP_DT_I64: return "int64";
    case OSP_DT_F16: return "float16";
    default: return "unknown";
    }
}

size_t osp_dims_count(const int64_t *dims, int rank) {
    size_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0) return 0;
        if (dims[i] != 0 && n > SIZE_MAX / (size_t)dims[i]) return 0;
        n *= (size_t)dims[i];
    }
    return n;
}

const osp_backend_t *osp_backend_find(const char *name) {
    if (!name || !*name || strcmp(name, "onnxruntime") == 0 || strcmp(name, "onnx") == 0 ||
        strcmp(name, "ort") == 0)
        return &osp_backend_onnxruntime;
    if (strcmp(name, "test") == 0) return &osp_backend_test;
    return NULL;
}
