/* sink: see sink.h. */
#define _POSIX_C_SOURCE 200809L
#include "publish/sink.h"
#include "log/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <mosquitto.h>

#include "base/clock.h"
#include "base/thread.h"
#include "video/url.h"

/* A queued record: data and, when it has a topic of its own, the topic, in
 * one allocation (free data). */
typedef struct {
    char *data;
    const char *topic; /* NULL: the sink's */
    bool retain;
} item_t;

struct osp_sink {
    char host[1024], topic[768]; /* kafka: host is the brokers list */
    char avail[800];             /* the availability topic, or "" */
    int port;
    char shown[1100]; /* the URL, its login masked: the only name printed */
    char prog[32];
    char who[1200];       /* MQTT: "osprey PROG: --mqtt SHOWN", or the caller's who and SHOWN */
    atomic_bool *refused; /* the caller's, set on giving up */
    struct mosquitto *mq; /* MQTT, or */
    rd_kafka_t *rk;       /* Kafka */
    rd_kafka_topic_t *rkt;
    pthread_t th;
    pthread_mutex_t mu; /* guards the queue, the flags and the counters */
    pthread_cond_t cv;
    item_t *q;
    int cap, head, n;
    bool closing;
    bool connected, reported;
    bool ever;             /* connected once at least */
    bool wait_first;       /* the caller says why the first attempt failed */
    int attempts;          /* connection attempts that failed */
    char why[160];         /* the last one's reason */
    int birth_mid;         /* the last "online": not a record, not counted */
    bool birth_due;        /* connected: "online" goes out before any record */
    bool given_up;         /* the broker refused us: nothing is queued or retried */
    double deadline;       /* closing: give up on unacknowledged records then */
    int64_t lost_retained; /* retained messages dropped */
    osp_sink_stats_t st;
};

static int lib_refs;
static pthread_mutex_t lib_mu = PTHREAD_MUTEX_INITIALIZER;

/* The broker will not take us as we are: report it once, drop what waits
 * (counted) and stop trying. On the sink's thread. */
static void give_up(osp_sink_t *s, const char *why) {
    pthread_mutex_lock(&s->mu);
    bool first = !s->given_up;
    s->given_up = true;
    s->connected = false;
    s->st.failures++;
    for (; s->n > 0; s->n--) {
        if (s->q[s->head].retain) s->lost_retained++;
        free(s->q[s->head].data);
        s->q[s->head].data = NULL;
        s->head = (s->head + 1) % s->cap;
        s->st.dropped++;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    if (!first) return;
    osp_log(OSP_LOG_ERROR, "%s: %s; not retrying", s->who, why);
    if (s->refused) atomic_store(s->refused, true);
}

static void on_connect(struct mosquitto *mq, void *ctx, int rc) {
    (void)mq;
    osp_sink_t *s = ctx;
    /* 3 (server unavailable) may pass; a refused login or client id will not. */
    if (rc != 0 && rc != 3) {
        char why[160];
        int n = snprintf(why, sizeof why, "the broker refused the connection (%s",
                         mosquitto_connack_string(rc));
        if (n > 0 && (size_t)n < sizeof why - 1) {
            if (why[n - 1] == '.') n--;
            snprintf(why + n, sizeof why - (size_t)n, ")");
        }
        give_up(s, why);
        return;
    }
    /* "online" before any record, on every connect: the broker may have
     * said "offline" for us (the last will) while we were away. Published
     * by the loop, not here: libmosquitto holds its callback lock here,
     * and a publish under it takes its locks in the order opposite to
     * mosquitto_disconnect's (ThreadSanitizer: lock-order-inversion). */
    pthread_mutex_lock(&s->mu);
    s->connected = rc == 0;
    if (rc == 0) {
        s->reported = false;
        s->ever = true;
        s->birth_due = s->avail[0] != '\0';
    }
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
    osp_sink_t *s = ctx;
    pthread_mutex_lock(&s->mu);
    if (mid != s->birth_mid) s->st.acked++;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* The sink's thread owns the client: it connects (and reconnects with
 * backoff), runs libmosquitto's network loop, and publishes the queued
 * records in order while connected. */
static void *publisher(void *arg) {
    osp_sink_t *s = arg;
    osp_thread_name("osp-mqtt");
    double next_try = 0, backoff = 0.5;
    bool ever = false;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool connected = s->connected, closing = s->closing, gone = s->given_up;
        bool idle = s->n == 0 && s->st.acked >= s->st.published;
        double deadline = s->deadline;
        pthread_mutex_unlock(&s->mu);
        if (gone || (closing && (idle || osp_now_s() > deadline))) break;
        if (!connected && osp_now_s() >= next_try) {
            int rc = ever ? mosquitto_reconnect(s->mq)
                          : mosquitto_connect(s->mq, s->host, s->port, 30);
            if (rc == MOSQ_ERR_SUCCESS) {
                ever = true;
                backoff = 0.5;
            } else if (rc == MOSQ_ERR_TLS) {
                give_up(s, "the TLS handshake failed (is the broker's certificate signed by "
                           "the --mqtt-ca?)");
                break;
            } else {
                const char *why = rc == MOSQ_ERR_ERRNO ? strerror(errno) : mosquitto_strerror(rc);
                pthread_mutex_lock(&s->mu);
                s->st.failures++;
                s->attempts++;
                snprintf(s->why, sizeof s->why, "%s", why);
                bool say = !s->reported && !(s->wait_first && !ever && s->attempts == 1);
                s->reported = true;
                pthread_cond_broadcast(&s->cv);
                pthread_mutex_unlock(&s->mu);
                if (say) osp_log(OSP_LOG_WARN, "%s: %s; retrying", s->who, why);
                backoff = backoff * 2 > 10 ? 10 : backoff * 2;
            }
            next_try = osp_now_s() + backoff;
        }
        /* Runs the callbacks (on_connect, on_publish) on this thread. */
        int lrc = mosquitto_loop(s->mq, 50, 1);
        if (lrc == MOSQ_ERR_TLS) {
            give_up(s, "the TLS handshake failed (is the broker's certificate signed by "
                       "the --mqtt-ca?)");
            break;
        }
        if (lrc != MOSQ_ERR_SUCCESS) {
            pthread_mutex_lock(&s->mu);
            s->connected = false;
            pthread_mutex_unlock(&s->mu);
            if (lrc == MOSQ_ERR_NO_CONN || lrc == MOSQ_ERR_CONN_LOST) osp_sleep_ms(20);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        bool birth = s->birth_due && s->connected;
        s->birth_due = false;
        pthread_mutex_unlock(&s->mu);
        if (birth) {
            int mid = -1;
            /* on_publish runs on this thread, in mosquitto_loop: after this */
            if (mosquitto_publish(s->mq, &mid, s->avail, 6, "online", 1, true) == MOSQ_ERR_SUCCESS) {
                pthread_mutex_lock(&s->mu);
                s->birth_mid = mid;
                pthread_mutex_unlock(&s->mu);
            }
        }
        for (;;) {
            pthread_mutex_lock(&s->mu);
            if (!s->connected || s->n == 0) {
                pthread_mutex_unlock(&s->mu);
                break;
            }
            item_t it = s->q[s->head];
            s->q[s->head].data = NULL;
            s->head = (s->head + 1) % s->cap;
            s->n--;
            pthread_mutex_unlock(&s->mu);
            int rc = mosquitto_publish(s->mq, NULL, it.topic ? it.topic : s->topic,
                                       (int)strlen(it.data), it.data, 1, it.retain);
            pthread_mutex_lock(&s->mu);
            if (rc == MOSQ_ERR_SUCCESS) {
                s->st.published++;
                free(it.data);
            } else {
                /* Not taken (the connection dropped under us): back to the
                 * head, to go first after the reconnect. */
                s->connected = false;
                if (s->n < s->cap) {
                    s->head = (s->head + s->cap - 1) % s->cap;
                    s->q[s->head] = it;
                    s->n++;
                } else {
                    if (it.retain) s->lost_retained++;
                    free(it.data);
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
            osp_log(OSP_LOG_ERROR, "osprey %s: Kafka delivery to %s failed: %s", s->prog, s->topic,
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
        osp_log(OSP_LOG_WARN, "osprey %s: Kafka %s: %s (%s); retrying", s->prog, s->host, reason,
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
    osp_thread_name("osp-kafka");
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool closing = s->closing;
        char *line = NULL;
        if (s->n > 0) {
            line = s->q[s->head].data;
            s->q[s->head].data = NULL;
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

static int kafka_start(osp_sink_t *s, const char *url, char *err, size_t errlen) {
    if (kafka_open(s, url + 8, err, errlen)) return -1;
    if (!(s->q = calloc((size_t)s->cap, sizeof *s->q))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->th, NULL, kafka_publisher, s)) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        snprintf(err, errlen, "cannot start the Kafka thread");
        goto fail;
    }
    return 0;
fail:
    rd_kafka_topic_destroy(s->rkt);
    rd_kafka_destroy(s->rk);
    free(s->q);
    return -1;
}

/* Hands the login and TLS settings to the client (which copies them). */
static int mqtt_configure(osp_sink_t *s, const osp_url_parts_t *u, const osp_sink_opts_t *o,
                          bool tls, char *err, size_t errlen) {
    const char *user = o->user ? o->user : u->has_user ? u->user : NULL;
    const char *pass = o->password ? o->password : u->has_password ? u->password : NULL;
    if (pass && !user) {
        snprintf(err, errlen, "a password needs a user (in the URL or --mqtt-user)");
        return -1;
    }
    if (user && mosquitto_username_pw_set(s->mq, user, pass) != MOSQ_ERR_SUCCESS) {
        snprintf(err, errlen, "cannot set the MQTT login");
        return -1;
    }
    if (!tls) {
        if (o->ca_file) {
            snprintf(err, errlen, "--mqtt-ca is for mqtts:// URLs");
            return -1;
        }
        return 0;
    }
    int rc = o->ca_file ? mosquitto_tls_set(s->mq, o->ca_file, NULL, NULL, NULL, NULL)
                        : mosquitto_int_option(s->mq, MOSQ_OPT_TLS_USE_OS_CERTS, 1);
    if (rc != MOSQ_ERR_SUCCESS) {
        snprintf(err, errlen, "cannot use the CA file %s: %s", o->ca_file ? o->ca_file : "",
                 mosquitto_strerror(rc));
        return -1;
    }
    return 0;
}

static int mqtt_start(osp_sink_t *s, const char *url, const osp_sink_opts_t *o, char *err,
                      size_t errlen) {
    osp_url_parts_t u;
    bool tls = false;
    int rc = -1;
    if (osp_url_split(url, &u) || (strcmp(u.scheme, "mqtt") && !(tls = !strcmp(u.scheme, "mqtts"))) ||
        !(u.path[0] || o->default_topic) || !u.host[0] || strlen(u.host) >= sizeof s->host) {
        snprintf(err, errlen, "'%s' is not mqtt[s]://[USER[:PASSWORD]@]HOST[:PORT]%s", s->shown,
                 o->default_topic ? "[/TOPIC]" : "/TOPIC");
        goto done;
    }
    snprintf(s->host, sizeof s->host, "%s", u.host);
    snprintf(s->topic, sizeof s->topic, "%s", u.path[0] ? u.path : o->default_topic);
    if (o->available) snprintf(s->avail, sizeof s->avail, "%s/%s", s->topic, o->available);
    s->port = u.port ? u.port : tls ? 8883 : 1883;
    if (!(s->q = calloc((size_t)s->cap, sizeof *s->q))) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_mutex_lock(&lib_mu);
    if (lib_refs++ == 0) mosquitto_lib_init();
    pthread_mutex_unlock(&lib_mu);
    if (!(s->mq = mosquitto_new(NULL, true, s))) {
        snprintf(err, errlen, "cannot start the MQTT client");
        goto fail;
    }
    if (mqtt_configure(s, &u, o, tls, err, errlen)) goto fail;
    if (s->avail[0] && mosquitto_will_set(s->mq, s->avail, 7, "offline", 1, true) != MOSQ_ERR_SUCCESS) {
        snprintf(err, errlen, "cannot set the MQTT last will on %s", s->avail);
        goto fail;
    }
    mosquitto_connect_callback_set(s->mq, on_connect);
    mosquitto_disconnect_callback_set(s->mq, on_disconnect);
    mosquitto_publish_callback_set(s->mq, on_publish);
    if (pthread_create(&s->th, NULL, publisher, s)) {
        snprintf(err, errlen, "cannot start the MQTT thread");
        goto fail;
    }
    rc = 0;
    goto done;
fail:
    if (s->mq) mosquitto_destroy(s->mq);
    s->mq = NULL;
    free(s->q);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_lock(&lib_mu);
    if (--lib_refs == 0) mosquitto_lib_cleanup();
    pthread_mutex_unlock(&lib_mu);
done:
    osp_url_forget(&u);
    return rc;
}

int osp_sink_open(const char *url, const osp_sink_opts_t *opts, osp_sink_t **out, char *err,
                  size_t errlen) {
    *out = NULL;
    osp_sink_opts_t none = {0};
    const osp_sink_opts_t *o = opts ? opts : &none;
    bool kafka = url && strncmp(url, "kafka://", 8) == 0;
    bool mqtt = url && (strncmp(url, "mqtt://", 7) == 0 || strncmp(url, "mqtts://", 8) == 0);
    osp_sink_t *s = NULL;
    if (!kafka && !mqtt) {
        char shown[256];
        snprintf(err, errlen, "'%s' is not mqtt[s]://HOST[:PORT]/TOPIC",
                 osp_url_mask(url ? url : "", shown, sizeof shown));
        return -1;
    }
    if (!(s = calloc(1, sizeof(*s)))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    osp_url_mask(url, s->shown, sizeof s->shown);
    snprintf(s->prog, sizeof s->prog, "%s", o->prog ? o->prog : "segment");
    if (o->who)
        snprintf(s->who, sizeof s->who, "%s %s", o->who, s->shown);
    else
        snprintf(s->who, sizeof s->who, "osprey %s: --mqtt %s", s->prog, s->shown);
    s->refused = o->refused;
    s->wait_first = o->wait_first;
    s->cap = o->cap > 0 ? o->cap : 1024;
    if (kafka ? kafka_start(s, url, err, errlen) : mqtt_start(s, url, o, err, errlen)) {
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

const char *osp_sink_name(const osp_sink_t *s) { return s->shown; }

const char *osp_sink_topic(const osp_sink_t *s) { return s->topic; }

void osp_sink_put(osp_sink_t *s, const char *line) { osp_sink_put_topic(s, NULL, line, false); }

void osp_sink_put_topic(osp_sink_t *s, const char *topic, const char *payload, bool retain) {
    size_t pl = strlen(payload), tl = topic ? strlen(topic) + 1 : 0;
    char *copy = malloc(pl + 1 + tl);
    if (copy) {
        memcpy(copy, payload, pl + 1);
        if (topic) memcpy(copy + pl + 1, topic, tl);
    }
    pthread_mutex_lock(&s->mu);
    if (!copy || s->given_up) {
        free(copy);
        s->st.dropped++;
    } else {
        if (s->n == s->cap) {
            if (s->q[s->head].retain) s->lost_retained++;
            free(s->q[s->head].data);
            s->q[s->head].data = NULL;
            s->head = (s->head + 1) % s->cap;
            s->n--;
            s->st.dropped++;
        }
        s->q[(s->head + s->n) % s->cap] = (item_t){copy, topic ? copy + pl + 1 : NULL, retain};
        s->n++;
        s->st.queued++;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

int64_t osp_sink_retained_lost(osp_sink_t *s, bool *connected) {
    pthread_mutex_lock(&s->mu);
    int64_t n = s->lost_retained;
    *connected = s->connected;
    pthread_mutex_unlock(&s->mu);
    return n;
}

int osp_sink_wait_connected(osp_sink_t *s, double timeout_s, char *err, size_t errlen) {
    if (s->rk) return 0; /* librdkafka connects by itself */
    double end = osp_now_s() + timeout_s;
    int rc = -1;
    pthread_mutex_lock(&s->mu);
    while (!s->connected && !s->given_up && s->attempts == 0 && osp_now_s() < end) {
        pthread_mutex_unlock(&s->mu);
        osp_sleep_ms(20);
        pthread_mutex_lock(&s->mu);
    }
    if (s->connected)
        rc = 0;
    else if (s->given_up)
        snprintf(err, errlen, "the broker refused the connection");
    else if (s->attempts)
        snprintf(err, errlen, "cannot reach the broker: %s", s->why);
    else
        snprintf(err, errlen, "the broker did not answer within %.0f s", timeout_s);
    pthread_mutex_unlock(&s->mu);
    return rc;
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
    s->st.failed = s->st.queued > 0 && s->st.acked == 0;
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
    /* a clean end: "offline" after the last record, not the last will */
    pthread_mutex_lock(&s->mu);
    bool ever = s->ever;
    pthread_mutex_unlock(&s->mu);
    if (s->avail[0] && ever) osp_sink_put_topic(s, s->avail, "offline", true);
    pthread_mutex_lock(&s->mu);
    s->deadline = osp_now_s() + timeout_s;
    s->closing = true;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    mosquitto_disconnect(s->mq);
    mosquitto_loop(s->mq, 50, 1);
    s->st.dropped += s->n;
    for (int i = 0; i < s->cap; i++) free(s->q[i].data);
    s->st.failed = s->given_up || (s->st.queued > 0 && s->st.acked == 0);
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
