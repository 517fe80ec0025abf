/* The S3 layer's contract: its configuration, users and access-log
 * records. The layer authenticates requests (SigV4, V2), runs the
 * operation handlers and maps storage results to S3 responses, for any
 * frontend (s3_request.h's s3_frontend_t): src/http serves it over HTTP
 * (http/http_server.h starts and stops the server), src/rdmafe over RDMA
 * sessions (native requests, and the token path's byte moves). It knows
 * nothing of RDMA: src/server composes them with storage and rdma. */
#ifndef S3R_S3_SERVER_H
#define S3R_S3_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/storage.h"

typedef struct s3_user {
    char *access_key; /* also the user's canonical id in ACLs */
    char *secret_key;
    char *display_name; /* the DisplayName of ACLs and listings; NULL: access_key */
    char *email;        /* resolves ACL grants by e-mail address to this user; NULL: none */
} s3_user_t;

/* What carried a request: plain HTTP, HTTP with an s3r1 x-amz-rdma-token
 * (the bytes by RDMA), or a native request on an RDMA session. */
typedef enum s3_transport {
    S3_TRANSPORT_HTTP = 0,
    S3_TRANSPORT_TOKEN,
    S3_TRANSPORT_NATIVE,
    S3_TRANSPORT_COUNT
} s3_transport_t;

/* "http", "token", "native". */
const char *s3_transport_name(s3_transport_t t);

/* One finished request, for an access log. Every pointer is borrowed for
 * the call only; the strings are as the client sent them (decoded), so they
 * may hold any byte but NUL: escape them. */
typedef struct s3_access_record {
    int64_t start_ms;       /* unix milliseconds when the request arrived */
    const char *remote;     /* "ip:port", or the RDMA session's peer */
    const char *access_key; /* NULL: anonymous or not authenticated */
    const char *op;         /* the operation's name (s3_op_t.name), "-" when none */
    const char *method;
    const char *bucket, *key; /* NULL when absent */
    const char *resource;     /* "/bucket/key" or the server's own path; NULL: unrouted */
    int status;               /* 0: the connection ended before a reply */
    const char *error_code;   /* the S3 error code replied, NULL when none */
    uint64_t bytes_in;        /* request body bytes (token PUT: RDMA-read) */
    uint64_t bytes_out;       /* reply body bytes (token GET: RDMA-written) */
    uint64_t duration_us;     /* arrival to the end of the reply */
    s3_transport_t transport;
    const char *request_id;
} s3_access_record_t;

/* Called once per finished request by the thread that ran it (many at
 * once): it must be thread-safe and should be quick. */
typedef void (*s3_access_fn)(void *ctx, const s3_access_record_t *rec);

struct buf;
struct s3_token_mover;

/* The RDMA transport's figures on GET /stats. */
typedef struct s3_rdma_stats {
    bool enabled; /* the RDMA session port is up */
    unsigned sessions;
    unsigned long native_dropped, native_malformed;
} s3_rdma_stats_t;

/* The RDMA transport as the server's own pages see it (src/rdmafe gives
 * it; ctx is its argument). */
typedef struct s3_rdma_report {
    void *ctx;
    /* Appends its families to the GET /metrics page (zeros when RDMA is
     * off, so a scrape always has them). */
    void (*metrics)(void *ctx, struct buf *out);
    void (*stats)(void *ctx, s3_rdma_stats_t *st);
} s3_rdma_report_t;

typedef struct s3_server_config {
    /* The plain HTTP listener: host "" listens on every address (IPv6 and
     * IPv4 where the host has both); http_off opens none. */
    bool http_off;
    const char *listen_host; /* "127.0.0.1", "::1", "" */
    int port;                /* 9000 */
    /* The HTTPS listener, on when tls_cert_path is set (with tls_key_path):
     * same host rules. The files are read at start and again on
     * http_server_reload_tls. */
    const char *tls_cert_path;
    const char *tls_key_path;
    const char *tls_host;
    int tls_port;
    /* The RDMA session endpoint named to authenticated clients in the
     * x-s3rdma-rdma-endpoint response header: "host:port" as given, "" for
     * the address the client reached this server at with rdma_advertise_port,
     * NULL for no header (no session port). */
    const char *rdma_advertise;
    int rdma_advertise_port;
    /* The other gateways' HTTP endpoints, comma-separated, named to
     * authenticated clients in the x-s3rdma-peers response header (checked
     * by the server's configuration); NULL for no header. */
    const char *peers;
    const char *region;         /* "us-east-1": what GetBucketLocation reports */
    const char *const *domains; /* virtual-host suffixes: "localhost" serves bucket.localhost */
    size_t n_domains;
    const s3_user_t *users; /* borrowed; must outlive the server */
    size_t n_users;
    unsigned max_buckets_per_user; /* CreateBucket past it: TooManyBuckets (0: the default) */
    /* Bytes of request documents (XML and policy bodies) buffered at once,
     * server-wide; an access key, and anonymous requests together, hold at
     * most half; past either a request gets 503 SlowDown. 0: the default
     * (S3R_DOCUMENT_MEMORY). */
    unsigned long long max_document_memory;
    /* etag: fast. A PutObject's or UploadPart's body gets CRC32C (stored and
     * replied as x-amz-checksum-crc32c) instead of MD5, and an opaque ETag
     * shaped as a one-part multipart one; with Content-MD5 sent, MD5 is
     * computed, checked and is the ETag as usual. POST forms and copies
     * (CopyObject, UploadPartCopy) keep their MD5 ETags. */
    bool etag_fast;
    /* Accept Signature Version 2 (HMAC-SHA1: header, presigned query and POST
     * policy); false refuses it with AccessDenied. */
    bool signature_v2;
    /* SSE-S3 master keys (s3/sse.h; borrowed, must outlive the server), NULL
     * or none: SSE-S3 and default encryption refused. */
    const struct s3_sse_keys *sse_keys;
    /* The SSE-KMS keyring (the built-in key provider; borrowed), NULL or
     * none: SSE-KMS refused. */
    const struct s3_sse_keys *sse_kms_keys;
    /* Accept SSE-C keys over plain HTTP and the native protocol (tests
     * only: the key crosses the network in the clear). */
    bool sse_c_plain;
    /* Seconds in the lifecycle runner's day (lifecycle.day_seconds): 86400,
     * or shorter to test rules; 0 means 86400. Replies' headers count real
     * days (S3_LC_DAY_S). */
    unsigned lifecycle_day_s;
    stor_t *store; /* borrowed */
    /* The token path's byte mover (borrowed); NULL when RDMA is disabled:
     * s3r1 tokens are then declined (501). */
    const struct s3_token_mover *token_mover;
    /* The RDMA figures of GET /metrics and /stats (borrowed; s3rdmad always
     * gives one, RDMA on or off); NULL: the metrics page has no RDMA
     * families and /stats shows RDMA off. */
    const s3_rdma_report_t *rdma_report;

    /* Connection limits (docs/limits.md). 0 in max_connections, idle_timeout_s
     * or body_rate_window_s means the S3R_HTTP_* default; 0 in the others
     * turns that limit off. */
    unsigned max_connections;         /* at once; further ones are not accepted */
    unsigned max_connections_per_ip;  /* at once from one client address */
    unsigned idle_timeout_s;          /* no byte either way for this long: closed */
    unsigned head_timeout_s;          /* request line + headers must arrive within this */
    unsigned long long min_body_rate; /* bytes/s a request body must keep up... */
    unsigned body_rate_window_s;      /* ...averaged over windows this long */

    /* Observability (docs/operations.md). */
    bool metrics_enabled;      /* serve GET /metrics; off: /metrics is an S3 path */
    const char *metrics_token; /* the Bearer token /metrics requires; NULL: public */
    s3_access_fn access_log;   /* NULL: no access log */
    void *access_log_ctx;
} s3_server_config_t;

typedef struct s3_server s3_server_t;

/* The server is started and stopped by the HTTP frontend, which holds it
 * (src/http/http_server.h: http_server_start, http_server_stop). */

/* Whether GET /health/ready answers 200: set true once every listener is
 * up (the server starts not ready); http_server_stop clears it. Ready
 * also needs the store to be ready (stor_ready). */
void s3_server_set_ready(s3_server_t *srv, bool ready);

#endif
