/*
 * vlm: describing a chunk with a vision-language model through the
 * OpenAI-compatible chat-completions API (vLLM, llama.cpp's server and
 * Ollama all serve it), through libcurl: http:// and https://, proxies from
 * the usual environment variables, redirects (up to 5; the POST stays a
 * POST), chunked replies and timeouts are the library's. An API key is sent
 * as "Authorization: Bearer KEY" and never written anywhere else (not to
 * err, not to stderr).
 *
 * Every wait polls a caller's stop flag every 50 ms, so setting the flag
 * aborts a request in flight (the connection is closed) well within 1 s.
 * The functions are reentrant; requests may run on many threads at once.
 */
#ifndef OSP_SEGMENT_VLM_H
#define OSP_SEGMENT_VLM_H

#include <stdatomic.h>
#include <stddef.h>

#include "image/image.h"

enum {
    OSP_VLM_OK = 0,
    OSP_VLM_EINVAL = -1, /* bad URL or arguments */
    OSP_VLM_ENOMEM = -2,
    OSP_VLM_ENET = -3,    /* connect, send or receive failed; or timed out */
    OSP_VLM_EHTTP = -4,   /* a status other than 2xx, or a reply we cannot read */
    OSP_VLM_ESTOPPED = -5 /* the stop flag was set */
};

typedef struct {
    const char *url;     /* http(s)://host[:port][/path]; "/" or none -> /v1/chat/completions,
                      * ".../v1" -> ".../v1/chat/completions" */
    const char *api_key; /* NULL: no Authorization header */
    const char *ca_file; /* https: the CA to trust; NULL: the system's */
    const char *model;
    const char *system_prompt; /* NULL: none */
    int max_tokens;
    double temperature;
    double timeout_s; /* whole request; <= 0: 300 */
} osp_vlm_cfg_t;

/* A request body being built: the prompt, then JPEG frames one at a time.
 * Owned by the caller: osp_vlm_body_init, then osp_vlm_body_free. */
typedef struct {
    char *frames_json; /* ",{image_url part}" repeated; grows */
    size_t len, cap;
    int n_frames;
    void *tj; /* turbojpeg compressor, created on first use */
    unsigned char *jpeg;
    unsigned long jpeg_cap;
} osp_vlm_body_t;

void osp_vlm_body_init(osp_vlm_body_t *b);
void osp_vlm_body_free(osp_vlm_body_t *b);
/* Encode an RGB view as JPEG and append it as an image_url part. */
int osp_vlm_body_add_frame(osp_vlm_body_t *b, const osp_view_t *rgb, int quality);
/* The finished JSON request (malloc'd, owned by the caller). */
char *osp_vlm_body_finish(const osp_vlm_body_t *b, const osp_vlm_cfg_t *cfg, const char *prompt);

/* POST body to cfg->url. On success *content is the first choice's message
 * content (malloc'd, owned by the caller). */
int osp_vlm_post(const osp_vlm_cfg_t *cfg, const char *body, const atomic_bool *stop,
                 char **content, char *err, size_t errlen);

/* The 3-black-frame "Say Hi" request some models need before the first real
 * one (they hang on fewer than 3 frames). 0, or the osp_vlm_post code with a
 * reason in err. */
int osp_vlm_warmup(const osp_vlm_cfg_t *cfg, const atomic_bool *stop, char *err, size_t errlen);

/* Base64 of n bytes into out (room for 4 * ((n + 2) / 3) + 1 bytes). */
size_t osp_base64(const unsigned char *in, size_t n, char *out);

#endif
