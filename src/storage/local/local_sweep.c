/* Orphan cleanup at open: deletes the object files under objects/ that the
 * index does not reference (files written or dropped by a process that
 * stopped before its commit or its unlink). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/hash.h"
#include "common/log.h"
#include "storage/local/local_internal.h"

static int cmp_id(const void *a, const void *b)
{
    return memcmp(a, b, STOR_ID_LEN);
}

typedef struct idset {
    uint8_t *ids;
    size_t n, cap;
} idset_t;

static int idset_add(idset_t *s, const uint8_t *id)
{
    if (array_grow(&s->ids, &s->cap, s->n, STOR_ID_LEN, 1024) != 0)
        return -1;
    memcpy(s->ids + s->n++ * STOR_ID_LEN, id, STOR_ID_LEN);
    return 0;
}

/* Collects every file id the index references (objects of every version
 * and parts of live uploads), and counts the objects and their bytes into st (stor_usage).
 * Fails if any record is unreadable: then we cannot tell garbage from data,
 * and cleanup is skipped. */
static int collect_ids(lstor_t *st, idset_t *set)
{
    MDB_txn *txn;
    MDB_cursor *cur = NULL;
    MDB_val k, v;
    int ok = -1, rc;
    if (local_rd_begin(st, &txn) != STOR_OK)
        return -1;
    /* Current objects, then the other versions (noncurrent objects and
     * delete markers, which have no bytes and do not count as objects). */
    MDB_dbi dbs[2] = {st->db_objects, st->db_versions};
    for (int d = 0; d < 2; d++) {
        if (mdb_cursor_open(txn, dbs[d], &cur))
            goto out;
        for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
             rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
            stor_obj_rec_t rec;
            if (stor_rec_decode_object(v.mv_data, v.mv_size, &rec) != STOR_OK)
                goto out;
            if (!rec.meta.delete_marker)
                local_usage_change(st, 1, (int64_t)rec.meta.size);
            for (uint32_t i = 0; i < rec.n_segs; i++)
                if (idset_add(set, rec.segs[i].id) != 0) {
                    stor_obj_rec_free(&rec);
                    goto out;
                }
            stor_obj_rec_free(&rec);
        }
        if (rc != MDB_NOTFOUND)
            goto out;
        mdb_cursor_close(cur);
        cur = NULL;
    }
    if (mdb_cursor_open(txn, st->db_parts, &cur))
        goto out;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        stor_part_rec_t pr;
        if (stor_rec_decode_part(v.mv_data, v.mv_size, &pr) != STOR_OK)
            goto out;
        stor_part_free_fields(&pr.part);
        if (idset_add(set, pr.id) != 0)
            goto out;
    }
    if (rc != MDB_NOTFOUND)
        goto out;
    ok = 0;
out:
    if (cur)
        mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    return ok;
}

/* Deletes every file under dirfd (one shard) that set does not reference. */
static size_t sweep_shard(int fd, const idset_t *set)
{
    size_t removed = 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' &&
            (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
            continue;
        uint8_t id[STOR_ID_LEN];
        int keep = local_is_hex(de->d_name, 2 * STOR_ID_LEN) &&
                   hash_hex_decode(de->d_name, 2 * STOR_ID_LEN, id, STOR_ID_LEN) == 0 &&
                   set->n && /* no referenced file: ids is NULL, which bsearch may not take */
                   bsearch(id, set->ids, set->n, STOR_ID_LEN, cmp_id) != NULL;
        if (keep)
            continue;
        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
            removed++;
        else if (errno == EISDIR || errno == EPERM)
            log_warn("storage: stray directory in objects shard: %s", de->d_name);
    }
    closedir(d);
    return removed;
}

/* Walks objects/ab/cd/, deleting the files the index does not reference.
 * The index must be durable first (stor_open syncs it): a file dropped by a
 * commit that is not, is still referenced by the index on disk. */
void local_sweep_orphans(lstor_t *st)
{
    idset_t set = {0};
    if (collect_ids(st, &set) != 0) {
        log_warn("storage: index unreadable; orphan cleanup skipped");
        free(set.ids);
        return;
    }
    if (set.n)
        qsort(set.ids, set.n, STOR_ID_LEN, cmp_id);
    size_t removed = 0;
    int fd1 = dup(st->objfd);
    DIR *d1 = fd1 >= 0 ? fdopendir(fd1) : NULL;
    if (!d1) {
        if (fd1 >= 0)
            close(fd1);
        free(set.ids);
        return;
    }
    rewinddir(d1);
    struct dirent *e1;
    while ((e1 = readdir(d1)) != NULL) {
        uint8_t b[2];
        if (!local_is_hex(e1->d_name, 2) || hash_hex_decode(e1->d_name, 2, b, 1) != 0)
            continue;
        int fd2 = openat(st->objfd, e1->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd2 < 0)
            continue;
        DIR *d2 = fdopendir(fd2);
        if (!d2) {
            close(fd2);
            continue;
        }
        struct dirent *e2;
        while ((e2 = readdir(d2)) != NULL) {
            if (!local_is_hex(e2->d_name, 2) || hash_hex_decode(e2->d_name, 2, b + 1, 1) != 0)
                continue;
            int fd3 = openat(fd2, e2->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd3 >= 0)
                removed += sweep_shard(fd3, &set);
        }
        closedir(d2);
    }
    closedir(d1);
    free(set.ids);
    if (removed)
        log_info("storage: removed %zu orphaned file(s)", removed);
}
