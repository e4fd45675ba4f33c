/*
 * regions: see regions.h.
 *
 * A plan works on a few dozen boxes at most, so the clustering and the
 * merges are plain pairwise passes repeated until nothing changes, cubic
 * in the boxes (bench_motion times a plan on real motion).
 */
#include "motion/regions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* What a region must hold (frame pixels), and the region made around it. */
typedef struct {
    float x1, y1, x2, y2;
    unsigned from;
    osp_region_t g;
} cand_t;

struct osp_regions {
    osp_regions_params_t p;
    int min_side; /* p.min_side, or the one the model side gives */
    cand_t *c;    /* p.max_inputs */
    int n;
    int frame_w, frame_h;
    int full_done; /* a whole-frame pass was run, last at full_at */
    double full_at;
};

void osp_regions_defaults(osp_regions_params_t *p, int model_side) {
    *p = (osp_regions_params_t){
        .model_side = model_side,
        .factor = 2.0f,
        .cluster_gap = 16,
        .merge_overlap = 0.5f,
        .max_regions = 4,
        .align = 2,
        .full_every_s = 5.0,
        .max_inputs = 64,
        .cover_overlap = 0.2f,
        .cover_max = 16,
    };
}

static int bad(char *err, size_t errlen, const char *fmt, double v) {
    snprintf(err, errlen, fmt, v);
    return OSP_MOTION_EINVAL;
}

static int check_params(const osp_regions_params_t *p, char *err, size_t errlen) {
    if (p->model_side < 1 || p->model_side > OSP_MOTION_MAX_SIDE)
        return bad(err, errlen, "regions: model_side %g is not within 1..16384", p->model_side);
    if (p->min_side < 0 || p->min_side > OSP_MOTION_MAX_SIDE)
        return bad(err, errlen, "regions: min_side %g is not within 0..16384 (0: from the model)",
                   p->min_side);
    if (!(p->factor >= 1 && p->factor <= 16))
        return bad(err, errlen, "regions: factor %g is not within 1..16", p->factor);
    if (p->cluster_gap < 0)
        return bad(err, errlen, "regions: cluster_gap %g is negative", p->cluster_gap);
    if (!(p->merge_overlap > 0 && p->merge_overlap <= 1))
        return bad(err, errlen, "regions: merge_overlap %g is not within (0, 1]", p->merge_overlap);
    if (p->max_regions < 1 || p->max_regions > 64)
        return bad(err, errlen, "regions: max_regions %g is not within 1..64", p->max_regions);
    if (p->align < 1 || p->align > 64)
        return bad(err, errlen, "regions: align %g is not within 1..64", p->align);
    if (!(p->full_every_s >= 0 && p->full_every_s < 1e9))
        return bad(err, errlen, "regions: full_every_s %g is not a number of seconds >= 0",
                   p->full_every_s);
    if (p->max_inputs < 1 || p->max_inputs > 4096)
        return bad(err, errlen, "regions: max_inputs %g is not within 1..4096", p->max_inputs);
    if (p->cover_side < 0 || p->cover_side > OSP_MOTION_MAX_SIDE)
        return bad(err, errlen,
                   "regions: cover_side %g is not within 0..16384 (0: twice the least side)",
                   p->cover_side);
    if (!(p->cover_overlap >= 0 && p->cover_overlap <= 0.5f))
        return bad(err, errlen, "regions: cover_overlap %g is not within [0, 0.5]", p->cover_overlap);
    if (p->cover_max < 1 || p->cover_max > 256)
        return bad(err, errlen, "regions: cover_max %g is not within 1..256", p->cover_max);
    return 0;
}

int osp_regions_create(const osp_regions_params_t *p, osp_regions_t **out, char *err, size_t errlen) {
    *out = NULL;
    int rc = check_params(p, err, errlen);
    if (rc) return rc;
    osp_regions_t *r = calloc(1, sizeof *r);
    cand_t *c = malloc((size_t)p->max_inputs * sizeof *c);
    if (!r || !c) {
        free(r);
        free(c);
        snprintf(err, errlen, "regions: out of memory");
        return OSP_MOTION_ENOMEM;
    }
    r->p = *p;
    r->c = c;
    r->min_side = p->min_side ? p->min_side : p->model_side > 320 ? 320 : p->model_side;
    *out = r;
    return 0;
}

void osp_regions_free(osp_regions_t *r) {
    if (!r) return;
    free(r->c);
    free(r);
}

int osp_regions_full_due(const osp_regions_t *r, double now_s) {
    if (!r->full_done) return 1;
    return r->p.full_every_s > 0 && now_s - r->full_at >= r->p.full_every_s;
}

void osp_regions_full_done(osp_regions_t *r, double now_s) {
    r->full_done = 1;
    r->full_at = now_s;
}

/* One side of a region: length s (already aligned) centred on c, moved
 * inside [0, full); the whole of it when s does not fit. Moving the start
 * back to a multiple of align must not leave behind what the region holds
 * (up to hi): where it would, at the frame's far edge, the side grows. */
static void place_side(float c, float hi, int s, int full, int align, int *at, int *len) {
    if (s >= full) {
        *at = 0;
        *len = full;
        return;
    }
    int a = (int)lroundf(c - (float)s / 2);
    if (a > full - s) a = full - s;
    if (a < 0) a = 0;
    a -= a % align;
    int n = s;
    if ((float)(a + n) < hi) {
        n = (int)ceilf(hi) - a;
        if (n % align) n += align - n % align;
        if (n > full - a) n = full - a;
    }
    *at = a;
    *len = n;
}

/* The region around c's box. */
static void place(const osp_regions_t *r, cand_t *c) {
    float w = c->x2 - c->x1, h = c->y2 - c->y1;
    float s = r->p.factor * (w > h ? w : h);
    int side = s > (float)r->min_side ? (int)ceilf(s) : r->min_side;
    int align = r->p.align;
    if (side % align) side += align - side % align;
    place_side((c->x1 + c->x2) / 2, c->x2, side, r->frame_w, align, &c->g.x, &c->g.w);
    place_side((c->y1 + c->y2) / 2, c->y2, side, r->frame_h, align, &c->g.y, &c->g.h);
    c->g.from = c->from;
}

static float gap(const cand_t *a, const cand_t *b) {
    float dx = fmaxf(a->x1 - b->x2, b->x1 - a->x2), dy = fmaxf(a->y1 - b->y2, b->y1 - a->y2);
    return fmaxf(fmaxf(dx, dy), 0);
}

static long long area(const osp_region_t *g) { return (long long)g->w * g->h; }

static long long overlap(const osp_region_t *a, const osp_region_t *b) {
    int w = (a->x + a->w < b->x + b->w ? a->x + a->w : b->x + b->w) - (a->x > b->x ? a->x : b->x);
    int h = (a->y + a->h < b->y + b->h ? a->y + a->h : b->y + b->h) - (a->y > b->y ? a->y : b->y);
    return w > 0 && h > 0 ? (long long)w * h : 0;
}

/* a and b as one candidate (not placed). */
static cand_t joined(const cand_t *a, const cand_t *b) {
    return (cand_t){.x1 = fminf(a->x1, b->x1),
                    .y1 = fminf(a->y1, b->y1),
                    .x2 = fmaxf(a->x2, b->x2),
                    .y2 = fmaxf(a->y2, b->y2),
                    .from = a->from | b->from};
}

/* c[i] becomes c[i] and c[j] together; c[j] goes. */
static void join(osp_regions_t *r, int i, int j) {
    r->c[i] = joined(&r->c[i], &r->c[j]);
    place(r, &r->c[i]);
    r->c[j] = r->c[--r->n];
}

/* Add a box clipped to the frame (skipped when nothing is left of it);
 * when the planner is full, it joins the candidate it enlarges least. */
static void add(osp_regions_t *r, float x1, float y1, float x2, float y2, unsigned from) {
    if (!isfinite(x1 + y1 + x2 + y2)) return;
    cand_t c = {.x1 = fmaxf(x1, 0),
                .y1 = fmaxf(y1, 0),
                .x2 = fminf(x2, (float)r->frame_w),
                .y2 = fminf(y2, (float)r->frame_h),
                .from = from};
    if (!(c.x2 > c.x1 && c.y2 > c.y1)) return;
    place(r, &c);
    if (r->n < r->p.max_inputs) {
        r->c[r->n++] = c;
        return;
    }
    int best = 0;
    float grow = INFINITY;
    for (int i = 0; i < r->n; i++) {
        cand_t u = joined(&r->c[i], &c);
        float g = (u.x2 - u.x1) * (u.y2 - u.y1) -
                  (r->c[i].x2 - r->c[i].x1) * (r->c[i].y2 - r->c[i].y1);
        if (g < grow) grow = g, best = i;
    }
    r->c[best] = joined(&r->c[best], &c);
    place(r, &r->c[best]);
}

/* Are a and b, two boxes of motion, one cluster? */
static int one_cluster(const osp_regions_t *r, const cand_t *a, const cand_t *b) {
    if (gap(a, b) <= (float)r->p.cluster_gap) return 1;
    cand_t u = joined(a, b);
    float w = u.x2 - u.x1, h = u.y2 - u.y1;
    return r->p.factor * (w > h ? w : h) <= (float)r->min_side;
}

/* Join boxes of motion that are one cluster until no two are. */
static void cluster_motion(osp_regions_t *r) {
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < r->n && !changed; i++)
            for (int j = i + 1; j < r->n && !changed; j++)
                if (r->c[i].from == OSP_REGION_MOTION && r->c[j].from == OSP_REGION_MOTION &&
                    one_cluster(r, &r->c[i], &r->c[j])) {
                    join(r, i, j);
                    changed = 1;
                }
    }
}

static void merge_overlapping(osp_regions_t *r) {
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < r->n && !changed; i++)
            for (int j = i + 1; j < r->n && !changed; j++) {
                long long a = area(&r->c[i].g), b = area(&r->c[j].g);
                if ((double)overlap(&r->c[i].g, &r->c[j].g) >=
                    (double)r->p.merge_overlap * (double)(a < b ? a : b)) {
                    join(r, i, j);
                    changed = 1;
                }
            }
    }
}

/* Join the pair whose joined region is smallest until at most `max` are left. */
static void cap_count(osp_regions_t *r, int max) {
    while (r->n > max) {
        int bi = 0, bj = 1;
        long long best = -1;
        for (int i = 0; i < r->n; i++)
            for (int j = i + 1; j < r->n; j++) {
                cand_t u = joined(&r->c[i], &r->c[j]);
                place(r, &u);
                if (best < 0 || area(&u.g) < best) best = area(&u.g), bi = i, bj = j;
            }
        join(r, bi, bj);
        merge_overlapping(r); /* the bigger region may now cover others */
    }
}

/* Is the motion box inside a tracked candidate's region? */
static int tracked_covers(const osp_regions_t *r, const osp_motion_box_t *b) {
    for (int i = 0; i < r->n; i++) {
        const osp_region_t *g = &r->c[i].g;
        if ((r->c[i].from & OSP_REGION_TRACKED) && b->x1 >= g->x && b->y1 >= g->y &&
            b->x2 <= g->x + g->w && b->y2 <= g->y + g->h)
            return 1;
    }
    return 0;
}

int osp_regions_plan(osp_regions_t *r, int frame_w, int frame_h, const osp_motion_box_t *motion,
                     int n_motion, const osp_det_t *tracked, int n_tracked, osp_region_t *out,
                     int cap, char *err, size_t errlen) {
    if (frame_w < 1 || frame_h < 1 || frame_w > OSP_MOTION_MAX_SIDE ||
        frame_h > OSP_MOTION_MAX_SIDE || n_motion < 0 || n_tracked < 0 ||
        (n_motion > 0 && !motion) || (n_tracked > 0 && !tracked) || cap < 1 || !out) {
        snprintf(err, errlen,
                 "regions: a plan for a %dx%d frame from %d motion and %d tracked boxes into %d "
                 "regions is not one that can be made",
                 frame_w, frame_h, n_motion, n_tracked, cap);
        return OSP_MOTION_EINVAL;
    }
    r->frame_w = frame_w;
    r->frame_h = frame_h;
    r->n = 0;
    for (int i = 0; i < n_tracked; i++) {
        const osp_det_t *d = &tracked[i];
        add(r, d->x1, d->y1, d->x2, d->y2, OSP_REGION_TRACKED);
    }
    for (int i = 0; i < n_motion; i++) {
        const osp_motion_box_t *b = &motion[i];
        if (tracked_covers(r, b)) continue;
        add(r, (float)b->x1, (float)b->y1, (float)b->x2, (float)b->y2, OSP_REGION_MOTION);
    }
    cluster_motion(r);
    merge_overlapping(r);
    cap_count(r, cap < r->p.max_regions ? cap : r->p.max_regions);
    for (int i = 0; i < r->n; i++) out[i] = r->c[i].g;
    return r->n;
}

/* Crops of side s along a side of length full: how many, their overlap
 * at least `over` pixels. */
static int cover_count(int s, int full, int over) {
    if (s >= full) return 1;
    int step = s - over;
    if (step < 1) step = 1;
    return 1 + (full - s + step - 1) / step;
}

/* Where crop i of n of side s starts along a side of length full: spread
 * evenly from 0 to full - s, aligned down (the last one flush with the
 * far edge, grown by what aligning took off). */
static void cover_side_at(int i, int n, int s, int full, int align, int *at, int *len) {
    if (s >= full || n < 2) {
        *at = 0;
        *len = s < full ? s : full;
        return;
    }
    long long a = (long long)(full - s) * i / (n - 1);
    int x = (int)a;
    x -= x % align;
    *at = x;
    *len = i == n - 1 ? full - x : s;
}

int osp_regions_cover(const osp_regions_t *r, int frame_w, int frame_h, osp_region_t *out, int cap) {
    if (frame_w < 1 || frame_h < 1 || frame_w > OSP_MOTION_MAX_SIDE ||
        frame_h > OSP_MOTION_MAX_SIDE || cap < 1 || !out)
        return OSP_MOTION_EINVAL;
    int max = cap < r->p.cover_max ? cap : r->p.cover_max;
    int align = r->p.align;
    int s = r->p.cover_side ? r->p.cover_side : 2 * r->min_side;
    if (s % align) s += align - s % align;
    int nx, ny;
    for (;;) {
        int over = (int)ceilf(r->p.cover_overlap * (float)s);
        nx = cover_count(s, frame_w, over);
        ny = cover_count(s, frame_h, over);
        if (nx * ny <= max) break;
        s += s / 8 > align ? s / 8 - s / 8 % align : align; /* grows; whole at worst */
    }
    int n = 0;
    for (int j = 0; j < ny; j++)
        for (int i = 0; i < nx; i++) {
            osp_region_t *g = &out[n++];
            cover_side_at(i, nx, s, frame_w, align, &g->x, &g->w);
            cover_side_at(j, ny, s, frame_h, align, &g->y, &g->h);
            g->from = OSP_REGION_COVER;
        }
    return n;
}

void osp_region_to_frame(const osp_region_t *g, osp_det_t *dets, int n) {
    float x0 = (float)g->x, y0 = (float)g->y, x1 = x0 + (float)g->w, y1 = y0 + (float)g->h;
    for (int i = 0; i < n; i++) {
        osp_det_t *d = &dets[i];
        d->x1 = fminf(fmaxf(d->x1 + x0, x0), x1);
        d->y1 = fminf(fmaxf(d->y1 + y0, y0), y1);
        d->x2 = fminf(fmaxf(d->x2 + x0, x0), x1);
        d->y2 = fminf(fmaxf(d->y2 + y0, y0), y1);
        for (int k = 0; k < d->n_kp && k < OSP_MAX_KP; k++) {
            d->kp[k][0] = fminf(fmaxf(d->kp[k][0] + x0, x0), x1);
            d->kp[k][1] = fminf(fmaxf(d->kp[k][1] + y0, y0), y1);
        }
    }
}
