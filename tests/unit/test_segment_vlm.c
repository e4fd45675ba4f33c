/* The chat-completions client (src/segment/vlm.c): base64, the request body
 * (valid JSON, prompts escaped, frames as JPEG data URLs), and the HTTP
 * exchange against an in-process one-shot server: a chunked reply, an HTTP
 * error, a refused connection, and a stop that aborts a request waiting
 * for its reply. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "segment/vlm.h"

static void test_base64(void **state) {
    (void)state;
    char out[16];
    osp_base64((const unsigned char *)"", 0, out);
    assert_string_equal(out, "");
    osp_base64((const unsigned char *)"f", 1, out);
    assert_string_equal(out, "Zg==");
    osp_base64((const unsigned char *)"fo", 2, out);
    assert_string_equal(out, "Zm8=");
    osp_base64((const unsigned char *)"foobar", 6, out);
    assert_string_equal(out, "Zm9vYmFy");
}

static void test_body(void **state) {
    (void)state;
    osp_vlm_body_t b;
    osp_vlm_body_init(&b);
    uint8_t px[16 * 8 * 3];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7);
    osp_view_t v = {.data = px, .width = 16, .height = 8, .stride = 48, .fmt = OSP_PIX_RGB};
    assert_int_equal(osp_vlm_body_add_frame(&b, &v, 80), 0);
    assert_int_equal(osp_vlm_body_add_frame(&b, &v, 80), 0);
    v.fmt = OSP_PIX_GRAY;
    assert_int_equal(osp_vlm_body_add_frame(&b, &v, 80), OSP_VLM_EINVAL);
    osp_vlm_cfg_t cfg = {.model = "m\"1", .system_prompt = "sys", .max_tokens = 256, .temperature = 0.5};
    char *s = osp_vlm_body_finish(&b, &cfg, "say \"hi\"\n");
    assert_non_null(s);
    cJSON *j = cJSON_Parse(s);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "m\"1");
    assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 256);
    cJSON *msgs = cJSON_GetObjectItem(j, "messages");
    assert_int_equal(cJSON_GetArraySize(msgs), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 0), "content")->valuestring,
                        "sys");
    cJSON *parts = cJSON_GetObjectItem(cJSON_GetArrayItem(msgs, 1), "content");
    assert_int_equal(cJSON_GetArraySize(parts), 3);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(parts, 0), "text")->valuestring,
                        "say \"hi\"\n");
    const char *url =
        cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(parts, 2), "image_url"), "url")->valuestring;
    assert_memory_equal(url, "data:image/jpeg;base64,/9j/", 27); /* FF D8 FF */
    cJSON_Delete(j);
    free(s);
    osp_vlm_body_free(&b);
}

/* A one-shot server: accepts one connection, reads the request, waits
 * delay_ms, writes reply (NULL: closes without one). */
typedef struct {
    int fd, port;
    const char *reply;
    int delay_ms;
    pthread_t th;
} server_t;

static void *serve(void *arg) {
    server_t *s = arg;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0) return NULL;
    /* Read the whole request (its body is "{}"): closing with unread bytes
     * would reset the connection. */
    char buf[65536];
    size_t n = 0;
    while (n < sizeof buf - 1) {
        ssize_t r = recv(c, buf + n, sizeof buf - 1 - n, 0);
        if (r <= 0) break;
        n += (size_t)r;
        buf[n] = 0;
        if (strstr(buf, "\r\n\r\n{}")) break;
    }
    struct timespec ts = {.tv_sec = s->delay_ms / 1000, .tv_nsec = (s->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    if (s->reply) (void)!send(c, s->reply, strlen(s->reply), MSG_NOSIGNAL);
    close(c);
    return NULL;
}

static void server_start(server_t *s, const char *reply, int delay_ms) {
    s->reply = reply;
    s->delay_ms = delay_ms;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->fd, 1), 0);
    socklen_t l = sizeof a;
    getsockname(s->fd, (struct sockaddr *)&a, &l);
    s->port = ntohs(a.sin_port);
    pthread_create(&s->th, NULL, serve, s);
}

static void server_stop(server_t *s) {
    pthread_join(s->th, NULL);
    close(s->fd);
}

static int post(int port, const char *path, atomic_bool *stop, char **content, char *err) {
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    osp_vlm_cfg_t cfg = {.url = url, .model = "m", .max_tokens = 8, .timeout_s = 10};
    return osp_vlm_post(&cfg, "{}", stop, content, err, 256);
}

static void test_chunked_reply(void **state) {
    (void)state;
    server_t s;
    server_start(&s,
                 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n"
                 "10\r\n{\"choices\":[{\"me\r\n"
                 "20\r\nssage\":{\"content\":\"a person\"}}]}\r\n0\r\n\r\n",
                 0);
    char *content = NULL, err[256];
    assert_int_equal(post(s.port, "/v1", NULL, &content, err), 0);
    assert_string_equal(content, "a person");
    free(content);
    server_stop(&s);
}

static void test_http_error_and_refused(void **state) {
    (void)state;
    server_t s;
    server_start(&s, "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nno model!", 0);
    char *content = NULL, err[256];
    assert_int_equal(post(s.port, "/", NULL, &content, err), OSP_VLM_EHTTP);
    assert_non_null(strstr(err, "404"));
    assert_null(content);
    int port = s.port;
    server_stop(&s);
    /* Nothing listens there now. */
    assert_int_equal(post(port, "/", NULL, &content, err), OSP_VLM_ENET);
    osp_vlm_cfg_t bad = {.url = "ftp://x", .model = "m"};
    assert_int_equal(osp_vlm_post(&bad, "{}", NULL, &content, err, sizeof err), OSP_VLM_EINVAL);
}

static atomic_bool g_stop;

static void *stop_later(void *arg) {
    (void)arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 200 * 1000000L};
    nanosleep(&ts, NULL);
    atomic_store(&g_stop, true);
    return NULL;
}

static void test_stop_aborts(void **state) {
    (void)state;
    server_t s;
    server_start(&s, NULL, 1500);
    pthread_t th;
    pthread_create(&th, NULL, stop_later, NULL);
    char *content = NULL, err[256];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(post(s.port, "/", &g_stop, &content, err), OSP_VLM_ESTOPPED);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    /* Returned on the stop, not on the server's close 1.5 s later. */
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    assert_true(dt < 1.2);
    pthread_join(th, NULL);
    server_stop(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64),        cmocka_unit_test(test_body),
        cmocka_unit_test(test_chunked_reply), cmocka_unit_test(test_http_error_and_refused),
        cmocka_unit_test(test_stop_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
