/*
 * Bounded reply reading for hiredis 0.14 (bounded.h). Two things grow
 * while a reply arrives: the reader's buffer, which holds the item being
 * received until it is whole (hiredis waits for a bulk's last byte before
 * making its string), and the objects made of the items already whole.
 * The first is checked after every 16 KiB read; the second by wrapping
 * the reader's object functions, which see every item's size before its
 * object is made, arrays included (an array header of 2^27 elements asks
 * for 1 GiB of pointers at once).
 */
#include <pthread.h>
#include <stdio.h>

#include "jobs/bounded.h"

#define OBJ_COST 64 /* a redisReply and its allocation's overhead */

typedef struct {
    size_t used, max, item_max;
    int over, item_over;
} budget_t;

static redisReplyObjectFunctions *plain; /* hiredis' own functions */
static pthread_once_t plain_once = PTHREAD_ONCE_INIT;

static void find_plain(void) {
    redisReader *r = redisReaderCreate();
    if (r) {
        plain = r->fn;
        redisReaderFree(r);
    }
}

/* 0 when an object of cost bytes fits the reply's budget; else it is
 * marked over, and the caller returns NULL (hiredis: "out of memory"). */
static int spend(const redisReadTask *t, size_t cost) {
    budget_t *b = t->privdata;
    if (!b) return 0;
    if (cost > b->max - b->used || b->used > b->max) {
        b->over = 1;
        return -1;
    }
    b->used += cost;
    return 0;
}

/* A string that came whole within one read is refused here: the buffer
 * check between reads sees only the items still arriving. */
static void *b_string(const redisReadTask *t, char *s, size_t len) {
    budget_t *b = t->privdata;
    if (b && len > b->item_max) {
        b->item_over = 1;
        return NULL;
    }
    return spend(t, len + OBJ_COST) ? NULL : plain->createString(t, s, len);
}

static void *b_array(const redisReadTask *t, int n) {
    size_t cost = (n > 0 ? (size_t)n * sizeof(void *) : 0) + OBJ_COST;
    return spend(t, cost) ? NULL : plain->createArray(t, n);
}

static void *b_integer(const redisReadTask *t, long long v) {
    return spend(t, OBJ_COST) ? NULL : plain->createInteger(t, v);
}

static void *b_nil(const redisReadTask *t) {
    return spend(t, OBJ_COST) ? NULL : plain->createNil(t);
}

static void b_free(void *o) { plain->freeObject(o); }

static redisReplyObjectFunctions bounded_fns = {b_string, b_array, b_integer, b_nil, b_free};

redisReply *osp_redis_command(redisContext *c, int argc, const char **argv, const size_t *lens,
                              size_t item_max, size_t reply_max, char *err, size_t errlen) {
    pthread_once(&plain_once, find_plain);
    if (!plain) {
        snprintf(err, errlen, "redis: out of memory");
        return NULL;
    }
    budget_t b = {0, reply_max, item_max, 0, 0};
    c->reader->fn = &bounded_fns;
    c->reader->privdata = &b;
    void *reply = NULL;
    int done = 0;
    if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK) goto lost;
    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK) goto lost;
    for (;;) {
        if (redisGetReplyFromReader(c, &reply) != REDIS_OK) goto lost;
        if (reply) break;
        /* what is buffered beyond the read position is one item not yet whole */
        if (c->reader->len - c->reader->pos > item_max) {
            b.item_over = 1;
            goto lost;
        }
        if (redisBufferRead(c) != REDIS_OK) goto lost;
    }
    c->reader->privdata = NULL;
    return reply;
lost:
    if (b.item_over)
        snprintf(err, errlen,
                 "redis sent an item of more than %zu bytes (the most a job may carry, "
                 "--max-frame, and its fields); dropped the connection",
                 item_max);
    else if (b.over)
        snprintf(err, errlen,
                 "redis sent a reply of more than %zu bytes (what this claim may hold at "
                 "--max-frame); dropped the connection",
                 reply_max);
    else
        snprintf(err, errlen, "redis: %s", c->errstr[0] ? c->errstr : "connection lost");
    c->reader->privdata = NULL;
    /* the reply half read stays in the reader: the connection is done */
    if (!c->err) c->err = REDIS_ERR_PROTOCOL;
    return NULL;
}
