/* Storage engine: buckets, objects, metadata, readers, crash cleanup,
 * concurrency and durability modes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/cipher.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "common/s3r_limits.h"
#include "stor_test_util.h"
#include "storage/local/local_internal.h"

typedef struct fx {
    char *dir;
    stor_t *st;
    stor_durability_t mode;
} fx_t;

static int setup_mode(void **state, stor_durability_t mode)
{
    fx_t *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp();
    f->mode = mode;
    assert_int_equal(files_open(f->dir, mode, &f->st), STOR_OK);
    *state = f;
    return 0;
}

static int setup_relaxed(void **state)
{
    return setup_mode(state, STOR_DURABILITY_RELAXED);
}

static int setup_fsync(void **state)
{
    return setup_mode(state, STOR_DURABILITY_FSYNC);
}

static int teardown(void **state)
{
    fx_t *f = *state;
    stor_close(f->st);
    tu_rmrf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* Files under objects/ once every dropped file is gone: in relaxed mode
 * they go at a sync point (test_storage_sync.c checks they wait for it). */
static size_t count_files(fx_t *f)
{
    if (f->st)
        assert_int_equal(stor_sync(f->st), STOR_OK);
    return tu_count_objects(f->dir);
}

static void reopen(fx_t *f)
{
    stor_close(f->st);
    f->st = NULL;
    assert_int_equal(files_open(f->dir, f->mode, &f->st), STOR_OK);
}

/* ---- Buckets ------------------------------------------------------------ */

static void test_bucket_crud(void **state)
{
    fx_t *f = *state;
    stor_bucket_t b;
    assert_int_equal(stor_bucket_get(f->st, "alpha", &b), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_bucket_create(f->st, "beta", "AKB"), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "alpha", "AKA"), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "alpha", "other"), STOR_ERR_BUCKET_EXISTS);
    assert_int_equal(stor_bucket_get(f->st, "alpha", &b), STOR_OK);
    assert_string_equal(b.name, "alpha");
    assert_string_equal(b.owner, "AKA");
    assert_true(b.created > 1600000000 && b.created < 4000000000LL);

    stor_bucket_t *list;
    size_t n;
    assert_int_equal(stor_bucket_list(f->st, &list, &n), STOR_OK);
    assert_int_equal(n, 2);
    assert_string_equal(list[0].name, "alpha");
    assert_string_equal(list[1].name, "beta");
    assert_string_equal(list[1].owner, "AKB");
    free(list);

    /* Not empty while an object exists. */
    assert_int_equal(tu_put(f->st, "alpha", "k", "x", 1), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "alpha")), STOR_ERR_BUCKET_NOT_EMPTY);
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "alpha"), "k"), STOR_OK);
    /* Uploads in progress do not keep it: deleting it aborts them, parts and all
     * (the other bucket's upload stays). */
    char id[STOR_UPLOAD_ID_LEN + 1], beta_id[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "alpha"), "u", NULL, id), STOR_OK);
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "beta"), "u", NULL, beta_id), STOR_OK);
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "alpha"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "part", 4), STOR_OK);
    stor_part_t part = {.number = 1};
    tu_md5_hex("part", 4, part.etag);
    assert_int_equal(stor_part_commit(w, "u", id, &part), STOR_OK);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    size_t files = tu_count_objects(f->dir);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "alpha")), STOR_OK);
    assert_int_equal(stor_sync(f->st), STOR_OK);
    assert_int_equal(tu_count_objects(f->dir), files - 1);
    assert_int_equal(stor_mpu_check(f->st, "alpha", "u", id), STOR_ERR_NO_UPLOAD);
    assert_int_equal(stor_mpu_check(f->st, "beta", "u", beta_id), STOR_OK);
    assert_int_equal(stor_mpu_abort(f->st, TU_B(f->st, "beta"), "u", beta_id), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "alpha", "AKA"), STOR_OK);
    /* Also when the only upload has no part yet. */
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "alpha"), "none", NULL, id), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "alpha")), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "alpha", "AKA"), STOR_OK);
    /* A bucket whose name is a prefix of another is independent. */
    assert_int_equal(stor_bucket_create(f->st, "alphabet", "AKA"), STOR_OK);
    assert_int_equal(tu_put(f->st, "alphabet", "k", "x", 1), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "alpha")), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "alpha")), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_bucket_get(f->st, "alpha", &b), STOR_ERR_NO_BUCKET);

    reopen(f);
    assert_int_equal(stor_bucket_list(f->st, &list, &n), STOR_OK);
    assert_int_equal(n, 2);
    assert_string_equal(list[0].name, "alphabet");
    assert_string_equal(list[1].name, "beta");
    free(list);

    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "nope"), &w), STOR_ERR_NO_BUCKET);
}

/* ---- Objects ------------------------------------------------------------ */

/* stor_delete_if deletes the object it was given (etag and commit time),
 * never one written over it since: a lifecycle expiry racing a PUT loses. */
static void test_delete_if_only_the_object_seen(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "first", 5), STOR_OK);
    stor_meta_t seen;
    assert_int_equal(stor_head(f->st, "b", "k", &seen), STOR_OK);
    struct timespec pause = {0, 2 * 1000 * 1000}; /* a later commit time */
    nanosleep(&pause, NULL);
    assert_int_equal(tu_put(f->st, "b", "k", "first", 5), STOR_OK); /* same bytes, same ETag */
    stor_precond_t cond = {.must_exist = 1, .etag = seen.etag, .mtime_ms = seen.mtime_ms};
    stor_deleted_t d;
    assert_int_equal(stor_delete_if(f->st, TU_B(f->st, "b"), "k", &cond, &d),
                     STOR_ERR_PRECONDITION);
    char *got = tu_get(f->st, "b", "k", NULL);
    assert_string_equal(got, "first");
    free(got);
    stor_meta_t now;
    assert_int_equal(stor_head(f->st, "b", "k", &now), STOR_OK);
    cond.mtime_ms = now.mtime_ms;
    stor_meta_free(&now);
    assert_int_equal(stor_delete_if(f->st, TU_B(f->st, "b"), "k", &cond, &d), STOR_OK);
    assert_int_equal(stor_head(f->st, "b", "k", &now), STOR_ERR_NO_KEY);
    assert_int_equal(stor_delete_if(f->st, TU_B(f->st, "b"), "k", &cond, &d), STOR_ERR_NO_KEY);
    stor_meta_free(&seen);
}

static void test_put_get_overwrite_delete(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    stor_meta_t m;
    assert_int_equal(stor_head(f->st, "b", "a/b c", &m), STOR_ERR_NO_KEY);
    assert_int_equal(stor_head(f->st, "zz", "a", &m), STOR_ERR_NO_BUCKET);
    /* Missing and impossible buckets are NoSuchBucket on every path, not NoSuchKey. */
    char longb[STOR_BUCKET_MAX + 2];
    memset(longb, 'b', sizeof longb - 1);
    longb[sizeof longb - 1] = '\0';
    stor_reader_t *nr;
    assert_int_equal(stor_reader_open(f->st, "zz", "a", &nr), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "zz"), "a"), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_head(f->st, longb, "a", &m), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_reader_open(f->st, longb, "a", &nr), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_delete(f->st, TU_B(f->st, ""), "a"), STOR_ERR_NO_BUCKET);

    assert_int_equal(tu_put(f->st, "b", "a/b c", "hello", 5), STOR_OK);
    assert_int_equal(stor_head(f->st, "b", "a/b c", &m), STOR_OK);
    assert_int_equal(m.size, 5);
    assert_string_equal(m.etag, "5d41402abc4b2a76b9719d911017c592");
    assert_int_equal(m.parts_count, 0);
    stor_meta_free(&m);
    char *got = tu_get(f->st, "b", "a/b c", NULL);
    assert_non_null(got);
    assert_string_equal(got, "hello");
    free(got);
    assert_int_equal(count_files(f), 1);

    /* Overwrite replaces the bytes and frees the old file. */
    assert_int_equal(tu_put(f->st, "b", "a/b c", "goodbye!", 8), STOR_OK);
    got = tu_get(f->st, "b", "a/b c", NULL);
    assert_string_equal(got, "goodbye!");
    free(got);
    assert_int_equal(count_files(f), 1);

    /* Empty object. */
    assert_int_equal(tu_put(f->st, "b", "empty", "", 0), STOR_OK);
    size_t n = 99;
    got = tu_get(f->st, "b", "empty", &n);
    assert_non_null(got);
    assert_int_equal(n, 0);
    free(got);

    /* Keys are never paths. */
    assert_int_equal(tu_put(f->st, "b", "../../etc/passwd", "p", 1), STOR_OK);
    got = tu_get(f->st, "b", "../../etc/passwd", NULL);
    assert_string_equal(got, "p");
    free(got);

    assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), "a/b c"), STOR_OK);
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), "a/b c"), STOR_ERR_NO_KEY);
    assert_int_equal(stor_head(f->st, "b", "a/b c", &m), STOR_ERR_NO_KEY);
    stor_reader_t *r;
    assert_int_equal(stor_reader_open(f->st, "b", "a/b c", &r), STOR_ERR_NO_KEY);
    assert_int_equal(count_files(f), 2);

    /* Aborted writes leave nothing. */
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "zzz", 3), STOR_OK);
    assert_int_equal(stor_writer_size(w), 3);
    stor_writer_abort(w);
    assert_int_equal(count_files(f), 2);
    assert_int_equal(stor_head(f->st, "b", "zzz", &m), STOR_ERR_NO_KEY);

    /* The bucket vanishing before commit fails the commit, leaving no file. */
    assert_int_equal(stor_bucket_create(f->st, "gone", "o"), STOR_OK);
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "gone"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "q", 1), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "gone")), STOR_OK);
    memset(&m, 0, sizeof m);
    assert_int_equal(stor_writer_commit(w, "k", &m), STOR_ERR_NO_BUCKET);
    assert_int_equal(count_files(f), 2);
}

/* Descriptors this process holds on deleted object files (readlink of
 * /proc/self/fd says "... (deleted)"). */
static int open_deleted_files(void)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0)
            continue;
        target[len] = '\0';
        n += strstr(target, "/.s3rdma/objects/") && strstr(target, "(deleted)");
    }
    return n;
}

/* Reads keep object files open for the next read (local_fdcache.c), but a
 * file the index dropped is never held: after an overwrite and a delete,
 * and the sync point that unlinks them, no descriptor of ours points at a
 * deleted file, and every read saw the bytes of its time. */
static void test_reads_hold_no_dropped_file(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    for (int round = 0; round < 3; round++) {
        char v1[32], v2[32];
        snprintf(v1, sizeof v1, "first %d", round);
        snprintf(v2, sizeof v2, "second %d", round);
        assert_int_equal(tu_put(f->st, "b", "k", v1, strlen(v1)), STOR_OK);
        for (int i = 0; i < 3; i++) {
            char *got = tu_get(f->st, "b", "k", NULL);
            assert_string_equal(got, v1);
            free(got);
        }
        assert_int_equal(tu_put(f->st, "b", "k", v2, strlen(v2)), STOR_OK);
        char *got = tu_get(f->st, "b", "k", NULL);
        assert_string_equal(got, v2);
        free(got);
        assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), "k"), STOR_OK);
        stor_reader_t *r;
        assert_int_equal(stor_reader_open(f->st, "b", "k", &r), STOR_ERR_NO_KEY);
        assert_int_equal(stor_sync(f->st), STOR_OK);
        assert_int_equal(open_deleted_files(), 0);
    }
}

static void test_long_key_objects(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    char k1[1025], k2[1025];
    memset(k1, 'k', 1024);
    k1[1024] = '\0';
    memcpy(k2, k1, sizeof k1);
    k2[1023] = 'j'; /* same 1023-byte prefix: same index prefix, other hash */
    assert_int_equal(tu_put(f->st, "b", k1, "one", 3), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", k2, "two", 3), STOR_OK);
    char *g1 = tu_get(f->st, "b", k1, NULL), *g2 = tu_get(f->st, "b", k2, NULL);
    assert_string_equal(g1, "one");
    assert_string_equal(g2, "two");
    free(g1);
    free(g2);
    k2[1023] = 'i';
    stor_meta_t m;
    assert_int_equal(stor_head(f->st, "b", k2, &m), STOR_ERR_NO_KEY);
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), k1), STOR_OK);
    assert_int_equal(stor_head(f->st, "b", k1, &m), STOR_ERR_NO_KEY);
}

static void test_meta_roundtrip(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    stor_kv_t um[2] = {{"color", "blue"}, {"empty", ""}};
    stor_meta_t m = {
        .content_type = "text/plain; charset=utf-8",
        .content_encoding = "gzip",
        .content_disposition = "attachment; filename=\"x.txt\"",
        .content_language = "en",
        .cache_control = "no-cache",
        .expires = "Wed, 21 Oct 2015 07:28:00 GMT",
        .checksum_crc32 = "NhCmhg==",
        .checksum_crc32c = "yZRlqg==",
        .checksum_sha256 = "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
        .checksum_sha1 = "qZk+NkcGgWq6PiVxeFDCbJzQ2J0=",
        .checksum_crc64nvme = "rosUhgp5mIg=",
        .user_meta = um,
        .n_user_meta = 2,
    };
    snprintf(m.etag, sizeof m.etag, "%s", "0123456789abcdef0123456789abcdef");
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "abcdefgh", 8), STOR_OK);
    assert_int_equal(stor_writer_write(w, "ij", 2), STOR_OK);
    assert_int_equal(stor_writer_commit(w, "m", &m), STOR_OK);
    assert_int_equal(m.size, 10); /* set by commit */
    assert_true(m.mtime_ms > 1600000000000LL);

    reopen(f);
    stor_meta_t h;
    assert_int_equal(stor_head(f->st, "b", "m", &h), STOR_OK);
    assert_int_equal(h.size, 10);
    assert_int_equal(h.mtime_ms, m.mtime_ms);
    assert_string_equal(h.etag, m.etag);
    assert_string_equal(h.content_type, m.content_type);
    assert_string_equal(h.content_encoding, "gzip");
    assert_string_equal(h.content_disposition, m.content_disposition);
    assert_string_equal(h.content_language, "en");
    assert_string_equal(h.cache_control, "no-cache");
    assert_string_equal(h.expires, m.expires);
    assert_string_equal(h.checksum_crc32, "NhCmhg==");
    assert_string_equal(h.checksum_crc32c, "yZRlqg==");
    assert_string_equal(h.checksum_sha256, m.checksum_sha256);
    assert_string_equal(h.checksum_sha1, m.checksum_sha1);
    assert_string_equal(h.checksum_crc64nvme, m.checksum_crc64nvme);
    assert_int_equal(h.n_user_meta, 2);
    assert_string_equal(h.user_meta[0].name, "color");
    assert_string_equal(h.user_meta[0].value, "blue");
    assert_string_equal(h.user_meta[1].name, "empty");
    assert_string_equal(h.user_meta[1].value, "");

    stor_meta_t c;
    assert_int_equal(stor_meta_copy(&c, &h), STOR_OK);
    stor_meta_free(&h);
    assert_null(h.content_type);
    assert_string_equal(c.user_meta[0].value, "blue");
    assert_string_equal(c.cache_control, "no-cache");
    assert_string_equal(c.checksum_crc64nvme, m.checksum_crc64nvme);
    stor_meta_free(&c);
    stor_meta_free(NULL);

    /* Absent fields stay NULL. */
    assert_int_equal(tu_put(f->st, "b", "plain", "x", 1), STOR_OK);
    assert_int_equal(stor_head(f->st, "b", "plain", &h), STOR_OK);
    assert_null(h.content_type);
    assert_null(h.checksum_sha256);
    assert_null(h.checksum_crc64nvme);
    assert_int_equal(h.n_user_meta, 0);
    stor_meta_free(&h);
}

/* stor_rec_decode_object_want: a listing's decode keeps size, ETag, mtime,
 * ACL, parts count, storage class, version and delete marker (and the owner
 * when asked), leaves the rest NULL, and refuses every truncation. */
static void test_record_want_listing(void **state)
{
    (void)state;
    stor_kv_t um[2] = {{"a", "b"}, {"c", "d"}};
    stor_meta_t m = {.size = 12,
                     .mtime_ms = 1700000000123,
                     .content_type = "t",
                     .checksum_crc32c = "AAAAAA==",
                     .user_meta = um,
                     .n_user_meta = 2,
                     .owner = "AKOWNER",
                     .acl = STOR_ACL_PUBLIC_READ,
                     .parts_count = 2,
                     .storage_class = "GLACIER",
                     .tags = "k=v",
                     .version = "0000000000000007"};
    strcpy(m.etag, "abc-2");
    stor_seg_t segs[2] = {{{1}, 5}, {{2}, 7}};
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(stor_rec_encode_object(&b, "key", 3, &m, segs, 2), 0);
    stor_meta_t full, lean, owned;
    assert_int_equal(stor_rec_decode_object_meta(b.data, b.len, &full), STOR_OK);
    assert_int_equal(stor_rec_decode_object_want(b.data, b.len, STOR_WANT_LISTING, &lean), STOR_OK);
    assert_int_equal(
        stor_rec_decode_object_want(b.data, b.len, STOR_WANT_LISTING | STOR_WANT_OWNER, &owned),
        STOR_OK);
    stor_meta_t *both[2] = {&lean, &owned};
    for (int i = 0; i < 2; i++) {
        stor_meta_t *x = both[i];
        assert_int_equal(x->size, full.size);
        assert_string_equal(x->etag, "abc-2");
        assert_int_equal(x->mtime_ms, full.mtime_ms);
        assert_int_equal(x->acl, STOR_ACL_PUBLIC_READ);
        assert_int_equal(x->parts_count, 2);
        assert_string_equal(x->storage_class, "GLACIER");
        assert_string_equal(x->version, "0000000000000007");
        assert_null(x->content_type);
        assert_null(x->checksum_crc32c);
        assert_null(x->user_meta);
        assert_int_equal(x->n_user_meta, 0);
        assert_null(x->tags);
        assert_null(x->part_sizes);
    }
    assert_null(lean.owner);
    assert_string_equal(owned.owner, "AKOWNER");
    assert_string_equal(full.owner, "AKOWNER");
    assert_string_equal(full.user_meta[1].value, "d");
    assert_int_equal(full.part_sizes[1], 7);
    stor_meta_free(&full);
    stor_meta_free(&lean);
    stor_meta_free(&owned);
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(stor_rec_decode_object_want(b.data, len, STOR_WANT_LISTING, &lean),
                         STOR_ERR_IO);
    buf_free(&b);
}

/* Truncated or random records must decode to STOR_ERR_IO, never crash. */
static void test_record_garbage(void **state)
{
    (void)state;
    stor_kv_t um[1] = {{"a", "b"}};
    stor_meta_t m = {.size = 7, .content_type = "t", .user_meta = um, .n_user_meta = 1};
    strcpy(m.etag, "e");
    stor_seg_t seg = {{1, 2, 3}, 7};
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(stor_rec_encode_object(&b, "key", 3, &m, &seg, 1), 0);
    stor_obj_rec_t rec;
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_OK);
    const char *rk;
    size_t rkl;
    assert_int_equal(stor_rec_object_key(b.data, b.len, &rk, &rkl), STOR_OK);
    assert_int_equal(rkl, 3);
    assert_memory_equal(rk, "key", 3);
    assert_int_equal(rec.meta.size, 7);
    assert_string_equal(rec.meta.user_meta[0].value, "b");
    assert_int_equal(rec.segs[0].id[2], 3);
    stor_obj_rec_free(&rec);
    stor_meta_t mo;
    assert_int_equal(stor_rec_decode_object_meta(b.data, b.len, &mo), STOR_OK);
    assert_int_equal(mo.size, 7);
    assert_string_equal(mo.content_type, "t");
    assert_string_equal(mo.user_meta[0].name, "a");
    stor_meta_free(&mo);
    for (size_t len = 0; len < b.len; len++) {
        assert_int_equal(stor_rec_decode_object(b.data, len, &rec), STOR_ERR_IO);
        assert_int_equal(stor_rec_decode_object_meta(b.data, len, &mo), STOR_ERR_IO);
    }
    /* Flip each byte to a few values: any result but a crash or leak is fine,
     * as long as the listing's metadata-only decoder agrees with the full one. */
    uint8_t *copy = malloc(b.len);
    for (size_t i = 0; i < b.len; i++)
        for (int x = 0; x < 4; x++) {
            memcpy(copy, b.data, b.len);
            copy[i] = (uint8_t)(x == 0 ? 0xFF : x == 1 ? 0 : copy[i] ^ (1u << x));
            stor_status_t full = stor_rec_decode_object(copy, b.len, &rec);
            if (full == STOR_OK)
                stor_obj_rec_free(&rec);
            assert_int_equal(stor_rec_decode_object_meta(copy, b.len, &mo), full);
            if (full == STOR_OK)
                stor_meta_free(&mo);
            /* The listing's decoder checks as much as the full one. */
            assert_int_equal(stor_rec_decode_object_want(copy, b.len, STOR_WANT_LISTING, &mo),
                             full);
            if (full == STOR_OK)
                stor_meta_free(&mo);
        }
    free(copy);
    uint8_t rnd[512];
    for (int i = 0; i < 200; i++) {
        hash_random_bytes(rnd, sizeof rnd);
        rnd[0] = STOR_REC_VERSION;
        rnd[1] = (uint8_t)(1 + i % 4);
        if (stor_rec_decode_object(rnd, sizeof rnd, &rec) == STOR_OK)
            stor_obj_rec_free(&rec);
        stor_upload_rec_t u;
        if (stor_rec_decode_upload(rnd, sizeof rnd, &u) == STOR_OK)
            stor_upload_rec_free(&u);
        stor_part_rec_t p;
        if (stor_rec_decode_part(rnd, sizeof rnd, &p) == STOR_OK)
            stor_part_free_fields(&p.part);
        stor_bucket_t bk;
        (void)stor_rec_decode_bucket(rnd, sizeof rnd, &bk);
    }
    /* Wrong version byte. */
    ((uint8_t *)b.data)[0] = 99;
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_ERR_IO);
    buf_free(&b);
}

/* Upload, part and bucket records: round trip, and every truncation refused. */
static void test_record_truncations(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    stor_meta_t m = {.content_type = "text/plain"};
    assert_int_equal(stor_rec_encode_upload(&b, "up/key", 6, 1234, &m), 0);
    stor_upload_rec_t u;
    assert_int_equal(stor_rec_decode_upload(b.data, b.len, &u), STOR_OK);
    assert_int_equal(u.key_len, 6);
    assert_memory_equal(u.key, "up/key", 6);
    assert_int_equal(u.initiated_ms, 1234);
    assert_string_equal(u.meta.content_type, "text/plain");
    stor_upload_rec_free(&u);
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(stor_rec_decode_upload(b.data, len, &u), STOR_ERR_IO);

    buf_reset(&b);
    stor_part_t part = {.number = 7,
                        .size = 5 << 20,
                        .mtime_ms = 99,
                        .checksum_crc32 = "AAAAAA==",
                        .checksum_crc64nvme = "rosUhgp5mIg="};
    strcpy(part.etag, "0123456789abcdef0123456789abcdef");
    uint8_t id[STOR_ID_LEN] = {9, 8, 7};
    assert_int_equal(stor_rec_encode_part(&b, &part, id), 0);
    stor_part_rec_t pr;
    assert_int_equal(stor_rec_decode_part(b.data, b.len, &pr), STOR_OK);
    assert_int_equal(pr.part.number, 7);
    assert_int_equal(pr.part.size, 5 << 20);
    assert_string_equal(pr.part.etag, part.etag);
    assert_string_equal(pr.part.checksum_crc32, "AAAAAA==");
    assert_null(pr.part.checksum_sha1);
    assert_string_equal(pr.part.checksum_crc64nvme, "rosUhgp5mIg=");
    assert_memory_equal(pr.id, id, STOR_ID_LEN);
    stor_part_free_fields(&pr.part);
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(stor_rec_decode_part(b.data, len, &pr), STOR_ERR_IO);
    /* A version 1 part record (no SHA-1 or CRC-64/NVME after the id) still
     * decodes, without them. */
    part.checksum_crc64nvme = NULL;
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_part(&b, &part, id), 0);
    ((uint8_t *)b.data)[0] = 1;
    assert_int_equal(stor_rec_decode_part(b.data, b.len - 8, &pr), STOR_OK);
    assert_string_equal(pr.part.checksum_crc32, "AAAAAA==");
    assert_null(pr.part.checksum_crc64nvme);
    assert_memory_equal(pr.id, id, STOR_ID_LEN);
    stor_part_free_fields(&pr.part);

    buf_reset(&b);
    assert_int_equal(
        stor_rec_encode_bucket(&b, "owner-ak", 42, 0x0123456789abcdefULL, STOR_ACL_PUBLIC_READ), 0);
    stor_bucket_t bk;
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_OK);
    assert_string_equal(bk.owner, "owner-ak");
    assert_int_equal(bk.created, 42);
    assert_true(bk.id == 0x0123456789abcdefULL);
    assert_int_equal(bk.acl, STOR_ACL_PUBLIC_READ);
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(stor_rec_decode_bucket(b.data, len, &bk), STOR_ERR_IO);
    assert_int_equal(bk.cfg_mask, 0);
    assert_true(bk.cfg_gen == 0);
    /* A version-3 record (before configurations: no generation, no count)
     * decodes with none. */
    ((uint8_t *)b.data)[0] = 3;
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len - 9, &bk), STOR_OK);
    assert_int_equal(bk.acl, STOR_ACL_PUBLIC_READ);
    assert_int_equal(bk.cfg_mask, 0);
    ((uint8_t *)b.data)[0] = STOR_REC_BUCKET_VERSION;
    /* An ACL byte out of range is malformed. */
    ((uint8_t *)b.data)[b.len - 10] = STOR_ACL_COUNT;
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_ERR_IO);
    /* A version-2 record (before ACLs) decodes as private. */
    ((uint8_t *)b.data)[0] = 2;
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len - 10, &bk), STOR_OK);
    assert_int_equal(bk.acl, STOR_ACL_PRIVATE);
    assert_true(bk.id == 0x0123456789abcdefULL);
    /* Id 0 is reserved for version-1 records: never written, refused later. */
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_bucket(&b, "owner-ak", 42, 0, STOR_ACL_PRIVATE), -1);
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_bucket(&b, "owner-ak", 42, 1, STOR_ACL_PRIVATE), 0);
    memset((uint8_t *)b.data + b.len - 18, 0, 8);
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_ERR_IO);
    /* A version-1 record (before bucket ids) still decodes, with id 0. */
    const uint8_t v1[] = {1, STOR_REC_BUCKET, 2, 0, 0, 0, 'a', 'k', 42, 0, 0, 0, 0, 0, 0, 0};
    bk.id = 7;
    assert_int_equal(stor_rec_decode_bucket(v1, sizeof v1, &bk), STOR_OK);
    assert_string_equal(bk.owner, "ak");
    assert_int_equal(bk.created, 42);
    assert_true(bk.id == 0);
    for (size_t len = 0; len < sizeof v1; len++)
        assert_int_equal(stor_rec_decode_bucket(v1, len, &bk), STOR_ERR_IO);
    uint8_t v4[sizeof v1];
    memcpy(v4, v1, sizeof v1);
    v4[0] = STOR_REC_BUCKET_SHARDED_VERSION + 1; /* a version from the future */
    assert_int_equal(stor_rec_decode_bucket(v4, sizeof v4, &bk), STOR_ERR_IO);
    buf_free(&b);
}

/* Bucket records with configuration documents: set, replaced, removed by
 * stor_rec_bucket_apply (each change bumps the generation), decoded without
 * reading out of bounds; a document twice or of an unknown kind is
 * malformed. */
static void test_bucket_record_configs(void **state)
{
    (void)state;
    buf_t b, c;
    buf_init(&b, 1 << 20);
    assert_int_equal(stor_rec_encode_bucket(&b, "ak", 7, 99, STOR_ACL_PRIVATE), 0);
    stor_bucket_change_t set = {.cfg_kind = STOR_BCFG_POLICY, .cfg = "{\"p\":1}", .cfg_len = 7};
    assert_int_equal(stor_rec_bucket_apply(b.data, b.len, &set, &c), STOR_OK);
    buf_free(&b);
    stor_bucket_change_t own = {.cfg_kind = STOR_BCFG_OWNERSHIP, .cfg = "x", .cfg_len = 1};
    assert_int_equal(stor_rec_bucket_apply(c.data, c.len, &own, &b), STOR_OK);
    buf_free(&c);
    stor_bucket_change_t acl = {.set_acl = true, .acl = STOR_ACL_PUBLIC_READ, .cfg_kind = -1};
    assert_int_equal(stor_rec_bucket_apply(b.data, b.len, &acl, &c), STOR_OK);
    buf_free(&b);
    stor_bucket_rec_t r;
    assert_int_equal(stor_rec_decode_bucket_rec(c.data, c.len, &r), STOR_OK);
    assert_true(r.b.id == 99);
    assert_int_equal(r.b.acl, STOR_ACL_PUBLIC_READ);
    assert_true(r.b.cfg_gen == 2);
    assert_int_equal(r.b.cfg_mask, (1u << STOR_BCFG_POLICY) | (1u << STOR_BCFG_OWNERSHIP));
    assert_int_equal(r.cfg_len[STOR_BCFG_POLICY], 7);
    assert_memory_equal(r.cfg[STOR_BCFG_POLICY], "{\"p\":1}", 7);
    assert_null(r.cfg[STOR_BCFG_PUBLIC_ACCESS_BLOCK]);
    for (size_t len = 0; len < c.len; len++)
        assert_int_equal(stor_rec_decode_bucket_rec(c.data, len, &r), STOR_ERR_IO);
    /* The ownership document (last, 1 byte) given the policy's kind: twice. */
    ((uint8_t *)c.data)[c.len - 6] = STOR_BCFG_POLICY;
    assert_int_equal(stor_rec_decode_bucket_rec(c.data, c.len, &r), STOR_ERR_IO);
    ((uint8_t *)c.data)[c.len - 6] = STOR_BCFG_COUNT;
    assert_int_equal(stor_rec_decode_bucket_rec(c.data, c.len, &r), STOR_ERR_IO);
    ((uint8_t *)c.data)[c.len - 6] = STOR_BCFG_OWNERSHIP;
    stor_bucket_change_t del = {.cfg_kind = STOR_BCFG_POLICY};
    assert_int_equal(stor_rec_bucket_apply(c.data, c.len, &del, &b), STOR_OK);
    stor_bucket_t bk;
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_OK);
    assert_int_equal(bk.cfg_mask, 1u << STOR_BCFG_OWNERSHIP);
    assert_true(bk.cfg_gen == 3);
    buf_free(&b);
    stor_bucket_change_t big = {
        .cfg_kind = STOR_BCFG_POLICY, .cfg = c.data, .cfg_len = STOR_BCFG_MAX_BYTES + 1};
    assert_int_equal(stor_rec_bucket_apply(c.data, c.len, &big, &b), STOR_ERR_TOO_LARGE);
    buf_free(&b);
    buf_free(&c);
}

/* RADOS buckets with a sharded index: the shard count is a version-5 record
 * (version 4 plus the count), kept by every change of the record; a bucket
 * of one shard is still written as version 4 (binaries from before shards
 * read it); a count out of 2..STOR_INDEX_SHARDS_MAX or a truncated record is
 * malformed. */
static void test_bucket_record_shards(void **state)
{
    (void)state;
    buf_t b, c;
    buf_init(&b, 4096);
    stor_bucket_rec_t r;
    memset(&r, 0, sizeof r);
    snprintf(r.b.owner, sizeof r.b.owner, "ak");
    r.b.id = 99;
    r.b.created = 7;
    r.b.index_shards = 1;
    assert_int_equal(stor_rec_encode_bucket_rec(&b, &r), 0);
    assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_BUCKET_VERSION);
    stor_bucket_t bk;
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_OK);
    assert_int_equal(bk.index_shards, 1);
    size_t v4_len = b.len;

    buf_reset(&b);
    r.b.index_shards = 16;
    r.cfg[STOR_BCFG_POLICY] = "{}";
    r.cfg_len[STOR_BCFG_POLICY] = 2;
    assert_int_equal(stor_rec_encode_bucket_rec(&b, &r), 0);
    assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_BUCKET_SHARDED_VERSION);
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_OK);
    assert_int_equal(bk.index_shards, 16);
    assert_true(bk.id == 99);
    assert_int_equal(bk.cfg_mask, 1u << STOR_BCFG_POLICY);
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(stor_rec_decode_bucket(b.data, len, &bk), STOR_ERR_IO);
    assert_true(b.len == v4_len + 1 + 4 + 2 + 4); /* the document (kind, len, bytes), the count */
    /* Changing the ACL or a document keeps the count. */
    stor_bucket_change_t acl = {.set_acl = true, .acl = STOR_ACL_PUBLIC_READ, .cfg_kind = -1};
    assert_int_equal(stor_rec_bucket_apply(b.data, b.len, &acl, &c), STOR_OK);
    assert_int_equal(stor_rec_decode_bucket(c.data, c.len, &bk), STOR_OK);
    assert_int_equal(bk.index_shards, 16);
    assert_int_equal(bk.acl, STOR_ACL_PUBLIC_READ);
    buf_free(&c);
    /* Counts out of range are malformed. */
    const uint32_t bad[] = {0, 1, STOR_INDEX_SHARDS_MAX + 1, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *n = (uint8_t *)b.data + b.len - 4;
        n[0] = (uint8_t)bad[i];
        n[1] = (uint8_t)(bad[i] >> 8);
        n[2] = (uint8_t)(bad[i] >> 16);
        n[3] = (uint8_t)(bad[i] >> 24);
        assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_ERR_IO);
    }
    /* A resharded bucket (generation 3, now one shard) and one moving to
     * 64 shards: version 6, read back whole; a change keeps both. */
    buf_reset(&b);
    r.b.index_shards = 1;
    r.b.index_gen = 3;
    assert_int_equal(stor_rec_encode_bucket_rec(&b, &r), 0);
    assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_BUCKET_RESHARD_VERSION);
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_OK);
    assert_int_equal(bk.index_shards, 1);
    assert_int_equal(bk.index_gen, 3);
    assert_int_equal(bk.reshard_to, 0);
    buf_reset(&b);
    r.b.index_shards = 16;
    r.b.index_gen = 0;
    r.b.reshard_to = 64;
    assert_int_equal(stor_rec_encode_bucket_rec(&b, &r), 0);
    assert_int_equal(stor_rec_bucket_apply(b.data, b.len, &acl, &c), STOR_OK);
    assert_int_equal(stor_rec_decode_bucket(c.data, c.len, &bk), STOR_OK);
    assert_int_equal(bk.index_shards, 16);
    assert_int_equal(bk.index_gen, 0);
    assert_int_equal(bk.reshard_to, 64);
    buf_free(&c);
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(stor_rec_decode_bucket(b.data, len, &bk), STOR_ERR_IO);
    /* Version 6 with neither a generation nor a reshard is malformed, as is
     * a target past the largest count. */
    memset((uint8_t *)b.data + b.len - 4, 0, 4);
    assert_int_equal(stor_rec_decode_bucket(b.data, b.len, &bk), STOR_ERR_IO);
    r.b.reshard_to = STOR_INDEX_SHARDS_MAX + 1;
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_bucket_rec(&b, &r), -1);
    r.b.reshard_to = 0;
    /* Nor is a count past the largest written. */
    r.b.index_shards = STOR_INDEX_SHARDS_MAX + 1;
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_bucket_rec(&b, &r), -1);
    buf_free(&b);
}

/* A document set through the store reads back with the record's generation,
 * survives an ACL change, is removed, and a re-created bucket of the same
 * name has none (and the old handle is refused). */
static void test_bucket_config_store(void **state)
{
    fx_t *f = *state;
    stor_bucket_t b, b2;
    buf_t out;
    uint64_t gen = 0;
    assert_int_equal(stor_bucket_create(f->st, "cfg", "ak"), STOR_OK);
    assert_int_equal(stor_bucket_get(f->st, "cfg", &b), STOR_OK);
    assert_int_equal(stor_bucket_config_set(f->st, &b, STOR_BCFG_POLICY, "{}", 2), STOR_OK);
    /* A grant list goes with the ACL, in one change that is a generation;
     * a canned ACL alone is not, and removes the list. */
    assert_int_equal(stor_bucket_config_set(f->st, &b, STOR_BCFG_ACL_GRANTS, "G1\n", 3),
                     STOR_ERR_TOO_LARGE);
    assert_int_equal(stor_bucket_set_acl(f->st, &b, STOR_ACL_PRIVATE, "G1\nREAD AllUsers\n"),
                     STOR_OK);
    assert_int_equal(stor_bucket_get(f->st, "cfg", &b), STOR_OK);
    assert_int_equal(b.cfg_mask, (1u << STOR_BCFG_POLICY) | (1u << STOR_BCFG_ACL_GRANTS));
    assert_true(b.cfg_gen == 2);
    assert_int_equal(stor_bucket_config_get(f->st, &b, STOR_BCFG_ACL_GRANTS, &out, &gen), STOR_OK);
    assert_int_equal(out.len, 17);
    assert_memory_equal(out.data, "G1\nREAD AllUsers\n", 17);
    buf_free(&out);
    assert_int_equal(stor_bucket_set_acl(f->st, &b, STOR_ACL_PUBLIC_READ, NULL), STOR_OK);
    assert_int_equal(stor_bucket_get(f->st, "cfg", &b), STOR_OK);
    assert_int_equal(b.cfg_mask, 1u << STOR_BCFG_POLICY);
    assert_int_equal(b.acl, STOR_ACL_PUBLIC_READ);
    assert_true(b.cfg_gen == 3);
    assert_int_equal(stor_bucket_set_acl(f->st, &b, STOR_ACL_PUBLIC_READ, NULL), STOR_OK);
    assert_int_equal(stor_bucket_get(f->st, "cfg", &b), STOR_OK);
    assert_int_equal(stor_bucket_config_get(f->st, &b, STOR_BCFG_POLICY, &out, &gen), STOR_OK);
    assert_int_equal(out.len, 2);
    assert_true(gen == b.cfg_gen && gen == 3);
    buf_free(&out);
    assert_int_equal(stor_bucket_config_set(f->st, &b, STOR_BCFG_POLICY, NULL, 0), STOR_OK);
    assert_int_equal(stor_bucket_config_get(f->st, &b, STOR_BCFG_POLICY, &out, &gen), STOR_OK);
    assert_int_equal(out.len, 0);
    assert_true(gen == 4);
    buf_free(&out);
    assert_int_equal(stor_bucket_config_set(f->st, &b, STOR_BCFG_POLICY, "{}", 2), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, &b), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "cfg", "other"), STOR_OK);
    assert_int_equal(stor_bucket_get(f->st, "cfg", &b2), STOR_OK);
    assert_int_equal(b2.cfg_mask, 0);
    assert_int_equal(stor_bucket_config_get(f->st, &b, STOR_BCFG_POLICY, &out, &gen),
                     STOR_ERR_NO_BUCKET);
    buf_free(&out);
    assert_int_equal(stor_bucket_config_set(f->st, &b, STOR_BCFG_POLICY, "{}", 2),
                     STOR_ERR_NO_BUCKET);
}

/* ---- Bucket identity ---------------------------------------------------- */

/* The race: user A's request was authorized for A's bucket b (the
 * stor_bucket_t it saw); before its write commits, b is deleted and user B
 * creates a new b. A's write must fail NoSuchBucket, not land in B's bucket. */
static void test_write_into_recreated_bucket(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "AKA"), STOR_OK);
    stor_bucket_t seen; /* what A's request was authorized against */
    assert_int_equal(stor_bucket_get(f->st, "b", &seen), STOR_OK);
    assert_string_equal(seen.owner, "AKA");
    assert_true(seen.id != 0);
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, &seen, &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "from A", 6), STOR_OK);

    assert_int_equal(stor_bucket_delete(f->st, &seen), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "AKB"), STOR_OK);
    stor_bucket_t now;
    assert_int_equal(stor_bucket_get(f->st, "b", &now), STOR_OK);
    assert_string_equal(now.owner, "AKB");
    assert_true(now.id != 0 && now.id != seen.id);

    stor_meta_t m;
    memset(&m, 0, sizeof m);
    assert_int_equal(stor_writer_commit(w, "k", &m), STOR_ERR_NO_BUCKET);
    /* Nor can A start anything new there with what it was authorized for. */
    assert_int_equal(stor_writer_open(f->st, &seen, &w), STOR_ERR_NO_BUCKET);
    /* B's bucket is empty: no key, no listing entry, no file left behind. */
    assert_int_equal(stor_head(f->st, "b", "k", &m), STOR_ERR_NO_KEY);
    stor_iter_t *it;
    const char *k;
    size_t klen;
    assert_int_equal(stor_iter_open(f->st, "b", "", NULL, &it), STOR_OK);
    assert_int_equal(stor_iter_next(it, &k, &klen, NULL), 0);
    stor_iter_close(it);
    assert_int_equal(count_files(f), 0);

    /* A's stale delete (a DeleteObjects body arriving late) must not remove
     * B's object, nor A's stale DeleteBucket B's bucket. */
    assert_int_equal(tu_put(f->st, "b", "k", "B's", 3), STOR_OK);
    assert_int_equal(stor_delete(f->st, &seen, "k"), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_bucket_delete(f->st, &seen), STOR_ERR_NO_BUCKET);
    char *got = tu_get(f->st, "b", "k", NULL);
    assert_string_equal(got, "B's");
    free(got);
    /* The bucket's own identity works, and survives a reopen. */
    reopen(f);
    stor_bucket_t again;
    assert_int_equal(stor_bucket_get(f->st, "b", &again), STOR_OK);
    assert_true(again.id == now.id);
    assert_int_equal(stor_delete(f->st, &again, "k"), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, &again), STOR_OK);
}

/* The multipart side of the race: an upload must not be created in, gain
 * parts in, or complete into a bucket other than the one authorized. */
static void test_mpu_into_recreated_bucket(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "AKA"), STOR_OK);
    stor_bucket_t seen;
    assert_int_equal(stor_bucket_get(f->st, "b", &seen), STOR_OK);

    /* An upload belongs to the bucket it was created in... */
    char id[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, &seen, "k", NULL, id), STOR_OK);
    char e1[33];
    tu_md5_hex("part", 4, e1);
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, &seen, &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "part", 4), STOR_OK);
    stor_part_t part = {.number = 1};
    strcpy(part.etag, e1);
    assert_int_equal(stor_part_commit(w, "k", id, &part), STOR_OK);
    /* ...and completing it needs that bucket: another identity is refused
     * and changes nothing. */
    stor_bucket_t other = seen;
    other.id ^= 1;
    stor_complete_part_t cp[] = {{1, e1, {0}}};
    stor_meta_t out;
    assert_int_equal(stor_mpu_complete(f->st, &other, "k", id, cp, 1, NULL, &out),
                     STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_mpu_abort(f->st, &other, "k", id), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_mpu_check(f->st, "b", "k", id), STOR_OK);
    stor_meta_t m;
    assert_int_equal(stor_head(f->st, "b", "k", &m), STOR_ERR_NO_KEY);
    assert_int_equal(stor_mpu_abort(f->st, &seen, "k", id), STOR_OK);

    /* b goes, B creates b: A's CreateMultipartUpload, authorized for the old
     * b, must not create an upload in B's bucket. */
    assert_int_equal(stor_bucket_delete(f->st, &seen), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "AKB"), STOR_OK);
    assert_int_equal(stor_mpu_create(f->st, &seen, "k", NULL, id), STOR_ERR_NO_BUCKET);
    stor_upload_t *ups;
    size_t n;
    int more;
    assert_int_equal(stor_mpu_list(f->st, "b", "", NULL, NULL, 10, &ups, &n, &more), STOR_OK);
    assert_int_equal(n, 0);
    stor_uploads_free(ups, n);

    /* Nor add a part to, complete or abort an upload of B's (even knowing its id). */
    char bid[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "k", NULL, bid), STOR_OK);
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "part", 4), STOR_OK);
    assert_int_equal(stor_part_commit(w, "k", bid, &part), STOR_OK);
    assert_int_equal(stor_mpu_complete(f->st, &seen, "k", bid, cp, 1, NULL, &out),
                     STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_mpu_abort(f->st, &seen, "k", bid), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_mpu_check(f->st, "b", "k", bid), STOR_OK);
    assert_int_equal(stor_head(f->st, "b", "k", &m), STOR_ERR_NO_KEY);
    assert_int_equal(count_files(f), 1);
    /* A part writer opened for the old b is refused at open... */
    assert_int_equal(stor_writer_open(f->st, &seen, &w), STOR_ERR_NO_BUCKET);

    /* ...and one opened before the bucket went fails its commit. */
    assert_int_equal(stor_mpu_abort(f->st, TU_B(f->st, "b"), "k", bid), STOR_OK);
    assert_int_equal(stor_bucket_get(f->st, "b", &seen), STOR_OK);
    assert_int_equal(stor_writer_open(f->st, &seen, &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "late", 4), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, &seen), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "AKA"), STOR_OK);
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "k", NULL, bid), STOR_OK);
    stor_part_t late = {.number = 2};
    tu_md5_hex("late", 4, late.etag);
    assert_int_equal(stor_part_commit(w, "k", bid, &late), STOR_ERR_NO_BUCKET);
    stor_part_t *parts;
    assert_int_equal(stor_mpu_list_parts(f->st, "b", "k", bid, 0, &parts, &n), STOR_OK);
    assert_int_equal(n, 0);
    stor_parts_free(parts, n);
    assert_int_equal(count_files(f), 0);
}

/* ---- Readers ------------------------------------------------------------ */

static void test_reader_snapshot(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "old-bytes", 9), STOR_OK);
    stor_reader_t *r;
    assert_int_equal(stor_reader_open(f->st, "b", "k", &r), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "NEW", 3), STOR_OK);
    char buf[32] = {0};
    assert_int_equal(stor_reader_pread(r, buf, sizeof buf, 0), 9);
    assert_string_equal(buf, "old-bytes");
    assert_int_equal(stor_reader_meta(r)->size, 9);
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), "k"), STOR_OK);
    memset(buf, 0, sizeof buf);
    assert_int_equal(stor_reader_pread(r, buf, 3, 4), 3);
    assert_string_equal(buf, "byt");
    assert_int_equal(stor_reader_pread(r, buf, 3, 9), 0);
    assert_int_equal(stor_reader_pread(r, buf, 3, 100), 0);
    int fd;
    uint64_t fo;
    assert_int_equal(stor_reader_span_fd(r, 2, 5, &fd, &fo), 1);
    assert_int_equal(fo, 2);
    assert_int_equal(pread(fd, buf, 5, (off_t)fo), 5);
    assert_memory_equal(buf, "d-byt", 5);
    assert_int_equal(stor_reader_span_fd(r, 2, 8, &fd, &fo), 0); /* past the end */
    stor_reader_close(r);
    assert_int_equal(count_files(f), 0);
    stor_reader_close(NULL);
}

/* ---- Crash cleanup ------------------------------------------------------ */

static void test_orphan_cleanup(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "keep", "data", 4), STOR_OK);
    char id[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "mp", NULL, id), STOR_OK);
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "part", 4), STOR_OK);
    stor_part_t part = {.number = 1};
    strcpy(part.etag, "0123456789abcdef0123456789abcdef");
    assert_int_equal(stor_part_commit(w, "mp", id, &part), STOR_OK);
    assert_int_equal(count_files(f), 2);

    /* A process that dies mid-write (kill -9 style) leaves a partial file;
     * one that commits and dies keeps its object. */
    stor_close(f->st);
    f->st = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        stor_t *st;
        if (files_open(f->dir, f->mode, &st) != STOR_OK)
            _exit(1);
        if (tu_put(st, "b", "acked", "survives", 8) != STOR_OK)
            _exit(2);
        stor_writer_t *cw;
        if (stor_writer_open(st, TU_B(st, "b"), &cw) != STOR_OK)
            _exit(3);
        stor_writer_write(cw, "partial", 7);
        raise(SIGKILL);
        _exit(4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(count_files(f), 4);
    /* Strays: a file named like an object, junk, in an existing and in a new shard. */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/.s3rdma/objects/00", f->dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/.s3rdma/objects/00/11", f->dir);
    mkdir(p, 0755);
    const char *strays[] = {"00/11/00112233445566778899aabbccddeeff", "00/11/junk.tmp"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/.s3rdma/objects/%s", f->dir, strays[i]);
        int fd = open(p, O_CREAT | O_WRONLY, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "x", 1), 1);
        close(fd);
    }
    assert_int_equal(count_files(f), 6);

    assert_int_equal(files_open(f->dir, f->mode, &f->st), STOR_OK);
    assert_int_equal(count_files(f), 3); /* keep, the part, acked */
    char *got = tu_get(f->st, "b", "keep", NULL);
    assert_string_equal(got, "data");
    free(got);
    got = tu_get(f->st, "b", "acked", NULL);
    assert_non_null(got);
    assert_string_equal(got, "survives");
    free(got);
    stor_part_t *parts;
    size_t n;
    assert_int_equal(stor_mpu_list_parts(f->st, "b", "mp", id, 0, &parts, &n), STOR_OK);
    assert_int_equal(n, 1);
    assert_int_equal(parts[0].size, 4);
    stor_parts_free(parts, n);

    /* A second open of the same directory is refused while it is open. */
    stor_t *again = NULL;
    assert_int_equal(files_open(f->dir, f->mode, &again), STOR_ERR_IO);
}

/* ---- Concurrency -------------------------------------------------------- */

#define N_THREADS 4
#define N_ROUNDS  25

typedef struct wargs {
    stor_t *st;
    int id;
    int failures;
} wargs_t;

static void *writer_thread(void *arg)
{
    wargs_t *a = arg;
    char body[64];
    for (int i = 0; i < N_ROUNDS; i++) {
        int n = snprintf(body, sizeof body, "thread-%d-round-%d", a->id, i);
        if (tu_put(a->st, "b", "same", body, (size_t)n) != STOR_OK)
            a->failures++;
        /* Readers racing the overwrites see one complete version. */
        size_t len;
        char *got = tu_get(a->st, "b", "same", &len);
        if (!got || strncmp(got, "thread-", 7) != 0 || strstr(got, "-round-") == NULL)
            a->failures++;
        free(got);
        char own[32];
        snprintf(own, sizeof own, "own-%d", a->id);
        if (tu_put(a->st, "b", own, body, (size_t)n) != STOR_OK)
            a->failures++;
    }
    return NULL;
}

static void test_concurrent_writers(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    pthread_t t[N_THREADS];
    wargs_t a[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        a[i] = (wargs_t){f->st, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, writer_thread, &a[i]), 0);
    }
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    /* One winner for "same" plus one object per thread, and no leaked files. */
    assert_int_equal(count_files(f), 1 + N_THREADS);
    stor_meta_t m;
    assert_int_equal(stor_head(f->st, "b", "same", &m), STOR_OK);
    size_t len = 0;
    char *got = tu_get(f->st, "b", "same", &len);
    char etag[33];
    tu_md5_hex(got, len, etag);
    assert_string_equal(m.etag, etag); /* the index and the bytes agree */
    assert_non_null(strstr(got, "-round-24"));
    free(got);
    stor_meta_free(&m);
    for (int i = 0; i < N_THREADS; i++) {
        char own[32], want[64];
        snprintf(own, sizeof own, "own-%d", i);
        snprintf(want, sizeof want, "thread-%d-round-%d", i, N_ROUNDS - 1);
        got = tu_get(f->st, "b", own, NULL);
        assert_string_equal(got, want);
        free(got);
    }
}

/* ---- Multipart ---------------------------------------------------------- */

static stor_status_t put_part(stor_t *st, const char *key, const char *id, uint32_t num,
                              const char *data, size_t len, char etag_out[33])
{
    stor_writer_t *w;
    stor_status_t s = stor_writer_open(st, TU_B(st, "b"), &w);
    if (s != STOR_OK)
        return s;
    stor_writer_write(w, data, len);
    stor_part_t p = {.number = num, .checksum_crc32 = "AAAAAA=="};
    tu_md5_hex(data, len, p.etag);
    if (etag_out)
        strcpy(etag_out, p.etag);
    return stor_part_commit(w, key, id, &p);
}

static void test_multipart(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    const size_t big = S3R_MIN_PART_BYTES;
    char *p1 = malloc(big), *p2 = malloc(big);
    memset(p1, 'a', big);
    memset(p2, 'b', big);
    p1[0] = '1';
    p2[big - 1] = '2';

    stor_kv_t um[1] = {{"origin", "mpu"}};
    stor_meta_t cm = {.content_type = "application/x-test", .user_meta = um, .n_user_meta = 1};
    char id[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "nob"), "obj", &cm, id),
                     STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "obj", &cm, id), STOR_OK);
    assert_int_equal(strlen(id), STOR_UPLOAD_ID_LEN);
    assert_int_equal(stor_mpu_check(f->st, "b", "obj", id), STOR_OK);
    assert_int_equal(stor_mpu_check(f->st, "b", "other", id), STOR_ERR_NO_UPLOAD);
    assert_int_equal(stor_mpu_check(f->st, "b", "obj", "nonsense"), STOR_ERR_NO_UPLOAD);

    char e1[33], e2[33], e3[33], e4[33];
    assert_int_equal(put_part(f->st, "obj", id, 2, "stale", 5, NULL), STOR_OK);
    assert_int_equal(put_part(f->st, "obj", id, 2, p2, big, e2), STOR_OK); /* replaces */
    assert_int_equal(put_part(f->st, "obj", id, 1, p1, big, e1), STOR_OK);
    assert_int_equal(put_part(f->st, "obj", id, 3, "tail", 4, e3), STOR_OK);
    assert_int_equal(put_part(f->st, "obj", id, 4, "unused", 6, e4), STOR_OK);
    assert_int_equal(put_part(f->st, "wrongkey", id, 5, "x", 1, NULL), STOR_ERR_NO_UPLOAD);
    assert_int_equal(count_files(f), 4);

    stor_part_t *parts;
    size_t n;
    assert_int_equal(stor_mpu_list_parts(f->st, "b", "obj", id, 0, &parts, &n), STOR_OK);
    assert_int_equal(n, 4);
    assert_int_equal(parts[0].number, 1);
    assert_int_equal(parts[1].number, 2);
    assert_int_equal(parts[1].size, big);
    assert_string_equal(parts[1].etag, e2);
    assert_string_equal(parts[2].checksum_crc32, "AAAAAA==");
    assert_null(parts[2].checksum_sha256);
    assert_true(parts[3].mtime_ms > 0);
    stor_parts_free(parts, n);
    assert_int_equal(stor_mpu_list_parts(f->st, "b", "obj", id, 2, &parts, &n), STOR_OK);
    assert_int_equal(n, 2);
    assert_int_equal(parts[0].number, 3);
    stor_parts_free(parts, n);

    stor_upload_t *ups;
    int more;
    assert_int_equal(stor_mpu_list(f->st, "b", "", NULL, NULL, 100, &ups, &n, &more), STOR_OK);
    assert_int_equal(n, 1);
    assert_false(more);
    assert_string_equal(ups[0].key, "obj");
    assert_string_equal(ups[0].upload_id, id);
    assert_true(ups[0].initiated_ms > 0);
    stor_uploads_free(ups, n);

    stor_meta_t out;
    /* Each failure leaves the upload intact. */
    stor_complete_part_t bad_order[] = {{2, e2, {0}}, {1, e1, {0}}};
    assert_int_equal(
        stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj", id, bad_order, 2, NULL, &out),
        STOR_ERR_INVALID_PART_ORDER);
    stor_complete_part_t dup[] = {{1, e1, {0}}, {1, e1, {0}}};
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj", id, dup, 2, NULL, &out),
                     STOR_ERR_INVALID_PART_ORDER);
    stor_complete_part_t missing[] = {{1, e1, {0}}, {7, e2, {0}}};
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj", id, missing, 2, NULL, &out),
                     STOR_ERR_INVALID_PART);
    stor_complete_part_t bad_etag[] = {{1, e1, {0}}, {2, e1, {0}}};
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj", id, bad_etag, 2, NULL, &out),
                     STOR_ERR_INVALID_PART);
    stor_complete_part_t small[] = {{3, e3, {0}}, {4, e4, {0}}};
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj", id, small, 2, NULL, &out),
                     STOR_ERR_PART_TOO_SMALL);
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj",
                                       "0123456789abcdef0123456789abcdef", small, 2, NULL, &out),
                     STOR_ERR_NO_UPLOAD);
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj", id, small, 0, NULL, &out),
                     STOR_ERR_INVALID_PART);

    /* An old object under the key is replaced by the completed one. */
    assert_int_equal(tu_put(f->st, "b", "obj", "previous", 8), STOR_OK);
    char quoted[40];
    snprintf(quoted, sizeof quoted, "\"%s\"", e2);
    stor_complete_part_t good[] = {{1, e1, {0}}, {2, quoted, {0}}, {3, e3, {0}}};
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "obj", id, good, 3, NULL, &out),
                     STOR_OK);

    /* ETag: md5 of the concatenated binary part md5s, "-3". */
    uint8_t cat[3 * MD5_LEN];
    hash_hex_decode(e1, 32, cat, MD5_LEN);
    hash_hex_decode(e2, 32, cat + MD5_LEN, MD5_LEN);
    hash_hex_decode(e3, 32, cat + 2 * MD5_LEN, MD5_LEN);
    char want[40];
    tu_md5_hex(cat, sizeof cat, want);
    strcat(want, "-3");
    assert_string_equal(out.etag, want);
    assert_int_equal(out.size, 2 * big + 4);
    assert_int_equal(out.parts_count, 3);
    assert_int_equal(out.part_sizes[0], big);
    assert_int_equal(out.part_sizes[2], 4);
    assert_string_equal(out.content_type, "application/x-test");
    stor_meta_free(&out);

    /* Unlisted part 4, the old object and the upload are gone. */
    assert_int_equal(count_files(f), 3);
    assert_int_equal(stor_mpu_check(f->st, "b", "obj", id), STOR_ERR_NO_UPLOAD);
    assert_int_equal(stor_mpu_abort(f->st, TU_B(f->st, "b"), "obj", id), STOR_ERR_NO_UPLOAD);

    reopen(f);
    stor_meta_t h;
    assert_int_equal(stor_head(f->st, "b", "obj", &h), STOR_OK);
    assert_string_equal(h.etag, want);
    assert_int_equal(h.parts_count, 3);
    assert_int_equal(h.part_sizes[1], big);
    assert_string_equal(h.user_meta[0].value, "mpu");
    stor_meta_free(&h);

    /* Reads across segment boundaries. */
    stor_reader_t *r;
    assert_int_equal(stor_reader_open(f->st, "b", "obj", &r), STOR_OK);
    char buf[16];
    assert_int_equal(stor_reader_pread(r, buf, 4, big - 2), 4);
    assert_memory_equal(buf, "aabb", 4);
    assert_int_equal(stor_reader_pread(r, buf, 16, 2 * big - 2), 6);
    assert_memory_equal(buf, "b2tail", 6);
    assert_int_equal(stor_reader_pread(r, buf, 1, 0), 1);
    assert_int_equal(buf[0], '1');
    int fd;
    uint64_t fo;
    assert_int_equal(stor_reader_span_fd(r, big + 10, 100, &fd, &fo), 1);
    assert_int_equal(fo, 10);
    assert_int_equal(stor_reader_span_fd(r, 2 * big, 4, &fd, &fo), 1);
    assert_int_equal(fo, 0);
    assert_int_equal(stor_reader_span_fd(r, big - 1, 2, &fd, &fo), 0);
    stor_reader_close(r);
    size_t len;
    char *all = tu_get(f->st, "b", "obj", &len);
    assert_int_equal(len, 2 * big + 4);
    assert_memory_equal(all, p1, big);
    assert_memory_equal(all + big, p2, big);
    free(all);

    /* Abort drops the parts. */
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "ab", NULL, id), STOR_OK);
    assert_int_equal(put_part(f->st, "ab", id, 1, "x", 1, NULL), STOR_OK);
    assert_int_equal(put_part(f->st, "ab", id, 2, "y", 1, NULL), STOR_OK);
    assert_int_equal(count_files(f), 5);
    assert_int_equal(stor_mpu_abort(f->st, TU_B(f->st, "b"), "wrong", id), STOR_ERR_NO_UPLOAD);
    assert_int_equal(stor_mpu_abort(f->st, TU_B(f->st, "b"), "ab", id), STOR_OK);
    assert_int_equal(count_files(f), 3);
    assert_int_equal(put_part(f->st, "ab", id, 3, "z", 1, NULL), STOR_ERR_NO_UPLOAD);
    assert_int_equal(count_files(f), 3);

    /* Deleting a multipart object removes every segment. */
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "b"), "obj"), STOR_OK);
    assert_int_equal(count_files(f), 0);
    free(p1);
    free(p2);
}

/* etag: fast parts (s3/body.c) have opaque "<32 hex>-1" ETags: stored and
 * listed as given, accepted by Complete quoted or not, beside MD5 parts;
 * the object's ETag is the MD5 of the 16 bytes each part's ETag spells,
 * "-N", as with MD5 parts. */
static void test_multipart_fast_etags(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    const size_t big = S3R_MIN_PART_BYTES;
    char *p1 = malloc(big);
    memset(p1, 'f', big);
    char id[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "fast", NULL, id), STOR_OK);
    const char *fast1 = "00112233445566778899aabbccddeeff-1";
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, p1, big), STOR_OK);
    stor_part_t p = {.number = 1, .checksum_crc32c = "yZRlqg=="};
    strcpy(p.etag, fast1);
    assert_int_equal(stor_part_commit(w, "fast", id, &p), STOR_OK);
    char e2[33];
    assert_int_equal(put_part(f->st, "fast", id, 2, "md5 tail", 8, e2), STOR_OK);

    reopen(f);
    stor_part_t *parts;
    size_t n;
    assert_int_equal(stor_mpu_list_parts(f->st, "b", "fast", id, 0, &parts, &n), STOR_OK);
    assert_int_equal(n, 2);
    assert_string_equal(parts[0].etag, fast1);
    assert_string_equal(parts[0].checksum_crc32c, "yZRlqg==");
    stor_parts_free(parts, n);

    stor_meta_t out;
    /* The ETag must match the stored one exactly: its hex alone is not it. */
    stor_complete_part_t bare[] = {{1, "00112233445566778899aabbccddeeff", {0}}, {2, e2, {0}}};
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "fast", id, bare, 2, NULL, &out),
                     STOR_ERR_INVALID_PART);
    stor_complete_part_t good[] = {{1, "\"00112233445566778899AABBCCDDEEFF-1\"", {0}},
                                   {2, e2, {0}}};
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "fast", id, good, 2, NULL, &out),
                     STOR_OK);
    uint8_t cat[2 * MD5_LEN];
    hash_hex_decode(fast1, 32, cat, MD5_LEN);
    hash_hex_decode(e2, 32, cat + MD5_LEN, MD5_LEN);
    char want[40];
    tu_md5_hex(cat, sizeof cat, want);
    strcat(want, "-2");
    assert_string_equal(out.etag, want);
    assert_int_equal(out.size, big + 8);
    stor_meta_free(&out);
    char etag[64];
    assert_int_equal(stor_mpu_etag(good, 2, etag), STOR_OK); /* a retried Complete's check */
    assert_string_equal(etag, want);

    /* Neither an MD5 nor a fast part's ETag: refused. */
    static const char *const bad[] = {"00112233445566778899aabbccddeeff-2",
                                      "00112233445566778899aabbccddeeff-",
                                      "00112233445566778899aabbccddeeff-1x",
                                      "0112233445566778899aabbccddeeff-1",
                                      "00112233445566778899aabbccddeefg",
                                      "\"00112233445566778899aabbccddeeff-1",
                                      ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        stor_complete_part_t one[] = {{1, bad[i], {0}}};
        assert_int_equal(stor_mpu_etag(one, 1, etag), STOR_ERR_INVALID_PART);
    }
    free(p1);
}

static void test_mpu_list(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "c", "o"), STOR_OK);
    char ids[5][STOR_UPLOAD_ID_LEN + 1];
    const char *keys[5] = {"photos/b", "photos/a", "docs/x", "photos/a", "zz"};
    for (int i = 0; i < 5; i++)
        assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), keys[i], NULL, ids[i]), STOR_OK);
    char other[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "c"), "photos/a", NULL, other), STOR_OK);

    stor_upload_t *u;
    size_t n;
    int more;
    assert_int_equal(stor_mpu_list(f->st, "b", "photos/", NULL, NULL, 100, &u, &n, &more), STOR_OK);
    assert_int_equal(n, 3);
    assert_false(more);
    assert_string_equal(u[0].key, "photos/a");
    assert_string_equal(u[1].key, "photos/a");
    assert_true(strcmp(u[0].upload_id, u[1].upload_id) < 0);
    assert_string_equal(u[2].key, "photos/b");
    char first_id[STOR_UPLOAD_ID_LEN + 1];
    strcpy(first_id, u[0].upload_id);
    stor_uploads_free(u, n);

    assert_int_equal(stor_mpu_list(f->st, "b", "", NULL, NULL, 2, &u, &n, &more), STOR_OK);
    assert_int_equal(n, 2);
    assert_true(more);
    assert_string_equal(u[0].key, "docs/x");
    stor_uploads_free(u, n);

    /* key-marker alone skips the key; with an upload-id marker, later ids of it stay. */
    assert_int_equal(stor_mpu_list(f->st, "b", "", "photos/a", NULL, 100, &u, &n, &more), STOR_OK);
    assert_int_equal(n, 2);
    assert_string_equal(u[0].key, "photos/b");
    stor_uploads_free(u, n);
    assert_int_equal(stor_mpu_list(f->st, "b", "", "photos/a", first_id, 100, &u, &n, &more),
                     STOR_OK);
    assert_int_equal(n, 3);
    assert_string_equal(u[0].key, "photos/a");
    assert_string_not_equal(u[0].upload_id, first_id);
    stor_uploads_free(u, n);

    assert_int_equal(stor_mpu_list(f->st, "nob", "", NULL, NULL, 10, &u, &n, &more),
                     STOR_ERR_NO_BUCKET);
}

/* Entries of one of the store's tables. */
static size_t table_entries(fx_t *f, int keys)
{
    lstor_t *st = (lstor_t *)f->st;
    MDB_txn *txn;
    MDB_stat ms;
    assert_int_equal(mdb_txn_begin(st->env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_stat(txn, keys ? st->db_upload_keys : st->db_uploads, &ms), 0);
    mdb_txn_abort(txn);
    return ms.ms_entries;
}

/* Overwrites the upload record of bucket/upload_id with bytes no decoder takes. */
static void corrupt_upload(fx_t *f, const char *bucket, const char *upload_id)
{
    lstor_t *st = (lstor_t *)f->st;
    uint8_t kb[STOR_BUCKET_MAX + 2 + STOR_UPLOAD_ID_LEN];
    size_t blen = strlen(bucket);
    memcpy(kb, bucket, blen + 1);
    memcpy(kb + blen + 1, upload_id, STOR_UPLOAD_ID_LEN);
    MDB_val k = {blen + 1 + STOR_UPLOAD_ID_LEN, kb}, v = {3, "bad"};
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(st->env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_put(txn, st->db_uploads, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
}

/* ListMultipartUploads is a bounded walk: a page reads the uploads it lists
 * (and one more), never the rest of the bucket's. Shown without a clock: an
 * upload record that cannot be decoded fails only the pages that reach it. */
static void test_mpu_list_bounded(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    char ids[40][STOR_UPLOAD_ID_LEN + 1];
    for (int i = 0; i < 40; i++) {
        char key[24];
        snprintf(key, sizeof key, "k%02d", 39 - i); /* created out of key order */
        assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), key, NULL, ids[39 - i]), STOR_OK);
    }
    corrupt_upload(f, "b", ids[39]);
    stor_upload_t *u;
    size_t n;
    int more;
    assert_int_equal(stor_mpu_list(f->st, "b", "", NULL, NULL, 10, &u, &n, &more), STOR_OK);
    assert_int_equal(n, 10);
    assert_true(more);
    for (size_t i = 0; i < n; i++) {
        char key[24];
        snprintf(key, sizeof key, "k%02zu", i);
        assert_string_equal(u[i].key, key);
        assert_string_equal(u[i].upload_id, ids[i]);
    }
    stor_uploads_free(u, n);
    assert_int_equal(stor_mpu_list(f->st, "b", "", "k30", NULL, 5, &u, &n, &more), STOR_OK);
    assert_int_equal(n, 5);
    assert_string_equal(u[0].key, "k31");
    assert_true(more);
    stor_uploads_free(u, n);
    assert_int_equal(stor_mpu_list(f->st, "b", "k1", NULL, NULL, 100, &u, &n, &more), STOR_OK);
    assert_int_equal(n, 10);
    assert_false(more);
    stor_uploads_free(u, n);
    /* A page that reaches it fails. */
    assert_int_equal(stor_mpu_list(f->st, "b", "", "k35", NULL, 10, &u, &n, &more), STOR_ERR_IO);
}

/* Keys longer than the index key holds, sharing their first P bytes: the
 * index orders them by hash; the listing still gives key order, a page at a
 * time. The key index follows create, complete, abort and reopen, and is
 * rebuilt at open when a data directory has none. */
static void test_mpu_list_long_keys_and_index(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    size_t plen = local_ikey_plen(1);
    char keys[6][S3R_MAX_KEY_BYTES + 1];
    char ids[6][STOR_UPLOAD_ID_LEN + 1];
    for (int i = 0; i < 6; i++) {
        memset(keys[i], 'p', plen + 10);
        keys[i][plen + 10] = '\0';
        keys[i][plen + 5] = (char)('a' + (i * 5) % 6); /* distinct, created out of order */
    }
    for (int i = 0; i < 6; i++)
        assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), keys[i], NULL, ids[i]), STOR_OK);
    char short_id[STOR_UPLOAD_ID_LEN + 1], after_id[STOR_UPLOAD_ID_LEN + 1];
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "p", NULL, short_id), STOR_OK);
    assert_int_equal(stor_mpu_create(f->st, TU_B(f->st, "b"), "q", NULL, after_id), STOR_OK);
    assert_int_equal(table_entries(f, 1), 8);

    /* One upload a page, from the markers the previous page ends at. */
    char marker[S3R_MAX_KEY_BYTES + 1] = "", id_marker[STOR_UPLOAD_ID_LEN + 1] = "";
    char seen[8][S3R_MAX_KEY_BYTES + 1];
    int pages = 0, more = 1;
    while (more) {
        stor_upload_t *u;
        size_t n;
        assert_int_equal(stor_mpu_list(f->st, "b", "", marker[0] ? marker : NULL,
                                       id_marker[0] ? id_marker : NULL, 1, &u, &n, &more),
                         STOR_OK);
        assert_int_equal(n, 1);
        assert_true(pages < 8);
        strcpy(seen[pages++], u[0].key);
        strcpy(marker, u[0].key);
        strcpy(id_marker, u[0].upload_id);
        stor_uploads_free(u, n);
    }
    assert_int_equal(pages, 8);
    assert_string_equal(seen[0], "p");
    assert_string_equal(seen[7], "q");
    for (int i = 1; i < 7; i++) {
        assert_int_equal(strlen(seen[i]), plen + 10);
        assert_true(strcmp(seen[i - 1], seen[i]) < 0);
    }

    /* Abort and complete take their entries out. */
    assert_int_equal(stor_mpu_abort(f->st, TU_B(f->st, "b"), keys[0], ids[0]), STOR_OK);
    char etag[33];
    assert_int_equal(put_part(f->st, "q", after_id, 1, "tail", 4, etag), STOR_OK);
    stor_complete_part_t cp[] = {{1, etag, {0}}};
    stor_meta_t m;
    assert_int_equal(stor_mpu_complete(f->st, TU_B(f->st, "b"), "q", after_id, cp, 1, NULL, &m),
                     STOR_OK);
    stor_meta_free(&m);
    assert_int_equal(table_entries(f, 1), 6);
    assert_int_equal(table_entries(f, 0), 6);

    /* A data directory without the index (from before it) gets it at open. */
    lstor_t *st = (lstor_t *)f->st;
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(st->env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_drop(txn, st->db_upload_keys, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    assert_int_equal(table_entries(f, 1), 0);
    reopen(f);
    assert_int_equal(table_entries(f, 1), 6);
    stor_upload_t *u;
    size_t n;
    assert_int_equal(stor_mpu_list(f->st, "b", "p", NULL, NULL, 100, &u, &n, &more), STOR_OK);
    assert_int_equal(n, 6);
    assert_string_equal(u[0].key, "p");
    stor_uploads_free(u, n);
}

/* ---- Inline objects ---------------------------------------------------- */

/* An inline object's record (version 4): round trip, and every truncation,
 * a trailing byte, and a version byte that disagrees with the layout
 * refused. */
static void test_record_inline(void **state)
{
    (void)state;
    stor_meta_t m = {.size = 5, .content_type = "t"};
    strcpy(m.etag, "e");
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(stor_rec_encode_object_inline(&b, "key", 3, &m, "hello"), 0);
    assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_INLINE_VERSION);
    stor_obj_rec_t rec;
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_OK);
    assert_int_equal(rec.n_segs, 0);
    assert_null(rec.segs);
    assert_non_null(rec.body);
    assert_memory_equal(rec.body, "hello", 5);
    assert_int_equal(rec.meta.size, 5);
    assert_string_equal(rec.meta.content_type, "t");
    stor_obj_rec_free(&rec);
    stor_meta_t mo;
    assert_int_equal(stor_rec_decode_object_meta(b.data, b.len, &mo), STOR_OK);
    assert_int_equal(mo.size, 5);
    stor_meta_free(&mo);
    for (size_t len = 0; len < b.len; len++)
        assert_int_equal(stor_rec_decode_object(b.data, len, &rec), STOR_ERR_IO);
    /* One byte more than the record holds. */
    assert_int_equal(buf_append(&b, "x", 1), 0);
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_ERR_IO);
    b.len--;
    /* Read as version 3 it has no segment: refused. */
    ((uint8_t *)b.data)[0] = STOR_REC_VERSION;
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_ERR_IO);
    /* A record with a file read as version 4 has no body: refused. */
    buf_reset(&b);
    stor_seg_t seg = {{1}, 5};
    assert_int_equal(stor_rec_encode_object(&b, "key", 3, &m, &seg, 1), 0);
    assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_VERSION);
    ((uint8_t *)b.data)[0] = STOR_REC_INLINE_VERSION;
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_ERR_IO);
    /* Multipart objects are never inline. */
    buf_reset(&b);
    m.parts_count = 1;
    assert_int_equal(stor_rec_encode_object_inline(&b, "key", 3, &m, "hello"), -1);
    buf_free(&b);
}

/* Extension fields (version 5): object records in files and inline, and
 * upload records, round trip; a record without them keeps its old version;
 * an unknown field id, a repeated one, and every truncation are refused. */
static void test_record_extension(void **state)
{
    (void)state;
    stor_meta_t m = {.size = 5, .storage_class = "STANDARD_IA"};
    strcpy(m.etag, "e");
    buf_t b;
    buf_init(&b, 1 << 20);
    stor_seg_t seg = {{1}, 5};
    stor_obj_rec_t rec;
    for (int inl = 0; inl < 2; inl++) {
        buf_reset(&b);
        assert_int_equal(inl ? stor_rec_encode_object_inline(&b, "key", 3, &m, "hello")
                             : stor_rec_encode_object(&b, "key", 3, &m, &seg, 1),
                         0);
        assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_EXT_VERSION);
        assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_OK);
        assert_string_equal(rec.meta.storage_class, "STANDARD_IA");
        assert_int_equal(rec.n_segs, inl ? 0 : 1);
        if (inl)
            assert_memory_equal(rec.body, "hello", 5);
        stor_meta_t copy;
        assert_int_equal(stor_meta_copy(&copy, &rec.meta), STOR_OK);
        assert_string_equal(copy.storage_class, "STANDARD_IA");
        stor_meta_free(&copy);
        stor_obj_rec_free(&rec);
        for (size_t len = 0; len < b.len; len++)
            assert_int_equal(stor_rec_decode_object(b.data, len, &rec), STOR_ERR_IO);
    }
    /* The block sits just before parts_count and the segment count of the
     * file record: u32 count 1, u8 id, u32 length 11, the value. */
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_object(&b, "key", 3, &m, &seg, 1), 0);
    size_t id_at = b.len - (4 + 4 + STOR_ID_LEN + 8) - (11 + 4) - 1;
    assert_int_equal(((uint8_t *)b.data)[id_at], STOR_MX_STORAGE_CLASS);
    ((uint8_t *)b.data)[id_at] = 200; /* unknown to this binary */
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_ERR_IO);
    ((uint8_t *)b.data)[id_at] = STOR_MX_STORAGE_CLASS;
    /* The same field twice (count 2, the pair repeated) is refused. */
    buf_t d;
    buf_init(&d, 1 << 20);
    assert_int_equal(buf_append(&d, b.data, id_at - 4), 0);
    uint8_t two[4] = {2, 0, 0, 0};
    assert_int_equal(buf_append(&d, two, 4), 0);
    assert_int_equal(buf_append(&d, (uint8_t *)b.data + id_at, 1 + 4 + 11), 0);
    assert_int_equal(buf_append(&d, (uint8_t *)b.data + id_at, b.len - id_at), 0);
    assert_int_equal(stor_rec_decode_object(d.data, d.len, &rec), STOR_ERR_IO);
    buf_free(&d);
    /* Without extension fields: the old versions, readable by older binaries. */
    m.storage_class = NULL;
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_object(&b, "key", 3, &m, &seg, 1), 0);
    assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_VERSION);
    /* Upload records carry them too. */
    m.storage_class = "GLACIER_IR";
    buf_reset(&b);
    assert_int_equal(stor_rec_encode_upload(&b, "key", 3, 7, &m), 0);
    assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_EXT_VERSION);
    stor_upload_rec_t up;
    assert_int_equal(stor_rec_decode_upload(b.data, b.len, &up), STOR_OK);
    assert_string_equal(up.meta.storage_class, "GLACIER_IR");
    stor_upload_rec_free(&up);
    /* Tags (field 5), alone and after the storage class, on both records. */
    for (int with_class = 0; with_class < 2; with_class++) {
        m.storage_class = with_class ? "STANDARD_IA" : NULL;
        m.tags = "a=1&b%20c=";
        buf_reset(&b);
        assert_int_equal(stor_rec_encode_object(&b, "key", 3, &m, &seg, 1), 0);
        assert_int_equal(((uint8_t *)b.data)[0], STOR_REC_EXT_VERSION);
        assert_int_equal(stor_rec_decode_object(b.data, b.len, &rec), STOR_OK);
        assert_string_equal(rec.meta.tags, "a=1&b%20c=");
        if (with_class)
            assert_string_equal(rec.meta.storage_class, "STANDARD_IA");
        else
            assert_null(rec.meta.storage_class);
        stor_obj_rec_free(&rec);
        buf_reset(&b);
        assert_int_equal(stor_rec_encode_upload(&b, "key", 3, 7, &m), 0);
        assert_int_equal(stor_rec_decode_upload(b.data, b.len, &up), STOR_OK);
        assert_string_equal(up.meta.tags, "a=1&b%20c=");
        stor_upload_rec_free(&up);
    }
    buf_free(&b);
}

/* A writer with a cipher stores ciphertext (in a file and inline alike); a
 * reader with the same key reads the plaintext back at any offset, one
 * without reads the ciphertext, and a keyed reader never hands out its file. */
static void test_cipher_writer_reader(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    uint8_t key[32], iv[16] = {0};
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(0xA0 + i);
    static const size_t sizes[] = {100, 300000}; /* inline, then in a file */
    for (size_t s = 0; s < 2; s++) {
        size_t n = sizes[s];
        uint8_t *pt = malloc(n), *got = malloc(n);
        for (size_t i = 0; i < n; i++)
            pt[i] = (uint8_t)('a' + i % 26);
        stor_writer_t *w;
        assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "b"), &w), STOR_OK);
        stor_writer_set_cipher(w, key, iv);
        /* Written in uneven pieces: each is encrypted at its offset. */
        for (size_t at = 0; at < n;) {
            size_t step = n - at < 7777 ? n - at : 7777;
            assert_int_equal(stor_writer_write(w, pt + at, step), STOR_OK);
            at += step;
        }
        stor_meta_t m = {0};
        assert_int_equal(stor_writer_commit(w, "k", &m), STOR_OK);
        stor_reader_t *r;
        assert_int_equal(stor_reader_open(f->st, "b", "k", &r), STOR_OK);
        assert_int_equal(stor_reader_pread(r, got, n, 0), (ssize_t)n);
        assert_memory_not_equal(got, pt, n < 64 ? n : 64);
        uint8_t ct0[16];
        memcpy(ct0, got, sizeof ct0);
        stor_reader_close(r);
        assert_int_equal(stor_reader_open(f->st, "b", "k", &r), STOR_OK);
        stor_reader_set_cipher(r, key, iv);
        int fd;
        uint64_t off;
        assert_int_equal(stor_reader_span_fd(r, 0, n, &fd, &off), 0);
        assert_int_equal(stor_reader_pread(r, got, n, 0), (ssize_t)n);
        assert_memory_equal(got, pt, n);
        assert_int_equal(stor_reader_pread(r, got, 50, n / 3 + 3), 50);
        assert_memory_equal(got, pt + n / 3 + 3, 50);
        uint8_t one[16];
        assert_int_equal(cipher_aes256_ctr_at(key, iv, 0, ct0, one, 16), 0);
        assert_memory_equal(one, pt, 16);
        stor_reader_close(r);
        free(pt);
        free(got);
    }
}

static void put_size(stor_t *st, const char *key, char c, size_t n)
{
    char *data = malloc(n + 1);
    memset(data, c, n);
    /* In two writes: the second may cross the inline limit. */
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(st, TU_B(st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, data, n / 2), STOR_OK);
    assert_int_equal(stor_writer_write(w, data + n / 2, n - n / 2), STOR_OK);
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    tu_md5_hex(data, n, m.etag);
    assert_int_equal(stor_writer_commit(w, key, &m), STOR_OK);
    free(data);
}

static void assert_holds(stor_t *st, const char *key, char c, size_t n)
{
    size_t got_n = 99;
    char *got = tu_get(st, "b", key, &got_n);
    assert_non_null(got);
    assert_int_equal(got_n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], c);
    free(got);
}

/* Objects up to the store's inline_max live in their index record, with no
 * file: written, read (whole, ranges, no fd for sendfile), listed, their
 * ACL set, overwritten both ways (inline <-> file: the old file freed
 * exactly once), deleted, kept across a reopen (the sweep keeps every file
 * the index names and usage counts both kinds), and read by a reader
 * opened before an overwrite. Parts are always files. */
static void test_inline_objects(void **state)
{
    fx_t *f = *state;
    stor_t *st = f->st;
    stor_set_inline_max(st, 64);
    assert_int_equal(stor_bucket_create(st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(st, "b", "k", "hello", 5), STOR_OK);
    assert_int_equal(count_files(f), 0);
    stor_meta_t m;
    assert_int_equal(stor_head(st, "b", "k", &m), STOR_OK);
    assert_int_equal(m.size, 5);
    assert_string_equal(m.etag, "5d41402abc4b2a76b9719d911017c592");
    stor_meta_free(&m);
    stor_reader_t *r;
    assert_int_equal(stor_reader_open(st, "b", "k", &r), STOR_OK);
    char buf[16] = {0};
    assert_int_equal(stor_reader_pread(r, buf, 3, 1), 3);
    assert_memory_equal(buf, "ell", 3);
    assert_int_equal(stor_reader_pread(r, buf, 16, 3), 2);
    assert_memory_equal(buf, "lo", 2);
    assert_int_equal(stor_reader_pread(r, buf, 16, 5), 0);
    int fd;
    uint64_t foff;
    assert_int_equal(stor_reader_span_fd(r, 0, 5, &fd, &foff), 0);
    /* The reader copied the bytes: an overwrite and a delete do not touch
     * what it reads. */
    assert_int_equal(tu_put(st, "b", "k", "HELLO", 5), STOR_OK);
    assert_int_equal(stor_delete(st, TU_B(st, "b"), "k"), STOR_OK);
    assert_int_equal(stor_reader_pread(r, buf, 5, 0), 5);
    assert_memory_equal(buf, "hello", 5);
    stor_reader_close(r);

    /* Exactly the limit is inline; one byte more is a file. */
    put_size(st, "edge", 'a', 64);
    assert_int_equal(count_files(f), 0);
    put_size(st, "over", 'b', 65);
    assert_int_equal(count_files(f), 1);
    assert_holds(st, "edge", 'a', 64);
    assert_holds(st, "over", 'b', 65);
    /* inline -> file, file -> inline, inline -> inline. */
    put_size(st, "edge", 'c', 1000);
    assert_int_equal(count_files(f), 2);
    assert_holds(st, "edge", 'c', 1000);
    put_size(st, "over", 'd', 10);
    assert_int_equal(count_files(f), 1);
    assert_holds(st, "over", 'd', 10);
    put_size(st, "over", 'e', 20);
    assert_holds(st, "over", 'e', 20);
    put_size(st, "empty", 'z', 0);
    assert_holds(st, "empty", 'z', 0);
    assert_int_equal(count_files(f), 1);

    /* A new ACL keeps the bytes; so do new tags, and each change keeps the
     * other's field. */
    stor_obj_change_t acl_change = {.set_acl = true, .acl = STOR_ACL_PUBLIC_READ};
    assert_int_equal(stor_object_change(st, TU_B(st, "b"), "over", &acl_change), STOR_OK);
    assert_holds(st, "over", 'e', 20);
    assert_int_equal(stor_head(st, "b", "over", &m), STOR_OK);
    assert_int_equal(m.acl, STOR_ACL_PUBLIC_READ);
    assert_null(m.tags);
    assert_null(m.grants);
    stor_meta_free(&m);
    /* A grant list (record field 9) comes and goes with the ACL. */
    acl_change.grants = "G1\nREAD AllUsers\n";
    assert_int_equal(stor_object_change(st, TU_B(st, "b"), "over", &acl_change), STOR_OK);
    assert_holds(st, "over", 'e', 20);
    assert_int_equal(stor_head(st, "b", "over", &m), STOR_OK);
    assert_string_equal(m.grants, "G1\nREAD AllUsers\n");
    stor_meta_free(&m);
    acl_change.grants = NULL;
    assert_int_equal(stor_object_change(st, TU_B(st, "b"), "over", &acl_change), STOR_OK);
    assert_int_equal(stor_head(st, "b", "over", &m), STOR_OK);
    assert_null(m.grants);
    stor_meta_free(&m);
    stor_obj_change_t tag_change = {.set_tags = true, .tags = "k=v"};
    assert_int_equal(stor_object_change(st, TU_B(st, "b"), "over", &tag_change), STOR_OK);
    assert_holds(st, "over", 'e', 20);
    assert_int_equal(stor_head(st, "b", "over", &m), STOR_OK);
    assert_int_equal(m.acl, STOR_ACL_PUBLIC_READ);
    assert_string_equal(m.tags, "k=v");
    stor_meta_free(&m);
    tag_change.tags = NULL;
    assert_int_equal(stor_object_change(st, TU_B(st, "b"), "over", &tag_change), STOR_OK);
    assert_int_equal(stor_head(st, "b", "over", &m), STOR_OK);
    assert_null(m.tags);
    stor_meta_free(&m);
    assert_int_equal(stor_object_change(st, TU_B(st, "b"), "none", &tag_change), STOR_ERR_NO_KEY);

    /* Listing gives inline objects' sizes. */
    stor_iter_t *it;
    const char *key;
    size_t klen;
    uint64_t total = 0;
    int n = 0;
    assert_int_equal(stor_iter_open(st, "b", "", NULL, &it), STOR_OK);
    while (stor_iter_next(it, &key, &klen, &m) == 1) {
        total += m.size;
        n++;
        stor_meta_free(&m);
    }
    stor_iter_close(it);
    assert_int_equal(n, 3);
    assert_int_equal(total, 1000 + 20 + 0);

    /* Aborted and refused writes leave nothing. */
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(st, TU_B(st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "zzz", 3), STOR_OK);
    stor_writer_abort(w);
    stor_precond_t must_not = {.must_not_exist = 1};
    assert_int_equal(stor_writer_open(st, TU_B(st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "zzz", 3), STOR_OK);
    memset(&m, 0, sizeof m);
    assert_int_equal(stor_writer_commit_if(w, "over", &m, &must_not), STOR_ERR_PRECONDITION);
    assert_holds(st, "over", 'e', 20);

    /* A small part is a file all the same; the completed object reads back. */
    char id[STOR_UPLOAD_ID_LEN + 1];
    memset(&m, 0, sizeof m);
    assert_int_equal(stor_mpu_create(st, TU_B(st, "b"), "mp", &m, id), STOR_OK);
    assert_int_equal(stor_writer_open(st, TU_B(st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, "part", 4), STOR_OK);
    stor_part_t part = {.number = 1};
    tu_md5_hex("part", 4, part.etag);
    assert_int_equal(stor_part_commit(w, "mp", id, &part), STOR_OK);
    assert_int_equal(count_files(f), 2);
    stor_complete_part_t cp = {1, part.etag, {0}};
    assert_int_equal(stor_mpu_complete(st, TU_B(st, "b"), "mp", id, &cp, 1, NULL, &m), STOR_OK);
    stor_meta_free(&m);
    char *got = tu_get(st, "b", "mp", NULL);
    assert_non_null(got);
    assert_string_equal(got, "part");
    free(got);
    /* A multipart object overwritten by an inline one: its part file goes. */
    put_size(st, "mp", 'm', 7);
    assert_int_equal(count_files(f), 1);

    /* Reopened: everything reads back, the sweep removed no file the index
     * names, and usage counts inline objects too. */
    uint64_t objs, bytes;
    stor_usage(st, &objs, &bytes);
    assert_int_equal(objs, 4);
    assert_int_equal(bytes, 1000 + 20 + 0 + 7);
    reopen(f);
    st = f->st;
    uint64_t objs2, bytes2;
    stor_usage(st, &objs2, &bytes2);
    assert_int_equal(objs2, objs);
    assert_int_equal(bytes2, bytes);
    assert_int_equal(count_files(f), 1);
    assert_holds(st, "edge", 'c', 1000);
    assert_holds(st, "over", 'e', 20);
    assert_holds(st, "empty", 'z', 0);
    assert_holds(st, "mp", 'm', 7);
    /* Deleting frees nothing but the record; the file object's file goes. */
    assert_int_equal(stor_delete(st, TU_B(st, "b"), "over"), STOR_OK);
    assert_int_equal(stor_delete(st, TU_B(st, "b"), "edge"), STOR_OK);
    assert_int_equal(stor_head(st, "b", "over", &m), STOR_ERR_NO_KEY);
    assert_int_equal(count_files(f), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bucket_crud, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_cipher_writer_reader, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_put_get_overwrite_delete, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_delete_if_only_the_object_seen, setup_relaxed,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_put_get_overwrite_delete, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_reads_hold_no_dropped_file, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_reads_hold_no_dropped_file, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_long_key_objects, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_meta_roundtrip, setup_fsync, teardown),
        cmocka_unit_test(test_record_garbage),
        cmocka_unit_test(test_record_want_listing),
        cmocka_unit_test(test_record_truncations),
        cmocka_unit_test(test_bucket_record_configs),
        cmocka_unit_test(test_bucket_record_shards),
        cmocka_unit_test_setup_teardown(test_bucket_config_store, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_write_into_recreated_bucket, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_mpu_into_recreated_bucket, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_reader_snapshot, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_orphan_cleanup, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_orphan_cleanup, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_multipart, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_multipart, setup_fsync, teardown),
        cmocka_unit_test_setup_teardown(test_multipart_fast_etags, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_mpu_list, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_mpu_list_bounded, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_mpu_list_long_keys_and_index, setup_relaxed, teardown),
        cmocka_unit_test(test_record_inline),
        cmocka_unit_test(test_record_extension),
        cmocka_unit_test_setup_teardown(test_inline_objects, setup_relaxed, teardown),
        cmocka_unit_test_setup_teardown(test_inline_objects, setup_fsync, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
