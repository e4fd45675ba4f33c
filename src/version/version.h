/*
 * What a binary is: osprey's version, the git commit it was built from
 * (`git describe`, baked in at build time; "unknown" when built outside a
 * git checkout), and the ONNX Runtime it runs on with its execution
 * providers. For `--version` of both commands.
 */
#ifndef OSP_VERSION_H
#define OSP_VERSION_H

#include <stdio.h>

/* osprey's release version ("0.1.0"); a static string. */
const char *osp_version(void);
/* `git describe --tags --always --dirty` of the source tree at build
 * time, or "unknown"; a static string. */
const char *osp_version_git(void);

/* The --version text of program prog ("ospreyd", "osprey"), four lines:
 *   prog 0.1.0
 *   git: v0.1.0-12-gabc1234
 *   onnxruntime: 1.20.1
 *   providers: CPUExecutionProvider, …
 */
void osp_version_print(FILE *out, const char *prog);

#endif
