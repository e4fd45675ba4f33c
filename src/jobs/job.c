/*
 * What a job is and where the queue is (jobs.h): pure functions over
 * bytes a submitter or an operator wrote. Every size is checked before it
 * is used, every number parsed whole; nothing here allocates.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jobs/jobs.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int is(const osp_job_field_t *f, const char *name) {
    return f->name_len == strlen(name) && memcmp(f->name, name, f->name_len) == 0;
}

static int equals(const osp_job_field_t *f, const char *v) {
    return f->len == strlen(v) && memcmp(f->value, v, f->len) == 0;
}

/* A field copied as text into out[cap]: 0; -1 when it is cap bytes or
 * longer, -2 when it holds a NUL byte (C would cut it there: "cam\0x"
 * must not be answered as "cam"). */
static int text(const osp_job_field_t *f, char *out, size_t cap) {
    if (f->len >= cap) return -1;
    if (memchr(f->value, '\0', f->len)) return -2;
    memcpy(out, f->value, f->len);
    out[f->len] = '\0';
    return 0;
}

/* A decimal number of at most 19 digits, nothing else. */
static int number(const osp_job_field_t *f, uint64_t *out) {
    if (f->len == 0 || f->len > 19) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < f->len; i++) {
        if (f->value[i] < '0' || f->value[i] > '9') return -1;
        v = v * 10 + (uint64_t)(f->value[i] - '0');
    }
    *out = v;
    return 0;
}

static int side(const osp_job_field_t *f, int *out) {
    uint64_t v;
    if (number(f, &v) || v < 1 || v > OSP_JOB_SIDE_MAX) return -1;
    *out = (int)v;
    return 0;
}

/* Bytes a raw frame of w x h in fmt takes (sides are capped: no overflow). */
static size_t raw_bytes(int w, int h, int fmt) {
    size_t px = (size_t)w * (size_t)h;
    switch (fmt) {
    case OSP_JOB_RGB:
    case OSP_JOB_BGR: return px * 3;
    case OSP_JOB_GRAY: return px;
    default: return px + 2 * ((size_t)(w + 1) / 2) * ((size_t)(h + 1) / 2);
    }
}

int osp_job_parse(const osp_job_field_t *f, int n, int n_total, size_t max_data, osp_job_t *j,
                  char *err, size_t errlen) {
    static const char *const fmts[] = {"rgb", "bgr", "gray", "nv12", "i420"};
    const osp_job_field_t *kind = NULL, *fmt = NULL, *w = NULL, *h = NULL, *deadline = NULL;
    const osp_job_field_t *model = NULL, *data = NULL;
    memset(j, 0, sizeof *j);
    int rc;
    for (int i = 0; i < n; i++) { /* id and reply_to first: the answer needs them */
        if (is(&f[i], "id") && (rc = text(&f[i], j->id, sizeof j->id))) {
            j->id[0] = '\0';
            return rc == -2
                       ? fail(err, errlen, "id: holds a NUL byte")
                       : fail(err, errlen, "id: not a text of at most %d bytes", OSP_JOB_ID_MAX);
        }
        if (is(&f[i], "reply_to") && (rc = text(&f[i], j->reply_to, sizeof j->reply_to))) {
            j->reply_to[0] = '\0';
            return rc == -2 ? fail(err, errlen, "reply_to: holds a NUL byte")
                            : fail(err, errlen, "reply_to: not a stream name of at most %d bytes",
                                   OSP_JOB_NAME_MAX);
        }
    }
    if (n_total > n) return fail(err, errlen, "%d fields, more than %d", n_total, n);
    for (int i = 0; i < n; i++) {
        const osp_job_field_t **slot = is(&f[i], "kind")          ? &kind
                                       : is(&f[i], "fmt")         ? &fmt
                                       : is(&f[i], "w")           ? &w
                                       : is(&f[i], "h")           ? &h
                                       : is(&f[i], "deadline_ms") ? &deadline
                                       : is(&f[i], "model")       ? &model
                                       : is(&f[i], "data")        ? &data
                                                                  : NULL;
        if (slot) *slot = &f[i];
    }
    if (!j->id[0]) return fail(err, errlen, "no id field");
    if (!model || model->len == 0 || (rc = text(model, j->model, sizeof j->model)))
        return model && model->len && rc == -2
                   ? fail(err, errlen, "model: holds a NUL byte")
                   : fail(err, errlen, "model: missing, or longer than %d bytes", OSP_JOB_NAME_MAX);
    if (!kind) return fail(err, errlen, "no kind field (jpeg, png or raw)");
    if (equals(kind, "jpeg"))
        j->kind = OSP_JOB_JPEG;
    else if (equals(kind, "png"))
        j->kind = OSP_JOB_PNG;
    else if (equals(kind, "raw"))
        j->kind = OSP_JOB_RAW;
    else
        return fail(err, errlen, "kind: not jpeg, png or raw");
    if (!data || data->len == 0) return fail(err, errlen, "no data");
    if (data->len > max_data)
        return fail(err, errlen, "data of %zu bytes exceeds the limit of %zu", data->len, max_data);
    j->data = data->value;
    j->len = data->len;
    if (deadline && number(deadline, &j->deadline_ms))
        return fail(err, errlen, "deadline_ms: not a number of epoch milliseconds");
    if (j->kind != OSP_JOB_RAW) return 0;
    if (!w || !h || side(w, &j->w) || side(h, &j->h))
        return fail(err, errlen, "raw needs w and h from 1 to %d", OSP_JOB_SIDE_MAX);
    j->fmt = -1;
    for (int i = 0; fmt && i < (int)(sizeof fmts / sizeof fmts[0]); i++)
        if (equals(fmt, fmts[i])) j->fmt = i;
    if (j->fmt < 0) return fail(err, errlen, "fmt: not rgb, bgr, gray, nv12 or i420");
    size_t need = raw_bytes(j->w, j->h, j->fmt);
    if (j->len != need)
        return fail(err, errlen, "data of %zu bytes, a %dx%d %s frame takes %zu", j->len, j->w,
                    j->h, fmts[j->fmt], need);
    return 0;
}

/* ---- the queue's address --------------------------------------------------------- */

static int copy_part(const char *s, size_t n, char *out, size_t cap) {
    if (n >= cap) return -1;
    memcpy(out, s, n);
    out[n] = '\0';
    return 0;
}

int osp_jobs_target_parse(const char *url, osp_jobs_target_t *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    const char *p = strstr(url, "://");
    if (!p || copy_part(url, (size_t)(p - url), t->scheme, sizeof t->scheme))
        return fail(err, errlen, "a jobs URL is redis://HOST:PORT[/DB]/STREAM");
    p += 3;
    const char *slash = strchr(p, '/'), *at = memchr(p, '@', slash ? (size_t)(slash - p) : strlen(p));
    if (!slash)
        return fail(err, errlen, "the jobs URL names no stream (redis://HOST:PORT/STREAM)");
    if (at) { /* [USER]:PASS@ */
        const char *colon = memchr(p, ':', (size_t)(at - p));
        if (!colon || copy_part(p, (size_t)(colon - p), t->user, sizeof t->user) ||
            copy_part(colon + 1, (size_t)(at - colon - 1), t->pass, sizeof t->pass))
            return fail(err, errlen, "the jobs URL's credentials are not [USER]:PASSWORD@");
        p = at + 1;
    }
    const char *colon = memchr(p, ':', (size_t)(slash - p));
    const char *host_end = colon ? colon : slash;
    if (host_end == p || copy_part(p, (size_t)(host_end - p), t->host, sizeof t->host))
        return fail(err, errlen, "the jobs URL names no host");
    t->port = 6379;
    if (colon) {
        int port = 0;
        const char *q = colon + 1;
        for (; q < slash && *q >= '0' && *q <= '9' && port <= 65535; q++)
            port = port * 10 + (*q - '0');
        if (q != slash || q == colon + 1 || port < 1 || port > 65535)
            return fail(err, errlen, "the jobs URL's port is not from 1 to 65535");
        t->port = port;
    }
    p = slash + 1;
    const char *next = strchr(p, '/');
    if (next && next > p) { /* /DB/STREAM */
        int db = 0;
        const char *q = p;
        for (; q < next && *q >= '0' && *q <= '9' && db < 100000; q++) db = db * 10 + (*q - '0');
        if (q != next) return fail(err, errlen, "the jobs URL's database is not a number");
        t->db = db;
        p = next + 1;
    }
    if (!*p || copy_part(p, strlen(p), t->stream, sizeof t->stream))
        return fail(err, errlen, "the jobs URL's stream name is empty or longer than %d bytes",
                    OSP_JOB_NAME_MAX);
    return 0;
}

void osp_jobs_target_show(const osp_jobs_target_t *t, char *out, size_t cap) {
    snprintf(out, cap, "%s://%s%s:%d/%d/%s", t->scheme, t->pass[0] ? "***@" : "", t->host, t->port,
             t->db, t->stream);
}
