/* The HTTP frontend's pieces shared by its access handler (http.c) and its
 * listeners (http_listen.c): the per-connection state and the two
 * libmicrohttpd callbacks every daemon is started with. */
#ifndef S3R_S3_HTTP_FRONTEND_H
#define S3R_S3_HTTP_FRONTEND_H

#include <arpa/inet.h>
#include <microhttpd.h>

#include "s3/connguard.h"
#include "s3/tls.h"

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
