/* The HTTP module's private header, shared by its access handler
 * (http_frontend.c), router (http_router.c), form parser (http_form.c),
 * listeners (http_listen.c) and own pages (http_own.c): the server around
 * the S3 core, the per-connection state, the request, and the two
 * libmicrohttpd callbacks every daemon is started with. */
#ifndef S3R_HTTP_INTERNAL_H
#define S3R_HTTP_INTERNAL_H

#include <arpa/inet.h>
#include <microhttpd.h>

#include "http/http_guard.h"
#include "s3/s3_request.h"
#include "http/http_tls.h"

/* One libmicrohttpd daemon: plain HTTP, or HTTPS when tls is set. */
typedef struct http_listener {
    s3_server_t *srv;
    struct MHD_Daemon *daemon; /* NULL when this listener is off */
    http_tls_t *tls;           /* the certificate store (http_tls.h); NULL for plain HTTP */
} http_listener_t;

/* The HTTP server: the S3 core every frontend shares, and what HTTP
 * alone has. http_server_start returns &core, so every s3_server_t of a
 * request on this frontend, and every one the server's owner holds, is
 * one of these (http_server_of). */
typedef struct http_server {
    s3_server_t core; /* first */
    http_listener_t http, https;
    http_guard_t *guard; /* receive deadlines: http_guard.h */
} http_server_t;

static inline http_server_t *http_server_of(s3_server_t *srv)
{
    return (http_server_t *)srv;
}

/* What the server keeps per connection (libmicrohttpd's socket context). */
typedef struct http_conn {
    http_guard_conn_t *guard; /* the receive deadlines; NULL when untracked */
    http_tls_cert_t *cert;    /* HTTPS: the certificate generation held (http_tls.h) */
    int fd;                   /* the socket, for its local address */
    char rdma_endpoint[INET6_ADDRSTRLEN + 16]; /* advertised; "" until first needed */
} http_conn_t;

/* The access handler (MHD_AccessHandlerCallback); cls is the s3_server_t.
 * A connection's http_conn_t is its socket context, set by the listener's
 * connection notification (NULL when it could not be tracked). */
enum MHD_Result http_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls);

/* MHD_OPTION_NOTIFY_COMPLETED: frees the request, ends its connection guard
 * phase. */
void http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe);

typedef struct http_query_cache {
    const char *name; /* the caller's: query names are string literals */
    char *value;
} http_query_cache_t;

/* The HTTP frontend's request: the S3 request and what reading it from
 * libmicrohttpd takes. */
typedef struct http_req {
    s3_req_t req;
    http_query_cache_t queries[32];
    int n_queries;
    struct MHD_Connection *conn;
    http_conn_t *hc;   /* NULL when the connection could not be tracked */
    bool body_pending; /* a body was announced and has not all arrived */
    /* An answer given while the body is still on its way, held until the
     * body is read and discarded (S3R_HTTP_REFUSED_BODY_DRAIN). */
    struct MHD_Response *held;
    unsigned held_status;
} http_req_t;

static inline struct MHD_Connection *http_mhd_conn(s3_req_t *req)
{
    return ((http_req_t *)req)->conn;
}

/* ---- http_router.c -------------------------------------------------------------- */

/* Routes an S3 request by method, path (raw_url, still percent-encoded),
 * Host and query: sets req->op, bucket, key, path and resource. */
s3_error_t http_route(s3_req_t *req, const char *raw_url);
/* Which of the server's own endpoints url names (s3_op_stats, ...), or
 * NULL for an S3 path. */
const s3_op_t *http_own_endpoint(s3_req_t *req, const char *url);

/* ---- http_form.c: the frontend's form parser (s3_frontend_t.form_*) ---------------- */

s3_form_t *http_form_open(s3_req_t *req, s3_form_fn fn, void *ctx);
int http_form_feed(s3_form_t *form, const char *data, size_t len);
int http_form_close(s3_form_t *form);

#endif
