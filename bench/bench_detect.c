/*
 * bench_detect: osprey detect's throughput on vtest.avi against the limit
 * measured in the same run — the raw ONNX Runtime run loop on the same
 * model and a pre-made input, at its best of one session with N intra-op
 * threads and N single-thread sessions side by side. With --one-look a
 * frame is one run of the model; with the second look at every box
 * (--per-frame: each frame read alone) it is one run and one per box
 * looked at, so that line is also given in runs.
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

/* fps of the real command over the clip (decode, prepare, run, decode, JSON);
 * *looks: the second looks its summary counts (0 with --one-look) */
static double detect_fps(const char *osprey, const char *model, const char *clip, long frames,
                         int once, long *looks) {
    char log[] = "/tmp/bench_detect.XXXXXX";
    int fd = mkstemp(log);
    if (fd < 0) {
        perror("bench_detect: mkstemp");
        exit(1);
    }
    double t0 = bu_now_s();
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || dup2(fd, 2) < 0) _exit(127);
        if (once)
            execl(osprey, osprey, "detect", "--quiet", "--one-look", "--model", model, clip,
                  (char *)NULL);
        else
            execl(osprey, osprey, "detect", "--quiet", "--per-frame", "--model", model, clip,
                  (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    double secs = bu_now_s() - t0;
    char text[4096] = "";
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(log);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "bench_detect: %s detect failed (status %d): %s\n", osprey, st, text);
        exit(1);
    }
    *looks = 0;
    const char *at = strstr(text, " second look");
    if (at) {
        while (at > text && at[-1] >= '0' && at[-1] <= '9') at--;
        *looks = atol(at);
    }
    return (double)frames / secs;
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

    double one[16], many[16], det[16], look[16], runs_s[16];
    long looks = 0;
    for (int r = 0; r < runs; r++) {
        one[r] = bu_raw_fps("bench_detect", model, 1, n, seconds, NULL);
        many[r] = bu_raw_fps("bench_detect", model, n, 1, seconds, NULL);
        det[r] = detect_fps(osprey, model, clip, frames, 1, &looks);
        look[r] = detect_fps(osprey, model, clip, frames, 0, &looks);
        /* every look is one more run of the model at its input size */
        runs_s[r] = look[r] * (double)(frames + looks) / (double)frames;
        fprintf(stderr,
                "run %d: raw 1x%d %.1f fps, raw %dx1 %.1f fps, detect --one-look %.1f fps, "
                "detect %.1f fps (%ld second looks, %.1f runs/s)\n",
                r + 1, n, one[r], n, many[r], det[r], look[r], looks, runs_s[r]);
    }
    double m1 = bu_median(one, runs), mn = bu_median(many, runs), md = bu_median(det, runs);
    double ml = bu_median(look, runs), mr = bu_median(runs_s, runs);
    double limit = m1 > mn ? m1 : mn;
    printf("model %s, %d cores, medians of %d runs\n", model, n, runs);
    printf("%-52s %10s %8s\n", "measure", "frames/s", "ratio");
    printf("%-52s %10.1f %8.2f\n", "raw runtime, 1 session x threads", m1, m1 / limit);
    printf("%-52s %10.1f %8.2f\n", "raw runtime, sessions x 1 thread", mn, mn / limit);
    printf("%-52s %10.1f %8.2f\n", "osprey detect --one-look vtest.avi (decode included)", md,
           md / limit);
    printf("%-52s %10.1f %8.2f\n", "osprey detect vtest.avi, second look (frames)", ml, ml / limit);
    printf("%-52s %10.1f %8.2f\n", "  the same in model runs (frames + looks)", mr, mr / limit);
    return 0;
}
