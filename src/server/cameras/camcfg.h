/*
 * camcfg: the "cameras" list of ospreyd's --config file (docs/cameras.md),
 * read with a default for every key, unknown keys warned with the nearest
 * known one. A URL may name environment variables (${NAME}) for its
 * secrets, so the file need not hold them; the URL is never logged
 * unmasked.
 */
#ifndef OSP_CAMCFG_H
#define OSP_CAMCFG_H

#include <stddef.h>

struct cJSON;

#define SRV_CAM_MAX 64         /* cameras in one config */
#define SRV_CAM_OBJECTS_MAX 16 /* labels in one camera's "objects" */
#define SRV_CAM_MASKS_MAX 16   /* polygons in one camera's "motionMask" */
#define SRV_CAM_MASK_POINTS 64 /* corners of one of them */

typedef struct {
    char name[64];   /* 1-63 letters, digits, '_' or '-' */
    char url[2048];  /* with ${NAME}s replaced */
    char model[128]; /* the name of a served model (its catalog name or file's stem); "": slot 0 */
    double fps;      /* frames detected per second, at most; default 5 */
    int decode_threads; /* "decodeThreads": the decoder's threads, 1-16; default 1 */
    int n_objects;      /* 0: every label */
    char objects[SRV_CAM_OBJECTS_MAX][64];
    char zones[1024]; /* a zones file (docs/tracking.md), or "" */
    int motion;       /* 1 (default): a frame where nothing moved is not sent to the model */
    /* "regions": -1 "auto" (default), 1 true, 0 false: a frame motion sends
     * is run as crops around what moved and what is tracked
     * (camregions.h); "auto": when the frame is much larger than the
     * model, and never with "motion": false */
    int regions;
    int n_masks; /* "motionMask": where motion is not looked for */
    struct {
        int n;                             /* points, at least 3 */
        float xy[2 * SRV_CAM_MASK_POINTS]; /* x0,y0,x1,y1,… relative to the frame */
    } masks[SRV_CAM_MASKS_MAX];
} srv_camcfg_t;

/* The cameras of root's "cameras" (none: *n = 0). *out is the caller's to
 * free. 0, or -1 with err naming the camera and the key. */
int srv_camcfg_parse(const struct cJSON *root, srv_camcfg_t **out, int *n, char *err, size_t errlen);
/* The config's "events": {"db": PATH, "retainDays": D, "retainRows": N}
 * (defaults 10 days, 100000 rows). 1 with *out filled when it names a
 * database, 0 when there is none (no "events", or snapshots only), -1
 * with err. */
int srv_camcfg_events(const struct cJSON *root, char *path, size_t path_cap, double *days,
                      long long *rows, char *err, size_t errlen);
/* The config's "mqtt": {"url", "user", "password", "passwordFile",
 * "prefix", "haDiscovery", "tls": {"ca"}, "queue"} (docs/cameras.md, MQTT).
 * The password is read here (from its file, or "password" with its
 * ${NAME}s replaced) and is the caller's to clear once the sink has it. */
typedef struct {
    char url[2048];      /* with ${NAME}s replaced */
    char user[256];      /* "": the URL's */
    char password[1024]; /* "": the URL's */
    char prefix[256];    /* Frigate's topic prefix when the URL has none; default "frigate" */
    char ha[256];        /* HA's discovery prefix; "" (false): no discovery */
    char ca[1024];       /* mqtts: the CA file; "": the system's CAs */
    int queue;           /* messages waiting for the broker, at most; default 1024 */
} srv_mqttcfg_t;
/* 1 with *out filled when the config has "mqtt", 0 when not, -1 with err
 * (never the password). */
int srv_camcfg_mqtt(const struct cJSON *root, srv_mqttcfg_t *out, char *err, size_t errlen);
/* The config's "events": {"snapshots": DIR}: 1 with dir filled, 0 when
 * there is none, -1 with err. */
int srv_camcfg_snapshots(const struct cJSON *root, char *dir, size_t cap, char *err, size_t errlen);
/* The file at path whole (at most SRV_CAMCFG_FILE_MAX bytes, NUL ended:
 * a config, a zones file) into *out, the caller's to free. 0, or -1 with
 * err. */
#define SRV_CAMCFG_FILE_MAX (1u << 20)
int srv_camcfg_read_file(const char *path, char **out, size_t *len, char *err, size_t errlen);
/* Whether the config file at path lists any camera (read, not checked). */
int srv_camcfg_present(const char *path);

#endif
