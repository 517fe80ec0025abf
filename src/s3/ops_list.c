/* ListObjects (v1), ListObjectsV2 and ListObjectVersions: one cursor scan of
 * the index (list_walk) with prefix, delimiter (CommonPrefixes), max-keys and
 * a start point, rendered in each listing's own XML. ListObjectVersions
 * walks every version (storage's versions iterator): objects and delete
 * markers, each key's newest first. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/date.h"
#include "common/s3r_limits.h"
#include "common/sigv4.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

/* Appended to a common prefix to form a key past everything under it: keys
 * are valid UTF-8, which never contains the byte 0xFF. */
#define PAST_PREFIX "\xff"

#define KEY_BUF (2 * S3R_MAX_KEY_BYTES + 8)

/* A listing document's bound (a page of 1,000 keys of 1 KiB, URL-encoded,
 * stays far below), and a reply of several pages' (which takes no further
 * page past S3R_NATIVE_LIST_BODY_BYTES). Native listings run on the
 * executor threads (rdma.native_threads): a few such replies at a time. */
#define LIST_DOC_MAX (128 * 1024 * 1024)

/* <tag>value</tag>, the value URL-encoded when the client asked for
 * encoding-type=url: encoded straight into xml (on every key of a page),
 * as percent-encoding leaves nothing XML must escape. */
static void elem(buf_t *xml, const char *tag, const char *value, bool url)
{
    if (!url) {
        s3_xml_elem(xml, tag, value);
        return;
    }
    buf_append(xml, "<", 1);
    buf_append_str(xml, tag);
    buf_append(xml, ">", 1);
    sigv4_uri_encode(value, strlen(value), false, xml);
    buf_append(xml, "</", 2);
    buf_append_str(xml, tag);
    buf_append(xml, ">", 1);
}

/* The query parameters every listing shares. */
typedef struct list_query {
    const char *prefix; /* "" when absent */
    const char *delim;  /* NULL when absent or empty */
    bool url;           /* encoding-type=url */
    long max_keys;
} list_query_t;

/* Reads prefix, delimiter, encoding-type and max-keys; replies and returns
 * false when one is invalid. */
static bool list_query(s3_req_t *req, list_query_t *q)
{
    q->prefix = s3_req_query(req, "prefix");
    q->delim = s3_req_query(req, "delimiter");
    const char *enc = s3_req_query(req, "encoding-type");
    const char *mk = s3_req_query(req, "max-keys");
    if (!q->prefix)
        q->prefix = "";
    if (q->delim && !*q->delim)
        q->delim = NULL;
    q->url = false;
    if (enc) {
        if (strcmp(enc, "url") != 0) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "Invalid Encoding Method specified in Request");
            return false;
        }
        q->url = true;
    }
    q->max_keys = S3R_MAX_LIST_KEYS;
    if (mk) {
        char *end;
        q->max_keys = strtol(mk, &end, 10);
        if (!*mk || *end || q->max_keys < 0) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "Provided max-keys not an integer or within integer range");
            return false;
        }
        if (q->max_keys > S3R_MAX_LIST_KEYS)
            q->max_keys = S3R_MAX_LIST_KEYS;
    }
    return true;
}

/* The start point after a marker (v1 marker, v2 start-after, key-marker):
 * strictly after it, and past everything under it when it is itself a
 * common prefix. */
static void after_marker(const list_query_t *q, const char *marker, char after[KEY_BUF])
{
    after[0] = '\0';
    if (!marker || strlen(marker) > S3R_MAX_KEY_BYTES)
        return;
    snprintf(after, KEY_BUF, "%s", marker);
    size_t plen = strlen(q->prefix);
    size_t cp = s3_common_prefix_len(after, strlen(after), plen, q->delim);
    if (cp && cp == strlen(after) && strncmp(after, q->prefix, plen) == 0)
        strcat(after, PAST_PREFIX);
}

/* How a listing renders one object (common prefixes look alike in all);
 * latest: whether it is its key's latest version (always, but in
 * ListObjectVersions). want: the metadata object reads (stor_want_t). */
typedef struct list_render {
    void (*object)(s3_req_t *req, const list_query_t *q, buf_t *out, const char *key,
                   const stor_meta_t *meta, bool latest, void *ctx);
    void *ctx;
    unsigned want;
} list_render_t;

/* Where a listing starts: strictly after key `after` (ListObjects), or
 * after version version_marker of key after (ListObjectVersions, versions
 * set; version_marker NULL: after every version of it). */
typedef struct list_start {
    const char *after;
    bool versions;
    const char *version_marker;
} list_start_t;

/* What the walk ended with. */
typedef struct list_result {
    buf_t contents, prefixes;
    long count;
    bool truncated;
    char resume[KEY_BUF];             /* v2 continuation: the last key, or prefix + 0xFF */
    char last[S3R_MAX_KEY_BYTES + 8]; /* the last key or common prefix listed */
    char last_version[STOR_VERSION_ID_LEN + 1]; /* the last version listed */
    bool last_was_prefix;
} list_result_t;

/* r->resume after r->last: the key itself, or past everything under the
 * common prefix. */
static void list_resume(list_result_t *r)
{
    size_t n = strlen(r->last);
    memcpy(r->resume, r->last, n);
    if (r->last_was_prefix)
        r->resume[n++] = PAST_PREFIX[0];
    r->resume[n] = '\0';
}

static void list_result_free(list_result_t *r)
{
    buf_free(&r->contents);
    buf_free(&r->prefixes);
}

/* Lists the bucket's keys under q->prefix, strictly after `after`, rolling
 * keys up into common prefixes at q->delim, at most q->max_keys entries.
 * Returns false (replied, r freed) on a storage error. */
static bool list_walk(s3_req_t *req, const list_query_t *q, const list_start_t *from,
                      const list_render_t *render, list_result_t *r)
{
    memset(r, 0, sizeof(*r));
    buf_init(&r->contents, 64 * 1024 * 1024);
    buf_init(&r->prefixes, 64 * 1024 * 1024);
    if (q->max_keys == 0)
        return true; /* nothing asked for: S3 answers empty, not truncated */
    stor_iter_t *it = NULL;
    stor_t *store = req->srv->cfg.store;
    stor_status_t st = from->versions
                           ? stor_iter_open_versions(store, req->bucket, q->prefix, from->after,
                                                     from->version_marker, &it)
                           : stor_iter_open(store, req->bucket, q->prefix, from->after, &it);
    if (st != STOR_OK) {
        list_result_free(r);
        s3_reply_error(req, s3_error_from_stor(st), NULL);
        return false;
    }
    stor_iter_want(it, render->want);
    size_t prefix_len = strlen(q->prefix);
    for (;;) {
        const char *key;
        size_t key_len;
        stor_meta_t meta;
        memset(&meta, 0, sizeof(meta));
        int latest = 1;
        int n = from->versions ? stor_iter_next_version(it, &key, &key_len, &meta, &latest)
                               : stor_iter_next(it, &key, &key_len, &meta);
        if (n < 0) {
            stor_meta_free(&meta);
            stor_iter_close(it);
            list_result_free(r);
            s3_reply_error(req, S3E_INTERNAL, NULL);
            return false;
        }
        if (n == 0)
            break;
        if (r->count >= q->max_keys) {
            r->truncated = true;
            stor_meta_free(&meta);
            break;
        }
        size_t cp = s3_common_prefix_len(key, key_len, prefix_len, q->delim);
        /* Keys come from the store: at most S3R_MAX_KEY_BYTES. */
        size_t n_last = cp ? cp : key_len;
        if (n_last > S3R_MAX_KEY_BYTES)
            n_last = S3R_MAX_KEY_BYTES;
        memcpy(r->last, key, n_last);
        r->last[n_last] = '\0';
        r->last_was_prefix = cp != 0;
        if (cp) {
            buf_append_str(&r->prefixes, "<CommonPrefixes>");
            elem(&r->prefixes, "Prefix", r->last, q->url);
            buf_append_str(&r->prefixes, "</CommonPrefixes>");
            list_resume(r);
            stor_iter_seek(it, r->resume, strlen(r->resume));
        } else {
            render->object(req, q, &r->contents, r->last, &meta, latest != 0, render->ctx);
            if (from->versions)
                stor_version_id(&meta, r->last_version);
        }
        stor_meta_free(&meta);
        r->count++;
    }
    stor_iter_close(it);
    list_resume(r);
    return true;
}

/* LastModified, ETag, Size of an object entry. */
static void object_fields(buf_t *out, const stor_meta_t *meta)
{
    /* On every entry of a page: appended, not printf'ed. */
    char date[32], size[24];
    date_format_iso8601(meta->mtime_ms, date);
    buf_append_str(out, "<LastModified>");
    buf_append_str(out, date);
    buf_append_str(out, "</LastModified><ETag>&quot;");
    buf_append_xml(out, meta->etag);
    buf_append_str(out, "&quot;</ETag><Size>");
    char *p = size + sizeof size;
    uint64_t v = meta->size;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    buf_append(out, p, (size_t)(size + sizeof size - p));
    buf_append_str(out, "</Size>");
}

/* Starts a listing's document: its root element, Name and Prefix. The
 * Prefix is URL-encoded under encoding-type=url only when prefix_url: S3
 * encodes it in ListObjectsV2 and ListObjectVersions but returns it as sent
 * in ListObjects (v1), and clients decode accordingly (botocore decodes no
 * v1 Prefix, so an encoded one would reach the caller as "%0A"). */
static void list_doc_open(s3_req_t *req, const list_query_t *q, const char *root, bool prefix_url,
                          buf_t *xml)
{
    s3_xml_open(xml, root);
    elem(xml, "Name", req->bucket, false);
    elem(xml, "Prefix", q->prefix, q->url && prefix_url);
}

/* Ends a listing's document xml (its root element and the fields before
 * MaxKeys already in it) with the fields every listing shares, the entries
 * and common prefixes; frees r. */
static void list_doc_close(const list_query_t *q, list_result_t *r, const char *root, buf_t *xml)
{
    buf_printf(xml, "<MaxKeys>%ld</MaxKeys>", q->max_keys);
    if (q->delim)
        elem(xml, "Delimiter", q->delim, q->url);
    if (q->url)
        buf_append_str(xml, "<EncodingType>url</EncodingType>");
    buf_printf(xml, "<IsTruncated>%s</IsTruncated>", r->truncated ? "true" : "false");
    buf_append(xml, r->contents.data ? r->contents.data : "", r->contents.len);
    buf_append(xml, r->prefixes.data ? r->prefixes.data : "", r->prefixes.len);
    buf_printf(xml, "</%s>", root);
    list_result_free(r);
}

/* ---- ListObjects / ListObjectsV2 ---------------------------------------------------- */

static void render_contents(s3_req_t *req, const list_query_t *q, buf_t *out, const char *key,
                            const stor_meta_t *meta, bool latest, void *ctx)
{
    (void)latest;
    bool fetch_owner = *(const bool *)ctx;
    buf_append_str(out, "<Contents>");
    elem(out, "Key", key, q->url);
    object_fields(out, meta);
    if (fetch_owner)
        s3_xml_principal(req->srv, out, "Owner", s3_object_owner(&req->authz_bucket, meta));
    s3_xml_elem(out, "StorageClass", s3_storage_class(meta));
    buf_append_str(out, "</Contents>");
}

/* The parameters of a ListObjects request, as every page of it shares them. */
typedef struct list_objects_args {
    list_query_t q;
    bool v2, fetch_owner;
    const char *marker, *start_after;
} list_objects_args_t;

/* Appends to xml the page that the request a would answer with
 * continuation-token token (NULL: none); *next gets its
 * NextContinuationToken ("" when not truncated). Returns false when it
 * replied an error. */
static bool list_objects_page(s3_req_t *req, const list_objects_args_t *a, const char *token,
                              buf_t *xml, char next[4 * S3R_MAX_KEY_BYTES])
{
    const list_query_t *q = &a->q;
    char after[KEY_BUF] = "";
    next[0] = '\0';
    if (a->v2 && token) {
        uint8_t raw[KEY_BUF];
        long n = hash_base64url_decode(token, strlen(token), raw, sizeof(raw) - 1);
        if (n < 0) {
            s3_reply_error(req, S3E_INVALID_ARGUMENT,
                           "The continuation token provided is incorrect");
            return false;
        }
        memcpy(after, raw, (size_t)n);
        after[n] = '\0';
    } else {
        after_marker(q, a->v2 ? a->start_after : a->marker, after);
    }

    bool fetch_owner = a->fetch_owner;
    list_render_t render = {render_contents, &fetch_owner,
                            STOR_WANT_LISTING | (fetch_owner ? STOR_WANT_OWNER : 0)};
    list_start_t from = {.after = after};
    list_result_t r;
    if (!list_walk(req, q, &from, &render, &r))
        return false;

    list_doc_open(req, q, "ListBucketResult", a->v2, xml);
    if (a->v2) {
        if (a->start_after)
            elem(xml, "StartAfter", a->start_after, q->url);
        if (token)
            elem(xml, "ContinuationToken", token, false);
        if (r.truncated) {
            hash_base64url_encode((const uint8_t *)r.resume, strlen(r.resume), next);
            elem(xml, "NextContinuationToken", next, false);
        }
        buf_printf(xml, "<KeyCount>%ld</KeyCount>", r.count);
    } else {
        elem(xml, "Marker", a->marker ? a->marker : "", q->url);
        if (r.truncated && q->delim)
            elem(xml, "NextMarker", r.last, q->url);
    }
    list_doc_close(q, &r, "ListBucketResult", xml);
    return true;
}

/* How many pages a native request asks for (x-s3rdma-pages): 0 when it
 * does not (absent, or over HTTP), -1 when it asks wrongly (replied). */
static int list_pages_asked(s3_req_t *req, bool v2)
{
    const char *np =
        req->transport == S3_TRANSPORT_NATIVE ? s3_req_query(req, "x-s3rdma-pages") : NULL;
    if (!np)
        return 0;
    char *end;
    long n = strtol(np, &end, 10);
    if (!*np || *end || n < 1 || n > S3R_NATIVE_LIST_PAGES) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "x-s3rdma-pages must be 1 to 16.");
        return -1;
    }
    if (!v2) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "x-s3rdma-pages needs list-type=2.");
        return -1;
    }
    return (int)n;
}

/* A native ListObjectsV2 of several pages: the pages the same request
 * would get by following its continuation tokens one request at a time,
 * each its own document, back to back in one body, authorized once (the
 * caller did). Stops at the last page, after `pages`, or when the next page
 * might not fit (the largest page so far must still fit the client's room
 * and S3R_NATIVE_LIST_BODY_BYTES). x-s3rdma-page-bytes lists each
 * document's length. */
static void list_objects_pages(s3_req_t *req, const list_objects_args_t *a, const char *token,
                               unsigned pages)
{
    uint64_t room =
        req->reply_room < S3R_NATIVE_LIST_BODY_BYTES ? req->reply_room : S3R_NATIVE_LIST_BODY_BYTES;
    buf_t body;
    buf_init(&body, LIST_DOC_MAX);
    /* Room for the pages at once: no copy as the body grows. */
    buf_reserve(&body, (size_t)room);
    char lens[S3R_NATIVE_LIST_PAGES * 12] = "", next[4 * S3R_MAX_KEY_BYTES];
    char *tok = token ? strdup(token) : NULL;
    size_t largest = 0, n_lens = 0;
    for (unsigned i = 0; i < pages; i++) {
        size_t start = body.len;
        if ((token && !tok) || !list_objects_page(req, a, tok, &body, next)) {
            if (!req->replied)
                s3_reply_error(req, S3E_INTERNAL, NULL);
            free(tok);
            buf_free(&body);
            return;
        }
        size_t len = body.len - start;
        if (len > largest)
            largest = len;
        n_lens += (size_t)snprintf(lens + n_lens, sizeof lens - n_lens, "%s%zu", i ? "," : "", len);
        free(tok);
        tok = next[0] ? strdup(next) : NULL;
        if (!tok || body.len + largest > room)
            break;
    }
    free(tok);
    s3_reply_header(req, "x-s3rdma-page-bytes", lens);
    s3_reply_xml(req, 200, &body);
}

static void list_objects_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_READ, &req->authz_bucket))
        return;
    const char *lt = s3_req_query(req, "list-type");
    list_objects_args_t a = {.v2 = lt && strcmp(lt, "2") == 0};
    if (lt && !a.v2) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "Invalid list-type.");
        return;
    }
    if (!list_query(req, &a.q))
        return;
    int pages = list_pages_asked(req, a.v2);
    if (pages < 0)
        return;
    a.marker = s3_req_query(req, "marker");
    a.start_after = s3_req_query(req, "start-after");
    const char *token = s3_req_query(req, "continuation-token");
    const char *fo = s3_req_query(req, "fetch-owner");
    a.fetch_owner = !a.v2 || (fo && strcmp(fo, "true") == 0);
    if (pages > 0) {
        list_objects_pages(req, &a, token, (unsigned)pages);
        return;
    }
    buf_t xml;
    buf_init(&xml, LIST_DOC_MAX);
    char next[4 * S3R_MAX_KEY_BYTES];
    if (list_objects_page(req, &a, a.v2 ? token : NULL, &xml, next))
        s3_reply_xml(req, 200, &xml);
    else
        buf_free(&xml);
}

/* ---- ListObjectVersions ---------------------------------------------------------------- */

static void render_version(s3_req_t *req, const list_query_t *q, buf_t *out, const char *key,
                           const stor_meta_t *meta, bool latest, void *ctx)
{
    (void)ctx;
    const char *tag = meta->delete_marker ? "DeleteMarker" : "Version";
    char vid[STOR_VERSION_ID_LEN + 1];
    stor_version_id(meta, vid);
    buf_printf(out, "<%s>", tag);
    elem(out, "Key", key, q->url);
    buf_printf(out, "<VersionId>%s</VersionId><IsLatest>%s</IsLatest>", vid,
               latest ? "true" : "false");
    if (meta->delete_marker) {
        char date[32];
        date_format_iso8601(meta->mtime_ms, date);
        buf_printf(out, "<LastModified>%s</LastModified>", date);
    } else {
        object_fields(out, meta);
    }
    s3_xml_principal(req->srv, out, "Owner", s3_object_owner(&req->authz_bucket, meta));
    if (!meta->delete_marker)
        s3_xml_elem(out, "StorageClass", s3_storage_class(meta));
    buf_printf(out, "</%s>", tag);
}

static void list_versions_begin(s3_req_t *req)
{
    if (!s3_bucket_authorize(req, req->bucket, S3_PERM_READ, &req->authz_bucket))
        return;
    list_query_t q;
    if (!list_query(req, &q))
        return;
    const char *key_marker = s3_req_query(req, "key-marker");
    const char *vid_marker = s3_req_query(req, "version-id-marker");
    if (vid_marker && !key_marker) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT,
                       "A version-id marker cannot be specified without a key marker.");
        return;
    }
    if (vid_marker && *vid_marker && s3_version_check(vid_marker) != S3E_NONE) {
        s3_reply_error(req, S3E_INVALID_ARGUMENT, "Invalid version id specified");
        return;
    }
    /* A version marker resumes inside key-marker's versions; without one,
     * after all of them (and past everything under key-marker when it is
     * itself a common prefix). */
    char after[KEY_BUF];
    bool in_key = vid_marker && *vid_marker && key_marker && strlen(key_marker) < KEY_BUF;
    if (in_key)
        snprintf(after, sizeof after, "%s", key_marker);
    else
        after_marker(&q, key_marker, after);
    list_start_t from = {
        .after = after, .versions = true, .version_marker = in_key ? vid_marker : NULL};

    list_render_t render = {render_version, NULL, STOR_WANT_LISTING | STOR_WANT_OWNER};
    list_result_t r;
    if (!list_walk(req, &q, &from, &render, &r))
        return;

    buf_t xml;
    buf_init(&xml, LIST_DOC_MAX);
    list_doc_open(req, &q, "ListVersionsResult", true, &xml);
    elem(&xml, "KeyMarker", key_marker ? key_marker : "", q.url);
    elem(&xml, "VersionIdMarker", vid_marker ? vid_marker : "", false);
    if (r.truncated) {
        elem(&xml, "NextKeyMarker", r.last, q.url);
        if (!r.last_was_prefix)
            elem(&xml, "NextVersionIdMarker", r.last_version, false);
    }
    list_doc_close(&q, &r, "ListVersionsResult", &xml);
    s3_reply_xml(req, 200, &xml);
}

const s3_op_t s3_op_list_objects = {"ListObjects", list_objects_begin, NULL};
const s3_op_t s3_op_list_object_versions = {"ListObjectVersions", list_versions_begin, NULL};
