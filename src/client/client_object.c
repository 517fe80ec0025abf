/* libs3rdma: object operations that move no object data: HEAD (object info
 * from the response headers), DELETE, DeleteObjects and server-side COPY,
 * each of the current version or of one named. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "common/date.h"
#include "common/hash.h"
#include "common/sigv4.h"

/* ======================================================================== */
/* HEAD                                                                      */
/* ======================================================================== */

/* The response headers s3r_object_info_t keeps as they are sent: each
 * with the string field it lands in. */
static const struct {
    const char *header; /* lower case, as the response's headers are kept */
    size_t offset;
} info_headers[] = {
    {"etag", offsetof(s3r_object_info_t, etag)},
    {"content-type", offsetof(s3r_object_info_t, content_type)},
    {"x-amz-version-id", offsetof(s3r_object_info_t, version_id)},
    {"x-amz-storage-class", offsetof(s3r_object_info_t, storage_class)},
    {"content-encoding", offsetof(s3r_object_info_t, content_encoding)},
    {"content-disposition", offsetof(s3r_object_info_t, content_disposition)},
    {"content-language", offsetof(s3r_object_info_t, content_language)},
    {"cache-control", offsetof(s3r_object_info_t, cache_control)},
    {"expires", offsetof(s3r_object_info_t, expires)},
    {"x-amz-server-side-encryption", offsetof(s3r_object_info_t, server_side_encryption)},
    {"x-amz-checksum-crc32", offsetof(s3r_object_info_t, checksum_crc32)},
    {"x-amz-checksum-crc32c", offsetof(s3r_object_info_t, checksum_crc32c)},
    {"x-amz-checksum-crc64nvme", offsetof(s3r_object_info_t, checksum_crc64nvme)},
    {"x-amz-checksum-sha1", offsetof(s3r_object_info_t, checksum_sha1)},
    {"x-amz-checksum-sha256", offsetof(s3r_object_info_t, checksum_sha256)},
    {"x-amz-checksum-type", offsetof(s3r_object_info_t, checksum_type)},
    {"x-amz-object-lock-mode", offsetof(s3r_object_info_t, object_lock_mode)},
    {"x-amz-object-lock-retain-until-date", offsetof(s3r_object_info_t, object_lock_retain_until)},
    {"x-amz-object-lock-legal-hold", offsetof(s3r_object_info_t, object_lock_legal_hold)},
    {"x-amz-expiration", offsetof(s3r_object_info_t, expiration)},
};
#define N_INFO_HEADERS (sizeof(info_headers) / sizeof(info_headers[0]))

static char **info_slot(s3r_object_info_t *info, size_t i)
{
    return (char **)((char *)info + info_headers[i].offset);
}

void s3r_object_info_free(s3r_object_info_t *info)
{
    if (info == NULL)
        return;
    for (size_t i = 0; i < N_INFO_HEADERS; i++)
        free(*info_slot(info, i));
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
    for (size_t i = 0; i < N_INFO_HEADERS; i++)
        if (s3c_resp_header(resp, info_headers[i].header, v, sizeof(v)) == 0 &&
            (*info_slot(info, i) = strdup(v)) == NULL)
            return -1;
    if (s3c_resp_header(resp, "last-modified", v, sizeof(v)) == 0) {
        int64_t t = date_parse_http(v);
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

/* A HEAD's 404 carries no body, so it cannot say whether the bucket, the
 * key or the version asked for is missing (over HTTP and native alike); a
 * HEAD of the bucket tells. Records the error as a GET's <Error> would name
 * it and returns it. */
static s3r_status_t head_not_found(s3r_client_t *c, const char *bucket, const char *version_id,
                                   s3r_transport_t t)
{
    s3c_req_t req;
    s3c_req_init(&req, "HEAD", bucket, NULL);
    req.native_op = RDMA_OP_HEAD_BUCKET;
    if (s3c_simple(c, &req, false) == S3R_ERR_NO_SUCH_BUCKET)
        return s3c_fail(c, S3R_ERR_NO_SUCH_BUCKET, t, 404, "NoSuchBucket",
                        "The specified bucket does not exist.");
    if (version_id)
        return s3c_fail(c, S3R_ERR_NO_SUCH_KEY, t, 404, "NoSuchVersion",
                        "The specified version does not exist.");
    return s3c_fail(c, S3R_ERR_NO_SUCH_KEY, t, 404, "NoSuchKey",
                    "The specified key does not exist.");
}

s3r_status_t s3c_head_object(s3r_client_t *c, const char *bucket, const char *key,
                             const char *version_id, s3r_object_info_t **info_p)
{
    s3c_req_t req;
    s3c_resp_t resp;
    strs_t ss = {0};
    s3c_req_init(&req, "HEAD", bucket, key);
    req.native_op = RDMA_OP_HEAD_OBJECT;
    s3c_req_hdr(&req, "x-amz-checksum-mode", "ENABLED"); /* the info's checksums */
    s3c_resp_init(&resp);
    s3r_status_t st = s3c_version_query(c, &req, &ss, version_id);
    if (st == S3R_OK)
        st = s3c_do(c, s3c_pick_control_transport(c), &req, &resp);
    if (st == S3R_OK && resp.status == 404 && resp.err_body.len == 0)
        st = head_not_found(c, bucket, version_id, resp.transport);
    else if (st == S3R_OK && resp.status == 403 && resp.err_body.len == 0)
        /* S3's 403 to a HEAD, bodiless: named as a GET's <Error> would be. */
        st = s3c_fail(c, S3R_ERR_ACCESS_DENIED, resp.transport, 403, "AccessDenied",
                      "Access Denied. (a HEAD's answer has no body: no permission, or keys "
                      "the server refused)");
    else if (st == S3R_OK && resp.status == 405 && resp.err_body.len == 0)
        /* S3's answer to a HEAD of a delete marker by its id. */
        st = s3c_fail(c, S3R_ERR_SERVER, resp.transport, 405, "MethodNotAllowed",
                      "The specified method is not allowed against a delete marker.");
    else if (st == S3R_OK && (resp.status < 200 || resp.status > 299))
        st = s3c_http_error(c, &resp, resp.transport, true);
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
    s3c_strs_free(&ss);
    return st;
}

s3r_status_t s3r_object_head(s3r_client_t *c, const char *bucket, const char *key,
                             s3r_object_info_t **info_p)
{
    return s3r_object_head_version(c, bucket, key, NULL, info_p);
}

s3r_status_t s3r_object_head_version(s3r_client_t *c, const char *bucket, const char *key,
                                     const char *version_id, s3r_object_info_t **info_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || info_p == NULL ||
        (version_id && !version_id[0]))
        return S3R_ERR_INVALID_ARG;
    return s3c_done(c, s3c_head_object(c, bucket, key, version_id, info_p));
}

/* ======================================================================== */
/* DELETE, COPY                                                              */
/* ======================================================================== */

s3r_status_t s3r_object_delete(s3r_client_t *c, const char *bucket, const char *key)
{
    return s3r_object_delete_version(c, bucket, key, NULL);
}

s3r_status_t s3r_object_delete_version(s3r_client_t *c, const char *bucket, const char *key,
                                       const char *version_id)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) ||
        (version_id && !version_id[0]))
        return S3R_ERR_INVALID_ARG;
    s3c_req_t req;
    strs_t ss = {0};
    s3c_req_init(&req, "DELETE", bucket, key);
    req.native_op = RDMA_OP_DELETE_OBJECT;
    s3r_status_t st = s3c_version_query(c, &req, &ss, version_id);
    if (st == S3R_OK)
        st = s3c_simple_write(c, &req, true);
    s3c_strs_free(&ss);
    return s3c_done(c, st);
}

#define DELETE_BATCH_KEYS 1000 /* S3's limit per DeleteObjects request */

/* Whether key can travel in an XML 1.0 document as it is: no control
 * character (XML 1.0 forbids most, and a parser turns \r into \n). */
static bool xml_safe_key(const char *key)
{
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

/* Adds key with the calling thread's last error on c to *errs. */
static s3r_status_t errors_add_last(s3r_client_t *c, s3r_delete_errors_t **errs, const char *key)
{
    s3r_error_info_t info = {0};
    (void)s3r_client_last_error(c, &info);
    if (*errs == NULL && (*errs = calloc(1, sizeof(**errs))) == NULL)
        return S3R_ERR_NOMEM;
    s3r_delete_errors_t *e = *errs;
    void *p = realloc(e->errors, (e->n_errors + 1) * sizeof(*e->errors));
    if (p == NULL)
        return S3R_ERR_NOMEM;
    e->errors = p;
    s3r_delete_error_t *x = &e->errors[e->n_errors++];
    x->key = strdup(key);
    x->code = strdup(info.code[0] ? info.code : s3r_status_name(info.status));
    x->message = strdup(info.message);
    return x->key && x->code && x->message ? S3R_OK : S3R_ERR_NOMEM;
}

/* One DeleteObjects request (quiet) for the n XML-safe keys; the keys that
 * failed are added to *errs. */
static s3r_status_t delete_batch(s3r_client_t *c, const char *bucket, const char *const *keys,
                                 size_t n, s3r_delete_errors_t **errs)
{
    buf_t xml, reply;
    buf_init(&xml, 8 * 1024 * 1024); /* 1000 keys of 1,024 bytes, escaped */
    buf_init(&reply, S3C_MAX_XML_BODY);
    int bad = buf_append_str(&xml, "<Delete><Quiet>true</Quiet>") < 0;
    for (size_t i = 0; i < n && !bad; i++)
        bad = buf_append_str(&xml, "<Object><Key>") < 0 || buf_append_xml(&xml, keys[i]) < 0 ||
              buf_append_str(&xml, "</Key></Object>") < 0;
    bad = bad || buf_append_str(&xml, "</Delete>") < 0;
    s3r_status_t st = S3R_OK;
    if (bad) {
        st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
    } else {
        /* S3 wants the body's integrity on DeleteObjects: Content-MD5. */
        uint8_t md5[16];
        char md5_b64[32];
        digest_t *d = hash_digest_md5_new();
        if (d == NULL) {
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
        } else {
            hash_digest_update(d, xml.data, xml.len);
            hash_digest_final(d, md5); /* frees d */
            md5_b64[hash_base64_encode(md5, sizeof(md5), md5_b64)] = '\0';
            s3c_req_t req;
            s3c_req_init(&req, "POST", bucket, NULL);
            req.native_op = RDMA_OP_DELETE_OBJECTS;
            req.query = "delete";
            req.body = xml.data;
            req.body_len = xml.len;
            s3c_req_hdr(&req, "content-md5", md5_b64);
            s3c_req_hdr(&req, "content-type", "application/xml");
            st = s3c_get_xml(c, &req, &reply);
        }
    }
    if (st == S3R_OK && s3c_xml_parse_delete_result(reply.data, reply.len, errs) < 0)
        st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "", "malformed DeleteResult");
    buf_free(&xml);
    buf_free(&reply);
    return st;
}

s3r_status_t s3r_object_delete_many(s3r_client_t *c, const char *bucket, const char *const *keys,
                                    size_t n_keys, s3r_delete_errors_t **errors_p)
{
    if (errors_p)
        *errors_p = NULL;
    if (c == NULL || !s3c_valid_name(bucket) || (n_keys > 0 && keys == NULL))
        return S3R_ERR_INVALID_ARG;
    for (size_t i = 0; i < n_keys; i++)
        if (!s3c_valid_name(keys[i]))
            return S3R_ERR_INVALID_ARG;
    const char **batch = malloc(DELETE_BATCH_KEYS * sizeof(*batch));
    if (batch == NULL)
        return s3c_done(c, s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory"));
    s3r_delete_errors_t *errs = NULL;
    s3r_status_t st = S3R_OK;
    size_t n = 0;
    for (size_t i = 0; i <= n_keys && st == S3R_OK; i++) {
        if (i < n_keys && !xml_safe_key(keys[i])) {
            if (s3r_object_delete(c, bucket, keys[i]) != S3R_OK)
                st = errors_add_last(c, &errs, keys[i]);
            continue;
        }
        if (i < n_keys)
            batch[n++] = keys[i];
        if (n == DELETE_BATCH_KEYS || (i == n_keys && n > 0)) {
            st = delete_batch(c, bucket, batch, n, &errs);
            n = 0;
        }
    }
    free(batch);
    if (st == S3R_OK && errs && errs->n_errors == 0) {
        s3r_delete_errors_free(errs);
        errs = NULL;
    }
    if (st == S3R_OK && errors_p)
        *errors_p = errs;
    else
        s3r_delete_errors_free(errs);
    return s3c_done(c, st);
}

s3r_status_t s3r_object_copy(s3r_client_t *c, const char *src_bucket, const char *src_key,
                             const char *dst_bucket, const char *dst_key)
{
    return s3r_object_copy_version(c, src_bucket, src_key, NULL, dst_bucket, dst_key);
}

s3r_status_t s3r_object_copy_version(s3r_client_t *c, const char *src_bucket, const char *src_key,
                                     const char *src_version_id, const char *dst_bucket,
                                     const char *dst_key)
{
    if (c == NULL || !s3c_valid_name(src_bucket) || !s3c_valid_name(src_key) ||
        !s3c_valid_name(dst_bucket) || !s3c_valid_name(dst_key) ||
        (src_version_id && !src_version_id[0]))
        return S3R_ERR_INVALID_ARG;
    buf_t src, body;
    buf_init(&src, 8192);
    buf_init(&body, S3C_MAX_XML_BODY);
    s3r_status_t st = S3R_OK;
    if (buf_append_str(&src, "/") < 0 ||
        sigv4_uri_encode(src_bucket, strlen(src_bucket), true, &src) < 0 ||
        buf_append_str(&src, "/") < 0 ||
        sigv4_uri_encode(src_key, strlen(src_key), false, &src) < 0 ||
        (src_version_id &&
         (buf_append_str(&src, "?versionId=") < 0 ||
          sigv4_uri_encode(src_version_id, strlen(src_version_id), true, &src) < 0)))
        st = s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_HTTP, 0, "", "source name too long");
    if (st == S3R_OK) {
        s3c_req_t req;
        s3c_req_init(&req, "PUT", dst_bucket, dst_key);
        req.native_op = RDMA_OP_COPY_OBJECT;
        s3c_req_hdr(&req, "x-amz-copy-source", src.data);
        st = s3c_get_xml_write(c, &req, &body);
        if (st == S3R_OK)
            st = s3c_error_in_200(c, &body);
    }
    buf_free(&src);
    buf_free(&body);
    return s3c_done(c, st);
}
