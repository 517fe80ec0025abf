/* Is a span of this process's address space a peer's shared memory?
 *
 * On shared-memory transports UCX turns a client's rkey into a pointer into
 * this process (ucp_rkey_ptr) without any bounds check: the client announces
 * addr/len and packs the rkey itself. Before a region is accepted its span is
 * checked against what the kernel really mapped (/proc/self/maps): one shared
 * mapping must hold all of it, so an over-announced region cannot reach the
 * server's heap, stacks or libraries, and the span's last byte must be backed
 * by the mapped file (a mapping longer than its file faults past the end). */
#include "rdma/rdma_server_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

/* Reads one byte at p without faulting this process: process_vm_readv on
 * ourselves returns EFAULT where a load would raise SIGSEGV or SIGBUS. */
static int byte_is_backed(const void *p)
{
    uint8_t b;
    struct iovec local = {.iov_base = &b, .iov_len = 1};
    struct iovec remote = {.iov_base = (void *)p, .iov_len = 1};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
}

int rdma_span_is_shared_mapping(const void *p, uint64_t len)
{
    uintptr_t a = (uintptr_t)p;
    if (len == 0 || a + len < a)
        return 0;
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    int ok = 0;
    while (getline(&line, &cap, f) > 0) {
        uintptr_t start, end;
        char perms[5];
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &start, &end, perms) != 3)
            continue;
        if (a < start || a >= end)
            continue;
        /* The mapping holding the first byte must hold the last one too,
         * be shared (a peer's segment, never our private memory) and be
         * readable and writable (GET writes into it, PUT reads it). */
        ok = len <= end - a && perms[0] == 'r' && perms[1] == 'w' && perms[3] == 's';
        break;
    }
    free(line);
    fclose(f);
    return ok && byte_is_backed((const uint8_t *)p + len - 1);
}
