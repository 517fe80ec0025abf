/* libs3rdma: the client handle, status strings, the last-error record, the
 * transport selector and every public operation. The transports themselves
 * are in http.c (plain S3) and rdma.c (session, registrations, tokens). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/client_internal.h"
#include "common/size.h"
#include "common/sigv4.h"

/* ======================================================================== */
/* Status strings                                                            */
/* ======================================================================== */

const char *s3r_strerror(s3r_status_t st)
{
    switch (st) {
#define S3R_STATUS_DESC_(name, value, desc)                                                        \
    case name:                                                                                     \
        return desc;
        S3R_STATUS_MAP(S3R_STATUS_DESC_)
#undef S3R_STATUS_DESC_
    }
    return "unknown status";
}

const char *s3r_status_name(s3r_status_t st)
{
    switch (st) {
#define S3R_STATUS_NAME_(name, value, desc)                                                        \
    case name:                                                                                     \
        return #name;
        S3R_STATUS_MAP(S3R_STATUS_NAME_)
#undef S3R_STATUS_NAME_
    }
    return "S3R_UNKNOWN";
}

s3r_status_t s3r_size_parse(const char *s, uint64_t *bytes_p)
{
    uint64_t v;
    if (s == NULL || bytes_p == NULL || size_parse(s, &v) != 0)
        return S3R_ERR_INVALID_ARG;
    *bytes_p = v;
    return S3R_OK;
}

void s3r_free(void *p)
{
    free(p);
}

int64_t s3c_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ======================================================================== */
/* Last error: thread-local, tagged with the client it belongs to            */
/* ======================================================================== */

static __thread s3r_error_info_t tls_err;
static __thread const s3r_client_t *tls_err_client;

s3r_status_t s3c_fail(const s3r_client_t *c, s3r_status_t st, s3r_transport_t t, int http_status,
                      const char *code, const char *fmt, ...)
{
    memset(&tls_err, 0, sizeof(tls_err));
    tls_err_client = c;
    tls_err.status = st;
    tls_err.transport = t;
    tls_err.http_status = http_status;
    snprintf(tls_err.code, sizeof(tls_err.code), "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_err.message, sizeof(tls_err.message), fmt, ap);
    va_end(ap);
    return st;
}

void s3c_set_needed(uint64_t needed)
{
    tls_err.needed_bytes = needed;
}

void s3c_set_request_id(const char *rid)
{
    snprintf(tls_err.request_id, sizeof(tls_err.request_id), "%s", rid ? rid : "");
}

static void set_status(s3r_status_t st)
{
    tls_err.status = st;
}

s3r_status_t s3r_client_last_error(const s3r_client_t *c, s3r_error_info_t *info_p)
{
    if (info_p == NULL || tls_err_client != c || (c == NULL && tls_err.status == S3R_OK))
        return S3R_ERR_INVALID_ARG;
    *info_p = tls_err;
    return S3R_OK;
}

/* Every public operation returns through here so errors are counted once. */
static s3r_status_t done(s3r_client_t *c, s3r_status_t st)
{
    if (st != S3R_OK)
        atomic_fetch_add(&c->n_errors, 1);
    return st;
}

/* ======================================================================== */
/* Create / destroy / stats                                                  */
/* ======================================================================== */

s3r_status_t s3r_client_create(const s3r_config_t *cfg, s3r_client_t **client_p)
{
    char err[512] = "";
    if (cfg == NULL || client_p == NULL)
        return S3R_ERR_INVALID_ARG;
    if (s3c_http_global_init() != 0)
        return S3R_ERR_NOMEM;
    s3r_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return S3R_ERR_NOMEM;
    s3r_status_t st = s3c_settings_build(cfg, NULL, &c->set, err, sizeof(err));
    if (st != S3R_OK) {
        free(c);
        /* No client yet: the reason is recorded against NULL and shown by
         * the CLI through s3r_strerror; keep it on stderr-free paths. */
        s3c_fail(NULL, st, S3R_TRANSPORT_DEFAULT, 0, "", "%s", err);
        return st;
    }
    pthread_mutex_init(&c->curl_mu, NULL);
    pthread_mutex_init(&c->key_mu, NULL);
    pthread_mutex_init(&c->rdma_mu, NULL);
    *client_p = c;
    return S3R_OK;
}

void s3r_client_destroy(s3r_client_t *c)
{
    if (c == NULL)
        return;
    s3c_rdma_cleanup(c);
    s3c_http_cleanup(c);
    pthread_mutex_destroy(&c->curl_mu);
    pthread_mutex_destroy(&c->key_mu);
    pthread_mutex_destroy(&c->rdma_mu);
    s3c_settings_free(&c->set);
    if (tls_err_client == c)
        tls_err_client = NULL;
    free(c);
}

s3r_status_t s3r_client_stats(s3r_client_t *c, s3r_stats_t *out)
{
    if (c == NULL || out == NULL)
        return S3R_ERR_INVALID_ARG;
    memset(out, 0, sizeof(*out));
    out->http_ops = atomic_load(&c->n_http_ops);
    out->http_bytes = atomic_load(&c->n_http_bytes);
    out->token_ops = atomic_load(&c->n_token_ops);
    out->token_bytes = atomic_load(&c->n_token_bytes);
    out->fallbacks = atomic_load(&c->n_fallbacks);
    out->errors = atomic_load(&c->n_errors);
    out->rdma_sessions = atomic_load(&c->n_sessions);
    out->regions_registered = atomic_load(&c->n_regions);
    return S3R_OK;
}

static void count(s3r_client_t *c, s3r_transport_t t, uint64_t bytes)
{
    if (t == S3R_TRANSPORT_TOKEN) {
        atomic_fetch_add(&c->n_token_ops, 1);
        atomic_fetch_add(&c->n_token_bytes, bytes);
    } else {
        atomic_fetch_add(&c->n_http_ops, 1);
        atomic_fetch_add(&c->n_http_bytes, bytes);
    }
}

/* ======================================================================== */
/* Transport selection                                                       */
/* ======================================================================== */

/* The transport an operation of size bytes should try first: HTTP, TOKEN or
 * NATIVE (which the caller turns into S3R_ERR_UNSUPPORTED). */
static s3r_transport_t pick(const s3r_client_t *c, s3r_transport_t want, uint64_t size)
{
    s3r_transport_t t = want == S3R_TRANSPORT_DEFAULT ? c->set.transport : want;
    if (!c->set.use_rdma)
        return S3R_TRANSPORT_HTTP;
    if (t == S3R_TRANSPORT_AUTO)
        t = size >= c->set.rdma_threshold ? S3R_TRANSPORT_TOKEN : S3R_TRANSPORT_HTTP;
    return t;
}

/* Whether a failed token attempt (st) may be redone over HTTP; logs the
 * first fallback of the client and counts every one. */
static bool fall_back(s3r_client_t *c, s3r_status_t st)
{
    if (st != S3R_ERR_RDMA_DECLINED && st != S3R_ERR_RDMA_UNAVAILABLE)
        return false;
    if (!c->set.rdma_fallback)
        return false;
    atomic_fetch_add(&c->n_fallbacks, 1);
    if (!c->set.quiet && atomic_exchange(&c->fallback_logged, 1) == 0)
        fprintf(stderr, "s3rdma: %s (%s); falling back to HTTP (logged once per client)\n",
                s3r_strerror(st), tls_err.message);
    return true;
}

static s3r_status_t unsupported_native(s3r_client_t *c)
{
    return s3c_fail(c, S3R_ERR_UNSUPPORTED, S3R_TRANSPORT_NATIVE, 0, "",
                    "the native RDMA transport is not implemented yet");
}

/* ======================================================================== */
/* Request helpers                                                           */
/* ======================================================================== */

/* Strings that live as long as one request's headers. */
typedef struct strs {
    char *s[S3C_MAX_REQ_HDRS * 2];
    size_t n;
} strs_t;

static const char *strs_printf(strs_t *ss, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *strs_printf(strs_t *ss, const char *fmt, ...)
{
    if (ss->n == sizeof(ss->s) / sizeof(ss->s[0]))
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&ss->s[ss->n], fmt, ap);
    va_end(ap);
    if (rc < 0)
        return NULL;
    return ss->s[ss->n++];
}

static void strs_free(strs_t *ss)
{
    for (size_t i = 0; i < ss->n; i++)
        free(ss->s[i]);
    ss->n = 0;
}

/* URI-encodes s as a query value into a new string in ss. */
static const char *strs_qenc(strs_t *ss, const char *s)
{
    buf_t b;
    buf_init(&b, 64 * 1024);
    if (sigv4_uri_encode(s, strlen(s), true, &b) < 0) {
        buf_free(&b);
        return NULL;
    }
    const char *r = strs_printf(ss, "%s", b.data ? b.data : "");
    buf_free(&b);
    return r;
}

static bool valid_name(const char *s)
{
    return s != NULL && s[0] != '\0';
}

/* Adds Content-Type and x-amz-meta-* from opts. */
static s3r_status_t add_put_headers(s3r_client_t *c, s3c_req_t *req, strs_t *ss,
                                    const s3r_put_opts_t *opts)
{
    if (opts == NULL)
        return S3R_OK;
    if (opts->content_type != NULL && opts->content_type[0] != '\0')
        s3c_req_hdr(req, "content-type", opts->content_type);
    for (size_t i = 0; i < opts->n_meta; i++) {
        const s3r_meta_t *m = &opts->meta[i];
        if (!valid_name(m->name) || m->value == NULL)
            return s3c_fail(c, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, "",
                            "metadata entry %zu has no name or value", i);
        const char *n = strs_printf(ss, "x-amz-meta-%s", m->name);
        if (n == NULL || req->n_hdrs + 4 >= S3C_MAX_REQ_HDRS)
            return s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                            "too many metadata entries");
        for (char *p = ss->s[ss->n - 1]; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        s3c_req_hdr(req, n, m->value);
    }
    return S3R_OK;
}

/* Runs a request with no interesting 2xx body: S3R_OK on 2xx. */
static s3r_status_t simple(s3r_client_t *c, s3c_req_t *req, bool key_op)
{
    s3c_resp_t resp;
    s3c_resp_init(&resp);
    s3r_status_t st = s3c_http_do(c, req, &resp);
    if (st == S3R_OK && (resp.status < 200 || resp.status > 299))
        st = s3c_http_error(c, &resp, S3R_TRANSPORT_HTTP, key_op);
    s3c_resp_free(&resp);
    return st;
}

/* ======================================================================== */
/* Buckets                                                                   */
/* ======================================================================== */

/* CreateBucket, DeleteBucket, HeadBucket: a bodiless request on the bucket. */
static s3r_status_t bucket_simple(s3r_client_t *c, const char *method, const char *bucket)
{
    if (c == NULL || !valid_name(bucket))
        return S3R_ERR_INVALID_ARG;
    s3c_req_t req;
    s3c_req_init(&req, method, bucket, NULL);
    return done(c, simple(c, &req, false));
}

s3r_status_t s3r_bucket_create(s3r_client_t *c, const char *bucket)
{
    return bucket_simple(c, "PUT", bucket);
}

s3r_status_t s3r_bucket_delete(s3r_client_t *c, const char *bucket)
{
    return bucket_simple(c, "DELETE", bucket);
}

s3r_status_t s3r_bucket_head(s3r_client_t *c, const char *bucket)
{
    return bucket_simple(c, "HEAD", bucket);
}

/* GETs an XML document into body. */
static s3r_status_t get_xml(s3r_client_t *c, s3c_req_t *req, buf_t *body)
{
    s3c_resp_t resp;
    s3c_resp_init(&resp);
    req->sink_grow = body;
    s3r_status_t st = s3c_http_do(c, req, &resp);
    if (st == S3R_OK && (resp.status < 200 || resp.status > 299))
        st = s3c_http_error(c, &resp, S3R_TRANSPORT_HTTP, false);
    else if (st == S3R_OK && resp.overflow)
        st = s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_HTTP, (int)resp.status, "",
                      "response larger than %d bytes", S3C_MAX_XML_BODY);
    else if (st == S3R_OK && resp.curl_code != 0)
        st = s3c_fail(c, S3R_ERR_HTTP, S3R_TRANSPORT_HTTP, (int)resp.status, "",
                      "transfer failed: %s", resp.curl_err);
    s3c_resp_free(&resp);
    return st;
}

/* S3 may answer CompleteMultipartUpload and CopyObject with a 200 whose body
 * is an <Error> (the headers went out before the work failed): a failure. */
static s3r_status_t error_in_200(s3r_client_t *c, const buf_t *body)
{
    if (!s3c_xml_is_error(body->data, body->len))
        return S3R_OK;
    s3c_error_doc_t doc;
    (void)s3c_xml_parse_error(body->data, body->len, &doc);
    return s3c_fail(c, S3R_ERR_SERVER, S3R_TRANSPORT_HTTP, 200, doc.code, "%s", doc.message);
}

s3r_status_t s3r_bucket_list(s3r_client_t *c, s3r_bucket_list_t **list_p)
{
    if (c == NULL || list_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3c_req_t req;
    buf_t body;
    buf_init(&body, S3C_MAX_XML_BODY);
    s3c_req_init(&req, "GET", NULL, NULL);
    s3r_status_t st = get_xml(c, &req, &body);
    if (st == S3R_OK && s3c_xml_parse_bucket_list(body.data, body.len, list_p) < 0)
        st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                      "malformed ListAllMyBucketsResult");
    buf_free(&body);
    return done(c, st);
}

/* ======================================================================== */
/* Listing                                                                   */
/* ======================================================================== */

static s3r_status_t list_page(s3r_client_t *c, const char *bucket, const s3r_list_opts_t *o,
                              const char *token, s3r_object_list_t **list)
{
    strs_t ss = {0};
    buf_t q, body;
    s3r_status_t st = S3R_ERR_NOMEM;
    buf_init(&q, 64 * 1024);
    buf_init(&body, S3C_MAX_XML_BODY);
    int rc = buf_append_str(&q, "list-type=2");
    if (o->prefix && o->prefix[0])
        rc |= buf_printf(&q, "&prefix=%s", strs_qenc(&ss, o->prefix) ?: "");
    if (o->delimiter && o->delimiter[0])
        rc |= buf_printf(&q, "&delimiter=%s", strs_qenc(&ss, o->delimiter) ?: "");
    if (token && token[0])
        rc |= buf_printf(&q, "&continuation-token=%s", strs_qenc(&ss, token) ?: "");
    if (o->start_after && o->start_after[0])
        rc |= buf_printf(&q, "&start-after=%s", strs_qenc(&ss, o->start_after) ?: "");
    if (o->max_keys)
        rc |= buf_printf(&q, "&max-keys=%u", o->max_keys);
    if (rc != 0) {
        st = s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_HTTP, 0, "", "listing query too long");
        goto out;
    }
    s3c_req_t req;
    s3c_req_init(&req, "GET", bucket, NULL);
    req.query = q.data;
    st = get_xml(c, &req, &body);
    if (st == S3R_OK && s3c_xml_parse_object_list(body.data, body.len, list) < 0)
        st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                      "malformed ListBucketResult");
out:
    strs_free(&ss);
    buf_free(&q);
    buf_free(&body);
    return st;
}

s3r_status_t s3r_object_list(s3r_client_t *c, const char *bucket, const s3r_list_opts_t *opts,
                             s3r_object_list_t **list_p)
{
    if (c == NULL || !valid_name(bucket) || list_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_list_opts_t o = {0};
    if (opts != NULL)
        o = *opts;
    s3r_object_list_t *list = NULL;
    char *token = o.continuation_token ? strdup(o.continuation_token) : NULL;
    s3r_status_t st;
    for (;;) {
        st = list_page(c, bucket, &o, token, &list);
        free(token);
        token = NULL;
        if (st != S3R_OK || !o.all_pages || !list->truncated || list->next_token == NULL)
            break;
        token = strdup(list->next_token);
        if (token == NULL) {
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
            break;
        }
    }
    if (st != S3R_OK) {
        s3r_object_list_free(list);
        return done(c, st);
    }
    *list_p = list;
    return S3R_OK;
}

/* ======================================================================== */
/* Token requests                                                            */
/* ======================================================================== */

/* A zero-length transfer still needs a token for a valid region span: a
 * one-byte span of this dummy byte keeps the request uniform. */
static char zero_byte;

/* Judges the answer to a token request: S3R_OK for a 2xx carrying
 * x-amz-rdma-reply; S3R_ERR_RDMA_DECLINED (with *declined set) for a 501;
 * otherwise the S3 error or S3R_ERR_PROTOCOL, never a decline. */
static s3r_status_t token_answer(s3r_client_t *c, const s3c_resp_t *resp, bool *declined)
{
    char v[16];
    if (resp->status == 501) {
        *declined = true;
        /* Records the server's code and message, under the decline status. */
        (void)s3c_http_error(c, resp, S3R_TRANSPORT_TOKEN, true);
        set_status(S3R_ERR_RDMA_DECLINED);
        return S3R_ERR_RDMA_DECLINED;
    }
    if (resp->status < 200 || resp->status > 299)
        return s3c_http_error(c, resp, S3R_TRANSPORT_TOKEN, true);
    if (s3c_resp_header(resp, "x-amz-rdma-reply", v, sizeof(v)) < 0)
        return s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_TOKEN, (int)resp->status, "",
                        "the server answered %ld without x-amz-rdma-reply", resp->status);
    return S3R_OK;
}

/* ======================================================================== */
/* PUT                                                                       */
/* ======================================================================== */

/* One PUT (an object, or a part when query names one) over HTTP. */
static s3r_status_t put_http(s3r_client_t *c, const char *bucket, const char *key,
                             const char *query, const void *data, uint64_t len,
                             const s3r_put_opts_t *opts, char *etag, size_t etag_len)
{
    strs_t ss = {0};
    s3c_req_t req;
    s3c_resp_t resp;
    s3c_req_init(&req, "PUT", bucket, key);
    s3c_resp_init(&resp);
    req.query = query;
    req.body = data;
    req.body_len = len;
    s3r_status_t st = add_put_headers(c, &req, &ss, opts);
    if (st == S3R_OK)
        st = s3c_http_do(c, &req, &resp);
    if (st == S3R_OK && (resp.status < 200 || resp.status > 299))
        st = s3c_http_error(c, &resp, S3R_TRANSPORT_HTTP, true);
    if (st == S3R_OK) {
        count(c, S3R_TRANSPORT_HTTP, len);
        if (etag && s3c_resp_header(&resp, "etag", etag, etag_len) < 0)
            etag[0] = '\0';
    }
    s3c_resp_free(&resp);
    strs_free(&ss);
    return st;
}

/* One PUT over the token path: the server RDMA-READs [data, data+len). */
static s3r_status_t put_token(s3r_client_t *c, const char *bucket, const char *key,
                              const char *query, const void *data, uint64_t len,
                              const s3r_put_opts_t *opts, char *etag, size_t etag_len)
{
    s3c_sess_t *sess = NULL;
    s3c_region_t *reg = NULL;
    strs_t ss = {0};
    char token[512];
    s3c_req_t req;
    s3c_resp_t resp;
    bool declined = false;
    s3c_resp_init(&resp);

    s3r_status_t st = s3c_sess_get(c, &sess);
    if (st != S3R_OK)
        goto out;
    st = s3c_token_for(c, sess, len ? data : &zero_byte, len, token, sizeof(token), &reg);
    if (st != S3R_OK)
        goto out;
    s3c_req_init(&req, "PUT", bucket, key);
    req.query = query;
    req.unsigned_payload = true;
    req.ep_idx = s3c_sess_ep(sess);
    s3c_req_hdr(&req, "x-amz-decoded-content-length",
                strs_printf(&ss, "%llu", (unsigned long long)len));
    s3c_req_hdr(&req, "x-amz-rdma-token", token);
    if (req.hdrs[0].value == NULL) {
        st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_TOKEN, 0, "", "out of memory");
        goto out;
    }
    st = add_put_headers(c, &req, &ss, opts);
    if (st == S3R_OK)
        st = s3c_http_do(c, &req, &resp);
    if (st != S3R_OK)
        goto out;
    st = token_answer(c, &resp, &declined);
    if (st == S3R_OK) {
        count(c, S3R_TRANSPORT_TOKEN, len);
        if (etag && s3c_resp_header(&resp, "etag", etag, etag_len) < 0)
            etag[0] = '\0';
    }
out:
    s3c_region_put(c, reg);
    s3c_sess_put(c, sess, declined);
    s3c_resp_free(&resp);
    strs_free(&ss);
    return st;
}

/* One PUT over the transport picked for len bytes, with fallback. */
static s3r_status_t put_one(s3r_client_t *c, const char *bucket, const char *key, const char *query,
                            const void *data, uint64_t len, const s3r_put_opts_t *opts, char *etag,
                            size_t etag_len)
{
    s3r_transport_t t = pick(c, opts ? opts->transport : S3R_TRANSPORT_DEFAULT, len);
    if (t == S3R_TRANSPORT_NATIVE)
        return unsupported_native(c);
    if (t == S3R_TRANSPORT_TOKEN) {
        s3r_status_t st = put_token(c, bucket, key, query, data, len, opts, etag, etag_len);
        if (!fall_back(c, st))
            return st;
    }
    return put_http(c, bucket, key, query, data, len, opts, etag, etag_len);
}

static void abort_upload(s3r_client_t *c, const char *bucket, const char *key, const char *qid)
{
    /* Keep the error that made us abort, not the abort's own outcome. */
    s3r_error_info_t saved = tls_err;
    const s3r_client_t *saved_c = tls_err_client;
    s3c_req_t req;
    char q[2048];
    snprintf(q, sizeof(q), "uploadId=%s", qid);
    s3c_req_init(&req, "DELETE", bucket, key);
    req.query = q;
    (void)simple(c, &req, true);
    tls_err = saved;
    tls_err_client = saved_c;
}

/* Multipart upload state shared by the memory and file variants. */
typedef struct mpu {
    char *upload_id;
    const char *qid; /* URI-encoded upload id (in ss) */
    buf_t complete;  /* the CompleteMultipartUpload body */
    strs_t ss;
    unsigned parts;
} mpu_t;

static s3r_status_t mpu_start(s3r_client_t *c, const char *bucket, const char *key,
                              const s3r_put_opts_t *opts, mpu_t *m)
{
    memset(m, 0, sizeof(*m));
    buf_init(&m->complete, 2 * 1024 * 1024);
    buf_t body;
    buf_init(&body, S3C_MAX_ERROR_BODY);
    strs_t hs = {0};
    s3c_req_t req;
    s3c_req_init(&req, "POST", bucket, key);
    req.query = "uploads";
    s3r_status_t st = add_put_headers(c, &req, &hs, opts);
    if (st == S3R_OK)
        st = get_xml(c, &req, &body);
    if (st == S3R_OK && s3c_xml_parse_upload_id(body.data, body.len, &m->upload_id) < 0)
        st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                      "malformed InitiateMultipartUploadResult");
    if (st == S3R_OK && (m->qid = strs_qenc(&m->ss, m->upload_id)) == NULL)
        st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
    if (st == S3R_OK && buf_append_str(&m->complete, "<CompleteMultipartUpload>") < 0)
        st = S3R_ERR_NOMEM;
    buf_free(&body);
    strs_free(&hs);
    return st;
}

static s3r_status_t mpu_part(s3r_client_t *c, const char *bucket, const char *key, mpu_t *m,
                             const void *data, uint64_t len, s3r_transport_t t)
{
    char q[2048], etag[256];
    unsigned n = ++m->parts;
    if (n > S3C_MAX_PARTS)
        return s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                        "more than %d parts: raise part_size", S3C_MAX_PARTS);
    snprintf(q, sizeof(q), "partNumber=%u&uploadId=%s", n, m->qid);
    s3r_put_opts_t po = {.transport = t};
    s3r_status_t st = put_one(c, bucket, key, q, data, len, &po, etag, sizeof(etag));
    if (st != S3R_OK)
        return st;
    if (etag[0] == '\0')
        return s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_DEFAULT, 0, "",
                        "UploadPart %u answered without an ETag", n);
    if (buf_printf(&m->complete, "<Part><PartNumber>%u</PartNumber><ETag>", n) < 0 ||
        buf_append_xml(&m->complete, etag) < 0 ||
        buf_append_str(&m->complete, "</ETag></Part>") < 0)
        return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
    return S3R_OK;
}

static s3r_status_t mpu_finish(s3r_client_t *c, const char *bucket, const char *key, mpu_t *m)
{
    char q[2048];
    buf_t body;
    s3c_req_t req;
    if (buf_append_str(&m->complete, "</CompleteMultipartUpload>") < 0)
        return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
    snprintf(q, sizeof(q), "uploadId=%s", m->qid);
    buf_init(&body, S3C_MAX_XML_BODY);
    s3c_req_init(&req, "POST", bucket, key);
    req.query = q;
    req.body = m->complete.data;
    req.body_len = m->complete.len;
    s3r_status_t st = get_xml(c, &req, &body);
    if (st == S3R_OK)
        st = error_in_200(c, &body);
    buf_free(&body);
    return st;
}

static void mpu_free(mpu_t *m)
{
    free(m->upload_id);
    buf_free(&m->complete);
    strs_free(&m->ss);
}

static s3r_status_t put_multipart(s3r_client_t *c, const char *bucket, const char *key,
                                  const void *data, uint64_t len, const s3r_put_opts_t *opts)
{
    mpu_t m;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    s3r_status_t st = mpu_start(c, bucket, key, opts, &m);
    for (uint64_t off = 0; st == S3R_OK && off < len; off += c->set.part_size) {
        uint64_t n = len - off < c->set.part_size ? len - off : c->set.part_size;
        st = mpu_part(c, bucket, key, &m, (const char *)data + off, n, want);
    }
    if (st == S3R_OK)
        st = mpu_finish(c, bucket, key, &m);
    if (st != S3R_OK && m.qid != NULL)
        abort_upload(c, bucket, key, m.qid);
    mpu_free(&m);
    return st;
}

s3r_status_t s3r_object_put(s3r_client_t *c, const char *bucket, const char *key, const void *data,
                            uint64_t len, const s3r_put_opts_t *opts)
{
    if (c == NULL || !valid_name(bucket) || !valid_name(key) || (data == NULL && len > 0))
        return S3R_ERR_INVALID_ARG;
    s3r_status_t st;
    if (len > c->set.multipart_threshold)
        st = put_multipart(c, bucket, key, data, len, opts);
    else
        st = put_one(c, bucket, key, NULL, data, len, opts, NULL, 0);
    return done(c, st);
}

/* Staging memory for file transfers: registered when the token path will
 * carry it, plain otherwise. */
static void *stage_alloc(s3r_client_t *c, s3r_transport_t t, uint64_t len, bool *registered)
{
    void *p = NULL;
    *registered = false;
    if (len == 0)
        len = 1;
    if (t == S3R_TRANSPORT_TOKEN && s3r_buf_alloc(c, (size_t)len, &p) == S3R_OK) {
        *registered = true;
        return p;
    }
    return malloc((size_t)len);
}

static void stage_free(s3r_client_t *c, void *p, bool registered)
{
    if (registered) {
        s3r_buf_free(c, p);
    } else if (p != NULL) {
        s3r_buf_unregister(c, p);
        free(p);
    }
}

static s3r_status_t read_full(s3r_client_t *c, int fd, void *buf, uint64_t len, uint64_t off,
                              const char *path)
{
    uint64_t done_n = 0;
    while (done_n < len) {
        ssize_t r = pread(fd, (char *)buf + done_n, (size_t)(len - done_n), (off_t)(off + done_n));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "reading %s: %s", path,
                            r == 0 ? "file shrank" : strerror(errno));
        done_n += (uint64_t)r;
    }
    return S3R_OK;
}

s3r_status_t s3r_object_put_file(s3r_client_t *c, const char *bucket, const char *key,
                                 const char *path, const s3r_put_opts_t *opts)
{
    if (c == NULL || !valid_name(bucket) || !valid_name(key) || path == NULL)
        return S3R_ERR_INVALID_ARG;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return done(c, s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "open %s: %s", path,
                                strerror(errno)));
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return done(c, s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "",
                                "%s is not a regular file", path));
    }
    uint64_t size = (uint64_t)sb.st_size;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    bool multipart = size > c->set.multipart_threshold;
    uint64_t chunk = multipart ? c->set.part_size : size;
    bool reg;
    s3r_status_t st = S3R_OK;
    void *buf = stage_alloc(c, pick(c, want, chunk), chunk, &reg);
    if (buf == NULL) {
        close(fd);
        return done(c, s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory"));
    }
    if (!multipart) {
        st = read_full(c, fd, buf, size, 0, path);
        if (st == S3R_OK)
            st = put_one(c, bucket, key, NULL, buf, size, opts, NULL, 0);
    } else {
        mpu_t m;
        st = mpu_start(c, bucket, key, opts, &m);
        for (uint64_t off = 0; st == S3R_OK && off < size; off += chunk) {
            uint64_t n = size - off < chunk ? size - off : chunk;
            st = read_full(c, fd, buf, n, off, path);
            if (st == S3R_OK)
                st = mpu_part(c, bucket, key, &m, buf, n, want);
        }
        if (st == S3R_OK)
            st = mpu_finish(c, bucket, key, &m);
        if (st != S3R_OK && m.qid != NULL)
            abort_upload(c, bucket, key, m.qid);
        mpu_free(&m);
    }
    stage_free(c, buf, reg);
    close(fd);
    return done(c, st);
}

/* ======================================================================== */
/* HEAD                                                                      */
/* ======================================================================== */

void s3r_object_info_free(s3r_object_info_t *info)
{
    if (info == NULL)
        return;
    free(info->etag);
    free(info->content_type);
    for (size_t i = 0; i < info->n_meta; i++) {
        free((char *)info->meta[i].name);
        free((char *)info->meta[i].value);
    }
    free(info->meta);
    free(info);
}

static int info_from_headers(const s3c_resp_t *resp, s3r_object_info_t *info)
{
    char v[8192];
    if (s3c_resp_header(resp, "content-length", v, sizeof(v)) == 0)
        info->size = strtoull(v, NULL, 10);
    if (s3c_resp_header(resp, "etag", v, sizeof(v)) == 0 && !(info->etag = strdup(v)))
        return -1;
    if (s3c_resp_header(resp, "content-type", v, sizeof(v)) == 0 &&
        !(info->content_type = strdup(v)))
        return -1;
    if (s3c_resp_header(resp, "last-modified", v, sizeof(v)) == 0) {
        int64_t t = s3c_parse_http_date(v);
        info->mtime = t > 0 ? t : 0;
    }
    /* x-amz-meta-* lines, in the order the server sent them. */
    const char *p = resp->hdrs.data;
    size_t cap = 0;
    while (p && *p) {
        const char *eol = strchr(p, '\n');
        size_t llen = eol ? (size_t)(eol - p) : strlen(p);
        const char *colon = memchr(p, ':', llen);
        if (colon && llen > 11 && memcmp(p, "x-amz-meta-", 11) == 0) {
            if (info->n_meta == cap) {
                cap = cap ? cap * 2 : 8;
                void *np = realloc(info->meta, cap * sizeof(*info->meta));
                if (np == NULL)
                    return -1;
                info->meta = np;
            }
            const char *val = colon + 1;
            while (*val == ' ' || *val == '\t')
                val++;
            s3r_meta_t *m = &info->meta[info->n_meta];
            m->name = strndup(p + 11, (size_t)(colon - p - 11));
            m->value = strndup(val, (size_t)(p + llen - val));
            info->n_meta++;
            if (m->name == NULL || m->value == NULL)
                return -1;
        }
        p = eol ? eol + 1 : NULL;
    }
    return 0;
}

static s3r_status_t head_object(s3r_client_t *c, const char *bucket, const char *key,
                                s3r_object_info_t **info_p)
{
    s3c_req_t req;
    s3c_resp_t resp;
    s3c_req_init(&req, "HEAD", bucket, key);
    s3c_resp_init(&resp);
    s3r_status_t st = s3c_http_do(c, &req, &resp);
    if (st == S3R_OK && (resp.status < 200 || resp.status > 299))
        st = s3c_http_error(c, &resp, S3R_TRANSPORT_HTTP, true);
    if (st == S3R_OK) {
        s3r_object_info_t *info = calloc(1, sizeof(*info));
        if (info == NULL || info_from_headers(&resp, info) < 0) {
            s3r_object_info_free(info);
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
        } else {
            *info_p = info;
        }
    }
    s3c_resp_free(&resp);
    return st;
}

s3r_status_t s3r_object_head(s3r_client_t *c, const char *bucket, const char *key,
                             s3r_object_info_t **info_p)
{
    if (c == NULL || !valid_name(bucket) || !valid_name(key) || info_p == NULL)
        return S3R_ERR_INVALID_ARG;
    return done(c, head_object(c, bucket, key, info_p));
}

/* ======================================================================== */
/* GET                                                                       */
/* ======================================================================== */

static const char *range_header(strs_t *ss, const s3r_get_opts_t *o)
{
    if (o == NULL || (o->range_start == 0 && o->range_len == 0))
        return NULL;
    if (o->range_len == 0)
        return strs_printf(ss, "bytes=%llu-", (unsigned long long)o->range_start);
    return strs_printf(ss, "bytes=%llu-%llu", (unsigned long long)o->range_start,
                       (unsigned long long)(o->range_start + o->range_len - 1));
}

/* The bytes a GET with opts (range or whole object) moves, from a HEAD. */
static s3r_status_t get_size(s3r_client_t *c, const char *bucket, const char *key,
                             const s3r_get_opts_t *o, uint64_t *size_p)
{
    s3r_object_info_t *info = NULL;
    s3r_status_t st = head_object(c, bucket, key, &info);
    if (st != S3R_OK)
        return st;
    uint64_t start = o ? o->range_start : 0;
    uint64_t size = info->size > start ? info->size - start : 0;
    if (o && o->range_len && o->range_len < size)
        size = o->range_len;
    s3r_object_info_free(info);
    *size_p = size;
    return S3R_OK;
}

/* The bytes a GET with opts needs, from a HEAD; 0 if unknown. The caller's
 * last error is kept. */
static uint64_t needed_for(s3r_client_t *c, const char *bucket, const char *key,
                           const s3r_get_opts_t *o)
{
    s3r_error_info_t saved = tls_err;
    const s3r_client_t *saved_c = tls_err_client;
    uint64_t need = 0;
    (void)get_size(c, bucket, key, o, &need);
    tls_err = saved;
    tls_err_client = saved_c;
    return need;
}

static s3r_status_t too_small(s3r_client_t *c, s3r_transport_t t, int http, uint64_t need,
                              uint64_t cap)
{
    s3c_fail(c, S3R_ERR_BUFFER_TOO_SMALL, t, http, "",
             "the object needs %llu bytes, the buffer has %llu", (unsigned long long)need,
             (unsigned long long)cap);
    s3c_set_needed(need);
    return S3R_ERR_BUFFER_TOO_SMALL;
}

static s3r_status_t get_http(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                             uint64_t cap, int fd, uint64_t fd_off, buf_t *grow,
                             const s3r_get_opts_t *o, uint64_t *len_p)
{
    strs_t ss = {0};
    s3c_req_t req;
    s3c_resp_t resp;
    s3c_req_init(&req, "GET", bucket, key);
    s3c_resp_init(&resp);
    const char *range = range_header(&ss, o);
    if (range)
        s3c_req_hdr(&req, "range", range);
    req.sink_buf = buf;
    req.sink_cap = cap;
    req.sink_fd = fd;
    req.sink_off = fd_off;
    req.sink_grow = grow;
    s3r_status_t st = s3c_http_do(c, &req, &resp);
    if (st == S3R_OK && (resp.status < 200 || resp.status > 299)) {
        st = s3c_http_error(c, &resp, S3R_TRANSPORT_HTTP, true);
    } else if (st == S3R_OK && resp.overflow) {
        char v[64];
        uint64_t need = 0;
        if (s3c_resp_header(&resp, "content-length", v, sizeof(v)) == 0)
            need = strtoull(v, NULL, 10);
        st = grow ? s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "object too large")
                  : too_small(c, S3R_TRANSPORT_HTTP, (int)resp.status, need, cap);
    } else if (st == S3R_OK && resp.sink_failed) {
        st = s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_HTTP, 0, "", "writing the file: %s",
                      strerror(errno));
    } else if (st == S3R_OK && resp.curl_code != 0) {
        st = s3c_fail(c, S3R_ERR_HTTP, S3R_TRANSPORT_HTTP, (int)resp.status, "",
                      "transfer failed: %s", resp.curl_err);
    } else if (st == S3R_OK) {
        count(c, S3R_TRANSPORT_HTTP, resp.body_bytes);
        *len_p = resp.body_bytes;
    }
    s3c_resp_free(&resp);
    strs_free(&ss);
    return st;
}

/* GET over the token path: the server RDMA-WRITEs into [buf, buf+cap). */
static s3r_status_t get_token(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                              uint64_t cap, const s3r_get_opts_t *o, uint64_t *len_p)
{
    s3c_sess_t *sess = NULL;
    s3c_region_t *reg = NULL;
    strs_t ss = {0};
    char token[512], v[64];
    s3c_req_t req;
    s3c_resp_t resp;
    bool declined = false;
    s3c_resp_init(&resp);
    s3r_status_t st = s3c_sess_get(c, &sess);
    if (st != S3R_OK)
        goto out;
    st = s3c_token_for(c, sess, cap ? buf : &zero_byte, cap, token, sizeof(token), &reg);
    if (st != S3R_OK)
        goto out;
    s3c_req_init(&req, "GET", bucket, key);
    req.unsigned_payload = true;
    req.ep_idx = s3c_sess_ep(sess);
    s3c_req_hdr(&req, "x-amz-rdma-token", token);
    const char *range = range_header(&ss, o);
    if (range)
        s3c_req_hdr(&req, "range", range);
    st = s3c_http_do(c, &req, &resp);
    if (st != S3R_OK)
        goto out;
    st = token_answer(c, &resp, &declined);
    if (resp.status == 400) {
        /* The server refuses a buffer smaller than the object with a 400;
         * if it did not say how much is needed, ask with a HEAD. */
        uint64_t need = tls_err.needed_bytes;
        if (need == 0 && (s3c_resp_header(&resp, "x-amz-rdma-bytes-needed", v, sizeof(v)) == 0 ||
                          s3c_resp_header(&resp, "x-amz-rdma-required-bytes", v, sizeof(v)) == 0))
            need = strtoull(v, NULL, 10);
        if (need == 0 && strcmp(tls_err.code, "InvalidArgument") == 0)
            need = needed_for(c, bucket, key, o);
        if (need > cap)
            st = too_small(c, S3R_TRANSPORT_TOKEN, (int)resp.status, need, cap);
    } else if (st == S3R_OK) {
        uint64_t n = 0;
        if (s3c_resp_header(&resp, "x-amz-rdma-bytes-transferred", v, sizeof(v)) < 0 ||
            (n = strtoull(v, NULL, 10)) > cap) {
            st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_TOKEN, (int)resp.status, "",
                          "missing or impossible x-amz-rdma-bytes-transferred");
        } else {
            *len_p = n;
            count(c, S3R_TRANSPORT_TOKEN, n);
        }
    }
out:
    s3c_region_put(c, reg);
    s3c_sess_put(c, sess, declined);
    s3c_resp_free(&resp);
    strs_free(&ss);
    return st;
}

static s3r_status_t get_one(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                            uint64_t cap, const s3r_get_opts_t *o, uint64_t *len_p)
{
    uint64_t size = o && o->range_len && o->range_len < cap ? o->range_len : cap;
    s3r_transport_t t = pick(c, o ? o->transport : S3R_TRANSPORT_DEFAULT, size);
    if (t == S3R_TRANSPORT_NATIVE)
        return unsupported_native(c);
    if (t == S3R_TRANSPORT_TOKEN) {
        s3r_status_t st = get_token(c, bucket, key, buf, cap, o, len_p);
        if (!fall_back(c, st))
            return st;
    }
    return get_http(c, bucket, key, buf, cap, -1, 0, NULL, o, len_p);
}

s3r_status_t s3r_object_get(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                            uint64_t buf_len, const s3r_get_opts_t *opts, uint64_t *len_p)
{
    if (c == NULL || !valid_name(bucket) || !valid_name(key) || (buf == NULL && buf_len > 0) ||
        len_p == NULL)
        return S3R_ERR_INVALID_ARG;
    return done(c, get_one(c, bucket, key, buf, buf_len, opts, len_p));
}

s3r_status_t s3r_object_get_alloc(s3r_client_t *c, const char *bucket, const char *key,
                                  const s3r_get_opts_t *opts, void **data_p, uint64_t *len_p)
{
    if (c == NULL || !valid_name(bucket) || !valid_name(key) || data_p == NULL || len_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    s3r_transport_t t = pick(c, want, opts && opts->range_len ? opts->range_len : UINT64_MAX);
    s3r_status_t st;
    if (t == S3R_TRANSPORT_NATIVE)
        return done(c, unsupported_native(c));
    if (t == S3R_TRANSPORT_HTTP) {
        buf_t b;
        uint64_t n = 0;
        buf_init(&b, SIZE_MAX / 2);
        st = get_http(c, bucket, key, NULL, 0, -1, 0, &b, opts, &n);
        if (st == S3R_OK) {
            size_t len;
            *data_p = buf_steal(&b, &len);
            *len_p = len;
        }
        buf_free(&b);
        return done(c, st);
    }
    /* RDMA needs the size up front: HEAD, then one exact-size transfer. */
    uint64_t need = 0;
    st = get_size(c, bucket, key, opts, &need);
    if (st != S3R_OK)
        return done(c, st);
    char *mem = malloc((size_t)need + 1);
    if (mem == NULL)
        return done(c, s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory"));
    /* get_one picks the transport again for the real size: under AUTO an
     * object below rdma_threshold goes over HTTP. */
    uint64_t n = 0;
    st = get_one(c, bucket, key, mem, need, opts, &n);
    /* The buffer is about to change hands: drop its registration. */
    s3r_buf_unregister(c, mem);
    if (st != S3R_OK) {
        free(mem);
        return done(c, st);
    }
    mem[n] = '\0';
    *data_p = mem;
    *len_p = n;
    return S3R_OK;
}

s3r_status_t s3r_object_get_file(s3r_client_t *c, const char *bucket, const char *key,
                                 const char *path, const s3r_get_opts_t *opts)
{
    if (c == NULL || !valid_name(bucket) || !valid_name(key) || path == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    s3r_status_t st = S3R_OK;
    uint64_t size = UINT64_MAX;
    s3r_transport_t t = pick(c, want, opts && opts->range_len ? opts->range_len : UINT64_MAX);
    if (t == S3R_TRANSPORT_NATIVE)
        return done(c, unsupported_native(c));
    if (t == S3R_TRANSPORT_TOKEN) {
        st = get_size(c, bucket, key, opts, &size);
        if (st != S3R_OK)
            return done(c, st);
        t = pick(c, want, size);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return done(c, s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "open %s: %s", path,
                                strerror(errno)));
    uint64_t n = 0;
    if (t != S3R_TRANSPORT_TOKEN) {
        st = get_http(c, bucket, key, NULL, 0, fd, 0, NULL, opts, &n);
    } else {
        /* Chunked ranged GETs into one registered staging buffer. */
        uint64_t chunk = size < c->set.part_size ? size : c->set.part_size;
        bool reg;
        void *buf = stage_alloc(c, S3R_TRANSPORT_TOKEN, chunk, &reg);
        if (buf == NULL)
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
        uint64_t base = opts ? opts->range_start : 0;
        for (uint64_t off = 0; st == S3R_OK && off < size; off += chunk) {
            uint64_t want_n = size - off < chunk ? size - off : chunk;
            s3r_get_opts_t o = {
                .range_start = base + off, .range_len = want_n, .transport = S3R_TRANSPORT_TOKEN};
            uint64_t got = 0;
            st = get_one(c, bucket, key, buf, want_n, &o, &got);
            if (st == S3R_OK && got != want_n)
                st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_TOKEN, 0, "",
                              "short read: %llu of %llu bytes", (unsigned long long)got,
                              (unsigned long long)want_n);
            for (uint64_t w = 0; st == S3R_OK && w < got;) {
                ssize_t r = pwrite(fd, (char *)buf + w, (size_t)(got - w), (off_t)(off + w));
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    st = s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "writing %s: %s",
                                  path, strerror(errno));
                else
                    w += (uint64_t)r;
            }
        }
        stage_free(c, buf, reg);
    }
    if (close(fd) < 0 && st == S3R_OK)
        st = s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "closing %s: %s", path,
                      strerror(errno));
    return done(c, st);
}

/* ======================================================================== */
/* DELETE, COPY                                                              */
/* ======================================================================== */

s3r_status_t s3r_object_delete(s3r_client_t *c, const char *bucket, const char *key)
{
    if (c == NULL || !valid_name(bucket) || !valid_name(key))
        return S3R_ERR_INVALID_ARG;
    s3c_req_t req;
    s3c_req_init(&req, "DELETE", bucket, key);
    return done(c, simple(c, &req, true));
}

s3r_status_t s3r_object_copy(s3r_client_t *c, const char *src_bucket, const char *src_key,
                             const char *dst_bucket, const char *dst_key)
{
    if (c == NULL || !valid_name(src_bucket) || !valid_name(src_key) || !valid_name(dst_bucket) ||
        !valid_name(dst_key))
        return S3R_ERR_INVALID_ARG;
    buf_t src, body;
    buf_init(&src, 8192);
    buf_init(&body, S3C_MAX_XML_BODY);
    s3r_status_t st = S3R_OK;
    if (buf_append_str(&src, "/") < 0 ||
        sigv4_uri_encode(src_bucket, strlen(src_bucket), true, &src) < 0 ||
        buf_append_str(&src, "/") < 0 ||
        sigv4_uri_encode(src_key, strlen(src_key), false, &src) < 0)
        st = s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_HTTP, 0, "", "source name too long");
    if (st == S3R_OK) {
        s3c_req_t req;
        s3c_req_init(&req, "PUT", dst_bucket, dst_key);
        s3c_req_hdr(&req, "x-amz-copy-source", src.data);
        st = get_xml(c, &req, &body);
        if (st == S3R_OK)
            st = error_in_200(c, &body);
    }
    buf_free(&src);
    buf_free(&body);
    return done(c, st);
}
