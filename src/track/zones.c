/* Objects in zones and across lines, frame by frame; see zones.h. */
#include "track/zones.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A point nearer a line than this fraction of the frame's smaller side is
 * on neither side: a person standing on a line jitters a few pixels
 * across it every frame. */
#define LINE_MARGIN 0.01

/* One track's progress through the zones and lines. */
struct zt {
    osp_zones_obj_t pub;
    uint16_t presence[OSP_ZONES_MAX];           /* 0..inertia per zone */
    double since[OSP_ZONES_MAX];                /* when it entered each zone it is in */
    int8_t side[OSP_ZONES_MAX];                 /* per line: -1 left, 1 right, 0 not yet known */
    float px[OSP_ZONES_MAX], py[OSP_ZONES_MAX]; /* its last point on that side, in pixels */
};

struct osp_zones {
    osp_zones_cfg_t cfg;
    struct zt *zt, *spare; /* in track id order; spare is the next update's */
    int n, cap, spare_cap;
    osp_zones_cross_t *cross;
    int n_cross, cross_cap;
    uint64_t totals[OSP_ZONES_MAX][2]; /* per line: in, out */
};

int osp_zones_new(const osp_zones_cfg_t *cfg, osp_zones_t **out, char *err, size_t errlen) {
    *out = NULL;
    int r = osp_zones_cfg_check(cfg, err, errlen);
    if (r) return r;
    osp_zones_t *z = calloc(1, sizeof *z);
    if (!z) {
        snprintf(err, errlen, "zones: out of memory");
        return OSP_ZONES_ENOMEM;
    }
    z->cfg = *cfg;
    *out = z;
    return 0;
}

void osp_zones_free(osp_zones_t *z) {
    if (!z) return;
    free(z->zt);
    free(z->spare);
    free(z->cross);
    free(z);
}

const osp_zones_cfg_t *osp_zones_cfg(const osp_zones_t *z) { return &z->cfg; }

const char *osp_zones_dir_name(osp_zones_dir_t d) { return d == OSP_ZONES_IN ? "in" : "out"; }

/* Even-odd rule: a ray to the right crosses the edges an odd number of times. */
static int inside(const osp_zones_pt_t *p, int n, double x, double y) {
    int in = 0;
    for (int i = 0, j = n - 1; i < n; j = i++) {
        double xi = p[i].x, yi = p[i].y, xj = p[j].x, yj = p[j].y;
        if ((yi > y) != (yj > y) && x < xj + (y - yj) * (xi - xj) / (yi - yj)) in = !in;
    }
    return in;
}

/* objects: n names of OSP_ZONES_NAME_MAX bytes each, as the defs hold them */
static int lets_in(const char *objects, int n, const char *label) {
    if (!n) return 1;
    if (!label) return 0;
    for (int i = 0; i < n; i++)
        if (strcmp(objects + (size_t)i * OSP_ZONES_NAME_MAX, label) == 0) return 1;
    return 0;
}

static void zone_step(const osp_zones_t *z, struct zt *s, int i, int in_now, double now) {
    const osp_zone_def_t *d = &z->cfg.zones[i];
    uint32_t bit = 1u << i;
    if (in_now && s->presence[i] < d->inertia) s->presence[i]++;
    if (!in_now && s->presence[i] > 0) s->presence[i]--;
    osp_zones_obj_t *o = &s->pub;
    if (!(o->current & bit) && s->presence[i] >= d->inertia) {
        o->current |= bit;
        o->entered_now |= bit;
        s->since[i] = now;
        int seen = 0;
        for (int k = 0; k < o->n_entered; k++) seen |= o->entered[k] == i;
        if (!seen) o->entered[o->n_entered++] = (uint8_t)i;
    } else if ((o->current & bit) && s->presence[i] == 0) {
        o->current &= ~bit;
        o->left_now |= bit;
        o->loitering &= ~bit;
    }
    if ((o->current & bit) && d->loitering_time > 0 && !(o->loitering & bit) &&
        now - s->since[i] >= d->loitering_time) {
        o->loitering |= bit;
        o->loiter_now |= bit;
    }
}

/* -1: left of a->b on the image, 1: right, 0: within the margin. */
static int side_of(double ax, double ay, double bx, double by, double x, double y, double margin,
                   double *cross) {
    double len = hypot(bx - ax, by - ay);
    *cross = (bx - ax) * (y - ay) - (by - ay) * (x - ax);
    if (fabs(*cross) < margin * len) return 0;
    /* y grows downwards: a negative cross product is to the walker's left */
    return *cross < 0 ? -1 : 1;
}

/* Whether the step from (x0,y0) to (x1,y1), whose ends lie on either side
 * of the line through a and b, passes between a and b. */
static int through(double ax, double ay, double bx, double by, double x0, double y0, double c0,
                   double x1, double y1, double c1) {
    double s = c0 / (c0 - c1);
    double x = x0 + s * (x1 - x0), y = y0 + s * (y1 - y0);
    double dx = bx - ax, dy = by - ay;
    double u = ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy);
    return u >= 0 && u <= 1;
}

static void line_step(osp_zones_t *z, struct zt *s, int i, const osp_track_t *tr, double x,
                      double y, double w, double h) {
    const osp_line_def_t *l = &z->cfg.lines[i];
    double ax = l->a.x * w, ay = l->a.y * h, bx = l->b.x * w, by = l->b.y * h, c1, c0;
    int now = side_of(ax, ay, bx, by, x, y, LINE_MARGIN * fmin(w, h), &c1);
    if (!now) return;
    if (s->side[i] && now != s->side[i]) {
        side_of(ax, ay, bx, by, s->px[i], s->py[i], 0, &c0);
        if (through(ax, ay, bx, by, s->px[i], s->py[i], c0, x, y, c1) && z->n_cross < z->cross_cap) {
            osp_zones_dir_t dir = now < 0 ? OSP_ZONES_IN : OSP_ZONES_OUT;
            z->cross[z->n_cross++] = (osp_zones_cross_t){tr->id, tr->label, i, dir};
            z->totals[i][dir == OSP_ZONES_IN ? 0 : 1]++;
        }
    }
    s->side[i] = (int8_t)now;
    s->px[i] = (float)x;
    s->py[i] = (float)y;
}

static int grow(void **buf, int *cap, int want, size_t elem) {
    if (want <= *cap) return 0;
    void *nb = realloc(*buf, (size_t)want * elem);
    if (!nb) return -1;
    *buf = nb;
    *cap = want;
    return 0;
}

int osp_zones_update(osp_zones_t *z, const osp_tracker_t *t, int frame_w, int frame_h,
                     const char *const *labels, int n_labels, char *err, size_t errlen) {
    if (frame_w < 1 || frame_h < 1) {
        snprintf(err, errlen, "zones: frame size %dx%d", frame_w, frame_h);
        return OSP_ZONES_EINVAL;
    }
    int nt = osp_track_count(t);
    /* a track crosses each line at most once a frame */
    if (grow((void **)&z->spare, &z->spare_cap, nt, sizeof *z->spare) ||
        grow((void **)&z->cross, &z->cross_cap, nt * (z->cfg.n_lines ? z->cfg.n_lines : 1),
             sizeof *z->cross)) {
        snprintf(err, errlen, "zones: out of memory");
        return OSP_ZONES_ENOMEM;
    }
    double now = osp_track_now(t), w = frame_w, h = frame_h;
    z->n_cross = 0;
    int old = 0;
    for (int i = 0; i < nt; i++) {
        const osp_track_t *tr = osp_track_at(t, i);
        struct zt *s = &z->spare[i];
        /* both lists are in id order: carry over what the track had */
        while (old < z->n && z->zt[old].pub.id < tr->id) old++;
        if (old < z->n && z->zt[old].pub.id == tr->id) {
            *s = z->zt[old];
        } else {
            memset(s, 0, sizeof *s);
            s->pub.id = tr->id;
        }
        s->pub.entered_now = s->pub.left_now = s->pub.loiter_now = 0;
        if (tr->unseen || tr->state == OSP_TRACK_REMOVED || tr->verdict == OSP_TRACK_REJECTED)
            continue;
        const char *label = tr->label < n_labels && labels ? labels[tr->label] : NULL;
        double x = 0.5 * ((double)tr->box.x1 + tr->box.x2), y = tr->box.y2;
        for (int k = 0; k < z->cfg.n_zones; k++) {
            const osp_zone_def_t *d = &z->cfg.zones[k];
            int in_now = lets_in(d->objects[0], d->n_objects, label) &&
                         inside(d->pts, d->n_pts, x / w, y / h);
            zone_step(z, s, k, in_now, now);
        }
        for (int k = 0; k < z->cfg.n_lines; k++)
            if (lets_in(z->cfg.lines[k].objects[0], z->cfg.lines[k].n_objects, label))
                line_step(z, s, k, tr, x, y, w, h);
    }
    struct zt *tmp = z->zt;
    int tcap = z->cap;
    z->zt = z->spare;
    z->cap = z->spare_cap;
    z->spare = tmp;
    z->spare_cap = tcap;
    z->n = nt;
    return 0;
}

const osp_zones_obj_t *osp_zones_obj(const osp_zones_t *z, uint64_t id) {
    int lo = 0, hi = z->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        uint64_t v = z->zt[mid].pub.id;
        if (v == id) return &z->zt[mid].pub;
        if (v < id)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

int osp_zones_crossings(const osp_zones_t *z, const osp_zones_cross_t **out) {
    *out = z->cross;
    return z->n_cross;
}

void osp_zones_line_totals(const osp_zones_t *z, int line, uint64_t *in, uint64_t *out) {
    int ok = line >= 0 && line < z->cfg.n_lines;
    *in = ok ? z->totals[line][0] : 0;
    *out = ok ? z->totals[line][1] : 0;
}
