/* libs3rdma: bucket operations (create, delete, head, list) and object
 * listings (ListObjectsV2 and ListObjectVersions, with continuation across
 * pages). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"

/* ======================================================================== */
/* Buckets                                                                   */
/* ======================================================================== */

/* CreateBucket, DeleteBucket, HeadBucket: a bodiless request on the bucket. */
static s3r_status_t bucket_simple(s3r_client_t *c, const char *method, uint8_t op,
                                  const char *bucket)
{
    if (c == NULL || !s3c_valid_name(bucket))
        return S3R_ERR_INVALID_ARG;
    s3c_req_t req;
    s3c_req_init(&req, method, bucket, NULL);
    req.native_op = op;
    return s3c_done(c, s3c_simple(c, &req, false));
}

s3r_status_t s3r_bucket_create(s3r_client_t *c, const char *bucket)
{
    return bucket_simple(c, "PUT", RDMA_OP_CREATE_BUCKET, bucket);
}

s3r_status_t s3r_bucket_delete(s3r_client_t *c, const char *bucket)
{
    return bucket_simple(c, "DELETE", RDMA_OP_DELETE_BUCKET, bucket);
}

s3r_status_t s3r_bucket_head(s3r_client_t *c, const char *bucket)
{
    return bucket_simple(c, "HEAD", RDMA_OP_HEAD_BUCKET, bucket);
}

s3r_status_t s3r_bucket_list(s3r_client_t *c, s3r_bucket_list_t **list_p)
{
    if (c == NULL || list_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3c_req_t req;
    buf_t body;
    buf_init(&body, S3C_MAX_XML_BODY);
    s3c_req_init(&req, "GET", NULL, NULL);
    req.native_op = RDMA_OP_LIST_BUCKETS;
    s3r_status_t st = s3c_get_xml(c, &req, &body);
    if (st == S3R_OK && s3c_xml_parse_bucket_list(body.data, body.len, list_p) < 0)
        st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                      "malformed ListAllMyBucketsResult");
    buf_free(&body);
    return s3c_done(c, st);
}

/* ======================================================================== */
/* Listing                                                                   */
/* ======================================================================== */

/* Native pages asked for in one ListObjectsV2 request at most (the server's
 * S3R_NATIVE_LIST_PAGES), and the out span offered for them: room for a
 * few pages of long keys (the server stops before a page that might not
 * fit, so a smaller span only means fewer pages per request). */
#define LIST_PAGES_MAX  16
#define LIST_PAGES_ROOM (8u << 20)

/* Splits a reply of several ListBucketResult documents (their lengths in
 * lens, "l1,l2,...", as the server's x-s3rdma-page-bytes) into *list, page
 * after page; *n_p gets how many. -1 when they do not add up or one is
 * malformed. */
static int parse_pages(const char *xml, size_t len, const char *lens, s3r_object_list_t **list,
                       unsigned *n_p)
{
    size_t off = 0;
    *n_p = 0;
    for (const char *p = lens; *p;) {
        char *end;
        unsigned long long n = strtoull(p, &end, 10);
        if (end == p || n > len - off || (*end && *end != ','))
            return -1;
        if (s3c_xml_parse_object_list(xml + off, (size_t)n, list) < 0)
            return -1;
        off += (size_t)n;
        (*n_p)++;
        p = *end ? end + 1 : end;
    }
    return off == len && *n_p > 0 ? 0 : -1;
}

/* One ListObjectsV2 request from token: its page, or over native up to
 * pages of them in one reply (x-s3rdma-pages: authorized once, no round
 * trip per page; a server without it is asked page by page from then on),
 * appended to *list; *n_p gets how many pages came. */
static s3r_status_t list_page(s3r_client_t *c, const char *bucket, const s3r_list_opts_t *o,
                              const char *token, unsigned pages, s3r_object_list_t **list,
                              unsigned *n_p)
{
    strs_t ss = {0};
    buf_t q, body;
    s3r_status_t st = S3R_ERR_NOMEM;
    *n_p = 0;
    buf_init(&q, 64 * 1024);
    buf_init(&body, S3C_MAX_XML_BODY);
    /* encoding-type=url: a key may hold bytes XML 1.0 cannot carry (C0
     * controls), which would make the page ill-formed for expat; encoded,
     * every key is plain ASCII (s3c_xml_parse_object_list decodes). */
    int rc = buf_append_str(&q, "list-type=2&encoding-type=url");
    if (o->prefix && o->prefix[0])
        rc |= buf_printf(&q, "&prefix=%s", s3c_strs_qenc(&ss, o->prefix) ?: "");
    if (o->delimiter && o->delimiter[0])
        rc |= buf_printf(&q, "&delimiter=%s", s3c_strs_qenc(&ss, o->delimiter) ?: "");
    if (token && token[0])
        rc |= buf_printf(&q, "&continuation-token=%s", s3c_strs_qenc(&ss, token) ?: "");
    if (o->start_after && o->start_after[0])
        rc |= buf_printf(&q, "&start-after=%s", s3c_strs_qenc(&ss, o->start_after) ?: "");
    if (o->max_keys)
        rc |= buf_printf(&q, "&max-keys=%u", o->max_keys);
    if (rc != 0) {
        st = s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_HTTP, 0, "", "listing query too long");
        goto out;
    }
    char many[40];
    snprintf(many, sizeof many, "x-s3rdma-pages=%u", pages);
    for (;;) {
        bool ask = pages > 1 && !atomic_load(&c->list_pages_off);
        s3c_req_t req;
        s3c_req_init(&req, "GET", bucket, NULL);
        req.native_op = RDMA_OP_LIST_OBJECTS;
        req.query = q.data;
        req.native_query = ask ? many : NULL;
        req.native_room = ask ? LIST_PAGES_ROOM : 0;
        s3c_resp_t resp;
        buf_reset(&body);
        st = s3c_get_xml_resp(c, &req, &body, &resp);
        /* A server from before x-s3rdma-pages names it in its refusal. */
        bool refused = ask && resp.status == 400 && resp.transport == S3R_TRANSPORT_NATIVE &&
                       resp.err_body.data && strstr(resp.err_body.data, "x-s3rdma-pages");
        char lens[LIST_PAGES_MAX * 24];
        bool several = st == S3R_OK && ask &&
                       s3c_resp_header(&resp, "x-s3rdma-page-bytes", lens, sizeof lens) == 0;
        s3c_resp_free(&resp);
        if (refused) {
            atomic_store(&c->list_pages_off, true);
            continue;
        }
        if (st == S3R_OK && (several ? parse_pages(body.data, body.len, lens, list, n_p)
                                     : s3c_xml_parse_object_list(body.data, body.len, list)) < 0)
            st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                          "malformed ListBucketResult");
        else if (st == S3R_OK && !several)
            *n_p = 1;
        break;
    }
out:
    s3c_strs_free(&ss);
    buf_free(&q);
    buf_free(&body);
    return st;
}

/* ListObjectsV2 from opts, at most max_pages pages (0: all of them). */
static s3r_status_t list_objects(s3r_client_t *c, const char *bucket, const s3r_list_opts_t *opts,
                                 unsigned max_pages, s3r_object_list_t **list_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || list_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_list_opts_t o = {0};
    if (opts != NULL)
        o = *opts;
    s3r_object_list_t *list = NULL;
    char *token = o.continuation_token ? strdup(o.continuation_token) : NULL;
    s3r_status_t st;
    unsigned done = 0;
    for (;;) {
        unsigned want = max_pages ? max_pages - done : LIST_PAGES_MAX, got = 0;
        st = list_page(c, bucket, &o, token, want < LIST_PAGES_MAX ? want : LIST_PAGES_MAX, &list,
                       &got);
        done += got;
        free(token);
        token = NULL;
        if (st != S3R_OK || (max_pages && done >= max_pages) || !list->truncated ||
            list->next_token == NULL)
            break;
        token = strdup(list->next_token);
        if (token == NULL) {
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
            break;
        }
    }
    if (st != S3R_OK) {
        s3r_object_list_free(list);
        return s3c_done(c, st);
    }
    *list_p = list;
    return S3R_OK;
}

s3r_status_t s3r_object_list(s3r_client_t *c, const char *bucket, const s3r_list_opts_t *opts,
                             s3r_object_list_t **list_p)
{
    return list_objects(c, bucket, opts, opts && opts->all_pages ? 0 : 1, list_p);
}

s3r_status_t s3r_object_list_pages(s3r_client_t *c, const char *bucket, const s3r_list_opts_t *opts,
                                   unsigned max_pages, s3r_object_list_t **list_p)
{
    if (max_pages == 0)
        return S3R_ERR_INVALID_ARG;
    return list_objects(c, bucket, opts, max_pages, list_p);
}

/* ======================================================================== */
/* Listing versions                                                          */
/* ======================================================================== */

static s3r_status_t versions_page(s3r_client_t *c, const char *bucket,
                                  const s3r_version_list_opts_t *o, const char *key_marker,
                                  const char *vid_marker, s3r_version_list_t **list)
{
    strs_t ss = {0};
    buf_t q, body;
    s3r_status_t st;
    buf_init(&q, 64 * 1024);
    buf_init(&body, S3C_MAX_XML_BODY);
    /* encoding-type=url as for list_page. */
    int rc = buf_append_str(&q, "versions&encoding-type=url");
    if (o->prefix && o->prefix[0])
        rc |= buf_printf(&q, "&prefix=%s", s3c_strs_qenc(&ss, o->prefix) ?: "");
    if (o->delimiter && o->delimiter[0])
        rc |= buf_printf(&q, "&delimiter=%s", s3c_strs_qenc(&ss, o->delimiter) ?: "");
    if (key_marker && key_marker[0])
        rc |= buf_printf(&q, "&key-marker=%s", s3c_strs_qenc(&ss, key_marker) ?: "");
    if (vid_marker && vid_marker[0])
        rc |= buf_printf(&q, "&version-id-marker=%s", s3c_strs_qenc(&ss, vid_marker) ?: "");
    if (o->max_keys)
        rc |= buf_printf(&q, "&max-keys=%u", o->max_keys);
    if (rc != 0) {
        st = s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_HTTP, 0, "", "listing query too long");
    } else {
        s3c_req_t req;
        s3c_req_init(&req, "GET", bucket, NULL);
        req.native_op = RDMA_OP_LIST_OBJECT_VERSIONS;
        req.query = q.data;
        st = s3c_get_xml(c, &req, &body);
        if (st == S3R_OK && s3c_xml_parse_version_list(body.data, body.len, list) < 0)
            st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                          "malformed ListVersionsResult");
    }
    s3c_strs_free(&ss);
    buf_free(&q);
    buf_free(&body);
    return st;
}

s3r_status_t s3r_object_list_versions(s3r_client_t *c, const char *bucket,
                                      const s3r_version_list_opts_t *opts,
                                      s3r_version_list_t **list_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || list_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_version_list_opts_t o = {0};
    if (opts != NULL)
        o = *opts;
    s3r_version_list_t *list = NULL;
    char *km = o.key_marker ? strdup(o.key_marker) : NULL;
    char *vm = o.version_id_marker ? strdup(o.version_id_marker) : NULL;
    s3r_status_t st = (o.key_marker && !km) || (o.version_id_marker && !vm)
                          ? s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory")
                          : S3R_OK;
    while (st == S3R_OK) {
        st = versions_page(c, bucket, &o, km, vm, &list);
        free(km);
        free(vm);
        km = vm = NULL;
        /* A truncated page always names where the next starts; one that
         * does not would be asked for again forever. */
        if (st != S3R_OK || !o.all_pages || !list->truncated)
            break;
        if (list->next_key_marker == NULL) {
            st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                          "a truncated ListVersionsResult without NextKeyMarker");
            break;
        }
        km = strdup(list->next_key_marker);
        vm = list->next_version_id_marker ? strdup(list->next_version_id_marker) : NULL;
        if (km == NULL || (list->next_version_id_marker && vm == NULL))
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
    }
    free(km);
    free(vm);
    if (st != S3R_OK) {
        s3r_version_list_free(list);
        return s3c_done(c, st);
    }
    *list_p = list;
    return S3R_OK;
}
