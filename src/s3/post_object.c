/* PostObject: the browser form upload (POST /bucket, multipart/form-data,
 * S3's "Browser-based uploads using POST"). HTTP-only: the frontend's form
 * parser (s3_frontend_t.form_open) parses the form as it streams in. The fields before the file are
 * held in memory (at most S3R_MAX_POST_FIELD_BYTES); when the file part
 * starts, the form is authenticated (SigV4, or V2, of the base64 policy), its policy
 * checked (post_policy.c), the bucket authorized, and the file's bytes go
 * through s3_body_sink into a storage writer as PutObject's body does; the
 * object is committed the PutObject way (s3_object_commit). Fields after the
 * file are ignored, as S3 ignores them. A frontend takes no reply in the
 * middle of a body, so what goes wrong is kept and replied by finish(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/date.h"
#include "common/s3r_limits.h"
#include "common/sigv4.h"
#include "s3/post_policy.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/sse.h"
#include "s3/tagging.h"

typedef struct post_form {
    const s3_frontend_t *fe; /* whose parser form is */
    s3_form_t *form;         /* NULL once closed */
    buf_t fields;            /* "name\0value\0" pairs, in the order received */
    size_t n_fields;
    bool file_seen;   /* the file part started: later fields are ignored */
    s3_error_t err;   /* the reply finish() owes, S3E_NONE while all is well */
    char *why;        /* its message (malloc'd), NULL for the table's */
    uint64_t min_len; /* content-length-range, 0 / UINT64_MAX without */
    uint64_t max_len;
    stor_meta_t meta;
} post_form_t;

static void post_form_free(void *p)
{
    post_form_t *f = p;
    if (f->form)
        f->fe->form_close(f->form);
    buf_free(&f->fields);
    stor_meta_free(&f->meta);
    free(f->why);
    free(f);
}

/* Keeps the first error (with a copy of why, which may be NULL). */
static void fail(post_form_t *f, s3_error_t err, const char *why)
{
    if (f->err != S3E_NONE)
        return;
    f->err = err;
    f->why = why ? strdup(why) : NULL;
}

/* Like fail(), taking over a malloc'd why. */
static void fail_owned(post_form_t *f, s3_error_t err, char *why)
{
    if (f->err != S3E_NONE) {
        free(why);
        return;
    }
    f->err = err;
    f->why = why;
}

/* The value of the field name (any case), NULL when the form has none. */
static const char *field(const post_form_t *f, const char *name)
{
    const char *p = f->fields.data;
    for (size_t i = 0; i < f->n_fields; i++) {
        const char *value = p + strlen(p) + 1;
        if (strcasecmp(p, name) == 0)
            return value;
        p = value + strlen(value) + 1;
    }
    return NULL;
}

/* ---- the form's fields as the request's headers --------------------------------- */

/* The fields of a POST form stand for the headers of a PUT (S3: Content-Type,
 * Cache-Control, x-amz-meta-*, acl for x-amz-acl...). s3_meta_from_headers
 * reads them through this frontend; only header lookups happen meanwhile. */
static const char *form_header(s3_req_t *req, const char *name)
{
    return field(req->op_state, strcasecmp(name, "x-amz-acl") == 0 ? "acl" : name);
}

static void form_each_header(s3_req_t *req, s3_header_fn fn, void *ctx)
{
    post_form_t *f = req->op_state;
    const char *p = f->fields.data;
    for (size_t i = 0; i < f->n_fields; i++) {
        const char *value = p + strlen(p) + 1;
        if (fn(ctx, p, value))
            return;
        p = value + strlen(value) + 1;
    }
}

static const s3_frontend_t form_fields_frontend = {
    .header = form_header,
    .each_header = form_each_header,
};

/* A form's tags come as a Tagging XML document in its "tagging" field (not
 * the header's query syntax): into f->meta.tags. */
static s3_error_t form_tags(post_form_t *f, const char **why_p)
{
    const char *doc = field(f, "tagging");
    if (!doc)
        return S3E_NONE;
    s3_tags_t t;
    s3_error_t err = s3_tags_from_xml(doc, strlen(doc), S3_TAGS_OBJECT, &t, why_p);
    if (err != S3E_NONE)
        return err;
    int nomem;
    free(f->meta.tags);
    f->meta.tags = s3_tags_encode(&t, &nomem);
    s3_tags_free(&t);
    return nomem ? S3E_INTERNAL : S3E_NONE;
}

/* ---- authentication and the policy ----------------------------------------------- */

static void fail_missing(post_form_t *f, const char *name)
{
    char msg[160];
    snprintf(msg, sizeof(msg),
             "Bucket POST must contain a field named '%s'.  If it is specified, please check the "
             "order of the fields.",
             name);
    fail(f, S3E_INVALID_ARGUMENT, msg);
}

/* Signature Version 2 fields (AWSAccessKeyId, signature, policy): the
 * signature is the base64 HMAC-SHA1 of the base64 policy under the user's
 * secret key. Refused with AccessDenied when the signature_v2 setting is off. */
static bool verify_signature_v2(s3_req_t *req, post_form_t *f, const s3_user_t **user_p)
{
    static const char *const required[] = {"AWSAccessKeyId", "policy", "signature"};
    if (!req->srv->cfg.signature_v2) {
        fail(f, S3E_ACCESS_DENIED,
             "Signature Version 2 is turned off on this server; sign the policy with "
             "AWS4-HMAC-SHA256.");
        return false;
    }
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!field(f, required[i])) {
            fail_missing(f, required[i]);
            return false;
        }
    }
    const s3_user_t *user = s3_user_find(req->srv, field(f, "AWSAccessKeyId"));
    if (!user) {
        fail(f, S3E_INVALID_ACCESS_KEY, NULL);
        return false;
    }
    const char *policy = field(f, "policy");
    char sig[S3_V2_SIG_LEN + 1];
    s3_auth_v2_sign(user, policy, strlen(policy), sig);
    if (!s3_auth_v2_sig_equal(sig, field(f, "signature"))) {
        fail(f, S3E_SIGNATURE_MISMATCH, NULL);
        return false;
    }
    *user_p = user;
    return true;
}

/* The SigV4 fields: the policy must be signed by a configured user's key for
 * this server's region. On success *user_p is that user, or NULL for a form
 * with neither policy nor credentials: anonymous, allowed only into a bucket
 * whose ACL lets everyone write (public-read-write), as S3 does. */
static bool verify_signature(s3_req_t *req, post_form_t *f, const s3_user_t **user_p)
{
    static const char *const required[] = {"policy", "x-amz-algorithm", "x-amz-credential",
                                           "x-amz-date", "x-amz-signature"};
    if (field(f, "AWSAccessKeyId") || field(f, "signature"))
        return verify_signature_v2(req, f, user_p);
    if (!field(f, "policy") && !field(f, "x-amz-signature") && !field(f, "x-amz-credential")) {
        *user_p = NULL;
        return true;
    }
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (!field(f, required[i])) {
            fail_missing(f, required[i]);
            return false;
        }
    }
    if (strcmp(field(f, "x-amz-algorithm"), SIGV4_ALGORITHM) != 0) {
        fail(f, S3E_INVALID_REQUEST,
             "The authorization mechanism you have provided is not supported. Please use "
             "AWS4-HMAC-SHA256.");
        return false;
    }
    sigv4_auth_t auth;
    memset(&auth, 0, sizeof(auth));
    const char *date = field(f, "x-amz-date");
    if (sigv4_parse_credential(field(f, "x-amz-credential"), &auth) != 0 ||
        strcmp(auth.service, "s3") != 0) {
        fail(f, S3E_INVALID_ARGUMENT, "Error parsing the X-Amz-Credential parameter.");
        return false;
    }
    if (date_parse_amz(date) < 0 || strncmp(date, auth.date8, 8) != 0) {
        fail(f, S3E_INVALID_ARGUMENT,
             "X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\" and match "
             "the credential scope's date.");
        return false;
    }
    if (strcmp(auth.region, req->srv->cfg.region) != 0) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "Error parsing the X-Amz-Credential parameter; the region '%.64s' is wrong; "
                 "expecting '%.64s'",
                 auth.region, req->srv->cfg.region);
        s3_reply_error_elem(req, "Region", req->srv->cfg.region);
        fail(f, S3E_AUTH_QUERY_ERROR, msg);
        return false;
    }
    const s3_user_t *user = s3_user_find(req->srv, auth.access_key);
    if (!user) {
        fail(f, S3E_INVALID_ACCESS_KEY, NULL);
        return false;
    }
    uint8_t key[SHA256_LEN];
    char sig[65];
    const char *policy = field(f, "policy");
    sigv4_signing_key(user->secret_key, auth.date8, auth.region, "s3", key);
    sigv4_sign(key, policy, strlen(policy), sig);
    const char *given = field(f, "x-amz-signature");
    if (strlen(given) != 64 || !hash_ct_equal(sig, given, 64)) {
        fail(f, S3E_SIGNATURE_MISMATCH, NULL);
        return false;
    }
    *user_p = user;
    return true;
}

/* The key field with each "${filename}" replaced by the file's name
 * (malloc'd), NULL when out of memory or too long. */
static char *substitute_filename(const char *key, const char *filename)
{
    static const char var[] = "${filename}";
    buf_t out;
    buf_init(&out, S3R_MAX_KEY_BYTES * 4);
    for (const char *p = key;;) {
        const char *at = strstr(p, var);
        if (!at) {
            if (buf_append_str(&out, p) != 0) {
                buf_free(&out);
                return NULL;
            }
            break;
        }
        if (buf_append(&out, p, (size_t)(at - p)) != 0 || buf_append_str(&out, filename) != 0) {
            buf_free(&out);
            return NULL;
        }
        p = at + sizeof(var) - 1;
    }
    return buf_steal(&out, NULL);
}

/* Runs when the file part starts, every field before it received: decides
 * whether the upload may go on, and if so opens req->writer. */
static void start_file(s3_req_t *req, post_form_t *f, const char *filename)
{
    const s3_user_t *user = NULL;
    if (!field(f, "key")) {
        fail_missing(f, "key");
        return;
    }
    if (!verify_signature(req, f, &user))
        return;
    char *key = substitute_filename(field(f, "key"), filename ? filename : "");
    if (!key) {
        fail(f, S3E_KEY_TOO_LONG, NULL);
        return;
    }
    const char *names[S3R_MAX_POST_FIELDS], *values[S3R_MAX_POST_FIELDS];
    const char *p = f->fields.data;
    for (size_t i = 0; i < f->n_fields; i++) {
        names[i] = p;
        values[i] = p + strlen(p) + 1;
        p = values[i] + strlen(values[i]) + 1;
    }
    post_form_view_t view = {
        .names = names, .values = values, .n = f->n_fields, .bucket = req->bucket, .key = key};
    char *why = NULL;
    s3_error_t err = user ? s3_post_policy_check(field(f, "policy"), req->now_s, &view, &f->min_len,
                                                 &f->max_len, &why)
                          : S3E_NONE;
    if (err == S3E_NONE && key[0] == '\0') {
        err = S3E_INVALID_ARGUMENT;
        why = strdup("User key must have a length greater than 0.");
    }
    if (err == S3E_NONE)
        err = s3_key_check(key);
    if (err != S3E_NONE) {
        free(key);
        fail_owned(f, err, why);
        return;
    }
    req->user = user;
    free(req->key);
    req->key = key;
    free(req->resource);
    req->resource = s3_resource_path(req->bucket, req->key);
    if ((err = s3_bucket_access(req, req->bucket, S3_PERM_WRITE, &req->authz_bucket)) != S3E_NONE) {
        fail(f, err, NULL);
        return;
    }
    const s3_frontend_t *http_fe = req->fe;
    req->fe = &form_fields_frontend;
    const char *acl_why = NULL;
    s3_sse_key_t dk = {0};
    err = s3_meta_from_headers(req, &f->meta, &acl_why);
    if (err == S3E_NONE)
        err = s3_new_object_access(req, &f->meta, &acl_why);
    /* The form's x-amz-object-lock-* fields; a form carries its file's
     * integrity in no header S3 asks for here (put: false). */
    if (err == S3E_NONE)
        err = s3_lock_for_write(req, &f->meta, false, &acl_why);
    /* The form's fields stand for the SSE headers too; its transport is
     * never a secure one to customer keys (s3/sse.c). */
    if (err == S3E_NONE)
        err = s3_sse_for_write(req, &f->meta, &dk, &acl_why);
    req->fe = http_fe;
    if (err == S3E_NONE)
        err = form_tags(f, &acl_why);
    if (err != S3E_NONE) {
        cipher_secure_zero(&dk, sizeof dk);
        fail(f, err, acl_why);
        return;
    }
    stor_status_t st = stor_writer_open(req->srv->cfg.store, &req->authz_bucket, &req->writer);
    s3_sse_apply_writer(&dk, req->writer);
    if (st != STOR_OK)
        fail(f, s3_error_from_stor(st), NULL);
}

/* ---- the form as it streams in ------------------------------------------------------ */

/* Keeps one field's piece (off 0 starts a field, later pieces continue it).
 * The fields are kept as "name\0value\0" strings: a NUL byte in a value is
 * refused, as it would end the value and shift every field after it. A
 * field given twice (names compared without regard to case) is refused: the
 * policy judges one value per field, and the object must store that one,
 * not every copy. */
static void keep_field(post_form_t *f, const char *key, const char *data, uint64_t off, size_t size)
{
    if (size && memchr(data, '\0', size)) {
        fail(f, S3E_INVALID_ARGUMENT, "A form field contains a NUL byte.");
        return;
    }
    bool starts = off == 0 || f->n_fields == 0;
    if (starts && field(f, key)) {
        char msg[160];
        snprintf(msg, sizeof(msg), "The form field '%.64s' appears more than once.", key);
        fail(f, S3E_INVALID_ARGUMENT, msg);
        return;
    }
    bool fits;
    if (starts) {
        fits = f->n_fields < S3R_MAX_POST_FIELDS &&
               buf_append(&f->fields, key, strlen(key) + 1) == 0 &&
               buf_append(&f->fields, data, size) == 0 && buf_append(&f->fields, "", 1) == 0;
        f->n_fields += fits;
    } else {
        f->fields.len--; /* the value's NUL: this piece continues it */
        fits = buf_append(&f->fields, data, size) == 0 && buf_append(&f->fields, "", 1) == 0;
    }
    if (!fits)
        fail(f, S3E_POST_FIELDS_TOO_LARGE, NULL);
}

static int on_form_data(void *ctx, const char *key, const char *filename, const char *data,
                        uint64_t off, size_t size)
{
    s3_req_t *req = ctx;
    post_form_t *f = req->op_state;
    bool is_file = strcmp(key, "file") == 0;
    if (f->file_seen && (!is_file || off == 0))
        return 0; /* after the file: ignored, as S3 does */
    if (!is_file) {
        keep_field(f, key, data, off, size);
        return f->err != S3E_NONE;
    }
    if (!f->file_seen) {
        f->file_seen = true;
        start_file(req, f, filename);
    }
    if (f->err == S3E_NONE && size > f->max_len - req->body_bytes)
        fail(f, S3E_ENTITY_TOO_LARGE, "Your proposed upload exceeds the maximum allowed size");
    if (f->err != S3E_NONE)
        return 1;
    if (size && s3_body_sink(req, data, size) != 0)
        return 1;
    return 0;
}

static void post_object_feed(s3_req_t *req, const char *data, size_t len)
{
    post_form_t *f = req->op_state;
    if (f->err != S3E_NONE || req->body_error != S3E_NONE)
        return;
    int rc;
    if (data) {
        rc = f->fe->form_feed(f->form, data, len);
    } else {
        rc = f->fe->form_close(f->form);
        f->form = NULL;
    }
    if (rc != 0 && f->err == S3E_NONE && req->body_error == S3E_NONE)
        fail(f, S3E_MALFORMED_POST, NULL);
}

static void post_object_begin(s3_req_t *req)
{
    const char *ct = s3_req_header(req, "Content-Type");
    if (!ct || strncasecmp(ct, "multipart/form-data", 19) != 0) {
        s3_reply_error_elem(req, "Condition",
                            "Bucket POST must be of the enclosure-type multipart/form-data");
        s3_reply_error(req, S3E_PRECONDITION_FAILED, NULL);
        return;
    }
    post_form_t *f = calloc(1, sizeof(*f));
    if (!f) {
        s3_reply_error(req, S3E_INTERNAL, NULL);
        return;
    }
    buf_init(&f->fields, S3R_MAX_POST_FIELD_BYTES);
    f->max_len = UINT64_MAX;
    req->op_state = f;
    req->op_state_free = post_form_free;
    /* Nothing is signed over the body: the policy's signature covers it. */
    req->payload_mode = S3_PAYLOAD_UNSIGNED;
    f->fe = req->fe;
    f->form = req->fe->form_open ? req->fe->form_open(req, on_form_data, req) : NULL;
    if (!f->form) {
        s3_reply_error(req, S3E_MALFORMED_POST, NULL);
        return;
    }
    req->body_kind = S3_BODY_FORM;
    req->form_feed = post_object_feed;
}

/* The answer S3 gives a successful form upload: a 303 to
 * success_action_redirect (with bucket, key and etag in its query) when it
 * is an http(s) URL, else success_action_status 200 or 201 (with a
 * PostResponse document), else 204. */
static void reply_success(s3_req_t *req, const char *location)
{
    post_form_t *f = req->op_state;
    const char *redirect = field(f, "success_action_redirect");
    if (!redirect)
        redirect = field(f, "redirect");
    if (redirect &&
        (strncmp(redirect, "http://", 7) == 0 || strncmp(redirect, "https://", 8) == 0)) {
        buf_t url;
        buf_init(&url, S3R_MAX_HEADER_VALUE);
        char etag[sizeof(req->etag) + 2];
        snprintf(etag, sizeof(etag), "\"%s\"", req->etag);
        buf_printf(&url, "%s%cbucket=", redirect, strchr(redirect, '?') ? '&' : '?');
        sigv4_uri_encode(req->bucket, strlen(req->bucket), true, &url);
        buf_append_str(&url, "&key=");
        sigv4_uri_encode(req->key, strlen(req->key), true, &url);
        buf_append_str(&url, "&etag=");
        sigv4_uri_encode(etag, strlen(etag), true, &url);
        if (url.data) {
            s3_reply_header(req, "Location", url.data);
            buf_free(&url);
            s3_reply_empty(req, 303);
            return;
        }
        buf_free(&url);
    }
    const char *status = field(f, "success_action_status");
    s3_reply_header(req, "Location", location);
    if (status && strcmp(status, "201") == 0) {
        buf_t xml;
        buf_init(&xml, 64 * 1024);
        buf_append_str(&xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PostResponse>");
        s3_xml_elem(&xml, "Location", location);
        s3_xml_elem(&xml, "Bucket", req->bucket);
        s3_xml_elem(&xml, "Key", req->key);
        buf_printf(&xml, "<ETag>&quot;%s&quot;</ETag></PostResponse>", req->etag);
        s3_reply_xml(req, 201, &xml);
    } else {
        s3_reply_empty(req, status && strcmp(status, "200") == 0 ? 200 : 204);
    }
}

static void post_object_finish(s3_req_t *req)
{
    post_form_t *f = req->op_state;
    if (f->err == S3E_NONE && !f->file_seen)
        fail(f, S3E_INVALID_ARGUMENT, "POST requires exactly one file upload per request.");
    if (f->err == S3E_NONE && req->body_bytes < f->min_len)
        fail(f, S3E_ENTITY_TOO_SMALL,
             "Your proposed upload is smaller than the minimum allowed size");
    if (f->err != S3E_NONE) {
        s3_reply_error(req, f->err, f->why);
        return;
    }
    /* http://host/bucket/key, or http://host/key when the bucket is the host's. */
    buf_t location;
    buf_init(&location, S3R_MAX_HEADER_VALUE);
    const char *host = s3_req_header(req, "Host");
    buf_printf(&location, "http://%s", host ? host : "localhost");
    if (strcmp(req->path, "/") != 0) {
        buf_append_str(&location, "/");
        sigv4_uri_encode(req->bucket, strlen(req->bucket), true, &location);
    }
    buf_append_str(&location, "/");
    sigv4_uri_encode(req->key, strlen(req->key), false, &location);
    if (s3_object_commit(req, &f->meta))
        reply_success(req, location.data ? location.data : "");
    buf_free(&location);
}

const s3_op_t s3_op_post_object = {"PostObject", post_object_begin, post_object_finish};
