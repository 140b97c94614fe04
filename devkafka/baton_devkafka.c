/* baton_devkafka.c: librdkafka's mock cluster as a small standalone process,
 * the embedded Kafka of the demo and the integration tests. It listens on
 * loopback, creates the topics it is told to (--topic, repeatable), prints
 * "bootstrap=HOST:PORT[,...]" as its first stdout line and serves until
 * SIGTERM or SIGINT.
 *
 * Records live in memory only. The mock keeps at most 5 MiB or 100000
 * message sets per partition (hard-coded in librdkafka 2.0.2, no public knob)
 * and silently drops the oldest beyond that; a watchdog thread reports it
 * (event=retention_truncated) so a test that lost its head records says why.
 * The mock alone would also create any unknown topic a client asks about
 * (4 partitions), so a misspelt topic name would not fail by itself;
 * devkafka_guard.c stops that: only the --topic topics exist. */
#include "baton_log.h"
#include "baton_opts.h"
#include "devkafka_guard.h"
#include "devkafka_port.h"
#include "baton_util.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define DEVKAFKA_MAX_BROKERS 16
#define DEVKAFKA_MAX_PARTITIONS 100000
#define DEVKAFKA_MAX_TOPICS 64
/* How often the watchdog looks at the partitions' low watermarks. */
#define DEVKAFKA_WATCH_INTERVAL_MS 5000

typedef struct devkafka_opts_s {
    const char *topics[DEVKAFKA_MAX_TOPICS];
    int ntopics;
    int partitions; /* of every topic */
    int brokers;
    const char *racks; /* "r1,r2,...": rack of broker 1, 2, ...; NULL: none */
    int port;          /* --port: a fixed bootstrap port on 127.0.0.1; 0: none */
} devkafka_opts_t;

/* State shared by the main thread and the watchdog thread; stop is set under
 * lock and signalled through cond so the watchdog exits at once. */
typedef struct devkafka_watch_s {
    rd_kafka_t *rk;
    const char *const *topics;
    int ntopics;
    int partitions;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    atomic_int stop;
} devkafka_watch_t;

static void devkafka_usage(FILE *out) {
    fprintf(out, "usage: baton-devkafka --topic T [--topic T2 ...] --partitions N [--brokers B]\n"
                 "                      [--racks R1,R2,..] [--port N]\n"
                 "\n"
                 "Runs librdkafka's mock Kafka cluster on loopback with B brokers\n"
                 "(default 1) and the topics T, T2, ... of N partitions each. No other\n"
                 "topic is created on demand: a client asking for one gets\n"
                 "UNKNOWN_TOPIC_OR_PART, as from a broker with\n"
                 "auto.create.topics.enable=false. Prints \"bootstrap=HOST:PORT[,...]\"\n"
                 "as the first line on stdout, logs to stderr, and serves until SIGTERM\n"
                 "or SIGINT (exit 0). Records are kept in memory only. --racks sets the\n"
                 "rack each broker reports in Metadata (broker 1 gets R1, ...; a short\n"
                 "list repeats). --port N also listens on 127.0.0.1:N and relays it to\n"
                 "the first broker, a fixed bootstrap address for config files (the\n"
                 "brokers themselves stay on ports the kernel picks; clients learn them\n"
                 "from Metadata); the first line is then \"bootstrap=127.0.0.1:N\".\n"
                 "--version prints the version.\n");
}

/* Reports a command-line error naming the culprit, then the usage; exit 2. */
static void devkafka_bad_usage(const char *fmt, const char *what) {
    fputs("baton-devkafka: ", stderr);
    fprintf(stderr, fmt, what);
    fputc('\n', stderr);
    devkafka_usage(stderr);
    exit(2);
}

static void devkafka_parse_args(int argc, char **argv, devkafka_opts_t *o) {
    o->ntopics = 0;
    o->partitions = 0;
    o->brokers = 1;
    o->racks = NULL;
    o->port = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            devkafka_usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--version") == 0)
            baton_version_exit("baton-devkafka");
        int is_topic = strcmp(a, "--topic") == 0;
        int is_parts = strcmp(a, "--partitions") == 0;
        int is_brokers = strcmp(a, "--brokers") == 0;
        int is_racks = strcmp(a, "--racks") == 0;
        int is_port = strcmp(a, "--port") == 0;
        if (!is_topic && !is_parts && !is_brokers && !is_racks && !is_port)
            devkafka_bad_usage("unknown argument '%s'", a);
        if (i + 1 >= argc)
            devkafka_bad_usage("option '%s' needs a value", a);
        const char *v = argv[++i];
        int64_t n = 0;
        if (is_topic) {
            if (!*v || strlen(v) > 249 ||
                strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                    strlen(v))
                devkafka_bad_usage("bad value for --topic: '%s'", v);
            for (int t = 0; t < o->ntopics; t++)
                if (strcmp(o->topics[t], v) == 0)
                    devkafka_bad_usage("--topic '%s' given twice", v);
            if (o->ntopics == DEVKAFKA_MAX_TOPICS)
                devkafka_bad_usage("more than %s --topic options", "64");
            o->topics[o->ntopics++] = v;
        } else if (is_parts) {
            if (baton_parse_i64(v, 1, DEVKAFKA_MAX_PARTITIONS, &n) != 0)
                devkafka_bad_usage("bad value for --partitions: '%s'", v);
            o->partitions = (int)n;
        } else if (is_port) {
            if (baton_parse_i64(v, 1, 65535, &n) != 0)
                devkafka_bad_usage("bad value for --port: '%s'", v);
            o->port = (int)n;
        } else if (is_racks) {
            /* Names as baton-worker --rack accepts them, comma separated. */
            if (!*v ||
                strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-,") !=
                    strlen(v) ||
                strstr(v, ",,") || v[0] == ',' || v[strlen(v) - 1] == ',')
                devkafka_bad_usage("bad value for --racks: '%s'", v);
            o->racks = v;
        } else {
            if (baton_parse_i64(v, 1, DEVKAFKA_MAX_BROKERS, &n) != 0)
                devkafka_bad_usage("bad value for --brokers: '%s'", v);
            o->brokers = (int)n;
        }
    }
    if (!o->ntopics)
        devkafka_bad_usage("missing required option '%s'", "--topic");
    if (!o->partitions)
        devkafka_bad_usage("missing required option '%s'", "--partitions");
}

/* librdkafka's log callback; runs on librdkafka's internal threads. */
static void devkafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
    (void)rk;
    /* The handle is created before the mock it owns, so it has no
     * bootstrap.servers yet and warns about it: expected, not news. */
    if (strcmp(fac, "CONFWARN") == 0 && strstr(buf, "bootstrap.servers"))
        level = 7;
    baton_log_rdkafka(level, fac, buf);
}

/* Watchdog thread: once per interval, asks the mock (through its own client
 * handle, w->rk) for each partition's low watermark and warns once per
 * partition when retention has dropped records. Stops promptly once
 * w->stop is set. */
static void *devkafka_watch_main(void *arg) {
    devkafka_watch_t *w = arg;
    char *warned = xcalloc((size_t)w->ntopics * (size_t)w->partitions, 1);
    pthread_mutex_lock(&w->lock);
    while (!w->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += DEVKAFKA_WATCH_INTERVAL_MS / 1000;
        while (!w->stop && pthread_cond_timedwait(&w->cond, &w->lock, &ts) != ETIMEDOUT)
            ;
        if (w->stop)
            break;
        pthread_mutex_unlock(&w->lock);
        for (int i = 0; i < w->ntopics * w->partitions; i++) {
            int64_t lo = 0, hi = 0;
            const char *topic = w->topics[i / w->partitions];
            int p = i % w->partitions;
            if (atomic_load(&w->stop))
                break;
            if (warned[i])
                continue;
            rd_kafka_resp_err_t err =
                rd_kafka_query_watermark_offsets(w->rk, topic, p, &lo, &hi, 1000);
            if (err)
                break; /* shutting down or busy: try again next round */
            if (lo > 0) {
                warned[i] = 1;
                BLOG_WARN("event=retention_truncated topic=%s partition=%d "
                          "low=%" PRId64 " high=%" PRId64
                          " note=\"mock keeps 5MiB or 100000 batches per "
                          "partition; older records are gone\"",
                          baton_log_v(topic), p, lo, hi);
            }
        }
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    free(warned);
    return NULL;
}

int main(int argc, char **argv) {
    devkafka_opts_t o;
    char errstr[512] = "";
    baton_log_init("baton-devkafka", NULL);
    devkafka_parse_args(argc, argv, &o);

    /* Block the stop signals before any thread exists so every librdkafka
     * thread inherits the mask and only sigwait() below sees them. Reset
     * their dispositions first: a non-interactive shell starts background
     * commands with SIGINT ignored, and an ignored signal never reaches
     * sigwait(). */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigset_t stopset;
    sigemptyset(&stopset);
    sigaddset(&stopset, SIGTERM);
    sigaddset(&stopset, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stopset, NULL);
    signal(SIGPIPE, SIG_IGN);

    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, devkafka_log_cb);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
    if (!rk) {
        BLOG_ERROR("event=rdkafka_new_failed err=\"%s\"", baton_log_q(errstr));
        rd_kafka_conf_destroy(conf);
        return 1;
    }

    rd_kafka_mock_cluster_t *mcluster = rd_kafka_mock_cluster_new(rk, o.brokers);
    if (!mcluster) {
        BLOG_ERROR("event=mock_cluster_failed brokers=%d", o.brokers);
        rd_kafka_destroy(rk);
        return 1;
    }
    if (o.racks) {
        /* Broker ids of the mock cluster are 1..brokers. */
        char *list = strdup(o.racks), *save = NULL, *tok = NULL;
        if (!list)
            abort();
        for (int id = 1; id <= o.brokers; id++) {
            tok = strtok_r(id == 1 ? list : NULL, ",", &save);
            if (!tok) { /* a short list repeats */
                strcpy(list, o.racks);
                tok = strtok_r(list, ",", &save);
            }
            rd_kafka_mock_broker_set_rack(mcluster, id, tok);
            BLOG_INFO("event=broker_rack broker=%d rack=%s", id, baton_log_v(tok));
        }
        free(list);
    }
    int rf = o.brokers < 3 ? o.brokers : 3;
    rd_kafka_resp_err_t err = devkafka_guard_init(mcluster);
    if (err)
        BLOG_ERROR("event=guard_failed err=\"%s\"", baton_log_q(rd_kafka_err2str(err)));
    for (int t = 0; t < o.ntopics && !err; t++) {
        err = rd_kafka_mock_topic_create(mcluster, o.topics[t], o.partitions, rf);
        if (err)
            BLOG_ERROR("event=topic_create_failed topic=%s err=\"%s\"", baton_log_v(o.topics[t]),
                       baton_log_q(rd_kafka_err2str(err)));
    }
    if (err) {
        rd_kafka_mock_cluster_destroy(mcluster);
        rd_kafka_destroy(rk);
        return 1;
    }
    const char *bootstraps = rd_kafka_mock_cluster_bootstraps(mcluster);
    char fixed[64] = "";
    if (o.port) {
        char first[128];
        snprintf(first, sizeof(first), "%.*s", (int)strcspn(bootstraps, ","), bootstraps);
        if (devkafka_port_start(o.port, first, errstr, sizeof(errstr)) != 0) {
            fprintf(stderr, "baton-devkafka: %s\n", errstr);
            rd_kafka_mock_cluster_destroy(mcluster);
            rd_kafka_destroy(rk);
            return 1;
        }
        snprintf(fixed, sizeof(fixed), "127.0.0.1:%d", o.port);
    }
    printf("bootstrap=%s\n", fixed[0] ? fixed : bootstraps);
    fflush(stdout);
    for (int t = 1; t < o.ntopics; t++)
        BLOG_INFO("event=topic_created topic=%s partitions=%d", baton_log_v(o.topics[t]),
                  o.partitions);
    BLOG_INFO("event=ready bootstrap=%s topic=%s partitions=%d brokers=%d "
              "replication_factor=%d topics=%d",
              baton_log_v(fixed[0] ? fixed : bootstraps), baton_log_v(o.topics[0]), o.partitions,
              o.brokers, rf, o.ntopics);

    /* The watchdog is an ordinary client of the mock with its own handle, so
     * it can be destroyed while the mock still listens (the owner handle
     * never connects, and has nothing to reconnect to after shutdown). */
    devkafka_watch_t w = {.topics = o.topics, .ntopics = o.ntopics, .partitions = o.partitions};
    pthread_mutex_init(&w.lock, NULL);
    pthread_cond_init(&w.cond, NULL);
    pthread_t watch_thread;
    int watching = 0;
    rd_kafka_conf_t *wconf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(wconf, devkafka_log_cb);
    if (rd_kafka_conf_set(wconf, "bootstrap.servers", bootstraps, errstr, sizeof(errstr)) ==
            RD_KAFKA_CONF_OK &&
        (w.rk = rd_kafka_new(RD_KAFKA_PRODUCER, wconf, errstr, sizeof(errstr))) != NULL) {
        watching = pthread_create(&watch_thread, NULL, devkafka_watch_main, &w) == 0;
    } else {
        rd_kafka_conf_destroy(wconf);
    }
    if (!watching)
        BLOG_WARN("event=watchdog_not_started err=\"%s\"", baton_log_q(errstr));

    int sig = 0;
    while (sigwait(&stopset, &sig) != 0)
        ;
    BLOG_INFO("event=stopping signal=%s", sig == SIGINT ? "SIGINT" : "SIGTERM");

    if (watching) {
        pthread_mutex_lock(&w.lock);
        w.stop = 1;
        pthread_cond_signal(&w.cond);
        pthread_mutex_unlock(&w.lock);
        pthread_join(watch_thread, NULL);
    }
    if (w.rk)
        rd_kafka_destroy(w.rk);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);

    /* The cluster must go before the handle that owns its bookkeeping. */
    rd_kafka_mock_cluster_destroy(mcluster);
    rd_kafka_destroy(rk);
    BLOG_INFO("event=stopped");
    return 0;
}
