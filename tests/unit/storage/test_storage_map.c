/* The index's writable map (local_map.h): in relaxed mode the pages past
 * LMDB's last page are made ready ahead of the commits.
 *
 * The data directory is on tmpfs (/dev/shm), where nothing reads ahead: a
 * page of data.mdb is in memory only once something has touched it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>

#include "common/s3r_limits.h"
#include "stor_test_util.h"
#include "storage/local/local_internal.h"
#include "storage/local/local_map.h"

typedef struct fx {
    char tmp[64];
    char dir[128];
    stor_t *st;
} fx_t;

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    snprintf(f->tmp, sizeof f->tmp, "/dev/shm/s3r-map-XXXXXX");
    if (!mkdtemp(f->tmp)) {
        free(f);
        return -1;
    }
    snprintf(f->dir, sizeof f->dir, "%s/data", f->tmp);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    stor_close(f->st);
    tu_rmrf(f->tmp);
    free(f);
    return 0;
}

/* Bytes from the start of data.mdb to the end of LMDB's last page. */
static size_t last_end(stor_t *st)
{
    MDB_env *env = ((lstor_t *)st)->env;
    MDB_envinfo info;
    MDB_stat ms;
    assert_int_equal(mdb_env_info(env, &info), 0);
    assert_int_equal(mdb_env_stat(env, &ms), 0);
    return ((size_t)info.me_last_pgno + 1) * ms.ms_psize;
}

/* Pages of [from, from + len) of data.mdb in memory, by mincore through a
 * read-only map of our own (which touches none of them). */
static size_t resident_pages(const char *dir, size_t from, size_t len)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/.s3rdma/index/data.mdb", dir);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t off = from / pg * pg, n = (len + from - off + pg - 1) / pg;
    void *map = mmap(NULL, n * pg, PROT_READ, MAP_SHARED, fd, (off_t)off);
    assert_true(map != MAP_FAILED);
    unsigned char *vec = malloc(n);
    assert_int_equal(mincore(map, n * pg, vec), 0);
    size_t in = 0;
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    munmap(map, n * pg);
    close(fd);
    return in;
}

/* Whether this kernel takes MADV_POPULATE_WRITE (Linux 5.14) on a shared
 * map of a file in dir; without it the map reserves blocks with fallocate,
 * which brings no page into memory (nothing for this test to see). */
static int kernel_populates(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/probe", dir);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    assert_int_equal(ftruncate(fd, (off_t)pg), 0);
    void *map = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    int ok = madvise(map, pg, MADV_POPULATE_WRITE) == 0;
    munmap(map, pg);
    close(fd);
    unlink(p);
    return ok;
}

/* After commits that grew the index, the next local_map_ahead / 2 bytes
 * past its last page come into memory without a commit touching them
 * (without the thread they stay holes until a commit faults each in). */
static void test_relaxed_pages_ahead_are_ready(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_open(f->dir, STOR_DURABILITY_RELAXED, &f->st), STOR_OK);
    if (!((lstor_t *)f->st)->map || !kernel_populates(f->tmp))
        skip(); /* no writable map (a file size limit), or a kernel before 5.14 */
    stor_set_inline_max(f->st, S3R_INLINE_MAX_DEFAULT);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    char body[4096], key[32];
    memset(body, 'x', sizeof body);
    for (int i = 0; i < 2000; i++) {
        snprintf(key, sizeof key, "k%04d", i);
        assert_int_equal(tu_put(f->st, "b", key, body, sizeof body), STOR_OK);
    }
    size_t end = last_end(f->st), ahead = local_map_ahead(end) / 2;
    size_t want = ahead / (size_t)sysconf(_SC_PAGESIZE), in = 0;
    /* The thread refills after the commit that asked; give it time. */
    for (int tries = 0; tries < 500 && in < want; tries++) {
        in = resident_pages(f->dir, end, ahead);
        if (in < want)
            nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    assert_int_equal(in, want);
    /* The objects read back whole, and again after a reopen (the ready
     * pages are free space, not the tree's). */
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 2000; i += 111) {
            snprintf(key, sizeof key, "k%04d", i);
            size_t n = 0;
            char *got = tu_get(f->st, "b", key, &n);
            assert_non_null(got);
            assert_int_equal(n, sizeof body);
            assert_memory_equal(got, body, sizeof body);
            free(got);
        }
        stor_close(f->st);
        assert_int_equal(stor_open(f->dir, STOR_DURABILITY_RELAXED, &f->st), STOR_OK);
    }
}

/* Fsync mode has no writable map, and no thread. */
static void test_fsync_has_no_map(void **state)
{
    fx_t *f = *state;
    assert_int_equal(stor_open(f->dir, STOR_DURABILITY_FSYNC, &f->st), STOR_OK);
    assert_null(((lstor_t *)f->st)->map);
    assert_int_equal(stor_bucket_create(f->st, "b", "o"), STOR_OK);
    assert_int_equal(tu_put(f->st, "b", "k", "v", 1), STOR_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_relaxed_pages_ahead_are_ready, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_has_no_map, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
