/* Prometheus metrics primitives: counters and fixed-bucket latency
 * histograms cheap enough for every request (one relaxed atomic add per
 * update: no lock, no allocation, no syscall), and the text exposition
 * format (version 0.0.4) they are written in.
 *
 * Updates and reads may race: a scrape reads each value once, so a
 * histogram's buckets, sum and count may come from slightly different
 * instants (as in every Prometheus client library), but each is a value
 * that was true, and counters never go backwards. */
#ifndef S3R_COMMON_METRICS_H
#define S3R_COMMON_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/buf.h"

typedef struct metrics_counter {
    _Atomic uint64_t v;
} metrics_counter_t;

static inline void metrics_add(metrics_counter_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed);
}

static inline uint64_t metrics_get(const metrics_counter_t *c)
{
    return atomic_load_explicit(&c->v, memory_order_relaxed);
}

/* Latency buckets: their upper bounds run from 100 µs to 10 s (metrics.c). */
#define METRICS_LATENCY_BUCKETS 16

/* A histogram over the latency buckets. Zeroed memory is empty. */
typedef struct metrics_hist {
    _Atomic uint64_t bucket[METRICS_LATENCY_BUCKETS + 1]; /* per bucket, the last +Inf */
    _Atomic uint64_t sum_us;
} metrics_hist_t;

/* Counts one observation of us microseconds. */
void metrics_hist_observe(metrics_hist_t *h, uint64_t us);

/* The exposition writers append to out; a full buffer truncates the page
 * (buf_t's maximum), never corrupts a line already written. */

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge,
 * histogram). help must not contain a newline or a backslash. */
void metrics_write_family(buf_t *out, const char *name, const char *type, const char *help);
/* One sample: name{labels} value, or name value when labels is "". labels
 * is the inside of the braces, e.g. op="GetObject",class="2xx", with values
 * already fit for it (our label values are our own constants). */
void metrics_write_sample(buf_t *out, const char *name, const char *labels, uint64_t value);
/* A family of one unlabelled sample: metrics_write_family, then
 * metrics_write_sample with labels "". */
void metrics_write_single(buf_t *out, const char *name, const char *type, const char *help,
                          uint64_t value);
/* A histogram's samples: name_bucket{labels,le="..."} (cumulative, the
 * bounds in seconds, ending with +Inf), name_sum (seconds) and name_count. */
void metrics_write_hist(buf_t *out, const char *name, const char *labels, const metrics_hist_t *h);

#endif
