/* server/camboard: what the HTTP threads read of the cameras — their
 * counts and states, and their newest frame, copied only while looked at
 * and encoded at most once a frame. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "server/core/camboard.h"

typedef struct {
    int calls;
    int w, h, n;
    float x1;
    int zones;
} enc_t;

/* A stand-in encoder: the "JPEG" is the first pixel and the box count. */
static int fake_encode(void *ctx, osp_image_t *img, const srv_cam_box_t *boxes, int n,
                       const osp_zones_cfg_t *zones, uint8_t **jpg, size_t *len) {
    enc_t *e = ctx;
    e->calls++;
    e->w = img->width;
    e->h = img->height;
    e->n = n;
    e->x1 = n ? boxes[0].x1 : -1;
    e->zones = zones ? zones->n_zones : -1;
    *jpg = malloc(2);
    (*jpg)[0] = img->data[0];
    (*jpg)[1] = (uint8_t)n;
    *len = 2;
    return 0;
}

static osp_view_t frame(uint8_t *buf, uint8_t value) {
    memset(buf, value, 4 * 3 * 3);
    return (osp_view_t){buf, 4, 3, 12, OSP_PIX_RGB};
}

static void test_counts_and_states(void **state) {
    (void)state;
    srv_camboard_t *b = srv_camboard_new();
    srv_cam_pub_t *door = srv_camboard_add(b, "door", "ssd", 5, NULL);
    srv_cam_pub_t *yard = srv_camboard_add(b, "yard", "yolo", 2, NULL);
    assert_non_null(door);
    assert_non_null(yard);
    srv_camboard_entry_t e[4];
    assert_int_equal(srv_camboard_read(b, e, 4), 2);
    assert_string_equal(e[0].name, "door");
    assert_string_equal(e[1].model, "yolo");
    assert_int_equal(e[0].state, SRV_CAM_CONNECTING);
    assert_true(e[0].c.decode_ms < 0 && e[0].c.motion < 0);
    srv_camboard_state(door, SRV_CAM_UP);
    srv_cam_counts_t c = {.frames_in = 10,
                          .submitted = 5,
                          .detected = 4,
                          .shed = 1,
                          .events = 3,
                          .tracks_active = 2,
                          .decode_ms = 1.5,
                          .motion = -1};
    srv_camboard_counts(door, &c);
    assert_int_equal(srv_camboard_read(b, e, 4), 2);
    assert_int_equal(e[0].state, SRV_CAM_UP);
    assert_int_equal(e[0].c.detected, 4);
    assert_int_equal(e[0].c.tracks_active, 2);
    assert_string_equal(srv_cam_state_name(SRV_CAM_RECONNECTING), "reconnecting");
    assert_string_equal(srv_cam_state_name((srv_cam_state_t)99), "unknown");
    srv_camboard_remove(b, door);
    assert_int_equal(srv_camboard_read(b, e, 4), 1);
    assert_string_equal(e[0].name, "yard");
    srv_camboard_set_events(b, "/var/lib/osprey/events.db", NULL);
    char db[64], snaps[64];
    srv_camboard_events(b, db, sizeof db, snaps, sizeof snaps);
    assert_string_equal(db, "/var/lib/osprey/events.db");
    assert_string_equal(snaps, "");
    srv_camboard_remove(b, yard);
    srv_camboard_remove(b, NULL);
    srv_camboard_free(b);
}

static void test_frames_only_while_watched_and_encoded_once(void **state) {
    (void)state;
    srv_camboard_t *b = srv_camboard_new();
    osp_zones_cfg_t z = {.n_zones = 1};
    srv_cam_pub_t *p = srv_camboard_add(b, "door", "ssd", 5, &z);
    uint8_t buf[36];
    enc_t enc = {0};
    uint8_t *jpg = NULL;
    size_t len = 0;
    srv_cam_box_t box = {10, 20, 30, 40, 0.9f, "Person"};
    assert_int_equal(srv_camboard_jpeg(b, "nobody", 0, fake_encode, &enc, &jpg, &len),
                     SRV_CAMBOARD_UNKNOWN);
    /* a frame before anyone looked is not copied: the first look waits, and finds none */
    osp_view_t v = frame(buf, 7);
    srv_camboard_frame(p, &v, &box, 1, 100.0);
    assert_int_equal(srv_camboard_jpeg(b, "door", 10, fake_encode, &enc, &jpg, &len),
                     SRV_CAMBOARD_NO_FRAME);
    assert_null(jpg);
    assert_int_equal(enc.calls, 0);
    /* now watched: the next frame is copied, and encoded on the first look only */
    srv_camboard_frame(p, &v, &box, 1, 101.0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(srv_camboard_jpeg(b, "door", 0, fake_encode, &enc, &jpg, &len),
                         SRV_CAMBOARD_OK);
        assert_int_equal(len, 2);
        assert_int_equal(jpg[0], 7);
        assert_int_equal(jpg[1], 1);
        free(jpg);
    }
    assert_int_equal(enc.calls, 1);
    assert_int_equal(enc.w, 4);
    assert_int_equal(enc.h, 3);
    assert_true(enc.x1 == 10.0f);
    assert_int_equal(enc.zones, 1);
    v = frame(buf, 9);
    srv_camboard_frame(p, &v, NULL, 0, 102.0);
    assert_int_equal(srv_camboard_jpeg(b, "door", 0, fake_encode, &enc, &jpg, &len), SRV_CAMBOARD_OK);
    assert_int_equal(jpg[0], 9);
    assert_int_equal(jpg[1], 0);
    free(jpg);
    assert_int_equal(enc.calls, 2);
    srv_camboard_entry_t e;
    assert_int_equal(srv_camboard_read(b, &e, 1), 1);
    assert_true(e.frame_time == 102.0);
    srv_camboard_remove(b, p);
    srv_camboard_free(b);
}

typedef struct {
    srv_camboard_t *b;
    int rc;
    enc_t enc;
} reader_t;

static void *reader_main(void *arg) {
    reader_t *r = arg;
    uint8_t *jpg = NULL;
    size_t len = 0;
    r->rc = srv_camboard_jpeg(r->b, "door", 5000, fake_encode, &r->enc, &jpg, &len);
    free(jpg);
    return NULL;
}

/* A reader waiting for the first frame gets it as soon as it is published. */
static void test_a_waiting_reader_gets_the_next_frame(void **state) {
    (void)state;
    srv_camboard_t *b = srv_camboard_new();
    srv_cam_pub_t *p = srv_camboard_add(b, "door", "ssd", 5, NULL);
    reader_t r = {.b = b, .rc = 99};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, reader_main, &r), 0);
    uint8_t buf[36];
    osp_view_t v = frame(buf, 3);
    /* publish until the reader has marked the camera watched and taken a frame */
    for (int i = 0; i < 100; i++) {
        srv_camboard_frame(p, &v, NULL, 0, 1.0 + i);
        osp_sleep_ms(10);
    }
    pthread_join(t, NULL);
    assert_int_equal(r.enc.calls, 1);
    assert_int_equal(r.rc, SRV_CAMBOARD_OK);
    srv_camboard_remove(b, p);
    srv_camboard_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_states),
        cmocka_unit_test(test_frames_only_while_watched_and_encoded_once),
        cmocka_unit_test(test_a_waiting_reader_gets_the_next_frame),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
