/*
 * thread: a thread that is never joined. For work whose caller may give up
 * on it (a model load past its bound, a session's memory handed back to
 * the system) and so must not be made to wait for it. At the bottom of
 * the tree so that model/, sched/ and server/ share one.
 *
 * And the name a thread shows in /proc/PID/task/TID/comm, top -H and perf:
 * every thread osprey starts names itself "osp-..." first thing, so that
 * the CPU a stage spends can be read per thread (bench/cameras.py). A
 * thread a library starts takes its creator's name at that moment.
 */
#ifndef OSP_BASE_THREAD_H
#define OSP_BASE_THREAD_H

/* Run fn(arg) on a detached thread of its own. 0, or -1 when no thread
 * could be started (fn does not run; arg is still the caller's). */
int osp_thread_detached(void *(*fn)(void *), void *arg);

/* Name the calling thread, printf-style, cut to the 15 bytes Linux keeps
 * ("osp-cam-door"). Nothing happens where threads cannot be named. */
void osp_thread_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
