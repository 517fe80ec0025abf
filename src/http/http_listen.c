/* The HTTP frontend's listeners: one libmicrohttpd daemon per listener
 * (plain HTTP and HTTPS), their connections' tracking (connection guard,
 * TLS certificate hold), and the server's start and stop
 * (http_server.h). Requests on them go to the access handler in http_frontend.c. */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "http/http_internal.h"
#include "http/http_server.h"

/* MHD_OPTION_NOTIFY_CONNECTION: a connection's http_conn_t (its socket
 * context) is made when it opens and freed when it closes. cls: the
 * http_listener_t the connection came in on. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    http_listener_t *l = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        const union MHD_ConnectionInfo *addr =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        http_conn_t *hc = calloc(1, sizeof(*hc));
        *socket_context = hc;
        if (!hc || !fd) {
            if (fd)
                shutdown(fd->connect_fd, SHUT_RDWR);
            log_warn("http: a connection could not be tracked; it was closed");
            return;
        }
        hc->fd = fd->connect_fd;
        /* Held before the handshake can ask for the certificate. */
        if (l->tls)
            hc->cert = http_tls_hold(l->tls);
        hc->guard = http_guard_register(http_server_of(l->srv)->guard, hc->fd,
                                        addr ? addr->client_addr : NULL);
        if (!hc->guard)
            log_warn("http: a connection could not be tracked; it was closed");
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_conn_t *hc = *socket_context;
        if (hc) {
            http_guard_unregister(http_server_of(l->srv)->guard, hc->guard);
            if (hc->cert)
                http_tls_release(l->tls, hc->cert);
            free(hc);
        }
        *socket_context = NULL;
    }
}

/* Keep the raw (still percent-encoded) path and query: SigV4 and S3 key
 * decoding need them exactly as sent. */
static size_t keep_escaped(void *cls, struct MHD_Connection *conn, char *s)
{
    (void)cls;
    (void)conn;
    return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    if (log_current_level < LOG_LVL_DEBUG)
        return;
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_debug("http: %s", line);
}

/* One libmicrohttpd daemon for listener l, serving with the one access
 * handler; NULL with errno set when it cannot start. */
static struct MHD_Daemon *daemon_start(http_listener_t *l, unsigned flags, int port,
                                       struct MHD_OptionItem *addr_opts)
{
    const s3_server_config_t *c = &l->srv->cfg;
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)http_tls_retrieve},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)HTTP_TLS_PRIORITIES},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_OptionItem no_opts[] = {{MHD_OPTION_END, 0, NULL}};
    return MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, http_on_access, l->srv, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, NULL, MHD_OPTION_ARRAY, addr_opts, MHD_OPTION_ARRAY, l->tls ? tls_opts : no_opts,
        MHD_OPTION_NOTIFY_COMPLETED, http_on_completed, l->srv, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, l, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)S3R_HTTP_POOL_BYTES,
        MHD_OPTION_CONNECTION_LIMIT, c->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        c->max_connections_per_ip, MHD_OPTION_CONNECTION_TIMEOUT, c->idle_timeout_s,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)S3R_HTTP_THREAD_STACK, MHD_OPTION_LISTEN_BACKLOG_SIZE,
        1024u, MHD_OPTION_END);
}

/* Opens one listener on host:port ("" = every address), HTTPS when l->tls
 * is set. 0, or -1 with the reason logged. */
static int listener_start(s3_server_t *srv, http_listener_t *l, const char *host, int port)
{
    const char *scheme = l->tls ? "https" : "http";
    /* One thread per connection. Every wait is a poll(), never a select():
     * select() cannot watch a descriptor past 1023 and libmicrohttpd drops
     * such a connection. */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD |
                     MHD_USE_ERROR_LOG | MHD_USE_ITC | MHD_USE_TURBO;
    struct addrinfo *ai = NULL;
    if (*host) {
        struct addrinfo hints = {.ai_family = AF_UNSPEC,
                                 .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
        char portstr[16];
        snprintf(portstr, sizeof(portstr), "%d", port);
        int gai = getaddrinfo(host, portstr, &hints, &ai);
        if (gai != 0) {
            log_error("%s: cannot resolve listen address %s: %s", scheme, host, gai_strerror(gai));
            return -1;
        }
        if (ai->ai_family == AF_INET6)
            flags |= MHD_USE_IPv6;
    } else {
        flags |= MHD_USE_DUAL_STACK; /* [::]:port, IPv4 clients as mapped addresses */
    }
    if (l->tls)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem addr_opts[] = {
        {ai ? MHD_OPTION_SOCK_ADDR : MHD_OPTION_END, 0, ai ? ai->ai_addr : NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    l->srv = srv;
    l->daemon = daemon_start(l, flags, port, addr_opts);
    if (!l->daemon && !*host && errno == EAFNOSUPPORT) {
        log_warn("%s: no IPv6 on this host; port %d listens on every IPv4 address", scheme, port);
        l->daemon = daemon_start(l, flags & ~(unsigned)MHD_USE_DUAL_STACK, port, addr_opts);
    }
    int err = errno;
    if (ai)
        freeaddrinfo(ai);
    if (!l->daemon) {
        log_error("%s: cannot listen on %s%s%s:%d (%s)", scheme, strchr(host, ':') ? "[" : "", host,
                  strchr(host, ':') ? "]" : "", port, strerror(err));
        return -1;
    }
    return 0;
}

static void listener_quiesce(http_listener_t *l)
{
    if (!l->daemon)
        return;
    MHD_socket lsock = MHD_quiesce_daemon(l->daemon);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
}

static void listener_stop(http_listener_t *l)
{
    if (l->daemon)
        MHD_stop_daemon(l->daemon);
    l->daemon = NULL;
    http_tls_destroy(l->tls); /* after the daemon: every connection released its hold */
    l->tls = NULL;
}

s3_server_t *http_server_start(const s3_server_config_t *cfg)
{
    http_server_t *hs = calloc(1, sizeof(*hs));
    if (!hs)
        return NULL;
    s3_server_t *srv = &hs->core;
    if (s3_server_init(srv, cfg) != 0) {
        free(hs);
        return NULL;
    }
    s3_server_config_t *c = &srv->cfg;
    if (!c->max_connections)
        c->max_connections = S3R_HTTP_MAX_CONNECTIONS;
    if (!c->idle_timeout_s)
        c->idle_timeout_s = S3R_HTTP_IDLE_TIMEOUT_S;
    if (!c->body_rate_window_s)
        c->body_rate_window_s = S3R_HTTP_BODY_RATE_WINDOW_S;

    bool https = c->tls_cert_path && *c->tls_cert_path;
    if (https && (!MHD_is_feature_supported(MHD_FEATURE_TLS) ||
                  !MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK))) {
        log_error("https: this libmicrohttpd was built without TLS (GnuTLS) certificate "
                  "callbacks");
        goto fail;
    }
    http_guard_config_t gcfg = {
        .max_conns = c->max_connections * (https && !c->http_off ? 2u : 1u),
        .head_timeout_ms = c->head_timeout_s * 1000u,
        .min_body_rate = c->min_body_rate,
        .body_window_ms = c->body_rate_window_s * 1000u,
        .sweep_ms = S3R_HTTP_SWEEP_MS,
    };
    if (!(hs->guard = http_guard_start(&gcfg)))
        goto fail;
    if (https && !(hs->https.tls = http_tls_create(c->tls_cert_path, c->tls_key_path)))
        goto fail;
    if (!c->http_off && listener_start(srv, &hs->http, c->listen_host, c->port) != 0)
        goto fail;
    if (https && listener_start(srv, &hs->https, c->tls_host, c->tls_port) != 0)
        goto fail;
    return srv;
fail:
    listener_stop(&hs->http);
    listener_stop(&hs->https);
    http_guard_stop(hs->guard);
    s3_server_fini(srv);
    free(hs);
    return NULL;
}

int http_server_reload_tls(s3_server_t *srv)
{
    http_server_t *hs = http_server_of(srv);
    return hs->https.tls ? http_tls_reload(hs->https.tls) : 0;
}

void http_server_stop(s3_server_t *srv, int grace_s)
{
    if (!srv)
        return;
    http_server_t *hs = http_server_of(srv);
    s3_server_stopping(srv);
    listener_quiesce(&hs->http);
    listener_quiesce(&hs->https);
    s3_server_drain(srv, grace_s);
    listener_stop(&hs->http);
    listener_stop(&hs->https);
    http_guard_stop(hs->guard); /* after the daemons: they unregister every connection */
    s3_server_fini(srv);
    free(hs);
}
