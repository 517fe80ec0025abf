/* The log-linear histogram of hist.h. Bucket index of v: below 2^7 the value
 * itself; above, with b = floor(log2 v) - 6, the top 7 bits of v (v >> b, in
 * [64, 128)) offset by 64 per power of two. */
#include "tools/bench/hist.h"

#include <time.h>

#define SUB  (1u << HIST_SUB_BITS)
#define HALF (SUB / 2)

static inline uint64_t ld(const _Atomic uint64_t *a)
{
    return atomic_load_explicit(a, memory_order_relaxed);
}

static inline void st(_Atomic uint64_t *a, uint64_t v)
{
    atomic_store_explicit(a, v, memory_order_relaxed);
}

static unsigned bucket_of(uint64_t v)
{
    if (v >= (UINT64_C(1) << HIST_MAX_BITS))
        return HIST_BUCKETS - 1;
    if (v < SUB)
        return (unsigned)v;
    unsigned b = (unsigned)(63 - __builtin_clzll(v)) - (HIST_SUB_BITS - 1);
    return b * HALF + (unsigned)(v >> b);
}

/* The lowest value of bucket i and its width. */
static void bucket_span(unsigned i, uint64_t *low, uint64_t *width)
{
    if (i < SUB) {
        *low = i;
        *width = 1;
        return;
    }
    unsigned b = i / HALF - 1;
    *low = (uint64_t)(i - b * HALF) << b;
    *width = UINT64_C(1) << b;
}

uint64_t hist_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hist_reset(hist_t *h)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        st(&h->counts[i], 0);
    st(&h->n, 0);
    st(&h->sum_ns, 0);
    st(&h->min_ns, UINT64_MAX);
    st(&h->max_ns, 0);
}

void hist_record(hist_t *h, uint64_t ns)
{
    /* Single writer: a relaxed load and store, no locked instruction. */
    _Atomic uint64_t *c = &h->counts[bucket_of(ns)];
    st(c, ld(c) + 1);
    st(&h->n, ld(&h->n) + 1);
    st(&h->sum_ns, ld(&h->sum_ns) + ns);
    if (ns < ld(&h->min_ns))
        st(&h->min_ns, ns);
    if (ns > ld(&h->max_ns))
        st(&h->max_ns, ns);
}

void hist_add(hist_t *dst, const hist_t *src)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        st(&dst->counts[i], ld(&dst->counts[i]) + ld(&src->counts[i]));
    st(&dst->n, ld(&dst->n) + ld(&src->n));
    st(&dst->sum_ns, ld(&dst->sum_ns) + ld(&src->sum_ns));
    if (ld(&src->min_ns) < ld(&dst->min_ns))
        st(&dst->min_ns, ld(&src->min_ns));
    if (ld(&src->max_ns) > ld(&dst->max_ns))
        st(&dst->max_ns, ld(&src->max_ns));
}

void hist_diff(hist_t *dst, const hist_t *a, const hist_t *b)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        st(&dst->counts[i], ld(&a->counts[i]) - ld(&b->counts[i]));
    st(&dst->n, ld(&a->n) - ld(&b->n));
    st(&dst->sum_ns, ld(&a->sum_ns) - ld(&b->sum_ns));
    st(&dst->min_ns, ld(&a->min_ns));
    st(&dst->max_ns, ld(&a->max_ns));
}

uint64_t hist_count(const hist_t *h)
{
    return ld(&h->n);
}

uint64_t hist_min(const hist_t *h)
{
    return ld(&h->n) ? ld(&h->min_ns) : 0;
}

uint64_t hist_max(const hist_t *h)
{
    return ld(&h->max_ns);
}

double hist_mean(const hist_t *h)
{
    uint64_t n = ld(&h->n);
    return n ? (double)ld(&h->sum_ns) / (double)n : 0.0;
}

double hist_percentile(const hist_t *h, double p)
{
    /* The bucket counts are the truth here: n may be read a moment apart
     * from them while a writer runs. */
    uint64_t n = 0;
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        n += ld(&h->counts[i]);
    if (n == 0)
        return 0.0;
    if (p < 0)
        p = 0;
    if (p > 100)
        p = 100;
    uint64_t rank = (uint64_t)((p / 100.0) * (double)n + 0.999999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    uint64_t seen = 0;
    unsigned i = 0;
    for (; i < HIST_BUCKETS; i++) {
        seen += ld(&h->counts[i]);
        if (seen >= rank)
            break;
    }
    uint64_t low, width;
    bucket_span(i < HIST_BUCKETS ? i : HIST_BUCKETS - 1, &low, &width);
    double v = (double)low + (double)(width - 1) / 2.0;
    double lo = (double)hist_min(h), hi = (double)hist_max(h);
    if (v < lo)
        v = lo;
    if (hi > 0 && v > hi)
        v = hi;
    return v;
}
