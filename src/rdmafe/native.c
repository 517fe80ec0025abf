/* The native frontend (docs/protocol.md §4): S3 operations that arrive as
 * native requests on an RDMA session run through the very operation
 * handlers HTTP requests do (src/s3/ops_*.c), so authorization, limits,
 * ETags, checksums, metadata and error codes are one implementation.
 *
 * Differences from HTTP, all in this file: the opcode names the operation
 * (no routing), the session's access key is the identity (the session
 * handshake authenticated it: no signature per request), the body comes
 * inline or by RDMA-READ from a region span and its length is what the
 * message says (Content-Length is not taken from the client), and the reply
 * is one message whose body travels inline or by RDMA-WRITE into the
 * request's out region. Runs on the RDMA server's executor threads. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "rdmafe/rdma_error.h"
#include "rdmafe/rdmafe.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

typedef struct native_req {
    s3_req_t req; /* first: the frontend's calls get this */
    rdma_native_req_t *nr;
    const rdma_native_msg_t *m;
    char content_length[24]; /* of the body ("0" when there is none) */
    bool answering_failure;  /* native_send is replacing a reply it could not send */
} native_req_t;

/* Whether an opcode's request carries an input. */
enum presence { NO = 0, MAY, MUST };

/* Query parameters, NULL-terminated. */
static const char *const get_q[] = {"versionId", "partNumber",
                                    S3_RESPONSE_OVERRIDES(S3_RESPONSE_OVERRIDE_NAME) NULL};
static const char *const list_q[] = {"list-type",
                                     "prefix",
                                     "delimiter",
                                     "marker",
                                     "max-keys",
                                     "encoding-type",
                                     "continuation-token",
                                     "start-after",
                                     "fetch-owner",
                                     "x-s3rdma-pages",
                                     NULL};
static const char *const list_mpu_q[] = {
    "uploads",          "prefix",      "delimiter",     "key-marker",
    "upload-id-marker", "max-uploads", "encoding-type", NULL};
static const char *const list_parts_q[] = {"max-parts", "part-number-marker", "encoding-type",
                                           NULL};
static const char *const upload_q[] = {"uploadId", NULL};
static const char *const part_q[] = {"uploadId", "partNumber", NULL};
static const char *const version_q[] = {"versionId", NULL};
static const char *const delete_q[] = {"delete", NULL};
static const char *const uploads_q[] = {"uploads", NULL};
static const char *const location_q[] = {"location", NULL};
static const char *const list_buckets_q[] = {"max-buckets", "continuation-token", "prefix",
                                             "bucket-region", NULL};
static const char *const list_versions_q[] = {"versions",          "prefix",   "delimiter",
                                              "key-marker",        "max-keys", "encoding-type",
                                              "version-id-marker", NULL};
/* The subresource each configuration opcode needs, as HTTP's routing reads
 * it (http.c): the query parameter that names the operation. */
static const char *const tagging_q[] = {"tagging", NULL};
static const char *const retention_q[] = {"retention", NULL};
static const char *const legal_hold_q[] = {"legal-hold", NULL};
static const char *const acl_q[] = {"acl", NULL};
static const char *const versioning_q[] = {"versioning", NULL};
static const char *const lifecycle_q[] = {"lifecycle", NULL};
static const char *const object_lock_q[] = {"object-lock", NULL};
static const char *const policy_q[] = {"policy", NULL};
static const char *const cors_q[] = {"cors", NULL};
static const char *const encryption_q[] = {"encryption", NULL};

/* What each opcode runs, with the HTTP method the handlers see, and the
 * inputs it takes (docs/protocol.md §4.2): its bucket and key, a request
 * body, an out span for a reply body (only operations whose answer has
 * one), the header and query parameters it cannot run without, and the
 * further query parameters its handler reads (besides "x-id", which SDKs
 * add to every request). check_request holds every request to its row
 * before the handler runs, so a handler never meets a request that HTTP's
 * routing (http.c) would have sent elsewhere or not at all. Header params
 * are otherwise free (metadata, conditionals...), but each must be a
 * well-formed field, as HTTP's parser makes them. */
static const struct native_op {
    const s3_op_t *op;
    const char *method;
    enum presence bucket, key, body, out;
    const char *need_header;
    const char *const *need_query, *const *may_query;
} native_ops[RDMA_OP_MAX + 1] = {
    [RDMA_OP_PUT_OBJECT] = {&s3_op_put_object, "PUT", MUST, MUST, MAY, NO, .need_header = NULL},
    [RDMA_OP_GET_OBJECT] = {&s3_op_get_object, "GET", MUST, MUST, NO, MAY, .may_query = get_q},
    [RDMA_OP_HEAD_OBJECT] = {&s3_op_head_object, "HEAD", MUST, MUST, NO, NO, .may_query = get_q},
    [RDMA_OP_DELETE_OBJECT] = {&s3_op_delete_object, "DELETE", MUST, MUST, NO, NO,
                               .may_query = version_q},
    [RDMA_OP_DELETE_OBJECTS] = {&s3_op_delete_objects, "POST", MUST, NO, MUST, MAY,
                                .may_query = delete_q},
    [RDMA_OP_LIST_OBJECTS] = {&s3_op_list_objects, "GET", MUST, NO, NO, MAY, .may_query = list_q},
    [RDMA_OP_COPY_OBJECT] = {&s3_op_copy_object, "PUT", MUST, MUST, NO, MAY,
                             .need_header = "x-amz-copy-source"},
    [RDMA_OP_CREATE_BUCKET] = {&s3_op_create_bucket, "PUT", MUST, NO, MAY, NO, .need_header = NULL},
    [RDMA_OP_DELETE_BUCKET] = {&s3_op_delete_bucket, "DELETE", MUST, NO, NO, NO,
                               .need_header = NULL},
    [RDMA_OP_HEAD_BUCKET] = {&s3_op_head_bucket, "HEAD", MUST, NO, NO, NO, .need_header = NULL},
    [RDMA_OP_LIST_BUCKETS] = {&s3_op_list_buckets, "GET", NO, NO, NO, MAY,
                              .may_query = list_buckets_q},
    [RDMA_OP_CREATE_MPU] = {&s3_op_create_mpu, "POST", MUST, MUST, NO, MAY, .may_query = uploads_q},
    [RDMA_OP_UPLOAD_PART] = {&s3_op_upload_part, "PUT", MUST, MUST, MAY, NO, .need_query = part_q},
    [RDMA_OP_COMPLETE_MPU] = {&s3_op_complete_mpu, "POST", MUST, MUST, MUST, MAY,
                              .need_query = upload_q},
    [RDMA_OP_ABORT_MPU] = {&s3_op_abort_mpu, "DELETE", MUST, MUST, NO, NO, .need_query = upload_q},
    [RDMA_OP_LIST_PARTS] = {&s3_op_list_parts, "GET", MUST, MUST, NO, MAY, .need_query = upload_q,
                            .may_query = list_parts_q},
    [RDMA_OP_LIST_MPU] = {&s3_op_list_mpu, "GET", MUST, NO, NO, MAY, .may_query = list_mpu_q},
    [RDMA_OP_UPLOAD_PART_COPY] = {&s3_op_upload_part_copy, "PUT", MUST, MUST, NO, MAY,
                                  .need_header = "x-amz-copy-source", .need_query = part_q},
    [RDMA_OP_GET_BUCKET_LOCATION] = {&s3_op_get_bucket_location, "GET", MUST, NO, NO, MAY,
                                     .may_query = location_q},
    [RDMA_OP_LIST_OBJECT_VERSIONS] = {&s3_op_list_object_versions, "GET", MUST, NO, NO, MAY,
                                      .may_query = list_versions_q},
    /* An object's configuration: of its current version, or of versionId's. */
    [RDMA_OP_GET_OBJECT_TAGGING] = {&s3_op_get_object_tagging, "GET", MUST, MUST, NO, MAY,
                                    .need_query = tagging_q, .may_query = version_q},
    [RDMA_OP_PUT_OBJECT_TAGGING] = {&s3_op_put_object_tagging, "PUT", MUST, MUST, MUST, NO,
                                    .need_query = tagging_q, .may_query = version_q},
    [RDMA_OP_DELETE_OBJECT_TAGGING] = {&s3_op_delete_object_tagging, "DELETE", MUST, MUST, NO, NO,
                                       .need_query = tagging_q, .may_query = version_q},
    [RDMA_OP_GET_OBJECT_RETENTION] = {&s3_op_get_object_retention, "GET", MUST, MUST, NO, MAY,
                                      .need_query = retention_q, .may_query = version_q},
    [RDMA_OP_PUT_OBJECT_RETENTION] = {&s3_op_put_object_retention, "PUT", MUST, MUST, MUST, NO,
                                      .need_query = retention_q, .may_query = version_q},
    [RDMA_OP_GET_OBJECT_LEGAL_HOLD] = {&s3_op_get_object_legal_hold, "GET", MUST, MUST, NO, MAY,
                                       .need_query = legal_hold_q, .may_query = version_q},
    [RDMA_OP_PUT_OBJECT_LEGAL_HOLD] = {&s3_op_put_object_legal_hold, "PUT", MUST, MUST, MUST, NO,
                                       .need_query = legal_hold_q, .may_query = version_q},
    [RDMA_OP_GET_OBJECT_ACL] = {&s3_op_get_object_acl, "GET", MUST, MUST, NO, MAY,
                                .need_query = acl_q, .may_query = version_q},
    /* An ACL is set by an AccessControlPolicy body or by x-amz-acl /
     * x-amz-grant-* headers alone, as over HTTP. */
    [RDMA_OP_PUT_OBJECT_ACL] = {&s3_op_put_object_acl, "PUT", MUST, MUST, MAY, NO,
                                .need_query = acl_q, .may_query = version_q},
    /* A bucket's configuration. */
    [RDMA_OP_GET_BUCKET_VERSIONING] = {&s3_op_get_bucket_versioning, "GET", MUST, NO, NO, MAY,
                                       .need_query = versioning_q},
    [RDMA_OP_PUT_BUCKET_VERSIONING] = {&s3_op_put_bucket_versioning, "PUT", MUST, NO, MUST, NO,
                                       .need_query = versioning_q},
    [RDMA_OP_GET_BUCKET_LIFECYCLE] = {&s3_op_get_bucket_lifecycle, "GET", MUST, NO, NO, MAY,
                                      .need_query = lifecycle_q},
    [RDMA_OP_PUT_BUCKET_LIFECYCLE] = {&s3_op_put_bucket_lifecycle, "PUT", MUST, NO, MUST, NO,
                                      .need_query = lifecycle_q},
    [RDMA_OP_DELETE_BUCKET_LIFECYCLE] = {&s3_op_delete_bucket_lifecycle, "DELETE", MUST, NO, NO, NO,
                                         .need_query = lifecycle_q},
    [RDMA_OP_GET_OBJECT_LOCK_CONFIG] = {&s3_op_get_object_lock_config, "GET", MUST, NO, NO, MAY,
                                        .need_query = object_lock_q},
    [RDMA_OP_PUT_OBJECT_LOCK_CONFIG] = {&s3_op_put_object_lock_config, "PUT", MUST, NO, MUST, NO,
                                        .need_query = object_lock_q},
    [RDMA_OP_GET_BUCKET_TAGGING] = {&s3_op_get_bucket_tagging, "GET", MUST, NO, NO, MAY,
                                    .need_query = tagging_q},
    [RDMA_OP_PUT_BUCKET_TAGGING] = {&s3_op_put_bucket_tagging, "PUT", MUST, NO, MUST, NO,
                                    .need_query = tagging_q},
    [RDMA_OP_DELETE_BUCKET_TAGGING] = {&s3_op_delete_bucket_tagging, "DELETE", MUST, NO, NO, NO,
                                       .need_query = tagging_q},
    [RDMA_OP_GET_BUCKET_POLICY] = {&s3_op_get_bucket_policy, "GET", MUST, NO, NO, MAY,
                                   .need_query = policy_q},
    [RDMA_OP_PUT_BUCKET_POLICY] = {&s3_op_put_bucket_policy, "PUT", MUST, NO, MUST, NO,
                                   .need_query = policy_q},
    [RDMA_OP_DELETE_BUCKET_POLICY] = {&s3_op_delete_bucket_policy, "DELETE", MUST, NO, NO, NO,
                                      .need_query = policy_q},
    [RDMA_OP_GET_BUCKET_CORS] = {&s3_op_get_bucket_cors, "GET", MUST, NO, NO, MAY,
                                 .need_query = cors_q},
    [RDMA_OP_PUT_BUCKET_CORS] = {&s3_op_put_bucket_cors, "PUT", MUST, NO, MUST, NO,
                                 .need_query = cors_q},
    [RDMA_OP_DELETE_BUCKET_CORS] = {&s3_op_delete_bucket_cors, "DELETE", MUST, NO, NO, NO,
                                    .need_query = cors_q},
    [RDMA_OP_GET_BUCKET_ENCRYPTION] = {&s3_op_get_bucket_encryption, "GET", MUST, NO, NO, MAY,
                                       .need_query = encryption_q},
    [RDMA_OP_PUT_BUCKET_ENCRYPTION] = {&s3_op_put_bucket_encryption, "PUT", MUST, NO, MUST, NO,
                                       .need_query = encryption_q},
    [RDMA_OP_DELETE_BUCKET_ENCRYPTION] = {&s3_op_delete_bucket_encryption, "DELETE", MUST, NO, NO,
                                          NO, .need_query = encryption_q},
    [RDMA_OP_GET_BUCKET_ACL] = {&s3_op_get_bucket_acl, "GET", MUST, NO, NO, MAY,
                                .need_query = acl_q},
    [RDMA_OP_PUT_BUCKET_ACL] = {&s3_op_put_bucket_acl, "PUT", MUST, NO, MAY, NO,
                                .need_query = acl_q},
};

/* ---- reading the request ------------------------------------------------------ */

static const char *native_header(s3_req_t *req, const char *name)
{
    native_req_t *q = (native_req_t *)req;
    /* The length is the body's, as the message frames it; a token belongs
     * to the token path only. */
    if (strcasecmp(name, "content-length") == 0)
        return q->content_length;
    if (strcasecmp(name, "x-amz-rdma-token") == 0)
        return NULL;
    for (unsigned i = 0; i < q->m->n_params; i++) {
        const rdma_native_param_t *p = &q->m->params[i];
        if (p->kind == RDMA_PARAM_HEADER && strcasecmp(p->name, name) == 0)
            return p->value;
    }
    return NULL;
}

static void native_each_header(s3_req_t *req, s3_header_fn fn, void *ctx)
{
    native_req_t *q = (native_req_t *)req;
    if (fn(ctx, "content-length", q->content_length))
        return;
    for (unsigned i = 0; i < q->m->n_params; i++) {
        const rdma_native_param_t *p = &q->m->params[i];
        if (p->kind == RDMA_PARAM_HEADER && strcasecmp(p->name, "content-length") != 0 &&
            strcasecmp(p->name, "x-amz-rdma-token") != 0 && fn(ctx, p->name, p->value))
            return;
    }
}

static const char *native_query(s3_req_t *req, const char *name)
{
    native_req_t *q = (native_req_t *)req;
    for (unsigned i = 0; i < q->m->n_params; i++) {
        const rdma_native_param_t *p = &q->m->params[i];
        if (p->kind == RDMA_PARAM_QUERY && strcmp(p->name, name) == 0)
            return p->value;
    }
    return NULL;
}

static bool native_has_query(s3_req_t *req, const char *name)
{
    return native_query(req, name) != NULL;
}

/* ---- the reply ---------------------------------------------------------------- */

typedef struct out_source {
    const s3_out_t *out;
} out_source_t;

static int out_fill(void *ctx, void *dst, size_t len, uint64_t off)
{
    const s3_out_t *out = ((out_source_t *)ctx)->out;
    if (out->kind == S3_OUT_BUFFER) {
        memcpy(dst, out->data + off, len);
        return 0;
    }
    ssize_t n = stor_reader_pread(out->reader, dst, len, out->first + off);
    return n == (ssize_t)len ? 0 : -1;
}

/* A held reply's write is settled (s3_req_await_durable): the reply goes,
 * or a 500 instead. */
static void reply_durable(void *arg, stor_status_t st)
{
    rdma_native_held_t *h = arg;
    if (st == STOR_OK)
        rdma_native_held_send(h);
    else
        rdma_native_held_fail(h, "The write was not made durable (the server's disk failed); it "
                                 "may or may not be kept.");
}

/* The reply: sent now, or, for a success that acknowledges a write not yet
 * durable (req->durable_ticket), made now and held until the write is
 * (docs/architecture.md, "Durable later"): the executor goes on to the next
 * request meanwhile. */
static rdma_status_t reply(native_req_t *q, int status, uint64_t body, out_source_t *src)
{
    s3_req_t *req = &q->req;
    if (!req->durable_ticket || status < 200 || status > 299) {
        req->durable_ticket = 0; /* nothing to wait for, or an error, final now */
        return rdma_native_reply(q->nr, status, req->request_id, req->reply_headers.data,
                                 req->reply_headers.len, body, out_fill, src);
    }
    rdma_native_held_t *h;
    rdma_status_t st =
        rdma_native_reply_held(q->nr, status, req->request_id, req->reply_headers.data,
                               req->reply_headers.len, body, out_fill, src, &h);
    if (st == RDMA_OK)
        s3_req_await_durable(req, reply_durable, h); /* takes the ticket */
    else
        req->durable_ticket = 0; /* native_send answers with an error instead */
    return st;
}

static void native_send(s3_req_t *req, int status, s3_out_t *out)
{
    native_req_t *q = (native_req_t *)req;
    uint64_t body = out->kind == S3_OUT_BUFFER   ? out->len
                    : out->kind == S3_OUT_OBJECT ? out->obj_len
                                                 : 0;
    if (out->kind != S3_OUT_EMPTY)
        s3_reply_headerf(req, "Content-Length", "%" PRIu64, body);
    if (s3_req_is_head(req))
        body = 0;
    out_source_t src = {out};
    rdma_status_t st = reply(q, status, body, &src);
    if (out->kind == S3_OUT_OBJECT)
        stor_reader_close(out->reader);
    free(out->data);
    out->data = NULL;
    out->reader = NULL;
    req->replied = true;
    if (st == RDMA_OK || q->answering_failure)
        return; /* a failed error reply stays unanswered: the RDMA layer answers 500 */
    /* Nothing was sent: answer with the error instead. An error reply is
     * small and travels inline whatever the client asked for (rdma_native_reply),
     * and this path runs once: the error's own send never comes back here. */
    q->answering_failure = true;
    buf_reset(&req->reply_headers);
    if (st == RDMA_OUT_OF_BOUNDS) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "The reply needs %" PRIu64 " bytes: more than travel inline (%" PRIu64
                 ") and than the out region holds (%" PRIu64 ").",
                 body, rdma_native_inline_max(q->nr), rdma_native_out_len(q->nr));
        s3_reply_headerf(req, "x-amz-rdma-bytes-needed", "%" PRIu64, body);
        s3_reply_error(req, S3E_TOKEN_BUFFER_TOO_SMALL, msg);
    } else {
        const char *why = rdma_strerror(st);
        s3_error_t err = rdmafe_s3_error(st, &why);
        s3_reply_error(req, err != S3E_NONE ? err : S3E_INTERNAL, why);
    }
}

static void native_remote(s3_req_t *req, char *out, size_t cap)
{
    snprintf(out, cap, "%s", rdma_native_peer(((native_req_t *)req)->nr));
}

static const s3_frontend_t native_frontend = {
    .transport = S3_TRANSPORT_NATIVE,
    .remote = native_remote,
    .header = native_header,
    .each_header = native_each_header,
    .query = native_query,
    .has_query = native_has_query,
    .send = native_send,
    .durable_later = true,
};

/* ---- running a request ----------------------------------------------------------- */

static int body_sink(void *ctx, const void *data, size_t len)
{
    s3_req_t *req = ctx;
    s3_body_feed(req, data, len);
    return req->body_error == S3E_NONE ? 0 : -1;
}

static bool param_listed(const char *const *names, const char *name)
{
    for (size_t i = 0; names && names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* Whether params[i] repeats an earlier param of its kind (header names
 * without regard to case, as HTTP's). */
static bool param_repeated(const rdma_native_msg_t *m, unsigned i)
{
    const rdma_native_param_t *p = &m->params[i];
    for (unsigned k = 0; k < i; k++) {
        const rdma_native_param_t *o = &m->params[k];
        if (o->kind == p->kind && (p->kind == RDMA_PARAM_HEADER ? strcasecmp(o->name, p->name)
                                                                : strcmp(o->name, p->name)) == 0)
            return true;
    }
    return false;
}

/* Holds the request to its opcode's row of native_ops (and the names to
 * what HTTP's routing checks). S3E_NONE, or the error with its message
 * written into why. */
static s3_error_t check_request(native_req_t *q, const struct native_op *op, char *why, size_t cap)
{
    s3_req_t *req = &q->req;
    const rdma_native_msg_t *m = q->m;
    const char *name = op->op->name;
    if ((op->bucket == MUST && !req->bucket) || (op->bucket == NO && req->bucket)) {
        snprintf(why, cap, "%s %s bucket.", name, req->bucket ? "takes no" : "needs a");
        return S3E_INVALID_REQUEST;
    }
    if ((op->key == MUST && !req->key) || (op->key == NO && req->key)) {
        snprintf(why, cap, "%s %s key.", name, req->key ? "takes no" : "needs a");
        return S3E_INVALID_REQUEST;
    }
    s3_error_t err = s3_key_check(req->key);
    if (err != S3E_NONE)
        return err;
    if (op->body == NO && m->body_kind != RDMA_BODY_NONE) {
        snprintf(why, cap, "%s takes no request body.", name);
        return S3E_INVALID_REQUEST;
    }
    if (op->body == MUST && m->body_kind == RDMA_BODY_NONE) {
        snprintf(why, cap, "%s needs a request body.", name);
        return S3E_MALFORMED_XML;
    }
    if (op->out == NO && m->has_out) {
        snprintf(why, cap, "The reply to %s has no body: the request names no out span.", name);
        return S3E_INVALID_REQUEST;
    }
    for (unsigned i = 0; i < m->n_params; i++) {
        const rdma_native_param_t *p = &m->params[i];
        bool query = p->kind == RDMA_PARAM_QUERY;
        /* Names go into the message only once they are known tokens. */
        if (!s3_field_name_ok(p->name)) {
            snprintf(why, cap, "A %s name is not an HTTP token.",
                     query ? "query parameter" : "header");
            return S3E_INVALID_ARGUMENT;
        }
        if (!query && !s3_field_value_ok(p->value)) {
            snprintf(why, cap,
                     "The value of header %.128s is not a well-formed HTTP field value (visible "
                     "characters, with spaces and tabs only inside).",
                     p->name);
            return S3E_INVALID_ARGUMENT;
        }
        if (!query && strcasecmp(p->name, "x-amz-copy-source") == 0 &&
            !(op->need_header && strcmp(op->need_header, "x-amz-copy-source") == 0)) {
            /* Over HTTP this header makes a PUT a copy: a handler that
             * would ignore it must not see it. */
            snprintf(why, cap, "%s takes no x-amz-copy-source header.", name);
            return S3E_INVALID_ARGUMENT;
        }
        if (param_repeated(m, i)) {
            snprintf(why, cap, "The %s %.128s is given twice.",
                     query ? "query parameter" : "header", p->name);
            return S3E_INVALID_ARGUMENT;
        }
        if (query && strcmp(p->name, "x-id") != 0 && !param_listed(op->need_query, p->name) &&
            !param_listed(op->may_query, p->name)) {
            snprintf(why, cap, "%s takes no query parameter %.128s.", name, p->name);
            return S3E_INVALID_ARGUMENT;
        }
    }
    if (op->need_header && !native_header(req, op->need_header)) {
        snprintf(why, cap, "%s needs the %s header.", name, op->need_header);
        return S3E_INVALID_ARGUMENT;
    }
    for (size_t i = 0; op->need_query && op->need_query[i]; i++) {
        if (!native_query(req, op->need_query[i])) {
            snprintf(why, cap, "%s needs the %s query parameter.", name, op->need_query[i]);
            return S3E_INVALID_ARGUMENT;
        }
    }
    return S3E_NONE;
}

/* Takes in the request body (inline or by RDMA), then finishes. */
static void run_body(native_req_t *q)
{
    s3_req_t *req = &q->req;
    if (req->body_kind == S3_BODY_NONE) {
        if (q->m->body_kind != RDMA_BODY_NONE)
            s3_reply_error(req, S3E_INVALID_REQUEST, "This operation takes no request body.");
        else
            s3_req_finish(req);
        return;
    }
    rdma_status_t st = rdma_native_body(q->nr, body_sink, req);
    if (st == RDMA_OK || st == RDMA_CALLBACK) {
        s3_req_finish(req); /* a sink failure is in req->body_error: finish replies it */
        return;
    }
    const char *why = "Reading the body by RDMA failed.";
    s3_error_t err = rdmafe_s3_error(st, &why);
    s3_reply_error(req, err != S3E_NONE ? err : S3E_INTERNAL, why);
}

void rdmafe_native_handle(void *ctx, rdma_native_req_t *nr)
{
    s3_server_t *srv = ctx;
    const rdma_native_msg_t *m = rdma_native_request(nr);
    const struct native_op *op = &native_ops[m->head.opcode];
    native_req_t *q = calloc(1, sizeof(*q));
    if (!q)
        return; /* unanswered: the RDMA layer replies InternalError */
    q->nr = nr;
    q->m = m;
    /* "0" without a body: a PUT of no bytes has a length, as over HTTP. */
    snprintf(q->content_length, sizeof(q->content_length), "%" PRIu64, m->body_len);
    s3_req_t *req = &q->req;
    s3_req_init(req, srv, &native_frontend, op->method);
    req->bucket = m->bucket[0] ? strdup(m->bucket) : NULL;
    req->key = m->key[0] ? strdup(m->key) : NULL;
    req->resource = s3_resource_path(req->bucket, req->key);
    req->user = s3_user_find(srv, rdma_native_access_key(nr));
    req->payload_mode = S3_PAYLOAD_UNSIGNED;
    req->op = op->op;
    uint64_t out_len = rdma_native_out_len(nr), inl = rdma_native_inline_max(nr);
    req->reply_room = out_len > inl ? out_len : inl;
    char why[256] = "";
    s3_error_t err = (m->bucket[0] && !req->bucket) || (m->key[0] && !req->key) || !req->resource
                         ? S3E_INTERNAL
                     : !req->user ? S3E_INVALID_ACCESS_KEY
                                  : check_request(q, op, why, sizeof(why));
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why[0] ? why : NULL);
    } else if (atomic_load(&srv->stopping)) {
        s3_reply_error(req, S3E_SERVICE_UNAVAILABLE, NULL);
    } else {
        s3_req_start(req);
        if (!req->replied)
            run_body(q);
    }
    s3_req_release(req);
    free(q);
}
