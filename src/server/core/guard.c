/* Reads under a guard; see guard.h. */
#include "server/core/guard.h"

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

static _Thread_local sigjmp_buf *t_guard;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    if (t_guard) siglongjmp(*t_guard, 1);
    signal(sig, SIG_DFL); /* not a guarded read: fail as before */
    raise(sig);
}

void srv_guard_install(void) {
    struct sigaction sa = {.sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

int srv_guarded(int (*fn)(void *), void *arg) {
    sigjmp_buf jb;
    if (sigsetjmp(jb, 1)) {
        t_guard = NULL;
        return SRV_GUARD_FAULT;
    }
    t_guard = &jb;
    int rc = fn(arg);
    t_guard = NULL;
    return rc;
}
