/* s3rdmad settings: defaults, YAML file, S3RDMA_* environment variables and
 * command-line flags, with precedence flag > env > file > default. */
#ifndef S3R_SERVER_CONFIG_H
#define S3R_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "s3/s3_server.h"

typedef struct server_config {
    char *data_dir;     /* "./data" */
    char *listen;       /* "127.0.0.1:9000" */
    char *durability;   /* "fsync" | "relaxed" */
    char *region;       /* "us-east-1" */
    char *log_level;    /* "info" */
    char *domains;      /* comma-separated virtual-host suffixes: "localhost" */
    char *rdma_enabled; /* "true" | "false" */
    char *rdma_listen;  /* "" = the HTTP host, port rdma_port */
    char *rdma_port;    /* "9100" */
    char *rdma_workers; /* "0" = one per core */
    char *rdma_max_sessions;
    char *rdma_max_sessions_per_user;
    char *rdma_max_pending;
    char *rdma_max_pending_per_source;
    char *rdma_native_threads;
    char *rdma_max_native_per_session;
    char *rdma_max_native;
    char *rdma_socket;                 /* "" = @s3rdma.<port>, "off" = none */
    char *rdma_trusted_uids;           /* "1000,1001" */
    char *rdma_staging;                /* registered staging pool size: "64MiB" */
    char *rdma_chunk;                  /* data mover pipeline chunk: "1MiB" */
    char *http_max_connections;        /* "4096" */
    char *http_max_connections_per_ip; /* "64"; "0" = no limit */
    char *http_idle_timeout;           /* seconds: "60" */
    char *http_head_timeout;           /* seconds: "10"; "0" = no limit */
    char *http_min_body_rate;          /* bytes per second, a size: "1024"; "0" = no limit */
    char *http_body_rate_window;       /* seconds: "10" */

    char *storage_backend;  /* "local" | "rados" */
    char *rados_conf;       /* ceph.conf path; "" = librados' search */
    char *rados_user;       /* "admin" */
    char *rados_keyring;    /* "" = the conf's */
    char *rados_pool;       /* data pool; required with rados */
    char *rados_index_pool; /* "" = rados_pool */
    char *rados_gc_grace;   /* seconds: "900" */
    char *rados_op_timeout; /* seconds: "10" */

    s3_user_t *users; /* from the file's users: list and S3RDMA_ROOT_USER/PASSWORD */
    size_t n_users;
    char *config_path;
} server_config_t;

/* Fills cfg from argv, the environment and the config file. Prints the
 * problem to stderr and returns -1 on bad input; returns 1 when --help or
 * --version was handled (exit 0); 0 otherwise. */
int server_config_load(server_config_t *cfg, int argc, char **argv);
void server_config_free(server_config_t *cfg);

/* Parses a comma-separated uid list into uids (at most max; NULL only
 * validates). Returns the count, or -1 if malformed or longer than
 * SERVER_MAX_TRUSTED_UIDS. */
#define SERVER_MAX_TRUSTED_UIDS 64
int server_parse_uids(const char *s, unsigned *uids, size_t max);

/* The http.* settings as numbers (validated by server_config_load; prints
 * the problem and returns -1 on bad input). */
typedef struct server_http_limits {
    unsigned max_connections;
    unsigned max_connections_per_ip;
    unsigned idle_timeout_s;
    unsigned head_timeout_s;
    unsigned long long min_body_rate;
    unsigned body_rate_window_s;
} server_http_limits_t;
int server_config_http(const server_config_t *cfg, server_http_limits_t *out);

/* Splits "host:port" / "[v6]:port". Returns -1 if malformed. */
int server_parse_hostport(const char *s, char *host, size_t host_len, int *port_p);

/* Adds a user (strings copied). Returns -1 when out of memory. */
int server_config_add_user(server_config_t *cfg, const char *access_key, const char *secret_key);

#endif
