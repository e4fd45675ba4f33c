/*
 * osprey detect: run a model over images and videos. This file is the
 * command: its options, the checks made before any work starts, and the
 * model; detect_image.c and detect_video.c run the inputs (detect.h).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/detect.h"
#include "model/model.h"
#include "video/source.h"
#include "video/url.h"
#include "video/video.h"
#include "log/log.h"

#include <cjson/cJSON.h>

/* SIGINT/SIGTERM: the sources end as if the stream ended; summaries follow. */
static atomic_bool g_stop;

/* --zones FILE: read and parsed before any work starts; the parser's
 * message ("zones file: ...") follows the file's name. */
static osp_zones_cfg_t *load_zones(const char *file) {
    enum { LIMIT = 1 << 20 };
    FILE *f = fopen(file, "rb");
    char *text = malloc(LIMIT + 1), err[512];
    size_t len = 0;
    osp_zones_cfg_t *cfg = NULL;
    /* read to the end, not by its size: a pipe (<(...)) has none */
    if (f && text) len = fread(text, 1, LIMIT + 1, f);
    if (!f || !text || ferror(f) || len > LIMIT) {
        fprintf(stderr, "osprey detect: cannot read --zones %s: %s\n", file,
                len > LIMIT ? "larger than 1 MiB" : strerror(errno ? errno : EIO));
        goto done;
    }
    text[len] = '\0';
    if (!(cfg = malloc(sizeof *cfg))) {
        fprintf(stderr, "osprey detect: out of memory\n");
        goto done;
    }
    if (osp_zones_cfg_parse(text, len, cfg, err, sizeof err)) {
        fprintf(stderr, "osprey detect: --zones %s: %s\n", file, err);
        free(cfg);
        cfg = NULL;
    }
done:
    if (f) fclose(f);
    free(text);
    return cfg;
}

/* An "objects" name the model has no label for would never count: say so,
 * and which label was meant when only the case differs ("person" for
 * OIDv4's "Person"). 0, or -1 after the message. */
static int check_zone_labels(const char *file, const osp_zones_cfg_t *z, const osp_model_t *m) {
    for (int i = 0; i < z->n_zones + z->n_lines; i++) {
        int line = i >= z->n_zones;
        const char *name = line ? z->lines[i - z->n_zones].name : z->zones[i].name;
        int n = line ? z->lines[i - z->n_zones].n_objects : z->zones[i].n_objects;
        for (int j = 0; j < n; j++) {
            const char *obj = line ? z->lines[i - z->n_zones].objects[j] : z->zones[i].objects[j];
            const char *near = NULL;
            int found = 0;
            for (int c = 0; c < m->n_labels && !found; c++) {
                found = strcmp(m->labels[c], obj) == 0;
                if (strcasecmp(m->labels[c], obj) == 0) near = m->labels[c];
            }
            if (found) continue;
            fprintf(stderr, "osprey detect: --zones %s: %s \"%s\": \"%s\" is not a label of %s",
                    file, line ? "line" : "zone", name, obj, m->cfg.name);
            if (near) fprintf(stderr, " (did you mean \"%s\"?)", near);
            fputc('\n', stderr);
            return -1;
        }
    }
    return 0;
}

/* --config FILE: the model config of the protocol; without "path" or
 * "model" it configures the --model given (a catalog name or a file). */
/* What a --config said, beyond the settings themselves. */
typedef struct {
    int confidence, model; /* the keys are there */
} config_keys_t;

static int load_config(const char *file, const char *model, osp_model_cfg_t *cfg,
                       config_keys_t *keys, osp_cascade_t **cascade, char *err, size_t errlen) {
    FILE *f = fopen(file, "rb");
    char *text = NULL;
    long len = -1;
    int rc = -1;
    if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || len > (1 << 20) ||
        fseek(f, 0, SEEK_SET) || !(text = calloc(1, (size_t)len + 1)) ||
        fread(text, 1, (size_t)len, f) != (size_t)len) {
        snprintf(err, errlen, "cannot read config %s: %s", file,
                 len > (1 << 20) ? "larger than 1 MiB" : strerror(errno ? errno : EIO));
        goto done;
    }
    cJSON *obj = cJSON_Parse(text);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "config %s is not a JSON object", file);
        cJSON_Delete(obj);
        goto done;
    }
    if (!cJSON_GetObjectItemCaseSensitive(obj, "path") &&
        !cJSON_GetObjectItemCaseSensitive(obj, "model"))
        cJSON_AddStringToObject(obj, osp_catalog_find(model) ? "model" : "path", model);
    keys->confidence = cJSON_GetObjectItemCaseSensitive(obj, "confidence") != NULL;
    keys->model = cJSON_GetObjectItemCaseSensitive(obj, "model") != NULL;
    char inner[512];
    rc = osp_model_cfg_from_json(obj, cfg, inner, sizeof inner);
    if (!rc) rc = osp_cascade_parse(obj, cfg, cascade, inner, sizeof inner);
    if (rc) snprintf(err, errlen, "config %s: %s", file, inner);
    cJSON_Delete(obj);
done:
    if (f) fclose(f);
    free(text);
    return rc ? -1 : 0;
}

/* The catalog entry cfg was made from (its name and its file), or NULL. */
static const osp_catalog_entry_t *catalog_of(const osp_model_cfg_t *cfg) {
    const osp_catalog_entry_t *e = osp_catalog_find(cfg->name);
    char path[sizeof cfg->path];
    if (!e) return NULL;
    osp_catalog_path(e, path, sizeof path);
    return strcmp(path, cfg->path) == 0 ? e : NULL;
}

int osp_detect_infer(const osp_detect_opts_t *o, osp_model_t *m, osp_infer_ctx_t *ctx,
                     osp_infer_ctx_t *look, const osp_view_t *frame, int orig_w, int orig_h,
                     osp_result_t *res, char *err, size_t errlen) {
    int rc = osp_model_infer(m, ctx, frame, orig_w, orig_h, res, err, errlen);
    /* a tracked video: the looks are the tracks' (detect_track.c) */
    if (rc == 0 && o->second_look && !o->tracked)
        rc = osp_model_look_again(m, ctx, look, frame, o->once_threshold, res, err, errlen);
    /* a tracked video: the steps run once per object (detect_steps.c) */
    if (rc == 0 && o->cascade && !o->tracked)
        rc = osp_cascade_run(o->cascade, m, ctx, frame, res, err, errlen);
    return rc;
}

static int run_inputs(const osp_detect_opts_t *po, int argc, char **argv, int first,
                      const char *zones_path, const char *events_path);
static int run_model(const osp_detect_opts_t *po, osp_model_cfg_t *pcfg,
                     const config_keys_t *pkeys, osp_cascade_t *cascade, int argc, char **argv,
                     int first, const char *zones_path, const char *events_path);

/* --camera, --ha-discovery and --mqtt with --track (Frigate's topics):
 * 0, or -1 after one line on stderr. */
static int check_track_mqtt(osp_detect_opts_t *o, const char *ha, int inputs) {
    if (o->camera) {
        size_t n = strlen(o->camera);
        int ok = n >= 1 && n <= 63;
        for (size_t i = 0; ok && i < n; i++)
            ok = isalnum((unsigned char)o->camera[i]) || o->camera[i] == '_' || o->camera[i] == '-';
        if (!ok) {
            fprintf(stderr,
                    "osprey detect: --camera '%s' must be 1-63 letters, digits, '_' or '-' (it is "
                    "part of MQTT topics)\n",
                    o->camera);
            return -1;
        }
        if (inputs > 1) {
            fprintf(stderr, "osprey detect: --camera names one input's camera; %d inputs given\n",
                    inputs);
            return -1;
        }
    }
    if (!o->track || !o->mqtt.url) {
        if (ha) {
            fprintf(stderr, "osprey detect: --ha-discovery needs --mqtt\n");
            return -1;
        }
        return 0;
    }
    if (strncmp(o->mqtt.url, "mqtt://", 7) != 0 && strncmp(o->mqtt.url, "mqtts://", 8) != 0) {
        char shown[256];
        fprintf(stderr, "osprey detect: --mqtt with --track is an mqtt:// or mqtts:// URL, not '%s'\n",
                osp_url_mask(o->mqtt.url, shown, sizeof shown));
        return -1;
    }
    o->ha_prefix = ha && strcmp(ha, "off") == 0 ? NULL : ha ? ha : "homeassistant";
    if (o->ha_prefix && (!o->ha_prefix[0] || strpbrk(o->ha_prefix, "+#"))) {
        fprintf(stderr, "osprey detect: --ha-discovery '%s' is not a topic prefix\n", ha);
        return -1;
    }
    /* Frigate's topic prefix, and its availability topic */
    o->mqtt.default_topic = "frigate";
    o->mqtt.available = "available";
    o->mqtt.wait_first = true;
    return 0;
}

int osp_cmd_detect(int argc, char **argv) {
    osp_detect_opts_t o = {.model = "ssd-oidv4-int8",
                           .threshold = -1,
                           .every = 1,
                           .second_look = -1,
                           .stop = &g_stop};
    osp_source_cfg_default(&o.source);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    o.workers = ncpu > 0 ? (int)(ncpu > 64 ? 64 : ncpu) : 1;
    static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
                                             {"threshold", required_argument, NULL, 't'},
                                             {"every", required_argument, NULL, 'e'},
                                             {"out", required_argument, NULL, 'o'},
                                             {"workers", required_argument, NULL, 'j'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"no-json", no_argument, NULL, 'J'},
                                             {"help", no_argument, NULL, 'h'},
                                             {"postprocessor", required_argument, NULL, 'P'},
                                             {"config", required_argument, NULL, 'C'},
                                             {"fps", required_argument, NULL, 'F'},
                                             {"reconnect-for", required_argument, NULL, 'R'},
                                             {"rtsp-transport", required_argument, NULL, 'T'},
                                             {"max-frame", required_argument, NULL, 0x109},
                                             {"per-class-nms", no_argument, NULL, 'N'},
                                             {"labels", required_argument, NULL, 'L'},
                                             {"then", required_argument, NULL, 0x10a},
                                             {"recognize", required_argument, NULL, 0x10b},
                                             {"second-look", no_argument, NULL, 0x101},
                                             {"one-look", no_argument, NULL, 0x102},
                                             {"track", no_argument, NULL, 0x103},
                                             {"per-frame", no_argument, NULL, 0x10c},
                                             {"zones", required_argument, NULL, 0x104},
                                             {"events", required_argument, NULL, 0x105},
                                             {"camera", required_argument, NULL, 0x106},
                                             {"snapshots", required_argument, NULL, 0x107},
                                             {"ha-discovery", required_argument, NULL, 0x108},
                                             {"mqtt", required_argument, NULL, 0x100},
                                             {"mqtt-user", required_argument, NULL, 0x100},
                                             {"mqtt-password-file", required_argument, NULL, 0x100},
                                             {"mqtt-ca", required_argument, NULL, 0x100},
                                             {NULL, 0, NULL, 0}};
    int c, li = 0;
    const char *zones_path = NULL, *events_path = NULL, *ha = NULL;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:t:e:o:j:qh", longopts, &li)) != -1) {
        switch (c) {
        case 0x100: {
            char name[32];
            snprintf(name, sizeof name, "--%s", longopts[li].name);
            osp_cli_mqtt_arg(&o.mqtt, name, optarg);
            break;
        }
        case 0x101: o.second_look = 1; break;
        case 0x102: o.second_look = 0; break;
        case 0x103: o.track = 1; break;
        case 0x10c: o.per_frame = 1; break;
        case 0x104: zones_path = optarg; break;
        case 0x105: events_path = optarg; break;
        case 0x106: o.camera = optarg; break;
        case 0x107: o.snapshots = optarg; break;
        case 0x108: ha = optarg; break;
        case 0x10a: o.then_model = optarg; break;
        case 0x10b: o.recognize = optarg; break;
        case 0x109: {
            unsigned long long v;
            if (osp_args_max_frame("osprey detect", optarg, &v)) return 2;
            o.source.max_packet = (size_t)v;
            break;
        }
        case 'm': o.model = optarg; break;
        case 't':
            if (osp_args_unit("osprey detect", "--threshold", optarg, &o.threshold)) return 2;
            break;
        case 'e':
            if (osp_args_int(optarg, 1, 1000000, &o.every)) {
                fprintf(stderr, "osprey detect: --every must be a whole number >= 1, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        case 'o': o.out_dir = optarg; break;
        case 'j':
            if (osp_args_int_in("osprey detect", "--workers", optarg, 1, 64, &o.workers)) return 2;
            break;
        case 'q': o.quiet = 1; break;
        case 'J': o.no_json = 1; break;
        case 'P': o.postprocessor = optarg; break;
        case 'C': o.config = optarg; break;
        case 'N': o.per_class_nms = 1; break;
        case 'L': o.labels = optarg; break;
        case 'F':
            if (osp_args_num("osprey detect", "--fps", optarg, 0.001, 1000, &o.fps)) return 2;
            break;
        case 'R':
            if (osp_args_num("osprey detect", "--reconnect-for", optarg, 0, 0,
                             &o.source.reconnect_for_s))
                return 2;
            break;
        case 'T':
            if (strcmp(optarg, "tcp") != 0 && strcmp(optarg, "udp") != 0) {
                fprintf(stderr, "osprey detect: --rtsp-transport must be tcp or udp, not '%s'\n",
                        optarg);
                return 2;
            }
            o.source.rtsp_udp = optarg[0] == 'u';
            break;
        case 'h': osp_detect_usage(stdout); return 0;
        default: fprintf(stderr, "osprey detect: see 'osprey detect --help'\n"); return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr,
                "osprey detect: no input given (images or videos); see 'osprey detect --help'\n");
        return 2;
    }
    const char *tracking = zones_path    ? "--zones"
                           : events_path ? "--events"
                           : o.camera    ? "--camera"
                           : o.snapshots ? "--snapshots"
                           : ha          ? "--ha-discovery"
                                         : NULL;
    if (o.per_frame && (o.track || tracking)) {
        fprintf(stderr,
                "osprey detect: --per-frame reads each frame alone, without objects; %s "
                "follows objects across frames (give one or the other)\n",
                o.track ? "--track" : tracking);
        return 2;
    }
    if (tracking && !o.track) {
        fprintf(stderr, "osprey detect: %s needs --track\n", tracking);
        return 2;
    }
    if (check_track_mqtt(&o, ha, argc - optind)) return 2;
    /* every file must exist before any work starts (streams are opened in turn) */
    int stdin_inputs = 0;
    for (int i = optind; i < argc; i++) {
        struct stat st;
        char name[256];
        osp_url_kind_t kind = osp_url_kind(argv[i]);
        osp_url_mask(argv[i], name, sizeof name);
        if (kind == OSP_URL_UNKNOWN) {
            fprintf(stderr,
                    "osprey detect: %s is not a source osprey reads; see 'osprey detect --help'\n",
                    name);
            return 2;
        }
        stdin_inputs += kind == OSP_URL_STDIN;
        if (kind != OSP_URL_FILE) continue;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "osprey detect: cannot open %s: %s\n", name, strerror(errno));
            return 2;
        }
        if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
            fprintf(stderr, "osprey detect: %s is not a file\n", name);
            return 2;
        }
        if (o.track && osp_path_is_image(argv[i])) {
            fprintf(stderr,
                    "osprey detect: --track follows objects across a video's frames; %s is a "
                    "single image\n",
                    name);
            return 2;
        }
    }
    if (stdin_inputs > 1) {
        fprintf(stderr, "osprey detect: - (stdin) can be given once\n");
        return 2;
    }
    if (o.out_dir && mkdir(o.out_dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "osprey detect: cannot create %s: %s\n", o.out_dir, strerror(errno));
        return 2;
    }
    if (o.snapshots && mkdir(o.snapshots, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "osprey detect: cannot create --snapshots %s: %s\n", o.snapshots,
                strerror(errno));
        return 2;
    }

    osp_zones_cfg_t *zones = NULL;
    if (zones_path && !(zones = load_zones(zones_path))) return 2;
    o.zones = zones;
    int status = run_inputs(&o, argc, argv, optind, zones_path, events_path);
    free(zones);
    return status;
}

/* The rest of osp_cmd_detect, from the model on: argv[first..argc) are the
 * inputs, checked; the zones are the caller's. */
static int run_inputs(const osp_detect_opts_t *po, int argc, char **argv, int first,
                      const char *zones_path, const char *events_path) {
    osp_detect_opts_t o = *po;
    char err[1024];
    osp_model_cfg_t cfg;
    config_keys_t keys = {0};
    osp_cascade_t *cascade = NULL;
    if (osp_model_cfg_resolve(o.model, &cfg, err, sizeof err) ||
        (o.config && load_config(o.config, o.model, &cfg, &keys, &cascade, err, sizeof err))) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s", err);
        return 2;
    }
    if (cascade && (o.then_model || o.recognize)) {
        osp_log(OSP_LOG_ERROR,
                "osprey detect: --config %s has a cascade (\"then\"); give it there "
                "or by %s, not both",
                o.config, o.then_model ? "--then" : "--recognize");
        osp_cascade_free(cascade);
        return 2;
    }
    if ((o.then_model || o.recognize) &&
        osp_cascade_simple(&cfg, o.then_model ? o.then_model : "face-embed", o.recognize, &cascade,
                           err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s", err);
        return 2;
    }
    int status = run_model(&o, &cfg, &keys, cascade, argc, argv, first, zones_path, events_path);
    osp_cascade_free(cascade);
    return status;
}

/* The rest of run_inputs once the model's configuration is known. */
static int run_model(const osp_detect_opts_t *po, osp_model_cfg_t *pcfg,
                     const config_keys_t *pkeys, osp_cascade_t *cascade, int argc, char **argv,
                     int first, const char *zones_path, const char *events_path) {
    osp_detect_opts_t o = *po;
    osp_model_cfg_t cfg = *pcfg;
    config_keys_t keys = *pkeys;
    char err[1024];
    if (o.postprocessor && snprintf(cfg.postprocessor, sizeof cfg.postprocessor, "%s",
                                    o.postprocessor) >= (int)sizeof cfg.postprocessor) {
        osp_log(OSP_LOG_ERROR, "osprey detect: --postprocessor '%s' is too long", o.postprocessor);
        return 2;
    }
    struct stat st;
    if (stat(cfg.path, &st) != 0) {
        if (osp_catalog_find(o.model))
            osp_log(OSP_LOG_ERROR,
                    "osprey detect: model %s is not downloaded (expected %s); run scripts/fetch-assets.sh",
                    o.model, cfg.path);
        else
            osp_log(OSP_LOG_ERROR, "osprey detect: cannot open model %s: %s", cfg.path,
                    strerror(errno));
        return 2;
    }
    /* the threshold measured for the command line (docs/models.md); a model
     * config on the wire keeps the catalog's confidence */
    const osp_catalog_entry_t *entry = (o.config ? keys.model : osp_catalog_find(o.model) != NULL)
                                           ? catalog_of(&cfg)
                                           : NULL;
    /* a model file of one's own: its outputs say how to decode it */
    cfg.postprocessor_auto = !entry && !o.postprocessor && !o.config;
    if (o.labels) {
        if (access(o.labels, R_OK) != 0) {
            osp_log(OSP_LOG_ERROR, "osprey detect: cannot read labels %s: %s", o.labels,
                    strerror(errno));
            return 2;
        }
        if (snprintf(cfg.labels_path, sizeof cfg.labels_path, "%s", o.labels) >=
            (int)sizeof cfg.labels_path) {
            osp_log(OSP_LOG_ERROR, "osprey detect: --labels path too long");
            return 2;
        }
        cfg.labels_none = 0;
    }
    /* the second look where it was measured to help, unless asked */
    if (o.second_look < 0) o.second_look = entry && entry->cli_second_look;
    if (o.threshold >= 0)
        cfg.confidence = o.threshold;
    else if (!keys.confidence && entry && !o.second_look && entry->cli_confidence_one > 0)
        cfg.confidence = entry->cli_confidence_one;
    else if (!keys.confidence && entry && entry->cli_confidence > 0)
        cfg.confidence = entry->cli_confidence;
    /* a box too large to look at again is seen once: the one-look threshold */
    o.once_threshold = cfg.confidence;
    if (o.threshold < 0 && !keys.confidence && entry && entry->cli_confidence_one > 0)
        o.once_threshold = entry->cli_confidence_one;
    /* one object, one box: a part inside a whole and boxes across labels too, unless asked
     * (or configured) otherwise; a host on the wire gets the Python worker's per-class
     * suppression (model/config.c) */
    if (o.per_class_nms) {
        cfg.cross_iou = 0;
        cfg.contain = 0;
    }
    if (cfg.cross_iou < 0) cfg.cross_iou = OSP_CROSS_CLASS_IOU;
    if (cfg.contain < 0) cfg.contain = o.second_look ? OSP_LOOK_CONTAINMENT : OSP_CONTAINMENT;
    /* N single-thread runs side by side beat one N-thread run on small machines */
    cfg.intra_threads = o.workers > 1 ? 1 : 0;
    osp_model_t *m = NULL;
    if (osp_model_open(&cfg, NULL, &m, err, sizeof err)) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s", err);
        return 2;
    }
    /* an embedder, a classifier or a text reader gives no boxes: no objects
     * to follow, each frame is read alone */
    int boxes = m->dec->gives == OSP_GIVES_BOXES;
    if (o.track && !boxes) {
        osp_log(OSP_LOG_ERROR,
                "osprey detect: --track follows objects; %s gives no boxes (its "
                "postprocessor is %s)",
                m->cfg.name, m->dec->name);
        osp_model_free(m);
        return 2;
    }
    if (!boxes) o.per_frame = 1;
    if (zones_path && check_zone_labels(zones_path, o.zones, m)) {
        osp_model_free(m);
        return 2;
    }
    if (cascade && (osp_cascade_open(cascade, m, NULL, cfg.intra_threads, err, sizeof err))) {
        osp_log(OSP_LOG_ERROR, "osprey detect: %s", err);
        osp_model_free(m);
        return 2;
    }
    o.cascade = cascade;
    if (events_path && strcmp(events_path, "-") != 0 && !(o.events = fopen(events_path, "w"))) {
        fprintf(stderr, "osprey detect: cannot write --events %s: %s\n", events_path, strerror(errno));
        osp_model_free(m);
        return 2;
    }
    osp_decoder_t *dec = osp_decoder_new();
    if (!dec) {
        if (o.events) fclose(o.events);
        osp_log(OSP_LOG_ERROR, "osprey detect: out of memory");
        osp_model_free(m);
        return 1;
    }
    osp_cli_stop_on_signals(&g_stop);
    int status = 0;
    /* A broker that refuses the login stops the inputs as a signal would. */
    int bad_sink = osp_cli_mqtt_open("detect", &o.mqtt, &g_stop, &o.sink);
    if (bad_sink) status = bad_sink;
    if (!bad_sink && o.track && o.sink) {
        /* Frigate's topics: a broker that is not there at the start is a
         * mistake to say now, not a queue to fill while nobody listens */
        o.frigate = o.sink;
        o.sink = NULL;
        char why[256];
        if (osp_sink_wait_connected(o.frigate, 10.0, why, sizeof why)) {
            /* a refusal has had its line (sink.c) */
            if (!atomic_load(&g_stop))
                fprintf(stderr, "osprey detect: --mqtt %s: %s\n", osp_sink_name(o.frigate), why);
            status = bad_sink = 1;
        }
    }
    /* a video's objects over time unless --per-frame; an image is one frame,
     * read alone (its boxes looked at again, its cascade on every box) */
    osp_detect_opts_t alone = o;
    o.tracked = !o.per_frame;
    alone.tracked = 0;
    for (int i = first; i < argc && !bad_sink && !atomic_load(&g_stop); i++) {
        int image = osp_url_kind(argv[i]) == OSP_URL_FILE && osp_path_is_image(argv[i]);
        int r = image ? osp_detect_image(&alone, m, dec, argv[i])
                      : osp_detect_video(&o, m, dec, argv[i]);
        if (r > status) status = r;
    }
    fflush(stdout);
    /* a sink that delivered nothing, or refused and stopped the inputs (an
     * input cut short by that stop is not the input's fault) */
    if (osp_cli_sink_close("detect", o.sink ? o.sink : o.frigate, "mqtt") &&
        (status == 0 || atomic_load(&g_stop)))
        status = 1;
    if (o.events && fclose(o.events) != 0 && status == 0) {
        fprintf(stderr, "osprey detect: cannot write --events %s: %s\n", events_path, strerror(errno));
        status = 1;
    }
    osp_decoder_free(dec);
    osp_model_free(m);
    return status;
}
