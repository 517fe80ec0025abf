/* The server's core, whatever the frontends: what s3_server_t holds beside
 * the configuration (instance id, metrics, body hashers, lifecycle runner),
 * its readiness and stop. The HTTP frontend's listeners wrap it
 * (http_listen.c); native requests reach it through rdmafe_native_handle. */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/hash_pool.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "s3/lifecycle.h"
#include "s3/lifecycle_run.h"
#include "s3/s3_request.h"

/* One thread per core hashes bodies beside the requests writing them (a
 * request holds at most one at a time; past them requests hash in line). */
static unsigned body_hash_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > S3R_BODY_HASH_THREADS_MAX ? S3R_BODY_HASH_THREADS_MAX : (unsigned)n;
}

int s3_server_init(s3_server_t *srv, const s3_server_config_t *cfg)
{
    srv->cfg = *cfg;
    s3_server_config_t *c = &srv->cfg;
    if (!c->lifecycle_day_s)
        c->lifecycle_day_s = S3_LC_DAY_S;
    uint32_t inst;
    hash_random_bytes(&inst, sizeof(inst));
    srv->instance = inst;
    if (!c->max_document_memory)
        c->max_document_memory = S3R_DOCUMENT_MEMORY;
    if (c->metrics_enabled)
        srv->metrics = s3_metrics_new();
    srv->hashers = hash_pool_new(body_hash_threads());
    srv->user_doc_bytes = calloc(c->n_users + 1, sizeof(*srv->user_doc_bytes));
    if ((c->metrics_enabled && !srv->metrics) || !srv->hashers || !srv->user_doc_bytes ||
        !(srv->lifecycle = s3_lc_runner_start(c->store, c->lifecycle_day_s))) {
        s3_metrics_free(srv->metrics);
        hash_pool_free(srv->hashers);
        free(srv->user_doc_bytes);
        srv->metrics = NULL;
        srv->hashers = NULL;
        srv->user_doc_bytes = NULL;
        return -1;
    }
    return 0;
}

void s3_server_stopping(s3_server_t *srv)
{
    atomic_store(&srv->stopping, true);
    atomic_store(&srv->ready, false);
}

void s3_server_drain(s3_server_t *srv, int grace_s)
{
    int64_t start_ms = (int64_t)clock_mono_ms();
    while (atomic_load(&srv->inflight) > 0) {
        if ((int64_t)clock_mono_ms() - start_ms >= (int64_t)grace_s * 1000) {
            log_warn("shutdown: %u requests still in flight after %d s; closing them",
                     atomic_load(&srv->inflight), grace_s);
            break;
        }
        usleep(10000);
    }
}

void s3_server_fini(s3_server_t *srv)
{
    s3_lc_runner_stop(srv->lifecycle);
    s3_metrics_free(srv->metrics);
    hash_pool_free(srv->hashers); /* after the requests: none holds a job */
    free(srv->user_doc_bytes);
    srv->user_doc_bytes = NULL;
}

void s3_server_set_ready(s3_server_t *srv, bool ready)
{
    atomic_store(&srv->ready, ready);
}
