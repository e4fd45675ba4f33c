/* The pool protocol's codec; see frame.h and docs/PROTOCOL.md. */
#include "wire/frame.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------- */

uint32_t osp_wire_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t osp_wire_rd64(const uint8_t *p) {
    return (uint64_t)osp_wire_rd32(p) | (uint64_t)osp_wire_rd32(p + 4) << 32;
}

static void wr32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int seterr(char *err, size_t errlen, int rc, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ---- framing ------------------------------------------------------------------- */

static uint32_t frame_cap(uint32_t max_frame) {
    if (max_frame == 0) return OSP_WIRE_MAX_FRAME_DEFAULT;
    if (max_frame < 5) return 5;
#if SIZE_MAX <= UINT32_MAX
    /* 4 + total_len must fit a size_t, with room for a read hint */
    if (max_frame > SIZE_MAX / 2) return (uint32_t)(SIZE_MAX / 2);
#endif
    return max_frame;
}

int osp_wire_scan(const uint8_t *buf, size_t len, uint32_t max_frame, osp_wire_frame_t *f,
                  size_t *need) {
    size_t spare;
    if (!need) need = &spare;
    memset(f, 0, sizeof *f);
    *need = 0;
    if (len < 4) {
        *need = 8 - len; /* 8 bytes can already decide "too large" */
        return 0;
    }
    uint32_t tl = osp_wire_rd32(buf);
    f->total_len = tl;
    if (len >= 8) f->req_id = osp_wire_rd32(buf + 4);
    if (tl > frame_cap(max_frame)) {
        if (len < 8) {
            *need = 8 - len;
            return 0;
        }
        return OSP_WIRE_ETOOBIG;
    }
    /* the seed reads 9 header bytes, then max(0, total_len - 5) */
    size_t flen = 4 + (size_t)(tl < 5 ? 5 : tl);
    f->frame_len = flen;
    if (len >= 9) f->msg_type = buf[8];
    if (len < flen) {
        *need = flen - len;
        return 0;
    }
    f->payload = buf + 9;
    f->payload_len = flen - 9;
    return 1;
}

void osp_wire_reader_init(osp_wire_reader_t *r, uint32_t max_frame) {
    memset(r, 0, sizeof *r);
    r->max_frame = frame_cap(max_frame);
}

void osp_wire_reader_free(osp_wire_reader_t *r) {
    uint32_t max_frame = r->max_frame;
    free(r->buf);
    memset(r, 0, sizeof *r);
    r->max_frame = max_frame;
}

void osp_wire_reader_reset(osp_wire_reader_t *r) {
    r->head = r->tail = 0;
    r->fatal = 0;
    memset(&r->bad, 0, sizeof r->bad);
}

uint8_t *osp_wire_reader_space(osp_wire_reader_t *r, size_t hint, size_t *room) {
    *room = 0;
    if (r->fatal) return NULL;
    size_t have = r->tail - r->head;
    size_t want = hint ? hint : 1;
    if (have >= 4) {
        /* give the frame being assembled room for all of itself */
        uint32_t tl = osp_wire_rd32(r->buf + r->head);
        if (tl <= r->max_frame) {
            size_t flen = 4 + (size_t)(tl < 5 ? 5 : tl);
            if (flen > have && flen - have > want) want = flen - have;
        }
    }
    if (r->cap - r->tail < want && r->head > 0) {
        memmove(r->buf, r->buf + r->head, have);
        r->head = 0;
        r->tail = have;
    }
    if (r->cap - r->tail < want) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap - have < want) {
            if (cap > SIZE_MAX / 2) goto oom;
            cap *= 2;
        }
        uint8_t *nb = realloc(r->buf, cap);
        if (!nb) goto oom;
        r->buf = nb;
        r->cap = cap;
    }
    *room = r->cap - r->tail;
    return r->buf + r->tail;
oom:
    r->fatal = OSP_WIRE_ENOMEM;
    return NULL;
}

void osp_wire_reader_commit(osp_wire_reader_t *r, size_t n) {
    if (n > r->cap - r->tail) n = r->cap - r->tail;
    r->tail += n;
}

int osp_wire_reader_feed(osp_wire_reader_t *r, const void *data, size_t n) {
    const uint8_t *p = data;
    while (n > 0) {
        size_t room;
        uint8_t *dst = osp_wire_reader_space(r, n, &room);
        if (!dst) return r->fatal;
        size_t k = n < room ? n : room;
        memcpy(dst, p, k);
        osp_wire_reader_commit(r, k);
        p += k;
        n -= k;
    }
    return r->fatal;
}

int osp_wire_reader_next(osp_wire_reader_t *r, osp_wire_frame_t *f) {
    if (r->fatal) {
        *f = r->bad;
        return r->fatal;
    }
    if (r->tail == r->head) {
        memset(f, 0, sizeof *f);
        return 0;
    }
    int rc = osp_wire_scan(r->buf + r->head, r->tail - r->head, r->max_frame, f, NULL);
    if (rc == 1) {
        r->head += f->frame_len;
        /* drained: the next read starts at the front (the frame's bytes stay
         * where they are until then) */
        if (r->head == r->tail) r->head = r->tail = 0;
    } else if (rc < 0) {
        r->fatal = rc;
        r->bad = *f;
        r->bad.payload = NULL;
    }
    return rc;
}

size_t osp_wire_reader_buffered(const osp_wire_reader_t *r) { return r->tail - r->head; }

/* ---- JSON text as Python's json.loads sees it ----------------------------------
 *
 * The seed decodes payloads with json.loads: UTF-8 (surrogates passed),
 * strict JSON plus NaN/Infinity, duplicate keys collapsed into a dict.
 * cJSON's parser differs (any byte <= 32 is whitespace, "01" is a number,
 * control characters pass, NaN does not) and writes a process-wide error
 * slot on every call, a data race once two threads parse. So the text is
 * scanned the way Python's scanner walks it (its messages, its positions)
 * and the cJSON tree is built from that scan; the tree is then made a dict.
 */

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

static int isdig(uint8_t c) { return c >= '0' && c <= '9'; }

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
                     : cJSON_CreateNumber(w == 4 ? INFINITY : w == 5 ? -INFINITY : 0);
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
    return seterr(err, errlen, OSP_WIRE_EINVAL, "%s: line %zu column %zu (char %zu)", j->msg,
                  line, chars - line_start + 1, chars);
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

/* Parse like json.loads. *out is the caller's. */
static int parse_py_json(const uint8_t *s, size_t n, cJSON **out, char *err, size_t errlen) {
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

int osp_wire_command_parse(const uint8_t *json, size_t len, cJSON **out, char *err,
                           size_t errlen) {
    int rc = parse_py_json(json, len, out, err, errlen);
    if (rc) return rc;
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return seterr(err, errlen, OSP_WIRE_EINVAL, "command must be a JSON object");
    }
    return 0;
}

/* ---- startup handshake ------------------------------------------------------ */

static int py_falsy(const cJSON *v) {
    if (cJSON_IsNull(v) || cJSON_IsFalse(v)) return 1;
    if (cJSON_IsNumber(v)) return v->valuedouble == 0;
    if (cJSON_IsString(v)) return v->valuestring[0] == '\0';
    if (cJSON_IsArray(v) || cJSON_IsObject(v)) return v->child == NULL;
    return 0;
}

static int py_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* int(s) for base 10: blanks around, a sign, digits with single '_' between. */
static int py_int_str(const char *s, int64_t *out) {
    const char *p = s, *e = s + strlen(s);
    while (p < e && py_space(*p)) p++;
    while (e > p && py_space(e[-1])) e--;
    int neg = 0;
    if (p < e && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (p == e || !isdig((uint8_t)*p)) return -1;
    uint64_t v = 0;
    int sat = 0;
    for (; p < e; p++) {
        if (*p == '_') {
            if (p + 1 >= e || !isdig((uint8_t)p[1])) return -1;
            continue;
        }
        if (!isdig((uint8_t)*p)) return -1;
        if (v > (UINT64_MAX - 9) / 10)
            sat = 1;
        else
            v = v * 10 + (uint64_t)(*p - '0');
    }
    if (sat || v > (uint64_t)INT64_MAX)
        *out = neg ? INT64_MIN : INT64_MAX;
    else
        *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* Python's int(v or dflt) for a JSON value (v NULL = key missing). */
static int py_int(const cJSON *v, int64_t dflt, int64_t *out, const char *key, char *err,
                  size_t errlen) {
    if (!v || py_falsy(v)) {
        *out = dflt;
        return 0;
    }
    if (cJSON_IsTrue(v)) {
        *out = 1;
        return 0;
    }
    if (cJSON_IsNumber(v)) {
        double d = trunc(v->valuedouble);
        if (!isfinite(d))
            return seterr(err, errlen, OSP_WIRE_EINVAL,
                          "%s: cannot convert float infinity to integer", key);
        *out = d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : (int64_t)d;
        return 0;
    }
    if (cJSON_IsString(v)) {
        if (py_int_str(v->valuestring, out) == 0) return 0;
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "%s: invalid literal for int() with base 10: '%.60s'", key, v->valuestring);
    }
    return seterr(err, errlen, OSP_WIRE_EINVAL,
                  "%s: int() argument must be a string, a bytes-like object or a real number, "
                  "not '%s'",
                  key, cJSON_IsArray(v) ? "list" : "dict");
}

static int clamp_int(int64_t v, int64_t lo) {
    if (v < lo) v = lo;
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

int osp_wire_negotiate(const cJSON *declared, int worker_version) {
    int64_t d;
    if (py_int(declared, 1, &d, "", NULL, 0)) d = 1; /* garbage: an old host */
    int64_t v = d < worker_version ? d : worker_version;
    return v < 1 ? 1 : (int)v;
}

int osp_wire_hello_parse(uint8_t msg_type, const uint8_t *json, size_t len, int worker_version,
                         osp_wire_hello_t *h, char *err, size_t errlen) {
    memset(h, 0, sizeof *h);
    if (msg_type != OSP_WIRE_MSG_COMMAND)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "Expected startup config (cmd), got msg_type=%u", msg_type);
    cJSON *root;
    int rc = parse_py_json(json, len, &root, err, errlen);
    if (rc) return rc;
    h->root = root;
    rc = OSP_WIRE_EINVAL;
    if (!cJSON_IsObject(root)) {
        seterr(err, errlen, rc, "startup config must be a JSON object");
        goto fail;
    }

    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "runtime");
    if (v && !cJSON_IsString(v)) {
        seterr(err, errlen, rc, "runtime must be a string");
        goto fail;
    }
    h->runtime = v ? v->valuestring : NULL;

    /* str(device or "") */
    v = cJSON_GetObjectItemCaseSensitive(root, "device");
    h->device = "";
    if (v && !py_falsy(v)) {
        if (cJSON_IsString(v)) {
            h->device = v->valuestring;
        } else if (cJSON_IsTrue(v)) {
            h->device = "True";
        } else if (cJSON_IsNumber(v)) {
            double d = v->valuedouble;
            if (d == trunc(d) && fabs(d) < 1e16)
                snprintf(h->device_buf, sizeof h->device_buf, "%.0f", d);
            else
                snprintf(h->device_buf, sizeof h->device_buf, "%.17g", d);
            h->device = h->device_buf;
        } else {
            seterr(err, errlen, rc, "device must be a string");
            goto fail;
        }
    }

    int64_t n;
    if (py_int(cJSON_GetObjectItemCaseSensitive(root, "concurrency"), 1, &n, "concurrency", err,
               errlen))
        goto fail;
    h->concurrency = clamp_int(n, INT_MIN);

    v = cJSON_GetObjectItemCaseSensitive(root, "batch_mode");
    h->batch_mode = OSP_WIRE_BATCH_NONE;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "list") == 0) h->batch_mode = OSP_WIRE_BATCH_LIST;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "window") == 0)
        h->batch_mode = OSP_WIRE_BATCH_WINDOW;

    if (py_int(cJSON_GetObjectItemCaseSensitive(root, "window_ms"), 0, &n, "window_ms", err,
               errlen))
        goto fail;
    h->window_ms = clamp_int(n, 0);
    if (py_int(cJSON_GetObjectItemCaseSensitive(root, "max_batch_size"), 1, &n, "max_batch_size",
               err, errlen))
        goto fail;
    h->max_batch_size = clamp_int(n, 1);

    v = cJSON_GetObjectItemCaseSensitive(root, "modelLoadTimeoutMs");
    h->model_load_timeout_ms = cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : 120000.0;

    v = cJSON_GetObjectItemCaseSensitive(root, "models");
    if (v && !cJSON_IsArray(v)) {
        /* the seed iterated whatever it got: "" and {} are empty, the rest crashed */
        if (!((cJSON_IsString(v) && !v->valuestring[0]) || (cJSON_IsObject(v) && !v->child))) {
            seterr(err, errlen, rc, "models must be a list");
            goto fail;
        }
        v = NULL;
    }
    h->models = v;

    v = cJSON_GetObjectItemCaseSensitive(root, "protocolVersion");
    if (py_int(v, 1, &h->protocol_declared, "", NULL, 0)) h->protocol_declared = 1;
    h->wire_version = osp_wire_negotiate(v, worker_version);
    return 0;
fail:
    osp_wire_hello_free(h);
    return rc;
}

void osp_wire_hello_free(osp_wire_hello_t *h) {
    cJSON_Delete(h->root);
    memset(h, 0, sizeof *h);
}

/* ---- request payloads ------------------------------------------------------------ */

int osp_wire_sheddable(uint8_t t) {
    return t == OSP_WIRE_MSG_INFER_JPEG || t == OSP_WIRE_MSG_INFER_RAW ||
           t == OSP_WIRE_MSG_INFER_BATCH || t == OSP_WIRE_MSG_INFER_CACHED;
}

int osp_wire_split_deadline(uint8_t msg_type, const uint8_t *p, size_t n, int version,
                            uint64_t *deadline_ms, const uint8_t **rest, size_t *rest_len,
                            char *err, size_t errlen) {
    *deadline_ms = 0;
    *rest = p;
    *rest_len = n;
    if (version < 2 || !osp_wire_sheddable(msg_type)) return 0;
    if (n < OSP_WIRE_DEADLINE_LEN)
        return seterr(err, errlen, OSP_WIRE_EINVAL,
                      "truncated deadline prefix on msg_type=%u (%zu bytes, need %d)", msg_type, n,
                      OSP_WIRE_DEADLINE_LEN);
    *deadline_ms = osp_wire_rd64(p);
    *rest = p + OSP_WIRE_DEADLINE_LEN;
    *rest_len = n - OSP_WIRE_DEADLINE_LEN;
    return 0;
}

int osp_wire_image_check(const uint8_t *p, size_t n, uint32_t w, uint32_t h, uint8_t fmt,
                         osp_wire_image_t *img, char *err, size_t errlen) {
    memset(img, 0, sizeof *img);
    if (fmt > OSP_WIRE_FMT_I420)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "unknown pixel format %u", fmt);
    /* the seed's imaging library took sides as C ints */
    if (w > INT32_MAX || h > INT32_MAX)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "signed integer is greater than maximum");
    if (w == 0 || h == 0)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "width and height must be > 0");
    unsigned ch = fmt == OSP_WIRE_FMT_RGB || fmt == OSP_WIRE_FMT_BGR ? 3 : 1;
    uint64_t need = (uint64_t)w * h * ch; /* < 2^62 * 3: no overflow */
    if (fmt == OSP_WIRE_FMT_NV12 || fmt == OSP_WIRE_FMT_I420) /* 4:2:0: luma + 2 quarter planes */
        need += 2 * (((uint64_t)w + 1) / 2) * (((uint64_t)h + 1) / 2);
    if (need > n)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "%s",
                      ch == 1 ? "buffer is not large enough" : "not enough image data");
    img->width = w;
    img->height = h;
    img->fmt = fmt;
    img->channels = (uint8_t)ch;
    img->pixels = p;
    img->len = (size_t)need;
    return 0;
}

void osp_wire_batch_iter_init(osp_wire_batch_iter_t *it, const osp_wire_batch_t *b) {
    it->p = b->items;
    it->n = b->items_len;
    it->off = 0;
    it->index = 0;
    it->count = b->count;
}

int osp_wire_batch_next(osp_wire_batch_iter_t *it, osp_wire_image_t *img, char *err,
                        size_t errlen) {
    memset(img, 0, sizeof *img);
    if (it->index >= it->count) return 0;
    /* nothing advances on an error: asking again gives the same answer */
    if (it->n - it->off < 13)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated batch item header");
    const uint8_t *q = it->p + it->off;
    uint32_t size = osp_wire_rd32(q + 9);
    if (size > it->n - it->off - 13)
        return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated batch item payload");
    char why[64];
    if (osp_wire_image_check(q + 13, size, osp_wire_rd32(q), osp_wire_rd32(q + 4), q[8], img, why,
                             sizeof why))
        return seterr(err, errlen, OSP_WIRE_EINVAL, "raw wrap failed: %s", why);
    it->off += 13 + (size_t)size;
    it->index++;
    return 1;
}

int osp_wire_request_parse(const osp_wire_frame_t *f, int version, osp_wire_request_t *rq,
                           char *err, size_t errlen) {
    memset(rq, 0, sizeof *rq);
    rq->req_id = f->req_id;
    rq->msg_type = f->msg_type;
    rq->err_shape = OSP_WIRE_ERR_PLAIN;
    const uint8_t *p;
    size_t n;
    int rc = osp_wire_split_deadline(f->msg_type, f->payload, f->payload_len, version,
                                     &rq->deadline_ms, &p, &n, err, errlen);
    if (rc) return rc;
    rq->body = p;
    rq->body_len = n;
    char why[64];
    switch (f->msg_type) {
    case OSP_WIRE_MSG_COMMAND:
        rq->u.command.json = p;
        rq->u.command.len = n;
        return 0;
    case OSP_WIRE_MSG_INFER_JPEG:
        if (n < 1) return seterr(err, errlen, OSP_WIRE_EINVAL, "empty infer_jpeg payload");
        rq->u.jpeg.model_idx = p[0];
        rq->u.jpeg.data = p + 1;
        rq->u.jpeg.len = n - 1;
        return 0;
    case OSP_WIRE_MSG_INFER_RAW:
        if (n < 10) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_raw header");
        rq->u.raw.model_idx = p[0];
        if (osp_wire_image_check(p + 10, n - 10, osp_wire_rd32(p + 1), osp_wire_rd32(p + 5), p[9],
                                 &rq->u.raw.img, why, sizeof why))
            return seterr(err, errlen, OSP_WIRE_EINVAL, "raw wrap failed: %s", why);
        return 0;
    case OSP_WIRE_MSG_INFER_BATCH: {
        if (n < 6) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_batch header");
        osp_wire_batch_t *b = &rq->u.batch;
        b->model_idx = p[0];
        b->count = p[1];
        b->frame_id = osp_wire_rd32(p + 2);
        b->items = p + 6;
        b->items_len = n - 6;
        osp_wire_batch_iter_t it;
        osp_wire_image_t img;
        osp_wire_batch_iter_init(&it, b);
        while ((rc = osp_wire_batch_next(&it, &img, err, errlen)) > 0) {
        }
        if (rc < 0) rq->err_shape = OSP_WIRE_ERR_RESULTS;
        return rc;
    }
    case OSP_WIRE_MSG_CACHE_FRAME:
        if (n < 13) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated cache_frame header");
        rq->u.cache.frame_id = osp_wire_rd32(p);
        if (osp_wire_image_check(p + 13, n - 13, osp_wire_rd32(p + 4), osp_wire_rd32(p + 8), p[12],
                                 &rq->u.cache.img, why, sizeof why))
            return seterr(err, errlen, OSP_WIRE_EINVAL, "cache_frame wrap failed: %s", why);
        return 0;
    case OSP_WIRE_MSG_INFER_CACHED:
        if (n < 5) return seterr(err, errlen, OSP_WIRE_EINVAL, "truncated infer_cached header");
        rq->u.cached.model_idx = p[0];
        rq->u.cached.frame_id = osp_wire_rd32(p + 1);
        return 0;
    default:
        return seterr(err, errlen, OSP_WIRE_EINVAL, "unknown msg_type: %u", f->msg_type);
    }
}

/* ---- replies --------------------------------------------------------------------- */

size_t osp_wire_reply_begin(osp_jw_t *w) {
    static const char hdr[8];
    size_t at = w->len;
    w->need_comma = 0;
    osp_jw_raw(w, hdr, sizeof hdr);
    w->need_comma = 0; /* the JSON that follows is the frame's first value */
    return at;
}

int osp_wire_reply_header(uint8_t out[8], uint32_t req_id, size_t json_len) {
    if (json_len > UINT32_MAX - 4) return OSP_WIRE_ETOOBIG;
    wr32(out, (uint32_t)json_len + 4);
    wr32(out + 4, req_id);
    return 0;
}

int osp_wire_reply_end(osp_jw_t *w, size_t at, uint32_t req_id) {
    w->need_comma = 0;
    if (w->oom) return OSP_WIRE_ENOMEM;
    if (at > w->len || w->len - at < 8) return OSP_WIRE_ENOMEM;
    int rc = osp_wire_reply_header((uint8_t *)w->buf + at, req_id, w->len - at - 8);
    if (rc) w->len = at; /* drop the oversized frame; earlier ones stay */
    return rc;
}

void osp_wire_json_error(osp_jw_t *w, const char *msg) {
    osp_wire_json_error_shaped(w, OSP_WIRE_ERR_PLAIN, msg);
}

void osp_wire_json_error_shaped(osp_jw_t *w, osp_wire_err_shape_t shape, const char *msg) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    if (shape == OSP_WIRE_ERR_RESULTS) {
        osp_jw_key(w, "results");
        osp_jw_arr_open(w);
        osp_jw_arr_close(w);
    }
    osp_jw_obj_close(w);
}

/* "kind", "detections": [], "inferenceMs": 0: the head of every empty record */
static void empty_detections(osp_jw_t *w) {
    osp_jw_key(w, "kind");
    osp_jw_str(w, "detections");
    osp_jw_key(w, "detections");
    osp_jw_arr_open(w);
    osp_jw_arr_close(w);
    osp_jw_key(w, "inferenceMs");
    osp_jw_int(w, 0);
}

void osp_wire_json_infer_error(osp_jw_t *w, const char *msg) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    empty_detections(w);
    osp_jw_obj_close(w);
}

void osp_wire_json_cmd_error(osp_jw_t *w, const char *cmd, const char *msg) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "cmd");
    osp_jw_str(w, cmd);
    osp_jw_key(w, "status");
    osp_jw_str(w, "error");
    osp_jw_key(w, "error");
    osp_jw_str(w, msg);
    osp_jw_obj_close(w);
}

void osp_wire_json_dropped(osp_jw_t *w, osp_wire_shed_t why) {
    osp_jw_obj_open(w);
    empty_detections(w);
    osp_jw_key(w, "dropped");
    osp_jw_bool(w, 1);
    if (why != OSP_WIRE_SHED_BARE) {
        osp_jw_key(w, "shedReason");
        osp_jw_str(w, why == OSP_WIRE_SHED_QUEUE_FULL ? "queue-full" : "deadline-expired");
    }
    osp_jw_obj_close(w);
}

void osp_wire_json_dropped_batch(osp_jw_t *w, osp_wire_shed_t why, unsigned count) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "results");
    osp_jw_arr_open(w);
    for (unsigned i = 0; i < count; i++) osp_wire_json_dropped(w, why);
    osp_jw_arr_close(w);
    osp_jw_obj_close(w);
}

void osp_wire_json_not_loaded(osp_jw_t *w, uint8_t msg_type, unsigned model_idx) {
    char msg[48];
    /* the seed's infer_cached check is its own, in lower case */
    snprintf(msg, sizeof msg, "%s %u not loaded",
             msg_type == OSP_WIRE_MSG_INFER_CACHED ? "model" : "Model", model_idx);
    if (msg_type == OSP_WIRE_MSG_INFER_CACHED)
        osp_wire_json_error(w, msg);
    else if (msg_type == OSP_WIRE_MSG_INFER_BATCH)
        osp_wire_json_error_shaped(w, OSP_WIRE_ERR_RESULTS, msg);
    else
        osp_wire_json_infer_error(w, msg);
}

void osp_wire_json_not_cached(osp_jw_t *w, uint32_t frame_id) {
    char msg[48];
    snprintf(msg, sizeof msg, "frame %u not in cache", frame_id);
    osp_wire_json_error(w, msg);
}

void osp_wire_json_too_large(osp_jw_t *w, uint32_t total_len, uint32_t max_frame) {
    char msg[80];
    snprintf(msg, sizeof msg, "frame too large: %u bytes (max %u)", total_len,
             frame_cap(max_frame));
    osp_wire_json_error(w, msg);
}

void osp_wire_json_cached(osp_jw_t *w, uint32_t frame_id, uint32_t width, uint32_t height) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "status");
    osp_jw_str(w, "cached");
    osp_jw_key(w, "frameId");
    osp_jw_uint(w, frame_id);
    osp_jw_key(w, "width");
    osp_jw_uint(w, width);
    osp_jw_key(w, "height");
    osp_jw_uint(w, height);
    osp_jw_obj_close(w);
}

void osp_wire_json_ready(osp_jw_t *w, const osp_wire_ready_t *r) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "status");
    osp_jw_str(w, "ready");
    osp_jw_key(w, "models");
    osp_jw_int(w, r->models);
    osp_jw_key(w, "total");
    osp_jw_int(w, r->total);
    osp_jw_key(w, "startupMs");
    osp_jw_int(w, r->startup_ms);
    osp_jw_key(w, "runtime");
    osp_jw_str(w, r->runtime);
    osp_jw_key(w, "workers");
    osp_jw_int(w, r->workers);
    osp_jw_key(w, "protocolVersion");
    osp_jw_int(w, r->protocol_version);
    osp_jw_obj_close(w);
}

void osp_wire_json_late(osp_jw_t *w, const osp_wire_late_t *e) {
    osp_jw_obj_open(w);
    osp_jw_key(w, "event");
    osp_jw_str(w, "compile-finished-late");
    osp_jw_key(w, "index");
    osp_jw_int(w, e->index);
    osp_jw_key(w, "modelId");
    osp_jw_str(w, e->model_id);
    osp_jw_key(w, "ok");
    osp_jw_bool(w, e->ok);
    osp_jw_key(w, "elapsedMs");
    osp_jw_int(w, e->elapsed_ms);
    if (e->error) {
        osp_jw_key(w, "error");
        osp_jw_str(w, e->error);
    }
    osp_jw_obj_close(w);
}

int osp_wire_reply_error(osp_jw_t *w, uint32_t req_id, osp_wire_err_shape_t shape,
                         const char *msg) {
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_error_shaped(w, shape, msg);
    return osp_wire_reply_end(w, at, req_id);
}

int osp_wire_reply_dropped(osp_jw_t *w, uint32_t req_id, osp_wire_shed_t why) {
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_dropped(w, why);
    return osp_wire_reply_end(w, at, req_id);
}

int osp_wire_reply_event_late(osp_jw_t *w, const osp_wire_late_t *e) {
    size_t at = osp_wire_reply_begin(w);
    osp_wire_json_late(w, e);
    return osp_wire_reply_end(w, at, OSP_WIRE_EVENT_REQ_ID);
}
