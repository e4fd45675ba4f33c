/*
 * loadgen/report: what a configuration's runs add up to: medians (with the
 * range where the runs disagree by more than 10 %), as a table, one --brief
 * line or one --json line, and after a --batch list what batching gains.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "loadgen.h"

typedef struct {
    double med, lo, hi;
} agg_t;

static agg_t agg(const run_t *r, int n, double (*get)(const run_t *)) {
    double v[MAX_RUNS];
    for (int i = 0; i < n; i++) v[i] = get(&r[i]);
    agg_t a = {.med = bu_median(v, n), .lo = v[0], .hi = v[n - 1]};
    return a;
}

#define GETTER(name, expr) \
    static double name(const run_t *r) { return (double)(expr); }
GETTER(g_fps, r->main.fps)
GETTER(g_p50, r->main.p50)
GETTER(g_p99, r->main.p99)
GETTER(g_pmax, r->main.pmax)
GETTER(g_qfull, r->main.qfull)
GETTER(g_deadline, r->main.deadline)
GETTER(g_errors, r->main.errors)
GETTER(g_dropo, r->main.drop_other)
GETTER(g_sent, r->main.sent)
GETTER(g_rss5, r->rss_mark)
GETTER(g_rssend, r->rss_end)
GETTER(g_rssdr, r->rss_drained)
GETTER(g_rssmax, r->rss_max)
GETTER(g_drift, r->rss_mark > 0 ? 100.0 * (double)(r->rss_end - r->rss_mark) / (double)r->rss_mark : 0)
GETTER(g_lim, r->lim.limit)
GETTER(g_one, r->lim.one)
/* K=1: p50 over the raw run time (the median call of the 1 x N-thread
 * session, the faster of its spinning and sleeping helper threads) */
GETTER(g_over1, r->lim.one_ms > 0 ? r->main.p50 - r->lim.one_ms : 0)
/* K=1, paired phase: p50 over the raw run measured in turns with it */
GETTER(g_over1p, r->pair_raw > 0 ? r->pair_lat - r->pair_raw : 0)
GETTER(g_pairraw, r->pair_raw)
GETTER(g_pairpipe, r->pair_pipe)
GETTER(g_many, r->lim.many)
GETTER(g_pipe, r->lim.pipeline)
GETTER(g_cpuf, r->lim.cpu_frame * 1e3)
GETTER(g_effc, r->lim.eff_cores)
GETTER(g_pipecpu, r->lim.pipe_cpu_ms)
GETTER(g_cpueff, r->srv_cpu_frame > 0 ? r->lim.pipe_cpu_ms / (r->srv_cpu_frame * 1e3) : 0)
GETTER(g_tdec, r->lim.t_decode)
GETTER(g_tres, r->lim.t_resize)
GETTER(g_tpack, r->lim.t_pack)
GETTER(g_ratio, r->lim.limit > 0 ? r->main.fps / r->lim.limit : 0)
GETTER(g_pratio, r->lim.pipeline > 0 ? r->main.fps / r->lim.pipeline : 0)
GETTER(g_lat1, r->lat1_p50)
GETTER(g_cap, r->capacity)
GETTER(g_capb, r->cap_before)
GETTER(g_capa, r->cap_after)
GETTER(g_rate, r->rate)
GETTER(g_sentrate,
       r->ph.t_stop > r->ph.t0 ? (double)r->main.sent / ((double)(r->ph.t_stop - r->ph.t0) / 1e9) : 0)
GETTER(g_good, r->capacity > 0 ? r->main.fps / r->capacity : 0)
GETTER(g_p99x, r->lat1_p50 > 0 ? r->main.p99 / r->lat1_p50 : 0)
GETTER(g_latep99, r->ph.late_p99_ms)
GETTER(g_latemax, r->ph.late_max_ms)
GETTER(g_laten, r->ph.late_n)
GETTER(g_srvcpu, r->srv_cpu_frame * 1e3)
GETTER(g_srvshed, r->srv_cpu_shed * 1e3)
GETTER(g_srvutil, r->srv_cpu_util)
GETTER(g_cliutil, r->cli_cpu_util)

static void line(const char *what, agg_t a, const char *fmt, int show_range) {
    char v[64], rng[96] = "";
    snprintf(v, sizeof v, fmt, a.med);
    double wide = a.med != 0 ? (a.hi - a.lo) / fabs(a.med) : (a.hi != a.lo);
    if (show_range && wide > 0.10) {
        char lo[32], hi[32];
        snprintf(lo, sizeof lo, fmt, a.lo);
        snprintf(hi, sizeof hi, fmt, a.hi);
        snprintf(rng, sizeof rng, "   (min-max %s-%s)", lo, hi);
    }
    printf("  %-46s %12s%s\n", what, v, rng);
}

void lg_loadavg(char *buf, size_t n) {
    FILE *f = fopen("/proc/loadavg", "r");
    buf[0] = '\0';
    if (f) {
        if (fgets(buf, (int)n, f)) {
            char *sp = buf;
            for (int i = 0; i < 3 && sp; i++) sp = strchr(sp + 1, ' ');
            if (sp) *sp = '\0';
        }
        fclose(f);
    }
}

/* The measurement's name in --brief lines: the label, or model, format, size, batch. */
static const char *config_name(const opts_t *o) {
    static char b[128];
    if (o->label && o->batch <= 0) return o->label;
    int n = snprintf(b, sizeof b, "%s%s%s %s %dx%d", o->label ? o->label : "",
                     o->label ? ": " : "", o->model,
                     o->jpeg  ? "jpeg"
                     : o->shm ? "shm"
                              : "raw",
                     o->w, o->h);
    if (o->batch > 0 && n > 0 && (size_t)n < sizeof b)
        snprintf(b + n, sizeof b - (size_t)n, " batch %d", o->batch);
    return b;
}

const char *lg_limit_name(const opts_t *o, int batch) {
    static char b[128];
    snprintf(b, sizeof b, "%s limit, raw run loop, batch %d", o->model, batch);
    return b;
}

double lg_lim_fps[MAX_LIST], lg_fps_at[MAX_LIST][MAX_LIST];
/* CPU ms per frame, raw loop and server: contention-proof where fps is not */
double lg_lim_cpu[MAX_LIST];
static double srv_cpu_at[MAX_LIST][MAX_LIST];
int lg_cur_b, lg_cur_q;

/* After a --batch list: what batch 4 (or the largest) gains over batch 1,
 * in the raw loop and in ospreyd at each K, and the share ospreyd keeps;
 * then the raw loop's gain again, paired (lg_raw_gain_paired). */
void lg_batch_gain(const opts_t *o, const osp_model_t *m) {
    int b1 = -1, bn = -1;
    for (int i = 0; i < o->nbatches; i++) {
        if (o->batches[i] == 1) b1 = i;
        if (o->batches[i] == 4) bn = i;
    }
    if (bn < 0) bn = o->nbatches - 1;
    if (b1 < 0 || bn == b1 || !(lg_lim_fps[b1] > 0)) return;
    double raw = lg_lim_fps[bn] / lg_lim_fps[b1];
    printf("  batch %d vs 1: raw loop x%.2f", o->batches[bn], raw);
    if (!o->limit_only)
        for (int q = 0; q < o->nks; q++) {
            double g = lg_fps_at[b1][q] > 0 ? lg_fps_at[bn][q] / lg_fps_at[b1][q] : 0;
            printf("; ospreyd K=%d x%.2f (%.2f of the raw gain", o->ks[q], g, g / raw);
            if (raw > 1.02) printf(", %.2f of the raw speed-up", (g - 1) / (raw - 1));
            printf(")");
        }
    printf("\n");
    /* the same in CPU per frame, which a neighbour's load does not move much */
    if (lg_lim_cpu[b1] > 0 && lg_lim_cpu[bn] > 0) {
        double rawc = lg_lim_cpu[b1] / lg_lim_cpu[bn];
        printf("  batch %d vs 1, CPU per frame: raw loop %.2f -> %.2f ms (x%.2f)", o->batches[bn],
               lg_lim_cpu[b1], lg_lim_cpu[bn], rawc);
        if (!o->limit_only)
            for (int q = 0; q < o->nks; q++)
                if (srv_cpu_at[b1][q] > 0 && srv_cpu_at[bn][q] > 0) {
                    double g = srv_cpu_at[b1][q] / srv_cpu_at[bn][q];
                    printf("; ospreyd K=%d %.2f -> %.2f ms (x%.2f, %.2f of the raw gain)",
                           o->ks[q], srv_cpu_at[b1][q], srv_cpu_at[bn][q], g, g / rawc);
                }
        printf("\n");
    }
    if (!m->batch_dynamic) return; /* ospreyd runs such a model's items one by one */
    enum { ROUNDS = 3 };
    double paired = lg_raw_gain_paired(o, o->batches[bn], ROUNDS, 1.5);
    printf("  batch %d vs 1, raw loop paired (%d rounds, 1.5 s a configuration, in turns): x%.2f%s\n",
           o->batches[bn], ROUNDS, paired,
           paired > 0 && paired <= 1.0 ? ": the runtime gains nothing from batching here" : "");
}

/* One configuration (batch size, K): o->runs runs, each on a fresh server;
 * the report. *fps_out, *lim_out: the medians, for the batch-gain summary.
 * 0, 1 when every run failed, 3 when a request was lost. */
int lg_measure_config(const opts_t *op, const char *server, const frame_t *fp,
                      const osp_model_t *m, run_t *runs, double *fps_out, double *lim_out) {
    opts_t o = *op;
    const frame_t f = *fp;
    char la0[64], la1[64];
    lg_loadavg(la0, sizeof la0);
    int cap = o.concurrency + 2, k = o.inflight > 0 ? o.inflight : cap; /* cap: until a server reports */
    char shape[96];
    if (o.open) {
        if (o.rate_x > 0)
            snprintf(shape, sizeof shape, "open loop at %gx closed-loop capacity", o.rate_x);
        else
            snprintf(shape, sizeof shape, "open loop at %g frames/s", o.rate);
    } else {
        snprintf(shape, sizeof shape, "closed loop K=%d", k);
    }
    if (o.batch > 0) {
        size_t l = strlen(shape);
        snprintf(shape + l, sizeof shape - l, ", infer_batch of %d", o.batch);
    }
    const char *fmt_name = o.jpeg ? "JPEG" : o.shm ? "raw RGB via shm" : "raw RGB";
    if (!o.brief)
        fprintf(stderr,
                "%s: %s %s %dx%d (%zu bytes/frame), %s, concurrency %d, %d run(s) x %g s; load average %s\n",
                WHO, o.model, fmt_name, o.w, o.h, o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3,
                shape, o.concurrency, o.runs, o.seconds, la0);
    int ok = 0;
    for (int r = 0; r < o.runs; r++) {
        if (lg_do_run(&o, server, &f, m, &runs[ok])) {
            fprintf(stderr, "%s: run %d failed\n", WHO, r + 1);
            continue;
        }
        run_t *R = &runs[ok++];
        if (o.brief) continue;
        fprintf(stderr,
                "run %d: %.1f frames/s served, p50 %.1f ms, p99 %.1f ms, sent %ld, qfull %ld, deadline %ld, "
                "errors %ld, lost %ld, rss %ld->%ld KiB",
                r + 1, R->main.fps, R->main.p50, R->main.p99, R->main.sent, R->main.qfull,
                R->main.deadline, R->main.errors, R->lost, R->rss_mark, R->rss_end);
        if (o.limit)
            fprintf(stderr, ", limit %.1f (1x%d %.1f, %dx1 %.1f)", R->lim.limit, bu_cores(),
                    R->lim.one, bu_cores(), R->lim.many);
        if (o.limit && R->lim.pipeline_applies)
            fprintf(stderr, ", pipeline limit %.1f", R->lim.pipeline);
        if (o.open) fprintf(stderr, ", K=1 p50 %.1f ms", R->lat1_p50);
        if (o.rate_x > 0) fprintf(stderr, ", capacity %.1f, rate %.1f", R->capacity, R->rate);
        fprintf(stderr, "\n");
        if (o.threads) {
            fprintf(stderr, "  server threads, CPU s in the measured phase (%.1f s):\n",
                    (double)(R->ph.t_stop - R->ph.t0) / 1e9);
            for (int i = 0; i < R->threads_n; i++)
                if (R->tdelta[i].ticks > 0)
                    fprintf(stderr, "    %7d %-16s %7.2f\n", R->tdelta[i].tid, R->tdelta[i].comm,
                            ticks_s(R->tdelta[i].ticks));
            fprintf(stderr, "  server counters over the measured phase (mem_stats):");
            for (int i = 0; i < SC_N; i++)
                fprintf(stderr, " %s %ld", lg_sc_keys[i], R->counters[i]);
            fprintf(stderr, "\n");
            fprintf(stderr, "  RSS samples (KiB, 1/s):");
            for (int i = 0; i < R->nsamples; i++) fprintf(stderr, " %ld", R->samples[i]);
            fprintf(stderr, "\n");
        }
    }
    lg_loadavg(la1, sizeof la1);
    if (ok && o.inflight <= 0 && runs[0].workers > o.concurrency) {
        cap = runs[0].workers + 2;
        k = cap;
        if (!o.open && o.batch > 0)
            snprintf(shape, sizeof shape, "closed loop K=%d, infer_batch of %d", k, o.batch);
        else if (!o.open)
            snprintf(shape, sizeof shape, "closed loop K=%d", k);
    }
    if (!ok) {
        if (o.brief) printf("  %-40s FAILED (every run)\n", config_name(&o));
        return 1;
    }
    long lost = 0, late_ans = 0, unexpected = 0, not_sent = 0;
    int abnormal = 0;
    for (int i = 0; i < ok; i++) {
        lost += runs[i].lost;
        late_ans += runs[i].late_answers;
        unexpected += runs[i].unexpected;
        not_sent += runs[i].ph.not_sent;
        if (runs[i].killed || !WIFEXITED(runs[i].exit_status) || WEXITSTATUS(runs[i].exit_status))
            abnormal++;
    }
    agg_t fps = agg(runs, ok, g_fps), p50 = agg(runs, ok, g_p50), p99 = agg(runs, ok, g_p99);
    agg_t qf = agg(runs, ok, g_qfull), dl = agg(runs, ok, g_deadline), er = agg(runs, ok, g_errors);
    agg_t dro = agg(runs, ok, g_dropo), sent = agg(runs, ok, g_sent), pmax = agg(runs, ok, g_pmax);
    agg_t rss5 = agg(runs, ok, g_rss5), rsse = agg(runs, ok, g_rssend),
          drift = agg(runs, ok, g_drift);
    agg_t lim = agg(runs, ok, g_lim), one = agg(runs, ok, g_one), many = agg(runs, ok, g_many);
    agg_t pipe = agg(runs, ok, g_pipe), ratio = agg(runs, ok, g_ratio),
          pratio = agg(runs, ok, g_pratio);
    agg_t cpuf = agg(runs, ok, g_cpuf), tdec = agg(runs, ok, g_tdec), tres = agg(runs, ok, g_tres);
    agg_t sentrate = agg(runs, ok, g_sentrate);
    agg_t pipecpu = agg(runs, ok, g_pipecpu), cpueff = agg(runs, ok, g_cpueff);
    agg_t effc = agg(runs, ok, g_effc), rssdr = agg(runs, ok, g_rssdr),
          rssmax = agg(runs, ok, g_rssmax);
    agg_t tpack = agg(runs, ok, g_tpack), lat1 = agg(runs, ok, g_lat1), capa = agg(runs, ok, g_cap);
    agg_t rate = agg(runs, ok, g_rate), good = agg(runs, ok, g_good), p99x = agg(runs, ok, g_p99x);
    agg_t latep99 = agg(runs, ok, g_latep99), latemax = agg(runs, ok, g_latemax);
    agg_t laten = agg(runs, ok, g_laten), srvcpu = agg(runs, ok, g_srvcpu);
    agg_t srvshed = agg(runs, ok, g_srvshed);
    agg_t srvutil = agg(runs, ok, g_srvutil), cliutil = agg(runs, ok, g_cliutil);
    agg_t over1 = agg(runs, ok, g_over1), over1p = agg(runs, ok, g_over1p);
    agg_t pairraw = agg(runs, ok, g_pairraw), pairpipe = agg(runs, ok, g_pairpipe);
    agg_t capb = agg(runs, ok, g_capb), capa2 = agg(runs, ok, g_capa);
    int n = bu_cores();
    int pipe_applies = o.limit && runs[0].lim.pipeline_applies;

    *fps_out = fps.med;
    *lim_out = o.limit ? lim.med : 0;
    lg_lim_cpu[lg_cur_b] = o.limit ? cpuf.med : 0;
    srv_cpu_at[lg_cur_b][lg_cur_q] = srvcpu.med;
    if (o.brief) {
        char lim_s[48] = "", pipe_s[224] = "", bad[160] = "";
        if (o.limit) snprintf(lim_s, sizeof lim_s, "%7.1f %5.2f", lim.med, ratio.med);
        if (pipe_applies)
            snprintf(pipe_s, sizeof pipe_s, " (pipeline %.1f: %.2f)", pipe.med, pratio.med);
        if (o.limit && srvshed.med > 0) { /* nothing served: the CPU per shed frame */
            size_t l = strlen(pipe_s);
            snprintf(pipe_s + l, sizeof pipe_s - l, " shed cpu %.3f ms/frame, / raw run's %.2f: %.3f",
                     srvshed.med, cpuf.med, cpuf.med > 0 ? srvshed.med / cpuf.med : 0);
        } else if (o.limit) { /* CPU: raw (+ the steps) per frame / the server's per frame */
            size_t l = strlen(pipe_s);
            snprintf(pipe_s + l, sizeof pipe_s - l, " cpu %.2f", cpueff.med);
        }
        if (o.limit && !o.open && k == 1 && o.batch <= 1) { /* latency over one raw call */
            size_t l = strlen(pipe_s);
            snprintf(pipe_s + l, sizeof pipe_s - l, " p50-raw %+.1f ms, paired %+.2f ms (raw %.1f",
                     over1.med, over1p.med, pairraw.med);
            l = strlen(pipe_s);
            if (pairpipe.med > 0)
                snprintf(pipe_s + l, sizeof pipe_s - l, ", pipe alone %.2f)", pairpipe.med);
            else
                snprintf(pipe_s + l, sizeof pipe_s - l, ")");
        }
        if (qf.med || dl.med || er.med || dro.med || lost || abnormal)
            snprintf(bad, sizeof bad, "  qfull %.0f deadline %.0f errors %.0f other %.0f LOST %ld%s",
                     qf.med, dl.med, er.med, dro.med, lost, abnormal ? " ABNORMAL EXIT" : "");
        if (o.open) {
            char sh[48];
            snprintf(sh, sizeof sh, "open %.0f/s", rate.med);
            printf("  %-40s %-8s %7.1f %7.1f %7.1f %-13s%s  cap %.1f (%.1f before, %.1f after), goodput/cap %.2f, "
                   "K=1 p50 %.1f, p99/K=1 %.2f, RSS drift %+.2f%%%s  load %s\n",
                   config_name(&o), sh, fps.med, p50.med, p99.med, lim_s, pipe_s, capa.med,
                   capb.med, capa2.med, good.med, lat1.med, p99x.med, drift.med, bad, la1);
        } else {
            char sh[32];
            snprintf(sh, sizeof sh, "K=%d", k);
            printf("  %-40s %-8s %7.1f %7.1f %7.1f %-13s%s%s  load %s\n", config_name(&o), sh,
                   fps.med, p50.med, p99.med, lim_s, pipe_s, bad, la1);
        }
        fflush(stdout);
        return lost ? 3 : 0;
    }

    if (o.json) {
        printf("{\"label\":\"%s\",\"model\":\"%s\",\"frame\":\"%s\",\"size\":\"%dx%d\",\"frameBytes\":%zu,"
               "\"mode\":\"%s\",\"inflight\":%d,\"rate\":%.2f,\"rateX\":%.2f,\"seconds\":%g,"
               "\"concurrency\":%d,\"workers\":%d,\"cores\":%d,\"runs\":%d,\"loadavgStart\":\"%s\",\"loadavgEnd\":\"%s\","
               "\"fps\":%.2f,\"fpsMin\":%.2f,\"fpsMax\":%.2f,\"p50Ms\":%.2f,\"p99Ms\":%.2f,\"maxMs\":%.2f,"
               "\"sent\":%.0f,\"dropped\":{\"queueFull\":%.0f,\"deadlineExpired\":%.0f,\"other\":%.0f},"
               "\"errors\":%.0f,\"lost\":%ld,\"lateAnswers\":%ld,\"unexpectedReplies\":%ld,\"abnormalExits\":%d,"
               "\"rssAfter5sKb\":%.0f,\"rssEndKb\":%.0f,\"rssDriftPct\":%.2f,\"rssPeakKb\":%.0f,\"rssDrainedKb\":%.0f,"
               "\"serverCpuMsPerFrame\":%.2f,\"serverCpuMsPerShed\":%.3f,\"serverCpuUtil\":%.2f,"
               "\"clientCpuUtil\":%.2f",
               o.label ? o.label : "", o.model,
               o.jpeg  ? "jpeg"
               : o.shm ? "shm"
                       : "raw",
               o.w, o.h, o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3,
               o.open ? "open" : "closed", o.open ? 0 : k, rate.med, o.rate_x, o.seconds,
               o.concurrency, runs[0].workers, n, ok, la0, la1, fps.med, fps.lo, fps.hi, p50.med,
               p99.med, pmax.med, sent.med, qf.med, dl.med, dro.med, er.med, lost, late_ans,
               unexpected, abnormal, rss5.med, rsse.med, drift.med, rssmax.med, rssdr.med,
               srvcpu.med, srvshed.med, srvutil.med, cliutil.med);
        if (o.limit)
            printf(",\"limitFps\":%.2f,\"limit1xN\":%.2f,\"limitNx1\":%.2f,\"rawCpuMsPerFrame\":%.3f,"
                   "\"rawCores\":%.2f,\"ratioToLimit\":%.3f,\"rawPlusStepsCpuMs\":%.3f,\"cpuEfficiency\":%.3f",
                   lim.med, one.med, many.med, cpuf.med, effc.med, ratio.med, pipecpu.med,
                   cpueff.med);
        if (o.limit && !o.open && k == 1 && o.batch <= 1)
            printf(",\"pairedOverRawMs\":%.3f,\"pairedRawMs\":%.3f,\"pipeAloneMs\":%.3f",
                   over1p.med, pairraw.med, pairpipe.med);
        if (pipe_applies)
            printf(",\"pipelineLimitFps\":%.2f,\"decodeMs\":%.3f,\"resizeMs\":%.3f,\"packMs\":%.3f,"
                   "\"ratioToPipelineLimit\":%.3f",
                   pipe.med, tdec.med, tres.med, tpack.med, pratio.med);
        if (o.open)
            printf(",\"singleFrameP50Ms\":%.2f,\"p99OverSingle\":%.2f,\"lateStarts\":%.0f,"
                   "\"lateP99Ms\":%.2f,\"lateMaxMs\":%.2f,\"notSent\":%ld,\"sentRate\":%.2f",
                   lat1.med, p99x.med, laten.med, latep99.med, latemax.med, not_sent, sentrate.med);
        if (o.rate_x > 0)
            printf(",\"capacityFps\":%.2f,\"goodputOverCapacity\":%.3f", capa.med, good.med);
        printf(",\"batch\":%d}\n", o.batch);
        return lost ? 3 : 0;
    }

    printf("loadgen: %s%s%s, %s %dx%d (%zu bytes/frame), %s, concurrency %d (%d workers),\n"
           "  %d run(s) x %g s, medians; %d cores, load average %s at start, %s at end\n",
           o.label ? o.label : "", o.label ? ": " : "", o.model, fmt_name, o.w, o.h,
           o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3, shape, o.concurrency,
           runs[0].workers, ok, o.seconds, n, la0, la1);
    if (o.open) {
        line("single-frame latency, K=1 p50 (ms)", lat1, "%.1f", 1);
        if (o.rate_x > 0) {
            line("closed-loop capacity, K=running+2 (frames/s)", capa, "%.1f", 1);
            line("  measured before the load (sets the rate)", capb, "%.1f", 1);
            line("  measured after it", capa2, "%.1f", 1);
        }
        line("offered rate (frames/s)", rate, "%.1f", 1);
        line("achieved send rate (frames/s)", sentrate, "%.1f", 1);
    }
    line(o.open ? "goodput, served frames/s" : "served frames/s", fps, "%.1f", 1);
    line(o.batch > 0 ? "latency p50, served requests (ms)" : "latency p50, served (ms)", p50,
         "%.1f", 1);
    line(o.batch > 0 ? "latency p99, served requests (ms)" : "latency p99, served (ms)", p99,
         "%.1f", 1);
    line(o.batch > 0 ? "latency max, served requests (ms)" : "latency max, served (ms)", pmax,
         "%.1f", 1);
    line(o.batch > 0 ? "sent (requests)" : "sent", sent, "%.0f", 1);
    line("dropped, queue-full", qf, "%.0f", 1);
    line("dropped, deadline-expired", dl, "%.0f", 1);
    if (dro.hi > 0) line("dropped, other", dro, "%.0f", 1);
    line("errors", er, "%.0f", 1);
    if (o.open) {
        line("sends started >1 ms late (pipe full)", laten, "%.0f", 1);
        line("send lateness p99 (ms)", latep99, "%.1f", 1);
        line("send lateness max (ms)", latemax, "%.1f", 1);
    }
    line("server RSS after 5 s (MiB)", (agg_t){rss5.med / 1024, rss5.lo / 1024, rss5.hi / 1024},
         "%.1f", 1);
    line("server RSS at the end of the load (MiB)",
         (agg_t){rsse.med / 1024, rsse.lo / 1024, rsse.hi / 1024}, "%.1f", 1);
    line("server RSS peak, 1/s samples (MiB)",
         (agg_t){rssmax.med / 1024, rssmax.lo / 1024, rssmax.hi / 1024}, "%.1f", 1);
    line("server RSS after the drain (MiB)",
         (agg_t){rssdr.med / 1024, rssdr.lo / 1024, rssdr.hi / 1024}, "%.1f", 1);
    line("RSS drift end vs 5 s (%)", drift, "%+.2f", 0);
    line("server CPU per served frame (ms)", srvcpu, "%.2f", 1);
    if (srvshed.med > 0) line("server CPU per shed frame, none served (ms)", srvshed, "%.3f", 1);
    line("server CPU use (cores)", srvutil, "%.2f", 1);
    line("loadgen CPU use (cores)", cliutil, "%.2f", 1);
    if (o.limit) {
        char t[64];
        snprintf(t, sizeof t, "raw runtime, 1 session x %d threads, best of spin or sleep (fps)", n);
        line(t, one, "%.1f", 1);
        snprintf(t, sizeof t, "raw runtime, %d sessions x 1 thread (fps)", n);
        line(t, many, "%.1f", 1);
        line("the limit (fps)", lim, "%.1f", 1);
        if (!o.open && k == 1 && o.batch <= 1) {
            line("K=1: p50 over the median raw 1 x N run (ms)", over1, "%+.2f", 1);
            line("K=1, paired: p50 over the raw run in turns (ms)", over1p, "%+.2f", 1);
            line("  the raw run, in turns with the requests (ms)", pairraw, "%.2f", 1);
            if (pairpipe.med > 0)
                line("  the request's bytes through a pipe alone, in turns (ms)", pairpipe, "%.2f", 1);
        }
        line("  CPU per frame of that raw run (ms)", cpuf, "%.2f", 1);
        line("  cores that raw run got (fps x CPU/frame)", effc, "%.2f", 1);
        if (o.jpeg) line("  tjDecompress2, scaled, alone (ms)", tdec, "%.2f", 1);
        if (pipe_applies) line("  RGBScale to the model input, alone (ms)", tres, "%.2f", 1);
        line("  pack to the input tensor, alone (ms)", tpack, "%.2f", 1);
        if (pipe_applies) {
            line("pipeline limit (fps)", pipe, "%.1f", 1);
            line("served / pipeline limit", pratio, "%.2f", 1);
        }
        line("served / limit", ratio, "%.2f", 1);
        line("raw CPU per frame incl. the steps (ms)", pipecpu, "%.2f", 1);
        line("  / server CPU per served frame", cpueff, "%.2f", 1);
    }
    if (o.rate_x > 0) {
        line("goodput / closed-loop capacity", good, "%.2f", 1);
        line("p99 / single-frame latency", p99x, "%.2f", 1);
    }
    printf("  %-46s %12ld%s\n", "LOST (sent, never answered), all runs", lost,
           lost ? "   <-- MUST BE 0" : "   (ok)");
    if (late_ans || unexpected || not_sent || abnormal)
        printf("  note: %ld answered only after the grace period, %ld unexpected replies, "
               "%ld scheduled frames never sent, %d abnormal server exits\n",
               late_ans, unexpected, not_sent, abnormal);
    return lost ? 3 : 0;
}
