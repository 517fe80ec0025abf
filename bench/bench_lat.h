/* Latency samples of bench/httpload.c (the loads over libs3rdma are
 * build/s3rdma-bench's, with its own histogram): a monotonic clock, a growable
 * per-thread sample vector and percentiles of the merged, sorted samples.
 * Header only: the scripts build httpload from its single .c file. */
#ifndef S3R_BENCH_LAT_H
#define S3R_BENCH_LAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Latency samples in microseconds. Zero-initialized is empty. */
typedef struct {
    double *v;
    size_t n, cap;
} lat_t;

static void lat_reserve(lat_t *l, size_t n)
{
    if (n <= l->cap)
        return;
    size_t cap = l->cap ? l->cap : 4096;
    while (cap < n)
        cap *= 2;
    l->v = realloc(l->v, cap * sizeof(double));
    if (!l->v) {
        perror("realloc");
        exit(2);
    }
    l->cap = cap;
}

static void lat_push(lat_t *l, double us)
{
    lat_reserve(l, l->n + 1);
    l->v[l->n++] = us;
}

static int lat_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Appends part to all; call lat_sort before lat_pct. */
static void lat_append(lat_t *all, const lat_t *part)
{
    lat_reserve(all, all->n + part->n);
    if (part->n)
        memcpy(all->v + all->n, part->v, part->n * sizeof(double));
    all->n += part->n;
}

static void lat_sort(lat_t *l)
{
    if (l->n)
        qsort(l->v, l->n, sizeof(double), lat_cmp);
}

/* The p-th percentile (nearest rank) of sorted samples; 0 if there are none. */
static double lat_pct(const lat_t *l, double p)
{
    if (!l->n)
        return 0;
    size_t i = (size_t)(p / 100.0 * (double)(l->n - 1) + 0.5);
    return l->v[i < l->n ? i : l->n - 1];
}

static double lat_max(const lat_t *l)
{
    return l->n ? l->v[l->n - 1] : 0.0;
}

#endif
