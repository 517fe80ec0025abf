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

/* Counts the finished request and writes its access-log record, each when
 * configured: the only per-request cost of either when it is off is a
 * branch. */
static void request_done(s3_req_t *req)
{
    const s3_server_config_t *cfg = &req->srv->cfg;
    if (!req->srv->metrics && !cfg->access_log)
        return;
    uint64_t duration_us = (clock_mono_ns() - req->start_ns) / 1000;
    if (req->srv->metrics)
        s3_metrics_count(req->srv->metrics, req, duration_us);
    if (!cfg->access_log)
        return;
    char remote[96];
    req->fe->remote(req, remote, sizeof(remote));
    s3_access_record_t rec = {
        .start_ms = req->start_ms,
        .remote = remote,
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
        .duration_us = duration_us,
        .transport = s3_req_transport(req),
        .request_id = req->request_id,
    };
    cfg->access_log(cfg->access_log_ctx, &rec);
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
