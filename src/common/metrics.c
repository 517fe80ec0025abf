#include "common/metrics.h"

#include <inttypes.h>

/* Latency bucket upper bounds, in microseconds: 100 µs to 10 s. */
static const uint64_t metrics_latency_bounds_us[METRICS_LATENCY_BUCKETS] = {
    100,   250,    500,    1000,   2500,    5000,    10000,   25000,
    50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

void metrics_hist_observe(metrics_hist_t *h, uint64_t us)
{
    unsigned i = 0;
    while (i < METRICS_LATENCY_BUCKETS && us > metrics_latency_bounds_us[i])
        i++;
    atomic_fetch_add_explicit(&h->bucket[i], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_us, us, memory_order_relaxed);
}

void metrics_write_family(buf_t *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void metrics_write_single(buf_t *out, const char *name, const char *type, const char *help,
                          uint64_t value)
{
    metrics_write_family(out, name, type, help);
    metrics_write_sample(out, name, "", value);
}

void metrics_write_sample(buf_t *out, const char *name, const char *labels, uint64_t value)
{
    if (*labels)
        buf_printf(out, "%s{%s} %" PRIu64 "\n", name, labels, value);
    else
        buf_printf(out, "%s %" PRIu64 "\n", name, value);
}

void metrics_write_hist(buf_t *out, const char *name, const char *labels, const metrics_hist_t *h)
{
    const char *sep = *labels ? "," : "";
    uint64_t cum = 0;
    for (unsigned i = 0; i <= METRICS_LATENCY_BUCKETS; i++) {
        cum += atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        if (i < METRICS_LATENCY_BUCKETS)
            buf_printf(out, "%s_bucket{%s%sle=\"%g\"} %" PRIu64 "\n", name, labels, sep,
                       (double)metrics_latency_bounds_us[i] / 1e6, cum);
        else
            buf_printf(out, "%s_bucket{%s%sle=\"+Inf\"} %" PRIu64 "\n", name, labels, sep, cum);
    }
    uint64_t sum = atomic_load_explicit(&h->sum_us, memory_order_relaxed);
    const char *open = *labels ? "{" : "", *close = *labels ? "}" : "";
    buf_printf(out, "%s_sum%s%s%s %" PRIu64 ".%06" PRIu64 "\n", name, open, labels, close,
               sum / 1000000, sum % 1000000);
    buf_printf(out, "%s_count%s%s%s %" PRIu64 "\n", name, open, labels, close, cum);
}
