/* Source kinds and credential masking (url.h). */
#include "video/url.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const stream_schemes[] = {"http", "https", "rtmp", "rtmps",
                                             "srt",  "udp",   "tcp"};

/* Length of the scheme when input starts with "scheme://", else 0. */
static size_t scheme_len(const char *s) {
    size_t i = 0;
    if (!isalpha((unsigned char)s[0])) return 0;
    while (isalnum((unsigned char)s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.') i++;
    return strncmp(s + i, "://", 3) == 0 ? i : 0;
}

osp_url_kind_t osp_url_kind(const char *input) {
    if (strcmp(input, "-") == 0) return OSP_URL_STDIN;
    size_t n = scheme_len(input);
    if (!n) return strncmp(input, "/dev/video", 10) == 0 ? OSP_URL_DEVICE : OSP_URL_FILE;
    if ((n == 4 && strncasecmp(input, "rtsp", 4) == 0) ||
        (n == 5 && strncasecmp(input, "rtsps", 5) == 0))
        return OSP_URL_RTSP;
    for (size_t i = 0; i < sizeof stream_schemes / sizeof *stream_schemes; i++)
        if (strlen(stream_schemes[i]) == n && strncasecmp(input, stream_schemes[i], n) == 0)
            return OSP_URL_NETWORK;
    return OSP_URL_UNKNOWN;
}

int osp_url_is_stream(osp_url_kind_t k) {
    return k == OSP_URL_DEVICE || k == OSP_URL_RTSP || k == OSP_URL_NETWORK;
}

static int secret_name(const char *name, size_t len) {
    static const char *const names[] = {"password",  "pass",   "pwd",     "passwd",
                                        "token",     "key",    "secret",  "auth",
                                        "signature", "apikey", "api_key", "access_token"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strlen(names[i]) == len && strncasecmp(name, names[i], len) == 0) return 1;
    return 0;
}

/* Appends to out without overflowing; the text is cut at n - 1 bytes. */
typedef struct {
    char *out;
    size_t n, len;
} buf_t;

static void put(buf_t *b, const char *s, size_t len) {
    for (size_t i = 0; i < len && b->len + 1 < b->n; i++) b->out[b->len++] = s[i];
    b->out[b->len] = '\0';
}

char *osp_url_mask(const char *input, char *out, size_t n) {
    if (!n) return out;
    buf_t b = {out, n, 0};
    out[0] = '\0';
    size_t sl = scheme_len(input);
    if (!sl) {
        put(&b, input, strlen(input));
        return out;
    }
    const char *auth = input + sl + 3;
    size_t alen = strcspn(auth, "/?#");
    put(&b, input, sl + 3);
    /* the last '@' of the authority ends the userinfo (a password may hold '@') */
    const char *at = NULL;
    for (const char *p = auth; p < auth + alen; p++)
        if (*p == '@') at = p;
    if (at) {
        put(&b, "***", 3);
        put(&b, at, (size_t)(auth + alen - at));
    } else {
        put(&b, auth, alen);
    }
    const char *rest = auth + alen;
    const char *q = strchr(rest, '?');
    if (!q) {
        put(&b, rest, strlen(rest));
        return out;
    }
    put(&b, rest, (size_t)(q + 1 - rest));
    const char *p = q + 1;
    while (*p && *p != '#') {
        size_t plen = strcspn(p, "&#");
        const char *eq = memchr(p, '=', plen);
        if (eq && secret_name(p, (size_t)(eq - p))) {
            put(&b, p, (size_t)(eq + 1 - p));
            put(&b, "***", 3);
        } else {
            put(&b, p, plen);
        }
        p += plen;
        if (*p == '&') put(&b, p++, 1);
    }
    put(&b, p, strlen(p));
    return out;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decode s[0..len) into out[n]; -1 when it does not fit or a %XX is bad. */
static int decode(const char *s, size_t len, char *out, size_t n) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < len ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0) return -1;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (o + 1 >= n) return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

int osp_url_split(const char *input, osp_url_parts_t *p) {
    memset(p, 0, sizeof(*p));
    size_t sl = input ? scheme_len(input) : 0;
    if (!sl || sl >= sizeof p->scheme) return -1;
    for (size_t i = 0; i < sl; i++) p->scheme[i] = (char)tolower((unsigned char)input[i]);
    const char *auth = input + sl + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *q = auth; q < auth + alen; q++)
        if (*q == '@') at = q;
    const char *hp = auth;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        size_t ulen = colon ? (size_t)(colon - auth) : (size_t)(at - auth);
        if (decode(auth, ulen, p->user, sizeof p->user)) goto bad;
        p->has_user = 1;
        if (colon) {
            if (decode(colon + 1, (size_t)(at - colon - 1), p->password, sizeof p->password))
                goto bad;
            p->has_password = 1;
        }
        hp = at + 1;
    }
    size_t hlen = (size_t)(auth + alen - hp);
    const char *port = NULL;
    if (hlen && hp[0] == '[') {
        const char *close = memchr(hp, ']', hlen);
        if (!close || close == hp + 1 || (size_t)(close - hp - 1) >= sizeof p->host) goto bad;
        memcpy(p->host, hp + 1, (size_t)(close - hp - 1));
        if (close + 1 < hp + hlen) {
            if (close[1] != ':') goto bad;
            port = close + 2;
        }
    } else {
        const char *colon = memchr(hp, ':', hlen);
        size_t n = colon ? (size_t)(colon - hp) : hlen;
        if (!n || n >= sizeof p->host) goto bad;
        memcpy(p->host, hp, n);
        if (colon) port = colon + 1;
    }
    if (port) {
        long v = 0;
        const char *e = auth + alen;
        if (port == e) goto bad;
        for (const char *q = port; q < e; q++) {
            if (*q < '0' || *q > '9' || (v = v * 10 + (*q - '0')) > 65535) goto bad;
        }
        if (v < 1) goto bad;
        p->port = (int)v;
    }
    const char *rest = auth + alen;
    if (*rest == '/') rest++;
    if (strlen(rest) >= sizeof p->path) goto bad;
    snprintf(p->path, sizeof p->path, "%s", rest);
    return 0;
bad:
    osp_url_forget(p);
    memset(p, 0, sizeof(*p));
    return -1;
}

void osp_url_forget(osp_url_parts_t *p) {
    volatile char *u = p->user, *w = p->password;
    for (size_t i = 0; i < sizeof p->user; i++) u[i] = 0;
    for (size_t i = 0; i < sizeof p->password; i++) w[i] = 0;
}
