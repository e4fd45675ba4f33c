/* The Kafka sink (src/publish/sink.c) against librdkafka's mock cluster (a
 * broker inside this process): every record arrives once and in order; a
 * broker that cannot be reached never blocks put, is reported, and close
 * gives up at its deadline counting the undelivered records. Bad URLs are
 * refused. (MQTT runs against a real mosquitto in tests/e2e.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "publish/sink.h"

#define N 50

/* librdkafka starts its threads with C11 thrd_create, which ThreadSanitizer
 * (gcc 12) does not intercept: its first allocation on such a thread
 * crashes inside TSan's allocator. Under TSan the Kafka cases are skipped. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifdef UNDER_TSAN
#define SKIP_UNDER_TSAN() skip()
#else
#define SKIP_UNDER_TSAN() (void)0
#endif

static void test_kafka_in_order_once(void **state) {
    (void)state;
    SKIP_UNDER_TSAN();
    char e[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof e);
    assert_non_null(host);
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(host, 1);
    assert_non_null(mc);
    assert_int_equal(rd_kafka_mock_topic_create(mc, "chunks", 1, 1), 0);
    char url[512];
    snprintf(url, sizeof url, "kafka://%s/chunks", rd_kafka_mock_cluster_bootstraps(mc));

    osp_sink_t *s;
    assert_int_equal(osp_sink_open(url, NULL, &s, e, sizeof e), 0);
    for (int i = 0; i < N; i++) {
        char line[64];
        snprintf(line, sizeof line, "{\"chunk_idx\":%d}", i);
        osp_sink_put(s, line);
    }
    osp_sink_stats_t st;
    osp_sink_close(s, 10.0, &st);
    assert_int_equal(st.queued, N);
    assert_int_equal(st.acked, N);
    assert_int_equal(st.dropped, 0);

    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    assert_int_equal(rd_kafka_conf_set(cc, "bootstrap.servers",
                                       rd_kafka_mock_cluster_bootstraps(mc), e, sizeof e),
                     RD_KAFKA_CONF_OK);
    assert_int_equal(rd_kafka_conf_set(cc, "group.id", "t", e, sizeof e), RD_KAFKA_CONF_OK);
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, cc, e, sizeof e);
    assert_non_null(c);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, "chunks", 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    assert_int_equal(rd_kafka_assign(c, parts), 0);
    rd_kafka_topic_partition_list_destroy(parts);
    int got = 0;
    for (int tries = 0; got < N && tries < 200; tries++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (!m) continue;
        if (!m->err) {
            char want[64];
            snprintf(want, sizeof want, "{\"chunk_idx\":%d}", got);
            assert_int_equal(m->len, strlen(want));
            assert_memory_equal(m->payload, want, m->len);
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    assert_int_equal(got, N);
    /* Nothing more: each record once. */
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 300);
    if (m) {
        assert_int_not_equal(m->err, RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(host);
}

static void test_kafka_unreachable(void **state) {
    (void)state;
    SKIP_UNDER_TSAN();
    osp_sink_t *s;
    char e[256];
    assert_int_equal(osp_sink_open("kafka://127.0.0.1:1/chunks", NULL, &s, e, sizeof e), 0);
    for (int i = 0; i < 5; i++) osp_sink_put(s, "{}");
    osp_sink_stats_t st;
    osp_sink_close(s, 1.0, &st);
    assert_int_equal(st.queued, 5);
    assert_int_equal(st.acked, 0);
    assert_int_equal(st.dropped, 5);
    assert_true(st.failed); /* not one record delivered */
}

/* Nothing listens on port 1: the records wait in a queue of 4, the oldest
 * dropped (counted), and the sink reports that it delivered none. */
static void test_mqtt_queue_is_bounded(void **state) {
    (void)state;
    osp_sink_t *s;
    char e[256];
    osp_sink_opts_t o = {.cap = 4, .prog = "test"};
    assert_int_equal(osp_sink_open("mqtt://u:pw@127.0.0.1:1/t", &o, &s, e, sizeof e), 0);
    assert_string_equal(osp_sink_name(s), "mqtt://***@127.0.0.1:1/t");
    for (int i = 0; i < 10; i++) osp_sink_put(s, "{}");
    osp_sink_stats_t st;
    osp_sink_close(s, 0.2, &st);
    assert_int_equal(st.queued, 10);
    assert_int_equal(st.published, 0);
    assert_int_equal(st.dropped, 10); /* 6 pushed out by newer ones, 4 left at the end */
    assert_true(st.failures >= 1);
    assert_true(st.failed);
}

static void test_bad_urls(void **state) {
    (void)state;
    osp_sink_t *s;
    char e[256];
    assert_int_equal(osp_sink_open("http://x/y", NULL, &s, e, sizeof e), -1);
    assert_int_equal(osp_sink_open("mqtt://host", NULL, &s, e, sizeof e), -1);
    assert_int_equal(osp_sink_open("mqtt://host:0/t", NULL, &s, e, sizeof e), -1);
    assert_int_equal(osp_sink_open("kafka://brokers", NULL, &s, e, sizeof e), -1);
    assert_non_null(strstr(e, "BROKERS/TOPIC"));
    /* the message names the URL with its login masked */
    assert_int_equal(osp_sink_open("mqtt://ha:hunter2@host", NULL, &s, e, sizeof e), -1);
    assert_null(strstr(e, "hunter2"));
    assert_non_null(strstr(e, "mqtt://***@host"));
    osp_sink_opts_t o = {.password = "hunter2"};
    assert_int_equal(osp_sink_open("mqtt://host/t", &o, &s, e, sizeof e), -1);
    assert_null(strstr(e, "hunter2"));
    o = (osp_sink_opts_t){.ca_file = "/nonexistent/ca.pem"};
    assert_int_equal(osp_sink_open("mqtts://host/t", &o, &s, e, sizeof e), -1);
    assert_non_null(strstr(e, "/nonexistent/ca.pem"));
    assert_int_equal(osp_sink_open("mqtt://host/t", &o, &s, e, sizeof e), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kafka_in_order_once),
        cmocka_unit_test(test_kafka_unreachable),
        cmocka_unit_test(test_mqtt_queue_is_bounded),
        cmocka_unit_test(test_bad_urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
