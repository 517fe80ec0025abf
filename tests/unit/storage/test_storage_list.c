/* Listing: byte order, prefix, after and seek, including keys too long for
 * an LMDB key (hashed into blocks that the iterator sorts in memory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "stor_test_util.h"
#include "storage/local/local_internal.h"

#define MAX_KEYS 64

typedef struct fx {
    char *dir;
    stor_t *st;
    char *keys[MAX_KEYS]; /* sorted */
    size_t n;
} fx_t;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *rep(char c, size_t n, const char *tail)
{
    size_t t = strlen(tail);
    char *s = malloc(n + t + 1);
    memset(s, c, n);
    memcpy(s + n, tail, t + 1);
    return s;
}

static void add(fx_t *f, char *k)
{
    assert_true(f->n < MAX_KEYS);
    f->keys[f->n++] = k;
}

static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof *f);
    f->dir = tu_mkdtemp();
    assert_int_equal(stor_open(f->dir, STOR_DURABILITY_RELAXED, &f->st), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "lb", "o"), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "la", "o"), STOR_OK);
    assert_int_equal(stor_bucket_create(f->st, "lc", "o"), STOR_OK);
    const size_t P = local_ikey_plen(2);
    /* Long keys (~1000 bytes) sharing a 600-byte prefix, so all of them fall
     * in one hashed block; they differ past P in ways that make hash order
     * and byte order disagree. */
    const char *tails[] = {"z", "a", "m", "ma", "m\x7f", "b/c", "b/d", "b", "\xc3\xa9", "0"};
    for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
        char *k = rep('a', 600, "");
        char *t = rep('q', 390, tails[i]); /* total ~990 bytes */
        char *full = malloc(strlen(k) + strlen(t) + 1);
        strcpy(full, k);
        strcat(full, t);
        free(k);
        free(t);
        add(f, full);
    }
    /* Long keys in another block (prefix differs before P). */
    add(f, rep('a', 200, "B-long-" /* then pad */));
    {
        char *k = f->keys[f->n - 1];
        char *pad = rep('x', 800, "");
        char *full = malloc(strlen(k) + strlen(pad) + 1);
        strcpy(full, k);
        strcat(full, pad);
        free(k);
        free(pad);
        f->keys[f->n - 1] = full;
    }
    add(f, rep('a', 1022, "zz")); /* 1024 bytes */
    /* Short keys right around the block boundaries. */
    add(f, rep('a', P, "")); /* exactly P: sorts before the block */
    add(f, rep('a', P - 1, ""));
    add(f, rep('a', P - 1, "b")); /* P bytes, greater than the block */
    add(f, rep('a', P + 1, ""));  /* P+1: long, in the block */
    add(f, rep('a', 600, "q"));   /* long, prefix of the block's keys */
    add(f, strdup("a"));
    add(f, strdup(""));
    add(f, strdup("b"));
    add(f, strdup("a/"));
    add(f, strdup("photos/2024/x.jpg"));
    add(f, strdup("photos/2025/y.jpg"));
    add(f, strdup("\xe6\x97\xa5\xe6\x9c\xac"));
    /* "" is not a valid key name for a test object; drop it. */
    for (size_t i = 0; i < f->n; i++)
        if (f->keys[i][0] == '\0') {
            free(f->keys[i]);
            f->keys[i] = f->keys[--f->n];
            break;
        }
    /* Insert in a scrambled order. */
    for (size_t i = 0; i < f->n; i++) {
        size_t j = (i * 7 + 3) % f->n;
        char *t = f->keys[i];
        f->keys[i] = f->keys[j];
        f->keys[j] = t;
    }
    for (size_t i = 0; i < f->n; i++) {
        assert_int_equal(tu_put(f->st, "lb", f->keys[i], "v", 1), STOR_OK);
        /* Neighbouring buckets must not leak into listings. */
        assert_int_equal(tu_put(f->st, "la", f->keys[i], "w", 1), STOR_OK);
    }
    assert_int_equal(tu_put(f->st, "lc", "a", "w", 1), STOR_OK);
    qsort(f->keys, f->n, sizeof *f->keys, cmp_str);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    for (size_t i = 0; i < f->n; i++)
        free(f->keys[i]);
    stor_close(f->st);
    tu_rmrf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* Lists with the given bounds and checks the result against the sorted,
 * filtered key set. */
static void check_list(fx_t *f, const char *prefix, const char *after)
{
    stor_iter_t *it;
    assert_int_equal(stor_iter_open(f->st, "lb", prefix, after, &it), STOR_OK);
    size_t plen = prefix ? strlen(prefix) : 0;
    size_t j = 0;
    for (;;) {
        while (j < f->n && ((plen && strncmp(f->keys[j], prefix, plen) != 0) ||
                            (after && *after && strcmp(f->keys[j], after) <= 0)))
            j++;
        const char *k;
        size_t kl;
        stor_meta_t m;
        int r = stor_iter_next(it, &k, &kl, j % 2 ? &m : NULL);
        if (j == f->n) {
            assert_int_equal(r, 0);
            break;
        }
        assert_int_equal(r, 1);
        assert_int_equal(kl, strlen(f->keys[j]));
        assert_memory_equal(k, f->keys[j], kl);
        if (j % 2) {
            assert_int_equal(m.size, 1);
            stor_meta_free(&m);
        }
        j++;
    }
    stor_iter_close(it);
}

static void test_list_all_in_order(void **state)
{
    fx_t *f = *state;
    check_list(f, "", NULL);
    check_list(f, NULL, "");
}

static void test_list_prefix_after(void **state)
{
    fx_t *f = *state;
    const size_t P = local_ikey_plen(2);
    /* Every key, its truncations at and around P, and its successors, as
     * both prefix and after. */
    for (size_t i = 0; i < f->n; i++) {
        const char *k = f->keys[i];
        size_t kl = strlen(k);
        size_t cuts[] = {0, 1, P - 1, P, P + 1, 600, 601, kl - 1, kl};
        for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
            if (cuts[c] > kl)
                continue;
            char *t = strndup(k, cuts[c]);
            check_list(f, t, NULL);
            check_list(f, NULL, t);
            check_list(f, "a", t);
            free(t);
        }
        char *succ = malloc(kl + 2);
        memcpy(succ, k, kl);
        succ[kl] = '\x01';
        succ[kl + 1] = '\0';
        check_list(f, NULL, succ);
        free(succ);
    }
    check_list(f, "photos/", NULL);
    check_list(f, "photos/", "photos/2024/x.jpg");
    check_list(f, "nothing", NULL);
    check_list(f, "\xff", NULL);
}

/* seek skips forward from wherever the iterator is, as a delimiter listing
 * does after a common prefix. */
static void test_list_seek(void **state)
{
    fx_t *f = *state;
    for (size_t start = 0; start < f->n; start += 3) {
        for (size_t target = start + 1; target < f->n; target += 2) {
            stor_iter_t *it;
            assert_int_equal(stor_iter_open(f->st, "lb", "", NULL, &it), STOR_OK);
            const char *k;
            size_t kl;
            for (size_t i = 0; i <= start; i++)
                assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 1);
            assert_memory_equal(k, f->keys[start], kl);
            stor_iter_seek(it, f->keys[target], strlen(f->keys[target]));
            for (size_t j = target; j < f->n; j++) {
                assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 1);
                assert_int_equal(kl, strlen(f->keys[j]));
                assert_memory_equal(k, f->keys[j], kl);
            }
            assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 0);
            stor_iter_close(it);
        }
    }
    /* Seeking backwards never re-emits a key. */
    stor_iter_t *it;
    const char *k;
    size_t kl;
    assert_int_equal(stor_iter_open(f->st, "lb", "", NULL, &it), STOR_OK);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 1);
    stor_iter_seek(it, "", 0);
    assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 1);
    assert_memory_equal(k, f->keys[5], kl);
    /* Seek to a key between entries (a delimiter successor like "a0"). */
    stor_iter_seek(it, "photos/2025", 11);
    assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 1);
    assert_memory_equal(k, "photos/2025/y.jpg", kl);
    stor_iter_close(it);
}

static void test_list_consistent_snapshot(void **state)
{
    fx_t *f = *state;
    stor_iter_t *it;
    const char *k;
    size_t kl;
    assert_int_equal(stor_iter_open(f->st, "lb", "", NULL, &it), STOR_OK);
    assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 1);
    /* Changes after open are not seen by this iterator. */
    assert_int_equal(tu_put(f->st, "lb", "zzzz-new", "v", 1), STOR_OK);
    assert_int_equal(stor_delete(f->st, TU_B(f->st, "lb"), f->keys[f->n - 1]), STOR_OK);
    size_t count = 1;
    while (stor_iter_next(it, &k, &kl, NULL) == 1)
        count++;
    assert_int_equal(count, f->n);
    assert_memory_equal(k, f->keys[f->n - 1], kl);
    stor_iter_close(it);

    assert_int_equal(stor_iter_open(f->st, "nob", "", NULL, &it), STOR_ERR_NO_BUCKET);
    assert_int_equal(stor_iter_open(f->st, "lc", "", NULL, &it), STOR_OK);
    assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 1);
    assert_memory_equal(k, "a", 1);
    assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 0);
    assert_int_equal(stor_iter_next(it, &k, &kl, NULL), 0);
    stor_iter_close(it);
    stor_iter_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_all_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_prefix_after, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_seek, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_consistent_snapshot, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
