/*
 * loadgen: drives ospreyd (the pool worker) over its stdin/stdout pipes the
 * way a host does, and reports what it serves next to the limits of
 * MEASURING.md measured in the same run. A benchmark, never a test: it
 * asserts nothing, except that it says loudly when a request went
 * unanswered.
 *
 *   loadgen [--model NAME] [--frame raw|jpeg] [--size WxH] [--mode closed|open]
 *           [--inflight K] [--rate R|Fx] [--seconds S] [--concurrency N]
 *           [--runs R] [--limit] [--json] [...]   (--help for all)
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
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libyuv/scale_rgb.h>
#include <turbojpeg.h>

#include "bench_util.h"
#include "image/image.h"

#define WHO "loadgen"
#define MAX_RUNS 15
#define REC_CAP (1u << 20) /* requests per run, at most */
#define MAX_THREADS 256

/* ---- options --------------------------------------------------------------- */

typedef struct {
    const char *model;
    int jpeg;
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
    const char *image;
    const char *server;
    const char *label;
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

static void put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static void put_u64(uint8_t *p, uint64_t v) {
    put_u32(p, (uint32_t)v);
    put_u32(p + 4, (uint32_t)(v >> 32));
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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
    uint8_t msg_type;
    uint32_t fw, fh;
    const uint8_t *payload;
    size_t payload_len;
    double deadline_ms;
} srv_t;

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

/* Write every byte of iov[0..cnt) to a non-blocking fd, polling when it is
 * full. 0, or -1 when the server is gone. */
static int write_all(srv_t *s, struct iovec *iov, int cnt) {
    int64_t give_up = mono_ns() + (int64_t)60e9; /* a server that stopped reading */
    while (cnt > 0) {
        ssize_t w = writev(s->wfd, iov, cnt);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN || s->eof || mono_ns() > give_up) {
                if (errno == EAGAIN) fprintf(stderr, "%s: ospreyd stopped reading its stdin\n", WHO);
                return -1;
            }
            struct pollfd p = {.fd = s->wfd, .events = POLLOUT};
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
        uint32_t total = get_u32(hdr), id = get_u32(hdr + 4);
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
    char cfg[512];
    int n = snprintf(cfg, sizeof cfg,
                     "{\"runtime\":\"onnxruntime\",\"concurrency\":%d,\"models\":[{\"model\":\"%s\"}],"
                     "\"protocolVersion\":2}",
                     o->concurrency, o->model);
    uint8_t hdr[9];
    put_u32(hdr, (uint32_t)(5 + n));
    put_u32(hdr + 4, 0);
    hdr[8] = 0;
    struct iovec iov[2] = {{hdr, 9}, {cfg, (size_t)n}};
    if (write_all(s, iov, 2)) return -1;
    uint8_t rh[8];
    struct pollfd p = {.fd = s->rfd, .events = POLLIN};
    if (poll(&p, 1, 180000) <= 0 || read_full(s->rfd, rh, 8)) return -1;
    uint32_t total = get_u32(rh);
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

/* Send one inference request (blocking in the sense of write_all). The
 * record is marked sent and counted in flight before the first byte goes. */
static uint32_t begin_request(srv_t *s, uint8_t *hdr, size_t *hlen) {
    pthread_mutex_lock(&s->mu);
    uint32_t id = s->next_id++;
    recs[id].state = ST_SENT;
    recs[id].t_send = mono_ns();
    s->inflight++;
    pthread_mutex_unlock(&s->mu);
    size_t h = 9;
    if (s->version >= 2) {
        uint64_t dl = s->deadline_ms > 0 ? epoch_ms() + (uint64_t)s->deadline_ms : 0;
        put_u64(hdr + h, dl);
        h += 8;
    }
    hdr[h++] = 0; /* model_idx */
    if (s->msg_type == 0x02) {
        put_u32(hdr + h, s->fw);
        put_u32(hdr + h + 4, s->fh);
        hdr[h + 8] = 0; /* RGB */
        h += 9;
    }
    put_u32(hdr, (uint32_t)(h - 4 + s->payload_len));
    put_u32(hdr + 4, id);
    hdr[8] = s->msg_type;
    *hlen = h;
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
    uint8_t hdr[32];
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
    uint8_t hdr[32];
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
        ssize_t w = writev(s->wfd, iov[0].iov_len ? iov : iov + 1, iov[0].iov_len ? cnt : cnt - 1);
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
    st->fps = win > 0 ? (double)in_window / win : 0;
    free(lat);
}

/* ---- frames ------------------------------------------------------------------ */

typedef struct {
    uint8_t *rgb;           /* the frame, RGB, w x h */
    unsigned char *jpg;
    unsigned long jpg_len;
} frame_t;

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
    f->rgb = malloc((size_t)o->w * o->h * 3);
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

typedef struct {
    double one, many, limit;    /* raw fps: 1 x N threads, N x 1 thread, best */
    double cpu_frame;           /* CPU s per frame of the best configuration */
    double t_decode, t_resize, t_pack; /* ms, each alone, thread CPU */
    double eff_cores;           /* CPU the raw run got: limit x cpu_frame */
    double pipe_cpu_ms;         /* cpu_frame + the steps that apply, ms */
    double pipeline;            /* cores / (cpu_frame + steps), capped at limit */
    int pipeline_applies;
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
    /* the raw runs, on this frame's tensor as packed above */
    double c1 = 0, cn = 0;
    L->one = bu_raw_fps_input(WHO, o->model, 1, n, o->limit_seconds, tensor, &c1);
    L->many = bu_raw_fps_input(WHO, o->model, n, 1, o->limit_seconds, tensor, &cn);
    L->limit = L->one > L->many ? L->one : L->many;
    L->cpu_frame = L->one > L->many ? c1 : cn;
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
    free(tensor);
}

/* ---- one run ----------------------------------------------------------------- */

typedef struct {
    pstats_t main;
    double lat1_p50, lat1_p99;  /* K=1 phase (open loop) */
    double capacity;            /* closed-loop K=cap phase (open loop Fx) */
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
    s.msg_type = o->jpeg ? 0x01 : 0x02;
    s.fw = (uint32_t)o->w;
    s.fh = (uint32_t)o->h;
    s.payload = o->jpeg ? f->jpg : f->rgb;
    s.payload_len = o->jpeg ? f->jpg_len : (size_t)o->w * o->h * 3;
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
    R->startup_ms = s.startup_ms;
    R->workers = s.workers;
    fcntl(s.wfd, F_SETFL, fcntl(s.wfd, F_GETFL) | O_NONBLOCK);
    pthread_create(&s.reader, NULL, reader_main, &s);
    s.reader_started = 1;

    int cap = o->concurrency + 2; /* admission: running + 2 pending */
    int k = o->inflight > 0 ? o->inflight : cap;
    phase_t ph;
    pstats_t st;
    /* warm-up, not counted */
    phase_closed(&s, cap, o->warmup_s, &ph);
    wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
    if (o->limit) measure_limit(o, f, m, &R->lim);
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
            R->capacity = st.fps;
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
    R->rss_mark = sm->rss_mark >= 0 ? sm->rss_mark : R->rss_end;
    R->rss_max = sm->rss_max > R->rss_end ? sm->rss_max : R->rss_end;
    R->nsamples = sm->nsamples;
    memcpy(R->samples, sm->samples, sizeof(long) * (size_t)sm->nsamples);
    free(sm);
    phase_stats(&s, &ph, &R->main);
    R->ph = ph;
    R->lost = R->main.pending; /* unanswered after the grace period */

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
    R->srv_cpu_frame = R->main.served ? ticks_s(total) / (double)R->main.served : 0;
    R->srv_cpu_util = wall > 0 ? ticks_s(total) / wall : 0;
    R->cli_cpu_util = wall > 0 ? (cli1 - cli0) / wall : 0;

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

static void usage(FILE *out) {
    fputs("usage: loadgen [options]\n"
          "  --model NAME         catalog model (default ssd-oidv4)\n"
          "  --frame raw|jpeg     infer_raw RGB or infer_jpeg (default raw)\n"
          "  --size WxH           frame size (default: the model input)\n"
          "  --image PATH         source picture (default <cache>/media/messi5.jpg), scaled to WxH\n"
          "  --quality Q          JPEG quality (default 90, 4:2:0)\n"
          "  --mode closed|open   load shape (default closed)\n"
          "  --inflight K         closed loop: requests outstanding (default concurrency+2)\n"
          "  --rate R|Fx          open loop: frames/s, or F x the closed-loop capacity\n"
          "  --seconds S          measured phase (default 10)\n"
          "  --concurrency N      the config's concurrency (default 2)\n"
          "  --runs R             runs, each on a fresh server; medians (default 3)\n"
          "  --limit              also measure the raw runtime limit (and the pipeline\n"
          "                       limit for big or JPEG frames) in each run\n"
          "  --limit-seconds S    per limit configuration (default 3)\n"
          "  --warmup S           untimed warm-up (default 1)\n"
          "  --latency-seconds S  open loop: K=1 phase for the single-frame latency (default 3)\n"
          "  --capacity-seconds S open loop Fx: capacity phase (default 5)\n"
          "  --deadline-ms D      wire-v2 deadline D ms after sending (default 0: none)\n"
          "  --grace S            wait for replies / for the exit (default 5)\n"
          "  --threads            per-thread CPU of the server in the measured phase\n"
          "  --server PATH        ospreyd to run (default: beside this binary)\n"
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
            if (strcmp(v, "jpeg") == 0) o.jpeg = 1;
            else if (strcmp(v, "raw") == 0) o.jpeg = 0;
            else goto bad;
        } else if (ARG("--size")) {
            if (parse_size(v, &o.w, &o.h)) goto bad;
        } else if (ARG("--image")) o.image = v;
        else if (ARG("--quality")) o.quality = atoi(v);
        else if (ARG("--mode")) {
            if (strcmp(v, "open") == 0) o.open = 1;
            else if (strcmp(v, "closed") == 0) o.open = 0;
            else goto bad;
        } else if (ARG("--inflight")) o.inflight = atoi(v);
        else if (ARG("--rate")) {
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
        else if (strcmp(a, "--json") == 0) o.json = 1;
        else if (strcmp(a, "--threads") == 0) o.threads = 1;
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
        o.concurrency < 1 || o.concurrency > 64 || o.inflight < 0 || o.inflight > 4096 ||
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
    if (o.w == 0) {
        o.w = m->prep.width;
        o.h = m->prep.height;
    }
    frame_t f = {0};
    if (make_frame(&o, &f)) return 1;
    recs = calloc(REC_CAP, sizeof *recs);
    run_t *runs = calloc((size_t)o.runs, sizeof *runs);
    if (!recs || !runs) return 1;

    char la0[64], la1[64];
    loadavg(la0, sizeof la0);
    int cap = o.concurrency + 2, k = o.inflight > 0 ? o.inflight : cap;
    char shape[96];
    if (o.open) {
        if (o.rate_x > 0) snprintf(shape, sizeof shape, "open loop at %gx closed-loop capacity", o.rate_x);
        else snprintf(shape, sizeof shape, "open loop at %g frames/s", o.rate);
    } else {
        snprintf(shape, sizeof shape, "closed loop K=%d", k);
    }
    fprintf(stderr, "%s: %s %s %dx%d (%zu bytes/frame), %s, concurrency %d, %d run(s) x %g s; load average %s\n",
            WHO, o.model, o.jpeg ? "JPEG" : "raw RGB", o.w, o.h,
            o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3, shape, o.concurrency, o.runs,
            o.seconds, la0);
    int ok = 0;
    for (int r = 0; r < o.runs; r++) {
        if (do_run(&o, server, &f, m, &runs[ok])) {
            fprintf(stderr, "%s: run %d failed\n", WHO, r + 1);
            continue;
        }
        run_t *R = &runs[ok++];
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
            fprintf(stderr, "  RSS samples (KiB, 1/s):");
            for (int i = 0; i < R->nsamples; i++) fprintf(stderr, " %ld", R->samples[i]);
            fprintf(stderr, "\n");
        }
    }
    loadavg(la1, sizeof la1);
    if (!ok) return 1;
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
    int n = bu_cores();
    int pipe_applies = o.limit && runs[0].lim.pipeline_applies;

    if (o.json) {
        printf("{\"label\":\"%s\",\"model\":\"%s\",\"frame\":\"%s\",\"size\":\"%dx%d\",\"frameBytes\":%zu,"
               "\"mode\":\"%s\",\"inflight\":%d,\"rate\":%.2f,\"rateX\":%.2f,\"seconds\":%g,"
               "\"concurrency\":%d,\"workers\":%d,\"cores\":%d,\"runs\":%d,\"loadavgStart\":\"%s\",\"loadavgEnd\":\"%s\","
               "\"fps\":%.2f,\"fpsMin\":%.2f,\"fpsMax\":%.2f,\"p50Ms\":%.2f,\"p99Ms\":%.2f,\"maxMs\":%.2f,"
               "\"sent\":%.0f,\"dropped\":{\"queueFull\":%.0f,\"deadlineExpired\":%.0f,\"other\":%.0f},"
               "\"errors\":%.0f,\"lost\":%ld,\"lateAnswers\":%ld,\"unexpectedReplies\":%ld,\"abnormalExits\":%d,"
               "\"rssAfter5sKb\":%.0f,\"rssEndKb\":%.0f,\"rssDriftPct\":%.2f,\"rssPeakKb\":%.0f,\"rssDrainedKb\":%.0f,"
               "\"serverCpuMsPerFrame\":%.2f,\"serverCpuUtil\":%.2f,\"clientCpuUtil\":%.2f",
               o.label ? o.label : "", o.model, o.jpeg ? "jpeg" : "raw", o.w, o.h,
               o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3, o.open ? "open" : "closed",
               o.open ? 0 : k, rate.med, o.rate_x, o.seconds, o.concurrency, runs[0].workers, n, ok,
               la0, la1, fps.med, fps.lo, fps.hi, p50.med, p99.med, pmax.med, sent.med, qf.med,
               dl.med, dro.med, er.med, lost, late_ans, unexpected, abnormal, rss5.med, rsse.med,
               drift.med, rssmax.med, rssdr.med, srvcpu.med, srvutil.med, cliutil.med);
        if (o.limit)
            printf(",\"limitFps\":%.2f,\"limit1xN\":%.2f,\"limitNx1\":%.2f,\"rawCpuMsPerFrame\":%.3f,"
                   "\"rawCores\":%.2f,\"ratioToLimit\":%.3f,\"rawPlusStepsCpuMs\":%.3f,\"cpuEfficiency\":%.3f",
                   lim.med, one.med, many.med, cpuf.med, effc.med, ratio.med, pipecpu.med, cpueff.med);
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
        printf("}\n");
        return lost ? 3 : 0;
    }

    printf("loadgen: %s%s%s, %s %dx%d (%zu bytes/frame), %s, concurrency %d (%d workers),\n"
           "  %d run(s) x %g s, medians; %d cores, load average %s at start, %s at end\n",
           o.label ? o.label : "", o.label ? ": " : "", o.model, o.jpeg ? "JPEG" : "raw RGB",
           o.w, o.h, o.jpeg ? (size_t)f.jpg_len : (size_t)o.w * o.h * 3, shape, o.concurrency,
           runs[0].workers, ok, o.seconds, n, la0, la1);
    if (o.open) {
        line("single-frame latency, K=1 p50 (ms)", lat1, "%.1f", 1);
        if (o.rate_x > 0) line("closed-loop capacity, K=running+2 (frames/s)", capa, "%.1f", 1);
        line("offered rate (frames/s)", rate, "%.1f", 1);
        line("achieved send rate (frames/s)", sentrate, "%.1f", 1);
    }
    line(o.open ? "goodput, served frames/s" : "served frames/s", fps, "%.1f", 1);
    line("latency p50, served (ms)", p50, "%.1f", 1);
    line("latency p99, served (ms)", p99, "%.1f", 1);
    line("latency max, served (ms)", pmax, "%.1f", 1);
    line("sent", sent, "%.0f", 1);
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
        snprintf(t, sizeof t, "raw runtime, 1 session x %d threads (fps)", n);
        line(t, one, "%.1f", 1);
        snprintf(t, sizeof t, "raw runtime, %d sessions x 1 thread (fps)", n);
        line(t, many, "%.1f", 1);
        line("the limit (fps)", lim, "%.1f", 1);
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
    tjFree(f.jpg);
    free(f.rgb);
    free(recs);
    free(runs);
    osp_model_free(m);
    return lost ? 3 : 0;
}
