/* server/board: what the HTTP threads read of the models, their states
 * and load events, as the I/O thread publishes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/board.h"
#include "server/core/slots.h"

/* A server with only the parts the board uses. */
static server_t *mini_server(void) {
    server_t *s = calloc(1, sizeof *s);
    assert_non_null(s);
    s->board = srv_board_new();
    s->slots = srv_slots_new();
    assert_true(s->board && s->slots);
    return s;
}

static void mini_free(server_t *s) {
    srv_slots_free(s->slots);
    srv_board_free(s->board);
    free(s);
}

/* A model that was never opened (no runtime), enough for a slot. */
static loaded_t *fake_model(const char *name, int w, int h) {
    osp_model_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    snprintf(m->cfg.name, sizeof m->cfg.name, "%s", name);
    snprintf(m->cfg.path, sizeof m->cfg.path, "/models/%s.onnx", name);
    snprintf(m->cfg.postprocessor, sizeof m->cfg.postprocessor, "ssd");
    m->prep.width = w;
    m->prep.height = h;
    m->prep.channels = 3;
    m->prep.layout = OSP_LAYOUT_NHWC;
    m->prep.elem = OSP_ELEM_U8;
    loaded_t *l = srv_loaded_new(m, &m->cfg);
    assert_non_null(l);
    return l;
}

static void test_states_and_events(void **state) {
    (void)state;
    server_t *s = mini_server();
    srv_board_entry_t e[OSP_MAX_SLOTS];
    srv_board_event_t ev[SRV_BOARD_EVENTS];
    assert_false(srv_board_is_configured(s->board));
    assert_int_equal(srv_board_read(s->board, e, OSP_MAX_SLOTS), 0);

    osp_model_cfg_t cfg = {0};
    snprintf(cfg.name, sizeof cfg.name, "det");
    snprintf(cfg.path, sizeof cfg.path, "/models/det.onnx");
    srv_board_loading(s, 3, &cfg);
    srv_board_configured(s);
    assert_true(srv_board_is_configured(s->board));
    assert_int_equal(srv_board_read(s->board, e, OSP_MAX_SLOTS), 1);
    assert_int_equal(e[0].index, 3);
    assert_int_equal(e[0].state, SRV_MODEL_LOADING);
    assert_string_equal(e[0].name, "det");

    srv_slot_install(s, 3, fake_model("det", 300, 300));
    srv_board_sync(s, 3, 41.5);
    assert_int_equal(srv_board_read(s->board, e, OSP_MAX_SLOTS), 1);
    assert_int_equal(e[0].state, SRV_MODEL_LOADED);
    assert_string_equal(e[0].input, "300x300x3 nhwc uint8");
    assert_string_equal(e[0].file, "/models/det.onnx");
    assert_true(e[0].load_ms > 41 && e[0].load_ms < 42);

    /* a replace that fails leaves the old model loaded, with the reason */
    srv_board_loading(s, 3, &cfg);
    srv_board_failed(s, 3, "det", "bad weights");
    srv_board_read(s->board, e, OSP_MAX_SLOTS);
    assert_int_equal(e[0].state, SRV_MODEL_LOADED);
    assert_string_equal(e[0].error, "bad weights");

    /* an empty slot whose load fails, then is poisoned */
    srv_board_failed(s, 7, "", "no such file");
    srv_board_poisoned(s, 8, "slow", 1000);
    assert_int_equal(srv_board_read(s->board, e, OSP_MAX_SLOTS), 3);
    assert_int_equal(e[1].state, SRV_MODEL_FAILED);
    assert_string_equal(e[1].name, "model-7");
    assert_int_equal(e[2].state, SRV_MODEL_POISONED);

    srv_slot_clear(s, 3);
    srv_board_sync(s, 3, -1);
    assert_int_equal(srv_board_read(s->board, e, OSP_MAX_SLOTS), 2);

    int n = srv_board_events(s->board, 0, ev, SRV_BOARD_EVENTS);
    const srv_model_state_t want[] = {SRV_MODEL_LOADING, SRV_MODEL_LOADED, SRV_MODEL_LOADING,
                                      SRV_MODEL_FAILED,  SRV_MODEL_FAILED, SRV_MODEL_POISONED,
                                      SRV_MODEL_EMPTY};
    assert_int_equal(n, 7);
    for (int i = 0; i < n; i++) {
        assert_int_equal(ev[i].seq, (uint64_t)i + 1);
        assert_int_equal(ev[i].state, want[i]);
    }
    assert_string_equal(ev[1].detail, "loaded in 42 ms");
    assert_int_equal(srv_board_events(s->board, 5, ev, SRV_BOARD_EVENTS), 2);
    assert_int_equal(ev[0].seq, 6);
    assert_int_equal(srv_board_events(s->board, 7, ev, SRV_BOARD_EVENTS), 0);
    mini_free(s);
}

static void test_event_ring_keeps_the_last(void **state) {
    (void)state;
    server_t *s = mini_server();
    srv_board_event_t ev[SRV_BOARD_EVENTS];
    for (int i = 0; i < 100; i++) srv_board_failed(s, i % 4, "m", "again");
    int n = srv_board_events(s->board, 0, ev, SRV_BOARD_EVENTS);
    assert_int_equal(n, SRV_BOARD_EVENTS);
    assert_int_equal(ev[0].seq, 100 - SRV_BOARD_EVENTS + 1);
    assert_int_equal(ev[n - 1].seq, 100);
    assert_int_equal(srv_board_events(s->board, 98, ev, 1), 1);
    assert_int_equal(ev[0].seq, 99);
    mini_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states_and_events),
        cmocka_unit_test(test_event_ring_keeps_the_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
