/* Human sizes: "4096", "4KiB", "4KB", "1MB", "1m", "2GiB". KB/MB/GB and the
 * bare letters are powers of 1024 as in the SPT tool; KiB etc. the same. */
#ifndef S3R_COMMON_SIZE_H
#define S3R_COMMON_SIZE_H

#include <stdint.h>

/* Returns 0 and writes *out_p, or -1 on malformed input or overflow. */
int size_parse(const char *s, uint64_t *out_p);

#endif
