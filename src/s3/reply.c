/* Replies, whatever the frontend: response headers, S3 XML bodies and
 * errors, objects. Each reply ends in the frontend's send(). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"

void s3_reply_header(s3_req_t *req, const char *name, const char *value)
{
    /* One buffer for all of them: a GET sets a dozen headers. The pair is
     * added whole or not at all. */
    size_t before = req->reply_headers.len;
    if (buf_append(&req->reply_headers, name, strlen(name) + 1) != 0 ||
        buf_append(&req->reply_headers, value, strlen(value) + 1) != 0) {
        req->reply_headers.len = before;
        log_warn("request %s: response header %s dropped", req->request_id, name);
    }
}

void s3_reply_headerf(s3_req_t *req, const char *name, const char *fmt, ...)
{
    char value[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof(value), fmt, ap);
    va_end(ap);
    s3_reply_header(req, name, value);
}

void s3_reply_send(s3_req_t *req, int status, s3_out_t *out)
{
    req->status = status;
    req->bytes_out = s3_req_is_head(req)          ? 0
                     : out->kind == S3_OUT_BUFFER ? out->len
                     : out->kind == S3_OUT_OBJECT ? out->obj_len
                                                  : 0;
    req->fe->send(req, status, out);
}

void s3_reply_empty(s3_req_t *req, int status)
{
    s3_out_t out = {.kind = S3_OUT_EMPTY};
    s3_reply_send(req, status, &out);
}

void s3_reply_xml(s3_req_t *req, int status, buf_t *xml)
{
    s3_out_t out = {.kind = S3_OUT_BUFFER};
    out.data = buf_steal(xml, &out.len);
    s3_reply_header(req, "Content-Type", "application/xml");
    s3_reply_send(req, status, &out);
}

void s3_reply_error(s3_req_t *req, s3_error_t err, const char *message)
{
    int status = s3_error_status(err);
    req->error = err;
    if (status >= 500)
        log_warn("request %s %s %s: %s %s", req->request_id, req->method,
                 req->resource ? req->resource : "/", s3_error_code(err), message ? message : "");
    else
        log_debug("request %s %s %s: %s %s", req->request_id, req->method,
                  req->resource ? req->resource : "/", s3_error_code(err), message ? message : "");
    if (s3_req_is_head(req) || status == 304) {
        s3_reply_empty(req, status);
        return;
    }
    buf_t xml;
    buf_init(&xml, 64 * 1024);
    buf_append_str(&xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error>");
    s3_xml_elem(&xml, "Code", s3_error_code(err));
    s3_xml_elem(&xml, "Message", message ? message : s3_error_message(err));
    if (req->error_elems.len)
        buf_append(&xml, req->error_elems.data, req->error_elems.len);
    if (req->bucket && (err == S3E_NO_SUCH_BUCKET || err == S3E_BUCKET_EXISTS ||
                        err == S3E_BUCKET_OWNED || err == S3E_BUCKET_NOT_EMPTY))
        s3_xml_elem(&xml, "BucketName", req->bucket);
    if (req->key && err == S3E_NO_SUCH_KEY)
        s3_xml_elem(&xml, "Key", req->key);
    if (req->headers_not_signed && err == S3E_ACCESS_DENIED)
        s3_xml_elem(&xml, "HeadersNotSigned", req->headers_not_signed);
    s3_xml_elem(&xml, "Resource", req->resource ? req->resource : "/");
    s3_xml_elem(&xml, "RequestId", req->request_id);
    buf_append_str(&xml, "</Error>");
    s3_reply_xml(req, status, &xml);
}

void s3_reply_error_elem(s3_req_t *req, const char *name, const char *value)
{
    s3_xml_elem(&req->error_elems, name, value);
}

void s3_xml_open(buf_t *xml, const char *root)
{
    buf_printf(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s xmlns=\"" S3_XMLNS "\">",
               root);
}

/* <name> or </name>: on every element of a listing, so without printf. */
static void xml_tag(buf_t *xml, const char *name, bool close)
{
    buf_append(xml, close ? "</" : "<", close ? 2 : 1);
    buf_append_str(xml, name);
    buf_append(xml, ">", 1);
}

void s3_xml_elem(buf_t *xml, const char *name, const char *value)
{
    xml_tag(xml, name, false);
    buf_append_xml(xml, value);
    xml_tag(xml, name, true);
}

void s3_xml_principal(const s3_server_t *srv, buf_t *xml, const char *tag, const char *who)
{
    const char *name = s3_display_name(srv, who);
    xml_tag(xml, tag, false);
    s3_xml_elem(xml, "ID", who);
    s3_xml_elem(xml, "DisplayName", name ? name : who);
    xml_tag(xml, tag, true);
}

void s3_reply_object(s3_req_t *req, int status, stor_reader_t *reader, uint64_t first, uint64_t len)
{
    if (len == 0) {
        stor_reader_close(reader);
        s3_out_t empty = {.kind = S3_OUT_EMPTY, .object = true};
        s3_reply_send(req, status, &empty);
        return;
    }
    s3_out_t out = {
        .kind = S3_OUT_OBJECT, .object = true, .reader = reader, .first = first, .obj_len = len};
    s3_reply_send(req, status, &out);
}

s3_error_t s3_error_from_stor(stor_status_t st)
{
    switch (st) {
    case STOR_OK:
        return S3E_NONE;
    case STOR_ERR_NO_BUCKET:
        return S3E_NO_SUCH_BUCKET;
    case STOR_ERR_NO_KEY:
        return S3E_NO_SUCH_KEY;
    case STOR_ERR_BUCKET_EXISTS:
        return S3E_BUCKET_EXISTS;
    case STOR_ERR_BUCKET_NOT_EMPTY:
        return S3E_BUCKET_NOT_EMPTY;
    case STOR_ERR_NO_UPLOAD:
        return S3E_NO_SUCH_UPLOAD;
    case STOR_ERR_INVALID_PART:
        return S3E_INVALID_PART;
    case STOR_ERR_INVALID_PART_ORDER:
        return S3E_INVALID_PART_ORDER;
    case STOR_ERR_PART_TOO_SMALL:
        return S3E_ENTITY_TOO_SMALL;
    case STOR_ERR_TOO_LARGE:
        return S3E_METADATA_TOO_LARGE;
    case STOR_ERR_BAD_DIGEST:
        return S3E_BAD_DIGEST;
    case STOR_ERR_PRECONDITION:
        return S3E_PRECONDITION_FAILED;
    case STOR_ERR_UNAVAILABLE:
        return S3E_SLOW_DOWN;
    case STOR_ERR_NO_VERSION:
        return S3E_NO_SUCH_VERSION;
    case STOR_ERR_DELETE_MARKER:
        return S3E_NO_SUCH_KEY;
    case STOR_ERR_UNSUPPORTED:
        return S3E_NOT_IMPLEMENTED;
    case STOR_ERR_LOCKED:
        return S3E_ACCESS_DENIED;
    case STOR_ERR_NOMEM:
    case STOR_ERR_IO:
    default:
        return S3E_INTERNAL;
    }
}
