/* Helpers shared by the storage unit tests: temp directories and small
 * object round trips. Header-only so each test stays one executable. */
#ifndef S3R_TEST_STOR_UTIL_H
#define S3R_TEST_STOR_UTIL_H

#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/hash.h"
#include "storage/storage.h"

static int rm_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb;
    (void)type;
    (void)ftw;
    return remove(path);
}

static inline void tu_rmrf(const char *dir)
{
    nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* stor_open with inlining off: every object gets a file of its own, as the
 * tests of files, their syncs and their unlinks need. */
static inline stor_status_t files_open(const char *dir, stor_durability_t mode, stor_t **st_p)
{
    stor_status_t s = stor_open(dir, mode, st_p);
    if (s == STOR_OK)
        stor_set_inline_max(*st_p, 0);
    return s;
}

static inline char *tu_mkdtemp(void)
{
    char *d = strdup("/tmp/s3r-stor-XXXXXX");
    if (!mkdtemp(d))
        abort();
    return d;
}

static inline void tu_md5_hex(const void *data, size_t len, char out[33])
{
    uint8_t d[MD5_LEN];
    digest_t *m = hash_digest_md5_new();
    hash_digest_update(m, data, len);
    hash_digest_final(m, d);
    hash_hex_encode(d, MD5_LEN, out);
}

static size_t tu_files;
static int count_cb(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)path;
    (void)sb;
    (void)ftw;
    if (type == FTW_F)
        tu_files++;
    return 0;
}

/* Regular files under DIR/.s3rdma/objects. */
static inline size_t tu_count_objects(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/.s3rdma/objects", dir);
    tu_files = 0;
    nftw(p, count_cb, 16, FTW_PHYS);
    return tu_files;
}

/* The bucket named name as a request would have seen it when authorized
 * (stor_bucket_get); for a missing bucket just the name (id 0), which every
 * call refuses as NoSuchBucket. */
static inline stor_bucket_t tu_bucket(stor_t *st, const char *name)
{
    stor_bucket_t b;
    if (stor_bucket_get(st, name, &b) != STOR_OK) {
        memset(&b, 0, sizeof b);
        snprintf(b.name, sizeof b.name, "%s", name);
    }
    return b;
}
/* tu_bucket() as a const stor_bucket_t * for the calls that take one. */
#define TU_B(st, name) ((const stor_bucket_t[1]){tu_bucket((st), (name))})

/* Writes data as bucket/key with an MD5 ETag; returns the status. */
static inline stor_status_t tu_put(stor_t *st, const char *bucket, const char *key,
                                   const void *data, size_t len)
{
    stor_writer_t *w;
    stor_status_t s = stor_writer_open(st, TU_B(st, bucket), &w);
    if (s != STOR_OK)
        return s;
    if ((s = stor_writer_write(w, data, len)) != STOR_OK) {
        stor_writer_abort(w);
        return s;
    }
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    tu_md5_hex(data, len, m.etag);
    return stor_writer_commit(w, key, &m);
}

/* Reads the whole object into a malloc'ed buffer (NUL-terminated). */
static inline char *tu_get(stor_t *st, const char *bucket, const char *key, size_t *len_p)
{
    stor_reader_t *r;
    if (stor_reader_open(st, bucket, key, &r) != STOR_OK)
        return NULL;
    size_t n = (size_t)stor_reader_meta(r)->size;
    char *b = malloc(n + 1);
    ssize_t got = stor_reader_pread(r, b, n, 0);
    stor_reader_close(r);
    if (got != (ssize_t)n) {
        free(b);
        return NULL;
    }
    b[n] = '\0';
    if (len_p)
        *len_p = n;
    return b;
}

#endif
