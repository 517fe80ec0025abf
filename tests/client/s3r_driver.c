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
 *   s3r_driver [options] async BUCKET N SIZE          on one thread: N s3r_object_put_async all
 *                                                     in flight, wait all; then N
 *                                                     s3r_object_get_async into N buffers, wait
 *                                                     all, verify each; then the N GETs again,
 *                                                     reaped by s3r_op_wait_any as they land
 *   s3r_driver [options] hammer BUCKET N SIZE         N threads put+get+verify in a loop (each
 *                                                     with 4 async GETs in flight) until killed;
 *                                                     prints "RUNNING" once every thread has
 *                                                     done one round
 *   s3r_driver [options] store BUCKET KEY PATH        PUT the bytes of file PATH (--mode buf:
 *                                                     s3r_object_put, file: put_file, async,
 *                                                     parts: a caller-driven multipart upload,
 *                                                     part_size parts sent by parts_in_flight
 *                                                     threads at once with
 *                                                     s3r_multipart_part_at, last part first,
 *                                                     then complete)
 *   s3r_driver [options] fetch BUCKET KEY PATH        GET into file PATH (--mode buf:
 *                                                     s3r_object_get into --bufsize bytes
 *                                                     (default: HEAD's size), alloc:
 *                                                     get_alloc, sized: get_sized (one
 *                                                     allocator call, for the body's size),
 *                                                     file: get_file, async)
 *   s3r_driver [options] head BUCKET KEY              print "HEAD size=.. etag=.. ctype=..
 *                                                     mtime=.." and one "META name=value"
 *                                                     per entry
 *   s3r_driver [options] copy SBUCKET SKEY DBUCKET DKEY
 *   s3r_driver [options] rm BUCKET KEY
 *   s3r_driver [options] mb|rb|hb BUCKET              create / delete / head a bucket
 *   s3r_driver [options] lb                           print "BUCKET name created" per bucket
 *   s3r_driver [options] fork BUCKET SIZE             put+get+verify, leave an async GET in
 *                                                     flight, fork; the child (exit code 0 only
 *                                                     if all passed; prints "CHILD inherited=ST
 *                                                     new=ST pending=ST http_ops=N native_ops=N")
 *                                                     frees the pending GET, put+get+verify with
 *                                                     the inherited client and with a new one,
 *                                                     destroys both; the parent settles its GET,
 *                                                     waits for the child and put+get+verify
 *                                                     again ("FORK child_rc=N")
 *   s3r_driver [options] ls BUCKET PREFIX DELIM START_AFTER MAX_KEYS ALL [TOKEN]
 *                                                     one s3r_object_list ("-" = unset; ALL 0/1):
 *                                                     "OBJ hex(key) size etag mtime",
 *                                                     "PRE hex(prefix)", "TRUNCATED 0|1",
 *                                                     "NEXT token" (when there is one)
 *   s3r_driver [options] put-v0 BUCKET KEY            s3r_object_put as a program built against
 *                                                     S3RDMA_0 calls it (dlvsym), its options
 *                                                     struct at that layout's size, right before
 *                                                     an unmapped page: body "v0", Content-Type
 *                                                     application/x-v0
 *
 * options: --transport T, --no-fallback, --threshold N, --part-size N,
 *          --alloc (use s3r_buf_alloc buffers), --bufsize N (GET buffer size),
 *          --files (go through files), --range START:LEN, --mode M (store/fetch),
 *          --content-type T, --meta NAME=VALUE (repeatable; put/store),
 *          --native-inline N (the largest reply body asked for inline),
 *          --parts-in-flight N (s3r_object_put's multipart parts at once)
 * env: S3R_ENDPOINT, S3R_RDMA_ENDPOINT, S3R_ACCESS_KEY, S3R_SECRET_KEY, S3R_CA_BUNDLE
 *
 * Prints one line "RESULT status=NAME http_ops=.. http_bytes=.. token_ops=..
 * token_bytes=.. native_ops=.. native_bytes=.. fallbacks=.. errors=..
 * sessions=.. needed=.. http_status=.. code=.." at the end; exit 0 only if
 * every step passed. The byte pattern: b[i] = (i*31 + seed*7 + (i>>8)) & 0xff.
 * put writes Content-Type application/x-test (or --content-type) and the
 * metadata seed=SEED (plus --meta). */
#include <dlfcn.h> /* dlvsym: _GNU_SOURCE, set by the build */
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "s3rdma.h"

static s3r_client_t *cli;
static int use_alloc, use_files;
static uint64_t bufsize_opt;
static uint64_t range_start, range_len;
static const char *mode_opt = "buf";
static const char *ctype_opt;
static s3r_meta_t meta_opt[9];
static size_t n_meta_opt;
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
        char seedstr[16];
        snprintf(seedstr, sizeof(seedstr), "%u", seed);
        s3r_meta_t meta[10] = {{"seed", seedstr}};
        for (size_t i = 0; i < n_meta_opt; i++)
            meta[1 + i] = meta_opt[i];
        s3r_put_opts_t po = {.content_type = ctype_opt ? ctype_opt : "application/x-test",
                             .meta = meta,
                             .n_meta = 1 + n_meta_opt};
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
    /* us-east-1 (the test server's region) answers its owner's re-create 200. */
    st = s3r_bucket_create(cli, bucket);
    CHECK(st == S3R_OK, "create twice: %s", s3r_status_name(st));
    CHECK(s3r_object_put(cli, bucket, "e/k", "x", 1, NULL) == S3R_OK, "put");
    st = s3r_bucket_delete(cli, bucket);
    CHECK(st == S3R_ERR_BUCKET_NOT_EMPTY, "delete non-empty: %s", s3r_status_name(st));
    CHECK(s3r_object_delete(cli, bucket, "e/k") == S3R_OK, "delete");
    CHECK(strcmp(s3r_strerror(S3R_ERR_NO_SUCH_KEY), "no such key") == 0, "strerror");
    CHECK(strcmp(s3r_strerror((s3r_status_t)-999), "unknown status") == 0, "strerror unknown");
    return 0;
}

/* ---- async ----------------------------------------------------------------- */

static int do_async(const char *bucket, int n, uint64_t size)
{
    CHECK(n > 0 && n <= 4096, "1..4096 ops");
    uint8_t **bufs = calloc((size_t)n, sizeof(*bufs));
    s3r_op_t **ops = calloc((size_t)n, sizeof(*ops));
    char(*keys)[64] = calloc((size_t)n, sizeof(*keys));
    CHECK(bufs && ops && keys, "calloc");
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        snprintf(keys[i], sizeof(keys[i]), "async/%d", i);
        bufs[i] = buf_get(size);
        if (bufs[i] == NULL) {
            rc = 1;
            break;
        }
        fill(bufs[i], size, (unsigned)(100 + i), 0);
    }
    CHECK(rc == 0, "allocating buffers");
    /* Every PUT in flight, then wait for all (out of order: odd ones first,
     * polling with s3r_op_test in between). */
    s3r_put_opts_t po = {.content_type = "application/x-async"};
    for (int i = 0; i < n; i++) {
        s3r_status_t st = s3r_object_put_async(cli, bucket, keys[i], bufs[i], size, &po, &ops[i]);
        if (st != S3R_OK) {
            explain("put_async", st);
            return 1;
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int i = pass ? 0 : 1; i < n; i += 2) {
            (void)s3r_op_test(ops[i]);
            s3r_status_t st = s3r_op_wait(ops[i], NULL);
            if (st != S3R_OK) {
                explain("put wait", st);
                rc = 1;
            }
            CHECK(s3r_op_test(ops[i]) == 1, "op_test after wait");
            s3r_op_free(ops[i]);
            ops[i] = NULL;
        }
    }
    CHECK(rc == 0, "async PUTs failed");
    for (int i = 0; i < n; i++)
        memset(bufs[i], 0xee, size ? size : 1);
    for (int i = 0; i < n; i++) {
        s3r_status_t st = s3r_object_get_async(cli, bucket, keys[i], bufs[i], size, NULL, &ops[i]);
        if (st != S3R_OK) {
            explain("get_async", st);
            return 1;
        }
    }
    /* Poll until all report done (bounded), then wait in reverse order. */
    for (int spins = 0; spins < 1000000; spins++) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= s3r_op_test(ops[i]);
        if (all)
            break;
    }
    for (int i = n - 1; i >= 0; i--) {
        uint64_t got = 0;
        s3r_status_t st = s3r_op_wait(ops[i], &got);
        if (st != S3R_OK) {
            explain("get wait", st);
            rc = 1;
        } else if (got != size || verify(bufs[i], got, (unsigned)(100 + i), 0) < 0) {
            fprintf(stderr, "async get %d: %llu bytes, content differs\n", i,
                    (unsigned long long)got);
            rc = 1;
        }
        s3r_op_free(ops[i]);
        ops[i] = NULL;
    }
    size_t any = 0;
    CHECK(s3r_op_wait_any(ops, (size_t)n, -1, &any) == S3R_ERR_INVALID_ARG, "wait_any on no op");
    /* Every GET in flight again, reaped by s3r_op_wait_any in the order the
     * answers come: each op exactly once, answered when returned. */
    for (int i = 0; i < n && rc == 0; i++) {
        memset(bufs[i], 0xee, size ? size : 1);
        s3r_status_t st = s3r_object_get_async(cli, bucket, keys[i], bufs[i], size, NULL, &ops[i]);
        if (st != S3R_OK) {
            explain("get_async", st);
            return 1;
        }
    }
    for (int left = n; left > 0 && rc == 0; left--) {
        s3r_status_t st = s3r_op_wait_any(ops, (size_t)n, -1, &any);
        if (st != S3R_OK) {
            explain("wait_any", st);
            return 1;
        }
        CHECK(any < (size_t)n && ops[any] != NULL, "wait_any returned a free slot");
        CHECK(s3r_op_test(ops[any]) == 1, "op_test after wait_any");
        uint64_t got = 0;
        st = s3r_op_wait(ops[any], &got);
        if (st != S3R_OK) {
            explain("get wait", st);
            rc = 1;
        } else if (got != size || verify(bufs[any], got, (unsigned)(100 + any), 0) < 0) {
            fprintf(stderr, "async get %zu: %llu bytes, content differs\n", any,
                    (unsigned long long)got);
            rc = 1;
        }
        s3r_op_free(ops[any]);
        ops[any] = NULL;
    }
    for (int i = 0; i < n; i++)
        buf_put(bufs[i]);
    free(bufs);
    free(ops);
    free(keys);
    return rc;
}

/* ---- hammer: load until killed ------------------------------------------------- */

static atomic_int hammer_ready;

static void *hammer_main(void *a)
{
    targ_t *t = a;
    uint8_t *gb[4];
    for (int k = 0; k < 4; k++)
        gb[k] = malloc(t->size ? t->size : 1);
    for (unsigned i = 0;; i++) {
        char key[64];
        snprintf(key, sizeof(key), "hammer/t%d", t->id);
        unsigned seed = (unsigned)t->id * 1000 + (i & 255);
        if (do_put(t->bucket, key, t->size, seed)) {
            t->rc = 1;
            break;
        }
        s3r_op_t *ops[4] = {0};
        for (int k = 0; k < 4; k++)
            if (s3r_object_get_async(cli, t->bucket, key, gb[k], t->size, NULL, &ops[k]) != S3R_OK)
                t->rc = 1;
        int bad = do_get(t->bucket, key, t->size, seed);
        for (int k = 0; k < 4; k++) {
            uint64_t got = 0;
            if (ops[k] && (s3r_op_wait(ops[k], &got) != S3R_OK || got != t->size ||
                           verify(gb[k], got, seed, 0) < 0))
                bad = 1;
            s3r_op_free(ops[k]);
        }
        if (bad || t->rc) {
            t->rc = 1;
            break;
        }
        if (i == 0 && atomic_fetch_add(&hammer_ready, 1) + 1 == t->ops) {
            printf("RUNNING\n");
            fflush(stdout);
        }
    }
    for (int k = 0; k < 4; k++)
        free(gb[k]);
    return NULL;
}

static int do_hammer(const char *bucket, int n, uint64_t size)
{
    pthread_t th[64];
    targ_t args[64];
    CHECK(n > 0 && n <= 64, "1..64 threads");
    for (int i = 0; i < n; i++) {
        /* ops: the thread count, for the RUNNING line */
        args[i] = (targ_t){.bucket = bucket, .id = i, .ops = n, .size = size};
        pthread_create(&th[i], NULL, hammer_main, &args[i]);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        rc |= args[i].rc;
    }
    return rc ? rc : 1; /* only failures end the loop */
}

/* ---- arbitrary bytes through files -------------------------------------------- */

static uint8_t *read_whole(const char *path, uint64_t *n_p)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = buf_get((uint64_t)n);
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        buf_put(p);
        p = NULL;
    }
    fclose(f);
    *n_p = (uint64_t)n;
    return p;
}

static int write_whole(const char *path, const void *p, uint64_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(p, 1, (size_t)n, f) == (size_t)n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static s3r_config_t cfg_used; /* what cli was created with (fork's new client, --mode parts) */

/* --mode parts: threads take part indexes from the end down, so parts are
 * sent out of order and several at once. */
typedef struct parts_job {
    s3r_multipart_t *up;
    const uint8_t *data;
    uint64_t len, part;
    atomic_int next; /* parts not taken yet; the next taken is next - 1 */
    atomic_int failed;
} parts_job_t;

static void *parts_worker(void *arg)
{
    parts_job_t *j = arg;
    int i;
    while ((i = atomic_fetch_sub(&j->next, 1) - 1) >= 0 && !atomic_load(&j->failed)) {
        uint64_t off = (uint64_t)i * j->part, n = j->len - off < j->part ? j->len - off : j->part;
        s3r_status_t st = s3r_multipart_part_at(j->up, (unsigned)i + 1, j->data + off, n);
        if (st != S3R_OK) {
            explain("store part", st);
            atomic_store(&j->failed, 1);
        }
    }
    return NULL;
}

static s3r_status_t put_parts(const char *bucket, const char *key, const uint8_t *p, uint64_t n,
                              const s3r_put_opts_t *po)
{
    parts_job_t j = {.data = p, .len = n, .part = cfg_used.part_size};
    s3r_status_t st = s3r_multipart_start(cli, bucket, key, po, &j.up);
    if (st != S3R_OK)
        return st;
    atomic_init(&j.next, (int)((n + j.part - 1) / j.part));
    atomic_init(&j.failed, 0);
    pthread_t th[64];
    unsigned k = cfg_used.parts_in_flight ? cfg_used.parts_in_flight : 4, started = 0;
    k = k < 64 ? k : 64;
    /* this thread is one of the k; one that cannot start leaves its parts to the others */
    while (started + 1 < k && pthread_create(&th[started], NULL, parts_worker, &j) == 0)
        started++;
    parts_worker(&j);
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (atomic_load(&j.failed)) {
        s3r_multipart_abort(j.up);
        return S3R_ERR_IO;
    }
    return s3r_multipart_complete(j.up);
}

static int do_store(const char *bucket, const char *key, const char *path)
{
    s3r_put_opts_t po = {.content_type = ctype_opt, .meta = meta_opt, .n_meta = n_meta_opt};
    s3r_status_t st;
    if (strcmp(mode_opt, "file") == 0) {
        st = s3r_object_put_file(cli, bucket, key, path, &po);
    } else {
        uint64_t n = 0;
        uint8_t *p = read_whole(path, &n);
        CHECK(p != NULL, "reading %s", path);
        if (strcmp(mode_opt, "async") == 0) {
            s3r_op_t *op = NULL;
            st = s3r_object_put_async(cli, bucket, key, p, n, &po, &op);
            if (st == S3R_OK)
                st = s3r_op_wait(op, NULL);
            s3r_op_free(op);
        } else if (strcmp(mode_opt, "parts") == 0) {
            st = put_parts(bucket, key, p, n, &po);
        } else {
            st = s3r_object_put(cli, bucket, key, p, n, &po);
        }
        buf_put(p);
    }
    if (st != S3R_OK) {
        explain("store", st);
        return 1;
    }
    return 0;
}

/* --mode sized: s3r_object_get_sized's allocator, counting its calls. */
typedef struct sized {
    int calls;
    uint64_t size;
    void *given;
} sized_t;

static void *sized_alloc(void *arg, uint64_t size)
{
    sized_t *z = arg;
    z->calls++;
    z->size = size;
    z->given = size < SIZE_MAX ? malloc((size_t)size + 1) : NULL;
    return z->given;
}

static int do_fetch(const char *bucket, const char *key, const char *path)
{
    s3r_get_opts_t go = {.range_start = range_start, .range_len = range_len};
    s3r_status_t st;
    if (strcmp(mode_opt, "file") == 0) {
        st = s3r_object_get_file(cli, bucket, key, path, &go);
    } else if (strcmp(mode_opt, "alloc") == 0) {
        void *d = NULL;
        uint64_t n = 0;
        st = s3r_object_get_alloc(cli, bucket, key, &go, &d, &n);
        if (st == S3R_OK) {
            CHECK(((char *)d)[n] == '\0', "get_alloc: no NUL after the data");
            CHECK(write_whole(path, d, n) == 0, "writing %s", path);
        }
        s3r_free(d);
    } else if (strcmp(mode_opt, "sized") == 0) {
        sized_t z = {0};
        void *d = NULL;
        uint64_t n = 0;
        st = s3r_object_get_sized(cli, bucket, key, &go, sized_alloc, &z, &d, &n);
        if (st == S3R_OK) {
            CHECK(z.calls == 1 && d == z.given && z.size == n,
                  "get_sized: %d alloc calls, the last for %llu bytes, body %llu bytes", z.calls,
                  (unsigned long long)z.size, (unsigned long long)n);
            CHECK(write_whole(path, d, n) == 0, "writing %s", path);
        }
        free(d);
    } else {
        uint64_t cap = bufsize_opt;
        if (cap == 0) {
            s3r_object_info_t *info;
            st = s3r_object_head(cli, bucket, key, &info);
            if (st != S3R_OK) {
                explain("fetch head", st);
                return 1;
            }
            cap = info->size;
            s3r_object_info_free(info);
        }
        uint8_t *p = buf_get(cap);
        CHECK(p != NULL, "allocating %llu", (unsigned long long)cap);
        uint64_t n = 0;
        if (strcmp(mode_opt, "async") == 0) {
            s3r_op_t *op = NULL;
            st = s3r_object_get_async(cli, bucket, key, p, cap, &go, &op);
            if (st == S3R_OK)
                st = s3r_op_wait(op, &n);
            s3r_op_free(op);
        } else {
            st = s3r_object_get(cli, bucket, key, p, cap, &go, &n);
        }
        if (st == S3R_OK && write_whole(path, p, n) != 0) {
            buf_put(p);
            CHECK(0, "writing %s", path);
        }
        buf_put(p);
    }
    if (st != S3R_OK) {
        explain("fetch", st);
        return 1;
    }
    return 0;
}

/* ---- fork ------------------------------------------------------------------------ */

/* The child's half of do_fork: every status it saw on one line. */
static int fork_child(const char *bucket, uint64_t size, s3r_op_t *pending)
{
    uint64_t n = 0;
    s3r_status_t pend = s3r_op_wait(pending, &n);
    s3r_op_free(pending);
    int bad = pend != S3R_OK && pend != S3R_ERR_RDMA_UNAVAILABLE;
    s3r_status_t inh = S3R_OK, fresh = S3R_OK;
    if (do_put(bucket, "fork-child", size, 2) || do_get(bucket, "fork-child", size, 2) ||
        do_get(bucket, "fork-parent", size, 1))
        inh = last_st;
    s3r_stats_t s;
    s3r_client_stats(cli, &s);
    s3r_client_t *parent_cli = cli;
    if (s3r_client_create(&cfg_used, &cli) != S3R_OK) {
        fresh = S3R_ERR_NOMEM;
        cli = parent_cli;
    } else {
        if (do_put(bucket, "fork-new", size, 4) || do_get(bucket, "fork-new", size, 4) ||
            do_get(bucket, "fork-child", size, 2))
            fresh = last_st;
        s3r_client_destroy(cli);
        cli = parent_cli;
    }
    printf("CHILD inherited=%s new=%s pending=%s http_ops=%llu native_ops=%llu\n",
           s3r_status_name(inh), s3r_status_name(fresh), s3r_status_name(pend),
           (unsigned long long)s.http_ops, (unsigned long long)s.native_ops);
    fflush(stdout);
    s3r_client_destroy(cli);
    return bad || inh != S3R_OK || fresh != S3R_OK;
}

static int do_fork(const char *bucket, uint64_t size)
{
    if (do_put(bucket, "fork-parent", size, 1) || do_get(bucket, "fork-parent", size, 1))
        return 1;
    uint8_t *p = buf_get(size);
    CHECK(p != NULL, "allocating %llu bytes", (unsigned long long)size);
    s3r_op_t *op = NULL;
    s3r_status_t st = s3r_object_get_async(cli, bucket, "fork-parent", p, size, NULL, &op);
    if (st != S3R_OK) {
        explain("get_async", st);
        return 1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0)
        _exit(fork_child(bucket, size, op));
    uint64_t n = 0;
    st = s3r_op_wait(op, &n);
    s3r_op_free(op);
    if (st != S3R_OK) {
        explain("parent's get_async", st);
        return 1;
    }
    CHECK(n == size && verify(p, n, 1, 0) == 0, "parent's get_async: bad bytes");
    buf_put(p);
    int wst = 0;
    CHECK(waitpid(pid, &wst, 0) == pid, "waitpid");
    int child_rc = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst);
    printf("FORK child_rc=%d\n", child_rc);
    if (do_put(bucket, "fork-parent", size, 3) || do_get(bucket, "fork-parent", size, 3) ||
        do_get(bucket, "fork-child", size, 2))
        return 1;
    return child_rc != 0;
}

/* ---- control operations, printed for the test to compare --------------------- */

static void hex_out(const char *s)
{
    if (!*s)
        putchar('-');
    for (; *s; s++)
        printf("%02x", (unsigned char)*s);
}

static int do_head(const char *bucket, const char *key)
{
    s3r_object_info_t *info;
    s3r_status_t st = s3r_object_head(cli, bucket, key, &info);
    if (st != S3R_OK) {
        explain("head", st);
        return 1;
    }
    printf("HEAD size=%llu etag=%s ctype=%s mtime=%lld\n", (unsigned long long)info->size,
           info->etag ? info->etag : "-", info->content_type ? info->content_type : "-",
           (long long)info->mtime);
    for (size_t i = 0; i < info->n_meta; i++)
        printf("META %s=%s\n", info->meta[i].name, info->meta[i].value);
    s3r_object_info_free(info);
    return 0;
}

static int simple_result(const char *what, s3r_status_t st)
{
    if (st != S3R_OK) {
        explain(what, st);
        return 1;
    }
    return 0;
}

static int do_lb(void)
{
    s3r_bucket_list_t *bl;
    s3r_status_t st = s3r_bucket_list(cli, &bl);
    if (st != S3R_OK)
        return simple_result("lb", st);
    for (size_t i = 0; i < bl->n_buckets; i++)
        printf("BUCKET %s %lld\n", bl->buckets[i].name, (long long)bl->buckets[i].created);
    s3r_bucket_list_free(bl);
    return 0;
}

static const char *dash_null(const char *s)
{
    return strcmp(s, "-") == 0 ? NULL : s;
}

/* ls BUCKET PREFIX DELIM START_AFTER MAX_KEYS PAGES [TOKEN]: PAGES 0 one
 * page, 1 all of them (all_pages), N > 1 at most N (s3r_object_list_pages). */
static int do_ls(char **argv, int argc)
{
    int pages = atoi(argv[5]);
    s3r_list_opts_t o = {.prefix = dash_null(argv[1]),
                         .delimiter = dash_null(argv[2]),
                         .start_after = dash_null(argv[3]),
                         .max_keys = (unsigned)atoi(argv[4]),
                         .all_pages = pages == 1,
                         .continuation_token = argc > 6 ? dash_null(argv[6]) : NULL};
    s3r_object_list_t *l;
    s3r_status_t st = pages > 1 ? s3r_object_list_pages(cli, argv[0], &o, (unsigned)pages, &l)
                                : s3r_object_list(cli, argv[0], &o, &l);
    if (st != S3R_OK)
        return simple_result("ls", st);
    for (size_t i = 0; i < l->n_objects; i++) {
        printf("OBJ ");
        hex_out(l->objects[i].key);
        printf(" %llu %s %lld\n", (unsigned long long)l->objects[i].size,
               l->objects[i].etag ? l->objects[i].etag : "-", (long long)l->objects[i].mtime);
    }
    for (size_t i = 0; i < l->n_prefixes; i++) {
        printf("PRE ");
        hex_out(l->prefixes[i]);
        printf("\n");
    }
    printf("TRUNCATED %d\n", l->truncated);
    if (l->next_token)
        printf("NEXT %s\n", l->next_token);
    s3r_object_list_free(l);
    return 0;
}

/* s3r_put_opts_t as S3RDMA_0 laid it out (before storage_class). */
typedef struct put_opts_v0 {
    const char *content_type;
    const s3r_meta_t *meta;
    size_t n_meta;
    s3r_transport_t transport;
    int if_none_match;
} put_opts_v0_t;

static int do_put_v0(const char *bucket, const char *key)
{
    typedef s3r_status_t (*put_v0_fn)(s3r_client_t *, const char *, const char *, const void *,
                                      uint64_t, const put_opts_v0_t *);
    put_v0_fn put = (put_v0_fn)dlvsym(RTLD_DEFAULT, "s3r_object_put", "S3RDMA_0");
    CHECK(put != NULL, "no s3r_object_put@S3RDMA_0: %s", dlerror());
    /* The struct ends where a page the library cannot read begins: reading
     * past the old layout faults. */
    long page = sysconf(_SC_PAGESIZE);
    char *two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    CHECK(two != MAP_FAILED && mprotect(two + page, (size_t)page, PROT_NONE) == 0, "guard page");
    put_opts_v0_t *po = (put_opts_v0_t *)(two + page - sizeof(put_opts_v0_t));
    *po = (put_opts_v0_t){.content_type = "application/x-v0"};
    s3r_status_t st = put(cli, bucket, key, "v0", 2, po);
    munmap(two, 2 * (size_t)page);
    if (st != S3R_OK) {
        explain("put-v0", st);
        return 1;
    }
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
        {"mode", required_argument, NULL, 'm'},
        {"content-type", required_argument, NULL, 'c'},
        {"meta", required_argument, NULL, 'M'},
        {"native-inline", required_argument, NULL, 'I'},
        {"parts-in-flight", required_argument, NULL, 'J'},
        {NULL, 0, NULL, 0},
    };
    s3r_config_t cfg;
    s3r_config_init(&cfg);
    cfg.endpoint = getenv("S3R_ENDPOINT");
    cfg.rdma_endpoint = getenv("S3R_RDMA_ENDPOINT");
    cfg.access_key = getenv("S3R_ACCESS_KEY");
    cfg.secret_key = getenv("S3R_SECRET_KEY");
    cfg.ca_bundle = getenv("S3R_CA_BUNDLE"); /* for https:// endpoints */
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
        case 'I':
            cfg.native_inline = strtoull(optarg, NULL, 0);
            break;
        case 'J':
            cfg.parts_in_flight = (unsigned)strtoul(optarg, NULL, 0);
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
        case 'm':
            mode_opt = optarg;
            break;
        case 'c':
            ctype_opt = optarg;
            break;
        case 'M': {
            char *eq = strchr(optarg, '=');
            if (!eq || n_meta_opt == sizeof(meta_opt) / sizeof(meta_opt[0]))
                return 2;
            *eq = '\0';
            meta_opt[n_meta_opt++] = (s3r_meta_t){optarg, eq + 1};
            break;
        }
        default:
            return 2;
        }
    }
    argc -= optind;
    argv += optind;
    if (argc < 1) {
        fprintf(stderr, "usage: see the comment at the top of tests/client/s3r_driver.c\n");
        return 2;
    }
    cfg_used = cfg;
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
    else if (strcmp(cmd, "async") == 0 && argc == 4)
        rc = do_async(argv[1], atoi(argv[2]), strtoull(argv[3], NULL, 0));
    else if (strcmp(cmd, "hammer") == 0 && argc == 4)
        rc = do_hammer(argv[1], atoi(argv[2]), strtoull(argv[3], NULL, 0));
    else if (strcmp(cmd, "store") == 0 && argc == 4)
        rc = do_store(argv[1], argv[2], argv[3]);
    else if (strcmp(cmd, "fetch") == 0 && argc == 4)
        rc = do_fetch(argv[1], argv[2], argv[3]);
    else if (strcmp(cmd, "head") == 0 && argc == 3)
        rc = do_head(argv[1], argv[2]);
    else if (strcmp(cmd, "copy") == 0 && argc == 5)
        rc = simple_result("copy", s3r_object_copy(cli, argv[1], argv[2], argv[3], argv[4]));
    else if (strcmp(cmd, "rm") == 0 && argc == 3)
        rc = simple_result("rm", s3r_object_delete(cli, argv[1], argv[2]));
    else if (strcmp(cmd, "mb") == 0 && argc == 2)
        rc = simple_result("mb", s3r_bucket_create(cli, argv[1]));
    else if (strcmp(cmd, "rb") == 0 && argc == 2)
        rc = simple_result("rb", s3r_bucket_delete(cli, argv[1]));
    else if (strcmp(cmd, "hb") == 0 && argc == 2)
        rc = simple_result("hb", s3r_bucket_head(cli, argv[1]));
    else if (strcmp(cmd, "lb") == 0 && argc == 1)
        rc = do_lb();
    else if (strcmp(cmd, "fork") == 0 && argc == 3)
        rc = do_fork(argv[1], strtoull(argv[2], NULL, 0));
    else if (strcmp(cmd, "ls") == 0 && (argc == 7 || argc == 8))
        rc = do_ls(argv + 1, argc - 1);
    else if (strcmp(cmd, "put-v0") == 0 && argc == 3)
        rc = do_put_v0(argv[1], argv[2]);
    else {
        fprintf(stderr, "bad command\n");
        rc = 2;
    }
    s3r_stats_t s;
    s3r_error_info_t e;
    memset(&e, 0, sizeof(e));
    s3r_client_stats(cli, &s);
    (void)s3r_client_last_error(cli, &e);
    printf("RESULT status=%s http_ops=%llu http_bytes=%llu token_ops=%llu token_bytes=%llu "
           "native_ops=%llu native_bytes=%llu fallbacks=%llu errors=%llu sessions=%llu "
           "needed=%llu http_status=%d transport=%s code=%s\n",
           s3r_status_name(last_st), (unsigned long long)s.http_ops,
           (unsigned long long)s.http_bytes, (unsigned long long)s.token_ops,
           (unsigned long long)s.token_bytes, (unsigned long long)s.native_ops,
           (unsigned long long)s.native_bytes, (unsigned long long)s.fallbacks,
           (unsigned long long)s.errors, (unsigned long long)s.rdma_sessions,
           (unsigned long long)e.needed_bytes, e.http_status, s3r_transport_name(e.transport),
           e.code[0] ? e.code : "-");
    s3r_client_destroy(cli);
    return rc;
}
