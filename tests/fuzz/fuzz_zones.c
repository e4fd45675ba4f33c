/*
 * libFuzzer target for the zones file (src/track/zonefile.c), which a user
 * writes and a network config may one day carry, and for what the zones
 * then do with tracked objects (src/track/zones.c, through the tracker).
 * Checks: a file that fails says why, after "zones file: "; one that
 * parses passes osp_zones_cfg_check and has names, points, inertia and
 * filters within their bounds; then a few frames of detections cut from
 * the same bytes go through a tracker and the zones, and each object's
 * zones are zones of the file (current ones among those entered, each
 * entered once) and each crossing names a line, a way and a listed
 * track. Deterministic. See README.md.
 *
 * Input: the file's bytes, whole; its bytes also place the detections.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "track/track.h"
#include "track/zones.h"
#include "check.h"

static const char *const LABELS[] = {"person", "car", "dog"};

static void check_cfg(const osp_zones_cfg_t *cfg) {
    char err[256] = "";
    CHECK(osp_zones_cfg_check(cfg, err, sizeof err) == 0);
    CHECK(cfg->n_zones >= 0 && cfg->n_zones <= OSP_ZONES_MAX);
    CHECK(cfg->n_lines >= 0 && cfg->n_lines <= OSP_ZONES_MAX);
    for (int i = 0; i < cfg->n_zones; i++) {
        const osp_zone_def_t *z = &cfg->zones[i];
        CHECK(z->name[0] && strlen(z->name) < OSP_ZONES_NAME_MAX);
        CHECK(z->n_pts >= 3 && z->n_pts <= OSP_ZONES_MAX_POINTS);
        for (int k = 0; k < z->n_pts; k++)
            CHECK(z->pts[k].x >= 0 && z->pts[k].x <= 1 && z->pts[k].y >= 0 && z->pts[k].y <= 1);
        CHECK(z->inertia >= 1 && z->inertia <= 1000);
        CHECK(z->loitering_time >= 0);
        CHECK(z->n_objects >= 0 && z->n_objects <= OSP_ZONES_MAX_OBJECTS);
    }
    for (int i = 0; i < cfg->n_lines; i++) {
        const osp_line_def_t *l = &cfg->lines[i];
        CHECK(l->name[0] && strlen(l->name) < OSP_ZONES_NAME_MAX);
        CHECK(l->a.x != l->b.x || l->a.y != l->b.y);
    }
}

/* Eight frames, up to four detections each, placed by the input's bytes. */
static void run(const osp_zones_cfg_t *cfg, const uint8_t *d, size_t n) {
    char err[256] = "";
    osp_zones_t *z = NULL;
    osp_tracker_t *t = NULL;
    osp_track_params_t p;
    osp_track_params_default(&p);
    p.confirm_hits = 1;
    CHECK(osp_zones_new(cfg, &z, err, sizeof err) == 0);
    CHECK(osp_track_new(&p, &t, err, sizeof err) == 0);
    size_t at = 0;
    for (int f = 0; f < 8; f++) {
        osp_track_det_t det[4];
        int nd = 0;
        for (; nd < 4 && n >= 5; nd++) {
            const uint8_t *b = d + at % (n - 4);
            at += 5;
            float x = b[0] * 2.5f, y = b[1] * 1.9f, w = 8 + b[2] % 64, h = 8 + b[3] % 96;
            det[nd] = (osp_track_det_t){.box = {x, y, x + w, y + h},
                                        .score = 0.5f + (b[4] % 50) / 100.0f,
                                        .label = b[4] % 4}; /* 3: a label with no name */
        }
        CHECK(osp_track_update(t, det, nd, f * 0.5, err, sizeof err) == 0);
        CHECK(osp_zones_update(z, t, 640, 480, LABELS, 3, err, sizeof err) == 0);
        uint32_t all = cfg->n_zones == 32 ? 0xffffffffu : (1u << cfg->n_zones) - 1;
        for (int i = 0; i < osp_track_count(t); i++) {
            const osp_track_t *tr = osp_track_at(t, i);
            const osp_zones_obj_t *o = osp_zones_obj(z, tr->id);
            CHECK(o && o->id == tr->id);
            CHECK((o->current & ~all) == 0 && (o->loitering & ~o->current) == 0);
            CHECK(o->n_entered >= 0 && o->n_entered <= cfg->n_zones);
            uint32_t entered = 0;
            for (int k = 0; k < o->n_entered; k++) {
                CHECK(o->entered[k] < cfg->n_zones && !(entered & (1u << o->entered[k])));
                entered |= 1u << o->entered[k];
            }
            CHECK((o->current & ~entered) == 0);
        }
        const osp_zones_cross_t *c;
        int nc = osp_zones_crossings(z, &c);
        for (int i = 0; i < nc; i++) {
            CHECK(c[i].line >= 0 && c[i].line < cfg->n_lines);
            CHECK(c[i].dir == OSP_ZONES_IN || c[i].dir == OSP_ZONES_OUT);
            CHECK(osp_track_find(t, c[i].id) != NULL);
        }
    }
    osp_track_free(t);
    osp_zones_free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a copy the exact size of the bytes, so the sanitizer sees any overread */
    char *s = malloc(size ? size : 1);
    CHECK(s);
    if (size) memcpy(s, data, size);
    static osp_zones_cfg_t cfg;
    char err[256] = "";
    int rc = osp_zones_cfg_parse(s, size, &cfg, err, sizeof err);
    CHECK(rc == 0 || rc == OSP_ZONES_EINVAL || rc == OSP_ZONES_ENOMEM);
    if (rc) {
        CHECK(strncmp(err, "zones file: ", 12) == 0 && strlen(err) > 12);
    } else {
        check_cfg(&cfg);
        run(&cfg, data, size);
    }
    free(s);
    return 0;
}
