/* Signature Version 2 (the legacy S3 signing, HMAC-SHA1), as AWS documents
 * it and MinIO and Ceph RGW accept it, for the tools that still sign that
 * way: the "Authorization: AWS AccessKeyId:Signature" header and the
 * presigned query (AWSAccessKeyId, Expires, Signature). The POST form's V2
 * policy signature is s3_auth_v2_sign over the base64 policy (post_object.c).
 * The server's signature_v2 setting turns all three off (docs/security.md).
 *
 * StringToSign = Method \n Content-MD5 \n Content-Type \n Date-or-Expires \n
 *                CanonicalizedAmzHeaders CanonicalizedResource
 * where the Date line is empty when x-amz-date is sent (it is then signed
 * among the x-amz-* headers), each x-amz-* header is "name:value\n" with the
 * name lower-cased, the values trimmed, repeats joined by ',', sorted by name;
 * and the resource is the path as sent ("/bucket/key"; a virtual-host
 * request's bucket comes from Host) plus the sub-resources below, sorted. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "common/hash.h"
#include "common/s3r_limits.h"
#include "common/sigv4.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

/* x-amz-* headers one V2 request may carry; more is refused. */
#define V2_MAX_AMZ_HEADERS 128

/* The query parameters that are part of the signed resource: AWS's list plus
 * the ones botocore and MinIO add (encryption, object-lock...). Others (the
 * list parameters, the signature's own) are not signed, as in S3. */
static const char *const subresources[] = {
    "accelerate",
    "acl",
    "cors",
    "delete",
    "encryption",
    "lifecycle",
    "location",
    "logging",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "select",
    "select-type",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
};

typedef struct v2_pair {
    char *name;   /* lower-cased for headers; as sent for sub-resources */
    char *value;  /* NULL: a sub-resource sent without '=' */
    size_t order; /* arrival, so repeats keep their order through the sort */
} v2_pair_t;

typedef struct v2_pairs {
    v2_pair_t items[V2_MAX_AMZ_HEADERS];
    size_t n;
    bool overflow;
} v2_pairs_t;

static void pairs_free(v2_pairs_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->items[i].name);
        free(p->items[i].value);
    }
}

/* Adds a copy of (name, value); lower: the name lower-cased (a header's);
 * decode: the value percent-decoded (a sub-resource's: S3 signs it decoded,
 * '+' kept). False when full, out of memory or the value is malformed. */
static bool pairs_add(v2_pairs_t *p, const char *name, size_t name_len, const char *value,
                      size_t value_len, bool lower, bool decode)
{
    if (p->n == V2_MAX_AMZ_HEADERS) {
        p->overflow = true;
        return false;
    }
    v2_pair_t *it = &p->items[p->n];
    it->name = strndup(name, name_len);
    it->value = !value   ? NULL
                : decode ? s3_url_decode(value, value_len, false)
                         : strndup(value, value_len);
    it->order = p->n;
    if (!it->name || (value && !it->value)) {
        free(it->name);
        free(it->value);
        p->overflow = true;
        return false;
    }
    if (lower)
        for (char *c = it->name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    p->n++;
    return true;
}

static int pair_cmp(const void *a, const void *b)
{
    const v2_pair_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

static int collect_amz(void *ctx, const char *name, const char *value)
{
    if (strncasecmp(name, "x-amz-", 6) != 0)
        return 0;
    /* Trimmed of the spaces and tabs around it. */
    size_t len = strlen(value);
    while (len && (*value == ' ' || *value == '\t'))
        value++, len--;
    while (len && (value[len - 1] == ' ' || value[len - 1] == '\t'))
        len--;
    return !pairs_add(ctx, name, strlen(name), value, len, true, false);
}

static int collect_subresource(void *ctx, const char *name, const char *raw_value)
{
    for (size_t i = 0; i < sizeof(subresources) / sizeof(subresources[0]); i++) {
        if (strcmp(subresources[i], name) == 0)
            return !pairs_add(ctx, name, strlen(name), raw_value, raw_value ? strlen(raw_value) : 0,
                              false, true);
    }
    return 0;
}

/* Appends the canonicalized x-amz-* headers and resource to sts; -1 when the
 * request has too many x-amz-* headers or sub-resources, or memory ran out.
 * slash: a path-style bucket's resource gets a trailing '/' ("/bucket/", as
 * botocore signs it; "/bucket" as the path is sent is the other form). */
static int append_canonical_tail(s3_req_t *req, buf_t *sts, bool slash)
{
    v2_pairs_t *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    s3_req_each_header(req, collect_amz, p);
    int rc = p->overflow ? -1 : 0;
    if (rc == 0) {
        qsort(p->items, p->n, sizeof(p->items[0]), pair_cmp);
        for (size_t i = 0; i < p->n; i++) {
            bool repeat = i > 0 && strcmp(p->items[i].name, p->items[i - 1].name) == 0;
            bool last = i + 1 == p->n || strcmp(p->items[i].name, p->items[i + 1].name) != 0;
            if (repeat)
                buf_printf(sts, ",%s", p->items[i].value);
            else
                buf_printf(sts, "%s:%s", p->items[i].name, p->items[i].value);
            if (last)
                buf_append(sts, "\n", 1);
        }
    }
    pairs_free(p);
    memset(p, 0, sizeof(*p));

    if (rc == 0 && req->virtual_host && req->bucket)
        buf_printf(sts, "/%s", req->bucket);
    if (rc == 0 && sigv4_uri_encode_path(req->path, sts) != 0)
        rc = -1;
    if (rc == 0 && slash)
        buf_append(sts, "/", 1);
    if (rc == 0) {
        s3_req_each_raw_query(req, collect_subresource, p);
        rc = p->overflow ? -1 : 0;
    }
    if (rc == 0) {
        qsort(p->items, p->n, sizeof(p->items[0]), pair_cmp);
        for (size_t i = 0; i < p->n; i++) {
            buf_printf(sts, "%c%s", i ? '&' : '?', p->items[i].name);
            if (p->items[i].value)
                buf_printf(sts, "=%s", p->items[i].value);
        }
    }
    pairs_free(p);
    free(p);
    return rc;
}

void s3_auth_v2_sign(const s3_user_t *user, const char *data, size_t len,
                     char out[S3_V2_SIG_LEN + 1])
{
    uint8_t mac[SHA1_LEN];
    hash_hmac_sha1(user->secret_key, strlen(user->secret_key), data, len, mac);
    hash_base64_encode(mac, sizeof(mac), out);
}

bool s3_auth_v2_sig_equal(const char *expected, const char *given)
{
    return strlen(given) == S3_V2_SIG_LEN && hash_ct_equal(expected, given, S3_V2_SIG_LEN);
}

bool s3_auth_v2_request(s3_req_t *req)
{
    const char *authz = s3_req_header(req, "Authorization");
    if (authz)
        return strncmp(authz, "AWS ", 4) == 0;
    return !s3_req_has_query(req, "X-Amz-Signature") && s3_req_has_query(req, "AWSAccessKeyId");
}

/* A V2 request's time: an HTTP date, also with "+0000" for "GMT" (as s3cmd
 * writes x-amz-date), or SigV4's amz-date form; -1 when none or malformed. */
static int64_t parse_v2_date(const char *s)
{
    if (!s)
        return -1;
    int64_t t = date_parse_http(s);
    size_t len = strlen(s);
    if (t < 0 && len > 6 && len < 64 && strcmp(s + len - 6, " +0000") == 0) {
        char gmt[64];
        snprintf(gmt, sizeof(gmt), "%.*s GMT", (int)(len - 6), s);
        t = date_parse_http(gmt);
    }
    return t < 0 ? date_parse_amz(s) : t;
}

/* The header form's access key and signature ("AWS AKID:sig"); false when
 * malformed. */
static bool parse_header(const char *authz, char *akid, size_t akid_size, char *sig,
                         size_t sig_size)
{
    const char *cred = authz + 4;
    const char *colon = strrchr(cred, ':');
    if (!colon || colon == cred || (size_t)(colon - cred) >= akid_size ||
        strlen(colon + 1) >= sig_size || colon[1] == '\0')
        return false;
    snprintf(akid, akid_size, "%.*s", (int)(colon - cred), cred);
    snprintf(sig, sig_size, "%s", colon + 1);
    return true;
}

s3_error_t s3_auth_v2_verify(s3_req_t *req, const char **why_p)
{
    if (!req->srv->cfg.signature_v2) {
        *why_p = "Signature Version 2 is turned off on this server; sign with AWS4-HMAC-SHA256.";
        return S3E_ACCESS_DENIED;
    }
    const char *authz = s3_req_header(req, "Authorization");
    char akid[256], given[128];
    const char *date_line;
    if (authz) {
        if (!parse_header(authz, akid, sizeof(akid), given, sizeof(given))) {
            *why_p = "The authorization header is malformed; it must be \"AWS "
                     "AccessKeyId:Signature\".";
            return S3E_MALFORMED_AUTH;
        }
        /* x-amz-date wins over Date (it is signed among the x-amz-* headers,
         * the Date line left empty), as S3 does. */
        const char *amz_date = s3_req_header(req, "x-amz-date");
        const char *date = s3_req_header(req, "Date");
        int64_t t = parse_v2_date(amz_date ? amz_date : date);
        if (t < 0) {
            *why_p = "AWS authentication requires a valid Date or x-amz-date header";
            return S3E_ACCESS_DENIED;
        }
        if (t > req->now_s + S3R_MAX_CLOCK_SKEW_S || t < req->now_s - S3R_MAX_CLOCK_SKEW_S) {
            char at[40];
            date_format_http(t, at);
            s3_reply_error_elem(req, "RequestTime", at);
            date_format_http(req->now_s, at);
            s3_reply_error_elem(req, "ServerTime", at);
            char ms[24];
            snprintf(ms, sizeof(ms), "%d", S3R_MAX_CLOCK_SKEW_S * 1000);
            s3_reply_error_elem(req, "MaxAllowedSkewMilliseconds", ms);
            return S3E_REQUEST_TIME_SKEWED;
        }
        date_line = amz_date ? "" : date;
    } else {
        const char *id = s3_req_query(req, "AWSAccessKeyId");
        const char *sig = s3_req_query(req, "Signature");
        const char *exp = s3_req_query(req, "Expires");
        if (!id || !sig || !exp || strlen(id) >= sizeof(akid) || strlen(sig) >= sizeof(given)) {
            *why_p = "Query-string authentication requires the Signature, Expires and "
                     "AWSAccessKeyId parameters";
            return S3E_ACCESS_DENIED;
        }
        char *end;
        errno = 0;
        long long expires = strtoll(exp, &end, 10);
        if (!isdigit((unsigned char)exp[0]) || *end != '\0' || errno != 0) {
            *why_p = "Invalid date (should be seconds since epoch): the Expires parameter";
            return S3E_ACCESS_DENIED;
        }
        if (req->now_s > expires) {
            char when[32];
            s3_reply_error_elem(req, "Expires", exp);
            date_format_iso8601(req->now_s * 1000, when);
            s3_reply_error_elem(req, "ServerTime", when);
            *why_p = "Request has expired";
            return S3E_ACCESS_DENIED;
        }
        snprintf(akid, sizeof(akid), "%s", id);
        snprintf(given, sizeof(given), "%s", sig);
        date_line = exp;
    }

    const s3_user_t *user = s3_user_find(req->srv, akid);
    if (!user)
        return S3E_INVALID_ACCESS_KEY;

    const char *md5 = s3_req_header(req, "Content-MD5");
    const char *type = s3_req_header(req, "Content-Type");
    /* A path-style request for a bucket itself may be signed as "/bucket"
     * or "/bucket/" (botocore): both name the same resource, both are
     * tried; a mismatch echoes the first. */
    bool two_forms =
        !req->virtual_host && req->bucket && !req->key && req->path[strlen(req->path) - 1] != '/';
    s3_error_t err = S3E_SIGNATURE_MISMATCH;
    buf_t sts;
    for (int form = two_forms ? 1 : 0; form >= 0 && err == S3E_SIGNATURE_MISMATCH; form--) {
        buf_init(&sts, S3R_MAX_HEADER_BYTES * 2);
        buf_printf(&sts, "%s\n%s\n%s\n%s\n", req->method, md5 ? md5 : "", type ? type : "",
                   date_line ? date_line : "");
        if (append_canonical_tail(req, &sts, form == 1) != 0 || !sts.data) {
            *why_p = "The request's x-amz-* headers or sub-resources are too many to sign.";
            err = S3E_INVALID_REQUEST;
        } else {
            char sig[S3_V2_SIG_LEN + 1];
            s3_auth_v2_sign(user, sts.data, sts.len, sig);
            if (s3_auth_v2_sig_equal(sig, given))
                err = S3E_NONE;
        }
        if (form == 1 && err == S3E_SIGNATURE_MISMATCH)
            buf_free(&sts);
    }
    if (err == S3E_SIGNATURE_MISMATCH) {
        /* S3's echo, so a client can compare its StringToSign with ours. */
        s3_reply_error_elem(req, "AWSAccessKeyId", akid);
        s3_reply_error_elem(req, "StringToSign", sts.data);
        s3_reply_error_elem(req, "SignatureProvided", given);
    }
    buf_free(&sts);
    if (err != S3E_NONE)
        return err;
    req->user = user;
    req->payload_mode = S3_PAYLOAD_UNSIGNED; /* V2 signs no body; Content-MD5 checks it */
    return S3E_NONE;
}
