/* The HTTP frontend (libmicrohttpd): the access handler state machine and
 * the s3_frontend_t that reads requests from and sends replies to
 * libmicrohttpd. Routing is http_router.c's, form bodies http_form.c's, the
 * daemons and their connections http_listen.c's, the server's own pages
 * http_own.c's; in src/s3, replies are built in reply.c, the request's life
 * is request.c's, operation logic lives in ops_*.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/addr.h"
#include "common/log.h"
#include "common/proto_headers.h"
#include "common/s3r_limits.h"
#include "http/http_guard.h"
#include "http/http_internal.h"
#include "http/http_own.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

/* ---- lookups ---------------------------------------------------------------- */

static const char *http_header(s3_req_t *req, const char *name)
{
    return MHD_lookup_connection_value(http_mhd_conn(req), MHD_HEADER_KIND, name);
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
    MHD_get_connection_values(http_mhd_conn(req), MHD_HEADER_KIND, walk_header, &hw);
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
    MHD_get_connection_values(http_mhd_conn(req), MHD_GET_ARGUMENT_KIND, walk_query, &qw);
}

static bool http_has_query(s3_req_t *req, const char *name)
{
    const char *v;
    size_t vlen;
    return MHD_lookup_connection_value_n(http_mhd_conn(req), MHD_GET_ARGUMENT_KIND, name,
                                         strlen(name), &v, &vlen) == MHD_YES;
}

static const char *http_query(s3_req_t *req, const char *name)
{
    http_req_t *rp = (http_req_t *)req;
    if (rp->held)
        MHD_destroy_response(rp->held); /* the client left before its body ended */
    for (int i = 0; i < rp->n_queries; i++) {
        if (strcmp(rp->queries[i].name, name) == 0)
            return rp->queries[i].value;
    }
    const char *raw;
    size_t raw_len;
    if (MHD_lookup_connection_value_n(http_mhd_conn(req), MHD_GET_ARGUMENT_KIND, name, strlen(name),
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

#define HTTP_TLS_INLINE_BODY (64 * 1024) /* object bytes read into one buffer over TLS */

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
    bool tls = ((http_req_t *)req)->hc && ((http_req_t *)req)->hc->cert;
    if (!s3_req_is_head(req) && !tls &&
        stor_reader_span_fd(reader, first, len, &fd, &file_off) == 1) {
        /* One file: let MHD sendfile() it from a descriptor of its own. */
        int dupfd = dup(fd);
        stor_reader_close(reader);
        if (dupfd >= 0)
            resp = MHD_create_response_from_fd_at_offset64(len, dupfd, file_off);
    } else if (tls && !s3_req_is_head(req) && len <= HTTP_TLS_INLINE_BODY) {
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
static const char *rdma_endpoint_for(http_req_t *rp)
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

/* True when an answer given now would race a body the client is already
 * sending: it did not ask "Expect: 100-continue" (then it waits for our
 * answer before sending) and the body is short enough to read and discard
 * first (S3R_HTTP_REFUSED_BODY_DRAIN). Answering mid-upload makes
 * libmicrohttpd close with unread bytes, and the client sees a reset in
 * place of the S3 error. */
static bool should_hold_answer(s3_req_t *req)
{
    if (!((http_req_t *)req)->body_pending || atomic_load(&req->srv->stopping))
        return false;
    const char *expect = s3_req_header(req, MHD_HTTP_HEADER_EXPECT);
    if ((expect && strcasecmp(expect, "100-continue") == 0) ||
        s3_req_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        return false;
    const char *cl = s3_req_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl || *cl < '0' || *cl > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long len = strtoull(cl, &end, 10);
    return *end == '\0' && errno == 0 && len <= S3R_HTTP_REFUSED_BODY_DRAIN;
}

static void queue_answer(s3_req_t *req, unsigned status, struct MHD_Response *resp)
{
    if (MHD_queue_response(http_mhd_conn(req), status, resp) != MHD_YES)
        log_warn("request %s: could not queue the %u response", req->request_id, status);
    MHD_destroy_response(resp);
}

static void http_send(s3_req_t *req, int status, s3_out_t *out)
{
    s3_cors_reply_headers(req);
    struct MHD_Response *resp = out_response(req, out);
    if (!resp) {
        log_error("request %s: cannot create a response", req->request_id);
        req->replied = true;
        return;
    }
    MHD_add_response_header(resp, "Server", "s3rdma");
    MHD_add_response_header(resp, "x-amz-request-id", req->request_id);
    const char *rdma_ep = rdma_endpoint_for((http_req_t *)req);
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
    req->replied = true;
    http_req_t *rp = (http_req_t *)req;
    if (should_hold_answer(req)) {
        rp->held = resp;
        rp->held_status = (unsigned)status;
        return;
    }
    queue_answer(req, (unsigned)status, resp);
}

static void http_remote(s3_req_t *req, char *out, size_t cap)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(http_mhd_conn(req), MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char ip[INET6_ADDRSTRLEN];
    int port;
    if (addr_from_sockaddr(ci ? ci->client_addr : NULL, ip, sizeof(ip), &port) != 0)
        snprintf(out, cap, "-");
    else
        addr_format(out, cap, ip, port);
}

static bool http_secure(s3_req_t *req)
{
    return ((http_req_t *)req)->hc && ((http_req_t *)req)->hc->cert;
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

/* A request carrying x-amz-rdma-token gets the token frontend over this
 * one (s3_token_frontend_t): its object bodies and objects move by RDMA. */
static s3_token_frontend_t http_token_frontend;
static pthread_once_t http_token_once = PTHREAD_ONCE_INIT;

static void http_token_init(void)
{
    s3_token_frontend_init(&http_token_frontend, &http_frontend);
}

static const s3_frontend_t *frontend_for(struct MHD_Connection *conn)
{
    if (!MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "x-amz-rdma-token"))
        return &http_frontend;
    pthread_once(&http_token_once, http_token_init);
    return &http_token_frontend.fe;
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
    const s3_op_t *own = http_own_endpoint(req, url);
    bool stats = own == &s3_op_stats;
    s3_error_t err = own ? route_own(req, own, url) : http_route(req, url);
    if (err == S3E_NONE && own == &s3_op_health) {
        http_own_reply_health(req, url);
        return;
    }
    if (err == S3E_NONE && own == &s3_op_metrics) {
        http_own_reply_metrics(req);
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
        http_own_reply_stats(req);
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
    MHD_get_connection_values_n(http_mhd_conn(req), MHD_HEADER_KIND, scan_length, &ls);
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
        http_req_t *rp = calloc(1, sizeof(*rp));
        if (!rp)
            return MHD_NO;
        rp->hc = hc;
        req = &rp->req;
        rp->conn = conn;
        s3_req_init(req, srv, frontend_for(conn), method);
        *con_cls = req;
        /* Health answers while stopping: ready says 503 itself. */
        if (atomic_load(&srv->stopping) &&
            strncmp(url, HTTP_OWN_HEALTH_PREFIX, strlen(HTTP_OWN_HEALTH_PREFIX)) != 0) {
            s3_reply_error(req, S3E_SERVICE_UNAVAILABLE, NULL);
            return MHD_YES;
        }
        /* A response queued before libmicrohttpd has seen the end of the
         * request makes it close the connection. So a request without a body
         * is handled on the next call, keeping the connection alive; one with
         * a body is checked now, so a refused upload is refused before the
         * body is sent (no 100 Continue), or, when the client sends it
         * without waiting, after it was read (should_hold_answer). */
        if (conflicting_lengths(req)) {
            s3_reply_error(req, S3E_INVALID_REQUEST, "Conflicting Content-Length headers.");
        } else if (request_has_body(req)) {
            rp->body_pending = true;
            start_request(req, url);
        } else
            req->deferred = true;
        return MHD_YES;
    }
    if (req->deferred) {
        req->deferred = false;
        start_request(req, url);
    }
    http_req_t *rp = (http_req_t *)req;
    if (*upload_data_size == 0)
        rp->body_pending = false; /* the call after the last body bytes */
    if (req->replied) {
        /* Discard the rest of a body we already answered; the answer held
         * for it goes once the body has all been read. */
        if (rp->held && !rp->body_pending) {
            queue_answer(req, rp->held_status, rp->held);
            rp->held = NULL;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        /* libmicrohttpd accepts a response only before or after the body, so
         * an error found mid-body is remembered, the rest of the body (bounded
         * by Content-Length or the chunked framing) is discarded, and the
         * error is the reply. Nothing is committed either way. */
        if (req->body_kind == S3_BODY_NONE || req->body_via_transport)
            req->body_error = S3E_INVALID_REQUEST;
        else
            s3_body_feed(req, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if ((req->body_kind == S3_BODY_NONE || req->body_via_transport) &&
        req->body_error != S3E_NONE) {
        s3_reply_error(req, req->body_error, "This operation takes no request body.");
        return MHD_YES;
    }
    s3_req_finish(req);
    return MHD_YES;
}

enum MHD_Result http_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    (void)version;
    http_req_t *rp = *con_cls;
    bool first = rp == NULL;
    size_t fed = *upload_data_size;
    http_conn_t *hc = rp ? rp->hc : conn_of(conn);
    http_guard_conn_t *guard = hc ? hc->guard : NULL;
    uint64_t entered = http_guard_enter(guard);
    http_guard_body_bytes(guard, fed);
    enum MHD_Result r =
        access_step(cls, conn, url, method, upload_data, upload_data_size, con_cls, hc);
    /* libmicrohttpd calls again with body bytes unless this was the last call
     * (none fed after the first), a response is queued, or the request has no
     * body (deferred: called again at once). */
    rp = *con_cls;
    bool want_body = r == MHD_YES && rp && (!rp->req.replied || rp->held) &&
                     (first ? !rp->req.deferred : fed > 0);
    http_guard_leave(guard, entered, want_body);
    return r;
}

static void req_free(s3_req_t *req)
{
    http_req_t *rp = (http_req_t *)req;
    if (rp->held)
        MHD_destroy_response(rp->held); /* the client left before its body ended */
    for (int i = 0; i < rp->n_queries; i++)
        free(rp->queries[i].value);
    s3_req_release(req);
    free(rp);
}

void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    s3_req_t *req = *con_cls;
    http_conn_t *hc = req ? ((http_req_t *)req)->hc : conn_of(conn);
    http_guard_request_done(hc ? hc->guard : NULL);
    if (!req)
        return;
    if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK && !req->replied)
        log_info("request %s %s %s: connection ended before the request completed (%d)",
                 req->request_id, req->method, req->resource ? req->resource : "", (int)toe);
    req_free(req);
    *con_cls = NULL;
}
