#include "common/hash_pool.h"

#include <pthread.h>
#include <stdlib.h>

#include "common/log.h"

/* One pool thread. `busy` (under the pool's lock) says a caller holds it,
 * from hash_pool_job_start to the end of hash_pool_job_wait; the job itself and its
 * progress are under the worker's own lock. */
struct hash_worker {
    hash_pool_t *pool;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool busy;
    bool has_job; /* set by the caller, cleared by the thread when done */
    bool stop;
    digest_t *d;
    const void *data;
    size_t len;
};

struct hash_pool {
    pthread_mutex_t mu;
    unsigned n;
    hash_worker_t workers[];
};

static void *worker_main(void *arg)
{
    hash_worker_t *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->has_job && !w->stop)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->stop)
            break;
        pthread_mutex_unlock(&w->mu);
        hash_digest_update(w->d, w->data, w->len);
        pthread_mutex_lock(&w->mu);
        w->has_job = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

hash_pool_t *hash_pool_new(unsigned threads)
{
    hash_pool_t *p = calloc(1, sizeof(*p) + threads * sizeof(p->workers[0]));
    if (!p)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    for (; p->n < threads; p->n++) {
        hash_worker_t *w = &p->workers[p->n];
        w->pool = p;
        pthread_mutex_init(&w->mu, NULL);
        pthread_cond_init(&w->cv, NULL);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
            log_error("hash pool: cannot start thread %u of %u", p->n + 1, threads);
            pthread_mutex_destroy(&w->mu);
            pthread_cond_destroy(&w->cv);
            hash_pool_free(p);
            return NULL;
        }
    }
    return p;
}

void hash_pool_free(hash_pool_t *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++) {
        hash_worker_t *w = &p->workers[i];
        pthread_mutex_lock(&w->mu);
        w->stop = true;
        pthread_cond_broadcast(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* An idle worker, now marked busy, or NULL. */
static hash_worker_t *take_idle(hash_pool_t *p)
{
    hash_worker_t *w = NULL;
    pthread_mutex_lock(&p->mu);
    for (unsigned i = 0; i < p->n && !w; i++) {
        if (!p->workers[i].busy) {
            w = &p->workers[i];
            w->busy = true;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return w;
}

void hash_pool_job_start(hash_pool_t *p, hash_job_t *job, digest_t *d, const void *data, size_t len)
{
    job->worker = p ? take_idle(p) : NULL;
    if (!job->worker) {
        hash_digest_update(d, data, len);
        return;
    }
    hash_worker_t *w = job->worker;
    pthread_mutex_lock(&w->mu);
    w->d = d;
    w->data = data;
    w->len = len;
    w->has_job = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void hash_pool_job_wait(hash_job_t *job)
{
    hash_worker_t *w = job->worker;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    while (w->has_job)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_lock(&w->pool->mu);
    w->busy = false;
    pthread_mutex_unlock(&w->pool->mu);
    job->worker = NULL;
}
