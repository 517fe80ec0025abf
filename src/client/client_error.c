/* libs3rdma: the last-error record (thread-local, tagged with the client it
 * belongs to), s3r_client_last_error and the error counting every public
 * operation returns through. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/client_internal.h"

/* ======================================================================== */
/* Last error: thread-local, tagged with the client it belongs to            */
/* ======================================================================== */

__thread s3r_error_info_t s3c_tls_err;
__thread const s3r_client_t *s3c_tls_err_client;

s3r_status_t s3c_fail(const s3r_client_t *c, s3r_status_t st, s3r_transport_t t, int http_status,
                      const char *code, const char *fmt, ...)
{
    memset(&s3c_tls_err, 0, sizeof(s3c_tls_err));
    s3c_tls_err_client = c;
    s3c_tls_err.status = st;
    s3c_tls_err.transport = t;
    s3c_tls_err.http_status = http_status;
    snprintf(s3c_tls_err.code, sizeof(s3c_tls_err.code), "%s", code ? code : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s3c_tls_err.message, sizeof(s3c_tls_err.message), fmt, ap);
    va_end(ap);
    return st;
}

void s3c_set_needed(uint64_t needed)
{
    s3c_tls_err.needed_bytes = needed;
}

void s3c_set_request_id(const char *rid)
{
    snprintf(s3c_tls_err.request_id, sizeof(s3c_tls_err.request_id), "%s", rid ? rid : "");
}

void s3c_set_status(s3r_status_t st)
{
    s3c_tls_err.status = st;
}

void s3c_err_restore(const s3r_client_t *c, const s3r_error_info_t *e)
{
    s3c_tls_err = *e;
    s3c_tls_err_client = c;
}

s3r_status_t s3r_client_last_error(const s3r_client_t *c, s3r_error_info_t *info_p)
{
    if (info_p == NULL || s3c_tls_err_client != c || (c == NULL && s3c_tls_err.status == S3R_OK))
        return S3R_ERR_INVALID_ARG;
    *info_p = s3c_tls_err;
    return S3R_OK;
}

/* Every public operation returns through here so errors are counted once. */
s3r_status_t s3c_done(s3r_client_t *c, s3r_status_t st)
{
    if (st != S3R_OK)
        atomic_fetch_add(&c->n_errors, 1);
    return st;
}

/* ======================================================================== */
/* Last version written: thread-local, tagged like the last error           */
/* ======================================================================== */

static __thread s3r_version_info_t tls_version;
static __thread const s3r_client_t *tls_version_client;

void s3c_version_record(const s3r_client_t *c, const s3c_resp_t *resp)
{
    char v[16];
    memset(&tls_version, 0, sizeof(tls_version));
    tls_version_client = c;
    if (s3c_resp_header(resp, "x-amz-version-id", tls_version.version_id,
                        sizeof(tls_version.version_id)) < 0)
        tls_version.version_id[0] = '\0';
    tls_version.delete_marker =
        s3c_resp_header(resp, "x-amz-delete-marker", v, sizeof(v)) == 0 && strcmp(v, "true") == 0;
}

s3r_status_t s3r_client_last_version(const s3r_client_t *c, s3r_version_info_t *info_p)
{
    if (c == NULL || info_p == NULL || tls_version_client != c)
        return S3R_ERR_INVALID_ARG;
    *info_p = tls_version;
    return S3R_OK;
}

/* ======================================================================== */
/* Last part checksum: thread-local, read right after the part's s3c_put_one     */
/* ======================================================================== */

static __thread char tls_part_crc32c[S3C_PART_CRC32C_MAX];

void s3c_part_checksum_record(const s3c_resp_t *resp)
{
    char v[64];
    size_t n = s3c_resp_header(resp, "x-amz-checksum-crc32c", v, sizeof(v)) == 0 ? strlen(v) : 0;
    if (n >= sizeof(tls_part_crc32c))
        n = 0; /* not a CRC32C's base64: none */
    memcpy(tls_part_crc32c, v, n);
    tls_part_crc32c[n] = '\0';
}

const char *s3c_part_checksum(void)
{
    return tls_part_crc32c;
}
