/* The record codec and the helpers every backend shares (record.c,
 * stor_shared.c): object, upload, part and bucket records as bytes, the
 * precondition check of conditional writes, and the assembly of a multipart
 * upload's parts into an object. Private to src/storage (and its tests). */
#ifndef S3R_STORAGE_STOR_RECORD_H
#define S3R_STORAGE_STOR_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "storage/storage.h"

/* ---- Records --------------------------------------------------------------
 * Every record starts with a version byte and a type byte; fields are
 * little-endian integers and u32-length-prefixed strings (length 0xFFFFFFFF
 * encodes NULL). Decoders check every length against the bytes left and
 * return STOR_ERR_IO on anything malformed; they never read out of bounds. */
/* Object and upload records: version 2 added the owner and the canned ACL
 * to the metadata (version 1 records still decode: no owner, private),
 * version 3 the SHA-1 and CRC-64/NVME checksums after them (older: none).
 * Object records of version 4 end with the object's bytes themselves (a
 * small object kept inline, docs/storage.md): no segments, one byte string
 * of exactly meta.size bytes. Only inline objects are written as version 4;
 * objects in files are still written as version 3, which a binary from
 * before inline objects reads.
 * Version 5 (object and upload records) adds the extension block after the
 * version-3 metadata: a u32 count, then that many (u8 field id, string)
 * pairs in increasing id order, each id at most once (stor_mx_t). A field
 * this binary does not know makes the record malformed rather than
 * ignored: an extension may change how the bytes are read. An object
 * record of version 5 with no segments is inline: its bytes follow, as in
 * version 4. Records are written with the lowest version that holds them:
 * version 5 only when an extension field is set.
 * Part records: version 2 added the same two checksums after the file id. */
#define STOR_BUCKET_MAX 63 /* bucket name bytes */

#define STOR_REC_VERSION        3
#define STOR_REC_INLINE_VERSION 4
#define STOR_REC_EXT_VERSION    5
#define STOR_REC_PART_VERSION   2
/* Bucket records: version 2 added the bucket id (version 1 records still
 * decode, with id 0), version 3 the canned ACL (older ones: private),
 * version 4 the configuration generation and documents (older: none). */
#define STOR_REC_BUCKET_VERSION 4
/* Bucket records of a RADOS bucket with a sharded index: version 4 plus its
 * shard count (u32, 2..STOR_INDEX_SHARDS_MAX) at the end. A bucket with one
 * index object is still written as version 4, so binaries from before shards
 * read it; one from before them refuses a sharded bucket's record rather
 * than reading only one of its shards. */
#define STOR_REC_BUCKET_SHARDED_VERSION 5
/* Bucket records of a RADOS bucket whose index was resharded, or is being
 * resharded: version 5 (the count may be 1 here) plus the index generation
 * (u32, 0 for the objects named before resharding) and the shard count a
 * reshard in progress moves to (u32, 0: none). Written only for such
 * buckets; a binary from before resharding refuses it rather than read the
 * wrong index objects. */
#define STOR_REC_BUCKET_RESHARD_VERSION 6
#define STOR_ID_LEN                     16         /* file id bytes; 32 hex digits on disk */
#define STOR_REC_MAX                    (8u << 20) /* larger records: STOR_ERR_TOO_LARGE */

/* Extension field ids (never reused; a new field takes the next id). */
typedef enum stor_mx {
    STOR_MX_STORAGE_CLASS = 1,
    STOR_MX_CHECKSUM_ALGORITHM = 2,
    STOR_MX_CHECKSUM_TYPE = 3,
    STOR_MX_PART_CHECKSUMS = 4,
    STOR_MX_TAGS = 5,
    STOR_MX_SSE = 6,
    STOR_MX_LOCK_RETENTION = 7, /* stor_meta_t.lock_retention */
    STOR_MX_LEGAL_HOLD = 8,     /* stor_meta_t.legal_hold */
    STOR_MX_ACL_GRANTS = 9,     /* stor_meta_t.grants */
    STOR_MX_VERSION = 10,       /* stor_meta_t.version */
    STOR_MX_DELETE_MARKER = 11, /* stor_meta_t.delete_marker */
    STOR_MX_INITIATOR = 12,     /* stor_meta_t.initiator; 13 is the next free id */
} stor_mx_t;

enum { STOR_REC_OBJECT = 1, STOR_REC_UPLOAD = 2, STOR_REC_PART = 3, STOR_REC_BUCKET = 4 };

typedef struct stor_seg {
    uint8_t id[STOR_ID_LEN];
    uint64_t size;
} stor_seg_t;

typedef struct stor_obj_rec {
    stor_meta_t meta; /* parts_count/part_sizes filled when multipart */
    stor_seg_t *segs;
    uint32_t n_segs; /* 0 for an inline object */
    /* An inline object's meta.size bytes, pointing into the decoded record
     * (not copied): valid only as long as the record's bytes are, for an
     * LMDB value until its transaction ends. NULL when the object is in
     * files (n_segs > 0). */
    const uint8_t *body;
} stor_obj_rec_t;

typedef struct stor_upload_rec {
    char *key;
    size_t key_len;
    int64_t initiated_ms;
    stor_meta_t meta;
} stor_upload_rec_t;

typedef struct stor_part_rec {
    stor_part_t part;
    uint8_t id[STOR_ID_LEN];
} stor_part_rec_t;

/* Object records: the full key (not copied by the decoders: see
 * stor_rec_object_key), the metadata, the segments. */
int stor_rec_encode_object(buf_t *b, const char *key, size_t klen, const stor_meta_t *m,
                           const stor_seg_t *segs, uint32_t n_segs);
/* An inline object's record (version 4): the key, the metadata (single-part;
 * meta.size bytes) and those bytes. */
int stor_rec_encode_object_inline(buf_t *b, const char *key, size_t klen, const stor_meta_t *m,
                                  const void *body);
stor_status_t stor_rec_decode_object(const void *data, size_t len, stor_obj_rec_t *out);
/* Only the metadata of an object record (the listing's need): the same checks
 * as stor_rec_decode_object, without copying the key or the segment list.
 * The caller frees *meta_p with stor_meta_free. */
stor_status_t stor_rec_decode_object_meta(const void *data, size_t len, stor_meta_t *meta_p);
/* stor_rec_decode_object_meta of only the fields want (stor_want_t,
 * storage.h) asks for: an iterator's entries (stor_iter_want). */
stor_status_t stor_rec_decode_object_want(const void *data, size_t len, unsigned want,
                                          stor_meta_t *meta_p);
/* The full key inside an object record, without allocating (points into data). */
stor_status_t stor_rec_object_key(const void *data, size_t len, const char **key_p, size_t *klen_p);
void stor_obj_rec_free(stor_obj_rec_t *r);

int stor_rec_encode_upload(buf_t *b, const char *key, size_t klen, int64_t initiated_ms,
                           const stor_meta_t *m);
stor_status_t stor_rec_decode_upload(const void *data, size_t len, stor_upload_rec_t *out);
void stor_upload_rec_free(stor_upload_rec_t *r);

int stor_rec_encode_part(buf_t *b, const stor_part_t *p, const uint8_t id[STOR_ID_LEN]);
stor_status_t stor_rec_decode_part(const void *data, size_t len, stor_part_rec_t *out);
void stor_part_free_fields(stor_part_t *p);
/* Frees n decoded part records and the array holding them. */
void stor_part_recs_free(stor_part_rec_t *arr, size_t n);

/* A bucket record with its configuration documents (which point into the
 * decoded bytes: they live as long as those). name is not in the record. */
typedef struct stor_bucket_rec {
    stor_bucket_t b;
    const void *cfg[STOR_BCFG_COUNT]; /* NULL: not set */
    uint32_t cfg_len[STOR_BCFG_COUNT];
} stor_bucket_rec_t;

/* Writes a bucket record of the current version, without configuration
 * documents; id must not be 0 (0 marks a version-1 record, which has none). */
int stor_rec_encode_bucket(buf_t *b, const char *owner, int64_t created, uint64_t id,
                           stor_acl_t acl);
/* Writes r as a record of the current version (r->b.cfg_mask is ignored:
 * the documents set are those with a cfg pointer). */
int stor_rec_encode_bucket_rec(buf_t *b, const stor_bucket_rec_t *r);
/* Decodes a bucket record without its documents (their mask and generation
 * only). */
stor_status_t stor_rec_decode_bucket(const void *data, size_t len, stor_bucket_t *out);
stor_status_t stor_rec_decode_bucket_rec(const void *data, size_t len, stor_bucket_rec_t *out);

/* A change to a bucket's record (stor_bucket_set_acl, stor_bucket_config_set):
 * a new ACL, or a document set or removed. */
typedef struct stor_bucket_change {
    bool set_acl; /* sets acl and the STOR_BCFG_ACL_GRANTS document (grants) */
    stor_acl_t acl;
    const char *grants; /* with set_acl: NUL-terminated, or NULL to remove it */
    int cfg_kind;       /* stor_bucket_cfg_t, or -1 for none */
    const void *cfg;
    size_t cfg_len; /* cfg NULL: remove the document */
} stor_bucket_change_t;
/* Writes into *out (initialised here; the caller frees it) the record old
 * (of bucket id; the caller checked) with change applied; a version-1
 * record gets an id now. */
stor_status_t stor_rec_bucket_apply(const void *old, size_t len, const stor_bucket_change_t *change,
                                    buf_t *out);

/* The order of m's version among its key's versions (stor_meta_t.version:
 * 0 for none); the field must be valid (the decoder checked it). */
uint64_t stor_version_seq(const stor_meta_t *m);
/* 1 when m is version vid ("null" or a version id). */
int stor_meta_is_version(const stor_meta_t *m, const char *vid);
/* 1 when v is a well-formed version field: 16 or STOR_VERSION_ID_LEN
 * lower-case hex digits. */
int stor_version_field_valid(const char *v);

/* Byte-order comparison of two strings with lengths (shorter prefix first;
 * stor_shared.c). */
int stor_keycmp(const char *a, size_t alen, const char *b, size_t blen);

/* ---- Shared by the backends (stor_shared.c) ------------------------------ */

/* Encodes an object record into b (initialised here; the caller frees it).
 * STOR_ERR_TOO_LARGE past STOR_REC_MAX. */
stor_status_t stor_encode_object(buf_t *b, const char *key, const stor_meta_t *m,
                                 const stor_seg_t *segs, uint32_t n_segs);
/* A PUT's record: sets meta's size and mtime (now) and encodes key -> meta
 * (single-part: parts_count and part_sizes ignored) with the one blob or
 * file id of size bytes, as stor_encode_object. */
stor_status_t stor_encode_put(buf_t *b, const char *key, stor_meta_t *meta,
                              const uint8_t id[STOR_ID_LEN], uint64_t size);
/* stor_encode_put for an object kept inline: the record holds its size bytes
 * at body instead of a file id. */
stor_status_t stor_encode_put_inline(buf_t *b, const char *key, stor_meta_t *meta, const void *body,
                                     uint64_t size);
/* Re-encodes a decoded object record under key with its metadata as now in
 * rec->meta (files or inline bytes as they were), as stor_encode_object. */
stor_status_t stor_encode_object_rec(buf_t *b, const char *key, const stor_obj_rec_t *rec);
/* Applies change to m (an object's decoded metadata): first its guard
 * (whose status it returns, m unchanged, when not STOR_OK), then the
 * fields; STOR_ERR_NOMEM (m unchanged) when a new value cannot be copied. */
stor_status_t stor_meta_apply_change(stor_meta_t *m, const stor_obj_change_t *change);
/* Whether cond (NULL: none) holds for the object a key holds (old, when
 * had_old; a delete marker counts as no object): STOR_OK,
 * STOR_ERR_PRECONDITION or STOR_ERR_NO_KEY. Its guard is not called here
 * (stor_precond_guard is, on what a delete removes). */
stor_status_t stor_precond_check(const stor_precond_t *cond, const stor_meta_t *old, int had_old);
/* cond's guard (NULL cond or guard: STOR_OK) on version, a version a
 * delete is about to remove. */
stor_status_t stor_precond_guard(const stor_precond_t *cond, const stor_meta_t *version);
/* Complete's first check, before any lookup: a list of 1..10000 parts
 * (STOR_ERR_INVALID_PART) in strictly ascending order
 * (STOR_ERR_INVALID_PART_ORDER). */
stor_status_t stor_mpu_check_list(const stor_complete_part_t *parts, size_t n);
/* Complete's checks and arithmetic: parts (the client's list) against recs
 * (the upload's part records, ascending by number). Checks order, presence
 * and ETags, then sizes; fills *m (which holds the upload's metadata) with
 * size, ETag md5-of-md5s "-N", parts_count, part_sizes and mtime (and
 * drops the upload's initiator, no field of an object), *segs_p
 * (malloc'ed, n entries) with the parts' data, and used[i] (n_recs bytes)
 * with whether recs[i] is listed. When m has a checksum algorithm, also
 * the object's checksum of m's type and part_checksums, checked against
 * cond's checksum of the algorithm when it has one (stor_mpu_complete). */
stor_status_t stor_mpu_assemble(const stor_complete_part_t *parts, size_t n,
                                const stor_part_rec_t *recs, size_t n_recs, stor_meta_t *m,
                                const stor_precond_t *cond, stor_seg_t **segs_p, uint8_t *used);
/* ListMultipartUploads' selection: 1 if the upload (key, upload_id) starts
 * with prefix and comes after (key_marker, upload_id_marker). */
int stor_upload_listed(const char *key, const char *upload_id, const char *prefix,
                       const char *key_marker, const char *upload_id_marker);
/* Sorts arr (n uploads) by (key, upload id) and keeps the first max (the
 * rest freed); *more_p set if any went. Returns how many remain. */
size_t stor_uploads_page(stor_upload_t *arr, size_t n, size_t max, int *more_p);
/* Sets u's owner and initiator from upload record m (taken from it: m's
 * fields become NULL). */
void stor_upload_take_principals(stor_upload_t *u, stor_meta_t *m);

#endif
