/*
 * osprey listen: voice activity in a WAV file with Silero VAD, through the
 * streaming scorer (src/stream/). Speech segments are printed as JSON lines
 * as they close. --live replays the file at real time: the scorer's worker
 * runs the model while the main thread keeps the pace, and every new reading
 * is printed with its age, the lag a live display would show.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "cli/cli.h"
#include "model/model.h"
#include "stream/stream.h"
#include "log/log.h"

#define RATE 16000
#define CHUNK 512          /* samples per model call at 16 kHz (32 ms) */
#define MIN_SILENCE_MS 250 /* a pause this long ends a segment */
#define MIN_SPEECH_MS 250  /* shorter segments are dropped */
#define PAD_MS 30          /* added on each side of a segment */
#define LIVE_BACKLOG 32    /* frames (1 s) the live worker may lag before skipping */

static void usage(FILE *out) {
    fputs("usage: osprey listen INPUT.wav [--model silero-vad|FILE.onnx] [--threshold T] [--live]\n"
          "\n"
          "Finds speech in a WAV file (PCM 16-bit, mono or stereo, any rate; other rates\n"
          "are resampled linearly to 16 kHz) with Silero VAD, one 32 ms chunk at a time,\n"
          "its recurrent state carried from chunk to chunk. Prints one JSON line per\n"
          "speech segment: {\"start\": s, \"end\": s, \"peak\": p} (seconds, peak speech\n"
          "probability). A segment starts at a chunk scoring >= T and ends after 250 ms\n"
          "below T - 0.15; segments shorter than 250 ms are dropped; 30 ms is added on\n"
          "each side.\n"
          "\n"
          "  --model M      silero-vad (default: $OSPREY_CACHE/models/silero_vad_v5.onnx,\n"
          "                 from scripts/fetch-assets.sh) or a Silero VAD .onnx file\n"
          "                 (v5 with state/stateN, or v4 with h/c)\n"
          "  --threshold T  speech probability that starts a segment, 0 < T < 1 (default 0.5)\n"
          "  --live         replay the file at real time through the background scorer;\n"
          "                 also prints each new reading as {\"live\": {\"t\": s, \"score\": p,\n"
          "                 \"age_ms\": ms, \"skipped\": n}} where age_ms is how far the\n"
          "                 reading trails the newest audio pushed\n"
          "\n"
          "Exit status: 0 done, 1 the model could not be loaded or run, 2 bad usage or input.\n",
          out);
}

typedef struct {
    pthread_mutex_t print_lock; /* stdout lines from the worker and the main thread */
    osp_vad_seg_t seg;          /* fed in frame order by the scoring thread only */
    double duration;
    int64_t scored;
} listen_t;

static void print_segment(listen_t *l, const osp_vad_segment_t *s) {
    double start = (double)s->start * CHUNK / RATE - PAD_MS / 1000.0;
    double end = (double)s->end * CHUNK / RATE + PAD_MS / 1000.0;
    if (start < 0) start = 0;
    if (end > l->duration) end = l->duration;
    pthread_mutex_lock(&l->print_lock);
    printf("{\"start\": %.3f, \"end\": %.3f, \"peak\": %.4f}\n", start, end, s->peak);
    fflush(stdout);
    pthread_mutex_unlock(&l->print_lock);
}

/* The scorer's sink: every chunk's probability, in order, on the scoring
 * thread. */
static void on_score(void *ctx, int64_t frame, const float *out, int out_len) {
    listen_t *l = ctx;
    osp_vad_segment_t s;
    l->scored++;
    if (out_len >= 1 && osp_vad_seg_feed(&l->seg, frame, out[0], &s)) print_segment(l, &s);
}

int osp_cmd_listen(int argc, char **argv) {
    const char *input = NULL, *model_arg = "silero-vad";
    float threshold = 0.5f;
    int live = 0;
    static const struct option longopts[] = {{"help", no_argument, NULL, 'h'},
                                             {"live", no_argument, NULL, 'L'},
                                             {"model", required_argument, NULL, 'm'},
                                             {"threshold", required_argument, NULL, 't'},
                                             {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    opterr = 0; /* the messages below are this command's own */
    /* "-": the input in its place among the options; ":": a missing value is told apart */
    while ((c = getopt_long(argc, argv, "-:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'h': usage(stdout); return 0;
        case 'L': live = 1; break;
        case 'm': model_arg = optarg; break;
        case 't': {
            char *end;
            threshold = strtof(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(threshold > 0.0f && threshold < 1.0f)) {
                fprintf(stderr,
                        "osprey listen: --threshold must be a number between 0 and 1, not '%s'\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 1:
            if (input) {
                fprintf(stderr, "osprey listen: one input file, not '%s' and '%s'\n", input, optarg);
                return 2;
            }
            input = optarg;
            break;
        case ':': fprintf(stderr, "osprey listen: %s needs a value\n", argv[optind - 1]); return 2;
        default:
            fprintf(stderr, "osprey listen: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (!input) {
        usage(stderr);
        return 2;
    }

    char path[1024], err[512];
    if (strcmp(model_arg, "silero-vad") == 0) {
        osp_catalog_file("silero_vad_v5.onnx", path, sizeof path);
    } else if (strchr(model_arg, '/') || strstr(model_arg, ".onnx")) {
        snprintf(path, sizeof path, "%s", model_arg);
    } else {
        fprintf(stderr, "osprey listen: unknown model '%s' (silero-vad, or a .onnx file)\n",
                model_arg);
        return 2;
    }

    float *samples = NULL;
    size_t n = 0;
    int rate_in = 0;
    if (osp_wav_read(input, RATE, &samples, &n, &rate_in, err, sizeof err) != 0) {
        osp_log(OSP_LOG_ERROR, "osprey listen: %s", err);
        return 2;
    }

    int status = 1;
    osp_rt_model_t *m = NULL;
    osp_stream_ort_t *bind = NULL;
    osp_stream_t *s = NULL;
    listen_t l = {.duration = (double)n / RATE};
    pthread_mutex_init(&l.print_lock, NULL);
    osp_vad_seg_init(&l.seg, threshold, (MIN_SILENCE_MS * RATE / 1000 + CHUNK - 1) / CHUNK,
                     (MIN_SPEECH_MS * RATE / 1000 + CHUNK - 1) / CHUNK);

    osp_rt_opts_t ro = {.intra_threads = 1, .device = "cpu"};
    if (osp_backend_onnxruntime.load(path, &ro, &m, err, sizeof err) != 0) {
        osp_log(OSP_LOG_ERROR, "osprey listen: %s%s", err,
                strcmp(model_arg, "silero-vad") == 0 ? " (run scripts/fetch-assets.sh)" : "");
        goto done;
    }
    /* v5 carries one state tensor; the v4 export carries h and c */
    osp_stream_ort_spec_t spec = {.input = "input",
                                  .output = "output",
                                  .int_input = "sr",
                                  .int_value = RATE};
    int v4 = 0;
    for (int i = 0; i < m->n_inputs; i++)
        if (strcmp(m->inputs[i].name, "h") == 0) v4 = 1;
    if (v4) {
        spec.n_state = 2;
        spec.state_in[0] = "h", spec.state_out[0] = "hn";
        spec.state_in[1] = "c", spec.state_out[1] = "cn";
    } else {
        spec.n_state = 1;
        spec.state_in[0] = "state", spec.state_out[0] = "stateN";
    }
    if (osp_stream_ort_new(m, &spec, &bind, err, sizeof err) != 0) {
        osp_log(OSP_LOG_ERROR, "osprey listen: %s is not a Silero VAD model: %s", path, err);
        goto done;
    }
    osp_stream_config_t cfg = {.frame_len = CHUNK, .channels = 1};
    if (live) cfg.window = 1, cfg.stride = 1, cfg.backlog = LIVE_BACKLOG;
    osp_stream_fn_t fn = osp_stream_ort_fn(bind);
    if (osp_stream_new(&cfg, &fn, &s, err, sizeof err) != 0) {
        osp_log(OSP_LOG_ERROR, "osprey listen: %s", err);
        goto done;
    }
    osp_stream_set_sink(s, on_score, &l);
    if (osp_stream_start(s, err, sizeof err) != 0) {
        osp_log(OSP_LOG_ERROR, "osprey listen: %s", err);
        goto done;
    }

    size_t chunks = n / CHUNK; /* a short tail is not scored: no padding */
    struct timespec next;
    osp_now(&next);
    int64_t shown = 0;
    for (size_t i = 0; i < chunks; i++) {
        if (live) {
            osp_sleep_until(&next);
            osp_timespec_add_ms(&next, (double)CHUNK * 1000 / RATE);
        }
        osp_stream_push(s, samples + i * CHUNK);
        if (!live) continue;
        osp_stream_reading_t r;
        osp_stream_latest(s, &r);
        if (r.warming_up || r.windows_completed == shown) continue;
        shown = r.windows_completed;
        pthread_mutex_lock(&l.print_lock);
        printf("{\"live\": {\"t\": %.3f, \"score\": %.4f, \"age_ms\": %.0f, \"skipped\": %lld}}\n",
               (double)(r.frame_index + 1) * CHUNK / RATE, r.scores[0],
               (double)r.age_frames * CHUNK * 1000.0 / RATE, (long long)r.skipped);
        fflush(stdout);
        pthread_mutex_unlock(&l.print_lock);
    }
    if (osp_stream_drain(s, 10000) != 0 || osp_stream_stop(s) != 0) {
        osp_log(OSP_LOG_ERROR, "osprey listen: the scorer did not finish");
        goto done;
    }
    osp_stream_reading_t r;
    osp_stream_latest(s, &r);
    osp_vad_segment_t seg;
    if (osp_vad_seg_finish(&l.seg, &seg)) print_segment(&l, &seg);
    if (r.failures > 0) {
        osp_log(OSP_LOG_ERROR, "osprey listen: %lld of %zu chunks failed to score",
                (long long)r.failures, chunks);
        goto done;
    }
    fprintf(stderr, "osprey listen: %zu chunks of %d samples (%.2f s at %d Hz%s), %lld scored%s\n",
            chunks, CHUNK, l.duration, rate_in, rate_in != RATE ? ", resampled to 16 kHz" : "",
            (long long)r.windows_completed, live ? " live" : "");
    status = 0;
done:
    osp_stream_free(s);
    osp_stream_ort_free(bind);
    osp_rt_model_free(m);
    pthread_mutex_destroy(&l.print_lock);
    free(samples);
    return status;
}
