/* Floors for bench/put: single-core speed of each body digest s3rdmad may
 * run (MD5, SHA-256, SHA-1 through OpenSSL; CRC32C through ISA-L; CRC-64/NVME
 * through s3rdma's own src/common/hash.c) and of memcpy, over one buffer of
 * -s MiB, best of -r passes. Prints "name=GBps" pairs on one line. */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/hash.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile uint64_t sink;

static double run(const char *what, const uint8_t *buf, uint8_t *dst, size_t len)
{
    double t0 = now();
    if (strcmp(what, "crc32c") == 0) {
        sink += hash_crc32c_update(0, buf, len);
    } else if (strcmp(what, "crc64nvme") == 0) {
        sink += hash_crc64nvme_update(0, buf, len);
    } else if (strcmp(what, "memcpy") == 0) {
        memcpy(dst, buf, len);
        sink += dst[len / 2];
    } else {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n;
        EVP_Digest(buf, len, md, &n, EVP_get_digestbyname(what), NULL);
        sink += md[0];
    }
    return (double)len / (now() - t0) / 1e9;
}

int main(int argc, char **argv)
{
    size_t mib = 64;
    int reps = 3, opt;
    while ((opt = getopt(argc, argv, "s:r:")) != -1) {
        if (opt == 's')
            mib = strtoul(optarg, NULL, 10);
        else if (opt == 'r')
            reps = atoi(optarg);
        else
            return 2;
    }
    size_t len = mib << 20;
    uint8_t *buf = malloc(len), *dst = malloc(len);
    if (!buf || !dst)
        return 1;
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 2654435761u >> 11);
    memset(dst, 1, len);
    static const char *const names[] = {"md5", "sha256", "sha1", "crc32c", "crc64nvme", "memcpy"};
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        double best = 0;
        for (int r = 0; r < reps; r++) {
            double g = run(names[k], buf, dst, len);
            best = g > best ? g : best;
        }
        printf("%s%s=%.2f", k ? " " : "", names[k], best);
    }
    printf("\n");
    return 0;
}
