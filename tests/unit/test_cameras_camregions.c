/* A camera's frame as regions (src/server/cameras/camregions.c): the
 * rule of "auto" (a frame's shorter side against 3 x the model's), the
 * first frame run whole and as the crops that cover it, the next as crops
 * around what moved and what is tracked, a crop's view into the frame's
 * pixels, its detections moved into the frame's pixels (none a crop's
 * when found in the frame whole) and marked cut at the crop's inner
 * sides, and
 * the merge of a frame's runs (one object seen by two crops kept once, a
 * cut box giving way to a whole one, two people side by side kept). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/cameras/camregions.h"

static srv_camregions_t *make(int side) {
    char err[256];
    srv_camregions_t *r = NULL;
    assert_int_equal(srv_camregions_new(side, &r, err, sizeof err), 0);
    assert_non_null(r);
    return r;
}

static void test_auto_rule(void **state) {
    (void)state;
    srv_camregions_t *r = make(300);
    osp_image_t vtest = {.width = 768, .height = 576, .fmt = OSP_PIX_RGB};
    osp_image_t hd = {.width = 1920, .height = 1080, .fmt = OSP_PIX_BGR};
    osp_image_t nv12 = {.width = 1920, .height = 1080, .fmt = OSP_PIX_NV12};
    assert_false(srv_camregions_wanted(r, SRV_REGIONS_AUTO, &vtest)); /* 576 < 900 */
    assert_true(srv_camregions_wanted(r, SRV_REGIONS_AUTO, &hd));     /* 1080 >= 900 */
    assert_true(srv_camregions_wanted(r, SRV_REGIONS_ON, &vtest));
    assert_false(srv_camregions_wanted(r, SRV_REGIONS_OFF, &hd));
    assert_false(srv_camregions_wanted(r, SRV_REGIONS_ON, &nv12)); /* a crop is not a view */
    assert_false(srv_camregions_wanted(NULL, SRV_REGIONS_ON, &hd));
    srv_camregions_free(r);
}

static void test_plan_whole_then_crops(void **state) {
    (void)state;
    srv_camregions_t *r = make(300);
    static uint8_t px[1920 * 1080 * 3];
    osp_image_t f = {.data = px, .width = 1920, .height = 1080, .stride = 1920 * 3, .fmt = OSP_PIX_RGB};
    osp_motion_box_t m[1] = {{1000, 500, 1030, 590, 20}};
    int whole = 0;
    /* the first frame whole, then the 8 crops of 600 that cover it */
    assert_int_equal(srv_camregions_plan(r, &f, m, 1, NULL, 0.0, &whole), 9);
    assert_true(whole);
    const osp_region_t *g = srv_camregions_at(r, 0);
    assert_int_equal(g->w, 1920);
    assert_int_equal(g->from, 0);
    for (int i = 1; i < 9; i++) {
        g = srv_camregions_at(r, i);
        assert_int_equal(g->w, 600);
        assert_int_equal(g->h, 600);
        assert_int_equal(g->from, OSP_REGION_COVER);
    }
    /* a detection of the frame whole carries no crop; one of a cover's crop does */
    osp_det_t d = {.x1 = 10, .y1 = 10, .x2 = 40, .y2 = 100, .score = 0.9f};
    srv_cam_det_t o;
    srv_camregions_to_frame(r, 0, 1920, 1080, &d, &o);
    assert_false(o.has_region);
    srv_camregions_to_frame(r, 8, 1920, 1080, &d, &o);
    assert_true(o.has_region);
    assert_float_equal(o.box.x1, 1330, 1e-3);
    assert_float_equal(o.box.y1, 490, 1e-3);
    srv_camregions_full_done(r, 0.0);
    assert_int_equal(srv_camregions_plan(r, &f, m, 1, NULL, 0.5, &whole), 1);
    assert_false(whole);
    g = srv_camregions_at(r, 0);
    assert_int_equal(g->w, 300); /* the model's side: 2 x 90 is less */
    assert_true(g->x <= 1000 && g->x + g->w >= 1030 && g->y <= 500 && g->y + g->h >= 590);
    osp_view_t v = srv_camregions_view(&f, g);
    assert_ptr_equal(v.data, px + (size_t)g->y * f.stride + (size_t)g->x * 3);
    assert_int_equal(v.stride, f.stride);
    assert_int_equal(v.width, 300);
    /* nothing moved, nothing tracked: the frame whole, as the gate sent it */
    assert_int_equal(srv_camregions_plan(r, &f, NULL, 0, NULL, 1.0, &whole), 1);
    assert_true(whole);
    /* 5 s on: a whole-frame pass whatever moved */
    assert_int_equal(srv_camregions_plan(r, &f, m, 1, NULL, 5.0, &whole), 9);
    assert_true(whole);
    srv_camregions_full_done(r, 5.0);
    /* a frame no larger than a crop of the cover: its pass is the frame alone */
    osp_image_t small = {.data = px, .width = 600, .height = 400, .stride = 600 * 3, .fmt = OSP_PIX_RGB};
    srv_camregions_t *q = make(300);
    assert_int_equal(srv_camregions_plan(q, &small, m, 1, NULL, 0.0, &whole), 1);
    assert_true(whole);
    srv_camregions_free(q);
    srv_camregions_free(r);
}

static void test_to_frame(void **state) {
    (void)state;
    srv_camregions_t *r = make(300);
    static uint8_t px[1920 * 1080 * 3];
    osp_image_t f = {.data = px, .width = 1920, .height = 1080, .stride = 1920 * 3, .fmt = OSP_PIX_RGB};
    osp_motion_box_t m[1] = {{1000, 500, 1030, 590, 20}};
    int whole;
    srv_camregions_plan(r, &f, m, 1, NULL, 0.0, &whole);
    srv_camregions_full_done(r, 0.0);
    srv_camregions_plan(r, &f, m, 1, NULL, 0.5, &whole);
    const osp_region_t *g = srv_camregions_at(r, 0);
    srv_cam_det_t o;
    osp_det_t d = {.x1 = 100, .y1 = 50, .x2 = 140, .y2 = 150, .score = 0.8f};
    srv_camregions_to_frame(r, 0, 1920, 1080, &d, &o);
    assert_float_equal(o.box.x1, g->x + 100, 1e-3);
    assert_float_equal(o.box.y2, g->y + 150, 1e-3);
    assert_float_equal(o.score, 0.8f, 1e-6);
    assert_true(o.has_region);
    assert_float_equal(o.region.x2, g->x + g->w, 1e-3);
    assert_false(o.cut);
    d.x1 = 0; /* on the crop's left side, inside the frame */
    srv_camregions_to_frame(r, 0, 1920, 1080, &d, &o);
    assert_true(o.cut);
    srv_camregions_free(r);
}

static srv_cam_det_t det(float x1, float y1, float x2, float y2, float score, const char *label,
                         int run, int cut) {
    srv_cam_det_t d = {.box = {x1, y1, x2, y2}, .score = score, .run = run, .cut = cut};
    strcpy(d.label, label);
    return d;
}

static void test_merge(void **state) {
    (void)state;
    srv_cam_det_t d[6] = {
        det(100, 100, 140, 200, 0.6f, "Person", 0, 0), /* seen by two crops */
        det(101, 102, 141, 201, 0.7f, "Person", 1, 0),
        det(300, 100, 320, 200, 0.5f, "Person", 0, 1), /* cut by crop 0: its left part */
        det(300, 100, 340, 200, 0.4f, "Person", 1, 0), /* crop 1 saw it whole */
        det(145, 100, 185, 200, 0.5f, "Person", 0, 0), /* beside the first */
        det(100, 100, 140, 200, 0.5f, "Car", 0, 0),    /* another label at the first's place */
    };
    int n = srv_camregions_merge(d, 6, SRV_REGIONS_MERGE_IOU, SRV_REGIONS_MERGE_CONTAIN);
    assert_int_equal(n, 4);
    assert_float_equal(d[0].score, 0.7f, 1e-6); /* the best first */
    int whole_one = 0, cars = 0, beside = 0;
    for (int i = 0; i < n; i++) {
        whole_one += d[i].box.x1 == 300 && d[i].box.x2 == 340;
        cars += strcmp(d[i].label, "Car") == 0;
        beside += d[i].box.x1 == 145;
        assert_false(d[i].cut);
    }
    assert_int_equal(whole_one, 1);
    assert_int_equal(cars, 1);
    assert_int_equal(beside, 1);
    assert_int_equal(srv_camregions_merge(d, 0, 0.5f, 0.6f), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_rule),
        cmocka_unit_test(test_plan_whole_then_crops),
        cmocka_unit_test(test_to_frame),
        cmocka_unit_test(test_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
