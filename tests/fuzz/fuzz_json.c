/*
 * libFuzzer target for the JSON a peer sends: src/wire/pyjson.c (the
 * Python-compatible reader) through its three entries, osp_pyjson_parse,
 * osp_wire_command_parse and osp_wire_hello_parse (the startup config),
 * then what the server reads of a startup config after that: its thread
 * keys (osp_wire_hello_ext) and each of its models through
 * osp_model_cfg_from_json (src/model/config.c).
 * fuzz_wire.c reaches these too, but inside frames; here every input is
 * the JSON text itself, so the fuzzer spends its mutations on the reader.
 * Checks that the three agree (a command or config fails with the
 * reader's own text when the reader fails), that what osprey's own writer
 * (jsonw) makes of a tree reads back to the same text, and the config's
 * ranges, its models' included. Deterministic. See README.md.
 *
 * Input: the JSON bytes, whole.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "model_cfg.h"
#include "wire/cmdargs.h"
#include "wire/frame.h"
#include "wire/jsonw.h"
#include "wire/pyjson.h"
#include "check.h"

/* The tree as osprey's replies would write it (depth is bounded by the
 * reader's limit). */
static void write_tree(osp_jw_t *w, const cJSON *v) {
    if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        int obj = cJSON_IsObject(v);
        if (obj)
            osp_jw_obj_open(w);
        else
            osp_jw_arr_open(w);
        for (const cJSON *c = v->child; c; c = c->next) {
            if (obj) osp_jw_key(w, c->string);
            write_tree(w, c);
        }
        if (obj)
            osp_jw_obj_close(w);
        else
            osp_jw_arr_close(w);
    } else if (cJSON_IsString(v)) {
        osp_jw_str(w, v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        osp_jw_num(w, v->valuedouble, -1);
    } else if (cJSON_IsBool(v)) {
        osp_jw_bool(w, cJSON_IsTrue(v));
    } else {
        osp_jw_null(w);
    }
}

/* Written by jsonw, read by pyjson, written again: the same text. */
static void check_rewrite(const cJSON *j) {
    osp_jw_t a = {0}, b = {0};
    write_tree(&a, j);
    CHECK(!a.oom);
    cJSON *again = NULL;
    char err[OSP_WIRE_ERRLEN];
    CHECK(osp_pyjson_parse((const uint8_t *)a.buf, a.len, &again, err, sizeof err) == 0);
    write_tree(&b, again);
    CHECK(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0);
    cJSON_Delete(again);
    osp_jw_free(&a);
    osp_jw_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a copy the exact size of the bytes, so the sanitizer sees any overread */
    uint8_t *s = malloc(size ? size : 1);
    CHECK(s);
    if (size) memcpy(s, data, size);
    char err[OSP_WIRE_ERRLEN] = "", cerr[OSP_WIRE_ERRLEN] = "", herr[OSP_WIRE_ERRLEN] = "";

    cJSON *j = NULL, *c = NULL;
    int rc = osp_pyjson_parse(s, size, &j, err, sizeof err);
    CHECK(rc == 0 ? j != NULL : j == NULL && (rc == OSP_WIRE_EINVAL || rc == OSP_WIRE_ENOMEM));
    CHECK(rc == 0 || err[0]);
    int crc = osp_wire_command_parse(s, size, &c, cerr, sizeof cerr);
    CHECK(crc == 0 ? c != NULL : c == NULL && cerr[0]);
    if (rc) {
        CHECK(crc == rc && strcmp(err, cerr) == 0);
    } else {
        CHECK((crc == 0) == cJSON_IsObject(j));
        if (crc) CHECK(strcmp(cerr, "command must be a JSON object") == 0);
        check_rewrite(j);
    }
    cJSON_Delete(c);

    osp_wire_hello_t h;
    int hrc = osp_wire_hello_parse(OSP_WIRE_MSG_COMMAND, s, size, OSP_WIRE_VERSION, &h, herr,
                                   sizeof herr);
    if (rc) CHECK(hrc == rc && strcmp(err, herr) == 0);
    if (hrc == 0) {
        CHECK(rc == 0 && cJSON_IsObject(j) && h.root);
        CHECK(h.wire_version >= 1 && h.wire_version <= OSP_WIRE_VERSION);
        CHECK(h.device && h.window_ms >= 0 && h.max_batch_size >= 1);
        CHECK(h.model_load_timeout_ms > 0);
        CHECK(!h.models || cJSON_IsArray(h.models));
        CHECK(h.wire_version ==
              osp_wire_negotiate(cJSON_GetObjectItemCaseSensitive(h.root, "protocolVersion"),
                                 OSP_WIRE_VERSION));
        osp_wire_hello_ext_t x;
        osp_wire_hello_ext(&h, &x);
        CHECK(x.auto_concurrency == 0 || x.auto_concurrency == 1);
        CHECK(x.intra_op_threads >= -1 && x.intra_op_threads <= 256);
        CHECK(x.lone_frame_threads >= -1 && x.lone_frame_threads <= 256);
        CHECK(x.predict_nice >= -1 && x.predict_nice <= 256);
        const cJSON *mc;
        cJSON_ArrayForEach(mc, h.models) check_model_cfg(mc);
        osp_wire_hello_free(&h);
        CHECK(h.root == NULL);
    } else {
        CHECK(h.root == NULL && herr[0]);
    }
    cJSON_Delete(j);
    free(s);
    return 0;
}
