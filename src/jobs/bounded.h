/*
 * A Redis command whose reply is read with a bound. hiredis 0.14 (Debian
 * 12's) reads a reply whole: a server that announces a bulk of 2 GiB and
 * streams it grew a worker by 782 MB in 10 s (issue 32). Here the reply is
 * read in hiredis' 16 KiB steps, and the read stops, with a reason, when
 * one item still being received (a bulk string) passes item_max bytes or
 * the reply built so far passes reply_max bytes of objects. The
 * connection is then unusable: the caller closes it and reconnects.
 *
 * Used by the fleet engine (redis.c) and `osprey jobs` (cli/jobs.c), each
 * on one thread per connection.
 */
#ifndef OSP_JOBS_BOUNDED_H
#define OSP_JOBS_BOUNDED_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* The reply (owned by the caller: freeReplyObject), a Redis error reply
 * as it is; NULL with the reason in err when the connection failed or the
 * reply passed a bound. */
redisReply *osp_redis_command(redisContext *c, int argc, const char **argv, const size_t *lens,
                              size_t item_max, size_t reply_max, char *err, size_t errlen);

#endif
