/* The life of a request, whatever the frontend: setting it up, running its
 * operation, releasing it; and the request lookups, which go to the
 * frontend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "s3/s3_request.h"

void s3_req_init(s3_req_t *req, s3_server_t *srv, const s3_frontend_t *fe, const char *method)
{
    req->srv = srv;
    req->fe = fe;
    req->method = method;
    req->transport = fe->transport;
    req->start_ns = clock_mono_ns();
    req->start_ms = clock_wall_ms();
    req->now_s = req->start_ms / 1000;
    req->declared_len = UINT64_MAX;
    buf_init(&req->body, S3R_MAX_XML_BODY);
    buf_init(&req->reply_headers, S3R_MAX_HEADER_BYTES);
    buf_init(&req->error_elems, 4096);
    /* An object reply's dozen headers fit: one allocation, not a doubling
     * series (failure is harmless: appends grow it as before). */
    (void)buf_reserve(&req->reply_headers, 1024);
    unsigned long seq = atomic_fetch_add(&srv->request_seq, 1) + 1;
    /* "%08X%08lX" of instance and seq, by hand: every request pays it. */
    uint64_t v = (uint64_t)srv->instance << 32 | (seq & 0xFFFFFFFFUL);
    for (int i = 15; i >= 0; i--, v >>= 4)
        req->request_id[i] = "0123456789ABCDEF"[v & 15];
    req->request_id[16] = '\0';
    atomic_fetch_add(&srv->inflight, 1);
}

void s3_req_start(s3_req_t *req)
{
    req->op->begin(req);
    if (req->replied)
        return;
    if (req->body_kind == S3_BODY_OBJECT && req->fe->body_take && !req->fe->body_take(req))
        return;
    if (req->body_kind != S3_BODY_NONE) {
        s3_error_t err = s3_body_begin(req);
        if (err != S3E_NONE)
            s3_reply_error(req, err, NULL);
    }
}

void s3_req_finish(s3_req_t *req)
{
    if (req->body_via_transport && !req->fe->body_pull(req))
        return;
    if (req->body_kind != S3_BODY_NONE) {
        s3_error_t err = s3_body_end(req);
        if (err != S3E_NONE) {
            s3_reply_error(req, err, NULL);
            return;
        }
        req->body_verified = true;
    }
    if (req->op->finish)
        req->op->finish(req);
    if (!req->replied) {
        log_error("request %s: operation %s did not reply", req->request_id, req->op->name);
        s3_reply_error(req, S3E_INTERNAL, NULL);
    }
}

const char *s3_transport_name(s3_transport_t t)
{
    static const char *const names[S3_TRANSPORT_COUNT] = {"http", "token", "native"};
    return (unsigned)t < S3_TRANSPORT_COUNT ? names[t] : "?";
}

s3_transport_t s3_req_transport(const s3_req_t *req)
{
    return req->transport;
}

/* What req's record says, its strings borrowed from req (remote: the
 * caller's buffer, NULL without an access log: only the log reads it);
 * status, error and duration are filled when it ends. */
static s3_req_outcome_t outcome_of(s3_req_t *req, char *remote, size_t remote_cap)
{
    if (req->srv->cfg.access_log)
        req->fe->remote(req, remote, remote_cap);
    return (s3_req_outcome_t){
        .rec =
            {
                .start_ms = req->start_ms,
                .remote = req->srv->cfg.access_log ? remote : NULL,
                .access_key = req->user ? req->user->access_key : NULL,
                .op = req->op ? req->op->name : "-",
                .method = req->method,
                .bucket = req->bucket,
                .key = req->key,
                .resource = req->resource,
                .status = req->status,
                .error_code = req->error != S3E_NONE ? s3_error_code(req->error) : NULL,
                .bytes_in = req->body_bytes,
                .bytes_out = req->bytes_out,
                .transport = s3_req_transport(req),
                .request_id = req->request_id,
            },
        .op = req->op,
        .error = req->error,
        .decline = req->decline,
    };
}

/* Counts the finished request and writes its access-log record, each when
 * configured, with its latency from arrival (start_ns) to now. */
static void outcome_record(s3_server_t *srv, s3_req_outcome_t *o, uint64_t start_ns)
{
    o->rec.duration_us = (clock_mono_ns() - start_ns) / 1000;
    if (srv->metrics)
        s3_metrics_count(srv->metrics, o);
    if (srv->cfg.access_log)
        srv->cfg.access_log(srv->cfg.access_log_ctx, &o->rec);
}

/* The record of a request answered by its frontend now: the only
 * per-request cost when neither metrics nor an access log is on is a
 * branch. */
static void request_done(s3_req_t *req)
{
    if (req->recorded_later || (!req->srv->metrics && !req->srv->cfg.access_log))
        return;
    char remote[96];
    s3_req_outcome_t o = outcome_of(req, remote, sizeof(remote));
    outcome_record(req->srv, &o, req->start_ns);
}

/* ---- a reply held until its write is durable ---------------------------------- */

/* The copied record of a request whose reply waits for its ticket. */
typedef struct durable_wait {
    s3_server_t *srv;
    uint64_t start_ns;
    stor_durable_fn sent;
    void *arg;
    s3_req_outcome_t o;
    char strings[]; /* the record's strings, one after the other */
} durable_wait_t;

/* Appends s (NULL stays NULL) to the strings at *at. */
static const char *string_copy(char **at, const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = memcpy(*at, s, n);
    *at += n;
    return d;
}

static size_t string_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

/* The held reply is not what the client gets: a 500 InternalError is. */
static void outcome_fail(s3_req_outcome_t *o)
{
    o->error = S3E_INTERNAL;
    o->rec.status = s3_error_status(S3E_INTERNAL);
    o->rec.error_code = s3_error_code(S3E_INTERNAL);
    o->rec.bytes_out = 0;
}

/* The ticket is settled: the record says what the client gets, and only
 * then does sent send it. srv outlives this: a ticket is settled by a thread
 * inside a request (one that awaited a ticket or flushed the commit log),
 * which s3_server_drain waits for. */
static void durable_settled(void *arg, stor_status_t st)
{
    durable_wait_t *w = arg;
    stor_durable_fn sent = w->sent;
    void *sent_arg = w->arg;
    if (st != STOR_OK)
        outcome_fail(&w->o);
    outcome_record(w->srv, &w->o, w->start_ns);
    free(w);
    sent(sent_arg, st);
}

/* A copy of req's record, for durable_settled to write; NULL: out of memory. */
static durable_wait_t *durable_wait_new(s3_req_t *req, stor_durable_fn sent, void *arg)
{
    char remote[96];
    s3_req_outcome_t o = outcome_of(req, remote, sizeof(remote));
    s3_access_record_t *r = &o.rec;
    size_t strings = string_size(r->remote) + string_size(r->access_key) + string_size(r->method) +
                     string_size(r->bucket) + string_size(r->key) + string_size(r->resource) +
                     string_size(r->request_id);
    durable_wait_t *w = malloc(sizeof(*w) + strings);
    if (!w)
        return NULL;
    w->srv = req->srv;
    w->start_ns = req->start_ns;
    w->sent = sent;
    w->arg = arg;
    w->o = o;
    char *at = w->strings;
    w->o.rec.remote = string_copy(&at, r->remote);
    w->o.rec.access_key = string_copy(&at, r->access_key);
    w->o.rec.method = string_copy(&at, r->method);
    w->o.rec.bucket = string_copy(&at, r->bucket);
    w->o.rec.key = string_copy(&at, r->key);
    w->o.rec.resource = string_copy(&at, r->resource);
    w->o.rec.request_id = string_copy(&at, r->request_id);
    return w;
}

void s3_req_await_durable(s3_req_t *req, stor_durable_fn sent, void *arg)
{
    stor_ticket_t ticket = req->durable_ticket;
    req->durable_ticket = 0;
    durable_wait_t *w =
        req->srv->metrics || req->srv->cfg.access_log ? durable_wait_new(req, sent, arg) : NULL;
    if (!w) {
        /* Nothing to record, or no memory to copy the record: the reply
         * still waits for its ticket, and s3_req_release records the held
         * status (which a failed flush then belies). */
        stor_ticket_await(req->srv->cfg.store, ticket, sent, arg);
        return;
    }
    req->recorded_later = true;
    stor_ticket_await(req->srv->cfg.store, ticket, durable_settled, w);
}

void s3_req_release(s3_req_t *req)
{
    request_done(req);
    if (req->op_state_free)
        req->op_state_free(req->op_state);
    stor_writer_abort(req->writer);
    s3_awschunk_free(req->chunked);
    hash_digest_free(req->md5);
    hash_digest_free(req->sha256_payload);
    hash_digest_free(req->sha256_ck);
    hash_digest_free(req->sha1_ck);
    s3_body_release(req);
    for (int i = 0; i < S3_CK_COUNT; i++)
        free(req->checksums[i]);
    buf_free(&req->reply_headers);
    buf_free(&req->error_elems);
    free(req->bucket);
    free(req->key);
    free(req->resource);
    free(req->path);
    free(req->headers_not_signed);
    atomic_fetch_sub(&req->srv->inflight, 1);
}

bool s3_req_is_head(const s3_req_t *req)
{
    return strcmp(req->method, "HEAD") == 0;
}

const char *s3_req_header(s3_req_t *req, const char *name)
{
    return req->fe->header(req, name);
}

void s3_req_each_header(s3_req_t *req, s3_header_fn fn, void *ctx)
{
    req->fe->each_header(req, fn, ctx);
}

const char *s3_req_query(s3_req_t *req, const char *name)
{
    return req->fe->query(req, name);
}

bool s3_req_has_query(s3_req_t *req, const char *name)
{
    return req->fe->has_query(req, name);
}

void s3_req_each_raw_query(s3_req_t *req, s3_query_fn fn, void *ctx)
{
    if (req->fe->each_raw_query)
        req->fe->each_raw_query(req, fn, ctx);
}
