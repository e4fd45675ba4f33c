/*
 * loadgen/server: the ospreyd child and its pipes. Starts the server with
 * its stderr in an unlinked temporary file (shown when something goes
 * wrong), does the handshake, sends commands and requests (their bytes
 * from wire/encode.h), reads every reply on a thread of its own and marks
 * the request's record, and stops the server. The request payload is the
 * same bytes for a whole run; lg_push hands its pages to the pipe.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loadgen.h"
#include "wire/encode.h"

static uint64_t epoch_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#define STATS_ID 0xFFFFFFF1u /* the req_id of loadgen's own mem_stats */

void lg_server_log_tail(srv_t *s) {
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

int lg_spawn_server(srv_t *s, const char *path) {
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
        if (r > 0)
            got += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            return -1;
    }
    return 0;
}

/* One non-blocking write of what iov[0..cnt) holds. With s->vmsplice the
 * shared payload (constant for the whole run) goes in by vmsplice(2): the
 * pipe references its pages instead of copying 6 MB per frame, so the load
 * generator's own copying does not take the server's cores on a small
 * machine; the server still reads every byte as it would from any host. A
 * header ahead of it is written alone first. */
ssize_t lg_push(srv_t *s, int fd, struct iovec *iov, int cnt) {
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
int lg_write_fd(srv_t *s, int fd, struct iovec *iov, int cnt) {
    int64_t give_up = mono_ns() + (int64_t)60e9; /* a server that stopped reading */
    while (cnt > 0) {
        ssize_t w = lg_push(s, fd, iov, cnt);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN || s->eof || mono_ns() > give_up) {
                if (errno == EAGAIN)
                    fprintf(stderr, "%s: the pipe's reader stopped reading\n", WHO);
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

int lg_write_all(srv_t *s, struct iovec *iov, int cnt) { return lg_write_fd(s, s->wfd, iov, cnt); }

/* A command frame (0x00): its header, then the JSON. */
static int send_command(srv_t *s, uint32_t req_id, const char *json, size_t n) {
    uint8_t hdr[OSP_WIRE_HEAD_MAX];
    osp_wire_req_t r = {.req_id = req_id, .version = s->version};
    size_t hl = osp_wire_encode_command(hdr, sizeof hdr, &r, NULL, n);
    struct iovec iov[2] = {{hdr, hl}, {(void *)json, n}};
    return hl ? lg_write_all(s, iov, 2) : -1;
}

/* The value after "key": in a JSON text, or NULL. Good enough for the flat
 * reply records of the protocol. */
const char *lg_json_val(const char *body, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(body, pat);
    if (!p) return NULL;
    p += strlen(pat);
    while (*p == ' ' || *p == ':') p++;
    return p;
}

static int classify(const char *body) {
    const char *v = lg_json_val(body, "dropped");
    if (v && strncmp(v, "true", 4) == 0) {
        const char *r = lg_json_val(body, "shedReason");
        if (r && strncmp(r, "\"queue-full\"", 12) == 0) return ST_QFULL;
        if (r && strncmp(r, "\"deadline-expired\"", 18) == 0) return ST_DEADLINE;
        return ST_DROP_OTHER;
    }
    if (lg_json_val(body, "error")) return ST_ERROR;
    return ST_SERVED;
}

void *lg_reader_main(void *arg) {
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
        } else if (id < REC_CAP && lg_recs[id].state == ST_SENT) {
            lg_recs[id].state = (uint8_t)st;
            lg_recs[id].t_reply = t;
            s->inflight--;
            pthread_cond_broadcast(&s->cv);
        } else {
            s->unexpected++;
        }
        pthread_mutex_unlock(&s->mu);
        if (st == ST_ERROR) {
            static _Atomic int shown;
            if (atomic_fetch_add(&shown, 1) < 3)
                fprintf(stderr, "%s: error reply: %.300s\n", WHO, body);
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
int lg_handshake(srv_t *s, const opts_t *o) {
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
    const char *st = lg_json_val(body, "status"), *models = lg_json_val(body, "models");
    const char *ver = lg_json_val(body, "protocolVersion"), *ms = lg_json_val(body, "startupMs");
    const char *wk = lg_json_val(body, "workers");
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
int lg_command_sync(srv_t *s, const char *json, char *body, size_t cap) {
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

/* Send one inference request (blocking in the sense of lg_write_all): its
 * header into hdr (OSP_WIRE_HEAD_MAX bytes), the shared payload to follow.
 * The record is marked sent and counted in flight before the first byte
 * goes. */
uint32_t lg_begin_request(srv_t *s, uint8_t *hdr, size_t *hlen) {
    pthread_mutex_lock(&s->mu);
    uint32_t id = s->next_id++;
    lg_recs[id].state = ST_SENT;
    lg_recs[id].t_send = mono_ns();
    s->inflight++;
    pthread_mutex_unlock(&s->mu);
    osp_wire_req_t r = {.req_id = id, .version = s->version};
    if (s->version >= 2 && s->deadline_ms > 0)
        r.deadline_ms = epoch_ms() + (uint64_t)s->deadline_ms;
    else if (s->version >= 2 && s->deadline_ms < 0) /* already past: shed at the gate */
        r.deadline_ms = epoch_ms() - (uint64_t)-s->deadline_ms;
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
        osp_wire_shm_t m = {.model_idx = model,
                            .region = s->region,
                            .width = s->fw,
                            .height = s->fh,
                            .fmt = rgb,
                            .stride = s->fw * 3};
        *hlen = osp_wire_encode_shm(hdr, cap, &r, &m);
        break;
    }
    default: *hlen = osp_wire_encode_jpeg(hdr, cap, &r, model, NULL, s->payload_len);
    }
    return id;
}

/* Wait until inflight < k (k = 1: until 0) or the monotonic deadline; 1 when
 * it got there, 0 on timeout or EOF. */
int lg_wait_inflight_below(srv_t *s, long k, int64_t until_ns) {
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

const char *const lg_sc_keys[SC_N] = {"framesPreparedAsRead", "framesParked", "shedQueueFull",
                                      "bytesRelayed", "loneRuns"};

int lg_server_counters(srv_t *s, long out[SC_N]) {
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
        const char *v = s->stats ? lg_json_val(s->stats, lg_sc_keys[i]) : NULL;
        out[i] = v ? atol(v) : -1;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Stop the server: close its stdin, wait for the exit, SIGKILL after grace. */
int lg_stop_server(srv_t *s, double grace_s, int *killed) {
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
