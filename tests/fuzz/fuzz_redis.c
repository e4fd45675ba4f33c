/*
 * libFuzzer target for what a Redis server (or one that lies) sends the
 * fleet worker and osprey jobs: the input is the server's bytes, written
 * into one end of a socket pair whose other end hiredis reads through
 * osp_redis_command (src/jobs/bounded.c) with bounds taken from the input.
 * Checks: a reply comes back, or NULL with a reason; a reply's strings are
 * each within the item bound and its objects, costed as bounded.c costs
 * them, within the reply bound (the bounds hold whatever the bytes say).
 * Deterministic: the whole input is written before the read, the writing
 * end then shut.
 *
 * Input: [u8 item bound / 16][u8 reply bound / 64][server bytes].
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "jobs/bounded.h"
#include "check.h"

/* What bounded.c charges for r and everything in it. */
static size_t cost(const redisReply *r, size_t item_max) {
    size_t c = 64;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
        r->type == REDIS_REPLY_ERROR) {
        CHECK(r->len <= item_max);
        return c + r->len;
    }
    if (r->type == REDIS_REPLY_ARRAY) {
        c += r->elements * sizeof(void *);
        for (size_t i = 0; i < r->elements; i++) c += cost(r->element[i], item_max);
    }
    return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || size > 65536) return 0;
    size_t item_max = (size_t)data[0] * 16 + 16, reply_max = (size_t)data[1] * 64 + 64;
    int fds[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    redisContext *c = redisConnectFd(fds[0]);
    CHECK(c);
    CHECK(write(fds[1], data + 2, size - 2) == (ssize_t)(size - 2));
    shutdown(fds[1], SHUT_WR);
    char err[300];
    err[0] = '\0';
    const char *argv[] = {"PING"};
    redisReply *r = osp_redis_command(c, 1, argv, NULL, item_max, reply_max, err, sizeof err);
    if (r) {
        /* hiredis builds the objects the budget allowed: the costs add up */
        CHECK(cost(r, item_max) <= reply_max);
        freeReplyObject(r);
    } else {
        CHECK(err[0] != '\0' && memchr(err, '\0', sizeof err));
    }
    redisFree(c);
    close(fds[1]);
    return 0;
}
