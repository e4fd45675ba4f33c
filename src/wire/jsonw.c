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

/* Comma before a value or key when a sibling precedes it. */
static void sep(osp_jw_t *w) {
    if (w->need_comma) putc1(w, ',');
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

void osp_jw_obj_open(osp_jw_t *w) { sep(w); putc1(w, '{'); w->need_comma = 0; }
void osp_jw_obj_close(osp_jw_t *w) { putc1(w, '}'); w->need_comma = 1; }
void osp_jw_arr_open(osp_jw_t *w) { sep(w); putc1(w, '['); w->need_comma = 0; }
void osp_jw_arr_close(osp_jw_t *w) { putc1(w, ']'); w->need_comma = 1; }

static void put_string(osp_jw_t *w, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    putc1(w, '"');
    size_t start = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        put(w, s + start, i - start);
        start = i + 1;
        switch (c) {
        case '"': put(w, "\\\"", 2); break;
        case '\\': put(w, "\\\\", 2); break;
        case '\n': put(w, "\\n", 2); break;
        case '\r': put(w, "\\r", 2); break;
        case '\t': put(w, "\\t", 2); break;
        case '\b': put(w, "\\b", 2); break;
        case '\f': put(w, "\\f", 2); break;
        default: {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(w, u, 6);
        }
        }
    }
    put(w, s + start, n - start);
    putc1(w, '"');
}

void osp_jw_key(osp_jw_t *w, const char *key) {
    sep(w);
    put_string(w, key, strlen(key));
    putc1(w, ':');
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
