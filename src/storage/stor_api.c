/* storage.h's calls on a store, a writer, a reader or an iterator: each one
 * dispatches to the backend that made the handle (stor_backend.h). The calls
 * that need no backend live in record.c (stor_meta_*), stor_version_id.c,
 * stor_strerror.c and stor_shared.c (stor_parts_free, stor_uploads_free). */
#include <string.h>

#include "storage/stor_backend.h"

void stor_close(stor_t *st)
{
    if (st)
        st->ops->close(st);
}

stor_status_t stor_sync(stor_t *st)
{
    return st->ops->sync(st);
}

void stor_usage(stor_t *st, uint64_t *objects_p, uint64_t *bytes_p)
{
    st->ops->usage(st, objects_p, bytes_p);
}

uint64_t stor_index_bytes(stor_t *st)
{
    return st->ops->index_bytes ? st->ops->index_bytes(st) : 0;
}

int stor_ready(stor_t *st)
{
    return st->ops->ready(st);
}

void stor_set_inline_max(stor_t *st, size_t bytes)
{
    if (st->ops->set_inline_max)
        st->ops->set_inline_max(st, bytes);
}

stor_status_t stor_lease(stor_t *st, const char *name, uint32_t ttl_ms)
{
    return st->ops->lease ? st->ops->lease(st, name, ttl_ms) : STOR_OK;
}

/* ---- Buckets ------------------------------------------------------------ */

stor_status_t stor_bucket_reshard(stor_t *st, const char *name, uint32_t shards)
{
    return st->ops->bucket_reshard ? st->ops->bucket_reshard(st, name, shards)
                                   : STOR_ERR_UNSUPPORTED;
}

stor_status_t stor_bucket_create(stor_t *st, const char *name, const char *owner)
{
    return st->ops->bucket_create(st, name, owner);
}

stor_status_t stor_bucket_get(stor_t *st, const char *name, stor_bucket_t *out_p)
{
    return st->ops->bucket_get(st, name, out_p);
}

stor_status_t stor_bucket_set_acl(stor_t *st, const stor_bucket_t *bucket, stor_acl_t acl,
                                  const char *grants)
{
    stor_bucket_change_t c = {.set_acl = true, .acl = acl, .grants = grants, .cfg_kind = -1};
    return st->ops->bucket_change(st, bucket, &c);
}

/* Copies document kinds [first, first + n) of bucket's record, read once,
 * into docs[0..n) (each initialised here). */
static stor_status_t bucket_configs_read(stor_t *st, const stor_bucket_t *bucket, int first, int n,
                                         buf_t *docs, uint64_t *gen_p)
{
    for (int i = 0; i < n; i++)
        buf_init(&docs[i], STOR_BCFG_MAX_BYTES);
    buf_t raw;
    stor_status_t s = st->ops->bucket_read(st, bucket, &raw);
    stor_bucket_rec_t r;
    if (s == STOR_OK)
        s = stor_rec_decode_bucket_rec(raw.data, raw.len, &r);
    for (int i = 0; s == STOR_OK && i < n; i++) {
        int k = first + i;
        if (r.cfg[k] && buf_append(&docs[i], r.cfg[k], r.cfg_len[k]) != 0)
            s = STOR_ERR_NOMEM;
    }
    if (s == STOR_OK)
        *gen_p = r.b.cfg_gen;
    buf_free(&raw);
    return s;
}

stor_status_t stor_bucket_config_get(stor_t *st, const stor_bucket_t *bucket,
                                     stor_bucket_cfg_t kind, buf_t *out, uint64_t *gen_p)
{
    if (kind < 0 || kind >= STOR_BCFG_COUNT) {
        buf_init(out, STOR_BCFG_MAX_BYTES);
        return STOR_ERR_TOO_LARGE;
    }
    return bucket_configs_read(st, bucket, (int)kind, 1, out, gen_p);
}

stor_status_t stor_bucket_configs_get(stor_t *st, const stor_bucket_t *bucket,
                                      buf_t docs[STOR_BCFG_COUNT], uint64_t *gen_p)
{
    return bucket_configs_read(st, bucket, 0, STOR_BCFG_COUNT, docs, gen_p);
}

stor_status_t stor_bucket_config_set(stor_t *st, const stor_bucket_t *bucket,
                                     stor_bucket_cfg_t kind, const void *data, size_t len)
{
    /* The versioning state is storage's own (stor_bucket_set_versioning);
     * the grant list goes with the canned ACL (stor_bucket_set_acl). */
    if (kind < 0 || kind >= STOR_BCFG_COUNT || kind == STOR_BCFG_VERSIONING ||
        kind == STOR_BCFG_ACL_GRANTS || len > STOR_BCFG_MAX_BYTES)
        return STOR_ERR_TOO_LARGE;
    stor_bucket_change_t c = {.cfg_kind = (int)kind, .cfg = data, .cfg_len = data ? len : 0};
    return st->ops->bucket_change(st, bucket, &c);
}

stor_status_t stor_bucket_set_versioning(stor_t *st, const stor_bucket_t *bucket,
                                         stor_versioning_t state)
{
    if (!st->ops->delete_version)
        return STOR_ERR_UNSUPPORTED;
    if (state != STOR_VERSIONING_ENABLED && state != STOR_VERSIONING_SUSPENDED)
        return STOR_ERR_TOO_LARGE;
    uint8_t b = (uint8_t)state;
    stor_bucket_change_t c = {.cfg_kind = STOR_BCFG_VERSIONING, .cfg = &b, .cfg_len = 1};
    return st->ops->bucket_change(st, bucket, &c);
}

stor_status_t stor_bucket_delete(stor_t *st, const stor_bucket_t *bucket)
{
    return st->ops->bucket_delete(st, bucket);
}

stor_status_t stor_bucket_list(stor_t *st, stor_bucket_t **out_p, size_t *n_p)
{
    return st->ops->bucket_list(st, out_p, n_p);
}

/* ---- Objects ------------------------------------------------------------ */

stor_status_t stor_writer_open(stor_t *st, const stor_bucket_t *bucket, stor_writer_t **out_p)
{
    return st->ops->writer_open(st, bucket, out_p);
}

/* The most an encrypting write passes to the backend at once, and a
 * decrypting read takes from it: one stack buffer's worth, in cache. */
#define CIPHER_CHUNK (32u * 1024)

stor_status_t stor_writer_write(stor_writer_t *w, const void *data, size_t len)
{
    if (!w->cipher.on)
        return w->st->ops->writer_write(w, data, len);
    uint8_t buf[CIPHER_CHUNK];
    const uint8_t *p = data;
    stor_status_t s = STOR_OK;
    while (len && s == STOR_OK) {
        size_t n = len < sizeof buf ? len : sizeof buf;
        if (cipher_aes256_ctr_at(w->cipher.key, w->cipher.iv, w->st->ops->writer_size(w), p, buf,
                                 n) != 0)
            s = STOR_ERR_IO;
        else
            s = w->st->ops->writer_write(w, buf, n);
        p += n;
        len -= n;
    }
    cipher_secure_zero(buf, sizeof buf);
    return s;
}

void stor_writer_set_cipher(stor_writer_t *w, const uint8_t key[AES256_KEY_LEN],
                            const uint8_t iv[AES_BLOCK_LEN])
{
    w->cipher.on = true;
    memcpy(w->cipher.key, key, AES256_KEY_LEN);
    memcpy(w->cipher.iv, iv, AES_BLOCK_LEN);
}

void stor_reader_set_cipher(stor_reader_t *r, const uint8_t key[AES256_KEY_LEN],
                            const uint8_t iv[AES_BLOCK_LEN])
{
    r->cipher.on = true;
    memcpy(r->cipher.key, key, AES256_KEY_LEN);
    memcpy(r->cipher.iv, iv, AES_BLOCK_LEN);
}

uint64_t stor_writer_size(const stor_writer_t *w)
{
    return w->st->ops->writer_size(w);
}

stor_status_t stor_writer_commit(stor_writer_t *w, const char *key, stor_meta_t *meta)
{
    return stor_writer_commit_if(w, key, meta, NULL);
}

stor_status_t stor_writer_commit_if(stor_writer_t *w, const char *key, stor_meta_t *meta,
                                    const stor_precond_t *cond)
{
    cipher_secure_zero(&w->cipher, sizeof w->cipher);
    return w->st->ops->writer_commit_if(w, key, meta, cond);
}

stor_status_t stor_writer_commit_later(stor_writer_t *w, const char *key, stor_meta_t *meta,
                                       const stor_precond_t *cond, stor_ticket_t *ticket_p)
{
    *ticket_p = 0;
    if (!w->st->ops->writer_commit_later)
        return stor_writer_commit_if(w, key, meta, cond);
    cipher_secure_zero(&w->cipher, sizeof w->cipher);
    return w->st->ops->writer_commit_later(w, key, meta, cond, ticket_p);
}

void stor_ticket_await(stor_t *st, stor_ticket_t ticket, stor_durable_fn done, void *arg)
{
    if (ticket == 0 || !st->ops->ticket_await)
        done(arg, STOR_OK); /* nothing to wait for (a backend without tickets gives none) */
    else
        st->ops->ticket_await(st, ticket, done, arg);
}

void stor_writer_abort(stor_writer_t *w)
{
    if (w) {
        cipher_secure_zero(&w->cipher, sizeof w->cipher);
        w->st->ops->writer_abort(w);
    }
}

stor_status_t stor_head(stor_t *st, const char *bucket, const char *key, stor_meta_t *meta_p)
{
    return st->ops->head(st, bucket, key, meta_p);
}

stor_status_t stor_reader_open(stor_t *st, const char *bucket, const char *key,
                               stor_reader_t **out_p)
{
    return st->ops->reader_open(st, bucket, key, out_p);
}

/* A backend without versioning has one version per key, "null". */
static stor_status_t null_version_only(const char *version_id)
{
    return !version_id || strcmp(version_id, "null") == 0 ? STOR_OK : STOR_ERR_NO_VERSION;
}

stor_status_t stor_head_version(stor_t *st, const char *bucket, const char *key,
                                const char *version_id, stor_meta_t *meta_p)
{
    if (st->ops->head_version)
        return st->ops->head_version(st, bucket, key, version_id, meta_p);
    stor_status_t s = null_version_only(version_id);
    if (s == STOR_OK)
        s = st->ops->head(st, bucket, key, meta_p);
    return version_id && s == STOR_ERR_NO_KEY ? STOR_ERR_NO_VERSION : s;
}

stor_status_t stor_reader_open_version(stor_t *st, const char *bucket, const char *key,
                                       const char *version_id, stor_reader_t **out_p)
{
    if (st->ops->reader_open_version)
        return st->ops->reader_open_version(st, bucket, key, version_id, out_p);
    stor_status_t s = null_version_only(version_id);
    if (s == STOR_OK)
        s = st->ops->reader_open(st, bucket, key, out_p);
    return version_id && s == STOR_ERR_NO_KEY ? STOR_ERR_NO_VERSION : s;
}

const stor_meta_t *stor_reader_meta(const stor_reader_t *r)
{
    return r->st->ops->reader_meta(r);
}

/* An encrypted object's bytes come through a cache-sized buffer and are
 * decrypted out of it into buf: buf (often the client's mapped RDMA buffer
 * or a staging chunk) is written once, never read back. */
void stor_part_iv(uint32_t number, uint8_t iv[16])
{
    memset(iv, 0, 16);
    iv[0] = (uint8_t)(number >> 24);
    iv[1] = (uint8_t)(number >> 16);
    iv[2] = (uint8_t)(number >> 8);
    iv[3] = (uint8_t)number;
}

void stor_reader_set_part_cipher(stor_reader_t *r, const uint8_t key[AES256_KEY_LEN])
{
    static const uint8_t zero[AES_BLOCK_LEN];
    stor_reader_set_cipher(r, key, zero);
    r->cipher.per_part = stor_reader_meta(r)->parts_count > 0;
}

/* Decrypts n bytes of ciphertext read at object offset off into dst: with
 * the object's one counter block, or (per_part) part by part, each from its
 * own counter block at its offset inside the part. */
static int decrypt_at(stor_reader_t *r, uint64_t off, const uint8_t *ct, uint8_t *dst, size_t n)
{
    if (!r->cipher.per_part)
        return cipher_aes256_ctr_at(r->cipher.key, r->cipher.iv, off, ct, dst, n);
    const stor_meta_t *m = stor_reader_meta(r);
    uint64_t start = 0;
    for (uint32_t i = 0; i < m->parts_count && n; i++) {
        uint64_t end = start + m->part_sizes[i];
        if (off < end) {
            size_t piece = end - off < n ? (size_t)(end - off) : n;
            uint8_t iv[AES_BLOCK_LEN];
            stor_part_iv(i + 1, iv);
            if (cipher_aes256_ctr_at(r->cipher.key, iv, off - start, ct, dst, piece) != 0)
                return -1;
            off += piece;
            ct += piece;
            dst += piece;
            n -= piece;
        }
        start = end;
    }
    return n ? -1 : 0;
}

static ssize_t pread_decrypt(stor_reader_t *r, void *buf, size_t len, uint64_t off)
{
    uint8_t ct[CIPHER_CHUNK];
    uint8_t *dst = buf;
    size_t done = 0;
    while (done < len) {
        size_t want = len - done < sizeof ct ? len - done : sizeof ct;
        ssize_t n = r->st->ops->reader_pread(r, ct, want, off + done);
        if (n < 0 || (n > 0 && decrypt_at(r, off + done, ct, dst + done, (size_t)n) != 0)) {
            cipher_secure_zero(ct, sizeof ct);
            return -1;
        }
        done += (size_t)n;
        if ((size_t)n < want)
            break; /* the end of the object */
    }
    return (ssize_t)done;
}

ssize_t stor_reader_pread(stor_reader_t *r, void *buf, size_t len, uint64_t off)
{
    if (r->cipher.on)
        return pread_decrypt(r, buf, len, off);
    return r->st->ops->reader_pread(r, buf, len, off);
}

int stor_reader_span_fd(stor_reader_t *r, uint64_t off, uint64_t len, int *fd_p,
                        uint64_t *file_off_p)
{
    /* An encrypted object's file holds ciphertext: never handed out. */
    if (!r->st->ops->reader_span_fd || r->cipher.on)
        return 0;
    return r->st->ops->reader_span_fd(r, off, len, fd_p, file_off_p);
}

void stor_reader_close(stor_reader_t *r)
{
    if (r) {
        cipher_secure_zero(&r->cipher, sizeof r->cipher);
        r->st->ops->reader_close(r);
    }
}

stor_status_t stor_delete(stor_t *st, const stor_bucket_t *bucket, const char *key)
{
    return st->ops->delete (st, bucket, key, NULL);
}

/* stor_delete_version and stor_delete_if. */
static stor_status_t delete_version_if(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                       const char *version_id, const stor_precond_t *cond,
                                       stor_deleted_t *out)
{
    if (st->ops->delete_version)
        return st->ops->delete_version(st, bucket, key, version_id, cond, out);
    memset(out, 0, sizeof *out);
    stor_status_t s = null_version_only(version_id);
    if (s == STOR_OK)
        s = st->ops->delete (st, bucket, key, cond);
    if (version_id && s == STOR_OK)
        strcpy(out->version_id, "null");
    return version_id && s == STOR_ERR_NO_KEY ? STOR_ERR_NO_VERSION : s;
}

stor_status_t stor_delete_version(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                  const char *version_id, stor_deleted_t *out)
{
    return delete_version_if(st, bucket, key, version_id, NULL, out);
}

stor_status_t stor_delete_if(stor_t *st, const stor_bucket_t *bucket, const char *key,
                             const stor_precond_t *cond, stor_deleted_t *out)
{
    return delete_version_if(st, bucket, key, NULL, cond, out);
}

stor_status_t stor_delete_version_if(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                     const char *version_id, const stor_precond_t *cond,
                                     stor_deleted_t *out)
{
    return delete_version_if(st, bucket, key, version_id, cond, out);
}

stor_status_t stor_object_change(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                 const stor_obj_change_t *change)
{
    if (change->set_acl && (change->acl < 0 || change->acl >= STOR_ACL_COUNT))
        return STOR_ERR_TOO_LARGE;
    if (st->ops->head_version || !change->version_id)
        return st->ops->object_change(st, bucket, key, change);
    /* Without versioning, "null" names the one object a key holds. */
    stor_status_t s = null_version_only(change->version_id);
    stor_obj_change_t latest = *change;
    latest.version_id = NULL;
    if (s == STOR_OK)
        s = st->ops->object_change(st, bucket, key, &latest);
    return s == STOR_ERR_NO_KEY ? STOR_ERR_NO_VERSION : s;
}

/* ---- Listing ------------------------------------------------------------ */

stor_status_t stor_iter_open(stor_t *st, const char *bucket, const char *prefix, const char *after,
                             stor_iter_t **out_p)
{
    return st->ops->iter_open(st, bucket, prefix, after, out_p);
}

void stor_iter_want(stor_iter_t *it, unsigned want)
{
    it->want = want;
}

void stor_iter_seek(stor_iter_t *it, const char *key, size_t key_len)
{
    it->st->ops->iter_seek(it, key, key_len);
}

int stor_iter_next(stor_iter_t *it, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p)
{
    return it->st->ops->iter_next(it, key_p, key_len_p, meta_p);
}

stor_status_t stor_iter_open_versions(stor_t *st, const char *bucket, const char *prefix,
                                      const char *key_marker, const char *version_marker,
                                      stor_iter_t **out_p)
{
    if (st->ops->iter_open_versions)
        return st->ops->iter_open_versions(st, bucket, prefix, key_marker, version_marker, out_p);
    /* One version per key: after any version of key_marker is after it. */
    return st->ops->iter_open(st, bucket, prefix, key_marker, out_p);
}

int stor_iter_next_version(stor_iter_t *it, const char **key_p, size_t *key_len_p,
                           stor_meta_t *meta_p, int *is_latest_p)
{
    if (it->st->ops->iter_next_version)
        return it->st->ops->iter_next_version(it, key_p, key_len_p, meta_p, is_latest_p);
    *is_latest_p = 1;
    return it->st->ops->iter_next(it, key_p, key_len_p, meta_p);
}

void stor_iter_close(stor_iter_t *it)
{
    if (it)
        it->st->ops->iter_close(it);
}

/* ---- Multipart uploads -------------------------------------------------- */

stor_status_t stor_mpu_create(stor_t *st, const stor_bucket_t *bucket, const char *key,
                              const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1])
{
    return st->ops->mpu_create(st, bucket, key, meta, upload_id);
}

stor_status_t stor_mpu_check(stor_t *st, const char *bucket, const char *key, const char *upload_id)
{
    return st->ops->mpu_check(st, bucket, key, upload_id, NULL);
}

stor_status_t stor_mpu_meta(stor_t *st, const char *bucket, const char *key, const char *upload_id,
                            stor_meta_t *meta_p)
{
    return st->ops->mpu_check(st, bucket, key, upload_id, meta_p);
}

stor_status_t stor_part_commit(stor_writer_t *w, const char *key, const char *upload_id,
                               stor_part_t *part)
{
    cipher_secure_zero(&w->cipher, sizeof w->cipher);
    return w->st->ops->part_commit(w, key, upload_id, part);
}

stor_status_t stor_mpu_list_parts(stor_t *st, const char *bucket, const char *key,
                                  const char *upload_id, uint32_t part_marker,
                                  stor_part_t **parts_p, size_t *n_p)
{
    return st->ops->mpu_list_parts(st, bucket, key, upload_id, part_marker, parts_p, n_p);
}

stor_status_t stor_mpu_complete(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                const char *upload_id, const stor_complete_part_t *parts, size_t n,
                                const stor_precond_t *cond, stor_meta_t *meta_p)
{
    return st->ops->mpu_complete(st, bucket, key, upload_id, parts, n, cond, meta_p);
}

stor_status_t stor_mpu_abort(stor_t *st, const stor_bucket_t *bucket, const char *key,
                             const char *upload_id)
{
    return st->ops->mpu_abort(st, bucket, key, upload_id);
}

stor_status_t stor_mpu_list(stor_t *st, const char *bucket, const char *prefix,
                            const char *key_marker, const char *upload_id_marker, size_t max,
                            stor_upload_t **uploads_p, size_t *n_p, int *more_p)
{
    return st->ops->mpu_list(st, bucket, prefix, key_marker, upload_id_marker, max, uploads_p, n_p,
                             more_p);
}
