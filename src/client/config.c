/* Client configuration: defaults, the SPT environment overrides (docs/client.md,
 * "Environment overrides") and endpoint parsing. Pure code (no network, no curl, no UCX) so the
 * unit tests can include it directly. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "common/addr.h"
#include "common/size.h"

#define S3C_DEFAULT_REGION "us-east-1"

void s3r_config_init(s3r_config_t *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->transport = S3R_TRANSPORT_AUTO;
    cfg->rdma_threshold = 1024 * 1024;
    cfg->rdma_fallback = 1;
    cfg->rdma_timeout_ms = 5000;
    cfg->use_rdma = 1;
    cfg->part_size = 8ULL * 1024 * 1024;
    cfg->multipart_threshold = 16ULL * 1024 * 1024;
    cfg->sign_payload_max = 64 * 1024;
    cfg->connect_timeout_ms = 5000;
    cfg->max_cached_regions = 16;
    cfg->native_inline = S3C_NATIVE_INLINE;
    cfg->parts_in_flight = S3C_PARTS_IN_FLIGHT;
    cfg->peer_discovery = 1;
    cfg->put_checksum = 1;
}

s3r_status_t s3r_transport_parse(const char *name, s3r_transport_t *transport_p)
{
    if (name == NULL || transport_p == NULL)
        return S3R_ERR_INVALID_ARG;
    if (strcasecmp(name, "http") == 0)
        *transport_p = S3R_TRANSPORT_HTTP;
    else if (strcasecmp(name, "token") == 0 || strcasecmp(name, "rdma-token") == 0 ||
             strcasecmp(name, "rdma") == 0)
        *transport_p = S3R_TRANSPORT_TOKEN;
    else if (strcasecmp(name, "native") == 0)
        *transport_p = S3R_TRANSPORT_NATIVE;
    else if (strcasecmp(name, "auto") == 0)
        *transport_p = S3R_TRANSPORT_AUTO;
    else
        return S3R_ERR_INVALID_ARG;
    return S3R_OK;
}

const char *s3r_transport_name(s3r_transport_t t)
{
    switch (t) {
    case S3R_TRANSPORT_DEFAULT:
        return "default";
    case S3R_TRANSPORT_HTTP:
        return "http";
    case S3R_TRANSPORT_TOKEN:
        return "token";
    case S3R_TRANSPORT_NATIVE:
        return "native";
    case S3R_TRANSPORT_AUTO:
        return "auto";
    }
    return "unknown";
}

/* "1", "true", "yes", "on" -> 1; "0", "false", "no", "off" -> 0; else -1. */
static int s3c_parse_bool(const char *s)
{
    if (s == NULL)
        return -1;
    if (!strcasecmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
        !strcasecmp(s, "on"))
        return 1;
    if (!strcasecmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") ||
        !strcasecmp(s, "off"))
        return 0;
    return -1;
}

void s3c_endpoint_free(s3c_endpoint_t *ep)
{
    if (ep == NULL)
        return;
    free(ep->url);
    free(ep->hostport);
    free(ep->host);
    memset(ep, 0, sizeof(*ep));
}

/* Splits "host[:port]" / "[v6][:port]" of length len. */
static int split_hostport(const char *hp, size_t len, int default_port, s3c_endpoint_t *ep)
{
    addr_hostport_t a;
    if (addr_split(hp, len, default_port, &a) < 0 || a.host_len == 0 || a.port < 1)
        return -1;
    for (size_t i = 0; i < a.host_len; i++)
        if (isspace((unsigned char)a.host[i]) || a.host[i] == '/' || a.host[i] == '@')
            return -1;
    ep->host = strndup(a.host, a.host_len);
    ep->port = a.port;
    if (ep->host == NULL)
        return -1;
    return 0;
}

int s3c_endpoint_parse_url(const char *url, s3c_endpoint_t *ep)
{
    memset(ep, 0, sizeof(*ep));
    if (url == NULL)
        return -1;
    int default_port;
    const char *p;
    if (strncasecmp(url, "http://", 7) == 0) {
        default_port = 80;
        p = url + 7;
    } else if (strncasecmp(url, "https://", 8) == 0) {
        default_port = 443;
        p = url + 8;
    } else {
        return -1;
    }
    size_t len = strcspn(p, "/?#");
    /* Only a bare "/" may follow the authority: path-style requests are
     * built from the endpoint's root. */
    if (p[len] != '\0' && strcmp(p + len, "/") != 0)
        return -1;
    if (split_hostport(p, len, default_port, ep) < 0)
        return -1;
    ep->hostport = strndup(p, len);
    ep->url = strndup(url, (size_t)(p - url) + len);
    if (ep->hostport == NULL || ep->url == NULL) {
        s3c_endpoint_free(ep);
        return -1;
    }
    return 0;
}

int s3c_endpoint_parse_hostport(const char *hp, int default_port, s3c_endpoint_t *ep)
{
    memset(ep, 0, sizeof(*ep));
    if (hp == NULL || split_hostport(hp, strlen(hp), default_port, ep) < 0)
        return -1;
    ep->hostport = strdup(hp);
    if (ep->hostport == NULL) {
        s3c_endpoint_free(ep);
        return -1;
    }
    return 0;
}

int s3c_endpoint_derive_rdma(const s3c_endpoint_t *http, s3c_endpoint_t *ep)
{
    char hp[600];
    addr_format(hp, sizeof(hp), http->host, S3C_DEFAULT_RDMA_PORT);
    return s3c_endpoint_parse_hostport(hp, S3C_DEFAULT_RDMA_PORT, ep);
}

void s3c_settings_free(s3c_settings_t *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n_http; i++)
        s3c_endpoint_free(&s->http[i]);
    for (size_t i = 0; i < s->n_rdma; i++)
        s3c_endpoint_free(&s->rdma[i]);
    free(s->access_key);
    free(s->secret_key);
    free(s->region);
    free(s->rdma_device);
    free(s->rdma_socket);
    free(s->ca_bundle);
    free(s->rdma_local_ip);
    free(s->rdma_log_level);
    free(s->aws_profile);
    memset(s, 0, sizeof(*s));
}

/* Replaces *dst with a copy of src (NULL or "" leaves NULL). */
static int dup_opt(char **dst, const char *src)
{
    free(*dst);
    *dst = NULL;
    if (src == NULL || src[0] == '\0')
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

/* Splits a comma-separated list, calling parse on each trimmed item. */
static int parse_list(const char *list, s3c_endpoint_t *eps, size_t *n_p, int is_url,
                      int default_port)
{
    char item[1024];
    size_t n = 0;
    const char *p = list;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *s = p;
        size_t l = len;
        while (l > 0 && isspace((unsigned char)*s)) {
            s++;
            l--;
        }
        while (l > 0 && isspace((unsigned char)s[l - 1]))
            l--;
        if (l > 0) {
            if (n == S3C_MAX_ENDPOINTS || l >= sizeof(item))
                return -1;
            memcpy(item, s, l);
            item[l] = '\0';
            int rc = is_url ? s3c_endpoint_parse_url(item, &eps[n])
                            : s3c_endpoint_parse_hostport(item, default_port, &eps[n]);
            if (rc < 0)
                return -1;
            n++;
            *n_p = n;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return n > 0 ? 0 : -1;
}

static const char *env_lookup(const char *name)
{
    return getenv(name);
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, err_len, __VA_ARGS__);                                                       \
        goto fail;                                                                                 \
    } while (0)

s3r_status_t s3c_settings_build(const s3r_config_t *cfg, s3c_getenv_fn getenv_fn, s3c_settings_t *s,
                                char *err, size_t err_len)
{
    s3r_status_t st = S3R_ERR_INVALID_ARG;
    const char *v;
    memset(s, 0, sizeof(*s));
    if (getenv_fn == NULL)
        getenv_fn = env_lookup;
    if (cfg == NULL)
        FAIL("no configuration");
    if (cfg->endpoint == NULL || parse_list(cfg->endpoint, s->http, &s->n_http, 1, 0) < 0)
        FAIL("bad endpoint \"%s\" (want http://host:port[,...])",
             cfg->endpoint ? cfg->endpoint : "(null)");
    if (cfg->rdma_endpoint != NULL && cfg->rdma_endpoint[0] != '\0') {
        if (parse_list(cfg->rdma_endpoint, s->rdma, &s->n_rdma, 0, S3C_DEFAULT_RDMA_PORT) < 0)
            FAIL("bad rdma_endpoint \"%s\" (want host:port[,...])", cfg->rdma_endpoint);
    } else {
        for (size_t i = 0; i < s->n_http; i++) {
            if (s3c_endpoint_derive_rdma(&s->http[i], &s->rdma[i]) < 0)
                FAIL("cannot derive the RDMA endpoint from %s", s->http[i].url);
            s->n_rdma++;
        }
        s->rdma_derived = true;
    }
    s->peer_discovery = cfg->peer_discovery != 0 && s->n_http == 1;
    s->anonymous = cfg->anonymous != 0;
    s->aws_credentials = cfg->aws_credentials != 0 && !s->anonymous;
    bool have_keys = cfg->access_key != NULL && cfg->access_key[0] != '\0' &&
                     cfg->secret_key != NULL && cfg->secret_key[0] != '\0';
    if (s->aws_credentials && (cfg->access_key != NULL || cfg->secret_key != NULL))
        FAIL("aws_credentials loads the keys: leave access_key and secret_key NULL");
    if (!s->anonymous && !s->aws_credentials && !have_keys)
        FAIL("no credentials: access_key and secret_key are required (set anonymous for "
             "unsigned requests to public buckets)");
    if (have_keys && !s->anonymous &&
        (strlen(cfg->access_key) > S3C_KEY_MAX || strlen(cfg->secret_key) > S3C_KEY_MAX))
        FAIL("access_key and secret_key must be at most %d bytes each", S3C_KEY_MAX);
    if (s->anonymous &&
        (cfg->transport == S3R_TRANSPORT_TOKEN || cfg->transport == S3R_TRANSPORT_NATIVE))
        FAIL("transport %s needs credentials: the server opens RDMA sessions for access keys "
             "only, so anonymous requests go over HTTP (transport http or auto)",
             s3r_transport_name(cfg->transport));
    st = S3R_ERR_NOMEM;
    if (dup_opt(&s->aws_profile, s->aws_credentials ? cfg->aws_profile : NULL) < 0 ||
        (!s->anonymous && (dup_opt(&s->access_key, cfg->access_key) < 0 ||
                           dup_opt(&s->secret_key, cfg->secret_key) < 0)) ||
        dup_opt(&s->region, cfg->region && cfg->region[0] ? cfg->region : S3C_DEFAULT_REGION) < 0 ||
        dup_opt(&s->rdma_device, cfg->rdma_device) < 0 ||
        dup_opt(&s->rdma_local_ip, cfg->rdma_local_ip) < 0 ||
        dup_opt(&s->rdma_log_level, cfg->rdma_log_level) < 0 ||
        dup_opt(&s->rdma_socket, cfg->rdma_socket) < 0 ||
        dup_opt(&s->ca_bundle, cfg->ca_bundle) < 0)
        FAIL("out of memory");
    st = S3R_ERR_INVALID_ARG;

    s->transport = cfg->transport == S3R_TRANSPORT_DEFAULT ? S3R_TRANSPORT_AUTO : cfg->transport;
    if (s->transport < S3R_TRANSPORT_HTTP || s->transport > S3R_TRANSPORT_AUTO)
        FAIL("bad transport %d", (int)cfg->transport);
    s->rdma_threshold = cfg->rdma_threshold;
    s->rdma_fallback = cfg->rdma_fallback != 0;
    s->use_rdma = cfg->use_rdma != 0;
    s->rdma_timeout_ms = cfg->rdma_timeout_ms > 0 ? cfg->rdma_timeout_ms : 5000;
    s->part_size = cfg->part_size ? cfg->part_size : 8ULL * 1024 * 1024;
    s->multipart_threshold = cfg->multipart_threshold;
    s->sign_payload_max = cfg->sign_payload_max;
    s->http_timeout_ms = cfg->http_timeout_ms > 0 ? cfg->http_timeout_ms : 0;
    s->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 5000;
    s->max_cached_regions = cfg->max_cached_regions ? cfg->max_cached_regions : 16;
    s->quiet = cfg->quiet != 0;
    s->put_checksum = cfg->put_checksum != 0;
    s->native_inline = cfg->native_inline;
    s->parts_in_flight = cfg->parts_in_flight ? cfg->parts_in_flight : S3C_PARTS_IN_FLIGHT;
    if (s->parts_in_flight > S3C_MAX_PARTS_IN_FLIGHT)
        FAIL("parts_in_flight must be at most %d", S3C_MAX_PARTS_IN_FLIGHT);
    if (s->native_inline > RDMA_NATIVE_MAX_INLINE)
        FAIL("native_inline must be at most %d bytes", RDMA_NATIVE_MAX_INLINE);

    /* Environment overrides (docs/client.md). */
    if ((v = getenv_fn("SPT_RDMA_ENABLED")) != NULL && v[0] != '\0') {
        int b = s3c_parse_bool(v);
        if (b < 0)
            FAIL("SPT_RDMA_ENABLED=\"%s\" is not a boolean", v);
        s->use_rdma = b;
    }
    if ((v = getenv_fn("RDMA_FALLBACK_ENABLED")) != NULL && v[0] != '\0') {
        int b = s3c_parse_bool(v);
        if (b < 0)
            FAIL("RDMA_FALLBACK_ENABLED=\"%s\" is not a boolean", v);
        s->rdma_fallback = b;
    }
    if ((v = getenv_fn("RDMA_THRESHOLD_BYTES")) != NULL && v[0] != '\0') {
        uint64_t t;
        if (size_parse(v, &t) < 0)
            FAIL("RDMA_THRESHOLD_BYTES=\"%s\" is not a size", v);
        s->rdma_threshold = t;
    }
    if ((v = getenv_fn("RDMA_TIMEOUT_MS")) != NULL && v[0] != '\0') {
        char *end;
        errno = 0;
        long t = strtol(v, &end, 10);
        if (errno || *end != '\0' || t <= 0 || t > 3600 * 1000)
            FAIL("RDMA_TIMEOUT_MS=\"%s\" is not a positive number of milliseconds", v);
        s->rdma_timeout_ms = (int)t;
    }
    st = S3R_ERR_NOMEM;
    if ((v = getenv_fn("RDMA_LOCAL_IP")) != NULL && v[0] != '\0' &&
        dup_opt(&s->rdma_local_ip, v) < 0)
        FAIL("out of memory");
    if ((v = getenv_fn("RDMA_DEVICE")) != NULL && v[0] != '\0' && dup_opt(&s->rdma_device, v) < 0)
        FAIL("out of memory");
    if ((v = getenv_fn("RDMA_LOG_LEVEL")) != NULL && v[0] != '\0' &&
        dup_opt(&s->rdma_log_level, v) < 0)
        FAIL("out of memory");
    if ((v = getenv_fn("RDMA_SOCKET")) != NULL && v[0] != '\0' && dup_opt(&s->rdma_socket, v) < 0)
        FAIL("out of memory");

    st = S3R_ERR_INVALID_ARG;
    if (s->part_size < S3C_MIN_PART_SIZE)
        FAIL("part_size %llu is below the S3 minimum of 5 MiB", (unsigned long long)s->part_size);
    if (s->multipart_threshold < s->part_size)
        s->multipart_threshold = s->part_size;
    if (s->anonymous)
        s->use_rdma = false; /* no RDMA session without an access key */
    if (!s->use_rdma)
        s->transport = S3R_TRANSPORT_HTTP;
    return S3R_OK;

fail:
    s3c_settings_free(s);
    return st;
}
