/* rdma_span_is_shared_mapping: the check that stands between a client's
 * announced region and the server's own memory on shared-memory transports
 * (rdma_region.c). Spans inside one shared, writable, backed mapping pass;
 * anything reaching past it, into private memory, or past the end of the
 * mapped file does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "rdma/rdma_server_internal.h"

#define MIB (1u << 20)

static int shm_fd(size_t size)
{
    int fd = memfd_create("s3r-mapcheck", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0);
    return fd;
}

static void test_inside_one_shared_mapping(void **state)
{
    (void)state;
    int fd = shm_fd(MIB);
    uint8_t *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(p != MAP_FAILED);
    assert_int_equal(rdma_span_is_shared_mapping(p, MIB), 1);
    assert_int_equal(rdma_span_is_shared_mapping(p + 4096, MIB - 4096), 1);
    assert_int_equal(rdma_span_is_shared_mapping(p + MIB - 1, 1), 1);
    /* One byte past the segment, or starting before it: refused. */
    assert_int_equal(rdma_span_is_shared_mapping(p, MIB + 1), 0);
    assert_int_equal(rdma_span_is_shared_mapping(p, 64ull * MIB), 0);
    assert_int_equal(rdma_span_is_shared_mapping(p - 4096, MIB), 0);
    /* Degenerate spans. */
    assert_int_equal(rdma_span_is_shared_mapping(p, 0), 0);
    assert_int_equal(rdma_span_is_shared_mapping(p, UINT64_MAX), 0);
    munmap(p, MIB);
    close(fd);
}

static void test_private_memory_refused(void **state)
{
    (void)state;
    uint8_t *heap = malloc(MIB);
    assert_non_null(heap);
    assert_int_equal(rdma_span_is_shared_mapping(heap, 4096), 0);
    free(heap);
    uint8_t stack[64];
    assert_int_equal(rdma_span_is_shared_mapping(stack, sizeof(stack)), 0);
    uint8_t *anon = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(anon != MAP_FAILED);
    assert_int_equal(rdma_span_is_shared_mapping(anon, MIB), 0);
    munmap(anon, MIB);
    /* Code of this process. */
    assert_int_equal(rdma_span_is_shared_mapping((const void *)&test_private_memory_refused, 1), 0);
}

static void test_read_only_or_unbacked_refused(void **state)
{
    (void)state;
    int fd = shm_fd(MIB);
    uint8_t *ro = mmap(NULL, MIB, PROT_READ, MAP_SHARED, fd, 0);
    assert_true(ro != MAP_FAILED);
    assert_int_equal(rdma_span_is_shared_mapping(ro, MIB), 0);
    munmap(ro, MIB);
    /* A mapping longer than its file (what a forged rkey length makes UCX
     * map): the tail would fault, so a span reaching it is refused. */
    uint8_t *longer = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(longer != MAP_FAILED);
    assert_int_equal(rdma_span_is_shared_mapping(longer, MIB), 1);
    assert_int_equal(rdma_span_is_shared_mapping(longer, 4 * MIB), 0);
    munmap(longer, 4 * MIB);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inside_one_shared_mapping),
        cmocka_unit_test(test_private_memory_refused),
        cmocka_unit_test(test_read_only_or_unbacked_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
