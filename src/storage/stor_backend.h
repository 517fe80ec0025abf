/* The backend interface of the storage engine: what a backend implements so
 * that storage.h's public calls (stor_api.c) dispatch to it. Callers of
 * storage.h never see this header; backends (the local LMDB engine,
 * local/; RADOS, rados/) include it.
 *
 * Every handle a backend returns (stor_t, stor_writer_t, stor_reader_t,
 * stor_iter_t) is the backend's own struct with the base struct below as its
 * first member, so the dispatch layer finds the ops table through it and the
 * backend casts back. Each op has exactly the contract of the storage.h call
 * of the same name. */
#ifndef S3R_STORAGE_STOR_BACKEND_H
#define S3R_STORAGE_STOR_BACKEND_H

#include "common/cipher.h"
#include "storage/stor_record.h"
#include "storage/storage.h"

typedef struct stor_ops {
    const char *name; /* "local", "rados": for logs */
    void (*close)(stor_t *st);
    stor_status_t (*sync)(stor_t *st);
    void (*usage)(stor_t *st, uint64_t *objects_p, uint64_t *bytes_p);
    /* NULL when the index is not a local file (stor_index_bytes is 0). */
    uint64_t (*index_bytes)(stor_t *st);
    int (*ready)(stor_t *st);
    /* NULL when the backend keeps no object inline (stor_set_inline_max is
     * then a no-op). */
    void (*set_inline_max)(stor_t *st, size_t bytes);
    /* NULL when one process alone uses the store: it holds every lease. */
    stor_status_t (*lease)(stor_t *st, const char *name, uint32_t ttl_ms);

    stor_status_t (*bucket_create)(stor_t *st, const char *name, const char *owner);
    stor_status_t (*bucket_get)(stor_t *st, const char *name, stor_bucket_t *out_p);
    /* The stored record of bucket (STOR_ERR_NO_BUCKET unless its id is
     * bucket->id) into *rec (initialised here; the caller frees it). */
    stor_status_t (*bucket_read)(stor_t *st, const stor_bucket_t *bucket, buf_t *rec);
    /* Replaces the record of bucket (checked as bucket_read does) with
     * stor_rec_bucket_apply(record, change) in one atomic step. */
    stor_status_t (*bucket_change)(stor_t *st, const stor_bucket_t *bucket,
                                   const stor_bucket_change_t *change);
    stor_status_t (*bucket_delete)(stor_t *st, const stor_bucket_t *bucket);
    stor_status_t (*bucket_list)(stor_t *st, stor_bucket_t **out_p, size_t *n_p);
    /* NULL when the backend's index is not sharded (STOR_ERR_UNSUPPORTED). */
    stor_status_t (*bucket_reshard)(stor_t *st, const char *name, uint32_t shards);

    stor_status_t (*writer_open)(stor_t *st, const stor_bucket_t *bucket, stor_writer_t **out_p);
    stor_status_t (*writer_write)(stor_writer_t *w, const void *data, size_t len);
    uint64_t (*writer_size)(const stor_writer_t *w);
    stor_status_t (*writer_commit_if)(stor_writer_t *w, const char *key, stor_meta_t *meta,
                                      const stor_precond_t *cond);
    void (*writer_abort)(stor_writer_t *w);
    /* Both NULL when every commit returns durable (stor_writer_commit_later
     * is then writer_commit_if with ticket 0). */
    stor_status_t (*writer_commit_later)(stor_writer_t *w, const char *key, stor_meta_t *meta,
                                         const stor_precond_t *cond, stor_ticket_t *ticket_p);
    void (*ticket_await)(stor_t *st, stor_ticket_t ticket, stor_durable_fn done, void *arg);

    stor_status_t (*head)(stor_t *st, const char *bucket, const char *key, stor_meta_t *meta_p);
    stor_status_t (*reader_open)(stor_t *st, const char *bucket, const char *key,
                                 stor_reader_t **out_p);
    const stor_meta_t *(*reader_meta)(const stor_reader_t *r);
    ssize_t (*reader_pread)(stor_reader_t *r, void *buf, size_t len, uint64_t off);
    /* NULL when the backend has no files to hand out (stor_reader_span_fd
     * then returns 0 and callers pread). */
    int (*reader_span_fd)(stor_reader_t *r, uint64_t off, uint64_t len, int *fd_p,
                          uint64_t *file_off_p);
    void (*reader_close)(stor_reader_t *r);

    /* cond (NULL: none) as stor_delete_if checks it. */
    stor_status_t (*delete)(stor_t *st, const stor_bucket_t *bucket, const char *key,
                            const stor_precond_t *cond);
    stor_status_t (*object_change)(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                   const stor_obj_change_t *change);

    stor_status_t (*iter_open)(stor_t *st, const char *bucket, const char *prefix,
                               const char *after, stor_iter_t **out_p);
    void (*iter_seek)(stor_iter_t *it, const char *key, size_t key_len);
    int (*iter_next)(stor_iter_t *it, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p);
    void (*iter_close)(stor_iter_t *it);

    stor_status_t (*mpu_create)(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1]);
    /* meta_p (NULL: not wanted) gets the upload's metadata. */
    stor_status_t (*mpu_check)(stor_t *st, const char *bucket, const char *key,
                               const char *upload_id, stor_meta_t *meta_p);
    stor_status_t (*part_commit)(stor_writer_t *w, const char *key, const char *upload_id,
                                 stor_part_t *part);
    stor_status_t (*mpu_list_parts)(stor_t *st, const char *bucket, const char *key,
                                    const char *upload_id, uint32_t part_marker,
                                    stor_part_t **parts_p, size_t *n_p);
    stor_status_t (*mpu_complete)(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                  const char *upload_id, const stor_complete_part_t *parts,
                                  size_t n, const stor_precond_t *cond, stor_meta_t *meta_p);
    stor_status_t (*mpu_abort)(stor_t *st, const stor_bucket_t *bucket, const char *key,
                               const char *upload_id);
    stor_status_t (*mpu_list)(stor_t *st, const char *bucket, const char *prefix,
                              const char *key_marker, const char *upload_id_marker, size_t max,
                              stor_upload_t **uploads_p, size_t *n_p, int *more_p);

    /* Versioning. A backend without it leaves these NULL: the dispatch then
     * refuses stor_bucket_set_versioning (STOR_ERR_UNSUPPORTED) and answers
     * the other calls for what every key then has, one "null" version
     * (stor_api.c). With it, head, reader_open and delete above are these
     * calls with no version id. */
    stor_status_t (*head_version)(stor_t *st, const char *bucket, const char *key,
                                  const char *version_id, stor_meta_t *meta_p);
    stor_status_t (*reader_open_version)(stor_t *st, const char *bucket, const char *key,
                                         const char *version_id, stor_reader_t **out_p);
    stor_status_t (*delete_version)(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                    const char *version_id, const stor_precond_t *cond,
                                    stor_deleted_t *out);
    stor_status_t (*iter_open_versions)(stor_t *st, const char *bucket, const char *prefix,
                                        const char *key_marker, const char *version_marker,
                                        stor_iter_t **out_p);
    int (*iter_next_version)(stor_iter_t *it, const char **key_p, size_t *key_len_p,
                             stor_meta_t *meta_p, int *is_latest_p);
} stor_ops_t;

/* The base of every backend's store and handles. */
struct stor {
    const stor_ops_t *ops;
};
/* An encrypted object's key (stor_writer_set_cipher, stor_reader_set_cipher):
 * kept in the handle's base, applied by stor_api.c around the backend's
 * calls, zeroed when the handle ends. */
typedef struct stor_cipher {
    bool on;
    bool per_part; /* stor_reader_set_part_cipher: iv is per part */
    uint8_t key[AES256_KEY_LEN];
    uint8_t iv[AES_BLOCK_LEN];
} stor_cipher_t;

struct stor_writer {
    stor_t *st;
    stor_cipher_t cipher;
};
struct stor_reader {
    stor_t *st;
    stor_cipher_t cipher;
};
struct stor_iter {
    stor_t *st;
    int versions;  /* opened by iter_open_versions (the backend's own kind) */
    unsigned want; /* stor_iter_want's (0: everything): what iter_next decodes */
};

#endif
