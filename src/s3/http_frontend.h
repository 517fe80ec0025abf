/* The HTTP frontend's pieces shared by its access handler (http.c), its
 * listeners (http_listen.c) and its own pages (own_pages.c): the server
 * around the S3 core, the per-connection state and the two libmicrohttpd
 * callbacks every daemon is started with. */
#ifndef S3R_S3_HTTP_FRONTEND_H
#define S3R_S3_HTTP_FRONTEND_H

#include <arpa/inet.h>
#include <microhttpd.h>

#include "s3/connguard.h"
#include "s3/s3_request.h"
#include "s3/tls.h"

/* One libmicrohttpd daemon: plain HTTP, or HTTPS when tls is set. */
typedef struct http_listener {
    s3_server_t *srv;
    struct MHD_Daemon *daemon; /* NULL when this listener is off */
    s3_tls_t *tls;             /* the certificate store (tls.h); NULL for plain HTTP */
} http_listener_t;

/* The HTTP server: the S3 core every frontend shares, and what HTTP
 * alone has. s3_server_start returns &core, so every s3_server_t of a
 * request on this frontend, and every one the server's owner holds, is
 * one of these (http_server_of). */
typedef struct http_server {
    s3_server_t core; /* first */
    http_listener_t http, https;
    connguard_t *guard; /* receive deadlines: connguard.h */
} http_server_t;

static inline http_server_t *http_server_of(s3_server_t *srv)
{
    return (http_server_t *)srv;
}

/* What the server keeps per connection (libmicrohttpd's socket context). */
typedef struct http_conn {
    cg_conn_t *guard;                          /* the receive deadlines; NULL when untracked */
    s3_tls_cert_t *cert;                       /* HTTPS: the certificate generation held (tls.h) */
    int fd;                                    /* the socket, for its local address */
    char rdma_endpoint[INET6_ADDRSTRLEN + 16]; /* advertised; "" until first needed */
} http_conn_t;

/* The access handler (MHD_AccessHandlerCallback); cls is the s3_server_t.
 * A connection's http_conn_t is its socket context, set by the listener's
 * connection notification (NULL when it could not be tracked). */
enum MHD_Result s3_http_on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls);

/* MHD_OPTION_NOTIFY_COMPLETED: frees the request, ends its connection guard
 * phase. */
void s3_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                          enum MHD_RequestTerminationCode toe);

#endif
