/* The life of a request, whatever the frontend: setting it up, running its
 * operation, releasing it; and the request lookups, which go to the
 * frontend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "s3/s3_request.h"

void s3_req_init(s3_req_t *req, s3_server_t *srv, const s3_frontend_t *fe, const char *method)
{
    req->srv = srv;
    req->fe = fe;
    req->method = method;
    req->now_s = (int64_t)time(NULL);
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
    if (req->body_kind != S3_BODY_NONE) {
        s3_error_t err = s3_body_begin(req);
        if (err != S3E_NONE)
            s3_reply_error(req, err, NULL);
    }
}

void s3_req_finish(s3_req_t *req)
{
    if (req->body_kind != S3_BODY_NONE) {
        s3_error_t err = s3_body_end(req);
        if (err != S3E_NONE) {
            s3_reply_error(req, err, NULL);
            return;
        }
    }
    if (req->op->finish)
        req->op->finish(req);
    if (!req->replied) {
        log_error("request %s: operation %s did not reply", req->request_id, req->op->name);
        s3_reply_error(req, S3E_INTERNAL, NULL);
    }
}

void s3_req_release(s3_req_t *req)
{
    if (req->op_state_free)
        req->op_state_free(req->op_state);
    stor_writer_abort(req->writer);
    awschunk_free(req->chunked);
    digest_free(req->md5);
    digest_free(req->sha256_payload);
    digest_free(req->sha256_ck);
    buf_free(&req->body);
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
