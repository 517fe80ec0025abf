/* httpload — a tiny HTTP/1.1 keep-alive load generator for bench/http.
 *
 * One thread per connection, each sending the same request (GET, or PUT with a
 * body of -b bytes) back to back for -d seconds after -w seconds of warm-up,
 * timing every request from the first byte written to the last byte of the
 * response read. Prints one line of key=value pairs:
 *
 *   reqs=N errors=N secs=S rps=R MBps=M p50_us=A p90_us=B p99_us=C max_us=D connects=N
 *
 * connects=N counts TCP connections opened (1 per connection when the server
 * keeps them alive); a connect forced by a server-side close is timed as part
 * of the request that needed it.
 *
 * MBps counts object payload bytes (GET: response body; PUT: request body),
 * 10^6 bytes per MB. Non-2xx responses and short bodies count as errors.
 *
 * -s speaks HTTPS (GnuTLS, the library's default priorities: TLS 1.3 where the
 * server has it); -C CAFILE verifies the server's certificate against CAFILE
 * (without it the certificate is not checked: the tool measures, it does not
 * authenticate). The handshake is part of the first request on a connection.
 *
 * usage: httpload -a HOST:PORT -u 'PATH?QUERY' [-m GET|PUT] [-c CONNS]
 *                 [-d SECS] [-w WARMUP_SECS] [-b PUT_BODY_BYTES] [-H 'Name: v']...
 *                 [-s [-C CAFILE]]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "bench_lat.h"

#define MAX_HDRS 16
#define RBUF     (1u << 20)

static const char *g_host = "127.0.0.1";
static int g_port;
static const char *g_uri = "/";
static const char *g_method = "GET";
static int g_conns = 1;
static double g_secs = 2.0, g_warm = 0.3;
static size_t g_body;
static const char *g_hdrs[MAX_HDRS];
static int g_nhdrs;
static char *g_req;
static size_t g_reqlen;
static char *g_bodybuf;
static double g_t0, g_tstart, g_tend;
static int g_tls, g_cred_verify;
static gnutls_certificate_credentials_t g_cred;

/* A connection: the socket, and its TLS session with -s. */
typedef struct conn {
    int fd;
    gnutls_session_t tls; /* NULL: plain TCP */
} conn_t;

typedef struct {
    lat_t lat;
    uint64_t bytes, errors, reconnects;
} tstate_t;

static void hangup(conn_t *c)
{
    if (c->tls)
        gnutls_deinit(c->tls);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->tls = NULL;
}

/* Connects (and with -s shakes hands). 0, or -1 with c closed. */
static int dial(conn_t *c)
{
    c->tls = NULL;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    inet_pton(AF_INET, g_host, &sa.sin_addr);
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        hangup(c);
        return -1;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (!g_tls)
        return 0;
    int rc;
    if (gnutls_init(&c->tls, GNUTLS_CLIENT) < 0) {
        c->tls = NULL;
        hangup(c);
        return -1;
    }
    gnutls_set_default_priority(c->tls);
    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, g_cred);
    gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, "localhost", 9);
    if (g_cred_verify)
        gnutls_session_set_verify_cert(c->tls, NULL, 0); /* IP SANs: checked without a name */
    gnutls_transport_set_int(c->tls, c->fd);
    do
        rc = gnutls_handshake(c->tls);
    while (rc < 0 && !gnutls_error_is_fatal(rc));
    if (rc < 0) {
        fprintf(stderr, "httpload: TLS handshake: %s\n", gnutls_strerror(rc));
        hangup(c);
        return -1;
    }
    return 0;
}

static ssize_t conn_recv(conn_t *c, char *buf, size_t n)
{
    if (!c->tls)
        return recv(c->fd, buf, n, 0);
    ssize_t r;
    do
        r = gnutls_record_recv(c->tls, buf, n);
    while (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED);
    return r < 0 ? -1 : r;
}

/* Sends every iovec: one record stream (corked) under TLS. */
static int write_all(conn_t *c, struct iovec *iov, int n)
{
    if (c->tls) {
        gnutls_record_cork(c->tls);
        for (int i = 0; i < n; i++) {
            for (size_t off = 0; off < iov[i].iov_len;) {
                ssize_t w =
                    gnutls_record_send(c->tls, (char *)iov[i].iov_base + off, iov[i].iov_len - off);
                if (w < 0 && w != GNUTLS_E_AGAIN && w != GNUTLS_E_INTERRUPTED)
                    return -1;
                if (w > 0)
                    off += (size_t)w;
            }
        }
        int rc;
        do
            rc = gnutls_record_uncork(c->tls, GNUTLS_RECORD_WAIT);
        while (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED);
        return rc < 0 ? -1 : 0;
    }
    int fd = c->fd;
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Reads one response. Returns body length (>= 0) with *status and *close_p set,
 * or -1 on a connection error. buf is RBUF bytes. */
static long read_response(conn_t *c, char *buf, int *status, int *close_p)
{
    size_t have = 0;
    char *eoh = NULL;
    for (;;) {
        ssize_t r = conn_recv(c, buf + have, RBUF - 1 - have);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        have += (size_t)r;
        buf[have] = 0;
        eoh = memmem(buf, have, "\r\n\r\n", 4);
        if (eoh)
            break;
        if (have >= RBUF - 1)
            return -1;
    }
    size_t hlen = (size_t)(eoh - buf) + 4;
    *status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", status) != 1)
        return -1;
    long clen = -1;
    *close_p = 0;
    for (char *p = strstr(buf, "\r\n"); p && p < eoh; p = strstr(p + 2, "\r\n")) {
        char *l = p + 2;
        if (strncasecmp(l, "content-length:", 15) == 0)
            clen = strtol(l + 15, NULL, 10);
        else if (strncasecmp(l, "connection:", 11) == 0) {
            const char *v = l + 11;
            while (*v == ' ')
                v++;
            if (strncasecmp(v, "close", 5) == 0)
                *close_p = 1;
        } else if (strncasecmp(l, "transfer-encoding:", 18) == 0) {
            fprintf(stderr, "httpload: chunked responses not supported\n");
            return -1;
        }
    }
    if (clen < 0)
        clen = 0;
    size_t got = have - hlen;
    while ((long)got < clen) {
        size_t want = (size_t)clen - got;
        if (want > RBUF)
            want = RBUF;
        ssize_t r = conn_recv(c, buf, want);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    if ((long)got != clen)
        return -1; /* pipelining not used: extra bytes mean a protocol error */
    return clen;
}

static void *worker(void *arg)
{
    tstate_t *t = arg;
    char *buf = malloc(RBUF);
    conn_t conn = {.fd = -1, .tls = NULL};
    if (!buf)
        return NULL;
    for (;;) {
        double t1 = now();
        if (t1 >= g_tend)
            break;
        if (conn.fd < 0) {
            if (dial(&conn) != 0) {
                t->errors++;
                usleep(1000);
                continue;
            }
            t->reconnects++; /* the connect is part of this request's latency */
        }
        struct iovec iov[2] = {{g_req, g_reqlen}, {g_bodybuf, g_body}};
        int st = 0, cl = 0;
        long n = -1;
        if (write_all(&conn, iov, g_body ? 2 : 1) == 0)
            n = read_response(&conn, buf, &st, &cl);
        double t2 = now();
        if (n < 0) {
            hangup(&conn);
            if (t1 >= g_tstart)
                t->errors++;
            continue;
        }
        if (t1 >= g_tstart && t2 <= g_tend) {
            if (st < 200 || st > 299) {
                t->errors++;
                if (t->errors < 3)
                    fprintf(stderr, "httpload: status %d: %.200s\n", st, buf);
            } else {
                lat_push(&t->lat, (t2 - t1) * 1e6);
                t->bytes += g_body ? g_body : (uint64_t)n;
            }
        }
        if (cl)
            hangup(&conn);
    }
    hangup(&conn);
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    int o;
    const char *cafile = NULL;
    while ((o = getopt(argc, argv, "a:u:m:c:d:w:b:H:sC:")) != -1) {
        switch (o) {
        case 'a': {
            char *h = strdup(optarg), *c = strrchr(h, ':');
            if (!c)
                goto usage;
            *c = 0;
            g_host = h;
            g_port = atoi(c + 1);
            break;
        }
        case 'u':
            g_uri = optarg;
            break;
        case 'm':
            g_method = optarg;
            break;
        case 'c':
            g_conns = atoi(optarg);
            break;
        case 'd':
            g_secs = atof(optarg);
            break;
        case 'w':
            g_warm = atof(optarg);
            break;
        case 'b':
            g_body = strtoull(optarg, NULL, 10);
            break;
        case 's':
            g_tls = 1;
            break;
        case 'C':
            cafile = optarg;
            break;
        case 'H':
            if (g_nhdrs < MAX_HDRS)
                g_hdrs[g_nhdrs++] = optarg;
            break;
        default:
            goto usage;
        }
    }
    if (!g_port || g_conns < 1)
        goto usage;
    if (g_tls) {
        gnutls_certificate_allocate_credentials(&g_cred);
        if (cafile) {
            if (gnutls_certificate_set_x509_trust_file(g_cred, cafile, GNUTLS_X509_FMT_PEM) <= 0) {
                fprintf(stderr, "httpload: no CA certificate in %s\n", cafile);
                return 2;
            }
            g_cred_verify = 1;
        }
    }

    size_t cap = strlen(g_uri) + 512;
    for (int i = 0; i < g_nhdrs; i++)
        cap += strlen(g_hdrs[i]) + 2;
    g_req = malloc(cap);
    int n =
        snprintf(g_req, cap, "%s %s HTTP/1.1\r\nHost: %s:%d\r\n", g_method, g_uri, g_host, g_port);
    for (int i = 0; i < g_nhdrs; i++)
        n += snprintf(g_req + n, cap - (size_t)n, "%s\r\n", g_hdrs[i]);
    if (strcmp(g_method, "PUT") == 0 || g_body)
        n += snprintf(g_req + n, cap - (size_t)n, "Content-Length: %zu\r\n", g_body);
    n += snprintf(g_req + n, cap - (size_t)n, "\r\n");
    g_reqlen = (size_t)n;
    if (g_body) {
        g_bodybuf = malloc(g_body);
        for (size_t i = 0; i < g_body; i++)
            g_bodybuf[i] = (char)('a' + i % 26);
    }

    g_t0 = now();
    g_tstart = g_t0 + g_warm;
    g_tend = g_tstart + g_secs;
    pthread_t *th = calloc((size_t)g_conns, sizeof *th);
    tstate_t *ts = calloc((size_t)g_conns, sizeof *ts);
    for (int i = 0; i < g_conns; i++)
        pthread_create(&th[i], NULL, worker, &ts[i]);
    lat_t all = {0};
    uint64_t bytes = 0, errors = 0, conns = 0;
    for (int i = 0; i < g_conns; i++) {
        pthread_join(th[i], NULL);
        conns += ts[i].reconnects;
        lat_append(&all, &ts[i].lat);
        bytes += ts[i].bytes;
        errors += ts[i].errors;
    }
    lat_sort(&all);
    size_t total = all.n;
    printf("reqs=%zu errors=%llu secs=%.3f rps=%.1f MBps=%.1f p50_us=%.1f p90_us=%.1f "
           "p99_us=%.1f max_us=%.1f connects=%llu\n",
           total, (unsigned long long)errors, g_secs, (double)total / g_secs,
           (double)bytes / g_secs / 1e6, lat_pct(&all, 50), lat_pct(&all, 90), lat_pct(&all, 99),
           lat_max(&all), (unsigned long long)conns);
    return errors && !total ? 1 : 0;
usage:
    fprintf(stderr,
            "usage: %s -a HOST:PORT -u URI [-m GET|PUT] [-c CONNS] [-d SECS] "
            "[-w WARMUP] [-b BODY_BYTES] [-H 'Name: value']... [-s [-C CAFILE]]\n",
            argv[0]);
    return 2;
}
