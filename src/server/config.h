/* s3rdmad settings: defaults, YAML file, S3RDMA_* environment variables and
 * command-line flags, with precedence flag > env > file > default. Every
 * setting is declared once in config_settings.c's table (key, flag, variable, default,
 * type, range) and parsed once, as it is read, into the typed fields below:
 * the rest of the server never sees a setting as text. */
#ifndef S3R_SERVER_CONFIG_H
#define S3R_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/s3_server.h"

#define SERVER_MAX_TRUSTED_UIDS 64

/* A listen address: "HOST:PORT", "[V6]:PORT", ":PORT" (every address) or,
 * where a setting allows it, "off". */
typedef struct server_addr {
    bool off;       /* "off": the listener is not opened */
    bool set;       /* false: the setting was left empty ("" default) */
    char host[256]; /* without brackets; "" = every address (IPv6 and IPv4) */
    int port;
} server_addr_t;

typedef enum server_durability {
    SERVER_DURABILITY_FSYNC = 0, /* "fsync" */
    SERVER_DURABILITY_RELAXED,   /* "relaxed" */
} server_durability_t;

typedef enum server_etag {
    SERVER_ETAG_MD5 = 0, /* "md5": a PutObject's ETag is the body's MD5 */
    SERVER_ETAG_FAST,    /* "fast": an opaque ETag and CRC32C (docs/storage.md) */
} server_etag_t;

typedef enum server_rdma_poll {
    SERVER_RDMA_POLL_ADAPTIVE = 0, /* "adaptive": progress threads sleep when idle */
    SERVER_RDMA_POLL_BUSY,         /* "busy": progress threads never sleep */
} server_rdma_poll_t;

typedef enum server_storage_backend {
    SERVER_STORAGE_LOCAL = 0, /* "local": LMDB + files in data_dir */
    SERVER_STORAGE_RADOS,     /* "rados": a Ceph cluster */
} server_storage_backend_t;

typedef enum server_metrics_auth {
    SERVER_METRICS_BEARER = 0, /* "bearer": Authorization: Bearer <metrics.token> */
    SERVER_METRICS_PUBLIC,     /* "public": no authentication */
} server_metrics_auth_t;

typedef enum server_log_format {
    SERVER_LOG_JSON = 0, /* "json" */
    SERVER_LOG_COMMON,   /* "common" */
} server_log_format_t;

#define SERVER_MAX_PEERS      15   /* with the gateway itself, a client's S3C_MAX_ENDPOINTS */
#define SERVER_MAX_PEERS_TEXT 2048 /* bytes of the peers setting (one response header) */
#define SERVER_MAX_SETTINGS   80   /* config_settings.c's table holds at most this many */

typedef struct server_config {
    char *data_dir;
    server_addr_t listen; /* plain HTTP; off = HTTPS only */
    server_durability_t durability;
    server_etag_t etag;
    bool signature_v2; /* accept Signature Version 2 (docs/security.md) */
    char *region;
    int log_level; /* enum log_level (common/log.h) */
    char *domains; /* comma-separated virtual-host suffixes */
    /* The other gateways' HTTP endpoints, comma-separated ("" for none),
     * named to authenticated clients in x-s3rdma-peers; checked by
     * server_config_load (SERVER_MAX_PEERS URLs, http:// or https://). */
    char *peers;
    unsigned max_buckets_per_user;
    uint64_t max_document_memory; /* request documents buffered at once (S3R_DOCUMENT_MEMORY) */
    struct {
        unsigned day_seconds; /* a lifecycle rule's day: 86400, shorter for tests */
    } lifecycle;
    struct {
        bool enabled;
        bool required;           /* the server refuses to start when the port cannot open */
        server_addr_t listen;    /* !set: the first HTTP listener's host and port */
        unsigned port;           /* the port when listen is not set */
        server_addr_t advertise; /* !set: derived (docs/protocol.md §1) */
        unsigned workers;
        unsigned max_sessions;
        unsigned max_sessions_per_user;
        unsigned max_pending;
        unsigned max_pending_per_source;
        unsigned native_threads;
        unsigned max_native_per_session;
        unsigned max_native;
        unsigned user_share; /* percent of each pool one access key may hold */
        unsigned stall_ms;   /* a transfer making no progress this long fails */
        int poll;            /* server_rdma_poll_t */
        unsigned slice_us;   /* the progress threads' scheduler slice; 0: the kernel's */
        unsigned priority;   /* nice levels the progress threads take below the server's */
        char *socket;        /* "" = @s3rdma.PORT, "off" = none */
        unsigned trusted_uids[SERVER_MAX_TRUSTED_UIDS];
        size_t n_trusted_uids;
        uint64_t staging;
        uint64_t chunk;
    } rdma;
    struct {
        unsigned max_connections;
        unsigned max_connections_per_ip; /* 0 = no limit */
        unsigned idle_timeout_s;
        unsigned head_timeout_s; /* 0 = no limit */
        uint64_t min_body_rate;  /* bytes per second; 0 = no limit */
        unsigned body_rate_window_s;
    } http;
    /* Encryption at rest (docs/storage.md, "Encryption at rest"). */
    struct {
        char *master_key_file;  /* SSE-S3 master keys; "" = SSE-S3 refused */
        char *kms_keyring_file; /* SSE-KMS local keyring; "" = SSE-KMS refused */
        bool c_over_plain;      /* accept SSE-C keys without TLS (tests only) */
    } sse;
    struct {
        char *cert; /* PEM certificate chain; with key, HTTPS is on */
        char *key;  /* PEM private key */
        server_addr_t listen;
    } tls;
    /* Storage (docs/storage.md). */
    struct {
        int backend;         /* server_storage_backend_t */
        uint64_t inline_max; /* bytes: objects kept in the index (local) */
        struct {
            char *conf;          /* ceph.conf path; "" = librados' search */
            char *user;          /* client id: "admin" */
            char *keyring;       /* "" = the conf's */
            char *pool;          /* data pool; required with rados */
            char *index_pool;    /* "" = the data pool */
            unsigned gc_grace_s; /* seconds replaced data stays readable */
            unsigned op_timeout_s;
            unsigned index_shards;  /* index objects per new bucket */
            unsigned lease_s;       /* a gateway's liveness lease */
            bool full_sweep;        /* list the whole data pool at start */
            char *crash_at;         /* debug.rados_crash_at: "" = never */
            unsigned sweep_page_ms; /* debug.rados_sweep_page_ms: 0 = none */
        } rados;
    } storage;
    /* Observability (docs/operations.md). */
    struct {
        bool enabled; /* GET /metrics */
        int auth;     /* server_metrics_auth_t */
        char *token;  /* the Bearer token (auth bearer) */
    } metrics;
    struct {
        char *access;      /* "off" | "stdout" | a file path */
        int access_format; /* server_log_format_t */
    } log;
    /* Each setting's text as last set (the default, the file, the
     * environment or a flag), for --print-config; indexed like config_settings.c's
     * table. */
    char *texts[SERVER_MAX_SETTINGS];
    s3_user_t *users; /* from the file's users: list and S3RDMA_ROOT_USER/PASSWORD */
    size_t n_users;
    char *config_path;
} server_config_t;

/* Fills cfg from argv, the environment and the config file. Prints the
 * problem (the setting, where its value came from, what it must be) to stderr
 * and returns -1 on bad input; returns 1 when --help, --version or
 * --print-config was handled (exit 0); 0 otherwise. cfg must be freed with server_config_free
 * whatever the result. */
int server_config_load(server_config_t *cfg, int argc, char **argv);
void server_config_free(server_config_t *cfg);

/* Parses a listen address: "HOST:PORT", "[V6]:PORT", ":PORT". Returns -1 if
 * malformed. */
int server_parse_addr(const char *s, server_addr_t *addr_p);

/* Writes addr as a URL authority ("127.0.0.1:9000", "[::1]:9000"), naming an
 * every-address listener by its loopback ("127.0.0.1:9000"), so that the
 * result is an address a local client can connect to. */
void server_addr_format(const server_addr_t *addr, char *out, size_t out_len);

/* Adds a user (strings copied). Returns -1 when out of memory. */
int server_config_add_user(server_config_t *cfg, const char *access_key, const char *secret_key);

#endif
