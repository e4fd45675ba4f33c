/* A Redis reply read with a bound (jobs/bounded.h): what the server sends
 * is written into the other end of a socket pair, as a lying server would
 * send it, before the command is read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "jobs/bounded.h"

#define ITEM 1000
#define REPLY 4000

typedef struct {
    redisContext *c;
    int peer;
} pair_t;

static pair_t pair_with(const char *sent, size_t len) {
    int fds[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    pair_t p = {redisConnectFd(fds[0]), fds[1]};
    assert_non_null(p.c);
    if (len) assert_int_equal(write(p.peer, sent, len), (ssize_t)len);
    return p;
}

static void pair_done(pair_t *p) {
    redisFree(p->c);
    close(p->peer);
}

static redisReply *ask(pair_t *p, char *err) {
    const char *argv[] = {"PING"};
    return osp_redis_command(p->c, 1, argv, NULL, ITEM, REPLY, err, 300);
}

static void test_replies_within_bounds(void **s) {
    (void)s;
    char err[300];
    static const char replies[] = "+OK\r\n$5\r\nhello\r\n*2\r\n:7\r\n$-1\r\n";
    pair_t p = pair_with(replies, sizeof replies - 1);
    redisReply *r = ask(&p, err);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = ask(&p, err);
    assert_non_null(r);
    assert_string_equal(r->str, "hello");
    freeReplyObject(r);
    r = ask(&p, err);
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    assert_int_equal(r->element[0]->integer, 7);
    freeReplyObject(r);
    pair_done(&p);
}

/* a bulk announced larger than the bound is refused once the bound's worth
 * has come, not when (never) all of it has */
static void test_an_item_past_the_bound(void **s) {
    (void)s;
    char err[300], *lie = calloc(1, 40000);
    memcpy(lie, "$2147483648\r\n", 13);
    pair_t p = pair_with(lie, 40000);
    assert_null(ask(&p, err));
    assert_non_null(strstr(err, "an item of more than 1000 bytes"));
    pair_done(&p);
    free(lie);
    /* an item that comes whole within one read is refused too (found by fuzz_redis) */
    char line[1200];
    memset(line, 'U', sizeof line);
    line[0] = '+';
    memcpy(line + sizeof line - 2, "\r\n", 2);
    p = pair_with(line, sizeof line);
    assert_null(ask(&p, err));
    assert_non_null(strstr(err, "an item of more than 1000 bytes"));
    pair_done(&p);
}

static void test_a_reply_past_the_bound(void **s) {
    (void)s;
    char err[300];
    pair_t p = pair_with("*134217728\r\n", 12); /* 1 GiB of pointers, asked at once */
    assert_null(ask(&p, err));
    assert_non_null(strstr(err, "a reply of more than 4000 bytes"));
    pair_done(&p);
    /* ten items each within the bound, together past it */
    char many[10 * 908 + 8];
    size_t n = (size_t)sprintf(many, "*10\r\n");
    for (int i = 0; i < 10; i++) {
        n += (size_t)sprintf(many + n, "$900\r\n");
        memset(many + n, 'x', 900);
        n += 900;
        n += (size_t)sprintf(many + n, "\r\n");
    }
    p = pair_with(many, n);
    assert_null(ask(&p, err));
    assert_non_null(strstr(err, "a reply of more than 4000 bytes"));
    pair_done(&p);
}

static void test_a_closed_connection(void **s) {
    (void)s;
    char err[300];
    pair_t p = pair_with("$10\r\nhal", 8);
    shutdown(p.peer, SHUT_WR);
    assert_null(ask(&p, err));
    assert_non_null(strstr(err, "redis: "));
    pair_done(&p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replies_within_bounds),
        cmocka_unit_test(test_an_item_past_the_bound),
        cmocka_unit_test(test_a_reply_past_the_bound),
        cmocka_unit_test(test_a_closed_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
