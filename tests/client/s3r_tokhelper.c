/* Helper for tests/integration/client/test_resilience.py and
 * test_token_security.py. Uses only the public API of libs3rdma.
 *
 *   s3r_tokhelper victim put BUCKET KEY SIZE SEED
 *   s3r_tokhelper victim get BUCKET KEY SIZE [SEED]
 *       Token transport, no fallback, one single (non-multipart) request.
 *       Allocates a registered buffer (s3r_buf_alloc), fills it (put), opens
 *       the RDMA session, prints "started", then runs the PUT/GET and prints
 *       "done STATUS BYTES" (the test kills it in between). A GET given a
 *       SEED then checks the bytes and prints "verify ok" or "verify bad".
 *   s3r_tokhelper victim mput|mget ...
 *       The same with a malloc()ed buffer, registered on first use: on the
 *       same host UCX then moves the bytes with process-to-process copies
 *       instead of a shared-memory segment the server maps.
 *
 *   s3r_tokhelper keeper BUCKET
 *       One long-lived client (token transport, no fallback) reading commands:
 *         rt KEY SIZE SEED   token PUT, token GET into another buffer, verify,
 *                            delete; prints "ok" or "fail <why>"
 *         quit
 *
 *   s3r_tokhelper hold SIZE SEED
 *       malloc()s SIZE bytes (so the registered region is exactly the buffer),
 *       fills it, prints "TOKEN <token>" for the whole buffer and keeps the
 *       session open, reading commands until EOF:
 *         hex OFF LEN     prints "HEX <lowercase hex of buf[OFF, OFF+LEN)>"
 *         fill SEED       refills the buffer; prints "filled"
 *
 * env: S3R_ENDPOINT, S3R_RDMA_ENDPOINT, S3R_ACCESS_KEY, S3R_SECRET_KEY
 *
 * Pattern: the buffer is a sequence of little-endian u64 words,
 * word[i] = (SEED << 40) | i (a trailing partial word holds its low bytes).
 * Any mix of two versions, or a shifted or truncated copy, is detectable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "s3rdma.h"

static s3r_client_t *cli;

static void fill(uint8_t *p, uint64_t n, uint64_t seed)
{
    uint64_t words = n / 8;
    for (uint64_t i = 0; i < words; i++) {
        uint64_t w = (seed << 40) | i;
        memcpy(p + i * 8, &w, 8); /* little-endian host (x86-64, aarch64) */
    }
    uint64_t w = (seed << 40) | words;
    memcpy(p + words * 8, &w, n - words * 8);
}

static int verify(const uint8_t *p, uint64_t n, uint64_t seed)
{
    uint64_t words = n / 8;
    for (uint64_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + i * 8, 8);
        if (w != ((seed << 40) | i))
            return -1;
    }
    uint64_t w = (seed << 40) | words;
    return memcmp(p + words * 8, &w, n - words * 8) == 0 ? 0 : -1;
}

static void explain(const char *what, s3r_status_t st)
{
    s3r_error_info_t e;
    if (s3r_client_last_error(cli, &e) == S3R_OK)
        fprintf(stderr, "%s: %s http=%d code=%s msg=%s\n", what, s3r_status_name(st), e.http_status,
                e.code, e.message);
    else
        fprintf(stderr, "%s: %s\n", what, s3r_status_name(st));
}

static int make_client(uint64_t single_put_max)
{
    s3r_config_t cfg;
    s3r_config_init(&cfg);
    cfg.endpoint = getenv("S3R_ENDPOINT");
    cfg.rdma_endpoint = getenv("S3R_RDMA_ENDPOINT");
    cfg.access_key = getenv("S3R_ACCESS_KEY");
    cfg.secret_key = getenv("S3R_SECRET_KEY");
    cfg.transport = S3R_TRANSPORT_TOKEN;
    cfg.rdma_fallback = 0;
    cfg.quiet = 1;
    if (single_put_max) {
        cfg.multipart_threshold = single_put_max;
        cfg.part_size = single_put_max;
    }
    s3r_status_t st = s3r_client_create(&cfg, &cli);
    if (st != S3R_OK) {
        fprintf(stderr, "client_create: %s\n", s3r_status_name(st));
        return -1;
    }
    return 0;
}

static int do_victim(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    int use_malloc = argv[1][0] == 'm';
    int put = strcmp(argv[1] + use_malloc, "put") == 0;
    const char *bucket = argv[2], *key = argv[3];
    uint64_t size = strtoull(argv[4], NULL, 0);
    int have_seed = argc > 5;
    uint64_t seed = have_seed ? strtoull(argv[5], NULL, 0) : 0;
    if (make_client(size + 1) != 0)
        return 1;
    s3r_status_t st = s3r_client_rdma_connect(cli);
    if (st != S3R_OK) {
        explain("connect", st);
        return 1;
    }
    void *buf = NULL;
    if (use_malloc) {
        buf = malloc(size);
        if (buf == NULL)
            return 1;
        /* Register it now (the registration is cached), so the kill lands in
         * the transfer rather than in REGION_ADD. */
        char tok[256];
        if ((st = s3r_rdma_token(cli, buf, size, tok, sizeof(tok))) != S3R_OK) {
            explain("register", st);
            return 1;
        }
    } else if ((st = s3r_buf_alloc(cli, size, &buf)) != S3R_OK) {
        explain("buf_alloc", st);
        return 1;
    }
    if (put)
        fill(buf, size, seed);
    else
        memset(buf, 0, size); /* fault the pages in before the transfer starts */
    printf("started\n");
    fflush(stdout);
    uint64_t n = 0;
    if (put)
        st = s3r_object_put(cli, bucket, key, buf, size, NULL);
    else
        st = s3r_object_get(cli, bucket, key, buf, size, NULL, &n);
    if (st != S3R_OK)
        explain(put ? "put" : "get", st);
    printf("done %s %llu\n", s3r_status_name(st), (unsigned long long)n);
    if (!put && have_seed && st == S3R_OK)
        printf("verify %s\n", n == size && verify(buf, size, seed) == 0 ? "ok" : "bad");
    fflush(stdout);
    if (use_malloc) {
        s3r_buf_unregister(cli, buf);
        free(buf);
    } else {
        s3r_buf_free(cli, buf);
    }
    s3r_client_destroy(cli);
    return st == S3R_OK ? 0 : 1;
}

static int keeper_rt(const char *bucket, const char *key, uint64_t size, uint64_t seed, char *why,
                     size_t why_len)
{
    uint8_t *a = malloc(size ? size : 1), *b = malloc(size + 1);
    int rc = -1;
    s3r_status_t st;
    uint64_t n = 0;
    if (a == NULL || b == NULL) {
        snprintf(why, why_len, "malloc");
        goto out;
    }
    fill(a, size, seed);
    memset(b, 0xee, size + 1);
    if ((st = s3r_object_put(cli, bucket, key, a, size, NULL)) != S3R_OK) {
        explain("keeper put", st);
        snprintf(why, why_len, "put %s", s3r_status_name(st));
        goto out;
    }
    if ((st = s3r_object_get(cli, bucket, key, b, size + 1, NULL, &n)) != S3R_OK) {
        explain("keeper get", st);
        snprintf(why, why_len, "get %s", s3r_status_name(st));
        goto out;
    }
    if (n != size || verify(b, size, seed) != 0) {
        snprintf(why, why_len, "content: %llu bytes", (unsigned long long)n);
        goto out;
    }
    if ((st = s3r_object_delete(cli, bucket, key)) != S3R_OK) {
        snprintf(why, why_len, "delete %s", s3r_status_name(st));
        goto out;
    }
    rc = 0;
out:
    if (a) {
        s3r_buf_unregister(cli, a);
        free(a);
    }
    if (b) {
        s3r_buf_unregister(cli, b);
        free(b);
    }
    return rc;
}

static int do_keeper(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    const char *bucket = argv[1];
    if (make_client(0) != 0)
        return 1;
    s3r_status_t st = s3r_client_rdma_connect(cli);
    if (st != S3R_OK) {
        explain("connect", st);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    char line[512];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        char key[256];
        unsigned long long size, seed;
        if (strncmp(line, "quit", 4) == 0)
            break;
        if (sscanf(line, "rt %255s %llu %llu", key, &size, &seed) != 3) {
            printf("fail bad command\n");
        } else {
            char why[256] = "";
            if (keeper_rt(bucket, key, size, seed, why, sizeof(why)) == 0)
                printf("ok\n");
            else
                printf("fail %s\n", why);
        }
        fflush(stdout);
    }
    s3r_stats_t s;
    s3r_client_stats(cli, &s);
    printf("STATS token_ops=%llu http_ops=%llu fallbacks=%llu errors=%llu sessions=%llu\n",
           (unsigned long long)s.token_ops, (unsigned long long)s.http_ops,
           (unsigned long long)s.fallbacks, (unsigned long long)s.errors,
           (unsigned long long)s.rdma_sessions);
    fflush(stdout);
    s3r_client_destroy(cli);
    return 0;
}

static int do_hold(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    uint64_t size = strtoull(argv[1], NULL, 0);
    uint64_t seed = strtoull(argv[2], NULL, 0);
    if (size == 0 || make_client(0) != 0)
        return 1;
    uint8_t *buf = malloc(size);
    if (buf == NULL)
        return 1;
    fill(buf, size, seed);
    char tok[512];
    s3r_status_t st = s3r_rdma_token(cli, buf, size, tok, sizeof(tok));
    if (st != S3R_OK) {
        explain("token", st);
        printf("ERROR %s\n", s3r_status_name(st));
        return 1;
    }
    printf("TOKEN %s\n", tok);
    fflush(stdout);
    char line[256];
    while (fgets(line, sizeof(line), stdin) != NULL) {
        unsigned long long off, len;
        if (sscanf(line, "hex %llu %llu", &off, &len) == 2) {
            if (off > size || len > size - off) {
                printf("HEX-ERROR out of range\n");
            } else {
                printf("HEX ");
                for (uint64_t i = 0; i < len; i++)
                    printf("%02x", buf[off + i]);
                printf("\n");
            }
        } else if (sscanf(line, "fill %llu", &off) == 1) {
            fill(buf, size, off);
            printf("filled\n");
        } else {
            printf("ERROR bad command\n");
        }
        fflush(stdout);
    }
    s3r_buf_unregister(cli, buf);
    free(buf);
    s3r_client_destroy(cli);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of tests/client/s3r_tokhelper.c\n");
        return 2;
    }
    if (strcmp(argv[1], "victim") == 0)
        return do_victim(argc - 1, argv + 1);
    if (strcmp(argv[1], "keeper") == 0)
        return do_keeper(argc - 1, argv + 1);
    if (strcmp(argv[1], "hold") == 0)
        return do_hold(argc - 1, argv + 1);
    fprintf(stderr, "unknown mode %s\n", argv[1]);
    return 2;
}
