/*
 * server/shm: a read of a shared-memory region that shrank under it
 * (SIGBUS on the reading thread) fails that read instead of the process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "server/core/guard.h"

typedef struct {
    const volatile uint8_t *p;
    size_t at;
} read_arg_t;

static int read_byte(void *arg) {
    read_arg_t *a = arg;
    return a->p[a->at];
}

static void test_read_past_a_shrunk_region_fails_the_read(void **s) {
    (void)s;
    char name[64];
    snprintf(name, sizeof name, "/osp-test-shrink-%d", (int)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    shm_unlink(name);
    assert_int_equal(ftruncate(fd, 8192), 0);
    uint8_t *base = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(base != MAP_FAILED);
    base[5000] = 42;
    read_arg_t a = {base, 5000};
    srv_guard_install(); /* as register_shm does (cmocka sets its own per test) */
    assert_int_equal(srv_guarded(read_byte, &a), 42);
    assert_int_equal(ftruncate(fd, 0), 0); /* the host shrinks it */
    assert_int_equal(srv_guarded(read_byte, &a), SRV_GUARD_FAULT);
    assert_int_equal(srv_guarded(read_byte, &a), SRV_GUARD_FAULT); /* and again */
    assert_int_equal(ftruncate(fd, 8192), 0); /* grown back: reads work (zeros now) */
    assert_int_equal(srv_guarded(read_byte, &a), 0);
    munmap(base, 8192);
    close(fd);
}

static void *guarded_thread(void *arg) { return (void *)(intptr_t)srv_guarded(read_byte, arg); }

/* The guard is per thread: a worker's SIGBUS returns on that worker. */
static void test_guard_on_another_thread(void **s) {
    (void)s;
    char name[64];
    snprintf(name, sizeof name, "/osp-test-shrink2-%d", (int)getpid());
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    shm_unlink(name);
    assert_int_equal(ftruncate(fd, 4096), 0);
    uint8_t *base = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(base != MAP_FAILED);
    assert_int_equal(ftruncate(fd, 0), 0);
    read_arg_t a = {base, 100};
    srv_guard_install();
    pthread_t t;
    void *rc;
    assert_int_equal(pthread_create(&t, NULL, guarded_thread, &a), 0);
    pthread_join(t, &rc);
    assert_int_equal((int)(intptr_t)rc, SRV_GUARD_FAULT);
    munmap(base, 4096);
    close(fd);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_past_a_shrunk_region_fails_the_read),
        cmocka_unit_test(test_guard_on_another_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
