/* S3 XML responses, parsed with expat: Error, ListAllMyBucketsResult,
 * ListBucketResult (V2), ListVersionsResult, DeleteResult, InitiateMultipartUploadResult. Each
 * document is walked as a stream of "element closed with this text, under these parents" events; no
 * tree is built. Pure code (no network), so the unit tests can include this file directly. */
#include <ctype.h>
#include <expat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"
#include "common/date.h"

#define XML_MAX_DEPTH 16
#define XML_MAX_TEXT  (64 * 1024)

/* Called when an element closes: names[0..depth-1] are the open elements
 * from the root, names[depth-1] the one closing. Returns 0, or -1 to stop. */
typedef int (*xml_end_fn)(void *ctx, const char *const *names, int depth, const char *text);
typedef int (*xml_start_fn)(void *ctx, const char *const *names, int depth);

typedef struct xml_walk {
    XML_Parser parser;
    char *names[XML_MAX_DEPTH];
    int depth; /* may exceed XML_MAX_DEPTH: deeper elements are ignored */
    buf_t text;
    xml_start_fn on_start;
    xml_end_fn on_end;
    void *ctx;
    int failed;
} xml_walk_t;

static void stop(xml_walk_t *w)
{
    w->failed = 1;
    XML_StopParser(w->parser, XML_FALSE);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    xml_walk_t *w = ud;
    if (w->failed)
        return;
    if (w->depth < XML_MAX_DEPTH) {
        w->names[w->depth] = strdup(name);
        if (w->names[w->depth] == NULL) {
            stop(w);
            return;
        }
    }
    w->depth++;
    buf_reset(&w->text);
    if (w->depth <= XML_MAX_DEPTH && w->on_start &&
        w->on_start(w->ctx, (const char *const *)w->names, w->depth) < 0)
        stop(w);
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    (void)name;
    xml_walk_t *w = ud;
    if (w->failed)
        return;
    if (w->depth <= XML_MAX_DEPTH) {
        if (w->on_end && w->on_end(w->ctx, (const char *const *)w->names, w->depth,
                                   w->text.data ? w->text.data : "") < 0)
            stop(w);
        free(w->names[w->depth - 1]);
        w->names[w->depth - 1] = NULL;
    }
    w->depth--;
    buf_reset(&w->text);
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    xml_walk_t *w = ud;
    if (w->failed)
        return;
    if (buf_append(&w->text, s, (size_t)len) < 0)
        stop(w);
}

static int xml_walk(const char *xml, size_t len, xml_start_fn start, xml_end_fn end, void *ctx)
{
    xml_walk_t w;
    memset(&w, 0, sizeof(w));
    if (len > INT32_MAX)
        return -1;
    w.parser = XML_ParserCreate("UTF-8");
    if (w.parser == NULL)
        return -1;
    buf_init(&w.text, XML_MAX_TEXT);
    w.on_start = start;
    w.on_end = end;
    w.ctx = ctx;
    XML_SetUserData(w.parser, &w);
    XML_SetElementHandler(w.parser, on_start, on_end);
    XML_SetCharacterDataHandler(w.parser, on_text);
    enum XML_Status st = XML_Parse(w.parser, xml ? xml : "", (int)len, XML_TRUE);
    int rc = (st == XML_STATUS_OK && !w.failed) ? 0 : -1;
    for (int i = 0; i < XML_MAX_DEPTH; i++)
        free(w.names[i]);
    buf_free(&w.text);
    XML_ParserFree(w.parser);
    return rc;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int parse_u64(const char *s, uint64_t *out)
{
    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*s); s++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    while (isspace((unsigned char)*s))
        s++;
    if (*s != '\0')
        return -1;
    *out = v;
    return 0;
}

/* Makes room for one more element of size elem in arr (n used, *cap
 * allocated), doubling from first. Returns the array, or NULL when out of
 * memory (arr is then unchanged and still owned by the caller). */
static void *grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap)
        return arr;
    size_t ncap = *cap ? *cap * 2 : first;
    void *p = realloc(arr, ncap * elem);
    if (p != NULL)
        *cap = ncap;
    return p;
}

/* ---- Error ------------------------------------------------------------------ */

static int error_end(void *ctx, const char *const *n, int depth, const char *text)
{
    s3c_error_doc_t *e = ctx;
    if (depth != 2 || strcmp(n[0], "Error") != 0)
        return 0;
    if (strcmp(n[1], "Code") == 0) {
        copy_str(e->code, sizeof(e->code), text);
    } else if (strcmp(n[1], "Message") == 0) {
        copy_str(e->message, sizeof(e->message), text);
    } else if (strcmp(n[1], "RequestId") == 0) {
        copy_str(e->request_id, sizeof(e->request_id), text);
    } else if (strcmp(n[1], "RequiredBytes") == 0 || strcmp(n[1], "BytesNeeded") == 0 ||
               strcmp(n[1], "ObjectSize") == 0 || strcmp(n[1], "ActualObjectSize") == 0 ||
               strcmp(n[1], "RequiredLength") == 0) {
        uint64_t v;
        if (parse_u64(text, &v) == 0)
            e->needed_bytes = v;
    }
    return 0;
}

int s3c_xml_parse_error(const char *xml, size_t len, s3c_error_doc_t *out)
{
    memset(out, 0, sizeof(*out));
    return xml_walk(xml, len, NULL, error_end, out);
}

static int is_error_start(void *ctx, const char *const *n, int depth)
{
    if (depth == 1)
        *(int *)ctx = strcmp(n[0], "Error") == 0;
    return 0;
}

int s3c_xml_is_error(const char *xml, size_t len)
{
    int is_err = 0;
    if (xml_walk(xml, len, is_error_start, NULL, &is_err) < 0)
        return 0;
    return is_err;
}

/* ---- ListAllMyBucketsResult ------------------------------------------------- */

typedef struct bucket_ctx {
    s3r_bucket_list_t *list;
    size_t cap;
} bucket_ctx_t;

static int bucket_start(void *ctx, const char *const *n, int depth)
{
    bucket_ctx_t *b = ctx;
    if (depth == 3 && strcmp(n[1], "Buckets") == 0 && strcmp(n[2], "Bucket") == 0) {
        s3r_bucket_list_t *l = b->list;
        void *p = grow(l->buckets, &b->cap, l->n_buckets, sizeof(*l->buckets), 16);
        if (p == NULL)
            return -1;
        l->buckets = p;
        memset(&l->buckets[l->n_buckets], 0, sizeof(l->buckets[0]));
        l->n_buckets++;
    }
    return 0;
}

static int bucket_end(void *ctx, const char *const *n, int depth, const char *text)
{
    bucket_ctx_t *b = ctx;
    s3r_bucket_list_t *l = b->list;
    if (depth != 4 || strcmp(n[2], "Bucket") != 0 || l->n_buckets == 0)
        return 0;
    s3r_bucket_entry_t *e = &l->buckets[l->n_buckets - 1];
    if (strcmp(n[3], "Name") == 0) {
        free(e->name);
        e->name = strdup(text);
        if (e->name == NULL)
            return -1;
    } else if (strcmp(n[3], "CreationDate") == 0) {
        int64_t t = date_parse_iso8601(text);
        e->created = t > 0 ? t : 0;
    }
    return 0;
}

void s3r_bucket_list_free(s3r_bucket_list_t *list)
{
    if (list == NULL)
        return;
    for (size_t i = 0; i < list->n_buckets; i++)
        free(list->buckets[i].name);
    free(list->buckets);
    free(list);
}

int s3c_xml_parse_bucket_list(const char *xml, size_t len, s3r_bucket_list_t **out_p)
{
    bucket_ctx_t b = {.list = calloc(1, sizeof(s3r_bucket_list_t))};
    if (b.list == NULL)
        return -1;
    if (xml_walk(xml, len, bucket_start, bucket_end, &b) < 0) {
        s3r_bucket_list_free(b.list);
        return -1;
    }
    for (size_t i = 0; i < b.list->n_buckets; i++) {
        if (b.list->buckets[i].name == NULL) {
            s3r_bucket_list_free(b.list);
            return -1;
        }
    }
    *out_p = b.list;
    return 0;
}

/* ---- ListBucketResult ------------------------------------------------------- */

/* Replaces *dst with a copy of text; -1 when out of memory. */
static int set_str(char **dst, const char *text)
{
    free(*dst);
    return (*dst = strdup(text)) == NULL ? -1 : 0;
}

/* Appends a copy of text to a listing's CommonPrefixes (*v, *n, capacity
 * *cap); -1 when out of memory. */
static int add_prefix(char ***v, size_t *n, size_t *cap, const char *text)
{
    void *p = grow(*v, cap, *n, sizeof(**v), 16);
    if (p == NULL)
        return -1;
    *v = p;
    if (((*v)[*n] = strdup(text)) == NULL)
        return -1;
    (*n)++;
    return 0;
}

/* Makes room for entry n of a listing's storage_classes (*v, capacity
 * *cap), kept in step with its entries, and clears it; -1 when out of
 * memory. */
static int add_class_slot(char ***v, size_t *cap, size_t n)
{
    void *p = grow(*v, cap, n, sizeof(**v), 64);
    if (p == NULL)
        return -1;
    *v = p;
    (*v)[n] = NULL;
    return 0;
}

typedef struct objlist_ctx {
    s3r_object_list_t *list;
    size_t cap_obj, cap_pfx, cap_sc;
    int root_ok;
    int url; /* <EncodingType>url</EncodingType>: names are URL-encoded */
} objlist_ctx_t;

/* Decodes a name S3 sent URL-encoded (encoding-type=url), in place: %XX is
 * the byte XX and, as S3 encodes a space as '+' there, '+' is a space (a '+'
 * in a name arrives as %2B). Not sigv4_percent_decode, which keeps '+'.
 * -1 on a malformed escape or an encoded NUL (no key holds one, and the
 * caller's C string would end there). */
static int url_decode_name(char *s)
{
    char *out = s;
    for (const char *in = s; *in != '\0'; in++) {
        if (*in == '+') {
            *out++ = ' ';
        } else if (*in == '%') {
            int hi = in[1] ? hash_hex_digit_value(in[1]) : -1;
            int lo = hi >= 0 && in[2] ? hash_hex_digit_value(in[2]) : -1;
            if (lo < 0 || (hi == 0 && lo == 0))
                return -1;
            *out++ = (char)(hi << 4 | lo);
            in += 2;
        } else {
            *out++ = *in;
        }
    }
    *out = '\0';
    return 0;
}

static int objlist_start(void *ctx, const char *const *n, int depth)
{
    objlist_ctx_t *o = ctx;
    s3r_object_list_t *l = o->list;
    if (depth == 1) {
        o->root_ok = strcmp(n[0], "ListBucketResult") == 0;
        return o->root_ok ? 0 : -1;
    }
    if (depth == 2 && strcmp(n[1], "Contents") == 0) {
        if (add_class_slot(&l->storage_classes, &o->cap_sc, l->n_objects) < 0)
            return -1;
        void *p = grow(l->objects, &o->cap_obj, l->n_objects, sizeof(*l->objects), 64);
        if (p == NULL)
            return -1;
        l->objects = p;
        memset(&l->objects[l->n_objects], 0, sizeof(l->objects[0]));
        l->n_objects++;
    }
    return 0;
}

static int objlist_end(void *ctx, const char *const *n, int depth, const char *text)
{
    objlist_ctx_t *o = ctx;
    s3r_object_list_t *l = o->list;
    if (depth == 2) {
        if (strcmp(n[1], "IsTruncated") == 0) {
            l->truncated = strcmp(text, "true") == 0;
        } else if (strcmp(n[1], "EncodingType") == 0) {
            o->url = strcmp(text, "url") == 0;
        } else if (strcmp(n[1], "NextContinuationToken") == 0) {
            free(l->next_token);
            l->next_token = strdup(text);
            if (l->next_token == NULL)
                return -1;
        }
        return 0;
    }
    if (depth == 3 && strcmp(n[1], "Contents") == 0 && l->n_objects > 0) {
        s3r_object_entry_t *e = &l->objects[l->n_objects - 1];
        if (strcmp(n[2], "Key") == 0) {
            return set_str(&e->key, text);
        } else if (strcmp(n[2], "Size") == 0) {
            if (parse_u64(text, &e->size) < 0)
                return -1;
        } else if (strcmp(n[2], "ETag") == 0) {
            return set_str(&e->etag, text);
        } else if (strcmp(n[2], "StorageClass") == 0) {
            return set_str(&l->storage_classes[l->n_objects - 1], text);
        } else if (strcmp(n[2], "LastModified") == 0) {
            int64_t t = date_parse_iso8601(text);
            e->mtime = t > 0 ? t : 0;
        }
        return 0;
    }
    if (depth == 3 && strcmp(n[1], "CommonPrefixes") == 0 && strcmp(n[2], "Prefix") == 0)
        return add_prefix(&l->prefixes, &l->n_prefixes, &o->cap_pfx, text);
    return 0;
}

void s3r_object_list_free(s3r_object_list_t *list)
{
    if (list == NULL)
        return;
    for (size_t i = 0; i < list->n_objects; i++) {
        free(list->objects[i].key);
        free(list->objects[i].etag);
        free(list->storage_classes[i]);
    }
    free(list->objects);
    free(list->storage_classes);
    for (size_t i = 0; i < list->n_prefixes; i++)
        free(list->prefixes[i]);
    free(list->prefixes);
    free(list->next_token);
    free(list);
}

int s3c_xml_parse_object_list(const char *xml, size_t len, s3r_object_list_t **list)
{
    int created = 0;
    if (*list == NULL) {
        *list = calloc(1, sizeof(**list));
        if (*list == NULL)
            return -1;
        created = 1;
    }
    s3r_object_list_t *l = *list;
    objlist_ctx_t o = {
        .list = l, .cap_obj = l->n_objects, .cap_pfx = l->n_prefixes, .cap_sc = l->n_objects};
    size_t first_obj = l->n_objects, first_pfx = l->n_prefixes; /* this page's */
    /* A new page replaces the paging state of the previous one. */
    l->truncated = 0;
    free(l->next_token);
    l->next_token = NULL;
    int rc = xml_walk(xml, len, objlist_start, objlist_end, &o);
    if (rc == 0 && !o.root_ok)
        rc = -1;
    for (size_t i = first_obj; rc == 0 && i < l->n_objects; i++)
        if (l->objects[i].key == NULL || (o.url && url_decode_name(l->objects[i].key) < 0))
            rc = -1;
    for (size_t i = first_pfx; rc == 0 && o.url && i < l->n_prefixes; i++)
        if (url_decode_name(l->prefixes[i]) < 0)
            rc = -1;
    if (rc < 0 && created) {
        s3r_object_list_free(*list);
        *list = NULL;
    }
    return rc;
}

/* ---- ListVersionsResult ------------------------------------------------------ */

typedef struct verlist_ctx {
    s3r_version_list_t *list;
    size_t cap_ver, cap_pfx, cap_sc;
    int root_ok;
    int url; /* <EncodingType>url</EncodingType>: names are URL-encoded */
} verlist_ctx_t;

static int verlist_start(void *ctx, const char *const *n, int depth)
{
    verlist_ctx_t *o = ctx;
    s3r_version_list_t *l = o->list;
    if (depth == 1) {
        o->root_ok = strcmp(n[0], "ListVersionsResult") == 0;
        return o->root_ok ? 0 : -1;
    }
    bool marker = depth == 2 && strcmp(n[1], "DeleteMarker") == 0;
    if (marker || (depth == 2 && strcmp(n[1], "Version") == 0)) {
        if (add_class_slot(&l->storage_classes, &o->cap_sc, l->n_versions) < 0)
            return -1;
        void *p = grow(l->versions, &o->cap_ver, l->n_versions, sizeof(*l->versions), 64);
        if (p == NULL)
            return -1;
        l->versions = p;
        memset(&l->versions[l->n_versions], 0, sizeof(l->versions[0]));
        l->versions[l->n_versions].delete_marker = marker;
        l->n_versions++;
    }
    return 0;
}

static int verlist_end(void *ctx, const char *const *n, int depth, const char *text)
{
    verlist_ctx_t *o = ctx;
    s3r_version_list_t *l = o->list;
    if (depth == 2) {
        if (strcmp(n[1], "IsTruncated") == 0)
            l->truncated = strcmp(text, "true") == 0;
        else if (strcmp(n[1], "EncodingType") == 0)
            o->url = strcmp(text, "url") == 0;
        else if (strcmp(n[1], "NextKeyMarker") == 0)
            return set_str(&l->next_key_marker, text);
        else if (strcmp(n[1], "NextVersionIdMarker") == 0)
            return set_str(&l->next_version_id_marker, text);
        return 0;
    }
    if (depth == 3 && (strcmp(n[1], "Version") == 0 || strcmp(n[1], "DeleteMarker") == 0) &&
        l->n_versions > 0) {
        s3r_version_entry_t *e = &l->versions[l->n_versions - 1];
        if (strcmp(n[2], "Key") == 0)
            return set_str(&e->key, text);
        if (strcmp(n[2], "VersionId") == 0)
            return set_str(&e->version_id, text);
        if (strcmp(n[2], "ETag") == 0)
            return set_str(&e->etag, text);
        if (strcmp(n[2], "StorageClass") == 0)
            return set_str(&l->storage_classes[l->n_versions - 1], text);
        if (strcmp(n[2], "IsLatest") == 0)
            e->is_latest = strcmp(text, "true") == 0;
        else if (strcmp(n[2], "Size") == 0 && parse_u64(text, &e->size) < 0)
            return -1;
        else if (strcmp(n[2], "LastModified") == 0) {
            int64_t t = date_parse_iso8601(text);
            e->mtime = t > 0 ? t : 0;
        }
        return 0;
    }
    if (depth == 3 && strcmp(n[1], "CommonPrefixes") == 0 && strcmp(n[2], "Prefix") == 0)
        return add_prefix(&l->prefixes, &l->n_prefixes, &o->cap_pfx, text);
    return 0;
}

void s3r_version_list_free(s3r_version_list_t *list)
{
    if (list == NULL)
        return;
    for (size_t i = 0; i < list->n_versions; i++) {
        free(list->versions[i].key);
        free(list->versions[i].version_id);
        free(list->versions[i].etag);
        free(list->storage_classes[i]);
    }
    free(list->versions);
    free(list->storage_classes);
    for (size_t i = 0; i < list->n_prefixes; i++)
        free(list->prefixes[i]);
    free(list->prefixes);
    free(list->next_key_marker);
    free(list->next_version_id_marker);
    free(list);
}

int s3c_xml_parse_version_list(const char *xml, size_t len, s3r_version_list_t **list)
{
    int created = 0;
    if (*list == NULL) {
        if ((*list = calloc(1, sizeof(**list))) == NULL)
            return -1;
        created = 1;
    }
    s3r_version_list_t *l = *list;
    verlist_ctx_t o = {
        .list = l, .cap_ver = l->n_versions, .cap_pfx = l->n_prefixes, .cap_sc = l->n_versions};
    size_t first_ver = l->n_versions, first_pfx = l->n_prefixes; /* this page's */
    /* A new page replaces the paging state of the previous one. */
    l->truncated = 0;
    free(l->next_key_marker);
    free(l->next_version_id_marker);
    l->next_key_marker = l->next_version_id_marker = NULL;
    int rc = xml_walk(xml, len, verlist_start, verlist_end, &o);
    if (rc == 0 && !o.root_ok)
        rc = -1;
    for (size_t i = first_ver; rc == 0 && i < l->n_versions; i++)
        if (l->versions[i].key == NULL || l->versions[i].version_id == NULL ||
            (o.url && url_decode_name(l->versions[i].key) < 0))
            rc = -1;
    for (size_t i = first_pfx; rc == 0 && o.url && i < l->n_prefixes; i++)
        if (url_decode_name(l->prefixes[i]) < 0)
            rc = -1;
    if (rc == 0 && o.url && l->next_key_marker && url_decode_name(l->next_key_marker) < 0)
        rc = -1;
    if (rc < 0 && created) {
        s3r_version_list_free(*list);
        *list = NULL;
    }
    return rc;
}

/* ---- DeleteResult ------------------------------------------------------------- */

typedef struct delres_ctx {
    s3r_delete_errors_t *errs;
    size_t cap;
    int root_ok;
} delres_ctx_t;

static int delres_start(void *ctx, const char *const *n, int depth)
{
    delres_ctx_t *d = ctx;
    if (depth == 1)
        d->root_ok = strcmp(n[0], "DeleteResult") == 0;
    if (depth == 2 && d->root_ok && strcmp(n[1], "Error") == 0) {
        s3r_delete_errors_t *e = d->errs;
        void *p = grow(e->errors, &d->cap, e->n_errors, sizeof(*e->errors), 8);
        if (p == NULL)
            return -1;
        e->errors = p;
        memset(&e->errors[e->n_errors], 0, sizeof(e->errors[0]));
        e->n_errors++;
    }
    return 0;
}

static int delres_end(void *ctx, const char *const *n, int depth, const char *text)
{
    delres_ctx_t *d = ctx;
    s3r_delete_errors_t *e = d->errs;
    if (depth != 3 || !d->root_ok || strcmp(n[1], "Error") != 0 || e->n_errors == 0)
        return 0;
    s3r_delete_error_t *x = &e->errors[e->n_errors - 1];
    char **field = strcmp(n[2], "Key") == 0       ? &x->key
                   : strcmp(n[2], "Code") == 0    ? &x->code
                   : strcmp(n[2], "Message") == 0 ? &x->message
                                                  : NULL;
    if (field == NULL)
        return 0;
    free(*field);
    *field = strdup(text);
    return *field ? 0 : -1;
}

void s3r_delete_errors_free(s3r_delete_errors_t *errs)
{
    if (errs == NULL)
        return;
    for (size_t i = 0; i < errs->n_errors; i++) {
        free(errs->errors[i].key);
        free(errs->errors[i].code);
        free(errs->errors[i].message);
    }
    free(errs->errors);
    free(errs);
}

int s3c_xml_parse_delete_result(const char *xml, size_t len, s3r_delete_errors_t **errs)
{
    int created = 0;
    if (*errs == NULL) {
        *errs = calloc(1, sizeof(**errs));
        if (*errs == NULL)
            return -1;
        created = 1;
    }
    size_t first = (*errs)->n_errors;
    delres_ctx_t d = {.errs = *errs, .cap = first};
    int rc = xml_walk(xml, len, delres_start, delres_end, &d);
    if (rc == 0 && !d.root_ok)
        rc = -1;
    for (size_t i = first; rc == 0 && i < (*errs)->n_errors; i++)
        if ((*errs)->errors[i].key == NULL)
            rc = -1;
    if (rc < 0 && created) {
        s3r_delete_errors_free(*errs);
        *errs = NULL;
    }
    return rc;
}

/* ---- InitiateMultipartUploadResult ------------------------------------------ */

static int upload_id_end(void *ctx, const char *const *n, int depth, const char *text)
{
    char **id = ctx;
    if (depth == 2 && strcmp(n[0], "InitiateMultipartUploadResult") == 0 &&
        strcmp(n[1], "UploadId") == 0) {
        free(*id);
        *id = strdup(text);
        if (*id == NULL)
            return -1;
    }
    return 0;
}

int s3c_xml_parse_upload_id(const char *xml, size_t len, char **upload_id_p)
{
    char *id = NULL;
    if (xml_walk(xml, len, NULL, upload_id_end, &id) < 0 || id == NULL || id[0] == '\0') {
        free(id);
        return -1;
    }
    *upload_id_p = id;
    return 0;
}
