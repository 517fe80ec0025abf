/* Multipart uploads: Create, UploadPart (HTTP and token path), UploadPartCopy,
 * Complete, Abort, ListParts, ListMultipartUploads. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/date.h"
#include "common/s3r_limits.h"
#include "s3/s3_request.h"
#include "s3/sse.h"
#include "s3/s3_util.h"
#include "s3/xml_in.h"

/* Checks the requester may write into the bucket and that uploadId names an
 * upload of this key; *meta_p (NULL: not wanted; zeroed on failure, the
 * caller frees it) gets the upload's metadata. */
static const char *upload_check(s3_req_t *req, stor_meta_t *meta_p)
{
    if (meta_p)
        memset(meta_p, 0, sizeof *meta_p);
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket))
        return NULL;
    const char *id = s3_req_query(req, "uploadId");
    stor_t *store = req->srv->cfg.store;
    stor_status_t st = !id      ? STOR_ERR_NO_UPLOAD
                       : meta_p ? stor_mpu_meta(store, req->bucket, req->key, id, meta_p)
                                : stor_mpu_check(store, req->bucket, req->key, id);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return NULL;
    }
    return id;
}

static long part_number(s3_req_t *req)
{
    const char *pn = s3_req_query(req, "partNumber");
    char *end;
    long n = pn ? strtol(pn, &end, 10) : 0;
    if (!pn || *end || n < 1 || n > S3R_MAX_PART_NUMBER) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT,
                       "Part number must be an integer between 1 and 10000, inclusive.");
        return -1;
    }
    return n;
}

/* ---- checksums of multipart objects --------------------------------------------- */

/* The checksum CreateMultipartUpload asks its object to carry, into meta:
 * x-amz-checksum-algorithm (S3's names, any case) and x-amz-checksum-type
 * (COMPOSITE, or FULL_OBJECT for the CRCs; absent: FULL_OBJECT for
 * CRC64NVME, which has no composite, COMPOSITE for the others), refused as
 * S3 refuses them. */
static s3_error_t mpu_checksum_from_headers(s3_req_t *req, stor_meta_t *meta, const char **why_p)
{
    const char *a = s3_req_header(req, "x-amz-checksum-algorithm");
    const char *t = s3_req_header(req, "x-amz-checksum-type");
    if (!a) {
        if (!t)
            return S3E_NONE;
        *why_p = "The x-amz-checksum-type header can only be used with the "
                 "x-amz-checksum-algorithm header.";
        return S3E_INVALID_REQUEST;
    }
    char name[16];
    size_t len = strlen(a);
    checksum_alg_t alg = CHECKSUM_NONE;
    if (len < sizeof name) {
        for (size_t i = 0; i <= len; i++)
            name[i] = (char)toupper((unsigned char)a[i]);
        alg = checksum_alg_from_name(name);
    }
    if (alg == CHECKSUM_NONE) {
        *why_p = "Checksum algorithm provided is unsupported. Please try again with any of the "
                 "valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]";
        return S3E_INVALID_REQUEST;
    }
    bool full = !checksum_composite_ok(alg);
    if (t && strcasecmp(t, "FULL_OBJECT") == 0) {
        full = true;
    } else if (t && strcasecmp(t, "COMPOSITE") == 0) {
        full = false;
    } else if (t) {
        *why_p = "Value for x-amz-checksum-type header is invalid.";
        return S3E_INVALID_REQUEST;
    }
    if (full && !checksum_full_object_ok(alg)) {
        *why_p = alg == CHECKSUM_SHA1 ? "The FULL_OBJECT checksum type cannot be used with the "
                                        "sha1 checksum algorithm."
                                      : "The FULL_OBJECT checksum type cannot be used with the "
                                        "sha256 checksum algorithm.";
        return S3E_INVALID_REQUEST;
    }
    if (!full && !checksum_composite_ok(alg)) {
        *why_p = "The COMPOSITE checksum type cannot be used with the crc64nvme checksum "
                 "algorithm.";
        return S3E_INVALID_REQUEST;
    }
    meta->checksum_algorithm = strdup(checksum_alg_name(alg));
    meta->checksum_type = strdup(full ? "FULL_OBJECT" : "COMPOSITE");
    return meta->checksum_algorithm && meta->checksum_type ? S3E_NONE : S3E_INTERNAL;
}

/* The x-amz-checksum-* header of alg ("x-amz-checksum-crc32", ...). */
static void checksum_header_name(checksum_alg_t alg, char out[40])
{
    const char *n = checksum_alg_name(alg);
    size_t i = 0;
    i += (size_t)snprintf(out, 40, "x-amz-checksum-");
    for (; *n && i < 39; n++)
        out[i++] = (char)tolower((unsigned char)*n);
    out[i] = '\0';
}

/* A multipart object's checksum (the one of its algorithm) and its type,
 * as the elements of a Complete or GetObjectAttributes answer. */
static void object_checksum_xml(buf_t *xml, const stor_meta_t *meta)
{
    checksum_alg_t alg = checksum_alg_from_name(meta->checksum_algorithm);
    if (alg == CHECKSUM_NONE)
        return;
    const char *v = *s3_meta_checksum(meta, s3_checksum_alg_of(alg));
    if (!v)
        return;
    char elem[40];
    snprintf(elem, sizeof elem, "Checksum%s", checksum_alg_name(alg));
    s3_xml_elem(xml, elem, v);
    s3_xml_elem(xml, "ChecksumType", meta->checksum_type ? meta->checksum_type : "COMPOSITE");
}

/* ---- Create ---------------------------------------------------------------------- */

static void create_mpu_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket))
        return;
    stor_meta_t meta;
    memset(&meta, 0, sizeof(meta));
    const char *why = NULL;
    s3_error_t err = s3_meta_from_headers(req, &meta, &why);
    if (err == S3E_NONE)
        err = mpu_checksum_from_headers(req, &meta, &why);
    if (err == S3E_NONE)
        err = s3_new_object_access(req, &meta, &why);
    /* The initiator, kept when it is not the object's owner to be (object
     * ownership giving the bucket owner the object): absent, it is. */
    if (err == S3E_NONE && req->user && strcmp(meta.owner, req->user->access_key) != 0 &&
        !(meta.initiator = strdup(req->user->access_key)))
        err = S3E_INTERNAL;
    /* The object's lock, kept by the upload: the bucket's default
     * retention runs from the upload's creation. */
    if (err == S3E_NONE)
        err = s3_lock_for_write(req, &meta, false, &why);
    /* The upload's encryption: its parts are written under it. */
    s3_sse_key_t dk;
    if (err == S3E_NONE)
        err = s3_sse_for_write(req, &meta, &dk, &why);
    cipher_secure_zero(&dk, sizeof dk);
    if (err != S3E_NONE) {
        stor_meta_free(&meta);
        s3_reply_error(req, err, why);
        return;
    }
    if (meta.checksum_algorithm) {
        s3_reply_header(req, "x-amz-checksum-algorithm", meta.checksum_algorithm);
        s3_reply_header(req, "x-amz-checksum-type", meta.checksum_type);
    }
    char id[STOR_UPLOAD_ID_LEN + 1];
    stor_status_t st =
        stor_mpu_create(req->srv->cfg.store, &req->authz_bucket, req->key, &meta, id);
    if (st == STOR_OK)
        s3_sse_reply_headers(req, &meta);
    stor_meta_free(&meta);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_lifecycle_abort_headers(req, req->key, clock_wall_ms() / 1000);
    buf_t xml;
    buf_init(&xml, 8192);
    s3_xml_open(&xml, "InitiateMultipartUploadResult");
    s3_xml_elem(&xml, "Bucket", req->bucket);
    s3_xml_elem(&xml, "Key", req->key);
    s3_xml_elem(&xml, "UploadId", id);
    buf_append_str(&xml, "</InitiateMultipartUploadResult>");
    s3_reply_xml(req, 200, &xml);
}

/* ---- UploadPart ------------------------------------------------------------------- */

/* Under etag: fast a part is hashed as a PutObject is (body.c): CRC32C, and an
 * opaque "<32 hex>-1" ETag, unless Content-MD5 is sent (then its verified MD5
 * is the ETag). Complete accepts both shapes (stor_mpu_etag). */
/* The key a part of the request's upload is written under (the upload's
 * encryption: its SSE-C key must come with every part, as in S3), at the
 * part's counter block. Replies and returns false on error. */
static bool part_key(s3_req_t *req, const stor_meta_t *upload, long number, s3_sse_key_t *dk)
{
    const char *why = NULL;
    s3_error_t err = s3_sse_for_read(req, upload, false, dk, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return false;
    }
    dk->part = (uint32_t)number;
    s3_sse_reply_headers(req, upload);
    return true;
}

/* What an UploadPart or UploadPartCopy starts from: the upload checked,
 * the part number, the key the part is written under (part_key), the
 * upload's checksum algorithm (a part of an upload that named one gets its
 * checksum of it, computed here when the client sent none or the part is a
 * copy, for Complete) and whether its object will be locked (a retention or
 * legal hold kept by the upload). Replies and returns false on error. */
static bool part_start(s3_req_t *req, s3_sse_key_t *dk, checksum_alg_t *alg_p, bool *locked_p)
{
    stor_meta_t up;
    long number = -1;
    bool ok = upload_check(req, &up) && (number = part_number(req)) >= 0 &&
              part_key(req, &up, number, dk);
    *alg_p = checksum_alg_from_name(up.checksum_algorithm);
    *locked_p = up.lock_retention != NULL || up.legal_hold != NULL;
    stor_meta_free(&up);
    return ok;
}

static void upload_part_begin(s3_req_t *req)
{
    s3_sse_key_t dk = {0};
    checksum_alg_t alg;
    bool locked;
    if (!part_start(req, &dk, &alg, &locked))
        return;
    /* As S3: the bytes of locked data come with their integrity, in every
     * part as in a PutObject (s3_lock_for_write). */
    if (locked && !s3_lock_integrity_given(req)) {
        cipher_secure_zero(&dk, sizeof dk);
        s3_reply_error(req, S3E_INVALID_REQUEST,
                       "Content-MD5 OR x-amz-checksum- HTTP header is required for Upload Part "
                       "requests with Object Lock parameters");
        return;
    }
    if (alg != CHECKSUM_NONE)
        req->want_ck[s3_checksum_alg_of(alg)] = true;
    req->fast_etag = req->srv->cfg.etag_fast;
    s3_upload_begin(req);
    s3_sse_apply_writer(&dk, req->writer);
}

static void commit_part(s3_req_t *req, stor_writer_t *w, const char *etag, bool copy)
{
    stor_part_t part;
    memset(&part, 0, sizeof(part));
    part.number = (uint32_t)part_number(req);
    snprintf(part.etag, sizeof(part.etag), "%s", etag);
    for (int i = 0; i < S3_CK_COUNT; i++)
        *s3_part_checksum(&part, i) = req->checksums[i];
    stor_status_t st = stor_part_commit(w, req->key, s3_req_query(req, "uploadId"), &part);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    if (copy) {
        char date[32];
        date_format_iso8601(part.mtime_ms, date);
        buf_t xml;
        buf_init(&xml, 4096);
        s3_xml_open(&xml, "CopyPartResult");
        buf_printf(&xml, "<LastModified>%s</LastModified><ETag>&quot;%s&quot;</ETag>", date, etag);
        for (int i = 0; i < S3_CK_COUNT; i++)
            if (req->checksums[i])
                s3_xml_elem(&xml, s3_checksum_elem(i), req->checksums[i]);
        buf_append_str(&xml, "</CopyPartResult>");
        s3_reply_xml(req, 200, &xml);
        return;
    }
    s3_reply_checksums(req);
    s3_reply_headerf(req, "ETag", "\"%s\"", etag);
    s3_reply_empty(req, 200);
}

static void upload_part_finish(s3_req_t *req)
{
    stor_writer_t *w = req->writer;
    req->writer = NULL;
    commit_part(req, w, req->etag, false);
}

/* x-amz-copy-source-range: exactly "bytes=first-last" with first <= last
 * (unlike Range, nothing is clamped or implied): InvalidArgument otherwise,
 * and InvalidRange (400 here) when last lies beyond the source. */
static s3_error_t parse_copy_range(const char *v, uint64_t size, uint64_t *first_p, uint64_t *len_p)
{
    if (strncmp(v, "bytes=", 6) != 0 || !isdigit((unsigned char)v[6]))
        return S3E_INVALID_ARGUMENT;
    char *end;
    unsigned long long a = strtoull(v + 6, &end, 10);
    if (*end != '-' || !isdigit((unsigned char)end[1]))
        return S3E_INVALID_ARGUMENT;
    unsigned long long b = strtoull(end + 1, &end, 10);
    if (*end != '\0' || a > b)
        return S3E_INVALID_ARGUMENT;
    if (b >= size)
        return S3E_INVALID_COPY_RANGE;
    *first_p = a;
    *len_p = b - a + 1;
    return S3E_NONE;
}

/* ---- UploadPartCopy ---------------------------------------------------------------- */

static void upload_part_copy_begin(s3_req_t *req)
{
    s3_sse_key_t dk = {0};
    checksum_alg_t alg;
    bool locked; /* a copy's bytes come from the store: no integrity header to ask for */
    if (!part_start(req, &dk, &alg, &locked))
        return;
    if (alg != CHECKSUM_NONE) {
        req->want_ck[s3_checksum_alg_of(alg)] = true;
        if (s3_checksums_begin(req) != S3E_NONE) {
            cipher_secure_zero(&dk, sizeof dk);
            s3_reply_error(req, S3E_INTERNAL, NULL);
            return;
        }
    }
    bool same;
    stor_reader_t *reader = s3_copy_source_open(req, &same);
    if (!reader) {
        cipher_secure_zero(&dk, sizeof dk);
        return;
    }
    uint64_t size = stor_reader_meta(reader)->size, first = 0, len = size;
    const char *range = s3_req_header(req, "x-amz-copy-source-range");
    s3_error_t rerr = range ? parse_copy_range(range, size, &first, &len) : S3E_NONE;
    if (rerr != S3E_NONE) {
        stor_reader_close(reader);
        cipher_secure_zero(&dk, sizeof dk);
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "Range specified is not valid for source object of size: %" PRIu64, size);
        s3_reply_error(req, rerr,
                       rerr == S3E_INVALID_COPY_RANGE
                           ? msg
                           : "The x-amz-copy-source-range value must be of the form "
                             "bytes=first-last where first and last are the zero-based offsets "
                             "of the first and last bytes to copy");
        return;
    }
    stor_writer_t *w = NULL;
    char etag[33];
    s3_error_t err = s3_copy_range(req, reader, first, len, &dk, &w, etag);
    stor_reader_close(reader);
    if (err == S3E_NONE && (err = s3_checksums_end(req)) != S3E_NONE)
        stor_writer_abort(w);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, NULL);
        return;
    }
    commit_part(req, w, etag, true);
}

/* ---- Complete / Abort ------------------------------------------------------------ */

/* The upload is looked up in finish(), with the parts: a completed one may
 * be a retry (below). */
static void complete_mpu_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket))
        return;
    stor_precond_t cond;
    const char *why = NULL;
    s3_error_t err = s3_write_precond(req, &cond, &why);
    if (err != S3E_NONE) {
        s3_reply_error(req, err, why);
        return;
    }
    req->checksums_of_object = true;
    req->body_kind = S3_BODY_XML;
}

/* A CompleteMultipartUpload retried after it succeeded (its answer lost)
 * finds no upload. S3 answers it 200 again: when the key holds the object
 * those very parts made (its ETag is theirs, stor_mpu_etag), *meta_p gets
 * that object's metadata (the caller frees it). */
static bool completed_before(s3_req_t *req, const stor_complete_part_t *parts, size_t n,
                             stor_meta_t *meta_p)
{
    char etag[64];
    if (stor_mpu_etag(parts, n, etag) != STOR_OK ||
        stor_head(req->srv->cfg.store, req->bucket, req->key, meta_p) != STOR_OK)
        return false;
    if (strcasecmp(meta_p->etag, etag) == 0)
        return true;
    stor_meta_free(meta_p);
    return false;
}

static void complete_mpu_finish(s3_req_t *req)
{
    xml_complete_part_t *parts = NULL;
    size_t n = 0;
    if (s3_xml_parse_complete(req->body.data ? req->body.data : "", req->body.len, &parts, &n) !=
        0) {
        s3_reply_error(req, S3E_MALFORMED_XML, NULL);
        return;
    }
    stor_complete_part_t *cp = calloc(n, sizeof(*cp));
    if (!cp) {
        s3_xml_complete_parts_free(parts, n);
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    /* A part number listed twice in a row counts once, as its last listing:
     * a part re-uploaded while the client gathered the list shows up in it
     * twice, and the upload that finished last is the part (RGW completes
     * such a list, ceph s3-tests' test_multipart_resend_first_finishes_last
     * expects it; AWS documents only ascending order, docs/operations.md).
     * A number lower than the one before stays InvalidPartOrder. */
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && cp[m - 1].number == parts[i].number)
            m--;
        cp[m].number = parts[i].number;
        cp[m].etag = parts[i].etag;
        memcpy(cp[m].checksums, parts[i].checksums, sizeof cp[m].checksums);
        m++;
    }
    stor_meta_t meta;
    memset(&meta, 0, sizeof(meta));
    stor_precond_t cond;
    const char *why = NULL;
    s3_write_precond(req, &cond, &why); /* checked in begin() */
    for (int i = 0; i < CHECKSUM_NONE; i++) {
        char name[40];
        checksum_header_name((checksum_alg_t)i, name);
        cond.checksums[i] = s3_req_header(req, name);
    }
    const char *id = s3_req_query(req, "uploadId");
    /* An encrypted upload's parts are read back by their place in the
     * object (stor_reader_set_part_cipher): it completes from parts 1..N. */
    stor_meta_t upload = {0};
    if (id && stor_mpu_meta(req->srv->cfg.store, req->bucket, req->key, id, &upload) == STOR_OK &&
        upload.sse) {
        bool consecutive = true;
        for (size_t i = 0; i < n; i++)
            consecutive &= cp[i].number == i + 1;
        if (!consecutive) {
            stor_meta_free(&upload);
            free(cp);
            s3_xml_complete_parts_free(parts, n);
            s3_reply_error(req, S3E_INVALID_PART,
                           "s3rdmad completes an encrypted multipart upload from parts numbered "
                           "1, 2, 3... without gaps.");
            return;
        }
    }
    stor_meta_free(&upload);
    stor_status_t st = id ? stor_mpu_complete(req->srv->cfg.store, &req->authz_bucket, req->key, id,
                                              cp, m, &cond, &meta)
                          : STOR_ERR_NO_UPLOAD;
    if (st == STOR_ERR_NO_UPLOAD && completed_before(req, cp, m, &meta))
        st = STOR_OK;
    free(cp);
    s3_xml_complete_parts_free(parts, n);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 16384);
    s3_xml_open(&xml, "CompleteMultipartUploadResult");
    s3_xml_elem(&xml, "Location", req->resource);
    s3_xml_elem(&xml, "Bucket", req->bucket);
    s3_xml_elem(&xml, "Key", req->key);
    buf_printf(&xml, "<ETag>&quot;%s&quot;</ETag>", meta.etag);
    object_checksum_xml(&xml, &meta);
    buf_append_str(&xml, "</CompleteMultipartUploadResult>");
    s3_sse_reply_headers(req, &meta);
    s3_new_version_header(req, &meta);
    stor_meta_free(&meta);
    s3_reply_xml(req, 200, &xml);
}

static void abort_mpu_begin(s3_req_t *req)
{
    if (!upload_check(req, NULL))
        return;
    stor_status_t st = stor_mpu_abort(req->srv->cfg.store, &req->authz_bucket, req->key,
                                      s3_req_query(req, "uploadId"));
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    s3_reply_empty(req, 204);
}

/* ---- ListParts / ListMultipartUploads -------------------------------------------- */

/* An upload's Initiator and Owner elements: who created it, and the
 * object's owner to be (the initiator, or the bucket owner where object
 * ownership gives it the objects); the initiator is recorded only when the
 * two differ. */
static void upload_principals(s3_req_t *req, buf_t *xml, const stor_meta_t *up)
{
    const char *owner = s3_object_owner(&req->authz_bucket, up);
    s3_xml_principal(req->srv, xml, "Initiator", up->initiator ? up->initiator : owner);
    s3_xml_principal(req->srv, xml, "Owner", owner);
}

static long query_long(s3_req_t *req, const char *name, long dflt, long max)
{
    const char *v = s3_req_query(req, name);
    if (!v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0)
        return -1;
    return n > max ? max : n;
}

static void list_parts_begin(s3_req_t *req)
{
    stor_meta_t up;
    const char *id = upload_check(req, &up);
    long max = query_long(req, "max-parts", 1000, 1000);
    long marker = query_long(req, "part-number-marker", 0, S3R_MAX_PART_NUMBER);
    if (id && (max < 0 || marker < 0)) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, NULL);
        id = NULL;
    }
    stor_part_t *parts = NULL;
    size_t n = 0;
    stor_status_t st = id ? stor_mpu_list_parts(req->srv->cfg.store, req->bucket, req->key, id,
                                                (uint32_t)marker, &parts, &n)
                          : STOR_OK;
    if (st != STOR_OK)
        s3_reply_error(req, s3_error_from_stor(st), NULL);
    if (!id || st != STOR_OK) {
        stor_meta_free(&up);
        return;
    }
    bool truncated = n > (size_t)max;
    size_t shown = truncated ? (size_t)max : n;
    buf_t xml;
    buf_init(&xml, 16 * 1024 * 1024);
    s3_xml_open(&xml, "ListPartsResult");
    s3_xml_elem(&xml, "Bucket", req->bucket);
    s3_xml_elem(&xml, "Key", req->key);
    s3_xml_elem(&xml, "UploadId", id);
    upload_principals(req, &xml, &up);
    s3_xml_elem(&xml, "StorageClass", s3_storage_class(&up));
    if (up.checksum_algorithm) {
        s3_xml_elem(&xml, "ChecksumAlgorithm", up.checksum_algorithm);
        s3_xml_elem(&xml, "ChecksumType", up.checksum_type ? up.checksum_type : "COMPOSITE");
    }
    stor_meta_free(&up);
    buf_printf(&xml, "<PartNumberMarker>%ld</PartNumberMarker>", marker);
    if (shown)
        buf_printf(&xml, "<NextPartNumberMarker>%u</NextPartNumberMarker>",
                   parts[shown - 1].number);
    buf_printf(&xml, "<MaxParts>%ld</MaxParts><IsTruncated>%s</IsTruncated>", max,
               truncated ? "true" : "false");
    for (size_t i = 0; i < shown; i++) {
        char date[32];
        date_format_iso8601(parts[i].mtime_ms, date);
        buf_printf(&xml,
                   "<Part><PartNumber>%u</PartNumber><LastModified>%s</LastModified>"
                   "<ETag>&quot;%s&quot;</ETag><Size>%" PRIu64 "</Size>",
                   parts[i].number, date, parts[i].etag, parts[i].size);
        for (int k = 0; k < S3_CK_COUNT; k++) {
            const char *ck = *s3_part_checksum(&parts[i], k);
            if (ck)
                s3_xml_elem(&xml, s3_checksum_elem(k), ck);
        }
        buf_append_str(&xml, "</Part>");
    }
    buf_append_str(&xml, "</ListPartsResult>");
    stor_parts_free(parts, n);
    s3_reply_xml(req, 200, &xml);
}

static void list_mpu_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_READ, &req->authz_bucket))
        return;
    const char *prefix = s3_req_query(req, "prefix");
    const char *key_marker = s3_req_query(req, "key-marker");
    const char *id_marker = s3_req_query(req, "upload-id-marker");
    long max = query_long(req, "max-uploads", 1000, 1000);
    if (max < 0) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, NULL);
        return;
    }
    stor_upload_t *ups = NULL;
    size_t n = 0;
    int more = 0;
    stor_status_t st = stor_mpu_list(req->srv->cfg.store, req->bucket, prefix ? prefix : "",
                                     key_marker, id_marker, (size_t)max, &ups, &n, &more);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }
    buf_t xml;
    buf_init(&xml, 16 * 1024 * 1024);
    s3_xml_open(&xml, "ListMultipartUploadsResult");
    s3_xml_elem(&xml, "Bucket", req->bucket);
    s3_xml_elem(&xml, "KeyMarker", key_marker ? key_marker : "");
    s3_xml_elem(&xml, "UploadIdMarker", id_marker ? id_marker : "");
    if (more && n) {
        s3_xml_elem(&xml, "NextKeyMarker", ups[n - 1].key);
        s3_xml_elem(&xml, "NextUploadIdMarker", ups[n - 1].upload_id);
    }
    s3_xml_elem(&xml, "Prefix", prefix ? prefix : "");
    buf_printf(&xml, "<MaxUploads>%ld</MaxUploads><IsTruncated>%s</IsTruncated>", max,
               more ? "true" : "false");
    const char *delim = s3_req_query(req, "delimiter");
    if (delim && *delim)
        s3_xml_elem(&xml, "Delimiter", delim);
    size_t plen = prefix ? strlen(prefix) : 0;
    buf_t prefixes;
    buf_init(&prefixes, 16 * 1024 * 1024);
    char last_cp[S3R_MAX_KEY_BYTES + 8] = "";
    for (size_t i = 0; i < n; i++) {
        /* Keys with the delimiter after the prefix roll up into CommonPrefixes. */
        size_t cpl = s3_common_prefix_len(ups[i].key, strlen(ups[i].key), plen, delim);
        if (cpl) {
            if (cpl < sizeof(last_cp) &&
                !(strlen(last_cp) == cpl && strncmp(last_cp, ups[i].key, cpl) == 0)) {
                snprintf(last_cp, sizeof(last_cp), "%.*s", (int)cpl, ups[i].key);
                buf_append_str(&prefixes, "<CommonPrefixes>");
                s3_xml_elem(&prefixes, "Prefix", last_cp);
                buf_append_str(&prefixes, "</CommonPrefixes>");
            }
            continue;
        }
        char date[32];
        date_format_iso8601(ups[i].initiated_ms, date);
        buf_append_str(&xml, "<Upload>");
        s3_xml_elem(&xml, "Key", ups[i].key);
        s3_xml_elem(&xml, "UploadId", ups[i].upload_id);
        /* Who, as the listing read it from the upload's record: one ended
         * meanwhile, or with no owner recorded, shows the bucket's owner. */
        stor_meta_t up = {.owner = ups[i].owner, .initiator = ups[i].initiator};
        upload_principals(req, &xml, &up);
        buf_printf(&xml, "<StorageClass>STANDARD</StorageClass><Initiated>%s</Initiated></Upload>",
                   date);
    }
    buf_append(&xml, prefixes.data ? prefixes.data : "", prefixes.len);
    buf_free(&prefixes);
    buf_append_str(&xml, "</ListMultipartUploadsResult>");
    stor_uploads_free(ups, n);
    s3_reply_xml(req, 200, &xml);
}

const s3_op_t s3_op_create_mpu = {"CreateMultipartUpload", create_mpu_begin, NULL};
const s3_op_t s3_op_upload_part = {"UploadPart", upload_part_begin, upload_part_finish};
const s3_op_t s3_op_upload_part_copy = {"UploadPartCopy", upload_part_copy_begin, NULL};
const s3_op_t s3_op_complete_mpu = {"CompleteMultipartUpload", complete_mpu_begin,
                                    complete_mpu_finish};
const s3_op_t s3_op_abort_mpu = {"AbortMultipartUpload", abort_mpu_begin, NULL};
const s3_op_t s3_op_list_parts = {"ListParts", list_parts_begin, NULL};
const s3_op_t s3_op_list_mpu = {"ListMultipartUploads", list_mpu_begin, NULL};
