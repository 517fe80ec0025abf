/* Shared fixtures for the RDMA unit tests: an in-process server on a free
 * port with two known users, and client configs for it. Every test binary
 * runs under both UCX_TLS=tcp and the default transports (see README). */
#ifndef S3R_TESTS_RDMA_TEST_UTIL_H
#define S3R_TESTS_RDMA_TEST_UTIL_H

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>
#include <cmocka.h>
#include <ucp/api/ucp.h>

#include "common/log.h"
#include "rdma/rdma_client.h"
#include "rdma/rdma_server.h"

static inline int test_lookup(void *ctx, const char *ak, char *secret, size_t max)
{
    (void)ctx;
    const char *s = NULL;
    if (strcmp(ak, "AKIDONE") == 0)
        s = "secret-one";
    else if (strcmp(ak, "AKIDTWO") == 0)
        s = "secret-two";
    if (!s)
        return -1;
    snprintf(secret, max, "%s", s);
    return 0;
}

static inline rdma_server_t *test_server_start(unsigned max_regions, unsigned max_sessions)
{
    rdma_server_config_t cfg;
    rdma_server_config_defaults(&cfg);
    cfg.listen_host = "127.0.0.1";
    cfg.port = 0;
    cfg.n_workers = 1;
    cfg.staging_bytes = 8u << 20;
    cfg.chunk_bytes = 1u << 20;
    cfg.lookup_secret = test_lookup;
    /* The server-wide bounds are tested with one user; the fair shares
     * (user_share) have tests of their own. */
    cfg.user_share = 100;
    if (max_regions)
        cfg.max_regions_per_session = max_regions;
    if (max_sessions)
        cfg.max_sessions = max_sessions;
    rdma_server_t *srv = NULL;
    if (rdma_server_start(&cfg, &srv) < 0)
        return NULL;
    return srv;
}

static inline rdma_client_config_t test_client_cfg(rdma_server_t *srv, const char *ak,
                                                   const char *sk)
{
    rdma_client_config_t c = {0};
    c.host = "127.0.0.1";
    c.port = rdma_server_port(srv);
    c.access_key = ak;
    c.secret_key = sk;
    c.timeout_ms = 5000;
    return c;
}

/* Waits up to 5 s for the session count to reach want. */
static inline unsigned test_wait_count(rdma_server_t *srv, unsigned want)
{
    unsigned n = 0;
    for (int i = 0; i < 500; i++) {
        n = rdma_server_session_count(srv);
        if (n == want)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return n;
}

/* 1 when UCX itself can make a context here (with the RMA features the
 * server asks for). */
static inline int test_ucx_usable(void)
{
    ucp_config_t *uc;
    ucp_context_h ctx;
    if (ucp_config_read(NULL, NULL, &uc) != UCS_OK)
        return 0;
    ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                      .features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP};
    ucs_status_t st = ucp_init(&p, uc, &ctx);
    ucp_config_release(uc);
    if (st != UCS_OK)
        return 0;
    ucp_cleanup(ctx);
    return 1;
}

/* Forks a child that runs this test binary again (/proc/self/exe) with argv
 * (argv[0] its name, NULL last), and that dies with the parent
 * (PR_SET_PDEATHSIG: a child stalled at its stage must not outlive a parent
 * that the server's abort took down; it exits 126 if the parent died before
 * that was armed, 127 if the exec failed). out_fd >= 0: the child's stdout
 * is out_fd (a pipe the test reads the child's answers from, made with
 * O_CLOEXEC so that the child keeps no other end), and UCX logs to stderr
 * so that no log line reads as an answer; the caller closes its out_fd. */
static inline pid_t test_spawn_self(const char *const argv[], int out_fd)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        if (out_fd >= 0) {
            dup2(out_fd, 1);
            setenv("UCX_LOG_FILE", "stderr", 1);
        }
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* Starts the shared fixture server. Skips the test only when UCX itself is
 * unusable; a server that fails to start on a working UCX is a failure. */
#define TEST_SERVER_OR_SKIP(srv, regions, sessions)                                                \
    do {                                                                                           \
        (srv) = test_server_start((regions), (sessions));                                          \
        if (!(srv)) {                                                                              \
            if (test_ucx_usable())                                                                 \
                fail_msg("the RDMA server failed to start although UCX works");                    \
            print_message("[  SKIP    ] UCX is unavailable: the RDMA server cannot start\n");      \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

#endif
