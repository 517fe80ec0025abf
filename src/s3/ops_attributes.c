/* GetObjectAttributes (GET /bucket/key?attributes): what the
 * x-amz-object-attributes header names of an object's ETag, checksum,
 * parts (paged by x-amz-max-parts and x-amz-part-number-marker), size and
 * storage class, without its bytes, as S3 answers it. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/date.h"
#include "common/s3r_limits.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/sse.h"

/* Parts one answer lists at most, and when x-amz-max-parts is absent (S3's). */
#define ATTR_MAX_PARTS 1000

enum {
    ATTR_ETAG = 1 << 0,
    ATTR_CHECKSUM = 1 << 1,
    ATTR_PARTS = 1 << 2,
    ATTR_STORAGE_CLASS = 1 << 3,
    ATTR_SIZE = 1 << 4,
};

/* The attribute set the header value names (comma-separated, spaces around
 * names ignored, S3's exact spelling); 0 when it names none, -1 when it
 * names one S3 does not know. */
static int attrs_parse(const char *v)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {{"ETag", ATTR_ETAG},
                 {"Checksum", ATTR_CHECKSUM},
                 {"ObjectParts", ATTR_PARTS},
                 {"StorageClass", ATTR_STORAGE_CLASS},
                 {"ObjectSize", ATTR_SIZE}};
    int set = 0;
    while (v && *v) {
        v += strspn(v, " \t");
        size_t n = strcspn(v, ",");
        size_t len = n;
        while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
            len--;
        if (len) {
            int bit = 0;
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                if (strlen(names[i].name) == len && memcmp(names[i].name, v, len) == 0)
                    bit = names[i].bit;
            if (!bit)
                return -1;
            set |= bit;
        }
        v += n;
        if (*v == ',')
            v++;
    }
    return set;
}

/* A non-negative integer header (dflt when absent) clamped to max; -1 when
 * it is not one. */
static long header_count(s3_req_t *req, const char *name, long dflt, long max)
{
    const char *v = s3_req_header(req, name);
    if (!v)
        return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 0)
        return -1;
    return n > max ? max : n;
}

/* <Checksum>: the object's stored checksums and their type, COMPOSITE for
 * a multipart object's checksum of its parts' checksums ("<base64>-N"),
 * FULL_OBJECT otherwise; nothing when it has none. */
static void checksum_xml(buf_t *xml, const stor_meta_t *meta)
{
    bool any = false, composite = false;
    for (int i = 0; i < S3_CK_COUNT; i++) {
        const char *ck = *s3_meta_checksum(meta, (enum s3_checksum_alg)i);
        if (!ck)
            continue;
        if (!any)
            buf_append_str(xml, "<Checksum>");
        any = true;
        composite = composite || (meta->parts_count && strchr(ck, '-'));
        s3_xml_elem(xml, s3_checksum_elem((enum s3_checksum_alg)i), ck);
    }
    if (any)
        buf_printf(xml, "<ChecksumType>%s</ChecksumType></Checksum>",
                   meta->checksum_type ? meta->checksum_type
                   : composite         ? "COMPOSITE"
                                       : "FULL_OBJECT");
}

/* <ObjectParts> of a multipart object: its part count and the parts after
 * marker, at most max of them, each with its checksum when the object
 * keeps its parts' checksums. */
static void parts_xml(buf_t *xml, const stor_meta_t *meta, long max, long marker)
{
    buf_printf(xml, "<ObjectParts><PartsCount>%" PRIu32 "</PartsCount>", meta->parts_count);
    buf_printf(xml, "<PartNumberMarker>%ld</PartNumberMarker><MaxParts>%ld</MaxParts>", marker,
               max);
    long listed = 0, last = marker;
    checksum_alg_t alg = checksum_alg_from_name(meta->checksum_algorithm);
    /* The parts' checksums, comma-separated: ck walks them beside n. */
    const char *ck = alg != CHECKSUM_NONE ? meta->part_checksums : NULL;
    for (long n = 1; ck && n <= marker; n++) {
        ck = strchr(ck, ',');
        ck = ck ? ck + 1 : NULL;
    }
    buf_t parts;
    buf_init(&parts, 256 * ATTR_MAX_PARTS);
    for (long n = marker + 1; n <= (long)meta->parts_count && listed < max; n++, listed++) {
        buf_printf(&parts, "<Part><PartNumber>%ld</PartNumber><Size>%" PRIu64 "</Size>", n,
                   meta->part_sizes[n - 1]);
        size_t len = ck ? strcspn(ck, ",") : 0;
        if (len && len < CHECKSUM_VALUE_MAX)
            buf_printf(&parts, "<Checksum%s>%.*s</Checksum%s>", checksum_alg_name(alg), (int)len,
                       ck, checksum_alg_name(alg));
        if (ck)
            ck = ck[len] == ',' ? ck + len + 1 : NULL;
        buf_append_str(&parts, "</Part>");
        last = n;
    }
    bool truncated = last < (long)meta->parts_count;
    buf_printf(xml, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
    if (listed)
        buf_printf(xml, "<NextPartNumberMarker>%ld</NextPartNumberMarker>", last);
    buf_append(xml, parts.data ? parts.data : "", parts.len);
    buf_free(&parts);
    buf_append_str(xml, "</ObjectParts>");
}

static void get_object_attributes_begin(s3_req_t *req)
{
    const char *names = s3_req_header(req, "x-amz-object-attributes");
    int attrs = attrs_parse(names);
    if (attrs <= 0) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT,
                       attrs < 0 ? "Invalid attribute name specified."
                                 : "The x-amz-object-attributes header specifying the attributes "
                                   "to be retrieved is either missing or empty");
        return;
    }
    long max = header_count(req, "x-amz-max-parts", ATTR_MAX_PARTS, ATTR_MAX_PARTS);
    long marker = header_count(req, "x-amz-part-number-marker", 0, S3R_MAX_PART_NUMBER);
    if (max < 0 || marker < 0) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT,
                       max < 0 ? "Provided max-parts not an integer or within integer range"
                               : "Provided part-number-marker not an integer or within integer "
                                 "range");
        return;
    }
    stor_meta_t meta;
    if (!s3_object_for_request(req, S3_PERM_READ, &meta))
        return;
    /* An SSE-C object's attributes need its key, as its bytes do (S3). */
    s3_sse_key_t dk;
    const char *why = NULL;
    s3_error_t err = s3_sse_for_read(req, &meta, false, &dk, &why);
    cipher_secure_zero(&dk, sizeof dk);
    if (err != S3E_NONE) {
        stor_meta_free(&meta);
        s3_reply_error(req, err, why);
        return;
    }
    buf_t xml;
    buf_init(&xml, 256 * ATTR_MAX_PARTS + 16 * 1024);
    s3_xml_open(&xml, "GetObjectAttributesResponse");
    if (attrs & ATTR_ETAG)
        s3_xml_elem(&xml, "ETag", meta.etag);
    if (attrs & ATTR_CHECKSUM)
        checksum_xml(&xml, &meta);
    if ((attrs & ATTR_PARTS) && meta.parts_count)
        parts_xml(&xml, &meta, max, marker);
    if (attrs & ATTR_STORAGE_CLASS)
        s3_xml_elem(&xml, "StorageClass", s3_storage_class(&meta));
    if (attrs & ATTR_SIZE)
        buf_printf(&xml, "<ObjectSize>%" PRIu64 "</ObjectSize>", meta.size);
    buf_append_str(&xml, "</GetObjectAttributesResponse>");
    char date[40];
    date_format_http(meta.mtime_ms / 1000, date);
    s3_reply_header(req, "Last-Modified", date);
    /* Asked for by id, s3_object_for_request gave the version's headers. */
    if (!s3_req_query(req, "versionId"))
        s3_version_headers(req, &req->authz_bucket, &meta, false);
    stor_meta_free(&meta);
    s3_reply_xml(req, 200, &xml);
}

const s3_op_t s3_op_get_object_attributes = {"GetObjectAttributes", get_object_attributes_begin,
                                             NULL};
