/* The scene boundary scorer (src/segment/scene.c) on synthetic frames: the
 * first frame and a repeated frame score 0, a cut to a different picture
 * scores 1, a small moving object stays far below the 0.8 threshold, a
 * reset forgets the previous frame, and a non-RGB frame is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "segment/scene.h"

#define W 320
#define H 240

static uint8_t px[H][W][3];

static osp_view_t view(void) {
    return (osp_view_t){.data = &px[0][0][0], .width = W, .height = H, .stride = W * 3, .fmt = OSP_PIX_RGB};
}

/* A horizontal gradient of one hue, with a bright 16x16 square at (x, y). */
static void paint(int r, int g, int b, int x, int y) {
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            px[j][i][0] = (uint8_t)(r * i / W);
            px[j][i][1] = (uint8_t)(g * i / W);
            px[j][i][2] = (uint8_t)(b * i / W);
        }
    for (int j = y; j < y + 16 && j < H; j++)
        for (int i = x; i < x + 16 && i < W; i++) memset(px[j][i], 250, 3);
}

static void test_scores(void **state) {
    (void)state;
    osp_scene_t *s;
    assert_int_equal(osp_scene_create(&s), 0);
    osp_view_t v = view();
    paint(255, 128, 0, 10, 10);
    assert_true(osp_scene_score(s, &v) == 0.0f);
    assert_true(osp_scene_score(s, &v) == 0.0f);
    /* The square walks: a person crossing a static scene. */
    for (int k = 1; k < 20; k++) {
        paint(255, 128, 0, 10 + 8 * k, 10 + 4 * k);
        float sc = osp_scene_score(s, &v);
        assert_true(sc >= 0.0f && sc < 0.3f);
    }
    /* A cut: another picture altogether. */
    paint(0, 60, 255, 200, 200);
    assert_true(osp_scene_score(s, &v) >= 0.99f);
    float h, l;
    osp_scene_last_distances(s, &h, &l);
    assert_true(h > 0.5f && l > 0.05f);
    osp_scene_reset(s);
    paint(255, 128, 0, 10, 10);
    assert_true(osp_scene_score(s, &v) == 0.0f);
    v.fmt = OSP_PIX_GRAY;
    assert_true(osp_scene_score(s, &v) < 0.0f);
    osp_scene_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
