/* SigV4 verification of incoming requests: the Authorization header form and
 * the presigned-URL query form (V2-signed ones go to auth_v2.c). The canonical request is rebuilt
 * from what was received (decoded path re-encoded the S3 way, query canonicalised, signed headers
 * as sent) and the signature compared in constant time. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "common/s3r_limits.h"
#include "common/sigv4.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

#define MAX_SIGNED_HEADERS 64

const s3_user_t *s3_user_find(const s3_server_t *srv, const char *access_key)
{
    for (size_t i = 0; i < srv->cfg.n_users; i++) {
        if (strcmp(srv->cfg.users[i].access_key, access_key) == 0)
            return &srv->cfg.users[i];
    }
    return NULL;
}

const char *s3_display_name(const s3_server_t *srv, const char *id)
{
    const s3_user_t *u = s3_user_find(srv, id);
    return !u ? NULL : u->display_name ? u->display_name : u->access_key;
}

/* The signing key depends only on (secret, date, region, service), so each
 * connection thread keeps the last one it derived: four HMACs saved on every
 * request but the first of the day. */
static void signing_key_cached(const s3_user_t *user, const sigv4_auth_t *auth,
                               uint8_t key[SHA256_LEN])
{
    static __thread struct {
        const s3_user_t *user;
        char date8[9];
        char region[64];
        uint8_t key[SHA256_LEN];
    } cache;
    if (cache.user != user || strcmp(cache.date8, auth->date8) != 0 ||
        strcmp(cache.region, auth->region) != 0) {
        sigv4_signing_key(user->secret_key, auth->date8, auth->region, auth->service, cache.key);
        cache.user = user;
        snprintf(cache.date8, sizeof(cache.date8), "%s", auth->date8);
        snprintf(cache.region, sizeof(cache.region), "%s", auth->region);
    }
    memcpy(key, cache.key, SHA256_LEN);
}

/* Rebuilds the raw query string ("a=1&b") from the frontend's arguments. */
static int append_query_arg(void *ctx, const char *name, const char *raw_value)
{
    buf_t *q = ctx;
    if (q->len)
        buf_append(q, "&", 1);
    buf_append_str(q, name);
    if (raw_value) {
        buf_append(q, "=", 1);
        buf_append_str(q, raw_value);
    }
    return 0;
}

/* Collects every value of one header (joined with ',' as SigV4 wants). */
typedef struct header_collect {
    const char *name;
    buf_t *out;
    int count;
} header_collect_t;

static int collect_header(void *ctx, const char *name, const char *value)
{
    header_collect_t *hc = ctx;
    if (strcasecmp(hc->name, name) != 0)
        return 0;
    if (hc->count++)
        buf_append(hc->out, ",", 1);
    buf_append_str(hc->out, value);
    return 0;
}

/* True when name (len bytes, compared without case) is one of the names in
 * list, which are joined by sep. */
static bool name_in_list(const char *list, char sep, const char *name, size_t len)
{
    for (const char *p = list;;) {
        const char *end = strchr(p, sep);
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncasecmp(p, name, len) == 0)
            return true;
        if (!end)
            return false;
        p = end + 1;
    }
}

/* Every x-amz-* request header must be covered by the signature: the
 * operations read x-amz-copy-source, x-amz-meta-*, x-amz-rdma-token... from
 * the headers as received, so one outside SignedHeaders would let whoever
 * holds a signed request (a presigned URL, say) change what it does. The one
 * exception is x-amz-content-sha256, as in S3: in header auth its value is the
 * payload hash that ends the canonical request (changing it breaks the
 * signature whether it is listed or not), and a presigned request takes the
 * payload hash from the query, never from the header. */
typedef struct unsigned_scan {
    const char *signed_headers;
    buf_t *names; /* the unsigned names found, lower-case, joined by ',' */
    size_t found; /* counted apart from names, so a full buffer still refuses */
} unsigned_scan_t;

static int find_unsigned(void *ctx, const char *name, const char *value)
{
    (void)value;
    unsigned_scan_t *us = ctx;
    size_t len = strlen(name);
    if (strncasecmp(name, "x-amz-", 6) != 0 || strcasecmp(name, "x-amz-content-sha256") == 0)
        return 0;
    if (name_in_list(us->signed_headers, ';', name, len) ||
        (us->names->data && name_in_list(us->names->data, ',', name, len)))
        return 0;
    us->found++;
    size_t at = us->names->len;
    if (buf_printf(us->names, "%s%s", at ? "," : "", name) == 0) {
        for (size_t i = at; i < us->names->len; i++)
            us->names->data[i] = (char)tolower((unsigned char)us->names->data[i]);
    }
    return 0;
}

static s3_error_t set_payload_mode(s3_req_t *req, const char *hash)
{
    if (strcmp(hash, SIGV4_UNSIGNED) == 0) {
        req->payload_mode = S3_PAYLOAD_UNSIGNED;
    } else if (strcmp(hash, SIGV4_STREAMING) == 0) {
        req->payload_mode = S3_PAYLOAD_STREAMING_SIGNED;
    } else if (strcmp(hash, SIGV4_STREAMING_TRAILER) == 0) {
        req->payload_mode = S3_PAYLOAD_STREAMING_SIGNED_TRAILER;
    } else if (strcmp(hash, SIGV4_STREAMING_UNSIGNED_TRAILER) == 0) {
        req->payload_mode = S3_PAYLOAD_STREAMING_UNSIGNED_TRAILER;
    } else {
        uint8_t raw[SHA256_LEN];
        if (hash_hex_decode(hash, strlen(hash), raw, sizeof(raw)) != 0)
            return S3E_INVALID_ARGUMENT;
        req->payload_mode = S3_PAYLOAD_SIGNED;
        hash_hex_encode(raw, sizeof(raw), req->payload_sha256);
    }
    return S3E_NONE;
}

/* The validity window of a presigned URL, checked as S3 does: X-Amz-Expires
 * must be a number of seconds from 0 to 604800 (else 400
 * AuthorizationQueryParametersError), and the URL is good while fewer than
 * that many seconds have passed since X-Amz-Date (so 0 never is): after, 403
 * AccessDenied "Request has expired" naming when it expired. */
static s3_error_t check_presign_window(s3_req_t *req, const char *exp, int64_t t,
                                       const char **why_p)
{
    char *end;
    errno = 0;
    long long expires = strtoll(exp, &end, 10);
    bool number =
        (isdigit((unsigned char)exp[0]) || (exp[0] == '-' && isdigit((unsigned char)exp[1]))) &&
        *end == '\0' && errno == 0;
    if (!number) {
        *why_p = "X-Amz-Expires should be a number";
        return S3E_AUTH_QUERY_ERROR;
    }
    if (expires < 0) {
        *why_p = "X-Amz-Expires must be non-negative";
        return S3E_AUTH_QUERY_ERROR;
    }
    if (expires > S3R_MAX_PRESIGN_EXPIRES) {
        *why_p = "X-Amz-Expires must be less than a week (in seconds); that is, the given "
                 "X-Amz-Expires must be less than 604800 seconds";
        return S3E_AUTH_QUERY_ERROR;
    }
    if (req->now_s >= t + expires) {
        char when[32];
        s3_reply_error_elem(req, "X-Amz-Expires", exp);
        date_format_iso8601((t + expires) * 1000, when);
        s3_reply_error_elem(req, "Expires", when);
        date_format_iso8601(req->now_s * 1000, when);
        s3_reply_error_elem(req, "ServerTime", when);
        *why_p = "Request has expired";
        return S3E_ACCESS_DENIED;
    }
    if (t > req->now_s + S3R_MAX_CLOCK_SKEW_S) {
        *why_p = "Request is not valid yet";
        return S3E_ACCESS_DENIED;
    }
    return S3E_NONE;
}

s3_error_t s3_auth_verify(s3_req_t *req, const char **why_p)
{
    sigv4_auth_t auth;
    const char *authz = s3_req_header(req, "Authorization");
    bool presigned = !authz && s3_req_has_query(req, "X-Amz-Signature");
    const char *amz_date;
    const char *payload_hash;

    if (s3_auth_v2_request(req))
        return s3_auth_v2_verify(req, why_p);
    if (!authz && !presigned) {
        /* Anonymous: allowed only where an ACL grants AllUsers (access.c). */
        req->user = NULL;
        req->payload_mode = S3_PAYLOAD_UNSIGNED;
        return S3E_NONE;
    }
    if (authz) {
        if (sigv4_parse_authorization(authz, &auth) != 0) {
            *why_p = "The authorization header is malformed.";
            return S3E_MALFORMED_AUTH;
        }
        amz_date = s3_req_header(req, "x-amz-date");
        if (!amz_date) {
            *why_p = "AWS authentication requires a valid x-amz-date header.";
            return S3E_ACCESS_DENIED;
        }
        payload_hash = s3_req_header(req, "x-amz-content-sha256");
        if (!payload_hash) {
            *why_p = "Missing required header for this request: x-amz-content-sha256.";
            return S3E_INVALID_REQUEST;
        }
    } else {
        const char *alg = s3_req_query(req, "X-Amz-Algorithm");
        const char *cred = s3_req_query(req, "X-Amz-Credential");
        const char *sh = s3_req_query(req, "X-Amz-SignedHeaders");
        const char *sig = s3_req_query(req, "X-Amz-Signature");
        const char *exp = s3_req_query(req, "X-Amz-Expires");
        amz_date = s3_req_query(req, "X-Amz-Date");
        memset(&auth, 0, sizeof(auth));
        if (!alg || strcmp(alg, SIGV4_ALGORITHM) != 0 || !cred || !sh || !sig || !amz_date ||
            !exp || sigv4_parse_credential(cred, &auth) != 0 ||
            strlen(sh) >= sizeof(auth.signed_headers) || strlen(sig) != 64) {
            *why_p = "Query-string authentication requires the X-Amz-Algorithm, "
                     "X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, "
                     "and X-Amz-Expires parameters.";
            return S3E_AUTH_QUERY_ERROR;
        }
        snprintf(auth.signed_headers, sizeof(auth.signed_headers), "%s", sh);
        snprintf(auth.signature, sizeof(auth.signature), "%s", sig);
        int64_t t = date_parse_amz(amz_date);
        if (t < 0) {
            *why_p = "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\".";
            return S3E_AUTH_QUERY_ERROR;
        }
        s3_error_t err = check_presign_window(req, exp, t, why_p);
        if (err != S3E_NONE)
            return err;
        payload_hash = s3_req_query(req, "X-Amz-Content-Sha256");
        if (!payload_hash)
            payload_hash = SIGV4_UNSIGNED;
    }

    int64_t t = date_parse_amz(amz_date);
    if (t < 0) {
        *why_p = "The x-amz-date value is not in ISO8601 basic format.";
        return S3E_ACCESS_DENIED;
    }
    if (!presigned &&
        (t > req->now_s + S3R_MAX_CLOCK_SKEW_S || t < req->now_s - S3R_MAX_CLOCK_SKEW_S))
        return S3E_REQUEST_TIME_SKEWED;
    if (strncmp(amz_date, auth.date8, 8) != 0) {
        *why_p = "The credential scope date does not match x-amz-date.";
        return presigned ? S3E_AUTH_QUERY_ERROR : S3E_MALFORMED_AUTH;
    }
    if (strcmp(auth.service, "s3") != 0) {
        *why_p = "The credential scope service must be 's3'.";
        return presigned ? S3E_AUTH_QUERY_ERROR : S3E_MALFORMED_AUTH;
    }
    if (strcmp(auth.region, req->srv->cfg.region) != 0) {
        /* S3's answer, which tells an SDK the region to sign for instead. */
        static __thread char msg[256];
        snprintf(msg, sizeof(msg), "%s; the region '%.64s' is wrong; expecting '%.64s'",
                 presigned ? "Error parsing the X-Amz-Credential parameter"
                           : "The authorization header is malformed",
                 auth.region, req->srv->cfg.region);
        s3_reply_error_elem(req, "Region", req->srv->cfg.region);
        *why_p = msg;
        return presigned ? S3E_AUTH_QUERY_ERROR : S3E_MALFORMED_AUTH;
    }
    const s3_user_t *user = s3_user_find(req->srv, auth.access_key);
    if (!user)
        return S3E_INVALID_ACCESS_KEY;

    s3_error_t err = set_payload_mode(req, payload_hash);
    if (err != S3E_NONE) {
        *why_p = "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-*, or a valid "
                 "SHA-256 value.";
        return err;
    }
    if (presigned && req->payload_mode != S3_PAYLOAD_UNSIGNED &&
        req->payload_mode != S3_PAYLOAD_SIGNED)
        return S3E_AUTH_QUERY_ERROR;

    /* The signed headers, as received: names lower-cased once (into the
     * request, where the token path checks them too), values collected into
     * one buffer. */
    snprintf(req->signed_headers, sizeof(req->signed_headers), "%s", auth.signed_headers);
    for (char *c = req->signed_headers; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    sigv4_header_t headers[MAX_SIGNED_HEADERS];
    size_t value_off[MAX_SIGNED_HEADERS];
    buf_t values;
    buf_init(&values, S3R_MAX_HEADER_BYTES);
    char names[sizeof(req->signed_headers)];
    size_t n = 0;
    bool has_host = false;
    snprintf(names, sizeof(names), "%s", req->signed_headers);
    err = S3E_NONE;
    for (char *save = NULL, *name = strtok_r(names, ";", &save); name;
         name = strtok_r(NULL, ";", &save)) {
        if (n == MAX_SIGNED_HEADERS) {
            err = S3E_MALFORMED_AUTH;
            break;
        }
        has_host |= strcmp(name, "host") == 0;
        value_off[n] = values.len;
        header_collect_t hc = {.name = name, .out = &values, .count = 0};
        s3_req_each_header(req, collect_header, &hc);
        buf_append(&values, "", 1);
        headers[n++].name = name;
    }
    for (size_t i = 0; i < n; i++)
        headers[i].value = values.data ? values.data + value_off[i] : "";
    if (err == S3E_NONE && !has_host) {
        *why_p = "The host header must be signed.";
        err = S3E_ACCESS_DENIED;
    }

    buf_t uri, rawq, query, creq, sts;
    buf_init(&uri, 16 * 1024);
    buf_init(&rawq, S3R_MAX_HEADER_BYTES);
    buf_init(&query, S3R_MAX_HEADER_BYTES * 2);
    buf_init(&creq, S3R_MAX_HEADER_BYTES * 4);
    buf_init(&sts, 4096);
    if (err == S3E_NONE) {
        s3_req_each_raw_query(req, append_query_arg, &rawq);
        if (sigv4_uri_encode_path(req->path, &uri) != 0 ||
            sigv4_canonical_query(rawq.data ? rawq.data : "", presigned, &query) != 0)
            err = S3E_INVALID_REQUEST;
    }
    if (err == S3E_NONE) {
        sigv4_request_t sreq = {
            .method = req->method,
            .canonical_uri = uri.data,
            .canonical_query = query.data ? query.data : "",
            .headers = headers,
            .n_headers = n,
            .signed_headers = req->signed_headers,
            .payload_hash = payload_hash,
        };
        char sig[65];
        if (sigv4_canonical_request(&sreq, &creq) != 0 ||
            sigv4_string_to_sign(amz_date, auth.scope, creq.data, creq.len, &sts) != 0) {
            err = S3E_INVALID_REQUEST;
        } else {
            signing_key_cached(user, &auth, req->signing_key);
            sigv4_sign(req->signing_key, sts.data, sts.len, sig);
            if (!hash_ct_equal(sig, auth.signature, 64))
                err = S3E_SIGNATURE_MISMATCH;
        }
    }
    if (err == S3E_NONE) {
        buf_t names;
        buf_init(&names, S3R_MAX_HEADER_BYTES);
        unsigned_scan_t us = {.signed_headers = req->signed_headers, .names = &names};
        s3_req_each_header(req, find_unsigned, &us);
        if (us.found) {
            *why_p = "There were headers present in the request which were not signed";
            free(req->headers_not_signed);
            req->headers_not_signed = buf_steal(&names, NULL);
            err = S3E_ACCESS_DENIED;
        }
        buf_free(&names);
    }
    buf_free(&values);
    buf_free(&uri);
    buf_free(&rawq);
    buf_free(&query);
    buf_free(&creq);
    buf_free(&sts);
    if (err != S3E_NONE)
        return err;

    req->user = user;
    snprintf(req->amz_date, sizeof(req->amz_date), "%s", amz_date);
    snprintf(req->scope, sizeof(req->scope), "%s", auth.scope);
    snprintf(req->seed_signature, sizeof(req->seed_signature), "%s", auth.signature);
    return S3E_NONE;
}
