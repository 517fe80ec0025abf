/* s3r_loadgen — load generator over libs3rdma's public API (include/s3rdma.h only).
 *
 * T threads each run GET (into a buffer) or PUT (from a buffer) of one object
 * size back to back for -d seconds after -w seconds of warm-up, over one
 * transport (http, token or native), timing every call. Token buffers come from
 * s3r_buf_alloc() (registered once, zero-copy); HTTP buffers from malloc.
 * RDMA fallback is off, so a token run never silently measures HTTP.
 * Prints one line of key=value pairs:
 *
 *   ops=N errors=N secs=S ops_s=R MBps=M p50_us=A p90_us=B p99_us=C max_us=D
 *   http_ops=N token_ops=N native_ops=N fallbacks=N
 *
 * MBps counts object payload (10^6 bytes per MB).
 *
 * usage: s3r_loadgen -e http://HOST:PORT -r HOST:RPORT -a AK -s SK -B BUCKET
 *                    -t http|token|native -o get|put -z SIZE [-T THREADS] [-d SECS]
 *                    [-w WARMUP] [-P]   (-P: create the bucket and GET object first)
 *                    [-C]               (-C: one client per thread instead of one shared)
 */
#define _GNU_SOURCE
#include <s3rdma.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_lat.h"

static s3r_config_t g_cfg;
static const char *g_bucket = "bench";
static s3r_transport_t g_tr = S3R_TRANSPORT_HTTP;
static int g_put, g_threads = 1, g_prep, g_per_thread_client;
static uint64_t g_size = 4096;
static double g_secs = 2.0, g_warm = 0.3, g_tstart, g_tend;
static s3r_client_t *g_client;

typedef struct {
    int idx;
    s3r_client_t *cl;
    lat_t lat;
    uint64_t bytes, errors;
    int setup_failed;
} tstate_t;

static void report_err(s3r_client_t *cl, const char *what, s3r_status_t st)
{
    s3r_error_info_t ei;
    if (s3r_client_last_error(cl, &ei) == S3R_OK)
        fprintf(stderr, "s3r_loadgen: %s: %s (%s) http=%d code=%s msg=%s\n", what,
                s3r_status_name(st), s3r_strerror(st), ei.http_status, ei.code, ei.message);
    else
        fprintf(stderr, "s3r_loadgen: %s: %s (%s)\n", what, s3r_status_name(st), s3r_strerror(st));
}

static void *worker(void *arg)
{
    tstate_t *t = arg;
    s3r_client_t *cl = t->cl;
    void *buf = NULL;
    if (g_tr == S3R_TRANSPORT_TOKEN) {
        s3r_status_t st = s3r_buf_alloc(cl, (size_t)g_size, &buf);
        if (st != S3R_OK) {
            report_err(cl, "s3r_buf_alloc", st);
            t->setup_failed = 1;
            return NULL;
        }
    } else {
        buf = malloc((size_t)g_size);
    }
    memset(buf, 'a' + t->idx % 26, (size_t)g_size);
    char key[128];
    if (g_put)
        snprintf(key, sizeof key, "put-%llu-%d", (unsigned long long)g_size, t->idx);
    else
        snprintf(key, sizeof key, "obj-%llu", (unsigned long long)g_size);
    s3r_put_opts_t po = {.transport = g_tr};
    s3r_get_opts_t go = {.transport = g_tr};
    for (;;) {
        double t1 = now();
        if (t1 >= g_tend)
            break;
        s3r_status_t st;
        uint64_t got = 0;
        if (g_put)
            st = s3r_object_put(cl, g_bucket, key, buf, g_size, &po);
        else
            st = s3r_object_get(cl, g_bucket, key, buf, g_size, &go, &got);
        double t2 = now();
        if (st != S3R_OK || (!g_put && got != g_size)) {
            if (t->errors++ < 2)
                report_err(cl, g_put ? "put" : "get", st);
            if (st != S3R_OK && t->errors > 1000 && t->lat.n == 0)
                break; /* consistently failing: give up */
            continue;
        }
        if (t1 >= g_tstart && t2 <= g_tend) {
            lat_push(&t->lat, (t2 - t1) * 1e6);
            t->bytes += g_size;
        }
    }
    if (g_tr == S3R_TRANSPORT_TOKEN)
        s3r_buf_free(cl, buf);
    else
        free(buf);
    return NULL;
}

static s3r_client_t *mkclient(void)
{
    s3r_client_t *cl = NULL;
    s3r_status_t st = s3r_client_create(&g_cfg, &cl);
    if (st != S3R_OK) {
        fprintf(stderr, "s3r_loadgen: s3r_client_create: %s\n", s3r_strerror(st));
        exit(1);
    }
    if (g_tr == S3R_TRANSPORT_TOKEN) {
        st = s3r_client_rdma_connect(cl);
        if (st != S3R_OK) {
            report_err(cl, "s3r_client_rdma_connect", st);
            exit(1);
        }
    }
    return cl;
}

int main(int argc, char **argv)
{
    s3r_config_init(&g_cfg);
    g_cfg.rdma_fallback = 0;
    g_cfg.quiet = 1;
    /* whole objects in one request: never multipart inside the benchmark */
    g_cfg.multipart_threshold = UINT64_C(1) << 40;
    int o;
    while ((o = getopt(argc, argv, "e:r:a:s:B:t:o:z:T:d:w:PC")) != -1) {
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
        case 'o':
            g_put = strcmp(optarg, "put") == 0;
            break;
        case 'z':
            g_size = strtoull(optarg, NULL, 10);
            break;
        case 'T':
            g_threads = atoi(optarg);
            break;
        case 'd':
            g_secs = atof(optarg);
            break;
        case 'w':
            g_warm = atof(optarg);
            break;
        case 'P':
            g_prep = 1;
            break;
        case 'C':
            g_per_thread_client = 1;
            break;
        default:
            goto usage;
        }
    }
    if (!g_cfg.endpoint || !g_cfg.access_key || !g_cfg.secret_key || g_threads < 1 || !g_size)
        goto usage;
    g_cfg.transport = g_tr;
    if (g_tr == S3R_TRANSPORT_HTTP)
        g_cfg.use_rdma = 0;

    g_client = mkclient();
    if (g_prep) {
        s3r_status_t st = s3r_bucket_create(g_client, g_bucket);
        if (st != S3R_OK && st != S3R_ERR_BUCKET_EXISTS) {
            report_err(g_client, "bucket create", st);
            return 1;
        }
        char key[128];
        snprintf(key, sizeof key, "obj-%llu", (unsigned long long)g_size);
        char *data = malloc((size_t)g_size);
        for (uint64_t i = 0; i < g_size; i++)
            data[i] = (char)(i * 131 + 7);
        s3r_put_opts_t po = {.transport = S3R_TRANSPORT_HTTP};
        st = s3r_object_put(g_client, g_bucket, key, data, g_size, &po);
        if (st != S3R_OK) {
            report_err(g_client, "prep put", st);
            return 1;
        }
        free(data);
    }

    double t0 = now();
    g_tstart = t0 + g_warm;
    g_tend = g_tstart + g_secs;
    pthread_t *th = calloc((size_t)g_threads, sizeof *th);
    tstate_t *ts = calloc((size_t)g_threads, sizeof *ts);
    for (int i = 0; i < g_threads; i++) {
        ts[i].idx = i;
        ts[i].cl = g_per_thread_client ? mkclient() : g_client;
    }
    /* clients are made before the clock matters: restart it */
    t0 = now();
    g_tstart = t0 + g_warm;
    g_tend = g_tstart + g_secs;
    for (int i = 0; i < g_threads; i++)
        pthread_create(&th[i], NULL, worker, &ts[i]);
    lat_t all = {0};
    uint64_t bytes = 0, errors = 0;
    int setup_failed = 0;
    for (int i = 0; i < g_threads; i++) {
        pthread_join(th[i], NULL);
        lat_append(&all, &ts[i].lat);
        bytes += ts[i].bytes;
        errors += ts[i].errors;
        setup_failed |= ts[i].setup_failed;
    }
    lat_sort(&all);
    size_t total = all.n;
    s3r_stats_t s = {0};
    for (int i = 0; i < g_threads; i++) {
        if (g_per_thread_client || i == 0) {
            s3r_stats_t x;
            if (s3r_client_stats(ts[i].cl, &x) == S3R_OK) {
                s.http_ops += x.http_ops;
                s.token_ops += x.token_ops;
                s.native_ops += x.native_ops;
                s.fallbacks += x.fallbacks;
            }
        }
    }
    if (g_per_thread_client) {
        s3r_stats_t x;
        if (s3r_client_stats(g_client, &x) == S3R_OK) {
            s.http_ops += x.http_ops;
            s.token_ops += x.token_ops;
            s.native_ops += x.native_ops;
        }
    }
    printf("ops=%zu errors=%llu secs=%.3f ops_s=%.1f MBps=%.1f p50_us=%.1f p90_us=%.1f "
           "p99_us=%.1f max_us=%.1f http_ops=%llu token_ops=%llu native_ops=%llu fallbacks=%llu\n",
           total, (unsigned long long)errors, g_secs, (double)total / g_secs,
           (double)bytes / g_secs / 1e6, lat_pct(&all, 50), lat_pct(&all, 90), lat_pct(&all, 99),
           lat_max(&all), (unsigned long long)s.http_ops, (unsigned long long)s.token_ops,
           (unsigned long long)s.native_ops, (unsigned long long)s.fallbacks);
    if (g_per_thread_client)
        for (int i = 0; i < g_threads; i++)
            s3r_client_destroy(ts[i].cl);
    s3r_client_destroy(g_client);
    return (setup_failed || (errors && !total)) ? 1 : 0;
usage:
    fprintf(
        stderr,
        "usage: %s -e http://HOST:PORT -r HOST:RPORT -a AK -s SK -B BUCKET "
        "-t http|token|native -o get|put -z SIZE [-T THREADS] [-d SECS] [-w WARMUP] [-P] [-C]\n",
        argv[0]);
    return 2;
}
