/* libs3rdma: S3 requests over the native protocol (docs/protocol.md §4). An
 * s3c_req_t built for HTTP runs here unchanged: its headers and query
 * become the message's parameters, its body travels inline or is named as
 * a region span the server RDMA-READs, and the answer fills the same
 * s3c_resp_t the HTTP path fills (status, lower-case "name: value\n"
 * headers, the XML error body, the body in the request's sink), so every
 * operation parses answers in one way whichever transport carried them.
 *
 * A body of a caller's buffer larger than native_inline is registered
 * (cached, as for tokens) and read by the server in place; a reply body
 * larger than native_inline is RDMA-WRITTEN into the caller's buffer
 * (registered likewise) or, for growable sinks, into registered scratch
 * memory sized by the server's x-amz-rdma-bytes-needed. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "rdma/rdma_client.h"

/* Whether n bytes can stand in a "name: value" header line: no CR, LF or
 * other control character but HTAB (a value the server stored before it
 * held metadata to the field syntax could carry them, and a line break
 * would read as a header of its own). */
static bool header_bytes_ok(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
            return false;
    return true;
}

static void resp_reset(s3c_resp_t *resp)
{
    buf_reset(&resp->hdrs);
    buf_reset(&resp->err_body);
    resp->status = 0;
    resp->overflow = false;
    resp->body_bytes = 0;
}

/* Copies the reply into resp (on the thread that progressed the session).
 * A header that could not stand in a header line is dropped. */
static void ncall_done(rdma_native_call_t *call, const rdma_native_reply_t *r)
{
    s3c_ncall_t *n = (s3c_ncall_t *)call;
    s3c_resp_t *resp = n->resp;
    s3c_req_t *req = n->req;
    if (r == NULL) {
        resp->status = 0;
        return;
    }
    resp->status = r->status;
    n->progress_refused = n->asked_progress && r->error == RDMA_ERR_BAD_MESSAGE;
    for (unsigned i = 0; i < r->n_headers; i++) {
        if (!header_bytes_ok(r->headers[i].name, r->headers[i].name_len) ||
            !header_bytes_ok(r->headers[i].value, r->headers[i].value_len))
            continue;
        if (buf_reserve(&resp->hdrs, (size_t)r->headers[i].name_len + r->headers[i].value_len + 3) <
            0)
            break;
        for (unsigned k = 0; k < r->headers[i].name_len; k++)
            resp->hdrs.data[resp->hdrs.len++] = (char)tolower(r->headers[i].name[k]);
        buf_append(&resp->hdrs, ": ", 2);
        buf_append(&resp->hdrs, r->headers[i].value, r->headers[i].value_len);
        buf_append(&resp->hdrs, "\n", 1);
    }
    if (r->s3_request_id[0])
        buf_printf(&resp->hdrs, "x-amz-request-id: %s\n", r->s3_request_id);
    bool ok = r->status >= 200 && r->status <= 299;
    if (r->body_kind == RDMA_BODY_REGION) {
        n->region_bytes = r->body_len;
        return;
    }
    if (r->body_kind != RDMA_BODY_INLINE)
        return;
    if (!ok) {
        buf_append(&resp->err_body, r->body, (size_t)r->body_len);
    } else if (req->sink_grow) {
        if (buf_append(req->sink_grow, r->body, (size_t)r->body_len) != 0)
            resp->overflow = true;
        else
            resp->body_bytes = r->body_len;
    } else if (req->sink_buf || req->sink_cap == 0) {
        if (r->body_len > req->sink_cap) {
            resp->overflow = true;
        } else {
            if (r->body_len)
                memcpy(req->sink_buf, r->body, (size_t)r->body_len);
            resp->body_bytes = r->body_len;
        }
    }
}

/* Copies what landed in the bounce buffer since the last time into the
 * caller's buffer it stands for, while the rest is still coming (on the
 * waiting thread). */
static void ncall_more(rdma_native_call_t *call, uint64_t bytes)
{
    s3c_ncall_t *n = (s3c_ncall_t *)call;
    if (bytes > n->bounce_to_len || bytes <= n->copied)
        return;
    memcpy((char *)n->bounce_to + n->copied, (char *)n->bounce + n->copied,
           (size_t)(bytes - n->copied));
    n->copied = bytes;
}

/* Splits a raw query "a=b&c" (values URI-encoded) into message parameters,
 * decoded into ss. -1 when there are too many. */
static int add_query(rdma_native_msg_t *m, const char *query, strs_t *ss)
{
    if (!query || !*query)
        return 0;
    char *q = strdup(query);
    if (!q)
        return -1;
    int rc = 0;
    for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv && rc == 0;
         kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (eq)
            *eq = '\0';
        const char *name = s3c_strs_printf(ss, "%s", kv);
        const char *value = eq ? s3c_strs_udec(ss, eq + 1) : "";
        if (!name || !value || m->n_params == RDMA_NATIVE_MAX_PARAMS)
            rc = -1;
        else
            m->params[m->n_params++] = (rdma_native_param_t){RDMA_PARAM_QUERY, name, value};
    }
    free(q);
    return rc;
}

/* Where the server of sess reads a request body of len bytes at body from:
 * memory it maps, when body is not (a caller's buffer on a same-host
 * shared-memory session, docs/client.md "Registered memory"): the bounce
 * buffer up to S3C_BOUNCE_BODY_MAX, else (or when another call holds it) a
 * scratch buffer up to S3C_STAGE_BODY_MAX, and above that the bounce buffer
 * again (kept between calls, up to S3C_BOUNCE_MAX: a single PUT of a large
 * body), the body copied in, held in n->bounce or n->stage until the call
 * ends. Otherwise body itself, read in place or through UCX's software RMA. */
static const void *stage_body(s3r_client_t *c, s3c_ncall_t *n, s3c_sess_t *sess, const void *body,
                              uint64_t len)
{
    if (len <= S3C_BOUNCE_BODY_MAX || len > S3C_STAGE_BODY_MAX)
        n->bounce = s3c_bounce_get(c, sess, body, len, &n->bounce_len);
    if (n->bounce == NULL && len <= S3C_STAGE_BODY_MAX && !s3c_sess_reaches(c, sess, body, len))
        n->stage = s3c_scratch_get(c, len, &n->stage_len);
    void *to = n->bounce ? n->bounce : n->stage;
    return to ? memcpy(to, body, (size_t)len) : body;
}

/* Builds and sends one native request for req: out (NULL or memory of
 * out_cap bytes, registered here) receives a reply body too large to come
 * inline. On S3R_OK the call is in flight and native_finish must follow. */
static s3r_status_t native_start(s3r_client_t *c, s3c_ncall_t *n, s3c_sess_t *sess, s3c_req_t *req,
                                 s3c_resp_t *resp, void *out, uint64_t out_cap)
{
    strs_t ss = {0};
    rdma_native_msg_t m = {0};
    s3r_status_t st = S3R_OK;
    memset(n, 0, sizeof(*n));
    n->call.done = ncall_done;
    n->req = req;
    n->resp = resp;
    n->sess = sess;
    m.head.opcode = req->native_op;
    m.bucket = req->bucket ? req->bucket : "";
    m.key = req->key ? req->key : "";
    m.reply_inline_max = (uint32_t)c->set.native_inline;
    for (size_t i = 0; i < req->n_hdrs && st == S3R_OK; i++) {
        if (m.n_params == RDMA_NATIVE_MAX_PARAMS)
            st = S3R_ERR_TOO_LARGE;
        else
            m.params[m.n_params++] =
                (rdma_native_param_t){RDMA_PARAM_HEADER, req->hdrs[i].name, req->hdrs[i].value};
    }
    if (st == S3R_OK &&
        (add_query(&m, req->query, &ss) < 0 || add_query(&m, req->native_query, &ss) < 0))
        st = S3R_ERR_TOO_LARGE;
    if (st != S3R_OK) {
        st = s3c_fail(c, st, S3R_TRANSPORT_NATIVE, 0, "", "too many request parameters");
        goto out;
    }
    if (req->body_len > 0 && req->body_len <= c->set.native_inline) {
        m.body_kind = RDMA_BODY_INLINE;
        m.body = req->body;
        m.body_len = req->body_len;
    } else if (req->body_len > 0) {
        m.body_kind = RDMA_BODY_REGION;
        const void *body = stage_body(c, n, sess, req->body, req->body_len);
        st = s3c_region_for(c, sess, body, req->body_len, &n->body_reg);
        if (st == S3R_OK)
            st = s3c_region_ref(c, n->body_reg, body, req->body_len, &m.body_ref);
        if (st != S3R_OK)
            goto out;
        m.body_len = req->body_len;
    }
    if (out && out_cap > 0) {
        if (!n->bounce)
            n->bounce = s3c_bounce_get(c, sess, out, out_cap, &n->bounce_len);
        if (n->bounce) {
            n->bounce_to = out;
            n->bounce_to_len = out_cap;
            out = n->bounce;
            /* Copied out as it lands, overlapping the server's reads. */
            if (rdma_session_progress_ok(s3c_sess_rdma(sess))) {
                m.head.flags |= RDMA_NATIVE_FLAG_PROGRESS;
                n->call.more = ncall_more;
                n->asked_progress = true;
            }
        }
        st = s3c_region_for(c, sess, out, out_cap, &n->out_reg);
        if (st == S3R_OK)
            st = s3c_region_ref(c, n->out_reg, out, out_cap, &m.out);
        if (st != S3R_OK)
            goto out;
        m.has_out = 1;
    }
    char err[160];
    if (rdma_native_submit(s3c_sess_rdma(sess), &m, &n->call, err, sizeof(err)) < 0)
        st = s3c_fail(c, S3R_ERR_RDMA_UNAVAILABLE, S3R_TRANSPORT_NATIVE, 0, "", "%s", err);
out:
    s3c_strs_free(&ss);
    if (st != S3R_OK) {
        s3c_region_put(c, n->body_reg);
        s3c_region_put(c, n->out_reg);
        n->body_reg = n->out_reg = NULL;
        /* Never sent: nobody reads or writes it. */
        s3c_bounce_put(c, n->bounce, n->bounce_len, true);
        n->bounce = NULL;
        s3c_scratch_put(c, n->stage, n->stage_len);
        n->stage = NULL;
    }
    return st;
}

/* Waits for a started call (timeout_ms < 0: the client's timeout) and
 * releases what it held. *region_p gets the bytes of a body written into
 * the out region. */
static s3r_status_t native_finish(s3r_client_t *c, s3c_ncall_t *n, int timeout_ms,
                                  uint64_t *region_p)
{
    s3r_status_t st = S3R_OK;
    int timeout = timeout_ms >= 0              ? timeout_ms
                  : c->set.http_timeout_ms > 0 ? (int)c->set.http_timeout_ms
                                               : S3C_NATIVE_TIMEOUT_MS;
    if (rdma_session_inherited(s3c_sess_rdma(n->sess)))
        /* Sent by the parent before fork: its answer goes to the parent. */
        st = s3c_fail(c, S3R_ERR_RDMA_UNAVAILABLE, S3R_TRANSPORT_NATIVE, 0, "",
                      "the request was sent by the parent process before fork");
    else if (rdma_native_wait(s3c_sess_rdma(n->sess), &n->call, timeout) < 0)
        st = s3c_fail(c, S3R_ERR_TIMEOUT, S3R_TRANSPORT_NATIVE, 0, "",
                      "no native reply within %d ms", timeout);
    else if (n->resp->status == 0)
        st = s3c_fail(c, S3R_ERR_RDMA_UNAVAILABLE, S3R_TRANSPORT_NATIVE, 0, "",
                      "the RDMA session was lost");
    *region_p = n->region_bytes;
    s3c_region_put(c, n->body_reg);
    s3c_region_put(c, n->out_reg);
    n->body_reg = n->out_reg = NULL;
    /* The rest of the body (ncall_more copied the start); a length beyond
     * the span is the callers' protocol error: nothing more copied. */
    if (n->bounce_to && st == S3R_OK && n->region_bytes > n->copied &&
        n->region_bytes <= n->bounce_to_len)
        memcpy((char *)n->bounce_to + n->copied, (char *)n->bounce + n->copied,
               (size_t)(n->region_bytes - n->copied));
    /* After a failure the server may still be reading or writing it. */
    s3c_bounce_put(c, n->bounce, n->bounce_len, st == S3R_OK);
    if (st == S3R_OK)
        s3c_scratch_put(c, n->stage, n->stage_len);
    else
        s3r_buf_free(c, n->stage); /* the server may still be reading it */
    n->stage = NULL;
    void *out = n->bounce_to;
    uint64_t out_cap = n->bounce_to_len;
    n->bounce = n->bounce_to = NULL;
    if (st == S3R_OK && n->progress_refused) {
        /* A server older than progress messages: the session asks for them
         * no more (rdma_session_progress_ok); the same request again. */
        s3c_req_t *req = n->req;
        s3c_resp_t *resp = n->resp;
        resp_reset(resp);
        st = native_start(c, n, n->sess, req, resp, out, out_cap);
        if (st == S3R_OK)
            st = native_finish(c, n, timeout_ms, region_p);
    }
    return st;
}

static s3r_status_t native_once(s3r_client_t *c, s3c_sess_t *sess, s3c_req_t *req, s3c_resp_t *resp,
                                void *out, uint64_t out_cap, uint64_t *region_p)
{
    s3c_ncall_t n;
    s3r_status_t st = native_start(c, &n, sess, req, resp, out, out_cap);
    return st == S3R_OK ? native_finish(c, &n, -1, region_p) : st;
}

/* The bytes the server said a reply body needs (a 400 with
 * x-amz-rdma-bytes-needed), or 0. */
static uint64_t bytes_needed(const s3c_resp_t *resp)
{
    char v[32];
    if (resp->status != 400 || s3c_resp_header(resp, "x-amz-rdma-bytes-needed", v, sizeof(v)) < 0)
        return 0;
    return strtoull(v, NULL, 10);
}

s3r_status_t s3c_native_start(s3r_client_t *c, s3c_ncall_t *n, s3c_req_t *req, s3c_resp_t *resp)
{
    s3c_sess_t *sess = NULL;
    resp->transport = S3R_TRANSPORT_NATIVE;
    if (s3c_sess_get(c, &sess) != S3R_OK) {
        s3c_set_status(S3R_ERR_RDMA_UNAVAILABLE);
        return S3R_ERR_RDMA_UNAVAILABLE;
    }
    bool to_buf = req->sink_buf && req->sink_cap > c->set.native_inline;
    s3r_status_t st = native_start(c, n, sess, req, resp, to_buf ? req->sink_buf : NULL,
                                   to_buf ? req->sink_cap : 0);
    if (st != S3R_OK)
        s3c_sess_put(c, sess, st == S3R_ERR_RDMA_UNAVAILABLE);
    return st;
}

/* The object bytes a request moved (what native_bytes counts): a PUT's or
 * part's body, a GET's reply body; not the XML of other operations. */
static uint64_t payload(const s3c_req_t *req, const s3c_resp_t *resp)
{
    if (req->native_op == RDMA_OP_PUT_OBJECT || req->native_op == RDMA_OP_UPLOAD_PART)
        return req->body_len;
    return req->native_op == RDMA_OP_GET_OBJECT ? resp->body_bytes : 0;
}

/* What a finished call means for a request whose body went to sink_buf (or
 * nowhere): a body too large for the buffer becomes HTTP's overflow, with
 * the size the server named as content-length. */
static s3r_status_t native_settle(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp,
                                  s3r_status_t st, uint64_t region)
{
    uint64_t need = st == S3R_OK ? bytes_needed(resp) : 0;
    if (need) {
        /* The headers were the error reply's: only the size stays. */
        resp->overflow = true;
        resp->status = 200;
        buf_reset(&resp->hdrs);
        buf_reset(&resp->err_body);
        buf_printf(&resp->hdrs, "content-length: %llu\n", (unsigned long long)need);
    } else if (st == S3R_OK && region) {
        if (!req->sink_buf || region > req->sink_cap)
            st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_NATIVE, resp->status, "",
                          "reply body written outside the buffer");
        else
            resp->body_bytes = region;
    }
    if (st == S3R_OK && !resp->overflow && resp->status >= 200 && resp->status <= 299)
        s3c_count_transfer(c, S3R_TRANSPORT_NATIVE, payload(req, resp));
    return st;
}

s3r_status_t s3c_native_finish(s3r_client_t *c, s3c_ncall_t *n, int timeout_ms)
{
    uint64_t region = 0;
    s3c_sess_t *sess = n->sess;
    s3r_status_t st = native_finish(c, n, timeout_ms, &region);
    s3c_sess_put(c, sess, st == S3R_ERR_RDMA_UNAVAILABLE);
    return native_settle(c, n->req, n->resp, st, region);
}

/* A request whose reply body goes to sink_buf (or nowhere): the two halves
 * the asynchronous calls use, back to back. */
static s3r_status_t native_plain(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp)
{
    s3c_ncall_t n;
    s3r_status_t st = s3c_native_start(c, &n, req, resp);
    return st == S3R_OK ? s3c_native_finish(c, &n, -1) : st;
}

/* A request whose reply body goes to a growable buffer (listings, XML
 * answers, get_alloc): the body comes inline or into registered scratch
 * memory (S3C_SCRATCH_BYTES, reused across requests). A larger body, whose
 * size the server names, is asked for once more and written straight into
 * the growable buffer, registered for that request only: no scratch memory
 * the size of the largest object is kept, and the body is not copied. */
static s3r_status_t native_grow(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp)
{
    s3c_sess_t *sess = NULL;
    resp->transport = S3R_TRANSPORT_NATIVE;
    if (s3c_sess_get(c, &sess) != S3R_OK) {
        s3c_set_status(S3R_ERR_RDMA_UNAVAILABLE);
        return S3R_ERR_RDMA_UNAVAILABLE;
    }
    s3r_status_t st = S3R_OK;
    uint64_t region = 0, len = 0;
    buf_t *b = req->sink_grow;
    void *scratch = s3c_scratch_get(c, req->native_room, &len);
    if (!scratch) {
        st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_NATIVE, 0, "", "out of memory");
    } else {
        resp_reset(resp);
        st = native_once(c, sess, req, resp, scratch, len, &region);
    }
    uint64_t need = st == S3R_OK ? bytes_needed(resp) : 0;
    if (need > 0 && (need > b->max - b->len || buf_reserve(b, (size_t)need) != 0)) {
        resp->overflow = true; /* beyond the buffer's bound, or out of memory */
    } else if (need > 0) {
        char *dst = b->data + b->len;
        resp_reset(resp);
        st = native_once(c, sess, req, resp, dst, need, &region);
        /* The buffer changes hands when the call returns. */
        s3r_buf_unregister_range(c, dst, (size_t)need);
        if (st == S3R_OK && region > need) {
            st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_NATIVE, resp->status, "",
                          "reply body written outside the buffer");
        } else if (st == S3R_OK && region) {
            b->len += (size_t)region;
            b->data[b->len] = '\0';
            resp->body_bytes = region;
        }
    } else if (st == S3R_OK && region &&
               (region > len || buf_append(b, scratch, (size_t)region) != 0)) {
        resp->overflow = true;
    } else if (st == S3R_OK && region) {
        resp->body_bytes = region;
    }
    s3c_scratch_put(c, scratch, len);
    s3c_sess_put(c, sess, st == S3R_ERR_RDMA_UNAVAILABLE);
    if (st == S3R_OK && !resp->overflow && resp->status >= 200 && resp->status <= 299)
        s3c_count_transfer(c, S3R_TRANSPORT_NATIVE, payload(req, resp));
    return st;
}

s3r_status_t s3c_do(s3r_client_t *c, s3r_transport_t t, s3c_req_t *req, s3c_resp_t *resp)
{
    if (t == S3R_TRANSPORT_NATIVE && req->native_op) {
        s3r_status_t st = req->sink_grow ? native_grow(c, req, resp) : native_plain(c, req, resp);
        if (!s3c_fall_back(c, st))
            return st;
        resp_reset(resp);
        if (req->sink_grow)
            buf_reset(req->sink_grow);
    }
    if (t == S3R_TRANSPORT_TOKEN && s3c_token_form(req)) {
        s3r_status_t st = s3c_token_do(c, req, resp);
        if (!s3c_fall_back(c, st))
            return st;
        resp_reset(resp);
    }
    resp->transport = S3R_TRANSPORT_HTTP;
    return s3c_http_do(c, req, resp);
}
