/* The workload engine of s3rdma-bench (run.h).
 *
 * Each operation kind in the mix gets a client of its own, so libs3rdma's
 * counters (s3r_client_stats) say per kind which transport carried it.
 * Seeding and key discovery use one more client over HTTP, not counted.
 * Threads choose each operation by weight from the mix with their own
 * generator; reads and writes walk the key space from the thread's index
 * with a stride of the thread count, deletes take each key once from a
 * shared cursor. With --inflight N > 1, reads and writes go through the
 * asynchronous API (N per thread); lists and deletes run synchronously in
 * their slot. A latency is the time from the call (or the async start) to
 * its completion; verification happens after the clock stops. */
#include "tools/bench/run.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

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
    char **keys;
    uint64_t nkeys;
    unsigned mix_total;
    uint64_t deadline_ns;
    _Atomic uint64_t tickets, del_next;
    _Atomic int reported, stop;
    worker_t *w;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
    return k == ERRK_VERIFY_LIST ? "verify_list" : NULL;
}

static void say_client_error(s3r_client_t *c, const char *what, s3r_status_t st)
{
    s3r_error_info_t e;
    if (s3r_client_last_error(c, &e) == S3R_OK && e.status == st)
        fprintf(stderr, "s3rdma-bench: %s: %s (%s; HTTP %d %s %s; via %s)\n", what,
                s3r_strerror(st), s3r_status_name(st), e.http_status, e.code, e.message,
                s3r_transport_name(e.transport));
    else
        fprintf(stderr, "s3rdma-bench: %s: %s (%s)\n", what, s3r_strerror(st), s3r_status_name(st));
}

static uint64_t seed_size(const bench_opts_t *o, uint64_t i)
{
    uint64_t s = i;
    uint64_t span = o->size_max - o->size_min + 1;
    return o->size_min + rng_next(&s) % span;
}

/* ---- Setup: clients, key space, buffers ------------------------------------ */

static int make_client(const bench_opts_t *o, int setup, s3r_client_t **c_p)
{
    s3r_config_t cfg;
    bench_opts_config(o, &cfg);
    if (setup) {
        cfg.transport = S3R_TRANSPORT_HTTP;
        cfg.use_rdma = 0;
    }
    s3r_status_t st = s3r_client_create(&cfg, c_p);
    if (st != S3R_OK) {
        s3r_error_info_t e;
        fprintf(stderr, "s3rdma-bench: cannot create the client: %s (%s)\n", s3r_strerror(st),
                s3r_client_last_error(NULL, &e) == S3R_OK ? e.message : "");
        return 1;
    }
    if (setup || !o->use_rdma || o->transport == S3R_TRANSPORT_HTTP)
        return 0;
    st = s3r_client_rdma_connect(*c_p);
    if (st != S3R_OK && !o->rdma_fallback) {
        say_client_error(*c_p,
                         "RDMA session (--rdma-fallback is off; s3rdma-bench verify explains)", st);
        return 1;
    }
    return 0;
}

static char *key_name(const bench_opts_t *o, uint64_t i)
{
    char *k = NULL;
    if (asprintf(&k, "%sobj-%08llu", o->prefix, (unsigned long long)i) < 0)
        return NULL;
    return k;
}

/* Writes the key space (--seed-objects N) or, with N = 0, takes the keys
 * already under the prefix. */
static int prepare_keys(run_t *run)
{
    const bench_opts_t *o = run->o;
    s3r_status_t st = s3r_bucket_create(run->setup, o->bucket);
    if (st != S3R_OK && st != S3R_ERR_BUCKET_EXISTS) {
        say_client_error(run->setup, "create the bucket", st);
        return 1;
    }
    if (o->seed_objects == 0) {
        s3r_list_opts_t lo = {.prefix = o->prefix, .all_pages = 1};
        s3r_object_list_t *l = NULL;
        st = s3r_object_list(run->setup, o->bucket, &lo, &l);
        if (st != S3R_OK) {
            say_client_error(run->setup, "list the existing objects", st);
            return 1;
        }
        run->keys = calloc(l->n_objects ? l->n_objects : 1, sizeof(char *));
        for (size_t i = 0; run->keys && i < l->n_objects; i++)
            run->keys[run->nkeys++] = strdup(l->objects[i].key);
        s3r_object_list_free(l);
        if (run->nkeys == 0) {
            fprintf(stderr,
                    "s3rdma-bench: --seed-objects 0 and no objects under s3://%s/%s: run "
                    "'run write' first or give --seed-objects N\n",
                    o->bucket, o->prefix);
            return 1;
        }
        return 0;
    }
    run->nkeys = o->seed_objects;
    run->keys = calloc(run->nkeys, sizeof(char *));
    if (!run->keys)
        return 1;
    for (uint64_t i = 0; i < run->nkeys; i++)
        if (!(run->keys[i] = key_name(o, i)))
            return 1;
    int needs_objects = o->mix[OP_READ] || o->mix[OP_DELETE] || o->mix[OP_LIST];
    if (!needs_objects)
        return 0;
    char *buf = malloc(o->size_max);
    if (!buf)
        return 1;
    payload_body_t body;
    payload_body_init(&body, buf, o->size_max, UINT64_C(0x5EED));
    for (uint64_t i = 0; i < run->nkeys; i++) {
        uint64_t len = seed_size(o, i);
        payload_stamp(&body, buf, len, run->keys[i]);
        st = s3r_object_put(run->setup, o->bucket, run->keys[i], buf, len, NULL);
        if (st != S3R_OK) {
            say_client_error(run->setup, "seed an object", st);
            free(buf);
            return 1;
        }
    }
    free(buf);
    return 0;
}

static char *buf_get(run_t *run, bench_op_t op, size_t len)
{
    void *p = NULL;
    if (run->registered) {
        s3r_status_t st = s3r_buf_alloc(run->clients[op], len, &p);
        if (st != S3R_OK) {
            say_client_error(run->clients[op], "allocate registered memory", st);
            return NULL;
        }
        return p;
    }
    if (posix_memalign(&p, 4096, len) != 0)
        return NULL;
    return p;
}

static void buf_put(run_t *run, bench_op_t op, char *p)
{
    if (p && run->registered)
        s3r_buf_free(run->clients[op], p);
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
    w->slots = calloc(n, sizeof(slot_t));
    w->aops = calloc(n, sizeof(s3r_op_t *));
    if (!w->slots || !w->aops)
        return 1;
    if (o->mix[OP_READ] && !(w->rmem = buf_get(run, OP_READ, n * sz)))
        return 1;
    if (o->mix[OP_WRITE] && !(w->wmem = buf_get(run, OP_WRITE, n * sz)))
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
    return now_ns() < run->deadline_ns;
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
             run->keys[s->key]);
    if (kind >= ERRK_VERIFY)
        fprintf(stderr, "s3rdma-bench: %s: %s: the bytes read are not what was written\n", what,
                errk_name(kind));
    else
        say_client_error(run->clients[s->op], what, st);
}

/* Accounts a finished operation of slot s (status st, n bytes read). */
static void finish(run_t *run, worker_t *w, slot_t *s, s3r_status_t st, uint64_t n, uint64_t t1)
{
    if (st != S3R_OK) {
        int k = -(int)st;
        fail(run, w, s, k > 0 && k < ERRK_STATUS_END ? k : ERRK_STATUS_END - 1, st);
        return;
    }
    uint64_t moved = 0;
    if (s->op == OP_READ) {
        payload_result_t pr = payload_verify(s->rbuf, n, run->keys[s->key]);
        if (pr != PAYLOAD_OK) {
            fail(run, w, s, ERRK_VERIFY + (int)pr, st);
            return;
        }
        add(&w->verified[OP_READ], 1);
        moved = n;
    } else if (s->op == OP_WRITE) {
        moved = s->len;
    } else if (s->op == OP_LIST && n == 0) {
        fail(run, w, s, ERRK_VERIFY_LIST, st);
        return;
    }
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
    uint64_t want = run->nkeys < 1000 ? run->nkeys : 1000;
    int good = l->n_objects >= want;
    for (size_t i = 0; good && i < l->n_objects; i++)
        good = strncmp(l->objects[i].key, run->o->prefix, strlen(run->o->prefix)) == 0;
    s3r_object_list_free(l);
    return good;
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
    s3r_client_t *c = run->clients[s->op];
    int async = o->inflight > 1;
    s3r_status_t st;
    uint64_t n = 0;
    if (s->op == OP_DELETE) {
        s->key = atomic_fetch_add(&run->del_next, 1);
        if (s->key >= run->nkeys) {
            atomic_store(&run->stop, 1); /* every key is gone */
            *more = 0;
            return 0;
        }
    } else if (s->op == OP_READ) {
        s->key = w->rcur % run->nkeys;
        w->rcur += (uint64_t)o->threads;
    } else {
        s->key = w->wcur % run->nkeys;
        w->wcur += (uint64_t)o->threads;
    }
    const char *key = run->keys[s->key];
    if (s->op == OP_WRITE) {
        s->len = o->size_min + rng_next(&w->rng) % (o->size_max - o->size_min + 1);
        payload_stamp(&s->body, s->wbuf, s->len, key);
    }
    s->t0 = now_ns();
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
    default:
        n = (uint64_t)list_once(run, c, &st);
        break;
    }
    finish(run, w, s, st, n, now_ns());
    return 0;
}

/* Settles the async op in slot s, which s3r_op_wait_any found answered
 * (so s3r_op_wait only judges the answer), and records it. */
static void complete(run_t *run, worker_t *w, slot_t *s)
{
    uint64_t n = 0;
    s3r_status_t st = s3r_op_wait(*s->aop, &n);
    uint64_t t1 = now_ns();
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
    uint64_t pbytes = 0, t0 = now_ns();
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
                    (double)(now_ns() - t0) / 1e9, (double)hist_count(win),
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

static void teardown(run_t *run)
{
    for (int t = 0; run->w && t < run->o->threads; t++) {
        worker_t *w = &run->w[t];
        buf_put(run, OP_READ, w->rmem);
        buf_put(run, OP_WRITE, w->wmem);
        free(w->slots);
        free(w->aops);
    }
    free(run->w);
    for (uint64_t i = 0; run->keys && i < run->nkeys; i++)
        free(run->keys[i]);
    free(run->keys);
    for (int k = 0; k < OP_COUNT; k++)
        s3r_client_destroy(run->clients[k]);
    s3r_client_destroy(run->setup);
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
    if (make_client(o, 1, &run.setup) || prepare_keys(&run))
        goto out;
    r->nkeys = run.nkeys;
    run.registered = o->rdma_buffer_pool && o->use_rdma && o->transport != S3R_TRANSPORT_HTTP;
    for (int k = 0; k < OP_COUNT; k++)
        if (o->mix[k] && make_client(o, 0, &run.clients[k]))
            goto out;
    run.w = calloc((size_t)o->threads, sizeof(worker_t));
    if (!run.w)
        goto out;
    for (int t = 0; t < o->threads; t++) {
        run.w[t].idx = t;
        run.w[t].run = &run;
        if (worker_setup(&run, &run.w[t])) {
            fprintf(stderr, "s3rdma-bench: cannot set up the buffers of thread %d\n", t);
            goto out;
        }
    }
    s3r_stats_t before[OP_COUNT] = {0}, after;
    for (int k = 0; k < OP_COUNT; k++)
        if (run.clients[k])
            s3r_client_stats(run.clients[k], &before[k]);

    live_t live = {.run = &run, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    uint64_t t0 = now_ns();
    run.deadline_ns = t0 + (uint64_t)(o->duration_s * 1e9);
    int started = 0;
    for (; started < o->threads; started++)
        if (pthread_create(&run.w[started].th, NULL, worker_main, &run.w[started]) != 0)
            break;
    int live_on = o->live && pthread_create(&live.th, NULL, live_main, &live) == 0;
    for (int t = 0; t < started; t++)
        pthread_join(run.w[t].th, NULL);
    uint64_t t1 = now_ns();
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

    r->secs = (double)(t1 - t0) / 1e9;
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
        if (run.clients[k] && s3r_client_stats(run.clients[k], &after) == S3R_OK)
            stats_diff(&x->stats, &after, &before[k]);
    }
    for (int k = 0; k < OP_COUNT && !r->ucx_transports[0]; k++) {
        s3r_rdma_info_t info;
        if (run.clients[k] && s3r_client_rdma_info(run.clients[k], &info) == S3R_OK)
            snprintf(r->ucx_transports, sizeof r->ucx_transports, "%s", info.transports);
    }
    rc = 0;
out:
    teardown(&run);
    return rc;
}
