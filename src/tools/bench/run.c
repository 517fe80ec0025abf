/* The workload engine of s3rdma-bench (run.h).
 *
 * Each operation kind in the mix gets a client of its own (with
 * --client-per-thread, each thread's kinds do), so libs3rdma's counters
 * (s3r_client_stats) say per kind which transport carried it. Seeding and
 * key discovery (seed.h) use one more client over HTTP, not counted, closed
 * before the run starts.
 * Threads choose each operation by weight from the mix with their own
 * generator; reads and writes walk the key space from the thread's index
 * with a stride of the thread count, deletes take each key once from a
 * shared cursor. With --inflight N > 1, reads and writes go through the
 * asynchronous API (N per thread); lists and deletes run synchronously in
 * their slot. A latency is the time from the call (or the async start) to
 * its completion; verification happens after the clock stops. Operations
 * started within --warmup are not counted (their errors are); with --gap a
 * thread sleeps after each request, outside its clock. */
#include "tools/bench/run.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/client.h"
#include "tools/bench/seed.h"

#define MAX_REPORTED_ERRORS 5

typedef struct run run_t;

/* One request slot of a thread. */
typedef struct slot {
    bench_op_t op;
    /* Its entry in the thread's aops: an async read or write in flight,
     * else NULL. */
    s3r_op_t **aop;
    uint64_t t0, key, len;
    char *rbuf, *wbuf; /* size_max bytes each (when the kind is in the mix) */
    payload_body_t body;
} slot_t;

typedef struct worker {
    int idx;
    run_t *run;
    pthread_t th;
    s3r_client_t *clients[OP_COUNT]; /* the run's, or its own (--client-per-thread) */
    uint64_t rng, rcur, wcur;
    char *rmem, *wmem; /* the slots' buffers, one allocation per kind */
    slot_t *slots;
    s3r_op_t **aops; /* the slots' requests in flight (s3r_op_wait_any) */
    /* written by this thread; read by the live line (relaxed atomics) */
    hist_t lat[OP_COUNT];
    _Atomic uint64_t ok[OP_COUNT], bytes[OP_COUNT], verified[OP_COUNT], errors[OP_COUNT];
    uint64_t by_kind[OP_COUNT][ERRK_COUNT];
} worker_t;

struct run {
    const bench_opts_t *o;
    s3r_client_t *setup, *clients[OP_COUNT];
    int registered; /* buffers from s3r_buf_alloc */
    bench_keys_t keys;
    unsigned mix_total;
    /* When the counted phase started (UINT64_MAX during the warm-up: an
     * operation counts when it started at or after it) and when the run
     * ends; set by bench_run once the warm-up is over. */
    _Atomic uint64_t counted_ns, deadline_ns;
    _Atomic uint64_t tickets, del_next;
    _Atomic int reported, stop;
    worker_t *w;
};

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

const char *errk_name(int k)
{
    if (k > 0 && k < ERRK_STATUS_END) {
        const char *n = s3r_status_name((s3r_status_t)-k);
        return strcmp(n, "unknown status") == 0 ? NULL : n;
    }
    if (k > ERRK_VERIFY && k < ERRK_VERIFY_LIST)
        return payload_result_name((payload_result_t)(k - ERRK_VERIFY));
    return k == ERRK_VERIFY_LIST ? "verify_list" : k == ERRK_VERIFY_HEAD ? "verify_head" : NULL;
}

/* ---- Setup: clients, buffers ------------------------------------------------ */

static char *buf_get(run_t *run, worker_t *w, bench_op_t op, size_t len)
{
    void *p = NULL;
    if (run->registered) {
        s3r_status_t st = s3r_buf_alloc(w->clients[op], len, &p);
        if (st != S3R_OK) {
            bench_client_error(w->clients[op], "allocate registered memory", st);
            return NULL;
        }
        return p;
    }
    if (posix_memalign(&p, 4096, len) != 0)
        return NULL;
    return p;
}

static void buf_put(run_t *run, worker_t *w, bench_op_t op, char *p)
{
    if (p && run->registered)
        s3r_buf_free(w->clients[op], p);
    else
        free(p);
}

static int worker_setup(run_t *run, worker_t *w)
{
    const bench_opts_t *o = run->o;
    size_t n = (size_t)o->inflight, sz = (size_t)o->size_max;
    w->rng = UINT64_C(0xB3A7C4) + (uint64_t)w->idx * UINT64_C(0x1000193);
    w->rcur = w->wcur = (uint64_t)w->idx;
    for (int k = 0; k < OP_COUNT; k++)
        hist_reset(&w->lat[k]);
    for (int k = 0; k < OP_COUNT; k++)
        if (o->mix[k] && !w->clients[k] && bench_client_make(o, 0, &w->clients[k]))
            return 1;
    w->slots = calloc(n, sizeof(slot_t));
    w->aops = calloc(n, sizeof(s3r_op_t *));
    if (!w->slots || !w->aops)
        return 1;
    if (o->mix[OP_READ] && !(w->rmem = buf_get(run, w, OP_READ, n * sz)))
        return 1;
    if (o->mix[OP_WRITE] && !(w->wmem = buf_get(run, w, OP_WRITE, n * sz)))
        return 1;
    for (size_t i = 0; i < n; i++) {
        slot_t *s = &w->slots[i];
        s->aop = &w->aops[i];
        s->rbuf = w->rmem ? w->rmem + i * sz : NULL;
        s->wbuf = w->wmem ? w->wmem + i * sz : NULL;
        if (s->wbuf)
            payload_body_init(&s->body, s->wbuf, sz, rng_next(&w->rng));
    }
    return 0;
}

/* ---- The operations ------------------------------------------------------------ */

/* Takes the right to start one more operation: 0 once --ops are all
 * started, the deadline passed, or the run was stopped. */
static int take_ticket(run_t *run)
{
    if (atomic_load_explicit(&run->stop, memory_order_relaxed))
        return 0;
    if (run->o->ops)
        return atomic_fetch_add(&run->tickets, 1) < run->o->ops;
    return hist_now_ns() < atomic_load_explicit(&run->deadline_ns, memory_order_relaxed);
}

static bench_op_t pick_op(run_t *run, worker_t *w)
{
    unsigned r = (unsigned)(rng_next(&w->rng) % run->mix_total);
    for (int k = 0; k < OP_COUNT; k++) {
        if (r < run->o->mix[k])
            return (bench_op_t)k;
        r -= run->o->mix[k];
    }
    return OP_READ;
}

static void add(_Atomic uint64_t *a, uint64_t v)
{
    atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

static void fail(run_t *run, worker_t *w, slot_t *s, int kind, s3r_status_t st)
{
    add(&w->errors[s->op], 1);
    w->by_kind[s->op][kind]++;
    if (atomic_fetch_add(&run->reported, 1) >= MAX_REPORTED_ERRORS)
        return;
    char what[1200];
    snprintf(what, sizeof what, "%s s3://%s/%s", bench_op_name(s->op), run->o->bucket,
             run->keys.keys[s->key]);
    if (kind >= ERRK_VERIFY)
        fprintf(stderr, "s3rdma-bench: %s: %s: the bytes read are not what was written\n", what,
                errk_name(kind));
    else
        bench_client_error(w->clients[s->op], what, st);
}

/* Accounts a finished operation of slot s (status st, n bytes read). */
static void finish(run_t *run, worker_t *w, slot_t *s, s3r_status_t st, uint64_t n, uint64_t t1)
{
    if (st != S3R_OK) {
        int k = -(int)st;
        fail(run, w, s, k > 0 && k < ERRK_STATUS_END ? k : ERRK_STATUS_END - 1, st);
        return;
    }
    const bench_opts_t *o = run->o;
    uint64_t moved = 0;
    if (s->op == OP_READ) {
        payload_result_t pr = o->verify ? payload_verify(s->rbuf, n, run->keys.keys[s->key])
                              : n < o->size_min || n > o->size_max ? PAYLOAD_BAD_LENGTH
                                                                   : PAYLOAD_OK;
        if (pr != PAYLOAD_OK) {
            fail(run, w, s, ERRK_VERIFY + (int)pr, st);
            return;
        }
        moved = n;
    } else if (s->op == OP_WRITE) {
        moved = s->len;
    } else if ((s->op == OP_LIST || s->op == OP_HEAD) && n == 0) {
        fail(run, w, s, s->op == OP_LIST ? ERRK_VERIFY_LIST : ERRK_VERIFY_HEAD, st);
        return;
    }
    if (s->t0 < atomic_load_explicit(&run->counted_ns, memory_order_acquire))
        return; /* warm-up: checked, not counted */
    if (s->op == OP_READ && o->verify)
        add(&w->verified[OP_READ], 1);
    hist_record(&w->lat[s->op], t1 - s->t0);
    add(&w->ok[s->op], 1);
    add(&w->bytes[s->op], moved);
}

/* A listing must return the key space's first page, all under the prefix.
 * Returns 1 when it does. */
static int list_once(run_t *run, s3r_client_t *c, s3r_status_t *st)
{
    s3r_list_opts_t lo = {.prefix = run->o->prefix, .max_keys = 1000};
    s3r_object_list_t *l = NULL;
    *st = s3r_object_list(c, run->o->bucket, &lo, &l);
    if (*st != S3R_OK)
        return 0;
    uint64_t want = run->keys.n < 1000 ? run->keys.n : 1000;
    int good = l->n_objects >= want;
    for (size_t i = 0; good && i < l->n_objects; i++)
        good = strncmp(l->objects[i].key, run->o->prefix, strlen(run->o->prefix)) == 0;
    s3r_object_list_free(l);
    return good;
}

/* A HEAD must find the object with a size --object-size allows. Returns 1
 * when it does. */
static int head_once(run_t *run, s3r_client_t *c, const char *key, s3r_status_t *st)
{
    s3r_object_info_t *info = NULL;
    *st = s3r_object_head(c, run->o->bucket, key, &info);
    int good = *st == S3R_OK && info->size >= run->o->size_min && info->size <= run->o->size_max;
    s3r_object_info_free(info);
    return good;
}

/* Sleeps --gap after a request, to the nanosecond asked (the thread's
 * timer slack is 1 ns: bench_run). */
static void gap_sleep(const bench_opts_t *o)
{
    uint64_t ns = (uint64_t)(o->gap_s * 1e9);
    struct timespec gap = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &gap, &gap) != 0)
        ;
}

/* Starts the next operation in slot s. Returns 1 when an async request is
 * left in flight, 0 when the operation already finished (or none could be
 * started: then *more is 0). */
static int start(run_t *run, worker_t *w, slot_t *s, int *more)
{
    const bench_opts_t *o = run->o;
    *more = take_ticket(run);
    if (!*more)
        return 0;
    s->op = pick_op(run, w);
    s3r_client_t *c = w->clients[s->op];
    int async = o->inflight > 1;
    s3r_status_t st;
    uint64_t n = 0;
    if (s->op == OP_DELETE) {
        s->key = atomic_fetch_add(&run->del_next, 1);
        if (s->key >= run->keys.n) {
            atomic_store(&run->stop, 1); /* every key is gone */
            *more = 0;
            return 0;
        }
    } else if (s->op == OP_READ) {
        s->key = w->rcur % run->keys.n;
        w->rcur += (uint64_t)o->threads;
    } else {
        s->key = w->wcur % run->keys.n;
        w->wcur += (uint64_t)o->threads;
    }
    const char *key = run->keys.keys[s->key];
    if (s->op == OP_WRITE) {
        s->len = o->size_min + rng_next(&w->rng) % (o->size_max - o->size_min + 1);
        payload_stamp(&s->body, s->wbuf, s->len, key);
    }
    s->t0 = hist_now_ns();
    switch (s->op) {
    case OP_READ:
        if (async) {
            st = s3r_object_get_async(c, o->bucket, key, s->rbuf, o->size_max, NULL, s->aop);
            if (st == S3R_OK)
                return 1;
        } else {
            st = s3r_object_get(c, o->bucket, key, s->rbuf, o->size_max, NULL, &n);
        }
        break;
    case OP_WRITE:
        if (async) {
            st = s3r_object_put_async(c, o->bucket, key, s->wbuf, s->len, NULL, s->aop);
            if (st == S3R_OK)
                return 1;
        } else {
            st = s3r_object_put(c, o->bucket, key, s->wbuf, s->len, NULL);
        }
        break;
    case OP_DELETE:
        st = s3r_object_delete(c, o->bucket, key);
        break;
    case OP_HEAD:
        n = (uint64_t)head_once(run, c, key, &st);
        break;
    default:
        n = (uint64_t)list_once(run, c, &st);
        break;
    }
    finish(run, w, s, st, n, hist_now_ns());
    if (o->gap_s > 0)
        gap_sleep(o);
    return 0;
}

/* Settles the async op in slot s, which s3r_op_wait_any found answered
 * (so s3r_op_wait only judges the answer), and records it. */
static void complete(run_t *run, worker_t *w, slot_t *s)
{
    uint64_t n = 0;
    s3r_status_t st = s3r_op_wait(*s->aop, &n);
    uint64_t t1 = hist_now_ns();
    s3r_op_free(*s->aop);
    *s->aop = NULL;
    finish(run, w, s, st, n, t1);
}

/* Each slot is refilled until it holds a request in flight or the run is
 * over; sync operations finish inside start(). The thread then waits for
 * whichever of its requests is answered first (s3r_op_wait_any: it sleeps
 * on the sessions until a reply lands), records it then and refills its
 * slot at once: a fast read answered behind a slow write is neither
 * recorded with the write's latency nor left unrefilled (issue 18). A
 * wait that times out (the client's http_timeout_ms with no answer at all)
 * settles the first slot's request, which then fails by its own timeout. */
static void *worker_main(void *arg)
{
    worker_t *w = arg;
    run_t *run = w->run;
    int n = run->o->inflight, more = 1, active = 0;
    for (int i = 0; i < n && more; i++)
        while (more && !w->aops[i])
            active += start(run, w, &w->slots[i], &more);
    while (active > 0) {
        size_t i = 0;
        if (s3r_op_wait_any(w->aops, (size_t)n, -1, &i) != S3R_OK)
            while (!w->aops[i])
                i++;
        slot_t *s = &w->slots[i];
        complete(run, w, s);
        active--;
        while (more && !w->aops[i])
            active += start(run, w, s, &more);
    }
    return NULL;
}

/* ---- The live line ---------------------------------------------------------------- */

typedef struct live {
    run_t *run;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int quit;
} live_t;

static void live_sum(run_t *run, hist_t *h, uint64_t *bytes, uint64_t *errors)
{
    hist_reset(h);
    *bytes = *errors = 0;
    for (int t = 0; t < run->o->threads; t++)
        for (int k = 0; k < OP_COUNT; k++) {
            hist_add(h, &run->w[t].lat[k]);
            *bytes += atomic_load_explicit(&run->w[t].bytes[k], memory_order_relaxed);
            *errors += atomic_load_explicit(&run->w[t].errors[k], memory_order_relaxed);
        }
}

static void *live_main(void *arg)
{
    live_t *l = arg;
    hist_t *cur = malloc(sizeof(hist_t)), *prev = malloc(sizeof(hist_t)),
           *win = malloc(sizeof(hist_t));
    uint64_t pbytes = 0, t0 = hist_now_ns();
    if (cur && prev && win) {
        hist_reset(prev);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        pthread_mutex_lock(&l->mu);
        while (!l->quit) {
            ts.tv_sec += 1;
            if (pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0 && l->quit)
                break;
            uint64_t bytes, errors;
            live_sum(l->run, cur, &bytes, &errors);
            hist_diff(win, cur, prev);
            fprintf(stderr, "\r[%4.0fs] %10.0f ops/s %10.1f MB/s  p99 %9.1f us  errors %llu   ",
                    (double)(hist_now_ns() - t0) / 1e9, (double)hist_count(win),
                    (double)(bytes - pbytes) / 1e6, hist_percentile(win, 99) / 1e3,
                    (unsigned long long)errors);
            hist_t *x = prev;
            prev = cur;
            cur = x;
            pbytes = bytes;
        }
        pthread_mutex_unlock(&l->mu);
        fprintf(stderr, "\n");
    }
    free(cur);
    free(prev);
    free(win);
    return NULL;
}

/* ---- The run ------------------------------------------------------------------------ */

static double tv_secs(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void stats_diff(s3r_stats_t *d, const s3r_stats_t *a, const s3r_stats_t *b)
{
    d->http_ops = a->http_ops - b->http_ops;
    d->http_bytes = a->http_bytes - b->http_bytes;
    d->token_ops = a->token_ops - b->token_ops;
    d->token_bytes = a->token_bytes - b->token_bytes;
    d->native_ops = a->native_ops - b->native_ops;
    d->native_bytes = a->native_bytes - b->native_bytes;
    d->fallbacks = a->fallbacks - b->fallbacks;
    d->errors = a->errors - b->errors;
    d->rdma_sessions = a->rdma_sessions - b->rdma_sessions;
    d->regions_registered = a->regions_registered - b->regions_registered;
    d->declines = a->declines - b->declines;
}

/* libs3rdma's counters of kind k: of the run's client, or summed over the
 * threads' own (--client-per-thread). */
static void kind_stats(run_t *run, int k, s3r_stats_t *out)
{
    memset(out, 0, sizeof *out);
    int own = run->o->client_per_thread;
    for (int t = 0; t < (own ? run->o->threads : 1); t++) {
        s3r_client_t *c = own ? run->w[t].clients[k] : run->clients[k];
        s3r_stats_t x;
        if (!c || s3r_client_stats(c, &x) != S3R_OK)
            continue;
        out->http_ops += x.http_ops;
        out->http_bytes += x.http_bytes;
        out->token_ops += x.token_ops;
        out->token_bytes += x.token_bytes;
        out->native_ops += x.native_ops;
        out->native_bytes += x.native_bytes;
        out->fallbacks += x.fallbacks;
        out->errors += x.errors;
        out->rdma_sessions += x.rdma_sessions;
        out->regions_registered += x.regions_registered;
        out->declines += x.declines;
    }
}

static void teardown(run_t *run)
{
    for (int t = 0; run->w && t < run->o->threads; t++) {
        worker_t *w = &run->w[t];
        buf_put(run, w, OP_READ, w->rmem);
        buf_put(run, w, OP_WRITE, w->wmem);
        free(w->slots);
        free(w->aops);
        for (int k = 0; run->o->client_per_thread && k < OP_COUNT; k++)
            s3r_client_destroy(w->clients[k]);
    }
    free(run->w);
    bench_keys_free(&run->keys);
    for (int k = 0; k < OP_COUNT; k++)
        s3r_client_destroy(run->clients[k]);
    s3r_client_destroy(run->setup);
}

/* The process's CPU and every kind's counters, where the counted phase starts. */
static void snapshot(run_t *run, struct rusage *ru, s3r_stats_t before[OP_COUNT])
{
    getrusage(RUSAGE_SELF, ru);
    for (int k = 0; k < OP_COUNT; k++)
        kind_stats(run, k, &before[k]);
}

static void sleep_until(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

int bench_run(const bench_opts_t *o, run_result_t *r)
{
    run_t run = {.o = o};
    memset(r, 0, sizeof *r);
    for (int k = 0; k < OP_COUNT; k++) {
        hist_reset(&r->op[k].lat);
        run.mix_total += o->mix[k];
    }
    int rc = 1;
    int needs_objects = o->mix[OP_READ] || o->mix[OP_DELETE] || o->mix[OP_LIST] || o->mix[OP_HEAD];
    if (bench_client_make(o, 1, &run.setup) ||
        bench_keys_prepare(o, run.setup, needs_objects, 1, &run.keys))
        goto out;
    /* Seeding's connections (one per seeding thread) would stay open idle
     * through the run, counted against the server's per-address bound. */
    s3r_client_destroy(run.setup);
    run.setup = NULL;
    r->nkeys = run.keys.n;
    r->seed_secs = run.keys.seed_secs;
    run.registered = o->rdma_buffer_pool && o->use_rdma && o->transport != S3R_TRANSPORT_HTTP;
    for (int k = 0; k < OP_COUNT && !o->client_per_thread; k++)
        if (o->mix[k] && bench_client_make(o, 0, &run.clients[k]))
            goto out;
    run.w = calloc((size_t)o->threads, sizeof(worker_t));
    if (!run.w)
        goto out;
    for (int t = 0; t < o->threads; t++) {
        run.w[t].idx = t;
        run.w[t].run = &run;
        memcpy(run.w[t].clients, run.clients, sizeof run.clients);
        if (worker_setup(&run, &run.w[t])) {
            fprintf(stderr, "s3rdma-bench: cannot set up thread %d\n", t);
            goto out;
        }
    }
    if (o->gap_s > 0)
        prctl(PR_SET_TIMERSLACK, 1UL); /* inherited by the workers: sleep the gap asked */

    live_t live = {.run = &run, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    struct rusage ru0, ru1;
    s3r_stats_t before[OP_COUNT], after;
    uint64_t dur_ns = (uint64_t)(o->duration_s * 1e9), counted = UINT64_MAX;
    int warm = o->warmup_s > 0;
    if (!warm) {
        snapshot(&run, &ru0, before);
        counted = hist_now_ns();
    }
    run.counted_ns = counted;
    run.deadline_ns = warm ? UINT64_MAX : counted + dur_ns;
    uint64_t t0 = hist_now_ns();
    int started = 0;
    for (; started < o->threads; started++)
        if (pthread_create(&run.w[started].th, NULL, worker_main, &run.w[started]) != 0)
            break;
    int live_on = o->live && pthread_create(&live.th, NULL, live_main, &live) == 0;
    if (warm) {
        /* The counted phase starts after the warm-up, when the CPU and the
         * counters are read: what starts later counts, so the data-path
         * counts and the operations differ at most by the requests in
         * flight at that instant, however late this thread wakes. */
        sleep_until(t0 + (uint64_t)(o->warmup_s * 1e9));
        snapshot(&run, &ru0, before);
        counted = hist_now_ns();
        atomic_store(&run.deadline_ns, counted + dur_ns);
        atomic_store_explicit(&run.counted_ns, counted, memory_order_release);
    }
    for (int t = 0; t < started; t++)
        pthread_join(run.w[t].th, NULL);
    uint64_t t1 = hist_now_ns();
    getrusage(RUSAGE_SELF, &ru1);
    if (live_on) {
        pthread_mutex_lock(&live.mu);
        live.quit = 1;
        pthread_cond_signal(&live.cv);
        pthread_mutex_unlock(&live.mu);
        pthread_join(live.th, NULL);
    }
    if (started < o->threads) {
        fprintf(stderr, "s3rdma-bench: cannot start thread %d\n", started);
        goto out;
    }

    r->secs = t1 > counted ? (double)(t1 - counted) / 1e9 : 0;
    r->cpu_user = tv_secs(ru1.ru_utime) - tv_secs(ru0.ru_utime);
    r->cpu_sys = tv_secs(ru1.ru_stime) - tv_secs(ru0.ru_stime);
    for (int k = 0; k < OP_COUNT; k++) {
        op_result_t *x = &r->op[k];
        for (int t = 0; t < o->threads; t++) {
            worker_t *w = &run.w[t];
            hist_add(&x->lat, &w->lat[k]);
            x->ops += w->ok[k];
            x->errors += w->errors[k];
            x->verified += w->verified[k];
            x->bytes += w->bytes[k];
            for (int e = 0; e < ERRK_COUNT; e++)
                x->by_kind[e] += w->by_kind[k][e];
        }
        kind_stats(&run, k, &after);
        stats_diff(&x->stats, &after, &before[k]);
    }
    for (int k = 0; k < OP_COUNT && !r->ucx_transports[0]; k++) {
        s3r_rdma_info_t info;
        if (run.w[0].clients[k] && s3r_client_rdma_info(run.w[0].clients[k], &info) == S3R_OK)
            snprintf(r->ucx_transports, sizeof r->ucx_transports, "%s", info.transports);
    }
    rc = 0;
out:
    teardown(&run);
    return rc;
}
