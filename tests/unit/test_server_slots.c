/* server/slots: which loaded model a peer's name picks, by the fleet's
 * rule and by Frigate's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/core/slots.h"

/* A model never opened (no runtime): a name and a file, enough to find. */
static void install(server_t *s, int idx, const char *name, const char *path) {
    osp_model_t *m = calloc(1, sizeof *m);
    assert_non_null(m);
    snprintf(m->cfg.name, sizeof m->cfg.name, "%s", name);
    snprintf(m->cfg.path, sizeof m->cfg.path, "%s", path);
    loaded_t *l = srv_loaded_new(m, &m->cfg);
    assert_non_null(l);
    srv_slot_install(s, idx, l);
}

static void test_find(void **state) {
    (void)state;
    server_t s = {.slots = srv_slots_new()};
    assert_non_null(s.slots);
    assert_int_equal(srv_slots_find(&s, "ssd-oidv4", SRV_FIND_FILE_STEM), -1);
    install(&s, 1, "ssd-oidv4-int8", "/cache/models/ssd-oidv4-int8-v2.onnx");
    install(&s, 3, "yolo", "/m/yolo.onnx");
    install(&s, 4, "yolo", "/m/yolo.onnx"); /* the lowest slot wins */
    static const struct {
        const char *name;
        int file_stem, name_stem; /* the slot each rule finds */
    } cases[] = {
        {"ssd-oidv4-int8", 1, 1},         /* its own name */
        {"ssd-oidv4-int8-v2.onnx", 1, 1}, /* its file's name */
        {"ssd-oidv4-int8-v2", 1, -1},     /* the file's stem: the fleet's */
        {"ssd-oidv4-int8.onnx", -1, 1},   /* its name with an extension: Frigate's */
        {"yolo.onnx", 3, 3},
        {"yolo.tflite", -1, 3},
        {"ssd-oidv4", -1, -1},
        {"/m/yolo.onnx", -1, -1}, /* a path is not a name */
        {"", -1, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(srv_slots_find(&s, cases[i].name, SRV_FIND_FILE_STEM), cases[i].file_stem);
        assert_int_equal(srv_slots_find(&s, cases[i].name, SRV_FIND_NAME_STEM), cases[i].name_stem);
    }
    srv_slot_clear(&s, 3);
    assert_int_equal(srv_slots_find(&s, "yolo", SRV_FIND_NAME_STEM), 4);
    srv_slots_free(s.slots);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
