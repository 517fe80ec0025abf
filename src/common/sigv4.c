/* AWS Signature Version 4: canonicalisation, key derivation, string-to-sign
 * and the parsers for what clients send. See sigv4.h for the contracts. */
#include "common/sigv4.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* URI encoding                                                              */
/* ------------------------------------------------------------------------ */

static bool is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

int sigv4_uri_encode(const char *s, size_t len, bool encode_slash, buf_t *out)
{
    static const char hex[] = "0123456789ABCDEF";
    /* Reserve the worst case first so a failure leaves out unchanged. */
    if (len > (SIZE_MAX - 1) / 3 || buf_reserve(out, 3 * len) != 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_unreserved(c) || (c == '/' && !encode_slash)) {
            out->data[out->len++] = (char)c;
        } else {
            out->data[out->len++] = '%';
            out->data[out->len++] = hex[c >> 4];
            out->data[out->len++] = hex[c & 15];
        }
    }
    out->data[out->len] = '\0';
    return 0;
}

int sigv4_uri_encode_path(const char *decoded_path, buf_t *out)
{
    /* S3 does not normalise paths ("/a//b", "/a/./b" stay as they are), so
     * encoding the whole path with slashes kept encodes every segment once. */
    if (!decoded_path || !*decoded_path)
        return buf_append_str(out, "/");
    return sigv4_uri_encode(decoded_path, strlen(decoded_path), false, out);
}

int sigv4_percent_decode(const char *s, size_t len, buf_t *tmp)
{
    buf_reset(tmp);
    if (buf_reserve(tmp, len) != 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '%') {
            if (len - i < 3)
                return -1;
            int hi = hash_hex_digit_value(s[i + 1]), lo = hash_hex_digit_value(s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = (char)(hi << 4 | lo);
            i += 2;
        }
        tmp->data[tmp->len++] = c;
    }
    tmp->data[tmp->len] = '\0';
    return 0;
}

typedef struct query_param {
    char *name; /* encoded, NUL-terminated */
    char *value;
} query_param_t;

static int param_cmp(const void *a, const void *b)
{
    const query_param_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(x->value, y->value);
}

/* Decodes then re-encodes s[0..len) into a fresh string. */
static char *reencode(const char *s, size_t len, buf_t *tmp)
{
    if (sigv4_percent_decode(s, len, tmp) != 0)
        return NULL;
    buf_t enc;
    buf_init(&enc, 3 * len + 1);
    if (sigv4_uri_encode(tmp->data, tmp->len, true, &enc) != 0) {
        buf_free(&enc);
        return NULL;
    }
    return buf_steal(&enc, NULL);
}

int sigv4_canonical_query(const char *raw_query, bool skip_signature, buf_t *out)
{
    if (!raw_query || !*raw_query)
        return 0;
    size_t qlen = strlen(raw_query);
    size_t max_params = 1;
    for (size_t i = 0; i < qlen; i++)
        max_params += raw_query[i] == '&';

    int rc = -1;
    size_t n = 0;
    buf_t tmp;
    buf_init(&tmp, qlen + 1);
    query_param_t *params = calloc(max_params, sizeof(*params));
    if (!params)
        return -1;

    const char *p = raw_query, *end = raw_query + qlen;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *stop = amp ? amp : end;
        if (stop > p) {
            const char *eq = memchr(p, '=', (size_t)(stop - p));
            const char *name_end = eq ? eq : stop;
            char *name = reencode(p, (size_t)(name_end - p), &tmp);
            if (!name)
                goto out;
            if (skip_signature && strcmp(name, "X-Amz-Signature") == 0) {
                free(name);
            } else {
                const char *v = eq ? eq + 1 : stop;
                char *value = reencode(v, (size_t)(stop - v), &tmp);
                if (!value) {
                    free(name);
                    goto out;
                }
                params[n].name = name;
                params[n].value = value;
                n++;
            }
        }
        p = stop + (amp ? 1 : 0);
    }

    qsort(params, n, sizeof(*params), param_cmp);
    size_t need = 0;
    for (size_t i = 0; i < n; i++)
        need += strlen(params[i].name) + strlen(params[i].value) + 2;
    if (buf_reserve(out, need) != 0)
        goto out;
    for (size_t i = 0; i < n; i++) {
        if ((i && buf_append(out, "&", 1) != 0) || buf_append_str(out, params[i].name) != 0 ||
            buf_append(out, "=", 1) != 0 || buf_append_str(out, params[i].value) != 0)
            goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < n; i++) {
        free(params[i].name);
        free(params[i].value);
    }
    free(params);
    buf_free(&tmp);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Canonical request and string to sign                                      */
/* ------------------------------------------------------------------------ */

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Appends value with leading/trailing whitespace removed and inner runs of
 * whitespace collapsed to one space, as the AWS SDKs do. */
static int append_trimmed(buf_t *out, const char *v)
{
    while (is_space(*v))
        v++;
    bool pending_space = false;
    for (; *v; v++) {
        if (is_space(*v)) {
            pending_space = true;
            continue;
        }
        if (pending_space && buf_append(out, " ", 1) != 0)
            return -1;
        pending_space = false;
        if (buf_append(out, v, 1) != 0)
            return -1;
    }
    return 0;
}

int sigv4_canonical_request(const sigv4_request_t *req, buf_t *out)
{
    size_t saved = out->len;
    const char *uri = req->canonical_uri && *req->canonical_uri ? req->canonical_uri : "/";
    if (buf_printf(out, "%s\n%s\n%s\n", req->method, uri,
                   req->canonical_query ? req->canonical_query : "") != 0)
        goto fail;
    for (size_t i = 0; i < req->n_headers; i++) {
        if (buf_append_str(out, req->headers[i].name) != 0 || buf_append(out, ":", 1) != 0 ||
            append_trimmed(out, req->headers[i].value ? req->headers[i].value : "") != 0 ||
            buf_append(out, "\n", 1) != 0)
            goto fail;
    }
    if (buf_printf(out, "\n%s\n%s", req->signed_headers ? req->signed_headers : "",
                   req->payload_hash ? req->payload_hash : SIGV4_UNSIGNED) != 0)
        goto fail;
    return 0;
fail:
    /* Leave out as it was: a half-built canonical request is useless. */
    out->len = saved;
    if (out->data)
        out->data[saved] = '\0';
    return -1;
}

int sigv4_string_to_sign(const char *amz_date, const char *scope, const char *canonical_request,
                         size_t canonical_len, buf_t *out)
{
    uint8_t h[SHA256_LEN];
    char hx[2 * SHA256_LEN + 1];
    hash_sha256(canonical_request, canonical_len, h);
    hash_hex_encode(h, SHA256_LEN, hx);
    return buf_printf(out, "%s\n%s\n%s\n%s", SIGV4_ALGORITHM, amz_date, scope, hx);
}

void sigv4_signing_key(const char *secret, const char *date8, const char *region,
                       const char *service, uint8_t key[SHA256_LEN])
{
    size_t slen = strlen(secret);
    char small[256];
    char *k = slen + 4 <= sizeof(small) ? small : malloc(slen + 4);
    if (!k) {
        /* A zero key verifies nothing a client could have signed. */
        memset(key, 0, SHA256_LEN);
        return;
    }
    memcpy(k, "AWS4", 4);
    memcpy(k + 4, secret, slen);
    uint8_t a[SHA256_LEN], b[SHA256_LEN];
    hash_hmac_sha256(k, slen + 4, date8, strlen(date8), a);
    hash_hmac_sha256(a, SHA256_LEN, region, strlen(region), b);
    hash_hmac_sha256(b, SHA256_LEN, service, strlen(service), a);
    hash_hmac_sha256(a, SHA256_LEN, "aws4_request", 12, key);
    /* The secret and the intermediate keys are not left on the stack. */
    memset(k, 0, slen + 4);
    if (k != small)
        free(k);
    memset(a, 0, sizeof(a));
    memset(b, 0, sizeof(b));
}

void sigv4_sign(const uint8_t key[SHA256_LEN], const char *msg, size_t len, char sig_hex[65])
{
    uint8_t mac[SHA256_LEN];
    hash_hmac_sha256(key, SHA256_LEN, msg, len, mac);
    hash_hex_encode(mac, SHA256_LEN, sig_hex);
}

int sigv4_chunk_string_to_sign(const char *amz_date, const char *scope, const char *prev_sig,
                               const uint8_t chunk_sha256[SHA256_LEN], buf_t *out)
{
    char hx[2 * SHA256_LEN + 1];
    hash_hex_encode(chunk_sha256, SHA256_LEN, hx);
    return buf_printf(out, "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s", amz_date, scope,
                      prev_sig, SIGV4_EMPTY_SHA256, hx);
}

int sigv4_trailer_string_to_sign(const char *amz_date, const char *scope, const char *prev_sig,
                                 const uint8_t trailer_sha256[SHA256_LEN], buf_t *out)
{
    char hx[2 * SHA256_LEN + 1];
    hash_hex_encode(trailer_sha256, SHA256_LEN, hx);
    return buf_printf(out, "AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s", amz_date, scope, prev_sig,
                      hx);
}

/* ------------------------------------------------------------------------ */
/* Authorization header and credential parsing                               */
/* ------------------------------------------------------------------------ */

/* Copies s[0..len) into dst (size cap, NUL-terminated); -1 if it does not fit. */
static int copy_field(char *dst, size_t cap, const char *s, size_t len)
{
    if (len >= cap)
        return -1;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

int sigv4_parse_credential(const char *credential, sigv4_auth_t *out)
{
    if (!credential)
        return -1;
    /* Split from the right: the last four components are fixed, the access
     * key is everything before them. */
    size_t len = strlen(credential);
    const char *slash[4];
    size_t found = 0;
    for (size_t i = len; i > 0 && found < 4; i--) {
        if (credential[i - 1] == '/')
            slash[found++] = credential + i - 1;
    }
    if (found < 4)
        return -1;
    /* slash[3] ends the access key, slash[2] the date, slash[1] the region,
     * slash[0] the service. */
    const char *ak = credential, *date = slash[3] + 1, *region = slash[2] + 1;
    const char *service = slash[1] + 1, *term = slash[0] + 1;
    size_t ak_len = (size_t)(slash[3] - ak), date_len = (size_t)(slash[2] - date);
    size_t region_len = (size_t)(slash[1] - region), service_len = (size_t)(slash[0] - service);
    if (ak_len == 0 || date_len != 8 || region_len == 0 || service_len == 0 ||
        strcmp(term, "aws4_request") != 0)
        return -1;
    for (size_t i = 0; i < 8; i++) {
        if (date[i] < '0' || date[i] > '9')
            return -1;
    }
    sigv4_auth_t tmp;
    memcpy(&tmp, out, sizeof(tmp));
    if (copy_field(tmp.access_key, sizeof(tmp.access_key), ak, ak_len) != 0 ||
        copy_field(tmp.date8, sizeof(tmp.date8), date, date_len) != 0 ||
        copy_field(tmp.region, sizeof(tmp.region), region, region_len) != 0 ||
        copy_field(tmp.service, sizeof(tmp.service), service, service_len) != 0 ||
        copy_field(tmp.scope, sizeof(tmp.scope), date, (size_t)(credential + len - date)) != 0)
        return -1;
    memcpy(out, &tmp, sizeof(tmp));
    return 0;
}

static bool valid_signed_headers(const char *s, size_t len)
{
    if (len == 0)
        return false;
    bool prev_sep = true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ';') {
            if (prev_sep)
                return false; /* empty name */
            prev_sep = true;
            continue;
        }
        /* An RFC 7230 token character, lower-case. */
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || strchr("!#$%&'*+-.^_`|~", c)) ||
            c == 0)
            return false;
        prev_sep = false;
    }
    return !prev_sep;
}

int sigv4_parse_authorization(const char *header_value, sigv4_auth_t *out)
{
    if (!header_value)
        return -1;
    const char *p = header_value;
    while (*p == ' ')
        p++;
    size_t alen = strlen(SIGV4_ALGORITHM);
    if (strncmp(p, SIGV4_ALGORITHM, alen) != 0 || p[alen] != ' ')
        return -1;
    p += alen;

    sigv4_auth_t tmp;
    memset(&tmp, 0, sizeof(tmp));
    bool have_cred = false, have_sh = false, have_sig = false;
    char cred[512];

    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *eq = strchr(p, '=');
        if (!eq)
            return -1;
        const char *name = p;
        size_t name_len = (size_t)(eq - p);
        const char *v = eq + 1;
        const char *comma = strchr(v, ',');
        const char *vend = comma ? comma : v + strlen(v);
        while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
            vend--;
        size_t vlen = (size_t)(vend - v);

        if (name_len == 10 && memcmp(name, "Credential", 10) == 0) {
            if (have_cred || copy_field(cred, sizeof(cred), v, vlen) != 0)
                return -1;
            have_cred = true;
        } else if (name_len == 13 && memcmp(name, "SignedHeaders", 13) == 0) {
            if (have_sh || !valid_signed_headers(v, vlen) ||
                copy_field(tmp.signed_headers, sizeof(tmp.signed_headers), v, vlen) != 0)
                return -1;
            have_sh = true;
        } else if (name_len == 9 && memcmp(name, "Signature", 9) == 0) {
            if (have_sig || vlen != 64)
                return -1;
            for (size_t i = 0; i < 64; i++) {
                int d = hash_hex_digit_value(v[i]);
                if (d < 0)
                    return -1;
                tmp.signature[i] = "0123456789abcdef"[d];
            }
            tmp.signature[64] = '\0';
            have_sig = true;
        } else {
            return -1;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    if (!have_cred || !have_sh || !have_sig || sigv4_parse_credential(cred, &tmp) != 0)
        return -1;
    memcpy(out, &tmp, sizeof(tmp));
    return 0;
}
