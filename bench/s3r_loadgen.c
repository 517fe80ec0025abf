/* s3r_loadgen — load generator over libs3rdma's public API (include/s3rdma.h only).
 *
 * T threads each run GET (into a buffer), PUT (from a buffer), HEAD, or LIST
 * (1000 keys) of one object size back to back for -d seconds after -w
 * seconds of warm-up, over one transport (http, token or native), timing
 * every call; with -i N each thread keeps N asynchronous GETs or PUTs in
 * flight (s3r_op_t). Token and native buffers come from s3r_buf_alloc()
 * (registered once, zero-copy); HTTP buffers from malloc.
 * RDMA fallback is off, so a token run never silently measures HTTP.
 * Prints one line of key=value pairs:
 *
 *   ops=N errors=N secs=S ops_s=R MBps=M p50_us=A p90_us=B p99_us=C max_us=D
 *   http_ops=N token_ops=N native_ops=N fallbacks=N
 *
 * MBps counts object payload (10^6 bytes per MB).
 *
 * usage: s3r_loadgen -e http://HOST:PORT -r HOST:RPORT -a AK -s SK -B BUCKET
 *                    -t http|token|native -o get|put|head|list -z SIZE [-T THREADS]
 *                    [-d SECS] [-w WARMUP] [-i INFLIGHT] [-I NATIVE_INLINE]
 *                    [-P]   (-P: create the bucket, the GET object and the LIST keys first)
 *                    [-C]               (-C: one client per thread instead of one shared)
 *                    [-g GAP_US]        (-g: sleep this long after each request, 1 in flight)
 *
 * -g models sparse callers (a request, then idle): after each request the
 * thread sleeps GAP_US microseconds (clock_nanosleep with 1 ns timer slack,
 * so short gaps are not rounded up to the default 50 us slack); only the
 * requests are timed. ops_s then counts requests, gaps included.
 */
#define _GNU_SOURCE
#include <s3rdma.h>

#include <pthread.h>
#include <sys/prctl.h>
#include <stdbool.h>
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
enum { OP_GET, OP_PUT, OP_HEAD, OP_LIST };
#define LIST_KEYS 1000 /* -o list: -P writes this many keys under list/ */
static int g_op = OP_GET, g_threads = 1, g_prep, g_per_thread_client, g_inflight = 1;
static uint64_t g_size = 4096;
static long g_gap_us;
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

/* One operation of the run on slot i's buffer (synchronous). */
static s3r_status_t op_sync(s3r_client_t *cl, const char *key, void *buf, uint64_t *got)
{
    s3r_put_opts_t po = {.transport = g_tr};
    s3r_get_opts_t go = {.transport = g_tr};
    switch (g_op) {
    case OP_PUT:
        return s3r_object_put(cl, g_bucket, key, buf, g_size, &po);
    case OP_HEAD: {
        s3r_object_info_t *info = NULL;
        s3r_status_t st = s3r_object_head(cl, g_bucket, key, &info);
        *got = info ? info->size : 0;
        s3r_object_info_free(info);
        return st;
    }
    case OP_LIST: {
        s3r_list_opts_t lo = {.prefix = "list/", .max_keys = 1000};
        s3r_object_list_t *l = NULL;
        s3r_status_t st = s3r_object_list(cl, g_bucket, &lo, &l);
        *got = l ? l->n_objects : 0;
        s3r_object_list_free(l);
        return st;
    }
    default:
        return s3r_object_get(cl, g_bucket, key, buf, g_size, &go, got);
    }
}

/* What a successful op must have returned (bytes read, size, keys). */
static uint64_t op_expect(void)
{
    return g_op == OP_LIST ? LIST_KEYS : g_op == OP_PUT ? 0 : g_size;
}

static void *worker(void *arg)
{
    tstate_t *t = arg;
    s3r_client_t *cl = t->cl;
    int n = g_inflight;
    void **bufs = calloc((size_t)n, sizeof(*bufs));
    s3r_op_t **ops = calloc((size_t)n, sizeof(*ops));
    double *started = calloc((size_t)n, sizeof(*started));
    /* One allocation (one registration) sliced into the slots' buffers. */
    bool registered = g_tr == S3R_TRANSPORT_TOKEN || g_tr == S3R_TRANSPORT_NATIVE;
    char *mem = NULL;
    size_t total = (size_t)g_size * (size_t)n;
    if (registered) {
        s3r_status_t st = s3r_buf_alloc(cl, total, (void **)&mem);
        if (st != S3R_OK) {
            report_err(cl, "s3r_buf_alloc", st);
            t->setup_failed = 1;
            return NULL;
        }
    } else {
        mem = malloc(total);
    }
    memset(mem, 'a' + t->idx % 26, total);
    for (int i = 0; i < n; i++)
        bufs[i] = mem + (size_t)i * (size_t)g_size;
    char key[128];
    if (g_op == OP_PUT)
        snprintf(key, sizeof key, "put-%llu-%d", (unsigned long long)g_size, t->idx);
    else
        snprintf(key, sizeof key, "obj-%llu", (unsigned long long)g_size);
    s3r_put_opts_t po = {.transport = g_tr};
    s3r_get_opts_t go = {.transport = g_tr};
    /* With -i N > 1, slot i keeps one asynchronous GET or PUT in flight;
     * each is waited for in turn and started again. */
    for (int i = 0; n > 1 && i < n; i++) {
        started[i] = now();
        s3r_status_t st =
            g_op == OP_PUT ? s3r_object_put_async(cl, g_bucket, key, bufs[i], g_size, &po, &ops[i])
                           : s3r_object_get_async(cl, g_bucket, key, bufs[i], g_size, &go, &ops[i]);
        if (st != S3R_OK) {
            report_err(cl, "async start", st);
            t->setup_failed = 1;
            return NULL;
        }
    }
    for (int i = 0;; i = (i + 1) % n) {
        double t1 = n > 1 ? started[i] : now();
        if (now() >= g_tend)
            break;
        s3r_status_t st;
        uint64_t got = 0;
        if (n > 1) {
            st = s3r_op_wait(ops[i], &got);
            s3r_op_free(ops[i]);
            ops[i] = NULL;
        } else {
            st = op_sync(cl, key, bufs[i], &got);
        }
        double t2 = now();
        if (st != S3R_OK || got != op_expect()) {
            if (t->errors++ < 2)
                report_err(cl, "op", st);
        } else if (t1 >= g_tstart && t2 <= g_tend) {
            lat_push(&t->lat, (t2 - t1) * 1e6);
            t->bytes += g_op == OP_LIST || g_op == OP_HEAD ? 0 : g_size;
        }
        if (st != S3R_OK && t->errors > 1000 && t->lat.n == 0)
            break; /* consistently failing: give up */
        if (g_gap_us > 0) {
            struct timespec gap = {g_gap_us / 1000000, (g_gap_us % 1000000) * 1000};
            clock_nanosleep(CLOCK_MONOTONIC, 0, &gap, NULL);
        }
        if (n > 1) {
            started[i] = now();
            st = g_op == OP_PUT
                     ? s3r_object_put_async(cl, g_bucket, key, bufs[i], g_size, &po, &ops[i])
                     : s3r_object_get_async(cl, g_bucket, key, bufs[i], g_size, &go, &ops[i]);
            if (st != S3R_OK) {
                report_err(cl, "async start", st);
                break;
            }
        }
    }
    for (int i = 0; n > 1 && i < n; i++) {
        if (ops[i]) {
            s3r_op_wait(ops[i], NULL);
            s3r_op_free(ops[i]);
        }
    }
    if (registered)
        s3r_buf_free(cl, mem);
    else
        free(mem);
    free(bufs);
    free(ops);
    free(started);
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
    if (g_tr == S3R_TRANSPORT_TOKEN || g_tr == S3R_TRANSPORT_NATIVE) {
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
    while ((o = getopt(argc, argv, "e:r:a:s:B:t:o:z:T:d:w:i:I:g:PC")) != -1) {
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
            g_op = strcmp(optarg, "put") == 0    ? OP_PUT
                   : strcmp(optarg, "head") == 0 ? OP_HEAD
                   : strcmp(optarg, "list") == 0 ? OP_LIST
                                                 : OP_GET;
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
        case 'i':
            g_inflight = atoi(optarg);
            break;
        case 'I':
            g_cfg.native_inline = strtoull(optarg, NULL, 10);
            break;
        case 'g':
            g_gap_us = atol(optarg);
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
    if (!g_cfg.endpoint || !g_cfg.access_key || !g_cfg.secret_key || g_threads < 1 || !g_size ||
        g_inflight < 1 || (g_inflight > 1 && (g_op == OP_HEAD || g_op == OP_LIST)) ||
        g_gap_us < 0 || (g_gap_us > 0 && g_inflight > 1))
        goto usage;
    prctl(PR_SET_TIMERSLACK, 1UL); /* -g: sleep the gap asked, not 50 us more */
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
        for (int i = 0; g_op == OP_LIST && i < LIST_KEYS; i++) {
            snprintf(key, sizeof key, "list/%04d", i);
            st = s3r_object_put(g_client, g_bucket, key, data, 1, &po);
            if (st != S3R_OK) {
                report_err(g_client, "prep put", st);
                return 1;
            }
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
    fprintf(stderr,
            "usage: %s -e http://HOST:PORT -r HOST:RPORT -a AK -s SK -B BUCKET "
            "-t http|token|native -o get|put|head|list -z SIZE [-T THREADS] [-d SECS] [-w WARMUP] "
            "[-i INFLIGHT] [-I NATIVE_INLINE] [-g GAP_US] [-P] [-C]\n",
            argv[0]);
    return 2;
}
