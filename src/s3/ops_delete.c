/* Object deletes, whatever the transport: DeleteObject and DeleteObjects
 * (versions, delete markers, object lock, If-Match). */
#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "s3/object_lock.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/xml_in.h"

/* ---- DeleteObject / DeleteObjects ---------------------------------------------- */

/* A delete's If-Match: none (if_match false), "*" (etag NULL), or the ETag
 * it names (etag, in buf). */
typedef struct delete_cond {
    bool if_match;
    const char *etag;
    char buf[64];
} delete_cond_t;

/* S3's answer to the removal of a version object lock protects. */
#define LOCKED_MSG "Access Denied because object protected by object lock."

/* Whether a delete that ended in *st succeeded as S3 answers it: a key or
 * a version that is not there is deleted already (*st becomes STOR_OK, *d
 * empty), so a delete is idempotent; AWS answers 204 (DeleteObjects: a
 * Deleted entry) for a well-formed version id that names nothing. Not so for
 * a conditional delete (cond): a key with no current object fails it. */
static bool delete_result_ok(stor_status_t *st, stor_deleted_t *d, const delete_cond_t *cond)
{
    if (*st == STOR_ERR_NO_VERSION || (*st == STOR_ERR_NO_KEY && !cond->if_match)) {
        memset(d, 0, sizeof *d);
        *st = STOR_OK;
    }
    return *st == STOR_OK;
}

/* s3_version_check for a delete: a well-formed id this server never makes
 * (AWS's, a UUID) names no version here, so its delete succeeds at once
 * (*st STOR_ERR_NO_VERSION for delete_result_ok); a malformed one is an
 * error. */
static s3_error_t delete_version_check(const char *vid, stor_status_t *st)
{
    s3_error_t err = s3_version_check(vid);
    if (err != S3E_NO_SUCH_VERSION)
        return err;
    *st = STOR_ERR_NO_VERSION;
    return S3E_NONE;
}

/* A conditional delete's judgement (AWS's, for general purpose buckets):
 * If-Match (DeleteObject's header, a DeleteObjects entry's <ETag>) is
 * compared with the key's current version in the delete's own transaction:
 * "*" or its ETag deletes, another ETag is 412 PreconditionFailed, and a key
 * whose current version is absent or a delete marker is 404 NoSuchKey.
 * Naming an ETag also needs s3:GetObject (it tells whether the object
 * changed). With a version id, and the directory buckets' size and
 * modification-time conditions, it is 501 NotImplemented, as S3 answers. */
static s3_error_t delete_cond_init(s3_req_t *req, const char *key, const char *vid,
                                   const char *if_match, bool dir_cond, delete_cond_t *c)
{
    c->if_match = if_match != NULL;
    c->etag = NULL;
    if (dir_cond || (if_match && vid))
        return S3E_NOT_IMPLEMENTED;
    if (if_match && strcmp(if_match, "*") != 0) {
        c->etag = c->buf;
        if (!s3_if_match_etag(if_match, c->buf, sizeof c->buf))
            c->buf[0] = '\0'; /* matches no object's ETag */
        if (!s3_extra_action_allowed(req, &req->authz_bucket, key, "s3:GetObject"))
            return S3E_ACCESS_DENIED;
    }
    return S3E_NONE;
}

/* The error a delete that ended in st (not STOR_OK) answers: a conditional
 * delete's missing key as any lookup's (s3_object_lookup_error). */
static s3_error_t delete_error(s3_req_t *req, stor_status_t st)
{
    return st == STOR_ERR_NO_KEY ? s3_object_lookup_error(req, &req->authz_bucket, st)
                                 : s3_error_from_stor(st);
}

/* Deletes key (version vid, or the latest) under object lock's guard and
 * c's condition; *st and *d as stor_delete_version_if leaves them. */
static stor_status_t delete_one(s3_req_t *req, const char *key, const char *vid,
                                const delete_cond_t *c, stor_deleted_t *d)
{
    s3_lock_guard_t g;
    stor_precond_t pre;
    const stor_precond_t *cond = s3_lock_delete_cond(req, &req->authz_bucket, key, &g, &pre);
    if (c->if_match) {
        if (!cond) {
            memset(&pre, 0, sizeof pre);
            cond = &pre;
        }
        pre.must_exist = 1;
        pre.etag = c->etag;
    }
    return stor_delete_version_if(req->srv->cfg.store, &req->authz_bucket, key, vid, cond, d);
}

static void delete_object_begin(s3_req_t *req)
{
    const char *vid = s3_req_query(req, "versionId");
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket))
        return;
    stor_status_t st = STOR_OK;
    delete_cond_t c;
    bool dir_cond = s3_req_header(req, "x-amz-if-match-size") ||
                    s3_req_header(req, "x-amz-if-match-last-modified-time");
    s3_error_t err = delete_version_check(vid, &st);
    if (err == S3E_NONE)
        err = delete_cond_init(req, req->key, vid, s3_req_header(req, "If-Match"), dir_cond, &c);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return;
    }
    stor_deleted_t d;
    if (st == STOR_OK)
        st = delete_one(req, req->key, vid, &c, &d);
    if (!delete_result_ok(&st, &d, &c)) {
        s3_reply_error(req, delete_error(req, st), st == STOR_ERR_LOCKED ? LOCKED_MSG : NULL);
        return;
    }
    if (vid || d.version_id[0]) /* the version asked for, or the marker made */
        s3_reply_header(req, "x-amz-version-id", vid ? vid : d.version_id);
    if (d.delete_marker)
        s3_reply_header(req, "x-amz-delete-marker", "true");
    s3_reply_empty(req, 204);
}

static void delete_objects_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket))
        return;
    req->body_kind = S3_BODY_XML;
}

static void delete_objects_finish(s3_req_t *req)
{
    int quiet = 0;
    xml_delete_object_t *objs = NULL;
    size_t n = 0;
    if (s3_xml_parse_delete(req->body.data ? req->body.data : "", req->body.len, &quiet, &objs,
                            &n) != 0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 64 * 1024 * 1024);
    s3_xml_open(&xml, "DeleteResult");
    for (size_t i = 0; i < n; i++) {
        const char *key = objs[i].key;
        size_t klen = strlen(key);
        s3_error_t err = S3E_NONE;
        const char *vid = objs[i].version_id;
        stor_deleted_t d = {0};
        stor_status_t st = STOR_ERR_NO_KEY;
        delete_cond_t c = {0};
        if (klen == 0 || klen > S3R_MAX_KEY_BYTES)
            err = S3E_KEY_TOO_LONG;
        else if (!s3_utf8_valid(key, klen))
            err = S3E_INVALID_ARGUMENT;
        else if ((err = delete_version_check(vid, &st)) != S3E_NONE)
            ;
        else if ((err = s3_key_access(req, &req->authz_bucket, key, S3_PERM_WRITE)) != S3E_NONE)
            ;
        else if ((err = delete_cond_init(req, key, vid, objs[i].etag, objs[i].dir_cond, &c)) !=
                 S3E_NONE)
            ;
        else if (st == STOR_ERR_NO_VERSION)
            delete_result_ok(&st, &d, &c);
        else if (st = delete_one(req, key, vid, &c, &d), !delete_result_ok(&st, &d, &c))
            err = delete_error(req, st);
        if (err == S3E_NONE && quiet)
            continue;
        buf_append_str(&xml, err != S3E_NONE ? "<Error><Key>" : "<Deleted><Key>");
        buf_append_xml(&xml, key);
        buf_append_str(&xml, "</Key>");
        if (vid)
            s3_xml_elem(&xml, "VersionId", vid);
        if (err == S3E_NONE && d.delete_marker) {
            buf_append_str(&xml, "<DeleteMarker>true</DeleteMarker>");
            s3_xml_elem(&xml, "DeleteMarkerVersionId", d.version_id);
        }
        if (err != S3E_NONE) {
            buf_printf(&xml, "<Code>%s</Code><Message>", s3_error_code(err));
            buf_append_xml(&xml, s3_error_message(err));
            buf_append_str(&xml, "</Message></Error>");
        } else {
            buf_append_str(&xml, "</Deleted>");
        }
    }
    buf_append_str(&xml, "</DeleteResult>");
    s3_xml_delete_objects_free(objs, n);
    s3_reply_xml(req, 200, &xml);
}

const s3_op_t s3_op_delete_object = {"DeleteObject", delete_object_begin, NULL};
const s3_op_t s3_op_delete_objects = {"DeleteObjects", delete_objects_begin, delete_objects_finish};
