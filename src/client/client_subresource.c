/* libs3rdma: the configuration subresources of objects and buckets
 * (s3r_subresource_get / _put / _delete): S3's documents passed through as
 * they are, each kind a row of one table naming its query parameter and its
 * native opcodes. */
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

#define SUB_MAX_DOC (16 * 1024 * 1024) /* the largest document put, as S3C_MAX_XML_BODY got */

/* Each kind: the subresource's query parameter, whether it belongs to an
 * object, its content type and its native opcodes (0: S3 has no delete). */
static const struct sub {
    const char *query;
    bool object;
    const char *content_type;
    uint8_t get, put, del;
} subs[] = {
    [S3R_SUB_OBJECT_TAGGING] = {"tagging", true, "application/xml", RDMA_OP_GET_OBJECT_TAGGING,
                                RDMA_OP_PUT_OBJECT_TAGGING, RDMA_OP_DELETE_OBJECT_TAGGING},
    [S3R_SUB_OBJECT_RETENTION] = {"retention", true, "application/xml",
                                  RDMA_OP_GET_OBJECT_RETENTION, RDMA_OP_PUT_OBJECT_RETENTION, 0},
    [S3R_SUB_OBJECT_LEGAL_HOLD] = {"legal-hold", true, "application/xml",
                                   RDMA_OP_GET_OBJECT_LEGAL_HOLD, RDMA_OP_PUT_OBJECT_LEGAL_HOLD, 0},
    [S3R_SUB_OBJECT_ACL] = {"acl", true, "application/xml", RDMA_OP_GET_OBJECT_ACL,
                            RDMA_OP_PUT_OBJECT_ACL, 0},
    [S3R_SUB_BUCKET_VERSIONING] = {"versioning", false, "application/xml",
                                   RDMA_OP_GET_BUCKET_VERSIONING, RDMA_OP_PUT_BUCKET_VERSIONING, 0},
    [S3R_SUB_BUCKET_LIFECYCLE] = {"lifecycle", false, "application/xml",
                                  RDMA_OP_GET_BUCKET_LIFECYCLE, RDMA_OP_PUT_BUCKET_LIFECYCLE,
                                  RDMA_OP_DELETE_BUCKET_LIFECYCLE},
    [S3R_SUB_BUCKET_OBJECT_LOCK] = {"object-lock", false, "application/xml",
                                    RDMA_OP_GET_OBJECT_LOCK_CONFIG, RDMA_OP_PUT_OBJECT_LOCK_CONFIG,
                                    0},
    [S3R_SUB_BUCKET_TAGGING] = {"tagging", false, "application/xml", RDMA_OP_GET_BUCKET_TAGGING,
                                RDMA_OP_PUT_BUCKET_TAGGING, RDMA_OP_DELETE_BUCKET_TAGGING},
    [S3R_SUB_BUCKET_POLICY] = {"policy", false, "application/json", RDMA_OP_GET_BUCKET_POLICY,
                               RDMA_OP_PUT_BUCKET_POLICY, RDMA_OP_DELETE_BUCKET_POLICY},
    [S3R_SUB_BUCKET_CORS] = {"cors", false, "application/xml", RDMA_OP_GET_BUCKET_CORS,
                             RDMA_OP_PUT_BUCKET_CORS, RDMA_OP_DELETE_BUCKET_CORS},
    [S3R_SUB_BUCKET_ENCRYPTION] = {"encryption", false, "application/xml",
                                   RDMA_OP_GET_BUCKET_ENCRYPTION, RDMA_OP_PUT_BUCKET_ENCRYPTION,
                                   RDMA_OP_DELETE_BUCKET_ENCRYPTION},
    [S3R_SUB_BUCKET_ACL] = {"acl", false, "application/xml", RDMA_OP_GET_BUCKET_ACL,
                            RDMA_OP_PUT_BUCKET_ACL, 0},
};

/* The row of kind for target, or NULL when the arguments do not fit it. */
static const struct sub *sub_for(s3r_subresource_t kind, const s3r_subresource_target_t *t)
{
    if ((unsigned)kind == 0 || (unsigned)kind >= sizeof(subs) / sizeof(subs[0]) || t == NULL ||
        !s3c_valid_name(t->bucket))
        return NULL;
    const struct sub *s = &subs[kind];
    if (s->object ? !s3c_valid_name(t->key) || (t->version_id && !t->version_id[0])
                  : t->key != NULL || t->version_id != NULL)
        return NULL;
    return s;
}

/* The request of s on t: method, opcode, "query[&versionId=...]". */
static s3r_status_t sub_request(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const struct sub *s,
                                const s3r_subresource_target_t *t, const char *method, uint8_t op)
{
    s3c_req_init(req, method, t->bucket, t->key);
    req->native_op = op;
    req->query = s->query;
    return s3c_version_query(c, req, ss, t->version_id);
}

s3r_status_t s3r_subresource_get(s3r_client_t *c, s3r_subresource_t kind,
                                 const s3r_subresource_target_t *target, char **doc_p,
                                 size_t *len_p)
{
    const struct sub *s = sub_for(kind, target);
    if (c == NULL || s == NULL || doc_p == NULL || len_p == NULL)
        return S3R_ERR_INVALID_ARG;
    strs_t ss = {0};
    s3c_req_t req;
    buf_t body;
    buf_init(&body, S3C_MAX_XML_BODY);
    s3r_status_t st = sub_request(c, &req, &ss, s, target, "GET", s->get);
    if (st == S3R_OK)
        st = s3c_get_xml(c, &req, &body);
    if (st == S3R_OK && buf_reserve(&body, 1) < 0)
        st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
    if (st == S3R_OK) {
        body.data[body.len] = '\0';
        size_t len;
        *doc_p = buf_steal(&body, &len);
        *len_p = len;
    }
    buf_free(&body);
    s3c_strs_free(&ss);
    return s3c_done(c, st);
}

s3r_status_t s3r_subresource_put(s3r_client_t *c, s3r_subresource_t kind,
                                 const s3r_subresource_target_t *target, const void *doc,
                                 size_t len)
{
    const struct sub *s = sub_for(kind, target);
    if (c == NULL || s == NULL || (doc == NULL && len > 0))
        return S3R_ERR_INVALID_ARG;
    if (len > SUB_MAX_DOC)
        return s3c_done(c, s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                                    "a document over %d bytes", SUB_MAX_DOC));
    strs_t ss = {0};
    s3c_req_t req;
    s3r_status_t st = sub_request(c, &req, &ss, s, target, "PUT", s->put);
    if (st == S3R_OK && len > 0) {
        uint8_t md5[16];
        char b64[32];
        digest_t *d = hash_digest_md5_new();
        if (d == NULL) {
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
        } else {
            hash_digest_update(d, doc, len);
            hash_digest_final(d, md5); /* frees d */
            b64[hash_base64_encode(md5, sizeof(md5), b64)] = '\0';
            const char *v = s3c_strs_printf(&ss, "%s", b64);
            if (v == NULL)
                st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
            else
                s3c_req_hdr(&req, "content-md5", v);
            s3c_req_hdr(&req, "content-type", s->content_type);
            req.body = doc;
            req.body_len = len;
        }
    }
    if (st == S3R_OK)
        st = s3c_simple(c, &req, s->object);
    s3c_strs_free(&ss);
    return s3c_done(c, st);
}

s3r_status_t s3r_subresource_delete(s3r_client_t *c, s3r_subresource_t kind,
                                    const s3r_subresource_target_t *target)
{
    const struct sub *s = sub_for(kind, target);
    if (c == NULL || s == NULL)
        return S3R_ERR_INVALID_ARG;
    if (s->del == 0)
        return s3c_done(c, s3c_fail(c, S3R_ERR_UNSUPPORTED, S3R_TRANSPORT_DEFAULT, 0, "",
                                    "S3 has no DELETE of ?%s", s->query));
    strs_t ss = {0};
    s3c_req_t req;
    s3r_status_t st = sub_request(c, &req, &ss, s, target, "DELETE", s->del);
    if (st == S3R_OK)
        st = s3c_simple(c, &req, s->object);
    s3c_strs_free(&ss);
    return s3c_done(c, st);
}
