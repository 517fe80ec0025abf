/* libs3rdma internals shared by the files of src/client. Internal symbols
 * carry the s3c_ prefix; the version script (s3rdma.map) keeps them local. */
#ifndef S3R_CLIENT_INTERNAL_H
#define S3R_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3rdma.h"
#include "common/buf.h"
#include "common/hash.h"
#include "rdma/rdma_client.h"

#define S3C_MAX_ENDPOINTS       16
#define S3C_DEFAULT_RDMA_PORT   9100
#define S3C_MIN_PART_SIZE       (5ULL * 1024 * 1024)
#define S3C_MAX_PARTS           10000
#define S3C_MAX_ERROR_BODY      (64 * 1024)  /* error / decline bodies kept */
#define S3C_EXPECT_CONTINUE_MIN (1ULL << 20) /* HTTP bodies this large wait for 100 Continue */
#define S3C_MAX_XML_BODY        (16 * 1024 * 1024) /* list responses */
/* s3r_object_put's multipart parts in flight: the default, and the most. */
#define S3C_PARTS_IN_FLIGHT     4
#define S3C_MAX_PARTS_IN_FLIGHT 64
/* Native requests: the default of s3r_config_t.native_inline (bodies up to
 * this travel inline in the message, larger ones by RDMA from/to registered
 * memory; docs/protocol.md §4.5 has the measurement behind it). */
#define S3C_NATIVE_INLINE      (16 * 1024)
#define S3C_NATIVE_TIMEOUT_MS  60000          /* a native reply, when http_timeout_ms is 0 */
#define S3C_SCRATCH_BYTES      (1024 * 1024)  /* a native reply body of unknown size lands here */
#define S3C_SCRATCH_KEEP       8              /* scratch buffers kept for reuse, */
#define S3C_SCRATCH_KEEP_BYTES (64ull << 20)  /* ... and their bytes at most */
#define S3C_BOUNCE_MAX         (256ull << 20) /* largest reply a bounce buffer takes */
/* Largest request body the bounce buffer takes (the one buffer is then
 * free for GETs); larger ones up to S3C_STAGE_BODY_MAX are copied into a
 * scratch buffer instead, so that parts in flight each have their own
 * (docs/benchmarks.md, "Large objects from Python, quieter": a body read in
 * place from mapped memory beat UCX's software RMA 1.5-2.6x at 8-256 MiB).
 * A body above S3C_STAGE_BODY_MAX (a single large PUT) takes the bounce
 * buffer again, up to S3C_BOUNCE_MAX: the one large buffer kept. */
#define S3C_BOUNCE_BODY_MAX (4ull << 20)
#define S3C_STAGE_BODY_MAX  (64ull << 20)

/* ---- config.c: configuration, env overrides, endpoint parsing ----------- */

typedef struct s3c_endpoint {
    char *url;      /* "http://host:port" without a trailing slash */
    char *hostport; /* "host:port" as sent in Host: and signed */
    char *host;     /* "host" (brackets stripped for IPv6) */
    int port;
} s3c_endpoint_t;

/* The client's settings after defaults and env overrides, strings owned. */
typedef struct s3c_settings {
    s3c_endpoint_t http[S3C_MAX_ENDPOINTS];
    size_t n_http;
    s3c_endpoint_t rdma[S3C_MAX_ENDPOINTS];
    size_t n_rdma;
    char *access_key, *secret_key, *region;
    s3r_transport_t transport;
    uint64_t rdma_threshold;
    bool rdma_fallback;
    bool use_rdma;
    char *rdma_device, *rdma_local_ip, *rdma_log_level;
    char *rdma_socket; /* NULL: automatic; "off": TCP only */
    int rdma_timeout_ms;
    uint64_t part_size, multipart_threshold, sign_payload_max;
    long http_timeout_ms, connect_timeout_ms;
    unsigned max_cached_regions;
    bool quiet;
    uint64_t native_inline;
    /* s3r_object_put's multipart parts in flight at once. */
    unsigned parts_in_flight;
    char *ca_bundle;   /* NULL: the system's certificate authorities */
    bool rdma_derived; /* rdma[] guessed from http[]: ask the servers (rdma.c) */
    /* One endpoint given and s3r_config_t.peer_discovery on: the gateways
     * it advertises join http[] (http.c, s3c_http_learn_peers). */
    bool peer_discovery;
    bool put_checksum; /* a single PutObject carries x-amz-checksum-crc32c */
    bool anonymous;    /* requests go unsigned; no keys, no RDMA (s3r_config_t) */
    /* The keys come from the AWS chain and are reloaded before they expire
     * (keys.c); access_key and secret_key are then NULL until loaded. */
    bool aws_credentials;
    char *aws_profile; /* NULL: AWS_PROFILE, else "default" */
} s3c_settings_t;

/* The longest access key and secret key taken, in bytes (S3's are 20 and 40). */
#define S3C_KEY_MAX 255

/* Environment lookup, replaceable in unit tests. */
typedef const char *(*s3c_getenv_fn)(const char *name);

/* Builds settings from cfg and the environment. On error returns the status
 * and writes a reason into err; settings are freed. */
s3r_status_t s3c_settings_build(const s3r_config_t *cfg, s3c_getenv_fn getenv_fn,
                                s3c_settings_t *out, char *err, size_t err_len);
void s3c_settings_free(s3c_settings_t *s);
/* Parses "http://host:port" (scheme http or https; port defaults 80/443). */
int s3c_endpoint_parse_url(const char *url, s3c_endpoint_t *ep);
/* Parses "host:port" or "[v6]:port" (port defaults to default_port). */
int s3c_endpoint_parse_hostport(const char *hp, int default_port, s3c_endpoint_t *ep);
void s3c_endpoint_free(s3c_endpoint_t *ep);
/* The RDMA endpoint guessed for an HTTP endpoint: its host, port 9100. */
int s3c_endpoint_derive_rdma(const s3c_endpoint_t *http, s3c_endpoint_t *ep);

/* ---- aws_creds.c: credentials from a program or a container endpoint ------ */

typedef struct s3c_aws_creds {
    char *access_key, *secret_key, *session_token; /* session_token may be NULL */
    int64_t expiration;                            /* unix seconds; 0: never */
} s3c_aws_creds_t;

/* Runs command (/bin/sh -c, stdout read, stderr the caller's) and parses its
 * output, the AWS CLI's credential_process JSON ("Version": 1,
 * "AccessKeyId", "SecretAccessKey", optional "SessionToken" and
 * "Expiration"). S3R_OK, or S3R_ERR_INVALID_ARG with the thread's last
 * error saying why (the exit status, the field at fault); *out is written
 * either way and owns its strings only on success. */
s3r_status_t s3c_creds_process(const char *command, s3c_aws_creds_t *out);
/* Whether AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI is set. */
bool s3c_creds_container_set(void);
/* GETs the container credentials endpoint those variables name (the
 * relative URI under http://169.254.170.2 first; a full http:// URI only
 * on a loopback or container-agent address), with the Authorization
 * header from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or _TOKEN, and parses
 * its JSON ("AccessKeyId", "SecretAccessKey", "Token", "Expiration").
 * Errors as s3c_creds_process. */
s3r_status_t s3c_creds_container(s3c_aws_creds_t *out);
void s3c_aws_creds_free(s3c_aws_creds_t *c);
/* Which keys s3c_aws_settings_load loads: those of the public call of the
 * same name. */
typedef enum s3c_keys {
    S3C_KEYS_NONE,   /* s3r_aws_settings_load_without_keys */
    S3C_KEYS_STATIC, /* s3r_aws_settings_load_static_keys */
    S3C_KEYS_ALL,    /* s3r_aws_settings_load */
} s3c_keys_t;
/* The s3r_aws_settings_load* call that keys names, also giving when the
 * keys expire (unix seconds; 0: never, or no keys). */
s3r_status_t s3c_aws_settings_load(const char *profile, s3c_keys_t keys,
                                   s3r_aws_settings_t *settings_p, int64_t *expiration_p);

/* ---- xml.c: S3 XML responses (expat) -------------------------------------- */

typedef struct s3c_error_doc {
    char code[64];
    char message[512];
    char request_id[128];
    uint64_t needed_bytes; /* from <ObjectSize>/<RequiredBytes>/... when present */
} s3c_error_doc_t;

/* Each returns 0, or -1 on malformed XML / out of memory. */
int s3c_xml_parse_error(const char *xml, size_t len, s3c_error_doc_t *out);
int s3c_xml_parse_bucket_list(const char *xml, size_t len, s3r_bucket_list_t **out_p);
/* Appends the page to *list (created if NULL). When the page says
 * <EncodingType>url</EncodingType>, its keys and common prefixes are
 * URL-decoded (-1 on a malformed escape or %00). */
int s3c_xml_parse_object_list(const char *xml, size_t len, s3r_object_list_t **list);
/* Appends the page's versions and delete markers to *list (created if
 * NULL), its paging fields replacing the previous page's; names decoded as
 * for s3c_xml_parse_object_list (NextKeyMarker too). */
int s3c_xml_parse_version_list(const char *xml, size_t len, s3r_version_list_t **list);
/* Appends the <Error> entries of a DeleteResult to *errs (created if
 * NULL); <Deleted> entries are skipped. */
int s3c_xml_parse_delete_result(const char *xml, size_t len, s3r_delete_errors_t **errs);
/* <UploadId> of InitiateMultipartUploadResult, malloc'd. */
int s3c_xml_parse_upload_id(const char *xml, size_t len, char **upload_id_p);
/* Whether a CompleteMultipartUpload 200 body is really an <Error>. 1 if so. */
int s3c_xml_is_error(const char *xml, size_t len);

/* ---- The client (client*.c, http.c, rdma.c) ------------------------------ */

typedef struct s3c_region s3c_region_t;
typedef struct s3c_sess s3c_sess_t;
typedef struct s3c_alloc s3c_alloc_t;

struct s3r_client {
    s3c_settings_t set;

    /* Counters (s3r_client_stats). */
    atomic_uint_fast64_t n_http_ops, n_http_bytes, n_token_ops, n_token_bytes;
    atomic_uint_fast64_t n_native_ops, n_native_bytes;
    atomic_uint_fast64_t n_fallbacks, n_errors, n_sessions, n_regions, n_declines;
    atomic_uint rr; /* round-robin endpoint cursor */
    /* How many of set.http[] are in use: set.n_http at create, more once
     * advertised gateways are learned. Entries below it never change; new
     * ones are written before it grows (release) and read after it is
     * loaded (acquire, s3c_http_count). set.n_http follows it at destroy. */
    atomic_size_t n_http;
    atomic_bool peers_decided;  /* the first authenticated reply was looked at */
    atomic_bool list_pages_off; /* the native server refused x-s3rdma-pages: ask page by page */
    atomic_int fallback_logged; /* the one-time stderr notice */
    s3r_progress_fn progress;   /* s3r_client_set_progress: file transfers report here */
    void *progress_arg;

    /* The SigV4 signing key depends only on the secret, the date and the
     * region, so it is derived once a day rather than per request (four
     * HMACs). Guarded by key_mu, as are set.access_key and set.secret_key,
     * which keys.c replaces when it reloads them (aws_credentials), and
     * the reload's state. */
    pthread_mutex_t key_mu;
    char key_date8[9];
    uint8_t signing_key[SHA256_LEN];
    int64_t keys_expire;   /* unix s the keys expire at; 0: never */
    int64_t keys_retry_at; /* a failed reload is not tried again before this */
    bool keys_reloading;   /* a thread is reloading them (outside key_mu) */

    /* Idle curl easy handles (keep-alive lives in each handle's connection
     * cache, so reusing handles reuses connections). */
    pthread_mutex_t curl_mu;
    void **curl_idle;
    size_t n_curl_idle, cap_curl_idle;

    /* RDMA: the current session, dead sessions still in use, the buffers
     * from s3r_buf_alloc. Everything below is guarded by rdma_mu. */
    pthread_mutex_t rdma_mu;
    s3c_sess_t *sess;
    s3c_sess_t *dead;
    s3c_alloc_t *allocs;
    struct s3c_scratch *scratch; /* free registered scratch buffers (s3c_scratch_get) */
    unsigned n_scratch;
    uint64_t scratch_bytes; /* their sizes' sum */
    void *bounce;           /* the idle bounce buffer (s3c_bounce_get), or NULL */
    uint64_t bounce_len;
    int64_t sess_fail_ms; /* monotonic ms of the last failed open */
    size_t rdma_asked;    /* set.http[] endpoints asked for their session endpoint */
    char sess_err[256];
    uint64_t lru_clock;

    /* Every live client is on one list (client.c) so that fork can take
     * their locks before and make a child's copy its own after. */
    s3r_client_t *fork_prev, *fork_next;
};

/* ---- keys.c: the keys and the signing key ------------------------------------ */

/* With aws_credentials, loads the keys from the AWS chain (at create).
 * S3R_OK, or the loader's error (the thread's last error, against NULL). */
s3r_status_t s3c_keys_load(s3r_client_t *c);
/* The signing key for date8 ("YYYYMMDD") and the access key it goes with
 * (ak: S3C_KEY_MAX + 1 bytes), reloading the keys first when they are due
 * (aws_credentials). */
void s3c_keys_sign(s3r_client_t *c, const char *date8, uint8_t key[SHA256_LEN], char *ak);
/* Copies the keys (each S3C_KEY_MAX + 1 bytes), reloading them first when
 * due: for an RDMA session's handshake. */
void s3c_keys_copy(s3r_client_t *c, char *ak, char *sk);

/* ---- Last error (client_error.c) ------------------------------------------ */

/* The calling thread's last error and the client it was recorded for;
 * code that must keep the caller's error across a request saves and
 * restores both. */
extern __thread s3r_error_info_t s3c_tls_err;
extern __thread const s3r_client_t *s3c_tls_err_client;

/* Records the calling thread's last error for c and returns st. */
s3r_status_t s3c_fail(const s3r_client_t *c, s3r_status_t st, s3r_transport_t t, int http_status,
                      const char *code, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void s3c_set_needed(uint64_t needed);
void s3c_set_request_id(const char *rid);
/* Overwrites only the status of the calling thread's last error. */
void s3c_set_status(s3r_status_t st);
/* Makes *e (a record s3r_client_last_error gave for c earlier) the
 * thread's last error again. */
void s3c_err_restore(const s3r_client_t *c, const s3r_error_info_t *e);
/* Makes the x-amz-version-id and x-amz-delete-marker of resp, the answer
 * to a successful write, the calling thread's last version on c
 * (s3r_client_last_version). */
struct s3c_resp;
void s3c_version_record(const s3r_client_t *c, const struct s3c_resp *resp);
/* The calling thread's last UploadPart answer's x-amz-checksum-crc32c
 * (base64 of 4 bytes; longer values are dropped): recorded by s3c_put_one's
 * transports, read by the multipart code right after s3c_put_one returned on
 * the same thread, for the part's entry in Complete. "" when it named none. */
#define S3C_PART_CRC32C_MAX 16
void s3c_part_checksum_record(const struct s3c_resp *resp);
const char *s3c_part_checksum(void);
/* Counts st in n_errors unless S3R_OK, and returns it: every public
 * operation returns through here. */
s3r_status_t s3c_done(s3r_client_t *c, s3r_status_t st);

/* ---- http.c: signed S3 requests over libcurl ------------------------------ */

typedef struct s3c_hdr {
    const char *name; /* lower-case */
    const char *value;
} s3c_hdr_t;

#define S3C_MAX_REQ_HDRS 48

typedef struct s3c_req {
    const char *method;
    const char *bucket;               /* NULL: the service (ListBuckets) */
    const char *key;                  /* NULL: the bucket */
    const char *query;                /* raw query, values already URI-encoded; NULL for none */
    s3c_hdr_t hdrs[S3C_MAX_REQ_HDRS]; /* extra headers, all signed */
    size_t n_hdrs;
    const void *body; /* request body (body_len bytes) */
    uint64_t body_len;
    bool unsigned_payload; /* UNSIGNED-PAYLOAD even for a small body */
    int ep_idx;            /* HTTP endpoint; -1 = round robin with failover */
    uint8_t native_op;     /* its native opcode (rdma_native_wire.h); 0: HTTP only */
    /* More raw query params ("a=b&c=d") for the native request only (an
     * HTTP request, a fallback too, goes without them); NULL: none. */
    const char *native_query;
    /* A native reply body of unknown size (sink_grow): the out span offered
     * first, when more than S3C_SCRATCH_BYTES; 0: that. */
    uint64_t native_room;
    /* Where a 2xx response body goes: a fixed buffer, a growable buffer or a
     * file descriptor (at sink_off), or nowhere. */
    void *sink_buf;
    uint64_t sink_cap;
    buf_t *sink_grow;
    /* HTTP: with sink_alloc and no sink_buf, the first byte of a 2xx body
     * with a Content-Length makes sink_buf sink_alloc(sink_alloc_arg, that
     * length) and sink_cap that length (NULL: overflow); a body without one
     * goes to sink_grow. */
    s3r_alloc_fn sink_alloc;
    void *sink_alloc_arg;
    int sink_fd;
    uint64_t sink_off;
    /* With sink_fd: told the bytes written so far and the Content-Length. */
    s3r_progress_fn sink_progress;
    void *sink_progress_arg;
} s3c_req_t;

typedef struct s3c_resp {
    long status;         /* 0 if no response */
    buf_t hdrs;          /* "name: value\n" lines, names lower-case */
    buf_t err_body;      /* a non-2xx body (capped) */
    uint64_t body_bytes; /* 2xx body bytes delivered to the sink */
    bool overflow;       /* the 2xx body did not fit sink_cap */
    bool sink_failed;    /* writing the file sink failed */
    int curl_code;
    char curl_err[256];
    s3r_transport_t transport; /* HTTP, TOKEN or NATIVE: what carried the answer */
} s3c_resp_t;

void s3c_req_init(s3c_req_t *r, const char *method, const char *bucket, const char *key);
int s3c_req_hdr(s3c_req_t *r, const char *name, const char *value);
void s3c_resp_init(s3c_resp_t *r);
void s3c_resp_free(s3c_resp_t *r);
/* Copies the value of response header name (lower-case) into out; 0, or -1
 * when absent. */
int s3c_resp_header(const s3c_resp_t *r, const char *name, char *out, size_t out_len);

/* Sends the request and fills resp. Returns S3R_OK when an HTTP response
 * arrived (whatever its status), else the transport error (recorded).
 * Without a fixed req->ep_idx it goes round robin over the endpoints, and
 * a refused connection moves it on to the next. The first successful reply
 * of a client with peer discovery on adds the gateways its
 * x-s3rdma-peers header names to the endpoints. */
s3r_status_t s3c_http_do(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp);
/* How many HTTP endpoints c uses now (set.http[0 .. n)); it only grows. */
size_t s3c_http_count(s3r_client_t *c);
/* Turns a non-2xx response into a status (recorded as the last error).
 * key_op: a 404 without a body means NoSuchKey rather than NoSuchBucket. */
s3r_status_t s3c_http_error(s3r_client_t *c, const s3c_resp_t *resp, s3r_transport_t t,
                            bool key_op);
void s3c_http_cleanup(s3r_client_t *c);
/* In a forked child (curl_mu held): forgets the idle handles, whose
 * keep-alive connections the parent goes on using. */
void s3c_http_after_fork(s3r_client_t *c);
int s3c_http_global_init(void);

/* ---- rdma.c: session, registered memory, tokens --------------------------- */

/* Takes a reference on a live session, opening one if needed. On failure
 * returns S3R_ERR_RDMA_UNAVAILABLE (recorded, with the reason). */
s3r_status_t s3c_sess_get(s3r_client_t *c, s3c_sess_t **sess_p);
/* Drops the reference; failed: the transfer saw a transport problem, so the
 * session is checked and retired if dead. */
void s3c_sess_put(s3r_client_t *c, s3c_sess_t *sess, bool failed);
int s3c_sess_ep(const s3c_sess_t *sess);
/* Formats a token for [addr, addr+len), registering the buffer if needed.
 * *reg_p must be handed back to s3c_region_put when the request is done. */
s3r_status_t s3c_token_for(s3r_client_t *c, s3c_sess_t *sess, const void *addr, uint64_t len,
                           char *token, size_t token_len, s3c_region_t **reg_p);
void s3c_region_put(s3r_client_t *c, s3c_region_t *reg);
/* Finds the cached registration covering [addr, addr+len) or registers the
 * buffer (as for tokens); *reg_p goes back with s3c_region_put. */
s3r_status_t s3c_region_for(s3r_client_t *c, s3c_sess_t *s, const void *addr, uint64_t len,
                            s3c_region_t **reg_p);
/* The native message's reference to [addr, addr+len) inside reg. */
s3r_status_t s3c_region_ref(s3r_client_t *c, s3c_region_t *reg, const void *addr, uint64_t len,
                            rdma_native_ref_t *ref);
rdma_session_t *s3c_sess_rdma(const s3c_sess_t *sess);
/* What AUTO can use: S3C_SESS_FAST when a session is up (opened now if
 * needed) with a transport faster than TCP emulation, S3C_SESS_TCP_ONLY
 * when its transports are all TCP, S3C_SESS_NONE when none can be had. */
enum { S3C_SESS_NONE, S3C_SESS_TCP_ONLY, S3C_SESS_FAST };
int s3c_native_ready(s3r_client_t *c);

/* ---- native.c: S3 requests over the native protocol ----------------------- */

/* A native request in flight (the sync calls wait for it at once; an
 * s3r_op_t carries it). */
typedef struct s3c_ncall {
    rdma_native_call_t call; /* first: the done callback gets this */
    s3c_req_t *req;
    s3c_resp_t *resp;
    s3c_sess_t *sess;
    s3c_region_t *body_reg, *out_reg;
    uint64_t region_bytes; /* a body written into the out region */
    /* A bounce buffer (s3c_bounce_get) standing in for the body or the out
     * span; bounce_to is the out span it stands for (copied out at finish). */
    void *bounce, *bounce_to;
    uint64_t bounce_len, bounce_to_len;
    /* Or a scratch buffer (s3c_scratch_get) holding a copy of the body. */
    void *stage;
    uint64_t stage_len;
    uint64_t copied;       /* bytes of the body already copied to bounce_to (ncall_more) */
    bool asked_progress;   /* the request carries RDMA_NATIVE_FLAG_PROGRESS */
    bool progress_refused; /* ... and the server refused it (an older server) */
} s3c_ncall_t;

/* A native request whose reply body goes to sink_buf (or nowhere), in two
 * halves: start sends it (n then holds a session reference
 * and the registrations), finish waits (timeout_ms < 0: the client's) and
 * fills resp; finish must follow a start that returned S3R_OK. */
s3r_status_t s3c_native_start(s3r_client_t *c, s3c_ncall_t *n, s3c_req_t *req, s3c_resp_t *resp);
s3r_status_t s3c_native_finish(s3r_client_t *c, s3c_ncall_t *n, int timeout_ms);
/* Runs req over t: NATIVE (when req has an opcode; counted in
 * native_ops), TOKEN (when it has a token form, s3c_token_form; counted in
 * token_ops), each with the fallback rules (s3c_fall_back), else HTTP; resp is
 * filled as s3c_http_do fills it, resp->transport says which answered.
 * Failures to reach the server by RDMA are S3R_ERR_RDMA_UNAVAILABLE. */
s3r_status_t s3c_do(s3r_client_t *c, s3r_transport_t t, s3c_req_t *req, s3c_resp_t *resp);

/* ---- token.c: the token transport ------------------------------------------ */

/* Whether req has a token form: PutObject and UploadPart (the body by
 * RDMA-READ), GetObject into sink_buf (the object by RDMA-WRITE). */
bool s3c_token_form(const s3c_req_t *req);
/* Runs req (s3c_token_form) over the token path: the same HTTP request
 * without its body, x-amz-rdma-token naming the body's buffer or sink_buf,
 * on the session's HTTP endpoint. Fills resp as s3c_http_do would (a GET's
 * body_bytes: the bytes the server wrote into sink_buf; a buffer too small:
 * overflow, with the size the server named as content-length) and counts
 * the transfer in token_ops. A 501 or a 2xx with a non-2xx
 * x-amz-rdma-reply is S3R_ERR_RDMA_DECLINED (the caller may fall back). */
s3r_status_t s3c_token_do(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp);
void s3c_rdma_cleanup(s3r_client_t *c);
/* In a forked child (rdma_mu held): retires the parent's sessions (closed,
 * without UCX, once their last user goes), forgets the registered scratch
 * buffers (mapped shared with the parent) and lets the next request open a
 * session of this process's own. */
void s3c_rdma_after_fork(s3r_client_t *c);

/* ---- client.c: helpers shared by the operation files ---------------------- */

/* Adds bytes to the ops and bytes counters of transport t. */
void s3c_count_transfer(s3r_client_t *c, s3r_transport_t t, uint64_t bytes);
/* The transport an operation of size bytes should try first: HTTP, TOKEN or
 * NATIVE. AUTO is NATIVE over a fast session, HTTP over a TCP-only one, and
 * with no session TOKEN from rdma_threshold up (to fall back) and HTTP
 * below. */
s3r_transport_t s3c_pick_transport(s3r_client_t *c, s3r_transport_t want, uint64_t size);
/* The transport of an operation without object bytes (buckets, HEAD,
 * DELETE, LIST, multipart control): NATIVE or HTTP, by the same rules. */
s3r_transport_t s3c_pick_control_transport(s3r_client_t *c);
/* Whether a failed token attempt (st) may be redone over HTTP; logs the
 * first fallback of the client and counts every one. */
bool s3c_fall_back(s3r_client_t *c, s3r_status_t st);

/* Strings that live as long as one request's headers. */
typedef struct strs {
    char *s[S3C_MAX_REQ_HDRS * 2];
    size_t n;
} strs_t;

/* A new formatted string owned by ss; NULL when ss is full or out of memory. */
const char *s3c_strs_printf(strs_t *ss, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Frees every string of ss and empties it. */
void s3c_strs_free(strs_t *ss);
/* URI-encodes s as a query value into a new string in ss; NULL on failure. */
const char *s3c_strs_qenc(strs_t *ss, const char *s);
/* URI-decodes s into a new string in ss; NULL on a malformed escape. */
const char *s3c_strs_udec(strs_t *ss, const char *s);
/* Whether s is a usable bucket or key name (non-NULL, non-empty). */
bool s3c_valid_name(const char *s);
/* Runs a request with no interesting 2xx body: S3R_OK on 2xx, else the
 * recorded error (key_op as for s3c_http_error). */
s3r_status_t s3c_simple(s3r_client_t *c, s3c_req_t *req, bool key_op);
/* s3c_get_xml leaving the response (its headers) in resp (initialised
 * here; the caller frees it). */
s3r_status_t s3c_get_xml_resp(s3r_client_t *c, s3c_req_t *req, buf_t *body, s3c_resp_t *resp);
/* Runs req and collects a 2xx XML body (at most S3C_MAX_XML_BODY) into body. */
s3r_status_t s3c_get_xml(s3r_client_t *c, s3c_req_t *req, buf_t *body);
/* simple and s3c_get_xml for a write (DELETE, CopyObject, Complete): a 2xx
 * answer's version becomes the thread's last (s3c_version_record). */
s3r_status_t s3c_simple_write(s3r_client_t *c, s3c_req_t *req, bool key_op);
s3r_status_t s3c_get_xml_write(s3r_client_t *c, s3c_req_t *req, buf_t *body);
/* S3R_OK unless a 200 body is an <Error> (CompleteMultipartUpload,
 * CopyObject), which is recorded as S3R_ERR_SERVER. */
s3r_status_t s3c_error_in_200(s3r_client_t *c, const buf_t *body);

/* Staging memory of len bytes (at least 1) for a file transfer over t:
 * registered (*registered set) for the token path when possible, else malloc. */
void *s3c_stage_alloc(s3r_client_t *c, s3r_transport_t t, uint64_t len, bool *registered);
/* Frees what s3c_stage_alloc returned (NULL is fine). */
void s3c_stage_free(s3r_client_t *c, void *p, bool registered);
/* Registered scratch memory of at least min bytes (S3C_SCRATCH_BYTES at
 * least) for a reply body of unknown size or a staged request body
 * (native.c), reused across requests:
 * *len_p gets its size. NULL when out of memory. Give it back with
 * s3c_scratch_put (kept, up to S3C_SCRATCH_KEEP buffers of
 * S3C_SCRATCH_KEEP_BYTES in all, else freed). */
void *s3c_scratch_get(s3r_client_t *c, uint64_t min, uint64_t *len_p);
void s3c_scratch_put(s3r_client_t *c, void *p, uint64_t len);
/* A bounce buffer standing in for the caller's buf (len bytes: a native
 * reply body's destination, or a request body of at most
 * S3C_BOUNCE_BODY_MAX or above S3C_STAGE_BODY_MAX) when the server of session s cannot reach buf
 * directly: s is same-host shared memory only (rdma_session_shm_only), buf
 * is not s3r_buf_alloc memory, len <= S3C_BOUNCE_MAX. It is s3r_buf_alloc
 * memory of s, which the server maps: the body costs the server's access in
 * place and one memcpy instead of UCX's software RMA. NULL when none applies
 * or the client's one bounce buffer is in use (the caller then uses buf).
 * *len_p gets its size (>= len). */
void *s3c_bounce_get(s3r_client_t *c, s3c_sess_t *s, const void *buf, uint64_t len,
                     uint64_t *len_p);
/* Gives a bounce buffer back: kept for the next call when reuse (the call
 * completed, so nobody writes it any more), else freed. */
void s3c_bounce_put(s3r_client_t *c, void *p, uint64_t len, bool reuse);
/* Whether the server of session s reaches [buf, buf+len) in place: always
 * over a NIC, xpmem or TCP lanes; on a shared-memory-only session only in
 * s3r_buf_alloc memory of s. */
bool s3c_sess_reaches(s3r_client_t *c, s3c_sess_t *s, const void *buf, uint64_t len);

/* ---- client_get.c, client_put.c: shared with the asynchronous calls -------- */

/* Builds the GET of bucket/key (opts' range and version) into buf (cap
 * bytes). S3R_OK, or the recorded error when the version does not fit. */
s3r_status_t s3c_get_request(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const char *bucket,
                             const char *key, void *buf, uint64_t cap, const s3r_get_opts_t *o);
/* Judges a GET's answer (st from running it): errors, overflow (buffer too
 * small, or out of memory when grow), counting; *len_p the bytes. */
s3r_status_t s3c_get_result(s3r_client_t *c, s3r_status_t st, const s3c_resp_t *resp, uint64_t cap,
                            bool grow, uint64_t *len_p);
/* One GET into buf over the transport picked for its size, with fallback. */
s3r_status_t s3c_get_one(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                         uint64_t cap, const s3r_get_opts_t *o, uint64_t *len_p);
/* Builds the PUT of len bytes at data (an UploadPart when query names
 * one) with opts' headers. */
s3r_status_t s3c_put_request(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const char *bucket,
                             const char *key, const char *query, const void *data, uint64_t len,
                             const s3r_put_opts_t *opts);
/* Judges a PUT's answer; the ETag into etag when given. */
s3r_status_t s3c_put_result(s3r_client_t *c, s3r_status_t st, const s3c_resp_t *resp, uint64_t len,
                            char *etag, size_t etag_len);
/* One PUT over the transport picked for len bytes, with fallback. */
s3r_status_t s3c_put_one(s3r_client_t *c, const char *bucket, const char *key, const char *query,
                         const void *data, uint64_t len, const s3r_put_opts_t *opts, char *etag,
                         size_t etag_len);

/* ---- client_object.c ------------------------------------------------------- */

/* HEADs bucket/key (version_id NULL: the current version) into a new
 * *info_p (free with s3r_object_info_free). */
s3r_status_t s3c_head_object(s3r_client_t *c, const char *bucket, const char *key,
                             const char *version_id, s3r_object_info_t **info_p);
/* Adds "versionId=<vid, URI-encoded>" to req's query (kept in ss); vid NULL
 * adds nothing. S3R_ERR_TOO_LARGE (recorded) when it does not fit. */
s3r_status_t s3c_version_query(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const char *vid);

#endif
