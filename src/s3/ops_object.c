/* Object operations, whatever the transport: PutObject, GetObject,
 * HeadObject, CopyObject (DeleteObject and DeleteObjects: ops_delete.c). */
#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "s3/object_lock.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/sse.h"
#include "s3/tagging.h"
#include "s3/xml_in.h"

#define COPY_BUF_BYTES (1024 * 1024)

static void meta_state_free(void *p)
{
    stor_meta_free(p);
    free(p);
}

static stor_meta_t *meta_state_new(s3_req_t *req)
{
    stor_meta_t *m = calloc(1, sizeof(*m));
    if (m) {
        req->op_state = m;
        req->op_state_free = meta_state_free;
    }
    return m;
}

/* Moves req->checksums into meta (the request keeps nothing). */
static void take_checksums(s3_req_t *req, stor_meta_t *meta)
{
    s3_reply_checksums(req);
    for (int i = 0; i < S3_CK_COUNT; i++) {
        if (!req->checksums[i])
            continue;
        char **dst = s3_meta_checksum(meta, i);
        free(*dst);
        *dst = req->checksums[i];
        req->checksums[i] = NULL;
    }
}

/* ---- versions and conditional writes ---------------------------------------- */

/* The shapes a version id takes: AWS's (32 URL-safe characters) and a UUID
 * (MinIO's, Ceph's). */
static bool version_id_well_formed(const char *v)
{
    size_t n = strlen(v);
    if (n == 32)
        return strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == 32;
    if (n != 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? v[i] != '-' : !isxdigit((unsigned char)v[i]))
            return false;
    }
    return true;
}

s3_error_t s3_version_check(const char *version_id)
{
    if (!version_id || stor_version_id_valid(version_id))
        return S3E_NONE;
    return version_id_well_formed(version_id) ? S3E_NO_SUCH_VERSION : S3E_INVALID_VERSION_ID;
}

/* The versionId query of a request on an object into *vid_p (NULL when
 * absent): replies and returns false when it cannot name a version here. */
static bool version_query(s3_req_t *req, const char **vid_p)
{
    const char *v = s3_req_query(req, "versionId");
    s3_error_t err = s3_version_check(v);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return false;
    }
    *vid_p = v;
    return true;
}

void s3_version_headers(s3_req_t *req, const stor_bucket_t *bucket, const stor_meta_t *meta,
                        bool asked)
{
    char vid[STOR_VERSION_ID_LEN + 1];
    stor_version_id(meta, vid);
    if (asked || bucket->versioning != STOR_VERSIONING_OFF || strcmp(vid, "null") != 0)
        s3_reply_header(req, "x-amz-version-id", vid);
    if (meta->delete_marker)
        s3_reply_header(req, "x-amz-delete-marker", "true");
}

bool s3_delete_marker_reply(s3_req_t *req, const stor_bucket_t *bucket, const char *key,
                            const char *vid, stor_status_t st, s3_error_t by_id)
{
    if (st != STOR_ERR_DELETE_MARKER)
        return false;
    stor_meta_t m;
    if (stor_head_version(req->srv->cfg.store, bucket->name, key, vid, &m) != STOR_OK) {
        s3_reply_error(req, vid ? S3E_NO_SUCH_VERSION : S3E_NO_SUCH_KEY, NULL);
        return true;
    }
    /* By id the marker is the object asked for: the requester needs READ on
     * it, as on any version; the latest being one is a missing key. */
    if (vid && !s3_object_authorize(req, bucket, key, &m, S3_PERM_READ)) {
        stor_meta_free(&m);
        return true;
    }
    s3_error_t err = vid ? by_id : s3_object_lookup_error(req, bucket, STOR_ERR_NO_KEY);
    if (err != S3E_ACCESS_DENIED) {
        s3_version_headers(req, bucket, &m, true);
        char date[40];
        date_format_http(m.mtime_ms / 1000, date);
        s3_reply_header(req, "Last-Modified", date);
    }
    stor_meta_free(&m);
    s3_reply_error(req, err, NULL);
    return true;
}

/* s3_request.h */
bool s3_if_match_etag(const char *im, char *out, size_t cap)
{
    size_t n = strlen(im);
    if (n >= 2 && im[0] == '"' && im[n - 1] == '"') {
        n -= 2;
        im++;
    }
    if (n == 0 || n >= cap)
        return false;
    memcpy(out, im, n);
    out[n] = '\0';
    return true;
}

s3_error_t s3_write_precond(s3_req_t *req, stor_precond_t *cond, const char **why_p)
{
    memset(cond, 0, sizeof(*cond));
    *why_p = NULL;
    const char *inm = s3_req_header(req, "If-None-Match");
    const char *im = s3_req_header(req, "If-Match");
    if (inm) {
        if (strcmp(inm, "*") != 0) {
            *why_p = "If-None-Match on a write takes only the value *.";
            return S3E_NOT_IMPLEMENTED;
        }
        cond->must_not_exist = 1;
    }
    if (im) {
        cond->must_exist = 1;
        if (strcmp(im, "*") != 0) {
            if (!s3_if_match_etag(im, req->precond_etag, sizeof req->precond_etag))
                return S3E_PRECONDITION_FAILED;
            cond->etag = req->precond_etag;
        }
    }
    return S3E_NONE;
}

/* ---- PutObject ------------------------------------------------------------------ */

static void put_object_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket))
        return;
    stor_meta_t *meta = meta_state_new(req);
    if (!meta) {
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    const char *why = NULL;
    stor_precond_t cond;
    s3_sse_key_t dk;
    s3_error_t err = s3_meta_from_headers(req, meta, &why);
    if (err == S3E_NONE)
        err = s3_new_object_access(req, meta, &why);
    if (err == S3E_NONE)
        err = s3_lock_for_write(req, meta, true, &why);
    if (err == S3E_NONE)
        err = s3_write_precond(req, &cond, &why);
    if (err == S3E_NONE)
        err = s3_sse_for_write(req, meta, &dk, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    req->fast_etag = req->srv->cfg.etag_fast;
    s3_upload_begin(req);
    s3_sse_apply_writer(&dk, req->writer);
}

void s3_upload_begin(s3_req_t *req)
{
    req->body_kind = S3_BODY_OBJECT;
    stor_status_t st = stor_writer_open(req->srv->cfg.store, &req->authz_bucket, &req->writer);
    if (st != STOR_OK)
        s3_reply_error(req, s3_error_from_stor(st), NULL);
}

static void put_object_finish(s3_req_t *req)
{
    if (s3_object_commit(req, req->op_state)) {
        s3_sse_reply_headers(req, req->op_state);
        s3_reply_empty(req, 200);
    }
}

void s3_new_version_header(s3_req_t *req, const stor_meta_t *meta)
{
    char vid[STOR_VERSION_ID_LEN + 1];
    stor_version_id(meta, vid);
    if (strcmp(vid, "null") != 0)
        s3_reply_header(req, "x-amz-version-id", vid);
}

bool s3_object_commit(s3_req_t *req, stor_meta_t *meta)
{
    snprintf(meta->etag, sizeof(meta->etag), "%s", req->etag);
    take_checksums(req, meta);
    stor_writer_t *w = req->writer;
    req->writer = NULL;
    stor_precond_t cond;
    const char *why;
    s3_write_precond(req, &cond, &why); /* checked in begin() */
    stor_status_t st = req->fe->durable_later ? stor_writer_commit_later(w, req->key, meta, &cond,
                                                                         &req->durable_ticket)
                                              : stor_writer_commit_if(w, req->key, meta, &cond);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return false;
    }
    s3_reply_headerf(req, "ETag", "\"%s\"", meta->etag);
    s3_new_version_header(req, meta);
    s3_lifecycle_reply_header(req, req->key, meta);
    return true;
}

/* ---- GetObject / HeadObject --------------------------------------------------- */

/* 1 when the If-Match / If-None-Match list names etag (or is "*"). */
static bool etag_matches(const char *list, const char *etag)
{
    size_t elen = strlen(etag);
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, ",");
        const char *s = p, *e = p + n;
        while (e > s && e[-1] == ' ')
            e--;
        if (e - s >= 2 && s[0] == 'W' && s[1] == '/')
            s += 2;
        if (e - s >= 2 && *s == '"' && e[-1] == '"') {
            s++;
            e--;
        }
        if ((e - s == 1 && *s == '*') || ((size_t)(e - s) == elen && memcmp(s, etag, elen) == 0))
            return true;
        p += n;
    }
    return false;
}

/* The date of an If-Modified-Since / If-Unmodified-Since header: an HTTP
 * date, or ISO 8601 as some SDKs send; -1 (the header is ignored, as S3
 * does) for anything else. */
static int64_t condition_date(const char *s)
{
    int64_t t = date_parse_http(s);
    return t >= 0 ? t : date_parse_iso8601(s);
}

/* Evaluates the conditional headers (prefix "" for GET/HEAD, or
 * "x-amz-copy-source-" for copies). Returns S3E_NONE to proceed, or
 * PreconditionFailed / NotModified. Copies fail with 412 in every case. */
static s3_error_t check_conditions(s3_req_t *req, const char *prefix, const stor_meta_t *meta,
                                   bool copy)
{
    char name[64];
    int64_t mtime = meta->mtime_ms / 1000;
    snprintf(name, sizeof(name), "%sIf-Match", prefix);
    const char *im = s3_req_header(req, name);
    snprintf(name, sizeof(name), "%sIf-None-Match", prefix);
    const char *inm = s3_req_header(req, name);
    snprintf(name, sizeof(name), "%sIf-Modified-Since", prefix);
    const char *ims = s3_req_header(req, name);
    snprintf(name, sizeof(name), "%sIf-Unmodified-Since", prefix);
    const char *ius = s3_req_header(req, name);

    if (im) {
        if (!etag_matches(im, meta->etag))
            return S3E_PRECONDITION_FAILED;
    } else if (ius) {
        int64_t t = condition_date(ius);
        if (t >= 0 && mtime > t)
            return S3E_PRECONDITION_FAILED;
    }
    if (inm) {
        if (etag_matches(inm, meta->etag))
            return copy ? S3E_PRECONDITION_FAILED : S3E_NOT_MODIFIED;
    } else if (ims) {
        int64_t t = condition_date(ims);
        if (t >= 0 && mtime <= t && t <= req->now_s)
            return copy ? S3E_PRECONDITION_FAILED : S3E_NOT_MODIFIED;
    }
    return S3E_NONE;
}

/* Opens version vid (NULL: the latest) of bucket/key for reading by the
 * requester, who needs READ on the object (a missing key:
 * s3_object_lookup_error; a delete marker: s3_delete_marker_reply, with
 * marker_err when vid names it). Replies and returns NULL on failure. */
static stor_reader_t *object_open(s3_req_t *req, const char *bucket, const char *key,
                                  const char *vid, s3_error_t marker_err, stor_bucket_t *b,
                                  bool copy_source)
{
    if (!s3_bucket_lookup(req, bucket, b))
        return NULL;
    stor_reader_t *reader = NULL;
    stor_status_t st = stor_reader_open_version(req->srv->cfg.store, bucket, key, vid, &reader);
    if (s3_delete_marker_reply(req, b, key, vid, st, marker_err))
        return NULL;
    if (st != STOR_OK) {
        s3_reply_error(req, s3_object_lookup_error(req, b, st), NULL);
        return NULL;
    }
    if (!s3_object_authorize(req, b, key, stor_reader_meta(reader), S3_PERM_READ)) {
        stor_reader_close(reader);
        return NULL;
    }
    /* An encrypted object is read through its key or not at all; a read
     * names no server-side key (S3 refuses the write-side headers). */
    s3_sse_key_t dk;
    const char *why = NULL;
    s3_error_t err = S3E_NONE;
    if (!copy_source && (s3_req_header(req, "x-amz-server-side-encryption") ||
                         s3_req_header(req, "x-amz-server-side-encryption-aws-kms-key-id"))) {
        err = S3E_INVALID_ARGUMENT;
        why = "x-amz-server-side-encryption header is not supported for this operation.";
    } else {
        err = s3_sse_for_read(req, stor_reader_meta(reader), copy_source, &dk, &why);
    }
    if (err != S3E_NONE) {
        stor_reader_close(reader);
        s3_reply_error(req, err, why);
        return NULL;
    }
    s3_sse_apply_reader(&dk, reader);
    return reader;
}

static void get_object_begin(s3_req_t *req)
{
    const char *vid;
    if (!version_query(req, &vid))
        return;
    stor_reader_t *reader = object_open(req, req->bucket, req->key, vid, S3E_METHOD_NOT_ALLOWED,
                                        &req->authz_bucket, false);
    if (!reader)
        return;
    s3_version_headers(req, &req->authz_bucket, stor_reader_meta(reader), vid != NULL);
    const stor_meta_t *meta = stor_reader_meta(reader);
    s3_error_t err = check_conditions(req, "", meta, false);
    if (err != S3E_NONE) {
        if (err == S3E_NOT_MODIFIED) {
            s3_reply_headerf(req, "ETag", "\"%s\"", meta->etag);
            char date[40];
            date_format_http(meta->mtime_ms / 1000, date);
            s3_reply_header(req, "Last-Modified", date);
        }
        stor_reader_close(reader);
        s3_reply_error(req, err, NULL);
        return;
    }

    uint64_t first = 0, len = meta->size;
    int status = 200;
    uint32_t part_n = 0; /* GET ?partNumber= of a multipart object */
    const char *pn = s3_req_query(req, "partNumber");
    if (pn) {
        char *end;
        long n = strtol(pn, &end, 10);
        if (*end || n < 1 || n > S3R_MAX_PART_NUMBER) {
            stor_reader_close(reader);
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "Part number must be an integer between 1 and 10000.");
            return;
        }
        uint32_t parts = meta->parts_count ? meta->parts_count : 1;
        if ((uint32_t)n > parts) {
            stor_reader_close(reader);
            s3_reply_error(req, S3E_INVALID_PART_NUMBER, NULL);
            return;
        }
        if (meta->parts_count) {
            for (long i = 0; i < n - 1; i++)
                first += meta->part_sizes[i];
            len = meta->part_sizes[n - 1];
            status = 206;
            s3_reply_headerf(req, "x-amz-mp-parts-count", "%u", meta->parts_count);
            part_n = (uint32_t)n;
        }
    } else {
        uint64_t a, b;
        switch (s3_range_parse(s3_req_header(req, "Range"), meta->size, &a, &b)) {
        case S3_RANGE_OK:
            first = a;
            len = b - a + 1;
            status = 206;
            break;
        case S3_RANGE_UNSATISFIABLE:
            s3_reply_headerf(req, "Content-Range", "bytes */%" PRIu64, meta->size);
            stor_reader_close(reader); /* meta belongs to the reader */
            s3_reply_error(req, S3E_INVALID_RANGE, NULL);
            return;
        case S3_RANGE_NONE:
            break;
        }
    }
    if (status == 206)
        s3_reply_headerf(req, "Content-Range", "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, first,
                         first + len - (len ? 1 : 0), meta->size);

#define OVERRIDE(param, field) {param, offsetof(stor_meta_t, field)},
    /* response-* query parameters override the stored headers; they are
     * held to what a PUT may store (an object stored before these limits
     * is still served as it is). */
    static const struct {
        const char *param;
        size_t offset;
    } overrides[] = {S3_RESPONSE_OVERRIDES(OVERRIDE)};
#undef OVERRIDE
    stor_meta_t shown = *meta;
    /* A range or a part is not the object, so the object's checksum is not
     * sent with it (as in S3): SDKs that check a GET's checksum (the AWS SDKs
     * since 2025 by default) would fail the bytes they got against it. A
     * part's GET carries the part's checksum (of the object's type), as in
     * S3, when the object keeps its parts' checksums. */
    if (status == 206)
        for (int i = 0; i < S3_CK_COUNT; i++)
            *s3_meta_checksum(&shown, i) = NULL;
    char part_ck[CHECKSUM_VALUE_MAX];
    checksum_alg_t ck_alg = checksum_alg_from_name(meta->checksum_algorithm);
    if (part_n && ck_alg != CHECKSUM_NONE && s3_part_checksum_of(meta, part_n, part_ck))
        *s3_meta_checksum(&shown, s3_checksum_alg_of(ck_alg)) = part_ck;
    bool overridden = false;
    for (size_t i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++) {
        const char *v = s3_req_query(req, overrides[i].param);
        if (v) {
            *(char **)((char *)&shown + overrides[i].offset) = (char *)v;
            overridden = true;
        }
    }
    const char *why = NULL;
    if (overridden && (err = s3_stored_headers_check(&shown, &why)) != S3E_NONE) {
        stor_reader_close(reader); /* meta belongs to the reader */
        s3_reply_error(req, err, why);
        return;
    }
    s3_meta_to_headers(req, &shown);
    s3_sse_reply_headers(req, meta);
    if (meta->tags) /* GET and HEAD alike */
        s3_reply_headerf(req, "x-amz-tagging-count", "%zu", s3_tags_count(meta->tags));
    s3_lifecycle_reply_header(req, req->key, meta);
    s3_lock_reply_headers(req, &req->authz_bucket, req->key, meta);

    s3_reply_object(req, status, reader, first, len);
}

/* ---- CopyObject -------------------------------------------------------------------- */

stor_reader_t *s3_copy_source_open(s3_req_t *req, bool *same_object_p)
{
    const char *src = s3_req_header(req, "x-amz-copy-source");
    size_t len = strcspn(src, "?");
    const char *vid = NULL;
    if (src[len]) {
        /* "?versionId=<id>". */
        const char *q = src + len + 1;
        s3_error_t err =
            strncmp(q, "versionId=", 10) == 0 ? s3_version_check(q + 10) : S3E_INVALID_ARGUMENT;
        if (err != S3E_NONE) {
            s3_reply_error(req, err, NULL);
            return NULL;
        }
        vid = q + 10;
    }
    char *decoded = s3_url_decode(src, len, false);
    char *p = decoded;
    if (p && *p == '/')
        p++;
    char *slash = p ? strchr(p, '/') : NULL;
    if (!slash || slash == p || slash[1] == '\0') {
        free(decoded);
        s3_reply_error(
            req, S3E_INVALID_ARGUMENT,
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey.");
        return NULL;
    }
    *slash = '\0';
    const char *sbucket = p, *skey = slash + 1;
    *same_object_p = req->key && strcmp(sbucket, req->bucket) == 0 && strcmp(skey, req->key) == 0;
    if (strlen(skey) > S3R_MAX_KEY_BYTES) {
        free(decoded);
        s3_reply_error(req, S3E_KEY_TOO_LONG, NULL);
        return NULL;
    }
    stor_bucket_t sb;
    stor_reader_t *reader = object_open(req, sbucket, skey, vid, S3E_INVALID_REQUEST, &sb, true);
    free(decoded);
    if (!reader)
        return NULL;
    char svid[STOR_VERSION_ID_LEN + 1];
    stor_version_id(stor_reader_meta(reader), svid);
    if (vid || sb.versioning != STOR_VERSIONING_OFF || strcmp(svid, "null") != 0)
        s3_reply_header(req, "x-amz-copy-source-version-id", svid);
    if (*same_object_p && vid) {
        /* Copying an older version over its key restores it: not a copy
         * onto itself. */
        stor_meta_t cur;
        char cvid[STOR_VERSION_ID_LEN + 1] = "";
        if (stor_head(req->srv->cfg.store, sb.name, req->key, &cur) == STOR_OK) {
            stor_version_id(&cur, cvid);
            stor_meta_free(&cur);
        }
        *same_object_p = strcmp(cvid, svid) == 0;
    }
    s3_error_t err = check_conditions(req, "x-amz-copy-source-", stor_reader_meta(reader), true);
    if (err != S3E_NONE) {
        stor_reader_close(reader);
        s3_reply_error(req, err, NULL);
        return NULL;
    }
    return reader;
}

s3_error_t s3_copy_range(s3_req_t *req, stor_reader_t *reader, uint64_t first, uint64_t len,
                         s3_sse_key_t *dk, stor_writer_t **writer_p, char etag[33])
{
    stor_writer_t *w = NULL;
    stor_status_t st = stor_writer_open(req->srv->cfg.store, &req->authz_bucket, &w);
    if (dk)
        s3_sse_apply_writer(dk, w);
    if (st != STOR_OK)
        return s3_error_from_stor(st);
    char *buf = malloc(COPY_BUF_BYTES);
    digest_t *md5 = hash_digest_md5_new();
    s3_error_t err = S3E_NONE;
    if (!buf || !md5)
        err = S3E_INTERNAL;
    for (uint64_t off = 0; off < len && err == S3E_NONE;) {
        size_t n = len - off < COPY_BUF_BYTES ? (size_t)(len - off) : COPY_BUF_BYTES;
        if (stor_reader_pread(reader, buf, n, first + off) != (ssize_t)n) {
            err = S3E_INTERNAL;
            break;
        }
        hash_digest_update(md5, buf, n);
        s3_checksums_update(req, buf, n);
        if ((st = stor_writer_write(w, buf, n)) != STOR_OK)
            err = s3_error_from_stor(st);
        off += n;
    }
    if (err == S3E_NONE) {
        uint8_t sum[MD5_LEN];
        hash_digest_final(md5, sum);
        md5 = NULL;
        hash_hex_encode(sum, sizeof(sum), etag);
        *writer_p = w;
    } else {
        stor_writer_abort(w);
    }
    hash_digest_free(md5);
    free(buf);
    return err;
}

static void copy_object_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket))
        return;
    /* If-None-Match / If-Match judge the destination, as on PutObject (the
     * source's are x-amz-copy-source-if-*). */
    stor_precond_t cond;
    const char *why = NULL;
    s3_error_t err = s3_write_precond(req, &cond, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    const char *directive = s3_req_header(req, "x-amz-metadata-directive");
    bool replace = directive && strcasecmp(directive, "REPLACE") == 0;
    if (directive && !replace && strcasecmp(directive, "COPY") != 0) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "Unknown metadata directive.");
        return;
    }
    const char *tag_directive = s3_req_header(req, "x-amz-tagging-directive");
    bool replace_tags = tag_directive && strcasecmp(tag_directive, "REPLACE") == 0;
    if (tag_directive && !replace_tags && strcasecmp(tag_directive, "COPY") != 0) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "Unknown tagging directive.");
        return;
    }
    bool same = false;
    /* A copy onto itself is legal when it changes the storage class. */
    bool new_class = s3_req_header(req, "x-amz-storage-class") != NULL;
    stor_reader_t *reader = s3_copy_source_open(req, &same);
    if (!reader)
        return;
    const stor_meta_t *src = stor_reader_meta(reader);
    stor_meta_t *meta = meta_state_new(req);
    err = meta ? S3E_NONE : S3E_INTERNAL;
    if (err == S3E_NONE && replace) {
        err = s3_meta_from_headers(req, meta, &why);
    } else if (err == S3E_NONE && same && !new_class) {
        err = S3E_INVALID_REQUEST;
    } else if (err == S3E_NONE) {
        if (stor_meta_copy(meta, src) != STOR_OK)
            err = S3E_INTERNAL;
        /* A copy is a single-part object whatever the source was, and of
         * the class the request names (STANDARD when none), as in S3. */
        free(meta->part_sizes);
        meta->part_sizes = NULL;
        meta->parts_count = 0;
        if (err == S3E_NONE)
            err = s3_storage_class_from_headers(req, meta);
    }
    /* Tags follow their own directive: the source's (COPY, the default)
     * or x-amz-tagging's (REPLACE), whatever the metadata directive. */
    if (err == S3E_NONE && replace_tags) {
        err = s3_tags_from_request(req, meta, &why);
    } else if (err == S3E_NONE) {
        free(meta->tags);
        meta->tags = src->tags ? strdup(src->tags) : NULL;
        if (src->tags && !meta->tags)
            err = S3E_INTERNAL;
    }
    if (err == S3E_NONE)
        err = s3_new_object_access(req, meta, &why);
    /* The copy's own lock (headers or the bucket's default), never the
     * source's. */
    if (err == S3E_NONE)
        err = s3_lock_for_write(req, meta, false, &why);
    /* The copy's own encryption, never the source's. */
    s3_sse_key_t dk = {0};
    if (err == S3E_NONE)
        err = s3_sse_for_write(req, meta, &dk, &why);
    stor_writer_t *w = NULL;
    char etag[33];
    if (err == S3E_NONE)
        err = s3_copy_range(req, reader, 0, src->size, &dk, &w, etag);
    cipher_secure_zero(&dk, sizeof dk);
    if (err == S3E_NONE && replace) {
        /* The bytes are identical: their checksums carry over. */
        for (int i = 0; i < S3_CK_COUNT; i++) {
            const char *ck = *s3_meta_checksum(src, i);
            char **dst = s3_meta_checksum(meta, i);
            if (ck && !*dst)
                *dst = strdup(ck);
        }
    }
    stor_reader_close(reader);
    if (err != S3E_NONE) {
        s3_reply_error(req, err,
                       why ? why
                       : same && !replace
                           ? "This copy request is illegal because it is trying to copy an object "
                             "to itself without changing the object's metadata, storage class, "
                             "website redirect location or encryption attributes."
                           : NULL);
        return;
    }
    snprintf(meta->etag, sizeof(meta->etag), "%s", etag);
    stor_status_t st = stor_writer_commit_if(w, req->key, meta, &cond);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_new_version_header(req, meta);
    char date[32];
    date_format_iso8601(meta->mtime_ms, date);
    buf_t xml;
    buf_init(&xml, 4096);
    s3_sse_reply_headers(req, meta);
    s3_xml_open(&xml, "CopyObjectResult");
    buf_printf(&xml,
               "<LastModified>%s</LastModified><ETag>&quot;%s&quot;</ETag></CopyObjectResult>",
               date, etag);
    s3_reply_xml(req, 200, &xml);
}

const s3_op_t s3_op_put_object = {"PutObject", put_object_begin, put_object_finish};
const s3_op_t s3_op_get_object = {"GetObject", get_object_begin, NULL};
const s3_op_t s3_op_head_object = {"HeadObject", get_object_begin, NULL};
const s3_op_t s3_op_copy_object = {"CopyObject", copy_object_begin, NULL};
