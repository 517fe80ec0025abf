/* The HTTP transport: path-style S3 requests signed with SigV4 (the same
 * src/common/sigv4 code the server verifies with) and sent with libcurl.
 *
 * Easy handles are pooled per client: a thread takes an idle handle (or makes
 * one), uses it for one request and gives it back, so connections are kept
 * alive across requests and no handle is ever used by two threads at once. */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "client/client_internal.h"
#include "common/date.h"
#include "common/hash.h"
#include "common/proto_headers.h"
#include "common/sigv4.h"

#define S3C_MAX_RESP_HDRS (64 * 1024)
#define S3C_URL_MAX       (16 * 1024)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_init_rc;

static void curl_init_once(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

int s3c_http_global_init(void)
{
    pthread_once(&curl_once, curl_init_once);
    return curl_init_rc;
}

void s3c_req_init(s3c_req_t *r, const char *method, const char *bucket, const char *key)
{
    memset(r, 0, sizeof(*r));
    r->method = method;
    r->bucket = bucket;
    r->key = key;
    r->ep_idx = -1;
    r->sink_fd = -1;
}

int s3c_req_hdr(s3c_req_t *r, const char *name, const char *value)
{
    if (r->n_hdrs == S3C_MAX_REQ_HDRS)
        return -1;
    r->hdrs[r->n_hdrs].name = name;
    r->hdrs[r->n_hdrs].value = value;
    r->n_hdrs++;
    return 0;
}

void s3c_resp_init(s3c_resp_t *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->hdrs, S3C_MAX_RESP_HDRS);
    buf_init(&r->err_body, S3C_MAX_ERROR_BODY);
}

void s3c_resp_free(s3c_resp_t *r)
{
    buf_free(&r->hdrs);
    buf_free(&r->err_body);
}

int s3c_resp_header(const s3c_resp_t *r, const char *name, char *out, size_t out_len)
{
    size_t nlen = strlen(name);
    const char *p = r->hdrs.data;
    if (p == NULL)
        return -1;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t llen = eol ? (size_t)(eol - p) : strlen(p);
        if (llen > nlen + 1 && memcmp(p, name, nlen) == 0 && p[nlen] == ':') {
            const char *v = p + nlen + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            size_t vlen = (size_t)(p + llen - v);
            if (out_len == 0)
                return 0;
            if (vlen >= out_len)
                vlen = out_len - 1;
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return 0;
        }
        if (!eol)
            break;
        p = eol + 1;
    }
    return -1;
}

/* ---- curl callbacks ---------------------------------------------------------- */

typedef struct xfer {
    s3c_req_t *req;
    s3c_resp_t *resp;
    uint64_t sent;  /* request body bytes handed to curl */
    uint64_t total; /* the 2xx body's Content-Length (for sink_progress), 0 if unknown */
} xfer_t;

static size_t on_header(char *data, size_t size, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = size * n;
    s3c_resp_t *r = x->resp;
    if (len >= 5 && memcmp(data, "HTTP/", 5) == 0) {
        /* A new status line (after a 100 Continue, say) starts afresh. */
        const char *sp = memchr(data, ' ', len);
        r->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        buf_reset(&r->hdrs);
        return len;
    }
    const char *colon = memchr(data, ':', len);
    if (colon == NULL)
        return len; /* the blank line ending the headers */
    size_t end = len;
    while (end > 0 && (data[end - 1] == '\r' || data[end - 1] == '\n'))
        end--;
    if (buf_reserve(&r->hdrs, end + 2) < 0)
        return 0; /* too many header bytes: abort */
    for (const char *p = data; p < colon; p++)
        r->hdrs.data[r->hdrs.len++] = (char)tolower((unsigned char)*p);
    buf_append(&r->hdrs, colon, (size_t)(data + end - colon));
    buf_append(&r->hdrs, "\n", 1);
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t len = size * n;
    s3c_resp_t *r = x->resp;
    s3c_req_t *q = x->req;
    if (r->status < 200 || r->status > 299) {
        /* Errors and declines: keep the start of the body for the XML
         * error; a body past the cap (a declined GET carrying the object)
         * ends the transfer, the status and headers are what count. */
        if (buf_append(&r->err_body, data, len) < 0)
            return 0;
        return len;
    }
    if (q->sink_alloc != NULL && q->sink_buf == NULL && r->body_bytes == 0) {
        char cl[32], *end = NULL;
        if (s3c_resp_header(r, "content-length", cl, sizeof(cl)) == 0) {
            errno = 0;
            uint64_t size = strtoull(cl, &end, 10);
            if (end == cl || *end != '\0' || errno != 0 || cl[0] == '-' ||
                (q->sink_buf = q->sink_alloc(q->sink_alloc_arg, size)) == NULL) {
                r->overflow = true;
                return 0;
            }
            q->sink_cap = size;
        }
    }
    if (q->sink_buf != NULL) {
        if (r->body_bytes + len > q->sink_cap) {
            r->overflow = true;
            return 0;
        }
        memcpy((char *)q->sink_buf + r->body_bytes, data, len);
    } else if (q->sink_grow != NULL) {
        if (buf_append(q->sink_grow, data, len) < 0) {
            r->overflow = true;
            return 0;
        }
    } else if (q->sink_fd >= 0) {
        size_t done = 0;
        while (done < len) {
            ssize_t w = pwrite(q->sink_fd, data + done, len - done,
                               (off_t)(q->sink_off + r->body_bytes + done));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                r->sink_failed = true;
                return 0;
            }
            done += (size_t)w;
        }
        if (q->sink_progress != NULL) {
            char cl[32];
            if (r->body_bytes == 0 && s3c_resp_header(r, "content-length", cl, sizeof(cl)) == 0)
                x->total = strtoull(cl, NULL, 10);
            q->sink_progress(q->sink_progress_arg, q->sink_off + r->body_bytes + len, x->total);
        }
    }
    r->body_bytes += len;
    return len;
}

static size_t on_read(char *out, size_t size, size_t n, void *ud)
{
    xfer_t *x = ud;
    size_t want = size * n;
    uint64_t left = x->req->body_len - x->sent;
    if (want > left)
        want = (size_t)left;
    if (want > 0)
        memcpy(out, (const char *)x->req->body + x->sent, want);
    x->sent += want;
    return want;
}

/* ---- Handle pool -------------------------------------------------------------- */

static CURL *handle_get(s3r_client_t *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->curl_mu);
    if (c->n_curl_idle > 0)
        h = c->curl_idle[--c->n_curl_idle];
    pthread_mutex_unlock(&c->curl_mu);
    return h ? h : curl_easy_init();
}

static void handle_put(s3r_client_t *c, CURL *h, bool broken)
{
    if (h == NULL)
        return;
    if (!broken) {
        curl_easy_reset(h); /* keeps the connection cache */
        pthread_mutex_lock(&c->curl_mu);
        if (c->n_curl_idle == c->cap_curl_idle) {
            size_t cap = c->cap_curl_idle ? c->cap_curl_idle * 2 : 8;
            void **p = realloc(c->curl_idle, cap * sizeof(*p));
            if (p != NULL) {
                c->curl_idle = p;
                c->cap_curl_idle = cap;
            }
        }
        if (c->n_curl_idle < c->cap_curl_idle) {
            c->curl_idle[c->n_curl_idle++] = h;
            h = NULL;
        }
        pthread_mutex_unlock(&c->curl_mu);
    }
    if (h != NULL)
        curl_easy_cleanup(h);
}

void s3c_http_after_fork(s3r_client_t *c)
{
    /* Their connections are the parent's too: cleaning a handle up could
     * send on them (a TLS close_notify), so the handles are left as they
     * are, as are the sockets' copies in this process. */
    free(c->curl_idle);
    c->curl_idle = NULL;
    c->n_curl_idle = c->cap_curl_idle = 0;
}

void s3c_http_cleanup(s3r_client_t *c)
{
    for (size_t i = 0; i < c->n_curl_idle; i++)
        curl_easy_cleanup(c->curl_idle[i]);
    free(c->curl_idle);
    c->curl_idle = NULL;
    c->n_curl_idle = c->cap_curl_idle = 0;
}

/* ---- Signing -------------------------------------------------------------- */

static int cmp_hdr(const void *a, const void *b)
{
    return strcmp(((const sigv4_header_t *)a)->name, ((const sigv4_header_t *)b)->name);
}

/* Appends the canonical URI of "/bucket/key" (sigv4_uri_encode_path) to
 * uri, encoded piece by piece without assembling the decoded path first.
 * bucket and key may be NULL (the service; the bucket). 0, or -1 if full. */
static int canonical_uri(const char *bucket, const char *key, buf_t *uri)
{
    if (buf_append_str(uri, "/") < 0)
        return -1;
    if (bucket == NULL)
        return 0;
    if (sigv4_uri_encode(bucket, strlen(bucket), false, uri) < 0)
        return -1;
    if (key != NULL &&
        (buf_append_str(uri, "/") < 0 || sigv4_uri_encode(key, strlen(key), false, uri) < 0))
        return -1;
    return 0;
}

/* Appends "Expect: 100-continue" for a body of 1 MiB or more, as AWS SDKs
 * send it: a request refused on its headers (access, a locked object's
 * part without a checksum...) is answered before its body goes, instead of
 * the server's reset racing its answer (the caller then saw a transport
 * error, no S3 code). Smaller bodies go at once: no round trip. -1 when out
 * of memory (list is then freed). */
static int expect_header(const s3c_req_t *req, struct curl_slist **list)
{
    const char *expect =
        req->body_len >= S3C_EXPECT_CONTINUE_MIN ? "Expect: 100-continue" : "Expect:";
    struct curl_slist *tmp = curl_slist_append(*list, expect);
    if (tmp == NULL) {
        curl_slist_free_all(*list);
        *list = NULL;
        return -1;
    }
    *list = tmp;
    return 0;
}

/* The curl header list of an anonymous request: the request's own headers
 * as they are, no signature (curl sends Host). NULL when out of memory. */
static struct curl_slist *unsigned_headers(const s3c_req_t *req, buf_t *scratch)
{
    struct curl_slist *list = NULL, *tmp;
    for (size_t i = 0; i < req->n_hdrs; i++) {
        buf_reset(scratch);
        if (buf_printf(scratch, "%s: %s", req->hdrs[i].name, req->hdrs[i].value) < 0 ||
            (tmp = curl_slist_append(list, scratch->data)) == NULL) {
            curl_slist_free_all(list);
            return NULL;
        }
        list = tmp;
    }
    return expect_header(req, &list) == 0 ? list : NULL;
}

/* Builds the curl header list: Host, x-amz-date, x-amz-content-sha256, the
 * request's own headers and Authorization, all signed. */
static struct curl_slist *sign_headers(s3r_client_t *c, const s3c_req_t *req,
                                       const s3c_endpoint_t *ep, const char *canon_uri,
                                       const char *canon_query, buf_t *scratch)
{
    char amz_date[17], date8[9], payload[65];
    sigv4_header_t h[S3C_MAX_REQ_HDRS + 3];
    size_t nh = 0;
    struct curl_slist *list = NULL, *tmp;

    date_format_amz((int64_t)time(NULL), amz_date);
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';

    if (req->body_len == 0 && !req->unsigned_payload) {
        snprintf(payload, sizeof(payload), "%s", SIGV4_EMPTY_SHA256);
    } else if (!req->unsigned_payload && req->body_len <= c->set.sign_payload_max) {
        uint8_t d[SHA256_LEN];
        hash_sha256(req->body, (size_t)req->body_len, d);
        hash_hex_encode(d, SHA256_LEN, payload);
    } else {
        snprintf(payload, sizeof(payload), "%s", SIGV4_UNSIGNED);
    }

    h[nh++] = (sigv4_header_t){"host", ep->hostport};
    h[nh++] = (sigv4_header_t){"x-amz-content-sha256", payload};
    h[nh++] = (sigv4_header_t){"x-amz-date", amz_date};
    for (size_t i = 0; i < req->n_hdrs; i++)
        h[nh++] = (sigv4_header_t){req->hdrs[i].name, req->hdrs[i].value};
    qsort(h, nh, sizeof(h[0]), cmp_hdr);

    buf_t signed_hdrs, canon, sts;
    buf_init(&signed_hdrs, 8192);
    buf_init(&canon, 256 * 1024);
    buf_init(&sts, 4096);
    int rc = 0;
    for (size_t i = 0; i < nh && rc == 0; i++)
        rc = buf_printf(&signed_hdrs, "%s%s", i ? ";" : "", h[i].name);
    char scope[256];
    snprintf(scope, sizeof(scope), "%s/%s/s3/aws4_request", date8, c->set.region);
    sigv4_request_t sr = {
        .method = req->method,
        .canonical_uri = canon_uri,
        .canonical_query = canon_query,
        .headers = h,
        .n_headers = nh,
        .signed_headers = signed_hdrs.data,
        .payload_hash = payload,
    };
    if (rc == 0)
        rc = sigv4_canonical_request(&sr, &canon);
    if (rc == 0)
        rc = sigv4_string_to_sign(amz_date, scope, canon.data, canon.len, &sts);
    if (rc == 0) {
        uint8_t key[SHA256_LEN];
        char sig[65], ak[S3C_KEY_MAX + 1];
        s3c_keys_sign(c, date8, key, ak);
        sigv4_sign(key, sts.data, sts.len, sig);
        for (size_t i = 0; i < nh && rc == 0; i++) {
            buf_reset(scratch);
            rc = buf_printf(scratch, "%s: %s", h[i].name, h[i].value);
            if (rc == 0) {
                tmp = curl_slist_append(list, scratch->data);
                if (tmp == NULL)
                    rc = -1;
                else
                    list = tmp;
            }
        }
        if (rc == 0) {
            buf_reset(scratch);
            rc = buf_printf(scratch,
                            "Authorization: " SIGV4_ALGORITHM
                            " Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                            ak, scope, signed_hdrs.data, sig);
        }
        if (rc == 0 && (tmp = curl_slist_append(list, scratch->data)) != NULL)
            list = tmp;
        else
            rc = -1;
        /* curl's default Accept is unsigned and harmless. */
        if (rc == 0)
            rc = expect_header(req, &list);
    }
    buf_free(&signed_hdrs);
    buf_free(&canon);
    buf_free(&sts);
    if (rc != 0) {
        curl_slist_free_all(list);
        return NULL;
    }
    return list;
}

/* ---- Presigned URLs ------------------------------------------------------------ */

s3r_status_t s3r_presign_url(s3r_client_t *c, const char *method, const char *bucket,
                             const char *key, uint64_t expires_s, char *out, size_t out_len)
{
    if (c == NULL || method == NULL || bucket == NULL || bucket[0] == '\0' || key == NULL ||
        key[0] == '\0' || expires_s < 1 || expires_s > 604800 || out == NULL)
        return S3R_ERR_INVALID_ARG;
    if (c->set.anonymous)
        return s3c_fail(c, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_HTTP, 0, "",
                        "an anonymous client has no keys to presign a URL with");
    const s3c_endpoint_t *ep = &c->set.http[0];
    char amz_date[17], date8[9], scope[S3C_KEY_MAX + 256], sig[65], ak[S3C_KEY_MAX + 1];
    uint8_t k[SHA256_LEN];
    date_format_amz((int64_t)time(NULL), amz_date);
    memcpy(date8, amz_date, 8);
    date8[8] = '\0';
    s3c_keys_sign(c, date8, k, ak);
    snprintf(scope, sizeof(scope), "%s/%s/%s/s3/aws4_request", ak, date8, c->set.region);

    buf_t uri, raw, query, canon, sts;
    buf_init(&uri, 16384);
    buf_init(&raw, S3C_URL_MAX);
    buf_init(&query, S3C_URL_MAX);
    buf_init(&canon, S3C_URL_MAX + 4096);
    buf_init(&sts, 4096);
    int rc = canonical_uri(bucket, key, &uri);
    if (rc == 0)
        rc = buf_printf(&raw, "X-Amz-Algorithm=%s&X-Amz-Credential=", SIGV4_ALGORITHM);
    if (rc == 0)
        rc = sigv4_uri_encode(scope, strlen(scope), true, &raw);
    if (rc == 0)
        rc = buf_printf(&raw, "&X-Amz-Date=%s&X-Amz-Expires=%llu&X-Amz-SignedHeaders=host",
                        amz_date, (unsigned long long)expires_s);
    if (rc == 0)
        rc = sigv4_canonical_query(raw.data, false, &query);
    sigv4_header_t host = {"host", ep->hostport};
    sigv4_request_t sr = {
        .method = method,
        .canonical_uri = uri.data,
        .canonical_query = query.data,
        .headers = &host,
        .n_headers = 1,
        .signed_headers = "host",
        .payload_hash = SIGV4_UNSIGNED,
    };
    if (rc == 0)
        rc = sigv4_canonical_request(&sr, &canon);
    if (rc == 0)
        rc = sigv4_string_to_sign(amz_date, scope + strlen(ak) + 1, canon.data, canon.len, &sts);
    s3r_status_t st = S3R_ERR_TOO_LARGE;
    if (rc == 0) {
        sigv4_sign(k, sts.data, sts.len, sig);
        buf_reset(&raw); /* now the URL */
        if (buf_printf(&raw, "%s%s?%s&X-Amz-Signature=%s", ep->url, uri.data, query.data, sig) ==
                0 &&
            raw.len < out_len) {
            memcpy(out, raw.data, raw.len + 1);
            st = S3R_OK;
        }
    }
    buf_free(&uri);
    buf_free(&raw);
    buf_free(&query);
    buf_free(&canon);
    buf_free(&sts);
    return st;
}

/* ---- Request ---------------------------------------------------------------- */

static s3r_status_t curl_status(CURLcode cc)
{
    switch (cc) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return S3R_ERR_CONNECT;
    case CURLE_OPERATION_TIMEDOUT:
        return S3R_ERR_TIMEOUT;
    case CURLE_OUT_OF_MEMORY:
        return S3R_ERR_NOMEM;
    default:
        return S3R_ERR_HTTP;
    }
}

static s3r_status_t do_once(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp, int ep_idx,
                            bool *broken_p)
{
    const s3c_endpoint_t *ep = &c->set.http[ep_idx];
    buf_t uri, url, query, scratch;
    s3r_status_t st = S3R_ERR_NOMEM;
    struct curl_slist *hl = NULL;
    CURL *h = NULL;
    xfer_t x = {.req = req, .resp = resp};

    buf_init(&uri, 16384);
    buf_init(&url, S3C_URL_MAX);
    buf_init(&query, S3C_URL_MAX);
    buf_init(&scratch, 64 * 1024);

    if (canonical_uri(req->bucket, req->key, &uri) < 0)
        goto out;
    if (req->query != NULL && req->query[0] != '\0') {
        if (sigv4_canonical_query(req->query, false, &query) < 0) {
            st = S3R_ERR_INVALID_ARG;
            goto out;
        }
    } else if (buf_append_str(&query, "") < 0) {
        goto out;
    }
    if (buf_printf(&url, "%s%s%s%s", ep->url, uri.data, query.len ? "?" : "",
                   query.len ? query.data : "") < 0) {
        st = S3R_ERR_TOO_LARGE;
        goto out;
    }
    hl = c->set.anonymous ? unsigned_headers(req, &scratch)
                          : sign_headers(c, req, ep, uri.data, query.data, &scratch);
    if (hl == NULL)
        goto out;

    h = handle_get(c);
    if (h == NULL)
        goto out;

    curl_easy_setopt(h, CURLOPT_URL, url.data);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, resp->curl_err);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->set.connect_timeout_ms);
    if (c->set.ca_bundle != NULL)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->set.ca_bundle);
    if (c->set.http_timeout_ms > 0)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->set.http_timeout_ms);
    /* S3 returns a Content-Encoding the caller stored; bytes pass untouched. */
    curl_easy_setopt(h, CURLOPT_HTTP_CONTENT_DECODING, 0L);

    if (strcmp(req->method, "HEAD") == 0) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (strcmp(req->method, "PUT") == 0 || strcmp(req->method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &x);
        if (strcmp(req->method, "PUT") != 0)
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    } else if (strcmp(req->method, "GET") != 0) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    }

    CURLcode cc = curl_easy_perform(h);
    resp->curl_code = (int)cc;
    if (cc == CURLE_OK ||
        (resp->status > 0 && (resp->overflow || resp->sink_failed || cc == CURLE_WRITE_ERROR))) {
        /* A response arrived; a sink problem is judged by the caller. */
        st = S3R_OK;
        if (cc != CURLE_OK)
            *broken_p = true;
    } else {
        *broken_p = true;
        st = curl_status(cc);
        s3c_fail(c, st, S3R_TRANSPORT_HTTP, 0, "", "%s %s: %s", req->method, ep->url,
                 resp->curl_err[0] ? resp->curl_err : curl_easy_strerror(cc));
    }
out:
    /* The error buffer points into resp; detach it before the handle idles. */
    if (h != NULL)
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    handle_put(c, h, *broken_p);
    curl_slist_free_all(hl);
    buf_free(&uri);
    buf_free(&url);
    buf_free(&query);
    buf_free(&scratch);
    if (st == S3R_ERR_NOMEM || st == S3R_ERR_TOO_LARGE || st == S3R_ERR_INVALID_ARG)
        s3c_fail(c, st, S3R_TRANSPORT_HTTP, 0, "", "cannot build the %s request", req->method);
    return st;
}

size_t s3c_http_count(s3r_client_t *c)
{
    return atomic_load_explicit(&c->n_http, memory_order_acquire);
}

/* Adds the gateways that resp's x-s3rdma-peers header names (docs/protocol.md
 * §1), once per client: only the first successful reply of a configured
 * endpoint is looked at, so the server vouched for them to a request it
 * authenticated (s3rdmad sends the header to no one else). An entry is taken
 * only when it parses as an endpoint URL with the scheme of the endpoint
 * that named it and is not already listed; the list stops at
 * S3C_MAX_ENDPOINTS. A header too long for the buffer is ignored whole. */
static void learn_peers(s3r_client_t *c, const s3c_resp_t *resp, size_t from)
{
    if (!c->set.peer_discovery || resp->status < 200 || resp->status > 299 ||
        from >= c->set.n_http || atomic_load(&c->peers_decided))
        return;
    bool expected = false;
    if (!atomic_compare_exchange_strong(&c->peers_decided, &expected, true))
        return; /* another thread is deciding */
    char v[4096];
    if (s3c_resp_header(resp, PEERS_HEADER, v, sizeof(v)) != 0 || strlen(v) >= sizeof(v) - 1)
        return;
    bool https = strncasecmp(c->set.http[from].url, "https://", 8) == 0;
    size_t n = s3c_http_count(c);
    char *save = NULL;
    for (char *tok = strtok_r(v, ",", &save); tok != NULL && n < S3C_MAX_ENDPOINTS;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t')
            tok++;
        for (size_t len = strlen(tok); len > 0 && (tok[len - 1] == ' ' || tok[len - 1] == '\t');)
            tok[--len] = '\0';
        s3c_endpoint_t ep;
        if ((strncasecmp(tok, "https://", 8) == 0) != https || s3c_endpoint_parse_url(tok, &ep) < 0)
            continue;
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strcasecmp(c->set.http[i].url, ep.url) == 0;
        if (known) {
            s3c_endpoint_free(&ep);
            continue;
        }
        c->set.http[n++] = ep;
    }
    atomic_store_explicit(&c->n_http, n, memory_order_release);
}

s3r_status_t s3c_http_do(s3r_client_t *c, s3c_req_t *req, s3c_resp_t *resp)
{
    size_t n = s3c_http_count(c);
    size_t first = req->ep_idx >= 0 ? (size_t)req->ep_idx % n : atomic_fetch_add(&c->rr, 1) % n;
    size_t tries = req->ep_idx >= 0 ? 1 : n;
    s3r_status_t st = S3R_ERR_CONNECT;
    for (size_t i = 0; i < tries; i++) {
        bool broken = false;
        buf_reset(&resp->hdrs);
        buf_reset(&resp->err_body);
        resp->status = 0;
        resp->body_bytes = 0;
        resp->overflow = resp->sink_failed = false;
        resp->curl_err[0] = '\0';
        size_t ep_idx = (first + i) % n;
        st = do_once(c, req, resp, (int)ep_idx, &broken);
        if (st == S3R_OK)
            learn_peers(c, resp, ep_idx);
        /* Only a refused connection is safe to retry elsewhere: nothing was sent. */
        if (st != S3R_ERR_CONNECT)
            break;
    }
    return st;
}

static const struct {
    const char *code;
    s3r_status_t st;
} code_map[] = {
    {"NoSuchBucket", S3R_ERR_NO_SUCH_BUCKET},
    {"NoSuchKey", S3R_ERR_NO_SUCH_KEY},
    {"NoSuchUpload", S3R_ERR_NO_SUCH_KEY},
    {"NoSuchVersion", S3R_ERR_NO_SUCH_KEY},
    {"AccessDenied", S3R_ERR_ACCESS_DENIED},
    {"SignatureDoesNotMatch", S3R_ERR_ACCESS_DENIED},
    {"InvalidAccessKeyId", S3R_ERR_ACCESS_DENIED},
    {"RequestTimeTooSkewed", S3R_ERR_ACCESS_DENIED},
    {"BucketAlreadyExists", S3R_ERR_BUCKET_EXISTS},
    {"BucketAlreadyOwnedByYou", S3R_ERR_BUCKET_EXISTS},
    {"BucketNotEmpty", S3R_ERR_BUCKET_NOT_EMPTY},
    {"InvalidRange", S3R_ERR_INVALID_RANGE},
    {"EntityTooLarge", S3R_ERR_TOO_LARGE},
    {"KeyTooLongError", S3R_ERR_TOO_LARGE},
    {"MetadataTooLarge", S3R_ERR_TOO_LARGE},
    {"InvalidBucketName", S3R_ERR_INVALID_ARG},
    {"NotImplemented", S3R_ERR_UNSUPPORTED},
};

s3r_status_t s3c_http_error(s3r_client_t *c, const s3c_resp_t *resp, s3r_transport_t t, bool key_op)
{
    s3c_error_doc_t doc;
    s3r_status_t st = S3R_ERR_SERVER;
    memset(&doc, 0, sizeof(doc));
    if (resp->err_body.len > 0)
        (void)s3c_xml_parse_error(resp->err_body.data, resp->err_body.len, &doc);
    if (doc.code[0] != '\0') {
        for (size_t i = 0; i < sizeof(code_map) / sizeof(code_map[0]); i++)
            if (strcmp(code_map[i].code, doc.code) == 0)
                st = code_map[i].st;
    } else {
        switch (resp->status) {
        case 404:
            st = key_op ? S3R_ERR_NO_SUCH_KEY : S3R_ERR_NO_SUCH_BUCKET;
            break;
        case 403:
            st = S3R_ERR_ACCESS_DENIED;
            break;
        case 409:
            st = S3R_ERR_BUCKET_EXISTS;
            break;
        case 416:
            st = S3R_ERR_INVALID_RANGE;
            break;
        case 501:
            st = S3R_ERR_UNSUPPORTED;
            break;
        default:
            st = S3R_ERR_SERVER;
            break;
        }
    }
    if (doc.request_id[0] == '\0')
        (void)s3c_resp_header(resp, "x-amz-request-id", doc.request_id, sizeof(doc.request_id));
    s3c_fail(c, st, t, (int)resp->status, doc.code, "%s",
             doc.message[0] ? doc.message : "(no message)");
    s3c_set_request_id(doc.request_id);
    if (doc.needed_bytes)
        s3c_set_needed(doc.needed_bytes);
    return st;
}
