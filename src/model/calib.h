/*
 * calib: the range of one activation tensor over a calibration set, for
 * int8 quantization (osprey quantize). Pass 1 records the minimum and
 * maximum of every finite value it is shown; the percentile method then
 * takes a second pass that counts the values in a histogram over that range
 * and keeps the range that holds all but the outer tails. Pure: no threads,
 * no I/O.
 */
#ifndef OSP_CALIB_H
#define OSP_CALIB_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    OSP_CALIB_MINMAX = 0,     /* the whole range seen */
    OSP_CALIB_PERCENTILE = 1, /* the range between two percentiles */
} osp_calib_method_t;

#define OSP_CALIB_BINS 2048

typedef struct {
    float lo, hi;   /* pass 1: smallest and largest finite value seen */
    uint64_t seen;  /* finite values seen in pass 1 */
    uint64_t *hist; /* pass 2: OSP_CALIB_BINS counts over [lo, hi]; owned */
    uint64_t counted;
} osp_calib_t;

void osp_calib_init(osp_calib_t *c);
void osp_calib_free(osp_calib_t *c);
/* Pass 1. */
void osp_calib_observe(osp_calib_t *c, const float *x, size_t n);
/* Start pass 2 (after every pass-1 value): 0, or -1 out of memory. */
int osp_calib_hist_begin(osp_calib_t *c);
/* Pass 2: the same values again. */
void osp_calib_count(osp_calib_t *c, const float *x, size_t n);
/* The range to quantize: [lo, hi] of pass 1 for OSP_CALIB_MINMAX; for
 * OSP_CALIB_PERCENTILE the edges of the bins at pct and 100 - pct percent
 * of the counted values (pct in (50, 100]), never outside pass 1's range.
 * A tensor never shown a value gets [0, 0]. */
void osp_calib_range(const osp_calib_t *c, osp_calib_method_t method, double pct, float *lo,
                     float *hi);

#endif
