/*
 * loadgen: drives ospreyd (the pool worker) over its stdin/stdout pipes the
 * way a host does, and reports what it serves next to the limits of
 * MEASURING.md measured in the same run. A benchmark, never a test: it
 * asserts nothing, except that it says loudly when a request went
 * unanswered.
 *
 *   loadgen [--model NAME] [--frame raw|jpeg|shm] [--size WxH] [--mode closed|open]
 *           [--batch N[,N..]] [--inflight K[,K..]] [--rate R|Fx] [--seconds S]
 *           [--concurrency N] [--runs R] [--limit] [--limit-only] [--brief] [--json]
 *           [...]   (--help for all)
 *
 * --frame shm writes the frame once into a POSIX shared-memory region
 * (unlinked at exit, also on a fatal signal), registers it with each server
 * (register_shm) and sends infer_shm requests. --batch N sends infer_batch
 * requests of N raw frames with batch_mode "list"; frames/s counts frames,
 * latency is per request, and --limit runs the raw loop on a stacked [N,...]
 * tensor, so the limit compares at the same batch size. Lists of batch sizes
 * and K measure each combination in turn (one limit per batch size) and end
 * with what batch 4 gains over batch 1, raw and in ospreyd.
 *
 * Each run starts its own ospreyd (the binary beside this one), does the
 * handshake, warms up, optionally measures the limits, drives the load,
 * waits for every reply (grace period), closes stdin, waits for the exit and
 * SIGKILLs it after a grace period. Figures are medians over the runs.
 *
 * Load shapes:
 *  closed  K requests outstanding; the next is sent when a reply arrives.
 *  open    requests on a fixed schedule from one thread (non-blocking writes;
 *          a frame that cannot start on time because the pipe is full is
 *          sent as soon as it can and its lateness recorded) while another
 *          thread reads replies. "--rate 2x" first measures the closed-loop
 *          capacity (K = admission capacity) and the single-frame latency
 *          (K = 1) on the same server, then runs at twice that capacity.
 * Latency is send (first byte written) -> reply read, of served frames only.
 * Every timer is CLOCK_MONOTONIC; only the wire's deadlines are wall-clock.
 *
 * This file: the options, and main, which measures each configuration
 * (batch size x K) in turn.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <turbojpeg.h>

#include "bench_util.h"
#include "loadgen.h"

/* --explicit-config: the model's config the way a host of the Python worker
 * spells it (protocol §6), from the catalog values osprey itself resolved,
 * so that ospreyd and that worker can be driven with the same bytes. The
 * protocol names only four normalisations; the nearest one is sent, and the
 * exact mean/std beside it (osprey's extension keys, which the Python worker
 * ignores). The path is made absolute, as the server sees it. */
static char *explicit_model_json(const osp_model_cfg_t *c) {
    static const char *const norms[] = {"none", "imagenet", "scrfd"};
    const char *norm = "none";
    double best = INFINITY;
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) {
        float mn[3], sd[3];
        if (osp_norm_named(norms[i], mn, sd)) continue;
        double err = 0; /* worst difference of the tensor value at px 0 and 255, in units of its range */
        for (int ch = 0; ch < 3; ch++)
            for (int px = 0; px <= 255; px += 255) {
                double d = fabs((px - c->mean[ch]) / c->std[ch] - (px - mn[ch]) / sd[ch]);
                if (d * c->std[ch] / 255.0 > err) err = d * c->std[ch] / 255.0;
            }
        if (err < best) best = err, norm = norms[i];
    }
    if (best > 0.01)
        fprintf(stderr,
                "%s: note: no protocol normalisation matches %s's mean/std; sending '%s' (the nearest)\n",
                WHO, c->name, norm);
    char path[2100] = "", esc[2 * sizeof path];
    if (c->path[0] != '/' && getcwd(path, 1024)) strcat(path, "/");
    strncat(path, c->path, sizeof path - strlen(path) - 1);
    size_t j = 0;
    for (const char *p = path; *p && j + 2 < sizeof esc; p++) {
        if (*p == '"' || *p == '\\') esc[j++] = '\\';
        esc[j++] = *p;
    }
    esc[j] = '\0';
    char *out = malloc(sizeof esc + 1024);
    if (!out) return NULL;
    snprintf(out, sizeof esc + 1024,
             "{\"path\":\"%s\",\"postprocessor\":\"%s\",\"inputSize\":%d,\"inputWidth\":%d,\"inputHeight\":%d,"
             "\"inputChannels\":%d,\"preprocessMode\":\"%s\",\"inputNormalization\":\"%s\","
             "\"mean\":[%.6g,%.6g,%.6g],\"std\":[%.6g,%.6g,%.6g],\"confidence\":%.6g,"
             "\"nmsIouThreshold\":%.6g,\"maxDetections\":%d}",
             esc, c->postprocessor, c->width > c->height ? c->width : c->height, c->width,
             c->height, c->channels, c->fit == OSP_FIT_RESIZE ? "resize" : "letterbox", norm,
             c->mean[0], c->mean[1], c->mean[2], c->std[0], c->std[1], c->std[2], c->confidence,
             c->nms_iou, c->max_detections);
    return out;
}

static void usage(FILE *out) {
    fputs("usage: loadgen [options]\n"
          "  --model NAME         catalog model (default ssd-oidv4)\n"
          "  --frame raw|jpeg|shm infer_raw RGB, infer_jpeg, or infer_shm from a POSIX\n"
          "                       shared-memory region written once (default raw)\n"
          "  --batch N[,N...]     infer_batch of N raw frames (batch_mode list); frames/s\n"
          "                       counts frames, latency is per request; a list measures\n"
          "                       each size in turn (with --limit: the raw loop at N too)\n"
          "  --batch-frame-id ID  infer_batch frame_id (default 0: every item prepared)\n"
          "  --size WxH           frame size (default: the model input)\n"
          "  --image PATH         source picture (default <cache>/media/messi5.jpg), scaled to WxH\n"
          "  --quality Q          JPEG quality (default 90, 4:2:0)\n"
          "  --mode closed|open   load shape (default closed)\n"
          "  --inflight K[,K...]  closed loop: requests outstanding (default concurrency+2);\n"
          "                       a list measures each K in turn\n"
          "  --rate R|Fx          open loop: frames/s, or F x the closed-loop capacity\n"
          "  --seconds S          measured phase (default 10)\n"
          "  --concurrency N      the config's concurrency (default 2)\n"
          "  --runs R             runs, each on a fresh server; medians (default 3)\n"
          "  --limit              also measure the raw runtime limit (and the pipeline\n"
          "                       limit for big or JPEG frames) in each run, before\n"
          "                       and after its closed-loop phase (the mean); at\n"
          "                       --inflight 1, also requests and raw runs in turns for\n"
          "                       --seconds (K=1 latency over the raw run, paired),\n"
          "                       and the frame's bytes through a pipe alone\n"
          "  --limit-seconds S    per limit configuration (default 3)\n"
          "  --limit-only         the limit alone (one line per --batch size), no server\n"
          "  --brief              one line per measurement instead of the table\n"
          "  --brief-header       print the column names of --brief lines and exit\n"
          "  --warmup S           untimed warm-up (default 1)\n"
          "  --latency-seconds S  open loop: K=1 phase for the single-frame latency (default 3)\n"
          "  --capacity-seconds S open loop Fx: capacity phase, run before the load (it sets\n"
          "                       the rate) and again after it; goodput is divided by\n"
          "                       the mean of the two (default 5)\n"
          "  --deadline-ms D      wire-v2 deadline D ms after sending (default 0: none); a\n"
          "                       negative D: -D ms before sending, every frame shed at\n"
          "                       the gate (the server's CPU per shed frame)\n"
          "  --grace S            wait for replies / for the exit (default 5)\n"
          "  --threads            per-thread CPU of the server in the measured phase, and\n"
          "                       its mem_stats counters (frames prepared as read, parked,\n"
          "                       shed for a full queue; bytes relayed; lone runs) over\n"
          "                       that phase\n"
          "  --plain-write        copy frames into the pipe with writev(2); by default their\n"
          "                       pages are handed over with vmsplice(2), so the load\n"
          "                       generator's own copying stays off the server's cores\n"
          "  --server PATH        ospreyd to run (default: beside this binary); any program\n"
          "                       that speaks the protocol on stdin/stdout, run without arguments\n"
          "  --explicit-config    send the model's config spelled out (path, input size, fit,\n"
          "                       normalisation, thresholds: the catalog's values) instead of\n"
          "                       its catalog name, as a host of the Python worker does\n"
          "  --print-config       print that config of --model and exit\n"
          "  --label TEXT         a name for this configuration in the output\n"
          "  --json               one machine-readable line on stdout instead of the table\n",
          out);
}

static int parse_size(const char *s, int *w, int *h) {
    return sscanf(s, "%dx%d", w, h) == 2 && *w > 0 && *h > 0 && *w <= OSP_IMG_MAX_SIDE &&
                   *h <= OSP_IMG_MAX_SIDE
               ? 0
               : -1;
}

/* "1,4,16" -> v[]; the count, or -1. */
static int parse_list(const char *s, int *v, int lo, int hi) {
    int n = 0;
    while (*s) {
        char *e;
        long x = strtol(s, &e, 10);
        if (e == s || x < lo || x > hi || n == MAX_LIST) return -1;
        v[n++] = (int)x;
        s = e;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n ? n : -1;
}

int main(int argc, char **argv) {
    opts_t o = {.model = "ssd-oidv4",
                .seconds = 10,
                .concurrency = 2,
                .runs = 3,
                .limit_seconds = 3,
                .warmup_s = 1,
                .lat_s = 3,
                .cal_s = 5,
                .grace_s = 5,
                .quality = 90};
    int quiet = 0; /* the model loads' own lines kept off stderr */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (ARG("--model"))
            o.model = v;
        else if (ARG("--frame")) {
            o.jpeg = o.shm = 0;
            if (strcmp(v, "jpeg") == 0)
                o.jpeg = 1;
            else if (strcmp(v, "shm") == 0)
                o.shm = 1;
            else if (strcmp(v, "raw") != 0)
                goto bad;
        } else if (ARG("--batch")) {
            if ((o.nbatches = parse_list(v, o.batches, 1, 255)) < 0) goto bad;
        } else if (ARG("--batch-frame-id")) {
            o.batch_tag = (uint32_t)strtoul(v, NULL, 10);
        } else if (ARG("--size")) {
            if (parse_size(v, &o.w, &o.h)) goto bad;
        } else if (ARG("--image"))
            o.image = v;
        else if (ARG("--quality"))
            o.quality = atoi(v);
        else if (ARG("--mode")) {
            if (strcmp(v, "open") == 0)
                o.open = 1;
            else if (strcmp(v, "closed") == 0)
                o.open = 0;
            else
                goto bad;
        } else if (ARG("--inflight")) {
            if ((o.nks = parse_list(v, o.ks, 0, 4096)) < 0) goto bad;
        } else if (ARG("--rate")) {
            size_t l = strlen(v);
            if (l && (v[l - 1] == 'x' || v[l - 1] == 'X'))
                o.rate_x = atof(v);
            else
                o.rate = atof(v);
            if (o.rate <= 0 && o.rate_x <= 0) goto bad;
        } else if (ARG("--seconds"))
            o.seconds = atof(v);
        else if (ARG("--concurrency"))
            o.concurrency = atoi(v);
        else if (ARG("--runs"))
            o.runs = atoi(v);
        else if (ARG("--limit-seconds"))
            o.limit_seconds = atof(v);
        else if (ARG("--warmup"))
            o.warmup_s = atof(v);
        else if (ARG("--latency-seconds"))
            o.lat_s = atof(v);
        else if (ARG("--capacity-seconds"))
            o.cal_s = atof(v);
        else if (ARG("--deadline-ms"))
            o.deadline_ms = atof(v);
        else if (ARG("--grace"))
            o.grace_s = atof(v);
        else if (ARG("--server"))
            o.server = v;
        else if (ARG("--label"))
            o.label = v;
        else if (strcmp(a, "--limit") == 0)
            o.limit = 1;
        else if (strcmp(a, "--limit-only") == 0)
            o.limit_only = o.limit = quiet = 1;
        else if (strcmp(a, "--brief") == 0)
            o.brief = quiet = 1;
        else if (strcmp(a, "--brief-header") == 0) {
            printf("  %-40s %-8s %7s %7s %7s %7s %5s\n", "measurement (--brief)", "shape", "f/s",
                   "p50 ms", "p99 ms", "limit", "ratio");
            return 0;
        } else if (strcmp(a, "--json") == 0)
            o.json = 1;
        else if (strcmp(a, "--threads") == 0)
            o.threads = 1;
        else if (strcmp(a, "--plain-write") == 0)
            o.plain_write = 1;
        else if (strcmp(a, "--explicit-config") == 0)
            o.model_json = "";
        else if (strcmp(a, "--print-config") == 0)
            o.model_json = "print", quiet = 1;
        else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
        bad:
            fprintf(stderr, "%s: bad argument '%s'\n", WHO, a);
            usage(stderr);
            return 2;
        }
#undef ARG
    }
    if (o.runs < 1 || o.runs > MAX_RUNS || o.seconds <= 0 || o.seconds > 600 ||
        o.concurrency < 1 || o.concurrency > 64 || o.quality < 1 || o.quality > 100 ||
        o.grace_s < 0.1 || o.grace_s > 120 || o.limit_seconds <= 0 || o.lat_s <= 0 ||
        o.cal_s <= 0 || o.warmup_s < 0 || o.rate > 100000 || o.rate_x > 100) {
        fprintf(stderr, "%s: an option is out of range\n", WHO);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    char server[1100];
    if (o.server) {
        snprintf(server, sizeof server, "%s", o.server);
    } else {
        ssize_t len = readlink("/proc/self/exe", server, sizeof server - 16);
        if (len <= 0) return 1;
        server[len] = '\0';
        strcpy(strrchr(server, '/') + 1, "ospreyd");
    }
    /* the model once here: its input size, and the prep the pipeline limit packs for */
    if (quiet) lg_quiet_loads();
    osp_model_t *m = lg_open_model(o.model, 1);
    int print_cfg = o.model_json && strcmp(o.model_json, "print") == 0;
    if (o.model_json && !(o.model_json = explicit_model_json(&m->cfg))) return 1;
    if (print_cfg) {
        printf("%s\n", o.model_json);
        return 0;
    }
    if (o.w == 0) {
        o.w = m->prep.width;
        o.h = m->prep.height;
    }
    if (o.nbatches && (o.jpeg || o.shm || o.open)) {
        fprintf(stderr, "%s: --batch sends raw frames in a closed loop\n", WHO);
        return 2;
    }
    frame_t f = {0};
    if (lg_make_frame(&o, &f)) return 1;
    if (o.shm && lg_shm_create(f.rgb, (size_t)o.w * o.h * 3)) return 1;
    lg_recs = calloc(REC_CAP, sizeof *lg_recs);
    run_t *runs = calloc((size_t)o.runs, sizeof *runs);
    if (!lg_recs || !runs) return 1;
    if (!o.nbatches) o.batches[o.nbatches++] = 0; /* single-frame requests */
    if (!o.nks) o.ks[o.nks++] = 0;                /* the admission capacity */
    int rc = 0;
    if (o.limit_only) {
        for (int b = 0; b < o.nbatches; b++) {
            o.batch = o.batches[b];
            limit_t L = {0};
            char la[64];
            lg_loadavg(la, sizeof la);
            lg_measure_limit(&o, &f, m, &L);
            lg_lim_fps[b] = L.limit;
            lg_lim_cpu[b] = L.cpu_frame * 1e3;
            int n = bu_cores();
            printf("  %-40s %8.1f f/s  (1x%d thr %.1f, %dx1 thr %.1f)%s  load %s\n",
                   lg_limit_name(&o, o.batch > 0 ? o.batch : 1), L.limit, n, L.one, n, L.many,
                   o.batch > 1 && L.batch == 1 ? "  [no dynamic batch axis: one by one]" : "", la);
            fflush(stdout);
        }
    } else {
        for (int b = 0; b < o.nbatches; b++)
            for (int q = 0; q < o.nks; q++) {
                o.batch = o.batches[b];
                o.inflight = o.ks[q];
                o.limit_reuse = q > 0;
                lg_cur_b = b;
                lg_cur_q = q;
                if (o.batch > 0 && f.nitems != o.batch && lg_make_batch_items(&o, &f, o.batch))
                    return 1;
                int r1 = lg_measure_config(&o, server, &f, m, runs, &lg_fps_at[b][q], &lg_lim_fps[b]);
                if (r1 > rc) rc = r1;
            }
    }
    if (o.nbatches > 1) lg_batch_gain(&o, m);
    tjFree(f.jpg);
    free(f.rgb);
    free(f.items);
    free(lg_recs);
    free(lg_tensor);
    free(runs);
    osp_model_free(m);
    lg_shm_cleanup();
    return rc;
}
