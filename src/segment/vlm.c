/* vlm: see vlm.h. */
#define _POSIX_C_SOURCE 200809L
#include "segment/vlm.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <turbojpeg.h>

#define POLL_MS 50

size_t osp_base64(const unsigned char *in, size_t n, char *out) {
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];
        out[o++] = T[v >> 18];
        out[o++] = T[(v >> 12) & 63];
        out[o++] = T[(v >> 6) & 63];
        out[o++] = T[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0u);
        out[o++] = T[v >> 18];
        out[o++] = T[(v >> 12) & 63];
        out[o++] = i + 1 < n ? T[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = 0;
    return o;
}

void osp_vlm_body_init(osp_vlm_body_t *b) { memset(b, 0, sizeof(*b)); }

void osp_vlm_body_free(osp_vlm_body_t *b) {
    free(b->frames_json);
    if (b->tj) tjDestroy(b->tj);
    if (b->jpeg) tjFree(b->jpeg);
    memset(b, 0, sizeof(*b));
}

static int reserve(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    char *p = realloc(*buf, c);
    if (!p) return -1;
    *buf = p;
    *cap = c;
    return 0;
}

int osp_vlm_body_add_frame(osp_vlm_body_t *b, const osp_view_t *v, int quality) {
    if (!v || v->fmt != OSP_PIX_RGB) return OSP_VLM_EINVAL;
    if (!b->tj && !(b->tj = tjInitCompress())) return OSP_VLM_ENOMEM;
    unsigned long jlen = b->jpeg_cap;
    /* tjCompress2 reallocates b->jpeg when it is too small (no TJFLAG_NOREALLOC). */
    if (tjCompress2(b->tj, v->data, v->width, v->stride, v->height, TJPF_RGB, &b->jpeg, &jlen,
                    TJSAMP_420, quality, 0) != 0)
        return OSP_VLM_EINVAL;
    if (jlen > b->jpeg_cap) b->jpeg_cap = jlen;
    static const char pre[] = ",{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/jpeg;base64,";
    static const char post[] = "\"}}";
    size_t b64 = 4 * ((jlen + 2) / 3);
    if (reserve(&b->frames_json, &b->cap, b->len + sizeof pre + b64 + sizeof post + 1))
        return OSP_VLM_ENOMEM;
    memcpy(b->frames_json + b->len, pre, sizeof pre - 1);
    b->len += sizeof pre - 1;
    b->len += osp_base64(b->jpeg, jlen, b->frames_json + b->len);
    memcpy(b->frames_json + b->len, post, sizeof post);
    b->len += sizeof post - 1;
    b->n_frames++;
    return 0;
}

char *osp_vlm_body_finish(const osp_vlm_body_t *b, const osp_vlm_cfg_t *cfg, const char *prompt) {
    /* The head is built with cJSON (escaping the prompts); the frames, large
     * and already valid JSON, are spliced in without a second copy through cJSON. */
    cJSON *text = cJSON_CreateObject();
    if (!text) return NULL;
    cJSON_AddStringToObject(text, "type", "text");
    cJSON_AddStringToObject(text, "text", prompt ? prompt : "");
    char *text_s = cJSON_PrintUnformatted(text);
    cJSON_Delete(text);
    cJSON *sys = NULL;
    char *sys_s = NULL, *model_s = NULL;
    cJSON *model = cJSON_CreateString(cfg->model ? cfg->model : "");
    if (model) model_s = cJSON_PrintUnformatted(model);
    cJSON_Delete(model);
    if (cfg->system_prompt && cfg->system_prompt[0]) {
        sys = cJSON_CreateString(cfg->system_prompt);
        if (sys) sys_s = cJSON_PrintUnformatted(sys);
        cJSON_Delete(sys);
    }
    char *out = NULL;
    if (!text_s || !model_s || (cfg->system_prompt && cfg->system_prompt[0] && !sys_s)) goto done;
    size_t n = strlen(text_s) + strlen(model_s) + (sys_s ? strlen(sys_s) : 0) + b->len + 256;
    out = malloc(n);
    if (!out) goto done;
    int k = snprintf(out, n,
                     "{\"model\":%s,\"stream\":false,\"max_tokens\":%d,\"temperature\":%g,"
                     "\"messages\":[",
                     model_s, cfg->max_tokens, cfg->temperature);
    if (sys_s)
        k += snprintf(out + k, n - (size_t)k, "{\"role\":\"system\",\"content\":%s},", sys_s);
    k += snprintf(out + k, n - (size_t)k, "{\"role\":\"user\",\"content\":[%s", text_s);
    if (b->len) memcpy(out + k, b->frames_json, b->len);
    k += (int)b->len;
    snprintf(out + k, n - (size_t)k, "]}]}");
done:
    free(text_s);
    free(model_s);
    free(sys_s);
    return out;
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct {
    char host[256];
    char port[8];
    char path[512];
} url_t;

static int parse_url(const char *url, url_t *u) {
    if (!url || strncmp(url, "http://", 7) != 0) return -1;
    const char *h = url + 7;
    const char *slash = strchr(h, '/');
    size_t hl = slash ? (size_t)(slash - h) : strlen(h);
    if (hl == 0 || hl >= sizeof u->host) return -1;
    memcpy(u->host, h, hl);
    u->host[hl] = 0;
    snprintf(u->port, sizeof u->port, "80");
    char *colon = strrchr(u->host, ':');
    if (colon) {
        if (strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof u->port) return -1;
        snprintf(u->port, sizeof u->port, "%s", colon + 1);
        *colon = 0;
    }
    const char *path = slash ? slash : "/";
    if (strcmp(path, "/") == 0) path = "/v1/chat/completions";
    size_t pl = strlen(path);
    if (pl >= 3 && strcmp(path + pl - 3, "/v1") == 0) {
        if (snprintf(u->path, sizeof u->path, "%s/chat/completions", path) >= (int)sizeof u->path)
            return -1;
    } else if (snprintf(u->path, sizeof u->path, "%s", path) >= (int)sizeof u->path) {
        return -1;
    }
    return 0;
}

/* Wait for fd to become ready for events; polls the stop flag. */
static int wait_fd(int fd, short events, const atomic_bool *stop, double deadline) {
    for (;;) {
        if (stop && atomic_load(stop)) return OSP_VLM_ESTOPPED;
        if (mono() > deadline) return OSP_VLM_ENET;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, POLL_MS);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return OSP_VLM_ENET;
    }
}

static int connect_to(const url_t *u, const atomic_bool *stop, double deadline, int *out,
                      char *err, size_t errlen) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int g = getaddrinfo(u->host, u->port, &hints, &ai);
    if (g != 0) {
        snprintf(err, errlen, "cannot resolve %s: %s", u->host, gai_strerror(g));
        return OSP_VLM_ENET;
    }
    int rc = OSP_VLM_ENET;
    for (struct addrinfo *a = ai; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
            rc = wait_fd(fd, POLLOUT, stop, deadline);
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) {
                *out = fd;
                freeaddrinfo(ai);
                return 0;
            }
            if (rc == 0) rc = OSP_VLM_ENET;
        }
        close(fd);
        if (rc == OSP_VLM_ESTOPPED) break;
    }
    freeaddrinfo(ai);
    if (rc != OSP_VLM_ESTOPPED) snprintf(err, errlen, "cannot connect to %s:%s", u->host, u->port);
    return rc;
}

/* Decode a chunked body in place; returns its length or -1. */
static long dechunk(char *b, size_t n) {
    size_t r = 0, w = 0;
    for (;;) {
        char *end;
        if (r >= n) return -1;
        unsigned long sz = strtoul(b + r, &end, 16);
        char *nl = memchr(b + r, '\n', n - r);
        if (!nl || end == b + r) return -1;
        r = (size_t)(nl - b) + 1;
        if (sz == 0) return (long)w;
        if (sz > n - r) return -1;
        memmove(b + w, b + r, sz);
        w += sz;
        r += sz;
        if (r < n && b[r] == '\r') r++;
        if (r < n && b[r] == '\n') r++;
    }
}

int osp_vlm_post(const osp_vlm_cfg_t *cfg, const char *body, const atomic_bool *stop,
                 char **content, char *err, size_t errlen) {
    *content = NULL;
    if (errlen) err[0] = 0;
    url_t u;
    if (parse_url(cfg->url, &u)) {
        snprintf(err, errlen, "bad VLM URL '%s' (want http://host:port[/path])",
                 cfg->url ? cfg->url : "");
        return OSP_VLM_EINVAL;
    }
    double deadline = mono() + (cfg->timeout_s > 0 ? cfg->timeout_s : 300.0);
    int fd = -1;
    int rc = connect_to(&u, stop, deadline, &fd, err, errlen);
    if (rc) return rc;
    char *resp = NULL;
    size_t rlen = 0, rcap = 0;
    size_t blen = strlen(body);
    char head[1024];
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
                      "Accept: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                      u.path, u.host, u.port, blen);
    const char *parts[2] = {head, body};
    size_t lens[2] = {(size_t)hl, blen};
    for (int i = 0; i < 2; i++) {
        size_t off = 0;
        while (off < lens[i]) {
            ssize_t w = send(fd, parts[i] + off, lens[i] - off, MSG_NOSIGNAL);
            if (w > 0) {
                off += (size_t)w;
                continue;
            }
            if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                if ((rc = wait_fd(fd, POLLOUT, stop, deadline))) goto fail;
                continue;
            }
            rc = OSP_VLM_ENET;
            snprintf(err, errlen, "send to the VLM failed: %s", strerror(errno));
            goto fail;
        }
    }
    for (;;) {
        if (reserve(&resp, &rcap, rlen + 65536)) {
            rc = OSP_VLM_ENOMEM;
            goto fail;
        }
        ssize_t r = recv(fd, resp + rlen, rcap - rlen - 1, 0);
        if (r > 0) {
            rlen += (size_t)r;
            continue;
        }
        if (r == 0) break;
        /* A server that replied and closed before reading all we sent
         * resets the connection: the reply is still whole. */
        if (errno == ECONNRESET && rlen > 0) break;
        if (errno == EAGAIN || errno == EINTR) {
            if ((rc = wait_fd(fd, POLLIN, stop, deadline))) goto fail;
            continue;
        }
        rc = OSP_VLM_ENET;
        snprintf(err, errlen, "receive from the VLM failed: %s", strerror(errno));
        goto fail;
    }
    close(fd);
    fd = -1;
    resp[rlen] = 0;
    int status = 0;
    if (sscanf(resp, "HTTP/%*d.%*d %d", &status) != 1) {
        rc = OSP_VLM_EHTTP;
        snprintf(err, errlen, "the VLM's reply is not HTTP");
        goto fail;
    }
    char *sep = strstr(resp, "\r\n\r\n");
    if (!sep) {
        rc = OSP_VLM_EHTTP;
        snprintf(err, errlen, "the VLM's reply has no body");
        goto fail;
    }
    *sep = 0;
    char *bodyp = sep + 4;
    size_t bodylen = rlen - (size_t)(bodyp - resp);
    for (char *h = strchr(resp, '\n'); h; h = strchr(h + 1, '\n')) {
        if (strncasecmp(h + 1, "transfer-encoding:", 18) == 0 && strstr(h + 1, "chunked")) {
            long d = dechunk(bodyp, bodylen);
            if (d < 0) {
                rc = OSP_VLM_EHTTP;
                snprintf(err, errlen, "the VLM's chunked reply is malformed");
                goto fail;
            }
            bodylen = (size_t)d;
            bodyp[bodylen] = 0;
            break;
        }
    }
    if (status < 200 || status > 299) {
        rc = OSP_VLM_EHTTP;
        snprintf(err, errlen, "the VLM answered HTTP %d: %.200s", status, bodyp);
        goto fail;
    }
    cJSON *j = cJSON_ParseWithLength(bodyp, bodylen);
    cJSON *choices = j ? cJSON_GetObjectItemCaseSensitive(j, "choices") : NULL;
    cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    cJSON *msg = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
    cJSON *txt = msg ? cJSON_GetObjectItemCaseSensitive(msg, "content") : NULL;
    if (cJSON_IsString(txt)) *content = strdup(txt->valuestring);
    cJSON_Delete(j);
    if (!*content) {
        rc = OSP_VLM_EHTTP;
        snprintf(err, errlen, "the VLM's reply has no choices[0].message.content");
        goto fail;
    }
    free(resp);
    return 0;
fail:
    if (rc == OSP_VLM_ESTOPPED)
        snprintf(err, errlen, "stopped");
    else if (rc == OSP_VLM_ENET && !err[0])
        snprintf(err, errlen, "the VLM timed out");
    if (fd >= 0) close(fd);
    free(resp);
    return rc;
}
