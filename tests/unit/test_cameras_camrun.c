/* A camera's frames through its model (src/server/cameras/camrun.c),
 * against a core made alone with a model of the test backend: the
 * camera's thread waits in srv_camrun_frame while the test does the I/O
 * thread's part. A frame is answered once, served with its detections in
 * the frame's pixels (not the model's input), and a frame's detections
 * are its own (none left from the frame before); a run whose model is not
 * served, or posted once the camera stops, is refused; every run is
 * counted. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "server/cameras/camrun.h"
#include "tmpdir.h"
#include "core_harness.h"

#define WAIT_MS 20000

/* The camera's thread: one frame through r. */
typedef struct {
    srv_camrun_t *r;
    const osp_image_t *frame;
    srv_outcome_t out;
    srv_camrun_found_t found;
    atomic_bool done;
} cam_t;

static void *cam_main(void *arg) {
    cam_t *c = arg;
    c->out = srv_camrun_frame(c->r, c->frame, NULL, NULL, 1.0, &c->found);
    atomic_store(&c->done, 1);
    return NULL;
}

/* frame through r on a thread of its own, the test pumping meanwhile. */
static cam_t run(server_t *s, srv_camrun_t *r, const osp_image_t *frame) {
    cam_t c = {.r = r, .frame = frame};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, cam_main, &c), 0);
    for (int i = 0; i < WAIT_MS && !atomic_load(&c.done); i++) {
        pump(s);
        sleep_ms(1);
    }
    assert_true(atomic_load(&c.done));
    pthread_join(t, NULL);
    return c;
}

static srv_camrun_t *camrun(server_t *s, int idx, const atomic_bool *stop) {
    srv_camrun_t *r = NULL;
    char why[256];
    assert_int_equal(srv_camrun_new(s, idx, 5, stop, SRV_REGIONS_OFF, 32, &r, why, sizeof why), 0);
    assert_non_null(r);
    return r;
}

static void test_a_frame_is_served_with_its_detections_in_frame_pixels(void **state) {
    (void)state;
    server_t *s = core_new(1);
    put_model(s, 0, "face.json", NULL, 0);
    atomic_bool stop = 0;
    srv_camrun_t *r = camrun(s, 0, &stop);
    osp_image_t frame = {0};
    assert_int_equal(osp_image_reserve(&frame, 96, 96, OSP_PIX_RGB), OSP_IMG_OK);
    memset(frame.data, 128, (size_t)frame.stride * 96);
    for (int k = 0; k < 2; k++) { /* the second frame's are its own */
        cam_t c = run(s, r, &frame);
        assert_int_equal(c.out.fate, SRV_SERVED);
        assert_int_equal(c.found.n, 1);
        assert_int_equal(c.found.frame_w, 96);
        assert_int_equal(c.found.frame_h, 96);
        assert_false(c.found.cascade);
        const srv_cam_det_t *d = &c.found.dets[0];
        /* the input's top left quarter (16x16 of 32x32), in the frame's
         * pixels: a square frame fills the input without bars */
        assert_true(d->box.x1 < 0.5f && d->box.y1 < 0.5f);
        assert_true(d->box.x2 > 47.5f && d->box.x2 < 48.5f && d->box.y2 > 47.5f && d->box.y2 < 48.5f);
        assert_true(d->score > 0.89f && d->score < 0.91f);
        assert_false(d->has_region);
        assert_int_equal(d->run, 0);
    }
    int64_t runs, region_runs;
    srv_camrun_counts(r, &runs, &region_runs);
    assert_int_equal(runs, 2);
    assert_int_equal(region_runs, 0);
    srv_camrun_free(r);
    osp_image_free(&frame);
    srv_core_free(s);
}

static void test_a_run_without_its_model_or_once_stopping_is_refused(void **state) {
    (void)state;
    server_t *s = core_new(1);
    put_model(s, 0, "face.json", NULL, 0);
    osp_image_t frame = {0};
    assert_int_equal(osp_image_reserve(&frame, 32, 32, OSP_PIX_RGB), OSP_IMG_OK);
    memset(frame.data, 0, (size_t)frame.stride * 32);
    atomic_bool stop = 0;
    srv_camrun_t *none = camrun(s, 7, &stop); /* nothing is served at 7 */
    cam_t c = run(s, none, &frame);
    assert_int_equal(c.out.fate, SRV_FAILED);
    assert_int_equal(c.out.fail, SRV_FAIL_NOT_LOADED);
    srv_camrun_t *r = camrun(s, 0, &stop);
    atomic_store(&stop, 1);
    c = run(s, r, &frame);
    assert_int_equal(c.out.fate, SRV_FAILED);
    int64_t runs, region_runs;
    srv_camrun_counts(r, &runs, &region_runs);
    assert_int_equal(runs, 1);
    srv_camrun_free(none);
    srv_camrun_free(r);
    osp_image_free(&frame);
    srv_core_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_frame_is_served_with_its_detections_in_frame_pixels),
        cmocka_unit_test(test_a_run_without_its_model_or_once_stopping_is_refused),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
