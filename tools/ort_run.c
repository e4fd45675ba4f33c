/* ort_run: run an ONNX model with one float32 input through the ONNX Runtime C API.
 *
 *   ort_run MODEL.onnx INPUT.f32 OUT_PREFIX D0 [D1 ...]
 *
 * INPUT.f32 holds raw little-endian float32 values of the given shape. Every
 * model output (must be float32) is written to OUT_PREFIX<i>.f32, and a line
 * "name d0 d1 ..." per output is printed on stdout. Test helper for
 * tools/test_tflite2onnx.py; build:
 *   cc -std=c11 -O2 -I$ORT/include ort_run.c -L$ORT/lib -l:libonnxruntime.so.1 -Wl,-rpath,$ORT/lib
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "onnxruntime_c_api.h"

static const OrtApi *ort;

static void check(OrtStatus *st, const char *what) {
    if (st) {
        fprintf(stderr, "ort_run: %s: %s\n", what, ort->GetErrorMessage(st));
        ort->ReleaseStatus(st);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: ort_run MODEL.onnx INPUT.f32 OUT_PREFIX D0 [D1 ...]\n");
        return 2;
    }
    ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
    if (!ort) {
        fprintf(stderr, "ort_run: ONNX Runtime does not provide API version %d\n", ORT_API_VERSION);
        return 1;
    }
    size_t rank = (size_t)(argc - 4), count = 1;
    int64_t dims[16];
    if (rank > 16) return 2;
    for (size_t i = 0; i < rank; i++) {
        dims[i] = strtoll(argv[4 + i], NULL, 10);
        count *= (size_t)dims[i];
    }
    float *input = malloc(count * sizeof(float));
    FILE *f = fopen(argv[2], "rb");
    if (!f || !input || fread(input, sizeof(float), count, f) != count) {
        fprintf(stderr, "ort_run: cannot read %zu floats from %s\n", count, argv[2]);
        return 1;
    }
    fclose(f);

    OrtEnv *env;
    OrtSessionOptions *so;
    OrtSession *sess;
    OrtAllocator *alloc;
    OrtMemoryInfo *mi;
    check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "ort_run", &env), "CreateEnv");
    check(ort->CreateSessionOptions(&so), "CreateSessionOptions");
    check(ort->SetIntraOpNumThreads(so, 1), "SetIntraOpNumThreads");
    check(ort->CreateSession(env, argv[1], so, &sess), "CreateSession");
    check(ort->GetAllocatorWithDefaultOptions(&alloc), "GetAllocator");
    check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &mi), "CreateCpuMemoryInfo");

    char *in_name;
    size_t n_out;
    check(ort->SessionGetInputName(sess, 0, alloc, &in_name), "SessionGetInputName");
    check(ort->SessionGetOutputCount(sess, &n_out), "SessionGetOutputCount");
    char **out_names = calloc(n_out, sizeof(char *));
    OrtValue **outs = calloc(n_out, sizeof(OrtValue *));
    for (size_t i = 0; i < n_out; i++)
        check(ort->SessionGetOutputName(sess, i, alloc, &out_names[i]), "SessionGetOutputName");

    OrtValue *in_val = NULL;
    check(ort->CreateTensorWithDataAsOrtValue(mi, input, count * sizeof(float), dims, rank,
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &in_val),
          "CreateTensor");
    const char *in_names[1] = {in_name};
    const OrtValue *in_vals[1] = {in_val};
    check(ort->Run(sess, NULL, in_names, in_vals, 1, (const char *const *)out_names, n_out, outs),
          "Run");

    for (size_t i = 0; i < n_out; i++) {
        OrtTensorTypeAndShapeInfo *info;
        size_t nd, elems;
        int64_t od[16];
        check(ort->GetTensorTypeAndShape(outs[i], &info), "GetTensorTypeAndShape");
        check(ort->GetDimensionsCount(info, &nd), "GetDimensionsCount");
        if (nd > 16) return 1;
        check(ort->GetDimensions(info, od, nd), "GetDimensions");
        check(ort->GetTensorShapeElementCount(info, &elems), "GetTensorShapeElementCount");
        ort->ReleaseTensorTypeAndShapeInfo(info);
        float *data;
        check(ort->GetTensorMutableData(outs[i], (void **)&data), "GetTensorMutableData");
        char path[4096];
        snprintf(path, sizeof path, "%s%zu.f32", argv[3], i);
        FILE *o = fopen(path, "wb");
        if (!o || fwrite(data, sizeof(float), elems, o) != elems || fclose(o) != 0) {
            fprintf(stderr, "ort_run: cannot write %s\n", path);
            return 1;
        }
        printf("%s", out_names[i]);
        for (size_t d = 0; d < nd; d++) printf(" %lld", (long long)od[d]);
        printf("\n");
        ort->ReleaseValue(outs[i]);
        alloc->Free(alloc, out_names[i]);
    }
    alloc->Free(alloc, in_name);
    ort->ReleaseValue(in_val);
    ort->ReleaseMemoryInfo(mi);
    ort->ReleaseSession(sess);
    ort->ReleaseSessionOptions(so);
    ort->ReleaseEnv(env);
    free(outs);
    free(out_names);
    free(input);
    return 0;
}
