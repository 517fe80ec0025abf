/* s3rdma-bench's command line: the SPT S3-RDMA driver's verbs, flags and
 * defaults, plus ours (docs/bench-tool.md). Parsed once into bench_opts_t;
 * the RDMA environment overrides (RDMA_*) are applied by libs3rdma itself in
 * s3r_client_create, so they are not parsed here, except SPT_RDMA_ENABLED,
 * which also decides the default transport. */
#ifndef S3R_BENCH_OPTS_H
#define S3R_BENCH_OPTS_H

#include <s3rdma.h>
#include <stdint.h>
#include <stdio.h>

/* The operations a run is made of. */
typedef enum bench_op { OP_READ, OP_WRITE, OP_DELETE, OP_LIST, OP_HEAD, OP_COUNT } bench_op_t;

/* --native-inline not given: libs3rdma's default. */
#define BENCH_INLINE_DEFAULT UINT64_MAX

typedef enum bench_verb { VERB_RUN, VERB_VERIFY, VERB_HELP, VERB_VERSION } bench_verb_t;

typedef struct bench_opts {
    bench_verb_t verb;
    const char *workload;   /* run: "write", "read", "mixed", "delete", "list", "head", "walk" */
    int walk;               /* run walk: list every key, page by page (walk.h), no mix */
    int walk_pages;         /* run walk: pages per listing call (s3r_object_list_pages) */
    unsigned mix[OP_COUNT]; /* weight of each operation (run) */
    char *endpoints;        /* "http://h:p,http://h:p" (allocated) */
    const char *rdma_endpoint;
    const char *access_key, *secret_key, *bucket, *prefix;
    int aws_credentials; /* no keys given: the AWS profile's (AWS_PROFILE, else default) */
    int threads, inflight;
    uint64_t size_min, size_max;
    double duration_s;     /* used when ops is 0 */
    double warmup_s;       /* operations started this long after the start are not counted */
    double gap_s;          /* each thread sleeps this long after each request (inflight 1) */
    uint64_t ops;          /* 0: run for duration_s */
    uint64_t seed_objects; /* the key space; 0: the objects already under prefix */
    int use_rdma;
    s3r_transport_t transport;
    const char *rdma_local_ip, *rdma_device, *rdma_log_level;
    uint64_t rdma_threshold;
    int rdma_fallback, rdma_timeout_ms, rdma_buffer_pool, allow_missing_bytes_header;
    uint64_t native_inline;  /* BENCH_INLINE_DEFAULT: the library's */
    uint64_t part_size;      /* PUTs above it go multipart in parts of it; 0: never */
    int parts_in_flight;     /* of one multipart PUT; 0: the library's default */
    int client_per_thread;   /* each thread its own clients (sessions), not one per kind */
    int verify;              /* check every byte read (1) or only its length (0) */
    const char *json_path;
    int live; /* the per-second line: 1 on a terminal */
} bench_opts_t;

/* Parses argv (and SPT_RDMA_ENABLED) into *o. 0 on success; otherwise
 * prints the reason to stderr and returns 2 (the usage exit code). The
 * strings in *o point into argv or are owned by *o (bench_opts_free). */
int bench_opts_parse(int argc, char **argv, bench_opts_t *o);
void bench_opts_free(bench_opts_t *o);
/* Fills cfg from o (strings borrowed from o). */
void bench_opts_config(const bench_opts_t *o, s3r_config_t *cfg);
/* "read", "write", "delete", "list", "head". */
const char *bench_op_name(bench_op_t op);
void bench_usage(FILE *f);

#endif
