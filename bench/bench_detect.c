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

#include "bench_util.h"

/* fps of the real command over the clip (decode, prepare, run, decode, JSON) */
static double detect_fps(const char *osprey, const char *model, const char *clip, long frames) {
    double t0 = bu_now_s();
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
    return (double)frames / (bu_now_s() - t0);
}

int main(int argc, char **argv) {
    const char *model = "ssd-oidv4";
    double seconds = 4;
    int runs = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            model = argv[++i];
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (argv[i][0] != '-')
            setenv("OSPREY_CACHE", argv[i], 1);
        else {
            fprintf(stderr,
                    "usage: bench_detect [CACHE_DIR] [--model NAME] [--seconds S] [--runs R]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 15) runs = 3;
    int n = bu_cores();
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
        one[r] = bu_raw_fps("bench_detect", model, 1, n, seconds, NULL);
        many[r] = bu_raw_fps("bench_detect", model, n, 1, seconds, NULL);
        det[r] = detect_fps(osprey, model, clip, frames);
        fprintf(stderr, "run %d: raw 1x%d %.1f fps, raw %dx1 %.1f fps, detect %.1f fps\n", r + 1,
                n, one[r], n, many[r], det[r]);
    }
    double m1 = bu_median(one, runs), mn = bu_median(many, runs), md = bu_median(det, runs);
    double limit = m1 > mn ? m1 : mn;
    printf("model %s, %d cores, medians of %d runs\n", model, n, runs);
    printf("%-44s %10s %8s\n", "measure", "frames/s", "ratio");
    printf("%-44s %10.1f %8.2f\n", "raw runtime, 1 session x threads", m1, m1 / limit);
    printf("%-44s %10.1f %8.2f\n", "raw runtime, sessions x 1 thread", mn, mn / limit);
    printf("%-44s %10.1f %8.2f\n", "osprey detect vtest.avi (decode included)", md, md / limit);
    return 0;
}
