/* Activation ranges for int8 calibration: min/max, then a histogram. */
#include "model/calib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void osp_calib_init(osp_calib_t *c) { memset(c, 0, sizeof *c); }

void osp_calib_free(osp_calib_t *c) {
    free(c->hist);
    memset(c, 0, sizeof *c);
}

void osp_calib_observe(osp_calib_t *c, const float *x, size_t n) {
    float lo = c->seen ? c->lo : INFINITY, hi = c->seen ? c->hi : -INFINITY;
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (!isfinite(v)) continue;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        seen++;
    }
    if (!seen) return;
    c->lo = lo;
    c->hi = hi;
    c->seen += seen;
}

int osp_calib_hist_begin(osp_calib_t *c) {
    free(c->hist);
    c->counted = 0;
    c->hist = calloc(OSP_CALIB_BINS, sizeof *c->hist);
    return c->hist ? 0 : -1;
}

void osp_calib_count(osp_calib_t *c, const float *x, size_t n) {
    if (!c->hist || !c->seen) return;
    double lo = c->lo, width = (double)c->hi - lo;
    double per = width > 0 ? OSP_CALIB_BINS / width : 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (!isfinite(v)) continue;
        /* a value outside pass 1's range (a different frame set) lands in
         * the end bins rather than being lost */
        double b = ((double)v - lo) * per;
        int k = b < 0 ? 0 : b >= OSP_CALIB_BINS ? OSP_CALIB_BINS - 1 : (int)b;
        c->hist[k]++;
        c->counted++;
    }
}

void osp_calib_range(const osp_calib_t *c, osp_calib_method_t method, double pct, float *lo,
                     float *hi) {
    if (!c->seen) {
        *lo = *hi = 0.f;
        return;
    }
    *lo = c->lo;
    *hi = c->hi;
    if (method != OSP_CALIB_PERCENTILE || !c->hist || !c->counted || c->hi <= c->lo) return;
    if (pct > 100) pct = 100;
    if (pct < 50) pct = 50;
    double tail = (double)c->counted * (100.0 - pct) / 100.0;
    double width = ((double)c->hi - c->lo) / OSP_CALIB_BINS;
    /* lowest bin whose cumulative count from below passes the tail, and the
     * highest from above: the kept range is those bins' outer edges */
    uint64_t cum = 0;
    int first = 0, last = OSP_CALIB_BINS - 1;
    for (int k = 0; k < OSP_CALIB_BINS; k++) {
        cum += c->hist[k];
        if ((double)cum > tail) {
            first = k;
            break;
        }
    }
    cum = 0;
    for (int k = OSP_CALIB_BINS - 1; k >= 0; k--) {
        cum += c->hist[k];
        if ((double)cum > tail) {
            last = k;
            break;
        }
    }
    if (first > last) first = last;
    float l = (float)(c->lo + width * first), h = (float)(c->lo + width * (last + 1));
    *lo = l > c->lo ? l : c->lo;
    *hi = h < c->hi ? h : c->hi;
}
