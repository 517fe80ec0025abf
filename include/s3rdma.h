/* libs3rdma — the s3rdma C client library.
 *
 * An S3 client whose object bytes can travel by RDMA: over plain S3/HTTP
 * (libcurl, SigV4), over the token path (a signed S3 request with an
 * x-amz-rdma-token; the server RDMA-READs/WRITEs the caller's memory), over
 * the native protocol (whole operations as messages on the RDMA session,
 * no HTTP at all), or chosen per operation (AUTO).
 *
 * Conventions (see docs/client.md for the long form):
 *  - Every call returns an s3r_status_t: S3R_OK (0) or a negative error.
 *    s3r_strerror() names it; s3r_client_last_error() gives the details of the
 *    calling thread's last failed call (HTTP status, S3 <Code> and <Message>).
 *  - Output arguments end in _p, come last, and are written only on success.
 *  - Strings passed in are copied by the library before the call returns
 *    unless a comment says otherwise; buffers passed in are only used for the
 *    duration of the call.
 *  - Everything the library allocates for the caller is freed with the
 *    matching *_free call; every free/destroy accepts NULL as a no-op.
 *  - Threads: one s3r_client_t may be used by many threads at once. All calls
 *    block the calling thread only; the s3r_op_t calls below keep many
 *    requests in flight from one thread.
 */
#ifndef S3RDMA_H
#define S3RDMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of libs3rdma and of every program built with it: these three
 * lines are its one source (CMake reads them for the project version, the
 * pkg-config file and the programs' --version). */
#define S3RDMA_VERSION_MAJOR 0
#define S3RDMA_VERSION_MINOR 1
#define S3RDMA_VERSION_PATCH 0

#define S3RDMA_VERSION_XSTR_(x) #x
#define S3RDMA_VERSION_STR_(a, b, c)                                                               \
    S3RDMA_VERSION_XSTR_(a) "." S3RDMA_VERSION_XSTR_(b) "." S3RDMA_VERSION_XSTR_(c)
/* "MAJOR.MINOR.PATCH" as a string literal. */
#define S3RDMA_VERSION_STRING                                                                      \
    S3RDMA_VERSION_STR_(S3RDMA_VERSION_MAJOR, S3RDMA_VERSION_MINOR, S3RDMA_VERSION_PATCH)

/* ---- Status codes -------------------------------------------------------- */

/* X(name, value, description): the one table every status comes from. */
#define S3R_STATUS_MAP(X)                                                                          \
    X(S3R_OK, 0, "success")                                                                        \
    X(S3R_ERR_INVALID_ARG, -1, "invalid argument")                                                 \
    X(S3R_ERR_NOMEM, -2, "out of memory")                                                          \
    X(S3R_ERR_CONNECT, -3, "could not connect to the endpoint")                                    \
    X(S3R_ERR_TIMEOUT, -4, "operation timed out")                                                  \
    X(S3R_ERR_HTTP, -5, "HTTP transport error")                                                    \
    X(S3R_ERR_PROTOCOL, -6, "malformed or unexpected response from the server")                    \
    X(S3R_ERR_ACCESS_DENIED, -7, "access denied (credentials, signature or permissions)")          \
    X(S3R_ERR_NO_SUCH_BUCKET, -8, "no such bucket")                                                \
    X(S3R_ERR_NO_SUCH_KEY, -9, "no such key")                                                      \
    X(S3R_ERR_BUCKET_EXISTS, -10, "bucket already exists")                                         \
    X(S3R_ERR_BUCKET_NOT_EMPTY, -11, "bucket is not empty")                                        \
    X(S3R_ERR_INVALID_RANGE, -12, "requested range is not satisfiable")                            \
    X(S3R_ERR_SERVER, -13, "the server returned an S3 error")                                      \
    X(S3R_ERR_BUFFER_TOO_SMALL, -14, "object does not fit in the buffer")                          \
    X(S3R_ERR_RDMA_DECLINED, -15, "the server declined the RDMA transfer (501)")                   \
    X(S3R_ERR_RDMA_UNAVAILABLE, -16, "no RDMA session could be set up")                            \
    X(S3R_ERR_UNSUPPORTED, -17, "operation or transport not supported")                            \
    X(S3R_ERR_IO, -18, "local file I/O error")                                                     \
    X(S3R_ERR_TOO_LARGE, -19, "object or argument exceeds a limit")

typedef enum s3r_status {
#define S3R_STATUS_ENUM_(name, value, desc) name = (value),
    S3R_STATUS_MAP(S3R_STATUS_ENUM_)
#undef S3R_STATUS_ENUM_
} s3r_status_t;

/* A static, human-readable description of st ("unknown status" for values
 * outside the table). Never NULL; the caller must not free it. */
const char *s3r_strerror(s3r_status_t st);
/* The enumerator's name, e.g. "S3R_ERR_NO_SUCH_KEY" (static string). */
const char *s3r_status_name(s3r_status_t st);

/* Parses a size as the SPT knobs write them ("4096", "64K", "1MB", "1MiB",
 * "2g": suffixes are powers of 1024, as for RDMA_THRESHOLD_BYTES) into
 * *bytes_p. S3R_ERR_INVALID_ARG on anything else (a sign, trailing text,
 * overflow); *bytes_p is written only on success. */
s3r_status_t s3r_size_parse(const char *s, uint64_t *bytes_p);

/* ---- Client configuration ------------------------------------------------ */

typedef enum s3r_transport {
    S3R_TRANSPORT_DEFAULT = 0, /* in per-call options: use the client's transport */
    S3R_TRANSPORT_HTTP,        /* plain S3 over HTTP */
    S3R_TRANSPORT_TOKEN,       /* S3 over HTTP with RDMA data (x-amz-rdma-token) */
    S3R_TRANSPORT_NATIVE,      /* every operation as messages on the RDMA session */
    /* NATIVE when a session is (or can be) up and has a transport faster
     * than TCP emulation; HTTP when its transports are all TCP (emulated
     * RDMA is slower than HTTP); with no session, TOKEN from rdma_threshold
     * up (falling back as rdma_fallback says) and HTTP below */
    S3R_TRANSPORT_AUTO,
} s3r_transport_t;

/* Parses "http", "token" (also "rdma-token", "rdma"), "native", "auto".
 * Returns S3R_OK or S3R_ERR_INVALID_ARG. */
s3r_status_t s3r_transport_parse(const char *name, s3r_transport_t *transport_p);
/* "http", "token", "native", "auto" or "default" (static strings). */
const char *s3r_transport_name(s3r_transport_t t);

/* Client configuration. Always fill it with s3r_config_init() first, then set
 * what you need: fields may be added at the end in later versions. Every
 * string is copied by s3r_client_create(); the struct may be freed or reused
 * right after that call returns. */
typedef struct s3r_config {
    /* "http://127.0.0.1:9000"; several separated by commas are used round
     * robin (a connection failure moves on to the next). Required. */
    const char *endpoint;
    /* RDMA session endpoints "host:port[,host:port...]". NULL: the host of
     * the endpoint each HTTP endpoint advertises (its x-s3rdma-rdma-endpoint
     * response header, asked once before the first session; docs/protocol.md
     * §1), else its host with port 9100. The session is opened on the first
     * that answers; token requests then go to the HTTP endpoint at the same
     * index (or the first when there are fewer HTTP endpoints). */
    const char *rdma_endpoint;
    /* Required (at most 255 bytes each), unless anonymous or aws_credentials
     * (below). */
    const char *access_key;
    const char *secret_key;
    const char *region; /* NULL: "us-east-1" */

    s3r_transport_t transport;  /* default S3R_TRANSPORT_AUTO */
    uint64_t rdma_threshold;    /* AUTO uses RDMA from this size up; default 1 MiB, 0 = all */
    int rdma_fallback;          /* 1 (default): setup failure or 501 decline -> HTTP, logged once */
    const char *rdma_device;    /* UCX_NET_DEVICES value, or NULL */
    const char *rdma_local_ip;  /* bind the session's bootstrap socket here, or NULL */
    const char *rdma_log_level; /* UCX_LOG_LEVEL value, or NULL */
    int rdma_timeout_ms;        /* session connect + handshake; default 5000 */
    int use_rdma;               /* 1 (default); 0 forces every operation onto HTTP */

    uint64_t part_size;           /* multipart part size; default 8 MiB (min 5 MiB) */
    uint64_t multipart_threshold; /* PUTs larger than this go multipart; default 16 MiB */
    uint64_t sign_payload_max;    /* bodies up to this are signed with their real SHA-256,
                                     larger ones are sent UNSIGNED-PAYLOAD; default 64 KiB */
    long http_timeout_ms;         /* whole HTTP request; 0 (default) = none */
    long connect_timeout_ms;      /* TCP connect; default 5000 */
    unsigned max_cached_regions;  /* caller buffers kept registered (LRU); default 16 */
    int quiet;                    /* 1: never write to stderr (the one-time fallback notice) */
    /* The server's Unix socket for local sessions ("@name" or a path), "off"
     * for TCP only, or NULL: "@s3rdma.<port>" when the RDMA endpoint is a
     * loopback address (falling back to TCP). Only a local session of a uid
     * the server trusts gets shared-memory transports (docs/security.md). */
    const char *rdma_socket;
    /* Native transport: bodies up to this travel inline in the request
     * message, and replies up to this inline in the reply; larger ones by
     * RDMA. Default 16 KiB, at most 64 KiB (docs/protocol.md §4.5). */
    uint64_t native_inline;
    /* PEM file of the certificate authorities an https:// endpoint is
     * verified against; NULL: the system's. Verification is always on. */
    const char *ca_bundle;
    /* Parts of one s3r_object_put multipart upload in flight at once, each
     * on its own thread (the server hashes them on as many cores); default
     * 4, at most 64; 1: one after another. */
    unsigned parts_in_flight;
    /* 1 (default): when endpoint names one gateway, the gateways it
     * advertises in the x-s3rdma-peers header of its first successful
     * authenticated reply (its "peers" setting; docs/protocol.md §1) join
     * the endpoint list: requests then go round robin over all of them, a
     * refused connection moves on to the next, and the RDMA session may be
     * opened on any. Only peers with the endpoint's scheme are taken (an
     * https:// endpoint never adds an http:// one), at most 16 endpoints in
     * all. The client's signed requests go to those gateways. 0: only the
     * endpoints given. Ignored when endpoint names several. */
    int peer_discovery;
    /* 1 (default): a single PutObject carries x-amz-checksum-crc32c, the
     * body's CRC32C computed by the client (one pass over the body, as AWS
     * SDKs send a CRC on every PUT), which the server verifies and keeps;
     * a PUT into an object-lock bucket with a default retention needs it
     * (docs/client.md, "Checksums"); a multipart upload declares CRC32C
     * at its start, and each part carries its CRC32C, listed again in
     * Complete (object lock asks it of every part of a locked object).
     * 0: none. */
    int put_checksum;
    /* 1: anonymous requests, as AWS SDKs send them to public buckets
     * (boto3's signature_version=UNSIGNED, s3torchconnector's unsigned=True,
     * awscli's --no-sign-request): no signature and no Authorization,
     * x-amz-date or x-amz-content-sha256 header; access_key and secret_key
     * are not needed, and ignored. The server grants such a request what a
     * bucket policy or an ACL gives everyone and answers 403 AccessDenied
     * (S3R_ERR_ACCESS_DENIED) elsewhere (docs/security.md). It opens RDMA
     * sessions for access keys only, so an anonymous client goes over HTTP
     * alone: transport AUTO means HTTP, TOKEN or NATIVE makes
     * s3r_client_create fail (S3R_ERR_INVALID_ARG, the last error says why),
     * and s3r_presign_url has nothing to sign with (S3R_ERR_INVALID_ARG).
     * 0 (default): every request is signed with the keys. */
    int anonymous;
    /* 1: the keys are those of the AWS environment and profiles, found by
     * s3r_aws_settings_load(aws_profile) (NULL: AWS_PROFILE, else
     * "default") when s3r_client_create runs; access_key and secret_key
     * must then be NULL. Keys that carry an Expiration (a
     * credential_process's, a container endpoint's) are loaded again by the
     * first request signed within 5 minutes of it; a reload that fails
     * keeps the keys the client has and is tried again 10 s later. An RDMA
     * session stays on the keys it was opened with. 0 (default): access_key
     * and secret_key as given. */
    int aws_credentials;
    const char *aws_profile;
} s3r_config_t;

/* Fills cfg with the defaults above (all strings NULL). */
void s3r_config_init(s3r_config_t *cfg);

/* ---- Settings from the AWS environment and shared files -------------------- */

/* The connection settings an S3 user keeps outside the program, found as the
 * AWS CLI finds them (docs/client.md, "The AWS environment and profiles").
 * Every string is malloc'd and owned by the struct (s3r_aws_settings_free);
 * a setting found nowhere is NULL. The *_from fields name where each came
 * from ("AWS_ENDPOINT_URL", "profile", ...: static strings, NULL when not
 * found). */
typedef struct s3r_aws_settings {
    /* AWS_ENDPOINT_URL_S3 > AWS_ENDPOINT_URL > the profile's "services"
     * section s3 endpoint_url > its endpoint_url > its nested "s3 =" block's
     * endpoint_url; none of them when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is
     * true. */
    char *endpoint;
    /* The AWS CLI's order: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
     * AWS_SESSION_TOKEN; the credentials file's aws_access_key_id,
     * aws_secret_access_key, aws_session_token; the output of the profile's
     * credential_process (run by /bin/sh -c); the config file's keys; the
     * container credentials endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
     * or _FULL_URI, with AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE)). The
     * program and the endpoint are asked only when nothing before them has
     * keys; keys whose Expiration has passed are refused. A profile named by
     * the caller (not by AWS_PROFILE) beats the environment's keys, as the
     * AWS CLI's --profile does. keys_from: "AWS_ACCESS_KEY_ID", "profile",
     * "credential_process" or "container". */
    char *access_key, *secret_key, *session_token;
    char *region;        /* AWS_REGION > AWS_DEFAULT_REGION > profile region */
    char *ca_bundle;     /* AWS_CA_BUNDLE > profile ca_bundle */
    char *rdma_endpoint; /* S3RDMA_RDMA_ENDPOINT > profile s3rdma_rdma_endpoint */
    char *transport;     /* S3RDMA_TRANSPORT > profile s3rdma_transport */
    char *profile;       /* the profile read: the caller's, AWS_PROFILE or "default" */
    /* The files read: AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials;
     * AWS_CONFIG_FILE, else ~/.aws/config (NULL without HOME). */
    char *credentials_file, *config_file;
    const char *endpoint_from, *keys_from, *region_from;
} s3r_aws_settings_t;

/* Reads the AWS environment and the profile's sections of the shared files
 * (profile NULL: AWS_PROFILE, else "default"). In the credentials file the
 * profile is [name]; in the config file [profile name] ([default] for the
 * default profile); values in the credentials file win. A missing file is
 * not an error. S3R_ERR_INVALID_ARG when a file cannot be read or parsed
 * (the line that is not "[section]", "key = value", an indented
 * continuation or a comment), when a profile named on purpose (argument or
 * AWS_PROFILE) is in neither file, or when a credential_process or the
 * container endpoint asked for keys fails or answers what is not the AWS
 * CLI's JSON document; s3r_client_last_error(NULL, ...) then says which
 * file, line, profile, program (its exit status) or field. May block for
 * as long as the program runs (the endpoint: at most 5 s). *settings_p is
 * written only on success. */
s3r_status_t s3r_aws_settings_load(const char *profile, s3r_aws_settings_t *settings_p);
/* The same without the keys (access_key, secret_key and session_token stay
 * NULL): no credential_process runs and no container endpoint is asked.
 * keys_from is "credential_process" or "container" when the keys would come
 * from one (a caller then lets the client load them: aws_credentials, so
 * the program runs once), else NULL. For a caller that has its keys
 * already, needs none, or asks where they come from first. */
s3r_status_t s3r_aws_settings_load_without_keys(const char *profile,
                                                s3r_aws_settings_t *settings_p);
/* The same with only the keys that do not expire (the environment's, the
 * shared files'): keys that would come from a credential_process or the
 * container endpoint are not loaded (no program runs, no endpoint is
 * asked), and then keys_from names that source with access_key NULL: the
 * caller lets its client load them (aws_credentials), which reloads them
 * before they expire. For a caller that needs keys and takes them from its
 * client's own loader when they may expire; the s3rdma CLI and the Python
 * package resolve their settings with it. */
s3r_status_t s3r_aws_settings_load_static_keys(const char *profile, s3r_aws_settings_t *settings_p);
/* Frees the strings of s (which may be NULL) and zeroes it. */
void s3r_aws_settings_free(s3r_aws_settings_t *s);

/* ---- Client -------------------------------------------------------------- */

typedef struct s3r_client s3r_client_t;

/* Creates a client from cfg, then applies the environment overrides of
 * docs/client.md: SPT_RDMA_ENABLED (0/false -> use_rdma off), RDMA_LOCAL_IP,
 * RDMA_DEVICE, RDMA_LOG_LEVEL, RDMA_SOCKET, RDMA_THRESHOLD_BYTES (sizes like "1MB"
 * accepted), RDMA_TIMEOUT_MS, RDMA_FALLBACK_ENABLED. A malformed override is
 * S3R_ERR_INVALID_ARG. No network I/O happens here: the RDMA session is
 * opened by the first operation that needs it. Strings are copied. On error
 * *client_p is untouched and nothing is leaked. */
s3r_status_t s3r_client_create(const s3r_config_t *cfg, s3r_client_t **client_p);
/* Closes the RDMA session, unregisters cached buffers and frees the client.
 * No call on the client may be running or start afterwards. Memory from
 * s3r_buf_alloc() must have been freed before. NULL is a no-op. */
void s3r_client_destroy(s3r_client_t *client);

/* Details of the calling thread's last failed call on this client. The
 * record is thread-local, so concurrent threads never see each other's
 * errors; a successful call does not clear it. */
typedef struct s3r_error_info {
    s3r_status_t status;
    int http_status;           /* 0 if no HTTP response was received */
    char code[64];             /* S3 error <Code>, e.g. "NoSuchKey"; "" if none */
    char message[512];         /* S3 <Message> or a local explanation */
    char request_id[128];      /* x-amz-request-id or <RequestId>, if any */
    uint64_t needed_bytes;     /* S3R_ERR_BUFFER_TOO_SMALL: bytes the object needs */
    s3r_transport_t transport; /* transport of the failed attempt */
} s3r_error_info_t;

/* Copies the calling thread's last error on client into *info_p. Returns
 * S3R_OK, or S3R_ERR_INVALID_ARG if this thread has no error recorded for
 * this client. With client NULL it gives the reason the thread's last
 * s3r_client_create() failed (e.g. which setting or env variable is bad). */
s3r_status_t s3r_client_last_error(const s3r_client_t *client, s3r_error_info_t *info_p);

/* Counters since create; by the transport that actually carried the
 * operation (a fallback counts once in fallbacks and once under http).
 * http_ops and token_ops count object GETs and PUTs (parts included);
 * native_ops counts every native request (buckets, HEAD, LIST, DELETE,
 * multipart control too), since none of them touches HTTP. Bytes are
 * object payload only. */
typedef struct s3r_stats {
    uint64_t http_ops, http_bytes; /* bytes = object payload moved */
    uint64_t token_ops, token_bytes;
    uint64_t native_ops, native_bytes;
    uint64_t fallbacks;          /* RDMA attempts redone over HTTP */
    uint64_t errors;             /* calls that returned an error */
    uint64_t rdma_sessions;      /* sessions opened */
    uint64_t regions_registered; /* buffers registered (cache misses + s3r_buf_alloc) */
    uint64_t declines;           /* token requests the server declined (501), whether then
                                    redone over HTTP (also in fallbacks) or failed */
} s3r_stats_t;

/* Snapshot of the counters (each read atomically). */
s3r_status_t s3r_client_stats(s3r_client_t *client, s3r_stats_t *stats_p);

/* Progress of a file transfer: done_bytes of total_bytes have moved
 * (total_bytes 0 when not known). */
typedef void (*s3r_progress_fn)(void *arg, uint64_t done_bytes, uint64_t total_bytes);

/* Sets the progress callback of s3r_object_put_file() and
 * s3r_object_get_file() on this client (fn NULL: none, the default). It is
 * called on the thread running the transfer after each part or chunk, and
 * for a GET over HTTP as body bytes arrive; it must not call into the
 * client. Set it while no transfer runs on the client. */
void s3r_client_set_progress(s3r_client_t *client, s3r_progress_fn fn, void *arg);

/* 1 if the client currently has a live RDMA session, else 0. */
int s3r_client_rdma_connected(s3r_client_t *client);

/* Copies the access key the client signs with now into out (out_len bytes,
 * NUL-terminated, cut short if it does not fit; "" for an anonymous
 * client): with aws_credentials, the one it loaded (for a program that
 * shows where its keys came from). S3R_ERR_INVALID_ARG without a client or
 * room. */
s3r_status_t s3r_client_access_key(s3r_client_t *client, char *out, size_t out_len);
/* Opens the RDMA session now instead of lazily (for tools and tests). */
s3r_status_t s3r_client_rdma_connect(s3r_client_t *client);

/* What the RDMA layer runs on, for diagnostics (s3rdma-bench verify). */
typedef struct s3r_rdma_info {
    char ucx_version[32]; /* the UCX library in use, e.g. "1.13.1" */
    /* The UCX transports the session's endpoint uses, as distinct
     * "transport/device" names, comma-separated (e.g. "sysv/memory,cma/memory"
     * or "tcp/lo"); "" when no session is up. */
    char transports[256];
    int tcp_only; /* 1 when every one of those transports is TCP */
} s3r_rdma_info_t;

/* Fills *info_p: the UCX version always; the session's transports when the
 * client (which may be NULL) has a live RDMA session. Never opens one (call
 * s3r_client_rdma_connect first). S3R_ERR_INVALID_ARG if info_p is NULL. */
s3r_status_t s3r_client_rdma_info(s3r_client_t *client, s3r_rdma_info_t *info_p);

/* ---- Registered memory ----------------------------------------------------- */

/* Allocates len bytes registered with the client's RDMA session (opening it if
 * needed), so token transfers from/to it are zero-copy with no registration
 * cost. Falls back to plain malloc'd memory (usable with every call, just not
 * zero-copy) when no session can be set up and rdma_fallback is on. Free it
 * with s3r_buf_free() on the same client, before s3r_client_destroy(). */
s3r_status_t s3r_buf_alloc(s3r_client_t *client, size_t len, void **buf_p);
/* NULL is a no-op. */
void s3r_buf_free(s3r_client_t *client, void *buf);
/* Caller buffers used with the token or native transport are registered on
 * first use and kept registered (LRU, max_cached_regions). Call
 * s3r_buf_unregister_range before freeing or unmapping such a buffer so a
 * later buffer at the same addresses is never served by a stale
 * registration: it drops every idle registration overlapping [buf,
 * buf+len), including those the library made for pieces of the buffer (a
 * multipart PUT registers each part, ranged GETs each range).
 * s3r_buf_unregister drops only the registration holding buf's first byte.
 * Unknown addresses are ignored. */
void s3r_buf_unregister_range(s3r_client_t *client, const void *buf, size_t len);
void s3r_buf_unregister(s3r_client_t *client, const void *buf);

/* Formats an x-amz-rdma-token (docs/protocol.md §2) for [buf, buf+len), opening the
 * session and registering the buffer (cached, see above) if needed, into out
 * (out_len bytes; 256 is plenty). For callers that send the S3 request with
 * their own HTTP client. The token is valid while the session lives and the
 * buffer stays registered. */
s3r_status_t s3r_rdma_token(s3r_client_t *client, const void *buf, uint64_t len, char *out,
                            size_t out_len);

/* ---- Buckets --------------------------------------------------------------- */

s3r_status_t s3r_bucket_create(s3r_client_t *client, const char *bucket);
s3r_status_t s3r_bucket_delete(s3r_client_t *client, const char *bucket);
/* S3R_OK if the bucket exists and is accessible, S3R_ERR_NO_SUCH_BUCKET if not. */
s3r_status_t s3r_bucket_head(s3r_client_t *client, const char *bucket);

typedef struct s3r_bucket_entry {
    char *name;
    int64_t created; /* unix seconds, 0 if unknown */
} s3r_bucket_entry_t;

typedef struct s3r_bucket_list {
    s3r_bucket_entry_t *buckets;
    size_t n_buckets;
} s3r_bucket_list_t;

/* Lists the caller's buckets. Free the result with s3r_bucket_list_free(). */
s3r_status_t s3r_bucket_list(s3r_client_t *client, s3r_bucket_list_t **list_p);
void s3r_bucket_list_free(s3r_bucket_list_t *list);

/* ---- Objects --------------------------------------------------------------- */

typedef struct s3r_meta {
    const char *name; /* without the "x-amz-meta-" prefix */
    const char *value;
} s3r_meta_t;

/* Options of a PUT; NULL means all defaults. Zero it ({0}) before setting
 * fields. A field added here gives the calls that take this struct a new
 * symbol version (src/client/s3rdma.map): a program built against an
 * earlier header links to the older version, which reads the struct as it
 * was then (storage_class came with S3RDMA_1). */
typedef struct s3r_put_opts {
    const char *content_type; /* NULL: server default */
    const s3r_meta_t *meta;   /* user metadata, n_meta entries */
    size_t n_meta;
    s3r_transport_t transport; /* DEFAULT: the client's */
    /* 1: create only (If-None-Match: *). The write commits only if the key
     * holds no object, checked atomically with the commit; otherwise
     * S3R_ERR_SERVER with code PreconditionFailed (412) and nothing changes.
     * A multipart upload carries it on its CompleteMultipartUpload. */
    int if_none_match;
    /* S3's x-amz-storage-class ("STANDARD", "STANDARD_IA", "GLACIER", ...:
     * upper-case letters, digits and '_', at most 64 bytes, else
     * S3R_ERR_INVALID_ARG before anything is sent); NULL or "": the server's
     * default (STANDARD). A multipart upload names it at its start. s3rdmad
     * keeps the name and answers it on GET, HEAD and listings; a name S3 does
     * not know is S3R_ERR_SERVER with code InvalidStorageClass (400). */
    const char *storage_class;
} s3r_put_opts_t;

/* Options of a GET; NULL means the whole object over the client's transport.
 * Zero it ({0}) before setting fields: fields may be added at the end in
 * later versions, and a zero field keeps its default. */
typedef struct s3r_get_opts {
    uint64_t range_start;      /* first byte */
    uint64_t range_len;        /* 0: to the end of the object */
    s3r_transport_t transport; /* DEFAULT: the client's */
    /* The version to read (S3's versionId; "null" names the version written
     * while versioning was never enabled or suspended); NULL: the current
     * one. A version that is a delete marker is S3R_ERR_SERVER with code
     * MethodNotAllowed (405), as S3 answers. Copied for the call. */
    const char *version_id;
} s3r_get_opts_t;

/* Stores len bytes from data as bucket/key. data must stay valid for the call
 * only. Objects larger than multipart_threshold are uploaded as a multipart
 * upload of part_size parts (aborted on failure). Zero-copy over the token
 * transport when data comes from s3r_buf_alloc() (other buffers are
 * registered and cached, see s3r_buf_unregister()). */
s3r_status_t s3r_object_put(s3r_client_t *client, const char *bucket, const char *key,
                            const void *data, uint64_t len, const s3r_put_opts_t *opts);
/* Stores the contents of the file at path (read in part_size pieces). */
s3r_status_t s3r_object_put_file(s3r_client_t *client, const char *bucket, const char *key,
                                 const char *path, const s3r_put_opts_t *opts);

/* Reads the object (or the range in opts) into buf (buf_len bytes) and
 * writes the byte count to *len_p. If it does not fit, returns
 * S3R_ERR_BUFFER_TOO_SMALL and s3r_client_last_error() gives needed_bytes;
 * buf contents are then unspecified. With AUTO, buf_len (or the range length)
 * is the size compared with rdma_threshold. */
s3r_status_t s3r_object_get(s3r_client_t *client, const char *bucket, const char *key, void *buf,
                            uint64_t buf_len, const s3r_get_opts_t *opts, uint64_t *len_p);
/* Reads the object into a buffer the library allocates; free it with
 * s3r_free(). *data_p is NUL-terminated one byte past *len_p for convenience.
 * Over HTTP it is allocated once, at the response's Content-Length (as
 * s3r_object_get_sized). When RDMA may carry it (TOKEN, or AUTO without a
 * small range_len) a HEAD learns the size first, and AUTO compares that size
 * with rdma_threshold. */
s3r_status_t s3r_object_get_alloc(s3r_client_t *client, const char *bucket, const char *key,
                                  const s3r_get_opts_t *opts, void **data_p, uint64_t *len_p);
/* Gives a GET the memory for its body: a buffer of at least size bytes, or
 * NULL to fail the call with S3R_ERR_NOMEM. Called on the calling thread. */
typedef void *(*s3r_alloc_fn)(void *arg, uint64_t size);
/* Reads the object (or the range in opts) into memory the caller's alloc
 * gives: alloc(arg, size) is called with the body's size before any byte of
 * it is written, and the body then lands in that buffer with no copy (over
 * HTTP the size is the response's Content-Length: one request; a response
 * without one is collected first, then copied). When RDMA may carry the body
 * (as for s3r_object_get_alloc) a HEAD learns the size first; an object that
 * grew between that HEAD and the GET gives S3R_ERR_BUFFER_TOO_SMALL. alloc is
 * called at most once; *buf_p is what it returned (NULL if it was not
 * called) and *len_p the byte count. The buffer is the caller's on success
 * and on failure alike (its contents unspecified on failure). */
s3r_status_t s3r_object_get_sized(s3r_client_t *client, const char *bucket, const char *key,
                                  const s3r_get_opts_t *opts, s3r_alloc_fn alloc, void *arg,
                                  void **buf_p, uint64_t *len_p);
/* Writes the object into the file at path (created or truncated, mode 0666
 * before umask). On error the file may hold partial data. */
s3r_status_t s3r_object_get_file(s3r_client_t *client, const char *bucket, const char *key,
                                 const char *path, const s3r_get_opts_t *opts);

/* What HEAD returns. Owned by the library: free with s3r_object_info_free(). */
typedef struct s3r_object_info {
    uint64_t size;
    char *etag; /* with the quotes, as S3 sends it */
    char *content_type;
    int64_t mtime;    /* unix seconds */
    s3r_meta_t *meta; /* user metadata, names lower-case without "x-amz-meta-" */
    size_t n_meta;
    /* x-amz-version-id: the version described, NULL when the server names
     * none (a bucket that never had versioning) */
    char *version_id;
    /* The fields below are each a response header as sent, NULL when the
     * server sent none (boto3's head_object names in brackets). The struct
     * is allocated by the library, so fields are added at the end. */
    char *storage_class; /* x-amz-storage-class [StorageClass]; NULL for STANDARD, as in S3 */
    /* Stored with the object at its PUT: Content-Encoding, -Disposition,
     * -Language, Cache-Control, Expires (an HTTP date, as stored). */
    char *content_encoding, *content_disposition, *content_language, *cache_control, *expires;
    char *server_side_encryption; /* "AES256" or "aws:kms" [ServerSideEncryption] */
    /* The object's checksums, base64 [ChecksumCRC32, ...]: the HEAD asks for
     * them (x-amz-checksum-mode: ENABLED); NULL for each the object has not.
     * checksum_type: "FULL_OBJECT" or "COMPOSITE" (a multipart object's
     * checksum of its parts' checksums). */
    char *checksum_crc32, *checksum_crc32c, *checksum_crc64nvme, *checksum_sha1, *checksum_sha256,
        *checksum_type;
    /* Object lock [ObjectLockMode, ObjectLockRetainUntilDate,
     * ObjectLockLegalHoldStatus]: "GOVERNANCE"/"COMPLIANCE", an ISO 8601
     * date, "ON"/"OFF"; shown to a caller allowed to read them. */
    char *object_lock_mode, *object_lock_retain_until, *object_lock_legal_hold;
    /* x-amz-expiration [Expiration]: the lifecycle rule that will expire
     * the object: expiry-date="<HTTP date>", rule-id="<ID>". */
    char *expiration;
} s3r_object_info_t;

s3r_status_t s3r_object_head(s3r_client_t *client, const char *bucket, const char *key,
                             s3r_object_info_t **info_p);
/* HEAD of one version of bucket/key (version_id NULL: the current one, as
 * s3r_object_head). A version that is a delete marker is S3R_ERR_SERVER
 * with code MethodNotAllowed (405). */
s3r_status_t s3r_object_head_version(s3r_client_t *client, const char *bucket, const char *key,
                                     const char *version_id, s3r_object_info_t **info_p);
void s3r_object_info_free(s3r_object_info_t *info);

s3r_status_t s3r_object_delete(s3r_client_t *client, const char *bucket, const char *key);
/* DELETE of one version of bucket/key: removes that version (or delete
 * marker) for good; version_id NULL is s3r_object_delete, which in a
 * versioned bucket writes a delete marker. s3r_client_last_version then
 * says which version was removed or written and whether it is a delete
 * marker. A version under object lock is S3R_ERR_ACCESS_DENIED. */
s3r_status_t s3r_object_delete_version(s3r_client_t *client, const char *bucket, const char *key,
                                       const char *version_id);

/* What the server said about the version a write made or removed: the
 * x-amz-version-id and x-amz-delete-marker headers of its answer. */
#define S3R_VERSION_ID_MAX 1024 /* S3's longest version id, in bytes */
typedef struct s3r_version_info {
    char version_id[S3R_VERSION_ID_MAX + 1]; /* "" when the server named none */
    int delete_marker; /* 1: the version written or removed is a delete marker */
} s3r_version_info_t;

/* The version of the calling thread's last successful write on client:
 * s3r_object_put, s3r_object_put_file (each a single PUT or a multipart
 * upload's Complete), s3r_object_put_async (when its answer is judged: in
 * the call over HTTP or token, at s3r_op_wait over native; with
 * several in flight, the last one judged),
 * s3r_multipart_complete, s3r_object_copy(_version) and
 * s3r_object_delete(_version). A write into a bucket without versioning
 * gives version_id "" (or "null" when versioning is suspended, as S3 says).
 * Thread-local like the last error; a failed call does not change it.
 * S3R_ERR_INVALID_ARG when this thread made no such write on client. */
s3r_status_t s3r_client_last_version(const s3r_client_t *client, s3r_version_info_t *info_p);

/* A key DeleteObjects could not delete, with S3's code and message. */
typedef struct s3r_delete_error {
    char *key;
    char *code;
    char *message;
} s3r_delete_error_t;

/* What s3r_object_delete_many could not delete. Owned by the library: free
 * with s3r_delete_errors_free(). */
typedef struct s3r_delete_errors {
    s3r_delete_error_t *errors;
    size_t n_errors;
} s3r_delete_errors_t;

/* DeleteObjects: deletes the n_keys keys of bucket, up to 1000 per request
 * (S3's limit; the library splits longer lists), in quiet mode. A key that
 * does not exist counts as deleted, as in S3. A key no XML 1.0 document can
 * carry (one with a control character) is deleted by its own DELETE.
 * S3R_OK when every request was answered: then *errors_p (may be NULL when
 * the caller does not want it) lists the keys that failed, or is NULL when
 * none did. An error status when a request failed as a whole: keys of the
 * requests before it are deleted, the others may not be. */
s3r_status_t s3r_object_delete_many(s3r_client_t *client, const char *bucket,
                                    const char *const *keys, size_t n_keys,
                                    s3r_delete_errors_t **errors_p);
void s3r_delete_errors_free(s3r_delete_errors_t *errors);
/* Server-side copy (x-amz-copy-source), metadata copied. */
s3r_status_t s3r_object_copy(s3r_client_t *client, const char *src_bucket, const char *src_key,
                             const char *dst_bucket, const char *dst_key);
/* The same, from version src_version_id of the source (NULL: its current
 * version). s3r_client_last_version gives the version written. */
s3r_status_t s3r_object_copy_version(s3r_client_t *client, const char *src_bucket,
                                     const char *src_key, const char *src_version_id,
                                     const char *dst_bucket, const char *dst_key);

/* Options of a listing; NULL means everything, one page. */
typedef struct s3r_list_opts {
    const char *prefix;
    const char *delimiter;
    const char *continuation_token; /* from a previous page's next_token */
    const char *start_after;
    unsigned max_keys; /* per page; 0 = server default (1000) */
    int all_pages;     /* 1: follow continuation tokens and return everything */
} s3r_list_opts_t;

typedef struct s3r_object_entry {
    char *key;
    uint64_t size;
    char *etag;
    int64_t mtime;
} s3r_object_entry_t;

typedef struct s3r_object_list {
    s3r_object_entry_t *objects;
    size_t n_objects;
    char **prefixes; /* common prefixes (with delimiter) */
    size_t n_prefixes;
    int truncated;    /* more pages follow */
    char *next_token; /* pass as continuation_token; NULL when not truncated */
    /* n_objects entries, parallel to objects: each object's <StorageClass>
     * ("STANDARD", "GLACIER", ...; NULL when the listing names none). An
     * array of its own so s3r_object_entry_t keeps its size: programs built
     * with an earlier header step through objects[] by that size. */
    char **storage_classes;
} s3r_object_list_t;

/* ListObjectsV2. Free the result with s3r_object_list_free(). Keys and
 * prefixes are returned as stored, whatever bytes they hold: the library
 * asks for encoding-type=url (XML cannot carry C0 control characters) and
 * decodes them. */
s3r_status_t s3r_object_list(s3r_client_t *client, const char *bucket, const s3r_list_opts_t *opts,
                             s3r_object_list_t **list_p);
void s3r_object_list_free(s3r_object_list_t *list);
/* s3r_object_list of at most max_pages pages (1 or more; opts->all_pages is
 * ignored) from opts' start, merged into one list whose truncated and
 * next_token say where the next call starts. Over native, up to 16 pages
 * travel in one request, authorized once (docs/protocol.md §4.2,
 * x-s3rdma-pages); over HTTP, or against a server without it, page after
 * page. s3r_object_list with all_pages does the same without the bound. */
s3r_status_t s3r_object_list_pages(s3r_client_t *client, const char *bucket,
                                   const s3r_list_opts_t *opts, unsigned max_pages,
                                   s3r_object_list_t **list_p);

/* Options of a version listing; NULL means everything, one page. Zero it
 * before setting fields (fields may be added at the end). */
typedef struct s3r_version_list_opts {
    const char *prefix;
    const char *delimiter;
    /* Where a page starts: after key_marker (and, with version_id_marker,
     * after that version of it), as a previous page's next_* give them. */
    const char *key_marker;
    const char *version_id_marker;
    unsigned max_keys; /* versions and delete markers per page; 0 = server default (1000) */
    int all_pages;     /* 1: follow the markers and return everything */
} s3r_version_list_opts_t;

/* One version or delete marker of a key. */
typedef struct s3r_version_entry {
    char *key;
    char *version_id;  /* "null" for the version written without versioning */
    int is_latest;     /* the key's current version (or delete marker) */
    int delete_marker; /* 1: a delete marker (size 0, etag NULL) */
    uint64_t size;
    char *etag;
    int64_t mtime;
} s3r_version_entry_t;

typedef struct s3r_version_list {
    /* Versions and delete markers together, in the listing's order: by
     * key, then newest first. */
    s3r_version_entry_t *versions;
    size_t n_versions;
    char **prefixes; /* common prefixes (with delimiter) */
    size_t n_prefixes;
    int truncated; /* more pages follow */
    /* pass as key_marker / version_id_marker; NULL when not truncated */
    char *next_key_marker;
    char *next_version_id_marker;
    /* n_versions entries, parallel to versions: each version's
     * <StorageClass> (NULL for a delete marker, or when the listing names
     * none); an array of its own for the reason s3r_object_list_t gives. */
    char **storage_classes;
} s3r_version_list_t;

/* ListObjectVersions. Free the result with s3r_version_list_free(). Keys
 * and prefixes come back as stored (encoding-type=url, decoded), as for
 * s3r_object_list. */
s3r_status_t s3r_object_list_versions(s3r_client_t *client, const char *bucket,
                                      const s3r_version_list_opts_t *opts,
                                      s3r_version_list_t **list_p);
void s3r_version_list_free(s3r_version_list_t *list);

/* ---- Configuration subresources --------------------------------------------- */

/* The configuration documents of an object (version) or a bucket, each an
 * S3 subresource ("?tagging", "?versioning", ...) read, written and (where
 * S3 has it) deleted as a whole. The documents are S3's own, passed through
 * as they are: XML (a bucket policy: JSON) in the request and the reply
 * bodies of the S3 API reference, neither parsed nor checked here (the
 * server does that, with S3's error codes). Over the native transport each
 * operation has its own opcode (docs/protocol.md §4.2); the token path
 * carries no object bytes here, so it uses HTTP as other control calls do. */
typedef enum s3r_subresource {
    S3R_SUB_OBJECT_TAGGING = 1, /* <Tagging>: get, put, delete */
    S3R_SUB_OBJECT_RETENTION,   /* <Retention>: get, put (object lock) */
    S3R_SUB_OBJECT_LEGAL_HOLD,  /* <LegalHold>: get, put (object lock) */
    S3R_SUB_OBJECT_ACL,         /* <AccessControlPolicy>: get, put */
    S3R_SUB_BUCKET_VERSIONING,  /* <VersioningConfiguration>: get, put */
    S3R_SUB_BUCKET_LIFECYCLE,   /* <LifecycleConfiguration>: get, put, delete */
    S3R_SUB_BUCKET_OBJECT_LOCK, /* <ObjectLockConfiguration>: get, put */
    S3R_SUB_BUCKET_TAGGING,     /* <Tagging>: get, put, delete */
    S3R_SUB_BUCKET_POLICY,      /* the policy's JSON: get, put, delete */
    S3R_SUB_BUCKET_CORS,        /* <CORSConfiguration>: get, put, delete */
    S3R_SUB_BUCKET_ENCRYPTION,  /* <ServerSideEncryptionConfiguration>: get, put, delete */
    S3R_SUB_BUCKET_ACL,         /* <AccessControlPolicy>: get, put */
} s3r_subresource_t;

/* Where a subresource call applies: key and version_id (NULL: the current
 * version) for the object kinds, both NULL for the bucket kinds (a key or
 * version given to a bucket kind, or no key to an object kind, is
 * S3R_ERR_INVALID_ARG). */
typedef struct s3r_subresource_target {
    const char *bucket;
    const char *key;
    const char *version_id;
} s3r_subresource_target_t;

/* Reads the document into a buffer the library allocates, NUL-terminated
 * one byte past *len_p; free it with s3r_free(). A bucket without the
 * configuration gets S3's error (S3R_ERR_SERVER with code
 * NoSuchLifecycleConfiguration, NoSuchTagSet, NoSuchBucketPolicy, ...). */
s3r_status_t s3r_subresource_get(s3r_client_t *client, s3r_subresource_t kind,
                                 const s3r_subresource_target_t *target, char **doc_p,
                                 size_t *len_p);
/* Writes the document (len bytes at doc; len 0 sends no body, which only an
 * ACL set by its headers takes). It is sent with its Content-MD5, as S3
 * requires of several of these. S3R_ERR_TOO_LARGE over 16 MiB. */
s3r_status_t s3r_subresource_put(s3r_client_t *client, s3r_subresource_t kind,
                                 const s3r_subresource_target_t *target, const void *doc,
                                 size_t len);
/* Removes the configuration; S3R_ERR_UNSUPPORTED (no request sent) for the
 * kinds S3 has no delete for (retention, legal hold, ACLs, versioning,
 * object lock). */
s3r_status_t s3r_subresource_delete(s3r_client_t *client, s3r_subresource_t kind,
                                    const s3r_subresource_target_t *target);

/* ---- Multipart uploads driven by the caller ------------------------------- */

/* A multipart upload whose parts the caller supplies one at a time (for data
 * that arrives in pieces, or to report progress between parts).
 * s3r_object_put and s3r_object_put_file do all of this on their own. */
typedef struct s3r_multipart s3r_multipart_t;

/* Starts a multipart upload of bucket/key with opts' content type and
 * metadata; opts' transport carries every part. Strings are copied.
 * S3R_OK and *up_p, or an error (nothing started). */
s3r_status_t s3r_multipart_start(s3r_client_t *client, const char *bucket, const char *key,
                                 const s3r_put_opts_t *opts, s3r_multipart_t **up_p);
/* Uploads the next part (numbered one past the highest number given so
 * far: 1, 2, ... in call order) from len bytes at data (used during the call
 * only). Every part but the last must be at least 5 MiB (the server checks
 * on complete). At most 10000 parts. On an error the upload stays open:
 * retry (s3r_multipart_part_at with the same number), or end it with
 * s3r_multipart_abort. */
s3r_status_t s3r_multipart_part(s3r_multipart_t *up, const void *data, uint64_t len);
/* Uploads part part_number (1..10000) from len bytes at data; uploading a
 * number again replaces that part. Part calls (both kinds) may run at once
 * on several threads and finish in any order, so a caller can keep several
 * parts in flight (the server hashes them on as many cores); complete and
 * abort must not overlap them. */
s3r_status_t s3r_multipart_part_at(s3r_multipart_t *up, unsigned part_number, const void *data,
                                   uint64_t len);
/* Completes the upload with the parts stored so far, in ascending number
 * order (a number whose upload failed and was not redone is left out), and
 * frees up whatever the result; on failure the upload is aborted on the
 * server. A 200 carrying an <Error> is a failure. */
s3r_status_t s3r_multipart_complete(s3r_multipart_t *up);
/* Aborts the upload on the server (best effort) and frees up. NULL is a
 * no-op. */
void s3r_multipart_abort(s3r_multipart_t *up);

/* ---- Asynchronous operations ------------------------------------------------ */

/* An operation started by an *_async call. Over the native transport the
 * request is in flight when the call returns and the thread may start many
 * more before waiting (answers arrive in any order); over the other
 * transports the operation runs to completion inside the *_async call. An
 * op belongs to the thread that waits for it. */
typedef struct s3r_op s3r_op_t;

/* Starts s3r_object_get(client, bucket, key, buf, buf_len, opts). bucket,
 * key and opts are copied; buf must stay valid until the op is waited for.
 * S3R_OK and *op_p, or an error (nothing started). */
s3r_status_t s3r_object_get_async(s3r_client_t *client, const char *bucket, const char *key,
                                  void *buf, uint64_t buf_len, const s3r_get_opts_t *opts,
                                  s3r_op_t **op_p);
/* Starts s3r_object_put(client, bucket, key, data, len, opts) of a single
 * PUT (len up to multipart_threshold; larger is S3R_ERR_TOO_LARGE). bucket
 * and key are copied; data and opts' strings must stay valid until the op
 * is waited for. */
s3r_status_t s3r_object_put_async(s3r_client_t *client, const char *bucket, const char *key,
                                  const void *data, uint64_t len, const s3r_put_opts_t *opts,
                                  s3r_op_t **op_p);
/* 1 when the op has its answer (s3r_op_wait then returns at once), else 0.
 * Never blocks; progresses the session. */
int s3r_op_test(s3r_op_t *op);
/* Waits for the op (bounded by the client's http_timeout_ms, or 60 s) and
 * returns its status, as the synchronous call would have; the details of a
 * failure are this thread's last error. *len_p (may be NULL) gets the bytes
 * a GET read. The op stays valid until s3r_op_free. */
s3r_status_t s3r_op_wait(s3r_op_t *op, uint64_t *len_p);
/* Frees the op, waiting for it first if it was not waited for. NULL is a
 * no-op. */
void s3r_op_free(s3r_op_t *op);
/* Waits until one of ops[0..n) has its answer and sets *index_p to its
 * index: s3r_op_test on it then returns 1 and s3r_op_wait returns at once
 * (call it for the status, then s3r_op_free; the others stay in flight).
 * NULL entries are skipped (a free slot). An op that has its answer already
 * is returned at once, the lowest index first (over HTTP and token every op
 * has it when started). Native ops, of one client or of several, are
 * waited for together: the thread busy-polls for as long as the earliest
 * normally takes, then sleeps until a reply reaches any of their sessions,
 * so each is seen when it lands, whatever the others do. An op whose
 * session was lost counts as answered (s3r_op_wait then judges it, with
 * the fallback rules). timeout_ms < 0 waits up to the first op's client's
 * http_timeout_ms (or 60 s); 0 only looks (progressing once). S3R_OK;
 * S3R_ERR_TIMEOUT when none was answered in time (the thread's last error
 * says so; nothing is withdrawn, not counted in s3r_client_stats' errors);
 * S3R_ERR_INVALID_ARG when ops or index_p is NULL or ops holds no op;
 * S3R_ERR_NOMEM. The ops belong to the calling thread, as for s3r_op_wait:
 * no other thread may test, wait for or free them meanwhile; several
 * threads may each wait for their own ops on the same clients at once. */
s3r_status_t s3r_op_wait_any(s3r_op_t *const *ops, size_t n, int timeout_ms, size_t *index_p);

/* ---- Presigned URLs ----------------------------------------------------------- */

/* Writes a SigV4 presigned URL (query authentication, docs/security.md) for
 * method ("GET", "PUT", "HEAD", "DELETE") on bucket/key at the client's
 * first HTTP endpoint, valid for expires_s seconds from now (1 to 604800,
 * as S3 allows), into out (out_len bytes, NUL-terminated). Anyone holding
 * the URL may make that one request as the client's user until it expires.
 * No network I/O. S3R_ERR_INVALID_ARG on a bad argument, S3R_ERR_TOO_LARGE
 * if out is too small; out is written only on success. */
s3r_status_t s3r_presign_url(s3r_client_t *client, const char *method, const char *bucket,
                             const char *key, uint64_t expires_s, char *out, size_t out_len);

/* Frees memory the library returned with a "free with s3r_free" contract. */
void s3r_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
