/* Test driver for libs3rdma, run by tests/integration/client (pytest). Uses
 * only the public API.
 *
 *   s3r_driver [options] put BUCKET KEY SIZE SEED     PUT SIZE pattern bytes
 *   s3r_driver [options] get BUCKET KEY SIZE SEED     GET and verify the pattern
 *   s3r_driver [options] roundtrip BUCKET SIZE...     put+get+verify+head+delete each size
 *   s3r_driver [options] threads BUCKET N OPS SIZE    N threads share one client
 *   s3r_driver [options] list BUCKET                  pagination / delimiter checks
 *   s3r_driver [options] errors BUCKET                error mapping checks
 *   s3r_driver [options] token SIZE                   print a token, hold the session until EOF
 *   s3r_driver [options] twice BUCKET KEY SIZE        put+get+verify, print "PAUSED" and wait
 *                                                     for a line on stdin, then put+get+verify
 *                                                     again (for killing the session between)
 *
 * options: --transport T, --no-fallback, --threshold N, --part-size N,
 *          --alloc (use s3r_buf_alloc buffers), --bufsize N (GET buffer size),
 *          --getfile / --putfile (go through files), --range START:LEN
 * env: S3R_ENDPOINT, S3R_RDMA_ENDPOINT, S3R_ACCESS_KEY, S3R_SECRET_KEY
 *
 * Prints one line "RESULT status=NAME http_ops=.. token_ops=.. fallbacks=..
 * errors=.. sessions=.. needed=.. code=.." at the end; exit 0 only if every
 * step passed. The byte pattern: b[i] = (i*31 + seed*7 + (i>>8)) & 0xff. */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "s3rdma.h"

static s3r_client_t *cli;
static int use_alloc, use_files;
static uint64_t bufsize_opt;
static uint64_t range_start, range_len;
static s3r_status_t last_st = S3R_OK; /* guarded by last_mu */
static pthread_mutex_t last_mu = PTHREAD_MUTEX_INITIALIZER;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static void fill(uint8_t *p, uint64_t n, unsigned seed, uint64_t base)
{
    for (uint64_t j = 0; j < n; j++) {
        uint64_t i = base + j;
        p[j] = (uint8_t)((i * 31 + seed * 7 + (i >> 8)) & 0xff);
    }
}

static int verify(const uint8_t *p, uint64_t n, unsigned seed, uint64_t base)
{
    for (uint64_t j = 0; j < n; j++) {
        uint64_t i = base + j;
        if (p[j] != (uint8_t)((i * 31 + seed * 7 + (i >> 8)) & 0xff)) {
            fprintf(stderr, "mismatch at byte %llu\n", (unsigned long long)i);
            return -1;
        }
    }
    return 0;
}

static void explain(const char *what, s3r_status_t st)
{
    s3r_error_info_t e;
    pthread_mutex_lock(&last_mu);
    last_st = st;
    pthread_mutex_unlock(&last_mu);
    if (s3r_client_last_error(cli, &e) == S3R_OK)
        fprintf(stderr, "%s: %s (%s) http=%d code=%s msg=%s needed=%llu\n", what,
                s3r_status_name(st), s3r_strerror(st), e.http_status, e.code, e.message,
                (unsigned long long)e.needed_bytes);
    else
        fprintf(stderr, "%s: %s\n", what, s3r_status_name(st));
}

static void *buf_get(uint64_t n)
{
    void *p = NULL;
    if (use_alloc) {
        if (s3r_buf_alloc(cli, n ? n : 1, &p) != S3R_OK)
            return NULL;
        return p;
    }
    return malloc(n ? n : 1);
}

static void buf_put(void *p)
{
    if (use_alloc) {
        s3r_buf_free(cli, p);
    } else {
        s3r_buf_unregister(cli, p);
        free(p);
    }
}

static int do_put(const char *bucket, const char *key, uint64_t size, unsigned seed)
{
    uint8_t *p = buf_get(size);
    CHECK(p != NULL, "allocating %llu bytes", (unsigned long long)size);
    fill(p, size, seed, 0);
    s3r_status_t st;
    if (use_files) {
        char path[] = "/tmp/s3r_driver_XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0, "mkstemp");
        CHECK(write(fd, p, size) == (ssize_t)size, "write temp file");
        close(fd);
        st = s3r_object_put_file(cli, bucket, key, path, NULL);
        unlink(path);
    } else {
        s3r_meta_t meta[] = {{"seed", "x"}};
        s3r_put_opts_t po = {.content_type = "application/x-test", .meta = meta, .n_meta = 1};
        st = s3r_object_put(cli, bucket, key, p, size, &po);
    }
    buf_put(p);
    if (st != S3R_OK) {
        explain("put", st);
        return 1;
    }
    return 0;
}

static int do_get(const char *bucket, const char *key, uint64_t size, unsigned seed)
{
    uint64_t want = size;
    if (range_len || range_start)
        want = range_len ? range_len : size - range_start;
    s3r_get_opts_t go = {.range_start = range_start, .range_len = range_len};
    s3r_status_t st;
    uint64_t n = 0;
    if (use_files) {
        char path[] = "/tmp/s3r_driver_XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0, "mkstemp");
        close(fd);
        st = s3r_object_get_file(cli, bucket, key, path, &go);
        if (st == S3R_OK) {
            FILE *f = fopen(path, "rb");
            uint8_t *p = malloc(want + 1);
            n = fread(p, 1, want + 1, f);
            fclose(f);
            int bad = n != want || verify(p, n, seed, range_start) < 0;
            free(p);
            unlink(path);
            CHECK(!bad, "file content differs (%llu bytes)", (unsigned long long)n);
            return 0;
        }
        unlink(path);
    } else {
        uint64_t cap = bufsize_opt ? bufsize_opt : want;
        uint8_t *p = buf_get(cap);
        CHECK(p != NULL, "allocating");
        st = s3r_object_get(cli, bucket, key, p, cap, &go, &n);
        if (st == S3R_OK) {
            int bad = n != want || verify(p, n, seed, range_start) < 0;
            buf_put(p);
            CHECK(!bad, "content differs: got %llu bytes, want %llu", (unsigned long long)n,
                  (unsigned long long)want);
            return 0;
        }
        buf_put(p);
    }
    explain("get", st);
    return 1;
}

static int do_roundtrip(const char *bucket, uint64_t size, unsigned seed)
{
    char key[64];
    snprintf(key, sizeof(key), "rt/obj-%llu", (unsigned long long)size);
    if (do_put(bucket, key, size, seed))
        return 1;
    if (do_get(bucket, key, size, seed))
        return 1;
    s3r_object_info_t *info;
    s3r_status_t st = s3r_object_head(cli, bucket, key, &info);
    CHECK(st == S3R_OK, "head: %s", s3r_status_name(st));
    CHECK(info->size == size, "head size %llu", (unsigned long long)info->size);
    CHECK(info->etag && info->etag[0] == '"', "etag");
    s3r_object_info_free(info);
    /* get_alloc too */
    void *d;
    uint64_t n;
    st = s3r_object_get_alloc(cli, bucket, key, NULL, &d, &n);
    CHECK(st == S3R_OK, "get_alloc: %s", s3r_status_name(st));
    CHECK(n == size && verify(d, n, seed, 0) == 0, "get_alloc content");
    s3r_free(d);
    st = s3r_object_delete(cli, bucket, key);
    CHECK(st == S3R_OK, "delete: %s", s3r_status_name(st));
    return 0;
}

typedef struct targ {
    const char *bucket;
    int id, ops;
    uint64_t size;
    int rc;
} targ_t;

static void *thread_main(void *a)
{
    targ_t *t = a;
    for (int i = 0; i < t->ops && t->rc == 0; i++) {
        char key[64];
        snprintf(key, sizeof(key), "mt/t%d-%d", t->id, i);
        unsigned seed = (unsigned)(t->id * 1000 + i);
        if (do_put(t->bucket, key, t->size, seed) || do_get(t->bucket, key, t->size, seed) ||
            s3r_object_delete(cli, t->bucket, key) != S3R_OK)
            t->rc = 1;
    }
    return NULL;
}

static int do_threads(const char *bucket, int n, int ops, uint64_t size)
{
    pthread_t th[64];
    targ_t args[64];
    CHECK(n > 0 && n <= 64, "1..64 threads");
    for (int i = 0; i < n; i++) {
        args[i] = (targ_t){.bucket = bucket, .id = i, .ops = ops, .size = size};
        pthread_create(&th[i], NULL, thread_main, &args[i]);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        rc |= args[i].rc;
    }
    return rc;
}

static int do_list(const char *bucket)
{
    /* 7 objects under a/, 3 under b/, 2 at the top. */
    const char *keys[] = {"a/1", "a/2", "a/3", "a/4", "a/5",  "a/6",
                          "a/7", "b/x", "b/y", "b/z", "top1", "top 2"};
    size_t nk = sizeof(keys) / sizeof(keys[0]);
    for (size_t i = 0; i < nk; i++)
        CHECK(s3r_object_put(cli, bucket, keys[i], "x", 1, NULL) == S3R_OK, "put %s", keys[i]);
    s3r_object_list_t *l;
    s3r_list_opts_t o = {.delimiter = "/"};
    CHECK(s3r_object_list(cli, bucket, &o, &l) == S3R_OK, "list delim");
    CHECK(l->n_prefixes == 2 && l->n_objects == 2, "delimiter: %zu prefixes %zu objects",
          l->n_prefixes, l->n_objects);
    CHECK(strcmp(l->prefixes[0], "a/") == 0 && strcmp(l->prefixes[1], "b/") == 0, "prefixes");
    s3r_object_list_free(l);
    /* Pages of 3 under a/, by hand. */
    s3r_list_opts_t p = {.prefix = "a/", .max_keys = 3};
    size_t total = 0, pages = 0;
    char *token = NULL;
    for (;;) {
        p.continuation_token = token;
        CHECK(s3r_object_list(cli, bucket, &p, &l) == S3R_OK, "list page");
        total += l->n_objects;
        pages++;
        free(token);
        token = l->truncated && l->next_token ? strdup(l->next_token) : NULL;
        s3r_object_list_free(l);
        if (token == NULL)
            break;
        CHECK(pages < 10, "too many pages");
    }
    CHECK(total == 7 && pages == 3, "pagination: %zu objects in %zu pages", total, pages);
    s3r_list_opts_t all = {.max_keys = 2, .all_pages = 1};
    CHECK(s3r_object_list(cli, bucket, &all, &l) == S3R_OK, "list all");
    CHECK(l->n_objects == nk, "all pages: %zu", l->n_objects);
    s3r_object_list_free(l);
    for (size_t i = 0; i < nk; i++)
        CHECK(s3r_object_delete(cli, bucket, keys[i]) == S3R_OK, "delete %s", keys[i]);
    s3r_bucket_list_t *bl;
    CHECK(s3r_bucket_list(cli, &bl) == S3R_OK, "bucket list");
    int found = 0;
    for (size_t i = 0; i < bl->n_buckets; i++)
        found |= strcmp(bl->buckets[i].name, bucket) == 0;
    s3r_bucket_list_free(bl);
    CHECK(found, "bucket %s not listed", bucket);
    CHECK(s3r_bucket_head(cli, bucket) == S3R_OK, "head bucket");
    return 0;
}

static int do_errors(const char *bucket)
{
    s3r_status_t st;
    s3r_error_info_t e;
    uint64_t n;
    char b[16];
    st = s3r_object_get(cli, bucket, "no/such/key", b, sizeof(b), NULL, &n);
    CHECK(st == S3R_ERR_NO_SUCH_KEY, "missing key: %s", s3r_status_name(st));
    CHECK(s3r_client_last_error(cli, &e) == S3R_OK && e.http_status == 404 &&
              strcmp(e.code, "NoSuchKey") == 0,
          "last_error: %d %s", e.http_status, e.code);
    s3r_object_info_t *info;
    st = s3r_object_head(cli, bucket, "no/such/key", &info);
    CHECK(st == S3R_ERR_NO_SUCH_KEY, "head missing: %s", s3r_status_name(st));
    st = s3r_bucket_head(cli, "no-such-bucket-s3r");
    CHECK(st == S3R_ERR_NO_SUCH_BUCKET, "head missing bucket: %s", s3r_status_name(st));
    st = s3r_object_put(cli, "no-such-bucket-s3r", "k", "x", 1, NULL);
    CHECK(st == S3R_ERR_NO_SUCH_BUCKET, "put missing bucket: %s", s3r_status_name(st));
    st = s3r_bucket_create(cli, bucket);
    CHECK(st == S3R_ERR_BUCKET_EXISTS, "create twice: %s", s3r_status_name(st));
    CHECK(s3r_client_last_error(cli, &e) == S3R_OK && e.http_status == 409 &&
              strcmp(e.code, "BucketAlreadyOwnedByYou") == 0,
          "create twice: %d %s", e.http_status, e.code);
    CHECK(s3r_object_put(cli, bucket, "e/k", "x", 1, NULL) == S3R_OK, "put");
    st = s3r_bucket_delete(cli, bucket);
    CHECK(st == S3R_ERR_BUCKET_NOT_EMPTY, "delete non-empty: %s", s3r_status_name(st));
    CHECK(s3r_object_delete(cli, bucket, "e/k") == S3R_OK, "delete");
    CHECK(strcmp(s3r_strerror(S3R_ERR_NO_SUCH_KEY), "no such key") == 0, "strerror");
    CHECK(strcmp(s3r_strerror((s3r_status_t)-999), "unknown status") == 0, "strerror unknown");
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"transport", required_argument, NULL, 't'},
        {"no-fallback", no_argument, NULL, 'F'},
        {"threshold", required_argument, NULL, 'T'},
        {"part-size", required_argument, NULL, 'P'},
        {"alloc", no_argument, NULL, 'a'},
        {"bufsize", required_argument, NULL, 'b'},
        {"files", no_argument, NULL, 'f'},
        {"range", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    s3r_config_t cfg;
    s3r_config_init(&cfg);
    cfg.endpoint = getenv("S3R_ENDPOINT");
    cfg.rdma_endpoint = getenv("S3R_RDMA_ENDPOINT");
    cfg.access_key = getenv("S3R_ACCESS_KEY");
    cfg.secret_key = getenv("S3R_SECRET_KEY");
    int ch;
    while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (ch) {
        case 't':
            if (s3r_transport_parse(optarg, &cfg.transport) != S3R_OK)
                return 2;
            break;
        case 'F':
            cfg.rdma_fallback = 0;
            break;
        case 'T':
            cfg.rdma_threshold = strtoull(optarg, NULL, 0);
            break;
        case 'P':
            cfg.part_size = strtoull(optarg, NULL, 0);
            cfg.multipart_threshold = cfg.part_size;
            break;
        case 'a':
            use_alloc = 1;
            break;
        case 'b':
            bufsize_opt = strtoull(optarg, NULL, 0);
            break;
        case 'f':
            use_files = 1;
            break;
        case 'r': {
            char *colon = strchr(optarg, ':');
            range_start = strtoull(optarg, NULL, 0);
            range_len = colon ? strtoull(colon + 1, NULL, 0) : 0;
            break;
        }
        default:
            return 2;
        }
    }
    argc -= optind;
    argv += optind;
    if (argc < 2) {
        fprintf(stderr, "usage: see the comment at the top of tests/client/s3r_driver.c\n");
        return 2;
    }
    s3r_status_t st = s3r_client_create(&cfg, &cli);
    if (st != S3R_OK) {
        printf("RESULT status=%s\n", s3r_status_name(st));
        return 1;
    }
    int rc = 1;
    const char *cmd = argv[0];
    if (strcmp(cmd, "put") == 0 && argc == 5)
        rc = do_put(argv[1], argv[2], strtoull(argv[3], NULL, 0), (unsigned)atoi(argv[4]));
    else if (strcmp(cmd, "get") == 0 && argc == 5)
        rc = do_get(argv[1], argv[2], strtoull(argv[3], NULL, 0), (unsigned)atoi(argv[4]));
    else if (strcmp(cmd, "roundtrip") == 0 && argc >= 3) {
        rc = 0;
        for (int i = 2; i < argc && rc == 0; i++)
            rc = do_roundtrip(argv[1], strtoull(argv[i], NULL, 0), (unsigned)i);
    } else if (strcmp(cmd, "threads") == 0 && argc == 5)
        rc = do_threads(argv[1], atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 0));
    else if (strcmp(cmd, "token") == 0 && argc == 2) {
        /* Prints a token for a registered buffer of SIZE bytes, then holds the
         * session open until stdin closes (for hand-made requests). */
        uint64_t n = strtoull(argv[1], NULL, 0);
        char *p = calloc(1, n), tok[512];
        st = s3r_rdma_token(cli, p, n, tok, sizeof(tok));
        if (st == S3R_OK) {
            printf("TOKEN %s\n", tok);
            fflush(stdout);
            char line[64];
            while (fgets(line, sizeof(line), stdin) != NULL) {
            }
            rc = 0;
        } else {
            explain("token", st);
        }
        s3r_buf_unregister(cli, p);
        free(p);
    } else if (strcmp(cmd, "twice") == 0 && argc == 4) {
        uint64_t n = strtoull(argv[3], NULL, 0);
        rc = do_put(argv[1], argv[2], n, 1) || do_get(argv[1], argv[2], n, 1);
        printf("PAUSED rc=%d\n", rc);
        fflush(stdout);
        char line[64];
        if (rc == 0 && fgets(line, sizeof(line), stdin) != NULL)
            rc = do_put(argv[1], argv[2], n, 2) || do_get(argv[1], argv[2], n, 2);
    } else if (strcmp(cmd, "list") == 0 && argc == 2)
        rc = do_list(argv[1]);
    else if (strcmp(cmd, "errors") == 0 && argc == 2)
        rc = do_errors(argv[1]);
    else {
        fprintf(stderr, "bad command\n");
        rc = 2;
    }
    s3r_stats_t s;
    s3r_error_info_t e;
    memset(&e, 0, sizeof(e));
    s3r_client_stats(cli, &s);
    (void)s3r_client_last_error(cli, &e);
    printf("RESULT status=%s http_ops=%llu token_ops=%llu token_bytes=%llu fallbacks=%llu "
           "errors=%llu sessions=%llu needed=%llu code=%s\n",
           s3r_status_name(last_st), (unsigned long long)s.http_ops,
           (unsigned long long)s.token_ops, (unsigned long long)s.token_bytes,
           (unsigned long long)s.fallbacks, (unsigned long long)s.errors,
           (unsigned long long)s.rdma_sessions, (unsigned long long)e.needed_bytes,
           e.code[0] ? e.code : "-");
    s3r_client_destroy(cli);
    return rc;
}
