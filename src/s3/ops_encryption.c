/* Bucket default encryption (sse.c does the encrypting):
 * Get/Put/DeleteBucketEncryption. */

#include <string.h>

#include "s3/s3_request.h"
#include "s3/sse.h"
#include "s3/xml_in.h"

/* The document: one byte, 1 (AES256) or 2 (aws:kms, then the keyring key's
 * name, none for the default key). */
static void get_encryption_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_OWNER, &req->authz_bucket))
        return;
    buf_t doc;
    if (!s3_config_read(req, STOR_BCFG_ENCRYPTION, &doc))
        return;
    int v = doc.len >= 1 ? ((const uint8_t *)doc.data)[0] : 0;
    if (v != 1 && v != 2) {
        buf_free(&doc);
        s3_reply_error(req, S3E_NO_SSE_CONFIG, NULL);
        return;
    }
    char kms_id[S3_SSE_KMS_ID_MAX + 1] = "";
    if (v == 2 && doc.len - 1 <= S3_SSE_KMS_ID_MAX) {
        memcpy(kms_id, (const char *)doc.data + 1, doc.len - 1);
        kms_id[doc.len - 1] = '\0';
    }
    buf_free(&doc);
    buf_t xml;
    buf_init(&xml, 4096);
    s3_xml_open(&xml, "ServerSideEncryptionConfiguration");
    buf_append_str(&xml, "<Rule><ApplyServerSideEncryptionByDefault>");
    s3_xml_elem(&xml, "SSEAlgorithm", v == 2 ? "aws:kms" : "AES256");
    if (kms_id[0])
        s3_xml_elem(&xml, "KMSMasterKeyID", kms_id);
    buf_append_str(&xml, "</ApplyServerSideEncryptionByDefault>");
    s3_xml_elem(&xml, "BucketKeyEnabled", "false");
    buf_append_str(&xml, "</Rule></ServerSideEncryptionConfiguration>");
    s3_reply_xml(req, 200, &xml);
}

/* One rule whose default is AES256 (SSE-S3) or aws:kms (with or without a
 * KMSMasterKeyID of the keyring); refused when this server could not honour
 * it on a write (no master keys, no keyring, no such key). */
static void put_encryption_finish(s3_req_t *req)
{
    static const char *const fields[] = {"ApplyServerSideEncryptionByDefault/SSEAlgorithm",
                                         "ApplyServerSideEncryptionByDefault/KMSMasterKeyID"};
    xml_list_entry_t *e;
    size_t n, n_items;
    if (s3_xml_parse_list(req->body.data ? req->body.data : "", req->body.len,
                          "ServerSideEncryptionConfiguration", "Rule", fields, 2, 8, &e, &n,
                          &n_items) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    const char *alg = NULL, *kid = NULL;
    bool ok = n_items == 1;
    for (size_t i = 0; i < n && ok; i++) {
        const char **slot = e[i].field == 0 ? &alg : &kid;
        ok = !*slot;
        *slot = e[i].value;
    }
    const s3_sse_keys_t *ring = req->srv->cfg.sse_kms_keys;
    if (ok && alg && strcmp(alg, "aws:kms") == 0) {
        uint8_t doc[1 + S3_SSE_KMS_ID_MAX] = {2};
        const char *name = kid ? s3_sse_kms_key_name(kid) : "";
        bool known = false;
        for (size_t i = 0; ring && i < ring->n; i++)
            known |= !*name || strcmp(ring->id[i], name) == 0;
        if (!ring || ring->n == 0)
            s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                           "SSE-KMS needs a key provider, and this server has none: its operator "
                           "sets sse.kms_keyring_file (a local keyring).");
        else if (!known || strlen(name) > S3_SSE_KMS_ID_MAX)
            s3_reply_error(req, S3E_KMS_NOT_FOUND, NULL);
        else {
            memcpy(doc + 1, name, strlen(name));
            s3_config_write(req, STOR_BCFG_ENCRYPTION, doc, 1 + strlen(name), 200);
        }
        s3_xml_list_free(e, n);
        return;
    }
    uint8_t byte = 1;
    if (!ok || !alg || kid)
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
    else if (strcmp(alg, "aws:kms:dsse") == 0)
        s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                       "Dual-layer SSE-KMS (aws:kms:dsse) is not implemented by s3rdmad.");
    else if (strcmp(alg, "AES256") != 0)
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
    else if (!req->srv->cfg.sse_keys || req->srv->cfg.sse_keys->n == 0)
        s3_reply_error(req, S3E_NOT_IMPLEMENTED,
                       "Server-side encryption with server-managed keys (SSE-S3) is not "
                       "configured on this server: its operator sets sse.master_key_file.");
    else
        s3_config_write(req, STOR_BCFG_ENCRYPTION, &byte, 1, 200);
    s3_xml_list_free(e, n);
}

static void delete_encryption_begin(s3_req_t *req)
{
    s3_config_delete(req, STOR_BCFG_ENCRYPTION);
}

const s3_op_t s3_op_get_bucket_encryption = {"GetBucketEncryption", get_encryption_begin, NULL};
const s3_op_t s3_op_put_bucket_encryption = {"PutBucketEncryption", s3_owner_config_begin,
                                             put_encryption_finish};
const s3_op_t s3_op_delete_bucket_encryption = {"DeleteBucketEncryption", delete_encryption_begin,
                                                NULL};
