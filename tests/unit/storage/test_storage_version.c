/* Storage engine: versioning (local_version.c): versions and delete markers,
 * the "null" version of suspended buckets, lookups and deletes by version
 * id, the versions iterator, usage and the orphan sweep with noncurrent
 * versions, kill -9 during versioned writes, and the guards and per-version
 * metadata changes object lock is built on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>

#include "stor_test_util.h"
#include "storage/local/local_internal.h"

typedef struct fx {
    char *dir;
    stor_t *st;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp();
    assert_int_equal(files_open(f->dir, STOR_DURABILITY_RELAXED, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "b", "AK"), STOR_OK);
    *state = f;
    return 0;
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

/* Object files once the relaxed mode's dropped files are unlinked. */
static size_t count_after_sync(fx_t *f)
{
    assert_int_equal(stor_sync(f->st), STOR_OK);
    return tu_count_objects(f->dir);
}

static void reopen(fx_t *f)
{
    stor_close(f->st);
    f->st = NULL;
    assert_int_equal(files_open(f->dir, STOR_DURABILITY_RELAXED, &f->st), STOR_OK);
}

static void set_versioning(fx_t *f, stor_versioning_t v)
{
    assert_int_equal(stor_bucket_set_versioning(f->st, TU_B(f->st, "b"), v), STOR_OK);
    stor_bucket_t b;
    assert_int_equal(stor_bucket_get(f->st, "b", &b), STOR_OK);
    assert_int_equal(b.versioning, v);
}

/* PUT of text as b/key; its version id into vid. */
static void put(fx_t *f, const char *key, const char *text, char vid[STOR_VERSION_ID_LEN + 1])
{
    stor_writer_t *w;
    assert_int_equal(stor_writer_open(f->st, TU_B(f->st, "b"), &w), STOR_OK);
    assert_int_equal(stor_writer_write(w, text, strlen(text)), STOR_OK);
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    tu_md5_hex(text, strlen(text), m.etag);
    assert_int_equal(stor_writer_commit(w, key, &m), STOR_OK);
    if (vid)
        stor_version_id(&m, vid);
    stor_meta_free(&m);
}

/* The bytes of version vid (NULL: latest) of b/key, or NULL with *st_p. */
static char *get_v(fx_t *f, const char *key, const char *vid, stor_status_t *st_p)
{
    stor_reader_t *r;
    *st_p = stor_reader_open_version(f->st, "b", key, vid, &r);
    if (*st_p != STOR_OK)
        return NULL;
    size_t n = (size_t)stor_reader_meta(r)->size;
    char *b = calloc(1, n + 1);
    assert_int_equal(stor_reader_pread(r, b, n, 0), (ssize_t)n);
    stor_reader_close(r);
    return b;
}

static void assert_get(fx_t *f, const char *key, const char *vid, const char *want)
{
    stor_status_t s;
    char *got = get_v(f, key, vid, &s);
    assert_int_equal(s, STOR_OK);
    assert_string_equal(got, want);
    free(got);
}

typedef struct ent {
    char key[64];
    char vid[STOR_VERSION_ID_LEN + 1];
    int latest, marker;
} ent_t;

/* Lists every version under prefix from (km, vm); returns how many. */
static size_t list_v(fx_t *f, const char *prefix, const char *km, const char *vm, ent_t *out,
                     size_t max)
{
    stor_iter_t *it;
    assert_int_equal(stor_iter_open_versions(f->st, "b", prefix, km, vm, &it), STOR_OK);
    size_t n = 0;
    const char *k;
    size_t kl;
    stor_meta_t m;
    int latest;
    while (n < max && stor_iter_next_version(it, &k, &kl, &m, &latest) == 1) {
        snprintf(out[n].key, sizeof out[n].key, "%.*s", (int)kl, k);
        stor_version_id(&m, out[n].vid);
        out[n].latest = latest;
        out[n].marker = m.delete_marker != NULL;
        stor_meta_free(&m);
        n++;
    }
    stor_iter_close(it);
    return n;
}

static void test_enabled_versions(void **state)
{
    fx_t *f = *state;
    char v0[33], v1[33], v2[33];
    put(f, "k", "before", v0); /* written before versioning: the null version */
    assert_string_equal(v0, "null");
    set_versioning(f, STOR_VERSIONING_ENABLED);
    put(f, "k", "one", v1);
    put(f, "k", "two", v2);
    assert_true(stor_version_id_valid(v1) && strcmp(v1, "null") != 0);
    assert_string_not_equal(v1, v2);
    assert_get(f, "k", NULL, "two");
    assert_get(f, "k", v1, "one");
    assert_get(f, "k", v2, "two");
    assert_get(f, "k", "null", "before");
    stor_status_t s;
    assert_null(get_v(f, "k", "00000000000000090000000000000000", &s));
    assert_int_equal(s, STOR_ERR_NO_VERSION);
    /* Three versions in the files, counted in the usage. */
    uint64_t objs, bytes;
    stor_usage(f->st, &objs, &bytes);
    assert_int_equal(objs, 3);
    assert_int_equal(bytes, strlen("before") + 3 + 3);
    assert_int_equal(tu_count_objects(f->dir), 3);

    /* A delete marker on top: the latest is gone, the versions stay. */
    stor_deleted_t d;
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", NULL, &d), STOR_OK);
    assert_true(d.delete_marker);
    assert_true(stor_version_id_valid(d.version_id) && strcmp(d.version_id, "null") != 0);
    assert_null(get_v(f, "k", NULL, &s));
    assert_int_equal(s, STOR_ERR_DELETE_MARKER);
    assert_null(get_v(f, "k", d.version_id, &s));
    assert_int_equal(s, STOR_ERR_DELETE_MARKER);
    stor_meta_t m;
    assert_int_equal(stor_head(f->st, "b", "k", &m), STOR_ERR_NO_KEY);
    assert_int_equal(stor_head_version(f->st, "b", "k", NULL, &m), STOR_OK);
    assert_non_null(m.delete_marker);
    stor_meta_free(&m);
    assert_get(f, "k", v2, "two");
    /* A plain listing no longer shows the key. */
    stor_iter_t *it;
    const char *k;
    size_t kl;
    assert_int_equal(stor_iter_open(f->st, "b", "", NULL, &it), STOR_OK);
    assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 0);
    stor_iter_close(it);

    /* The bucket keeps its versions: not empty. */
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "b")), STOR_ERR_BUCKET_NOT_EMPTY);

    /* Removing the marker by id brings "two" back as the latest. */
    stor_deleted_t d2;
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", d.version_id, &d2), STOR_OK);
    assert_true(d2.delete_marker);
    assert_string_equal(d2.version_id, d.version_id);
    assert_get(f, "k", NULL, "two");
    /* Removing the current version: "one" becomes the latest. */
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", v2, &d2), STOR_OK);
    assert_false(d2.delete_marker);
    assert_get(f, "k", NULL, "one");
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", v2, &d2),
                     STOR_ERR_NO_VERSION);
    assert_int_equal(count_after_sync(f), 2);
}

static void test_suspended_null(void **state)
{
    fx_t *f = *state;
    char v1[33], n1[33], n2[33];
    set_versioning(f, STOR_VERSIONING_ENABLED);
    put(f, "k", "kept", v1);
    set_versioning(f, STOR_VERSIONING_SUSPENDED);
    put(f, "k", "null-1", n1);
    assert_string_equal(n1, "null");
    put(f, "k", "null-2", n2); /* replaces the null version, keeps v1 */
    ent_t e[8];
    size_t n = list_v(f, "", NULL, NULL, e, 8);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].vid, "null");
    assert_true(e[0].latest);
    assert_string_equal(e[1].vid, v1);
    assert_false(e[1].latest);
    assert_get(f, "k", "null", "null-2");
    assert_int_equal(count_after_sync(f), 2);

    /* A delete in a suspended bucket: a null delete marker replaces the
     * null version. */
    stor_deleted_t d;
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", NULL, &d), STOR_OK);
    assert_true(d.delete_marker);
    assert_string_equal(d.version_id, "null");
    n = list_v(f, "", NULL, NULL, e, 8);
    assert_int_equal(n, 2);
    assert_true(e[0].marker && e[0].latest);
    assert_string_equal(e[0].vid, "null");
    assert_string_equal(e[1].vid, v1);
    assert_int_equal(count_after_sync(f), 1);
    uint64_t objs, bytes;
    stor_usage(f->st, &objs, &bytes);
    assert_int_equal(objs, 1);
    assert_int_equal(bytes, 4);
    /* Writing again replaces the null marker. */
    put(f, "k", "back", n2);
    n = list_v(f, "", NULL, NULL, e, 8);
    assert_int_equal(n, 2);
    assert_false(e[0].marker);
    assert_get(f, "k", NULL, "back");
}

static void test_list_and_paging(void **state)
{
    fx_t *f = *state;
    set_versioning(f, STOR_VERSIONING_ENABLED);
    char va[3][33], vb[33], vab[33];
    for (int i = 0; i < 3; i++)
        put(f, "a", "x", va[i]);
    put(f, "ab", "y", vab);
    put(f, "b", "z", vb);
    stor_deleted_t d;
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "b", NULL, &d), STOR_OK);
    ent_t e[16];
    size_t n = list_v(f, "", NULL, NULL, e, 16);
    assert_int_equal(n, 6);
    /* a: newest first, only the first latest; then ab; then b's marker. */
    assert_string_equal(e[0].key, "a");
    assert_string_equal(e[0].vid, va[2]);
    assert_true(e[0].latest);
    assert_string_equal(e[1].vid, va[1]);
    assert_false(e[1].latest);
    assert_string_equal(e[2].vid, va[0]);
    assert_string_equal(e[3].key, "ab");
    assert_true(e[3].latest);
    assert_string_equal(e[4].key, "b");
    assert_true(e[4].marker && e[4].latest);
    assert_string_equal(e[4].vid, d.version_id);
    assert_string_equal(e[5].vid, vb);
    assert_false(e[5].latest || e[5].marker);

    /* Resume after a version in the middle of a key, after a whole key. */
    n = list_v(f, "", "a", va[1], e, 16);
    assert_int_equal(n, 4);
    assert_string_equal(e[0].vid, va[0]);
    assert_false(e[0].latest);
    n = list_v(f, "", "a", NULL, e, 16);
    assert_int_equal(n, 3);
    assert_string_equal(e[0].key, "ab");
    n = list_v(f, "", "a", va[2], e, 16);
    assert_int_equal(n, 5);
    assert_string_equal(e[0].vid, va[1]);
    /* Prefix. */
    n = list_v(f, "a", NULL, NULL, e, 16);
    assert_int_equal(n, 4);
    n = list_v(f, "ab", NULL, NULL, e, 16);
    assert_int_equal(n, 1);
    /* Seek past a common prefix. */
    stor_iter_t *it;
    assert_int_equal(stor_iter_open_versions(f->st, "b", "", NULL, NULL, &it), STOR_OK);
    const char *k;
    size_t kl;
    stor_meta_t m;
    int latest;
    assert_int_equal(stor_iter_next_version(it, &k, &kl, &m, &latest), 1);
    stor_meta_free(&m);
    stor_iter_seek(it, "b", 1);
    assert_int_equal(stor_iter_next_version(it, &k, &kl, &m, &latest), 1);
    assert_int_equal(kl, 1);
    assert_memory_equal(k, "b", 1);
    assert_true(latest);
    stor_meta_free(&m);
    stor_iter_close(it);
}

/* Every version's file survives a reopen (the sweep knows them), and the
 * usage counted at open matches the one kept by the commits. */
static void test_sweep_and_usage(void **state)
{
    fx_t *f = *state;
    set_versioning(f, STOR_VERSIONING_ENABLED);
    char v[4][33];
    for (int i = 0; i < 4; i++)
        put(f, "k", i % 2 ? "odd" : "even!", v[i]);
    stor_deleted_t d;
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", NULL, &d), STOR_OK);
    uint64_t o1, b1, o2, b2;
    stor_usage(f->st, &o1, &b1);
    reopen(f);
    stor_usage(f->st, &o2, &b2);
    assert_int_equal(o1, 4);
    assert_int_equal(o2, 4);
    assert_int_equal(b1, b2);
    assert_int_equal(tu_count_objects(f->dir), 4);
    for (int i = 0; i < 4; i++)
        assert_get(f, "k", v[i], i % 2 ? "odd" : "even!");
    /* Removing every version empties the bucket. */
    for (int i = 0; i < 4; i++)
        assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", v[i], &d), STOR_OK);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "b")), STOR_ERR_BUCKET_NOT_EMPTY);
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", NULL, &d), STOR_OK);
    ent_t e[4];
    size_t n = list_v(f, "", NULL, NULL, e, 4);
    assert_int_equal(n, 2); /* two markers */
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", e[0].vid, &d), STOR_OK);
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", e[1].vid, &d), STOR_OK);
    assert_int_equal(count_after_sync(f), 0);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "b")), STOR_OK);
}

/* A bucket without versioning keeps today's layout: nothing in the versions
 * table, deletes leave no marker. */
static void test_unversioned_unchanged(void **state)
{
    fx_t *f = *state;
    char v[33];
    put(f, "k", "one", v);
    put(f, "k", "two", v);
    assert_string_equal(v, "null");
    stor_deleted_t d;
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", NULL, &d), STOR_OK);
    assert_false(d.delete_marker);
    assert_string_equal(d.version_id, "");
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), "k", NULL, &d), STOR_ERR_NO_KEY);
    assert_int_equal(count_after_sync(f), 0);
    assert_int_equal(stor_bucket_delete(f->st, TU_B(f->st, "b")), STOR_OK);
}

/* kill -9 while a child overwrites and deletes in a versioned bucket: every
 * acknowledged version is there after reopening, byte for byte, and no file
 * is left that no version references. */
static void test_crash_versioned(void **state)
{
    fx_t *f = *state;
    set_versioning(f, STOR_VERSIONING_ENABLED);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    stor_close(f->st);
    f->st = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        stor_t *st;
        if (files_open(f->dir, STOR_DURABILITY_RELAXED, &st) != STOR_OK)
            _exit(1);
        for (int i = 0;; i++) {
            char body[32];
            snprintf(body, sizeof body, "v%d", i);
            stor_writer_t *w;
            stor_meta_t m;
            memset(&m, 0, sizeof m);
            if (stor_writer_open(st, TU_B(st, "b"), &w) != STOR_OK ||
                stor_writer_write(w, body, strlen(body)) != STOR_OK)
                _exit(1);
            strcpy(m.etag, "e");
            if (stor_writer_commit(w, i % 3 ? "k" : "j", &m) != STOR_OK)
                _exit(1);
            /* Acknowledged: tell the parent which version holds what. */
            char line[80];
            char vid[33];
            stor_version_id(&m, vid);
            stor_meta_free(&m);
            int n = snprintf(line, sizeof line, "%s %s %s\n", i % 3 ? "k" : "j", vid, body);
            if (write(pfd[1], line, (size_t)n) != n)
                _exit(1);
            if (i % 5 == 4) {
                stor_deleted_t d;
                if (stor_delete_version(st, TU_B(st, "b"), "k", NULL, &d) != STOR_OK)
                    _exit(1);
            }
            if (i == 300) {
                /* Killed with a versioned write under way: its file is
                 * an orphan for the reopen's sweep. */
                if (stor_writer_open(st, TU_B(st, "b"), &w) != STOR_OK ||
                    stor_writer_write(w, "lost", 4) != STOR_OK)
                    _exit(1);
                kill(getpid(), SIGKILL);
            }
        }
    }
    close(pfd[1]);
    FILE *in = fdopen(pfd[0], "r");
    char key[8], vid[40], body[32];
    int acked = 0;
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(files_open(f->dir, STOR_DURABILITY_RELAXED, &f->st), STOR_OK);
    while (fscanf(in, "%7s %39s %31s", key, vid, body) == 3) {
        assert_get(f, key, vid, body);
        acked++;
    }
    fclose(in);
    assert_int_equal(acked, 301);
    /* Every file is a version's: one per acknowledged write (a commit that
     * was in flight at the kill left an orphan the reopen swept). */
    ent_t *e = calloc(1024, sizeof *e);
    size_t n = list_v(f, "", NULL, NULL, e, 1024);
    size_t objects = 0;
    for (size_t i = 0; i < n; i++)
        objects += !e[i].marker;
    free(e);
    assert_int_equal(objects, 301);
    assert_int_equal(tu_count_objects(f->dir), 301);
}

/* Keys longer than the index key's P bytes (hashed index keys) have their
 * versions found, listed and removed like any other, and a block of them
 * sharing their first P bytes lists each key's versions together. */
static void test_long_keys(void **state)
{
    fx_t *f = *state;
    set_versioning(f, STOR_VERSIONING_ENABLED);
    char k1[1001], k2[1001], v1[2][33], v2[33];
    memset(k1, 'x', 1000);
    k1[1000] = '\0';
    memcpy(k2, k1, sizeof k2);
    k1[999] = 'a';
    k2[999] = 'b';
    put(f, k1, "one", v1[0]);
    put(f, k2, "other", v2);
    put(f, k1, "two", v1[1]);
    assert_get(f, k1, v1[0], "one");
    assert_get(f, k1, NULL, "two");
    assert_get(f, k2, v2, "other");
    stor_status_t s;
    assert_null(get_v(f, k2, v1[0], &s)); /* another key's id */
    assert_int_equal(s, STOR_ERR_NO_VERSION);
    ent_t *e = calloc(8, sizeof *e);
    size_t n = list_v(f, "", NULL, NULL, e, 8);
    assert_int_equal(n, 3);
    /* Each key's versions together, newest first, the first latest. */
    int first_is_k1 = e[0].key[0] == 'x' && strcmp(e[0].vid, v1[1]) == 0;
    size_t i1 = first_is_k1 ? 0 : 1;
    assert_string_equal(e[i1].vid, v1[1]);
    assert_true(e[i1].latest);
    assert_string_equal(e[i1 + 1].vid, v1[0]);
    assert_false(e[i1 + 1].latest);
    assert_string_equal(e[first_is_k1 ? 2 : 0].vid, v2);
    free(e);
    stor_deleted_t d;
    assert_int_equal(stor_delete_version(f->st, TU_B(f->st, "b"), k1, v1[1], &d), STOR_OK);
    assert_get(f, k1, NULL, "one");
}

/* A guard that refuses a version whose legal_hold field is set, and counts
 * its calls. */
static int guard_calls;
static stor_status_t hold_guard(const stor_meta_t *v, void *arg)
{
    (void)arg;
    guard_calls++;
    return v->legal_hold ? STOR_ERR_LOCKED : STOR_OK;
}

static void test_guards_and_version_change(void **state)
{
    fx_t *f = *state;
    set_versioning(f, STOR_VERSIONING_ENABLED);
    char v1[STOR_VERSION_ID_LEN + 1], v2[STOR_VERSION_ID_LEN + 1];
    put(f, "k", "one", v1);
    put(f, "k", "two", v2);
    /* A change of the noncurrent version v1 (in the versions table) and of
     * the current one, each leaving the other alone. */
    stor_obj_change_t ch = {.version_id = v1,
                            .set_legal_hold = true,
                            .legal_hold = "ON",
                            .set_lock_retention = true,
                            .lock_retention = "R1"};
    assert_int_equal(stor_object_change(f->st, TU_B(f->st, "b"), "k", &ch), STOR_OK);
    stor_meta_t m;
    assert_int_equal(stor_head_version(f->st, "b", "k", v1, &m), STOR_OK);
    assert_string_equal(m.legal_hold, "ON");
    assert_string_equal(m.lock_retention, "R1");
    stor_meta_free(&m);
    assert_int_equal(stor_head(f->st, "b", "k", &m), STOR_OK);
    assert_null(m.legal_hold);
    stor_meta_free(&m);
    assert_get(f, "k", v1, "one");
    /* The change's guard sees the version before the change; a refusal
     * changes nothing. */
    guard_calls = 0;
    stor_obj_change_t off = {
        .version_id = v1, .set_legal_hold = true, .legal_hold = NULL, .guard = hold_guard};
    assert_int_equal(stor_object_change(f->st, TU_B(f->st, "b"), "k", &off), STOR_ERR_LOCKED);
    assert_int_equal(guard_calls, 1);
    assert_int_equal(stor_head_version(f->st, "b", "k", v1, &m), STOR_OK);
    assert_string_equal(m.legal_hold, "ON");
    stor_meta_free(&m);
    /* A delete by id of the held version is refused in its transaction,
     * and the version stays readable; the unheld current one goes. */
    stor_precond_t cond = {.guard = hold_guard};
    stor_deleted_t d;
    assert_int_equal(stor_delete_version_if(f->st, TU_B(f->st, "b"), "k", v1, &cond, &d),
                     STOR_ERR_LOCKED);
    assert_get(f, "k", v1, "one");
    assert_int_equal(stor_delete_version_if(f->st, TU_B(f->st, "b"), "k", v2, &cond, &d), STOR_OK);
    /* v1 is the latest again, in the objects table: still held. */
    assert_int_equal(stor_delete_version_if(f->st, TU_B(f->st, "b"), "k", v1, &cond, &d),
                     STOR_ERR_LOCKED);
    /* A delete marker on top removes nothing: the guard is not asked. */
    guard_calls = 0;
    assert_int_equal(stor_delete_version_if(f->st, TU_B(f->st, "b"), "k", NULL, &cond, &d),
                     STOR_OK);
    assert_true(d.delete_marker);
    assert_int_equal(guard_calls, 0);
    /* A marker cannot be changed; an unknown version is NoSuchVersion. */
    stor_obj_change_t on_marker = {
        .version_id = d.version_id, .set_legal_hold = true, .legal_hold = "ON"};
    assert_int_equal(stor_object_change(f->st, TU_B(f->st, "b"), "k", &on_marker),
                     STOR_ERR_DELETE_MARKER);
    on_marker.version_id = "00000000000000ff0000000000000000";
    assert_int_equal(stor_object_change(f->st, TU_B(f->st, "b"), "k", &on_marker),
                     STOR_ERR_NO_VERSION);
    /* Lifted, the version goes; the fields survive a reopen meanwhile. */
    reopen(f);
    off.guard = NULL;
    assert_int_equal(stor_object_change(f->st, TU_B(f->st, "b"), "k", &off), STOR_OK);
    assert_int_equal(stor_delete_version_if(f->st, TU_B(f->st, "b"), "k", v1, &cond, &d), STOR_OK);
}

static void test_rec_fields(void **state)
{
    (void)state;
    /* The version fields round-trip and a malformed one is refused. */
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    m.version = strdup("0000000000000003abcdefabcdefabcd");
    m.delete_marker = strdup("1");
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(stor_rec_encode_object_inline(&b, "k", 1, &m, ""), 0);
    stor_obj_rec_t r;
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &r), STOR_OK);
    assert_string_equal(r.meta.version, m.version);
    assert_string_equal(r.meta.delete_marker, "1");
    assert_int_equal(stor_version_seq(&r.meta), 3);
    stor_obj_rec_free(&r);
    buf_free(&b);
    free(m.version);
    m.version = strdup("0000000000000003ABCDEFabcdefabcd"); /* upper case: not ours */
    buf_init(&b, 1 << 20);
    assert_int_equal(stor_rec_encode_object_inline(&b, "k", 1, &m, ""), 0);
    assert_int_equal(stor_rec_decode_object(b.data, b.len, &r), STOR_ERR_IO);
    buf_free(&b);
    stor_meta_free(&m);
    assert_true(stor_version_id_valid("null"));
    assert_false(stor_version_id_valid("0000000000000003"));
    assert_false(stor_version_id_valid("../../etc/passwd0000000000000000"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_enabled_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suspended_null, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_and_paging, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_and_usage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unversioned_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_versioned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_keys, setup, teardown),
        cmocka_unit_test_setup_teardown(test_guards_and_version_change, setup, teardown),
        cmocka_unit_test(test_rec_fields),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
