/* A job's fields and the queue's URL (jobs/jobs.h): everything a
 * submitter or an operator can get wrong is refused with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "jobs/jobs.h"

#define F(n, v) \
    { n, sizeof(n) - 1, (const uint8_t *)(v), sizeof(v) - 1 }

static int parse(const osp_job_field_t *f, int n, osp_job_t *j, char *err) {
    return osp_job_parse(f, n, n, 1000, j, err, 200);
}

static void test_jpeg(void **s) {
    (void)s;
    osp_job_field_t f[] = {F("id", "cam7-000123"),
                           F("model", "ssd-oidv4"),
                           F("kind", "jpeg"),
                           F("data", "\xff\xd8\xff"),
                           F("deadline_ms", "1796128861144"),
                           F("reply_to", "answers"),
                           F("extra", "ignored")};
    osp_job_t j;
    char err[200];
    assert_int_equal(parse(f, 7, &j, err), 0);
    assert_string_equal(j.id, "cam7-000123");
    assert_string_equal(j.model, "ssd-oidv4");
    assert_string_equal(j.reply_to, "answers");
    assert_int_equal(j.kind, OSP_JOB_JPEG);
    assert_int_equal(j.len, 3);
    assert_true(j.deadline_ms == 1796128861144ull);
}

static void test_raw(void **s) {
    (void)s;
    osp_job_field_t f[] = {F("id", "r"), F("model", "m"),  F("kind", "raw"),       F("w", "3"),
                           F("h", "2"),  F("fmt", "i420"), F("data", "0123456789")};
    osp_job_t j;
    char err[200];
    /* 3x2 4:2:0: 6 luma bytes and two 2x1 chroma planes */
    assert_int_equal(parse(f, 7, &j, err), 0);
    assert_int_equal(j.fmt, OSP_JOB_I420);
    assert_int_equal(j.w, 3);
    f[6] = (osp_job_field_t)F("data", "012345678");
    assert_int_equal(parse(f, 7, &j, err), -1);
    assert_non_null(strstr(err, "takes 10"));
    f[5] = (osp_job_field_t)F("fmt", "rgb");
    f[6] = (osp_job_field_t)F("data", "0123456789abcdefgh");
    assert_int_equal(parse(f, 7, &j, err), 0);
    f[3] = (osp_job_field_t)F("w", "16385");
    assert_int_equal(parse(f, 7, &j, err), -1);
    f[3] = (osp_job_field_t)F("w", "99999999999999999999");
    assert_int_equal(parse(f, 7, &j, err), -1);
    f[3] = (osp_job_field_t)F("w", "-3");
    assert_int_equal(parse(f, 7, &j, err), -1);
}

static void test_refusals_keep_the_answer_address(void **s) {
    (void)s;
    osp_job_t j;
    char err[200];
    osp_job_field_t no_kind[] = {F("id", "a"), F("reply_to", "r"), F("model", "m"), F("data", "x")};
    assert_int_equal(parse(no_kind, 4, &j, err), -1);
    assert_string_equal(j.id, "a");
    assert_string_equal(j.reply_to, "r");
    osp_job_field_t bad[] = {F("id", "b"), F("model", "m"), F("kind", "gif"), F("data", "x")};
    assert_int_equal(parse(bad, 4, &j, err), -1);
    assert_string_equal(j.id, "b");
    osp_job_field_t nul[] = {F("id", "a\0b"), F("model", "m"), F("kind", "jpeg"), F("data", "x")};
    assert_int_equal(parse(nul, 4, &j, err), -1);
    assert_string_equal(j.id, "");
    assert_string_equal(err, "id: holds a NUL byte");
    /* every text is taken on its whole length: never what C keeps of it */
    osp_job_field_t nul_model[] = {F("id", "a"), F("model", "ssd\0x"), F("kind", "jpeg"),
                                   F("data", "x")};
    assert_int_equal(parse(nul_model, 4, &j, err), -1);
    assert_string_equal(err, "model: holds a NUL byte");
    osp_job_field_t nul_reply[] = {F("id", "a"), F("reply_to", "ans\0wers"), F("model", "m"),
                                   F("kind", "jpeg"), F("data", "x")};
    assert_int_equal(parse(nul_reply, 5, &j, err), -1);
    assert_string_equal(err, "reply_to: holds a NUL byte");
    assert_string_equal(j.reply_to, "");
    osp_job_field_t nul_name[] = {F("id\0x", "a"), F("model", "m"), F("kind", "jpeg"), F("data", "x")};
    assert_int_equal(parse(nul_name, 4, &j, err), -1);
    assert_string_equal(err, "no id field");
    osp_job_field_t nul_kind[] = {F("id", "a"), F("model", "m"), F("kind", "jpeg\0"), F("data", "x")};
    assert_int_equal(parse(nul_kind, 4, &j, err), -1);
    assert_non_null(strstr(err, "kind"));
    osp_job_field_t deadline[] = {F("id", "d"), F("model", "m"), F("kind", "jpeg"), F("data", "x"),
                                  F("deadline_ms", "12x")};
    assert_int_equal(parse(deadline, 5, &j, err), -1);
    osp_job_field_t big[] = {F("id", "e"), F("model", "m"), F("kind", "jpeg"),
                             F("data", "0123456789")};
    assert_int_equal(osp_job_parse(big, 4, 4, 9, &j, err, sizeof err), -1);
    assert_non_null(strstr(err, "exceeds the limit of 9"));
    assert_int_equal(osp_job_parse(big, 4, 40, 100, &j, err, sizeof err), -1);
    assert_string_equal(j.id, "e");
    assert_non_null(strstr(err, "40 fields"));
    assert_int_equal(parse(big, 0, &j, err), -1);
}

static void test_url(void **s) {
    (void)s;
    osp_jobs_target_t t;
    char err[200], shown[600];
    assert_int_equal(osp_jobs_target_parse("redis://10.0.0.5:6380/2/site:cams", &t, err, sizeof err),
                     0);
    assert_string_equal(t.host, "10.0.0.5");
    assert_int_equal(t.port, 6380);
    assert_int_equal(t.db, 2);
    assert_string_equal(t.stream, "site:cams");
    assert_int_equal(osp_jobs_target_parse("redis://:hunter2@h/cams", &t, err, sizeof err), 0);
    assert_int_equal(t.port, 6379);
    assert_string_equal(t.pass, "hunter2");
    osp_jobs_target_show(&t, shown, sizeof shown);
    assert_string_equal(shown, "redis://***@h:6379/0/cams");
    assert_int_equal(osp_jobs_target_parse("redis://ops:hunter2@h:1/cams", &t, err, sizeof err), 0);
    assert_string_equal(t.user, "ops");
    const char *bad[] = {"h:1/cams",          "redis://h:1",           "redis://h:0/cams",
                         "redis://h:65536/c", "redis://h:1x/cams",     "redis://:1/cams",
                         "redis://h:1/x/",    "redis://hunter2@h:1/c", "redis://h:1/db/cams"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(osp_jobs_target_parse(bad[i], &t, err, sizeof err), -1);
        assert_null(strstr(err, "hunter2"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jpeg),
        cmocka_unit_test(test_raw),
        cmocka_unit_test(test_refusals_keep_the_answer_address),
        cmocka_unit_test(test_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
