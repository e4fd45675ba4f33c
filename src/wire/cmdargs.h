/*
 * wire/cmdargs: the arguments of the JSON commands and startup-config keys
 * that osprey added to the seed's protocol, read and checked before the
 * server acts on them: reconfigure's keys and values, open_stream's
 * config, register_shm and unregister_shm, a command's name and slot
 * index, and the startup config's thread keys. Pure functions of a tree osp_wire_command_parse or
 * osp_wire_hello_parse made: no files, no server state, no allocation.
 * Every string they fill points INTO that tree, so it is valid as long as
 * the tree is. The maxima are the ones docs/security.md states; the error
 * texts are the ones the server has always sent. 0 or OSP_WIRE_EINVAL with
 * the text in the caller's (err, errlen), as in frame.h.
 */
#ifndef OSP_WIRE_CMDARGS_H
#define OSP_WIRE_CMDARGS_H

#include <stddef.h>
#include <stdint.h>

#include "wire/frame.h"

struct cJSON;

/* ---- any command --------------------------------------------------------------- */

/* The "cmd" string, or "unknown" when it is missing or not a string. */
const char *osp_wire_cmd_name(const struct cJSON *cmd);

/* "index": a whole number from 0 to slots - 1. 0 or -1 (no text: each
 * command words its own). */
int osp_wire_cmd_index(const struct cJSON *cmd, int slots, int *index);

/* ---- reconfigure {"cmd": "reconfigure", "index": i, "config": {…}} ------------------
 *
 * Read in two steps, because the server looks the slot up in between (its
 * "model i is not loaded" comes after a refused key, before a bad value).
 */

/* The keys: "config" absent (nothing changes) or an object of
 * confidence, maxDetections and nmsIouThreshold only. "reconfigure needs a
 * \"config\" object", or "keys not reconfigurable without a reload: a, b
 * (allowed: confidence, maxDetections, nmsIouThreshold)". */
int osp_wire_reconfigure_keys(const struct cJSON *config, char *err, size_t errlen);

/* The values of a config the keys step passed, over the caller's current
 * ones (changed only on success): confidence and nmsIouThreshold numbers
 * from 0 to 1, maxDetections a whole number from 1 to 100000. "K must be
 * a number from 0 to 1", "maxDetections must be an integer from 1 to
 * 100000". */
int osp_wire_reconfigure_values(const struct cJSON *config, float *confidence, float *nms_iou,
                                int *max_detections, char *err, size_t errlen);

/* ---- open_stream {"cmd": "open_stream", "config": {…}} ---------------------------
 *
 * Each stream is a scoring thread and a ring of (window + stride x backlog)
 * frames of frameLen floats; 100 streams of the largest ring a connection
 * could once ask for took 1.1 GB and 112 threads, hence the maxima.
 */

#define OSP_WIRE_STREAM_MAX_FRAME_LEN 65536
#define OSP_WIRE_STREAM_MAX_WINDOW 4096
#define OSP_WIRE_STREAM_MAX_STRIDE 4096
#define OSP_WIRE_STREAM_MAX_BACKLOG 1024
#define OSP_WIRE_STREAM_MAX_CHANNELS 256
#define OSP_WIRE_STREAM_MAX_RING (16u << 20) /* floats: 64 MiB */
#define OSP_WIRE_STREAM_MAX_STATE 4          /* [input, output] state pairs */
#define OSP_WIRE_STREAM_PATH_MAX 1024        /* bytes, with the terminator */

typedef struct {
    int silero;       /* {"model": "silero-vad"}: the built-in stream; nothing below is set */
    const char *path; /* shorter than OSP_WIRE_STREAM_PATH_MAX */
    int frame_len;    /* 1..MAX_FRAME_LEN, required */
    int window;       /* 1..MAX_WINDOW, default 1 */
    int stride;       /* 0..MAX_STRIDE, default 0 */
    int backlog;      /* 0..MAX_BACKLOG, default 0 */
    int channels;     /* 1..MAX_CHANNELS, default 1 */
    uint64_t ring;    /* (window + stride x max(backlog, 1)) x frame_len <= MAX_RING */
    const char *input, *output; /* tensor names, default "input" and "output" */
    const char *int_input;      /* NULL: none */
    int int_value;              /* |value| < 2^31 */
    int n_state;
    const char *state_in[OSP_WIRE_STREAM_MAX_STATE], *state_out[OSP_WIRE_STREAM_MAX_STATE];
} osp_wire_stream_open_t;

/*
 * The "config" of an open_stream command (the value, which may be NULL or
 * not an object): "open_stream needs a \"config\" object", "open_stream:
 * unknown model '…' (known: silero-vad; or give a path)", "open_stream
 * needs \"config\" with \"model\" or \"path\"", the parameters' ranges,
 * the ring's bound, "open_stream: \"state\" is a list of up to 4 [input,
 * output] name pairs". A string key that is not a string takes its default.
 */
int osp_wire_stream_open_parse(const struct cJSON *config, osp_wire_stream_open_t *o, char *err,
                               size_t errlen);

/* ---- register_shm {"name": "/cam1"[, "size": bytes]}, unregister_shm {"regionId"} -- */

#define OSP_WIRE_SHM_NAME_MAX 255 /* bytes, with the terminator */

typedef struct {
    const char *name; /* "/x": one leading slash, no other, shorter than NAME_MAX */
    uint64_t size;    /* 0: the object's own size; else 1..2^53 */
} osp_wire_shm_register_t;

/* "register_shm needs \"name\": a POSIX shared-memory name like
 * \"/osprey-cam1\"", "register_shm: \"size\" must be a positive whole
 * number of bytes". */
int osp_wire_shm_register_parse(const struct cJSON *cmd, osp_wire_shm_register_t *r, char *err,
                                size_t errlen);

/* "regionId": a number from 0 to 2^32 - 1 (a fraction rounds toward zero,
 * as the server always read it); "unregister_shm: no such \"regionId\"". */
int osp_wire_shm_unregister_parse(const struct cJSON *cmd, uint32_t *region, char *err, size_t errlen);

/* ---- the startup config's thread keys (osprey's extensions) ---------------------- */

typedef struct {
    int auto_concurrency;   /* "autoConcurrency" is not false */
    int intra_op_threads;   /* "intraOpThreads" 0..256, -1 absent or unusable */
    int lone_frame_threads; /* "loneFrameThreads", the same */
    int predict_nice;       /* "predictNice", the same */
} osp_wire_hello_ext_t;

/* Never fails: a key outside 0..256 (or not a number, or NaN) is -1. */
void osp_wire_hello_ext(const osp_wire_hello_t *h, osp_wire_hello_ext_t *x);

#endif
