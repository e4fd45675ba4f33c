/* Run-time log lines on stderr (log.h). */
#include "log/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* Set by main before threads start, read by every thread after. */
static osp_log_format_t g_format = OSP_LOG_PLAIN;

void osp_log_set_format(osp_log_format_t f) { g_format = f; }

osp_log_format_t osp_log_get_format(void) { return g_format; }

int osp_log_format_parse(const char *name, osp_log_format_t *f) {
    static const char *const names[] = {"plain", "text", "json"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, names[i]) == 0) {
            *f = (osp_log_format_t)i;
            return 0;
        }
    }
    return -1;
}

static const char *level_name(osp_log_level_t lvl, int upper) {
    static const char *const lower_names[] = {"error", "warn", "info", "debug"};
    static const char *const upper_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};
    int i = lvl >= OSP_LOG_ERROR && lvl <= OSP_LOG_DEBUG ? (int)lvl : (int)OSP_LOG_INFO;
    return upper ? upper_names[i] : lower_names[i];
}

/* Appends to buf without overrunning it; *len counts what the whole line
 * needs, so the caller can tell a cut line and size a bigger buffer. */
typedef struct {
    char *buf;
    size_t cap, len;
} out_t;

static void put(out_t *o, const char *s, size_t n) {
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

/* The length of the well-formed UTF-8 sequence at p, 0 if there is none. */
static size_t utf8_len(const unsigned char *p) {
    size_t n;
    unsigned min;
    unsigned cp;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2, min = 0x80, cp = p[0] & 0x1f;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3, min = 0x800, cp = p[0] & 0x0f;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4, min = 0x10000, cp = p[0] & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return n;
}

static void put_json_str(out_t *o, const char *s) {
    put(o, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(o, esc, 2);
        } else if (*p == '\n') {
            put(o, "\\n", 2);
        } else if (*p == '\t') {
            put(o, "\\t", 2);
        } else if (*p == '\r') {
            put(o, "\\r", 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            put(o, esc, 6);
        } else if (*p < 0x80) {
            put(o, (const char *)p, 1);
        } else {
            size_t n = utf8_len(p);
            if (n) {
                put(o, (const char *)p, n);
                p += n - 1;
            } else {
                put(o, "\\ufffd", 6); /* a byte that is not UTF-8 (a path, a peer's text) */
            }
        }
    }
    put(o, "\"", 1);
}

size_t osp_log_format_line(char *buf, size_t buflen, osp_log_format_t f, osp_log_level_t lvl,
                           long long epoch_ms, const char *msg) {
    out_t o = {buf, buflen ? buflen - 1 : 0, 0};
    char stamp[40] = "";
    if (f != OSP_LOG_PLAIN) {
        time_t secs = (time_t)(epoch_ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        size_t n = strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(stamp + n, sizeof stamp - n, ".%03dZ", (int)(epoch_ms % 1000));
    }
    size_t mlen = strlen(msg);
    if (mlen && msg[mlen - 1] == '\n') mlen--;
    if (f == OSP_LOG_JSON) {
        char *m = strndup(msg, mlen);
        put(&o, "{\"time\":\"", 9);
        put(&o, stamp, strlen(stamp));
        put(&o, "\",\"level\":\"", 11);
        put(&o, level_name(lvl, 0), strlen(level_name(lvl, 0)));
        put(&o, "\",\"msg\":", 8);
        put_json_str(&o, m ? m : "(out of memory)");
        put(&o, "}", 1);
        free(m);
    } else {
        if (f == OSP_LOG_TEXT) {
            put(&o, stamp, strlen(stamp));
            put(&o, " ", 1);
            put(&o, level_name(lvl, 1), strlen(level_name(lvl, 1)));
            put(&o, " ", 1);
        }
        put(&o, msg, mlen);
    }
    put(&o, "\n", 1);
    if (buflen) buf[o.len < o.cap ? o.len : o.cap] = '\0';
    return o.len;
}

static void write_all(const char *p, size_t n) {
    while (n) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return; /* stderr gone: nowhere to say so */
        p += w;
        n -= (size_t)w;
    }
}

void osp_vlog(osp_log_level_t lvl, const char *fmt, va_list ap) {
    char msg[2048], line[3072];
    char *big = NULL, *out = line;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    const char *m = msg;
    if (n >= (int)sizeof msg && (big = malloc((size_t)n + 1))) {
        vsnprintf(big, (size_t)n + 1, fmt, ap2);
        m = big;
    }
    va_end(ap2);
    long long ms = (long long)osp_epoch_ms();
    size_t need = osp_log_format_line(line, sizeof line, g_format, lvl, ms, m);
    char *bigline = NULL;
    if (need >= sizeof line && (bigline = malloc(need + 1))) {
        osp_log_format_line(bigline, need + 1, g_format, lvl, ms, m);
        out = bigline;
    }
    write_all(out, strlen(out));
    free(bigline);
    free(big);
}

void osp_log(osp_log_level_t lvl, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    osp_vlog(lvl, fmt, ap);
    va_end(ap);
}
