/* The HTTP frontend (libmicrohttpd): the access handler state machine,
 * routing, and the s3_frontend_t that reads requests from and sends replies
 * to libmicrohttpd. The daemons and their connections are http_listen.c's,
 * the server's own pages own_pages.c's; replies are built in reply.c, the
 * request's life is request.c's, operation logic lives in ops_*.c. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/addr.h"
#include "common/log.h"
#include "s3/connguard.h"
#include "s3/http_frontend.h"
#include "s3/own_pages.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "rdma/rdma_wire.h"

/* Query parameters S3 clients send that are not sub-resources; a request
 * with any parameter outside this list and outside the sub-resources we
 * implement names an operation we do not have, and gets 501. */
static const char *const plain_params[] = {
    "prefix",
    "delimiter",
    "marker",
    "max-keys",
    "max-buckets",
    "bucket-region",
    "encoding-type",
    "list-type",
    "continuation-token",
    "start-after",
    "fetch-owner",
    "key-marker",
    "upload-id-marker",
    "max-uploads",
    "max-parts",
    "part-number-marker",
    "partNumber",
    "uploadId",
    "x-id",
    "versionId",
    S3_RESPONSE_OVERRIDES(S3_RESPONSE_OVERRIDE_NAME) "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
    "X-Amz-Security-Token",
    "X-Amz-Content-Sha256",
    "x-amz-checksum-mode",
    "uploads",
    "delete",
    "location",
    "versions",
    "version-id-marker",
    "versioning",
    "acl",
    "policy",
    "policyStatus",
    "publicAccessBlock",
    "ownershipControls",
    "cors",
    "tagging",
    "attributes",
    "lifecycle",
    "object-lock",
    "retention",
    "legal-hold",
    "encryption",
    "optionalObjectAttributes",
    "AWSAccessKeyId",
    "Signature",
    "Expires", /* SigV2 presigned (auth_v2.c) */
};

typedef struct query_cache {
    const char *name; /* the caller's: query names are string literals */
    char *value;
} query_cache_t;

typedef struct req_private {
    s3_req_t req;
    query_cache_t queries[32];
    int n_queries;
    struct MHD_Connection *conn;
    http_conn_t *hc; /* NULL when the connection could not be tracked */
} req_private_t;

static struct MHD_Connection *mhd_conn(s3_req_t *req)
{
    return ((req_private_t *)req)->conn;
}

/* ---- lookups ---------------------------------------------------------------- */

static const char *http_header(s3_req_t *req, const char *name)
{
    return MHD_lookup_connection_value(mhd_conn(req), MHD_HEADER_KIND, name);
}

typedef struct header_walk {
    s3_header_fn fn;
    void *ctx;
} header_walk_t;

static enum MHD_Result walk_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    header_walk_t *hw = cls;
    return hw->fn(hw->ctx, key, value ? value : "") ? MHD_NO : MHD_YES;
}

static void http_each_header(s3_req_t *req, s3_header_fn fn, void *ctx)
{
    header_walk_t hw = {.fn = fn, .ctx = ctx};
    MHD_get_connection_values(mhd_conn(req), MHD_HEADER_KIND, walk_header, &hw);
}

typedef struct query_walk {
    s3_query_fn fn;
    void *ctx;
} query_walk_t;

static enum MHD_Result walk_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                  const char *value)
{
    (void)kind;
    query_walk_t *qw = cls;
    return qw->fn(qw->ctx, key, value) ? MHD_NO : MHD_YES;
}

/* The listeners keep the query escaped (http_listen.c): values are raw. */
static void http_each_raw_query(s3_req_t *req, s3_query_fn fn, void *ctx)
{
    query_walk_t qw = {.fn = fn, .ctx = ctx};
    MHD_get_connection_values(mhd_conn(req), MHD_GET_ARGUMENT_KIND, walk_query, &qw);
}

static bool http_has_query(s3_req_t *req, const char *name)
{
    const char *v;
    size_t vlen;
    return MHD_lookup_connection_value_n(mhd_conn(req), MHD_GET_ARGUMENT_KIND, name, strlen(name),
                                         &v, &vlen) == MHD_YES;
}

static const char *http_query(s3_req_t *req, const char *name)
{
    req_private_t *rp = (req_private_t *)req;
    for (int i = 0; i < rp->n_queries; i++) {
        if (strcmp(rp->queries[i].name, name) == 0)
            return rp->queries[i].value;
    }
    const char *raw;
    size_t raw_len;
    if (MHD_lookup_connection_value_n(mhd_conn(req), MHD_GET_ARGUMENT_KIND, name, strlen(name),
                                      &raw, &raw_len) != MHD_YES)
        return NULL;
    if (rp->n_queries == (int)(sizeof(rp->queries) / sizeof(rp->queries[0])))
        return NULL;
    char *value = raw ? s3_url_decode(raw, raw_len, true) : strdup("");
    if (!value)
        return NULL;
    rp->queries[rp->n_queries].name = name;
    rp->queries[rp->n_queries].value = value;
    return rp->queries[rp->n_queries++].value;
}

/* ---- the frontend: form bodies -------------------------------------------------- */

#define HTTP_FORM_BUFFER (16 * 1024) /* the post processor's buffer for field values */

/* A form body, parsed by libmicrohttpd's post processor. */
struct s3_form {
    struct MHD_PostProcessor *pp;
    s3_form_fn fn;
    void *ctx;
};

static enum MHD_Result form_data(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
    (void)kind;
    (void)content_type;
    (void)transfer_encoding;
    s3_form_t *form = cls;
    return form->fn(form->ctx, key, filename, data, off, size) ? MHD_NO : MHD_YES;
}

static s3_form_t *http_form_open(s3_req_t *req, s3_form_fn fn, void *ctx)
{
    s3_form_t *form = calloc(1, sizeof(*form));
    if (!form)
        return NULL;
    form->fn = fn;
    form->ctx = ctx;
    form->pp = MHD_create_post_processor(mhd_conn(req), HTTP_FORM_BUFFER, form_data, form);
    if (!form->pp) {
        free(form);
        return NULL;
    }
    return form;
}

static int http_form_feed(s3_form_t *form, const char *data, size_t len)
{
    return MHD_post_process(form->pp, data, len) == MHD_YES ? 0 : -1;
}

static int http_form_close(s3_form_t *form)
{
    enum MHD_Result ok = MHD_destroy_post_processor(form->pp);
    free(form);
    return ok == MHD_YES ? 0 : -1;
}

/* ---- the frontend: replies ------------------------------------------------------ */

/* Streams an object range out of a multi-file object. */
typedef struct object_stream {
    stor_reader_t *reader;
    uint64_t first;
    uint64_t len;
} object_stream_t;

static ssize_t object_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    object_stream_t *os = cls;
    if (pos >= os->len)
        return MHD_CONTENT_READER_END_OF_STREAM;
    if (max > os->len - pos)
        max = (size_t)(os->len - pos);
    ssize_t n = stor_reader_pread(os->reader, buf, max, os->first + pos);
    if (n <= 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n;
}

static void object_stream_free(void *cls)
{
    object_stream_t *os = cls;
    stor_reader_close(os->reader);
    free(os);
}

#define S3_TLS_INLINE_BODY (64 * 1024) /* object bytes read into one buffer over TLS */

/* A response for bytes [first, first+len) of reader (len > 0), which it
 * takes over. For HEAD the reader-backed response only gives libmicrohttpd
 * the Content-Length: it sends no body for HEAD. */
static struct MHD_Response *object_response(s3_req_t *req, stor_reader_t *reader, uint64_t first,
                                            uint64_t len)
{
    struct MHD_Response *resp = NULL;
    int fd;
    uint64_t file_off;
    /* Over TLS there is no sendfile(): libmicrohttpd would copy a descriptor's
     * bytes through the connection's small memory pool a few KiB at a time,
     * while a callback response has a buffer of its own (256 KiB). */
    bool tls = ((req_private_t *)req)->hc && ((req_private_t *)req)->hc->cert;
    if (!s3_req_is_head(req) && !tls &&
        stor_reader_span_fd(reader, first, len, &fd, &file_off) == 1) {
        /* One file: let MHD sendfile() it from a descriptor of its own. */
        int dupfd = dup(fd);
        stor_reader_close(reader);
        if (dupfd >= 0)
            resp = MHD_create_response_from_fd_at_offset64(len, dupfd, file_off);
    } else if (tls && !s3_req_is_head(req) && len <= S3_TLS_INLINE_BODY) {
        /* Small over TLS: one buffer, which libmicrohttpd sends in the
         * same write as the head. */
        char *body = malloc((size_t)len);
        if (body && stor_reader_pread(reader, body, (size_t)len, first) == (ssize_t)len)
            resp = MHD_create_response_from_buffer((size_t)len, body, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(body);
        stor_reader_close(reader);
    } else {
        object_stream_t *os = malloc(sizeof(*os));
        if (os) {
            os->reader = reader;
            os->first = first;
            os->len = len;
            /* The block is allocated with the response: no bigger than the range. */
            size_t block = len < 256 * 1024 ? (size_t)len : 256 * 1024;
            resp = MHD_create_response_from_callback(len, block, object_stream_read, os,
                                                     object_stream_free);
            if (!resp)
                object_stream_free(os);
        } else {
            stor_reader_close(reader);
        }
    }
    return resp;
}

/* The response carrying out, which it takes over; NULL when none could be
 * created. */
static struct MHD_Response *out_response(s3_req_t *req, s3_out_t *out)
{
    struct MHD_Response *resp = NULL;
    switch (out->kind) {
    case S3_OUT_EMPTY:
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        break;
    case S3_OUT_BUFFER:
        resp = MHD_create_response_from_buffer(out->len, out->data, MHD_RESPMEM_MUST_FREE);
        if (!resp)
            free(out->data);
        break;
    case S3_OUT_OBJECT:
        resp = object_response(req, out->reader, out->first, out->obj_len);
        break;
    }
    return resp;
}

/* The RDMA session endpoint to name to this request's client, or NULL. */
static const char *rdma_endpoint_for(req_private_t *rp)
{
    const s3_server_config_t *c = &rp->req.srv->cfg;
    if (!c->rdma_advertise || !rp->req.user)
        return NULL; /* no session port, or an anonymous client */
    if (*c->rdma_advertise)
        return c->rdma_advertise;
    http_conn_t *hc = rp->hc;
    if (!hc)
        return NULL;
    if (!hc->rdma_endpoint[0]) {
        /* Listening on every address: the address this client reached. */
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        char ip[INET6_ADDRSTRLEN];
        if (getsockname(hc->fd, (struct sockaddr *)&ss, &len) != 0 ||
            addr_from_sockaddr((const struct sockaddr *)&ss, ip, sizeof(ip), NULL) != 0)
            return NULL;
        addr_format(hc->rdma_endpoint, sizeof(hc->rdma_endpoint), ip, c->rdma_advertise_port);
    }
    return hc->rdma_endpoint;
}

static void http_send(s3_req_t *req, int status, s3_out_t *out)
{
    struct MHD_Response *resp = out_response(req, out);
    if (!resp) {
        log_error("request %s: cannot create a response", req->request_id);
        req->replied = true;
        return;
    }
    MHD_add_response_header(resp, "Server", "s3rdma");
    MHD_add_response_header(resp, "x-amz-request-id", req->request_id);
    const char *rdma_ep = rdma_endpoint_for((req_private_t *)req);
    if (rdma_ep)
        MHD_add_response_header(resp, RDMA_ENDPOINT_HEADER, rdma_ep);
    /* Like the session endpoint, the other gateways are named only to a
     * client that proved its key: nobody else learns the cluster's layout. */
    if (req->srv->cfg.peers && req->user)
        MHD_add_response_header(resp, PEERS_HEADER, req->srv->cfg.peers);
    const char *h = req->reply_headers.data, *end = h + req->reply_headers.len;
    while (h && h < end) {
        const char *value = h + strlen(h) + 1;
        /* libmicrohttpd refuses an empty value; a lone space is the same
         * field on the wire (RFC 9110 §5.5: surrounding whitespace is not
         * part of a field value), e.g. x-amz-meta-k stored empty. */
        MHD_add_response_header(resp, h, *value ? value : " ");
        h = value + strlen(value) + 1;
    }
    if (atomic_load(&req->srv->stopping))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    if (MHD_queue_response(mhd_conn(req), (unsigned)status, resp) != MHD_YES)
        log_warn("request %s: could not queue the %d response", req->request_id, status);
    MHD_destroy_response(resp);
    req->replied = true;
}

static void http_remote(s3_req_t *req, char *out, size_t cap)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(mhd_conn(req), MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char ip[INET6_ADDRSTRLEN];
    int port;
    if (addr_from_sockaddr(ci ? ci->client_addr : NULL, ip, sizeof(ip), &port) != 0)
        snprintf(out, cap, "-");
    else
        addr_format(out, cap, ip, port);
}

static bool http_secure(s3_req_t *req)
{
    return ((req_private_t *)req)->hc && ((req_private_t *)req)->hc->cert;
}

static const s3_frontend_t http_frontend = {
    .transport = S3_TRANSPORT_HTTP,
    .remote = http_remote,
    .secure = http_secure,
    .header = http_header,
    .each_header = http_each_header,
    .query = http_query,
    .has_query = http_has_query,
    .each_raw_query = http_each_raw_query,
    .form_open = http_form_open,
    .form_feed = http_form_feed,
    .form_close = http_form_close,
    .send = http_send,
};

/* ---- routing ------------------------------------------------------------------- */

typedef struct query_scan {
    bool unknown;
    char unknown_name[64];
} query_scan_t;

static enum MHD_Result scan_query(void *cls, enum MHD_ValueKind kind, const char *key,
                                  size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)value;
    (void)value_size;
    query_scan_t *qs = cls;
    for (size_t i = 0; i < sizeof(plain_params) / sizeof(plain_params[0]); i++) {
        if (strlen(plain_params[i]) == key_size && memcmp(plain_params[i], key, key_size) == 0)
            return MHD_YES;
    }
    qs->unknown = true;
    snprintf(qs->unknown_name, sizeof(qs->unknown_name), "%.*s", (int)key_size, key);
    return MHD_NO;
}

/* Splits the virtual-host bucket off the Host header when it ends in one of
 * the configured domains ("photos.localhost:9000" -> "photos"). */
static char *vhost_bucket(s3_req_t *req)
{
    const char *host = s3_req_header(req, MHD_HTTP_HEADER_HOST);
    if (!host)
        return NULL;
    size_t len = strcspn(host, ":");
    for (size_t i = 0; i < req->srv->cfg.n_domains; i++) {
        const char *dom = req->srv->cfg.domains[i];
        size_t dlen = strlen(dom);
        if (len > dlen + 1 && host[len - dlen - 1] == '.' &&
            strncasecmp(host + len - dlen, dom, dlen) == 0) {
            return strndup(host, len - dlen - 1);
        }
    }
    return NULL;
}

/* Bucket subresources (?name) and the operation each method runs on them;
 * NULL: 405 MethodNotAllowed. The first subresource present decides. All
 * but ?uploads (CreateMultipartUpload) are the bucket's alone: on an object
 * they are not implemented. */
typedef struct bucket_subresource {
    const char *name;
    const s3_op_t *get, *put, *del;
} bucket_subresource_t;

static const bucket_subresource_t bucket_subresources[] = {
    {"uploads", &s3_op_list_mpu, NULL, NULL},
    {"location", &s3_op_get_bucket_location, NULL, NULL},
    {"versions", &s3_op_list_object_versions, NULL, NULL},
    {"versioning", &s3_op_get_bucket_versioning, &s3_op_put_bucket_versioning, NULL},
    {"acl", &s3_op_get_bucket_acl, &s3_op_put_bucket_acl, NULL},
    {"policy", &s3_op_get_bucket_policy, &s3_op_put_bucket_policy, &s3_op_delete_bucket_policy},
    {"policyStatus", &s3_op_get_bucket_policy_status, NULL, NULL},
    {"publicAccessBlock", &s3_op_get_public_access_block, &s3_op_put_public_access_block,
     &s3_op_delete_public_access_block},
    {"ownershipControls", &s3_op_get_bucket_ownership, &s3_op_put_bucket_ownership,
     &s3_op_delete_bucket_ownership},
    {"cors", &s3_op_get_bucket_cors, &s3_op_put_bucket_cors, &s3_op_delete_bucket_cors},
    {"tagging", &s3_op_get_bucket_tagging, &s3_op_put_bucket_tagging, &s3_op_delete_bucket_tagging},
    {"lifecycle", &s3_op_get_bucket_lifecycle, &s3_op_put_bucket_lifecycle,
     &s3_op_delete_bucket_lifecycle},
    {"object-lock", &s3_op_get_object_lock_config, &s3_op_put_object_lock_config, NULL},
    {"encryption", &s3_op_get_bucket_encryption, &s3_op_put_bucket_encryption,
     &s3_op_delete_bucket_encryption},
};

static s3_error_t route_bucket(s3_req_t *req, bool get, bool head, bool put, bool post, bool del)
{
    for (size_t i = 0; i < sizeof(bucket_subresources) / sizeof(bucket_subresources[0]); i++) {
        const bucket_subresource_t *sr = &bucket_subresources[i];
        if (!s3_req_has_query(req, sr->name))
            continue;
        req->op = get ? sr->get : put ? sr->put : del ? sr->del : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (get)
        req->op = &s3_op_list_objects;
    else if (head)
        req->op = &s3_op_head_bucket;
    else if (put)
        req->op = &s3_op_create_bucket;
    else if (del)
        req->op = &s3_op_delete_bucket;
    else if (post && s3_req_has_query(req, "delete"))
        req->op = &s3_op_delete_objects;
    else if (post)
        req->op = &s3_op_post_object; /* a browser form upload */
    else
        return S3E_METHOD_NOT_ALLOWED;
    return S3E_NONE;
}

static s3_error_t route(s3_req_t *req, const char *raw_url)
{
    const char *path = raw_url;
    if (*path != '/')
        return S3E_INVALID_REQUEST;
    char *decoded = s3_url_decode(path, strlen(path), false);
    if (!decoded)
        return S3E_INVALID_REQUEST;
    req->path = decoded;

    char *vbucket = vhost_bucket(req);
    if (vbucket) {
        req->bucket = vbucket;
        req->virtual_host = true;
        if (decoded[1] != '\0')
            req->key = strdup(decoded + 1);
    } else if (decoded[1] != '\0') {
        char *slash = strchr(decoded + 1, '/');
        if (slash) {
            req->bucket = strndup(decoded + 1, (size_t)(slash - decoded - 1));
            if (slash[1] != '\0')
                req->key = strdup(slash + 1);
        } else {
            req->bucket = strdup(decoded + 1);
        }
    }

    req->resource = s3_resource_path(req->bucket, req->key);

    s3_error_t err = s3_key_check(req->key);
    if (err != S3E_NONE)
        return err;

    query_scan_t qs = {0};
    MHD_get_connection_values_n(mhd_conn(req), MHD_GET_ARGUMENT_KIND, scan_query, &qs);
    if (qs.unknown)
        return S3E_NOT_IMPLEMENTED;

    const char *m = req->method;
    bool get = strcmp(m, "GET") == 0, head = strcmp(m, "HEAD") == 0;
    bool put = strcmp(m, "PUT") == 0, post = strcmp(m, "POST") == 0;
    bool del = strcmp(m, "DELETE") == 0;

    if (req->bucket && strcmp(m, "OPTIONS") == 0) {
        req->op = &s3_op_cors_preflight; /* a bucket's or an object's, whatever the query */
        return S3E_NONE;
    }
    if (!req->bucket) {
        if (get || head)
            req->op = &s3_op_list_buckets;
        else
            return S3E_METHOD_NOT_ALLOWED;
        return S3E_NONE;
    }
    if (!req->key)
        return route_bucket(req, get, head, put, post, del);
    bool upload_id = s3_req_has_query(req, "uploadId");
    bool copy = s3_req_header(req, "x-amz-copy-source") != NULL;
    if (s3_req_has_query(req, "acl")) {
        req->op = get ? &s3_op_get_object_acl : put ? &s3_op_put_object_acl : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "retention")) {
        req->op = get ? &s3_op_get_object_retention : put ? &s3_op_put_object_retention : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "legal-hold")) {
        req->op = get ? &s3_op_get_object_legal_hold : put ? &s3_op_put_object_legal_hold : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "attributes")) {
        req->op = get ? &s3_op_get_object_attributes : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    if (s3_req_has_query(req, "tagging")) {
        req->op = get   ? &s3_op_get_object_tagging
                  : put ? &s3_op_put_object_tagging
                  : del ? &s3_op_delete_object_tagging
                        : NULL;
        return req->op ? S3E_NONE : S3E_METHOD_NOT_ALLOWED;
    }
    /* The other subresources are the bucket's. */
    for (size_t i = 1; i < sizeof(bucket_subresources) / sizeof(bucket_subresources[0]); i++)
        if (s3_req_has_query(req, bucket_subresources[i].name))
            return S3E_NOT_IMPLEMENTED;
    if (get && upload_id)
        req->op = &s3_op_list_parts;
    else if (get)
        req->op = &s3_op_get_object;
    else if (head)
        req->op = &s3_op_head_object;
    else if (put && upload_id && s3_req_has_query(req, "partNumber"))
        req->op = copy ? &s3_op_upload_part_copy : &s3_op_upload_part;
    else if (put && !upload_id)
        req->op = copy ? &s3_op_copy_object : &s3_op_put_object;
    else if (del && upload_id)
        req->op = &s3_op_abort_mpu;
    else if (del)
        req->op = &s3_op_delete_object;
    else if (post && s3_req_has_query(req, "uploads"))
        req->op = &s3_op_create_mpu;
    else if (post && upload_id)
        req->op = &s3_op_complete_mpu;
    else
        return S3E_METHOD_NOT_ALLOWED;
    return S3E_NONE;
}

/* Which of the server's own endpoints url names, or NULL for an S3 path.
 * Health answers GET and HEAD, the others GET; /metrics only when enabled.
 * A virtual-host request (its Host names a bucket) is always S3's: its
 * path is a key. */
static const s3_op_t *own_endpoint(s3_req_t *req, const char *url)
{
    bool get = strcmp(req->method, "GET") == 0, head = strcmp(req->method, "HEAD") == 0;
    const s3_op_t *op = NULL;
    if (get && strcmp(url, S3_OWN_STATS_PATH) == 0)
        op = &s3_op_stats;
    else if (get && req->srv->cfg.metrics_enabled && strcmp(url, S3_OWN_METRICS_PATH) == 0)
        op = &s3_op_metrics;
    else if ((get || head) &&
             (strcmp(url, S3_OWN_HEALTH_LIVE) == 0 || strcmp(url, S3_OWN_HEALTH_READY) == 0))
        op = &s3_op_health;
    if (!op || op == &s3_op_stats)
        return op;
    char *vb = vhost_bucket(req);
    free(vb);
    return vb ? NULL : op;
}

/* ---- the access handler ---------------------------------------------------------- */

/* The server's own pages are no S3 resources: the path is the resource.
 * Health and metrics have their own access rules; the stats page is
 * authenticated like an S3 request and answers any configured user, never
 * an anonymous client. */
static s3_error_t route_own(s3_req_t *req, const s3_op_t *op, const char *url)
{
    req->op = op;
    req->path = strdup(url);
    req->resource = strdup(url);
    return req->path && req->resource ? S3E_NONE : S3E_INTERNAL;
}

static void start_request(s3_req_t *req, const char *url)
{
    const s3_op_t *own = own_endpoint(req, url);
    bool stats = own == &s3_op_stats;
    s3_error_t err = own ? route_own(req, own, url) : route(req, url);
    if (err == S3E_NONE && own == &s3_op_health) {
        s3_own_reply_health(req, url);
        return;
    }
    if (err == S3E_NONE && own == &s3_op_metrics) {
        s3_own_reply_metrics(req);
        return;
    }
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return;
    }
    const char *why = NULL;
    /* A form upload carries its credentials in the form, which has not
     * arrived yet: post_object.c verifies them from there. A CORS preflight
     * is never signed (browsers send none): anyone may ask, as in S3. */
    err = req->op == &s3_op_post_object || req->op == &s3_op_cors_preflight
              ? S3E_NONE
              : s3_auth_verify(req, &why);
    if (err == S3E_NONE && stats && !req->user)
        err = S3E_ACCESS_DENIED; /* the stats page answers configured users only */
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    if (stats)
        s3_own_reply_stats(req);
    else
        s3_req_start(req);
}

typedef struct length_scan {
    const char *first;
    bool conflict;
} length_scan_t;

static enum MHD_Result scan_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    (void)value_size;
    length_scan_t *ls = cls;
    if (key_size != 14 || strncasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH, 14) != 0)
        return MHD_YES;
    if (!ls->first)
        ls->first = value;
    else if (strcmp(ls->first, value) != 0)
        ls->conflict = true;
    return MHD_YES;
}

/* RFC 9112 §6.3: differing Content-Length headers make the framing
 * unknowable; such a request is refused and the connection closed. */
static bool conflicting_lengths(s3_req_t *req)
{
    length_scan_t ls = {0};
    MHD_get_connection_values_n(mhd_conn(req), MHD_HEADER_KIND, scan_length, &ls);
    return ls.conflict;
}

static bool request_has_body(s3_req_t *req)
{
    const char *cl = s3_req_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return s3_req_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
           (cl && strspn(cl, "0") != strlen(cl));
}

static http_conn_t *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result access_step(s3_server_t *srv, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls, http_conn_t *hc)
{
    s3_req_t *req = *con_cls;
    if (!req) {
        req_private_t *rp = calloc(1, sizeof(*rp));
        if (!rp)
            return MHD_NO;
        rp->hc = hc;
        req = &rp->req;
        rp->conn = conn;
        s3_req_init(req, srv, &http_frontend, method);
        *con_cls = req;
        /* Health answers while stopping: ready says 503 itself. */
        if (atomic_load(&srv->stopping) &&
            strncmp(url, S3_OWN_HEALTH_PREFIX, strlen(S3_OWN_HEALTH_PREFIX)) != 0) {
            s3_reply_error(req, S3E_SERVICE_UNAVAILABLE, NULL);
            return MHD_YES;
        }
        /* A response queued before libmicrohttpd has seen the end of the
         * request makes it close the connection. So a request without a body
         * is handled on the next call, keeping the connection alive; one with
         * a body is checked now, so a refused upload is refused before the
         * body is sent (no 100 Continue). */
        if (conflicting_lengths(req))
            s3_reply_error(req, S3E_INVALID_REQUEST, "Conflicting Content-Length headers.");
        else if (request_has_body(req))
            start_request(req, url);
        else
            req->deferred = true;
        return MHD_YES;
    }
    if (req->deferred) {
        req->deferred = false;
        start_request(req, url);
    }
    if (req->replied) {
        /* Discard the rest of a body we already answered. */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        /* libmicrohttpd accepts a response only before or after the body, so
         * an error found mid-body is remembered, the rest of the body (bounded
         * by Content-Length or the chunked framing) is discarded, and the
         * error is the reply. Nothing is committed either way. */
        if (req->body_kind == S3_BODY_NONE)
            req->body_error = S3E_INVALID_REQUEST;
        else
            s3_body_feed(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->body_kind == S3_BODY_NONE && req->body_error != S3E_NONE) {
        s3_reply_error(req, req->body_error, "This operation takes no request body.");
        return MHD_YES;
    }
    s3_req_finish(req);
    return MHD_YES;
}

enum MHD_Result s3_http_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    req_private_t *rp = *con_cls;
    bool first = rp == NULL;
    size_t fed = *upload_data_size;
    http_conn_t *hc = rp ? rp->hc : conn_of(conn);
    cg_conn_t *guard = hc ? hc->guard : NULL;
    uint64_t entered = connguard_enter(guard);
    connguard_body_bytes(guard, fed);
    enum MHD_Result r =
        access_step(cls, conn, url, method, upload_data, upload_data_size, con_cls, hc);
    /* libmicrohttpd calls again with body bytes unless this was the last call
     * (none fed after the first), a response is queued, or the request has no
     * body (deferred: called again at once). */
    rp = *con_cls;
    bool want_body =
        r == MHD_YES && rp && !rp->req.replied && (first ? !rp->req.deferred : fed > 0);
    connguard_leave(guard, entered, want_body);
    return r;
}

static void req_free(s3_req_t *req)
{
    req_private_t *rp = (req_private_t *)req;
    for (int i = 0; i < rp->n_queries; i++)
        free(rp->queries[i].value);
    s3_req_release(req);
    free(rp);
}

void s3_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                          enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    s3_req_t *req = *con_cls;
    http_conn_t *hc = req ? ((req_private_t *)req)->hc : conn_of(conn);
    connguard_request_done(hc ? hc->guard : NULL);
    if (!req)
        return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && !req->replied)
        log_info("request %s %s %s: connection ended before the request completed (%d)",
                 req->request_id, req->method, req->resource ? req->resource : "", (int)toe);
    req_free(req);
    *con_cls = NULL;
}
