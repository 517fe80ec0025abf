/* The HTTP module's contract: the S3 server over HTTP and HTTPS, started
 * and stopped with its listeners. The server it returns is the S3 core
 * (s3/s3_server.h) that native requests share (rdmafe_native_handle's ctx,
 * s3_server_set_ready). */
#ifndef S3R_HTTP_SERVER_H
#define S3R_HTTP_SERVER_H

#include "s3/s3_server.h"

/* Starts listening and serving on every configured listener, all of them
 * served by the same request handling and connection limits (each listener
 * counts its own connections). Returns NULL with the reason logged. */
s3_server_t *http_server_start(const s3_server_config_t *cfg);
/* Re-reads the HTTPS certificate and key: new connections get them,
 * connections already open keep theirs. On a bad file the old ones stay
 * (logged) and -1 is returned; 0 otherwise, also when HTTPS is off. */
int http_server_reload_tls(s3_server_t *srv);
/* Stops accepting new connections, waits up to grace_s seconds for requests
 * in flight to finish, then closes everything. srv must come from
 * http_server_start; NULL is a no-op. */
void http_server_stop(s3_server_t *srv, int grace_s);

#endif
