/*
 * procedure: checking chunk descriptions against a standard operating
 * procedure — an ordered list of steps, each with an id, a name and
 * aliases. Each description is matched to one step (or none) and the
 * checker follows the procedure's cycles; the rules are in docs/segment.md.
 *
 * The procedure file is JSON: {"steps": [{"id": "...", "name": "...",
 * "aliases": ["...", ...]}, ...]} or the bare array of steps.
 *
 * One checker per stream, used by one thread. Owned by the caller
 * (osp_proc_load or osp_proc_parse / osp_proc_free); the cJSON results are
 * owned by the caller (cJSON_Delete).
 */
#ifndef OSP_SEGMENT_PROCEDURE_H
#define OSP_SEGMENT_PROCEDURE_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct {
    double complete;   /* a closed cycle at or above this completion is complete: 0.6 */
    double noise;      /* a return to an earlier step below this completion is noise: 0.3 */
    double late_start; /* at or above this completion a return to any earlier step
                          (not only the first) closes the cycle: 0.8 */
} osp_proc_thresholds_t;

void osp_proc_thresholds_default(osp_proc_thresholds_t *t);

typedef struct osp_proc osp_proc_t;

/* NULL thresholds: the defaults. Returns 0 or -1 with a reason in err. */
int osp_proc_parse(const char *json, const osp_proc_thresholds_t *t, osp_proc_t **out, char *err,
                   size_t errlen);
int osp_proc_load(const char *path, const osp_proc_thresholds_t *t, osp_proc_t **out, char *err,
                  size_t errlen);
void osp_proc_free(osp_proc_t *p);

/* The step a description names (index), or -1. */
int osp_proc_match(const osp_proc_t *p, const char *description);

/* Check one chunk's description: the checker_result object, or NULL when
 * out of memory. */
cJSON *osp_proc_check(osp_proc_t *p, const char *description);

/* Close the open cycle and summarise the stream. */
cJSON *osp_proc_summary(osp_proc_t *p);

#endif
