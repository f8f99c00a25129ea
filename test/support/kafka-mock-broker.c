/* A Kafka-protocol broker for the test suites: librdkafka's mock cluster.
   Usage: kafka-mock-broker <brokers> [topic:partitions ...]
   Prints the bootstrap address on one line, then serves until stdin closes or a signal comes. */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t stopping = 0;
static void stop(int sig) { (void)sig; stopping = 1; }

int main(int argc, char **argv) {
  char errstr[512];
  int brokers = argc > 1 ? atoi(argv[1]) : 1;
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) { fprintf(stderr, "rd_kafka_new: %s\n", errstr); return 1; }
  rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (!cluster) { fprintf(stderr, "rd_kafka_mock_cluster_new failed\n"); return 1; }
  for (int i = 2; i < argc; i++) {
    char *colon = strchr(argv[i], ':');
    int partitions = colon ? atoi(colon + 1) : 1;
    if (colon) *colon = '\0';
    if (rd_kafka_mock_topic_create(cluster, argv[i], partitions, brokers < 3 ? brokers : 3)) {
      fprintf(stderr, "could not create topic %s\n", argv[i]);
      return 1;
    }
  }
  printf("%s\n", rd_kafka_mock_cluster_bootstraps(cluster));
  fflush(stdout);
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  char buf[64];
  while (!stopping && read(STDIN_FILENO, buf, sizeof buf) > 0) {}
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return 0;
}
