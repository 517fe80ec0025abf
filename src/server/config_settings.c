/* The one table of s3rdmad's settings: each one's YAML key, flag,
 * environment variable, default, type, range and help (config_table.h). */
#include <stddef.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "server/config.h"
#include "server/config_table.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

static const char *const durability_words[] = {"fsync", "relaxed", NULL}; /* server_durability_t */
static const char *const etag_words[] = {"md5", "fast", NULL};            /* server_etag_t */
static const char *const rdma_poll_words[] = {"adaptive", "busy", NULL};  /* server_rdma_poll_t */
static const char *const backend_words[] = {"local", "rados", NULL}; /* server_storage_backend_t */
static const char *const metrics_auth_words[] = {"bearer", "public",
                                                 NULL};                 /* server_metrics_auth_t */
static const char *const log_format_words[] = {"json", "common", NULL}; /* server_log_format_t */

#define OFF(f) offsetof(server_config_t, f)
#define TEXT(key, flag, env, dflt, field, help)                                                    \
    {                                                                                              \
        key, flag, env, dflt, T_TEXT, OFF(field), 0, 0, NULL, help                                 \
    }
#define SECRET(key, flag, env, dflt, field, help)                                                  \
    {                                                                                              \
        key, flag, env, dflt, T_SECRET, OFF(field), 0, 0, NULL, help                               \
    }
#define BOOL(key, flag, env, dflt, field, help)                                                    \
    {                                                                                              \
        key, flag, env, dflt, T_BOOL, OFF(field), 0, 0, NULL, help                                 \
    }
#define COUNT(key, flag, env, dflt, field, lo, hi, help)                                           \
    {                                                                                              \
        key, flag, env, dflt, T_COUNT, OFF(field), lo, hi, NULL, help                              \
    }
#define SIZE(key, flag, env, dflt, field, lo, hi, help)                                            \
    {                                                                                              \
        key, flag, env, dflt, T_SIZE, OFF(field), lo, hi, NULL, help                               \
    }
#define ADDR(key, flag, env, dflt, field, flags, help)                                             \
    {                                                                                              \
        key, flag, env, dflt, T_ADDR, OFF(field), flags, 0, NULL, help                             \
    }
#define CHOICE(key, flag, env, dflt, field, words, help)                                           \
    {                                                                                              \
        key, flag, env, dflt, T_CHOICE, OFF(field), 0, 0, words, help                              \
    }

const setting_t server_settings[] = {
    TEXT("data_dir", "data", "S3RDMA_DATA", "./data", data_dir,
         "directory for objects and the index"),
    ADDR("listen", "listen", "S3RDMA_LISTEN", "127.0.0.1:9000", listen, ADDR_OFF_OK,
         "plain HTTP address HOST:PORT, [V6]:PORT or :PORT (every address); off = HTTPS only"),
    CHOICE("durability", "durability", "S3RDMA_DURABILITY", "fsync", durability, durability_words,
           "fsync (survives power loss) or relaxed (survives kill -9)"),
    CHOICE("etag", "etag", "S3RDMA_ETAG", "md5", etag, etag_words,
           "md5 (a PutObject's ETag is its MD5) or fast (an opaque ETag, integrity from CRC32C: "
           "no MD5 unless Content-MD5 is sent)"),
    BOOL("signature_v2", "signature-v2", "S3RDMA_SIGNATURE_V2", "true", signature_v2,
         "true or false: accept Signature Version 2 (HMAC-SHA1, legacy tools) besides SigV4"),
    TEXT("region", "region", "S3RDMA_REGION", "us-east-1", region, "region reported to clients"),
    CHOICE("log_level", "log-level", "S3RDMA_LOG_LEVEL", "info", log_level, log_level_names,
           "error, warn, info or debug"),
    TEXT("domains", "domains", "S3RDMA_DOMAINS", "localhost", domains,
         "comma-separated virtual-host domains (bucket.DOMAIN)"),
    TEXT("peers", "peers", "S3RDMA_PEERS", "", peers,
         "comma-separated HTTP endpoints of the other gateways (http://HOST:PORT), advertised to "
         "authenticated clients in x-s3rdma-peers so a client given one gateway uses them all"),
    COUNT("max_buckets_per_user", "max-buckets-per-user", "S3RDMA_MAX_BUCKETS_PER_USER",
          STR(S3R_MAX_BUCKETS_PER_USER), max_buckets_per_user, 1, 1000000,
          "buckets one access key may own; past it CreateBucket is TooManyBuckets"),
    SIZE("max_document_memory", "max-document-memory", "S3RDMA_MAX_DOCUMENT_MEMORY", "256MiB",
         max_document_memory, S3R_DOCUMENT_MEMORY_MIN, 1ULL << 40,
         "bytes of request documents (XML and policy bodies, up to 2 MiB each) held in memory at "
         "once, server-wide; one access key (and anonymous requests together) may hold half; past "
         "it 503 SlowDown"),
    BOOL("rdma.enabled", "rdma-enabled", "S3RDMA_RDMA_ENABLED", "true", rdma.enabled,
         "true or false: the RDMA session port and the token path"),
    BOOL("rdma.required", "rdma-required", "S3RDMA_RDMA_REQUIRED", "true", rdma.required,
         "true: the server does not start when the RDMA session port cannot open; false: it "
         "serves HTTP only then (tokens declined with 501)"),
    ADDR("rdma.listen", "rdma-listen", "S3RDMA_RDMA_LISTEN", "", rdma.listen, ADDR_EMPTY_OK,
         "RDMA session address HOST:PORT, [V6]:PORT or :PORT (default: the HTTP host and "
         "rdma.port)"),
    COUNT("rdma.port", "rdma-port", "S3RDMA_RDMA_PORT", "9100", rdma.port, 0, 65535,
          "RDMA session port when rdma.listen is not given"),
    ADDR("rdma.advertise", "rdma-advertise", "S3RDMA_RDMA_ADVERTISE", "", rdma.advertise,
         ADDR_EMPTY_OK,
         "the session endpoint HOST:PORT named to clients in x-s3rdma-rdma-endpoint (default: "
         "the session listener's; on every address, the one the client reached)"),
    COUNT("rdma.workers", "rdma-workers", "S3RDMA_RDMA_WORKERS", "0", rdma.workers, 0, 256,
          "RDMA progress threads (0 = one per core)"),
    COUNT("rdma.max_sessions", "rdma-max-sessions", "S3RDMA_RDMA_MAX_SESSIONS",
          STR(S3R_MAX_SESSIONS), rdma.max_sessions, 1, 65536,
          "authenticated RDMA sessions at once; further ones are refused"),
    COUNT("rdma.max_sessions_per_user", "rdma-max-sessions-per-user",
          "S3RDMA_RDMA_MAX_SESSIONS_PER_USER", STR(S3R_MAX_SESSIONS_PER_USER),
          rdma.max_sessions_per_user, 1, 65536, "RDMA sessions one access key may hold at once"),
    COUNT("rdma.max_pending", "rdma-max-pending", "S3RDMA_RDMA_MAX_PENDING",
          STR(S3R_RDMA_MAX_PENDING), rdma.max_pending, 1, 65536,
          "session-port connections not yet authenticated; past it the oldest of the busiest "
          "source is evicted"),
    COUNT("rdma.max_pending_per_source", "rdma-max-pending-per-source",
          "S3RDMA_RDMA_MAX_PENDING_PER_SOURCE", STR(S3R_RDMA_PENDING_PER_SOURCE),
          rdma.max_pending_per_source, 1, 65536,
          "unauthenticated session-port connections from one IP address (or local uid)"),
    COUNT("rdma.native_threads", "rdma-native-threads", "S3RDMA_RDMA_NATIVE_THREADS",
          STR(S3R_NATIVE_THREADS), rdma.native_threads, 1, 256,
          "threads running native requests that may block (writes, listings, multipart)"),
    COUNT("rdma.max_native_per_session", "rdma-max-native-per-session",
          "S3RDMA_RDMA_MAX_NATIVE_PER_SESSION", STR(S3R_NATIVE_PER_SESSION),
          rdma.max_native_per_session, 1, 65536,
          "native requests in flight on one session; past it: SlowDown"),
    COUNT("rdma.max_native", "rdma-max-native", "S3RDMA_RDMA_MAX_NATIVE", STR(S3R_NATIVE_QUEUED),
          rdma.max_native, 1, 1048576,
          "native requests in flight on the server (each holds up to 96 KiB); past it: SlowDown"),
    COUNT("rdma.user_share", "rdma-user-share", "S3RDMA_RDMA_USER_SHARE", STR(S3R_RDMA_USER_SHARE),
          rdma.user_share, 1, 100,
          "percent of each server-wide RDMA pool (native requests, executor threads, transfers, "
          "staging) one access key may hold; past it: SlowDown (100 = no share)"),
    COUNT("rdma.stall_ms", "rdma-stall-ms", "S3RDMA_RDMA_STALL_MS", STR(S3R_RDMA_STALL_MS),
          rdma.stall_ms, 10, 600000,
          "milliseconds an RDMA transfer may make no progress before it fails and gives back "
          "its staging and slot"),
    CHOICE("rdma.poll", "rdma-poll", "S3RDMA_RDMA_POLL", "adaptive", rdma.poll, rdma_poll_words,
           "adaptive (progress threads sleep when idle; a request that finds them asleep pays a "
           "thread wake-up) or busy (they never sleep: no wake-up, one core per progress thread "
           "spent even when idle)"),
    COUNT("rdma.slice_us", "rdma-slice-us", "S3RDMA_RDMA_SLICE_US", STR(S3R_RDMA_SLICE_US),
          rdma.slice_us, 0, 100000,
          "scheduler slice the progress threads ask for, in us (Linux 6.12+: with a short one, "
          "e.g. 100, a woken progress thread runs before threads on the default slice, same CPU "
          "share; 0 = the kernel's default)"),
    COUNT("rdma.priority", "rdma-priority", "S3RDMA_RDMA_PRIORITY", STR(S3R_RDMA_PRIORITY),
          rdma.priority, 0, 20,
          "nice levels the progress threads take below the rest of the server (more CPU share "
          "on a contended core; needs CAP_SYS_NICE or RLIMIT_NICE, else they stay; 0 = none)"),
    TEXT("rdma.socket", "rdma-socket", "S3RDMA_RDMA_SOCKET", "", rdma.socket,
         "Unix socket for local RDMA clients: @NAME (abstract), a path, or off "
         "(default @s3rdma.PORT)"),
    {"rdma.trusted_uids", "rdma-trusted-uids", "S3RDMA_RDMA_TRUSTED_UIDS", "", T_UIDS,
     OFF(rdma.trusted_uids), 0, 0, NULL,
     "comma-separated uids (besides the server's own) whose Unix-socket sessions may use "
     "shared-memory transports"},
    SIZE("rdma.staging", "rdma-staging", "S3RDMA_RDMA_STAGING", "64MiB", rdma.staging, 8192,
         64ULL << 30, "registered staging memory for the data mover (at least two chunks)"),
    SIZE("rdma.chunk", "rdma-chunk", "S3RDMA_RDMA_CHUNK", "1MiB", rdma.chunk, 4096, 64ULL << 20,
         "data mover pipeline chunk (staging is split into chunks of this size)"),
    COUNT("http.max_connections", "http-max-connections", "S3RDMA_HTTP_MAX_CONNECTIONS",
          STR(S3R_HTTP_MAX_CONNECTIONS), http.max_connections, 1, 1000000,
          "HTTP connections at once, per listener; further ones wait to be accepted"),
    COUNT("http.max_connections_per_ip", "http-max-connections-per-ip",
          "S3RDMA_HTTP_MAX_CONNECTIONS_PER_IP", STR(S3R_HTTP_MAX_CONNECTIONS_PER_IP),
          http.max_connections_per_ip, 0, 1000000,
          "HTTP connections at once from one client address, per listener; more are closed "
          "(0 = no limit)"),
    COUNT("http.idle_timeout", "http-idle-timeout", "S3RDMA_HTTP_IDLE_TIMEOUT",
          STR(S3R_HTTP_IDLE_TIMEOUT_S), http.idle_timeout_s, 1, 86400,
          "seconds a connection may send and take nothing before it is closed"),
    COUNT("http.head_timeout", "http-head-timeout", "S3RDMA_HTTP_HEAD_TIMEOUT",
          STR(S3R_HTTP_HEAD_TIMEOUT_S), http.head_timeout_s, 0, 86400,
          "seconds to receive a request line and headers, however they trickle (0 = no limit)"),
    SIZE("http.min_body_rate", "http-min-body-rate", "S3RDMA_HTTP_MIN_BODY_RATE",
         STR(S3R_HTTP_MIN_BODY_RATE), http.min_body_rate, 0, 1ULL << 30,
         "request body bytes per second a client must keep up, e.g. 1KiB (0 = no limit)"),
    COUNT("http.body_rate_window", "http-body-rate-window", "S3RDMA_HTTP_BODY_RATE_WINDOW",
          STR(S3R_HTTP_BODY_RATE_WINDOW_S), http.body_rate_window_s, 1, 3600,
          "seconds over which the body rate is averaged"),
    TEXT("tls.cert", "tls-cert", "S3RDMA_TLS_CERT", "", tls.cert,
         "PEM certificate chain file; with tls.key, HTTPS is served on tls.listen"),
    TEXT("tls.key", "tls-key", "S3RDMA_TLS_KEY", "", tls.key, "PEM private key file"),
    ADDR("tls.listen", "tls-listen", "S3RDMA_TLS_LISTEN", "127.0.0.1:9443", tls.listen, 0,
         "HTTPS address HOST:PORT, [V6]:PORT or :PORT (every address)"),
    /* Encryption at rest (docs/storage.md). */
    TEXT("sse.master_key_file", "sse-master-key-file", "S3RDMA_SSE_MASTER_KEY_FILE", "",
         sse.master_key_file,
         "file of SSE-S3 master keys (64 hex digits a line; the first encrypts, all decrypt; "
         "mode 600); empty: SSE-S3 and default encryption are refused"),
    TEXT("sse.kms_keyring_file", "sse-kms-keyring-file", "S3RDMA_SSE_KMS_KEYRING_FILE", "",
         sse.kms_keyring_file,
         "SSE-KMS's built-in key provider, a local keyring for tests and edge sites (not a KMS): "
         "\"NAME HEX64\" a line, the first the default key; mode 600; empty: SSE-KMS refused"),
    BOOL("sse.c_over_plain_http", "sse-c-over-plain-http", "S3RDMA_SSE_C_OVER_PLAIN_HTTP", "false",
         sse.c_over_plain,
         "true or false: accept SSE-C customer keys over plain HTTP and the native protocol "
         "(for tests: the key crosses the network in the clear)"),
    /* Lifecycle (docs/operations.md). */
    COUNT("lifecycle.day_seconds", "lifecycle-day-seconds", "S3RDMA_LIFECYCLE_DAY_SECONDS", "86400",
          lifecycle.day_seconds, 1, 86400,
          "seconds in the lifecycle runner's day: 86400; shorter only to test rules (replies' "
          "x-amz-expiration and abort dates still count real days)"),
    /* Storage (docs/storage.md). */
    CHOICE("storage.backend", "storage-backend", "S3RDMA_STORAGE_BACKEND", "local", storage.backend,
           backend_words, "local (LMDB + files in data_dir) or rados (a Ceph cluster)"),
    SIZE("storage.inline_max", "storage-inline-max", "S3RDMA_STORAGE_INLINE_MAX",
         STR(S3R_INLINE_MAX_DEFAULT), storage.inline_max, 0, S3R_INLINE_MAX_LIMIT,
         "objects of at most this size are kept in the index record, with no file of their own "
         "(local backend; 0 = never)"),
    TEXT("storage.rados.conf", "storage-rados-conf", "S3RDMA_STORAGE_RADOS_CONF", "",
         storage.rados.conf, "the cluster's ceph.conf (default: librados' search)"),
    TEXT("storage.rados.user", "storage-rados-user", "S3RDMA_STORAGE_RADOS_USER", "admin",
         storage.rados.user, "RADOS client id"),
    TEXT("storage.rados.keyring", "storage-rados-keyring", "S3RDMA_STORAGE_RADOS_KEYRING", "",
         storage.rados.keyring, "keyring file (default: the conf's)"),
    TEXT("storage.rados.pool", "storage-rados-pool", "S3RDMA_STORAGE_RADOS_POOL", "",
         storage.rados.pool, "pool for object data (required with the rados backend)"),
    TEXT("storage.rados.index_pool", "storage-rados-index-pool", "S3RDMA_STORAGE_RADOS_INDEX_POOL",
         "", storage.rados.index_pool,
         "pool for buckets, indexes and uploads (default: the data pool)"),
    COUNT("storage.rados.gc_grace", "storage-rados-gc-grace", "S3RDMA_STORAGE_RADOS_GC_GRACE",
          "900", storage.rados.gc_grace_s, 0, 7 * 86400,
          "seconds replaced data stays readable, and the age under which the full sweep spares "
          "unreferenced data"),
    COUNT("storage.rados.op_timeout", "storage-rados-op-timeout", "S3RDMA_STORAGE_RADOS_OP_TIMEOUT",
          "10", storage.rados.op_timeout_s, 1, 3600,
          "seconds a cluster call may take before the request fails with 503 SlowDown"),
    COUNT("storage.rados.index_shards", "storage-rados-index-shards",
          "S3RDMA_STORAGE_RADOS_INDEX_SHARDS", "16", storage.rados.index_shards, 1, 256,
          "index objects each new bucket's keys are spread over (fixed at creation; 1: one, as "
          "before sharding)"),
    COUNT("storage.rados.lease", "storage-rados-lease", "S3RDMA_STORAGE_RADOS_LEASE", "30",
          storage.rados.lease_s, 2, 3600,
          "seconds of a gateway's liveness lease: another gateway recovers its intent log this "
          "long after it stopped renewing"),
    BOOL("storage.rados.full_sweep", "storage-rados-full-sweep", "S3RDMA_STORAGE_RADOS_FULL_SWEEP",
         "false", storage.rados.full_sweep,
         "true or false: at start, also list the whole data pool and remove the pieces nothing "
         "references (an operator's action: a full pool listing; false: only dead gateways' "
         "intent logs are read)"),
    TEXT("debug.rados_crash_at", "debug-rados-crash-at", "S3RDMA_DEBUG_RADOS_CRASH_AT", "",
         storage.rados.crash_at,
         "for crash tests only: the RADOS write steps at which the gateway kills itself, "
         "comma-separated, each step=stop to stop (SIGSTOP) instead (put-intent, put-pieces, "
         "put-switch, part-pieces, complete-intent, complete-claim, complete-switch, "
         "delete-intent, delete-switch, version-intent, version-switch, abort-claim, "
         "bucket-uploads, list-batch; s3rdmad reshard: reshard-batch-read, reshard-copied, "
         "reshard-fenced, reshard-removed)"),
    COUNT("debug.rados_sweep_page_ms", "debug-rados-sweep-page-ms",
          "S3RDMA_DEBUG_RADOS_SWEEP_PAGE_MS", "0", storage.rados.sweep_page_ms, 0, 60000,
          "for tests only: milliseconds the RADOS full sweep pauses before each page of 1,024 "
          "names it lists (0: none)"),
    /* Observability (docs/operations.md). */
    BOOL("metrics.enabled", "metrics-enabled", "S3RDMA_METRICS_ENABLED", "false", metrics.enabled,
         "true or false: serve Prometheus metrics at GET /metrics"),
    CHOICE("metrics.auth", "metrics-auth", "S3RDMA_METRICS_AUTH", "bearer", metrics.auth,
           metrics_auth_words,
           "bearer (Authorization: Bearer <metrics.token>) or public (no authentication)"),
    SECRET("metrics.token", "metrics-token", "S3RDMA_METRICS_TOKEN", "", metrics.token,
           "the bearer token /metrics requires (metrics.auth bearer)"),
    TEXT("log.access", "log-access", "S3RDMA_LOG_ACCESS", "off", log.access,
         "access log: off, stdout, or a file path (appended to)"),
    CHOICE("log.access_format", "log-access-format", "S3RDMA_LOG_ACCESS_FORMAT", "json",
           log.access_format, log_format_words, "access log lines: json or common"),
};
const size_t server_n_settings = sizeof(server_settings) / sizeof(server_settings[0]);
_Static_assert(sizeof(server_settings) / sizeof(server_settings[0]) <= SERVER_MAX_SETTINGS,
               "raise SERVER_MAX_SETTINGS");
