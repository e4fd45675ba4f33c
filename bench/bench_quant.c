/*
 * bench_quant: the raw ONNX Runtime run loop of each int8 catalog model
 * against its float original, measured in turns in the same run: the float
 * limit (best of one session with N intra-op threads and N single-thread
 * sessions side by side), the int8 limit the same way, and their ratio.
 * Then the same two models run by run in turns on one thread each, which
 * a neighbour's load hits alike. Prints the CPU's integer-dot-product
 * flags beside the figures: without VNNI the gain may vanish.
 *
 *   bench_quant [CACHE_DIR] [--seconds S] [--runs R]
 *
 * Prints medians of R rounds. A benchmark, never a test: it asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define TURNS 600 /* rounds of the run-by-run comparison */

/* The flags of the first "flags" line of /proc/cpuinfo that matter here. */
static void cpu_flags(char *out, size_t n) {
    static const char *const want[] = {"avx2",     "avx512f",  "avx512_vnni",
                                       "avx_vnni", "amx_int8", "amx_tile"};
    char line[8192];
    size_t len = 0;
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "flags", 5) == 0) break;
    fclose(f);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char pat[40];
        snprintf(pat, sizeof pat, " %s", want[i]);
        const char *p = strstr(line, pat);
        int has = p && (p[strlen(pat)] == ' ' || p[strlen(pat)] == '\n');
        len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s%s", len ? " " : "",
                                has ? "" : "no-", want[i]);
    }
}

/* The better of the two arrangements of the limit, frames/s. */
static double limit_fps(const char *model, int cores, double seconds, int *best_sessions) {
    double one = bu_raw_fps("bench_quant", model, 1, cores, seconds, NULL);
    double side = bu_raw_fps("bench_quant", model, cores, 1, seconds, NULL);
    *best_sessions = side > one ? cores : 1;
    return side > one ? side : one;
}

/* One single-thread session of each model, run by run in turns (the order
 * swapped every round), `rounds` rounds: the median of the per-round ratio
 * float ms / int8 ms. Both runs of a round see nearly the same load, which
 * on a shared machine moves the limit above by 2x from one round to the
 * next. *fl_ms, *q_ms: the median run of each. */
static double turns_ratio(const char *fl_name, const char *q_name, int rounds, double *fl_ms,
                          double *q_ms, double *lo, double *hi) {
    osp_model_t *fl = bu_open_model("bench_quant", fl_name, 1);
    osp_model_t *q = bu_open_model("bench_quant", q_name, 1);
    osp_tensor_t in_fl, in_q;
    double *r = calloc((size_t)rounds, sizeof *r), *a = calloc((size_t)rounds, sizeof *a),
           *b = calloc((size_t)rounds, sizeof *b), med = 0;
    *fl_ms = *q_ms = *lo = *hi = 0;
    if (!r || !a || !b || bu_input(fl, NULL, 1, &in_fl)) goto done;
    if (bu_input(q, NULL, 1, &in_q)) {
        free(in_fl.data);
        goto done;
    }
    for (int i = 0; i < 10; i++) { /* warm-up */
        bu_run_ms("bench_quant", fl, &in_fl);
        bu_run_ms("bench_quant", q, &in_q);
    }
    int n = 0;
    for (int i = 0; i < rounds; i++) {
        double x, y;
        if (i % 2) {
            y = bu_run_ms("bench_quant", q, &in_q);
            x = bu_run_ms("bench_quant", fl, &in_fl);
        } else {
            x = bu_run_ms("bench_quant", fl, &in_fl);
            y = bu_run_ms("bench_quant", q, &in_q);
        }
        if (x <= 0 || y <= 0) break;
        a[n] = x;
        b[n] = y;
        r[n++] = x / y;
    }
    free(in_fl.data);
    free(in_q.data);
    if (n) {
        *fl_ms = bu_median(a, n);
        *q_ms = bu_median(b, n);
        med = bu_median(r, n); /* sorted now */
        *lo = r[n / 4];
        *hi = r[(3 * n) / 4];
    }
done:
    free(r);
    free(a);
    free(b);
    osp_model_free(fl);
    osp_model_free(q);
    return med;
}

int main(int argc, char **argv) {
    double seconds = 3;
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (argv[i][0] != '-')
            setenv("OSPREY_CACHE", argv[i], 1);
        else {
            fprintf(stderr, "usage: bench_quant [CACHE_DIR] [--seconds S] [--runs R]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 15) runs = 3;
    if (!(seconds > 0 && seconds <= 60)) seconds = 3;
    static const char *const pairs[][2] = {{"ssd-oidv4", "ssd-oidv4-int8"},
                                           {"ultraface", "ultraface-int8"}};
    int cores = bu_cores();
    char flags[256];
    cpu_flags(flags, sizeof flags);
    bu_quiet_loads = 1;
    printf("bench_quant: raw run loop, int8 vs float, in turns; %d cores; cpu flags: %s\n", cores,
           flags);
    printf("%-16s %12s %12s %8s   (medians of %d rounds of %.0f s per arrangement;"
           " 1 = one session x %d threads, %d = %d sessions x 1)\n",
           "model", "float f/s", "int8 f/s", "int8/fl", runs, seconds, cores, cores, cores);
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        double fl[15], q[15], ratio[15];
        int s_fl = 1, s_q = 1;
        for (int r = 0; r < runs; r++) {
            fl[r] = limit_fps(pairs[p][0], cores, seconds, &s_fl);
            q[r] = limit_fps(pairs[p][1], cores, seconds, &s_q);
            ratio[r] = fl[r] > 0 ? q[r] / fl[r] : 0;
        }
        double rmin = ratio[0], rmax = ratio[0];
        for (int r = 1; r < runs; r++) {
            if (ratio[r] < rmin) rmin = ratio[r];
            if (ratio[r] > rmax) rmax = ratio[r];
        }
        double mf = bu_median(fl, runs), mq = bu_median(q, runs), mr = bu_median(ratio, runs);
        printf("%-16s %9.1f (%d) %9.1f (%d) %7.2fx   (ratio %.2f-%.2f)\n", pairs[p][1], mf, s_fl,
               mq, s_q, mr, rmin, rmax);
        fflush(stdout);
    }
    printf("run by run in turns, one single-thread session each (%d rounds; medians, ratio quartiles):\n",
           TURNS);
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++) {
        double fms, qms, lo, hi;
        double r = turns_ratio(pairs[p][0], pairs[p][1], TURNS, &fms, &qms, &lo, &hi);
        printf("%-16s %9.3f ms   %9.3f ms   %7.2fx   (quartiles %.2f-%.2f)\n", pairs[p][1], fms,
               qms, r, lo, hi);
        fflush(stdout);
    }
    return 0;
}
