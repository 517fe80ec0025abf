/* Server-side encryption at rest: keys, stored forms and S3's answers
 * (sse.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "s3/s3_request.h"
#include "s3/sse.h"

/* ---- master keys ---------------------------------------------------------------------- */

int s3_sse_keys_load(const char *path, s3_sse_keys_t *out, char *why, size_t cap)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, cap, "cannot open %s", path);
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || (sb.st_mode & 077)) {
        fclose(f);
        snprintf(why, cap, "%s is readable by group or others (chmod 600 it)", path);
        return -1;
    }
    char line[256];
    int rc = 0;
    unsigned lineno = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        size_t n = strcspn(line, "\r\n");
        line[n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        if (out->n == S3_SSE_MAX_MASTER_KEYS) {
            snprintf(why, cap, "%s: more than %d keys", path, S3_SSE_MAX_MASTER_KEYS);
            rc = -1;
        } else if (n != 2 * AES256_KEY_LEN ||
                   hex_decode(line, n, out->key[out->n], AES256_KEY_LEN) != 0) {
            snprintf(why, cap, "%s:%u: not a key of 64 hex digits", path, lineno);
            rc = -1;
        } else {
            uint8_t h[SHA256_LEN];
            sha256(out->key[out->n], AES256_KEY_LEN, h);
            hex_encode(h, S3_SSE_KEY_ID_LEN / 2, out->id[out->n]);
            out->n++;
        }
    }
    secure_zero(line, sizeof line);
    fclose(f);
    if (rc == 0 && out->n == 0) {
        snprintf(why, cap, "%s holds no key", path);
        rc = -1;
    }
    if (rc != 0)
        secure_zero(out, sizeof *out);
    return rc;
}

/* ---- the request's SSE-C headers ------------------------------------------------------- */

#define SALT_LEN 16

/* A customer key the request gives, checked as S3 does. */
typedef struct customer_key {
    uint8_t key[AES256_KEY_LEN];
    bool given; /* any of the three headers was sent */
} customer_key_t;

/* Reads the customer key headers (prefix "x-amz-" or
 * "x-amz-copy-source-"): S3E_NONE with ck->given false when none is sent. */
static s3_error_t customer_key(s3_req_t *req, const char *prefix, customer_key_t *ck,
                               const char **why_p)
{
    char name[96];
    snprintf(name, sizeof name, "%sserver-side-encryption-customer-algorithm", prefix);
    const char *alg = s3_req_header(req, name);
    snprintf(name, sizeof name, "%sserver-side-encryption-customer-key", prefix);
    const char *key = s3_req_header(req, name);
    snprintf(name, sizeof name, "%sserver-side-encryption-customer-key-MD5", prefix);
    const char *md5 = s3_req_header(req, name);
    memset(ck, 0, sizeof *ck);
    if (!alg && !key && !md5)
        return S3E_NONE;
    ck->given = true;
    bool secure =
        s3_req_transport(req) == S3_TRANSPORT_HTTP && req->fe->secure && req->fe->secure(req);
    if (!secure && !req->srv->cfg.sse_c_plain) {
        *why_p = "Requests specifying Server Side Encryption with Customer provided keys must "
                 "be made over a secure connection.";
        return S3E_INVALID_REQUEST;
    }
    if (!alg) {
        *why_p = "Requests specifying Server Side Encryption with Customer provided keys must "
                 "provide a valid encryption algorithm.";
        return S3E_INVALID_ARGUMENT;
    }
    if (strcmp(alg, "AES256") != 0)
        return S3E_INVALID_ENCRYPTION_ALGORITHM;
    if (!key) {
        *why_p = "Requests specifying Server Side Encryption with Customer provided keys must "
                 "provide an appropriate secret key.";
        return S3E_INVALID_ARGUMENT;
    }
    if (base64_decode(key, strlen(key), ck->key, sizeof ck->key) != AES256_KEY_LEN) {
        secure_zero(ck->key, sizeof ck->key);
        *why_p = "The secret key was invalid for the specified algorithm.";
        return S3E_INVALID_ARGUMENT;
    }
    if (!md5) {
        secure_zero(ck->key, sizeof ck->key);
        *why_p = "Requests specifying Server Side Encryption with Customer provided keys must "
                 "provide the client calculated MD5 of the secret key.";
        return S3E_INVALID_ARGUMENT;
    }
    uint8_t want[MD5_LEN], got[MD5_LEN + 4];
    digest_t *d = digest_md5_new();
    if (!d) {
        secure_zero(ck->key, sizeof ck->key);
        return S3E_INTERNAL;
    }
    digest_update(d, ck->key, sizeof ck->key);
    digest_final(d, want);
    if (base64_decode(md5, strlen(md5), got, sizeof got) != MD5_LEN ||
        !ct_equal(want, got, MD5_LEN)) {
        secure_zero(ck->key, sizeof ck->key);
        *why_p = "The calculated MD5 hash of the key did not match the hash that was provided.";
        return S3E_INVALID_ARGUMENT;
    }
    return S3E_NONE;
}

/* The data key and the check value of customer key ck with salt. */
static void customer_derive(const customer_key_t *ck, const uint8_t salt[SALT_LEN],
                            uint8_t dk[AES256_KEY_LEN], uint8_t mac[SHA256_LEN])
{
    static const char dk_label[] = "s3rdma-sse-c-key", mac_label[] = "s3rdma-sse-c-check";
    uint8_t msg[sizeof mac_label + SALT_LEN];
    memcpy(msg, dk_label, sizeof dk_label - 1);
    memcpy(msg + sizeof dk_label - 1, salt, SALT_LEN);
    hmac_sha256(ck->key, sizeof ck->key, msg, sizeof dk_label - 1 + SALT_LEN, dk);
    memcpy(msg, mac_label, sizeof mac_label - 1);
    memcpy(msg + sizeof mac_label - 1, salt, SALT_LEN);
    hmac_sha256(ck->key, sizeof ck->key, msg, sizeof mac_label - 1 + SALT_LEN, mac);
}

/* ---- writes ----------------------------------------------------------------------------- */

static const char not_configured[] =
    "Server-side encryption with server-managed keys (SSE-S3) is not configured on this "
    "server: its operator sets sse.master_key_file.";
static const char kms_refused[] = "SSE-KMS is not implemented by s3rdmad: no key provider.";

/* The bucket's default encryption (1: AES256), or 0. */
static int bucket_default(s3_req_t *req)
{
    if (!(req->authz_bucket.cfg_mask & (1u << STOR_BCFG_ENCRYPTION)))
        return 0;
    buf_t doc;
    uint64_t gen;
    int v = 0;
    if (stor_bucket_config_get(req->srv->cfg.store, &req->authz_bucket, STOR_BCFG_ENCRYPTION, &doc,
                               &gen) == STOR_OK &&
        doc.len == 1)
        v = ((const uint8_t *)doc.data)[0];
    buf_free(&doc);
    return v;
}

/* SSE-S3 under the first master key: a fresh data key, its stored form. */
static s3_error_t managed_new(s3_req_t *req, char **stored_p, s3_sse_key_t *dk, const char **why_p)
{
    const s3_sse_keys_t *keys = req->srv->cfg.sse_keys;
    if (!keys || keys->n == 0) {
        *why_p = not_configured;
        return S3E_NOT_IMPLEMENTED;
    }
    uint8_t wrapped[AES256_WRAPPED_LEN];
    if (random_bytes(dk->key, sizeof dk->key) != 0 ||
        aes256_wrap(keys->key[0], dk->key, wrapped) != 0)
        return S3E_INTERNAL;
    char hex[2 * AES256_WRAPPED_LEN + 1];
    hex_encode(wrapped, sizeof wrapped, hex);
    char *s = malloc(4 + S3_SSE_KEY_ID_LEN + sizeof hex);
    if (!s)
        return S3E_INTERNAL;
    sprintf(s, "S3:%s:%s", keys->id[0], hex);
    *stored_p = s;
    dk->on = true;
    return S3E_NONE;
}

s3_error_t s3_sse_for_write(s3_req_t *req, stor_meta_t *meta, s3_sse_key_t *dk, const char **why_p)
{
    memset(dk, 0, sizeof *dk);
    free(meta->sse);
    meta->sse = NULL;
    customer_key_t ck;
    s3_error_t err = customer_key(req, "x-amz-", &ck, why_p);
    if (err != S3E_NONE)
        return err;
    const char *mode = s3_req_header(req, "x-amz-server-side-encryption");
    if (ck.given) {
        if (mode) {
            secure_zero(&ck, sizeof ck);
            *why_p = "Server Side Encryption with Customer provided key is incompatible with "
                     "the encryption method specified";
            return S3E_INVALID_ARGUMENT;
        }
        uint8_t salt[SALT_LEN], mac[SHA256_LEN];
        char *s = malloc(2 + 2 * SALT_LEN + 1 + 2 * SHA256_LEN + 1);
        if (!s || random_bytes(salt, sizeof salt) != 0) {
            free(s);
            secure_zero(&ck, sizeof ck);
            return S3E_INTERNAL;
        }
        customer_derive(&ck, salt, dk->key, mac);
        secure_zero(&ck, sizeof ck);
        memcpy(s, "C:", 2);
        hex_encode(salt, sizeof salt, s + 2);
        s[2 + 2 * SALT_LEN] = ':';
        hex_encode(mac, sizeof mac, s + 3 + 2 * SALT_LEN);
        meta->sse = s;
        dk->on = true;
        return S3E_NONE;
    }
    if (mode && (strcmp(mode, "aws:kms") == 0 || strcmp(mode, "aws:kms:dsse") == 0)) {
        *why_p = kms_refused;
        return S3E_NOT_IMPLEMENTED;
    }
    if (mode && strcmp(mode, "AES256") != 0) {
        *why_p = "The encryption method specified is not supported";
        return S3E_INVALID_ARGUMENT;
    }
    if (!mode && bucket_default(req) == 0)
        return S3E_NONE;
    return managed_new(req, &meta->sse, dk, why_p);
}

/* ---- reads ------------------------------------------------------------------------------ */

s3_error_t s3_sse_for_read(s3_req_t *req, const stor_meta_t *meta, bool copy_source,
                           s3_sse_key_t *dk, const char **why_p)
{
    memset(dk, 0, sizeof *dk);
    customer_key_t ck;
    s3_error_t err = customer_key(req, copy_source ? "x-amz-copy-source-" : "x-amz-", &ck, why_p);
    if (err != S3E_NONE)
        return err;
    const char *s = meta->sse;
    bool customer = s && strncmp(s, "C:", 2) == 0;
    if (ck.given != customer) {
        secure_zero(&ck, sizeof ck);
        *why_p = ck.given ? "The encryption parameters are not applicable to this object."
                          : "The object was stored using a form of Server Side Encryption. The "
                            "correct parameters must be provided to retrieve the object.";
        return S3E_INVALID_REQUEST;
    }
    if (!s)
        return S3E_NONE;
    if (customer) {
        uint8_t salt[SALT_LEN], stored_mac[SHA256_LEN], mac[SHA256_LEN];
        if (strlen(s) != 3 + 2 * SALT_LEN + 2 * SHA256_LEN || s[2 + 2 * SALT_LEN] != ':' ||
            hex_decode(s + 2, 2 * SALT_LEN, salt, SALT_LEN) != 0 ||
            hex_decode(s + 3 + 2 * SALT_LEN, 2 * SHA256_LEN, stored_mac, SHA256_LEN) != 0) {
            secure_zero(&ck, sizeof ck);
            return S3E_INTERNAL;
        }
        customer_derive(&ck, salt, dk->key, mac);
        secure_zero(&ck, sizeof ck);
        if (!ct_equal(mac, stored_mac, SHA256_LEN)) {
            secure_zero(dk, sizeof *dk);
            return S3E_ACCESS_DENIED;
        }
        dk->on = true;
        return S3E_NONE;
    }
    /* SSE-S3: the master key by id, then the data key. */
    const s3_sse_keys_t *keys = req->srv->cfg.sse_keys;
    uint8_t wrapped[AES256_WRAPPED_LEN];
    if (strncmp(s, "S3:", 3) != 0 || strlen(s) != 4 + S3_SSE_KEY_ID_LEN + 2 * AES256_WRAPPED_LEN ||
        s[3 + S3_SSE_KEY_ID_LEN] != ':' ||
        hex_decode(s + 4 + S3_SSE_KEY_ID_LEN, 2 * AES256_WRAPPED_LEN, wrapped, sizeof wrapped) != 0)
        return S3E_INTERNAL;
    for (size_t i = 0; keys && i < keys->n; i++) {
        if (memcmp(keys->id[i], s + 3, S3_SSE_KEY_ID_LEN) != 0)
            continue;
        if (aes256_unwrap(keys->key[i], wrapped, dk->key) != 0)
            return S3E_INTERNAL;
        dk->on = true;
        return S3E_NONE;
    }
    *why_p = "The object is encrypted under a master key this server does not hold "
             "(sse.master_key_file).";
    return S3E_INTERNAL;
}

static const uint8_t zero_iv[AES_BLOCK_LEN];

void s3_sse_apply_writer(s3_sse_key_t *dk, stor_writer_t *w)
{
    uint8_t iv[AES_BLOCK_LEN];
    if (dk->part)
        stor_part_iv(dk->part, iv);
    else
        memcpy(iv, zero_iv, sizeof iv);
    if (dk->on && w)
        stor_writer_set_cipher(w, dk->key, iv);
    secure_zero(dk, sizeof *dk);
}

void s3_sse_apply_reader(s3_sse_key_t *dk, stor_reader_t *r)
{
    if (dk->on && r)
        stor_reader_set_part_cipher(r, dk->key);
    secure_zero(dk, sizeof *dk);
}

void s3_sse_reply_headers(s3_req_t *req, const stor_meta_t *meta)
{
    if (!meta->sse)
        return;
    if (strncmp(meta->sse, "C:", 2) != 0) {
        s3_reply_header(req, "x-amz-server-side-encryption", "AES256");
        return;
    }
    s3_reply_header(req, "x-amz-server-side-encryption-customer-algorithm", "AES256");
    const char *md5 = s3_req_header(req, "x-amz-server-side-encryption-customer-key-MD5");
    if (md5)
        s3_reply_header(req, "x-amz-server-side-encryption-customer-key-MD5", md5);
}
