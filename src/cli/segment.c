/*
 * osprey segment: cut a video into events (chunks), optionally describe
 * each with a vision-language model and check the descriptions against a
 * procedure. One JSON line per chunk on stdout, in order; a summary of the
 * run on stderr. The stages live in src/segment/ (pipeline.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/events.h"
#include "cli/secret.h"
#include "cli/sinkopt.h"
#include "segment/pipeline.h"
#include "publish/sink.h"
#include "video/url.h"
#include "video/video.h"
#include "log/log.h"

static void usage(FILE *out) {
    fputs("usage: osprey segment INPUT [--uniform SECONDS] [--max-length S] [--live]\n"
          "           [--reconnect-for S] [--rtsp-transport tcp|udp] [--max-frame BYTES]\n"
          "           [--vlm URL --vlm-model NAME [--prompt TEXT] [--prompt-file F]]\n"
          "           [--mqtt URL [--mqtt-password-file F]] [--kafka BROKERS/TOPIC]\n"
          "           [--procedure actions.json] [--camera NAME]\n"
          "\n"
          "Cuts a video (a file, an rtsp:// or http(s):// stream, /dev/video0, or - for\n"
          "stdin; docs/sources.md) into events and prints one JSON line per chunk, in order:\n"
          "chunk_idx, start_time, end_time, cv_boundary_score, frame_number, response,\n"
          "checker_result, cv_execute_time, vlm_execute_time, the pipeline_*_timestamp\n"
          "fields and sensor_id. With --procedure, a final summary line has chunk_idx -1.\n"
          "Rules and fields: docs/segment.md.\n"
          "\n"
          "Chunking (default: event mode with the built-in 'scene' boundary scorer):\n"
          "  --threshold T       boundary score that triggers a cut, 0..1 (default 0.8)\n"
          "  --min-length S      no cut closer than S seconds to a chunk's start (default 1)\n"
          "  --max-length S      cut at S seconds when no event comes (default 10)\n"
          "  --delay-frames N    anti-jitter window after a trigger (default 8)\n"
          "  --uniform SECONDS   a chunk every SECONDS instead (no scoring)\n"
          "  --scorer FILE.onnx  score frames with this model instead of 'scene': it gets\n"
          "                      --scorer-window frames (default 2) of --scorer-size\n"
          "                      (default 64) square RGB floats in [0,1], oldest first, and\n"
          "                      returns the newest frame's boundary score (docs/segment.md)\n"
          "Source:\n"
          "  --live              replay the file at its real rate as a live source: a full\n"
          "                      frame queue drops its oldest frame instead of waiting\n"
          "  --speed X           live replay rate (default 1 = real time)\n"
          "  --camera NAME       sensor_id of the records (default: the file's stem; a\n"
          "                      camera URL is live and its path's stem is the sensor_id)\n"
          "  --reconnect-for S   a live source that drops is reopened after 0.5 s, then 1,\n"
          "                      2, 4, 8 and every 10 s, for S seconds (default: forever),\n"
          "                      then the run ends with exit status 1; each drop and\n"
          "                      reconnect is a line on stderr and a record {\"event\":…}\n"
          "  --rtsp-transport tcp|udp  how rtsp:// is carried (default tcp)\n"
          "  --max-frame BYTES   one packet of a stream (an MJPEG part, an RTSP frame) at\n"
          "                      most; a larger one drops the source (default 67108864)\n"
          "Describe (OpenAI-compatible chat completions; skipped without --vlm):\n"
          "  --vlm URL           http(s)://host:port[/v1[/chat/completions]] (libcurl: proxies\n"
          "                      from $https_proxy/$no_proxy, up to 5 redirects)\n"
          "  --vlm-model NAME    model name sent in each request\n"
          "  --vlm-key-file F    API key sent as \"Authorization: Bearer KEY\": F's first line;\n"
          "                      else $OSPREY_VLM_API_KEY; none without either\n"
          "  --vlm-ca FILE       https: trust this CA (default: the system's CAs)\n"
          "  --vlm-timeout S     bound on each request, seconds (default 300)\n"
          "  --prompt TEXT       the prompt (wins over --prompt-file)\n"
          "  --prompt-file F     the prompt, from a file\n"
          "  --system-prompt T   (default \"Answer the questions.\")\n"
          "  --max-tokens N      (default 256)     --temperature T (default 0)\n"
          "  --vlm-fps R         frames sent per second of chunk (default 1; max 16 frames)\n"
          "  --vlm-concurrency N at most N requests in flight, the warm-up included (default 4)\n"
          "  --no-warmup         skip the 3-frame warm-up request\n",
          out);
    fputs("Sinks (besides stdout; never stall the stages: a bounded queue of 1024 records,\n"
          "the oldest dropped and counted; a broker that drops is reconnected):\n" OSP_CLI_MQTT_HELP
          "  --kafka BROKERS/TOPIC    publish each record to Kafka (librdkafka)\n"
          "Check:\n"
          "  --procedure F       ordered steps (JSON, see docs/segment.md)\n"
          "\n"
          "SIGINT/SIGTERM stop the source (the last chunk ends there) and abort VLM\n"
          "requests in flight.\n"
          "Exit status: 0 done, 1 failure while working (a live source given up, a sink\n"
          "that could not deliver), 2 bad usage or input (an image, an option out of range).\n",
          out);
}

static atomic_bool g_stop;

/* Chunk records come from the output thread and source events from the
 * source thread: one line at a time, in the order printed. */
static pthread_mutex_t g_out_mu = PTHREAD_MUTEX_INITIALIZER;

/* ctx: the sinks (MQTT, Kafka), NULL when not used. */
static void print_line(void *ctx, const char *line) {
    osp_sink_t **sinks = ctx;
    pthread_mutex_lock(&g_out_mu);
    fputs(line, stdout);
    fputc('\n', stdout);
    fflush(stdout);
    for (int i = 0; i < 2; i++)
        if (sinks[i]) osp_sink_put(sinks[i], line);
    pthread_mutex_unlock(&g_out_mu);
}

typedef struct {
    osp_sink_t **sinks;
    const char *sensor_id;
} event_ctx_t;

/* A live source's drops and reconnects, on the source thread: stderr and a record. */
static void on_source_event(void *ctx, const osp_source_event_t *e) {
    const event_ctx_t *ec = ctx;
    osp_cli_event_log("segment", e);
    osp_jw_t w = {0};
    osp_cli_event_record(&w, e, ec->sensor_id);
    if (!w.oom) print_line(ec->sinks, w.buf);
    osp_jw_free(&w);
}

/* A number in [lo, hi] (hi <= lo: no upper bound); whole: an integer. */
static int num(const char *opt, const char *s, double lo, double hi, bool whole, double *out) {
    if (osp_args_num("osprey segment", opt, s, lo, hi, out)) return -1;
    if (whole && *out != (double)(long long)*out) {
        fprintf(stderr, "osprey segment: %s must be a whole number, not '%s'\n", opt, s);
        return -1;
    }
    return 0;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4097 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = cap <= (1u << 20) ? realloc(buf, cap) : NULL;
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, 4096, f);
        len += r;
        if (r < 4096) break;
    }
    fclose(f);
    buf[len] = 0;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
    return buf;
}

int osp_cmd_segment(int argc, char **argv) {
    osp_segment_opts_t o;
    osp_segment_opts_default(&o);
    const char *input = NULL, *camera = NULL, *prompt = NULL, *prompt_file = NULL;
    const char *procedure = NULL, *kafka = NULL, *vlm_key_file = NULL;
    osp_cli_mqtt_t mqtt = {0};
    enum {
        O_LIVE = 0x100,
        O_NO_WARMUP,
        O_MQTT,
        O_UNIFORM,
        O_MAX_LENGTH,
        O_MIN_LENGTH,
        O_THRESHOLD,
        O_DELAY_FRAMES,
        O_SCORER,
        O_SCORER_SIZE,
        O_SCORER_WINDOW,
        O_SPEED,
        O_CAMERA,
        O_VLM,
        O_VLM_MODEL,
        O_PROMPT,
        O_PROMPT_FILE,
        O_SYSTEM_PROMPT,
        O_MAX_TOKENS,
        O_TEMPERATURE,
        O_VLM_FPS,
        O_VLM_MAX_FRAMES,
        O_VLM_CONCURRENCY,
        O_VLM_TIMEOUT,
        O_VLM_KEY_FILE,
        O_VLM_CA,
        O_KAFKA,
        O_RECONNECT_FOR,
        O_RTSP_TRANSPORT,
        O_MAX_FRAME,
        O_PROCEDURE,
        O_SLOW_DESCRIBE_MS
    };
    static const struct option longopts[] =
        {{"help", no_argument, NULL, 'h'},
         {"live", no_argument, NULL, O_LIVE},
         {"no-warmup", no_argument, NULL, O_NO_WARMUP},
         {"mqtt", required_argument, NULL, O_MQTT},
         {"mqtt-user", required_argument, NULL, O_MQTT},
         {"mqtt-password-file", required_argument, NULL, O_MQTT},
         {"mqtt-ca", required_argument, NULL, O_MQTT},
         {"uniform", required_argument, NULL, O_UNIFORM},
         {"max-length", required_argument, NULL, O_MAX_LENGTH},
         {"min-length", required_argument, NULL, O_MIN_LENGTH},
         {"threshold", required_argument, NULL, O_THRESHOLD},
         {"delay-frames", required_argument, NULL, O_DELAY_FRAMES},
         {"scorer", required_argument, NULL, O_SCORER},
         {"scorer-size", required_argument, NULL, O_SCORER_SIZE},
         {"scorer-window", required_argument, NULL, O_SCORER_WINDOW},
         {"speed", required_argument, NULL, O_SPEED},
         {"camera", required_argument, NULL, O_CAMERA},
         {"vlm", required_argument, NULL, O_VLM},
         {"vlm-model", required_argument, NULL, O_VLM_MODEL},
         {"prompt", required_argument, NULL, O_PROMPT},
         {"prompt-file", required_argument, NULL, O_PROMPT_FILE},
         {"system-prompt", required_argument, NULL, O_SYSTEM_PROMPT},
         {"max-tokens", required_argument, NULL, O_MAX_TOKENS},
         {"temperature", required_argument, NULL, O_TEMPERATURE},
         {"vlm-fps", required_argument, NULL, O_VLM_FPS},
         {"vlm-max-frames", required_argument, NULL, O_VLM_MAX_FRAMES},
         {"vlm-concurrency", required_argument, NULL, O_VLM_CONCURRENCY},
         {"vlm-timeout", required_argument, NULL, O_VLM_TIMEOUT},
         {"vlm-key-file", required_argument, NULL, O_VLM_KEY_FILE},
         {"vlm-ca", required_argument, NULL, O_VLM_CA},
         {"kafka", required_argument, NULL, O_KAFKA},
         {"reconnect-for", required_argument, NULL, O_RECONNECT_FOR},
         {"rtsp-transport", required_argument, NULL, O_RTSP_TRANSPORT},
         {"max-frame", required_argument, NULL, O_MAX_FRAME},
         {"procedure", required_argument, NULL, O_PROCEDURE},
         /* test hook: a deliberately slow stage 3 */
         {"slow-describe-ms", required_argument, NULL, O_SLOW_DESCRIBE_MS},
         {NULL, 0, NULL, 0}};
    int c, li = 0;
    optind = 1;
    opterr = 0; /* the messages below are this command's own */
    while ((c = getopt_long(argc, argv, "-:h", longopts, &li)) != -1) {
        char a[32]; /* the option's whole name, for messages */
        snprintf(a, sizeof a, "--%s", longopts[li].name);
        char *v = optarg;
        double d = 0;
        int bad = 0;
        switch (c) {
        case 'h': usage(stdout); return 0;
        case 1: /* "-": the input in its place among the options, as ever */
            if (input) {
                fprintf(stderr, "osprey segment: one input, not '%s' and '%s'\n", input, v);
                return 2;
            }
            input = v;
            break;
        case O_LIVE: o.live = true; break;
        case O_NO_WARMUP: o.warmup = false; break;
        case O_MQTT: osp_cli_mqtt_arg(&mqtt, a, v); break;
        case O_UNIFORM:
            bad = num(a, v, 0.001, 3600, false, &o.chunk.uniform_len);
            o.chunk.uniform = true;
            break;
        case O_MAX_LENGTH: bad = num(a, v, 0.001, 3600, false, &o.chunk.max_len); break;
        case O_MIN_LENGTH: bad = num(a, v, 0, 3600, false, &o.chunk.min_len); break;
        case O_THRESHOLD: bad = num(a, v, 0, 1, false, &o.chunk.threshold); break;
        case O_DELAY_FRAMES:
            bad = num(a, v, 0, 1000, true, &d);
            o.chunk.delay_frames = (int)d;
            break;
        case O_SCORER: o.scorer = v; break;
        case O_SCORER_SIZE:
            bad = num(a, v, 1, 1024, true, &d);
            o.scorer_size = (int)d;
            break;
        case O_SCORER_WINDOW:
            bad = num(a, v, 1, 256, true, &d);
            o.scorer_window = (int)d;
            break;
        case O_SPEED: bad = num(a, v, 0.01, 100, false, &o.live_speed); break;
        case O_CAMERA: camera = v; break;
        case O_VLM: o.vlm.url = v; break;
        case O_VLM_MODEL: o.vlm.model = v; break;
        case O_PROMPT: prompt = v; break;
        case O_PROMPT_FILE: prompt_file = v; break;
        case O_SYSTEM_PROMPT: o.vlm.system_prompt = v; break;
        case O_MAX_TOKENS:
            bad = num(a, v, 1, 1000000, true, &d);
            o.vlm.max_tokens = (int)d;
            break;
        case O_TEMPERATURE: bad = num(a, v, 0, 2, false, &o.vlm.temperature); break;
        case O_VLM_FPS: bad = num(a, v, 0.001, 60, false, &o.vlm_fps); break;
        case O_VLM_MAX_FRAMES:
            bad = num(a, v, 1, 256, true, &d);
            o.vlm_max_frames = (int)d;
            break;
        case O_VLM_CONCURRENCY:
            bad = num(a, v, 1, 256, true, &d);
            o.vlm_concurrency = (int)d;
            break;
        case O_VLM_TIMEOUT: bad = num(a, v, 0.1, 86400, false, &o.vlm.timeout_s); break;
        case O_VLM_KEY_FILE: vlm_key_file = v; break;
        case O_VLM_CA: o.vlm.ca_file = v; break;
        case O_KAFKA: kafka = v; break;
        case O_RECONNECT_FOR: bad = num(a, v, 0, 0, false, &o.source.reconnect_for_s); break;
        case O_RTSP_TRANSPORT:
            if (strcmp(v, "tcp") != 0 && strcmp(v, "udp") != 0) {
                fprintf(stderr, "osprey segment: --rtsp-transport must be tcp or udp, not '%s'\n", v);
                return 2;
            }
            o.source.rtsp_udp = v[0] == 'u';
            break;
        case O_MAX_FRAME: {
            unsigned long long bytes;
            if (osp_args_max_frame("osprey segment", v, &bytes)) return 2;
            o.source.max_packet = (size_t)bytes;
            break;
        }
        case O_PROCEDURE: procedure = v; break;
        case O_SLOW_DESCRIBE_MS:
            bad = num(a, v, 0, 600000, true, &d);
            o.slow_describe_ms = (int)d;
            break;
        case ':':
            fprintf(stderr, "osprey segment: %s needs a value (see --help)\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "osprey segment: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
        if (bad) return 2;
    }
    if (!input) {
        usage(stderr);
        return 2;
    }
    if (o.vlm.url && !o.vlm.model) {
        fprintf(stderr, "osprey segment: --vlm needs --vlm-model\n");
        return 2;
    }
    if (o.chunk.max_len <= o.chunk.min_len && !o.chunk.uniform) {
        fprintf(stderr, "osprey segment: --max-length must exceed --min-length\n");
        return 2;
    }

    /* A camera URL is live (the source says so when it opens). sensor_id: a
     * camera URL's path stem, else --camera, else the file's stem; taken
     * from the masked name, so a login never becomes a sensor id. */
    char shown[256];
    osp_url_kind_t kind = osp_url_kind(input);
    osp_url_mask(input, shown, sizeof shown);
    if (kind == OSP_URL_UNKNOWN) {
        fprintf(stderr, "osprey segment: %s is not a source osprey reads (see --help)\n", shown);
        return 2;
    }
    if (kind == OSP_URL_FILE && osp_path_is_image(input)) {
        fprintf(stderr, "osprey segment: %s is an image, not a video\n", shown);
        return 2;
    }
    bool camera_url = osp_url_is_stream(kind) && kind != OSP_URL_DEVICE;
    char stem[256];
    const char *base = strrchr(shown, '/');
    base = base ? base + 1 : shown;
    snprintf(stem, sizeof stem, "%s", kind == OSP_URL_STDIN ? "stdin" : base);
    char *dot = strrchr(stem, '.');
    if (dot && dot != stem) *dot = 0;
    if (camera_url && strchr(strstr(shown, "://") + 3, '/') && stem[0])
        o.sensor_id = stem;
    else
        o.sensor_id = camera ? camera : stem;
    o.input = input;

    int status = 2;
    char *file_prompt = NULL;
    osp_proc_t *proc = NULL;
    osp_sink_t *sinks[2] = {NULL, NULL};
    char err[512] = "";
    char vlm_key[1024] = "";
    if (prompt_file && !(file_prompt = read_text(prompt_file))) {
        fprintf(stderr, "osprey segment: cannot read --prompt-file %s\n", prompt_file);
        goto out;
    }
    /* The prompt given with the request wins over the file. */
    if (prompt && prompt[0])
        o.prompt = prompt;
    else if (file_prompt && file_prompt[0])
        o.prompt = file_prompt;
    if (procedure && osp_proc_load(procedure, NULL, &proc, err, sizeof err)) {
        fprintf(stderr, "osprey segment: --procedure %s: %s\n", procedure, err);
        goto out;
    }
    o.procedure = proc;
    int key = osp_cli_secret("segment", "--vlm-key-file", vlm_key_file, "OSPREY_VLM_API_KEY",
                             vlm_key, sizeof vlm_key);
    if (key < 0) goto out;
    if (key && o.vlm.url) o.vlm.api_key = vlm_key;
    /* A broker that refuses the login stops the run as a signal would. */
    if (osp_cli_mqtt_open("segment", &mqtt, &g_stop, &sinks[0])) goto out;
    if (kafka) {
        char url[1200];
        snprintf(url, sizeof url, "kafka://%s", kafka);
        osp_sink_opts_t ko = {.prog = "segment"};
        if (osp_sink_open(url, &ko, &sinks[1], err, sizeof err)) {
            fprintf(stderr, "osprey segment: --kafka: %s\n", err);
            goto out;
        }
    }

    osp_cli_stop_on_signals(&g_stop);
    o.stop = &g_stop;
    o.emit = print_line;
    o.emit_ctx = sinks;
    event_ctx_t ectx = {.sinks = sinks, .sensor_id = o.sensor_id};
    o.source.on_event = on_source_event;
    o.source.ctx = &ectx;

    osp_segment_stats_t st;
    int rc = osp_segment_run(&o, &st, err, sizeof err);
    if (rc && st.frames_read == 0 && atomic_load(&g_stop)) {
        status = 0; /* stopped (a signal, or a sink that refused) before a frame was read */
        goto out;
    }
    if (rc && st.frames_read == 0) {
        /* the source's messages name it (masked); the others do not */
        if (strstr(err, shown))
            osp_log(OSP_LOG_ERROR, "osprey segment: %s", err);
        else
            osp_log(OSP_LOG_ERROR, "osprey segment: %s: %s", shown, err);
        status = err[0] && strstr(err, "VLM") ? 1 : 2;
        goto out;
    }
    if (err[0] && strstr(err, shown))
        osp_log(OSP_LOG_ERROR, "osprey segment: %s", err);
    else if (err[0])
        osp_log(OSP_LOG_ERROR, "osprey segment: %s: %s", shown, err);
    fprintf(stderr,
            "{\"segment_stats\": {\"fps\": %.3f, \"duration\": %.3f, \"frames_read\": %lld, "
            "\"frames_dropped\": %lld, \"frames_described\": %lld, \"chunks\": %lld, "
            "\"frame_queue\": %d, \"vlm_errors\": %lld, \"scores_skipped\": %lld, "
            "\"source_drops\": %lld, \"reconnects\": %lld, \"frames_lost\": %lld, "
            "\"stopped\": %s}}\n",
            st.fps, st.duration, (long long)st.frames_read, (long long)st.frames_dropped,
            (long long)st.frames_described, (long long)st.chunks, st.frame_queue_cap,
            (long long)st.vlm_errors, (long long)st.scores_skipped, (long long)st.source.drops,
            (long long)st.source.reconnects, (long long)st.source.frames_lost,
            atomic_load(&g_stop) ? "true" : "false");
    status = rc || st.source_rc == OSP_SOURCE_EGAVEUP ? 1 : 0;
out:
    for (int i = 0; i < 2; i++)
        if (osp_cli_sink_close("segment", sinks[i], i ? "kafka" : "mqtt") &&
            (status == 0 || atomic_load(&g_stop)))
            status = 1; /* a sink that delivered nothing, or refused and stopped the run */
    osp_cli_forget(vlm_key, sizeof vlm_key);
    osp_proc_free(proc);
    free(file_prompt);
    return status;
}
