/*
 * Shared box post-processing: IoU, greedy non-maximum suppression, and the
 * mapping of normalised model-input boxes back to frame pixels.
 *
 * The sort is stable and in place without a buffer (post.h promises no
 * allocation): insertion sort on short runs, merged by binary search and
 * rotation. O(n log^2 n); a frame rarely has more than a few hundred boxes
 * above threshold, but a threshold near 0 on the SSD gives 1917 x 23.
 */
#include "post/post.h"

#include <math.h>

/* NaN scores sort last, so the order stays a strict weak order. */
static inline float sort_key(const osp_det_t *d) { return isnan(d->score) ? -INFINITY : d->score; }

/* a sorts strictly before b */
static inline int before(const osp_det_t *a, const osp_det_t *b) {
    return sort_key(a) > sort_key(b);
}

static inline void swap_det(osp_det_t *a, osp_det_t *b) {
    osp_det_t t = *a;
    *a = *b;
    *b = t;
}

static void reverse(osp_det_t *d, int a, int b) {
    for (b--; a < b; a++, b--) swap_det(&d[a], &d[b]);
}

/* [a,m) [m,b) -> [m,b) [a,m) */
static void rotate(osp_det_t *d, int a, int m, int b) {
    reverse(d, a, m);
    reverse(d, m, b);
    reverse(d, a, b);
}

static void insertion_sort(osp_det_t *d, int a, int b) {
    for (int i = a + 1; i < b; i++) {
        osp_det_t v = d[i];
        int j = i;
        for (; j > a && before(&v, &d[j - 1]); j--) d[j] = d[j - 1];
        d[j] = v;
    }
}

/* First index in [a,b) whose element does not sort before v. */
static int lower_bound(const osp_det_t *d, int a, int b, const osp_det_t *v) {
    while (a < b) {
        int h = a + (b - a) / 2;
        if (before(&d[h], v))
            a = h + 1;
        else
            b = h;
    }
    return a;
}

/* First index in [a,b) whose element v sorts before. */
static int upper_bound(const osp_det_t *d, int a, int b, const osp_det_t *v) {
    while (a < b) {
        int h = a + (b - a) / 2;
        if (before(v, &d[h]))
            b = h;
        else
            a = h + 1;
    }
    return a;
}

/* Merge the sorted runs [a,m) and [m,b), equal elements of the left run
 * staying ahead of those of the right. Split the longer run in half, find
 * where its middle goes in the other, rotate, recurse: each half is at most
 * 3/4 of the whole, so the depth stays logarithmic. */
static void merge(osp_det_t *d, int a, int m, int b) {
    int n1 = m - a, n2 = b - m;
    if (n1 == 0 || n2 == 0) return;
    if (n1 + n2 == 2) {
        if (before(&d[m], &d[a])) swap_det(&d[a], &d[m]);
        return;
    }
    int c1, c2;
    if (n1 >= n2) {
        c1 = a + n1 / 2;
        c2 = lower_bound(d, m, b, &d[c1]);
    } else {
        c2 = m + n2 / 2;
        c1 = upper_bound(d, a, m, &d[c2]);
    }
    rotate(d, c1, m, c2);
    int mid = c1 + (c2 - m);
    merge(d, a, c1, mid);
    merge(d, mid, c2, b);
}

/* Large arrays: sort (score, index) keys instead of moving 92-byte records
 * around, then apply the permutation by following its cycles. Keys live on
 * the stack (no allocation, as post.h promises); past KEYS_MAX the in-place
 * merge above takes over. */
#define KEYS_MAX 4096

typedef struct {
    float score;
    int index;
} key_t_;

static inline int key_before(const key_t_ *a, const key_t_ *b) {
    return a->score > b->score || (a->score == b->score && a->index < b->index);
}

static void key_sort(key_t_ *k, key_t_ *tmp, int n) {
    for (int i = 1; i < n; i++) { /* runs of 16 by insertion */
        if (i % 16 == 0) continue;
        key_t_ v = k[i];
        int j = i;
        for (; j % 16 && key_before(&v, &k[j - 1]); j--) k[j] = k[j - 1];
        k[j] = v;
    }
    for (int w = 16; w < n; w *= 2) { /* bottom-up merges */
        for (int a = 0; a < n; a += 2 * w) {
            int m = a + w < n ? a + w : n, b = a + 2 * w < n ? a + 2 * w : n, i = a, j = m, o = a;
            while (i < m && j < b) tmp[o++] = key_before(&k[j], &k[i]) ? k[j++] : k[i++];
            while (i < m) tmp[o++] = k[i++];
            while (j < b) tmp[o++] = k[j++];
        }
        for (int i = 0; i < n; i++) k[i] = tmp[i];
    }
}

static void sort_by_keys(osp_det_t *d, int n) {
    key_t_ keys[KEYS_MAX], tmp[KEYS_MAX];
    for (int i = 0; i < n; i++) keys[i] = (key_t_){sort_key(&d[i]), i};
    key_sort(keys, tmp, n);
    /* position i receives record keys[i].index; walk each cycle once */
    for (int i = 0; i < n; i++) {
        if (keys[i].index < 0 || keys[i].index == i) continue;
        osp_det_t hold = d[i];
        int at = i;
        for (;;) {
            int from = keys[at].index;
            keys[at].index = -1;
            if (from == i) {
                d[at] = hold;
                break;
            }
            d[at] = d[from];
            at = from;
        }
    }
}

static void stable_sort(osp_det_t *d, int a, int b) {
    if (a == 0 && b > 16 && b <= KEYS_MAX) {
        sort_by_keys(d, b);
        return;
    }
    if (b - a <= 16) {
        insertion_sort(d, a, b);
        return;
    }
    int m = a + (b - a) / 2;
    stable_sort(d, a, m);
    stable_sort(d, m, b);
    if (before(&d[m], &d[m - 1])) merge(d, a, m, b);
}

static inline float pos(float v) { return v > 0.0f ? v : 0.0f; }

float osp_iou(const osp_det_t *a, const osp_det_t *b) {
    float area_a = pos(a->x2 - a->x1) * pos(a->y2 - a->y1);
    float area_b = pos(b->x2 - b->x1) * pos(b->y2 - b->y1);
    if (!(area_a > 0.0f) || !(area_b > 0.0f)) return 0.0f;
    /* plain compares, not fminf/fmaxf (library calls without -ffast-math):
     * NaN cannot reach here, the areas above were positive */
    float ix1 = a->x1 > b->x1 ? a->x1 : b->x1, ix2 = a->x2 < b->x2 ? a->x2 : b->x2;
    float iy1 = a->y1 > b->y1 ? a->y1 : b->y1, iy2 = a->y2 < b->y2 ? a->y2 : b->y2;
    float iw = pos(ix2 - ix1);
    float ih = pos(iy2 - iy1);
    float inter = iw * ih;
    float uni = area_a + area_b - inter;
    /* Infinite boxes (an exp() overflow in a decoder) give inf/inf: call
     * that no overlap rather than let NaN through. */
    if (!(uni > 0.0f) || !isfinite(uni)) return 0.0f;
    return inter / uni;
}

int osp_nms(osp_det_t *dets, int n, float iou_thresh, int per_class, int max_keep) {
    if (!dets || n <= 0) return 0;
    stable_sort(dets, 0, n);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (max_keep > 0 && k >= max_keep) break;
        int keep = 1;
        for (int j = 0; j < k; j++) {
            if (per_class && dets[j].cls != dets[i].cls) continue;
            if (osp_iou(&dets[j], &dets[i]) > iou_thresh) {
                keep = 0;
                break;
            }
        }
        /* k <= i: slot k holds i itself or a box already suppressed. */
        if (keep) dets[k++] = dets[i];
    }
    return k;
}

/* The intersection of a and b over the smaller one's area (0 when either
 * is empty or not finite). */
static float share_of_smaller(const osp_det_t *a, const osp_det_t *b) {
    float iw = fminf(a->x2, b->x2) - fmaxf(a->x1, b->x1);
    float ih = fminf(a->y2, b->y2) - fmaxf(a->y1, b->y1);
    if (!(iw > 0.0f) || !(ih > 0.0f)) return 0.0f;
    float area_a = (a->x2 - a->x1) * (a->y2 - a->y1);
    float area_b = (b->x2 - b->x1) * (b->y2 - b->y1);
    float small = fminf(area_a, area_b);
    if (!(small > 0.0f) || !isfinite(area_a) || !isfinite(area_b)) return 0.0f;
    return iw * ih / small;
}

/* The passes after osp_nms: dets[0..n) best first; a box whose overlap with
 * a better box kept (of its label only, when same_label) is at least min is
 * dropped. Order kept. min <= 0 (or above 1) keeps all. */
static int drop_overlapping(osp_det_t *dets, int n, float min, int same_label,
                            float (*overlap)(const osp_det_t *, const osp_det_t *)) {
    if (!dets || n <= 0) return 0;
    if (!(min > 0.0f) || min > 1.0f) return n;
    int k = 0;
    for (int i = 0; i < n; i++) {
        int keep = 1;
        for (int j = 0; j < k && keep; j++) {
            if (same_label && dets[j].cls != dets[i].cls) continue;
            if (overlap(&dets[j], &dets[i]) >= min) keep = 0;
        }
        if (keep) dets[k++] = dets[i];
    }
    return k;
}

int osp_nms_across(osp_det_t *dets, int n, float iou_min) {
    return drop_overlapping(dets, n, iou_min, 0, osp_iou);
}

int osp_nms_contained(osp_det_t *dets, int n, float share_min) {
    return drop_overlapping(dets, n, share_min, 1, share_of_smaller);
}

static inline float clampf(float v, float hi) {
    return fminf(fmaxf(v, 0.0f), hi); /* NaN becomes 0 */
}

/* A non-positive (or NaN) scale is a caller bug with no meaningful mapping;
 * the boxes are left as they are rather than filled with inf. */
void osp_boxes_to_frame(osp_det_t *dets, int n, int in_w, int in_h, float scale_x, float scale_y,
                        float pad_x, float pad_y, int frame_w, int frame_h) {
    if (!dets || n <= 0 || !(scale_x > 0.0f) || !(scale_y > 0.0f)) return;
    const float fw = frame_w > 0 ? (float)frame_w : 0.0f;
    const float fh = frame_h > 0 ? (float)frame_h : 0.0f;
    const float iw = (float)in_w, ih = (float)in_h;
    for (int i = 0; i < n; i++) {
        osp_det_t *d = &dets[i];
        d->x1 = clampf((d->x1 * iw - pad_x) / scale_x, fw);
        d->y1 = clampf((d->y1 * ih - pad_y) / scale_y, fh);
        d->x2 = clampf((d->x2 * iw - pad_x) / scale_x, fw);
        d->y2 = clampf((d->y2 * ih - pad_y) / scale_y, fh);
        for (int k = 0; k < d->n_kp && k < OSP_MAX_KP; k++) {
            d->kp[k][0] = clampf((d->kp[k][0] * iw - pad_x) / scale_x, fw);
            d->kp[k][1] = clampf((d->kp[k][1] * ih - pad_y) / scale_y, fh);
        }
    }
}
