/* The HTTP frontend's form parser (s3_frontend_t.form_open/feed/close):
 * a multipart/form-data body parsed by libmicrohttpd's post processor as it
 * streams in, its fields handed to the S3 layer's callback (PostObject,
 * s3/post_object.c). */
#include <stdlib.h>

#include "http/http_internal.h"

#define HTTP_FORM_BUFFER (16 * 1024) /* the post processor's buffer for field values */

/* A form body, parsed by libmicrohttpd's post processor. */
struct s3_form {
    struct MHD_PostProcessor *pp;
    s3_form_fn fn;
    void *ctx;
};

static enum MHD_Result form_data(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *filename, const char *content_type,
                                 const char *transfer_encoding, const char *data, uint64_t off,
                                 size_t size)
{
    (void)kind;
    (void)content_type;
    (void)transfer_encoding;
    s3_form_t *form = cls;
    return form->fn(form->ctx, key, filename, data, off, size) ? MHD_NO : MHD_YES;
}

s3_form_t *http_form_open(s3_req_t *req, s3_form_fn fn, void *ctx)
{
    s3_form_t *form = calloc(1, sizeof(*form));
    if (!form)
        return NULL;
    form->fn = fn;
    form->ctx = ctx;
    form->pp = MHD_create_post_processor(http_mhd_conn(req), HTTP_FORM_BUFFER, form_data, form);
    if (!form->pp) {
        free(form);
        return NULL;
    }
    return form;
}

int http_form_feed(s3_form_t *form, const char *data, size_t len)
{
    return MHD_post_process(form->pp, data, len) == MHD_YES ? 0 : -1;
}

int http_form_close(s3_form_t *form)
{
    enum MHD_Result ok = MHD_destroy_post_processor(form->pp);
    free(form);
    return ok == MHD_YES ? 0 : -1;
}
