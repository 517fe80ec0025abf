/* Token transfers end to end in one process: a real client session with
 * registered regions, tokens, and the server's rdma_xfer_open/pull/push,
 * with byte comparison; authorization and bounds refusals; failure paths
 * (sink error, dead session, in-flight limit); the cross-host (shared
 * worker, PEER mode) path; concurrent transfers; a small measurement. */
#include "rdma_test_util.h"

#include <pthread.h>
#include <unistd.h>

#include "common/s3r_limits.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_wire.h"

#define BIG (16u << 20)

typedef struct fixture {
    rdma_server_t *srv;
    rdma_session_t *s;
    uint8_t *buf; /* client memory, BIG + 64 bytes, registered as region r */
    rdma_region_t *r;
} fixture_t;

static void fixture_open(fixture_t *f, int remote)
{
    memset(f, 0, sizeof(*f));
    TEST_SERVER_OR_SKIP(f->srv, 0, 0);
    rdma_client_config_t cfg = test_client_cfg(f->srv, "AKIDONE", "secret-one");
    if (remote)
        cfg.socket = ""; /* TCP bootstrap: the net domain */
    char err[256] = "";
    int rc = rdma_session_open(&cfg, &f->s, err, sizeof(err));
    if (rc)
        print_message("open: %s\n", err);
    assert_int_equal(rc, 0);
    f->buf = malloc(BIG + 64);
    assert_non_null(f->buf);
    rc = rdma_region_add(f->s, f->buf, BIG + 64, &f->r, err, sizeof(err));
    if (rc)
        print_message("region: %s\n", err);
    assert_int_equal(rc, 0);
}

static void fixture_close(fixture_t *f)
{
    rdma_session_close(f->s);
    assert_int_equal(test_wait_count(f->srv, 0), 0);
    rdma_server_stop(f->srv);
    free(f->buf);
}

static void pattern(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

typedef struct sink_ctx {
    uint8_t *dst;
    size_t got;
    int fail_at; /* fail on this call (1-based), 0 = never */
    int calls;
} sink_ctx_t;

static int sink(void *ctx, const void *data, size_t len)
{
    sink_ctx_t *c = ctx;
    if (++c->calls == c->fail_at)
        return -1;
    memcpy(c->dst + c->got, data, len);
    c->got += len;
    return 0;
}

typedef struct fill_ctx {
    const uint8_t *src;
    uint64_t expect_off;
    int bad;
} fill_ctx_t;

static int fill(void *ctx, void *dst, size_t len, uint64_t off)
{
    fill_ctx_t *c = ctx;
    if (off != c->expect_off)
        c->bad = 1;
    memcpy(dst, c->src + off, len);
    c->expect_off = off + len;
    return 0;
}

static void token_for(fixture_t *f, size_t off, uint64_t len, char tok[128])
{
    assert_int_equal(rdma_token_format(f->s, f->r, f->buf + off, len, tok, 128), 0);
}

/* PUT direction (server reads client memory) then GET direction (server
 * writes client memory), for one size at one offset. */
static void round_trip(fixture_t *f, size_t off, size_t len, uint32_t seed)
{
    char tok[128];
    pattern(f->buf + off, len, seed);
    token_for(f, off, len, tok);

    rdma_xfer_t *x = NULL;
    assert_int_equal(rdma_xfer_open(f->srv, tok, "AKIDONE", &x), RDMA_OK);
    assert_int_equal(rdma_xfer_length(x), len);
    sink_ctx_t sc = {.dst = malloc(len + 1)};
    assert_int_equal(rdma_xfer_pull(x, len, sink, &sc), RDMA_OK);
    assert_int_equal(sc.got, len);
    assert_memory_equal(sc.dst, f->buf + off, len);
    rdma_xfer_close(x);

    uint8_t *src = malloc(len + 1);
    pattern(src, len, seed + 1000);
    memset(f->buf + off, 0, len);
    assert_int_equal(rdma_xfer_open(f->srv, tok, "AKIDONE", &x), RDMA_OK);
    fill_ctx_t fc = {.src = src};
    assert_int_equal(rdma_xfer_push(x, len, fill, &fc), RDMA_OK);
    assert_int_equal(fc.bad, 0);
    /* push returns after the flush: the bytes are already in client memory. */
    assert_memory_equal(f->buf + off, src, len);
    rdma_xfer_close(x);
    free(src);
    free(sc.dst);
}

static void sizes_on(int remote)
{
    fixture_t f;
    fixture_open(&f, remote);
    static const size_t sizes[] = {0, 1, 4096, (1u << 20) + 1, BIG};
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        round_trip(&f, sizes[i] == BIG ? 0 : 7, sizes[i], (uint32_t)i + 1);
    /* Partial pull/push of a longer token span. */
    char tok[128];
    token_for(&f, 0, 8192, tok);
    rdma_xfer_t *x;
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
    sink_ctx_t sc = {.dst = malloc(8192)};
    assert_int_equal(rdma_xfer_pull(x, 100, sink, &sc), RDMA_OK);
    assert_int_equal(sc.got, 100);
    assert_int_equal(rdma_xfer_pull(x, 8193, sink, &sc), RDMA_OUT_OF_BOUNDS);
    rdma_xfer_close(x);
    free(sc.dst);
    fixture_close(&f);
}

static void test_sizes_same_host(void **state)
{
    (void)state;
    sizes_on(0);
}

static void test_sizes_remote_shared_worker(void **state)
{
    (void)state;
    sizes_on(1);
}

static void test_region_alloc_round_trip(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, 0);
    void *mem = NULL;
    rdma_region_t *r2 = NULL;
    char err[256];
    assert_int_equal(rdma_region_alloc(f.s, 3 << 20, &mem, &r2, err, sizeof(err)), 0);
    char tok[128];
    assert_int_equal(
        rdma_token_format(f.s, r2, (uint8_t *)mem + 5, (2 << 20) + 3, tok, sizeof(tok)), 0);
    pattern((uint8_t *)mem + 5, (2 << 20) + 3, 77);
    rdma_xfer_t *x;
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
    sink_ctx_t sc = {.dst = malloc(3 << 20)};
    assert_int_equal(rdma_xfer_pull(x, (2 << 20) + 3, sink, &sc), RDMA_OK);
    assert_memory_equal(sc.dst, (uint8_t *)mem + 5, (2 << 20) + 3);
    rdma_xfer_close(x);
    /* And the other direction into UCX-allocated memory (which the server
     * may write in place when it can map it). */
    pattern(sc.dst, (2 << 20) + 3, 78);
    memset(mem, 0, 3 << 20);
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
    fill_ctx_t fc = {.src = sc.dst};
    assert_int_equal(rdma_xfer_push(x, (2 << 20) + 3, fill, &fc), RDMA_OK);
    assert_int_equal(fc.bad, 0);
    assert_memory_equal((uint8_t *)mem + 5, sc.dst, (2 << 20) + 3);
    assert_int_equal(((uint8_t *)mem)[4], 0);
    assert_int_equal(((uint8_t *)mem)[5 + (2 << 20) + 3], 0);
    rdma_xfer_close(x);
    free(sc.dst);
    /* Spans outside the region are refused by the client too. */
    assert_int_equal(rdma_token_format(f.s, r2, mem, (3 << 20) + 1, tok, sizeof(tok)), -1);
    assert_int_equal(rdma_token_format(f.s, r2, mem, 16, tok, 10), -1);
    rdma_region_remove(f.s, r2);
    /* The region is gone on the server as well. */
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
    fixture_close(&f);
}

static void test_refusals(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, 0);
    char tok[128];
    rdma_xfer_t *x = NULL;
    token_for(&f, 0, 4096, tok);

    /* Another access key signed the HTTP request. */
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDTWO", &x), RDMA_FORBIDDEN);

    rdma_token_t t;
    assert_int_equal(rdma_token_decode(tok, &t), 0);
    rdma_token_t bad = t;
    char btok[128];
    /* Past the end, before the start, length overflowing the region, unknown region. */
    bad.addr = t.addr + BIG + 64 - 100;
    bad.len = 101;
    rdma_token_encode(&bad, btok, sizeof(btok));
    assert_int_equal(rdma_xfer_open(f.srv, btok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
    bad = t;
    bad.addr = t.addr - 1;
    rdma_token_encode(&bad, btok, sizeof(btok));
    assert_int_equal(rdma_xfer_open(f.srv, btok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
    bad = t;
    bad.len = BIG + 65;
    rdma_token_encode(&bad, btok, sizeof(btok));
    assert_int_equal(rdma_xfer_open(f.srv, btok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
    bad = t;
    bad.region_id = 999;
    rdma_token_encode(&bad, btok, sizeof(btok));
    assert_int_equal(rdma_xfer_open(f.srv, btok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
    /* A forged session id. */
    bad = t;
    bad.session_id[3] ^= 0x40;
    rdma_token_encode(&bad, btok, sizeof(btok));
    assert_int_equal(rdma_xfer_open(f.srv, btok, "AKIDONE", &x), RDMA_DECLINE);
    /* Malformed tokens. */
    const char *junk[] = {"", "s3r1.", "s3r2.AAAA",
                          "s3r1.!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!", "garbage"};
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
        assert_int_equal(rdma_xfer_open(f.srv, junk[i], "AKIDONE", &x), RDMA_DECLINE);
    char longer[200];
    snprintf(longer, sizeof(longer), "%sAA", tok);
    assert_int_equal(rdma_xfer_open(f.srv, longer, "AKIDONE", &x), RDMA_DECLINE);
    assert_int_equal(rdma_xfer_open(f.srv, NULL, "AKIDONE", &x), RDMA_DECLINE);
    fixture_close(&f);
}

static void test_sink_failure_and_busy(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, 0);
    char tok[128];
    token_for(&f, 0, 4u << 20, tok);
    rdma_xfer_t *x;
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
    sink_ctx_t sc = {.dst = malloc(4u << 20), .fail_at = 2};
    assert_int_equal(rdma_xfer_pull(x, 4u << 20, sink, &sc), RDMA_CALLBACK);
    rdma_xfer_close(x);
    free(sc.dst);
    /* Staging chunks came back: a full-size transfer still works. */
    round_trip(&f, 0, 4u << 20, 5);

    /* Every transfer slot taken: the next open is told to slow down. */
    rdma_xfer_t *xs[S3R_MAX_INFLIGHT_TRANSFERS];
    for (int i = 0; i < S3R_MAX_INFLIGHT_TRANSFERS; i++)
        assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &xs[i]), RDMA_OK);
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_BUSY);
    for (int i = 0; i < S3R_MAX_INFLIGHT_TRANSFERS; i++)
        rdma_xfer_close(xs[i]);
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
    rdma_xfer_close(x);
    fixture_close(&f);
}

/* The client goes away while the server holds an open transfer: the token
 * stops resolving, the transfer fails cleanly, and the session is torn down
 * once the transfer lets go. */
static void dead_session_on(int remote)
{
    fixture_t f;
    fixture_open(&f, remote);
    /* One transfer first, so the endpoints are wired up before the client
     * goes: UCX 1.13 can trip an internal assertion (wireup_ep.c:241,
     * pending_count == 0) when a PEER-mode peer fails while its TCP wireup
     * is still pending — a known gap, noted in docs/protocol.md. */
    round_trip(&f, 0, 4096, 3);
    char tok[128];
    token_for(&f, 0, 2u << 20, tok);
    rdma_xfer_t *x;
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
    rdma_session_close(f.s);
    f.s = NULL;
    assert_int_equal(test_wait_count(f.srv, 0), 0);
    rdma_xfer_t *y;
    assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &y), RDMA_DECLINE);
    sink_ctx_t sc = {.dst = malloc(2u << 20)};
    assert_int_equal(rdma_xfer_pull(x, 2u << 20, sink, &sc), RDMA_TRANSPORT);
    rdma_xfer_close(x);
    free(sc.dst);
    rdma_server_stop(f.srv);
    free(f.buf);
}

static void test_dead_session_same_host(void **state)
{
    (void)state;
    dead_session_on(0);
}

static void test_dead_session_remote(void **state)
{
    (void)state;
    dead_session_on(1);
}

typedef struct thr_arg {
    fixture_t *f;
    size_t off;
    int iters;
    int failures;
} thr_arg_t;

static void *thr_main(void *p)
{
    thr_arg_t *a = p;
    size_t len = (1u << 20) + 123;
    uint8_t *dst = malloc(len), *src = malloc(len);
    for (int i = 0; i < a->iters; i++) {
        char tok[128];
        if (rdma_token_format(a->f->s, a->f->r, a->f->buf + a->off, len, tok, sizeof(tok))) {
            a->failures++;
            continue;
        }
        pattern(src, len, (uint32_t)(a->off + (size_t)i));
        rdma_xfer_t *x;
        fill_ctx_t fc = {.src = src};
        if (rdma_xfer_open(a->f->srv, tok, "AKIDONE", &x) != RDMA_OK ||
            rdma_xfer_push(x, len, fill, &fc) != RDMA_OK) {
            a->failures++;
            continue;
        }
        rdma_xfer_close(x);
        sink_ctx_t sc = {.dst = dst};
        if (rdma_xfer_open(a->f->srv, tok, "AKIDONE", &x) != RDMA_OK ||
            rdma_xfer_pull(x, len, sink, &sc) != RDMA_OK || memcmp(dst, src, len) != 0)
            a->failures++;
        rdma_xfer_close(x);
    }
    free(dst);
    free(src);
    return NULL;
}

static void test_concurrent_threads(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, 0);
    thr_arg_t a[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (thr_arg_t){.f = &f, .off = (size_t)i * (4u << 20), .iters = 10};
        pthread_create(&th[i], NULL, thr_main, &a[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    fixture_close(&f);
}

static int sink_null(void *ctx, const void *data, size_t len)
{
    (void)ctx, (void)data, (void)len;
    return 0;
}

static int fill_null(void *ctx, void *dst, size_t len, uint64_t off)
{
    (void)ctx, (void)dst, (void)len, (void)off;
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Not a benchmark (bench/ has those): a median per size so a regression of
 * an order of magnitude shows in the test log. */
static void test_measure(void **state)
{
    (void)state;
    fixture_t f;
    fixture_open(&f, 0);
    static const size_t sizes[] = {4096, 1u << 20, 16u << 20};
    const char *tls = getenv("UCX_TLS");
    for (size_t k = 0; k < 3; k++) {
        char tok[128];
        token_for(&f, 0, sizes[k], tok);
        enum { N = 31 };
        uint64_t pull_ns[N], push_ns[N];
        for (int i = 0; i < N; i++) {
            struct timespec t0, t1, t2;
            rdma_xfer_t *x;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
            assert_int_equal(rdma_xfer_pull(x, sizes[k], sink_null, NULL), RDMA_OK);
            rdma_xfer_close(x);
            clock_gettime(CLOCK_MONOTONIC, &t1);
            assert_int_equal(rdma_xfer_open(f.srv, tok, "AKIDONE", &x), RDMA_OK);
            assert_int_equal(rdma_xfer_push(x, sizes[k], fill_null, NULL), RDMA_OK);
            rdma_xfer_close(x);
            clock_gettime(CLOCK_MONOTONIC, &t2);
            pull_ns[i] =
                (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec));
            push_ns[i] =
                (uint64_t)((t2.tv_sec - t1.tv_sec) * 1000000000L + (t2.tv_nsec - t1.tv_nsec));
        }
        qsort(pull_ns, N, sizeof(uint64_t), cmp_u64);
        qsort(push_ns, N, sizeof(uint64_t), cmp_u64);
        print_message("[ MEASURE  ] UCX_TLS=%s size=%zu pull p50 %.1f us (%.2f GB/s), push p50 "
                      "%.1f us (%.2f GB/s)\n",
                      tls ? tls : "default", sizes[k], pull_ns[N / 2] / 1e3,
                      (double)sizes[k] / (double)pull_ns[N / 2], push_ns[N / 2] / 1e3,
                      (double)sizes[k] / (double)push_ns[N / 2]);
    }
    fixture_close(&f);
}

int main(void)
{
    log_set_level(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_same_host),
        cmocka_unit_test(test_sizes_remote_shared_worker),
        cmocka_unit_test(test_region_alloc_round_trip),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_sink_failure_and_busy),
        cmocka_unit_test(test_dead_session_same_host),
        cmocka_unit_test(test_dead_session_remote),
        cmocka_unit_test(test_concurrent_threads),
        cmocka_unit_test(test_measure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
