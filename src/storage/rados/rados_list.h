/* Private to rados_list.c and rados_list_park.c: a listing's state (its
 * cursors, one per shard or two for versions) and the parked listings'
 * store that keeps it between the pages of a walk. */
#ifndef S3R_STORAGE_RADOS_LIST_H
#define S3R_STORAGE_RADOS_LIST_H

#include "storage/rados/rados_internal.h"

/* One shard's position: its batch, entries read from the shard (after
 * `from`, or from it when inclusive) held back to back in ents, each a
 * cursor_ent_t header, the key, a NUL, the value. Entries before the head
 * (index i) are consumed. The head entry (k, v) points into ents and is
 * valid until the batch changes. The batch is what the shard held at its
 * object version `version`, from `from` up to its last entry, and `more`
 * says whether the shard held keys past that then. */
typedef struct cursor_ent {
    size_t kl, vl;
} cursor_ent_t;

typedef struct cursor {
    char oid[RSTOR_OID_MAX];
    const char *prefix; /* what its keys start with (the iterator's) */
    size_t prefix_len;
    int ver; /* over version entries: k is an entry, ukey its object key */
    buf_t ukey;
    char *from;    /* where the batch starts (a key, NUL-terminated) */
    int inclusive; /* whether `from` itself is a candidate (after a seek) */
    buf_t ents;
    uint32_t n, i;      /* entries in ents; the head's index */
    size_t head;        /* the head's offset in ents */
    size_t tail;        /* the last entry's offset (when n) */
    uint64_t version;   /* of the shard object when the batch was read */
    unsigned char more; /* the OSD had keys past this batch */
    int stale;          /* the batch must be (re)read from `from` before use */
    int check;          /* a parked batch: read on from its tail, if unchanged */
    int done;           /* nothing more in range on this shard */
    int has;            /* (k, v) is this shard's next entry */
    char *k, *v;
    size_t kl, vl;
    /* A batch read in flight. */
    rados_read_op_t op;
    rados_completion_t c;
    rados_omap_iter_t first, rest;
    int pr1, pr2;
} cursor_t;

typedef struct riter {
    stor_iter_t base; /* first: stor_backend.h */
    rstor_t *st;
    char *prefix;
    size_t prefix_len;
    uint32_t batch; /* entries per shard batch */
    uint32_t n;     /* cursors: one per shard, two (keys, then entries) for versions */
    cursor_t *cur;
    /* A listing of versions: the entries' prefix; the resume point (skip
     * keys before mk, and mk itself when mk_whole; inside mk, everything up
     * to and including version mk_vid). */
    int versions;
    buf_t vprefix;
    char *mk;
    size_t mk_len;
    int has_mk, mk_whole, mk_passed;
    char mk_vid[STOR_VERSION_ID_LEN + 1];
    int taken; /* the cursor whose head was emitted last must advance, or -1 */
    int eof, failed;
    int seeked; /* rs_iter_seek moved it: not parked */
    char *last; /* the last key emitted (its batch may be gone) */
    size_t last_len;
    char *prev; /* the key emitted before last (NULL: none) */
    size_t prev_len;
    char *last_v; /* the version entry emitted last (NULL: last's record was) */
    size_t last_v_len;
    /* Where the listing resumes if its index objects go (a reshard's last
     * step, iter_place): after what it emitted last, or from floor (the
     * opening point, or the last seek past last; floor_incl: floor itself
     * too). */
    char bucket[STOR_BUCKET_MAX + 1];
    uint64_t id;          /* the bucket's, once open: not a bucket made again */
    uint32_t gen, shards; /* the index its cursors read */
    char *floor;
    size_t floor_len;
    int floor_incl;
    uint64_t parked_ms; /* when it was parked (monotonic) */
    size_t bytes;       /* its batches' memory, while parked */
} riter_t;

/* Frees it and everything it holds (rados_list.c). */
void rs_list_iter_free(riter_t *it);

/* rados_list_park.c: parks it (it is the store's then), or frees it when
 * it is larger than the store's bound. */
void rs_list_park(riter_t *it);
/* Takes back the listing parked for bucket (the index rs_bucket_id has for
 * it now), prefix and a page resuming after `after`: one that stopped at
 * `after`, either on it or having looked one key past it. NULL if none. */
riter_t *rs_list_unpark(rstor_t *st, const char *bucket, const char *prefix, const char *after);

#endif
