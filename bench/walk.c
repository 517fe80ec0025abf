/* walk — loads a bucket with many small objects, or walks all its keys, over
 * libs3rdma's public API (include/s3rdma.h only); bench/list --walk drives it.
 *
 * load: T threads (sharing one client and its RDMA session) PUT keys PREFIX%08u for u in [FROM, N)
 *       (thread i takes u = FROM + i, FROM + i + T, ...), BYTES bytes each, over
 *       one transport, counting failures. Every key is a real object written
 *       through the server.
 * walk: one client lists every key under PREFIX with ListObjectsV2 and its
 *       continuation tokens, pages of 1,000 (a walk, as `aws s3 ls --recursive`
 *       does), one page in flight; each page is freed once counted.
 *
 * Prints one line of key=value pairs:
 *   load: ops=N errors=N secs=S ops_s=R native_ops=N http_ops=N
 *   walk: keys=N pages=N secs=S keys_s=R page_p50_ms=A page_p99_ms=B page_max_ms=C
 *         native_ops=N http_ops=N sorted=0|1
 *
 * usage: walk -e http://HOST:PORT -r HOST:RPORT -a AK -s SK -B BUCKET -t http|native
 *             -m load|walk [-p PREFIX] [-n N] [-f FROM] [-T THREADS] [-z BYTES]
 */
#define _GNU_SOURCE
#include <s3rdma.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wunused-function" /* bench_lat.h: lat_append */
#include "bench_lat.h"

static s3r_config_t g_cfg;
static const char *g_bucket = "walk", *g_prefix = "w/";
static s3r_transport_t g_tr = S3R_TRANSPORT_HTTP;
static unsigned g_n = 1000000, g_from, g_threads = 16;
static size_t g_bytes = 64;

static void report_err(s3r_client_t *cl, const char *what, s3r_status_t st)
{
    s3r_error_info_t ei;
    if (s3r_client_last_error(cl, &ei) == S3R_OK)
        fprintf(stderr, "walk: %s: %s http=%d code=%s msg=%s\n", what, s3r_status_name(st),
                ei.http_status, ei.code, ei.message);
    else
        fprintf(stderr, "walk: %s: %s\n", what, s3r_status_name(st));
}

static s3r_client_t *mkclient(void)
{
    s3r_client_t *cl = NULL;
    s3r_status_t st = s3r_client_create(&g_cfg, &cl);
    if (st != S3R_OK) {
        fprintf(stderr, "walk: s3r_client_create: %s\n", s3r_strerror(st));
        exit(1);
    }
    if (g_tr == S3R_TRANSPORT_NATIVE && (st = s3r_client_rdma_connect(cl)) != S3R_OK) {
        report_err(cl, "s3r_client_rdma_connect", st);
        exit(1);
    }
    return cl;
}

typedef struct {
    unsigned idx;
    s3r_client_t *cl;
    uint64_t ops, errors;
} loader_t;

static void *load_thread(void *arg)
{
    loader_t *t = arg;
    s3r_client_t *cl = t->cl;
    char *body = calloc(1, g_bytes ? g_bytes : 1), key[1024];
    s3r_put_opts_t po = {0};
    if (g_tr == S3R_TRANSPORT_NATIVE)
        po.transport = S3R_TRANSPORT_NATIVE;
    for (unsigned u = g_from + t->idx; u < g_n; u += g_threads) {
        snprintf(key, sizeof key, "%s%08u", g_prefix, u);
        s3r_status_t st = s3r_object_put(cl, g_bucket, key, body, g_bytes, &po);
        if (st == S3R_OK)
            t->ops++;
        else if (t->errors++ < 3)
            report_err(cl, "put", st);
    }
    free(body);
    return NULL;
}

static int load(void)
{
    s3r_client_t *cl = mkclient();
    s3r_status_t st = s3r_bucket_create(cl, g_bucket);
    if (st != S3R_OK && st != S3R_ERR_BUCKET_EXISTS) {
        report_err(cl, "create the bucket", st);
        return 1;
    }
    loader_t *ts = calloc(g_threads, sizeof *ts);
    pthread_t *th = calloc(g_threads, sizeof *th);
    double t0 = now();
    for (unsigned i = 0; i < g_threads; i++) {
        ts[i].idx = i;
        ts[i].cl = cl;
        pthread_create(&th[i], NULL, load_thread, &ts[i]);
    }
    uint64_t ops = 0, errors = 0;
    for (unsigned i = 0; i < g_threads; i++) {
        pthread_join(th[i], NULL);
        ops += ts[i].ops;
        errors += ts[i].errors;
    }
    double secs = now() - t0;
    s3r_stats_t s;
    s3r_client_stats(cl, &s);
    printf("ops=%llu errors=%llu secs=%.3f ops_s=%.0f native_ops=%llu http_ops=%llu\n",
           (unsigned long long)ops, (unsigned long long)errors, secs, (double)ops / secs,
           (unsigned long long)s.native_ops, (unsigned long long)s.http_ops);
    s3r_client_destroy(cl);
    free(ts);
    free(th);
    return errors ? 1 : 0;
}

static int walk(void)
{
    s3r_client_t *cl = mkclient();
    lat_t pages = {0};
    uint64_t keys = 0;
    int sorted = 1;
    char *token = NULL, last[1024] = "";
    s3r_status_t st = S3R_OK;
    double t0 = now();
    for (;;) {
        s3r_list_opts_t lo = {.prefix = g_prefix, .max_keys = 1000, .continuation_token = token};
        s3r_object_list_t *l = NULL;
        double p0 = now();
        st = s3r_object_list(cl, g_bucket, &lo, &l);
        lat_push(&pages, (now() - p0) * 1e3);
        free(token);
        token = NULL;
        if (st != S3R_OK)
            break;
        for (size_t i = 0; i < l->n_objects; i++) {
            if (strcmp(l->objects[i].key, last) <= 0)
                sorted = 0;
            snprintf(last, sizeof last, "%s", l->objects[i].key);
        }
        keys += l->n_objects;
        if (l->truncated && l->next_token)
            token = strdup(l->next_token);
        s3r_object_list_free(l);
        if (!token)
            break;
    }
    double secs = now() - t0;
    if (st != S3R_OK) {
        report_err(cl, "list", st);
        return 1;
    }
    s3r_stats_t s;
    s3r_client_stats(cl, &s);
    lat_sort(&pages);
    printf("keys=%llu pages=%zu secs=%.3f keys_s=%.0f page_p50_ms=%.2f page_p99_ms=%.2f "
           "page_max_ms=%.2f native_ops=%llu http_ops=%llu sorted=%d\n",
           (unsigned long long)keys, pages.n, secs, (double)keys / secs, lat_pct(&pages, 50),
           lat_pct(&pages, 99), lat_max(&pages), (unsigned long long)s.native_ops,
           (unsigned long long)s.http_ops, sorted);
    s3r_client_destroy(cl);
    free(pages.v);
    return 0;
}

int main(int argc, char **argv)
{
    s3r_config_init(&g_cfg);
    g_cfg.rdma_fallback = 0;
    g_cfg.quiet = 1;
    const char *mode = NULL;
    int o;
    while ((o = getopt(argc, argv, "e:r:a:s:B:t:m:p:n:f:T:z:")) != -1) {
        switch (o) {
        case 'e':
            g_cfg.endpoint = optarg;
            break;
        case 'r':
            g_cfg.rdma_endpoint = optarg;
            break;
        case 'a':
            g_cfg.access_key = optarg;
            break;
        case 's':
            g_cfg.secret_key = optarg;
            break;
        case 'B':
            g_bucket = optarg;
            break;
        case 't':
            if (s3r_transport_parse(optarg, &g_tr) != S3R_OK)
                goto usage;
            break;
        case 'm':
            mode = optarg;
            break;
        case 'p':
            g_prefix = optarg;
            break;
        case 'n':
            g_n = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'f':
            g_from = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'T':
            g_threads = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 'z':
            g_bytes = strtoull(optarg, NULL, 10);
            break;
        default:
            goto usage;
        }
    }
    if (!mode || !g_threads)
        goto usage;
    g_cfg.transport = g_tr;
    if (strcmp(mode, "load") == 0)
        return load();
    if (strcmp(mode, "walk") == 0)
        return walk();
usage:
    fprintf(stderr, "usage: walk -e URL -r HOST:PORT -a AK -s SK -B BUCKET -t http|native "
                    "-m load|walk [-p PREFIX] [-n N] [-f FROM] [-T THREADS] [-z BYTES]\n");
    return 2;
}
