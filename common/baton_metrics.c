/* baton_metrics.c: the process-wide metrics registry and its Prometheus
 * text rendering. One mutex guards everything: updates are a few per batch
 * or per ZooKeeper event, rendering happens once per scrape. */
#include "baton_metrics.h"

#include "baton_util.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double baton_metrics_seconds_buckets[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                0.5,   1,     2.5,  5,     10,   30,  60};
const size_t baton_metrics_seconds_nbuckets =
    sizeof(baton_metrics_seconds_buckets) / sizeof(baton_metrics_seconds_buckets[0]);

typedef enum { M_COUNTER, M_GAUGE, M_GAUGE_VEC, M_HISTOGRAM } mtype_t;

typedef struct {
    char *label_value;
    double v;
} series_t;

struct baton_metric_s {
    mtype_t type;
    char *name, *help, *label;
    double v;         /* counter, gauge */
    series_t *series; /* gauge family */
    size_t nseries, capseries;
    double *bounds;    /* histogram */
    uint64_t *buckets; /* per bound, not cumulative; [nbounds] is +Inf */
    size_t nbounds;
    uint64_t count;
    double sum;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static baton_metric_t **reg;
static size_t nreg, capreg;

static int name_valid(const char *s) {
    if (!s || !*s)
        return 0;
    for (const char *p = s; *p; p++) {
        int alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' || *p == ':';
        if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
            return 0;
    }
    return 1;
}

/* Returns the metric called name, creating it; reg_lock held. */
static baton_metric_t *get_locked(mtype_t type, const char *name, const char *help) {
    for (size_t i = 0; i < nreg; i++)
        if (strcmp(reg[i]->name, name) == 0) {
            if (reg[i]->type != type) {
                fprintf(stderr, "baton_metrics: '%s' registered with two types\n", name);
                abort();
            }
            return reg[i];
        }
    if (!name_valid(name)) {
        fprintf(stderr, "baton_metrics: '%s' is not a valid metric name\n", name);
        abort();
    }
    baton_metric_t *m = xcalloc(1, sizeof(*m));
    m->type = type;
    m->name = xstrdup(name);
    m->help = xstrdup(help ? help : "");
    if (nreg == capreg) {
        capreg = capreg ? capreg * 2 : 32;
        reg = xrealloc(reg, sizeof(*reg) * capreg);
    }
    reg[nreg++] = m;
    return m;
}

static baton_metric_t *get(mtype_t type, const char *name, const char *help) {
    pthread_mutex_lock(&reg_lock);
    baton_metric_t *m = get_locked(type, name, help);
    pthread_mutex_unlock(&reg_lock);
    return m;
}

baton_metric_t *baton_metric_counter(const char *name, const char *help) {
    return get(M_COUNTER, name, help);
}

baton_metric_t *baton_metric_gauge(const char *name, const char *help) {
    return get(M_GAUGE, name, help);
}

baton_metric_t *baton_metric_gauge_vec(const char *name, const char *help, const char *label) {
    pthread_mutex_lock(&reg_lock);
    baton_metric_t *m = get_locked(M_GAUGE_VEC, name, help);
    if (!m->label)
        m->label = xstrdup(label);
    pthread_mutex_unlock(&reg_lock);
    return m;
}

baton_metric_t *baton_metric_histogram(const char *name, const char *help, const double *bounds,
                                       size_t nbounds) {
    pthread_mutex_lock(&reg_lock);
    baton_metric_t *m = get_locked(M_HISTOGRAM, name, help);
    if (!m->buckets) {
        m->nbounds = nbounds;
        m->bounds = xmalloc(sizeof(double) * (nbounds ? nbounds : 1));
        memcpy(m->bounds, bounds, sizeof(double) * nbounds);
        m->buckets = xcalloc(nbounds + 1, sizeof(uint64_t));
    }
    pthread_mutex_unlock(&reg_lock);
    return m;
}

void baton_metric_inc(baton_metric_t *m) { baton_metric_add(m, 1); }

void baton_metric_add(baton_metric_t *m, double v) {
    pthread_mutex_lock(&reg_lock);
    if (m->type == M_GAUGE || (m->type == M_COUNTER && v >= 0))
        m->v += v;
    pthread_mutex_unlock(&reg_lock);
}

void baton_metric_set(baton_metric_t *m, double v) {
    pthread_mutex_lock(&reg_lock);
    if (m->type == M_GAUGE)
        m->v = v;
    pthread_mutex_unlock(&reg_lock);
}

static series_t *series_find(baton_metric_t *m, const char *lv) {
    for (size_t i = 0; i < m->nseries; i++)
        if (strcmp(m->series[i].label_value, lv) == 0)
            return &m->series[i];
    return NULL;
}

void baton_metric_vec_set(baton_metric_t *m, const char *label_value, double v) {
    pthread_mutex_lock(&reg_lock);
    series_t *s = series_find(m, label_value);
    if (!s) {
        if (m->nseries == m->capseries) {
            m->capseries = m->capseries ? m->capseries * 2 : 16;
            m->series = xrealloc(m->series, sizeof(*m->series) * m->capseries);
        }
        s = &m->series[m->nseries++];
        s->label_value = xstrdup(label_value);
    }
    s->v = v;
    pthread_mutex_unlock(&reg_lock);
}

void baton_metric_vec_remove(baton_metric_t *m, const char *label_value) {
    pthread_mutex_lock(&reg_lock);
    series_t *s = series_find(m, label_value);
    if (s) {
        free(s->label_value);
        *s = m->series[--m->nseries]; /* order is restored by sorting at render */
    }
    pthread_mutex_unlock(&reg_lock);
}

void baton_metric_observe(baton_metric_t *m, double v) {
    pthread_mutex_lock(&reg_lock);
    if (m->type == M_HISTOGRAM) {
        size_t i = 0;
        while (i < m->nbounds && v > m->bounds[i])
            i++;
        m->buckets[i]++;
        m->count++;
        m->sum += v;
    }
    pthread_mutex_unlock(&reg_lock);
}

double baton_metric_value(baton_metric_t *m, const char *label_value) {
    pthread_mutex_lock(&reg_lock);
    double v = 0;
    if (m->type == M_HISTOGRAM)
        v = (double)m->count;
    else if (m->type == M_GAUGE_VEC) {
        series_t *s = label_value ? series_find(m, label_value) : NULL;
        v = s ? s->v : 0;
    } else
        v = m->v;
    pthread_mutex_unlock(&reg_lock);
    return v;
}

/* A growing output buffer. */
typedef struct {
    char *buf;
    size_t len, cap;
} out_t;

__attribute__((format(printf, 2, 3))) static void out_printf(out_t *o, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < o->cap - o->len) {
            o->len += (size_t)n;
            return;
        }
        o->cap = o->cap * 2 + (n > 0 ? (size_t)n : 0) + 256;
        o->buf = xrealloc(o->buf, o->cap);
    }
}

/* Prometheus floats: integers exactly, NaN/Inf spelled as the format wants. */
static void out_value(out_t *o, double v) {
    if (isnan(v))
        out_printf(o, "NaN");
    else if (isinf(v))
        out_printf(o, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0)
        out_printf(o, "%lld", (long long)v);
    else {
        /* The shortest of 15 or 17 digits that reads back exactly: 0.1, not
         * 0.10000000000000001. */
        char b[40];
        snprintf(b, sizeof(b), "%.15g", v);
        if (strtod(b, NULL) != v)
            snprintf(b, sizeof(b), "%.17g", v);
        out_printf(o, "%s", b);
    }
}

/* HELP text escapes backslash and newline; label values also the quote. */
static void out_escaped(out_t *o, const char *s, int quote) {
    for (; *s; s++) {
        if (*s == '\\')
            out_printf(o, "\\\\");
        else if (*s == '\n')
            out_printf(o, "\\n");
        else if (quote && *s == '"')
            out_printf(o, "\\\"");
        else
            out_printf(o, "%c", *s);
    }
}

/* Numeric label values (partitions) sort as numbers, the rest as strings. */
static int series_cmp(const void *a, const void *b) {
    const char *x = ((const series_t *)a)->label_value, *y = ((const series_t *)b)->label_value;
    char *ex, *ey;
    long long nx = strtoll(x, &ex, 10), ny = strtoll(y, &ey, 10);
    if (*x && *y && !*ex && !*ey && nx != ny)
        return nx < ny ? -1 : 1;
    return strcmp(x, y);
}

char *baton_metrics_render(size_t *len) {
    out_t o = {xmalloc(4096), 0, 4096};
    o.buf[0] = 0;
    static const char *types[] = {"counter", "gauge", "gauge", "histogram"};
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg; i++) {
        baton_metric_t *m = reg[i];
        out_printf(&o, "# HELP %s ", m->name);
        out_escaped(&o, m->help, 0);
        out_printf(&o, "\n# TYPE %s %s\n", m->name, types[m->type]);
        if (m->type == M_COUNTER || m->type == M_GAUGE) {
            out_printf(&o, "%s ", m->name);
            out_value(&o, m->v);
            out_printf(&o, "\n");
        } else if (m->type == M_GAUGE_VEC) {
            if (m->nseries > 1) /* none yet: series may be NULL */
                qsort(m->series, m->nseries, sizeof(*m->series), series_cmp);
            for (size_t k = 0; k < m->nseries; k++) {
                out_printf(&o, "%s{%s=\"", m->name, m->label);
                out_escaped(&o, m->series[k].label_value, 1);
                out_printf(&o, "\"} ");
                out_value(&o, m->series[k].v);
                out_printf(&o, "\n");
            }
        } else {
            uint64_t cum = 0;
            for (size_t k = 0; k <= m->nbounds; k++) {
                cum += m->buckets[k];
                out_printf(&o, "%s_bucket{le=\"", m->name);
                if (k < m->nbounds)
                    out_value(&o, m->bounds[k]);
                else
                    out_printf(&o, "+Inf");
                out_printf(&o, "\"} %llu\n", (unsigned long long)cum);
            }
            out_printf(&o, "%s_sum ", m->name);
            out_value(&o, m->sum);
            out_printf(&o, "\n%s_count %llu\n", m->name, (unsigned long long)m->count);
        }
    }
    pthread_mutex_unlock(&reg_lock);
    if (len)
        *len = o.len;
    return o.buf;
}

void baton_metrics_reset(void) {
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < nreg; i++) {
        baton_metric_t *m = reg[i];
        for (size_t k = 0; k < m->nseries; k++)
            free(m->series[k].label_value);
        free(m->series);
        free(m->bounds);
        free(m->buckets);
        free(m->name);
        free(m->help);
        free(m->label);
        free(m);
    }
    free(reg);
    reg = NULL;
    nreg = capreg = 0;
    pthread_mutex_unlock(&reg_lock);
}

void baton_metrics_zk_state(int state) {
    static int was_down; /* callers report from one thread (see the header) */
    if (state < 0) {
        baton_metric_inc(baton_metric_counter(BATON_M_ZK_EXPIRATIONS));
        baton_metric_set(baton_metric_gauge(BATON_M_ZK_CONNECTED), 0);
        was_down = 0;
    } else if (state == 0) {
        baton_metric_set(baton_metric_gauge(BATON_M_ZK_CONNECTED), 0);
        was_down = 1;
    } else {
        baton_metric_set(baton_metric_gauge(BATON_M_ZK_CONNECTED), 1);
        if (was_down)
            baton_metric_inc(baton_metric_counter(BATON_M_ZK_RECONNECTS));
        was_down = 0;
    }
}
