/* JSON text writer; see jsonw.h. */
#include "wire/jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(osp_jw_t *w, size_t more) {
    if (w->oom) return -1;
    if (w->len + more + 1 <= w->cap) return 0;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + more + 1) {
        if (cap > SIZE_MAX / 2) {
            w->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *nb = realloc(w->buf, cap);
    if (!nb) {
        w->oom = 1;
        return -1;
    }
    w->buf = nb;
    w->cap = cap;
    return 0;
}

static void put(osp_jw_t *w, const char *s, size_t n) {
    if (reserve(w, n)) return;
    memcpy(w->buf + w->len, s, n);
    w->len += n;
    w->buf[w->len] = '\0';
}

static void putc1(osp_jw_t *w, char c) { put(w, &c, 1); }

/* Separator before a value or key when a sibling precedes it: ", " as
 * Python's json.dumps writes it, so replies match the Python worker's bytes. */
static void sep(osp_jw_t *w) {
    if (w->need_comma) put(w, ", ", 2);
    w->need_comma = 1;
}

void osp_jw_reset(osp_jw_t *w) {
    w->len = 0;
    w->oom = 0;
    w->need_comma = 0;
    if (w->buf) w->buf[0] = '\0';
}

void osp_jw_free(osp_jw_t *w) {
    free(w->buf);
    memset(w, 0, sizeof *w);
}

void osp_jw_obj_open(osp_jw_t *w) {
    sep(w);
    putc1(w, '{');
    w->need_comma = 0;
}
void osp_jw_obj_close(osp_jw_t *w) {
    putc1(w, '}');
    w->need_comma = 1;
}
void osp_jw_arr_open(osp_jw_t *w) {
    sep(w);
    putc1(w, '[');
    w->need_comma = 0;
}
void osp_jw_arr_close(osp_jw_t *w) {
    putc1(w, ']');
    w->need_comma = 1;
}

static void put_u(osp_jw_t *w, unsigned v) {
    static const char hex[] = "0123456789abcdef";
    char u[6] = {'\\',       'u', hex[(v >> 12) & 15], hex[(v >> 8) & 15], hex[(v >> 4) & 15],
                 hex[v & 15]};
    put(w, u, 6);
}

/* Decode one UTF-8 sequence at s[0..n); returns its length, 0 if invalid. */
static size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp) {
    unsigned c = s[0];
    size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    if (len == 0 || len > n) return 0;
    unsigned v = c & (0x7Fu >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    /* an encoded surrogate (0xD800-0xDFFF) is taken: the JSON reader stores
     * a lone \udXXX that way (Python's surrogatepass), and json.dumps writes
     * it back as \udXXX */
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF))) return 0;
    *cp = v;
    return len;
}

/* A JSON string with ensure_ascii, as json.dumps writes it: non-ASCII as
 * \uXXXX (surrogate pairs above U+FFFF, a lone encoded surrogate as
 * itself); invalid UTF-8 bytes as U+FFFD. */
static void put_string(osp_jw_t *w, const char *s, size_t n) {
    putc1(w, '"');
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') continue;
        put(w, s + start, i - start);
        start = i + 1;
        if (c >= 0x80) {
            unsigned cp = 0xFFFD;
            size_t len = utf8_decode((const unsigned char *)s + i, n - i, &cp);
            if (len == 0) len = 1;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                put_u(w, 0xD800 + (cp >> 10));
                put_u(w, 0xDC00 + (cp & 0x3FF));
            } else {
                put_u(w, cp);
            }
            i += len - 1;
            start = i + 1;
            continue;
        }
        switch (c) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\r': put(w, "\\r", 2); break;
        case '\t': put(w, "\\t", 2); break;
        case '\b': put(w, "\\b", 2); break;
        case '\f': put(w, "\\f", 2); break;
        default: put_u(w, c);
        }
    }
    put(w, s + start, n - start);
    putc1(w, '"');
}

void osp_jw_key(osp_jw_t *w, const char *key) {
    sep(w);
    put_string(w, key, strlen(key));
    put(w, ": ", 2);
    w->need_comma = 0;
}

void osp_jw_str(osp_jw_t *w, const char *s) {
    if (!s) {
        osp_jw_null(w);
        return;
    }
    osp_jw_strn(w, s, strlen(s));
}

void osp_jw_strn(osp_jw_t *w, const char *s, size_t n) {
    sep(w);
    put_string(w, s, n);
}

void osp_jw_int(osp_jw_t *w, int64_t v) {
    char b[32];
    int n = snprintf(b, sizeof b, "%" PRId64, v);
    sep(w);
    put(w, b, (size_t)n);
}

void osp_jw_uint(osp_jw_t *w, uint64_t v) {
    char b[32];
    int n = snprintf(b, sizeof b, "%" PRIu64, v);
    sep(w);
    put(w, b, (size_t)n);
}

void osp_jw_num(osp_jw_t *w, double v, int digits) {
    if (!isfinite(v)) {
        osp_jw_null(w);
        return;
    }
    char b[64];
    int n;
    if (digits >= 0) {
        double p = pow(10.0, digits);
        double r = round(v * p) / p;
        if (r == 0) r = 0; /* no "-0" */
        n = snprintf(b, sizeof b, "%.*f", digits, r);
        /* trim trailing zeros but keep one decimal, as Python prints floats */
        char *dot = strchr(b, '.');
        if (dot) {
            while (n > 0 && b[n - 1] == '0' && &b[n - 2] != dot) n--;
            b[n] = '\0';
        }
    } else {
        n = snprintf(b, sizeof b, "%.9g", v);
        if (!strpbrk(b, ".eEn")) {
            b[n++] = '.';
            b[n++] = '0';
            b[n] = '\0';
        }
    }
    sep(w);
    put(w, b, (size_t)n);
}

void osp_jw_bool(osp_jw_t *w, int v) {
    sep(w);
    if (v)
        put(w, "true", 4);
    else
        put(w, "false", 5);
}

void osp_jw_null(osp_jw_t *w) {
    sep(w);
    put(w, "null", 4);
}

void osp_jw_raw(osp_jw_t *w, const char *json, size_t n) {
    sep(w);
    put(w, json, n);
}

void osp_jw_members(osp_jw_t *w, const char *json, size_t n) {
    sep(w); /* the comma after the members before, if any */
    put(w, json, n);
}
