/* Server-side encryption at rest: keys, stored forms and S3's answers
 * (sse.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/hash.h"
#include "s3/s3_request.h"
#include "s3/sse.h"

/* ---- master keys ---------------------------------------------------------------------- */

/* A keyring name: 1..S3_SSE_KMS_ID_MAX of [A-Za-z0-9._-]. */
static bool kms_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > S3_SSE_KMS_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
            return false;
    return true;
}

int s3_sse_keys_load(const char *path, bool named, s3_sse_keys_t *out, char *why, size_t cap)
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
            continue;
        }
        const char *hex = line;
        size_t name_len = 0;
        if (named) {
            name_len = strcspn(line, " ");
            hex = line[name_len] ? line + name_len + 1 : line + name_len;
            bool dup = false;
            for (size_t i = 0; i < out->n; i++)
                dup |= strlen(out->id[i]) == name_len && memcmp(out->id[i], line, name_len) == 0;
            if (!kms_name_ok(line, name_len) || dup) {
                snprintf(why, cap, "%s:%u: not a new key name of [A-Za-z0-9._-]", path, lineno);
                rc = -1;
                continue;
            }
        }
        if (strlen(hex) != 2 * AES256_KEY_LEN ||
            hash_hex_decode(hex, 2 * AES256_KEY_LEN, out->key[out->n], AES256_KEY_LEN) != 0) {
            snprintf(why, cap, "%s:%u: not a key of 64 hex digits", path, lineno);
            rc = -1;
        } else if (named) {
            memcpy(out->id[out->n], line, name_len);
            out->id[out->n][name_len] = '\0';
            out->n++;
        } else {
            uint8_t h[SHA256_LEN];
            hash_sha256(out->key[out->n], AES256_KEY_LEN, h);
            hash_hex_encode(h, S3_SSE_KEY_ID_LEN / 2, out->id[out->n]);
            out->n++;
        }
    }
    cipher_secure_zero(line, sizeof line);
    fclose(f);
    if (rc == 0 && out->n == 0) {
        snprintf(why, cap, "%s holds no key", path);
        rc = -1;
    }
    if (rc != 0)
        cipher_secure_zero(out, sizeof *out);
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
    bool secure = req->fe->secure && req->fe->secure(req);
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
    if (hash_base64_decode(key, strlen(key), ck->key, sizeof ck->key) != AES256_KEY_LEN) {
        cipher_secure_zero(ck->key, sizeof ck->key);
        *why_p = "The secret key was invalid for the specified algorithm.";
        return S3E_INVALID_ARGUMENT;
    }
    if (!md5) {
        cipher_secure_zero(ck->key, sizeof ck->key);
        *why_p = "Requests specifying Server Side Encryption with Customer provided keys must "
                 "provide the client calculated MD5 of the secret key.";
        return S3E_INVALID_ARGUMENT;
    }
    uint8_t want[MD5_LEN], got[MD5_LEN + 4];
    digest_t *d = hash_digest_md5_new();
    if (!d) {
        cipher_secure_zero(ck->key, sizeof ck->key);
        return S3E_INTERNAL;
    }
    hash_digest_update(d, ck->key, sizeof ck->key);
    hash_digest_final(d, want);
    if (hash_base64_decode(md5, strlen(md5), got, sizeof got) != MD5_LEN ||
        !hash_ct_equal(want, got, MD5_LEN)) {
        cipher_secure_zero(ck->key, sizeof ck->key);
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
    hash_hmac_sha256(ck->key, sizeof ck->key, msg, sizeof dk_label - 1 + SALT_LEN, dk);
    memcpy(msg, mac_label, sizeof mac_label - 1);
    memcpy(msg + sizeof mac_label - 1, salt, SALT_LEN);
    hash_hmac_sha256(ck->key, sizeof ck->key, msg, sizeof mac_label - 1 + SALT_LEN, mac);
}

/* ---- writes ----------------------------------------------------------------------------- */

static const char not_configured[] =
    "Server-side encryption with server-managed keys (SSE-S3) is not configured on this "
    "server: its operator sets sse.master_key_file.";
static const char kms_not_configured[] =
    "SSE-KMS needs a key provider, and this server has none: its operator sets "
    "sse.kms_keyring_file (a local keyring).";

/* The bucket's default encryption: 0 none, 1 AES256 (SSE-S3), 2 aws:kms
 * with its key name in kms_id ("" for the keyring's default key). */
static int bucket_default(s3_req_t *req, char kms_id[S3_SSE_KMS_ID_MAX + 1])
{
    kms_id[0] = '\0';
    if (!(req->authz_bucket.cfg_mask & (1u << STOR_BCFG_ENCRYPTION)))
        return 0;
    buf_t doc;
    uint64_t gen;
    int v = 0;
    if (stor_bucket_config_get(req->srv->cfg.store, &req->authz_bucket, STOR_BCFG_ENCRYPTION, &doc,
                               &gen) == STOR_OK &&
        doc.len >= 1 && doc.len <= 1 + S3_SSE_KMS_ID_MAX) {
        v = ((const uint8_t *)doc.data)[0];
        memcpy(kms_id, (const char *)doc.data + 1, doc.len - 1);
        kms_id[doc.len - 1] = '\0';
    }
    buf_free(&doc);
    return v;
}

const char *s3_sse_kms_key_name(const char *given)
{
    /* "arn:aws:kms:REGION:ACCOUNT:key/NAME" names NAME. */
    if (strncmp(given, "arn:", 4) == 0) {
        const char *slash = strrchr(given, '/');
        return slash ? slash + 1 : given;
    }
    return given;
}

/* Index of the key named name (NULL or "": the first) in keys, or -1. */
static int key_index(const s3_sse_keys_t *keys, const char *name)
{
    if (!keys || keys->n == 0)
        return -1;
    if (!name || !*name)
        return 0;
    for (size_t i = 0; i < keys->n; i++)
        if (strcmp(keys->id[i], name) == 0)
            return (int)i;
    return -1;
}

/* A fresh data key wrapped under keys' key k: its stored form
 * "<tag>:<id>:<wrapped hex>" into *stored_p. */
static s3_error_t wrap_new(const s3_sse_keys_t *keys, int k, const char *tag, char **stored_p,
                           s3_sse_key_t *dk)
{
    uint8_t wrapped[AES256_WRAPPED_LEN];
    if (hash_random_bytes(dk->key, sizeof dk->key) != 0 ||
        cipher_aes256_wrap(keys->key[k], dk->key, wrapped) != 0)
        return S3E_INTERNAL;
    char hex[2 * AES256_WRAPPED_LEN + 1];
    hash_hex_encode(wrapped, sizeof wrapped, hex);
    size_t cap = strlen(tag) + strlen(keys->id[k]) + sizeof hex + 2;
    char *s = malloc(cap);
    if (!s)
        return S3E_INTERNAL;
    snprintf(s, cap, "%s:%s:%s", tag, keys->id[k], hex);
    *stored_p = s;
    dk->on = true;
    return S3E_NONE;
}

/* SSE-KMS under the keyring key name (NULL or "": its default key). */
static s3_error_t kms_new(s3_req_t *req, const char *name, char **stored_p, s3_sse_key_t *dk,
                          const char **why_p)
{
    const s3_sse_keys_t *ring = req->srv->cfg.sse_kms_keys;
    if (!ring || ring->n == 0) {
        *why_p = kms_not_configured;
        return S3E_NOT_IMPLEMENTED;
    }
    int k = key_index(ring, name ? s3_sse_kms_key_name(name) : NULL);
    if (k < 0) {
        *why_p = "Invalid keyId: the key provider holds no key of that name.";
        return S3E_KMS_NOT_FOUND;
    }
    return wrap_new(ring, k, "K", stored_p, dk);
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
    const char *kms_key = s3_req_header(req, "x-amz-server-side-encryption-aws-kms-key-id");
    if (ck.given) {
        if (mode) {
            cipher_secure_zero(&ck, sizeof ck);
            *why_p = "Server Side Encryption with Customer provided key is incompatible with "
                     "the encryption method specified";
            return S3E_INVALID_ARGUMENT;
        }
        uint8_t salt[SALT_LEN], mac[SHA256_LEN];
        char *s = malloc(2 + 2 * SALT_LEN + 1 + 2 * SHA256_LEN + 1);
        if (!s || hash_random_bytes(salt, sizeof salt) != 0) {
            free(s);
            cipher_secure_zero(&ck, sizeof ck);
            return S3E_INTERNAL;
        }
        customer_derive(&ck, salt, dk->key, mac);
        cipher_secure_zero(&ck, sizeof ck);
        memcpy(s, "C:", 2);
        hash_hex_encode(salt, sizeof salt, s + 2);
        s[2 + 2 * SALT_LEN] = ':';
        hash_hex_encode(mac, sizeof mac, s + 3 + 2 * SALT_LEN);
        meta->sse = s;
        dk->on = true;
        return S3E_NONE;
    }
    if (kms_key && (!mode || strcmp(mode, "aws:kms") != 0)) {
        *why_p = "x-amz-server-side-encryption-aws-kms-key-id goes with "
                 "x-amz-server-side-encryption: aws:kms.";
        return S3E_INVALID_ARGUMENT;
    }
    if (mode && strcmp(mode, "aws:kms") == 0)
        return kms_new(req, kms_key, &meta->sse, dk, why_p);
    if (mode && strcmp(mode, "aws:kms:dsse") == 0) {
        *why_p = "Dual-layer SSE-KMS (aws:kms:dsse) is not implemented by s3rdmad.";
        return S3E_NOT_IMPLEMENTED;
    }
    if (mode && strcmp(mode, "AES256") != 0) {
        *why_p = "The encryption method specified is not supported";
        return S3E_INVALID_ARGUMENT;
    }
    char kms_id[S3_SSE_KMS_ID_MAX + 1];
    int dflt = mode ? 1 : bucket_default(req, kms_id);
    if (dflt == 2)
        return kms_new(req, kms_id, &meta->sse, dk, why_p);
    if (dflt != 1)
        return S3E_NONE;
    const s3_sse_keys_t *keys = req->srv->cfg.sse_keys;
    if (!keys || keys->n == 0) {
        *why_p = not_configured;
        return S3E_NOT_IMPLEMENTED;
    }
    return wrap_new(keys, 0, "S3", &meta->sse, dk);
}

/* ---- reads ------------------------------------------------------------------------------ */

/* The data key of a stored "<tag>:<id>:<wrapped hex>", unwrapped by the key
 * of that id in keys. */
static s3_error_t unwrap_stored(const s3_sse_keys_t *keys, const char *s, s3_sse_key_t *dk,
                                const char **why_p)
{
    const char *a = strchr(s, ':'), *b = a ? strrchr(s, ':') : NULL;
    uint8_t wrapped[AES256_WRAPPED_LEN];
    if (!a || b == a || strlen(b + 1) != 2 * AES256_WRAPPED_LEN ||
        (size_t)(b - a - 1) > S3_SSE_KMS_ID_MAX ||
        hash_hex_decode(b + 1, 2 * AES256_WRAPPED_LEN, wrapped, sizeof wrapped) != 0)
        return S3E_INTERNAL;
    char id[S3_SSE_KMS_ID_MAX + 1];
    memcpy(id, a + 1, (size_t)(b - a - 1));
    id[b - a - 1] = '\0';
    int k = key_index(keys, id);
    if (k < 0) {
        *why_p = "The object is encrypted under a key this server does not hold "
                 "(sse.master_key_file, sse.kms_keyring_file).";
        return S3E_INTERNAL;
    }
    if (cipher_aes256_unwrap(keys->key[k], wrapped, dk->key) != 0)
        return S3E_INTERNAL;
    dk->on = true;
    return S3E_NONE;
}

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
        cipher_secure_zero(&ck, sizeof ck);
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
            hash_hex_decode(s + 2, 2 * SALT_LEN, salt, SALT_LEN) != 0 ||
            hash_hex_decode(s + 3 + 2 * SALT_LEN, 2 * SHA256_LEN, stored_mac, SHA256_LEN) != 0) {
            cipher_secure_zero(&ck, sizeof ck);
            return S3E_INTERNAL;
        }
        customer_derive(&ck, salt, dk->key, mac);
        cipher_secure_zero(&ck, sizeof ck);
        if (!hash_ct_equal(mac, stored_mac, SHA256_LEN)) {
            cipher_secure_zero(dk, sizeof *dk);
            return S3E_ACCESS_DENIED;
        }
        dk->on = true;
        return S3E_NONE;
    }
    if (strncmp(s, "S3:", 3) == 0)
        return unwrap_stored(req->srv->cfg.sse_keys, s, dk, why_p);
    if (strncmp(s, "K:", 2) == 0)
        return unwrap_stored(req->srv->cfg.sse_kms_keys, s, dk, why_p);
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
    cipher_secure_zero(dk, sizeof *dk);
}

void s3_sse_apply_reader(s3_sse_key_t *dk, stor_reader_t *r)
{
    if (dk->on && r)
        stor_reader_set_part_cipher(r, dk->key);
    cipher_secure_zero(dk, sizeof *dk);
}

void s3_sse_reply_headers(s3_req_t *req, const stor_meta_t *meta)
{
    if (!meta->sse)
        return;
    if (strncmp(meta->sse, "K:", 2) == 0) {
        const char *id = meta->sse + 2;
        const char *end = strchr(id, ':');
        char name[S3_SSE_KMS_ID_MAX + 1];
        size_t n = end && (size_t)(end - id) <= S3_SSE_KMS_ID_MAX ? (size_t)(end - id) : 0;
        memcpy(name, id, n);
        name[n] = '\0';
        s3_reply_header(req, "x-amz-server-side-encryption", "aws:kms");
        s3_reply_header(req, "x-amz-server-side-encryption-aws-kms-key-id", name);
        return;
    }
    if (strncmp(meta->sse, "C:", 2) != 0) {
        s3_reply_header(req, "x-amz-server-side-encryption", "AES256");
        return;
    }
    s3_reply_header(req, "x-amz-server-side-encryption-customer-algorithm", "AES256");
    const char *md5 = s3_req_header(req, "x-amz-server-side-encryption-customer-key-MD5");
    if (md5)
        s3_reply_header(req, "x-amz-server-side-encryption-customer-key-MD5", md5);
}
