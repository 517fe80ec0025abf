/* libs3rdma: the token transport (docs/protocol.md §3), the third branch
 * of s3c_do beside HTTP and native. A PutObject or UploadPart built for
 * HTTP goes as the same HTTP request without its body, naming the body's
 * buffer in x-amz-rdma-token (the server RDMA-READs it); a GetObject into a
 * caller's buffer names that buffer (the server RDMA-WRITEs the object into
 * it). The answer fills the s3c_resp_t as HTTP's would, so the operations
 * read it one way: a 2xx with body_bytes the bytes the server wrote, and a
 * buffer too small as HTTP's overflow. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

/* A zero-length transfer still needs a token for a valid region span: a
 * one-byte span of this dummy byte keeps the request uniform. */
static char zero_byte;

bool s3c_token_form(const s3c_req_t *req)
{
    if (req->native_op == RDMA_OP_PUT_OBJECT || req->native_op == RDMA_OP_UPLOAD_PART)
        return true;
    return req->native_op == RDMA_OP_GET_OBJECT && !req->sink_grow && !req->sink_alloc &&
           req->sink_fd < 0;
}

/* Judges the answer: S3R_OK for a 2xx carrying x-amz-rdma-reply;
 * S3R_ERR_RDMA_DECLINED (with *declined set) for a 501; otherwise the S3
 * error or S3R_ERR_PROTOCOL, never a decline. */
static s3r_status_t token_answer(s3r_client_t *c, const s3c_resp_t *resp, bool *declined)
{
    char v[16];
    bool has_reply = s3c_resp_header(resp, "x-amz-rdma-reply", v, sizeof(v)) >= 0;
    /* A 2xx whose x-amz-rdma-reply is not 2xx is a decline too: the
     * protocol lets a server answer a GET it will not RDMA-WRITE with the
     * object in the body (docs/protocol.md §2.1); nothing reached our buffer. */
    long rdma_reply = has_reply ? strtol(v, NULL, 10) : 0;
    bool declined_2xx = resp->status >= 200 && resp->status <= 299 && has_reply &&
                        (rdma_reply < 200 || rdma_reply > 299);
    if (resp->status == 501 || declined_2xx) {
        *declined = true;
        atomic_fetch_add(&c->n_declines, 1);
        /* Records the server's code and message (a 501's body), under the
         * decline status. */
        if (declined_2xx)
            (void)s3c_fail(c, S3R_ERR_RDMA_DECLINED, S3R_TRANSPORT_TOKEN, (int)resp->status, "",
                           "the server declined the RDMA transfer (x-amz-rdma-reply: %ld)",
                           rdma_reply);
        else
            (void)s3c_http_error(c, resp, S3R_TRANSPORT_TOKEN, true);
        s3c_set_status(S3R_ERR_RDMA_DECLINED);
        return S3R_ERR_RDMA_DECLINED;
    }
    if (resp->status < 200 || resp->status > 299)
        return s3c_http_error(c, resp, S3R_TRANSPORT_TOKEN, true);
    if (!has_reply)
        return s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_TOKEN, (int)resp->status, "",
                        "the server answered %ld without x-amz-rdma-reply", resp->status);
    return S3R_OK;
}

/* A GET the server refused because the buffer is smaller than the object
 * (400 naming the size in x-amz-rdma-bytes-needed, x-amz-rdma-required-bytes
 * or the error body; InvalidArgument without a size) becomes HTTP's
 * overflow, with the size as content-length when it was named. Returns
 * whether it was one. */
static bool too_small(s3c_resp_t *resp, uint64_t cap)
{
    char v[64];
    if (resp->status != 400)
        return false;
    uint64_t need = s3c_tls_err.needed_bytes;
    if (need == 0 && (s3c_resp_header(resp, "x-amz-rdma-bytes-needed", v, sizeof(v)) == 0 ||
                      s3c_resp_header(resp, "x-amz-rdma-required-bytes", v, sizeof(v)) == 0))
        need = strtoull(v, NULL, 10);
    if (need == 0 ? strcmp(s3c_tls_err.code, "InvalidArgument") != 0 : need <= cap)
        return false;
    resp->overflow = true;
    resp->status = 200;
    buf_reset(&resp->hdrs);
    buf_reset(&resp->err_body);
    if (need)
        buf_printf(&resp->hdrs, "content-length: %llu\n", (unsigned long long)need);
    return true;
}

s3r_status_t s3c_token_do(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp)
{
    bool put = req->native_op != RDMA_OP_GET_OBJECT;
    const void *addr = put ? req->body : req->sink_buf;
    uint64_t len = put ? req->body_len : req->sink_cap;
    s3c_sess_t *sess = NULL;
    s3c_region_t *reg = NULL;
    char token[512], v[64], dcl[24];
    bool declined = false;
    resp->transport = S3R_TRANSPORT_TOKEN;
    s3r_status_t st = s3c_sess_get(c, &sess);
    if (st == S3R_OK)
        st = s3c_token_for(c, sess, len ? addr : &zero_byte, len, token, sizeof(token), &reg);
    if (st != S3R_OK)
        goto out;
    /* The same request, its bytes by RDMA: no HTTP body, no sink. */
    s3c_req_t tr = *req;
    tr.unsigned_payload = true;
    tr.ep_idx = s3c_sess_ep(sess);
    tr.body = NULL;
    tr.body_len = 0;
    tr.sink_buf = NULL;
    tr.sink_cap = 0;
    snprintf(dcl, sizeof(dcl), "%llu", (unsigned long long)len);
    if (s3c_req_hdr(&tr, "x-amz-rdma-token", token) < 0 ||
        (put && s3c_req_hdr(&tr, "x-amz-decoded-content-length", dcl) < 0)) {
        st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_TOKEN, 0, "", "too many headers");
        goto out;
    }
    st = s3c_http_do(c, &tr, resp);
    resp->transport = S3R_TRANSPORT_TOKEN;
    if (st != S3R_OK)
        goto out;
    st = token_answer(c, resp, &declined);
    if (!put && too_small(resp, len)) {
        st = S3R_OK;
    } else if (st == S3R_OK && !put) {
        uint64_t n = 0;
        if (s3c_resp_header(resp, "x-amz-rdma-bytes-transferred", v, sizeof(v)) < 0 ||
            (n = strtoull(v, NULL, 10)) > len) {
            st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_TOKEN, (int)resp->status, "",
                          "missing or impossible x-amz-rdma-bytes-transferred");
        } else {
            resp->body_bytes = n;
            s3c_count_transfer(c, S3R_TRANSPORT_TOKEN, n);
        }
    } else if (st == S3R_OK) {
        s3c_count_transfer(c, S3R_TRANSPORT_TOKEN, len);
    }
out:
    s3c_region_put(c, reg);
    s3c_sess_put(c, sess, declined);
    return st;
}
