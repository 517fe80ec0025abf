/* Receive deadlines for HTTP connections: see http_guard.h. */
#include "http/http_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/tcp.h> /* struct tcp_info with tcpi_bytes_received (glibc's lacks it) */
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/addr.h"
#include "common/clock.h"
#include "common/log.h"

/* A slot's phase and the time it began (ms since the guard started) share one
 * atomic word, so the reaper always sees a matching pair. */
enum http_guard_phase {
    CG_FREE = 0, /* no connection */
    CG_HEAD,     /* receiving a request head: deadline */
    CG_WORK,     /* the server is handling or replying: not timed */
    CG_BODY,     /* receiving a request body: minimum rate */
    CG_IDLE,     /* keep-alive, no byte of the next request seen yet */
    CG_CLOSING,  /* shut down by the reaper */
};
#define PHASE_SHIFT 56
#define TIME_MASK   ((UINT64_C(1) << PHASE_SHIFT) - 1)

static uint64_t state_make(enum http_guard_phase p, uint64_t ms)
{
    return ((uint64_t)p << PHASE_SHIFT) | (ms & TIME_MASK);
}

static enum http_guard_phase state_phase(uint64_t st)
{
    return (enum http_guard_phase)(st >> PHASE_SHIFT);
}

static uint64_t state_ms(uint64_t st)
{
    return st & TIME_MASK;
}

struct http_guard_conn {
    http_guard_t *g;
    pthread_mutex_t lock; /* fd, gen and peer change, and the reaper uses fd, only under it */
    int fd;               /* -1 when free */
    atomic_uint gen;      /* bumped at every registration */
    struct sockaddr_storage peer;

    /* Written by the connection's thread (and CAS'd by the reaper). */
    _Atomic uint64_t state;
    _Atomic uint64_t body_bytes; /* since the body phase began */
    _Atomic uint64_t busy_ns;    /* in our handler since the body phase began */
    atomic_bool in_handler;

    /* The reaper's own. */
    unsigned r_gen;
    uint64_t r_state;  /* the state these were set for */
    uint64_t r_win_ms; /* body: the window began */
    uint64_t r_win_bytes;
    uint64_t r_win_busy;
    uint64_t r_rx_base; /* idle: TCP bytes received when first seen idle; UINT64_MAX unknown */
};

struct http_guard {
    http_guard_config_t cfg;
    uint64_t base_ms;
    http_guard_conn_t *slots;
    unsigned n_slots;

    pthread_mutex_t free_lock;
    unsigned *free_stack;
    unsigned n_free;

    atomic_uint open;
    atomic_uint_fast64_t closed_head, closed_body, refused_full;

    pthread_t reaper;
    pthread_mutex_t stop_lock;
    pthread_cond_t stop_cond;
    bool stopping;

    /* Reaper-only: the summary log line. */
    uint64_t last_log_ms; /* 0: never logged */
    uint64_t pending_head, pending_body;
    char last_peer[INET6_ADDRSTRLEN];
};

static uint64_t guard_ms(const http_guard_t *g)
{
    return clock_mono_ms() - g->base_ms;
}

/* ---- the connection's side ---------------------------------------------------------- */

http_guard_conn_t *http_guard_register(http_guard_t *g, int fd, const struct sockaddr *peer)
{
    pthread_mutex_lock(&g->free_lock);
    unsigned idx = g->n_free ? g->free_stack[--g->n_free] : UINT32_MAX;
    pthread_mutex_unlock(&g->free_lock);
    if (idx == UINT32_MAX) {
        shutdown(fd, SHUT_RDWR);
        atomic_fetch_add(&g->refused_full, 1);
        return NULL;
    }
    http_guard_conn_t *c = &g->slots[idx];
    pthread_mutex_lock(&c->lock);
    c->fd = fd;
    atomic_fetch_add(&c->gen, 1);
    memset(&c->peer, 0, sizeof(c->peer));
    if (peer) {
        size_t len =
            peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        memcpy(&c->peer, peer, len);
    }
    atomic_store(&c->body_bytes, 0);
    atomic_store(&c->busy_ns, 0);
    atomic_store(&c->in_handler, false);
    atomic_store(&c->state, state_make(CG_HEAD, guard_ms(g)));
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_add(&g->open, 1);
    return c;
}

void http_guard_unregister(http_guard_t *g, http_guard_conn_t *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->lock);
    c->fd = -1;
    atomic_store(&c->state, state_make(CG_FREE, 0));
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(&g->free_lock);
    g->free_stack[g->n_free++] = (unsigned)(c - g->slots);
    pthread_mutex_unlock(&g->free_lock);
    atomic_fetch_sub(&g->open, 1);
}

uint64_t http_guard_enter(http_guard_conn_t *c)
{
    if (!c)
        return 0;
    atomic_store(&c->in_handler, true);
    uint64_t st = atomic_load(&c->state);
    if (state_phase(st) != CG_BODY && state_phase(st) != CG_CLOSING)
        atomic_store(&c->state, state_make(CG_WORK, guard_ms(c->g)));
    return state_phase(st) == CG_BODY ? clock_mono_ns() : 0;
}

void http_guard_body_bytes(http_guard_conn_t *c, uint64_t n)
{
    if (c)
        atomic_fetch_add_explicit(&c->body_bytes, n, memory_order_relaxed);
}

void http_guard_leave(http_guard_conn_t *c, uint64_t entered, int want_body)
{
    if (!c)
        return;
    uint64_t st = atomic_load(&c->state);
    if (state_phase(st) == CG_CLOSING) {
        /* shut down meanwhile: leave it so */
    } else if (!want_body) {
        if (state_phase(st) != CG_WORK)
            atomic_store(&c->state, state_make(CG_WORK, guard_ms(c->g)));
    } else if (state_phase(st) == CG_BODY) {
        if (entered)
            atomic_fetch_add_explicit(&c->busy_ns, clock_mono_ns() - entered, memory_order_relaxed);
    } else {
        /* The body clock starts now (libmicrohttpd hands over body bytes only
         * after the first call, so none were counted yet). The counters are
         * reset before the state says BODY: the reaper reads them after it. */
        atomic_store(&c->body_bytes, 0);
        atomic_store(&c->busy_ns, 0);
        atomic_store(&c->state, state_make(CG_BODY, guard_ms(c->g)));
    }
    atomic_store(&c->in_handler, false);
}

void http_guard_request_done(http_guard_conn_t *c)
{
    if (!c)
        return;
    uint64_t st = atomic_load(&c->state);
    if (state_phase(st) != CG_CLOSING)
        atomic_store(&c->state, state_make(CG_IDLE, guard_ms(c->g)));
}

/* ---- the reaper ------------------------------------------------------------------------ */

/* Shuts the connection down if it is still the one (gen) in the state seen,
 * counting it in *counter first (so the count is there before the peer can
 * see the shutdown). */
static bool reap(http_guard_t *g, http_guard_conn_t *c, unsigned gen, uint64_t st,
                 atomic_uint_fast64_t *counter)
{
    bool done = false;
    pthread_mutex_lock(&c->lock);
    if (c->fd >= 0 && atomic_load(&c->gen) == gen &&
        atomic_compare_exchange_strong(&c->state, &st, state_make(CG_CLOSING, guard_ms(g)))) {
        atomic_fetch_add(counter, 1);
        shutdown(c->fd, SHUT_RDWR);
        addr_from_sockaddr((const struct sockaddr *)&c->peer, g->last_peer, sizeof(g->last_peer),
                           NULL);
        done = true;
    }
    pthread_mutex_unlock(&c->lock);
    return done;
}

/* TCP bytes received on the connection so far, or UINT64_MAX. */
static uint64_t rx_bytes(http_guard_conn_t *c, unsigned gen)
{
    uint64_t rx = UINT64_MAX;
    pthread_mutex_lock(&c->lock);
    if (c->fd >= 0 && atomic_load(&c->gen) == gen) {
        struct tcp_info ti;
        socklen_t len = sizeof(ti);
        memset(&ti, 0, sizeof(ti));
        if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
            len >= offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
            rx = ti.tcpi_bytes_received;
    }
    pthread_mutex_unlock(&c->lock);
    return rx;
}

static void check(http_guard_t *g, http_guard_conn_t *c, uint64_t now)
{
    uint64_t st = atomic_load(&c->state);
    enum http_guard_phase ph = state_phase(st);
    if (ph == CG_FREE || ph == CG_WORK || ph == CG_CLOSING)
        return;
    unsigned gen = atomic_load(&c->gen);
    if (gen != c->r_gen || st != c->r_state) {
        /* A phase not seen before: the body window starts with the phase. */
        c->r_gen = gen;
        c->r_state = st;
        c->r_win_ms = state_ms(st);
        c->r_win_bytes = 0;
        c->r_win_busy = 0;
        c->r_rx_base = UINT64_MAX;
    }
    uint64_t since = state_ms(st);
    switch (ph) {
    case CG_HEAD:
        if (g->cfg.head_timeout_ms && now >= since + g->cfg.head_timeout_ms &&
            reap(g, c, gen, st, &g->closed_head)) {
            g->pending_head++;
            log_debug("http: closed a connection from %s: request head not complete in %u ms",
                      g->last_peer, g->cfg.head_timeout_ms);
        }
        break;
    case CG_BODY: {
        if (!g->cfg.min_body_rate || atomic_load(&c->in_handler))
            break;
        uint64_t bytes = atomic_load(&c->body_bytes);
        uint64_t busy_ms = atomic_load(&c->busy_ns) / 1000000u;
        uint64_t span = now > c->r_win_ms ? now - c->r_win_ms : 0;
        uint64_t ours = busy_ms - c->r_win_busy;
        uint64_t theirs = span > ours ? span - ours : 0; /* time the client had */
        if (theirs < g->cfg.body_window_ms)
            break;
        uint64_t got = bytes - c->r_win_bytes;
        if (got * 1000u < g->cfg.min_body_rate * theirs) {
            if (reap(g, c, gen, st, &g->closed_body)) {
                g->pending_body++;
                log_debug("http: closed a connection from %s: %llu body bytes in %llu ms",
                          g->last_peer, (unsigned long long)got, (unsigned long long)theirs);
            }
        } else {
            c->r_win_ms = now;
            c->r_win_bytes = bytes;
            c->r_win_busy = busy_ms;
        }
        break;
    }
    case CG_IDLE: {
        if (!g->cfg.head_timeout_ms)
            break;
        /* Waiting for a further request is the idle timeout's business; the
         * head deadline starts with the first byte of it. */
        uint64_t rx = rx_bytes(c, gen);
        if (rx == UINT64_MAX)
            break;
        if (c->r_rx_base == UINT64_MAX) {
            c->r_rx_base = rx;
        } else if (rx > c->r_rx_base) {
            uint64_t head = state_make(CG_HEAD, now);
            atomic_compare_exchange_strong(&c->state, &st, head);
        }
        break;
    }
    default:
        break;
    }
}

static void log_summary(http_guard_t *g, uint64_t now)
{
    log_info("http: closed %llu connections whose request head took over %u ms and %llu whose "
             "body came under %llu B/s (latest from %s)",
             (unsigned long long)g->pending_head, g->cfg.head_timeout_ms,
             (unsigned long long)g->pending_body, (unsigned long long)g->cfg.min_body_rate,
             g->last_peer);
    g->pending_head = g->pending_body = 0;
    g->last_log_ms = now;
}

static void *reaper_main(void *arg)
{
    http_guard_t *g = arg;
    pthread_mutex_lock(&g->stop_lock);
    while (!g->stopping) {
        struct timespec until = clock_after_ms(CLOCK_MONOTONIC, g->cfg.sweep_ms);
        pthread_cond_timedwait(&g->stop_cond, &g->stop_lock, &until);
        if (g->stopping)
            break;
        pthread_mutex_unlock(&g->stop_lock);

        uint64_t now = guard_ms(g);
        for (unsigned i = 0; i < g->n_slots; i++)
            check(g, &g->slots[i], now);
        /* One line at once, then at most one per 10 s while it goes on. */
        if ((g->pending_head || g->pending_body) &&
            (!g->last_log_ms || now >= g->last_log_ms + 10000))
            log_summary(g, now);
        pthread_mutex_lock(&g->stop_lock);
    }
    pthread_mutex_unlock(&g->stop_lock);
    return NULL;
}

/* ---- life ------------------------------------------------------------------------------ */

/* Frees a guard whose reaper is not running (never started, or joined). */
static void guard_free(http_guard_t *g)
{
    pthread_cond_destroy(&g->stop_cond);
    pthread_mutex_destroy(&g->stop_lock);
    pthread_mutex_destroy(&g->free_lock);
    for (unsigned i = 0; i < g->n_slots; i++)
        pthread_mutex_destroy(&g->slots[i].lock);
    free(g->slots);
    free(g->free_stack);
    free(g);
}

http_guard_t *http_guard_start(const http_guard_config_t *cfg)
{
    http_guard_t *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->cfg = *cfg;
    if (!g->cfg.sweep_ms)
        g->cfg.sweep_ms = 250;
    if (!g->cfg.body_window_ms)
        g->cfg.body_window_ms = 1000;
    g->n_slots = cfg->max_conns ? cfg->max_conns : 1;
    g->slots = calloc(g->n_slots, sizeof(*g->slots));
    g->free_stack = calloc(g->n_slots, sizeof(*g->free_stack));
    if (!g->slots || !g->free_stack) {
        free(g->slots);
        free(g->free_stack);
        free(g);
        return NULL;
    }
    /* Timestamps start at 1 s so that "never" (0) is long ago. */
    g->base_ms = clock_mono_ms() - 1000;
    for (unsigned i = 0; i < g->n_slots; i++) {
        http_guard_conn_t *c = &g->slots[i];
        c->g = g;
        c->fd = -1;
        pthread_mutex_init(&c->lock, NULL);
        c->r_rx_base = UINT64_MAX;
        /* Lowest slots first: the reaper's scan stays in cache. */
        g->free_stack[i] = g->n_slots - 1 - i;
    }
    g->n_free = g->n_slots;
    pthread_mutex_init(&g->free_lock, NULL);
    pthread_mutex_init(&g->stop_lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->stop_cond, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&g->reaper, NULL, reaper_main, g);
    if (rc != 0) {
        log_error("http: cannot start the connection reaper: %s", strerror(rc));
        guard_free(g);
        return NULL;
    }
    return g;
}

void http_guard_stop(http_guard_t *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->stop_lock);
    g->stopping = true;
    pthread_cond_signal(&g->stop_cond);
    pthread_mutex_unlock(&g->stop_lock);
    pthread_join(g->reaper, NULL);
    if (g->pending_head || g->pending_body)
        log_summary(g, guard_ms(g));
    guard_free(g);
}

void http_guard_get_stats(http_guard_t *g, http_guard_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    if (!g)
        return;
    st->open = atomic_load(&g->open);
    st->closed_head = atomic_load(&g->closed_head);
    st->closed_body = atomic_load(&g->closed_body);
    st->refused_full = atomic_load(&g->refused_full);
}
