/*
 * The connection reader and dispatch, in process (srv_harness.h): a frame
 * fed in arbitrary splits in every read mode (staging, prepared as read,
 * read whole, parked), exactly one answer per request, the deadline gate
 * before anything runs, window batching. The model is the test backend
 * (a test double: docs/test-backend.md).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "srv_harness.h"

#define REPLY_CAP (1 << 16)

typedef struct {
    harness_t h;
    char reply[REPLY_CAP];
    char cfg[512];
} fix_t;

/* The server up with one test-backend model (extra: more script keys,
 * hello_extra: more startup-config keys). */
static fix_t *start(const char *extra, const char *hello_extra) {
    fix_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(harness_start(&f->h), 0);
    harness_model(&f->h, "face.json", 32, extra, f->cfg, sizeof f->cfg);
    char hello[1024];
    snprintf(hello, sizeof hello,
             "{\"runtime\": \"test\", \"concurrency\": 1, \"protocolVersion\": 2, \"models\": [%s]%s}",
             f->cfg, hello_extra ? hello_extra : "");
    assert_int_equal(harness_command(&f->h, 1, hello), 0);
    uint32_t id = 0;
    assert_int_equal(harness_reply(&f->h, &id, f->reply, REPLY_CAP, 10000), 1);
    assert_int_equal(id, 1);
    assert_non_null(strstr(f->reply, "\"status\": \"ready\""));
    assert_non_null(strstr(f->reply, "\"models\": 1"));
    return f;
}

static void stop(fix_t *f) {
    assert_int_equal(harness_stop(&f->h), 0);
    free(f);
}

/* The next reply, which must be for req_id. */
static const char *reply_for(fix_t *f, uint32_t req_id) {
    uint32_t id = 0;
    assert_int_equal(harness_reply(&f->h, &id, f->reply, REPLY_CAP, 10000), 1);
    assert_int_equal(id, req_id);
    return f->reply;
}

/* A counter of mem_stats, read with a command of request id req_id. */
static long counter(fix_t *f, uint32_t req_id, const char *name) {
    assert_int_equal(harness_command(&f->h, req_id, "{\"cmd\": \"mem_stats\"}"), 0);
    const char *r = reply_for(f, req_id);
    char key[64];
    snprintf(key, sizeof key, "\"%s\": ", name);
    const char *at = strstr(r, key);
    assert_non_null(at);
    return strtol(at + strlen(key), NULL, 10);
}

static void send_raw(fix_t *f, uint32_t req_id, uint64_t deadline, uint32_t w, uint32_t h,
                     uint8_t fmt, size_t split) {
    size_t len = 0;
    uint8_t *frame = harness_raw(req_id, 1, deadline, 0, w, h, fmt, &len);
    assert_non_null(frame);
    assert_int_equal(harness_write(&f->h, frame, len, split), 0);
    free(frame);
}

static void assert_face(const char *r) {
    assert_non_null(strstr(r, "\"kind\": \"detections\""));
    assert_non_null(strstr(r, "\"score\": 0.9"));
}

static void test_small_frame_one_byte_at_a_time(void **state) {
    (void)state;
    fix_t *f = start(NULL, NULL);
    send_raw(f, 7, 0, 32, 32, 0, 1); /* staging buffer, every byte its own read */
    assert_face(reply_for(f, 7));
    assert_int_equal(counter(f, 8, "framesPreparedAsRead"), 0);
    stop(f);
}

static void test_rows_mode_in_odd_pieces(void **state) {
    (void)state;
    fix_t *f = start(NULL, NULL);
    send_raw(f, 7, 0, 160, 160, 0, 7777); /* 76.8 kB RGB: prepared as it is read */
    assert_face(reply_for(f, 7));
    send_raw(f, 9, 0, 160, 160, 1, 4096); /* BGR, page-sized pieces */
    assert_face(reply_for(f, 9));
    assert_int_equal(counter(f, 8, "framesPreparedAsRead"), 2);
    stop(f);
}

static void test_big_mode_in_pieces(void **state) {
    (void)state;
    fix_t *f = start(NULL, NULL);
    send_raw(f, 7, 0, 600, 600, 2, 50000); /* 360 kB GRAY: read whole into its own buffer */
    assert_face(reply_for(f, 7));
    assert_int_equal(counter(f, 8, "framesPreparedAsRead"), 0);
    assert_int_equal(counter(f, 9, "inferRaw"), 1);
    stop(f);
}

/* Under overload large raw frames are parked in pipes: every one is
 * answered exactly once, served or shed from the full queue. */
static void test_parked_frames_each_answered_once(void **state) {
    (void)state;
    fix_t *f = start(",\"run_delay_ms\": 150", NULL);
    enum { N = 8 };
    for (uint32_t i = 0; i < N; i++) send_raw(f, 100 + i, 0, 640, 480, 0, 0);
    int seen[N] = {0}, served = 0, shed = 0;
    for (int i = 0; i < N; i++) {
        uint32_t id = 0;
        assert_int_equal(harness_reply(&f->h, &id, f->reply, REPLY_CAP, 20000), 1);
        assert_true(id >= 100 && id < 100 + N);
        seen[id - 100]++;
        if (strstr(f->reply, "\"shedReason\": \"queue-full\""))
            shed++;
        else {
            assert_face(f->reply);
            served++;
        }
    }
    for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
    assert_true(shed >= 1);
    assert_true(served >= 2);
    assert_true(counter(f, 8, "framesParked") >= 1);
    assert_int_equal(counter(f, 9, "shedQueueFull"), shed);
    stop(f);
}

/* A frame past its deadline is answered dropped and never runs. */
static void test_deadline_gate_runs_nothing(void **state) {
    (void)state;
    char path[128], extra[200];
    snprintf(path, sizeof path, "/tmp/osp-gate-%d.count", (int)getpid());
    snprintf(extra, sizeof extra, ",\"counter_file\": \"%s\"", path);
    unlink(path);
    fix_t *f = start(extra, NULL);
    send_raw(f, 7, 1, 32, 32, 0, 0); /* 1 ms after the epoch */
    const char *r = reply_for(f, 7);
    assert_non_null(strstr(r, "\"dropped\": true"));
    assert_non_null(strstr(r, "\"shedReason\": \"deadline-expired\""));
    send_raw(f, 8, 1, 160, 160, 0, 0); /* one that would be prepared as read */
    assert_non_null(strstr(reply_for(f, 8), "\"shedReason\": \"deadline-expired\""));
    assert_int_equal(counter(f, 9, "shedDeadlineExpired"), 2);
    struct stat st;
    assert_true(stat(path, &st) != 0 || st.st_size == 0); /* the model never ran */
    send_raw(f, 10, 0, 32, 32, 0, 0); /* and one that runs: the counter works */
    assert_face(reply_for(f, 10));
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 0);
    unlink(path);
    stop(f);
}

/* Requests of every kind, interleaved: one reply each, in any order for
 * frames, none lost, none twice. */
static void test_every_request_answered_exactly_once(void **state) {
    (void)state;
    fix_t *f = start(NULL, NULL);
    enum { N = 60 };
    for (uint32_t i = 0; i < N; i++) {
        uint32_t id = 1000 + i;
        if (i % 3 == 0) {
            send_raw(f, id, 0, 32, 32, 0, i % 2 ? 5 : 0);
        } else if (i % 3 == 1) {
            assert_int_equal(harness_command(&f->h, id, "{\"cmd\": \"status\"}"), 0);
        } else {
            uint8_t bad[32];
            size_t n = harness_frame(bad, id, 2, 1, 0, "\x00\x01", 2); /* truncated raw header */
            assert_int_equal(harness_write(&f->h, bad, n, 0), 0);
        }
    }
    int seen[N] = {0};
    for (int i = 0; i < N; i++) {
        uint32_t id = 0;
        assert_int_equal(harness_reply(&f->h, &id, f->reply, REPLY_CAP, 10000), 1);
        assert_true(id >= 1000 && id < 1000 + N);
        seen[id - 1000]++;
        if ((id - 1000) % 3 == 2) assert_non_null(strstr(f->reply, "truncated infer_raw header"));
    }
    for (int i = 0; i < N; i++) assert_int_equal(seen[i], 1);
    assert_int_equal(counter(f, 9, "errors"), N / 3);
    stop(f);
}

/* batch_mode window: frames that arrive together run as one batch. */
static void test_window_runs_frames_together(void **state) {
    (void)state;
    fix_t *f = start(NULL, ", \"batch_mode\": \"window\", \"window_ms\": 200, \"max_batch_size\": 3");
    for (uint32_t i = 0; i < 3; i++) send_raw(f, 20 + i, 0, 32, 32, 0, 0);
    for (int i = 0; i < 3; i++) {
        uint32_t id = 0;
        assert_int_equal(harness_reply(&f->h, &id, f->reply, REPLY_CAP, 10000), 1);
        assert_true(id >= 20 && id < 23);
        assert_non_null(strstr(f->reply, "\"batchSize\": 3"));
    }
    send_raw(f, 30, 0, 32, 32, 0, 0); /* alone: flushed when its window ends */
    assert_non_null(strstr(reply_for(f, 30), "\"batchSize\": 1"));
    stop(f);
}

/* A frame over the cap: answered, and the stream ends (exit status 1). */
static void test_too_large_closes(void **state) {
    (void)state;
    fix_t *f = start(NULL, NULL);
    uint8_t hdr[9];
    put32(hdr, 0x7FFFFFF0u);
    put32(hdr + 4, 5);
    hdr[8] = 2;
    assert_int_equal(harness_write(&f->h, hdr, sizeof hdr, 0), 0);
    assert_non_null(strstr(reply_for(f, 5), "frame too large"));
    uint32_t id;
    assert_int_equal(harness_reply(&f->h, &id, f->reply, REPLY_CAP, 10000), 0); /* EOF */
    assert_int_equal(harness_stop(&f->h), 1);
    free(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_frame_one_byte_at_a_time),
        cmocka_unit_test(test_rows_mode_in_odd_pieces),
        cmocka_unit_test(test_big_mode_in_pieces),
        cmocka_unit_test(test_parked_frames_each_answered_once),
        cmocka_unit_test(test_deadline_gate_runs_nothing),
        cmocka_unit_test(test_every_request_answered_exactly_once),
        cmocka_unit_test(test_window_runs_frames_together),
        cmocka_unit_test(test_too_large_closes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
