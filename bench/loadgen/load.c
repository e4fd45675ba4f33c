/*
 * loadgen/load: one run and its load. Each run starts its own ospreyd,
 * warms it up, measures the limits if asked (limit.c), drives the closed
 * or open loop, samples the server's RSS and per-thread CPU from /proc,
 * waits for every reply and stops the server; the figures of the measured
 * phase go into a run_t for report.c.
 *
 *  closed  K requests outstanding; the next is sent when a reply arrives.
 *  open    requests on a fixed schedule from one thread (non-blocking
 *          writes; a frame that cannot start on time because the pipe is
 *          full is sent as soon as it can and its lateness recorded) while
 *          the reader thread (server.c) reads replies.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "loadgen.h"
#include "wire/encode.h"

rec_t *lg_recs;

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
        if (sm->rss_mark < 0 && now - sm->t0 >= (int64_t)(sm->mark_s * 1e9))
            sm->rss_mark = rss_kb(sm->pid);
        struct timespec d = {0, 50000000};
        nanosleep(&d, NULL);
    }
    return NULL;
}

static void phase_closed(srv_t *s, int k, double seconds, phase_t *ph) {
    memset(ph, 0, sizeof *ph);
    ph->t0 = mono_ns();
    int64_t end = ph->t0 + (int64_t)(seconds * 1e9);
    ph->first = s->next_id;
    uint8_t hdr[OSP_WIRE_HEAD_MAX];
    while (s->next_id < REC_CAP - 1) {
        if (!lg_wait_inflight_below(s, k, end)) break;
        if (mono_ns() >= end) break;
        size_t hl;
        lg_begin_request(s, hdr, &hl);
        struct iovec iov[2] = {{hdr, hl}, {(void *)s->payload, s->payload_len}};
        if (lg_write_all(s, iov, 2)) break;
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
            lg_begin_request(s, hdr, &hl);
            iov[0] = (struct iovec){hdr, hl};
            iov[1] = (struct iovec){(void *)s->payload, s->payload_len};
            cnt = 2;
            active = 1;
        }
        /* push what the pipe takes now; never block in write */
        ssize_t w = lg_push(s, s->wfd, iov[0].iov_len ? iov : iov + 1, iov[0].iov_len ? cnt : cnt - 1);
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
        const rec_t *r = &lg_recs[id];
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

int lg_do_run(const opts_t *o, const char *server, const frame_t *f, const osp_model_t *m, run_t *R) {
    memset(R, 0, sizeof *R);
    memset(lg_recs, 0, sizeof(rec_t) * REC_CAP);
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
    if (lg_spawn_server(&s, server)) {
        perror(WHO ": spawn");
        return -1;
    }
    if (lg_handshake(&s, o)) {
        fprintf(stderr, "%s: handshake with %s failed\n", WHO, server);
        lg_server_log_tail(&s);
        int k;
        lg_stop_server(&s, 1, &k);
        return -1;
    }
    if (o->shm && lg_shm_register(&s, (size_t)o->w * o->h * 3)) {
        lg_server_log_tail(&s);
        int k;
        lg_stop_server(&s, 1, &k);
        return -1;
    }
    R->startup_ms = s.startup_ms;
    R->workers = s.workers;
    fcntl(s.wfd, F_SETFL, fcntl(s.wfd, F_GETFL) | O_NONBLOCK);
    pthread_create(&s.reader, NULL, lg_reader_main, &s);
    s.reader_started = 1;

    /* admission: running (the workers the server reports: it may raise the
     * config's concurrency to the core count) + 2 pending */
    int cap = (s.workers > o->concurrency ? s.workers : o->concurrency) + 2;
    int k = o->inflight > 0 ? o->inflight : cap;
    phase_t ph;
    pstats_t st;
    /* warm-up, not counted */
    phase_closed(&s, cap, o->warmup_s, &ph);
    lg_wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
    static limit_t last; /* --inflight lists: one limit per batch size */
    if (o->limit) {
        if (o->limit_reuse)
            R->lim = last;
        else
            lg_measure_limit(o, f, m, &R->lim);
        last = R->lim;
    }
    if (o->open) {
        phase_closed(&s, 1, o->lat_s, &ph);
        lg_wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
        phase_stats(&s, &ph, &st);
        R->lat1_p50 = st.p50;
        R->lat1_p99 = st.p99;
        R->rate = o->rate;
        if (o->rate_x > 0) {
            phase_closed(&s, cap, o->cal_s, &ph);
            lg_wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
            phase_stats(&s, &ph, &st);
            R->capacity = R->cap_before = st.fps;
            R->rate = o->rate_x * st.fps;
        }
    }
    if (o->open && R->rate <= 0) {
        fprintf(stderr, "%s: no rate to run at\n", WHO);
        int kk;
        lg_stop_server(&s, o->grace_s, &kk);
        return -1;
    }

    /* the measured phase */
    tcpu_t t0[MAX_THREADS], t1[MAX_THREADS];
    long sc0[SC_N];
    int sc_ok = o->threads && lg_server_counters(&s, sc0) == 0;
    int n0 = thread_cpu(s.pid, t0, MAX_THREADS);
    sampler_t *sm = calloc(1, sizeof *sm);
    sm->pid = s.pid;
    sm->t0 = mono_ns();
    sm->mark_s = o->seconds >= 10 ? 5 : o->seconds / 2;
    sm->rss_mark = -1;
    pthread_t smt;
    pthread_create(&smt, NULL, sampler_main, sm);
    double cli0 = bu_cpu_s();
    if (o->open)
        phase_open(&s, R->rate, o->seconds, o->grace_s, &ph);
    else
        phase_closed(&s, k, o->seconds, &ph);
    double cli1 = bu_cpu_s();
    int n1 = thread_cpu(s.pid, t1, MAX_THREADS);
    R->rss_end = rss_kb(s.pid); /* at the end of the load, before the drain */
    double wall = (double)(ph.t_stop - ph.t0) / 1e9;
    int64_t grace_end = mono_ns() + (int64_t)(o->grace_s * 1e9);
    lg_wait_inflight_below(&s, 1, grace_end);
    atomic_store(&sm->stop, 1);
    pthread_join(smt, NULL);
    R->rss_drained = rss_kb(s.pid);
    long sc1[SC_N];
    sc_ok = sc_ok && lg_server_counters(&s, sc1) == 0;
    for (int i = 0; i < SC_N; i++)
        R->counters[i] = sc_ok && sc0[i] >= 0 && sc1[i] >= 0 ? sc1[i] - sc0[i] : -1;
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
        lg_measure_limit(o, f, m, &after);
        lg_limit_mean(&R->lim, &after);
        last = R->lim;
    }
    if (o->open && o->rate_x > 0 && !R->lost) {
        /* capacity again, after: the machine's speed drifts (a neighbour's
         * load), and goodput is divided by the mean of the two */
        phase_t ph2;
        pstats_t st2;
        phase_closed(&s, cap, o->cal_s, &ph2);
        lg_wait_inflight_below(&s, 1, mono_ns() + (int64_t)(o->grace_s * 1e9));
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
    R->srv_cpu_frame = R->main.served
                           ? ticks_s(total) / (double)(R->main.served * (o->batch > 0 ? o->batch : 1))
                           : 0;
    long shed = R->main.qfull + R->main.deadline;
    R->srv_cpu_shed = !R->main.served && shed ? ticks_s(total) / (double)shed : 0;
    R->srv_cpu_util = wall > 0 ? ticks_s(total) / wall : 0;
    R->cli_cpu_util = wall > 0 ? (cli1 - cli0) / wall : 0;

    if (o->limit && !o->open && k == 1 && o->batch <= 1 && !R->lost)
        lg_phase_paired(&s, o, m, o->seconds, &R->pair_lat, &R->pair_raw, &R->pair_pipe);

    R->exit_status = lg_stop_server(&s, o->grace_s, &R->killed);
    /* whatever was answered after the grace period (on the way out) */
    long still = 0;
    for (uint32_t id = 1; id < s.next_id; id++)
        if (lg_recs[id].state == ST_SENT) still++;
    R->late_answers = R->lost - (still < R->lost ? still : R->lost);
    if (still > R->lost) R->lost = still; /* an earlier phase lost some too */
    R->unexpected = s.unexpected;
    R->events = s.events;
    if (R->killed || !WIFEXITED(R->exit_status) || WEXITSTATUS(R->exit_status) != 0) {
        fprintf(stderr, "%s: ospreyd %s (status 0x%x)\n", WHO,
                R->killed ? "did not exit after stdin closed: killed" : "exited abnormally",
                R->exit_status);
        lg_server_log_tail(&s);
    }
    free(s.stats);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    pthread_condattr_destroy(&ca);
    return 0;
}
