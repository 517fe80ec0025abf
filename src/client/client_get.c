/* libs3rdma: GET into a caller buffer, into a new allocation and into a file,
 * over HTTP, the token path or the native protocol (with fallback): ranges, sizing by HEAD, and
 * the buffer-too-small answer with the bytes needed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_internal.h"

/* ======================================================================== */
/* GET                                                                       */
/* ======================================================================== */

static const char *range_header(strs_t *ss, const s3r_get_opts_t *o)
{
    if (o == NULL || (o->range_start == 0 && o->range_len == 0))
        return NULL;
    if (o->range_len == 0)
        return s3c_strs_printf(ss, "bytes=%llu-", (unsigned long long)o->range_start);
    return s3c_strs_printf(ss, "bytes=%llu-%llu", (unsigned long long)o->range_start,
                           (unsigned long long)(o->range_start + o->range_len - 1));
}

/* The bytes a GET with opts (range or whole object) moves, from a HEAD. */
static s3r_status_t get_size(s3r_client_t *c, const char *bucket, const char *key,
                             const s3r_get_opts_t *o, uint64_t *size_p)
{
    s3r_object_info_t *info = NULL;
    s3r_status_t st = s3c_head_object(c, bucket, key, o ? o->version_id : NULL, &info);
    if (st != S3R_OK)
        return st;
    uint64_t start = o ? o->range_start : 0;
    uint64_t size = info->size > start ? info->size - start : 0;
    if (o && o->range_len && o->range_len < size)
        size = o->range_len;
    s3r_object_info_free(info);
    *size_p = size;
    return S3R_OK;
}

/* The bytes a GET with opts needs, from a HEAD; 0 if unknown. The caller's
 * last error is kept. */
static uint64_t needed_for(s3r_client_t *c, const char *bucket, const char *key,
                           const s3r_get_opts_t *o)
{
    s3r_error_info_t saved = s3c_tls_err;
    const s3r_client_t *saved_c = s3c_tls_err_client;
    uint64_t need = 0;
    (void)get_size(c, bucket, key, o, &need);
    s3c_tls_err = saved;
    s3c_tls_err_client = saved_c;
    return need;
}

static s3r_status_t too_small(s3r_client_t *c, s3r_transport_t t, int http, uint64_t need,
                              uint64_t cap)
{
    s3c_fail(c, S3R_ERR_BUFFER_TOO_SMALL, t, http, "",
             "the object needs %llu bytes, the buffer has %llu", (unsigned long long)need,
             (unsigned long long)cap);
    s3c_set_needed(need);
    return S3R_ERR_BUFFER_TOO_SMALL;
}

s3r_status_t s3c_get_request(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const char *bucket,
                             const char *key, void *buf, uint64_t cap, const s3r_get_opts_t *o)
{
    s3c_req_init(req, "GET", bucket, key);
    req->native_op = RDMA_OP_GET_OBJECT;
    const char *range = range_header(ss, o);
    if (range)
        s3c_req_hdr(req, "range", range);
    req->sink_buf = buf;
    req->sink_cap = cap;
    return s3c_version_query(c, req, ss, o ? o->version_id : NULL);
}

s3r_status_t s3c_get_result(s3r_client_t *c, s3r_status_t st, const s3c_resp_t *resp, uint64_t cap,
                            bool grow, uint64_t *len_p)
{
    if (st == S3R_OK && (resp->status < 200 || resp->status > 299)) {
        st = s3c_http_error(c, resp, resp->transport, true);
    } else if (st == S3R_OK && resp->overflow) {
        char v[64];
        uint64_t need = 0;
        if (s3c_resp_header(resp, "content-length", v, sizeof(v)) == 0)
            need = strtoull(v, NULL, 10);
        st = grow ? s3c_fail(c, S3R_ERR_NOMEM, resp->transport, 0, "", "object too large")
                  : too_small(c, resp->transport, (int)resp->status, need, cap);
    } else if (st == S3R_OK && resp->sink_failed) {
        st = s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_HTTP, 0, "", "writing the file: %s",
                      strerror(errno));
    } else if (st == S3R_OK && resp->curl_code != 0) {
        st = s3c_fail(c, S3R_ERR_HTTP, S3R_TRANSPORT_HTTP, (int)resp->status, "",
                      "transfer failed: %s", resp->curl_err);
    } else if (st == S3R_OK) {
        if (resp->transport == S3R_TRANSPORT_HTTP)
            s3c_count_transfer(c, S3R_TRANSPORT_HTTP, resp->body_bytes);
        *len_p = resp->body_bytes;
    }
    return st;
}

/* GET over t (token and native fall back to HTTP as the rules say) into
 * buf (cap bytes), the file fd at fd_off (HTTP only), or grow. */
static s3r_status_t get_plain(s3r_client_t *c, s3r_transport_t t, const char *bucket,
                              const char *key, void *buf, uint64_t cap, int fd, uint64_t fd_off,
                              buf_t *grow, const s3r_get_opts_t *o, uint64_t *len_p)
{
    strs_t ss = {0};
    s3c_req_t req;
    s3c_resp_t resp;
    s3c_resp_init(&resp);
    s3r_status_t st = s3c_get_request(c, &req, &ss, bucket, key, buf, cap, o);
    if (fd >= 0)
        req.native_op = 0;
    req.sink_fd = fd;
    req.sink_off = fd_off;
    if (fd >= 0) {
        req.sink_progress = c->progress;
        req.sink_progress_arg = c->progress_arg;
    }
    req.sink_grow = grow;
    if (st == S3R_OK)
        st = s3c_do(c, t, &req, &resp);
    char v[24];
    if (st == S3R_OK && resp.overflow && s3c_resp_header(&resp, "content-length", v, sizeof(v)) < 0)
        /* The buffer was refused without its size (a token path's server
         * other than s3rdmad may answer so): a HEAD names it. */
        buf_printf(&resp.hdrs, "content-length: %llu\n",
                   (unsigned long long)needed_for(c, bucket, key, o));
    st = s3c_get_result(c, st, &resp, cap, grow != NULL, len_p);
    s3c_resp_free(&resp);
    s3c_strs_free(&ss);
    return st;
}

s3r_status_t s3c_get_one(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                         uint64_t cap, const s3r_get_opts_t *o, uint64_t *len_p)
{
    uint64_t size = o && o->range_len && o->range_len < cap ? o->range_len : cap;
    s3r_transport_t t = s3c_pick_transport(c, o ? o->transport : S3R_TRANSPORT_DEFAULT, size);
    return get_plain(c, t, bucket, key, buf, cap, -1, 0, NULL, o, len_p);
}

s3r_status_t s3r_object_get(s3r_client_t *c, const char *bucket, const char *key, void *buf,
                            uint64_t buf_len, const s3r_get_opts_t *opts, uint64_t *len_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) ||
        (buf == NULL && buf_len > 0) || len_p == NULL)
        return S3R_ERR_INVALID_ARG;
    return s3c_done(c, s3c_get_one(c, bucket, key, buf, buf_len, opts, len_p));
}

/* GET into memory from alloc (s3r_object_get_sized's contract) over t (as
 * picked for the whole object or range). HTTP: one request, the body written
 * straight into alloc(Content-Length) from the first byte on; a body without
 * a Content-Length (or an empty one, which never reaches the sink) is
 * collected, then copied. Otherwise a HEAD names the size, and s3c_get_one picks
 * the transport again for it (under AUTO an object below rdma_threshold goes
 * over HTTP) and reads into the buffer of exactly that size. */
static s3r_status_t get_sized(s3r_client_t *c, s3r_transport_t t, const char *bucket,
                              const char *key, const s3r_get_opts_t *o, s3r_alloc_fn alloc,
                              void *arg, void **buf_p, uint64_t *len_p)
{
    s3r_status_t st;
    uint64_t n = 0;
    *buf_p = NULL;
    if (t == S3R_TRANSPORT_HTTP) {
        strs_t ss = {0};
        s3c_req_t req;
        s3c_resp_t resp;
        buf_t spill;
        buf_init(&spill, SIZE_MAX / 2);
        s3c_resp_init(&resp);
        st = s3c_get_request(c, &req, &ss, bucket, key, NULL, 0, o);
        req.sink_alloc = alloc;
        req.sink_alloc_arg = arg;
        req.sink_grow = &spill;
        if (st == S3R_OK)
            st = s3c_get_result(c, s3c_do(c, t, &req, &resp), &resp, 0, true, &n);
        *buf_p = req.sink_buf;
        if (st == S3R_OK && req.sink_buf == NULL) {
            if ((*buf_p = alloc(arg, spill.len)) == NULL)
                st = s3c_fail(c, S3R_ERR_NOMEM, t, 0, "", "out of memory");
            else if (spill.len > 0)
                memcpy(*buf_p, spill.data, spill.len);
        }
        buf_free(&spill);
        s3c_resp_free(&resp);
        s3c_strs_free(&ss);
    } else {
        uint64_t need = 0;
        st = get_size(c, bucket, key, o, &need);
        if (st == S3R_OK && (*buf_p = alloc(arg, need)) == NULL)
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
        if (st == S3R_OK) {
            st = s3c_get_one(c, bucket, key, *buf_p, need, o, &n);
            /* The buffer is about to change hands: drop its registration. */
            s3r_buf_unregister_range(c, *buf_p, (size_t)need);
        }
    }
    if (st == S3R_OK)
        *len_p = n;
    return st;
}

s3r_status_t s3r_object_get_sized(s3r_client_t *c, const char *bucket, const char *key,
                                  const s3r_get_opts_t *opts, s3r_alloc_fn alloc, void *arg,
                                  void **buf_p, uint64_t *len_p)
{
    if (buf_p != NULL)
        *buf_p = NULL;
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || alloc == NULL ||
        buf_p == NULL || len_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    s3r_transport_t t =
        s3c_pick_transport(c, want, opts && opts->range_len ? opts->range_len : UINT64_MAX);
    return s3c_done(c, get_sized(c, t, bucket, key, opts, alloc, arg, buf_p, len_p));
}

/* s3r_object_get_alloc's memory: one byte more than the body, for its NUL. */
static void *alloc_nul(void *arg, uint64_t size)
{
    (void)arg;
    return size < SIZE_MAX ? malloc((size_t)size + 1) : NULL;
}

s3r_status_t s3r_object_get_alloc(s3r_client_t *c, const char *bucket, const char *key,
                                  const s3r_get_opts_t *opts, void **data_p, uint64_t *len_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || data_p == NULL ||
        len_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    s3r_transport_t t =
        s3c_pick_transport(c, want, opts && opts->range_len ? opts->range_len : UINT64_MAX);
    s3r_status_t st;
    uint64_t n = 0;
    if (t == S3R_TRANSPORT_NATIVE) {
        /* One request, the body inline, or asked for once more straight
         * into a buffer of the size the server names (s3c_do falls back to
         * HTTP into the growing buffer). */
        buf_t b;
        buf_init(&b, SIZE_MAX / 2);
        st = get_plain(c, t, bucket, key, NULL, 0, -1, 0, &b, opts, &n);
        if (st == S3R_OK) {
            size_t len;
            *data_p = buf_steal(&b, &len);
            *len_p = len;
        }
        buf_free(&b);
        return s3c_done(c, st);
    }
    char *mem = NULL;
    st = get_sized(c, t, bucket, key, opts, alloc_nul, NULL, (void **)&mem, &n);
    if (st != S3R_OK) {
        free(mem);
        return s3c_done(c, st);
    }
    mem[n] = '\0';
    *data_p = mem;
    *len_p = n;
    return S3R_OK;
}

s3r_status_t s3r_object_get_file(s3r_client_t *c, const char *bucket, const char *key,
                                 const char *path, const s3r_get_opts_t *opts)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || path == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    s3r_status_t st = S3R_OK;
    uint64_t size = UINT64_MAX;
    s3r_transport_t t =
        s3c_pick_transport(c, want, opts && opts->range_len ? opts->range_len : UINT64_MAX);
    if (t == S3R_TRANSPORT_TOKEN || t == S3R_TRANSPORT_NATIVE) {
        st = get_size(c, bucket, key, opts, &size);
        if (st != S3R_OK)
            return s3c_done(c, st);
        t = s3c_pick_transport(c, want, size);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return s3c_done(c, s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "open %s: %s",
                                    path, strerror(errno)));
    uint64_t n = 0;
    if (t != S3R_TRANSPORT_TOKEN && t != S3R_TRANSPORT_NATIVE) {
        st = get_plain(c, S3R_TRANSPORT_HTTP, bucket, key, NULL, 0, fd, 0, NULL, opts, &n);
    } else {
        /* Chunked ranged GETs into one registered staging buffer. */
        uint64_t chunk = size < c->set.part_size ? size : c->set.part_size;
        bool reg;
        void *buf = s3c_stage_alloc(c, t, chunk, &reg);
        if (buf == NULL)
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
        uint64_t base = opts ? opts->range_start : 0;
        for (uint64_t off = 0; st == S3R_OK && off < size; off += chunk) {
            uint64_t want_n = size - off < chunk ? size - off : chunk;
            s3r_get_opts_t o = {.range_start = base + off,
                                .range_len = want_n,
                                .transport = t,
                                .version_id = opts ? opts->version_id : NULL};
            uint64_t got = 0;
            st = s3c_get_one(c, bucket, key, buf, want_n, &o, &got);
            if (st == S3R_OK && got != want_n)
                st = s3c_fail(c, S3R_ERR_PROTOCOL, t, 0, "", "short read: %llu of %llu bytes",
                              (unsigned long long)got, (unsigned long long)want_n);
            for (uint64_t w = 0; st == S3R_OK && w < got;) {
                ssize_t r = pwrite(fd, (char *)buf + w, (size_t)(got - w), (off_t)(off + w));
                if (r < 0 && errno == EINTR)
                    continue;
                if (r <= 0)
                    st = s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "writing %s: %s",
                                  path, strerror(errno));
                else
                    w += (uint64_t)r;
            }
            if (st == S3R_OK && c->progress != NULL)
                c->progress(c->progress_arg, off + got, size);
        }
        s3c_stage_free(c, buf, reg);
    }
    if (close(fd) < 0 && st == S3R_OK)
        st = s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "closing %s: %s", path,
                      strerror(errno));
    return s3c_done(c, st);
}
