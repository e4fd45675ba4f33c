/*
 * guard: reading memory another process can take away. A host can
 * truncate a shared-memory file at any time, and reading a page of the
 * mapping past the new end raises SIGBUS, which would kill the whole
 * server. A worker that reads such memory runs the read under a guard:
 * SIGBUS on a guarded thread jumps back out of the read, which then fails
 * like a bad frame.
 */
#ifndef OSP_SRV_GUARD_H
#define OSP_SRV_GUARD_H

/* Install the SIGBUS handler (before any guarded memory is read). */
void srv_guard_install(void);
/* Run fn(arg) under the guard: fn's result, or SRV_GUARD_FAULT when the
 * memory it read went away. */
#define SRV_GUARD_FAULT (-100)
int srv_guarded(int (*fn)(void *), void *arg);

#endif
