/*
 * libFuzzer target for the arguments of the commands a peer sends, after
 * the JSON reader: src/wire/cmdargs.c (reconfigure's keys and values,
 * open_stream's config, register_shm, unregister_shm, a command's name and
 * index) and the model config of load
 * and replace (osp_model_cfg_from_json, src/model/config.c), each given
 * the command as osp_wire_command_parse made it, whatever its "cmd" says.
 * Checks that whatever passes is inside the bounds docs/security.md states
 * (a stream's ring, a name's length, a size a double can count), and that
 * whatever fails says why. Deterministic. See README.md.
 *
 * Input: the command's JSON text, whole.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model_cfg.h"
#include "wire/cmdargs.h"
#include "wire/frame.h"
#include "check.h"

static void check_name_index(const cJSON *cmd) {
    const char *name = osp_wire_cmd_name(cmd);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(cmd, "cmd");
    CHECK(name && strcmp(name, cJSON_IsString(c) ? c->valuestring : "unknown") == 0);
    int index = -7;
    if (osp_wire_cmd_index(cmd, 256, &index) == 0) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cmd, "index");
        CHECK(index >= 0 && index < 256 && v->valuedouble == (double)index);
    } else {
        CHECK(index == -7);
    }
}

/* Keys then values, as the server takes them: what passes both is in range. */
static void check_reconfigure(const cJSON *config) {
    char err[OSP_WIRE_ERRLEN + 400] = "";
    if (osp_wire_reconfigure_keys(config, err, sizeof err)) {
        CHECK(strncmp(err, "reconfigure needs", 17) == 0 || strncmp(err, "keys not", 8) == 0);
        return;
    }
    float conf = 0.25f, nms = 0.45f;
    int maxdet = 100;
    if (osp_wire_reconfigure_values(config, &conf, &nms, &maxdet, err, sizeof err)) {
        CHECK(err[0] && conf == 0.25f && nms == 0.45f && maxdet == 100);
        return;
    }
    CHECK(conf >= 0 && conf <= 1 && nms >= 0 && nms <= 1 && maxdet >= 1 && maxdet <= 100000);
}

static void check_stream(const cJSON *config) {
    osp_wire_stream_open_t o;
    char err[OSP_WIRE_ERRLEN + 400] = "";
    if (osp_wire_stream_open_parse(config, &o, err, sizeof err)) {
        CHECK(strncmp(err, "open_stream", 11) == 0);
        return;
    }
    CHECK(cJSON_IsObject(config));
    if (o.silero) return;
    CHECK(o.path && strlen(o.path) < OSP_WIRE_STREAM_PATH_MAX);
    CHECK(o.frame_len >= 1 && o.frame_len <= OSP_WIRE_STREAM_MAX_FRAME_LEN);
    CHECK(o.window >= 1 && o.window <= OSP_WIRE_STREAM_MAX_WINDOW);
    CHECK(o.stride >= 0 && o.stride <= OSP_WIRE_STREAM_MAX_STRIDE);
    CHECK(o.backlog >= 0 && o.backlog <= OSP_WIRE_STREAM_MAX_BACKLOG);
    CHECK(o.channels >= 1 && o.channels <= OSP_WIRE_STREAM_MAX_CHANNELS);
    uint64_t ring = ((uint64_t)o.window + (uint64_t)o.stride * (uint64_t)(o.backlog ? o.backlog : 1)) *
                    (uint64_t)o.frame_len;
    CHECK(o.ring == ring && ring <= OSP_WIRE_STREAM_MAX_RING);
    CHECK(o.input && o.output && o.n_state >= 0 && o.n_state <= OSP_WIRE_STREAM_MAX_STATE);
    for (int i = 0; i < o.n_state; i++) CHECK(o.state_in[i] && o.state_out[i]);
}

static void check_shm(const cJSON *cmd) {
    osp_wire_shm_register_t r;
    char err[OSP_WIRE_ERRLEN + 400] = "";
    if (osp_wire_shm_register_parse(cmd, &r, err, sizeof err) == 0) {
        size_t n = strlen(r.name);
        CHECK(r.name[0] == '/' && n < OSP_WIRE_SHM_NAME_MAX && !strchr(r.name + 1, '/'));
        CHECK(r.size <= (UINT64_C(1) << 53));
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(cmd, "size");
        CHECK(sz ? r.size >= 1 && (double)r.size == sz->valuedouble : r.size == 0);
    } else {
        CHECK(strncmp(err, "register_shm", 12) == 0);
    }
    uint32_t id = 0;
    err[0] = '\0';
    if (osp_wire_shm_unregister_parse(cmd, &id, err, sizeof err) == 0) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cmd, "regionId");
        CHECK((double)id == floor(v->valuedouble));
    } else {
        CHECK(strcmp(err, "unregister_shm: no such \"regionId\"") == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *s = malloc(size ? size : 1); /* exactly sized: an overread shows */
    CHECK(s);
    if (size) memcpy(s, data, size);
    cJSON *cmd = NULL;
    char err[OSP_WIRE_ERRLEN];
    if (osp_wire_command_parse(s, size, &cmd, err, sizeof err) == 0) {
        const cJSON *config = cJSON_GetObjectItemCaseSensitive(cmd, "config");
        check_name_index(cmd);
        check_reconfigure(config);
        check_stream(config);
        check_model_cfg(config);
        check_shm(cmd);
        cJSON_Delete(cmd);
    }
    free(s);
    return 0;
}
