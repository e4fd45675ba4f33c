/* vlm: see vlm.h. */
#define _POSIX_C_SOURCE 200809L
#include "segment/vlm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
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

/* ---- the exchange, through libcurl ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* A reply larger than this is not a chat completion. */
#define REPLY_MAX (64u << 20)

typedef struct {
    char *buf;
    size_t len, cap;
} reply_t;

static size_t on_data(char *p, size_t size, size_t n, void *ctx) {
    reply_t *r = ctx;
    size_t add = size * n;
    if (add > REPLY_MAX - r->len || reserve(&r->buf, &r->cap, r->len + add + 1)) return 0;
    memcpy(r->buf + r->len, p, add);
    r->len += add;
    r->buf[r->len] = 0;
    return add;
}

/* The endpoint: "/" or no path is /v1/chat/completions; a path ending in
 * /v1 gets /chat/completions. -1 unless http:// or https://. */
static int endpoint(const char *url, char *out, size_t n) {
    size_t sl;
    if (!url) return -1;
    if (strncasecmp(url, "http://", 7) == 0)
        sl = 7;
    else if (strncasecmp(url, "https://", 8) == 0)
        sl = 8;
    else
        return -1;
    const char *path = url + sl + strcspn(url + sl, "/?#");
    if (path == url + sl) return -1;
    const char *add = "";
    if (!*path || strcmp(path, "/") == 0)
        add = "/v1/chat/completions";
    else if (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/v1") == 0)
        add = "/chat/completions";
    size_t keep = strcmp(path, "/") == 0 ? (size_t)(path - url) : strlen(url);
    if (keep + strlen(add) >= n) return -1;
    memcpy(out, url, keep);
    snprintf(out + keep, n - keep, "%s", add);
    return 0;
}

/* Run the transfer, checking the stop flag every POLL_MS. */
static int perform(CURL *h, const atomic_bool *stop, CURLcode *res) {
    CURLM *m = curl_multi_init();
    if (!m) return OSP_VLM_ENOMEM;
    if (curl_multi_add_handle(m, h) != CURLM_OK) {
        curl_multi_cleanup(m);
        return OSP_VLM_ENOMEM;
    }
    int rc = 0, running = 1;
    *res = CURLE_OK;
    while (running) {
        if (stop && atomic_load(stop)) {
            rc = OSP_VLM_ESTOPPED;
            break;
        }
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            rc = OSP_VLM_ENET;
            break;
        }
        if (running) curl_multi_poll(m, NULL, 0, POLL_MS, NULL);
    }
    int left;
    for (CURLMsg *msg; !rc && (msg = curl_multi_info_read(m, &left));)
        if (msg->msg == CURLMSG_DONE) *res = msg->data.result;
    /* Removing the handle closes a connection still open: the server sees
     * the client leave. */
    curl_multi_remove_handle(m, h);
    curl_multi_cleanup(m);
    return rc;
}

static int parse_reply(const reply_t *r, char **content, char *err, size_t errlen) {
    cJSON *j = r->buf ? cJSON_ParseWithLength(r->buf, r->len) : NULL;
    cJSON *choices = j ? cJSON_GetObjectItemCaseSensitive(j, "choices") : NULL;
    cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    cJSON *msg = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
    cJSON *txt = msg ? cJSON_GetObjectItemCaseSensitive(msg, "content") : NULL;
    if (cJSON_IsString(txt)) *content = strdup(txt->valuestring);
    cJSON_Delete(j);
    if (*content) return 0;
    snprintf(err, errlen, "the VLM's reply has no choices[0].message.content");
    return OSP_VLM_EHTTP;
}

int osp_vlm_post(const osp_vlm_cfg_t *cfg, const char *body, const atomic_bool *stop,
                 char **content, char *err, size_t errlen) {
    *content = NULL;
    if (errlen) err[0] = 0;
    char url[2048];
    if (endpoint(cfg->url, url, sizeof url)) {
        snprintf(err, errlen, "bad VLM URL (want http(s)://host[:port][/path])");
        return OSP_VLM_EINVAL;
    }
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK) {
        snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(curl_init_rc));
        return OSP_VLM_ENOMEM;
    }
    int rc = OSP_VLM_ENOMEM;
    reply_t r = {0};
    struct curl_slist *hdr = NULL;
    char auth[1100] = "";
    char ebuf[CURL_ERROR_SIZE] = "";
    CURL *h = curl_easy_init();
    if (!h) goto out;
    if (cfg->api_key && cfg->api_key[0]) {
        if (snprintf(auth, sizeof auth, "Authorization: Bearer %s", cfg->api_key) >= (int)sizeof auth) {
            rc = OSP_VLM_EINVAL;
            snprintf(err, errlen, "the VLM API key is too long");
            goto out;
        }
    }
    /* "Expect:" keeps libcurl from waiting for a 100 Continue on big bodies. */
    const char *lines[] = {"Content-Type: application/json", "Accept: application/json",
                           "Expect:", auth};
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++) {
        if (!lines[i][0]) continue;
        struct curl_slist *t = curl_slist_append(hdr, lines[i]);
        if (!t) goto out;
        hdr = t;
    }
    double timeout = cfg->timeout_s > 0 ? cfg->timeout_s : 300.0;
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    /* A 301/302/303 would otherwise turn the POST into a GET without its body. */
    curl_easy_setopt(h, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout * 1000));
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, ebuf);
    if (cfg->ca_file) curl_easy_setopt(h, CURLOPT_CAINFO, cfg->ca_file);
    CURLcode res;
    if ((rc = perform(h, stop, &res))) goto out;
    if (res != CURLE_OK) {
        rc = OSP_VLM_ENET;
        if (res == CURLE_OPERATION_TIMEDOUT)
            snprintf(err, errlen, "the VLM timed out after %g s", timeout);
        else
            snprintf(err, errlen, "the VLM request failed: %s",
                     ebuf[0] ? ebuf : curl_easy_strerror(res));
        goto out;
    }
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (status < 200 || status > 299) {
        rc = OSP_VLM_EHTTP;
        snprintf(err, errlen, "the VLM answered HTTP %ld: %.200s", status, r.buf ? r.buf : "");
        goto out;
    }
    rc = parse_reply(&r, content, err, errlen);
out:
    if (rc == OSP_VLM_ENOMEM && !err[0]) snprintf(err, errlen, "out of memory");
    if (rc == OSP_VLM_ESTOPPED) snprintf(err, errlen, "stopped");
    if (h) curl_easy_cleanup(h);
    curl_slist_free_all(hdr);
    volatile char *a = auth;
    for (size_t i = 0; i < sizeof auth; i++) a[i] = 0;
    free(r.buf);
    return rc;
}

int osp_vlm_warmup(const osp_vlm_cfg_t *cfg, const atomic_bool *stop, char *err, size_t errlen) {
    osp_image_t black = {0};
    osp_vlm_body_t b;
    osp_vlm_body_init(&b);
    int rc = osp_image_reserve(&black, 64, 64, OSP_PIX_RGB) ? OSP_VLM_ENOMEM : 0;
    char *body = NULL, *content = NULL;
    if (!rc) {
        memset(black.data, 0, (size_t)black.stride * 64);
        osp_view_t v = osp_image_view(&black);
        for (int i = 0; i < 3 && !rc; i++) rc = osp_vlm_body_add_frame(&b, &v, 85);
    }
    if (!rc && !(body = osp_vlm_body_finish(&b, cfg, "Say Hi"))) rc = OSP_VLM_ENOMEM;
    if (!rc)
        rc = osp_vlm_post(cfg, body, stop, &content, err, errlen);
    else
        snprintf(err, errlen, "out of memory");
    free(body);
    free(content);
    osp_vlm_body_free(&b);
    osp_image_free(&black);
    return rc;
}
