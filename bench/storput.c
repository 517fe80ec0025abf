/* The local storage engine alone: T threads each PUT (stor_writer_open,
 * write, commit) SIZE-byte objects over 100 keys of their own for SECS
 * seconds, then print "p50_us p99_us ops_per_s p999_us max_us". No network, no S3 layer:
 * what a PUT costs in src/storage. Built against a tree's static libraries
 * (so an older tree's build can run beside this one):
 *
 *   gcc -O2 -I SRC/include -I SRC/src bench/storput.c BUILD/libs3r_storage.a \
 *       BUILD/libs3r_common.a -llmdb -lcrypto -lisal -lpthread -o storput
 *   ./storput DIR relaxed|fsync THREADS SIZE SECS [inline_max]
 *
 * DIR is made by the store if absent; reuse one between runs to keep its
 * shard directories. Uses only storage.h, which both trees share. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/storage.h"

#define MAX_SAMPLES (1 << 20)

static stor_t *st;
static stor_bucket_t bkt;
static size_t size;
static double secs;
static _Atomic int go;

typedef struct th {
    int t;
    double *lat; /* µs per PUT */
    size_t n;
} th_t;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void *run(void *arg)
{
    th_t *a = arg;
    char *data = malloc(size);
    memset(data, 'x' + a->t, size);
    while (!go)
        ;
    double end = now_us() + secs * 1e6;
    for (unsigned i = 0; a->n < MAX_SAMPLES; i++) {
        double t0 = now_us();
        if (t0 >= end)
            break;
        char key[64];
        snprintf(key, sizeof key, "t%d/k%u", a->t, i % 100);
        stor_writer_t *w;
        stor_meta_t meta = {0};
        if (stor_writer_open(st, &bkt, &w) != STOR_OK ||
            stor_writer_write(w, data, size) != STOR_OK ||
            stor_writer_commit(w, key, &meta) != STOR_OK) {
            fprintf(stderr, "PUT failed\n");
            exit(1);
        }
        stor_meta_free(&meta);
        a->lat[a->n++] = now_us() - t0;
    }
    free(data);
    return NULL;
}

static int cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s DIR relaxed|fsync THREADS SIZE SECS [inline_max]\n", argv[0]);
        return 2;
    }
    stor_durability_t mode =
        strcmp(argv[2], "fsync") == 0 ? STOR_DURABILITY_FSYNC : STOR_DURABILITY_RELAXED;
    int nt = atoi(argv[3]);
    size = (size_t)atol(argv[4]);
    secs = atof(argv[5]);
    if (stor_open(argv[1], mode, &st) != STOR_OK)
        return 1;
    if (argc > 6)
        stor_set_inline_max(st, (size_t)atol(argv[6]));
    stor_status_t s = stor_bucket_create(st, "bench", "o");
    if ((s != STOR_OK && s != STOR_ERR_BUCKET_EXISTS) ||
        stor_bucket_get(st, "bench", &bkt) != STOR_OK)
        return 1;
    th_t *ths = calloc((size_t)nt, sizeof *ths);
    pthread_t *tid = calloc((size_t)nt, sizeof *tid);
    for (int t = 0; t < nt; t++) {
        ths[t].t = t;
        ths[t].lat = malloc(MAX_SAMPLES * sizeof(double));
        pthread_create(&tid[t], NULL, run, &ths[t]);
    }
    double t0 = now_us();
    go = 1;
    size_t total = 0;
    for (int t = 0; t < nt; t++) {
        pthread_join(tid[t], NULL);
        total += ths[t].n;
    }
    double el = (now_us() - t0) / 1e6;
    double *all = malloc((total ? total : 1) * sizeof(double));
    size_t k = 0;
    for (int t = 0; t < nt; t++)
        for (size_t i = 0; i < ths[t].n; i++)
            all[k++] = ths[t].lat[i];
    qsort(all, total, sizeof(double), cmp);
    printf("%.1f %.1f %.0f %.1f %.1f\n", total ? all[total / 2] : 0,
           total ? all[total * 99 / 100] : 0, (double)total / el,
           total ? all[total * 999 / 1000] : 0, total ? all[total - 1] : 0);
    stor_close(st);
    return 0;
}
