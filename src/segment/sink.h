/*
 * sink: publishing the chunk records somewhere besides stdout: MQTT
 * (libmosquitto, QoS 1) to mqtt://HOST[:PORT]/TOPIC, or Kafka (librdkafka,
 * idempotent producer) to kafka://BROKERS/TOPIC.
 *
 * A sink never stalls the pipeline: osp_sink_put copies the record into a
 * bounded queue and returns; a full queue drops its OLDEST record (counted).
 * A background thread publishes in order; a broker that is down or goes
 * away is reported on stderr once and reconnected with backoff (MQTT: by
 * the sink; Kafka: by librdkafka), the records waiting meanwhile.
 *
 * Owned by the caller (osp_sink_open / osp_sink_close). put from any thread.
 */
#ifndef OSP_SEGMENT_SINK_H
#define OSP_SEGMENT_SINK_H

#include <stddef.h>
#include <stdint.h>

typedef struct osp_sink osp_sink_t;

typedef struct {
    int64_t queued, published, acked, dropped, failures;
} osp_sink_stats_t;

/* url: mqtt://host[:port]/topic or kafka://host:port[,host:port...]/topic. cap: records the queue holds (0: 1024).
 * Returns 0, or -1 with a reason in err (a bad URL; an unreachable broker
 * is not an error here: it is retried). */
int osp_sink_open(const char *url, int cap, osp_sink_t **out, char *err, size_t errlen);
void osp_sink_put(osp_sink_t *s, const char *line);
/* Wait up to timeout_s for every queued record to be acknowledged, then
 * disconnect and free. Fills stats when not NULL. */
void osp_sink_close(osp_sink_t *s, double timeout_s, osp_sink_stats_t *stats);

#endif
