/* sink: see sink.h. */
#define _POSIX_C_SOURCE 200809L
#include "segment/sink.h"
#include "log/log.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>
#include <mosquitto.h>

struct osp_sink {
    char host[1024], topic[256]; /* kafka: host is the brokers list */
    int port;
    struct mosquitto *mq; /* MQTT, or */
    rd_kafka_t *rk;       /* Kafka */
    rd_kafka_topic_t *rkt;
    pthread_t th;
    pthread_mutex_t mu; /* guards the queue, the flags and the counters */
    pthread_cond_t cv;
    char **q;
    int cap, head, n;
    bool closing;
    bool connected, reported;
    double deadline; /* closing: give up on unacknowledged records then */
    osp_sink_stats_t st;
};

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int lib_refs;
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

static void on_connect(struct mosquitto *mq, void *ctx, int rc) {
    (void)mq;
    osp_sink_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->connected = rc == 0;
    if (rc == 0) s->reported = false;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void on_disconnect(struct mosquitto *mq, void *ctx, int rc) {
    (void)mq;
    (void)rc;
    osp_sink_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->connected = false;
    pthread_mutex_unlock(&s->mu);
}

static void on_publish(struct mosquitto *mq, void *ctx, int mid) {
    (void)mq;
    (void)mid;
    osp_sink_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->st.acked++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* The sink's thread owns the client: it connects (and reconnects with
 * backoff), runs libmosquitto's network loop, and publishes the queued
 * records in order while connected. */
static void *publisher(void *arg) {
    osp_sink_t *s = arg;
    double next_try = 0, backoff = 0.5;
    bool ever = false;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool connected = s->connected, closing = s->closing;
        bool idle = s->n == 0 && s->st.acked >= s->st.published;
        pthread_mutex_unlock(&s->mu);
        if (closing && (idle || mono() > s->deadline)) break;
        if (!connected && mono() >= next_try) {
            int rc = ever ? mosquitto_reconnect(s->mq)
                          : mosquitto_connect(s->mq, s->host, s->port, 30);
            if (rc == MOSQ_ERR_SUCCESS) {
                ever = true;
                backoff = 0.5;
            } else {
                pthread_mutex_lock(&s->mu);
                s->st.failures++;
                if (!s->reported)
                    osp_log(OSP_LOG_WARN, "osprey segment: MQTT broker %s:%d: %s; retrying",
                            s->host, s->port, mosquitto_strerror(rc));
                s->reported = true;
                pthread_mutex_unlock(&s->mu);
                backoff = backoff * 2 > 10 ? 10 : backoff * 2;
            }
            next_try = mono() + backoff;
        }
        /* Runs the callbacks (on_connect, on_publish) on this thread. */
        int lrc = mosquitto_loop(s->mq, 50, 1);
        if (lrc != MOSQ_ERR_SUCCESS) {
            pthread_mutex_lock(&s->mu);
            s->connected = false;
            pthread_mutex_unlock(&s->mu);
            if (lrc == MOSQ_ERR_NO_CONN || lrc == MOSQ_ERR_CONN_LOST) {
                struct timespec ts = {0, 20 * 1000000L};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        for (;;) {
            pthread_mutex_lock(&s->mu);
            if (!s->connected || s->n == 0) {
                pthread_mutex_unlock(&s->mu);
                break;
            }
            char *line = s->q[s->head];
            s->q[s->head] = NULL;
            s->head = (s->head + 1) % s->cap;
            s->n--;
            pthread_mutex_unlock(&s->mu);
            int rc = mosquitto_publish(s->mq, NULL, s->topic, (int)strlen(line), line, 1, false);
            pthread_mutex_lock(&s->mu);
            if (rc == MOSQ_ERR_SUCCESS) {
                s->st.published++;
                free(line);
            } else {
                /* Not taken (the connection dropped under us): back to the
                 * head, to go first after the reconnect. */
                s->connected = false;
                if (s->n < s->cap) {
                    s->head = (s->head + s->cap - 1) % s->cap;
                    s->q[s->head] = line;
                    s->n++;
                } else {
                    free(line);
                    s->st.dropped++;
                }
            }
            pthread_mutex_unlock(&s->mu);
            if (rc != MOSQ_ERR_SUCCESS) break;
        }
    }
    return NULL;
}

/* Kafka: librdkafka queues, batches, retries and reconnects by itself
 * (idempotent producer: in order, once); this thread feeds it in order and
 * serves its callbacks. */
static void kafka_delivered(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    (void)rk;
    osp_sink_t *s = opaque;
    pthread_mutex_lock(&s->mu);
    if (m->err) {
        s->st.failures++;
        s->st.dropped++;
        if (!s->reported)
            osp_log(OSP_LOG_ERROR, "osprey segment: Kafka delivery to %s failed: %s", s->topic,
                    rd_kafka_err2str(m->err));
        s->reported = true;
    } else {
        s->st.acked++;
    }
    pthread_mutex_unlock(&s->mu);
}

static void kafka_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)rk;
    osp_sink_t *s = opaque;
    pthread_mutex_lock(&s->mu);
    s->st.failures++;
    if (!s->reported)
        osp_log(OSP_LOG_WARN, "osprey segment: Kafka %s: %s (%s); retrying", s->host, reason,
                rd_kafka_err2name((rd_kafka_resp_err_t)err));
    s->reported = true;
    pthread_mutex_unlock(&s->mu);
}

/* librdkafka logs every failed attempt to stderr; error_cb reports once. */
static void kafka_quiet(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk;
    (void)level;
    (void)fac;
    (void)buf;
}

static void *kafka_publisher(void *arg) {
    osp_sink_t *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool closing = s->closing;
        char *line = NULL;
        if (s->n > 0) {
            line = s->q[s->head];
            s->q[s->head] = NULL;
            s->head = (s->head + 1) % s->cap;
            s->n--;
        }
        pthread_mutex_unlock(&s->mu);
        if (!line) {
            if (closing) break;
            rd_kafka_poll(s->rk, 50);
            continue;
        }
        for (;;) {
            rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
            if (rd_kafka_produce(s->rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, line,
                                 strlen(line), NULL, 0, NULL) != 0)
                e = rd_kafka_last_error();
            if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
                pthread_mutex_lock(&s->mu);
                s->st.published++;
                pthread_mutex_unlock(&s->mu);
                break;
            }
            if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
                pthread_mutex_lock(&s->mu);
                s->st.failures++;
                s->st.dropped++;
                pthread_mutex_unlock(&s->mu);
                break;
            }
            rd_kafka_poll(s->rk, 50);
        }
        free(line);
        rd_kafka_poll(s->rk, 0);
    }
    return NULL;
}

static int kafka_open(osp_sink_t *s, const char *spec, char *err, size_t errlen) {
    const char *slash = strrchr(spec, '/');
    if (!slash || slash == spec || !slash[1] || (size_t)(slash - spec) >= sizeof s->host ||
        strlen(slash + 1) >= sizeof s->topic) {
        snprintf(err, errlen, "'%s' is not BROKERS/TOPIC", spec);
        return -1;
    }
    memcpy(s->host, spec, (size_t)(slash - spec));
    snprintf(s->topic, sizeof s->topic, "%s", slash + 1);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char e[256];
    if (rd_kafka_conf_set(conf, "bootstrap.servers", s->host, e, sizeof e) ||
        rd_kafka_conf_set(conf, "enable.idempotence", "true", e, sizeof e) ||
        rd_kafka_conf_set(conf, "linger.ms", "5", e, sizeof e)) {
        snprintf(err, errlen, "Kafka configuration: %s", e);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    rd_kafka_conf_set_opaque(conf, s);
    rd_kafka_conf_set_dr_msg_cb(conf, kafka_delivered);
    rd_kafka_conf_set_error_cb(conf, kafka_error);
    rd_kafka_conf_set_log_cb(conf, kafka_quiet);
    /* rd_kafka_new owns conf on success only. */
    if (!(s->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e))) {
        snprintf(err, errlen, "Kafka producer: %s", e);
        rd_kafka_conf_destroy(conf);
        return -1;
    }
    /* One partition keeps the records in order for a consumer. */
    if (!(s->rkt = rd_kafka_topic_new(s->rk, s->topic, NULL))) {
        snprintf(err, errlen, "Kafka topic %s: %s", s->topic, rd_kafka_err2str(rd_kafka_last_error()));
        rd_kafka_destroy(s->rk);
        s->rk = NULL;
        return -1;
    }
    return 0;
}

int osp_sink_open(const char *url, int cap, osp_sink_t **out, char *err, size_t errlen) {
    *out = NULL;
    bool kafka = url && strncmp(url, "kafka://", 8) == 0;
    if (!url || (!kafka && strncmp(url, "mqtt://", 7) != 0)) {
        snprintf(err, errlen, "'%s' is not mqtt://HOST[:PORT]/TOPIC", url ? url : "");
        return -1;
    }
    osp_sink_t *s = calloc(1, sizeof(*s));
    if (!s) goto oom;
    if (kafka) {
        s->cap = cap > 0 ? cap : 1024;
        if (kafka_open(s, url + 8, err, errlen)) {
            free(s);
            return -1;
        }
        if (!(s->q = calloc((size_t)s->cap, sizeof(char *)))) {
            rd_kafka_topic_destroy(s->rkt);
            rd_kafka_destroy(s->rk);
            free(s);
            goto oom;
        }
        pthread_mutex_init(&s->mu, NULL);
        pthread_cond_init(&s->cv, NULL);
        if (pthread_create(&s->th, NULL, kafka_publisher, s)) {
            rd_kafka_topic_destroy(s->rkt);
            rd_kafka_destroy(s->rk);
            free(s->q);
            pthread_mutex_destroy(&s->mu);
            pthread_cond_destroy(&s->cv);
            free(s);
            snprintf(err, errlen, "cannot start the Kafka thread");
            return -1;
        }
        *out = s;
        return 0;
    }
    const char *h = url + 7, *slash = strchr(h, '/');
    if (!slash || slash == h || !slash[1] || (size_t)(slash - h) >= sizeof s->host ||
        strlen(slash + 1) >= sizeof s->topic) {
        snprintf(err, errlen, "'%s' is not mqtt://HOST[:PORT]/TOPIC", url);
        free(s);
        return -1;
    }
    memcpy(s->host, h, (size_t)(slash - h));
    snprintf(s->topic, sizeof s->topic, "%s", slash + 1);
    s->port = 1883;
    char *colon = strrchr(s->host, ':');
    if (colon) {
        s->port = atoi(colon + 1);
        *colon = 0;
        if (s->port <= 0 || s->port > 65535) {
            snprintf(err, errlen, "bad port in '%s'", url);
            free(s);
            return -1;
        }
    }
    s->cap = cap > 0 ? cap : 1024;
    if (!(s->q = calloc((size_t)s->cap, sizeof(char *)))) {
        free(s);
        goto oom;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_lock(&lib_mu);
    if (lib_refs++ == 0) mosquitto_lib_init();
    pthread_mutex_unlock(&lib_mu);
    s->mq = mosquitto_new(NULL, true, s);
    if (!s->mq) goto fail;
    mosquitto_connect_callback_set(s->mq, on_connect);
    mosquitto_disconnect_callback_set(s->mq, on_disconnect);
    mosquitto_publish_callback_set(s->mq, on_publish);
    if (pthread_create(&s->th, NULL, publisher, s)) goto fail;
    *out = s;
    return 0;
fail:
    snprintf(err, errlen, "cannot start the MQTT client");
    if (s->mq) mosquitto_destroy(s->mq);
    free(s->q);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    pthread_mutex_lock(&lib_mu);
    if (--lib_refs == 0) mosquitto_lib_cleanup();
    pthread_mutex_unlock(&lib_mu);
    return -1;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

void osp_sink_put(osp_sink_t *s, const char *line) {
    char *copy = strdup(line);
    pthread_mutex_lock(&s->mu);
    if (!copy) {
        s->st.dropped++;
    } else {
        if (s->n == s->cap) {
            free(s->q[s->head]);
            s->q[s->head] = NULL;
            s->head = (s->head + 1) % s->cap;
            s->n--;
            s->st.dropped++;
        }
        s->q[(s->head + s->n) % s->cap] = copy;
        s->n++;
        s->st.queued++;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

static void kafka_close(osp_sink_t *s, double timeout_s, osp_sink_stats_t *stats) {
    pthread_mutex_lock(&s->mu);
    s->closing = true;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL); /* the queue is empty: all handed to librdkafka */
    rd_kafka_flush(s->rk, (int)(timeout_s * 1000));
    int left = rd_kafka_outq_len(s->rk);
    rd_kafka_topic_destroy(s->rkt);
    rd_kafka_destroy(s->rk);
    s->st.dropped += left > 0 ? left : 0;
    if (stats) *stats = s->st;
    free(s->q);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

void osp_sink_close(osp_sink_t *s, double timeout_s, osp_sink_stats_t *stats) {
    if (!s) return;
    if (s->rk) {
        kafka_close(s, timeout_s, stats);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->deadline = mono() + timeout_s;
    s->closing = true;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    mosquitto_disconnect(s->mq);
    mosquitto_loop(s->mq, 50, 1);
    s->st.dropped += s->n;
    for (int i = 0; i < s->cap; i++) free(s->q[i]);
    if (stats) *stats = s->st;
    mosquitto_destroy(s->mq);
    free(s->q);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
    pthread_mutex_lock(&lib_mu);
    if (--lib_refs == 0) mosquitto_lib_cleanup();
    pthread_mutex_unlock(&lib_mu);
}
