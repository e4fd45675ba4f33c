/*
 * bench_detect: osprey detect's throughput on vtest.avi against the limit
 * measured in the same run — the raw ONNX Runtime run loop on the same
 * model and a pre-made input, at its best of one session with N intra-op
 * threads and N single-thread sessions side by side.
 *
 *   bench_detect [CACHE_DIR] [--model NAME] [--seconds S] [--runs R]
 *
 * Prints medians of R runs. A benchmark, never a test: it asserts nothing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "model/model.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct {
    osp_model_t *m;
    double seconds;
    long runs;
} loop_t;

/* The raw loop: the runtime on a pre-made input, nothing else. */
static void *raw_loop(void *arg) {
    loop_t *l = arg;
    osp_model_t *m = l->m;
    size_t bytes = osp_prep_tensor_bytes(&m->prep);
    float *input = calloc(1, bytes);
    osp_tensor_t in = {.dtype = m->rt->inputs[0].dtype, .rank = 4, .data = input, .bytes = bytes};
    memcpy(in.dims, m->rt->inputs[0].dims, sizeof in.dims);
    in.dims[0] = 1;
    osp_tensor_t out[16];
    char err[256];
    for (int i = 0; i < 3; i++) { /* warm-up */
        memset(out, 0, sizeof out);
        if (osp_rt_run(m->rt, &in, out, err, sizeof err) == 0) osp_rt_release_outputs(m->rt, out);
    }
    double end = now_s() + l->seconds;
    l->runs = 0;
    while (now_s() < end) {
        memset(out, 0, sizeof out);
        if (osp_rt_run(m->rt, &in, out, err, sizeof err)) {
            fprintf(stderr, "bench_detect: %s\n", err);
            break;
        }
        osp_rt_release_outputs(m->rt, out);
        l->runs++;
    }
    free(input);
    return NULL;
}

static osp_model_t *open_model(const char *name, int threads) {
    osp_model_cfg_t cfg;
    char err[512];
    osp_model_t *m = NULL;
    if (osp_model_cfg_resolve(name, &cfg, err, sizeof err) == 0) {
        cfg.intra_threads = threads;
        if (osp_model_open(&cfg, NULL, &m, err, sizeof err) == 0) return m;
    }
    fprintf(stderr, "bench_detect: %s\n", err);
    exit(1);
}

/* fps of `sessions` sessions with `threads` intra-op threads each, side by side */
static double raw_fps(const char *name, int sessions, int threads, double seconds) {
    osp_model_t *ms[8];
    loop_t loops[8];
    pthread_t th[8];
    for (int i = 0; i < sessions; i++) {
        ms[i] = open_model(name, threads);
        loops[i] = (loop_t){.m = ms[i], .seconds = seconds};
    }
    double t0 = now_s();
    for (int i = 0; i < sessions; i++) pthread_create(&th[i], NULL, raw_loop, &loops[i]);
    long total = 0;
    for (int i = 0; i < sessions; i++) {
        pthread_join(th[i], NULL);
        total += loops[i].runs;
    }
    double el = now_s() - t0;
    for (int i = 0; i < sessions; i++) osp_model_free(ms[i]);
    return (double)total / el;
}

/* fps of the real command over the clip (decode, prepare, run, decode, JSON) */
static double detect_fps(const char *osprey, const char *model, const char *clip, long frames) {
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
        execl(osprey, osprey, "detect", "--quiet", "--model", model, clip, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_detect: %s detect failed (status %d)\n", osprey, st);
        exit(1);
    }
    return (double)frames / (now_s() - t0);
}

int main(int argc, char **argv) {
    const char *model = "ssd-oidv4";
    double seconds = 4;
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) model = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (argv[i][0] != '-') setenv("OSPREY_CACHE", argv[i], 1);
        else {
            fprintf(stderr, "usage: bench_detect [CACHE_DIR] [--model NAME] [--seconds S] [--runs R]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 15) runs = 3;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int n = ncpu > 1 ? (int)(ncpu > 8 ? 8 : ncpu) : 1;
    char cache[512], clip[700], osprey[1024];
    osp_cache_dir(cache, sizeof cache);
    snprintf(clip, sizeof clip, "%s/media/vtest.avi", cache);
    /* the osprey binary beside this one */
    ssize_t len = readlink("/proc/self/exe", osprey, sizeof osprey - 16);
    if (len <= 0) return 1;
    osprey[len] = '\0';
    char *slash = strrchr(osprey, '/');
    strcpy(slash + 1, "osprey");
    const long frames = 795; /* vtest.avi */

    double one[16], many[16], det[16];
    for (int r = 0; r < runs; r++) {
        one[r] = raw_fps(model, 1, n, seconds);
        many[r] = raw_fps(model, n, 1, seconds);
        det[r] = detect_fps(osprey, model, clip, frames);
        fprintf(stderr, "run %d: raw 1x%d %.1f fps, raw %dx1 %.1f fps, detect %.1f fps\n", r + 1,
                n, one[r], n, many[r], det[r]);
    }
    double m1 = median(one, runs), mn = median(many, runs), md = median(det, runs);
    double limit = m1 > mn ? m1 : mn;
    printf("model %s, %d cores, medians of %d runs\n", model, n, runs);
    printf("%-44s %10s %8s\n", "measure", "frames/s", "ratio");
    printf("%-44s %10.1f %8.2f\n", "raw runtime, 1 session x threads", m1, m1 / limit);
    printf("%-44s %10.1f %8.2f\n", "raw runtime, sessions x 1 thread", mn, mn / limit);
    printf("%-44s %10.1f %8.2f\n", "osprey detect vtest.avi (decode included)", md, md / limit);
    return 0;
}
