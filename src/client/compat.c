/* libs3rdma: the S3RDMA_0 versions of the calls whose options struct grew
 * since (s3rdma.map). A program built against the earlier header passes
 * s3r_put_opts_t at its earlier size; these read only that much of it and
 * run the current call with the later fields zero. */
#include "client/client_internal.h"

/* Each s3c_compat_* below is the S3RDMA_0 version of the call it names
 * (an assembler directive: gcc's symver attribute is not in clang). */
__asm__(".symver s3c_compat_object_put, s3r_object_put@S3RDMA_0");
__asm__(".symver s3c_compat_object_put_file, s3r_object_put_file@S3RDMA_0");
__asm__(".symver s3c_compat_object_put_async, s3r_object_put_async@S3RDMA_0");
__asm__(".symver s3c_compat_multipart_start, s3r_multipart_start@S3RDMA_0");

/* s3r_put_opts_t as S3RDMA_0 laid it out. */
typedef struct put_opts_v0 {
    const char *content_type;
    const s3r_meta_t *meta;
    size_t n_meta;
    s3r_transport_t transport;
    int if_none_match;
} put_opts_v0_t;

/* opts (NULL stays NULL) in the current layout, in *out. */
static const s3r_put_opts_t *put_opts_now(const put_opts_v0_t *opts, s3r_put_opts_t *out)
{
    if (opts == NULL)
        return NULL;
    *out = (s3r_put_opts_t){.content_type = opts->content_type,
                            .meta = opts->meta,
                            .n_meta = opts->n_meta,
                            .transport = opts->transport,
                            .if_none_match = opts->if_none_match};
    return out;
}

s3r_status_t s3c_compat_object_put(s3r_client_t *c, const char *bucket, const char *key,
                                   const void *data, uint64_t len, const put_opts_v0_t *opts)
{
    s3r_put_opts_t now;
    return s3r_object_put(c, bucket, key, data, len, put_opts_now(opts, &now));
}

s3r_status_t s3c_compat_object_put_file(s3r_client_t *c, const char *bucket, const char *key,
                                        const char *path, const put_opts_v0_t *opts)
{
    s3r_put_opts_t now;
    return s3r_object_put_file(c, bucket, key, path, put_opts_now(opts, &now));
}

/* The op keeps a copy of the options (client_async.c), so the current
 * layout's copy on this stack may go when this returns. */
s3r_status_t s3c_compat_object_put_async(s3r_client_t *c, const char *bucket, const char *key,
                                         const void *data, uint64_t len, const put_opts_v0_t *opts,
                                         s3r_op_t **op_p)
{
    s3r_put_opts_t now;
    return s3r_object_put_async(c, bucket, key, data, len, put_opts_now(opts, &now), op_p);
}

s3r_status_t s3c_compat_multipart_start(s3r_client_t *c, const char *bucket, const char *key,
                                        const put_opts_v0_t *opts, s3r_multipart_t **up_p)
{
    s3r_put_opts_t now;
    return s3r_multipart_start(c, bucket, key, put_opts_now(opts, &now), up_p);
}
