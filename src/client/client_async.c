/* libs3rdma: asynchronous GET and PUT (s3r_op_t). Over the native transport
 * the request is sent at once and its answer settled when the op is waited
 * for, so one thread keeps many requests in flight on the session; over the
 * other transports the operation runs to completion when it is started and
 * the op only carries its result. s3r_op_wait_any waits for whichever of a
 * thread's ops is answered first, on however many sessions. The building and judging of the request
 * are the synchronous calls' own (s3c_get_request/s3c_get_result,
 * s3c_put_request/s3c_put_result). */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "rdma/rdma_client.h"

struct s3r_op {
    s3r_client_t *c;
    bool is_get;
    bool inflight; /* a native call to settle */
    bool settled;
    s3r_status_t st;
    /* The failure's details, taken when it settled: the thread's last error
     * may belong to other operations by the time the op is waited for. */
    s3r_error_info_t err;
    uint64_t len; /* GET: bytes read; PUT: bytes written */
    uint64_t cap;
    s3c_req_t req;
    s3c_resp_t resp;
    strs_t ss;
    s3c_ncall_t n;
    /* for a fallback to HTTP when the native call loses its session */
    char *bucket, *key;
    char *version_id; /* gopts.version_id's copy */
    void *buf;
    s3r_get_opts_t gopts;
    s3r_put_opts_t popts;
};

static s3r_op_t *op_new(s3r_client_t *c, const char *bucket, const char *key)
{
    s3r_op_t *op = calloc(1, sizeof(*op));
    if (op == NULL)
        return NULL;
    op->c = c;
    op->bucket = strdup(bucket);
    op->key = strdup(key);
    s3c_resp_init(&op->resp);
    if (op->bucket == NULL || op->key == NULL) {
        s3r_op_free(op);
        return NULL;
    }
    return op;
}

/* Runs the operation to completion on this thread over t (HTTP or TOKEN,
 * or a native attempt's fallback): the synchronous call's own path. */
static s3r_status_t op_run(s3r_op_t *op, s3r_transport_t t)
{
    if (op->is_get) {
        op->gopts.transport = t;
        return s3c_get_one(op->c, op->bucket, op->key, op->buf, op->cap, &op->gopts, &op->len);
    }
    op->popts.transport = t;
    return s3c_put_one(op->c, op->bucket, op->key, NULL, op->buf, op->len, &op->popts, NULL, 0);
}

/* Records st as op's outcome, with the details of a failure. */
static void op_settled(s3r_op_t *op, s3r_status_t st)
{
    op->st = st;
    op->settled = true;
    if (st != S3R_OK && s3r_client_last_error(op->c, &op->err) != S3R_OK)
        op->err = (s3r_error_info_t){.status = st};
}

/* Starts op over the transport picked for size: a native request left in
 * flight, else the whole operation now (also when a native start fails and
 * the fallback rules send it to HTTP). *op_p gets op unless it failed to
 * start at all. */
static s3r_status_t op_launch(s3r_op_t *op, uint64_t size, s3r_op_t **op_p)
{
    s3r_client_t *c = op->c;
    s3r_transport_t t =
        s3c_pick_transport(c, op->is_get ? op->gopts.transport : op->popts.transport, size);
    if (t == S3R_TRANSPORT_NATIVE) {
        s3r_status_t st = S3R_OK;
        if (op->is_get)
            st = s3c_get_request(c, &op->req, &op->ss, op->bucket, op->key, op->buf, op->cap,
                                 &op->gopts);
        else
            st = s3c_put_request(c, &op->req, &op->ss, op->bucket, op->key, NULL, op->buf, op->len,
                                 &op->popts);
        if (st == S3R_OK)
            st = s3c_native_start(c, &op->n, &op->req, &op->resp);
        op->inflight = st == S3R_OK;
        if (!op->inflight && !s3c_fall_back(c, st)) {
            s3r_op_free(op);
            return s3c_done(c, st);
        }
    }
    if (!op->inflight)
        op_settled(op, op_run(op, t == S3R_TRANSPORT_NATIVE ? S3R_TRANSPORT_HTTP : t));
    *op_p = op;
    return S3R_OK;
}

s3r_status_t s3r_object_get_async(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                                  uint64_t buf_len, const s3r_get_opts_t *opts, s3r_op_t **op_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) ||
        (buf == NULL && buf_len > 0) || op_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_op_t *op = op_new(c, bucket, key);
    if (op == NULL)
        return s3c_done(c,
                        s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory"));
    op->is_get = true;
    op->buf = buf;
    op->cap = buf_len;
    if (opts)
        op->gopts = *opts;
    if (opts && opts->version_id && (op->version_id = strdup(opts->version_id)) == NULL) {
        s3r_op_free(op);
        return s3c_done(c,
                        s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory"));
    }
    op->gopts.version_id = op->version_id;
    uint64_t size =
        opts && opts->range_len && opts->range_len < buf_len ? opts->range_len : buf_len;
    return op_launch(op, size, op_p);
}

s3r_status_t s3r_object_put_async(s3r_client_t *c, const char *bucket, const char *key,
                                  const void *data, uint64_t len, const s3r_put_opts_t *opts,
                                  s3r_op_t **op_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || (data == NULL && len > 0) ||
        op_p == NULL)
        return S3R_ERR_INVALID_ARG;
    if (len > c->set.multipart_threshold)
        return s3c_done(c, s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                                    "asynchronous PUTs are single requests (up to %llu bytes)",
                                    (unsigned long long)c->set.multipart_threshold));
    s3r_op_t *op = op_new(c, bucket, key);
    if (op == NULL)
        return s3c_done(c,
                        s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory"));
    op->buf = (void *)data;
    op->len = len;
    if (opts)
        op->popts = *opts;
    return op_launch(op, len, op_p);
}

int s3r_op_test(s3r_op_t *op)
{
    if (op == NULL || op->settled || !op->inflight)
        return 1;
    rdma_session_t *rs = s3c_sess_rdma(op->n.sess);
    /* A request the parent sent before fork settles (as lost) at once. */
    return rdma_native_finished(&op->n.call) || rdma_session_inherited(rs) ||
           (rdma_native_progress(rs) && rdma_native_finished(&op->n.call));
}

/* The ops s3r_op_wait_any looks at with no allocation; more take one. */
#define WAIT_ANY_STACK 64

s3r_status_t s3r_op_wait_any(s3r_op_t *const *ops, size_t n, int timeout_ms, size_t *index_p)
{
    if (ops == NULL || index_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_client_t *c = NULL;
    for (size_t i = 0; i < n; i++) {
        if (ops[i] == NULL)
            continue;
        c = c ? c : ops[i]->c;
        if (ops[i]->settled || !ops[i]->inflight) {
            *index_p = i; /* answered already (or run to completion when started) */
            return S3R_OK;
        }
    }
    if (c == NULL)
        return S3R_ERR_INVALID_ARG;
    rdma_session_t *sess_stack[WAIT_ANY_STACK], **sess = sess_stack;
    rdma_native_call_t *calls_stack[WAIT_ANY_STACK], **calls = calls_stack;
    if (n > WAIT_ANY_STACK) {
        sess = calloc(n, sizeof(*sess));
        calls = calloc(n, sizeof(*calls));
        if (sess == NULL || calls == NULL) {
            free(sess);
            free(calls);
            return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
        }
    }
    for (size_t i = 0; i < n; i++) {
        sess[i] = ops[i] ? s3c_sess_rdma(ops[i]->n.sess) : NULL;
        calls[i] = ops[i] ? &ops[i]->n.call : NULL;
    }
    int timeout = timeout_ms >= 0              ? timeout_ms
                  : c->set.http_timeout_ms > 0 ? (int)c->set.http_timeout_ms
                                               : S3C_NATIVE_TIMEOUT_MS;
    long ready = rdma_native_wait_any(sess, calls, n, timeout);
    if (n > WAIT_ANY_STACK) {
        free(sess);
        free(calls);
    }
    if (ready < 0)
        return s3c_fail(c, S3R_ERR_TIMEOUT, S3R_TRANSPORT_NATIVE, 0, "",
                        "no native reply within %d ms", timeout);
    *index_p = (size_t)ready;
    return S3R_OK;
}

/* Settles a native call: its answer judged as the synchronous call would,
 * or, when the session was lost and fallback allows, the operation redone
 * over HTTP. */
static void op_settle(s3r_op_t *op)
{
    s3r_client_t *c = op->c;
    s3r_status_t st = s3c_native_finish(c, &op->n, -1);
    op->inflight = false;
    if (s3c_fall_back(c, st)) {
        st = op_run(op, S3R_TRANSPORT_HTTP); /* a PUT's s3c_put_one records its version */
    } else if (op->is_get) {
        st = s3c_get_result(c, st, &op->resp, op->cap, false, &op->len);
    } else {
        st = s3c_put_result(c, st, &op->resp, op->len, NULL, 0);
        if (st == S3R_OK)
            s3c_version_record(c, &op->resp);
    }
    op_settled(op, st);
}

s3r_status_t s3r_op_wait(s3r_op_t *op, uint64_t *len_p)
{
    if (op == NULL)
        return S3R_ERR_INVALID_ARG;
    if (!op->settled)
        op_settle(op);
    if (op->st == S3R_OK && len_p && op->is_get)
        *len_p = op->len;
    if (op->st != S3R_OK)
        s3c_err_restore(op->c, &op->err);
    return s3c_done(op->c, op->st);
}

void s3r_op_free(s3r_op_t *op)
{
    if (op == NULL)
        return;
    if (op->inflight)
        op_settle(op);
    s3c_resp_free(&op->resp);
    s3c_strs_free(&op->ss);
    free(op->bucket);
    free(op->key);
    free(op->version_id);
    free(op);
}
