/* The staging chunk pool (one ucp_mem_map at start, chunks whose completion
 * state outlives any transfer) and the token data mover: rdma_xfer_open,
 * pull, push, close. Runs on HTTP threads, plus chunk_cb from whichever
 * thread progresses the worker. Threads and ownership: rdma_server_internal.h. */
#include "rdma/rdma_server_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucp/api/ucp.h>

#include "common/log.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_wire.h"

/* ==== chunk pool ========================================================= */

static void pool_put_locked(struct rdma_server *srv, rchunk_t *c)
{
    if (c->user)
        c->user->chunks--;
    c->user = NULL;
    atomic_store(&c->state, CH_FREE);
    c->next_free = srv->free_chunks;
    srv->free_chunks = c;
    /* Every waiter: the first may be a user at its share. */
    pthread_cond_broadcast(&srv->pool_cv);
}

/* Takes a chunk, waiting up to deadline_ms (0: do not wait) for one to be
 * free and for owner's user to be under its share. */
static rchunk_t *pool_get(struct rdma_server *srv, rsession_t *owner, uint64_t deadline_ms)
{
    ruser_t *u = owner->user;
    pthread_mutex_lock(&srv->pool_mu);
    while ((!srv->free_chunks ||
            u->chunks >= rdma_share_cap(srv, srv->user_chunks_max, srv->lone_chunks_max)) &&
           deadline_ms && clock_mono_ms() < deadline_ms) {
        struct timespec ts = clock_after_ms(CLOCK_REALTIME, 10);
        pthread_cond_timedwait(&srv->pool_cv, &srv->pool_mu, &ts);
    }
    rchunk_t *c = u->chunks < rdma_share_cap(srv, srv->user_chunks_max, srv->lone_chunks_max)
                      ? srv->free_chunks
                      : NULL;
    if (c) {
        srv->free_chunks = c->next_free;
        c->owner = owner;
        c->user = u;
        u->chunks++;
        atomic_store(&c->state, CH_OWNED);
    }
    pthread_mutex_unlock(&srv->pool_mu);
    return c;
}

/* What a request on c completing (or purged) means for c: the transfer
 * waiting on it sees DONE or ERROR; a chunk its transfer gave up on
 * (orphaned, or quarantined once its session is gone) goes back to the
 * pool. Any thread. */
static void chunk_done(rchunk_t *c, ucs_status_t status)
{
    int expect = CH_INFLIGHT;
    if (atomic_compare_exchange_strong(&c->state, &expect, status == UCS_OK ? CH_DONE : CH_ERROR))
        return;
    /* The transfer gave up on it: the chunk is ours to return. */
    struct rdma_server *srv = c->srv;
    pthread_mutex_lock(&srv->pool_mu);
    if (atomic_load(&c->state) == CH_ORPHANED) {
        if (c->owner)
            atomic_fetch_sub(&c->owner->orphans, 1);
        else
            srv->chunks_quarantined--;
        pool_put_locked(srv, c);
    }
    pthread_mutex_unlock(&srv->pool_mu);
}

/* Called by UCX when a request on a chunk completes (or is purged). */
static void chunk_cb(void *request, ucs_status_t status, void *user_data)
{
    chunk_done(user_data, status);
    ucp_request_free(request);
}

/* Gives a chunk back. A chunk with a request still outstanding is orphaned
 * instead: its completion callback, or the session's teardown after the
 * worker or endpoint is gone, returns it. */
static void chunk_release(struct rdma_server *srv, rchunk_t *c)
{
    if (!c)
        return;
    int expect = CH_INFLIGHT;
    if (atomic_load(&c->state) == CH_INFLIGHT) {
        atomic_fetch_add(&c->owner->orphans, 1);
        if (atomic_compare_exchange_strong(&c->state, &expect, CH_ORPHANED))
            return;
        atomic_fetch_sub(&c->owner->orphans, 1);
    }
    pthread_mutex_lock(&srv->pool_mu);
    pool_put_locked(srv, c);
    pthread_mutex_unlock(&srv->pool_mu);
}

int rdma_chunk_sweep(struct rdma_server *srv, rsession_t *s, int can_complete)
{
    int quarantined = 0;
    pthread_mutex_lock(&srv->pool_mu);
    for (size_t i = 0; i < srv->n_chunks; i++) {
        rchunk_t *c = &srv->chunks[i];
        if (c->owner != s || atomic_load(&c->state) != CH_ORPHANED)
            continue;
        atomic_fetch_sub(&s->orphans, 1);
        if (can_complete) {
            /* UCX may still write into it: chunk_cb returns it. */
            c->owner = NULL;
            if (c->user)
                c->user->chunks--;
            c->user = NULL;
            srv->chunks_quarantined++;
            quarantined++;
        } else {
            pool_put_locked(srv, c);
        }
    }
    pthread_mutex_unlock(&srv->pool_mu);
    return quarantined;
}

int rdma_staging_init(struct rdma_server *srv)
{
    srv->chunk_bytes = srv->cfg.chunk_bytes ? srv->cfg.chunk_bytes : RDMA_DEFAULT_CHUNK;
    size_t total = srv->cfg.staging_bytes ? srv->cfg.staging_bytes : RDMA_DEFAULT_STAGING;
    if (total < 2 * srv->chunk_bytes)
        total = 2 * srv->chunk_bytes;
    srv->n_chunks = total / srv->chunk_bytes;
    total = srv->n_chunks * srv->chunk_bytes;
    /* Private anonymous memory: each domain registers it (rdma_domains_open);
     * no client ever maps it. */
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        log_error("rdma: allocating %zu bytes of staging memory: %s", total, strerror(errno));
        return -1;
    }
    srv->staging = mem;
    srv->staging_len = total;
    srv->chunks = calloc(srv->n_chunks, sizeof(*srv->chunks));
    if (!srv->chunks)
        return -1;
    for (size_t i = srv->n_chunks; i-- > 0;) {
        rchunk_t *c = &srv->chunks[i];
        c->buf = (uint8_t *)srv->staging + i * srv->chunk_bytes;
        c->srv = srv;
        pool_put_locked(srv, c);
    }
    return 0;
}

void rdma_staging_free(struct rdma_server *srv)
{
    if (srv->staging)
        munmap(srv->staging, srv->staging_len);
    srv->staging = NULL;
    free(srv->chunks);
    srv->chunks = NULL;
}

/* ==== token transfers ==================================================== */

rdma_status_t rdma_xfer_bind(struct rdma_server *srv, rsession_t *s, uint32_t region_id,
                             uint64_t addr, uint64_t len, rdma_xfer_t **out_p)
{
    /* A transfer slot first (srv->mu), then the region (s->mu): the two
     * locks are never held together (rdma_server_internal.h). */
    pthread_mutex_lock(&srv->mu);
    struct rdma_xfer *x =
        s->user->xfers < rdma_share_cap(srv, srv->user_xfers_max, srv->lone_xfers_max)
            ? srv->free_xfers
            : NULL;
    if (x) {
        srv->free_xfers = x->next_free;
        srv->n_xfers_busy++;
        s->user->xfers++;
    }
    pthread_mutex_unlock(&srv->mu);
    if (!x)
        return RDMA_BUSY;
    rregion_t *r;
    pthread_mutex_lock(&s->mu);
    for (r = s->regions; r && r->id != region_id; r = r->next) {
    }
    if (!r || addr < r->addr || addr - r->addr > r->len || len > r->len - (addr - r->addr))
        r = NULL;
    else
        r->refs++;
    pthread_mutex_unlock(&s->mu);
    if (!r) {
        pthread_mutex_lock(&srv->mu);
        x->next_free = srv->free_xfers;
        srv->free_xfers = x;
        srv->n_xfers_busy--;
        s->user->xfers--;
        pthread_mutex_unlock(&srv->mu);
        return RDMA_OUT_OF_BOUNDS;
    }
    rdma_session_get(s);
    x->s = s;
    x->r = r;
    x->addr = addr;
    x->len = len;
    *out_p = x;
    return RDMA_OK;
}

rdma_status_t rdma_xfer_open(rdma_server_t *srv, const char *token, const char *access_key,
                             rdma_xfer_t **out_p)
{
    rdma_token_t t;
    if (!srv || rdma_token_decode(token, &t) < 0)
        return RDMA_DECLINE;
    rsession_t *s = rdma_session_find(srv, t.session_id);
    if (!s)
        return RDMA_DECLINE;
    rdma_status_t rc = !access_key || strcmp(access_key, s->access_key) != 0
                           ? RDMA_FORBIDDEN
                           : rdma_xfer_bind(srv, s, t.region_id, t.addr, t.len, out_p);
    rdma_session_put(s);
    return rc;
}

uint64_t rdma_xfer_length(const rdma_xfer_t *x)
{
    return x->len;
}

void rdma_xfer_close(rdma_xfer_t *x)
{
    if (!x)
        return;
    struct rdma_server *srv = x->srv;
    rsession_t *s = x->s;
    pthread_mutex_lock(&s->mu);
    rregion_t *gone = rdma_region_unref_locked(x->r);
    pthread_mutex_unlock(&s->mu);
    rdma_region_free(gone);
    pthread_mutex_lock(&srv->mu);
    x->next_free = srv->free_xfers;
    srv->free_xfers = x;
    srv->n_xfers_busy--;
    s->user->xfers--;
    pthread_mutex_unlock(&srv->mu);
    rdma_session_put(s);
}

/* Waits for c's request by progressing the session's worker on this thread
 * (bounded spin, then short sleeps so the progress thread and the other
 * threads on 2 cores get a turn). Returns 0 when it completed, -1 when it
 * failed, the session died, the transfer's deadline passed or the request
 * made no progress for srv->stall_ms (a client that stopped serving its
 * RDMA: its transfer gives back the slot and the chunks it would hold for
 * the whole op timeout). c is then still INFLIGHT or ERROR; chunk_release
 * handles either. */
static int chunk_wait(rdma_xfer_t *x, rchunk_t *c, uint64_t deadline_ms)
{
    uint64_t stall_at = clock_mono_ms() + (uint64_t)x->srv->stall_ms;
    int stalled = stall_at < deadline_ms;
    if (stalled)
        deadline_ms = stall_at;
    unsigned idle = 0;
    /* How long this thread keeps progressing the worker while nothing
     * happens: a progress thread (a read run locally) always, as nobody
     * else progresses its workers meanwhile. */
    const unsigned progress_until = rdma_native_on_progress_thread() ? UINT_MAX : 260;
    for (unsigned i = 0;; i++) {
        int st = atomic_load(&c->state);
        if (st == CH_DONE) {
            atomic_store(&c->state, CH_OWNED);
            return 0;
        }
        if (st == CH_ERROR)
            return -1;
        if (atomic_load(&x->s->dead))
            return -1;
        if (((i & 255) == 0 || idle >= 260) && clock_mono_ms() > deadline_ms) {
            if (stalled) {
                atomic_fetch_add(&x->srv->xfers_stalled, 1);
                log_warn("rdma: %s: transfer made no progress for %d ms; failing it", x->s->peer,
                         x->srv->stall_ms);
            } else {
                log_warn("rdma: %s: transfer timed out", x->s->peer);
            }
            return -1;
        }
        /* Spin briefly (shared-memory transfers finish within microseconds),
         * then back off: on a slow transport (TCP emulating RMA) spinning
         * threads would starve the peers whose progress the transfer needs.
         * An operation idle for some 20 ms is one whose peer is not serving
         * it (a stopped client): from then on this thread only looks at the
         * chunk every 2 ms and leaves the worker to its progress thread, so
         * that many such waits do not crowd the worker's lock the other
         * sessions on a shared worker need. */
        if (idle < progress_until && ucp_worker_progress(x->s->worker)) {
            idle = 0;
        } else if (++idle > 200) {
            long ns = idle - 200 < 5 ? 10000L << (idle - 200) /* 10 us .. 160 us */
                      : idle < 260   ? 320000L
                                     : 2000000L;
            struct timespec ts = {0, ns};
            nanosleep(&ts, NULL);
        }
    }
}

/* Records what UCX made of an operation posted on c (c already INFLIGHT):
 * done at once, in flight (chunk_cb finishes it), or failed. 0, or -1 when
 * it failed. */
static int chunk_track(rchunk_t *c, ucs_status_ptr_t req, const char *what)
{
    if (req == NULL) {
        atomic_store(&c->state, CH_DONE);
        return 0;
    }
    if (UCS_PTR_IS_ERR(req)) {
        atomic_store(&c->state, CH_ERROR);
        log_warn("rdma: %s: %s", what, ucs_status_string(UCS_PTR_STATUS(req)));
        return -1;
    }
    return 0;
}

/* Posts one RMA (get when is_get, else put) of len bytes between c->buf and
 * the client address raddr. 0 when posted or already complete, -1 on error. */
static int chunk_post(rdma_xfer_t *x, rchunk_t *c, int is_get, size_t len, uint64_t raddr)
{
    ucp_request_param_t p = {
        .op_attr_mask =
            UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH,
        .cb.send = chunk_cb,
        .user_data = c,
        .memh = x->s->dom->staging_memh,
    };
    /* INFLIGHT before posting: another thread progressing the worker may
     * run the callback before the post returns. */
    atomic_store(&c->state, CH_INFLIGHT);
    if (is_get)
        return chunk_track(c, ucp_get_nbx(x->s->ep, c->buf, len, raddr, x->r->rkey, &p),
                           "ucp_get_nbx");
    return chunk_track(c, ucp_put_nbx(x->s->ep, c->buf, len, raddr, x->r->rkey, &p), "ucp_put_nbx");
}

/* Flushes the session's endpoint, tracked on c: once it completes, every
 * put posted before it is in the client's memory. */
static int chunk_flush(rdma_xfer_t *x, rchunk_t *c)
{
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = chunk_cb,
        .user_data = c,
    };
    atomic_store(&c->state, CH_INFLIGHT);
    return chunk_track(c, ucp_ep_flush_nbx(x->s->ep, &p), "ucp_ep_flush_nbx");
}

/* How many bytes of a len-byte transfer the chunk starting at off carries. */
static size_t chunk_len(uint64_t len, uint64_t off, size_t cb)
{
    return (size_t)(len - off < cb ? len - off : cb);
}

/* The checks pull and push share. On RDMA_OK *local_p is the client's span
 * mapped into this process, or NULL when it takes the staged path. */
static rdma_status_t xfer_begin(const rdma_xfer_t *x, uint64_t len, uint8_t **local_p)
{
    if (len > x->len)
        return RDMA_OUT_OF_BOUNDS;
    if (atomic_load(&x->s->dead))
        return RDMA_TRANSPORT;
    *local_p = x->r->local ? x->r->local + (x->addr - x->r->addr) : NULL;
    return RDMA_OK;
}

/* Counts what a transfer moved (rdma_server_stats_t), by path; rc as
 * returned to the caller. */
static rdma_status_t xfer_moved(const rdma_xfer_t *x, int mapped, uint64_t len, rdma_status_t rc)
{
    if (rc == RDMA_OK)
        atomic_fetch_add(mapped ? &x->srv->bytes_mapped : &x->srv->bytes_staged, len);
    return rc;
}

/* Sets the transfer's deadline and takes two staging chunks if it can, one
 * at least, waiting for it no longer than a stalled operation may take (the
 * pool, or its user's share of it, is held by transfers that are not
 * moving). -1 when none came. */
static int xfer_chunks(rdma_xfer_t *x, uint64_t len, rchunk_t *ch[2], uint64_t *deadline_p)
{
    uint64_t now = clock_mono_ms();
    *deadline_p = now + (uint64_t)x->srv->op_timeout_ms;
    uint64_t wait_until = now + (uint64_t)x->srv->stall_ms;
    ch[0] = pool_get(x->srv, x->s, wait_until < *deadline_p ? wait_until : *deadline_p);
    ch[1] = ch[0] && len > x->srv->chunk_bytes ? pool_get(x->srv, x->s, 0) : NULL;
    return ch[0] ? 0 : -1;
}

/* Posts the get of the transfer's chunk i into c. */
static int pull_post(rdma_xfer_t *x, rchunk_t *c, uint64_t len, uint64_t i)
{
    size_t cb = x->srv->chunk_bytes;
    return chunk_post(x, c, 1, chunk_len(len, i * cb, cb), x->addr + i * cb);
}

rdma_status_t rdma_xfer_pull(rdma_xfer_t *x, uint64_t len, rdma_sink_fn sink, void *ctx)
{
    uint8_t *src;
    rdma_status_t rc = xfer_begin(x, len, &src);
    if (rc != RDMA_OK || len == 0)
        return rc;
    size_t cb = x->srv->chunk_bytes;
    if (src) {
        /* Mapped: the sink reads the client's buffer in place. */
        for (uint64_t off = 0; off < len; off += cb) {
            if (sink(ctx, src + off, chunk_len(len, off, cb)) != 0)
                return RDMA_CALLBACK;
        }
        return xfer_moved(x, 1, len, RDMA_OK);
    }
    uint64_t deadline;
    rchunk_t *ch[2];
    if (xfer_chunks(x, len, ch, &deadline) < 0)
        return RDMA_BUSY;
    uint64_t nb = ch[1] ? 2 : 1, n = (len + cb - 1) / cb;
    /* Chunk i lands in ch[i % nb]. With two buffers the get of i+1 is in
     * flight while the sink works on i; with one it follows the sink. */
    if (pull_post(x, ch[0], len, 0) < 0)
        rc = RDMA_TRANSPORT;
    for (uint64_t i = 0; i < n && rc == RDMA_OK; i++) {
        rchunk_t *c = ch[i % nb];
        int more = i + 1 < n;
        if (chunk_wait(x, c, deadline) < 0)
            rc = RDMA_TRANSPORT;
        else if (more && nb == 2 && pull_post(x, ch[(i + 1) % nb], len, i + 1) < 0)
            rc = RDMA_TRANSPORT;
        else if (sink(ctx, c->buf, chunk_len(len, i * cb, cb)) != 0)
            rc = RDMA_CALLBACK;
        else if (more && nb == 1 && pull_post(x, c, len, i + 1) < 0)
            rc = RDMA_TRANSPORT;
    }
    chunk_release(x->srv, ch[0]);
    chunk_release(x->srv, ch[1]);
    return xfer_moved(x, 0, len, rc);
}

rdma_status_t rdma_xfer_push(rdma_xfer_t *x, uint64_t len, rdma_fill_fn fill, void *ctx)
{
    return rdma_xfer_push_progress(x, len, fill, ctx, NULL, NULL);
}

rdma_status_t rdma_xfer_push_progress(rdma_xfer_t *x, uint64_t len, rdma_fill_fn fill, void *ctx,
                                      xfer_progress_fn progress, void *pctx)
{
    uint8_t *dst;
    rdma_status_t rc = xfer_begin(x, len, &dst);
    if (rc != RDMA_OK || len == 0)
        return rc;
    size_t cb = x->srv->chunk_bytes;
    if (dst) {
        /* Mapped: the source fills the client's buffer in place; the reply
         * (or progress message) that follows orders these stores before the
         * client's reads. Told, in smaller pieces, so that the client's
         * work on the first ones overlaps the filling of the next. */
        size_t step = progress && cb > RDMA_PROGRESS_STEP ? RDMA_PROGRESS_STEP : cb;
        for (uint64_t off = 0; off < len; off += step) {
            size_t n = chunk_len(len, off, step);
            if (fill(ctx, dst + off, n, off) != 0)
                return RDMA_CALLBACK;
            if (progress && off + n < len)
                progress(pctx, off + n);
        }
        return xfer_moved(x, 1, len, RDMA_OK);
    }
    uint64_t deadline;
    rchunk_t *ch[2];
    if (xfer_chunks(x, len, ch, &deadline) < 0)
        return RDMA_BUSY;
    uint64_t nb = ch[1] ? 2 : 1, n = (len + cb - 1) / cb;
    rchunk_t *last = NULL;
    for (uint64_t i = 0; i < n && rc == RDMA_OK; i++) {
        rchunk_t *c = ch[i % nb];
        uint64_t off = i * cb;
        size_t clen = chunk_len(len, off, cb);
        /* The put that last used this buffer must be done before refilling
         * it; with two buffers the other one's put overlaps this fill. */
        if (atomic_load(&c->state) != CH_OWNED && chunk_wait(x, c, deadline) < 0)
            rc = RDMA_TRANSPORT;
        else if (fill(ctx, c->buf, clen, off) != 0)
            rc = RDMA_CALLBACK;
        else if (chunk_post(x, c, 0, clen, x->addr + off) < 0)
            rc = RDMA_TRANSPORT;
        else
            last = c;
    }
    for (uint64_t b = 0; b < nb && rc == RDMA_OK; b++) {
        if (atomic_load(&ch[b]->state) != CH_OWNED && chunk_wait(x, ch[b], deadline) < 0)
            rc = RDMA_TRANSPORT;
    }
    /* A put's completion only means the local buffer is free again: flush so
     * the bytes are in the client's memory before we answer. */
    if (rc == RDMA_OK && (chunk_flush(x, last) < 0 || chunk_wait(x, last, deadline) < 0))
        rc = RDMA_TRANSPORT;
    chunk_release(x->srv, ch[0]);
    chunk_release(x->srv, ch[1]);
    return xfer_moved(x, 0, len, rc);
}
