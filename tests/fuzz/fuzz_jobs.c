/*
 * libFuzzer target for what a fleet job's submitter writes (src/jobs/job.c):
 * the fields of one stream entry through osp_job_parse, and the input as a
 * --jobs URL through osp_jobs_target_parse and osp_jobs_target_show.
 * Checks: a job that parses has an id, a model and a reply_to that are the
 * fields' own bytes, whole (no NUL, nothing cut), its data within the cap,
 * a raw frame's data exactly its sides and format's size; a refusal says
 * why; a URL that parses has a port from 1 to 65535 and a stream, and is
 * shown with its password as ***, never the password. Deterministic.
 *
 * Input: [u8 n][u8 ctl] then n fields, each [u8 name length][name][u8
 * value length high][u8 low][value], cut short where the input ends; ctl
 * picks the data cap (ctl * 64 bytes, 0: 64 MiB) and the count the entry
 * claims (n, or more).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/jobs.h"
#include "check.h"

/* The last field of that name, as the parser keeps it. */
static const osp_job_field_t *last(const osp_job_field_t *f, int n, const char *name) {
    const osp_job_field_t *got = NULL;
    for (int i = 0; i < n; i++)
        if (f[i].name_len == strlen(name) && memcmp(f[i].name, name, f[i].name_len) == 0)
            got = &f[i];
    return got;
}

static int same(const char *s, const osp_job_field_t *f) {
    return f && strlen(s) == f->len && memcmp(s, f->value, f->len) == 0;
}

static void check_job(const uint8_t *data, size_t size) {
    if (size < 2) return;
    int want = data[0] % (OSP_JOB_FIELDS_MAX + 1), ctl = data[1];
    osp_job_field_t f[OSP_JOB_FIELDS_MAX];
    size_t at = 2;
    int n = 0;
    while (n < want && at < size) {
        size_t nl = data[at++];
        if (nl > size - at) nl = size - at;
        const char *name = (const char *)data + at;
        at += nl;
        size_t vl = 0;
        if (at + 2 <= size) vl = (size_t)data[at] << 8 | data[at + 1];
        at += at + 2 <= size ? 2 : size - at;
        if (vl > size - at) vl = size - at;
        f[n++] = (osp_job_field_t){name, nl, data + at, vl};
        at += vl;
    }
    size_t cap = (ctl & 0x7f) ? (size_t)(ctl & 0x7f) * 64 : 64u << 20;
    int total = n + ((ctl & 0x80) ? 1 : 0);
    osp_job_t j;
    char err[256];
    err[0] = '\0';
    int rc = osp_job_parse(f, n, total, cap, &j, err, sizeof err);
    CHECK(rc == 0 || rc == -1);
    CHECK(memchr(j.id, '\0', sizeof j.id) && memchr(j.model, '\0', sizeof j.model) &&
          memchr(j.reply_to, '\0', sizeof j.reply_to));
    if (rc) {
        CHECK(err[0] != '\0');
        return;
    }
    CHECK(total == n);
    CHECK(j.id[0] && same(j.id, last(f, n, "id")));
    CHECK(same(j.model, last(f, n, "model")));
    if (j.reply_to[0]) CHECK(same(j.reply_to, last(f, n, "reply_to")));
    const osp_job_field_t *d = last(f, n, "data");
    CHECK(d && j.data == d->value && j.len == d->len && j.len > 0 && j.len <= cap);
    CHECK(j.kind == OSP_JOB_JPEG || j.kind == OSP_JOB_PNG || j.kind == OSP_JOB_RAW);
    if (j.kind == OSP_JOB_RAW) {
        CHECK(j.w >= 1 && j.w <= OSP_JOB_SIDE_MAX && j.h >= 1 && j.h <= OSP_JOB_SIDE_MAX);
        size_t px = (size_t)j.w * (size_t)j.h;
        size_t chroma = 2 * ((size_t)(j.w + 1) / 2) * ((size_t)(j.h + 1) / 2);
        size_t need = j.fmt == OSP_JOB_GRAY                          ? px
                      : j.fmt == OSP_JOB_RGB || j.fmt == OSP_JOB_BGR ? px * 3
                                                                     : px + chroma;
        CHECK(j.fmt >= OSP_JOB_RGB && j.fmt <= OSP_JOB_I420 && j.len == need);
    }
}

static void check_url(const uint8_t *data, size_t size) {
    char *url = malloc(size + 1);
    CHECK(url);
    memcpy(url, data, size);
    url[size] = '\0';
    osp_jobs_target_t t;
    char err[256];
    err[0] = '\0';
    if (osp_jobs_target_parse(url, &t, err, sizeof err) == 0) {
        CHECK(t.port >= 1 && t.port <= 65535 && t.stream[0] && t.host[0] && t.db >= 0);
        char shown[1024];
        osp_jobs_target_show(&t, shown, sizeof shown);
        CHECK(memchr(shown, '\0', sizeof shown));
        if (t.pass[0]) CHECK(strstr(shown, "***@"));
    } else {
        CHECK(err[0] != '\0');
    }
    free(url);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_job(data, size);
    check_url(data, size);
    return 0;
}
