/* The request context shared by the frontends (src/http: libmicrohttpd; native.c),
 * authentication (auth.c), body handling (body.c), replies (reply.c) and the
 * operation handlers (ops_*.c). The handlers reach the request and the client
 * only through s3_req_header/query/has_query/each_header and the s3_reply_*
 * functions, which go through req->fe, so a frontend other than HTTP can
 * drive them.
 *
 * Life of a request (the HTTP frontend's access handler is called several times):
 *   0. the frontend allocates the request and calls s3_req_init().
 *   1. headers arrive: the frontend routes the request (req->op, bucket,
 *      key...) and authenticates it, then s3_req_start() runs the operation's
 *      begin(); it either replies at once (errors, GET, HEAD, DELETE...) or
 *      says what to do with the body (s3_body_kind).
 *   2. body pieces: fed to the body sink (object bytes into a storage writer
 *      through the digests, or an XML body into a bounded buffer).
 *   3. body done: s3_req_finish() runs the operation's finish(), which replies.
 * Whatever happened, s3_req_release() releases everything the request holds
 * (an unfinished writer is aborted, so a broken upload leaves nothing). */
#ifndef S3R_S3_REQUEST_H
#define S3R_S3_REQUEST_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/checksum.h"
#include "common/hash.h"
#include "s3/awschunked.h"
#include "s3/s3_errors.h"
#include "s3/s3_server.h"
#include "storage/storage.h"

/* What every frontend's requests share. The HTTP frontend allocates it
 * inside its own server (src/http/http_internal.h), as native_req_t embeds s3_req_t;
 * s3_server.c sets up and ends the parts here. */
struct s3_server {
    s3_server_config_t cfg;
    struct s3_metrics *metrics;     /* s3_metrics.c; NULL when cfg.metrics_enabled is off */
    struct hash_pool *hashers;      /* MD5 beside the body's write (body.c); NULL: in line */
    struct s3_lc_runner *lifecycle; /* applies lifecycle rules (lifecycle_run.h) */
    atomic_uint inflight;
    atomic_ulong request_seq;
    atomic_bool stopping;
    atomic_bool ready; /* s3_server_set_ready */
    uint32_t instance; /* random, makes request ids unique across restarts */
    /* Request documents buffered now (S3_BODY_XML bodies, body.c): in all,
     * and per user (cfg.users' order, then one slot for anonymous requests). */
    atomic_ullong doc_bytes;
    atomic_ullong *user_doc_bytes;
};

typedef enum s3_payload_mode {
    S3_PAYLOAD_SIGNED = 0,                 /* x-amz-content-sha256 is the body's hex SHA-256 */
    S3_PAYLOAD_UNSIGNED,                   /* UNSIGNED-PAYLOAD, or a presigned URL */
    S3_PAYLOAD_STREAMING_SIGNED,           /* aws-chunked, signed chunks */
    S3_PAYLOAD_STREAMING_SIGNED_TRAILER,   /* aws-chunked, signed chunks + signed trailer */
    S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER, /* aws-chunked, plain chunks + trailer */
} s3_payload_mode_t;

typedef enum s3_body_kind {
    S3_BODY_NONE = 0, /* a body is an error for this operation unless empty */
    S3_BODY_XML,      /* buffered up to S3R_MAX_XML_BODY for finish() */
    S3_BODY_OBJECT,   /* streamed into req->writer through the digests */
    S3_BODY_FORM,     /* raw bytes to req->form_feed, which sinks the file's (s3_body_sink) */
} s3_body_kind_t;

/* Which checksum algorithms an object body is hashed with: those current
 * AWS SDKs send (x-amz-checksum-<name>). */
enum s3_checksum_alg {
    S3_CK_CRC32 = 0,
    S3_CK_CRC32C,
    S3_CK_SHA256,
    S3_CK_SHA1,
    S3_CK_CRC64NVME,
    S3_CK_COUNT
};

typedef struct s3_req s3_req_t;

/* Why a request's x-amz-rdma-token was declined (docs/protocol.md §2.1, §3). */
typedef enum s3_decline {
    S3_DECLINE_NONE = 0,
    S3_DECLINE_DISABLED,  /* RDMA is off on this server */
    S3_DECLINE_SESSION,   /* no live session for the token, or a malformed s3r1 token */
    S3_DECLINE_TRANSPORT, /* the RDMA transfer failed */
    S3_DECLINE_FOREIGN,   /* another implementation's token format */
    S3_DECLINE_COUNT
} s3_decline_t;

/* What a reply carries after its status and headers. */
typedef enum s3_out_kind {
    S3_OUT_EMPTY = 0, /* nothing */
    S3_OUT_BUFFER,    /* data, len */
    S3_OUT_OBJECT,    /* bytes [first, first+obj_len) of reader; obj_len > 0 */
} s3_out_kind_t;

typedef struct s3_out {
    s3_out_kind_t kind;
    /* The reply of an object read (GET or HEAD of an object, s3_reply_object),
     * empty or not; a transport that moves objects itself (the token path)
     * takes these over. */
    bool object;
    char *data; /* S3_OUT_BUFFER: malloc'd; the frontend takes it over (frees it) */
    size_t len;
    stor_reader_t *reader; /* S3_OUT_OBJECT: the frontend takes it over (closes it) */
    uint64_t first, obj_len;
} s3_out_t;

/* Calls back for one request header; returns non-zero to stop the walk. */
typedef int (*s3_header_fn)(void *ctx, const char *name, const char *value);
/* Calls back for one query argument as received: name and value still
 * percent-encoded, value NULL for a flag sent without '=' ("?uploads");
 * returns non-zero to stop the walk. */
typedef int (*s3_query_fn)(void *ctx, const char *name, const char *raw_value);
/* Calls back for a piece of a multipart/form-data field: its name, the file
 * name a file part gives (NULL for another), and bytes [off, off+size) of
 * its value. Returns non-zero to stop the parse. */
typedef int (*s3_form_fn)(void *ctx, const char *name, const char *filename, const char *data,
                          uint64_t off, size_t size);
/* A frontend's parser of one multipart/form-data request body. */
typedef struct s3_form s3_form_t;

/* A frontend: how the generic code reads the request and sends the reply.
 * src/http is the HTTP one (libmicrohttpd). Its functions are called only
 * between s3_req_init and s3_req_release, by the thread driving the request. */
typedef struct s3_frontend {
    /* What its requests count as (req->transport starts as this): HTTP,
     * NATIVE; the token frontend's count as HTTP until it takes their
     * s3r1 token up (for an object body or an object reply). */
    s3_transport_t transport;
    /* Writes the client's address ("ip:port", or the session's peer) into
     * out (cap bytes, NUL-terminated); for access logs only. */
    void (*remote)(s3_req_t *req, char *out, size_t cap);
    /* The value of header name (matched without regard to case), or NULL. */
    const char *(*header)(s3_req_t *req, const char *name);
    /* Calls fn for every request header in the order received, until fn
     * returns non-zero. value is never NULL. */
    void (*each_header)(s3_req_t *req, s3_header_fn fn, void *ctx);
    /* The decoded value of query argument name, "" for a bare flag
     * ("?uploads"), NULL when absent. The value must live as long as the
     * request; name does (callers pass string literals), so a frontend may
     * keep it as a cache key. */
    const char *(*query)(s3_req_t *req, const char *name);
    /* Whether query argument name is present, with a value or without. */
    bool (*has_query)(s3_req_t *req, const char *name);
    /* Calls fn for every query argument in the order received, raw (as
     * signatures cover them), until fn returns non-zero. NULL for a
     * transport without a query string: native requests carry their
     * parameters decoded, and no signature of their own. */
    void (*each_raw_query)(s3_req_t *req, s3_query_fn fn, void *ctx);
    /* A parser of the request's multipart/form-data body (Content-Type
     * gives the boundary) calling fn with ctx for its fields as the body is
     * fed, or NULL when none can be made (no boundary, out of memory).
     * form_feed parses the next body bytes; form_close ends the parse and
     * frees the parser. Both return 0, or -1 when the form is malformed (for
     * form_close: also when it ended incomplete) or fn stopped it. All
     * three NULL: a transport without forms (native). */
    s3_form_t *(*form_open)(s3_req_t *req, s3_form_fn fn, void *ctx);
    int (*form_feed)(s3_form_t *form, const char *data, size_t len);
    int (*form_close)(s3_form_t *form);
    /* Whether the request came over TLS (aws:SecureTransport); NULL: never. */
    bool (*secure)(s3_req_t *req);
    /* Sends the reply: status, the "name\0value\0" pairs of
     * req->reply_headers, then out (which it takes over whatever happens:
     * out->data freed, out->reader closed). Sets req->replied, also when the
     * reply could not be sent. Called once per request. A reply to HEAD
     * carries no body, and the frontend must send none: errors to HEAD come
     * as S3_OUT_EMPTY, but a HEAD of an object still comes as S3_OUT_OBJECT
     * so that the frontend can announce its length (HTTP: Content-Length);
     * its bytes are not sent (s3_req_is_head tells). */
    void (*send)(s3_req_t *req, int status, s3_out_t *out);
    /* A transport that moves object bodies itself, not in the request it
     * came in (the token path: RDMA-READ from the client's buffer); both
     * NULL for the others. body_take is called by s3_req_start once the
     * operation's begin() asked for an S3_BODY_OBJECT body, before the
     * body's headers are checked (s3_body_begin): it replies and returns
     * false to refuse the request, or sets req->body_via_transport and
     * returns true. Then the request's own body must be empty (a frontend
     * that carries one refuses it), its length is
     * x-amz-decoded-content-length, and s3_req_finish calls body_pull,
     * which feeds the body (s3_body_sink) and returns true, leaving a sink
     * failure in req->body_error, or replies and returns false. */
    bool (*body_take)(s3_req_t *req);
    bool (*body_pull)(s3_req_t *req);
    /* The frontend sends a PutObject's success reply only once the write is
     * durable, without its thread waiting for that: s3_object_commit then
     * commits with stor_writer_commit_later and leaves req->durable_ticket
     * for send, which must hold a 2xx reply and hand it to
     * s3_req_await_durable: sent once the ticket is settled, a 500 instead
     * if the flush failed. false: every commit returns durable (HTTP: a
     * thread per connection, which waits). */
    bool durable_later;
} s3_frontend_t;

/* The token transport (token.c; docs/protocol.md §3): an S3 request over a
 * carrier frontend (HTTP) that names a buffer of the client's in
 * x-amz-rdma-token. The carrier gives every request carrying the header
 * this table instead of its own (and keeps driving it). It reads the
 * request and sends replies through the carrier's table, except that it
 * moves the object of PutObject and UploadPart (RDMA-READ, body_take and
 * body_pull) and the object of GetObject (RDMA-WRITE, in send: the reply
 * keeps only its headers) by RDMA between the server's staging memory and
 * that buffer, and answers the token's own failures: a 501 decline the
 * client redoes over HTTP (RDMA off, no session, a failed transfer, another
 * implementation's token: x-amz-rdma-reply: 501, a GET's object then sent
 * in the body), 403 for a token outside SignedHeaders. A request whose
 * operation has no object body or reply (listings, deletes, XML bodies,
 * errors before the object is known) is the carrier's untouched, so an
 * error keeps its meaning: a client never mistakes a 404 for a decline. */
typedef struct s3_token_frontend {
    s3_frontend_t fe; /* first: a request's fe points here */
    const s3_frontend_t *carrier;
} s3_token_frontend_t;
/* Fills t for carrier, which must outlive it. */
void s3_token_frontend_init(s3_token_frontend_t *t, const s3_frontend_t *carrier);

/* How a token transfer failed: the reply token.c gives for it. */
typedef struct s3_token_fail {
    /* The sink or fill callback returned nonzero: the failure is the
     * caller's own (err, decline and msg are unset). */
    bool callback;
    s3_error_t err;       /* else the error to reply... */
    s3_decline_t decline; /* ...which, when not NONE, is a 501 decline */
    char msg[192];        /* its message */
} s3_token_fail_t;

/* Moves the bytes of token requests between the server and the client
 * buffer an s3r1 x-amz-rdma-token names (src/rdmafe implements it over
 * the RDMA session server; s3_server_config_t.token_mover). The token
 * path's S3 rules (declines, the signature, buffer sizes, headers) are
 * token.c's; this table only moves bytes. The handle is the mover's. */
typedef struct s3_token_mover {
    void *ctx;
    /* Opens the transfer token names for a request signed by access_key:
     * the handle, or NULL with *fail filled. */
    void *(*open)(void *ctx, const char *token, const char *access_key, s3_token_fail_t *fail);
    /* The client buffer's length. */
    uint64_t (*length)(void *x);
    /* Moves len bytes (<= length) from the client buffer to sink, in order
     * (sink returns 0 to go on); or false with *fail filled. */
    bool (*pull)(void *x, uint64_t len, int (*sink)(void *ctx, const void *data, size_t len),
                 void *sink_ctx, s3_token_fail_t *fail);
    /* Moves the len bytes fill gives for each [off, off+len) into the
     * client buffer at the same offsets (fill returns 0 to go on): once it
     * returns true they are in the client's memory; or false with *fail. */
    bool (*push)(void *x, uint64_t len, int (*fill)(void *ctx, void *dst, size_t len, uint64_t off),
                 void *fill_ctx, s3_token_fail_t *fail);
    void (*close)(void *x);
} s3_token_mover_t;

typedef struct s3_op {
    const char *name; /* the S3 operation's name; the label of its metrics */
    /* Runs once the request is authenticated. Replies, or sets req->body_kind
     * (and for objects opens req->writer) and returns for finish(). */
    void (*begin)(s3_req_t *req);
    /* Runs after the whole body was received and verified. Must reply. */
    void (*finish)(s3_req_t *req);
} s3_op_t;

struct s3_req {
    struct s3_server *srv;
    const s3_frontend_t *fe;
    const char *method; /* borrowed from the frontend */
    char request_id[24];
    int64_t now_s;

    /* Routing: decoded bucket and key (NULL when absent). */
    char *bucket;
    char *key;
    char *path;        /* the request path percent-decoded, as SigV4 canonicalises it */
    char *resource;    /* "/bucket/key", for error bodies */
    bool virtual_host; /* the bucket came from the Host header, not the path */
    const s3_op_t *op;

    /* Authentication results. */
    const s3_user_t *user;
    /* req->bucket as s3_bucket_authorize found it (its id included). The
     * storage calls that change the bucket take this, not the name, so they
     * fail with NoSuchBucket if the bucket was deleted since (and perhaps
     * re-created by another user) rather than write into another bucket. */
    stor_bucket_t authz_bucket;
    s3_payload_mode_t payload_mode;
    char payload_sha256[65]; /* S3_PAYLOAD_SIGNED: expected body hash */
    uint8_t signing_key[SHA256_LEN];
    char amz_date[17];
    char scope[256];
    char seed_signature[65];
    char signed_headers[1024]; /* lower-case names joined by ';' */
    char *headers_not_signed;  /* x-amz-* headers outside them (",") for the AccessDenied body */

    /* The tag set a PutObjectTagging body sets, while its access is decided
     * (s3:RequestObjectTag conditions; other requests: x-amz-tagging). */
    const struct s3_tags *request_tags;

    /* Body. */
    s3_body_kind_t body_kind;
    bool body_started;
    /* The frontend moves the object body itself (s3_frontend_t.body_take). */
    bool body_via_transport;
    bool body_verified;    /* s3_body_end passed (set by s3_req_finish) */
    uint64_t body_limit;   /* decoded bytes allowed */
    uint64_t body_bytes;   /* decoded bytes received */
    uint64_t declared_len; /* x-amz-decoded-content-length or Content-Length, UINT64_MAX unknown */
    buf_t body;            /* S3_BODY_XML */
    uint64_t body_held;    /* body's bytes counted in the server's document memory */
    atomic_ullong *body_held_by; /* the user slot they count against */
    stor_writer_t *writer;       /* S3_BODY_OBJECT, and S3_BODY_FORM's file */
    /* S3_BODY_FORM: set by the operation's begin(), takes the raw body bytes
     * as they arrive, then (data NULL, len 0) once at the end, before the
     * body is verified. Never replies (the HTTP frontend takes no reply
     * mid-body): it keeps what it finds wrong for finish() to reply. */
    void (*form_feed)(s3_req_t *req, const char *data, size_t len);
    awschunk_t *chunked;
    digest_t *md5;
    digest_t *sha256_payload; /* S3_PAYLOAD_SIGNED: hash of the payload (HTTP body or RDMA pull) */
    digest_t *sha256_ck;      /* x-amz-checksum-sha256 */
    digest_t *sha1_ck;        /* x-amz-checksum-sha1 */
    bool want_ck[S3_CK_COUNT];
    const char *expect_ck[S3_CK_COUNT]; /* from x-amz-checksum-* headers; NULL when not sent */
    bool fast_etag; /* set by PutObject's and UploadPart's begin() under etag: fast */
    /* Set by CompleteMultipartUpload's begin(): its x-amz-checksum-* headers
     * are the object's checksums, not its XML body's, and body.c leaves
     * them alone. */
    bool checksums_of_object;
    bool has_content_md5;
    uint8_t content_md5[MD5_LEN];
    uint32_t crc32, crc32c;
    uint64_t crc64nvme;
    s3_error_t body_error;

    /* Finished-body results (body.c fills these for finish()). */
    char etag[40];                /* 32 hex digits (MD5), or 32 and "-1" (etag: fast) */
    char *checksums[S3_CK_COUNT]; /* base64, verified or computed; NULL when not asked */
    char precond_etag[64];        /* s3_write_precond's If-Match ETag */

    /* Set by s3_object_commit under fe->durable_later: what the commit
     * still waits for before it is durable (0: nothing). */
    stor_ticket_t durable_ticket;

    /* Operation scratch: handlers keep their state here. */
    void *op_state;
    void (*op_state_free)(void *);

    /* Response. */
    /* A native request: the most reply body bytes its client can take (its
     * out span, or what may travel inline, whichever is larger). HTTP
     * leaves it 0 and nothing reads it there. */
    uint64_t reply_room;
    buf_t reply_headers; /* "name\0value\0" pairs, added to the response by the reply */
    buf_t error_elems;   /* XML elements an error reply adds after <Message> */
    bool replied;
    bool deferred; /* no body: routing and the operation wait for the next call */

    /* What the request did, for metrics and the access log (s3_req_release). */
    uint64_t start_ns;        /* CLOCK_MONOTONIC at s3_req_init */
    int64_t start_ms;         /* unix milliseconds at s3_req_init */
    int status;               /* the last reply's status; 0 until one is sent */
    s3_error_t error;         /* the last error replied; S3E_NONE when none */
    uint64_t bytes_out;       /* reply body bytes (token GET: RDMA-written) */
    s3_decline_t decline;     /* why an x-amz-rdma-token was not used, if it was not */
    s3_transport_t transport; /* what carried it: fe->transport, or TOKEN (token.c) */
    /* s3_req_await_durable took the request's record: s3_req_release writes none. */
    bool recorded_later;
};

/* ---- s3_server.c: the server's core -------------------------------------- */

/* Sets up srv (zeroed by the caller) for cfg (copied; lifecycle_day_s 0
 * becomes 86400): its instance id, metrics, body hashers and lifecycle
 * runner. 0, or -1 (nothing left held) when out of memory or threads. */
int s3_server_init(s3_server_t *srv, const s3_server_config_t *cfg);
/* Marks srv stopping and not ready (new requests get 503 but health). */
void s3_server_stopping(s3_server_t *srv);
/* Waits up to grace_s seconds for the requests in flight to finish. */
void s3_server_drain(s3_server_t *srv, int grace_s);
/* Stops the lifecycle runner and frees what s3_server_init made, once no
 * request runs any more; not srv itself. */
void s3_server_fini(s3_server_t *srv);

/* ---- request.c: the request's life ------------------------------------- */

/* Starts a request the frontend allocated zeroed: its server, frontend and
 * method (borrowed; must outlive the request), a request id, the clock,
 * empty body and reply-header buffers. Counts it in srv->inflight. */
void s3_req_init(s3_req_t *req, s3_server_t *srv, const s3_frontend_t *fe, const char *method);
/* Runs a routed (req->op set) and authenticated (s3_auth_verify or the
 * frontend's equivalent filled req->user and the auth fields) request:
 * the operation's begin(), then, when it wants a body, s3_body_begin().
 * Either replies, or leaves req->body_kind saying what to feed to
 * s3_body_feed() before s3_req_finish(). */
void s3_req_start(s3_req_t *req);
/* Once the whole body was fed (or at once when body_kind is S3_BODY_NONE):
 * verifies the body and runs the operation's finish(). Always replies. */
void s3_req_finish(s3_req_t *req);
/* Frees everything s3_req_init and the request's life allocated (aborting an
 * unfinished writer), but neither req itself nor the frontend's own parts,
 * and uncounts it from srv->inflight. */
void s3_req_release(s3_req_t *req);

/* What a frontend that holds a 2xx reply for req->durable_ticket
 * (fe->durable_later) calls once it holds it: awaits the ticket
 * (stor_ticket_await; 0 after) and, once it is settled, on whichever thread
 * that is, counts the request and writes its access-log line with the status
 * the client gets -- the held one if the write is durable, 500 InternalError
 * if not -- and then calls sent(arg, st), which must send the held reply
 * (st STOR_OK) or a 500 InternalError instead (STOR_ERR_IO: the flush
 * failed). The record is a copy (one allocation, its strings with it);
 * s3_req_release writes none. Without metrics and an access log, or without
 * memory for the copy, sent is awaited alone and s3_req_release records the
 * held status as the request ends. */
void s3_req_await_durable(s3_req_t *req, stor_durable_fn sent, void *arg);

/* What a finished request's count (s3_metrics_count) and access-log line
 * say: the access-log record, and what the metrics count besides. */
typedef struct s3_req_outcome {
    s3_access_record_t rec;
    const s3_op_t *op; /* NULL: none */
    s3_error_t error;
    s3_decline_t decline;
} s3_req_outcome_t;

/* The transport that carried the request (req->transport). */
s3_transport_t s3_req_transport(const s3_req_t *req);

/* Whether the request is a HEAD: its reply carries no body. */
bool s3_req_is_head(const s3_req_t *req);
/* Header value lookup (case-insensitive name), or NULL. */
const char *s3_req_header(s3_req_t *req, const char *name);
/* Calls fn for every request header until it returns non-zero. */
void s3_req_each_header(s3_req_t *req, s3_header_fn fn, void *ctx);
/* Query argument lookup: decoded value ("" for "?uploads"), or NULL when
 * absent. The value lives as long as the request; name must too (pass a
 * string literal: it is kept as the cache key). */
const char *s3_req_query(s3_req_t *req, const char *name);
bool s3_req_has_query(s3_req_t *req, const char *name);
/* Calls fn for every raw query argument until it returns non-zero (none
 * when the frontend has no query string). */
void s3_req_each_raw_query(s3_req_t *req, s3_query_fn fn, void *ctx);

/* ---- reply.c: replying ----------------------------------------------------- */

/* Adds a response header (copied). Dropped if the headers would exceed
 * S3R_MAX_HEADER_BYTES in all. */
void s3_reply_header(s3_req_t *req, const char *name, const char *value);
void s3_reply_headerf(s3_req_t *req, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An S3 XML error; message NULL uses the table's default. HEAD gets no body. */
void s3_reply_error(s3_req_t *req, s3_error_t err, const char *message);
/* Adds <name>value</name> (escaped) to the error reply this request may send,
 * after its <Message>: the extra elements S3 gives some errors (<Region>,
 * <Expires>, <ServerTime>...). */
void s3_reply_error_elem(s3_req_t *req, const char *name, const char *value);
/* An XML body (taken over and freed). */
void s3_reply_xml(s3_req_t *req, int status, buf_t *xml);
/* No body. */
void s3_reply_empty(s3_req_t *req, int status);
/* An object body: bytes [first, first+len) of reader, which the reply takes
 * over (closed when sent). HEAD sends only the headers, with the length. */
void s3_reply_object(s3_req_t *req, int status, stor_reader_t *reader, uint64_t first,
                     uint64_t len);

/* Every reply goes out through here: records the status, error and body
 * length for metrics and the access log, then calls the frontend's send. */
void s3_reply_send(s3_req_t *req, int status, s3_out_t *out);
/* Adds the Access-Control-* headers of the bucket's CORS rule that allows
 * this HTTP request (it has an Origin header and one of the methods CORS
 * rules name), if any: the HTTP frontend calls it for every reply it sends,
 * errors included. The native protocol is no browser's: it never carries
 * them. */
void s3_cors_reply_headers(s3_req_t *req);

/* The lifecycle configuration of bucket (as s3_bucket_lookup gave it),
 * parsed once per configuration generation in the cache of parsed bucket
 * configurations (access.c): calls fn(ctx, cfg) with it, cfg->n_rules 0
 * when there is none. Returns S3E_NONE, or the error reading it (fn not
 * called). */
struct s3_lc;
typedef void (*s3_lc_fn)(void *ctx, const struct s3_lc *cfg);
s3_error_t s3_bucket_lifecycle(s3_req_t *req, const stor_bucket_t *bucket, s3_lc_fn fn, void *ctx);

/* Adds x-amz-expiration when a lifecycle rule of req->authz_bucket expires
 * the current version key with meta (GET, HEAD, PUT replies), as S3 does;
 * nothing when none does or the configuration cannot be read. */
void s3_lifecycle_reply_header(s3_req_t *req, const char *key, const stor_meta_t *meta);
/* Adds x-amz-abort-date and x-amz-abort-rule-id when a lifecycle rule of
 * req->authz_bucket aborts an upload of key initiated at initiated_s
 * (CreateMultipartUpload replies), as S3 does. */
void s3_lifecycle_abort_headers(s3_req_t *req, const char *key, int64_t initiated_s);

/* ---- XML response bodies (reply.c) -------------------------------------------- */

#define S3_XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"

/* Appends the XML declaration and <root xmlns="S3_XMLNS">. */
void s3_xml_open(buf_t *xml, const char *root);
/* Appends <name>value</name>, value escaped. */
void s3_xml_elem(buf_t *xml, const char *name, const char *value);
/* Appends <tag><ID>who</ID><DisplayName>name</DisplayName></tag> (Owner,
 * Initiator), name being who's display name (s3_display_name; who itself
 * for an id no configured user has). */
void s3_xml_principal(const s3_server_t *srv, buf_t *xml, const char *tag, const char *who);

/* Maps a storage status to an S3 error. */
s3_error_t s3_error_from_stor(stor_status_t st);

/* ---- auth.c --------------------------------------------------------------- */

/* Verifies SigV4 (header or presigned query); fills the auth fields. For
 * the HTTP frontend's requests: it reads the headers and the raw query
 * through the frontend table. */
s3_error_t s3_auth_verify(s3_req_t *req, const char **why_p);

/* ---- auth_v2.c: Signature Version 2 ------------------------------------------ */

#define S3_V2_SIG_LEN 28 /* base64 of an HMAC-SHA1 */

/* True when the request is signed the V2 way: an "AWS " Authorization
 * header, or the AWSAccessKeyId query without SigV4's. */
bool s3_auth_v2_request(s3_req_t *req);
/* Verifies a V2 request (header or presigned query) as s3_auth_verify does
 * a SigV4 one: AccessDenied when the server's signature_v2 setting is off. */
s3_error_t s3_auth_v2_verify(s3_req_t *req, const char **why_p);
/* The base64 HMAC-SHA1 of data under the user's secret key. */
void s3_auth_v2_sign(const s3_user_t *user, const char *data, size_t len,
                     char out[S3_V2_SIG_LEN + 1]);
/* Constant-time: the signature given equals the one expected. */
bool s3_auth_v2_sig_equal(const char *expected, const char *given);
/* The configured user with this access key, or NULL. */
const s3_user_t *s3_user_find(const s3_server_t *srv, const char *access_key);
/* The display name of the configured user whose canonical id (access key)
 * is id (its display_name, or its access key), or NULL for no such user. */
const char *s3_display_name(const s3_server_t *srv, const char *id);

/* ---- body.c --------------------------------------------------------------- */

/* Prepares body handling for req->body_kind (parses Content-MD5, checksum
 * headers, aws-chunked parameters). Returns S3E_NONE or the error to reply. */
s3_error_t s3_body_begin(s3_req_t *req);
/* Feeds raw body bytes. On error sets req->body_error. */
void s3_body_feed(s3_req_t *req, const char *data, size_t len);
/* Frees a buffered (S3_BODY_XML) body and gives its bytes back to the
 * server's document memory; any time, more than once. */
void s3_body_release(s3_req_t *req);
/* Completes and verifies the body: lengths, aws-chunked end, Content-MD5,
 * x-amz-content-sha256, checksums (header or trailer). Fills req->etag and
 * req->checksums. Returns S3E_NONE or the error to reply. */
s3_error_t s3_body_end(s3_req_t *req);
/* The checksums req->want_ck names, over bytes that are no request body
 * (s3_body_sink runs them over bodies; UploadPartCopy over copied bytes):
 * begin starts their digests, update hashes, end puts them, base64, in
 * req->checksums. */
s3_error_t s3_checksums_begin(s3_req_t *req);
void s3_checksums_update(s3_req_t *req, const void *data, size_t len);
s3_error_t s3_checksums_end(s3_req_t *req);
/* Adds the x-amz-checksum-* headers of req->checksums to the response. */
void s3_reply_checksums(s3_req_t *req);
/* Where meta and a part keep the checksum of algorithm alg (const meta: to
 * read only). */
char **s3_meta_checksum(const stor_meta_t *meta, enum s3_checksum_alg alg);
char **s3_part_checksum(const stor_part_t *part, enum s3_checksum_alg alg);
/* The s3_checksum_alg of common/checksum.h's alg. */
enum s3_checksum_alg s3_checksum_alg_of(checksum_alg_t alg);
/* Part n's (1-based) checksum in a multipart object's part_checksums, into
 * out; false when the object keeps none for that part. */
bool s3_part_checksum_of(const stor_meta_t *meta, uint32_t n, char out[CHECKSUM_VALUE_MAX]);
/* The XML element name of a checksum ("ChecksumCRC32", ...). */
const char *s3_checksum_elem(enum s3_checksum_alg alg);
/* The body sink of a transport that moves the body itself (body_pull):
 * hashes and writes already-decoded bytes. */
int s3_body_sink(void *req, const void *data, size_t len);
/* Fills meta's stored headers (Content-Type, x-amz-meta-*, ...) from the
 * request headers: every path that stores metadata (PUT, POST forms,
 * CopyObject with REPLACE, CreateMultipartUpload; over HTTP and native)
 * takes it through here. Refuses what some reply could not carry back:
 * names and values outside the field syntax (s3_field_name_ok,
 * s3_field_value_ok) with InvalidArgument, more than the metadata limits
 * (common/s3r_limits.h) with MetadataTooLarge or InvalidArgument. Returns
 * S3E_NONE, or the error with *why_p its message (NULL: the table's). */
s3_error_t s3_meta_from_headers(s3_req_t *req, stor_meta_t *meta, const char **why_p);
/* Sets meta->tags from the request's x-amz-tagging header (none: no tags),
 * checked as S3 does (s3/tagging.h); s3_meta_from_headers calls it, and
 * CopyObject under x-amz-tagging-directive REPLACE. */
s3_error_t s3_tags_from_request(s3_req_t *req, stor_meta_t *meta, const char **why_p);
/* Sets meta's storage class from x-amz-storage-class: NULL when absent or
 * STANDARD (records stay at their older version), the class as sent when
 * it is another of S3's; InvalidStorageClass for one S3 does not know.
 * s3_meta_from_headers takes every writer through here; CopyObject's COPY
 * directive too (a copy is STANDARD unless the request names a class, as
 * in S3). */
s3_error_t s3_storage_class_from_headers(s3_req_t *req, stor_meta_t *meta);
/* The class meta's object has, as S3 names it ("STANDARD" when none). */
const char *s3_storage_class(const stor_meta_t *meta);
/* Checks meta's stored headers (Content-Type, Cache-Control, ...) are
 * field values and within S3R_MAX_STORED_HEADER_BYTES together: S3E_NONE,
 * or InvalidArgument with *why_p its message. For a GET's response-*
 * overrides too. */
s3_error_t s3_stored_headers_check(const stor_meta_t *meta, const char **why_p);
/* Adds meta's stored headers, ETag, Last-Modified and (when asked with
 * x-amz-checksum-mode: ENABLED) checksums to the response. */
void s3_meta_to_headers(s3_req_t *req, const stor_meta_t *meta);

/* ---- access.c: who may do what (docs/security.md) ----------------------------
 * The requester is req->user, or anonymous when it is NULL (a request with
 * no signature at all). A resource's owner may always read and change its
 * ACL; its ACL (canned, or explicit grants) grants every other permission. */

typedef enum s3_perm {
    S3_PERM_READ,      /* bucket: list it; object: read it */
    S3_PERM_WRITE,     /* bucket: write and delete objects in it */
    S3_PERM_READ_ACP,  /* read the ACL */
    S3_PERM_WRITE_ACP, /* change the ACL */
    S3_PERM_OWNER,     /* the owner only (delete the bucket, its configuration) */
} s3_perm_t;

/* Public-access block flags (PutPublicAccessBlock), as stored. */
enum {
    S3_PAB_BLOCK_PUBLIC_ACLS = 1,
    S3_PAB_IGNORE_PUBLIC_ACLS = 2,
    S3_PAB_BLOCK_PUBLIC_POLICY = 4,
    S3_PAB_RESTRICT_PUBLIC_BUCKETS = 8,
    S3_PAB_ALL = 15,
};

/* A bucket's object-ownership rule (PutBucketOwnershipControls), as stored;
 * NONE: never set, which behaves as ObjectWriter. */
typedef enum s3_ownership {
    S3_OWNERSHIP_NONE = 0,
    S3_OWNERSHIP_OBJECT_WRITER,
    S3_OWNERSHIP_PREFERRED, /* BucketOwnerPreferred */
    S3_OWNERSHIP_ENFORCED,  /* BucketOwnerEnforced: ACLs off */
    S3_OWNERSHIP_COUNT
} s3_ownership_t;

/* Every check below is one decision (access.c, docs/security.md): the
 * bucket's policy (an explicit Deny wins, then an Allow), its public-access
 * block and ownership controls, then the ACLs. The S3 action checked is the
 * request's operation's (s3:GetObject...), on the bucket's ARN, or the
 * object's when the request names a key. */

/* Looks bucket up into *bucket_p; replies NoSuchBucket and returns false
 * when it does not exist. Objects' operations start here: their access is
 * the object's (s3_object_authorize), not the bucket's. */
bool s3_bucket_lookup(s3_req_t *req, const char *bucket, stor_bucket_t *bucket_p);
/* The error for a lookup of an object in bucket (as looked up already)
 * that failed with st. A key that does not exist is NoSuchKey only to a
 * requester who may list the bucket (s3:ListBucket) and AccessDenied to the
 * others, so that they learn nothing of what the bucket holds, as S3
 * answers. Every operation that looks a key up goes through here before it
 * replies (GET, HEAD, copy sources, ?acl, ?tagging). */
s3_error_t s3_object_lookup_error(s3_req_t *req, const stor_bucket_t *bucket, stor_status_t st);
/* ---- bucket configuration documents (ops_config.c) ------------------------------ */

/* Reads configuration document kind of req->authz_bucket into *doc (the
 * caller frees it; len 0: not set). Replies and returns false on error. */
bool s3_config_read(s3_req_t *req, stor_bucket_cfg_t kind, buf_t *doc);
/* Sets (len > 0) or removes (data NULL) document kind of req->authz_bucket
 * and replies status, or the error. */
void s3_config_write(s3_req_t *req, stor_bucket_cfg_t kind, const void *data, size_t len,
                     int status);
/* Delete<Config>: the owner removes the bucket's kind document; 204 even
 * when there was none, as S3 answers. */
void s3_config_delete(s3_req_t *req, stor_bucket_cfg_t kind);
/* Put<Config>'s begin: the bucket's owner may send the XML document. */
void s3_owner_config_begin(s3_req_t *req);
/* Looks up the request's object (the version versionId names, or the
 * latest) and checks perm on it (a missing key: s3_object_lookup_error; a
 * delete marker: s3_delete_marker_reply), for the operations on an object's
 * metadata (?acl, ?tagging, ?attributes); fills *meta_p (caller frees) and,
 * when versionId names the version, adds its x-amz-version-id to the reply.
 * A change applies to the version named, as in S3. Replies and returns false
 * on error. */
bool s3_object_for_request(s3_req_t *req, s3_perm_t perm, stor_meta_t *meta_p);
/* s3_object_for_request with no version headers added (object lock adds
 * its own). */
bool s3_object_version_for_request(s3_req_t *req, s3_perm_t perm, stor_meta_t *meta_p);
/* The requester's perm on bucket (on req->key in it when the request names
 * one), checked without replying: S3E_NONE (*bucket_p, when not NULL, gets
 * the bucket as found), or the error to reply (for a caller that cannot
 * reply yet, such as one in the middle of a body). DeleteObjects on a
 * bucket with a policy passes here and is decided key by key. */
s3_error_t s3_bucket_access(s3_req_t *req, const char *bucket, s3_perm_t perm,
                            stor_bucket_t *bucket_p);
/* The requester's perm on bucket for key (DeleteObjects' keys): S3E_NONE
 * or the error. */
s3_error_t s3_key_access(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                         s3_perm_t perm);
/* Looks bucket up and checks the requester has perm on it; on success
 * *bucket_p (when not NULL) gets the bucket as found. On failure replies with
 * NoSuchBucket / AccessDenied and returns false. */
bool s3_bucket_authorize(s3_req_t *req, const char *bucket, s3_perm_t perm,
                         stor_bucket_t *bucket_p);
/* Checks the requester has perm on object key, which meta describes, in
 * bucket. On failure replies AccessDenied and returns false. */
bool s3_object_authorize(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                         const stor_meta_t *meta, s3_perm_t perm);
/* The object's owner: the access key that wrote it, or the bucket's owner. */
const char *s3_object_owner(const stor_bucket_t *bucket, const stor_meta_t *meta);
/* An ACL a request sets: a canned ACL, or explicit grants that replace it. */
typedef struct s3_new_acl {
    stor_acl_t canned; /* private under explicit grants */
    /* The explicit grant list in its stored form (s3/acl.h; malloc'd,
     * s3_new_acl_free), or NULL for the canned ACL alone. */
    char *grants;
    bool public_grants; /* grants give AllUsers or AuthenticatedUsers something */
} s3_new_acl_t;
void s3_new_acl_free(s3_new_acl_t *acl);
/* Sets meta's owner and ACL (s3_acl_from_headers) for an object the
 * request writes into req->authz_bucket (PUT, copy, multipart, POST): the
 * owner is the requester (the bucket's owner for an anonymous writer, under
 * BucketOwnerEnforced, and under BucketOwnerPreferred with
 * bucket-owner-full-control). Refuses what the bucket's controls refuse:
 * an ACL other than bucket-owner-full-control under BucketOwnerEnforced
 * (AccessControlListNotSupported), a public one (canned or grants) under
 * BlockPublicAcls (AccessDenied). */
s3_error_t s3_new_object_access(s3_req_t *req, stor_meta_t *meta, const char **why_p);
/* A rule's S3 name ("ObjectWriter", ...; NULL for none), and back (-1 for
 * a name S3 does not know). */
const char *s3_ownership_name(int rule);
int s3_ownership_parse(const char *name);
/* The ownership rule CreateBucket's x-amz-object-ownership names
 * (S3_OWNERSHIP_NONE when absent), or -1 for a value S3 does not know. */
int s3_ownership_from_header(s3_req_t *req);
/* Checks that PutBucketAcl / PutObjectAcl (or CreateBucket on a bucket its
 * requester owns) may set acl on req->authz_bucket or an object in it, as
 * s3_new_object_access does for new objects. */
s3_error_t s3_acl_change_check(s3_req_t *req, const s3_new_acl_t *acl, const char **why_p);
/* Whether the request sets an ACL by header: x-amz-acl or x-amz-grant-*. */
bool s3_acl_headers_given(s3_req_t *req);
/* The ACL a create/put/copy/PutBucketAcl/PutObjectAcl asks for by header
 * (private when none): x-amz-acl's canned ACL, or the explicit grants of
 * the x-amz-grant-* headers (s3/acl.h: grantees must be configured users
 * or the groups). Both at once: InvalidRequest; the canned ACLs not
 * implemented: NotImplemented; an unknown value InvalidArgument. On error
 * *why_p is the message (NULL: the default) and *out holds nothing. */
s3_error_t s3_acl_from_headers(s3_req_t *req, bool object, s3_new_acl_t *out, const char **why_p);
/* The ACL an AccessControlPolicy body (req->body) sets on a resource with
 * this owner (bucket_owner: the object's bucket's, NULL for a bucket): its
 * Owner, when given, must be the resource's owner (AccessDenied); a grant
 * list equal to a canned ACL's is kept as that canned ACL. */
s3_error_t s3_acl_from_body(s3_req_t *req, bool object, const char *owner, const char *bucket_owner,
                            s3_new_acl_t *out, const char **why_p);
/* Appends the AccessControlPolicy document of bucket, or of the object
 * meta describes in bucket (GetBucketAcl, GetObjectAcl): the owner and the
 * grants, with display names from the configured users. InternalError for
 * a stored list that does not decode. */
s3_error_t s3_bucket_acl_xml(s3_req_t *req, const stor_bucket_t *bucket, buf_t *xml);
s3_error_t s3_object_acl_xml(s3_req_t *req, const stor_bucket_t *bucket, const stor_meta_t *meta,
                             buf_t *xml);

/* ---- object lock (ops_lock.c; object_lock.h parses and rules) ------------------ */

struct s3_lock_guard;
/* Sets meta's retention and legal hold for a new version the request
 * writes into req->authz_bucket (PUT, copy, CreateMultipartUpload, POST):
 * those of the x-amz-object-lock-* headers, else the bucket's default
 * retention; never the copy source's. Lock headers on a bucket without
 * object lock: InvalidRequest; malformed ones: InvalidArgument. put
 * (PutObject): a version that gets a retention or legal hold needs
 * Content-MD5 or a checksum (InvalidRequest), as in S3. */
s3_error_t s3_lock_for_write(s3_req_t *req, stor_meta_t *meta, bool put, const char **why_p);
/* Whether the request carries what S3 asks of a body that locked data is
 * written from: Content-MD5, or a checksum header or trailer
 * (x-amz-checksum-<algorithm>, x-amz-trailer, x-amz-sdk-checksum-algorithm;
 * the body layer verifies each). A PutObject that locks its version and an
 * UploadPart of an upload whose object will be locked need one. */
bool s3_lock_integrity_given(s3_req_t *req);
/* The x-amz-object-lock-* headers of a GET or HEAD of meta's version, to a
 * requester allowed s3:GetObjectRetention / s3:GetObjectLegalHold. */
void s3_lock_reply_headers(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                           const stor_meta_t *meta);
/* The condition a removal of key's versions in bucket runs under: NULL for
 * a bucket without object lock; else cond (filled here) whose guard refuses
 * a protected version (STOR_ERR_LOCKED: AccessDenied), with g (filled here;
 * it must outlive the call) saying now and whether the request may bypass
 * GOVERNANCE retention (x-amz-bypass-governance-retention and
 * s3:BypassGovernanceRetention). */
const stor_precond_t *s3_lock_delete_cond(s3_req_t *req, const stor_bucket_t *bucket,
                                          const char *key, struct s3_lock_guard *g,
                                          stor_precond_t *cond);
/* CreateBucket with x-amz-bucket-object-lock-enabled: true, on the bucket
 * just created: versioning Enabled, then object lock enabled. */
stor_status_t s3_lock_bucket_create(s3_req_t *req, const stor_bucket_t *bucket);
/* PutBucketVersioning's rule, checked before the change and again after
 * it: a bucket with object lock stays Enabled (InvalidBucketState). After
 * a Suspend that raced PutObjectLockConfiguration, it sets Enabled again. */
s3_error_t s3_lock_versioning_check(s3_req_t *req, stor_versioning_t state, const char **why_p);
/* Whether the requester may take action on key of bucket, an action a
 * request needs beside its own (s3:BypassGovernanceRetention,
 * s3:GetObjectRetention for a read's lock headers): the bucket's policy
 * decides it as any action, and without a statement that allows it only
 * the bucket's owner may. */
bool s3_extra_action_allowed(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                             const char *action);

/* ---- object helpers (ops_object.c) --------------------------------------------- */

/* Opens the object named by x-amz-copy-source after checking the requester
 * owns its bucket and the x-amz-copy-source-if-* conditions hold; sets
 * *same_object_p when it names the request's own bucket/key. On failure
 * replies and returns NULL. */
stor_reader_t *s3_copy_source_open(s3_req_t *req, bool *same_object_p);
/* Copies [first, first+len) of reader into a new writer on req->bucket,
 * computing the MD5 (hex into etag); the writer encrypts under dk (NULL:
 * none; zeroed here). On success *writer_p is the writer, for the caller to
 * commit; on error nothing is left behind. */
struct s3_sse_key;
s3_error_t s3_copy_range(s3_req_t *req, stor_reader_t *reader, uint64_t first, uint64_t len,
                         struct s3_sse_key *dk, stor_writer_t **writer_p, char etag[33]);
/* Sets up receiving an object body for PutObject / UploadPart
 * (req->body_kind, whatever the transport) and opens req->writer. Replies
 * on failure. */
void s3_upload_begin(s3_req_t *req);
/* Ends PutObject's path, whoever received the body: commits req->writer as
 * req->key with meta, the body's ETag and checksums (added to the reply's
 * headers with the ETag). On failure replies and returns false. */
bool s3_object_commit(s3_req_t *req, stor_meta_t *meta);
/* ---- operations --------------------------------------------------------------- */

extern const s3_op_t s3_op_list_buckets, s3_op_create_bucket, s3_op_delete_bucket,
    s3_op_head_bucket, s3_op_get_bucket_location, s3_op_list_objects, s3_op_delete_objects,
    s3_op_put_object, s3_op_copy_object, s3_op_get_object, s3_op_head_object, s3_op_delete_object,
    s3_op_create_mpu, s3_op_upload_part, s3_op_upload_part_copy, s3_op_complete_mpu,
    s3_op_abort_mpu, s3_op_list_parts, s3_op_list_mpu, s3_op_post_object,
    s3_op_list_object_versions, s3_op_get_bucket_versioning, s3_op_put_bucket_versioning,
    s3_op_get_bucket_acl, s3_op_put_bucket_acl, s3_op_get_object_acl, s3_op_put_object_acl,
    s3_op_get_bucket_policy, s3_op_get_bucket_cors, s3_op_get_bucket_tagging,
    s3_op_get_bucket_lifecycle, s3_op_get_object_lock_config, s3_op_put_object_lock_config,
    s3_op_get_object_retention, s3_op_put_object_retention, s3_op_get_object_legal_hold,
    s3_op_put_object_legal_hold, s3_op_get_bucket_encryption, s3_op_get_object_tagging,
    s3_op_put_object_tagging, s3_op_delete_object_tagging, s3_op_get_object_attributes,
    s3_op_put_bucket_tagging, s3_op_delete_bucket_tagging, s3_op_put_bucket_encryption,
    s3_op_delete_bucket_encryption, s3_op_put_bucket_policy, s3_op_delete_bucket_policy,
    s3_op_get_bucket_policy_status, s3_op_get_public_access_block, s3_op_put_public_access_block,
    s3_op_delete_public_access_block, s3_op_get_bucket_ownership, s3_op_put_bucket_ownership,
    s3_op_delete_bucket_ownership, s3_op_put_bucket_cors, s3_op_delete_bucket_cors,
    s3_op_cors_preflight, s3_op_put_bucket_lifecycle, s3_op_delete_bucket_lifecycle;
/* Endpoints the HTTP frontend serves itself (begin and finish NULL: never
 * given to s3_req_start), named for metrics and access logs. */
extern const s3_op_t s3_op_stats, s3_op_metrics, s3_op_health;

/* ---- s3_metrics.c: the requests' metrics and GET /metrics --------------------- */

/* Allocates the metrics of a server (zeroed). NULL when out of memory. */
struct s3_metrics *s3_metrics_new(void);
void s3_metrics_free(struct s3_metrics *m);
/* Counts a finished request: by operation, status class and transport, its
 * latency, its bytes, its error code and token decline. Lock-free. */
void s3_metrics_count(struct s3_metrics *m, const s3_req_outcome_t *o);
/* Appends the Prometheus text page of srv: its requests' metrics, then
 * what transport (when not NULL) appends for the frontend's connections
 * (ctx its argument), the RDMA transport's families (cfg.rdma_report) and
 * the store's usage. */
void s3_metrics_render(s3_server_t *srv, void (*transport)(void *ctx, buf_t *out), void *ctx,
                       buf_t *out);

/* ---- versions (ops_object.c) ------------------------------------------------ */

/* Checks a versionId the client gave (NULL: none): S3E_NONE for NULL,
 * "null" or an id of this store's shape (stor_version_id_valid),
 * NoSuchVersion for another well-formed id (AWS's, a UUID), InvalidArgument
 * for a malformed one. */
s3_error_t s3_version_check(const char *version_id);
/* x-amz-version-id of a read's version meta (when asked for by id, or the
 * bucket has versioning, or it has an id) and x-amz-delete-marker. */
void s3_version_headers(s3_req_t *req, const stor_bucket_t *bucket, const stor_meta_t *meta,
                        bool asked);
/* x-amz-version-id of a write that made version meta, when it has an id. */
void s3_new_version_header(s3_req_t *req, const stor_meta_t *meta);
/* When st is STOR_ERR_DELETE_MARKER (version vid of key, NULL: the
 * latest, is a delete marker): replies as S3 does, 404 NoSuchKey for the
 * latest and by_id (MethodNotAllowed for GET/HEAD) for one asked for by id,
 * with x-amz-delete-marker, x-amz-version-id and Last-Modified (a marker
 * by id only to a requester with READ on it, the latest only to one who may
 * list the bucket: else 403), and returns true. Returns false for any other
 * st. */
bool s3_delete_marker_reply(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                            const char *vid, stor_status_t st, s3_error_t by_id);
/* The condition of a conditional write (PutObject, CompleteMultipartUpload,
 * CopyObject's destination):
 * If-None-Match: * (the key must hold nothing), If-Match: <etag> or *
 * (it must hold that object, or any). Fills *cond (its etag points into
 * req). NotImplemented for an If-None-Match other than *. */
s3_error_t s3_write_precond(s3_req_t *req, stor_precond_t *cond, const char **why_p);
/* The ETag an If-Match value (not "*") names, without its quotes, into out
 * (cap bytes); false when it is empty or too long to be one we make (so it
 * matches nothing). */
bool s3_if_match_etag(const char *im, char *out, size_t cap);

#endif
