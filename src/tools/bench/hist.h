/* An HDR-style latency histogram: values in nanoseconds in log-linear
 * buckets, 128 linear sub-buckets per power of two, so a value is kept to
 * within 1/64 of itself (exact below 128 ns; microsecond resolution is the
 * least it offers) from 0 to 2^40 ns (~18 minutes; larger values land in the
 * last bucket). Fixed size, no allocation: recording is a few instructions.
 *
 * Threads: one thread records into a histogram; any thread may read it at
 * the same time (the counts are relaxed atomics), which gives the live
 * per-second line a view without locks. */
#ifndef S3R_BENCH_HIST_H
#define S3R_BENCH_HIST_H

#include <stdatomic.h>
#include <stdint.h>

#define HIST_SUB_BITS 7
#define HIST_MAX_BITS 40
#define HIST_BUCKETS                                                                               \
    ((HIST_MAX_BITS - HIST_SUB_BITS) * (1 << (HIST_SUB_BITS - 1)) + (1 << HIST_SUB_BITS))

typedef struct hist {
    _Atomic uint64_t counts[HIST_BUCKETS];
    _Atomic uint64_t n, sum_ns, min_ns, max_ns; /* min_ns is UINT64_MAX while empty */
} hist_t;

/* The monotonic clock in nanoseconds: what every latency the tool records
 * is measured with. */
uint64_t hist_now_ns(void);
/* Empties h. A zeroed hist_t must be reset before use. */
void hist_reset(hist_t *h);
/* Records one value; only h's writer thread may call it. */
void hist_record(hist_t *h, uint64_t ns);
/* Adds src's counts into dst (dst's writer only). */
void hist_add(hist_t *dst, const hist_t *src);
/* dst = a - b, for a snapshot taken after b of the same counts: the values
 * recorded in between (min and max are a's). */
void hist_diff(hist_t *dst, const hist_t *a, const hist_t *b);
/* The value at percentile p (0..100) in nanoseconds: the middle of the
 * bucket holding the ceil(p/100 * n)-th smallest value, kept within
 * [min, max]; monotonic in p. 0 when h is empty. */
double hist_percentile(const hist_t *h, double p);
uint64_t hist_count(const hist_t *h);
/* The smallest / largest value recorded (exact); 0 when empty. */
uint64_t hist_min(const hist_t *h);
uint64_t hist_max(const hist_t *h);
double hist_mean(const hist_t *h);

#endif
