/*
 * wire/pyjson: JSON text read the way Python's json.loads reads it (see
 * pyjson.h). Its own file because it is a parser of its own, the largest
 * piece of the codec, and what both the startup config and every command
 * go through.
 *
 * The seed decodes payloads with json.loads: UTF-8 (surrogates passed),
 * strict JSON plus NaN/Infinity, duplicate keys collapsed into a dict.
 * cJSON's parser differs (any byte <= 32 is whitespace, "01" is a number,
 * control characters pass, NaN does not) and writes a process-wide error
 * slot on every call, a data race once two threads parse. So the text is
 * scanned the way Python's scanner walks it (its messages, its positions)
 * and the cJSON tree is built from that scan; the tree is then made a dict.
 */
#include "wire/pyjson.h"

#include <cjson/cJSON.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/frame.h"
#include "wire/util.h"

#define PJ_MAX_DEPTH 900 /* Python gives up near 1000 */

typedef struct {
    const uint8_t *s;
    size_t n;
    const char *msg;
    size_t pos;
    int depth;
    char *stk; /* decoded keys of the open objects, then the current string */
    size_t top;
} pj_t;

static int pj_fail(pj_t *j, const char *msg, size_t pos) {
    j->msg = msg;
    j->pos = pos;
    return -1;
}

static int pj_oom(pj_t *j) { return pj_fail(j, "out of memory", SIZE_MAX); }

static size_t pj_ws(const pj_t *j, size_t i) {
    while (i < j->n && (j->s[i] == ' ' || j->s[i] == '\t' || j->s[i] == '\n' || j->s[i] == '\r'))
        i++;
    return i;
}

static int hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at s[i..i+4) (caller checked the bounds); -1 if not hex. */
static long pj_hex4(const pj_t *j, size_t i) {
    long v = 0;
    for (size_t k = i; k < i + 4; k++) {
        int d = hexval(j->s[k]);
        if (d < 0) return -1;
        v = v << 4 | d;
    }
    return v;
}

/* Code point c as UTF-8 at d; a lone surrogate gets its 3-byte form, as
 * Python's surrogatepass writes it. */
static size_t put_utf8(char *d, long c) {
    if (c < 0x80) {
        d[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        d[0] = (char)(0xc0 | c >> 6);
        d[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        d[0] = (char)(0xe0 | c >> 12);
        d[1] = (char)(0x80 | (c >> 6 & 0x3f));
        d[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | c >> 18);
    d[1] = (char)(0x80 | (c >> 12 & 0x3f));
    d[2] = (char)(0x80 | (c >> 6 & 0x3f));
    d[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* A string whose opening quote is at i - 1, decoded onto the stack at
 * j->stk + j->top (NUL-terminated; the caller moves top past it to keep
 * it); *end is past the closing quote. A decoded string and its NUL fit in
 * its quoted source, a number's text and NUL in its source plus one, and
 * what is live on the stack comes from disjoint source bytes: n + 2 bytes
 * of stack always suffice. */
static int pj_string(pj_t *j, size_t i, size_t *end) {
    const size_t begin = i - 1;
    const uint8_t *s = j->s;
    char *d = j->stk + j->top;
    for (;;) {
        size_t k = i;
        while (k < j->n && s[k] != '"' && s[k] != '\\') {
            if (s[k] <= 0x1f) return pj_fail(j, "Invalid control character at", k);
            k++;
        }
        if (k >= j->n) return pj_fail(j, "Unterminated string starting at", begin);
        memcpy(d, s + i, k - i);
        d += k - i;
        if (s[k] == '"') {
            *d = '\0';
            *end = k + 1;
            return 0;
        }
        k++; /* past the backslash */
        if (k >= j->n) return pj_fail(j, "Unterminated string starting at", begin);
        if (s[k] != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *e = memchr(from, s[k], 8);
            if (!e) return pj_fail(j, "Invalid \\escape", k - 1);
            *d++ = to[e - from];
            i = k + 1;
            continue;
        }
        size_t first = k + 1, e = first + 4;
        if (e >= j->n) return pj_fail(j, "Invalid \\uXXXX escape", first - 1);
        long c = pj_hex4(j, first);
        if (c < 0) return pj_fail(j, "Invalid \\uXXXX escape", e - 5);
        i = e;
        if (c >= 0xd800 && c <= 0xdbff && e + 6 < j->n && s[e] == '\\' && s[e + 1] == 'u') {
            long c2 = pj_hex4(j, e + 2);
            if (c2 < 0) return pj_fail(j, "Invalid \\uXXXX escape", e + 1);
            if (c2 >= 0xdc00 && c2 <= 0xdfff) {
                c = 0x10000 + ((c - 0xd800) << 10) + (c2 - 0xdc00);
                i = e + 6;
            }
        }
        d += put_utf8(d, c);
    }
}

static int pj_value(pj_t *j, size_t i, size_t *end, cJSON **out);

static int pj_object(pj_t *j, size_t i, size_t *end, cJSON *o) {
    i = pj_ws(j, i);
    if (i < j->n && j->s[i] == '}') {
        *end = i + 1;
        return 0;
    }
    for (;;) {
        if (i >= j->n || j->s[i] != '"')
            return pj_fail(j, "Expecting property name enclosed in double quotes", i);
        size_t key = j->top;
        if (pj_string(j, i + 1, &i)) return -1;
        j->top += strlen(j->stk + key) + 1;
        i = pj_ws(j, i);
        if (i >= j->n || j->s[i] != ':') return pj_fail(j, "Expecting ':' delimiter", i);
        i = pj_ws(j, i + 1);
        cJSON *v;
        if (pj_value(j, i, &i, &v)) return -1;
        if (!cJSON_AddItemToObject(o, j->stk + key, v)) {
            cJSON_Delete(v);
            return pj_oom(j);
        }
        j->top = key;
        i = pj_ws(j, i);
        if (i < j->n && j->s[i] == '}') {
            *end = i + 1;
            return 0;
        }
        if (i >= j->n || j->s[i] != ',') return pj_fail(j, "Expecting ',' delimiter", i);
        i = pj_ws(j, i + 1);
    }
}

static int pj_array(pj_t *j, size_t i, size_t *end, cJSON *a) {
    i = pj_ws(j, i);
    if (i < j->n && j->s[i] == ']') {
        *end = i + 1;
        return 0;
    }
    for (;;) {
        cJSON *v;
        if (pj_value(j, i, &i, &v)) return -1;
        if (!cJSON_AddItemToArray(a, v)) {
            cJSON_Delete(v);
            return pj_oom(j);
        }
        i = pj_ws(j, i);
        if (i < j->n && j->s[i] == ']') {
            *end = i + 1;
            return 0;
        }
        if (i >= j->n || j->s[i] != ',') return pj_fail(j, "Expecting ',' delimiter", i);
        i = pj_ws(j, i + 1);
    }
}

static int pj_word(const pj_t *j, size_t i, const char *w) {
    size_t n = strlen(w);
    return j->n - i >= n && memcmp(j->s + i, w, n) == 0;
}


/* The number text s[i..k) as a double, whatever the C locale's decimal point. */
static double pj_number(pj_t *j, size_t i, size_t k) {
    char *t = j->stk + j->top;
    char point = localeconv()->decimal_point[0];
    for (size_t m = i; m < k; m++) t[m - i] = j->s[m] == '.' ? point : (char)j->s[m];
    t[k - i] = '\0';
    return strtod(t, NULL);
}

/* One value at i (after whitespace); *out is a new node, NULL on error. */
static int pj_value(pj_t *j, size_t i, size_t *end, cJSON **out) {
    *out = NULL;
    if (i >= j->n) return pj_fail(j, "Expecting value", i);
    const uint8_t *s = j->s;
    cJSON *v = NULL;
    int rc;
    switch (s[i]) {
    case '"':
        if (pj_string(j, i + 1, end)) return -1;
        if (!(*out = cJSON_CreateString(j->stk + j->top))) return pj_oom(j);
        return 0;
    case '{':
    case '[':
        if (++j->depth > PJ_MAX_DEPTH)
            return pj_fail(j,
                           s[i] == '{' ? "maximum recursion depth exceeded while decoding a "
                                         "JSON object from a unicode string"
                                       : "maximum recursion depth exceeded while decoding a "
                                         "JSON array from a unicode string",
                           i);
        v = s[i] == '{' ? cJSON_CreateObject() : cJSON_CreateArray();
        if (!v) return pj_oom(j);
        rc = s[i] == '{' ? pj_object(j, i + 1, end, v) : pj_array(j, i + 1, end, v);
        j->depth--;
        if (rc) {
            cJSON_Delete(v);
            return rc;
        }
        *out = v;
        return 0;
    }
    static const char *const words[] = {"null", "true", "false", "NaN", "Infinity", "-Infinity"};
    for (int w = 0; w < 6; w++) {
        if (!pj_word(j, i, words[w])) continue;
        v = w == 0   ? cJSON_CreateNull()
            : w == 1 ? cJSON_CreateTrue()
            : w == 2 ? cJSON_CreateFalse()
                     : cJSON_CreateNumber(w == 4   ? INFINITY
                                          : w == 5 ? -INFINITY
                                                   : 0);
        if (!v) return pj_oom(j);
        if (w == 3) v->valuedouble = NAN; /* cJSON would cast NaN to int */
        *end = i + strlen(words[w]);
        *out = v;
        return 0;
    }
    size_t k = i;
    if (s[k] == '-') k++;
    if (k >= j->n || !isdig(s[k])) return pj_fail(j, "Expecting value", i);
    if (s[k] == '0')
        k++;
    else
        while (k < j->n && isdig(s[k])) k++;
    if (k + 1 < j->n && s[k] == '.' && isdig(s[k + 1])) {
        k += 2;
        while (k < j->n && isdig(s[k])) k++;
    }
    if (k + 1 < j->n && (s[k] == 'e' || s[k] == 'E')) {
        size_t e = k + 1;
        if (e < j->n && (s[e] == '+' || s[e] == '-')) e++;
        size_t d = e;
        while (e < j->n && isdig(s[e])) e++;
        if (e > d) k = e;
    }
    double d = pj_number(j, i, k);
    if (d == 0) d = 0; /* "-0" is Python's int 0; "-0.0" a float, which prints the same */
    if (!(*out = cJSON_CreateNumber(d))) return pj_oom(j);
    *end = k;
    return 0;
}

/* Python's message for bytes that are not UTF-8 ("surrogatepass": encoded
 * surrogates are accepted). 0 when the text is valid. */
static int py_utf8_check(const uint8_t *s, size_t n, char *err, size_t errlen) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        const char *why = "invalid continuation byte";
        size_t bad = 0; /* bytes in the error range */
        if (c < 0xc2 || c > 0xf4) {
            why = "invalid start byte";
            bad = 1;
        } else {
            uint8_t lo = 0x80, hi = 0xbf;
            if (c == 0xe0) lo = 0xa0;
            if (c == 0xf0) lo = 0x90;
            if (c == 0xf4) hi = 0x8f;
            if (c == 0xed && i + 1 < n && s[i + 1] >= 0xa0 && s[i + 1] <= 0xbf) {
                /* an encoded surrogate: passed when whole, else the byte is bad */
                if (i + 2 < n && (s[i + 2] & 0xc0) == 0x80) {
                    i += 3;
                    continue;
                }
                bad = 1;
            } else if (i + 1 < n && (s[i + 1] < lo || s[i + 1] > hi)) {
                bad = 1;
            } else {
                for (size_t k = 2; k < len && !bad; k++)
                    if (i + k < n && (s[i + k] & 0xc0) != 0x80) bad = k;
                if (!bad && i + len > n) {
                    why = "unexpected end of data";
                    bad = n - i;
                }
            }
        }
        if (!bad) {
            i += len;
            continue;
        }
        if (bad == 1)
            return seterr(err, errlen, OSP_WIRE_EINVAL,
                          "'utf-8' codec can't decode byte 0x%02x in position %zu: %s", c, i, why);
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "'utf-8' codec can't decode bytes in position %zu-%zu: %s", i, i + bad - 1,
                      why);
    }
    return 0;
}

/* "msg: line L column C (char N)" with Python's character (not byte) counts. */
static int pj_report(const pj_t *j, char *err, size_t errlen) {
    size_t chars = 0, line = 1, line_start = 0; /* in characters */
    for (size_t k = 0; k < j->pos && k < j->n; k++) {
        if ((j->s[k] & 0xc0) == 0x80) continue;
        chars++;
        if (j->s[k] == '\n') {
            line++;
            line_start = chars;
        }
    }
    return seterr(err, errlen, OSP_WIRE_EINVAL, "%s: line %zu column %zu (char %zu)", j->msg, line,
                  chars - line_start + 1, chars);
}

typedef struct {
    cJSON *node;
    size_t order;
} keyed_t;

static int keyed_cmp(const void *a, const void *b) {
    const keyed_t *x = a, *y = b;
    int c = strcmp(x->node->string, y->node->string);
    if (c) return c;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* A dict: for a key given more than once the last value stays, in the
 * first one's place. Depth is bounded by the scanner (PJ_MAX_DEPTH). */
static int make_dicts(cJSON *o) {
    size_t n = 0;
    for (cJSON *c = o->child; c; c = c->next) {
        if ((cJSON_IsObject(c) || cJSON_IsArray(c)) && make_dicts(c)) return -1;
        n++;
    }
    if (!cJSON_IsObject(o) || n < 2) return 0;
    keyed_t *k = malloc(n * sizeof *k);
    if (!k) return -1;
    size_t i = 0;
    for (cJSON *c = o->child; c; c = c->next, i++) k[i] = (keyed_t){c, i};
    qsort(k, n, sizeof *k, keyed_cmp);
    for (i = 0; i < n;) {
        size_t e = i + 1;
        while (e < n && strcmp(k[e].node->string, k[i].node->string) == 0) e++;
        if (e - i > 1) {
            for (size_t m = i + 1; m + 1 < e; m++)
                cJSON_Delete(cJSON_DetachItemViaPointer(o, k[m].node));
            cJSON *last = cJSON_DetachItemViaPointer(o, k[e - 1].node);
            cJSON_ReplaceItemViaPointer(o, k[i].node, last);
        }
        i = e;
    }
    free(k);
    return 0;
}

int osp_pyjson_parse(const uint8_t *s, size_t n, cJSON **out, char *err, size_t errlen) {
    *out = NULL;
    if (n >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf) {
        s += 3; /* json.loads decodes a BOM-led payload as utf-8-sig */
        n -= 3;
    }
    int rc = py_utf8_check(s, n, err, errlen);
    if (rc) return rc;
    if (n > SIZE_MAX - 2) return seterr(err, errlen, OSP_WIRE_ENOMEM, "out of memory");
    pj_t j = {.s = s, .n = n, .stk = malloc(n + 2)};
    if (!j.stk) return seterr(err, errlen, OSP_WIRE_ENOMEM, "out of memory");
    cJSON *root = NULL;
    size_t end;
    rc = pj_value(&j, pj_ws(&j, 0), &end, &root);
    if (rc == 0) {
        end = pj_ws(&j, end);
        if (end != n) rc = pj_fail(&j, "Extra data", end);
    }
    free(j.stk);
    if (rc == 0 && make_dicts(root)) rc = pj_oom(&j);
    if (rc) {
        cJSON_Delete(root);
        if (j.pos == SIZE_MAX) return seterr(err, errlen, OSP_WIRE_ENOMEM, "out of memory");
        return pj_report(&j, err, errlen);
    }
    *out = root;
    return 0;
}
