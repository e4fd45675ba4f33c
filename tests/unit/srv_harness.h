/*
 * An in-process ospreyd for unit tests: osp_server_run on a thread of the
 * test, reading request frames from a pipe the test writes and writing
 * replies to a pipe the test reads — the drop-in stdio mode, with the
 * test backend (a test double: docs/test-backend.md) standing in for a
 * model. Frames can be written in any split, so each of the connection's
 * read modes can be driven directly.
 */
#ifndef OSP_SRV_HARNESS_H
#define OSP_SRV_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/server.h"

typedef struct {
    int to_srv, from_srv; /* the test's ends */
    int srv_in, srv_out;  /* the server's */
    pthread_t t;
    int rc;
    char dir[64]; /* scratch files (scripts, counters) */
} harness_t;

static void *harness_main(void *arg) {
    harness_t *h = arg;
    osp_server_opts_t o = {.stdio_in = h->srv_in, .stdio_out = h->srv_out};
    h->rc = osp_server_run(&o);
    close(h->srv_out); /* the test reads EOF after the last reply */
    return NULL;
}

static int harness_start(harness_t *h) {
    int in[2], out[2];
    memset(h, 0, sizeof *h);
    snprintf(h->dir, sizeof h->dir, "/tmp/osp-harness-XXXXXX");
    if (!mkdtemp(h->dir) || pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) return -1;
    h->srv_in = in[0];
    h->to_srv = in[1];
    h->from_srv = out[0];
    h->srv_out = out[1];
    fcntl(h->to_srv, F_SETPIPE_SZ, 1 << 20);
    return pthread_create(&h->t, NULL, harness_main, h);
}

/* Close the server's input (EOF: it answers what is in flight and
 * returns) and wait for it; its exit status. */
static int harness_stop(harness_t *h) {
    close(h->to_srv);
    pthread_join(h->t, NULL);
    close(h->from_srv);
    close(h->srv_in);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", h->dir);
    if (system(cmd)) {
    }
    return h->rc;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Write all n bytes, `split` at a time (0: at once), pausing between
 * pieces so that the server reads each on its own. */
static int harness_write(harness_t *h, const void *buf, size_t n, size_t split) {
    const uint8_t *p = buf;
    size_t step = split ? split : n;
    while (n > 0) {
        size_t k = n < step ? n : step;
        ssize_t w = write(h->to_srv, p, k);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        if (split && n) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    return 0;
}

/* A request frame: [u32 len][u32 req][u8 type][deadline u64 if has_deadline][body]. */
static size_t harness_frame(uint8_t *out, uint32_t req_id, uint8_t type, int has_deadline,
                            uint64_t deadline_ms, const void *body, size_t body_len) {
    size_t dl = has_deadline ? 8 : 0;
    put32(out, (uint32_t)(5 + dl + body_len));
    put32(out + 4, req_id);
    out[8] = type;
    if (dl) put64(out + 9, deadline_ms);
    if (body_len) memcpy(out + 9 + dl, body, body_len);
    return 9 + dl + body_len;
}

static int harness_command(harness_t *h, uint32_t req_id, const char *json) {
    size_t n = strlen(json);
    uint8_t *f = malloc(9 + n);
    if (!f) return -1;
    size_t len = harness_frame(f, req_id, 0, 0, 0, json, n);
    int rc = harness_write(h, f, len, 0);
    free(f);
    return rc;
}

/* An infer_raw frame of w x h pixels of fmt (3 channels unless GRAY) into
 * a new buffer (the caller frees it); *len its size. */
static uint8_t *harness_raw(uint32_t req_id, int v2, uint64_t deadline_ms, uint8_t model,
                            uint32_t w, uint32_t hgt, uint8_t fmt, size_t *len) {
    size_t ch = fmt == 2 ? 1 : 3, pix = (size_t)w * hgt * ch;
    uint8_t *f = malloc(9 + 8 + 10 + pix);
    if (!f) return NULL;
    uint8_t *hdr = f + 9 + (v2 ? 8 : 0);
    put32(f, (uint32_t)(5 + (v2 ? 8 : 0) + 10 + pix));
    put32(f + 4, req_id);
    f[8] = 2;
    if (v2) put64(f + 9, deadline_ms);
    hdr[0] = model;
    put32(hdr + 1, w);
    put32(hdr + 5, hgt);
    hdr[9] = fmt;
    for (size_t i = 0; i < pix; i++) hdr[10 + i] = (uint8_t)(i * 7 + req_id);
    *len = (size_t)(hdr + 10 + pix - f);
    return f;
}

/* The next reply within timeout_ms: 1 with *req_id and its JSON
 * (NUL-terminated, into buf of cap bytes), 0 on EOF, -1 on a timeout or
 * a reply larger than cap. */
static int harness_reply(harness_t *h, uint32_t *req_id, char *buf, size_t cap, int timeout_ms) {
    uint8_t hdr[8];
    size_t got = 0, need = 8;
    uint8_t *dst = hdr;
    for (int part = 0; part < 2; part++) {
        while (got < need) {
            struct pollfd pfd = {.fd = h->from_srv, .events = POLLIN};
            if (poll(&pfd, 1, timeout_ms) <= 0) return -1;
            ssize_t r = read(h->from_srv, dst + got, need - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) return part == 0 && got == 0 ? 0 : -1;
            got += (size_t)r;
        }
        if (part == 1) break;
        uint32_t total = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 |
                         (uint32_t)hdr[3] << 24;
        *req_id = (uint32_t)hdr[4] | (uint32_t)hdr[5] << 8 | (uint32_t)hdr[6] << 16 |
                  (uint32_t)hdr[7] << 24;
        if (total < 4 || total - 4 >= cap) return -1;
        need = total - 4;
        got = 0;
        dst = (uint8_t *)buf;
        buf[need] = '\0';
        if (need == 0) break;
    }
    return 1;
}

/* A test-backend model script (UltraFace-shaped: input [1,3,side,side],
 * outputs scores [1,4,2] and boxes [1,4,4], one face found) written into
 * the harness's folder as `name`; extra: more keys (",\"run_delay_ms\":
 * 100" ...). The model config JSON for it into cfg. */
static void harness_model(harness_t *h, const char *name, int side, const char *extra, char *cfg,
                          size_t cap) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", h->dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f,
                "{\"inputs\":[{\"name\":\"input\",\"dtype\":\"float32\",\"shape\":[1,3,%d,%d]}],"
                "\"outputs\":[{\"name\":\"scores\",\"dtype\":\"float32\",\"shape\":[1,4,2],\"fill\":0,"
                "\"set\":[{\"at\":[0,0,1],\"value\":0.9}]},"
                "{\"name\":\"boxes\",\"dtype\":\"float32\",\"shape\":[1,4,4],\"fill\":0,"
                "\"set\":[{\"at\":[0,0,2],\"value\":0.5},{\"at\":[0,0,3],\"value\":0.5}]}]%s}",
                side, side, extra ? extra : "");
        fclose(f);
    }
    snprintf(cfg, cap, "{\"path\":\"%s\",\"postprocessor\":\"ultraface\"}", path);
}

#endif
