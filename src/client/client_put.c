/* libs3rdma: PUT from memory and from a file, over HTTP, the token path or
 * the native protocol (with fallback): single requests, and multipart uploads (start, parts,
 * complete, abort) above multipart_threshold; from memory with parts_in_flight parts at once. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client_internal.h"

/* ======================================================================== */
/* PUT                                                                       */
/* ======================================================================== */

#define STORAGE_CLASS_MAX 64 /* longer than any class S3 names */

/* Whether s is a storage class name as S3 spells them: A-Z, 0-9 and '_'. */
static bool storage_class_ok(const char *s)
{
    size_t n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
    return s[n] == '\0' && n <= STORAGE_CLASS_MAX;
}

/* Adds Content-Type, x-amz-storage-class, x-amz-meta-* and If-None-Match
 * from opts. Parts never carry If-None-Match (mpu_part passes its own opts)
 * and neither does the CreateMultipartUpload (mpu_start clears it): it
 * belongs to the commit. */
static s3r_status_t add_put_headers(s3r_client_t *c, s3c_req_t *req, strs_t *ss,
                                    const s3r_put_opts_t *opts)
{
    if (opts == NULL)
        return S3R_OK;
    if (opts->if_none_match)
        s3c_req_hdr(req, "if-none-match", "*");
    if (opts->content_type != NULL && opts->content_type[0] != '\0')
        s3c_req_hdr(req, "content-type", opts->content_type);
    if (opts->storage_class != NULL && opts->storage_class[0] != '\0') {
        if (!storage_class_ok(opts->storage_class))
            return s3c_fail(c, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, "",
                            "storage class \"%.80s\": want upper-case letters, digits and '_', "
                            "at most %d bytes",
                            opts->storage_class, STORAGE_CLASS_MAX);
        s3c_req_hdr(req, "x-amz-storage-class", opts->storage_class);
    }
    for (size_t i = 0; i < opts->n_meta; i++) {
        const s3r_meta_t *m = &opts->meta[i];
        if (!s3c_valid_name(m->name) || m->value == NULL)
            return s3c_fail(c, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, "",
                            "metadata entry %zu has no name or value", i);
        const char *n = s3c_strs_printf(ss, "x-amz-meta-%s", m->name);
        if (n == NULL || req->n_hdrs + 4 >= S3C_MAX_REQ_HDRS)
            return s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                            "too many metadata entries");
        for (char *p = ss->s[ss->n - 1]; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        s3c_req_hdr(req, n, m->value);
    }
    return S3R_OK;
}

/* Adds x-amz-checksum-crc32c, the CRC32C of [data, data+len) computed here,
 * to a single PutObject or an UploadPart, as current AWS SDKs send a CRC on
 * every PUT and part: the server verifies it against the bytes it stores
 * (400 BadDigest on a mismatch), keeps it as the object's (the part's)
 * checksum, and S3's object lock accepts it as the integrity header a PUT
 * that locks its version, and each part of such an upload, must carry (the
 * put_checksum setting, on by default, turns it off). The parts' upload
 * declares the algorithm at CreateMultipartUpload (mpu_start) and Complete
 * lists each part's value (mpu_add). */
static s3r_status_t add_put_checksum(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const void *data,
                                     uint64_t len)
{
    uint32_t crc = hash_crc32c_update(0, data, (size_t)len);
    const uint8_t be[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8),
                           (uint8_t)crc};
    char b64[9];
    hash_base64_encode(be, sizeof(be), b64);
    const char *v = s3c_strs_printf(ss, "%s", b64);
    if (v == NULL || s3c_req_hdr(req, "x-amz-checksum-crc32c", v) < 0)
        return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
    return S3R_OK;
}

s3r_status_t s3c_put_request(s3r_client_t *c, s3c_req_t *req, strs_t *ss, const char *bucket,
                             const char *key, const char *query, const void *data, uint64_t len,
                             const s3r_put_opts_t *opts)
{
    s3c_req_init(req, "PUT", bucket, key);
    req->native_op = query ? RDMA_OP_UPLOAD_PART : RDMA_OP_PUT_OBJECT;
    req->query = query;
    req->body = data;
    req->body_len = len;
    s3r_status_t st = !c->set.put_checksum ? S3R_OK : add_put_checksum(c, req, ss, data, len);
    return st == S3R_OK ? add_put_headers(c, req, ss, opts) : st;
}

s3r_status_t s3c_put_result(s3r_client_t *c, s3r_status_t st, const s3c_resp_t *resp, uint64_t len,
                            char *etag, size_t etag_len)
{
    if (st == S3R_OK && (resp->status < 200 || resp->status > 299))
        st = s3c_http_error(c, resp, resp->transport, true);
    if (st == S3R_OK) {
        if (resp->transport == S3R_TRANSPORT_HTTP)
            s3c_count_transfer(c, S3R_TRANSPORT_HTTP, len);
        if (etag && s3c_resp_header(resp, "etag", etag, etag_len) < 0)
            etag[0] = '\0';
    }
    return st;
}

/* One PUT (an object, or a part when query names one) over t (token and
 * native fall back to HTTP as the rules say). */
static s3r_status_t put_plain(s3r_client_t *c, s3r_transport_t t, const char *bucket,
                              const char *key, const char *query, const void *data, uint64_t len,
                              const s3r_put_opts_t *opts, char *etag, size_t etag_len)
{
    strs_t ss = {0};
    s3c_req_t req;
    s3c_resp_t resp;
    s3c_resp_init(&resp);
    s3r_status_t st = s3c_put_request(c, &req, &ss, bucket, key, query, data, len, opts);
    if (st == S3R_OK)
        st = s3c_do(c, t, &req, &resp);
    st = s3c_put_result(c, st, &resp, len, etag, etag_len);
    if (st == S3R_OK && query == NULL)
        s3c_version_record(c, &resp);
    else if (st == S3R_OK)
        s3c_part_checksum_record(&resp);
    s3c_resp_free(&resp);
    s3c_strs_free(&ss);
    return st;
}

/* One PUT over the transport picked for len bytes, with fallback. */
s3r_status_t s3c_put_one(s3r_client_t *c, const char *bucket, const char *key, const char *query,
                         const void *data, uint64_t len, const s3r_put_opts_t *opts, char *etag,
                         size_t etag_len)
{
    s3r_transport_t t = s3c_pick_transport(c, opts ? opts->transport : S3R_TRANSPORT_DEFAULT, len);
    return put_plain(c, t, bucket, key, query, data, len, opts, etag, etag_len);
}

static void abort_upload(s3r_client_t *c, const char *bucket, const char *key, const char *qid)
{
    /* Keep the error that made us abort, not the abort's own outcome. */
    s3r_error_info_t saved = s3c_tls_err;
    const s3r_client_t *saved_c = s3c_tls_err_client;
    s3c_req_t req;
    char q[2048];
    snprintf(q, sizeof(q), "uploadId=%s", qid);
    s3c_req_init(&req, "DELETE", bucket, key);
    req.native_op = RDMA_OP_ABORT_MPU;
    req.query = q;
    (void)s3c_simple(c, &req, true);
    s3c_tls_err = saved;
    s3c_tls_err_client = saved_c;
}

/* Multipart upload state shared by the memory and file variants. */
typedef struct mpu {
    char *upload_id;
    const char *qid; /* URI-encoded upload id (in ss) */
    buf_t complete;  /* the CompleteMultipartUpload body */
    strs_t ss;
    unsigned parts;
    int if_none_match; /* the Complete carries If-None-Match: * */
} mpu_t;

static s3r_status_t mpu_start(s3r_client_t *c, const char *bucket, const char *key,
                              const s3r_put_opts_t *opts, mpu_t *m)
{
    memset(m, 0, sizeof(*m));
    m->if_none_match = opts != NULL && opts->if_none_match;
    buf_init(&m->complete, 2 * 1024 * 1024);
    buf_t body;
    buf_init(&body, S3C_MAX_ERROR_BODY);
    strs_t hs = {0};
    s3c_req_t req;
    s3c_req_init(&req, "POST", bucket, key);
    req.native_op = RDMA_OP_CREATE_MPU;
    req.query = "uploads";
    s3r_put_opts_t create = opts ? *opts : (s3r_put_opts_t){0};
    create.if_none_match = 0;
    s3r_status_t st = add_put_headers(c, &req, &hs, &create);
    /* Every part then carries its CRC32C (add_put_checksum), as SDKs do. */
    if (st == S3R_OK && c->set.put_checksum)
        s3c_req_hdr(&req, "x-amz-checksum-algorithm", "CRC32C");
    if (st == S3R_OK)
        st = s3c_get_xml(c, &req, &body);
    if (st == S3R_OK && s3c_xml_parse_upload_id(body.data, body.len, &m->upload_id) < 0)
        st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_HTTP, 200, "",
                      "malformed InitiateMultipartUploadResult");
    if (st == S3R_OK && (m->qid = s3c_strs_qenc(&m->ss, m->upload_id)) == NULL)
        st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
    if (st == S3R_OK && buf_append_str(&m->complete, "<CompleteMultipartUpload>") < 0)
        st = S3R_ERR_NOMEM;
    buf_free(&body);
    s3c_strs_free(&hs);
    return st;
}

#define PART_ETAG_MAX 256 /* an UploadPart's ETag header, quotes included */

/* What Complete lists of a stored part: its ETag and its CRC32C as the
 * UploadPart answer named it ("" when it named none: put_checksum off, or a
 * server that keeps no checksums). */
typedef struct part_rec {
    char etag[PART_ETAG_MAX];
    char crc32c[S3C_PART_CRC32C_MAX];
} part_rec_t;

/* Uploads part n of upload qid into *rec (etag "" until it is stored). */
static s3r_status_t part_upload(s3r_client_t *c, const char *bucket, const char *key,
                                const char *qid, unsigned n, const void *data, uint64_t len,
                                s3r_transport_t t, part_rec_t *rec)
{
    char q[2048];
    snprintf(q, sizeof(q), "partNumber=%u&uploadId=%s", n, qid);
    s3r_put_opts_t po = {.transport = t};
    s3r_status_t st = s3c_put_one(c, bucket, key, q, data, len, &po, rec->etag, PART_ETAG_MAX);
    if (st == S3R_OK && rec->etag[0] == '\0')
        st = s3c_fail(c, S3R_ERR_PROTOCOL, S3R_TRANSPORT_DEFAULT, 0, "",
                      "UploadPart %u answered without an ETag", n);
    if (st == S3R_OK)
        snprintf(rec->crc32c, sizeof(rec->crc32c), "%s", s3c_part_checksum());
    return st;
}

/* Adds part n with its ETag and checksum to the Complete body. */
static s3r_status_t mpu_add(s3r_client_t *c, mpu_t *m, unsigned n, const part_rec_t *rec)
{
    if (buf_printf(&m->complete, "<Part><PartNumber>%u</PartNumber><ETag>", n) < 0 ||
        buf_append_xml(&m->complete, rec->etag) < 0 ||
        buf_append_str(&m->complete, "</ETag>") < 0 ||
        (rec->crc32c[0] && (buf_append_str(&m->complete, "<ChecksumCRC32C>") < 0 ||
                            buf_append_xml(&m->complete, rec->crc32c) < 0 ||
                            buf_append_str(&m->complete, "</ChecksumCRC32C>") < 0)) ||
        buf_append_str(&m->complete, "</Part>") < 0)
        return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
    return S3R_OK;
}

static s3r_status_t mpu_part(s3r_client_t *c, const char *bucket, const char *key, mpu_t *m,
                             const void *data, uint64_t len, s3r_transport_t t)
{
    part_rec_t rec;
    unsigned n = ++m->parts;
    if (n > S3C_MAX_PARTS)
        return s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                        "more than %d parts: raise part_size", S3C_MAX_PARTS);
    s3r_status_t st = part_upload(c, bucket, key, m->qid, n, data, len, t, &rec);
    return st == S3R_OK ? mpu_add(c, m, n, &rec) : st;
}

static s3r_status_t mpu_finish(s3r_client_t *c, const char *bucket, const char *key, mpu_t *m)
{
    char q[2048];
    buf_t body;
    s3c_req_t req;
    if (buf_append_str(&m->complete, "</CompleteMultipartUpload>") < 0)
        return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_HTTP, 0, "", "out of memory");
    snprintf(q, sizeof(q), "uploadId=%s", m->qid);
    buf_init(&body, S3C_MAX_XML_BODY);
    s3c_req_init(&req, "POST", bucket, key);
    req.native_op = RDMA_OP_COMPLETE_MPU;
    req.query = q;
    req.body = m->complete.data;
    req.body_len = m->complete.len;
    if (m->if_none_match)
        s3c_req_hdr(&req, "if-none-match", "*");
    s3r_status_t st = s3c_get_xml_write(c, &req, &body);
    if (st == S3R_OK)
        st = s3c_error_in_200(c, &body);
    buf_free(&body);
    return st;
}

static void mpu_free(mpu_t *m)
{
    free(m->upload_id);
    buf_free(&m->complete);
    s3c_strs_free(&m->ss);
}

/* The parts of one in-memory upload, sent by parts_in_flight threads (the
 * caller's among them) that take part numbers in turn. Each part's ETag lands
 * in its own slot; the first failure stops the others from taking more and
 * its error becomes the caller's. Every thread is joined before the upload
 * completes or aborts. */
typedef struct par_parts {
    s3r_client_t *c;
    const char *bucket, *key, *qid;
    const uint8_t *data;
    uint64_t len;
    s3r_transport_t t;
    unsigned n_parts;
    part_rec_t *parts; /* [n_parts] */
    atomic_uint next;  /* index of the next part to take */
    atomic_bool failed;
    pthread_mutex_t mu; /* guards st and err */
    s3r_status_t st;
    s3r_error_info_t err; /* the failing thread's error record */
} par_parts_t;

static void *par_worker(void *arg)
{
    par_parts_t *p = arg;
    uint64_t ps = p->c->set.part_size;
    for (;;) {
        unsigned i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_parts || atomic_load(&p->failed))
            break;
        uint64_t off = (uint64_t)i * ps, n = p->len - off < ps ? p->len - off : ps;
        s3r_status_t st = part_upload(p->c, p->bucket, p->key, p->qid, i + 1, p->data + off, n,
                                      p->t, &p->parts[i]);
        if (st != S3R_OK) {
            pthread_mutex_lock(&p->mu);
            if (p->st == S3R_OK) {
                p->st = st;
                p->err = s3c_tls_err;
            }
            pthread_mutex_unlock(&p->mu);
            atomic_store(&p->failed, true);
            break;
        }
    }
    return NULL;
}

static s3r_status_t mpu_parallel_parts(s3r_client_t *c, const char *bucket, const char *key,
                                       mpu_t *m, const void *data, uint64_t len, s3r_transport_t t)
{
    uint64_t n_parts = (len + c->set.part_size - 1) / c->set.part_size;
    if (n_parts > S3C_MAX_PARTS)
        return s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                        "more than %d parts: raise part_size", S3C_MAX_PARTS);
    par_parts_t p = {.c = c,
                     .bucket = bucket,
                     .key = key,
                     .qid = m->qid,
                     .data = data,
                     .len = len,
                     .t = t,
                     .n_parts = (unsigned)n_parts,
                     .st = S3R_OK};
    p.parts = calloc(n_parts, sizeof(*p.parts));
    if (p.parts == NULL)
        return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
    atomic_init(&p.next, 0);
    atomic_init(&p.failed, false);
    pthread_mutex_init(&p.mu, NULL);
    pthread_t th[S3C_MAX_PARTS_IN_FLIGHT];
    unsigned n_th = 0,
             want = c->set.parts_in_flight < p.n_parts ? c->set.parts_in_flight : p.n_parts;
    /* A thread that cannot start leaves its parts to the others. */
    while (n_th + 1 < want && pthread_create(&th[n_th], NULL, par_worker, &p) == 0)
        n_th++;
    par_worker(&p);
    for (unsigned i = 0; i < n_th; i++)
        pthread_join(th[i], NULL);
    s3r_status_t st = p.st;
    if (st != S3R_OK) {
        s3c_tls_err = p.err;
        s3c_tls_err_client = c;
    }
    for (unsigned i = 0; st == S3R_OK && i < p.n_parts; i++)
        st = mpu_add(c, m, i + 1, &p.parts[i]);
    m->parts = p.n_parts;
    pthread_mutex_destroy(&p.mu);
    free(p.parts);
    return st;
}

static s3r_status_t put_multipart(s3r_client_t *c, const char *bucket, const char *key,
                                  const void *data, uint64_t len, const s3r_put_opts_t *opts)
{
    mpu_t m;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    s3r_status_t st = mpu_start(c, bucket, key, opts, &m);
    if (st == S3R_OK && c->set.parts_in_flight > 1)
        st = mpu_parallel_parts(c, bucket, key, &m, data, len, want);
    for (uint64_t off = 0; st == S3R_OK && off < len && c->set.parts_in_flight <= 1;
         off += c->set.part_size) {
        uint64_t n = len - off < c->set.part_size ? len - off : c->set.part_size;
        st = mpu_part(c, bucket, key, &m, (const char *)data + off, n, want);
    }
    if (st == S3R_OK)
        st = mpu_finish(c, bucket, key, &m);
    if (st != S3R_OK && m.qid != NULL)
        abort_upload(c, bucket, key, m.qid);
    mpu_free(&m);
    return st;
}

s3r_status_t s3r_object_put(s3r_client_t *c, const char *bucket, const char *key, const void *data,
                            uint64_t len, const s3r_put_opts_t *opts)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || (data == NULL && len > 0))
        return S3R_ERR_INVALID_ARG;
    s3r_status_t st;
    if (len > c->set.multipart_threshold)
        st = put_multipart(c, bucket, key, data, len, opts);
    else
        st = s3c_put_one(c, bucket, key, NULL, data, len, opts, NULL, 0);
    return s3c_done(c, st);
}

static s3r_status_t read_full(s3r_client_t *c, int fd, void *buf, uint64_t len, uint64_t off,
                              const char *path)
{
    uint64_t done_n = 0;
    while (done_n < len) {
        ssize_t r = pread(fd, (char *)buf + done_n, (size_t)(len - done_n), (off_t)(off + done_n));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "reading %s: %s", path,
                            r == 0 ? "file shrank" : strerror(errno));
        done_n += (uint64_t)r;
    }
    return S3R_OK;
}

s3r_status_t s3r_object_put_file(s3r_client_t *c, const char *bucket, const char *key,
                                 const char *path, const s3r_put_opts_t *opts)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || path == NULL)
        return S3R_ERR_INVALID_ARG;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return s3c_done(c, s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "", "open %s: %s",
                                    path, strerror(errno)));
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return s3c_done(c, s3c_fail(c, S3R_ERR_IO, S3R_TRANSPORT_DEFAULT, 0, "",
                                    "%s is not a regular file", path));
    }
    uint64_t size = (uint64_t)sb.st_size;
    s3r_transport_t want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    bool multipart = size > c->set.multipart_threshold;
    uint64_t chunk = multipart ? c->set.part_size : size;
    bool reg;
    s3r_status_t st = S3R_OK;
    void *buf = s3c_stage_alloc(c, s3c_pick_transport(c, want, chunk), chunk, &reg);
    if (buf == NULL) {
        close(fd);
        return s3c_done(c,
                        s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory"));
    }
    if (!multipart) {
        st = read_full(c, fd, buf, size, 0, path);
        if (st == S3R_OK)
            st = s3c_put_one(c, bucket, key, NULL, buf, size, opts, NULL, 0);
        if (st == S3R_OK && c->progress != NULL)
            c->progress(c->progress_arg, size, size);
    } else {
        mpu_t m;
        st = mpu_start(c, bucket, key, opts, &m);
        for (uint64_t off = 0; st == S3R_OK && off < size; off += chunk) {
            uint64_t n = size - off < chunk ? size - off : chunk;
            st = read_full(c, fd, buf, n, off, path);
            if (st == S3R_OK)
                st = mpu_part(c, bucket, key, &m, buf, n, want);
            if (st == S3R_OK && c->progress != NULL)
                c->progress(c->progress_arg, off + n, size);
        }
        if (st == S3R_OK)
            st = mpu_finish(c, bucket, key, &m);
        if (st != S3R_OK && m.qid != NULL)
            abort_upload(c, bucket, key, m.qid);
        mpu_free(&m);
    }
    s3c_stage_free(c, buf, reg);
    close(fd);
    return s3c_done(c, st);
}

/* ======================================================================== */
/* Multipart uploads driven by the caller                                    */
/* ======================================================================== */

/* Parts may be uploaded by several threads at once and in any order: each
 * call reserves its number under mu, uploads without it, then files its ETag
 * in the slot of its number. Complete lists the stored parts in ascending
 * order (a number whose upload failed is left out, as S3 allows). */
struct s3r_multipart {
    s3r_client_t *c;
    char *bucket, *key;
    s3r_transport_t want; /* the opts' transport, applied to every part */
    mpu_t m;
    pthread_mutex_t mu; /* guards top, parts and cap */
    unsigned top;       /* the highest part number given so far */
    part_rec_t *parts;  /* [cap]: part n's at n - 1, its etag "" until stored */
    unsigned cap;
};

static void multipart_free(s3r_multipart_t *up)
{
    mpu_free(&up->m);
    pthread_mutex_destroy(&up->mu);
    free(up->parts);
    free(up->bucket);
    free(up->key);
    free(up);
}

s3r_status_t s3r_multipart_start(s3r_client_t *c, const char *bucket, const char *key,
                                 const s3r_put_opts_t *opts, s3r_multipart_t **up_p)
{
    if (c == NULL || !s3c_valid_name(bucket) || !s3c_valid_name(key) || up_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_multipart_t *up = calloc(1, sizeof(*up));
    if (up == NULL || (up->bucket = strdup(bucket)) == NULL || (up->key = strdup(key)) == NULL) {
        if (up != NULL)
            free(up->bucket);
        free(up);
        return s3c_done(c,
                        s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory"));
    }
    up->c = c;
    up->want = opts ? opts->transport : S3R_TRANSPORT_DEFAULT;
    pthread_mutex_init(&up->mu, NULL);
    s3r_status_t st = mpu_start(c, bucket, key, opts, &up->m);
    if (st != S3R_OK) {
        multipart_free(up);
        return s3c_done(c, st);
    }
    *up_p = up;
    return S3R_OK;
}

/* Files part n's record (mu held); -1 when the table cannot grow. */
static int multipart_file(s3r_multipart_t *up, unsigned n, const part_rec_t *rec)
{
    if (n > up->cap) {
        unsigned cap = up->cap ? up->cap : 16;
        while (cap < n)
            cap *= 2;
        if (cap > S3C_MAX_PARTS)
            cap = S3C_MAX_PARTS;
        void *p = realloc(up->parts, (size_t)cap * sizeof(*up->parts));
        if (p == NULL)
            return -1;
        up->parts = p;
        memset(up->parts + up->cap, 0, (size_t)(cap - up->cap) * sizeof(*up->parts));
        up->cap = cap;
    }
    up->parts[n - 1] = *rec;
    return 0;
}

/* Uploads part n (reserved by the caller) and files its ETag. */
static s3r_status_t multipart_store(s3r_multipart_t *up, unsigned n, const void *data, uint64_t len)
{
    s3r_client_t *c = up->c;
    if (n < 1 || n > S3C_MAX_PARTS)
        return s3c_fail(c, S3R_ERR_TOO_LARGE, S3R_TRANSPORT_DEFAULT, 0, "",
                        "part number %u is outside 1..%d (raise part_size)", n, S3C_MAX_PARTS);
    part_rec_t rec;
    s3r_status_t st = part_upload(c, up->bucket, up->key, up->m.qid, n, data, len, up->want, &rec);
    if (st == S3R_OK) {
        pthread_mutex_lock(&up->mu);
        if (multipart_file(up, n, &rec) < 0)
            st = s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_DEFAULT, 0, "", "out of memory");
        pthread_mutex_unlock(&up->mu);
    }
    return st;
}

s3r_status_t s3r_multipart_part_at(s3r_multipart_t *up, unsigned part_number, const void *data,
                                   uint64_t len)
{
    if (up == NULL || (data == NULL && len > 0))
        return S3R_ERR_INVALID_ARG;
    pthread_mutex_lock(&up->mu);
    if (part_number > up->top && part_number <= S3C_MAX_PARTS)
        up->top = part_number;
    pthread_mutex_unlock(&up->mu);
    return s3c_done(up->c, multipart_store(up, part_number, data, len));
}

s3r_status_t s3r_multipart_part(s3r_multipart_t *up, const void *data, uint64_t len)
{
    if (up == NULL || (data == NULL && len > 0))
        return S3R_ERR_INVALID_ARG;
    pthread_mutex_lock(&up->mu);
    unsigned n = up->top < S3C_MAX_PARTS ? ++up->top : S3C_MAX_PARTS + 1;
    pthread_mutex_unlock(&up->mu);
    return s3c_done(up->c, multipart_store(up, n, data, len));
}

s3r_status_t s3r_multipart_complete(s3r_multipart_t *up)
{
    if (up == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_client_t *c = up->c;
    s3r_status_t st = S3R_OK;
    for (unsigned i = 0; st == S3R_OK && i < up->cap; i++)
        if (up->parts[i].etag[0] != '\0')
            st = mpu_add(c, &up->m, i + 1, &up->parts[i]);
    if (st == S3R_OK)
        st = mpu_finish(c, up->bucket, up->key, &up->m);
    if (st != S3R_OK)
        abort_upload(c, up->bucket, up->key, up->m.qid);
    multipart_free(up);
    return s3c_done(c, st);
}

void s3r_multipart_abort(s3r_multipart_t *up)
{
    if (up == NULL)
        return;
    abort_upload(up->c, up->bucket, up->key, up->m.qid);
    multipart_free(up);
}
