/* Fair shares (issue 17, item 5; src/rdma/rdma_share.c): a tenant whose
 * client stops serving its RDMA holds at most its share of the transfer
 * handles and staging chunks, its transfers fail once they make no progress
 * for the stall deadline, and another tenant's transfers go through
 * meanwhile, with no SlowDown.
 *
 * The frozen tenant is a raw client over TCP (a network session: UCX
 * emulates RMA with messages the client's worker must answer) that never
 * progresses its worker once its region is registered, as a stopped process
 * would not. Its transfers run on helper threads, as HTTP threads would run
 * them. The other tenant is the real client (its own progress thread). Runs
 * under both UCX settings; both put the raw client on TCP. */
#include "rdma_test_util.h"
#include "rdma_raw_client.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#define MIB          ((uint64_t)1 << 20)
#define MAX_INFLIGHT 8 /* transfer handles: 4 per user at the 50 % share */
#define CHUNKS       8 /* staging chunks of 1 MiB: 4 per user */
#define STALL_MS     400
#define FROZEN_JOBS  10 /* more than the whole pool of handles */
#define XFER_LEN     (2 * MIB)

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static rdma_server_t *share_server(void)
{
    /* Old servers had only the 30 s operation timeout; keep a failing run short. */
    setenv("S3R_RDMA_OP_TIMEOUT_MS", "4000", 1);
    rdma_server_config_t cfg;
    rdma_server_config_defaults(&cfg);
    cfg.listen_host = "127.0.0.1";
    cfg.port = 0;
    cfg.n_workers = 1;
    cfg.staging_bytes = CHUNKS * MIB;
    cfg.chunk_bytes = MIB;
    cfg.max_inflight = MAX_INFLIGHT;
    cfg.user_share = 50;
    cfg.max_sessions_per_user = 1;
    cfg.stall_ms = STALL_MS;
    cfg.lookup_secret = test_lookup;
    rdma_server_t *srv = NULL;
    if (rdma_server_start(&cfg, &srv) < 0)
        return NULL;
    return srv;
}

/* A token transfer on a helper thread: open, then pull (or push) the
 * token's whole span, as an HTTP thread would. */
typedef struct tjob {
    rdma_server_t *srv;
    char tok[RDMA_TOKEN_LEN + 1];
    const char *ak;
    int push;
    rdma_status_t open_rc, rc;
    uint64_t seen;
    _Atomic int opened, done;
    pthread_t th;
} tjob_t;

static int tjob_sink(void *ctx, const void *data, size_t len)
{
    (void)data;
    ((tjob_t *)ctx)->seen += len;
    return 0;
}

static int tjob_fill(void *ctx, void *dst, size_t len, uint64_t off)
{
    memset(dst, (int)(off >> 20), len);
    ((tjob_t *)ctx)->seen += len;
    return 0;
}

static void *tjob_main(void *p)
{
    tjob_t *j = p;
    rdma_xfer_t *x = NULL;
    j->open_rc = rdma_xfer_open(j->srv, j->tok, j->ak, &x);
    atomic_store(&j->opened, 1);
    if (j->open_rc == RDMA_OK) {
        uint64_t len = rdma_xfer_length(x);
        j->rc =
            j->push ? rdma_xfer_push(x, len, tjob_fill, j) : rdma_xfer_pull(x, len, tjob_sink, j);
        rdma_xfer_close(x);
    }
    atomic_store(&j->done, 1);
    return NULL;
}

static void tjob_start(tjob_t *j)
{
    atomic_store(&j->opened, 0);
    atomic_store(&j->done, 0);
    j->seen = 0;
    assert_int_equal(pthread_create(&j->th, NULL, tjob_main, j), 0);
}

static void tjob_join(tjob_t *j)
{
    pthread_join(j->th, NULL);
}

static rdma_server_stats_t stats(rdma_server_t *srv)
{
    rdma_server_stats_t st;
    rdma_server_get_stats(srv, &st);
    return st;
}

/* Tenant A: a raw net session with an 8 MiB region, which then never
 * progresses its worker (frozen). Returns its lifeline. */
static int tenant_a_start(rdma_server_t *srv, raw_ucx_t *a, raw_sess_t *rs, raw_mem_t *mem)
{
    raw_ucx_init(a);
    int fd = raw_connect(srv);
    raw_handshake(fd, a, "AKIDONE", "secret-one", rs);
    raw_mem_alloc(a, 8 * MIB, mem);
    send_region_add(fd, 1, (uint64_t)(uintptr_t)mem->p, 8 * MIB, mem->rkey, mem->rkey_len);
    assert_int_equal(raw_recv(fd, NULL, NULL), RDMA_MSG_REGION_OK);
    raw_settle(a);
    return fd;
}

/* FROZEN_JOBS transfers of A's region, pulls and pushes of XFER_LEN each,
 * started on helper threads. */
static void tenant_a_transfers(rdma_server_t *srv, raw_sess_t *rs, raw_mem_t *mem, tjob_t *aj)
{
    for (int i = 0; i < FROZEN_JOBS; i++) {
        aj[i].srv = srv;
        aj[i].ak = "AKIDONE";
        aj[i].push = i % 2;
        make_token(rs, 1, (uint64_t)(uintptr_t)mem->p + (uint64_t)(i % 4) * XFER_LEN, XFER_LEN,
                   aj[i].tok);
        tjob_start(&aj[i]);
    }
}

/* Tenant B: the real client, its session and an XFER_LEN region whose
 * token is in bj (a transfer job on srv, its direction for the caller). */
static void tenant_b_start(rdma_server_t *srv, rdma_session_t **b, rdma_region_t **breg, tjob_t *bj)
{
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDTWO", "secret-two");
    char err[256];
    assert_int_equal(rdma_session_open(&cfg, b, err, sizeof(err)), 0);
    uint8_t *bmem = NULL;
    assert_int_equal(rdma_region_alloc(*b, XFER_LEN, (void **)&bmem, breg, err, sizeof(err)), 0);
    bj->srv = srv;
    bj->ak = "AKIDTWO";
    assert_int_equal(rdma_token_format(*b, *breg, bmem, XFER_LEN, bj->tok, sizeof(bj->tok)), 0);
}

static void test_frozen_tenant(void **state)
{
    (void)state;
    rdma_server_t *srv = share_server();
    if (!srv) {
        if (test_ucx_usable())
            fail_msg("the RDMA server failed to start although UCX works");
        skip();
    }
    /* Tenant A: a raw net session with an 8 MiB region, then frozen. */
    raw_ucx_t a;
    raw_sess_t rs;
    raw_mem_t mem;
    int fd = tenant_a_start(srv, &a, &rs, &mem);

    /* Tenant B: the real client. */
    rdma_session_t *b;
    rdma_region_t *breg;
    static tjob_t bj;
    tenant_b_start(srv, &b, &breg, &bj);

    /* A's transfers: pulls and pushes of 2 MiB each, more than the pool. */
    static tjob_t aj[FROZEN_JOBS];
    tenant_a_transfers(srv, &rs, &mem, aj);
    for (int i = 0; i < FROZEN_JOBS; i++) {
        while (!atomic_load(&aj[i].opened))
            sleep_ms(1);
    }
    unsigned opened = 0;
    for (int i = 0; i < FROZEN_JOBS; i++) {
        if (aj[i].open_rc == RDMA_OK)
            opened++;
        else
            assert_int_equal(aj[i].open_rc, RDMA_BUSY);
    }
    /* A holds its share of the handles (4 of 8), not the pool. */
    assert_int_equal(opened, MAX_INFLIGHT / 2);
    rdma_server_stats_t st = stats(srv);
    assert_true(st.staging_busy <= CHUNKS / 2);

    /* Meanwhile B's transfers, both ways, go through: no SlowDown. */
    for (int round = 0; round < 4; round++) {
        bj.push = round % 2;
        tjob_start(&bj);
        tjob_join(&bj);
        if (bj.open_rc != RDMA_OK || bj.rc != RDMA_OK)
            fail_msg("round %d: tenant B's transfer: open %s, transfer %s", round,
                     rdma_strerror(bj.open_rc), rdma_strerror(bj.rc));
        assert_int_equal(bj.seen, XFER_LEN);
    }

    /* A's transfers fail once they made no progress for the stall
     * deadline (or found A's share of the chunks taken), and give their
     * handles back. */
    for (int i = 0; i < FROZEN_JOBS; i++) {
        tjob_join(&aj[i]);
        if (aj[i].open_rc == RDMA_OK && aj[i].rc != RDMA_TRANSPORT && aj[i].rc != RDMA_BUSY)
            fail_msg("frozen transfer %d: %s", i, rdma_strerror(aj[i].rc));
    }
    st = stats(srv);
    assert_int_equal(st.transfers_inflight, 0);
    assert_true(st.transfers_stalled >= 1);
    /* What A's stalled operations still hold is A's, within its share. */
    assert_true(st.staging_busy <= CHUNKS / 2);

    /* A's lifeline drops while its UCX connection stays up, frozen. Its
     * session is gone for new requests, but the endpoint its stalled
     * operations are posted on is not closed under them (a forced close of
     * it, with A's connection closing afterwards, faulted inside UCX 1.13's
     * TCP transport in about one run in thirty): it stays open, A's chunks
     * held within A's share, until the connection goes. */
    close(fd);
    assert_int_equal(test_wait_count(srv, 1), 1);
    for (int i = 0; i < 500 && stats(srv).sessions_closing != 1; i++)
        sleep_ms(10);
    st = stats(srv);
    assert_int_equal(st.sessions_closing, 1);
    assert_true(st.staging_busy <= CHUNKS / 2);
    assert_int_equal(rdma_server_session_resident(srv), 2);
    /* ... and still counts against A's access key (one session each). */
    rdma_client_config_t acfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    rdma_session_t *a2 = NULL;
    char err[256];
    assert_int_equal(rdma_session_open(&acfg, &a2, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many RDMA sessions"));

    /* B is not disturbed meanwhile. */
    bj.push = 0;
    tjob_start(&bj);
    tjob_join(&bj);
    if (bj.open_rc != RDMA_OK || bj.rc != RDMA_OK)
        fail_msg("tenant B's transfer after A's session closed: open %s, transfer %s",
                 rdma_strerror(bj.open_rc), rdma_strerror(bj.rc));

    /* A's connection closes (its worker goes, as when the process dies):
     * UCX fails the endpoint and its requests, and everything comes back. */
    raw_mem_free(&a, &mem);
    free(rs.saddr);
    raw_ucx_fini(&a);
    for (int i = 0; i < 500 && rdma_server_session_resident(srv) != 1; i++)
        sleep_ms(10);
    assert_int_equal(rdma_server_session_resident(srv), 1);
    st = stats(srv);
    assert_int_equal(st.sessions_closing, 0);
    assert_int_equal(st.staging_busy, 0);
    assert_int_equal(st.staging_quarantined, 0);
    assert_int_equal(st.transfers_inflight, 0);
    /* A's key has its session back. */
    assert_int_equal(rdma_session_open(&acfg, &a2, err, sizeof(err)), 0);
    rdma_session_close(a2);

    rdma_region_remove(b, breg);
    rdma_session_close(b);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

/* A tenant alone on the server freezes at the most it may hold: all but
 * the reserve (an eighth, here one) of the transfer handles and staging
 * chunks. A tenant arriving afterwards finds the reserve and its transfers
 * go through at once, while the frozen one's are still stalled (before the
 * reserve, the lone tenant took all eight handles and chunks: SlowDown). */
static void test_lone_frozen_tenant(void **state)
{
    (void)state;
    rdma_server_t *srv = share_server();
    if (!srv) {
        if (test_ucx_usable())
            fail_msg("the RDMA server failed to start although UCX works");
        skip();
    }
    raw_ucx_t a;
    raw_sess_t rs;
    raw_mem_t mem;
    int fd = tenant_a_start(srv, &a, &rs, &mem);

    /* A, alone, starts more transfers than the pool holds, then is frozen. */
    static tjob_t aj[FROZEN_JOBS];
    tenant_a_transfers(srv, &rs, &mem, aj);
    unsigned opened = 0;
    for (int i = 0; i < FROZEN_JOBS; i++) {
        while (!atomic_load(&aj[i].opened))
            sleep_ms(1);
        opened += aj[i].open_rc == RDMA_OK;
    }
    assert_int_equal(opened, MAX_INFLIGHT - 1);
    rdma_server_stats_t st = stats(srv);
    assert_true(st.staging_busy <= CHUNKS - 1);

    /* B arrives: its transfers, both ways, go through while A's stall. */
    rdma_session_t *b;
    rdma_region_t *breg;
    static tjob_t bj;
    tenant_b_start(srv, &b, &breg, &bj);
    for (int round = 0; round < 2; round++) {
        bj.push = round % 2;
        tjob_start(&bj);
        tjob_join(&bj);
        if (bj.open_rc != RDMA_OK || bj.rc != RDMA_OK)
            fail_msg("round %d: tenant B's transfer next to a frozen lone tenant: open %s, "
                     "transfer %s",
                     round, rdma_strerror(bj.open_rc), rdma_strerror(bj.rc));
        assert_int_equal(bj.seen, XFER_LEN);
    }

    for (int i = 0; i < FROZEN_JOBS; i++)
        tjob_join(&aj[i]);
    /* A's connection goes: everything comes back. */
    close(fd);
    raw_mem_free(&a, &mem);
    free(rs.saddr);
    raw_ucx_fini(&a);
    for (int i = 0; i < 500 && rdma_server_session_resident(srv) != 1; i++)
        sleep_ms(10);
    assert_int_equal(rdma_server_session_resident(srv), 1);
    st = stats(srv);
    assert_int_equal(st.staging_busy, 0);
    assert_int_equal(st.transfers_inflight, 0);
    rdma_region_remove(b, breg);
    rdma_session_close(b);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

int main(void)
{
    log_set_level(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frozen_tenant),
        cmocka_unit_test(test_lone_frozen_tenant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
