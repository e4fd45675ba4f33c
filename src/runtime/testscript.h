/*
 * testscript: the test backend's script (docs/test-backend.md), read from
 * its file and checked, for testbackend.c to play; part of a TEST DOUBLE,
 * never for production. The structs below are what a script says, a
 * parse result as wire/'s are: osp_test_script_read writes them, the
 * backend only reads them while the model lives.
 */
#ifndef OSP_RUNTIME_TESTSCRIPT_H
#define OSP_RUNTIME_TESTSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/runtime.h"

#define OSP_TEST_MAX_MS 2147483647.0 /* any delay, in ms (~24.8 days) */

typedef enum {
    OSP_TEST_FILL,
    OSP_TEST_VALUES,
    OSP_TEST_FROM_INPUT_MEAN,
    OSP_TEST_FROM_INPUT_COPY
} osp_test_source_t;

typedef struct {
    int64_t at[OSP_RT_MAX_DIMS]; /* at[0] == -1: every batch item */
    double value;
} osp_test_set_t;

/* How one output is produced. */
typedef struct {
    int64_t run_dims[OSP_RT_MAX_DIMS]; /* at run time; run_dims[0] == -1 is the batch */
    osp_test_source_t source;
    double fill;
    double *values; /* n_values, repeated over each batch item */
    int n_values;
    osp_test_set_t *sets; /* applied after the source, in order */
    int n_sets;
} osp_test_output_t;

/* What a script says. Delays are at most OSP_TEST_MAX_MS; every string is
 * the script's own and non-empty, NULL when the key is not given. */
typedef struct {
    int64_t load_delay_ms;
    char *load_error, *load_block_file;
    int64_t run_delay_ms, run_delay_per_item_ms, run_error_every;
    char *run_error, *counter_file, *run_block_file;
    osp_test_output_t *outs; /* parallel to m->outputs */
} osp_test_script_t;

/* Read the script at path into sc (zeroed by the caller) and m: m's
 * inputs, outputs (owned by m) and provider. 0, or OSP_RT_ELOAD with
 * "cannot load model <path>: <reason>" in err. On either, m and sc hold
 * what was read: the caller frees sc with osp_test_script_free and m's
 * descriptions with m. */
int osp_test_script_read(const char *path, osp_rt_model_t *m, osp_test_script_t *sc, char *err,
                         size_t errlen);
/* What sc holds (n_outputs: the model's); not sc itself. */
void osp_test_script_free(osp_test_script_t *sc, int n_outputs);

#endif
