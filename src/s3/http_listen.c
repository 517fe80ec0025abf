/* The HTTP frontend's listeners: one libmicrohttpd daemon per listener
 * (plain HTTP and HTTPS), their connections' tracking (connection guard,
 * TLS certificate hold), and the server's start and stop
 * (s3_server.h). Requests on them go to the access handler in http.c. */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/hash_pool.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "s3/http_frontend.h"
#include "s3/lifecycle_run.h"
#include "s3/s3_request.h"
#include "s3/tls.h"

/* MHD_OPTION_NOTIFY_CONNECTION: a connection's http_conn_t (its socket
 * context) is made when it opens and freed when it closes. cls: the
 * s3_listener_t the connection came in on. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    s3_listener_t *l = cls;
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
            hc->cert = s3_tls_hold(l->tls);
        hc->guard = connguard_register(l->srv->guard, hc->fd, addr ? addr->client_addr : NULL);
        if (!hc->guard)
            log_warn("http: a connection could not be tracked; it was closed");
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_conn_t *hc = *socket_context;
        if (hc) {
            connguard_unregister(l->srv->guard, hc->guard);
            if (hc->cert)
                s3_tls_release(l->tls, hc->cert);
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
static struct MHD_Daemon *daemon_start(s3_listener_t *l, unsigned flags, int port,
                                       struct MHD_OptionItem *addr_opts)
{
    const s3_server_config_t *c = &l->srv->cfg;
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_CERT_CALLBACK, 0, (void *)s3_tls_retrieve},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)S3_TLS_PRIORITIES},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_OptionItem no_opts[] = {{MHD_OPTION_END, 0, NULL}};
    return MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, s3_http_on_access, l->srv, MHD_OPTION_EXTERNAL_LOGGER,
        mhd_log, NULL, MHD_OPTION_ARRAY, addr_opts, MHD_OPTION_ARRAY, l->tls ? tls_opts : no_opts,
        MHD_OPTION_NOTIFY_COMPLETED, s3_http_on_completed, l->srv, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, l, MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)S3R_HTTP_POOL_BYTES,
        MHD_OPTION_CONNECTION_LIMIT, c->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        c->max_connections_per_ip, MHD_OPTION_CONNECTION_TIMEOUT, c->idle_timeout_s,
        MHD_OPTION_THREAD_STACK_SIZE, (size_t)S3R_HTTP_THREAD_STACK, MHD_OPTION_LISTEN_BACKLOG_SIZE,
        1024u, MHD_OPTION_END);
}

/* Opens one listener on host:port ("" = every address), HTTPS when l->tls
 * is set. 0, or -1 with the reason logged. */
static int listener_start(s3_server_t *srv, s3_listener_t *l, const char *host, int port)
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

static void listener_quiesce(s3_listener_t *l)
{
    if (!l->daemon)
        return;
    MHD_socket lsock = MHD_quiesce_daemon(l->daemon);
    if (lsock != MHD_INVALID_SOCKET)
        close(lsock);
}

static void listener_stop(s3_listener_t *l)
{
    if (l->daemon)
        MHD_stop_daemon(l->daemon);
    l->daemon = NULL;
    s3_tls_destroy(l->tls); /* after the daemon: every connection released its hold */
    l->tls = NULL;
}

/* One thread per core hashes bodies beside the requests writing them (a
 * request holds at most one at a time; past them requests hash in line). */
static unsigned body_hash_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : n > S3R_BODY_HASH_THREADS_MAX ? S3R_BODY_HASH_THREADS_MAX : (unsigned)n;
}

s3_server_t *s3_server_start(const s3_server_config_t *cfg)
{
    s3_server_t *srv = calloc(1, sizeof(*srv));
    if (!srv)
        return NULL;
    srv->cfg = *cfg;
    s3_server_config_t *c = &srv->cfg;
    if (!c->max_connections)
        c->max_connections = S3R_HTTP_MAX_CONNECTIONS;
    if (!c->idle_timeout_s)
        c->idle_timeout_s = S3R_HTTP_IDLE_TIMEOUT_S;
    if (!c->body_rate_window_s)
        c->body_rate_window_s = S3R_HTTP_BODY_RATE_WINDOW_S;
    if (!c->lifecycle_day_s)
        c->lifecycle_day_s = 86400;
    uint32_t inst;
    random_bytes(&inst, sizeof(inst));
    srv->instance = inst;

    bool https = c->tls_cert_path && *c->tls_cert_path;
    if (https && (!MHD_is_feature_supported(MHD_FEATURE_TLS) ||
                  !MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK))) {
        log_error("https: this libmicrohttpd was built without TLS (GnuTLS) certificate "
                  "callbacks");
        free(srv);
        return NULL;
    }
    connguard_config_t gcfg = {
        .max_conns = c->max_connections * (https && !c->http_off ? 2u : 1u),
        .head_timeout_ms = c->head_timeout_s * 1000u,
        .min_body_rate = c->min_body_rate,
        .body_window_ms = c->body_rate_window_s * 1000u,
        .sweep_ms = S3R_HTTP_SWEEP_MS,
    };
    srv->guard = connguard_start(&gcfg);
    if (c->metrics_enabled)
        srv->metrics = s3_metrics_new();
    srv->hashers = hash_pool_new(body_hash_threads());
    if (!srv->guard || (c->metrics_enabled && !srv->metrics) || !srv->hashers) {
        connguard_stop(srv->guard);
        s3_metrics_free(srv->metrics);
        hash_pool_free(srv->hashers);
        free(srv);
        return NULL;
    }
    if (https && !(srv->https.tls = s3_tls_create(c->tls_cert_path, c->tls_key_path)))
        goto fail;
    if (!c->http_off && listener_start(srv, &srv->http, c->listen_host, c->port) != 0)
        goto fail;
    if (https && listener_start(srv, &srv->https, c->tls_host, c->tls_port) != 0)
        goto fail;
    if (!(srv->lifecycle = s3_lc_runner_start(c->store, c->lifecycle_day_s)))
        goto fail;
    return srv;
fail:
    listener_stop(&srv->http);
    listener_stop(&srv->https);
    connguard_stop(srv->guard);
    s3_metrics_free(srv->metrics);
    hash_pool_free(srv->hashers);
    free(srv);
    return NULL;
}

int s3_server_reload_tls(s3_server_t *srv)
{
    return srv->https.tls ? s3_tls_reload(srv->https.tls) : 0;
}

void s3_server_stop(s3_server_t *srv, int grace_s)
{
    if (!srv)
        return;
    atomic_store(&srv->stopping, true);
    atomic_store(&srv->ready, false);
    listener_quiesce(&srv->http);
    listener_quiesce(&srv->https);
    int64_t start_ms = (int64_t)clock_mono_ms();
    while (atomic_load(&srv->inflight) > 0) {
        if ((int64_t)clock_mono_ms() - start_ms >= (int64_t)grace_s * 1000) {
            log_warn("shutdown: %u requests still in flight after %d s; closing them",
                     atomic_load(&srv->inflight), grace_s);
            break;
        }
        usleep(10000);
    }
    s3_lc_runner_stop(srv->lifecycle);
    listener_stop(&srv->http);
    listener_stop(&srv->https);
    connguard_stop(srv->guard); /* after the daemons: they unregister every connection */
    s3_metrics_free(srv->metrics);
    hash_pool_free(srv->hashers); /* after the requests: none holds a job */
    free(srv);
}

void s3_server_set_ready(s3_server_t *srv, bool ready)
{
    atomic_store(&srv->ready, ready);
}
