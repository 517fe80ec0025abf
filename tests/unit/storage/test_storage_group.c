/* Group commit (local_group.c): concurrent PUTs and DELETEs share one LMDB
 * write transaction, each evaluated against what the changes before it in
 * the group did, and a failing one fails nothing else.
 *
 * Deterministic: the test holds LMDB's writer lock (a write transaction of
 * its own) while it lets the changes queue one at a time (it waits for the
 * queue to grow before starting the next), so the group and its order are
 * known; then it lets go and counts the commits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>

#include "common/s3r_limits.h"
#include "stor_test_util.h"
#include "storage/local/local_internal.h"
#include "storage/local/local_syncer.h"

typedef enum { OP_PUT, OP_DELETE } op_kind_t;

typedef struct op {
    stor_t *st;
    op_kind_t kind;
    const char *key, *data;
    const char *version_id; /* OP_DELETE: that version (NULL: the latest) */
    stor_bucket_t bucket;
    stor_precond_t cond;
    int use_cond;
    stor_status_t result;
} op_t;

static void *op_run(void *arg)
{
    op_t *o = arg;
    const stor_precond_t *cond = o->use_cond ? &o->cond : NULL;
    if (o->kind == OP_DELETE) {
        stor_deleted_t out;
        o->result = stor_delete_version_if(o->st, &o->bucket, o->key, o->version_id, cond, &out);
        return NULL;
    }
    stor_writer_t *w;
    if ((o->result = stor_writer_open(o->st, &o->bucket, &w)) != STOR_OK)
        return NULL;
    stor_writer_write(w, o->data, strlen(o->data));
    stor_meta_t m;
    memset(&m, 0, sizeof m);
    tu_md5_hex(o->data, strlen(o->data), m.etag);
    o->result = stor_writer_commit_if(w, o->key, &m, cond);
    stor_meta_free(&m);
    return NULL;
}

static stor_status_t refuse(const stor_meta_t *version, void *arg)
{
    (void)version;
    (void)arg;
    return STOR_ERR_LOCKED;
}

static size_t queued(lstor_t *ls)
{
    pthread_mutex_lock(&ls->group_lock);
    size_t n = ls->group_queued;
    pthread_mutex_unlock(&ls->group_lock);
    return n;
}

static uint64_t last_txnid(lstor_t *ls)
{
    MDB_envinfo info;
    assert_int_equal(mdb_env_info(ls->env, &info), 0);
    return (uint64_t)info.me_last_txnid;
}

static void assert_body(stor_t *st, const char *key, const char *want)
{
    char *got = tu_get(st, "b", key, NULL);
    if (!want) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* One group: PUTs, conditional PUTs that see an earlier change of the same
 * group, a DELETE of what the group itself wrote, a DELETE a guard refuses
 * after it removed the key in the transaction (the group starts over
 * without it), a PUT into a bucket that is not the one it was authorized
 * for. One commit for all of it; each gets its own result. */
static void run_group(stor_durability_t mode, size_t inline_max)
{
    char *tmp = tu_mkdtemp();
    char dir[512];
    snprintf(dir, sizeof dir, "%s/data", tmp);
    local_sync_interval_ms = 0;
    stor_t *st;
    assert_int_equal(stor_open(dir, mode, &st), STOR_OK);
    stor_set_inline_max(st, inline_max);
    lstor_t *ls = (lstor_t *)st;
    assert_int_equal(stor_bucket_create(st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(st, "b", "x", "x-old", 5), STOR_OK);
    assert_int_equal(tu_put(st, "b", "locked", "kept", 4), STOR_OK);
    stor_bucket_t b = tu_bucket(st, "b"), stale = b;
    stale.id ^= 1; /* a bucket of that name, but not this one */

    op_t ops[] = {
        {.kind = OP_PUT, .key = "k0", .data = "k0"},
        /* x exists: refused, and nothing else is. */
        {.kind = OP_PUT, .key = "x", .data = "x-new", .use_cond = 1, .cond.must_not_exist = 1},
        {.kind = OP_PUT, .key = "new", .data = "first"},
        /* "new" was written by the change before it in this group. */
        {.kind = OP_PUT, .key = "new", .data = "second", .use_cond = 1, .cond.must_not_exist = 1},
        /* Removes the key in the transaction, then its guard refuses. */
        {.kind = OP_DELETE, .key = "locked", .use_cond = 1, .cond.guard = refuse},
        {.kind = OP_PUT, .key = "k5", .data = "k5"},
        /* The bucket it was authorized for is gone. */
        {.kind = OP_DELETE, .key = "x"},
        /* Deletes what the first change of the group wrote. */
        {.kind = OP_DELETE, .key = "k0"},
        /* Overwrites with a precondition on the group's own write. */
        {.kind = OP_PUT, .key = "k5", .data = "k5-again", .use_cond = 1, .cond.must_exist = 1},
        /* A version that is not there. */
        {.kind = OP_DELETE, .key = "absent", .version_id = "null"},
    };
    size_t n = sizeof ops / sizeof ops[0];
    stor_status_t want[] = {STOR_OK,
                            STOR_ERR_PRECONDITION,
                            STOR_OK,
                            STOR_ERR_PRECONDITION,
                            STOR_ERR_LOCKED,
                            STOR_OK,
                            STOR_ERR_NO_BUCKET,
                            STOR_OK,
                            STOR_OK,
                            STOR_ERR_NO_VERSION};
    assert_true(n <= LOCAL_GROUP_MAX);

    MDB_txn *hold;
    assert_int_equal(mdb_txn_begin(ls->env, NULL, 0, &hold), 0);
    uint64_t before = last_txnid(ls);
    pthread_t th[sizeof ops / sizeof ops[0]];
    for (size_t i = 0; i < n; i++) {
        ops[i].st = st;
        ops[i].bucket = i == 6 ? stale : b;
        pthread_create(&th[i], NULL, op_run, &ops[i]);
        /* Each waits in the queue before the next starts (a hang guard,
         * not a timing: 20 s is never needed). */
        for (int t = 0; queued(ls) < i + 1; t++) {
            assert_true(t < 100000);
            usleep(200);
        }
    }
    mdb_txn_abort(hold);
    for (size_t i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ops[i].result, want[i]);
    /* One commit for the whole group. */
    assert_int_equal(last_txnid(ls), before + 1);

    assert_body(st, "k0", NULL);
    assert_body(st, "x", "x-old");
    assert_body(st, "new", "first");
    assert_body(st, "locked", "kept");
    assert_body(st, "k5", "k5-again");
    /* As it is after a restart. */
    stor_close(st);
    assert_int_equal(stor_open(dir, mode, &st), STOR_OK);
    assert_body(st, "k0", NULL);
    assert_body(st, "new", "first");
    assert_body(st, "locked", "kept");
    assert_body(st, "k5", "k5-again");
    uint64_t objects, bytes;
    stor_usage(st, &objects, &bytes);
    assert_int_equal(objects, 4); /* x, locked, new, k5 */
    stor_close(st);
    tu_rmrf(tmp);
    free(tmp);
    local_sync_interval_ms = 1000;
}

static void test_group_relaxed_inline(void **state)
{
    (void)state;
    run_group(STOR_DURABILITY_RELAXED, S3R_INLINE_MAX_DEFAULT);
}

static void test_group_fsync_inline(void **state)
{
    (void)state;
    run_group(STOR_DURABILITY_FSYNC, S3R_INLINE_MAX_DEFAULT);
}

/* Objects in files: the group registers each committed file for the sync
 * point, and the replaced and deleted ones are dropped. */
static void test_group_relaxed_files(void **state)
{
    (void)state;
    run_group(STOR_DURABILITY_RELAXED, 0);
}

static void test_group_fsync_files(void **state)
{
    (void)state;
    run_group(STOR_DURABILITY_FSYNC, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_relaxed_inline),
        cmocka_unit_test(test_group_fsync_inline),
        cmocka_unit_test(test_group_relaxed_files),
        cmocka_unit_test(test_group_fsync_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
