/* Execution-provider order (the seed's resolution) and dtype helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "runtime/runtime.h"

static const char *const ALL[] = {"CUDAExecutionProvider", "CoreMLExecutionProvider",
                                  "CPUExecutionProvider"};
static const char *const CPU_ONLY[] = {"CPUExecutionProvider"};

static void check(const char *dev, const char *plat, const char *mach, const char *const *avail,
                  int navail, const char *want0, const char *want1) {
    const char *out[4] = {0};
    int n = osp_rt_provider_order(dev, plat, mach, avail, navail, out, 4);
    assert_int_equal(n, want1 ? 2 : 1);
    assert_string_equal(out[0], want0);
    if (want1) assert_string_equal(out[1], want1);
}

static void test_auto_linux_x86(void **s) {
    (void)s;
    check("", "linux", "x86_64", ALL, 3, "CUDAExecutionProvider", "CPUExecutionProvider");
    check("auto", "linux", "x86_64", CPU_ONLY, 1, "CPUExecutionProvider", NULL);
    check("", "linux", "aarch64", ALL, 3, "CPUExecutionProvider", NULL);
}

static void test_auto_darwin(void **s) {
    (void)s;
    /* "darwin" contains "win": a substring test would add CUDA here */
    check("", "darwin", "x86_64", ALL, 3, "CoreMLExecutionProvider", "CPUExecutionProvider");
}

static void test_pins(void **s) {
    (void)s;
    check("cuda", "darwin", "arm64", ALL, 3, "CUDAExecutionProvider", "CPUExecutionProvider");
    check("CoreML", "linux", "x86_64", ALL, 3, "CoreMLExecutionProvider", "CPUExecutionProvider");
    check("cpu", "darwin", "arm64", ALL, 3, "CPUExecutionProvider", NULL);
    /* a pinned provider the library lacks is dropped, not fatal */
    check("cuda", "linux", "x86_64", CPU_ONLY, 1, "CPUExecutionProvider", NULL);
}

static void test_dims(void **s) {
    (void)s;
    int64_t d[4] = {1, 3, 300, 300};
    assert_int_equal(osp_dims_count(d, 4), 270000);
    d[0] = -1;
    assert_int_equal(osp_dims_count(d, 4), 0);
    int64_t big[3] = {INT64_MAX / 2, 4, 4};
    assert_int_equal(osp_dims_count(big, 3), 0);
    assert_int_equal(osp_dtype_size(OSP_DT_F32), 4);
    assert_int_equal(osp_dtype_size(OSP_DT_U8), 1);
    assert_string_equal(osp_dtype_name(OSP_DT_I64), "int64");
    assert_non_null(osp_backend_find("onnxruntime"));
    assert_null(osp_backend_find("tensorflow"));
}

static void test_load_missing_file(void **s) {
    (void)s;
    osp_rt_model_t *m = (osp_rt_model_t *)1;
    char err[256];
    int rc = osp_backend_onnxruntime.load("/nonexistent/model.onnx", NULL, &m, err, sizeof err);
    assert_int_equal(rc, OSP_RT_ELOAD);
    assert_null(m);
    assert_non_null(strstr(err, "cannot load model /nonexistent/model.onnx"));
    assert_non_null(strstr(err, "No such file"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_linux_x86),
        cmocka_unit_test(test_auto_darwin),
        cmocka_unit_test(test_pins),
        cmocka_unit_test(test_dims),
        cmocka_unit_test(test_load_missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
