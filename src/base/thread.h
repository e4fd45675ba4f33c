/*
 * thread: a thread that is never joined. For work whose caller may give up
 * on it (a model load past its bound, a session's memory handed back to
 * the system) and so must not be made to wait for it. At the bottom of
 * the tree so that model/, sched/ and server/ share one.
 */
#ifndef OSP_BASE_THREAD_H
#define OSP_BASE_THREAD_H

/* Run fn(arg) on a detached thread of its own. 0, or -1 when no thread
 * could be started (fn does not run; arg is still the caller's). */
int osp_thread_detached(void *(*fn)(void *), void *arg);

#endif
