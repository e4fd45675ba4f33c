/* Bounded model loads on the test backend: a load back within its bound, a
 * failing load, a load past its bound (timer, expiry, poisoning, the late
 * return), stale results, a start while busy, and refused loads counted. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "model/loader.h"

#define WAIT_MS 20000 /* how long a test waits for a post before it gives up */

#include "tmpdir.h"

static void in_dir(char *path, const char *name) { snprintf(path, 256, "%s/%s", g_dir, name); }

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void sleep_ms(int ms) {
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int64_t epoch_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#define UF_TENSORS                                                                           \
    "\"inputs\":[{\"name\":\"input\",\"dtype\":\"float32\",\"shape\":[1,3,32,32]}],"         \
    "\"outputs\":[{\"name\":\"scores\",\"dtype\":\"float32\",\"shape\":[1,4,2],\"fill\":0}," \
    "{\"name\":\"boxes\",\"dtype\":\"float32\",\"shape\":[1,4,4],\"fill\":0}]"

/* A model config for the script `json`, written to g_dir/<name>. */
static void make_cfg(osp_model_cfg_t *cfg, const char *name, const char *json) {
    char path[256];
    in_dir(path, name);
    write_file(path, json);
    osp_model_cfg_defaults(cfg);
    snprintf(cfg->name, sizeof cfg->name, "%s", name);
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    snprintf(cfg->postprocessor, sizeof cfg->postprocessor, "ultraface");
}

/* ---- the caller's mailbox: post runs on the loader's thread ---------------- */
/* Each test's mailbox is static: a load that a failed assertion left running
 * posts into its own test's mailbox, not into whatever the next test put on
 * the stack there. */

typedef struct {
    pthread_mutex_t mu; /* guards r, n, posts */
    pthread_cond_t cv;
    osp_load_result_t *r[8];
    int n, posts;
} mailbox_t;

static void mailbox_init(mailbox_t *mb) {
    memset(mb, 0, sizeof *mb);
    pthread_mutex_init(&mb->mu, NULL);
    pthread_cond_init(&mb->cv, NULL);
}

static void mailbox_destroy(mailbox_t *mb) {
    for (int i = 0; i < mb->n; i++) osp_loader_result_free(mb->r[i]);
    pthread_cond_destroy(&mb->cv);
    pthread_mutex_destroy(&mb->mu);
}

static void post(void *arg, osp_load_result_t *r) {
    mailbox_t *mb = arg;
    pthread_mutex_lock(&mb->mu);
    if (mb->n < 8)
        mb->r[mb->n++] = r;
    else
        osp_loader_result_free(r);
    mb->posts++;
    pthread_cond_signal(&mb->cv);
    pthread_mutex_unlock(&mb->mu);
}

static int mailbox_posts(mailbox_t *mb) {
    pthread_mutex_lock(&mb->mu);
    int n = mb->posts;
    pthread_mutex_unlock(&mb->mu);
    return n;
}

/* The oldest result posted, waiting up to WAIT_MS; NULL when none came. */
static osp_load_result_t *mailbox_wait(mailbox_t *mb) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_MS / 1000;
    pthread_mutex_lock(&mb->mu);
    while (mb->n == 0)
        if (pthread_cond_timedwait(&mb->cv, &mb->mu, &until) == ETIMEDOUT) break;
    osp_load_result_t *r = NULL;
    if (mb->n > 0) {
        r = mb->r[0];
        memmove(mb->r, mb->r + 1, (size_t)(mb->n - 1) * sizeof *mb->r);
        mb->n--;
    }
    pthread_mutex_unlock(&mb->mu);
    return r;
}

static const osp_backend_t *test_backend(void) {
    const osp_backend_t *be = osp_backend_find("test");
    assert_non_null(be);
    return be;
}

static void assert_counts(const osp_loader_t *ld, int64_t completed, int64_t failed,
                          int64_t timed_out, int64_t finished_late) {
    osp_loader_counts_t c;
    memset(&c, 0xff, sizeof c);
    osp_loader_counts(ld, &c);
    assert_int_equal(c.completed, completed);
    assert_int_equal(c.failed, failed);
    assert_int_equal(c.timed_out, timed_out);
    assert_int_equal(c.finished_late, finished_late);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_load_in_time(void **s) {
    (void)s;
    static mailbox_t mb;
    mailbox_init(&mb);
    osp_model_cfg_t cfg;
    make_cfg(&cfg, "uf.json", "{" UF_TENSORS "}");
    osp_loader_t *ld = osp_loader_new(10000, post, &mb);
    assert_non_null(ld);
    assert_true(osp_loader_bound_ms(ld) == 10000.0);
    assert_int_equal(osp_loader_busy(ld), 0);
    assert_int_equal(osp_loader_timer_ms(ld), -1);

    assert_int_equal(osp_loader_start(ld, &cfg, test_backend(), 3, "faces"), 0);
    assert_int_equal(osp_loader_busy(ld), 1);
    osp_load_info_t info;
    memset(&info, 0, sizeof info);
    assert_int_equal(osp_loader_in_flight(ld, &info), 1);
    assert_int_equal(info.index, 3);
    assert_string_equal(info.model_id, "faces");
    int t = osp_loader_timer_ms(ld);
    assert_true(t > 0 && t <= 10000);
    /* one at a time */
    assert_int_equal(osp_loader_start(ld, &cfg, test_backend(), 4, "other"), -1);

    osp_load_result_t *r = mailbox_wait(&mb);
    assert_non_null(r);
    if (r->rc) print_error("%s\n", r->err);
    assert_int_equal(r->rc, 0);
    assert_non_null(r->model);
    assert_true(r->load_ms >= 0);
    memset(&info, 0, sizeof info);
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    assert_int_equal(info.index, 3);
    assert_string_equal(info.model_id, "faces");
    assert_int_equal(osp_loader_busy(ld), 0);
    assert_int_equal(osp_loader_in_flight(ld, NULL), 0);
    assert_int_equal(osp_loader_poisoned(ld, NULL), 0);
    assert_int_equal(osp_loader_timer_ms(ld), -1);
    assert_counts(ld, 1, 0, 0, 0);

    /* the caller takes the model */
    osp_model_t *m = r->model;
    r->model = NULL;
    assert_non_null(m->rt);
    assert_string_equal(m->dec->name, "ultraface");
    /* the same result again: nothing in flight for it */
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_STALE);
    assert_counts(ld, 1, 0, 0, 0);
    osp_loader_result_free(r);
    osp_model_free(m);

    /* free again: the next load starts */
    assert_int_equal(osp_loader_start(ld, &cfg, test_backend(), 4, "other"), 0);
    assert_non_null(r = mailbox_wait(&mb));
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    assert_int_equal(info.index, 4);
    assert_string_equal(info.model_id, "other");
    assert_int_equal(r->rc, 0);
    osp_loader_result_free(r); /* frees the model with it */
    assert_counts(ld, 2, 0, 0, 0);
    osp_loader_free(ld);
    mailbox_destroy(&mb);
}

static void test_load_fails(void **s) {
    (void)s;
    static mailbox_t mb;
    mailbox_init(&mb);
    osp_model_cfg_t cfg;
    make_cfg(&cfg, "fail.json", "{\"load_error\":\"out of GPU memory\"}");
    osp_loader_t *ld = osp_loader_new(10000, post, &mb);
    assert_non_null(ld);
    assert_int_equal(osp_loader_start(ld, &cfg, test_backend(), 1, "bad"), 0);
    osp_load_result_t *r = mailbox_wait(&mb);
    assert_non_null(r);
    assert_int_not_equal(r->rc, 0);
    assert_null(r->model);
    assert_non_null(strstr(r->err, "out of GPU memory"));
    osp_load_info_t info;
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    assert_int_equal(info.index, 1);
    assert_string_equal(info.model_id, "bad");
    assert_counts(ld, 0, 1, 0, 0);
    assert_int_equal(osp_loader_busy(ld), 0);
    assert_int_equal(osp_loader_poisoned(ld, NULL), 0);
    osp_loader_result_free(r);
    osp_loader_free(ld);
    mailbox_destroy(&mb);
}

/* A load that blocks past a 50 ms bound: abandoned, the loader poisoned
 * until its late return, then free again. */
static void test_load_past_bound(void **s) {
    (void)s;
    static mailbox_t mb;
    mailbox_init(&mb);
    char release[256], json[1024];
    in_dir(release, "release-late");
    unlink(release);
    snprintf(json, sizeof json, "{\"load_block_file\":\"%s\"," UF_TENSORS "}", release);
    osp_model_cfg_t slow, quick;
    make_cfg(&slow, "slow.json", json);
    make_cfg(&quick, "quick.json", "{" UF_TENSORS "}");
    osp_loader_t *ld = osp_loader_new(50, post, &mb);
    assert_non_null(ld);

    int64_t before = epoch_ms();
    assert_int_equal(osp_loader_start(ld, &slow, test_backend(), 5, "slow"), 0);
    int t1 = osp_loader_timer_ms(ld);
    assert_true(t1 >= 0 && t1 <= 50);
    sleep_ms(20);
    int t2 = osp_loader_timer_ms(ld);
    assert_true(t2 >= 0);
    assert_true(t2 <= (t1 > 20 ? t1 - 20 : 0));
    sleep_ms(40);
    assert_int_equal(osp_loader_timer_ms(ld), 0);

    osp_load_info_t info;
    memset(&info, 0, sizeof info);
    assert_int_equal(osp_loader_expire(ld, &info), 1);
    assert_int_equal(info.index, 5);
    assert_string_equal(info.model_id, "slow");
    assert_true(info.elapsed_ms >= 50);
    assert_true(info.at_ms >= before);
    assert_counts(ld, 0, 0, 1, 0);
    /* abandoned: nothing in flight, and nothing may start */
    assert_int_equal(osp_loader_busy(ld), 0);
    assert_int_equal(osp_loader_in_flight(ld, NULL), 0);
    assert_int_equal(osp_loader_timer_ms(ld), -1);
    assert_int_equal(osp_loader_expire(ld, &info), 0);
    memset(&info, 0, sizeof info);
    assert_int_equal(osp_loader_poisoned(ld, &info), 1);
    assert_int_equal(info.index, 5);
    assert_string_equal(info.model_id, "slow");
    assert_int_equal(osp_loader_start(ld, &quick, test_backend(), 6, "quick"), -1);
    assert_int_equal(mailbox_posts(&mb), 0); /* the load still blocks */

    /* the abandoned load returns */
    write_file(release, "");
    osp_load_result_t *r = mailbox_wait(&mb);
    assert_non_null(r);
    memset(&info, 0, sizeof info);
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_LATE);
    assert_int_equal(info.index, 5);
    assert_string_equal(info.model_id, "slow");
    osp_loader_result_free(r);
    assert_int_equal(osp_loader_poisoned(ld, NULL), 0);
    assert_counts(ld, 0, 0, 1, 1);

    /* and loads start again */
    assert_int_equal(osp_loader_start(ld, &quick, test_backend(), 6, "quick"), 0);
    assert_non_null(r = mailbox_wait(&mb));
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    assert_int_equal(info.index, 6);
    assert_string_equal(info.model_id, "quick");
    assert_int_equal(r->rc, 0);
    osp_loader_result_free(r);
    assert_counts(ld, 1, 0, 1, 1);
    osp_loader_free(ld);
    mailbox_destroy(&mb);
}

/* ---- a load of something else (osp_load_how_t) ----------------------------- */

static atomic_int g_args_freed, g_dropped;

/* Waits for the file named by arg, then makes a number (or fails on "fail"). */
static int how_open(void *arg, void **made, char *err, size_t errlen) {
    const char *gate = arg;
    while (strcmp(gate, "fail") != 0 && access(gate, F_OK) != 0) sleep_ms(5);
    if (strcmp(gate, "fail") == 0) {
        snprintf(err, errlen, "it could not be made");
        return -1;
    }
    int *n = malloc(sizeof *n);
    *n = 42;
    *made = n;
    return 0;
}
static void how_drop(void *made) {
    free(made);
    atomic_fetch_add(&g_dropped, 1);
}
static void how_arg_free(void *arg) {
    free(arg);
    atomic_fetch_add(&g_args_freed, 1);
}
static const osp_load_how_t HOW = {how_open, how_drop, how_arg_free};

/* What it makes comes back in time, is the caller's when taken, and given to
 * drop when not; past its bound it poisons the loader like a model load, and
 * its late result is dropped with the result. Its arg is freed on the
 * loader's thread in every case. */
static void test_load_how(void **s) {
    (void)s;
    static mailbox_t mb;
    mailbox_init(&mb);
    atomic_store(&g_args_freed, 0);
    atomic_store(&g_dropped, 0);
    char gate[256];
    in_dir(gate, "how-gate");
    write_file(gate, "");
    osp_loader_t *ld = osp_loader_new(200, post, &mb);
    assert_non_null(ld);
    osp_load_info_t info;

    assert_int_equal(osp_loader_start_how(ld, &HOW, strdup(gate), -1, "made"), 0);
    osp_load_result_t *r = mailbox_wait(&mb);
    assert_non_null(r);
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    assert_int_equal(r->rc, 0);
    assert_null(r->model);
    assert_non_null(r->made);
    assert_int_equal(*(int *)r->made, 42);
    free(r->made); /* taken */
    r->made = NULL;
    osp_loader_result_free(r);
    assert_int_equal(atomic_load(&g_dropped), 0);

    assert_int_equal(osp_loader_start_how(ld, &HOW, strdup("fail"), -1, "failing"), 0);
    assert_non_null(r = mailbox_wait(&mb));
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    assert_int_equal(r->rc, -1);
    assert_string_equal(r->err, "it could not be made");
    assert_null(r->made);
    osp_loader_result_free(r);

    unlink(gate); /* the next one waits past its bound */
    assert_int_equal(osp_loader_start_how(ld, &HOW, strdup(gate), -1, "slow"), 0);
    while (osp_loader_timer_ms(ld) > 0) sleep_ms(10);
    assert_int_equal(osp_loader_expire(ld, &info), 1);
    assert_string_equal(info.model_id, "slow");
    assert_int_equal(osp_loader_poisoned(ld, NULL), 1);
    char *kept = strdup(gate);
    assert_int_equal(osp_loader_start_how(ld, &HOW, kept, -1, "refused"), -1);
    free(kept); /* refused: still the caller's */
    write_file(gate, "");
    assert_non_null(r = mailbox_wait(&mb));
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_LATE);
    assert_non_null(r->made);
    osp_loader_result_free(r); /* nobody takes it: dropped */
    assert_int_equal(atomic_load(&g_dropped), 1);
    assert_int_equal(atomic_load(&g_args_freed), 3);
    assert_int_equal(osp_loader_poisoned(ld, NULL), 0);
    osp_loader_free(ld);
    mailbox_destroy(&mb);
}

/* A slow load still within its bound is not expired, and is in time. */
static void test_no_expiry_within_bound(void **s) {
    (void)s;
    static mailbox_t mb;
    mailbox_init(&mb);
    char release[256], json[1024];
    in_dir(release, "release-in-time");
    unlink(release);
    snprintf(json, sizeof json, "{\"load_block_file\":\"%s\"," UF_TENSORS "}", release);
    osp_model_cfg_t cfg;
    make_cfg(&cfg, "held.json", json);
    osp_loader_t *ld = osp_loader_new(60000, post, &mb);
    assert_non_null(ld);
    assert_int_equal(osp_loader_start(ld, &cfg, test_backend(), 2, "held"), 0);
    sleep_ms(20);
    osp_load_info_t info;
    assert_int_equal(osp_loader_expire(ld, &info), 0);
    assert_int_equal(osp_loader_busy(ld), 1);
    assert_int_equal(osp_loader_poisoned(ld, NULL), 0);
    assert_true(osp_loader_timer_ms(ld) > 0);
    assert_int_equal(osp_loader_start(ld, &cfg, test_backend(), 3, "again"), -1);
    write_file(release, "");
    osp_load_result_t *r = mailbox_wait(&mb);
    assert_non_null(r);
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    assert_int_equal(info.index, 2);
    assert_string_equal(info.model_id, "held");
    osp_loader_result_free(r);
    assert_counts(ld, 1, 0, 0, 0);
    osp_loader_free(ld);
    mailbox_destroy(&mb);
}

static void test_unknown_seq_is_stale(void **s) {
    (void)s;
    static mailbox_t mb;
    mailbox_init(&mb);
    osp_model_cfg_t cfg;
    make_cfg(&cfg, "uf-stale.json", "{" UF_TENSORS "}");
    osp_loader_t *ld = osp_loader_new(10000, post, &mb);
    assert_non_null(ld);
    osp_load_result_t fake = {.seq = 77};
    osp_load_info_t info;
    assert_int_equal(osp_loader_finish(ld, &fake, &info), OSP_LOAD_STALE);
    assert_counts(ld, 0, 0, 0, 0);

    /* while a load is in flight, a result of another seq does not end it */
    assert_int_equal(osp_loader_start(ld, &cfg, test_backend(), 0, "uf"), 0);
    osp_load_result_t *r = mailbox_wait(&mb);
    assert_non_null(r);
    fake.seq = r->seq + 1;
    assert_int_equal(osp_loader_finish(ld, &fake, &info), OSP_LOAD_STALE);
    fake.seq = r->seq - 1;
    assert_int_equal(osp_loader_finish(ld, &fake, &info), OSP_LOAD_STALE);
    assert_int_equal(osp_loader_busy(ld), 1);
    assert_counts(ld, 0, 0, 0, 0);
    assert_int_equal(osp_loader_finish(ld, r, &info), OSP_LOAD_IN_TIME);
    osp_loader_result_free(r);
    assert_counts(ld, 1, 0, 0, 0);
    osp_loader_free(ld);
    mailbox_destroy(&mb);
}

static void test_note_failed_counts(void **s) {
    (void)s;
    osp_loader_t *ld = osp_loader_new(10000, post, NULL);
    assert_non_null(ld);
    osp_loader_note_failed(ld);
    osp_loader_note_failed(ld);
    assert_counts(ld, 0, 2, 0, 0);
    assert_int_equal(osp_loader_busy(ld), 0);
    osp_loader_free(ld);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_in_time),
        cmocka_unit_test(test_load_fails),
        cmocka_unit_test(test_load_past_bound),
        cmocka_unit_test(test_no_expiry_within_bound),
        cmocka_unit_test(test_unknown_seq_is_stale),
        cmocka_unit_test(test_note_failed_counts),
        cmocka_unit_test(test_load_how),
    };
    return cmocka_run_group_tests(tests, setup_dir, remove_dir);
}
