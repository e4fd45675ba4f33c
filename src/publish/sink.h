/*
 * sink: publishing the chunk records somewhere besides stdout: MQTT
 * (libmosquitto, QoS 1) to mqtt://HOST[:PORT]/TOPIC, or Kafka (librdkafka,
 * idempotent producer) to kafka://BROKERS/TOPIC.
 *
 * A login comes from the URL or from the options (which win); a password is
 * never printed: every line names the sink by its masked URL.
 *
 * A sink never stalls the pipeline: osp_sink_put copies the record into a
 * bounded queue and returns; a full queue drops its OLDEST record (counted).
 * A background thread publishes in order; a broker that is down or goes
 * away is reported on stderr once and reconnected with backoff (MQTT: by
 * the sink; Kafka: by librdkafka), the records waiting meanwhile. A broker
 * that refuses the login or the TLS handshake is reported once and given
 * up on: retrying cannot fix it.
 *
 * A sink may also publish to topics of the caller's (osp_sink_put_topic,
 * retained or not), and keep an availability topic the way Frigate keeps
 * frigate/available: "online" (retained) on every connect, "offline" from
 * the broker as the client's last will when it vanishes, and from
 * osp_sink_close at a clean end. osprey detect --track and ospreyd's cameras publish Frigate's
 * topics and Home Assistant's discovery that way (publish/track_mqtt.h).
 *
 * Owned by the caller (osp_sink_open / osp_sink_close). put from any thread.
 */
#ifndef OSP_PUBLISH_SINK_H
#define OSP_PUBLISH_SINK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct osp_sink osp_sink_t;

typedef struct {
    int64_t queued, published, acked, dropped, failures;
    /* The sink could not deliver at all: the broker refused the login or
     * the TLS handshake, or not one record was acknowledged. */
    bool failed;
} osp_sink_stats_t;

/* How to reach the broker besides its URL. Every string is the caller's and
 * only read during osp_sink_open (the client keeps its own copies). */
typedef struct {
    int cap;          /* records the queue holds (0: 1024) */
    const char *prog; /* names the command in stderr lines ("segment") */
    /* MQTT: names the sink in its log lines instead of "osprey PROG:
     * --mqtt" ("ospreyd: cameras: MQTT"); NULL: that */
    const char *who;
    const char *user;     /* MQTT login; NULL: the URL's user */
    const char *password; /* NULL: the URL's password */
    const char *ca_file;  /* mqtts: the CA that signed the broker's certificate;
                           * NULL: the system's CAs */
    /* Set (when not NULL) the moment the broker refuses the login or the TLS
     * handshake: the sink has given up and will not retry. */
    atomic_bool *refused;
    /* MQTT: the topic when the URL has none (NULL: a URL must have one). */
    const char *default_topic;
    /* MQTT: when not NULL, the availability topic under the URL's topic
     * ("available": TOPIC/available), as this header's opening says. */
    const char *available;
    /* MQTT: the caller waits for the first connection (wait_connected) and
     * says why it failed: the sink does not say it too. */
    bool wait_first;
} osp_sink_opts_t;

/* url: mqtt://[user[:password]@]host[:port]/topic (port 1883),
 * mqtts://... (TLS, port 8883), or kafka://host:port[,host:port...]/topic.
 * Returns 0, or -1 with a reason in err (a bad URL, an unreadable CA file;
 * an unreachable broker is not an error here: it is retried). err never
 * holds a password. */
int osp_sink_open(const char *url, const osp_sink_opts_t *opts, osp_sink_t **out, char *err,
                  size_t errlen);
/* The URL as osprey prints it, its login masked ("mqtt://" "***@host:port/topic"). */
const char *osp_sink_name(const osp_sink_t *s);
void osp_sink_put(osp_sink_t *s, const char *line);
/* MQTT: the URL's topic (or the default_topic). */
const char *osp_sink_topic(const osp_sink_t *s);
/* MQTT: queue payload for topic (a whole topic, not under the URL's),
 * retained or not, in order with the records; as osp_sink_put otherwise. */
void osp_sink_put_topic(osp_sink_t *s, const char *topic, const char *payload, bool retain);
/* MQTT: retained messages dropped so far (their topics' last value may
 * not be on the broker), and whether the sink is connected now. A
 * publisher of retained state publishes it again when the count has grown
 * and the sink is connected (track_mqtt.h). */
int64_t osp_sink_retained_lost(osp_sink_t *s, bool *connected);
/* MQTT: wait up to timeout_s for the first connection. 0 connected; -1
 * when the first attempt failed, the broker refused us, or the time ran
 * out, with the reason in err (never a password). */
int osp_sink_wait_connected(osp_sink_t *s, double timeout_s, char *err, size_t errlen);
/* Wait up to timeout_s for every queued record to be acknowledged (with an
 * availability topic, "offline" last), then disconnect and free. Fills stats when not NULL. */
void osp_sink_close(osp_sink_t *s, double timeout_s, osp_sink_stats_t *stats);

#endif
