/* ListObjects (v1) and ListObjectsV2: a cursor scan of the index with
 * prefix, delimiter (CommonPrefixes), max-keys, marker / start-after /
 * continuation-token and encoding-type=url. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/s3r_limits.h"
#include "common/sigv4.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

/* Appended to a common prefix to form a key past everything under it: keys
 * are valid UTF-8, which never contains the byte 0xFF. */
#define PAST_PREFIX "\xff"

/* <tag>value</tag>, the value URL-encoded when the client asked for
 * encoding-type=url. */
static void elem(buf_t *xml, const char *tag, const char *value, bool url)
{
    if (!url) {
        s3_xml_elem(xml, tag, value);
        return;
    }
    buf_t enc;
    buf_init(&enc, 8 * S3R_MAX_KEY_BYTES);
    sigv4_uri_encode(value, strlen(value), false, &enc);
    s3_xml_elem(xml, tag, enc.data ? enc.data : "");
    buf_free(&enc);
}

static void list_objects_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, &req->authz_bucket))
        return;
    const char *lt = s3_req_query(req, "list-type");
    bool v2 = lt && strcmp(lt, "2") == 0;
    if (lt && !v2) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "Invalid list-type.");
        return;
    }
    const char *prefix = s3_req_query(req, "prefix");
    const char *delim = s3_req_query(req, "delimiter");
    const char *enc = s3_req_query(req, "encoding-type");
    const char *mk = s3_req_query(req, "max-keys");
    const char *marker = s3_req_query(req, "marker");
    const char *start_after = s3_req_query(req, "start-after");
    const char *token = s3_req_query(req, "continuation-token");
    const char *fo = s3_req_query(req, "fetch-owner");
    if (!prefix)
        prefix = "";
    if (delim && !*delim)
        delim = NULL;
    bool url = false;
    if (enc) {
        if (strcmp(enc, "url") != 0) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "Invalid Encoding Method specified in Request");
            return;
        }
        url = true;
    }
    long max_keys = S3R_MAX_LIST_KEYS;
    if (mk) {
        char *end;
        max_keys = strtol(mk, &end, 10);
        if (*end || max_keys < 0) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "Provided max-keys not an integer or within integer range");
            return;
        }
        if (max_keys > S3R_MAX_LIST_KEYS)
            max_keys = S3R_MAX_LIST_KEYS;
    }
    bool fetch_owner = !v2 || (fo && strcmp(fo, "true") == 0);

    /* Where to start: strictly after this key. */
    char after[2 * S3R_MAX_KEY_BYTES + 8] = "";
    if (v2 && token) {
        uint8_t raw[2 * S3R_MAX_KEY_BYTES + 8];
        long n = base64url_decode(token, strlen(token), raw, sizeof(raw) - 1);
        if (n < 0) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "The continuation token provided is incorrect");
            return;
        }
        memcpy(after, raw, (size_t)n);
        after[n] = '\0';
    } else {
        const char *from = v2 ? start_after : marker;
        if (from && strlen(from) <= S3R_MAX_KEY_BYTES) {
            snprintf(after, sizeof(after), "%s", from);
            /* A marker that is itself a common prefix skips everything under it. */
            size_t cp = s3_common_prefix_len(after, strlen(after), strlen(prefix), delim);
            if (cp && cp == strlen(after) && strncmp(after, prefix, strlen(prefix)) == 0)
                strcat(after, PAST_PREFIX);
        }
    }

    stor_iter_t *it = NULL;
    stor_status_t st = stor_iter_open(req->srv->cfg.store, req->bucket, prefix, after, &it);
    if (st != STOR_OK) {
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return;
    }

    buf_t contents, prefixes;
    buf_init(&contents, 64 * 1024 * 1024);
    buf_init(&prefixes, 64 * 1024 * 1024);
    long count = 0;
    bool truncated = false;
    char last[2 * S3R_MAX_KEY_BYTES + 8] = "";  /* resume point */
    char last_name[S3R_MAX_KEY_BYTES + 8] = ""; /* v1 NextMarker */
    size_t prefix_len = strlen(prefix);
    for (;;) {
        const char *key;
        size_t key_len;
        stor_meta_t meta;
        memset(&meta, 0, sizeof(meta));
        int r = stor_iter_next(it, &key, &key_len, &meta);
        if (r < 0) {
            stor_meta_free(&meta);
            stor_iter_close(it);
            buf_free(&contents);
            buf_free(&prefixes);
            s3_reply_error(req, S3E_INTERNAL, NULL);
            return;
        }
        if (r == 0)
            break;
        if (count >= max_keys) {
            truncated = true;
            stor_meta_free(&meta);
            break;
        }
        size_t cp = s3_common_prefix_len(key, key_len, prefix_len, delim);
        if (cp) {
            char cpref[S3R_MAX_KEY_BYTES + 8];
            snprintf(cpref, sizeof(cpref), "%.*s", (int)cp, key);
            buf_append_str(&prefixes, "<CommonPrefixes>");
            elem(&prefixes, "Prefix", cpref, url);
            buf_append_str(&prefixes, "</CommonPrefixes>");
            snprintf(last_name, sizeof(last_name), "%s", cpref);
            snprintf(last, sizeof(last), "%s" PAST_PREFIX, cpref);
            stor_iter_seek(it, last, strlen(last));
        } else {
            char date[32];
            s3_time_iso8601(meta.mtime_ms, date);
            buf_append_str(&contents, "<Contents>");
            char kbuf[S3R_MAX_KEY_BYTES + 8];
            snprintf(kbuf, sizeof(kbuf), "%.*s", (int)key_len, key);
            elem(&contents, "Key", kbuf, url);
            buf_printf(&contents,
                       "<LastModified>%s</LastModified><ETag>&quot;%s&quot;</ETag>"
                       "<Size>%" PRIu64 "</Size><StorageClass>STANDARD</StorageClass>",
                       date, meta.etag, meta.size);
            if (fetch_owner) {
                s3_xml_principal(&contents, "Owner", req->user->access_key);
            }
            buf_append_str(&contents, "</Contents>");
            snprintf(last_name, sizeof(last_name), "%s", kbuf);
            snprintf(last, sizeof(last), "%s", kbuf);
        }
        stor_meta_free(&meta);
        count++;
    }
    stor_iter_close(it);

    buf_t xml;
    buf_init(&xml, 128 * 1024 * 1024);
    s3_xml_open(&xml, "ListBucketResult");
    elem(&xml, "Name", req->bucket, false);
    elem(&xml, "Prefix", prefix, url);
    if (v2) {
        if (start_after)
            elem(&xml, "StartAfter", start_after, url);
        if (token)
            elem(&xml, "ContinuationToken", token, false);
        if (truncated) {
            char tok[4 * S3R_MAX_KEY_BYTES];
            base64url_encode((const uint8_t *)last, strlen(last), tok);
            elem(&xml, "NextContinuationToken", tok, false);
        }
        buf_printf(&xml, "<KeyCount>%ld</KeyCount>", count);
    } else {
        elem(&xml, "Marker", marker ? marker : "", url);
        if (truncated && delim)
            elem(&xml, "NextMarker", last_name, url);
    }
    buf_printf(&xml, "<MaxKeys>%ld</MaxKeys>", max_keys);
    if (delim)
        elem(&xml, "Delimiter", delim, url);
    if (url)
        buf_append_str(&xml, "<EncodingType>url</EncodingType>");
    buf_printf(&xml, "<IsTruncated>%s</IsTruncated>", truncated ? "true" : "false");
    buf_append(&xml, contents.data ? contents.data : "", contents.len);
    buf_append(&xml, prefixes.data ? prefixes.data : "", prefixes.len);
    buf_append_str(&xml, "</ListBucketResult>");
    buf_free(&contents);
    buf_free(&prefixes);
    s3_reply_xml(req, 200, &xml);
}

const s3_op_t s3_op_list_objects = {"ListObjects", list_objects_begin, NULL};
