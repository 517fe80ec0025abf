/* The token transport (docs/protocol.md §3; the contract is
 * s3_token_frontend_t in s3_request.h): a frontend over the HTTP one whose
 * object bodies and object replies move between s3rdmad and the client
 * buffer x-amz-rdma-token names, by the server's token mover
 * (s3_token_mover_t: RDMA, src/rdmafe). The operations never see it:
 * PutObject and UploadPart ask for an object body, GetObject sends an
 * object, and this file decides how those bytes travel. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

static const s3_frontend_t *carrier_of(const s3_req_t *req)
{
    return ((const s3_token_frontend_t *)req->fe)->carrier;
}

static const char *token_of(s3_req_t *req)
{
    return s3_req_header(req, "x-amz-rdma-token");
}

/* The name of the token's format when it is not s3r1 but another S3-RDMA
 * implementation's (cuObject's, docs/protocol.md §2) or unknown; NULL for
 * s3r1. s3rdmad serves none of the others and declines each request
 * carrying one, RDMA on or off, the way those clients fall back:
 * x-amz-rdma-reply: 501 on a reply that is otherwise plain HTTP (a PUT's
 * 501, a GET's object in the body). Sets req->decline. */
static const char *foreign_format(s3_req_t *req)
{
    s3_token_format_t f = s3_token_format(token_of(req));
    if (f == S3_TOKEN_S3R1)
        return NULL;
    req->decline = S3_DECLINE_FOREIGN;
    log_debug("request %s: declining an x-amz-rdma-token of format %s", req->request_id,
              s3_token_format_name(f));
    return s3_token_format_name(f);
}

static const s3_token_mover_t *mover_of(const s3_req_t *req)
{
    return req->srv->cfg.token_mover;
}

/* Replies a failed transfer's error (not a callback's: the caller's own).
 * A decline (501) is what a client answers by falling back to HTTP; the
 * others are real errors. */
static void reply_fail(s3_req_t *req, const s3_token_fail_t *fail)
{
    if (fail->decline != S3_DECLINE_NONE)
        req->decline = fail->decline;
    s3_reply_error(req, fail->err, fail->msg);
}

/* Takes up an s3r1 token (the request now counts as a token request) and
 * checks the rules of every token request: RDMA enabled here (else the 501
 * decline) and the token covered by the signature (else 403). S3E_NONE, or
 * the error to reply with its message in *why_p. */
static s3_error_t take_up(s3_req_t *req, const char **why_p)
{
    req->transport = S3_TRANSPORT_TOKEN;
    if (!mover_of(req)) {
        req->decline = S3_DECLINE_DISABLED;
        *why_p = "RDMA transfers are disabled on this server.";
        return S3E_NOT_IMPLEMENTED;
    }
    /* The token names client memory: it must be covered by the signature so
     * nobody can replay a signed request against another buffer. */
    bool signed_token = false;
    char names[sizeof(req->signed_headers)];
    snprintf(names, sizeof(names), "%s", req->signed_headers);
    for (char *save = NULL, *n = strtok_r(names, ";", &save); n; n = strtok_r(NULL, ";", &save))
        signed_token |= strcmp(n, "x-amz-rdma-token") == 0;
    if (!signed_token) {
        *why_p = "x-amz-rdma-token must be in SignedHeaders.";
        return S3E_ACCESS_DENIED;
    }
    return S3E_NONE;
}

/* ---- object bodies: RDMA-READ (PutObject, UploadPart) ------------------------------ */

static bool token_body_take(s3_req_t *req)
{
    const char *foreign = foreign_format(req);
    if (foreign) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "x-amz-rdma-token format: %s; this server serves s3r1 tokens only. Send the "
                 "body over HTTP.",
                 foreign);
        s3_reply_header(req, "x-amz-rdma-reply", "501");
        s3_reply_error(req, S3E_NOT_IMPLEMENTED, msg);
        return false;
    }
    const char *why;
    s3_error_t err = take_up(req, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return false;
    }
    req->body_via_transport = true;
    return true;
}

static bool token_body_pull(s3_req_t *req)
{
    const s3_token_mover_t *m = mover_of(req);
    s3_token_fail_t fail = {0};
    void *x = m->open(m->ctx, token_of(req), req->user->access_key, &fail);
    if (!x) {
        reply_fail(req, &fail);
        return false;
    }
    if (req->declared_len > m->length(x)) {
        m->close(x);
        s3_reply_error(req, S3E_INVALID_ARGUMENT,
                       "x-amz-decoded-content-length exceeds the RDMA buffer the token names.");
        return false;
    }
    bool moved = m->pull(x, req->declared_len, s3_body_sink, req, &fail);
    m->close(x);
    if (!moved && fail.callback) {
        if (req->body_error == S3E_NONE)
            req->body_error = S3E_INTERNAL;
        return true; /* s3_req_finish replies the sink's error */
    }
    if (!moved) {
        reply_fail(req, &fail);
        return false;
    }
    return true;
}

/* ---- object replies: RDMA-WRITE (GetObject) -------------------------------------- */

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

/* Lets go of what out holds (the frontend took it over). */
static void out_drop(s3_out_t *out)
{
    stor_reader_close(out->reader);
    free(out->data);
    out->reader = NULL;
    out->data = NULL;
}

/* Before the error that replaces an object reply: the object and its
 * headers go. */
static void push_failed(s3_req_t *req, s3_out_t *out)
{
    out_drop(out);
    buf_reset(&req->reply_headers);
}

/* RDMA-WRITEs out's object into the client's buffer; the reply is then
 * status with the object's headers and x-amz-rdma-reply, and no body. */
static void push(s3_req_t *req, int status, s3_out_t *out)
{
    uint64_t len = out->kind == S3_OUT_OBJECT ? out->obj_len : 0;
    const s3_token_mover_t *m = mover_of(req);
    s3_token_fail_t fail = {0};
    void *x = m->open(m->ctx, token_of(req), req->user->access_key, &fail);
    if (!x) {
        push_failed(req, out);
        reply_fail(req, &fail);
        return;
    }
    if (len > m->length(x)) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "The RDMA buffer holds %" PRIu64 " bytes; this response needs %" PRIu64 ".",
                 m->length(x), len);
        m->close(x);
        push_failed(req, out);
        s3_reply_headerf(req, "x-amz-rdma-bytes-needed", "%" PRIu64, len);
        s3_reply_error(req, S3E_TOKEN_BUFFER_TOO_SMALL, msg);
        return;
    }
    push_source_t ps = {.reader = out->reader, .first = out->first};
    bool moved = m->push(x, len, push_fill, &ps, &fail);
    m->close(x);
    if (!moved) {
        push_failed(req, out);
        if (fail.callback)
            s3_reply_error(req, S3E_INTERNAL, "Reading the object failed.");
        else
            reply_fail(req, &fail);
        return;
    }
    out_drop(out);
    s3_reply_headerf(req, "x-amz-rdma-reply", "%d", status);
    s3_reply_headerf(req, "x-amz-rdma-bytes-transferred", "%" PRIu64, len);
    s3_out_t none = {.kind = S3_OUT_EMPTY};
    carrier_of(req)->send(req, status, &none);
}

static void token_send(s3_req_t *req, int status, s3_out_t *out)
{
    const s3_frontend_t *carrier = carrier_of(req);
    if (req->body_via_transport && req->body_verified)
        s3_reply_header(req, "x-amz-rdma-reply", "200"); /* the pulled body was taken */
    if (!out->object) {
        carrier->send(req, status, out);
        return;
    }
    if (foreign_format(req)) {
        /* The decline a GET or HEAD may give: the object in the body. */
        s3_reply_header(req, "x-amz-rdma-reply", "501");
        carrier->send(req, status, out);
        return;
    }
    const char *why;
    s3_error_t err = take_up(req, &why);
    if (err != S3E_NONE) {
        push_failed(req, out);
        s3_reply_error(req, err, why);
        return;
    }
    if (s3_req_is_head(req))
        carrier->send(req, status, out);
    else
        push(req, status, out);
}

void s3_token_frontend_init(s3_token_frontend_t *t, const s3_frontend_t *carrier)
{
    t->fe = *carrier;
    t->fe.send = token_send;
    t->fe.body_take = token_body_take;
    t->fe.body_pull = token_body_pull;
    t->carrier = carrier;
}
