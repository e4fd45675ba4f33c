/* Version text (version.h). OSP_VERSION comes from the CMake project, the
 * git description from a header made at build time (cmake/gitdescribe.cmake). */
#include "version/version.h"

#include "runtime/runtime.h"
#include "git_describe.h"

const char *osp_version(void) { return OSP_VERSION; }

const char *osp_version_git(void) { return OSP_GIT_DESCRIBE; }

void osp_version_print(FILE *out, const char *prog) {
    char providers[512];
    int failed = osp_ort_providers(providers, sizeof providers) != 0;
    fprintf(out, "%s %s\ngit: %s\nonnxruntime: %s\nproviders: %s%s%s\n", prog, osp_version(),
            osp_version_git(), osp_ort_version(), failed ? "unknown (" : "", providers,
            failed ? ")" : "");
}
