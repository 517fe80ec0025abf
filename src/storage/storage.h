/* The object store engine: buckets, objects, multipart uploads. No HTTP, no
 * UCX. An LMDB index (ordered keys `bucket \0 key`, so listing is a cursor
 * scan) points at object bytes kept in files named by a random id under a
 * sharded directory, never by key.
 *
 * Consistency contract:
 *  - A writer's bytes go to a fresh file; commit makes them visible under the
 *    key in one LMDB transaction and then unlinks the replaced object's files
 *    (in relaxed mode at the next sync point, once that commit is durable). A
 *    reader sees the old object or the new one, never a mix or a prefix.
 *  - An object is visible once its commit is in the index, which is before
 *    stor_writer_commit()/stor_mpu_complete() returns (in fsync mode, while
 *    the flush that makes it durable runs); once STOR_OK is returned it
 *    survives kill -9 in every durability mode; in STOR_DURABILITY_FSYNC it
 *    also survives power loss (in relaxed mode, once a sync point has
 *    passed: stor_sync). stor_writer_commit_later returns before that
 *    flush, with a ticket that says when. No mode's index is corrupted by a
 *    power loss. docs/storage.md has the details.
 *  - Files no index entry references (a crash mid-write) are removed by
 *    stor_open().
 *  - Every call that changes a bucket's contents takes the stor_bucket_t the
 *    caller looked up (stor_bucket_get) when it authorized the request, and
 *    checks, in the same LMDB write transaction as its change, that this very
 *    bucket still exists: a bucket deleted and re-created under the same name
 *    (maybe by another owner) meanwhile is another bucket (another id), and
 *    the change fails with STOR_ERR_NO_BUCKET instead of landing in it.
 *
 * Threads: a stor_t is shared by all threads; every call is thread-safe.
 * Writers, readers and iterators belong to one thread at a time.
 *
 * Strings in: copied when kept. Strings out: owned by the struct they are in
 * and freed by its free function. */
#ifndef S3R_STORAGE_STORAGE_H
#define S3R_STORAGE_STORAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "common/buf.h"
#include "common/checksum.h"

typedef enum stor_status {
    STOR_OK = 0,
    STOR_ERR_NO_BUCKET,          /* NoSuchBucket */
    STOR_ERR_NO_KEY,             /* NoSuchKey */
    STOR_ERR_BUCKET_EXISTS,      /* create: the name is taken (compare owners) */
    STOR_ERR_BUCKET_NOT_EMPTY,   /* BucketNotEmpty (objects or uploads remain) */
    STOR_ERR_NO_UPLOAD,          /* NoSuchUpload */
    STOR_ERR_INVALID_PART,       /* a listed part is missing or its ETag differs */
    STOR_ERR_INVALID_PART_ORDER, /* part numbers not strictly ascending */
    STOR_ERR_PART_TOO_SMALL,     /* EntityTooSmall: a part but the last < 5 MiB */
    STOR_ERR_TOO_LARGE,          /* metadata does not fit the index record */
    STOR_ERR_PRECONDITION,       /* a conditional write's condition does not hold */
    STOR_ERR_BAD_DIGEST,         /* BadDigest: an object's checksum is not the one expected */
    STOR_ERR_NOMEM,
    STOR_ERR_IO, /* disk or index failure (logged) */
    /* The store's cluster did not answer in time (RADOS backend; logged):
     * SlowDown, retry later. */
    STOR_ERR_UNAVAILABLE,
    STOR_ERR_NO_VERSION,    /* NoSuchVersion: the key has no version of that id */
    STOR_ERR_DELETE_MARKER, /* the version asked for (or the latest) is a delete marker */
    STOR_ERR_UNSUPPORTED,   /* this backend does not implement the call (NotImplemented) */
    /* A guard (stor_guard_fn) refused the version a change or delete was
     * about to act on: the S3 layer's object lock (AccessDenied). */
    STOR_ERR_LOCKED,
} stor_status_t;

const char *stor_strerror(stor_status_t st);

typedef enum stor_durability {
    STOR_DURABILITY_FSYNC = 0, /* fsync data + index before acknowledging (group commit ok) */
    /* Survives kill -9. Power loss: the index stays intact and never points at
     * a deleted file; writes acknowledged since the last sync point (~1 s) may
     * be lost, or kept with missing bytes. Costs one index fdatasync per
     * commit, none per object byte. */
    STOR_DURABILITY_RELAXED,
} stor_durability_t;

typedef struct stor stor_t;

/* Opens (creating if needed) the store under dir: the index and object files
 * live in dir/.s3rdma/. Removes orphaned files. */
stor_status_t stor_open(const char *dir, stor_durability_t durability, stor_t **out_p);
/* Where a RADOS-backed store lives (docs/storage.md, "The RADOS backend").
 * Strings are only read during stor_open_rados. */
typedef struct stor_rados_conf {
    const char *conf;       /* ceph.conf path; NULL or "": librados' search */
    const char *user;       /* client id; NULL or "": "admin" */
    const char *keyring;    /* NULL or "": the conf's */
    const char *pool;       /* data pool (pieces); required */
    const char *index_pool; /* buckets, indexes, uploads, GC log; NULL or "": pool */
    /* Seconds a dropped object's data stays readable (readers opened before
     * an overwrite or delete keep their snapshot that long), and the start
     * sweep's margin for clocks between gateways (it spares blobs younger
     * than the sweep by this much; writers are covered by their intents). */
    unsigned gc_grace_s;
    /* Seconds a cluster call may take before it fails with
     * STOR_ERR_UNAVAILABLE instead of waiting for the cluster to come back;
     * 0: 10. */
    unsigned op_timeout_s;
    /* Index shards of each bucket created from now on (1..STOR_INDEX_SHARDS_MAX;
     * 0: RSTOR_INDEX_SHARDS_DEFAULT). Buckets keep the count they were
     * created with. */
    unsigned index_shards;
    /* Seconds of a gateway's liveness lease (its intent log is recovered by
     * another gateway this long after it stopped renewing; 0: 30). */
    unsigned lease_s;
    /* storage.rados.full_sweep: at start, also list the whole data pool and
     * remove unreferenced pieces older than the grace (an operator's action,
     * e.g. once after an upgrade from binaries before the intent log);
     * false: only dead gateways' intent logs are read. */
    bool full_sweep;
    /* debug.rados_crash_at: a write step at which the gateway kills itself
     * (SIGKILL), for crash tests; NULL or "": never. */
    const char *crash_at;
    /* debug.rados_sweep_page_ms: the start sweep pauses this long before
     * each page of names it lists, for tests of a sweep that outlasts a
     * lease; 0: no pause. */
    unsigned sweep_page_ms;
} stor_rados_conf_t;

/* Opens a store on a Ceph cluster through librados: any number of
 * gateways, on any hosts, may open the same pools at once and serve the same
 * buckets with read-after-write consistency. Starts the garbage collector
 * (docs/storage.md). STOR_ERR_UNAVAILABLE when the cluster does not answer,
 * STOR_ERR_IO for bad settings (both logged). */
stor_status_t stor_open_rados(const stor_rados_conf_t *conf, stor_t **out_p);
/* Closes the store; NULL is a no-op. No writer/reader/iterator may be open.
 * In relaxed mode, a last sync point first (see stor_sync). */
void stor_close(stor_t *st);
/* Makes every write acknowledged so far durable now. In relaxed mode this is
 * the sync point that otherwise runs about once a second on the store's own
 * thread: object files and directory entries written since the last one are
 * fsynced, then the index, then the files that the now durable commits
 * dropped (overwritten, deleted, replaced parts) are unlinked. In fsync mode
 * every commit is durable before it returns; this only syncs the index
 * again. STOR_ERR_IO if a sync failed (logged). Only the unit tests call it
 * (to look at a store between sync points); the server relies on the
 * store's own sync points and on stor_close's last one. */
stor_status_t stor_sync(stor_t *st);
/* The objects in the store and the bytes of their contents (parts of
 * multipart uploads in progress not included). Counted once by stor_open,
 * which reads every index record anyway (the orphan sweep), then kept up to
 * date by every commit and delete: O(1), no index access. */
void stor_usage(stor_t *st, uint64_t *objects_p, uint64_t *bytes_p);
/* Bytes of the store's own index file up to its last page in use, free
 * pages inside included: what the index holds of its disk, which a store
 * under many small overwrites makes far larger than its records (local
 * backend: LMDB's data.mdb, which never shrinks; docs/storage.md). 0 where
 * the index is not a local file (RADOS). One mdb_env_info: no index
 * access. */
uint64_t stor_index_bytes(stor_t *st);
/* Whether the store can take requests: its object directory is still there
 * (not deleted under the server) and writable by this process. For health
 * checks: one fstat and one faccessat. */
int stor_ready(stor_t *st);

/* Objects of at most this many bytes (S3R_INLINE_MAX_LIMIT at most; 0:
 * none) are kept inline in their index record instead of a file of their
 * own: one index commit (in fsync mode one sync point, shared with other
 * commits) makes one durable, with no file to create, sync or unlink. Takes
 * effect for writers opened after the call; objects already written stay as
 * they are, and every object reads the same either way. Local backend only
 * (a no-op on RADOS). Default S3R_INLINE_MAX_DEFAULT, at most
 * S3R_INLINE_MAX_LIMIT (s3r_limits.h). docs/storage.md. */
void stor_set_inline_max(stor_t *st, size_t bytes);

/* A lease: what one gateway among those sharing a store holds to run a job
 * that only one may run at a time (the lifecycle runner). Takes the lease
 * named name for ttl_ms, or renews it when this store already holds it:
 * STOR_OK while held; STOR_ERR_PRECONDITION while another gateway holds it
 * (until it lapses ttl_ms after that gateway's last renewal, so a gateway
 * that dies loses it); STOR_ERR_UNAVAILABLE when the cluster does not answer.
 * A local store is one server's alone (its data directory is locked), so it
 * always holds every lease. */
stor_status_t stor_lease(stor_t *st, const char *name, uint32_t ttl_ms);

/* Moves bucket name's index to shards index objects (1 to
 * STOR_INDEX_SHARDS_MAX) while the bucket stays in use: readers are never
 * held, writers of a key only while its old shard's last changes are
 * copied (RADOS: docs/storage.md, "Online resharding"). Resumes a reshard
 * of the bucket that was interrupted, whatever shards says. Returns when it
 * is done; STOR_ERR_PRECONDITION when another process is resharding the
 * bucket, STOR_ERR_UNSUPPORTED on a backend without index shards. */
stor_status_t stor_bucket_reshard(stor_t *st, const char *name, uint32_t shards);

/* ---- Access control ------------------------------------------------------ */

/* The canned ACL of a bucket or an object (who may do what is the S3 layer's
 * rule: docs/security.md). Stored as one byte; values never change. */
typedef enum stor_acl {
    STOR_ACL_PRIVATE = 0,
    STOR_ACL_PUBLIC_READ,
    STOR_ACL_PUBLIC_READ_WRITE,
    STOR_ACL_AUTHENTICATED_READ,
    STOR_ACL_BUCKET_OWNER_READ,         /* objects only */
    STOR_ACL_BUCKET_OWNER_FULL_CONTROL, /* objects only */
    STOR_ACL_COUNT
} stor_acl_t;

/* ---- Buckets ---------------------------------------------------------- */

typedef struct stor_bucket {
    char name[64];
    char owner[128]; /* access key id of the creator */
    int64_t created; /* unix seconds */
    /* This bucket, as opposed to others that had or will have its name: drawn
     * at random (never 0) when it is created. 0 for a bucket created before
     * ids were recorded (which is still the only bucket of its name). */
    uint64_t id;
    stor_acl_t acl; /* private for a new bucket */
    /* The configuration documents set on it (stor_bucket_config_*): bit k
     * for stor_bucket_cfg_t k, and a generation that grows by one at every
     * change of any of them (0: none was ever set), so that a cache of
     * their parsed form can tell it is current from the record alone. */
    uint32_t cfg_mask;
    uint64_t cfg_gen;
    /* RADOS: how many objects the bucket's index is sharded over, fixed when
     * it is created (storage.rados.index_shards). 1 (one object, named as
     * before shards existed) for every bucket of the local backend and every
     * RADOS bucket created before shards. */
    uint32_t index_shards;
    /* RADOS: the generation of the index objects (0: named as before
     * resharding; each finished reshard adds one), and the shard count an
     * online reshard in progress moves the index to (0: none). 0 and 0 for
     * every bucket of the local backend. */
    uint32_t index_gen;
    uint32_t reshard_to;
    /* stor_versioning_t; kept in the record as document
     * STOR_BCFG_VERSIONING, the one document storage itself reads. */
    int versioning;
} stor_bucket_t;
#define STOR_INDEX_SHARDS_MAX 256 /* storage.rados.index_shards' upper bound */

/* A bucket's versioning state (docs/storage.md, "Versioning"). Values are
 * stored; never change them. */
typedef enum stor_versioning {
    STOR_VERSIONING_OFF = 0,       /* never enabled: one object per key, no history */
    STOR_VERSIONING_ENABLED = 1,   /* every write and delete makes a new version */
    STOR_VERSIONING_SUSPENDED = 2, /* writes and deletes replace the "null" version */
} stor_versioning_t;

/* The configuration documents kept with a bucket. Storage keeps them as
 * opaque bytes in the bucket's record (read with every stor_bucket_get on
 * RADOS: keep them small); their meaning is the S3 layer's. Values never
 * change (they are stored). */
typedef enum stor_bucket_cfg {
    STOR_BCFG_POLICY = 0,              /* the bucket policy (canonical JSON) */
    STOR_BCFG_PUBLIC_ACCESS_BLOCK = 1, /* PublicAccessBlockConfiguration flags */
    STOR_BCFG_OWNERSHIP = 2,           /* OwnershipControls rule */
    STOR_BCFG_CORS = 3,                /* the CORS configuration (s3/cors.h's stored form) */
    STOR_BCFG_LIFECYCLE = 4, /* the lifecycle configuration (canonical XML, s3/lifecycle.h) */
    /* The versioning state: one byte, stor_versioning_t (set only through
     * stor_bucket_set_versioning; storage reads it on every write). */
    STOR_BCFG_VERSIONING = 5,
    STOR_BCFG_TAGGING = 6,    /* the bucket's tag set (s3/tagging.h's stored form) */
    STOR_BCFG_ENCRYPTION = 7, /* default encryption: one byte, 1 = AES256 (SSE-S3) */
    /* The object lock configuration (s3/object_lock.h's stored form);
     * present exactly when the bucket has object lock enabled. */
    STOR_BCFG_OBJECT_LOCK = 8,
    /* The bucket's explicit grant list (s3/acl.h's stored form), which
     * replaces its canned ACL while set; set only with the ACL, through
     * stor_bucket_set_acl. */
    STOR_BCFG_ACL_GRANTS = 9,
    STOR_BCFG_COUNT = 10
} stor_bucket_cfg_t;
#define STOR_BCFG_MAX_BYTES (64u * 1024) /* one document; larger: STOR_ERR_TOO_LARGE */

/* Fails with STOR_ERR_BUCKET_EXISTS if the name is taken (by anyone). Name
 * validity is the caller's job. */
stor_status_t stor_bucket_create(stor_t *st, const char *name, const char *owner);
stor_status_t stor_bucket_get(stor_t *st, const char *name, stor_bucket_t *out_p);
/* Sets the ACL of bucket (as stor_bucket_get returned it: STOR_ERR_NO_BUCKET
 * if it is gone): its canned ACL and its explicit grant list (document
 * STOR_BCFG_ACL_GRANTS: grants, NUL-terminated and copied, or NULL for
 * none), in one atomic change of its record. */
stor_status_t stor_bucket_set_acl(stor_t *st, const stor_bucket_t *bucket, stor_acl_t acl,
                                  const char *grants);
/* Reads configuration document kind of bucket (as stor_bucket_get returned
 * it: STOR_ERR_NO_BUCKET if it is gone) into *out (initialised here; the
 * caller frees it; len 0 when the document is not set) and the generation
 * of the record it came from into *gen_p. */
stor_status_t stor_bucket_config_get(stor_t *st, const stor_bucket_t *bucket,
                                     stor_bucket_cfg_t kind, buf_t *out, uint64_t *gen_p);
/* Every configuration document of bucket from one read of its record, so
 * all of one generation: docs[k] as stor_bucket_config_get gives document k
 * (each initialised here, even on error; the caller frees them all). */
stor_status_t stor_bucket_configs_get(stor_t *st, const stor_bucket_t *bucket,
                                      buf_t docs[STOR_BCFG_COUNT], uint64_t *gen_p);
/* Sets configuration document kind of bucket (as stor_bucket_get returned
 * it) to len bytes of data, or removes it (data NULL), in one atomic change
 * of the bucket's record that also bumps its cfg_gen. STOR_ERR_TOO_LARGE
 * past STOR_BCFG_MAX_BYTES. */
stor_status_t stor_bucket_config_set(stor_t *st, const stor_bucket_t *bucket,
                                     stor_bucket_cfg_t kind, const void *data, size_t len);
/* Sets the versioning state of bucket (as stor_bucket_get returned it) to
 * STOR_VERSIONING_ENABLED or STOR_VERSIONING_SUSPENDED (a bucket never goes
 * back to OFF), in one atomic change of its record: writes committed after
 * it follow the new state. STOR_ERR_UNSUPPORTED on a backend without
 * versioning (RADOS). */
stor_status_t stor_bucket_set_versioning(stor_t *st, const stor_bucket_t *bucket,
                                         stor_versioning_t state);
/* Deletes bucket (as stor_bucket_get returned it: STOR_ERR_NO_BUCKET if it
 * is gone, even if another bucket now has its name).
 * STOR_ERR_BUCKET_NOT_EMPTY while objects remain (any version, delete
 * markers included). Multipart uploads still in
 * progress do not keep it: they are aborted in the same transaction (their
 * parts' files dropped), as S3 does. */
stor_status_t stor_bucket_delete(stor_t *st, const stor_bucket_t *bucket);
/* All buckets, ordered by name; *out_p is malloc'ed (free() it), may be NULL when *n_p is 0. */
stor_status_t stor_bucket_list(stor_t *st, stor_bucket_t **out_p, size_t *n_p);

/* ---- Object metadata --------------------------------------------------- */

typedef struct stor_kv {
    char *name; /* user metadata: lower-case name without "x-amz-meta-" */
    char *value;
} stor_kv_t;

typedef struct stor_meta {
    uint64_t size;
    char etag[64];    /* unquoted: 32 hex digits, or hex "-N" for multipart */
    int64_t mtime_ms; /* unix milliseconds of the commit */
    /* Stored response headers; NULL when absent. */
    char *content_type;
    char *content_encoding;
    char *content_disposition;
    char *content_language;
    char *cache_control;
    char *expires;
    /* Checksums as S3 sends them (base64); NULL when absent. */
    char *checksum_crc32;
    char *checksum_crc32c;
    char *checksum_sha256;
    char *checksum_sha1;
    char *checksum_crc64nvme;
    stor_kv_t *user_meta;
    size_t n_user_meta;
    /* Multipart layout: parts_count 0 for a single-part object; otherwise the
     * size of each part in order (for GET ?partNumber=). */
    uint32_t parts_count;
    uint64_t *part_sizes;
    /* Access: the access key id that wrote the object (NULL: the bucket's
     * owner, for objects written before owners were recorded) and its
     * canned ACL. */
    char *owner;
    stor_acl_t acl;
    /* Extension fields (records of version 5 and later, stor_record.h);
     * NULL when absent. */
    char *storage_class; /* as the writer gave it; NULL: STANDARD */
    /* A multipart upload's x-amz-checksum-algorithm ("CRC32", "SHA256"...,
     * as common/checksum.h names them) and checksum type ("COMPOSITE" or
     * "FULL_OBJECT"), kept by the object it becomes; and that object's
     * parts' checksums of the algorithm, base64, comma-separated in part
     * order. NULL when absent. */
    char *checksum_algorithm;
    char *checksum_type;
    char *part_checksums;
    /* The object's tag set in the S3 layer's stored form (s3/tagging.h);
     * NULL: no tags. Opaque here. */
    char *tags;
    /* How the object's bytes are encrypted at rest, in the S3 layer's stored
     * form (s3/sse.h: never a key); NULL: they are not. Opaque here. */
    char *sse;
    /* The object's explicit grant list in the S3 layer's stored form
     * (s3/acl.h), which replaces its canned ACL acl; NULL: none. Opaque
     * here (field 9). */
    char *grants;
    /* The version (field 10): NULL for the "null" version of an object
     * written before its bucket had versioning; else 16 hex digits (the
     * version's order among its key's versions: a "null" version written
     * while versioning was suspended) or STOR_VERSION_ID_LEN hex digits (a
     * version id, whose first 16 digits are that order). Set by the
     * commit; read it with stor_version_id. */
    char *version;
    char *delete_marker; /* field 11: "1" for a delete marker, else NULL */
    /* Object lock (fields 7 and 8), in the S3 layer's stored form
     * (s3/object_lock.h); NULL when absent. Opaque here: storage acts on
     * them only through a caller's guard (stor_guard_fn). */
    char *lock_retention; /* mode and retain-until date */
    char *legal_hold;     /* the legal hold's status */
    /* A multipart upload's initiator (field 12): the access key id that
     * created it, which owner (the object's owner to be) need not be; NULL
     * when not recorded (an anonymous initiator, or an upload from before
     * the field). Kept by the upload only: Complete drops it. */
    char *initiator;
} stor_meta_t;

#define STOR_VERSION_ID_LEN 32 /* hex digits of a version id */
/* The version id of meta as S3 shows it: "null" or its 32 hex digits. */
void stor_version_id(const stor_meta_t *meta, char out[STOR_VERSION_ID_LEN + 1]);
/* 1 when id is "null" or a version id this store could have made
 * (STOR_VERSION_ID_LEN lower-case hex digits). */
int stor_version_id_valid(const char *id);

/* Frees every pointer inside meta and zeroes it; the struct itself is the
 * caller's. NULL is a no-op. */
void stor_meta_free(stor_meta_t *meta);
/* Deep copy; returns STOR_ERR_NOMEM on failure (dst left zeroed). */
stor_status_t stor_meta_copy(stor_meta_t *dst, const stor_meta_t *src);

/* ---- Writing ------------------------------------------------------------ */

typedef struct stor_writer stor_writer_t;

/* Starts a new object body in bucket, as stor_bucket_get returned it
 * (STOR_ERR_NO_BUCKET if it is gone). The writer remembers which bucket:
 * the commit fails if it was deleted meanwhile, even if another bucket of
 * the same name exists by then. */
stor_status_t stor_writer_open(stor_t *st, const stor_bucket_t *bucket, stor_writer_t **out_p);
/* Appends bytes. On error the writer must still be aborted. */
stor_status_t stor_writer_write(stor_writer_t *w, const void *data, size_t len);
/* Bytes written so far. Only the unit tests ask (the server counts the
 * bytes it writes itself). */
uint64_t stor_writer_size(const stor_writer_t *w);
/* Publishes the bytes as bucket/key with meta (meta->size is set from the
 * bytes written, meta->mtime_ms from the clock; the rest is taken as given and
 * copied). Replaces any existing object atomically. Frees the writer whatever
 * the result. STOR_ERR_NO_BUCKET if the writer's bucket was deleted meanwhile
 * (whether or not its name was taken again since). stor_writer_commit_if
 * with no condition: the server always calls that one; this short form is
 * the unit tests'. */
stor_status_t stor_writer_commit(stor_writer_t *w, const char *key, stor_meta_t *meta);
/* A caller's check of the version a change or delete is about to act on
 * (stor_precond_t.guard, stor_obj_change_t.guard): called with that
 * version's metadata inside the call's own transaction (on RADOS, on the
 * record the call's compare-and-swap then requires unchanged), so that no
 * concurrent change slips between the check and the act. Returns STOR_OK
 * to go on, or the status the call then fails with, changing nothing
 * (STOR_ERR_LOCKED for the S3 layer's object lock). Must be quick, must
 * not call storage, and may run more than once (RADOS retries). */
typedef stor_status_t (*stor_guard_fn)(const stor_meta_t *version, void *arg);

/* A conditional write's condition, checked in the commit's own transaction
 * against the object the key holds at that instant (so two racing
 * conditional writers cannot both succeed). */
typedef struct stor_precond {
    int must_not_exist; /* STOR_ERR_PRECONDITION if the key holds an object */
    int must_exist;     /* STOR_ERR_NO_KEY if it holds none */
    const char *etag;   /* with must_exist: STOR_ERR_PRECONDITION unless its etag is this */
    int64_t mtime_ms;   /* with must_exist and not 0: ... and its commit time is this */
    /* stor_mpu_complete only: the checksums the client expects the new
     * object to have (base64, by common/checksum.h's algorithm; NULL: none).
     * STOR_ERR_BAD_DIGEST when the one of the upload's algorithm is not the
     * object's. */
    const char *checksums[CHECKSUM_NONE];
    /* Deletes only (stor_delete_if, stor_delete_version_if): called on
     * every version the delete removes (none when it only puts a delete
     * marker on top); NULL: none. */
    stor_guard_fn guard;
    void *guard_arg;
} stor_precond_t;
/* stor_writer_commit, when cond (NULL: none) holds; when it does not, the
 * bytes are discarded as by stor_writer_abort and nothing changes. */
stor_status_t stor_writer_commit_if(stor_writer_t *w, const char *key, stor_meta_t *meta,
                                    const stor_precond_t *cond);
/* Discards the bytes and frees the writer; NULL is a no-op. */
void stor_writer_abort(stor_writer_t *w);

/* Acknowledging a write once it is durable, without a thread waiting for it
 * (fsync mode; docs/storage.md, "Durable later"). */

/* What a commit still waits for before it is durable; 0: nothing (durable
 * already, or a mode that waits for nothing). A ticket is a number and
 * holds nothing: one never awaited costs nothing. */
typedef uint64_t stor_ticket_t;
/* A ticket settled: STOR_OK, durable; STOR_ERR_IO, the flush that was to
 * make it durable failed (logged): the change stays committed and visible
 * but may not survive a power loss, as after a failed stor_writer_commit. */
typedef void (*stor_durable_fn)(void *arg, stor_status_t st);
/* stor_writer_commit_if, except that a commit whose durability is a flush
 * shared with other commits (fsync mode's commit log) returns before that
 * flush: STOR_OK with *ticket_p nonzero means committed -- readers see the
 * object, as they see every commit while its flush runs -- but not yet
 * durable: the caller must not acknowledge it before stor_ticket_await
 * settles the ticket. *ticket_p 0: the result is final, as
 * stor_writer_commit_if's (every error; relaxed mode; the RADOS backend,
 * which completes synchronously; a commit that could not be logged; one that
 * replaced an object kept in a file, which is dropped only once durable). */
stor_status_t stor_writer_commit_later(stor_writer_t *w, const char *key, stor_meta_t *meta,
                                       const stor_precond_t *cond, stor_ticket_t *ticket_p);
/* Calls done(arg, status) exactly once, when ticket is settled (0: at once,
 * STOR_OK). If no flush is under way, the calling thread runs them, one
 * after the other, until every ticket awaited so far (by any thread) is
 * settled, calling done for each, its own too, before it returns; else it
 * returns at once and the thread running the flush calls done. So done
 * runs on any thread: it must be quick, must not block and must not call
 * storage. */
void stor_ticket_await(stor_t *st, stor_ticket_t ticket, stor_durable_fn done, void *arg);
/* Encrypts the bytes written from now on with AES-256-CTR under key (32
 * bytes) and iv (16: the counter block of the object's first 16 bytes;
 * common/cipher.h), at their offset in the object: call it before the first
 * write. The key is copied and zeroed when the writer ends. What the bytes
 * are encrypted with is the caller's to remember (in the metadata). */
void stor_writer_set_cipher(stor_writer_t *w, const uint8_t key[32], const uint8_t iv[16]);

/* ---- Reading ------------------------------------------------------------ */

/* Fills *meta_p (caller frees with stor_meta_free) with the latest version
 * of bucket/key; STOR_ERR_NO_KEY when there is none or it is a delete
 * marker. */
stor_status_t stor_head(stor_t *st, const char *bucket, const char *key, stor_meta_t *meta_p);
/* Fills *meta_p with version version_id ("null" or a version id) of
 * bucket/key, or with its latest version when version_id is NULL; a delete
 * marker too (meta_p->delete_marker set). STOR_ERR_NO_KEY when the key has
 * no version at all (version_id NULL), STOR_ERR_NO_VERSION when it has none
 * of that id. */
stor_status_t stor_head_version(stor_t *st, const char *bucket, const char *key,
                                const char *version_id, stor_meta_t *meta_p);

typedef struct stor_reader stor_reader_t;

/* Opens a consistent snapshot of bucket/key: later overwrites or deletes do
 * not change what this reader returns. STOR_ERR_DELETE_MARKER when the
 * latest version is a delete marker (stor_head_version tells which). The
 * backend's own call, without the version dispatch of
 * stor_reader_open_version (which the server uses, with NULL for the
 * latest): the unit tests' short form. */
stor_status_t stor_reader_open(stor_t *st, const char *bucket, const char *key,
                               stor_reader_t **out_p);
/* stor_reader_open of version version_id (NULL: the latest).
 * STOR_ERR_NO_VERSION when there is none of that id, STOR_ERR_DELETE_MARKER
 * when it is a delete marker. */
stor_status_t stor_reader_open_version(stor_t *st, const char *bucket, const char *key,
                                       const char *version_id, stor_reader_t **out_p);
const stor_meta_t *stor_reader_meta(const stor_reader_t *r);
/* Decrypts what stor_reader_pread returns from now on, as
 * stor_writer_set_cipher encrypted it; stor_reader_span_fd then returns 0
 * (the file holds ciphertext). The key is zeroed when the reader closes.
 * The server calls stor_reader_set_part_cipher (this with a zero IV, and
 * a multipart object's per-part counters); the unit tests call this one
 * directly. */
void stor_reader_set_cipher(stor_reader_t *r, const uint8_t key[32], const uint8_t iv[16]);
/* The counter block a multipart upload's part number encrypts from: the
 * number in the first 4 bytes (big-endian), zeros after (the parts of one
 * upload share its key; a part's offset never reaches 2^96 blocks). */
void stor_part_iv(uint32_t number, uint8_t iv[16]);
/* stor_reader_set_cipher for an object assembled from parts numbered 1, 2,
 * ... in order (meta.part_sizes), each encrypted from stor_part_iv(its
 * number); a single-part object reads as with the zero counter block. */
void stor_reader_set_part_cipher(stor_reader_t *r, const uint8_t key[32]);
/* Reads up to len bytes at off; returns bytes read (short only at the end of
 * the object), or -1 on an I/O error. */
ssize_t stor_reader_pread(stor_reader_t *r, void *buf, size_t len, uint64_t off);
/* If [off, off+len) lies inside one file, gives its fd and the offset inside
 * that file (for sendfile) and returns 1; else returns 0 (always, on the
 * RADOS backend: callers then pread). The fd stays owned by the reader. */
int stor_reader_span_fd(stor_reader_t *r, uint64_t off, uint64_t len, int *fd_p,
                        uint64_t *file_off_p);
void stor_reader_close(stor_reader_t *r);

/* ---- Deleting ----------------------------------------------------------- */

/* STOR_ERR_NO_KEY when there was nothing to delete; STOR_ERR_NO_BUCKET when
 * bucket (as stor_bucket_get returned it) is gone. The backend's plain
 * delete of the current object, even in a bucket with versioning (no
 * delete marker): only the unit tests call it; the server deletes through
 * stor_delete_if and stor_delete_version_if. */
stor_status_t stor_delete(stor_t *st, const stor_bucket_t *bucket, const char *key);
/* What stor_delete_version did: the version it made (a delete marker) or
 * removed ("null" or its id; "" when the bucket has no versioning and none
 * was asked for), and whether that version is a delete marker. */
typedef struct stor_deleted {
    char version_id[STOR_VERSION_ID_LEN + 1];
    int delete_marker;
} stor_deleted_t;
/* DeleteObject as S3 does it. version_id NULL: in a bucket without
 * versioning as stor_delete; with versioning, a new delete marker becomes
 * the latest version (enabled: a version of its own; suspended: the "null"
 * version, replacing the one there was), whether or not the key had an
 * object. version_id given: removes exactly that version (an object or a
 * marker; the version before it becomes the latest when it was the latest);
 * STOR_ERR_NO_VERSION when the key has none of that id. One transaction:
 * the latest version switches atomically. The server calls the conditional
 * forms below (stor_delete_version_if with cond NULL is this one); this
 * form is the unit tests'. */
stor_status_t stor_delete_version(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                  const char *version_id, stor_deleted_t *out);
/* stor_delete_version of the latest version (version_id NULL) when cond
 * holds for the object key holds, checked in the delete's own transaction
 * (a lifecycle expiry of the object it saw, never of one written since);
 * STOR_ERR_PRECONDITION or STOR_ERR_NO_KEY when it does not. */
stor_status_t stor_delete_if(stor_t *st, const stor_bucket_t *bucket, const char *key,
                             const stor_precond_t *cond, stor_deleted_t *out);
/* stor_delete_version with cond (NULL: none) checked in the delete's own
 * transaction: cond's guard on the version it removes (object lock: a
 * protected version stays), its other fields on the key's latest version
 * as for stor_delete_if. */
stor_status_t stor_delete_version_if(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                     const char *version_id, const stor_precond_t *cond,
                                     stor_deleted_t *out);

/* A change to an object's metadata that leaves its bytes as they are. */
typedef struct stor_obj_change {
    /* The version changed: NULL, the latest; else "null" or a version id. */
    const char *version_id;
    bool set_acl; /* sets acl and grants together */
    stor_acl_t acl;
    const char *grants; /* with set_acl: the explicit grant list (copied); NULL for none */
    bool set_tags;
    const char *tags; /* with set_tags: the new tag set (copied); NULL removes it */
    bool set_lock_retention;
    const char *lock_retention; /* with set_lock_retention: copied; NULL removes it */
    bool set_legal_hold;
    const char *legal_hold; /* with set_legal_hold: copied; NULL removes it */
    /* Called on the version's metadata before the change, in its
     * transaction (stor_guard_fn); NULL: none. */
    stor_guard_fn guard;
    void *guard_arg;
} stor_obj_change_t;
/* Applies change to bucket/key (bucket as stor_bucket_get returned it) in
 * one atomic rewrite of its record (of the version change->version_id
 * names): its bytes, mtime and other metadata stay as they are.
 * STOR_ERR_NO_KEY when the key holds no object (version_id NULL),
 * STOR_ERR_NO_VERSION when it has no version of that id,
 * STOR_ERR_DELETE_MARKER when that version is a delete marker, or the
 * guard's status. */
stor_status_t stor_object_change(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                 const stor_obj_change_t *change);

/* ---- Listing ------------------------------------------------------------ */

typedef struct stor_iter stor_iter_t;

/* Iterates the keys of bucket that start with prefix ("" for all), in byte
 * order, from the first key > after (NULL or "" to start at the beginning). */
stor_status_t stor_iter_open(stor_t *st, const char *bucket, const char *prefix, const char *after,
                             stor_iter_t **out_p);
/* What stor_iter_next fills of each entry's metadata (stor_iter_want). */
typedef enum stor_want {
    STOR_WANT_ALL = 0, /* every field (an iterator's default) */
    /* What a listing shows: size, etag, mtime_ms, acl, parts_count,
     * storage_class, version and delete_marker; the other pointers may be
     * left NULL (user metadata, headers, checksums, tags, part_sizes...).
     * The record is checked as fully as for STOR_WANT_ALL. */
    STOR_WANT_LISTING = 1,
    STOR_WANT_OWNER = 2, /* with STOR_WANT_LISTING: the owner too */
} stor_want_t;
/* Asks the iterator for only the fields want (stor_want_t bits) names from
 * now on: a page of a listing then copies no user metadata nor headers. A
 * backend may fill more than asked (the caller frees meta as ever). */
void stor_iter_want(stor_iter_t *it, unsigned want);
/* Moves to the first key >= key (used to skip past a common prefix). */
void stor_iter_seek(stor_iter_t *it, const char *key, size_t key_len);
/* Returns 1 and the next entry, 0 at the end, -1 on error. *key_p points into
 * the iterator and is valid until the next call. meta_p may be NULL; when
 * given it is filled and the caller frees it with stor_meta_free. */
int stor_iter_next(stor_iter_t *it, const char **key_p, size_t *key_len_p, stor_meta_t *meta_p);
void stor_iter_close(stor_iter_t *it);

/* Iterates every version of the keys of bucket that start with prefix:
 * keys in index order (byte order, except inside a block of keys longer
 * than the index key's P bytes sharing their first P bytes, which come in
 * their hash order: docs/storage.md), each key's versions newest first,
 * delete markers included. Starts after key_marker's version
 * version_marker ("null" or an id), or after every version of key_marker
 * when version_marker is NULL or "" (key_marker NULL or "": at the start).
 * stor_iter_seek moves to the first version of the first key >= key. Read
 * with stor_iter_next_version (not stor_iter_next). */
stor_status_t stor_iter_open_versions(stor_t *st, const char *bucket, const char *prefix,
                                      const char *key_marker, const char *version_marker,
                                      stor_iter_t **out_p);
/* stor_iter_next on a versions iterator; *is_latest_p says whether the
 * version is its key's latest. meta_p may not be NULL: the version's id and
 * whether it is a delete marker are in it. */
int stor_iter_next_version(stor_iter_t *it, const char **key_p, size_t *key_len_p,
                           stor_meta_t *meta_p, int *is_latest_p);

/* ---- Multipart uploads -------------------------------------------------- */

#define STOR_UPLOAD_ID_LEN 32 /* hex characters */

/* Starts an upload of bucket/key (bucket as stor_bucket_get returned it:
 * STOR_ERR_NO_BUCKET if it is gone); meta holds the headers given at create
 * (size/etag ignored). Writes the id (NUL-terminated) into upload_id. An
 * upload keeps its bucket alive (stor_bucket_delete refuses a bucket with
 * uploads), so its parts and its completion land in the bucket it was
 * created in. */
stor_status_t stor_mpu_create(stor_t *st, const stor_bucket_t *bucket, const char *key,
                              const stor_meta_t *meta, char upload_id[STOR_UPLOAD_ID_LEN + 1]);
/* Looks an upload up: STOR_ERR_NO_UPLOAD unless it exists in bucket for key. */
stor_status_t stor_mpu_check(stor_t *st, const char *bucket, const char *key,
                             const char *upload_id);
/* stor_mpu_check that also fills *meta_p (caller frees) with the metadata
 * the upload's object will have (CreateMultipartUpload's headers, storage
 * class, checksum algorithm and type). */
stor_status_t stor_mpu_meta(stor_t *st, const char *bucket, const char *key, const char *upload_id,
                            stor_meta_t *meta_p);

typedef struct stor_part {
    uint32_t number;
    uint64_t size;
    char etag[64]; /* unquoted: hex MD5, or "<32 hex>-1" under etag: fast (s3/body.c) */
    int64_t mtime_ms;
    /* Base64, as S3 sends them; NULL when absent. */
    char *checksum_crc32, *checksum_crc32c, *checksum_sha256, *checksum_sha1, *checksum_crc64nvme;
} stor_part_t;

/* Parts are written through an ordinary writer opened with stor_writer_open()
 * on the upload's bucket (STOR_ERR_NO_BUCKET at commit if that bucket was
 * deleted meanwhile), then committed as a part; a part number written
 * twice keeps the last. part->size is set from the bytes written; etag and
 * checksums are copied. Frees the writer whatever the result. */
stor_status_t stor_part_commit(stor_writer_t *w, const char *key, const char *upload_id,
                               stor_part_t *part);
/* Parts in number order, starting after part_marker (0 for all); *parts_p is
 * malloc'ed, free with stor_parts_free. */
stor_status_t stor_mpu_list_parts(stor_t *st, const char *bucket, const char *key,
                                  const char *upload_id, uint32_t part_marker,
                                  stor_part_t **parts_p, size_t *n_p);
void stor_parts_free(stor_part_t *parts, size_t n);

typedef struct stor_complete_part {
    uint32_t number;
    const char *etag; /* unquoted */
    /* The part's checksums as the client lists them (base64), by
     * algorithm (common/checksum.h); NULL where it lists none. */
    const char *checksums[CHECKSUM_NONE];
} stor_complete_part_t;

/* The ETag a multipart object made of these parts has: the MD5 of the 16
 * bytes each part's ETag (quoted or not) spells in hex, then "-N". Parts with
 * MD5 ETags give S3's md5-of-md5s; an etag: fast part's ETag ("<32 hex>-1",
 * no MD5) gives its 16 opaque bytes, so the object's ETag is opaque too.
 * STOR_ERR_INVALID_PART when an ETag has neither shape. Needs no store. */
stor_status_t stor_mpu_etag(const stor_complete_part_t *parts, size_t n, char etag[64]);
/* Assembles the listed parts into bucket/key without copying bytes: checks
 * order (STOR_ERR_INVALID_PART_ORDER), presence and ETag (STOR_ERR_INVALID_PART)
 * and size (STOR_ERR_PART_TOO_SMALL), computes ETag md5-of-md5s "-N" and,
 * for an upload with a checksum algorithm, the object's checksum of its
 * type from the parts' (a part without one, or listed with another:
 * STOR_ERR_INVALID_PART; cond's checksum of that algorithm, when set, must
 * be the object's: STOR_ERR_BAD_DIGEST), commits
 * atomically, drops unlisted parts and the upload. On success *meta_p gets the
 * new object's metadata (caller frees). bucket as stor_bucket_get returned it
 * (STOR_ERR_NO_BUCKET if it is gone), as for stor_mpu_abort. cond (NULL:
 * none) is checked in the commit's transaction as for stor_writer_commit_if;
 * when it fails the upload stays as it was. */
stor_status_t stor_mpu_complete(stor_t *st, const stor_bucket_t *bucket, const char *key,
                                const char *upload_id, const stor_complete_part_t *parts, size_t n,
                                const stor_precond_t *cond, stor_meta_t *meta_p);
stor_status_t stor_mpu_abort(stor_t *st, const stor_bucket_t *bucket, const char *key,
                             const char *upload_id);

typedef struct stor_upload {
    char *key;
    char upload_id[STOR_UPLOAD_ID_LEN + 1];
    int64_t initiated_ms;
    /* The upload record's owner to be and initiator (stor_meta_t's), NULL
     * where not recorded, or when the upload ended while it was listed. */
    char *owner, *initiator;
} stor_upload_t;

/* Uploads in bucket whose key starts with prefix, ordered by (key, upload
 * id), after (key_marker, upload_id_marker), at most max of them; *more_p set
 * when more remain. Free with stor_uploads_free. */
stor_status_t stor_mpu_list(stor_t *st, const char *bucket, const char *prefix,
                            const char *key_marker, const char *upload_id_marker, size_t max,
                            stor_upload_t **uploads_p, size_t *n_p, int *more_p);
void stor_uploads_free(stor_upload_t *uploads, size_t n);

#endif
