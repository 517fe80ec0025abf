/* libs3rdma: the client handle (create, destroy, stats), status strings and
 * the helpers the operation files share: counters, the transport selector and
 * its fallback, request strings, plain and XML requests and file staging
 * memory. The last-error record is in client_error.c; the operations in
 * client_bucket.c, client_object.c, client_put.c and client_get.c; the
 * transports under s3c_do (native.c) in http.c (plain S3), token.c (the
 * token path) and native.c, over rdma.c (session, registrations, tokens). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* ======================================================================== */
/* Fork                                                                      */
/* ======================================================================== */

/* Every live client, so that fork() finds them all: before it, the forking
 * thread takes each client's locks (no other thread holds one mid-change
 * when the memory is copied, and none stays locked forever in the child);
 * after it the parent just unlocks, while the child first makes its copies
 * its own: the parent's RDMA sessions retired without a UCX call and the
 * parent's idle HTTP connections forgotten (s3c_rdma_after_fork,
 * s3c_http_after_fork). The order rdma_mu, curl_mu, key_mu is the order in
 * which the library nests them. */
static pthread_mutex_t clients_mu = PTHREAD_MUTEX_INITIALIZER;
static s3r_client_t *clients;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    pthread_mutex_lock(&clients_mu);
    for (s3r_client_t *c = clients; c != NULL; c = c->fork_next) {
        pthread_mutex_lock(&c->rdma_mu);
        pthread_mutex_lock(&c->curl_mu);
        pthread_mutex_lock(&c->key_mu);
    }
}

static void fork_unlock_all(void)
{
    for (s3r_client_t *c = clients; c != NULL; c = c->fork_next) {
        pthread_mutex_unlock(&c->key_mu);
        pthread_mutex_unlock(&c->curl_mu);
        pthread_mutex_unlock(&c->rdma_mu);
    }
    pthread_mutex_unlock(&clients_mu);
}

static void fork_child(void)
{
    for (s3r_client_t *c = clients; c != NULL; c = c->fork_next) {
        s3c_rdma_after_fork(c);
        s3c_http_after_fork(c);
        c->keys_reloading = false; /* a reload under way stayed in the parent */
    }
    fork_unlock_all();
}

static void atfork_register(void)
{
    pthread_atfork(fork_prepare, fork_unlock_all, fork_child);
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
    atomic_init(&c->n_http, c->set.n_http);
    pthread_mutex_init(&c->curl_mu, NULL);
    pthread_mutex_init(&c->key_mu, NULL);
    pthread_mutex_init(&c->rdma_mu, NULL);
    if ((st = s3c_keys_load(c)) != S3R_OK) {
        pthread_mutex_destroy(&c->curl_mu);
        pthread_mutex_destroy(&c->key_mu);
        pthread_mutex_destroy(&c->rdma_mu);
        s3c_settings_free(&c->set);
        free(c);
        return st; /* the loader's reason is the thread's last error */
    }
    pthread_once(&atfork_once, atfork_register);
    pthread_mutex_lock(&clients_mu);
    c->fork_next = clients;
    if (clients != NULL)
        clients->fork_prev = c;
    clients = c;
    pthread_mutex_unlock(&clients_mu);
    *client_p = c;
    return S3R_OK;
}

void s3r_client_destroy(s3r_client_t *c)
{
    if (c == NULL)
        return;
    pthread_mutex_lock(&clients_mu);
    if (c->fork_prev != NULL)
        c->fork_prev->fork_next = c->fork_next;
    else
        clients = c->fork_next;
    if (c->fork_next != NULL)
        c->fork_next->fork_prev = c->fork_prev;
    pthread_mutex_unlock(&clients_mu);
    s3c_rdma_cleanup(c);
    s3c_http_cleanup(c);
    pthread_mutex_destroy(&c->curl_mu);
    pthread_mutex_destroy(&c->key_mu);
    pthread_mutex_destroy(&c->rdma_mu);
    c->set.n_http = s3c_http_count(c); /* learned gateways are freed too */
    s3c_settings_free(&c->set);
    if (s3c_tls_err_client == c)
        s3c_tls_err_client = NULL;
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
    out->native_ops = atomic_load(&c->n_native_ops);
    out->native_bytes = atomic_load(&c->n_native_bytes);
    out->fallbacks = atomic_load(&c->n_fallbacks);
    out->errors = atomic_load(&c->n_errors);
    out->rdma_sessions = atomic_load(&c->n_sessions);
    out->regions_registered = atomic_load(&c->n_regions);
    out->declines = atomic_load(&c->n_declines);
    return S3R_OK;
}

void s3r_client_set_progress(s3r_client_t *c, s3r_progress_fn fn, void *arg)
{
    if (c == NULL)
        return;
    c->progress = fn;
    c->progress_arg = arg;
}

void s3c_count_transfer(s3r_client_t *c, s3r_transport_t t, uint64_t bytes)
{
    if (t == S3R_TRANSPORT_TOKEN) {
        atomic_fetch_add(&c->n_token_ops, 1);
        atomic_fetch_add(&c->n_token_bytes, bytes);
    } else if (t == S3R_TRANSPORT_NATIVE) {
        atomic_fetch_add(&c->n_native_ops, 1);
        atomic_fetch_add(&c->n_native_bytes, bytes);
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
s3r_transport_t s3c_pick_transport(s3r_client_t *c, s3r_transport_t want, uint64_t size)
{
    s3r_transport_t t = want == S3R_TRANSPORT_DEFAULT ? c->set.transport : want;
    if (!c->set.use_rdma)
        return S3R_TRANSPORT_HTTP;
    if (t != S3R_TRANSPORT_AUTO)
        return t;
    switch (s3c_native_ready(c)) {
    case S3C_SESS_FAST:
        return S3R_TRANSPORT_NATIVE;
    case S3C_SESS_TCP_ONLY:
        /* UCX emulating RDMA over TCP moves bytes slower than HTTP does. */
        return S3R_TRANSPORT_HTTP;
    default:
        /* No session now: the size rule; a token attempt then falls back
         * (or fails) as the fallback setting says. */
        return size >= c->set.rdma_threshold ? S3R_TRANSPORT_TOKEN : S3R_TRANSPORT_HTTP;
    }
}

s3r_transport_t s3c_pick_control_transport(s3r_client_t *c)
{
    s3r_transport_t t = s3c_pick_transport(c, S3R_TRANSPORT_DEFAULT, 0);
    return t == S3R_TRANSPORT_NATIVE ? t : S3R_TRANSPORT_HTTP;
}

/* Whether a failed token attempt (st) may be redone over HTTP; logs the
 * first fallback of the client and counts every one. */
bool s3c_fall_back(s3r_client_t *c, s3r_status_t st)
{
    if (st != S3R_ERR_RDMA_DECLINED && st != S3R_ERR_RDMA_UNAVAILABLE)
        return false;
    if (!c->set.rdma_fallback)
        return false;
    atomic_fetch_add(&c->n_fallbacks, 1);
    if (!c->set.quiet && atomic_exchange(&c->fallback_logged, 1) == 0)
        fprintf(stderr, "s3rdma: %s (%s); falling back to HTTP (logged once per client)\n",
                s3r_strerror(st), s3c_tls_err.message);
    return true;
}

/* ======================================================================== */
/* Request helpers                                                           */
/* ======================================================================== */

const char *s3c_strs_printf(strs_t *ss, const char *fmt, ...)
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

void s3c_strs_free(strs_t *ss)
{
    for (size_t i = 0; i < ss->n; i++)
        free(ss->s[i]);
    ss->n = 0;
}

/* URI-encodes s as a query value into a new string in ss. */
const char *s3c_strs_qenc(strs_t *ss, const char *s)
{
    buf_t b;
    buf_init(&b, 64 * 1024);
    if (sigv4_uri_encode(s, strlen(s), true, &b) < 0) {
        buf_free(&b);
        return NULL;
    }
    const char *r = s3c_strs_printf(ss, "%s", b.data ? b.data : "");
    buf_free(&b);
    return r;
}

const char *s3c_strs_udec(strs_t *ss, const char *s)
{
    buf_t b;
    buf_init(&b, 64 * 1024);
    const char *r = sigv4_percent_decode(s, strlen(s), &b) < 0
                        ? NULL
                        : s3c_strs_printf(ss, "%s", b.data ? b.data : "");
    buf_free(&b);
    return r;
}

bool s3c_valid_name(const char *s)
{
    return s != NULL && s[0] != '\0';
}

/* Runs a request with no interesting 2xx body: S3R_OK on 2xx; record: a
 * write whose version becomes the thread's last. */
static s3r_status_t run_simple(s3r_client_t *c, s3c_req_t *req, bool key_op, bool record)
{
    s3c_resp_t resp;
    s3c_resp_init(&resp);
    s3r_status_t st = s3c_do(c, s3c_pick_control_transport(c), req, &resp);
    if (st == S3R_OK && (resp.status < 200 || resp.status > 299))
        st = s3c_http_error(c, &resp, resp.transport, key_op);
    if (st == S3R_OK && record)
        s3c_version_record(c, &resp);
    s3c_resp_free(&resp);
    return st;
}

s3r_status_t s3c_simple(s3r_client_t *c, s3c_req_t *req, bool key_op)
{
    return run_simple(c, req, key_op, false);
}

s3r_status_t s3c_simple_write(s3r_client_t *c, s3c_req_t *req, bool key_op)
{
    return run_simple(c, req, key_op, true);
}

/* GETs an XML document into body, the response into *resp (initialised
 * here; the caller frees it); record as for run_simple. */
static s3r_status_t run_xml(s3r_client_t *c, s3c_req_t *req, buf_t *body, bool record,
                            s3c_resp_t *resp_p)
{
    s3c_resp_t resp;
    s3c_resp_init(&resp);
    req->sink_grow = body;
    s3r_status_t st = s3c_do(c, s3c_pick_control_transport(c), req, &resp);
    if (st == S3R_OK && (resp.status < 200 || resp.status > 299))
        st = s3c_http_error(c, &resp, resp.transport, false);
    else if (st == S3R_OK && resp.overflow)
        st = s3c_fail(c, S3R_ERR_TOO_LARGE, resp.transport, (int)resp.status, "",
                      "response larger than %d bytes", S3C_MAX_XML_BODY);
    else if (st == S3R_OK && resp.curl_code != 0)
        st = s3c_fail(c, S3R_ERR_HTTP, resp.transport, (int)resp.status, "", "transfer failed: %s",
                      resp.curl_err);
    /* A 200 whose body is an <Error> (s3c_error_in_200) wrote nothing. */
    if (st == S3R_OK && record && !s3c_xml_is_error(body->data, body->len))
        s3c_version_record(c, &resp);
    if (resp_p)
        *resp_p = resp;
    else
        s3c_resp_free(&resp);
    return st;
}

s3r_status_t s3c_get_xml(s3r_client_t *c, s3c_req_t *req, buf_t *body)
{
    return run_xml(c, req, body, false, NULL);
}

s3r_status_t s3c_get_xml_resp(s3r_client_t *c, s3c_req_t *req, buf_t *body, s3c_resp_t *resp)
{
    return run_xml(c, req, body, false, resp);
}

s3r_status_t s3c_get_xml_write(s3r_client_t *c, s3c_req_t *req, buf_t *body)
{
    return run_xml(c, req, body, true, NULL);
}

s3r_status_t s3c_version_query(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const char *vid)
{
    if (vid == NULL)
        return S3R_OK;
    const char *enc = s3c_strs_qenc(ss, vid);
    const char *q = enc == NULL  ? NULL
                    : req->query ? s3c_strs_printf(ss, "%s&versionId=%s", req->query, enc)
                                 : s3c_strs_printf(ss, "versionId=%s", enc);
    if (q == NULL)
        return s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                        "version id too long or out of memory");
    req->query = q;
    return S3R_OK;
}

/* S3 may answer CompleteMultipartUpload and CopyObject with a 200 whose body
 * is an <Error> (the headers went out before the work failed): a failure. */
s3r_status_t s3c_error_in_200(s3r_client_t *c, const buf_t *body)
{
    if (!s3c_xml_is_error(body->data, body->len))
        return S3R_OK;
    s3c_error_doc_t doc;
    (void)s3c_xml_parse_error(body->data, body->len, &doc);
    return s3c_fail(c, S3R_ERR_SERVER, S3R_TRANSPORT_HTTP, 200, doc.code, "%s", doc.message);
}

/* ======================================================================== */
/* File staging memory                                                       */
/* ======================================================================== */

/* Staging memory for file transfers: registered when the token path will
 * carry it, plain otherwise. */
void *s3c_stage_alloc(s3r_client_t *c, s3r_transport_t t, uint64_t len, bool *registered)
{
    void *p = NULL;
    *registered = false;
    if (len == 0)
        len = 1;
    if ((t == S3R_TRANSPORT_TOKEN || t == S3R_TRANSPORT_NATIVE) &&
        s3r_buf_alloc(c, (size_t)len, &p) == S3R_OK) {
        *registered = true;
        return p;
    }
    return malloc((size_t)len);
}

void s3c_stage_free(s3r_client_t *c, void *p, bool registered)
{
    if (registered) {
        s3r_buf_free(c, p);
    } else if (p != NULL) {
        s3r_buf_unregister(c, p);
        free(p);
    }
}
