/* Many short sessions, each in a client process of its own that opens a
 * session (rdma_session_open), closes it (rdma_session_close) at once or
 * after one region and a short wait, and exits: no client process may
 * abort, every one closes cleanly, and the server ends with no session.
 *
 * What it guards against: UCX 1.13 aborting a client as it closes
 * (ucp_request.c:684, "got REP message"). Over TCP a client queues its
 * wireup reply (REP) to the server's wireup request until the server has
 * acknowledged the client's own connection to its UCX port, and a forced
 * close, the server's endpoint going away or the worker's destruction
 * purges the queue, on which UCX 1.13 asserts. The rules that prevent it
 * (the probe completes the wireup; close flushes the endpoint, closes it,
 * and only then the lifeline) are in src/rdma/README.md, "Wireup and
 * close". Without them (main before this test), under UCX_TLS=tcp, 23
 * clients in 160 (5 runs of 32) aborted here, all of them with a region,
 * and every run failed; either rule alone passes. Under the default
 * transports (local sessions over shared memory, error mode NONE) none
 * aborted even then; there the test checks that short sessions close
 * cleanly.
 *
 * The server runs in this process; each client is this binary re-executed
 * with --child (a fresh process: UCX is not fork-safe), PARALLEL at once.
 * Rounds: S3R_TEST_CLOSE_ROUNDS (default 32). */
#include "rdma_test_util.h"
#include "rdma/rdma_wire.h"
#include "common/clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_ROUNDS 32
#define PARALLEL       4
/* How long a child with a region uses it before closing: a short request. */
#define USE_MS 10

enum { CHILD_OK = 0, CHILD_OPEN_FAILED = 3, CHILD_REGION_FAILED = 4 };

/* Scheduling made certain (in the server's process only, set by main).
 * The server's calls of these two libucp functions resolve to the
 * definitions below; each calls libucp's own (the next in lookup order).
 *
 *   ucp_am_send_nbx: the probe is held until UCX can send it at once (at
 *     most PROBE_HOLD_MS), as when the bootstrap thread loses its core
 *     between creating the endpoint and sending the probe while the
 *     endpoint's TCP connection to the client is acknowledged.
 *   ucp_worker_progress: after each probe, the server's progress threads
 *     do not progress their workers for STALL_MS, as when they wait for a
 *     core: the client's TCP connection to the server's UCX port waits that
 *     long for its acknowledgement (the bootstrap thread, which answers
 *     REGION_ADD, runs on).
 *
 * Together they gave the session a client could close with a wireup reply
 * still queued: UCX sent a plain probe at once, with no wireup, which the
 * session's first REGION_ADD started instead (the server unpacking the
 * rkey), just before the client closed, while the reply waited for the
 * connection. */
static int scheduling_forced;
static _Atomic uint64_t stall_until_ms;
#define PROBE_HOLD_MS 1000
#define STALL_MS      100

#define NEXT_IN_LOOKUP(fn) ((__typeof__(&fn))dlsym(RTLD_NEXT, #fn))

ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void *header, size_t header_length,
                                 const void *buffer, size_t count, const ucp_request_param_t *param)
{
    static __typeof__(&ucp_am_send_nbx) next;
    if (!next)
        next = NEXT_IN_LOOKUP(ucp_am_send_nbx);
    if (!scheduling_forced || id != RDMA_AM_PROBE)
        return next(ep, id, header, header_length, buffer, count, param);
    ucp_request_param_t now = *param;
    now.op_attr_mask |= UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    ucs_status_ptr_t r = UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE);
    for (uint64_t end = clock_mono_ms() + PROBE_HOLD_MS;
         UCS_PTR_STATUS(r) == UCS_ERR_NO_RESOURCE && clock_mono_ms() < end; usleep(500))
        r = next(ep, id, header, header_length, buffer, count, &now);
    if (UCS_PTR_STATUS(r) == UCS_ERR_NO_RESOURCE)
        r = next(ep, id, header, header_length, buffer, count, param);
    atomic_store(&stall_until_ms, clock_mono_ms() + STALL_MS);
    return r;
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    static __typeof__(&ucp_worker_progress) next;
    if (!next)
        next = NEXT_IN_LOOKUP(ucp_worker_progress);
    uint64_t until = scheduling_forced ? atomic_load(&stall_until_ms) : 0, now;
    char name[16] = "";
    if (until && (now = clock_mono_ms()) < until &&
        pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 &&
        strcmp(name, "s3r-progress") == 0)
        usleep((useconds_t)(until - now) * 1000);
    return next(worker);
}

/* One client: opens a session, with a region when with_region, and closes
 * it. The exit code says how far it got. */
static int child_main(int port, int with_region)
{
    log_set_level(LOG_LVL_ERROR);
    rdma_client_config_t cfg = {.host = "127.0.0.1",
                                .port = port,
                                .access_key = "AKIDONE",
                                .secret_key = "secret-one",
                                .timeout_ms = 5000};
    char err[256] = "";
    rdma_session_t *s = NULL;
    if (rdma_session_open(&cfg, &s, err, sizeof(err)) != 0) {
        fprintf(stderr, "child: open: %s\n", err);
        return CHILD_OPEN_FAILED;
    }
    int rc = CHILD_OK;
    if (with_region) {
        void *addr = NULL;
        rdma_region_t *r = NULL;
        if (rdma_region_alloc(s, 4096, &addr, &r, err, sizeof(err)) != 0) {
            fprintf(stderr, "child: region: %s\n", err);
            rc = CHILD_REGION_FAILED;
        }
        usleep(USE_MS * 1000);
    }
    rdma_session_close(s);
    return rc;
}

static unsigned env_uint(const char *name, unsigned dflt)
{
    const char *v = getenv(name);
    return v && *v ? (unsigned)strtoul(v, NULL, 10) : dflt;
}

static pid_t spawn_child(int port, int with_region)
{
    char ps[16], rs[4];
    snprintf(ps, sizeof(ps), "%d", port);
    snprintf(rs, sizeof(rs), "%d", with_region);
    const char *const argv[] = {"test_rdma_close", "--child", ps, rs, NULL};
    return test_spawn_self(argv, -1);
}

static void test_short_sessions_never_abort(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    int port = rdma_server_port(srv);
    unsigned rounds = env_uint("S3R_TEST_CLOSE_ROUNDS", DEFAULT_ROUNDS);
    unsigned started = 0, done = 0, ok = 0, aborted = 0, other = 0;
    pid_t running[PARALLEL] = {0};
    while (done < rounds) {
        for (int i = 0; i < PARALLEL && started < rounds; i++) {
            if (running[i] == 0) {
                running[i] = spawn_child(port, (int)(started % 2));
                started++;
            }
        }
        int status = 0;
        pid_t pid;
        while ((pid = waitpid(-1, &status, 0)) < 0 && errno == EINTR) {
        }
        assert_true(pid > 0);
        for (int i = 0; i < PARALLEL; i++)
            if (running[i] == pid)
                running[i] = 0;
        done++;
        if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_OK) {
            ok++;
        } else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT) {
            aborted++;
        } else {
            other++;
            print_message("a client ended with status 0x%x\n", status);
        }
    }
    print_message("[ CLOSE    ] %u short sessions: %u closed cleanly, %u clients aborted, %u "
                  "other failures\n",
                  rounds, ok, aborted, other);
    assert_int_equal(aborted, 0);
    assert_int_equal(other, 0);
    for (int i = 0; i < 1000 && rdma_server_session_resident(srv) != 0; i++)
        usleep(10000);
    assert_int_equal(rdma_server_session_resident(srv), 0);
    rdma_server_stop(srv);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child_main(atoi(argv[2]), atoi(argv[3]));
    log_set_level(LOG_LVL_ERROR);
    scheduling_forced = 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_sessions_never_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
