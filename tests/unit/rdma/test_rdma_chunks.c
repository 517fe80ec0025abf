/* The staging chunk pool's states (src/rdma/rdma_xfer.c, included here, SPDK
 * style: no UCX request is made, the completions are driven by hand through
 * chunk_done, which is all chunk_cb does besides freeing the request).
 *
 * Issue 17, item 9 (a token GET of one client declined while another client
 * was being killed) and item 10 (staging chunks swept while an abandoned
 * endpoint close may still complete into them): a dying session's transfer
 * orphans a chunk whose RDMA operation is outstanding; its teardown abandons
 * the endpoint close (still in progress after 2 s, as happens on a loaded
 * machine); the old sweep put the chunk back in the pool at once, the next
 * transfer (another client's) took it and posted its own operation, and the
 * dead session's late completion then landed on it: the other client's
 * operation read as failed (its transfer declined, 501) or as done before
 * it was. Now such a chunk is quarantined until its own completion. */
#include "../../../src/rdma/rdma_xfer.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define NCHUNKS 16

typedef struct pool_fixture {
    struct rdma_server srv;
    rchunk_t chunks[NCHUNKS];
    rsession_t victim, keeper;
    ruser_t victim_user, keeper_user;
} pool_fixture_t;

static void fixture_init(pool_fixture_t *f)
{
    memset(f, 0, sizeof(*f));
    pthread_mutex_init(&f->srv.pool_mu, NULL);
    pthread_cond_init(&f->srv.pool_cv, NULL);
    f->srv.chunks = f->chunks;
    f->srv.n_chunks = NCHUNKS;
    f->srv.user_chunks_max = NCHUNKS;
    for (int i = NCHUNKS; i-- > 0;) {
        f->chunks[i].srv = &f->srv;
        pool_put_locked(&f->srv, &f->chunks[i]);
    }
    f->victim.user = &f->victim_user;
    f->keeper.user = &f->keeper_user;
    atomic_store(&f->srv.n_users, 2); /* both have sessions: the shares hold */
}

static unsigned pool_free_count(struct rdma_server *srv)
{
    unsigned n = 0;
    for (rchunk_t *c = srv->free_chunks; c; c = c->next_free)
        n++;
    return n;
}

/* The victim's transfer posted an operation on a chunk, then gave up (its
 * session died): the chunk is orphaned. */
static rchunk_t *orphan_one(pool_fixture_t *f)
{
    rchunk_t *c = pool_get(&f->srv, &f->victim, 0);
    assert_non_null(c);
    atomic_store(&c->state, CH_INFLIGHT);
    chunk_release(&f->srv, c);
    assert_int_equal(atomic_load(&c->state), CH_ORPHANED);
    assert_int_equal(atomic_load(&f->victim.orphans), 1);
    return c;
}

static void test_abandoned_close_quarantines(void **state)
{
    (void)state;
    static pool_fixture_t f;
    fixture_init(&f);
    rchunk_t *dead = orphan_one(&f);
    /* The teardown abandoned the endpoint close: a completion may come. */
    rdma_chunk_sweep(&f.srv, &f.victim, 1);
    /* Another client's transfer takes what the pool has and posts its own
     * operations. */
    rchunk_t *mine[NCHUNKS] = {0};
    for (int i = 0; i < NCHUNKS; i++) {
        mine[i] = pool_get(&f.srv, &f.keeper, 0);
        if (mine[i])
            atomic_store(&mine[i]->state, CH_INFLIGHT);
    }
    /* The dead session's operation completes late (purged). */
    chunk_done(dead, UCS_ERR_CANCELED);
    /* The other client's operations are still outstanding: none of them
     * was the dead session's chunk, which is back in the pool now. */
    for (int i = 0; i < NCHUNKS; i++) {
        if (mine[i])
            assert_int_equal(atomic_load(&mine[i]->state), CH_INFLIGHT);
    }
    assert_null(mine[NCHUNKS - 1]);
    assert_int_equal(atomic_load(&dead->state), CH_FREE);
    assert_int_equal(f.srv.chunks_quarantined, 0);
    assert_int_equal(f.victim_user.chunks, 0);
}

/* With the close completed (or the worker destroyed) no completion can
 * come: the sweep returns the orphan at once. */
static void test_closed_endpoint_sweeps(void **state)
{
    (void)state;
    static pool_fixture_t f;
    fixture_init(&f);
    orphan_one(&f);
    rdma_chunk_sweep(&f.srv, &f.victim, 0);
    assert_int_equal(f.srv.chunks_quarantined, 0);
    assert_int_equal(pool_free_count(&f.srv), NCHUNKS);
    assert_int_equal(atomic_load(&f.victim.orphans), 0);
    assert_int_equal(f.victim_user.chunks, 0);
}

/* A user at its share of the chunks gets none; its orphans count. */
static void test_user_share_counts_orphans(void **state)
{
    (void)state;
    static pool_fixture_t f;
    fixture_init(&f);
    f.srv.user_chunks_max = 1;
    orphan_one(&f);
    assert_int_equal(f.victim_user.chunks, 1);
    assert_null(pool_get(&f.srv, &f.victim, 0));
    rchunk_t *k = pool_get(&f.srv, &f.keeper, 0);
    assert_non_null(k);
    chunk_release(&f.srv, k);
    assert_int_equal(f.keeper_user.chunks, 0);
}

/* A user alone on the server has more than its share, since a share
 * reserves room for others and holding it back with none there would only
 * slow it, but not the last eighth: a newcomer finds that even when the
 * lone user froze holding all it could (rdma_share_init's figures). */
static void test_lone_user_leaves_a_reserve(void **state)
{
    (void)state;
    static pool_fixture_t f;
    fixture_init(&f);
    f.srv.cfg.user_share = 50;
    f.srv.cfg.max_inflight = 8;
    f.srv.cfg.native_threads = 4;
    f.srv.cfg.max_native_queued = 8;
    rdma_share_init(&f.srv);
    assert_int_equal(f.srv.user_chunks_max, NCHUNKS / 2);
    atomic_store(&f.srv.n_users, 1);
    rchunk_t *held[NCHUNKS];
    unsigned n = 0;
    while (n < NCHUNKS && (held[n] = pool_get(&f.srv, &f.victim, 0)))
        n++;
    assert_int_equal(n, NCHUNKS - NCHUNKS / 8);
    /* The newcomer: its session makes two users, so the shares hold. */
    atomic_store(&f.srv.n_users, 2);
    rchunk_t *k = pool_get(&f.srv, &f.keeper, 0);
    assert_non_null(k);
    chunk_release(&f.srv, k);
    while (n > 0)
        chunk_release(&f.srv, held[--n]);
    assert_int_equal(f.victim_user.chunks, 0);
    assert_int_equal(pool_free_count(&f.srv), NCHUNKS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_abandoned_close_quarantines),
        cmocka_unit_test(test_closed_endpoint_sweeps),
        cmocka_unit_test(test_user_share_counts_orphans),
        cmocka_unit_test(test_lone_user_leaves_a_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
