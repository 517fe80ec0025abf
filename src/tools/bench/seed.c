/* Seeding and discovery of the key space (seed.h). Seeding threads take
 * the keys i = t, t + T, t + 2T, ... (T of them, thread t), each with its
 * own buffer, over the one setup client; the first failure stops them all. */
#include "tools/bench/seed.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/bench/client.h"
#include "tools/bench/hist.h"
#include "tools/bench/payload.h"

/* Seeding's threads together hold at most this much object buffer. */
#define SEED_MEMORY (UINT64_C(1) << 30)

typedef struct seeder {
    const bench_opts_t *o;
    s3r_client_t *c;
    uint64_t first, stride;
    _Atomic int *failed;
    _Atomic uint64_t *written;
    pthread_t th;
} seeder_t;

char *bench_key_name(const bench_opts_t *o, uint64_t i)
{
    char *k = NULL;
    if (asprintf(&k, "%sobj-%08llu", o->prefix, (unsigned long long)i) < 0)
        return NULL;
    return k;
}

uint64_t bench_seed_size(const bench_opts_t *o, uint64_t i)
{
    /* splitmix64 of the index: the same size for key i in every run */
    uint64_t z = i + UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    z ^= z >> 31;
    return o->size_min + z % (o->size_max - o->size_min + 1);
}

static void *seed_main(void *arg)
{
    seeder_t *s = arg;
    const bench_opts_t *o = s->o;
    char *buf = malloc(o->size_max);
    if (!buf) {
        fprintf(stderr, "s3rdma-bench: seeding: out of memory\n");
        atomic_store(s->failed, 1);
        return NULL;
    }
    payload_body_t body;
    payload_body_init(&body, buf, o->size_max, UINT64_C(0x5EED));
    for (uint64_t i = s->first; i < o->seed_objects && !atomic_load(s->failed); i += s->stride) {
        char *key = bench_key_name(o, i);
        if (!key) {
            atomic_store(s->failed, 1);
            break;
        }
        uint64_t len = bench_seed_size(o, i);
        payload_stamp(&body, buf, len, key);
        s3r_status_t st = s3r_object_put(s->c, o->bucket, key, buf, len, NULL);
        free(key);
        if (st != S3R_OK) {
            if (!atomic_exchange(s->failed, 1))
                bench_client_error(s->c, "seed an object", st);
            break;
        }
        atomic_fetch_add(s->written, 1);
    }
    free(buf);
    return NULL;
}

/* Writes keys 0 .. --seed-objects - 1 over c. 0, or 1 after printing why. */
static int seed_write(const bench_opts_t *o, s3r_client_t *c, bench_keys_t *k)
{
    uint64_t n = (uint64_t)o->threads;
    if (n > o->seed_objects)
        n = o->seed_objects;
    if (n * o->size_max > SEED_MEMORY)
        n = SEED_MEMORY / o->size_max ? SEED_MEMORY / o->size_max : 1;
    seeder_t *s = calloc(n, sizeof *s);
    if (!s)
        return 1;
    _Atomic int failed = 0;
    _Atomic uint64_t written = 0;
    uint64_t t0 = hist_now_ns();
    uint64_t started = 0;
    for (; started < n; started++) {
        s[started] = (seeder_t){
            .o = o, .c = c, .first = started, .stride = n, .failed = &failed, .written = &written};
        if (pthread_create(&s[started].th, NULL, seed_main, &s[started]) != 0) {
            fprintf(stderr, "s3rdma-bench: cannot start a seeding thread\n");
            atomic_store(&failed, 1);
            break;
        }
    }
    for (uint64_t i = 0; i < started; i++)
        pthread_join(s[i].th, NULL);
    k->seed_secs = (double)(hist_now_ns() - t0) / 1e9;
    k->written = atomic_load(&written);
    free(s);
    return atomic_load(&failed) ? 1 : 0;
}

/* Names the keys under the prefix. */
static int discover(const bench_opts_t *o, s3r_client_t *c, bench_keys_t *k)
{
    s3r_list_opts_t lo = {.prefix = o->prefix, .all_pages = 1};
    s3r_object_list_t *l = NULL;
    s3r_status_t st = s3r_object_list(c, o->bucket, &lo, &l);
    if (st != S3R_OK) {
        bench_client_error(c, "list the existing objects", st);
        return 1;
    }
    k->keys = calloc(l->n_objects ? l->n_objects : 1, sizeof(char *));
    for (size_t i = 0; k->keys && i < l->n_objects; i++)
        if ((k->keys[k->n] = strdup(l->objects[i].key)))
            k->n++;
    s3r_object_list_free(l);
    if (k->n == 0) {
        fprintf(stderr,
                "s3rdma-bench: --seed-objects 0 and no objects under s3://%s/%s: run "
                "'run write' first or give --seed-objects N\n",
                o->bucket, o->prefix);
        return 1;
    }
    return 0;
}

int bench_keys_prepare(const bench_opts_t *o, s3r_client_t *setup, int write, int names,
                       bench_keys_t *k)
{
    memset(k, 0, sizeof *k);
    s3r_status_t st = s3r_bucket_create(setup, o->bucket);
    if (st != S3R_OK && st != S3R_ERR_BUCKET_EXISTS) {
        bench_client_error(setup, "create the bucket", st);
        return 1;
    }
    if (o->seed_objects == 0)
        return names ? discover(o, setup, k) : 0;
    if (names) {
        k->keys = calloc(o->seed_objects, sizeof(char *));
        if (!k->keys)
            return 1;
        for (; k->n < o->seed_objects; k->n++)
            if (!(k->keys[k->n] = bench_key_name(o, k->n)))
                return 1;
    }
    k->n = o->seed_objects;
    return write ? seed_write(o, setup, k) : 0;
}

void bench_keys_free(bench_keys_t *k)
{
    for (uint64_t i = 0; k->keys && i < k->n; i++)
        free(k->keys[i]);
    free(k->keys);
    k->keys = NULL;
}
