/*
 * The Redis Streams engine (jobs.h), on hiredis. A stream is the queue, a
 * consumer group shares it among the workers, and Redis keeps, per
 * group, which entries each consumer holds unacknowledged (the pending
 * entries list): that list is what makes a dead worker's jobs
 * recoverable. Claiming is XREADGROUP ... BLOCK; taking over is
 * XAUTOCLAIM (Redis 6.2 or later), after which XPENDING says how many
 * times each entry has now been delivered. Filing a result is one Lua
 * script, atomic on the server: unless the job id's done marker is set,
 * append the result and set the marker (with a TTL); acknowledge the
 * delivery in every case. Two workers finishing the same job therefore
 * leave one result, whichever finishes first.
 *
 * Sizes: hiredis 0.14 reads a reply whole; bounded.c reads it in steps
 * and drops the connection once an item passes the largest job data the
 * worker accepts (the target's max_data, --max-frame) plus ITEM_SLACK, or
 * a reply passes what the entries it asked for may hold. A claim asks for
 * at most `max` entries, and an entry's fields are counted before they
 * are looked at.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "jobs/bounded.h"
#include "jobs/jobs.h"

#define CONNECT_MS 2000
#define REPLY_SLACK_MS 3000    /* a blocking read's socket timeout past its BLOCK */
#define DONE_TTL_MS "86400000" /* a job id's done marker: one day */
#define ITEM_SLACK (64u << 10) /* past max_data: an item still a job's, refused by osp_job_parse */
#define ENTRY_SLACK (256u << 10) /* an entry's other fields and their objects */

struct osp_jobs_conn {
    redisContext *c;
    char stream[OSP_JOB_NAME_MAX + 1];
    char results[OSP_JOB_NAME_MAX + 16];
    char group[OSP_JOB_NAME_MAX + 1], consumer[OSP_JOB_NAME_MAX + 1];
    char cursor[48]; /* XAUTOCLAIM's: where the next scan of the pending list starts */
    size_t item_max; /* the largest item of a reply read */
    size_t entries;  /* the entries the next reply may hold (0: it holds none) */
};

/* The append comes first: when it fails (reply_to names a key that is not
 * a stream) the script stops having changed nothing. */
static const char finish_lua[] = "if redis.call('EXISTS', KEYS[3]) == 1 then\n"
                                 "  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n"
                                 "  return 0\n"
                                 "end\n"
                                 "redis.call('XADD', KEYS[2], '*', unpack(ARGV, 5))\n"
                                 "redis.call('SET', KEYS[3], ARGV[3], 'PX', ARGV[4])\n"
                                 "redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])\n"
                                 "return 1\n";

/* XAUTOCLAIM, with each field larger than ARGV[6] bytes replaced on the
 * server by UNREAD and its length. An entry the worker will not read
 * (its first delivery was dropped, bounded.c) is so taken over and
 * answered, instead of being dropped again at every takeover. */
#define UNREAD "osprey:unread"
static const char reclaim_lua[] =
    "local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', "
    "ARGV[5])\n"
    "local max = tonumber(ARGV[6])\n"
    "for _, e in ipairs(r[2]) do\n"
    "  if type(e) == 'table' and type(e[2]) == 'table' then\n"
    "    local kv = e[2]\n"
    "    for i = 2, #kv, 2 do\n"
    "      if string.len(kv[i]) > max then\n"
    "        kv[i - 1] = '" UNREAD "'\n"
    "        kv[i] = tostring(string.len(kv[i]))\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "end\n"
    "return r\n";

static void set_timeout(redisContext *c, int ms) {
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    redisSetTimeout(c, tv);
}

/* A command; NULL with the reason in err when the connection failed (the
 * caller then treats it as lost). A Redis error reply is returned as is. */
static redisReply *command(osp_jobs_conn_t *k, int argc, const char **argv, const size_t *lens,
                           char *err, size_t errlen) {
    size_t reply_max = k->item_max + k->entries * (k->item_max + ENTRY_SLACK);
    return osp_redis_command(k->c, argc, argv, lens, k->item_max, reply_max, err, errlen);
}

static int simple(osp_jobs_conn_t *k, int argc, const char **argv, char *err, size_t errlen,
                  const char *ok_error) {
    redisReply *r = command(k, argc, argv, NULL, err, errlen);
    if (!r) return -1;
    int rc = 0;
    if (r->type == REDIS_REPLY_ERROR &&
        !(ok_error && strncmp(r->str, ok_error, strlen(ok_error)) == 0)) {
        snprintf(err, errlen, "redis %s: %s", argv[0], r->str);
        rc = -2;
    }
    freeReplyObject(r);
    return rc;
}

static void redis_close(osp_jobs_conn_t *k) {
    if (!k) return;
    if (k->c) redisFree(k->c);
    free(k);
}

static osp_jobs_conn_t *redis_open(const osp_jobs_target_t *t, const char *group,
                                   const char *consumer, char *err, size_t errlen) {
    osp_jobs_conn_t *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(k->stream, sizeof k->stream, "%s", t->stream);
    snprintf(k->results, sizeof k->results, "%s:results", t->stream);
    snprintf(k->group, sizeof k->group, "%s", group);
    snprintf(k->consumer, sizeof k->consumer, "%s", consumer);
    snprintf(k->cursor, sizeof k->cursor, "0-0");
    k->item_max = (t->max_data ? t->max_data : OSP_JOB_DATA_DEFAULT) + ITEM_SLACK;
    struct timeval tv = {CONNECT_MS / 1000, (CONNECT_MS % 1000) * 1000};
    k->c = redisConnectWithTimeout(t->host, t->port, tv);
    if (!k->c || k->c->err) {
        snprintf(err, errlen, "cannot connect to %s:%d: %s", t->host, t->port,
                 k->c ? k->c->errstr : "out of memory");
        goto fail;
    }
    set_timeout(k->c, REPLY_SLACK_MS);
    if (t->pass[0]) {
        const char *a[] = {"AUTH", t->user, t->pass};
        int rc = t->user[0] ? simple(k, 3, a, err, errlen, NULL)
                            : simple(k, 2, (const char *[]){"AUTH", t->pass}, err, errlen, NULL);
        if (rc) {
            if (rc == -2) snprintf(err, errlen, "redis refused the URL's credentials");
            goto fail;
        }
    }
    if (t->db) {
        char db[16];
        snprintf(db, sizeof db, "%d", t->db);
        if (simple(k, 2, (const char *[]){"SELECT", db}, err, errlen, NULL)) goto fail;
    }
    /* from the stream's start ("0"): jobs submitted before the first worker are work too */
    const char *mk[] = {"XGROUP", "CREATE", k->stream, k->group, "0", "MKSTREAM"};
    if (simple(k, 6, mk, err, errlen, "BUSYGROUP")) goto fail;
    return k;
fail:
    redis_close(k);
    return NULL;
}

/* One entry [id, [field, value, ...]] of a stream reply: its fields into
 * f (the first OSP_JOB_FIELDS_MAX; n_total says how many it had). 0, or
 * -1 when the reply is not an entry (skipped). */
static int entry_of(const redisReply *e, osp_jobs_entry_t *out, osp_job_field_t *f) {
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 || e->element[0]->type != REDIS_REPLY_STRING)
        return -1;
    /* an entry id is what XACK is later given as a C string: whole, or skipped */
    if (strlen(e->element[0]->str) != e->element[0]->len) return -1;
    out->token = e->element[0]->str;
    out->fields = f;
    const redisReply *kv = e->element[1];
    out->n_fields = out->n_total = 0;
    if (kv->type != REDIS_REPLY_ARRAY) return 0; /* an entry deleted meanwhile: nil fields */
    out->n_total = kv->elements / 2 > 1000000 ? 1000000 : (int)(kv->elements / 2);
    int n = 0;
    out->unread = 0;
    for (size_t i = 0; i + 1 < kv->elements && n < OSP_JOB_FIELDS_MAX; i += 2) {
        const redisReply *a = kv->element[i], *b = kv->element[i + 1];
        if (a->type != REDIS_REPLY_STRING || b->type != REDIS_REPLY_STRING) continue;
        if (a->len == strlen(UNREAD) && memcmp(a->str, UNREAD, a->len) == 0) {
            unsigned long long len = strtoull(b->str, NULL, 10);
            out->unread = len > out->unread ? (size_t)len : out->unread;
            continue;
        }
        f[n++] = (osp_job_field_t){a->str, a->len, (const uint8_t *)b->str, b->len};
    }
    out->n_fields = n;
    if (out->n_total < n) out->n_total = n;
    return 0;
}

static int redis_claim(osp_jobs_conn_t *k, int max, int block_ms, osp_jobs_take_fn take, void *arg,
                       char *err, size_t errlen) {
    char count[16], block[16];
    snprintf(count, sizeof count, "%d", max);
    snprintf(block, sizeof block, "%d", block_ms);
    const char *argv[] = {"XREADGROUP", "GROUP", k->group,  k->consumer, "COUNT", count,
                          "BLOCK",      block,   "STREAMS", k->stream,   ">"};
    set_timeout(k->c, block_ms + REPLY_SLACK_MS);
    k->entries = (size_t)max;
    redisReply *r = command(k, 11, argv, NULL, err, errlen);
    k->entries = 0;
    set_timeout(k->c, REPLY_SLACK_MS);
    if (!r) return -1;
    int n = 0;
    if (r->type == REDIS_REPLY_ERROR) {
        /* NOGROUP: the stream or group was deleted under us; a new connection recreates it */
        snprintf(err, errlen, "redis XREADGROUP: %s", r->str);
        freeReplyObject(r);
        return -1;
    }
    /* [[stream, [entry...]]] or nil when the block ran out */
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->type == REDIS_REPLY_ARRAY &&
        r->element[0]->elements == 2 && r->element[0]->element[1]->type == REDIS_REPLY_ARRAY) {
        const redisReply *list = r->element[0]->element[1];
        osp_job_field_t f[OSP_JOB_FIELDS_MAX];
        for (size_t i = 0; i < list->elements && n < max; i++) {
            osp_jobs_entry_t e = {.deliveries = 1};
            if (entry_of(list->element[i], &e, f)) continue;
            take(arg, &e);
            n++;
        }
    }
    freeReplyObject(r);
    return n;
}

/* How many times each of the entries just claimed has been delivered:
 * XPENDING over their id range, this consumer's. counts[i] stays 1 when
 * the entry is not listed. */
static int delivery_counts(osp_jobs_conn_t *k, const redisReply *list, int *counts, char *err,
                           size_t errlen) {
    char count[16];
    snprintf(count, sizeof count, "%zu", list->elements + 64);
    const char *lo = list->element[0]->element[0]->str;
    const char *hi = list->element[list->elements - 1]->element[0]->str;
    const char *argv[] = {"XPENDING", k->stream, k->group, lo, hi, count, k->consumer};
    redisReply *r = command(k, 7, argv, NULL, err, errlen);
    if (!r) return -1;
    for (size_t i = 0; i < list->elements; i++) counts[i] = 1;
    for (size_t p = 0; r->type == REDIS_REPLY_ARRAY && p < r->elements; p++) {
        const redisReply *e = r->element[p];
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 4 ||
            e->element[0]->type != REDIS_REPLY_STRING || e->element[3]->type != REDIS_REPLY_INTEGER)
            continue;
        for (size_t i = 0; i < list->elements; i++)
            if (strcmp(list->element[i]->element[0]->str, e->element[0]->str) == 0)
                counts[i] = (int)e->element[3]->integer;
    }
    freeReplyObject(r);
    return 0;
}

static int redis_reclaim(osp_jobs_conn_t *k, int64_t idle_ms, int max, osp_jobs_take_fn take,
                         void *arg, char *err, size_t errlen) {
    char idle[24], count[16], most[24];
    snprintf(idle, sizeof idle, "%lld", (long long)idle_ms);
    snprintf(count, sizeof count, "%d", max);
    snprintf(most, sizeof most, "%zu", k->item_max - ITEM_SLACK);
    const char *argv[] = {"EVAL",      reclaim_lua, "1",       k->stream, k->group,
                          k->consumer, idle,        k->cursor, count,     most};
    k->entries = (size_t)max;
    redisReply *r = command(k, 10, argv, NULL, err, errlen);
    k->entries = 0;
    if (!r) return -1;
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "redis XAUTOCLAIM: %s", r->str);
        freeReplyObject(r);
        return -1;
    }
    int n = 0;
    /* [next cursor, [entry...], [deleted ids]] */
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
        r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_ARRAY) {
        snprintf(k->cursor, sizeof k->cursor, "%s", r->element[0]->str);
        const redisReply *list = r->element[1];
        int counts[256];
        size_t valid = 0;
        for (size_t i = 0; i < list->elements; i++)
            valid += list->element[i]->type == REDIS_REPLY_ARRAY && list->element[i]->elements == 2 &&
                     list->element[i]->element[0]->type == REDIS_REPLY_STRING;
        if (valid == list->elements && valid > 0 && valid <= 256 &&
            delivery_counts(k, list, counts, err, errlen)) {
            freeReplyObject(r);
            return -1;
        }
        osp_job_field_t f[OSP_JOB_FIELDS_MAX];
        for (size_t i = 0; valid == list->elements && i < list->elements && n < max && i < 256; i++) {
            osp_jobs_entry_t e = {.deliveries = counts[i]};
            if (entry_of(list->element[i], &e, f)) continue;
            take(arg, &e);
            n++;
        }
    }
    freeReplyObject(r);
    return n;
}

static int redis_finish(osp_jobs_conn_t *k, const osp_jobs_result_t *res, char *err, size_t errlen) {
    enum { FIXED = 10, MAX_FIELDS = 32 };
    const char *argv[FIXED + MAX_FIELDS];
    size_t lens[FIXED + MAX_FIELDS];
    char marker[OSP_JOB_NAME_MAX + OSP_JOB_ID_MAX + 16];
    if (res->n_fields > MAX_FIELDS) {
        snprintf(err, errlen, "a result of %d fields", res->n_fields);
        return -1;
    }
    snprintf(marker, sizeof marker, "%s:done:%s", k->stream, res->id);
    const char *head[FIXED] = {"EVAL",
                               finish_lua,
                               "3",
                               k->stream,
                               res->reply_to && res->reply_to[0] ? res->reply_to : k->results,
                               marker,
                               k->group,
                               res->token,
                               k->consumer,
                               DONE_TTL_MS};
    for (int i = 0; i < FIXED; i++) {
        argv[i] = head[i];
        lens[i] = strlen(head[i]);
    }
    for (int i = 0; i < res->n_fields; i++) {
        argv[FIXED + i] = res->fields[i];
        lens[FIXED + i] = res->lens[i];
    }
    redisReply *r = command(k, FIXED + res->n_fields, argv, lens, err, errlen);
    if (!r) return -1;
    int rc = r->type == REDIS_REPLY_INTEGER ? (int)r->integer : -2;
    if (rc == -2)
        snprintf(err, errlen, "redis refused the result: %s",
                 r->type == REDIS_REPLY_ERROR ? r->str : "an unexpected reply");
    freeReplyObject(r);
    return rc;
}

static const osp_jobs_engine_t redis_engine =
    {OSP_JOBS_ENGINE_VERSION, "redis",     redis_open, redis_close, redis_claim,
     redis_reclaim,           redis_finish};

const osp_jobs_engine_t *osp_jobs_engine(const char *scheme) {
    return strcmp(scheme, "redis") == 0 ? &redis_engine : NULL;
}
