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
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libyuv/scale_rgb.h>
#include <turbojpeg.h>

#include "bench_util.h"
#include "image/image.h"
#include "wire/encode.h"

#define WHO "loadgen"
#define MAX_RUNS 15
#define REC_CAP (1u << 20) /* requests per run, at most */
#define MAX_THREADS 256
#define MAX_LIST 8         /* --batch / --inflight lists */

/* ---- options --------------------------------------------------------------- */

typedef struct {
    const char *model;
    int jpeg;
    int shm;           /* --frame shm: infer_shm from a registered POSIX shm region */
    int batch;         /* infer_batch of this many frames; 0: one frame per request */
    int batches[MAX_LIST], nbatches;  /* --batch list: one measurement each */
    int ks[MAX_LIST], nks;            /* --inflight list: one measurement each */
    uint32_t batch_tag;               /* infer_batch frame_id (0: prepare every item) */
    int brief;         /* one line per measurement */
    int limit_only;    /* the limit alone, no server */
    int limit_reuse;   /* take the limit measured for the previous K (same batch) */
    int w, h;          /* 0: the model input */
    int open;
    int inflight;      /* closed loop K; 0: admission capacity */
    double rate;       /* open loop frames/s */
    double rate_x;     /* open loop: this many times the closed-loop capacity */
    double seconds;
    int concurrency;
    int runs;
    int json;
    int limit;
    double limit_seconds;
    double warmup_s;
    double lat_s;      /* open loop: the K=1 phase */
    double cal_s;      /* open loop Fx: the capacity phase */
    double grace_s;
    double deadline_ms; /* relative deadline put on each request; 0: none */
    int quality;
    int threads;       /* print per-thread CPU of the server */
    int plain_write;   /* writev the payload instead of vmsplice */
    const char *image;
    const char *server;
    const char *label;
    const char *model_json; /* --explicit-config: the model's config spelled out */
} opts_t;

/* ---- requests -------------------------------------------------------------- */

enum { ST_NONE = 0, ST_SENT, ST_SERVED, ST_QFULL, ST_DEADLINE, ST_DROP_OTHER, ST_ERROR };

typedef struct {
    int64_t t_send, t_reply; /* ns, monotonic */
    uint8_t state;
} rec_t;

static rec_t *recs;

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t epoch_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the server process ---------------------------------------------------- */

typedef struct {
    pid_t pid;
    int wfd, rfd, logfd;
    int version;
    double startup_ms;
    int workers;
    pthread_t reader;
    int reader_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long inflight;
    _Atomic int eof;
    long events, unexpected;
    uint32_t next_id;
    /* the request: header fields and the shared payload */
    uint8_t msg_type;   /* OSP_WIRE_MSG_* */
    uint32_t fw, fh;
    int batch;          /* infer_batch: items per request */
    uint32_t batch_tag; /* infer_batch: frame_id */
    uint32_t region;    /* infer_shm: the registered region */
    const uint8_t *payload;
    size_t payload_len;
    int vmsplice;       /* hand the payload's pages to the pipe (see push) */
    double deadline_ms;
    char *stats;        /* the latest mem_stats reply (server_counters), under mu */
} srv_t;

#define STATS_ID 0xFFFFFFF1u /* the req_id of loadgen's own mem_stats */

static void server_log_tail(srv_t *s) {
    if (s->logfd < 0) return;
    off_t end = lseek(s->logfd, 0, SEEK_END);
    off_t from = end > 3000 ? end - 3000 : 0;
    char buf[3001];
    ssize_t n = pread(s->logfd, buf, (size_t)(end - from), from);
    if (n > 0) {
        buf[n] = '\0';
        fprintf(stderr, "%s: ospreyd stderr (tail):\n%s\n", WHO, buf);
    }
}

static int spawn_server(srv_t *s, const char *path) {
    int in[2], out[2];
    char logname[] = "/tmp/loadgen-ospreyd-XXXXXX";
    s->logfd = mkstemp(logname);
    if (s->logfd >= 0) unlink(logname);
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        if (s->logfd >= 0) dup2(s->logfd, 2);
        execl(path, path, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->pid = pid;
    s->wfd = in[1];
    s->rfd = out[0];
    /* bigger pipes: fewer wake-ups for big frames (best effort) */
    fcntl(s->wfd, F_SETPIPE_SZ, 1 << 20);
    fcntl(s->rfd, F_SETPIPE_SZ, 1 << 20);
    return 0;
}

/* Read exactly n bytes; 0, or -1 on EOF/error. */
static int read_full(int fd, uint8_t *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r > 0) got += (size_t)r;
        else if (r < 0 && errno == EINTR) continue;
        else return -1;
    }
    return 0;
}

/* One non-blocking write of what iov[0..cnt) holds. With s->vmsplice the
 * shared payload (constant for the whole run) goes in by vmsplice(2): the
 * pipe references its pages instead of copying 6 MB per frame, so the load
 * generator's own copying does not take the server's cores on a small
 * machine; the server still reads every byte as it would from any host. A
 * header ahead of it is written alone first. */
static ssize_t push(srv_t *s, int fd, struct iovec *iov, int cnt) {
    if (s->vmsplice && s->payload && cnt >= 1) {
        const uint8_t *b = iov[0].iov_base;
        if (b >= s->payload && b < s->payload + s->payload_len)
            return vmsplice(fd, iov, 1, SPLICE_F_NONBLOCK);
        if (cnt >= 2 && iov[1].iov_base == s->payload) return writev(fd, iov, 1);
    }
    return writev(fd, iov, cnt);
}

/* Write every byte of iov[0..cnt) to a non-blocking fd (the server's stdin,
 * or the pipe of phase_paired), polling when it is full. 0, or -1 when the
 * reader is gone. */
static int write_fd(srv_t *s, int fd, struct iovec *iov, int cnt) {
    int64_t give_up = mono_ns() + (int64_t)60e9; /* a server that stopped reading */
    while (cnt > 0) {
        ssize_t w = push(s, fd, iov, cnt);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN || s->eof || mono_ns() > give_up) {
                if (errno == EAGAIN) fprintf(stderr, "%s: the pipe's reader stopped reading\n", WHO);
                return -1;
            }
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            poll(&p, 1, 100);
            continue;
        }
        size_t left = (size_t)w;
        while (cnt > 0 && left >= iov[0].iov_len) {
            left -= iov[0].iov_len;
            iov++;
            cnt--;
        }
        if (cnt > 0) {
            iov[0].iov_base = (uint8_t *)iov[0].iov_base + left;
            iov[0].iov_len -= left;
        }
    }
    return 0;
}

static int write_all(srv_t *s, struct iovec *iov, int cnt) { return write_fd(s, s->wfd, iov, cnt); }

/* A command frame (0x00): its header, then the JSON. */
static int send_command(srv_t *s, uint32_t req_id, const char *json, size_t n) {
    uint8_t hdr[OSP_WIRE_HEAD_MAX];
    osp_wire_req_t r = {.req_id = req_id, .version = s->version};
    size_t hl = osp_wire_encode_command(hdr, sizeof hdr, &r, NULL, n);
    struct iovec iov[2] = {{hdr, hl}, {(void *)json, n}};
    return hl ? write_all(s, iov, 2) : -1;
}

/* The value after "key": in a JSON text, or NULL. Good enough for the flat
 * reply records of the protocol. */
static const char *json_val(const char *body, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(body, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ' || *p == ':') p++;
    return p;
}

static int classify(const char *body) {
    const char *v = json_val(body, "dropped");
    if (v && strncmp(v, "true", 4) == 0) {
        const char *r = json_val(body, "shedReason");
        if (r && strncmp(r, "\"queue-full\"", 12) == 0) return ST_QFULL;
        if (r && strncmp(r, "\"deadline-expired\"", 18) == 0) return ST_DEADLINE;
        return ST_DROP_OTHER;
    }
    if (json_val(body, "error")) return ST_ERROR;
    return ST_SERVED;
}

static void *reader_main(void *arg) {
    srv_t *s = arg;
    uint8_t hdr[8];
    size_t cap = 1 << 16;
    char *body = malloc(cap);
    for (;;) {
        if (read_full(s->rfd, hdr, 8)) break;
        uint32_t total = osp_wire_rd32(hdr), id = osp_wire_rd32(hdr + 4);
        if (total < 4 || total > (64u << 20)) {
            fprintf(stderr, "%s: bad reply length %u\n", WHO, total);
            break;
        }
        size_t n = total - 4;
        if (n + 1 > cap) {
            cap = n + 1;
            char *nb = realloc(body, cap);
            if (!nb) break;
            body = nb;
        }
        if (read_full(s->rfd, (uint8_t *)body, n)) break;
        body[n] = '\0';
        int64_t t = mono_ns();
        int st = classify(body);
        pthread_mutex_lock(&s->mu);
        if (id == 0xFFFFFFFFu) {
            s->events++;
        } else if (id == STATS_ID) {
            free(s->stats);
            s->stats = strdup(body);
            pthread_cond_broadcast(&s->cv);
        } else if (id < REC_CAP && recs[id].state == ST_SENT) {
            recs[id].state = (uint8_t)st;
            recs[id].t_reply = t;
            s->inflight--;
            pthread_cond_broadcast(&s->cv);
        } else {
            s->unexpected++;
        }
        pthread_mutex_unlock(&s->mu);
        if (st == ST_ERROR) {
            static _Atomic int shown;
            if (atomic_fetch_add(&shown, 1) < 3) fprintf(stderr, "%s: error reply: %.300s\n", WHO, body);
        }
    }
    free(body);
    pthread_mutex_lock(&s->mu);
    s->eof = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Config frame, then the ready reply (read here, before the reader starts). */
static int handshake(srv_t *s, const opts_t *o) {
    char cfg[8192], bm[96] = "", byname[96];
    snprintf(byname, sizeof byname, "{\"model\":\"%s\"}", o->model);
    if (o->batch > 0) /* an infer_batch runs as one stacked call */
        snprintf(bm, sizeof bm, ",\"batch_mode\":\"list\",\"max_batch_size\":%d", o->batch);
    int n = snprintf(cfg, sizeof cfg,
                     "{\"runtime\":\"onnxruntime\",\"concurrency\":%d,\"models\":[%s],"
                     "\"protocolVersion\":2%s}",
                     o->concurrency, o->model_json ? o->model_json : byname, bm);
    if (n < 0 || (size_t)n >= sizeof cfg) return -1;
    if (send_command(s, 0, cfg, (size_t)n)) return -1;
    uint8_t rh[8];
    struct pollfd p = {.fd = s->rfd, .events = POLLIN};
    if (poll(&p, 1, 180000) <= 0 || read_full(s->rfd, rh, 8)) return -1;
    uint32_t total = osp_wire_rd32(rh);
    if (total < 4 || total > 1 << 20) return -1;
    char *body = calloc(1, total - 3);
    if (!body || read_full(s->rfd, (uint8_t *)body, total - 4)) {
        free(body);
        return -1;
    }
    const char *st = json_val(body, "status"), *models = json_val(body, "models");
    const char *ver = json_val(body, "protocolVersion"), *ms = json_val(body, "startupMs");
    const char *wk = json_val(body, "workers");
    int ok = st && strncmp(st, "\"ready\"", 7) == 0 && models && atoi(models) >= 1;
    if (!ok) fprintf(stderr, "%s: handshake reply: %s\n", WHO, body);
    int v = ver ? atoi(ver) : 1;
    s->version = v >= 2 ? 2 : 1;
    s->startup_ms = ms ? atof(ms) : 0;
    s->workers = wk ? atoi(wk) : 0;
    free(body);
    return ok ? 0 : -1;
}

/* A command (0x00) answered before the reader thread starts; its reply in
 * body (NUL-terminated, cut to cap). 0, or -1 when the server is gone. */
static int command_sync(srv_t *s, const char *json, char *body, size_t cap) {
    if (send_command(s, 0xFFFFFFF0u, json, strlen(json))) return -1;
    for (;;) { /* skip unsolicited events */
        uint8_t rh[8];
        struct pollfd p = {.fd = s->rfd, .events = POLLIN};
        if (poll(&p, 1, 30000) <= 0 || read_full(s->rfd, rh, 8)) return -1;
        uint32_t total = osp_wire_rd32(rh), id = osp_wire_rd32(rh + 4);
        if (total < 4 || total > 1 << 20) return -1;
        char *b = malloc(total - 3);
        if (!b || read_full(s->rfd, (uint8_t *)b, total - 4)) {
            free(b);
            return -1;
        }
        b[total - 4] = '\0';
        snprintf(body, cap, "%s", b);
        free(b);
        if (id == 0xFFFFFFF0u) return 0;
    }
}

/* ---- the shared-memory frame (--frame shm) ----------------------------------- */

static char g_shm_name[64]; /* set while the region exists: unlinked at exit */

static void shm_cleanup(void) {
    if (g_shm_name[0]) shm_unlink(g_shm_name);
    g_shm_name[0] = '\0';
}

static void shm_on_signal(int sig) {
    if (g_shm_name[0]) shm_unlink(g_shm_name); /* unlink(2) underneath: fine in a handler */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Create the region, write the frame once. 0, or -1 (nothing left behind). */
static int shm_create(const uint8_t *frame, size_t bytes) {
    snprintf(g_shm_name, sizeof g_shm_name, "/osprey-loadgen-%d", (int)getpid());
    atexit(shm_cleanup);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], shm_on_signal);
    int fd = shm_open(g_shm_name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        fprintf(stderr, "%s: shm_open %s: %s\n", WHO, g_shm_name, strerror(errno));
        g_shm_name[0] = '\0';
        return -1;
    }
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0) p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "%s: shared memory %s (%zu bytes): %s\n", WHO, g_shm_name, bytes, strerror(errno));
        close(fd);
        shm_cleanup();
        return -1;
    }
    close(fd);
    memcpy(p, frame, bytes);
    munmap(p, bytes); /* the pages stay in the object; the server maps them itself */
    return 0;
}

/* register_shm on this server; sets s->region. */
static int shm_register(srv_t *s, size_t bytes) {
    char cmd[200], body[1024];
    snprintf(cmd, sizeof cmd, "{\"cmd\":\"register_shm\",\"name\":\"%s\",\"size\":%zu}", g_shm_name,
             bytes);
    if (command_sync(s, cmd, body, sizeof body)) return -1;
    const char *st = json_val(body, "status"), *id = json_val(body, "regionId");
    if (!st || strncmp(st, "\"ok\"", 4) != 0 || !id) {
        fprintf(stderr, "%s: register_shm: %s\n", WHO, body);
        return -1;
    }
    s->region = (uint32_t)strtoul(id, NULL, 10);
    return 0;
}

/* Send one inference request (blocking in the sense of write_all): its
 * header into hdr (OSP_WIRE_HEAD_MAX bytes), the shared payload to follow.
 * The record is marked sent and counted in flight before the first byte
 * goes. */
static uint32_t begin_request(srv_t *s, uint8_t *hdr, size_t *hlen) {
    pthread_mutex_lock(&s->mu);
    uint32_t id = s->next_id++;
    recs[id].state = ST_SENT;
    recs[id].t_send = mono_ns();
    s->inflight++;
    pthread_mutex_unlock(&s->mu);
    osp_wire_req_t r = {.req_id = id, .version = s->version};
    if (s->version >= 2 && s->deadline_ms > 0) r.deadline_ms = epoch_ms() + (uint64_t)s->deadline_ms;
    const size_t cap = OSP_WIRE_HEAD_MAX;
    const uint8_t model = 0, rgb = OSP_WIRE_FMT_RGB;
    switch (s->msg_type) {
    case OSP_WIRE_MSG_INFER_RAW:
        *hlen = osp_wire_encode_raw(hdr, cap, &r, model, s->fw, s->fh, rgb, NULL, s->payload_len);
        break;
    case OSP_WIRE_MSG_INFER_BATCH: /* the items are the payload */
        *hlen = osp_wire_encode_batch(hdr, cap, &r, model, (uint8_t)s->batch, s->batch_tag, NULL,
                                      s->payload_len);
        break;
    case OSP_WIRE_MSG_INFER_SHM: { /* the frame at the region's start; no payload */
        osp_wire_shm_t m = {.model_idx = model, .region = s->region, .width = s->fw,
                            .height = s->fh, .fmt = rgb, .stride = s->fw * 3};
        *hlen = osp_wire_encode_shm(hdr, cap, &r, &m);
        break;
    }
    default:
        *hlen = osp_wire_encode_jpeg(hdr, cap, &r, model, NULL, s->payload_len);
    }
    return id;
}

/* Wait until inflight < k (k = 1: until 0) or the monotonic deadline; 1 when
 * it got there, 0 on timeout or EOF. */
static int wait_inflight_below(srv_t *s, long k, int64_t until_ns) {
    struct timespec ts = {.tv_sec = until_ns / 1000000000, .tv_nsec = until_ns % 1000000000};
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    for (;;) {
        if (s->inflight < k) {
            rc = 1;
            break;
        }
        if (s->eof) break;
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT) {
            rc = s->inflight < k;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* The server's own counters of how it handled frames (mem_stats), once the
 * reader thread runs; 0, or -1 when no reply came. */
enum { SC_AS_READ, SC_PARKED, SC_SHED_QFULL, SC_RELAYED, SC_LONE, SC_N };
static const char *const sc_keys[SC_N] = {"framesPreparedAsRead", "framesParked", "shedQueueFull",
                                          "bytesRelayed", "loneRuns"};

static int server_counters(srv_t *s, long out[SC_N]) {
    static const char json[] = "{\"cmd\":\"mem_stats\"}";
    pthread_mutex_lock(&s->mu);
    free(s->stats);
    s->stats = NULL;
    pthread_mutex_unlock(&s->mu);
    if (send_command(s, STATS_ID, json, sizeof json - 1)) return -1;
    int64_t until = mono_ns() + 5000000000LL;
    struct timespec ts = {.tv_sec = until / 1000000000, .tv_nsec = until % 1000000000};
    pthread_mutex_lock(&s->mu);
    while (!s->stats && !s->eof)
        if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT) break;
    int rc = s->stats ? 0 : -1;
    for (int i = 0; i < SC_N; i++) {
        const char *v = s->stats ? json_val(s->stats, sc_keys[i]) : NULL;
        out[i] = v ? atol(v) : -1;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Stop the server: close its stdin, wait for the exit, SIGKILL after grace. */
static int stop_server(srv_t *s, double grace_s, int *killed) {
    if (s->wfd >= 0) close(s->wfd);
    s->wfd = -1;
    int64_t until = mono_ns() + (int64_t)(grace_s * 1e9);
    int st = 0;
    *killed = 0;
    for (;;) {
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid) break;
        if (r < 0) return -1;
        if (mono_ns() > until) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
            *killed = 1;
            break;
        }
        struct timespec d = {0, 20000000};
        nanosleep(&d, NULL);
    }
    if (s->reader_started) pthread_join(s->reader, NULL);
    s->reader_started = 0;
    if (s->rfd >= 0) close(s->rfd);
    s->rfd = -1;
    if (s->logfd >= 0) close(s->logfd);
    s->logfd = -1;
    return st;
}

/* ---- /proc sampling ---------------------------------------------------------- */

static long rss_kb(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) v = atol(line + 6);
    fclose(f);
    return v;
}

typedef struct {
    int tid;
    char comm[32];
    long ticks;
} tcpu_t;

/* utime+stime of every thread of pid; the count. */
static int thread_cpu(pid_t pid, tcpu_t *out, int cap) {
    char path[96], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < cap) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, atoi(e->d_name));
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = '\0';
        char *lp = strchr(buf, '('), *rp = strrchr(buf, ')');
        if (!lp || !rp) continue;
        tcpu_t *t = &out[n];
        t->tid = atoi(e->d_name);
        size_t cl = (size_t)(rp - lp - 1);
        if (cl >= sizeof t->comm) cl = sizeof t->comm - 1;
        memcpy(t->comm, lp + 1, cl);
        t->comm[cl] = '\0';
        /* fields after ")": state(3) ppid pgrp session tty tpgid flags minflt
         * cminflt majflt cmajflt utime(14) stime(15) */
        char *p = rp + 2;
        long ut = 0, stt = 0;
        for (int field = 3; field <= 15 && *p; field++) {
            if (field == 14) ut = atol(p);
            if (field == 15) stt = atol(p);
            p = strchr(p, ' ');
            if (!p) break;
            p++;
        }
        t->ticks = ut + stt;
        n++;
    }
    closedir(d);
    return n;
}

typedef struct {
    pid_t pid;
    int64_t t0;
    double mark_s;
    _Atomic int stop;
    long rss_mark, rss_max;
    long samples[700];
    int nsamples;
} sampler_t;

static void *sampler_main(void *arg) {
    sampler_t *sm = arg;
    int64_t next = sm->t0;
    while (!atomic_load(&sm->stop)) {
        int64_t now = mono_ns();
        if (now >= next) {
            long r = rss_kb(sm->pid);
            if (sm->nsamples < 700) sm->samples[sm->nsamples++] = r;
            if (r > sm->rss_max) sm->rss_max = r;
            next += 1000000000;
        }
        if (sm->rss_mark < 0 && now - sm->t0 >= (int64_t)(sm->mark_s * 1e9)) sm->rss_mark = rss_kb(sm->pid);
        struct timespec d = {0, 50000000};
        nanosleep(&d, NULL);
    }
    return NULL;
}

/* ---- load phases ------------------------------------------------------------- */

typedef struct {
    int64_t t0, t_stop;      /* sending window */
    uint32_t first, last;    /* ids [first, last) */
    long not_sent;           /* open loop: scheduled, never started (overrun) */
    double late_p99_ms, late_max_ms;
    long late_n;             /* frames started > 1 ms after their slot */
    int drained;
} phase_t;

static void phase_closed(srv_t *s, int k, double seconds, phase_t *ph) {
    memset(ph, 0, sizeof *ph);
    ph->t0 = mono_ns();
    int64_t end = ph->t0 + (int64_t)(seconds * 1e9);
    ph->first = s->next_id;
    uint8_t hdr[OSP_WIRE_HEAD_MAX];
    while (s->next_id < REC_CAP - 1) {
        if (!wait_inflight_below(s, k, end)) break;
        if (mono_ns() >= end) break;
        size_t hl;
        begin_request(s, hdr, &hl);
        struct iovec iov[2] = {{hdr, hl}, {(void *)s->payload, s->payload_len}};
        if (write_all(s, iov, 2)) break;
    }
    ph->t_stop = mono_ns();
    ph->last = s->next_id;
}

static void phase_open(srv_t *s, double rate, double seconds, double grace_s, phase_t *ph) {
    memset(ph, 0, sizeof *ph);
    long n = (long)floor(seconds * rate);
    if (n < 1) n = 1;
    double *late = calloc((size_t)n, sizeof *late);
    int64_t period = (int64_t)(1e9 / rate);
    ph->first = s->next_id;
    ph->t0 = mono_ns();
    int64_t hard_end = ph->t0 + (int64_t)((seconds + grace_s) * 1e9);
    uint8_t hdr[OSP_WIRE_HEAD_MAX];
    struct iovec iov[2];
    int cnt = 0, active = 0, failed = 0;
    long i = 0, started = 0;
    while (!failed) {
        int64_t now = mono_ns();
        if (active && now > hard_end + (int64_t)30e9) {
            fprintf(stderr, "%s: ospreyd stopped reading its stdin\n", WHO);
            break;
        }
        if (!active) {
            if (i >= n || s->next_id >= REC_CAP - 1) break;
            int64_t slot = ph->t0 + i * period;
            if (now < slot) {
                struct timespec ts = {.tv_sec = slot / 1000000000, .tv_nsec = slot % 1000000000};
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                continue;
            }
            if (now > hard_end) break; /* the schedule overran: stop */
            late[started++] = (double)(now - slot) / 1e6;
            i++;
            size_t hl;
            begin_request(s, hdr, &hl);
            iov[0] = (struct iovec){hdr, hl};
            iov[1] = (struct iovec){(void *)s->payload, s->payload_len};
            cnt = 2;
            active = 1;
        }
        /* push what the pipe takes now; never block in write */
        ssize_t w = push(s, s->wfd, iov[0].iov_len ? iov : iov + 1, iov[0].iov_len ? cnt : cnt - 1);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN) {
                failed = 1;
                break;
            }
            /* full: wait for room, but wake for the next slot to note lateness */
            struct pollfd p = {.fd = s->wfd, .events = POLLOUT};
            poll(&p, 1, 20);
            if (s->eof) failed = 1;
            continue;
        }
        size_t left = (size_t)w;
        for (int j = 0; j < 2 && left; j++) {
            size_t take = left < iov[j].iov_len ? left : iov[j].iov_len;
            iov[j].iov_base = (uint8_t *)iov[j].iov_base + take;
            iov[j].iov_len -= take;
            left -= take;
        }
        if (iov[0].iov_len == 0 && iov[1].iov_len == 0) active = 0;
    }
    ph->t_stop = mono_ns();
    ph->last = s->next_id;
    ph->not_sent = n - started;
    for (long j = 0; j < started; j++) {
        if (late[j] > 1.0) ph->late_n++;
        if (late[j] > ph->late_max_ms) ph->late_max_ms = late[j];
    }
    qsort(late, (size_t)started, sizeof *late, bu_cmp_d);
    ph->late_p99_ms = started ? late[(size_t)ceil(0.99 * (double)started) - 1] : 0;
    free(late);
}

typedef struct {
    double fps;             /* served replies within the sending window / window */
    double p50, p99, pmax;  /* ms, served frames */
    long sent, served, qfull, deadline, drop_other, errors, pending;
} pstats_t;

static double pct(const double *sorted, long n, double q) {
    if (n <= 0) return 0;
    long k = (long)ceil(q * (double)n) - 1;
    if (k < 0) k = 0;
    return sorted[k];
}

static void phase_stats(srv_t *s, const phase_t *ph, pstats_t *st) {
    memset(st, 0, sizeof *st);
    long n = (long)(ph->last - ph->first);
    double *lat = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    long in_window = 0;
    pthread_mutex_lock(&s->mu);
    for (uint32_t id = ph->first; id < ph->last; id++) {
        const rec_t *r = &recs[id];
        st->sent++;
        switch (r->state) {
        case ST_SERVED:
            lat[st->served++] = (double)(r->t_reply - r->t_send) / 1e6;
            if (r->t_reply <= ph->t_stop) in_window++;
            break;
        case ST_QFULL: st->qfull++; break;
        case ST_DEADLINE: st->deadline++; break;
        case ST_DROP_OTHER: st->drop_other++; break;
        case ST_ERROR: st->errors++; break;
        default: st->pending++;
        }
    }
    pthread_mutex_unlock(&s->mu);
    qsort(lat, (size_t)st->served, sizeof *lat, bu_cmp_d);
    st->p50 = pct(lat, st->served, 0.50);
    st->p99 = pct(lat, st->served, 0.99);
    st->pmax = st->served ? lat[st->served - 1] : 0;
    double win = (double)(ph->t_stop - ph->t0) / 1e9;
    /* frames, not requests: an infer_batch reply serves s->batch of them */
    st->fps = win > 0 ? (double)in_window * (s->batch > 0 ? s->batch : 1) / win : 0;
    free(lat);
}

/* ---- frames ------------------------------------------------------------------ */

typedef struct {
    uint8_t *rgb;           /* the frame, RGB, w x h */
    unsigned char *jpg;
    unsigned long jpg_len;
    uint8_t *items;         /* infer_batch: the items after the header, for `nitems` frames */
    size_t items_len;
    int nitems;
} frame_t;

/* The infer_batch items: n x [u32 w][u32 h][u8 fmt][u32 size][pixels]. */
static int make_batch_items(const opts_t *o, frame_t *f, int n) {
    size_t px = (size_t)o->w * o->h * 3, one = 13 + px;
    free(f->items);
    f->items = malloc(one * (size_t)n);
    if (!f->items) return -1;
    for (int i = 0; i < n; i++)
        osp_wire_encode_item(f->items + one * (size_t)i, one, (uint32_t)o->w, (uint32_t)o->h,
                             OSP_WIRE_FMT_RGB, f->rgb, (uint32_t)px);
    f->items_len = one * (size_t)n;
    f->nitems = n;
    return 0;
}

static int make_frame(const opts_t *o, frame_t *f) {
    char path[1200], err[256];
    if (o->image) {
        snprintf(path, sizeof path, "%s", o->image);
    } else {
        char cache[1024];
        osp_cache_dir(cache, sizeof cache);
        snprintf(path, sizeof path, "%s/media/messi5.jpg", cache);
    }
    osp_decoder_t *dec = osp_decoder_new();
    osp_image_t img = {0};
    if (!dec || osp_image_load(dec, path, &img, err, sizeof err)) {
        fprintf(stderr, "%s: %s: %s\n", WHO, path, err);
        return -1;
    }
    osp_decoder_free(dec);
    f->rgb = aligned_alloc(4096, ((size_t)o->w * o->h * 3 + 4095) & ~(size_t)4095);
    if (!f->rgb) return -1;
    if (img.width == o->w && img.height == o->h && img.stride == o->w * 3) {
        memcpy(f->rgb, img.data, (size_t)o->w * o->h * 3);
    } else if (RGBScale(img.data, img.stride, img.width, img.height, f->rgb, o->w * 3, o->w, o->h,
                        kFilterBilinear)) {
        fprintf(stderr, "%s: RGBScale to %dx%d failed\n", WHO, o->w, o->h);
        return -1;
    }
    osp_image_free(&img);
    if (o->jpeg) {
        tjhandle enc = tjInitCompress();
        if (!enc || tjCompress2(enc, f->rgb, o->w, o->w * 3, o->h, TJPF_RGB, &f->jpg, &f->jpg_len,
                                TJSAMP_420, o->quality, 0)) {
            fprintf(stderr, "%s: JPEG encode failed\n", WHO);
            return -1;
        }
        tjDestroy(enc);
    }
    return 0;
}

/* ---- the limits ------------------------------------------------------------ */

static void *g_tensor; /* the frame's input tensor, as the last limit measurement packed it */

typedef struct {
    double one, many, limit;    /* raw fps: 1 x N threads, N x 1 thread, best */
    double one_ms;              /* median time of one run of the 1 x N-thread session */
    double cpu_frame;           /* CPU s per frame of the best configuration */
    double t_decode, t_resize, t_pack; /* ms, each alone, thread CPU */
    double eff_cores;           /* CPU the raw run got: limit x cpu_frame */
    double pipe_cpu_ms;         /* cpu_frame + the steps that apply, ms */
    double pipeline;            /* cores / (cpu_frame + steps), capped at limit */
    int pipeline_applies;
    int batch;                  /* frames stacked per raw run (1 when the model does not batch) */
} limit_t;

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The pack any server does: content pixels into the model's input tensor,
 * padding around them (letterbox), normalised. */
static void pack(const uint8_t *rgb, const osp_prep_t *p, const osp_geom_t *g, void *dst) {
    int W = p->width, H = p->height, C = p->channels;
    float sc[3], bi[3];
    for (int c = 0; c < 3; c++) {
        sc[c] = 1.0f / p->std[c];
        bi[c] = -p->mean[c] / p->std[c];
    }
    for (int y = 0; y < H; y++) {
        int sy = y - g->pad_y;
        for (int x = 0; x < W; x++) {
            int sx = x - g->pad_x;
            uint8_t px[3];
            if (sy < 0 || sy >= g->content_h || sx < 0 || sx >= g->content_w) {
                px[0] = px[1] = px[2] = p->pad_value;
            } else {
                const uint8_t *s = rgb + ((size_t)sy * g->content_w + sx) * 3;
                px[0] = s[0];
                px[1] = s[1];
                px[2] = s[2];
            }
            if (C == 1) px[0] = (uint8_t)((px[0] * 77 + px[1] * 150 + px[2] * 29) >> 8);
            for (int c = 0; c < C; c++) {
                size_t at = p->layout == OSP_LAYOUT_NHWC ? ((size_t)y * W + x) * C + c
                                                         : (size_t)c * W * H + (size_t)y * W + x;
                if (p->elem == OSP_ELEM_U8) ((uint8_t *)dst)[at] = px[c];
                else ((float *)dst)[at] = (float)px[c] * sc[c] + bi[c];
            }
        }
    }
}

/* The raw loop at its best, `batch` frames a run, on `tensor`: one session
 * of N threads (helper threads spinning, then sleeping) and N sessions of
 * one thread, `seconds` each. Sets L's batch, one, one_ms, many, limit and
 * cpu_frame. */
static void raw_limit(const char *model, int batch, double seconds, const void *tensor, limit_t *L) {
    int n = bu_cores();
    double c1 = 0, cn = 0;
    L->batch = batch;
    L->one = bu_raw_fps_batch_ms(WHO, model, 1, n, seconds, tensor, batch, &c1, &L->one_ms);
    if (n > 1) { /* the one session at its best: helper threads spinning or sleeping */
        double c1s = 0, ms = 0;
        bu_no_spin = 1;
        double one_sleep = bu_raw_fps_batch_ms(WHO, model, 1, n, seconds, tensor, batch, &c1s, &ms);
        bu_no_spin = 0;
        if (one_sleep > L->one) {
            L->one = one_sleep;
            c1 = c1s;
        }
        if (ms > 0 && ms < L->one_ms) L->one_ms = ms;
    }
    L->many = bu_raw_fps_batch(WHO, model, n, 1, seconds, tensor, batch, &cn);
    L->limit = L->one > L->many ? L->one : L->many;
    L->cpu_frame = L->one > L->many ? c1 : cn;
}

static void measure_limit(const opts_t *o, const frame_t *f, const osp_model_t *m, limit_t *L) {
    int n = bu_cores();
    const osp_prep_t *p = &m->prep;
    L->pipeline_applies = o->jpeg || o->w != p->width || o->h != p->height;
    /* the frame as the server sees it after decoding */
    int vw = o->w, vh = o->h;
    tjhandle tj = o->jpeg ? tjInitDecompress() : NULL;
    if (o->jpeg) {
        int d = osp_jpeg_scale_denom(o->w, o->h, p->width, p->height);
        vw = (o->w + d - 1) / d;
        vh = (o->h + d - 1) / d;
    }
    osp_geom_t g;
    osp_geom_compute(vw, vh, p->width, p->height, p->fit, &g);
    uint8_t *dec = malloc((size_t)vw * vh * 3 + 64);
    uint8_t *content = malloc((size_t)g.content_w * g.content_h * 3 + 64);
    void *tensor = malloc(osp_prep_tensor_bytes(p));
    enum { REPS = 21 };
    double td[REPS], tr[REPS], tp[REPS];
    int bad = 0;
    for (int i = -2; i < REPS; i++) { /* 2 warm-ups */
        double a = thread_cpu_ms();
        const uint8_t *src = f->rgb;
        if (o->jpeg) {
            if (tjDecompress2(tj, f->jpg, f->jpg_len, dec, vw, 0, vh, TJPF_RGB, 0)) bad++;
            src = dec;
        }
        double b = thread_cpu_ms();
        const uint8_t *csrc = src;
        if (vw != g.content_w || vh != g.content_h) {
            if (RGBScale(src, vw * 3, vw, vh, content, g.content_w * 3, g.content_w, g.content_h,
                         kFilterBilinear))
                bad++;
            csrc = content;
        }
        double c = thread_cpu_ms();
        pack(csrc, p, &g, tensor);
        double d = thread_cpu_ms();
        if (i >= 0) {
            td[i] = b - a;
            tr[i] = c - b;
            tp[i] = d - c;
        }
    }
    if (bad) fprintf(stderr, "%s: %d library calls failed while timing the pipeline\n", WHO, bad);
    /* the raw runs, on this frame's tensor as packed above; at --batch N
     * the raw loop runs N stacked frames per call, as ospreyd does in list
     * mode; a model without a dynamic batch axis runs them one by one
     * there, so its limit is the batch-1 loop */
    raw_limit(o->model, o->batch > 1 && m->batch_dynamic ? o->batch : 1, o->limit_seconds, tensor, L);
    L->t_decode = bu_median(td, REPS);
    L->t_resize = bu_median(tr, REPS);
    L->t_pack = bu_median(tp, REPS);
    /* cores / (CPU per frame of the raw run + each library call alone). On a
     * shared machine the raw run may get fewer than `cores` (another job
     * holds one): then the cores it did get (its fps x its CPU per frame)
     * stand in for `cores`, as the server meets the same contention. */
    double per = L->cpu_frame + (L->t_decode + L->t_resize + L->t_pack) / 1e3;
    L->eff_cores = L->limit * L->cpu_frame;
    double cores = L->eff_cores < n ? L->eff_cores : n;
    L->pipeline = per > 0 ? cores / per : 0;
    if (L->pipeline > L->limit || !L->pipeline_applies) L->pipeline = L->limit;
    L->pipe_cpu_ms = per * 1e3;
    if (tj) tjDestroy(tj);
    free(dec);
    free(content);
    free(g_tensor);
    g_tensor = tensor; /* for the paired K=1 phase */
}

/* The mean of two measurements of the limits, taken before and after a
 * server's measured phase: on this shared machine the raw loop's speed
 * drifts within a minute by more than the margins being judged, and the
 * server ran in between. */
static void limit_mean(limit_t *a, const limit_t *b) {
#define MEAN(f) a->f = (a->f + b->f) / 2
    MEAN(one);
    MEAN(many);
    MEAN(limit);
    MEAN(one_ms);
    MEAN(cpu_frame);
    MEAN(t_decode);
    MEAN(t_resize);
    MEAN(t_pack);
    MEAN(eff_cores);
    MEAN(pipe_cpu_ms);
    MEAN(pipeline);
#undef MEAN
}

/* What moving one request's bytes through a pipe costs by itself: the
 * writer the requests use (push), a 1 MiB pipe as ospreyd's stdin, and a
 * thread that reads it as ospreyd's reading thread does (up to a pipeful
 * at a time, spliced into a pipe of its own and copied out of that, so
 * that the writer's copy in and its copy out overlap: src/server/relay.c)
 * and keeps nothing. No server can answer a frame sent this way sooner
 * than this after the write starts. */
typedef struct {
    int rfd, ack; /* the pipe's read end; one byte back per request read */
    size_t len;   /* bytes a request */
} sink_t;

static void *sink_main(void *arg) {
    sink_t *k = arg;
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    int relay[2] = {-1, -1};
    if (pipe(relay) == 0) fcntl(relay[1], F_SETPIPE_SZ, CHUNK);
    while (buf) {
        size_t left = k->len;
        while (left) {
            size_t want = left < CHUNK ? left : CHUNK;
            ssize_t r = relay[0] >= 0 ? splice(k->rfd, NULL, relay[1], NULL, want, SPLICE_F_MOVE)
                                      : read(k->rfd, buf, want);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) goto out; /* the writer closed it: done */
            for (size_t at = 0; relay[0] >= 0 && at < (size_t)r;) {
                ssize_t g = read(relay[0], buf, (size_t)r - at);
                if (g <= 0) goto out;
                at += (size_t)g;
            }
            left -= (size_t)r;
        }
        if (write(k->ack, "", 1) != 1) break;
    }
out:
    if (relay[0] >= 0) {
        close(relay[0]);
        close(relay[1]);
    }
    free(buf);
    return NULL;
}

/* K=1, paired: on a shared machine the raw run's time moves by more than
 * the difference being measured from one second to the next, so the
 * server's single-frame latency and the raw run it is held against are
 * measured in turns: one request answered, then one run of a 1 x N-thread
 * session (helper threads sleeping between runs, as the server's lone-frame
 * session's do) on the same frame's tensor, then the next request. Medians
 * of each over `seconds`. Raw and JPEG frames add a third turn: the same
 * bytes through a pipe alone (sink_t), then another raw run, so that it
 * meets the cache as a request does (the run evicts the frame). */
static void phase_paired(srv_t *s, const opts_t *o, const osp_model_t *m, double seconds,
                         double *lat_ms, double *raw_ms, double *pipe_ms) {
    *lat_ms = *raw_ms = *pipe_ms = 0;
    bu_no_spin = 1;
    osp_model_t *rm = bu_open_model(WHO, o->model, bu_cores());
    bu_no_spin = 0;
    osp_tensor_t in;
    enum { CAP = 4096 };
    double *lat = malloc(CAP * sizeof *lat), *raw = malloc(CAP * sizeof *raw);
    double *pip = malloc(CAP * sizeof *pip);
    if (!lat || !raw || !pip || bu_input(m, g_tensor, 1, &in)) {
        free(lat);
        free(raw);
        free(pip);
        osp_model_free(rm);
        return;
    }
    /* the pipe alone, when the frame's bytes go through the pipe */
    int pp[2] = {-1, -1}, ack[2] = {-1, -1};
    sink_t sink = {0};
    pthread_t sink_th;
    int sinking = 0;
    if (!o->shm && pipe(pp) == 0) {
        if (pipe(ack) == 0) {
            fcntl(pp[1], F_SETPIPE_SZ, 1 << 20);
            fcntl(pp[1], F_SETFL, fcntl(pp[1], F_GETFL) | O_NONBLOCK);
            sink = (sink_t){.rfd = pp[0], .ack = ack[1]};
            sinking = 1;
        }
    }
    int n = 0, nr = 0, np = 0, bad = 0;
    for (int i = 0; i < 3; i++) bu_run_ms(WHO, rm, &in); /* warm-up */
    uint8_t hdr[OSP_WIRE_HEAD_MAX];
    int64_t end = mono_ns() + (int64_t)(seconds * 1e9);
    while (n < CAP && mono_ns() < end && !bad) {
        size_t hl;
        uint32_t id = begin_request(s, hdr, &hl);
        struct iovec iov[2] = {{hdr, hl}, {(void *)s->payload, s->payload_len}};
        if (write_all(s, iov, 2) ||
            !wait_inflight_below(s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9)))
            break;
        pthread_mutex_lock(&s->mu);
        if (recs[id].state == ST_SERVED) lat[n++] = (double)(recs[id].t_reply - recs[id].t_send) / 1e6;
        pthread_mutex_unlock(&s->mu);
        double ms = bu_run_ms(WHO, rm, &in);
        if (ms < 0) bad = 1;
        else raw[nr++] = ms;
        if (sinking && sink.len == 0) { /* the first request told its size */
            sink.len = hl + s->payload_len;
            if (pthread_create(&sink_th, NULL, sink_main, &sink)) sinking = 0;
        }
        if (sinking) {
            struct iovec piov[2] = {{hdr, hl}, {(void *)s->payload, s->payload_len}};
            char c;
            int64_t t0 = mono_ns();
            if (write_fd(s, pp[1], piov, 2) || read(ack[0], &c, 1) != 1) bad = 1;
            else pip[np++] = (double)(mono_ns() - t0) / 1e6;
            if (bu_run_ms(WHO, rm, &in) < 0) bad = 1; /* the cache as a request meets it */
        }
    }
    if (!bad && n > 0 && nr > 0) {
        *lat_ms = bu_median(lat, n);
        *raw_ms = bu_median(raw, nr);
        if (np > 0) *pipe_ms = bu_median(pip, np);
    }
    if (pp[1] >= 0) close(pp[1]); /* the sink reads 0 and ends */
    if (sinking && sink.len) pthread_join(sink_th, NULL);
    int rest[3] = {pp[0], ack[0], ack[1]};
    for (int i = 0; i < 3; i++)
        if (rest[i] >= 0) close(rest[i]);
    free(in.data);
    free(lat);
    free(raw);
    free(pip);
    osp_model_free(rm);
}

/* ---- one run ----------------------------------------------------------------- */

typedef struct {
    pstats_t main;
    double lat1_p50, lat1_p99;  /* K=1 phase (open loop) */
    double pair_lat, pair_raw;  /* K=1 paired phase (closed loop, --limit): medians, ms */
    double pair_pipe;           /* the same bytes through a pipe alone (phase_paired), ms */
    double capacity;            /* closed-loop K=cap phase (open loop Fx): the mean of before and after */
    double cap_before, cap_after;
    double rate;
    phase_t ph;
    long rss_mark, rss_end, rss_max; /* KiB: after 5 s, at the end of the load, peak (1/s samples) */
    long rss_drained;                /* after every reply came back */
    long lost, late_answers, unexpected, events;
    double srv_cpu_frame;       /* server CPU s per served frame, main phase */
    double srv_cpu_util;        /* server CPU s per wall s, main phase */
    double cli_cpu_util;        /* loadgen CPU s per wall s, main phase */
    int threads_n;
    tcpu_t tdelta[MAX_THREADS];
    long counters[SC_N];        /* --threads: the server's counters over the main phase (-1: none) */
    limit_t lim;
    int exit_status, killed;
    double startup_ms;
    int workers;
    long samples[700];
    int nsamples;
} run_t;

static double ticks_s(long t) { return (double)t / (double)sysconf(_SC_CLK_TCK); }

static int do_run(const opts_t *o, const char *server, const frame_t *f, const osp_model_t *m,
                  run_t *R) {
    memset(R, 0, sizeof *R);
    memset(recs, 0, sizeof(rec_t) * REC_CAP);
    srv_t s = {.logfd = -1, .wfd = -1, .rfd = -1, .next_id = 1};
    pthread_mutex_init(&s.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s.cv, &ca);
    s.msg_type = o->jpeg ? OSP_WIRE_MSG_INFER_JPEG : OSP_WIRE_MSG_INFER_RAW;
    s.fw = (uint32_t)o->w;
    s.fh = (uint32_t)o->h;
    s.payload = o->jpeg ? f->jpg : f->rgb;
    s.payload_len = o->jpeg ? f->jpg_len : (size_t)o->w * o->h * 3;
    if (o->batch > 0) {
        s.msg_type = OSP_WIRE_MSG_INFER_BATCH;
        s.batch = o->batch;
        s.batch_tag = o->batch_tag;
        s.payload = f->items;
        s.payload_len = f->items_len;
    } else if (o->shm) {
        s.msg_type = OSP_WIRE_MSG_INFER_SHM;
        s.payload = NULL;
        s.payload_len = 0;
    }
    s.vmsplice = !o->plain_write;
    s.deadline_ms = o->deadline_ms;
    if (spawn_server(&s, server)) {
        perror(WHO ": spawn");
        return -1;
    }
    if (handshake(&s, o)) {
        fprintf(stderr, "%s: handshake with %s failed\n", WHO, server);
        server_log_tail(&s);
        int k;
        stop_server(&s, 1, &k);
        return -1;
    }
    if (o->shm && shm_register(&s, (size_t)o->w * o->h * 3)) {
        server_log_tail(&s);
        int k;
        stop_server(&s, 1, &k);
        return -1;
    }
    R->startup_ms = s.startup_ms;
    R->workers = s.workers;
    fcntl(s.wfd, F_SETFL, fcntl(s.wfd, F_GETFL) | O_NONBLOCK);
    pthread_create(&s.reader, NULL, reader_main, &s);
    s.reader_started = 1;

    /* admission: running (the workers the server reports: it may raise the
     * config's concurrency to the core count) + 2 pending */
    int cap = (s.workers > o->concurrency ? s.workers : o->concurrency) + 2;
    int k = o->inflight > 0 ? o->inflight : cap;
    phase_t ph;
    pstats_t st;
    /* warm-up, not counted */
    phase_closed(&s, cap, o->warmup_s, &ph);
    wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
    static limit_t last; /* --inflight lists: one limit per batch size */
    if (o->limit) {
        if (o->limit_reuse) R->lim = last;
        else measure_limit(o, f, m, &R->lim);
        last = R->lim;
    }
    if (o->open) {
        phase_closed(&s, 1, o->lat_s, &ph);
        wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
        phase_stats(&s, &ph, &st);
        R->lat1_p50 = st.p50;
        R->lat1_p99 = st.p99;
        R->rate = o->rate;
        if (o->rate_x > 0) {
            phase_closed(&s, cap, o->cal_s, &ph);
            wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
            phase_stats(&s, &ph, &st);
            R->capacity = R->cap_before = st.fps;
            R->rate = o->rate_x * st.fps;
        }
    }
    if (o->open && R->rate <= 0) {
        fprintf(stderr, "%s: no rate to run at\n", WHO);
        int kk;
        stop_server(&s, o->grace_s, &kk);
        return -1;
    }

    /* the measured phase */
    tcpu_t t0[MAX_THREADS], t1[MAX_THREADS];
    long sc0[SC_N];
    int sc_ok = o->threads && server_counters(&s, sc0) == 0;
    int n0 = thread_cpu(s.pid, t0, MAX_THREADS);
    sampler_t *sm = calloc(1, sizeof *sm);
    sm->pid = s.pid;
    sm->t0 = mono_ns();
    sm->mark_s = o->seconds >= 10 ? 5 : o->seconds / 2;
    sm->rss_mark = -1;
    pthread_t smt;
    pthread_create(&smt, NULL, sampler_main, sm);
    double cli0 = bu_cpu_s();
    if (o->open) phase_open(&s, R->rate, o->seconds, o->grace_s, &ph);
    else phase_closed(&s, k, o->seconds, &ph);
    double cli1 = bu_cpu_s();
    int n1 = thread_cpu(s.pid, t1, MAX_THREADS);
    R->rss_end = rss_kb(s.pid); /* at the end of the load, before the drain */
    double wall = (double)(ph.t_stop - ph.t0) / 1e9;
    int64_t grace_end = mono_ns() + (int64_t)(o->grace_s * 1e9);
    wait_inflight_below(&s, 1, grace_end);
    atomic_store(&sm->stop, 1);
    pthread_join(smt, NULL);
    R->rss_drained = rss_kb(s.pid);
    long sc1[SC_N];
    sc_ok = sc_ok && server_counters(&s, sc1) == 0;
    for (int i = 0; i < SC_N; i++) R->counters[i] = sc_ok && sc0[i] >= 0 && sc1[i] >= 0 ? sc1[i] - sc0[i] : -1;
    R->rss_mark = sm->rss_mark >= 0 ? sm->rss_mark : R->rss_end;
    R->rss_max = sm->rss_max > R->rss_end ? sm->rss_max : R->rss_end;
    R->nsamples = sm->nsamples;
    memcpy(R->samples, sm->samples, sizeof(long) * (size_t)sm->nsamples);
    free(sm);
    phase_stats(&s, &ph, &R->main);
    R->ph = ph;
    R->lost = R->main.pending; /* unanswered after the grace period */
    if (o->limit && !o->open && !o->limit_reuse && !R->lost) { /* the limits again, after */
        limit_t after;
        measure_limit(o, f, m, &after);
        limit_mean(&R->lim, &after);
        last = R->lim;
    }
    if (o->open && o->rate_x > 0 && !R->lost) {
        /* capacity again, after: the machine's speed drifts (a neighbour's
         * load), and goodput is divided by the mean of the two */
        phase_t ph2;
        pstats_t st2;
        phase_closed(&s, cap, o->cal_s, &ph2);
        wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
        phase_stats(&s, &ph2, &st2);
        R->cap_after = st2.fps;
        R->capacity = (R->cap_before + R->cap_after) / 2;
    }

    long total = 0;
    R->threads_n = 0;
    for (int i = 0; i < n1; i++) {
        long before = 0;
        for (int j = 0; j < n0; j++)
            if (t0[j].tid == t1[i].tid) before = t0[j].ticks;
        R->tdelta[R->threads_n] = t1[i];
        R->tdelta[R->threads_n].ticks = t1[i].ticks - before;
        total += t1[i].ticks - before;
        R->threads_n++;
    }
    R->srv_cpu_frame = R->main.served ? ticks_s(total) / (double)(R->main.served * (o->batch > 0 ? o->batch : 1)) : 0;
    R->srv_cpu_util = wall > 0 ? ticks_s(total) / wall : 0;
    R->cli_cpu_util = wall > 0 ? (cli1 - cli0) / wall : 0;

    if (o->limit && !o->open && k == 1 && o->batch <= 1 && !R->lost)
        phase_paired(&s, o, m, o->seconds, &R->pair_lat, &R->pair_raw, &R->pair_pipe);

    R->exit_status = stop_server(&s, o->grace_s, &R->killed);
    /* whatever was answered after the grace period (on the way out) */
    long still = 0;
    for (uint32_t id = 1; id < s.next_id; id++)
        if (recs[id].state == ST_SENT) still++;
    R->late_answers = R->lost - (still < R->lost ? still : R->lost);
    if (still > R->lost) R->lost = still; /* an earlier phase lost some too */
    R->unexpected = s.unexpected;
    R->events = s.events;
    if (R->killed || !WIFEXITED(R->exit_status) || WEXITSTATUS(R->exit_status) != 0) {
        fprintf(stderr, "%s: ospreyd %s (status 0x%x)\n", WHO,
                R->killed ? "did not exit after stdin closed: killed" : "exited abnormally",
                R->exit_status);
        server_log_tail(&s);
    }
    free(s.stats);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    pthread_condattr_destroy(&ca);
    return 0;
}

/* ---- reporting ------------------------------------------------------------- */

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
GETTER(g_sentrate, r->ph.t_stop > r->ph.t0 ? (double)r->main.sent / ((double)(r->ph.t_stop - r->ph.t0) / 1e9) : 0)
GETTER(g_good, r->capacity > 0 ? r->main.fps / r->capacity : 0)
GETTER(g_p99x, r->lat1_p50 > 0 ? r->main.p99 / r->lat1_p50 : 0)
GETTER(g_latep99, r->ph.late_p99_ms)
GETTER(g_latemax, r->ph.late_max_ms)
GETTER(g_laten, r->ph.late_n)
GETTER(g_srvcpu, r->srv_cpu_frame * 1e3)
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

static void loadavg(char *buf, size_t n) {
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
        fprintf(stderr, "%s: note: no protocol normalisation matches %s's mean/std; sending '%s' (the nearest)\n",
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
             esc, c->postprocessor, c->width > c->height ? c->width : c->height, c->width, c->height,
             c->channels, c->fit == OSP_FIT_RESIZE ? "resize" : "letterbox", norm, c->mean[0], c->mean[1],
             c->mean[2], c->std[0], c->std[1], c->std[2], c->confidence, c->nms_iou, c->max_detections);
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
          "  --deadline-ms D      wire-v2 deadline D ms after sending (default 0: none)\n"
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
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n ? n : -1;
}

/* The measurement's name in --brief lines: the label, or model, format, size, batch. */
static const char *config_name(const opts_t *o) {
    static char b[128];
    if (o->label && o->batch <= 0) return o->label;
    int n = snprintf(b, sizeof b, "%s%s%s %s %dx%d", o->label ? o->label : "", o->label ? ": " : "",
                     o->model, o->jpeg ? "jpeg" : o->shm ? "shm" : "raw", o->w, o->h);
    if (o->batch > 0 && n > 0 && (size_t)n < sizeof b) snprintf(b + n, sizeof b - (size_t)n, " batch %d", o->batch);
    return b;
}

static const char *limit_name(const opts_t *o, int batch) {
    static char b[128];
    snprintf(b, sizeof b, "%s limit, raw run loop, batch %d", o->model, batch);
    return b;
}

static double lim_fps[MAX_LIST], fps_at[MAX_LIST][MAX_LIST];
/* CPU ms per frame, raw loop and server: contention-proof where fps is not */
static double lim_cpu[MAX_LIST], srv_cpu_at[MAX_LIST][MAX_LIST];
static int cur_b, cur_q;

/* The raw loop's gain from batch nb over batch 1, paired: rounds in which
 * the limit (raw_limit, `seconds` a configuration) is measured at batch 1
 * and then at nb, the median of the rounds' ratios. Limits measured a
 * minute apart on this shared machine differ by more than the gain being
 * judged. */
static double raw_gain_paired(const opts_t *o, int nb, int rounds, double seconds) {
    enum { MAX_ROUNDS = 9 };
    double r[MAX_ROUNDS];
    if (rounds > MAX_ROUNDS) rounds = MAX_ROUNDS;
    for (int i = 0; i < rounds; i++) {
        limit_t at1 = {0}, atn = {0};
        raw_limit(o->model, 1, seconds, g_tensor, &at1);
        raw_limit(o->model, nb, seconds, g_tensor, &atn);
        r[i] = at1.limit > 0 ? atn.limit / at1.limit : 0;
    }
    return bu_median(r, rounds);
}

/* After a --batch list: what batch 4 (or the largest) gains over batch 1,
 * in the raw loop and in ospreyd at each K, and the share ospreyd keeps;
 * then the raw loop's gain again, paired (raw_gain_paired). */
static void batch_gain(const opts_t *o, const osp_model_t *m) {
    int b1 = -1, bn = -1;
    for (int i = 0; i < o->nbatches; i++) {
        if (o->batches[i] == 1) b1 = i;
        if (o->batches[i] == 4) bn = i;
    }
    if (bn < 0) bn = o->nbatches - 1;
    if (b1 < 0 || bn == b1 || !(lim_fps[b1] > 0)) return;
    double raw = lim_fps[bn] / lim_fps[b1];
    printf("  batch %d vs 1: raw loop x%.2f", o->batches[bn], raw);
    if (!o->limit_only)
        for (int q = 0; q < o->nks; q++) {
            double g = fps_at[b1][q] > 0 ? fps_at[bn][q] / fps_at[b1][q] : 0;
            printf("; ospreyd K=%d x%.2f (%.2f of the raw gain", o->ks[q], g, g / raw);
            if (raw > 1.02) printf(", %.2f of the raw speed-up", (g - 1) / (raw - 1));
            printf(")");
        }
    printf("\n");
    /* the same in CPU per frame, which a neighbour's load does not move much */
    if (lim_cpu[b1] > 0 && lim_cpu[bn] > 0) {
        double rawc = lim_cpu[b1] / lim_cpu[bn];
        printf("  batch %d vs 1, CPU per frame: raw loop %.2f -> %.2f ms (x%.2f)", o->batches[bn], lim_cpu[b1],
               lim_cpu[bn], rawc);
        if (!o->limit_only)
            for (int q = 0; q < o->nks; q++)
                if (srv_cpu_at[b1][q] > 0 && srv_cpu_at[bn][q] > 0) {
                    double g = srv_cpu_at[b1][q] / srv_cpu_at[bn][q];
                    printf("; ospreyd K=%d %.2f -> %.2f ms (x%.2f, %.2f of the raw gain)", o->ks[q],
                           srv_cpu_at[b1][q], srv_cpu_at[bn][q], g, g / rawc);
                }
        printf("\n");
    }
    if (!m->batch_dynamic) return; /* ospreyd runs such a model's items one by one */
    enum { ROUNDS = 3 };
    double paired = raw_gain_paired(o, o->batches[bn], ROUNDS, 1.5);
    printf("  batch %d vs 1, raw loop paired (%d rounds, 1.5 s a configuration, in turns): x%.2f%s\n",
           o->batches[bn], ROUNDS, paired,
           paired > 0 && paired <= 1.0 ? ": the runtime gains nothing from batching here" : "");
}

/* One configuration (batch size, K): o->runs runs, each on a fresh server;
 * the report. *fps_out, *lim_out: the medians, for the batch-gain summary.
 * 0, 1 when every run failed, 3 when a request was lost. */
static int measure_config(const opts_t *op, const char *server, const frame_t *fp, const osp_model_t *m,
                          run_t *runs, double *fps_out, double *lim_out) {
    opts_t o = *op;
    const frame_t f = *fp;
    char la0[64], la1[64];
    loadavg(la0, sizeof la0);
    int cap = o.concurrency + 2, k = o.inflight > 0 ? o.inflight : cap; /* cap: until a server reports */
    char shape[96];
    if (o.open) {
        if (o.rate_x > 0) snprintf(shape, sizeof shape, "open loop at %gx closed-loop capacity", o.rate_x);
        else snprintf(shape, sizeof shape, "open loop at %g frames/s", o.rate);
    } else {
        snprintf(shape, sizeof shape, "closed loop K=%d", k);
    }
    if (o.batch > 0) {
        size_t l = strlen(shape);
        snprintf(shape + l, sizeof shape - l, ", infer_batch of %d", o.batch);
    }
    const char *fmt_name = o.jpeg ? "JPEG" : o.shm ? "raw RGB via shm" : "raw RGB";
    if (!o.brief)
        fprintf(stderr, "%s: %s %s %dx%d (%zu bytes/frame), %s, concurrency %d, %d run(s) x %g s; load average %s\n",
                WHO, o.model, fmt_name, o.w, o.h, o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3,
                shape, o.concurrency, o.runs, o.seconds, la0);
    int ok = 0;
    for (int r = 0; r < o.runs; r++) {
        if (do_run(&o, server, &f, m, &runs[ok])) {
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
        if (o.limit) fprintf(stderr, ", limit %.1f (1x%d %.1f, %dx1 %.1f)", R->lim.limit, bu_cores(),
                             R->lim.one, bu_cores(), R->lim.many);
        if (o.limit && R->lim.pipeline_applies) fprintf(stderr, ", pipeline limit %.1f", R->lim.pipeline);
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
            for (int i = 0; i < SC_N; i++) fprintf(stderr, " %s %ld", sc_keys[i], R->counters[i]);
            fprintf(stderr, "\n");
            fprintf(stderr, "  RSS samples (KiB, 1/s):");
            for (int i = 0; i < R->nsamples; i++) fprintf(stderr, " %ld", R->samples[i]);
            fprintf(stderr, "\n");
        }
    }
    loadavg(la1, sizeof la1);
    if (ok && o.inflight <= 0 && runs[0].workers > o.concurrency) {
        cap = runs[0].workers + 2;
        k = cap;
        if (!o.open && o.batch > 0) snprintf(shape, sizeof shape, "closed loop K=%d, infer_batch of %d", k, o.batch);
        else if (!o.open) snprintf(shape, sizeof shape, "closed loop K=%d", k);
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
    agg_t rss5 = agg(runs, ok, g_rss5), rsse = agg(runs, ok, g_rssend), drift = agg(runs, ok, g_drift);
    agg_t lim = agg(runs, ok, g_lim), one = agg(runs, ok, g_one), many = agg(runs, ok, g_many);
    agg_t pipe = agg(runs, ok, g_pipe), ratio = agg(runs, ok, g_ratio), pratio = agg(runs, ok, g_pratio);
    agg_t cpuf = agg(runs, ok, g_cpuf), tdec = agg(runs, ok, g_tdec), tres = agg(runs, ok, g_tres);
    agg_t sentrate = agg(runs, ok, g_sentrate);
    agg_t pipecpu = agg(runs, ok, g_pipecpu), cpueff = agg(runs, ok, g_cpueff);
    agg_t effc = agg(runs, ok, g_effc), rssdr = agg(runs, ok, g_rssdr), rssmax = agg(runs, ok, g_rssmax);
    agg_t tpack = agg(runs, ok, g_tpack), lat1 = agg(runs, ok, g_lat1), capa = agg(runs, ok, g_cap);
    agg_t rate = agg(runs, ok, g_rate), good = agg(runs, ok, g_good), p99x = agg(runs, ok, g_p99x);
    agg_t latep99 = agg(runs, ok, g_latep99), latemax = agg(runs, ok, g_latemax);
    agg_t laten = agg(runs, ok, g_laten), srvcpu = agg(runs, ok, g_srvcpu);
    agg_t srvutil = agg(runs, ok, g_srvutil), cliutil = agg(runs, ok, g_cliutil);
    agg_t over1 = agg(runs, ok, g_over1), over1p = agg(runs, ok, g_over1p);
    agg_t pairraw = agg(runs, ok, g_pairraw), pairpipe = agg(runs, ok, g_pairpipe);
    agg_t capb = agg(runs, ok, g_capb), capa2 = agg(runs, ok, g_capa);
    int n = bu_cores();
    int pipe_applies = o.limit && runs[0].lim.pipeline_applies;

    *fps_out = fps.med;
    *lim_out = o.limit ? lim.med : 0;
    lim_cpu[cur_b] = o.limit ? cpuf.med : 0;
    srv_cpu_at[cur_b][cur_q] = srvcpu.med;
    if (o.brief) {
        char lim_s[48] = "", pipe_s[224] = "", bad[160] = "";
        if (o.limit) snprintf(lim_s, sizeof lim_s, "%7.1f %5.2f", lim.med, ratio.med);
        if (pipe_applies) snprintf(pipe_s, sizeof pipe_s, " (pipeline %.1f: %.2f)", pipe.med, pratio.med);
        if (o.limit) { /* CPU: raw (+ the steps) per frame / the server's per frame */
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
            snprintf(bad, sizeof bad, "  qfull %.0f deadline %.0f errors %.0f other %.0f LOST %ld%s", qf.med,
                     dl.med, er.med, dro.med, lost, abnormal ? " ABNORMAL EXIT" : "");
        if (o.open) {
            char sh[48];
            snprintf(sh, sizeof sh, "open %.0f/s", rate.med);
            printf("  %-40s %-8s %7.1f %7.1f %7.1f %-13s%s  cap %.1f (%.1f before, %.1f after), goodput/cap %.2f, "
                   "K=1 p50 %.1f, p99/K=1 %.2f, RSS drift %+.2f%%%s  load %s\n",
                   config_name(&o), sh, fps.med, p50.med, p99.med, lim_s, pipe_s, capa.med, capb.med,
                   capa2.med, good.med, lat1.med, p99x.med, drift.med, bad, la1);
        } else {
            char sh[32];
            snprintf(sh, sizeof sh, "K=%d", k);
            printf("  %-40s %-8s %7.1f %7.1f %7.1f %-13s%s%s  load %s\n", config_name(&o), sh, fps.med,
                   p50.med, p99.med, lim_s, pipe_s, bad, la1);
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
               "\"serverCpuMsPerFrame\":%.2f,\"serverCpuUtil\":%.2f,\"clientCpuUtil\":%.2f",
               o.label ? o.label : "", o.model, o.jpeg ? "jpeg" : o.shm ? "shm" : "raw", o.w, o.h,
               o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3, o.open ? "open" : "closed",
               o.open ? 0 : k, rate.med, o.rate_x, o.seconds, o.concurrency, runs[0].workers, n, ok,
               la0, la1, fps.med, fps.lo, fps.hi, p50.med, p99.med, pmax.med, sent.med, qf.med,
               dl.med, dro.med, er.med, lost, late_ans, unexpected, abnormal, rss5.med, rsse.med,
               drift.med, rssmax.med, rssdr.med, srvcpu.med, srvutil.med, cliutil.med);
        if (o.limit)
            printf(",\"limitFps\":%.2f,\"limit1xN\":%.2f,\"limitNx1\":%.2f,\"rawCpuMsPerFrame\":%.3f,"
                   "\"rawCores\":%.2f,\"ratioToLimit\":%.3f,\"rawPlusStepsCpuMs\":%.3f,\"cpuEfficiency\":%.3f",
                   lim.med, one.med, many.med, cpuf.med, effc.med, ratio.med, pipecpu.med, cpueff.med);
        if (o.limit && !o.open && k == 1 && o.batch <= 1)
            printf(",\"pairedOverRawMs\":%.3f,\"pairedRawMs\":%.3f,\"pipeAloneMs\":%.3f", over1p.med,
                   pairraw.med, pairpipe.med);
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
           o.label ? o.label : "", o.label ? ": " : "", o.model, fmt_name,
           o.w, o.h, o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3, shape, o.concurrency,
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
    line(o.batch > 0 ? "latency p50, served requests (ms)" : "latency p50, served (ms)", p50, "%.1f", 1);
    line(o.batch > 0 ? "latency p99, served requests (ms)" : "latency p99, served (ms)", p99, "%.1f", 1);
    line(o.batch > 0 ? "latency max, served requests (ms)" : "latency max, served (ms)", pmax, "%.1f", 1);
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
    line("server RSS after 5 s (MiB)", (agg_t){rss5.med / 1024, rss5.lo / 1024, rss5.hi / 1024}, "%.1f", 1);
    line("server RSS at the end of the load (MiB)", (agg_t){rsse.med / 1024, rsse.lo / 1024, rsse.hi / 1024}, "%.1f", 1);
    line("server RSS peak, 1/s samples (MiB)", (agg_t){rssmax.med / 1024, rssmax.lo / 1024, rssmax.hi / 1024}, "%.1f", 1);
    line("server RSS after the drain (MiB)", (agg_t){rssdr.med / 1024, rssdr.lo / 1024, rssdr.hi / 1024}, "%.1f", 1);
    line("RSS drift end vs 5 s (%)", drift, "%+.2f", 0);
    line("server CPU per served frame (ms)", srvcpu, "%.2f", 1);
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

int main(int argc, char **argv) {
    opts_t o = {.model = "ssd-oidv4", .seconds = 10, .concurrency = 2, .runs = 3,
                .limit_seconds = 3, .warmup_s = 1, .lat_s = 3, .cal_s = 5, .grace_s = 5,
                .quality = 90};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (ARG("--model")) o.model = v;
        else if (ARG("--frame")) {
            o.jpeg = o.shm = 0;
            if (strcmp(v, "jpeg") == 0) o.jpeg = 1;
            else if (strcmp(v, "shm") == 0) o.shm = 1;
            else if (strcmp(v, "raw") != 0) goto bad;
        } else if (ARG("--batch")) {
            if ((o.nbatches = parse_list(v, o.batches, 1, 255)) < 0) goto bad;
        } else if (ARG("--batch-frame-id")) {
            o.batch_tag = (uint32_t)strtoul(v, NULL, 10);
        } else if (ARG("--size")) {
            if (parse_size(v, &o.w, &o.h)) goto bad;
        } else if (ARG("--image")) o.image = v;
        else if (ARG("--quality")) o.quality = atoi(v);
        else if (ARG("--mode")) {
            if (strcmp(v, "open") == 0) o.open = 1;
            else if (strcmp(v, "closed") == 0) o.open = 0;
            else goto bad;
        } else if (ARG("--inflight")) {
            if ((o.nks = parse_list(v, o.ks, 0, 4096)) < 0) goto bad;
        } else if (ARG("--rate")) {
            size_t l = strlen(v);
            if (l && (v[l - 1] == 'x' || v[l - 1] == 'X')) o.rate_x = atof(v);
            else o.rate = atof(v);
            if (o.rate <= 0 && o.rate_x <= 0) goto bad;
        } else if (ARG("--seconds")) o.seconds = atof(v);
        else if (ARG("--concurrency")) o.concurrency = atoi(v);
        else if (ARG("--runs")) o.runs = atoi(v);
        else if (ARG("--limit-seconds")) o.limit_seconds = atof(v);
        else if (ARG("--warmup")) o.warmup_s = atof(v);
        else if (ARG("--latency-seconds")) o.lat_s = atof(v);
        else if (ARG("--capacity-seconds")) o.cal_s = atof(v);
        else if (ARG("--deadline-ms")) o.deadline_ms = atof(v);
        else if (ARG("--grace")) o.grace_s = atof(v);
        else if (ARG("--server")) o.server = v;
        else if (ARG("--label")) o.label = v;
        else if (strcmp(a, "--limit") == 0) o.limit = 1;
        else if (strcmp(a, "--limit-only") == 0) o.limit_only = o.limit = bu_quiet_loads = 1;
        else if (strcmp(a, "--brief") == 0) o.brief = bu_quiet_loads = 1;
        else if (strcmp(a, "--brief-header") == 0) {
            printf("  %-40s %-8s %7s %7s %7s %7s %5s\n", "measurement (--brief)", "shape", "f/s", "p50 ms",
                   "p99 ms", "limit", "ratio");
            return 0;
        }
        else if (strcmp(a, "--json") == 0) o.json = 1;
        else if (strcmp(a, "--threads") == 0) o.threads = 1;
        else if (strcmp(a, "--plain-write") == 0) o.plain_write = 1;
        else if (strcmp(a, "--explicit-config") == 0) o.model_json = "";
        else if (strcmp(a, "--print-config") == 0) o.model_json = "print", bu_quiet_loads = 1;
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
        o.concurrency < 1 || o.concurrency > 64 ||
        o.quality < 1 || o.quality > 100 || o.grace_s < 0.1 || o.grace_s > 120 ||
        o.limit_seconds <= 0 || o.lat_s <= 0 || o.cal_s <= 0 || o.warmup_s < 0 ||
        o.rate > 100000 || o.rate_x > 100) {
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
    osp_model_t *m = bu_open_model(WHO, o.model, 1);
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
    if (make_frame(&o, &f)) return 1;
    if (o.shm && shm_create(f.rgb, (size_t)o.w * o.h * 3)) return 1;
    recs = calloc(REC_CAP, sizeof *recs);
    run_t *runs = calloc((size_t)o.runs, sizeof *runs);
    if (!recs || !runs) return 1;
    if (!o.nbatches) o.batches[o.nbatches++] = 0; /* single-frame requests */
    if (!o.nks) o.ks[o.nks++] = 0;               /* the admission capacity */
    int rc = 0;
    if (o.limit_only) {
        for (int b = 0; b < o.nbatches; b++) {
            o.batch = o.batches[b];
            limit_t L = {0};
            char la[64];
            loadavg(la, sizeof la);
            measure_limit(&o, &f, m, &L);
            lim_fps[b] = L.limit;
            lim_cpu[b] = L.cpu_frame * 1e3;
            int n = bu_cores();
            printf("  %-40s %8.1f f/s  (1x%d thr %.1f, %dx1 thr %.1f)%s  load %s\n",
                   limit_name(&o, o.batch > 0 ? o.batch : 1), L.limit, n, L.one, n, L.many,
                   o.batch > 1 && L.batch == 1 ? "  [no dynamic batch axis: one by one]" : "", la);
            fflush(stdout);
        }
    } else {
        for (int b = 0; b < o.nbatches; b++)
            for (int q = 0; q < o.nks; q++) {
                o.batch = o.batches[b];
                o.inflight = o.ks[q];
                o.limit_reuse = q > 0;
                cur_b = b;
                cur_q = q;
                if (o.batch > 0 && f.nitems != o.batch && make_batch_items(&o, &f, o.batch)) return 1;
                int r1 = measure_config(&o, server, &f, m, runs, &fps_at[b][q], &lim_fps[b]);
                if (r1 > rc) rc = r1;
            }
    }
    if (o.nbatches > 1) batch_gain(&o, m);
    tjFree(f.jpg);
    free(f.rgb);
    free(f.items);
    free(recs);
    free(g_tensor);
    free(runs);
    osp_model_free(m);
    shm_cleanup();
    return rc;
}

