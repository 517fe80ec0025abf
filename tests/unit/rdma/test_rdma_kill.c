/* A client killed with SIGKILL in the middle of a transfer, many times: the
 * transfer ends (OK or RDMA_TRANSPORT, never a hang), the session goes away,
 * the staging chunks come back, and the server's memory stays flat.
 *
 * The client runs in a child process started by re-executing this binary
 * with --child (a fresh process: UCX state is not fork-safe). */
#include "rdma_test_util.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "rdma/rdma_net.h"

#define SPAN   (16u << 20)
#define ROUNDS 12

static int child_main(int port, int remote)
{
    /* remote: bootstrap over TCP (the net domain), else the Unix socket. */
    rdma_client_config_t cfg = {.host = "127.0.0.1",
                                .port = port,
                                .socket = remote ? "" : NULL,
                                .access_key = "AKIDONE",
                                .secret_key = "secret-one",
                                .timeout_ms = 5000};
    char err[256], tok[128];
    rdma_session_t *s;
    rdma_region_t *r;
    void *mem;
    if (rdma_session_open(&cfg, &s, err, sizeof(err)) ||
        rdma_region_alloc(s, SPAN, &mem, &r, err, sizeof(err)) ||
        rdma_token_format(s, r, mem, SPAN, tok, sizeof(tok))) {
        fprintf(stderr, "child: %s\n", err);
        return 1;
    }
    memset(mem, 0x5a, SPAN);
    printf("%s\n", tok);
    fflush(stdout);
    for (;;)
        pause();
}

typedef struct job {
    rdma_xfer_t *x;
    int push;
    rdma_status_t rc;
} job_t;

static int sink_null(void *ctx, const void *data, size_t len)
{
    (void)ctx, (void)data, (void)len;
    return 0;
}

static int fill_null(void *ctx, void *dst, size_t len, uint64_t off)
{
    (void)ctx, (void)off;
    memset(dst, 1, len < 64 ? len : 64);
    return 0;
}

static void *job_main(void *p)
{
    job_t *j = p;
    j->rc = j->push ? rdma_xfer_push(j->x, SPAN, fill_null, NULL)
                    : rdma_xfer_pull(j->x, SPAN, sink_null, NULL);
    return NULL;
}

/* Waits (5 s at most) until every dead session has really been torn down. */
static void wait_resident_zero(rdma_server_t *srv)
{
    for (int i = 0; i < 500 && rdma_server_session_resident(srv) != 0; i++)
        usleep(10000);
    assert_int_equal(rdma_server_session_resident(srv), 0);
}

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static pid_t spawn_child(int port, int remote, char tok[128])
{
    int pfd[2];
    assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    const char *const argv[] = {"test_rdma_kill", "--child", ps, remote ? "1" : "0", NULL};
    pid_t pid = test_spawn_self(argv, pfd[1]);
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    assert_non_null(f);
    char *line = fgets(tok, 128, f);
    fclose(f);
    assert_non_null(line);
    tok[strcspn(tok, "\n")] = '\0';
    return pid;
}

static void kill_rounds(int remote)
{
    rdma_server_t *srv;
    setenv("S3R_RDMA_OP_TIMEOUT_MS", "10000", 1);
    /* Staged RMA, as over an RDMA NIC: a mapped region never fails when its
     * client dies, so it would not exercise the reclaim paths. */
    setenv("S3R_RDMA_NO_MAP", "1", 1);
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    int port = rdma_server_port(srv);
    long rss_base = 0;
    int n_ok = 0, n_transport = 0;
    for (int round = 0; round < ROUNDS; round++) {
        char tok[128];
        pid_t pid = spawn_child(port, remote, tok);
        rdma_xfer_t *x = NULL;
        assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OK);
        job_t j = {.x = x, .push = round & 1};
        pthread_t th;
        pthread_create(&th, NULL, job_main, &j);
        usleep((useconds_t)(round % 4) * 700);
        kill(pid, SIGKILL);
        uint64_t t0 = clock_mono_ms();
        pthread_join(th, NULL);
        assert_true(clock_mono_ms() - t0 < 12000);
        assert_true(j.rc == RDMA_OK || j.rc == RDMA_TRANSPORT);
        if (j.rc == RDMA_OK)
            n_ok++;
        else
            n_transport++;
        rdma_xfer_close(x);
        waitpid(pid, NULL, 0);
        assert_int_equal(test_wait_count(srv, 0), 0);
        wait_resident_zero(srv);
        if (round == 2)
            rss_base = rss_kib();
    }
    long growth = rss_kib() - rss_base;
    print_message(
        "[ KILL     ] %s: %d rounds, %d completed, %d failed cleanly, RSS growth %ld KiB\n",
        remote ? "remote/PEER" : "same-host/NONE", ROUNDS, n_ok, n_transport, growth);
    assert_true(growth < 16 * 1024);

    /* The server is still whole: a new client moves a full span, which needs
     * every staging chunk back in the pool within the deadline. */
    char tok[128];
    pid_t pid = spawn_child(port, remote, tok);
    for (int i = 0; i < 3; i++) {
        rdma_xfer_t *x;
        assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OK);
        assert_int_equal(rdma_xfer_pull(x, SPAN, sink_null, NULL), RDMA_OK);
        rdma_xfer_close(x);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(test_wait_count(srv, 0), 0);
    wait_resident_zero(srv);
    rdma_server_stop(srv);
}

static void test_kill_same_host(void **state)
{
    (void)state;
    kill_rounds(0);
}

static void test_kill_remote(void **state)
{
    (void)state;
    kill_rounds(1);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0)
        return child_main(atoi(argv[2]), atoi(argv[3]));
    log_set_level(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_same_host),
        cmocka_unit_test(test_kill_remote),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
