/*
 * The I/O thread's event loop (loop.h): epoll over stdin/stdout or
 * sockets, the mailbox of finished work, signals and timers. Reads and
 * writes are non-blocking, frame work runs in the pools, model loads on
 * their own threads: the only wait is epoll_wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sched/pool.h"
#include "server/core/loop.h"
#include "log/log.h"

#define TAG_LISTEN 0xFFFFFFF0u
#define TAG_MAILBOX 0xFFFFFFF1u
#define TAG_SIGNAL 0xFFFFFFF2u

struct srv_loop {
    int epfd, sigfd, listen_fd;
    osp_mailbox_t done; /* finished jobs, from any thread */
    srv_fd_fn on_fd;
    void (*on_accept)(server_t *s, int fd);
    struct {
        int (*due_ms)(server_t *s);
        void (*fire)(server_t *s);
    } timers[SRV_LOOP_TIMERS];
    int n_timers;
    void (*on_stop[SRV_LOOP_TIMERS])(server_t *s);
    int n_on_stop;
    void (*on_hup[SRV_LOOP_TIMERS])(server_t *s);
    int n_on_hup;
    /* the unix socket file this server made, removed when it stops
     * listening if it is still the same file (dev, ino) */
    char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t sock_dev;
    ino_t sock_ino;
};

/* The socket file goes with the listening socket: a path that stays
 * behind reads as a server to whoever connects next. Another file put
 * there since is left alone. */
static void unlisten(srv_loop_t *l) {
    if (l->listen_fd >= 0) close(l->listen_fd);
    l->listen_fd = -1;
    struct stat st;
    if (l->sock_path[0] && lstat(l->sock_path, &st) == 0 && st.st_dev == l->sock_dev &&
        st.st_ino == l->sock_ino)
        unlink(l->sock_path);
    l->sock_path[0] = '\0';
}

srv_loop_t *srv_loop_new(void) {
    srv_loop_t *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->sigfd = l->listen_fd = -1;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (l->epfd < 0 || osp_mailbox_init(&l->done)) {
        osp_log(OSP_LOG_ERROR, "ospreyd: cannot set up the event loop: %s", strerror(errno));
        if (l->epfd >= 0) close(l->epfd);
        free(l);
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = TAG_MAILBOX};
    epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->done.efd, &ev);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, NULL); /* inherited by every thread started after */
    signal(SIGPIPE, SIG_IGN);
    l->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (l->sigfd >= 0) {
        ev.data.u32 = TAG_SIGNAL;
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->sigfd, &ev);
    }
    return l;
}

void srv_loop_free(srv_loop_t *l) {
    if (!l) return;
    osp_mailbox_destroy(&l->done);
    unlisten(l);
    if (l->sigfd >= 0) close(l->sigfd);
    close(l->epfd);
    free(l);
}

int srv_loop_add(server_t *s, int fd, uint32_t events, uint32_t tag) {
    struct epoll_event ev = {.events = events, .data.u32 = tag};
    return epoll_ctl(s->loop->epfd, EPOLL_CTL_ADD, fd, &ev);
}

void srv_loop_mod(server_t *s, int fd, uint32_t events, uint32_t tag) {
    struct epoll_event ev = {.events = events, .data.u32 = tag};
    epoll_ctl(s->loop->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void srv_loop_del(server_t *s, int fd) { epoll_ctl(s->loop->epfd, EPOLL_CTL_DEL, fd, NULL); }

void srv_loop_on_fd(server_t *s, srv_fd_fn fn) { s->loop->on_fd = fn; }

int srv_loop_timer(server_t *s, int (*due_ms)(server_t *s), void (*fire)(server_t *s)) {
    srv_loop_t *l = s->loop;
    if (l->n_timers == SRV_LOOP_TIMERS) return -1;
    l->timers[l->n_timers].due_ms = due_ms;
    l->timers[l->n_timers++].fire = fire;
    return 0;
}

int srv_loop_on_hup(server_t *s, void (*fn)(server_t *s)) {
    srv_loop_t *l = s->loop;
    if (l->n_on_hup == SRV_LOOP_TIMERS) return -1;
    l->on_hup[l->n_on_hup++] = fn;
    return 0;
}

int srv_loop_on_stop(server_t *s, void (*fn)(server_t *s)) {
    srv_loop_t *l = s->loop;
    if (l->n_on_stop == SRV_LOOP_TIMERS) return -1;
    l->on_stop[l->n_on_stop++] = fn;
    return 0;
}

void srv_post(server_t *s, srv_job_t *j) { osp_mailbox_post(&s->loop->done, &j->q); }

int srv_posted(server_t *s) { return osp_mailbox_waiting(&s->loop->done); }

void srv_drain(server_t *s) {
    osp_qnode_t *q = osp_mailbox_take(&s->loop->done);
    while (q) {
        osp_qnode_t *next = q->next;
        srv_job_t *j = (srv_job_t *)q;
        j->done(s, j);
        q = next;
    }
}

static void set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Whether a bound address is the machine's own (127.0.0.0/8, ::1, or
 * IPv4 loopback mapped into IPv6). */
static int is_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return 0;
}

/* A unix socket created with no permissions at all, then given `mode`:
 * no one can connect between the two. */
static int bind_unix(int fd, const struct sockaddr_un *sa, int mode) {
    mode_t old = umask(0777);
    int rc = bind(fd, (const struct sockaddr *)sa, sizeof *sa);
    umask(old);
    if (rc == 0 && chmod(sa->sun_path, (mode_t)mode) != 0) rc = -1;
    return rc;
}

/* Whether a unix socket path may be bound: free, or a socket file no
 * server answers on (left by a run that was killed; removed here when
 * remove_stale). A server that answers there keeps it — taking its path
 * over would leave it running, deaf — and so does any other kind of file.
 * 0, or -1 with the reason in err. */
static int unix_claim(const char *path, int remove_stale, char *err, size_t errlen) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "cannot listen on unix:%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "cannot listen on unix:%s: the path exists and is not a socket", path);
        return -1;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on unix:%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = connect(fd, (const struct sockaddr *)&sa, sizeof sa), e = errno;
    close(fd);
    if (rc == 0 || e == EAGAIN) { /* EAGAIN: it listens, its backlog is full */
        snprintf(err, errlen,
                 "cannot listen on unix:%s: a server is answering there (another ospreyd?); "
                 "it keeps its socket: stop it first, or choose another path",
                 path);
        return -1;
    }
    if (e == ENOENT) return 0; /* gone meanwhile */
    if (e != ECONNREFUSED) {
        snprintf(err, errlen,
                 "cannot listen on unix:%s: cannot tell whether a server answers "
                 "there: %s",
                 path, strerror(e));
        return -1;
    }
    if (remove_stale) {
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "cannot remove the stale socket %s: %s", path, strerror(errno));
            return -1;
        }
        osp_log(OSP_LOG_INFO, "ospreyd: %s was a stale socket (no server answered); replaced", path);
    }
    return 0;
}

int srv_loop_listen_check(const char *spec, char *err, size_t errlen) {
    if (strncmp(spec, "unix:", 5) != 0) return 0;
    return unix_claim(spec + 5, 0, err, errlen);
}

/* A listening unix socket at path. Two servers starting at once on one
 * path must not both take it: each could find the old file stale, and the
 * second's unlink would then remove the first's fresh socket, leaving it
 * deaf. So the check, the bind and the listen happen under an exclusive
 * lock on the socket's directory, held for that moment only (servers on
 * other paths there wait a few microseconds); the second then finds the
 * first answering. -1 with err set on failure. */
static int listen_unix(server_t *s, const char *path, char *err, size_t errlen) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long: %s", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    char dir[sizeof sa.sun_path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || flock(dfd, LOCK_EX) != 0) {
        snprintf(err, errlen, "cannot listen on unix:%s: cannot lock its directory %s: %s", path,
                 dir, strerror(errno));
        if (dfd >= 0) close(dfd);
        return -1;
    }
    int fd = -1;
    if (unix_claim(sa.sun_path, 1, err, errlen)) goto out;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind_unix(fd, &sa, s->opts.socket_mode ? s->opts.socket_mode : 0660) < 0 ||
        listen(fd, 64) < 0) {
        snprintf(err, errlen, "cannot listen on unix:%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        fd = -1;
        goto out;
    }
    struct stat st;
    if (stat(sa.sun_path, &st) == 0) {
        srv_loop_t *l = s->loop;
        snprintf(l->sock_path, sizeof l->sock_path, "%s", sa.sun_path);
        l->sock_dev = st.st_dev;
        l->sock_ino = st.st_ino;
    }
out:
    close(dfd); /* and with it the lock */
    return fd;
}

/* The listening socket. TCP binds loopback unless HOST says otherwise,
 * and another address only with a token (a peer that reaches the port
 * could otherwise load, replace and unload every model). */
static int listen_on(server_t *s, const char *spec, char *err, size_t errlen) {
    int fd = -1;
    if (strncmp(spec, "unix:", 5) == 0) {
        if ((fd = listen_unix(s, spec + 5, err, errlen)) < 0) return -1;
        set_nonblock(fd);
        return fd;
    } else if (strncmp(spec, "tcp:", 4) == 0) {
        char host[256];
        const char *colon = strrchr(spec + 4, ':');
        if (!colon || (size_t)(colon - (spec + 4)) >= sizeof host) {
            snprintf(err, errlen, "--listen tcp: needs HOST:PORT, got %s", spec);
            return -1;
        }
        memcpy(host, spec + 4, (size_t)(colon - (spec + 4)));
        host[colon - (spec + 4)] = '\0';
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_NUMERICSERV},
                        *ai = NULL;
        int gr = getaddrinfo(host[0] ? host : "127.0.0.1", colon + 1, &hints, &ai);
        if (gr != 0) {
            snprintf(err, errlen, "cannot resolve %s: %s", spec, gai_strerror(gr));
            return -1;
        }
        if (!is_loopback(ai->ai_addr) && !s->auth) {
            snprintf(err, errlen,
                     "%s is not a loopback address: listening there needs --auth-token-file "
                     "(every connection then presents the token)",
                     host);
            freeaddrinfo(ai);
            return -1;
        }
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
            freeaddrinfo(ai);
            goto sys_fail;
        }
        freeaddrinfo(ai);
    } else {
        snprintf(err, errlen, "--listen takes unix:PATH or tcp:HOST:PORT, not '%s'", spec);
        return -1;
    }
    if (listen(fd, 64) < 0) goto sys_fail;
    set_nonblock(fd);
    return fd;
sys_fail:
    snprintf(err, errlen, "cannot listen on %s: %s", spec, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
}

int srv_loop_listen(server_t *s, const char *spec, void (*on_accept)(server_t *s, int fd),
                    char *err, size_t errlen) {
    int fd = listen_on(s, spec, err, errlen);
    if (fd < 0) return -1;
    s->loop->listen_fd = fd;
    s->loop->on_accept = on_accept;
    srv_loop_add(s, fd, EPOLLIN, TAG_LISTEN);
    return 0;
}

static void accept_all(server_t *s) {
    for (;;) {
        int fd = accept4(s->loop->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return;
        s->loop->on_accept(s, fd);
    }
}

static void start_stopping(server_t *s) {
    if (s->stopping) return;
    s->stopping = 1;
    srv_loop_t *l = s->loop;
    if (l->listen_fd >= 0) srv_loop_del(s, l->listen_fd);
    unlisten(l);
    for (int i = 0; i < l->n_on_stop; i++) l->on_stop[i](s);
}

/* The nearest of the registered timers (-1: none). */
static int next_timeout(server_t *s) {
    srv_loop_t *l = s->loop;
    int t = -1;
    for (int i = 0; i < l->n_timers; i++) {
        int due = l->timers[i].due_ms(s);
        if (due >= 0 && (t < 0 || due < t)) t = due;
    }
    return t;
}

int srv_loop_run(server_t *s, const srv_loop_run_t *run) {
    struct epoll_event evs[64];
    int exit_code = 0;
    srv_loop_t *l = s->loop;
    for (;;) {
        if (run->finished(s, &exit_code)) return exit_code;
        int busy = run->busy(s);
        int n = epoll_wait(l->epfd, evs, 64, busy ? 0 : next_timeout(s));
        if (n < 0 && errno != EINTR) {
            osp_log(OSP_LOG_ERROR, "ospreyd: epoll_wait: %s", strerror(errno));
            return 1;
        }
        for (int i = 0; i < n; i++) {
            uint32_t tag = evs[i].data.u32;
            if (tag == TAG_MAILBOX) {
                srv_drain(s);
            } else if (tag == TAG_SIGNAL) {
                struct signalfd_siginfo si;
                int stop = 0;
                while (read(s->loop->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    if (si.ssi_signo == SIGHUP) {
                        osp_log(OSP_LOG_INFO, "ospreyd: SIGHUP");
                        for (int k = 0; k < l->n_on_hup && !s->stopping; k++) l->on_hup[k](s);
                        continue;
                    }
                    osp_log(OSP_LOG_INFO, "ospreyd: %s: finishing what is in flight, then exiting",
                            strsignal((int)si.ssi_signo));
                    stop = 1;
                }
                if (stop) start_stopping(s);
            } else if (tag == TAG_LISTEN) {
                accept_all(s);
            } else if (l->on_fd) {
                l->on_fd(s, tag, evs[i].events);
            }
        }
        for (int i = 0; i < l->n_timers; i++) l->timers[i].fire(s);
    }
}
