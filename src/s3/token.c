/* The token path (docs/protocol.md §3): an HTTP request whose body or reply
 * body moves by RDMA between s3rdmad's staging memory and the client buffer
 * its x-amz-rdma-token names. The operations (ops_object.c,
 * ops_multipart.c) decide; this moves the bytes and answers the token's own
 * failures. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/log.h"
#include "s3/rdma_error.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

const char *s3_token_foreign(s3_req_t *req)
{
    s3_token_format_t f = s3_token_format(req->rdma_token);
    if (f == S3_TOKEN_S3R1)
        return NULL;
    req->decline = S3_DECLINE_FOREIGN;
    log_debug("request %s: declining an x-amz-rdma-token of format %s", req->request_id,
              s3_token_format_name(f));
    return s3_token_format_name(f);
}

/* Maps a token resolution failure to its reply. 501 is the decline a client
 * answers by falling back to HTTP; the others are real errors. */
static void reply_rdma_status(s3_req_t *req, rdma_status_t st)
{
    const char *why;
    s3_error_t err = s3_rdma_error(st, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    char msg[256];
    req->decline = st == RDMA_DECLINE ? S3_DECLINE_SESSION : S3_DECLINE_TRANSPORT;
    snprintf(msg, sizeof(msg), "RDMA transfer declined: %s.", rdma_strerror(st));
    s3_reply_error(req, S3E_NOT_IMPLEMENTED, msg);
}

bool s3_token_precheck(s3_req_t *req)
{
    if (!req->srv->cfg.rdma) {
        req->decline = S3_DECLINE_DISABLED;
        s3_reply_error(req, S3E_NOT_IMPLEMENTED, "RDMA transfers are disabled on this server.");
        return false;
    }
    /* The token names client memory: it must be covered by the signature so
     * nobody can replay a signed request against another buffer. */
    bool signed_token = false;
    char names[sizeof(req->signed_headers)];
    snprintf(names, sizeof(names), "%s", req->signed_headers);
    for (char *save = NULL, *n = strtok_r(names, ";", &save); n; n = strtok_r(NULL, ";", &save))
        signed_token |= strcmp(n, "x-amz-rdma-token") == 0;
    if (!signed_token) {
        s3_reply_error(req, S3E_ACCESS_DENIED, "x-amz-rdma-token must be in SignedHeaders.");
        return false;
    }
    return true;
}

bool s3_token_pull(s3_req_t *req)
{
    rdma_xfer_t *x = NULL;
    rdma_status_t st =
        rdma_xfer_open(req->srv->cfg.rdma, req->rdma_token, req->user->access_key, &x);
    if (st != RDMA_OK) {
        reply_rdma_status(req, st);
        return false;
    }
    req->body_kind = S3_BODY_OBJECT;
    s3_error_t err = s3_body_begin(req);
    if (err == S3E_NONE && req->declared_len > rdma_xfer_length(x)) {
        rdma_xfer_close(x);
        s3_reply_error(req, S3E_INVALID_ARGUMENT,
                       "x-amz-decoded-content-length exceeds the RDMA buffer the token names.");
        return false;
    }
    if (err == S3E_NONE) {
        st = rdma_xfer_pull(x, req->declared_len, s3_body_sink, req);
        if (st == RDMA_CALLBACK)
            err = req->body_error != S3E_NONE ? req->body_error : S3E_INTERNAL;
    }
    rdma_xfer_close(x);
    if (err == S3E_NONE && st != RDMA_OK && st != RDMA_CALLBACK) {
        reply_rdma_status(req, st);
        return false;
    }
    if (err == S3E_NONE)
        err = s3_body_end(req);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return false;
    }
    s3_reply_header(req, "x-amz-rdma-reply", "200");
    return true;
}

typedef struct push_source {
    stor_reader_t *reader;
    uint64_t first;
} push_source_t;

static int push_fill(void *ctx, void *dst, size_t len, uint64_t off)
{
    push_source_t *ps = ctx;
    ssize_t n = stor_reader_pread(ps->reader, dst, len, ps->first + off);
    return n == (ssize_t)len ? 0 : -1;
}

void s3_token_push(s3_req_t *req, stor_reader_t *reader, int status, uint64_t first, uint64_t len)
{
    rdma_xfer_t *x = NULL;
    rdma_status_t st =
        rdma_xfer_open(req->srv->cfg.rdma, req->rdma_token, req->user->access_key, &x);
    if (st != RDMA_OK) {
        stor_reader_close(reader);
        reply_rdma_status(req, st);
        return;
    }
    if (len > rdma_xfer_length(x)) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "The RDMA buffer holds %" PRIu64 " bytes; this response needs %" PRIu64 ".",
                 rdma_xfer_length(x), len);
        rdma_xfer_close(x);
        stor_reader_close(reader);
        s3_reply_headerf(req, "x-amz-rdma-bytes-needed", "%" PRIu64, len);
        s3_reply_error(req, S3E_TOKEN_BUFFER_TOO_SMALL, msg);
        return;
    }
    push_source_t ps = {.reader = reader, .first = first};
    st = rdma_xfer_push(x, len, push_fill, &ps);
    rdma_xfer_close(x);
    stor_reader_close(reader);
    if (st == RDMA_CALLBACK) {
        s3_reply_error(req, S3E_INTERNAL, "Reading the object failed.");
        return;
    }
    if (st != RDMA_OK) {
        reply_rdma_status(req, st);
        return;
    }
    s3_reply_headerf(req, "x-amz-rdma-reply", "%d", status);
    s3_reply_headerf(req, "x-amz-rdma-bytes-transferred", "%" PRIu64, len);
    s3_reply_empty(req, status);
    req->bytes_out = len; /* the body went by RDMA */
}
