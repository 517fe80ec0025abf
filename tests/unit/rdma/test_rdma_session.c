/* Session bootstrap: the handshake with the real client, refusals driven
 * over raw sockets (wrong secret, unknown key, truncated and garbage frames,
 * a replayed AUTH), lifeline teardown and the per-session limits. */
#include "rdma_test_util.h"
#include "rdma_raw_client.h"

#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include "common/hash.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_ucx.h"
#include "rdma/rdma_wire.h"

#define OPEN_OK(cfg, s)                                                                            \
    do {                                                                                           \
        char e_[256] = "";                                                                         \
        int rc_ = rdma_session_open((cfg), (s), e_, sizeof(e_));                                   \
        if (rc_ != 0)                                                                              \
            print_message("session open: %s\n", e_);                                               \
        assert_int_equal(rc_, 0);                                                                  \
    } while (0)

static void test_handshake_ok(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    rdma_session_t *s = NULL;
    OPEN_OK(&cfg, &s);
    assert_int_equal(rdma_session_alive(s), 1);
    assert_int_equal(test_wait_count(srv, 1), 1);
    /* A second session, other user, at the same time. */
    rdma_client_config_t cfg2 = test_client_cfg(srv, "AKIDTWO", "secret-two");
    rdma_session_t *s2 = NULL;
    OPEN_OK(&cfg2, &s2);
    assert_int_equal(test_wait_count(srv, 2), 2);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 1), 1);
    rdma_session_close(s2);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

static void test_wrong_secret_and_unknown_key(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    char err[256] = "";
    rdma_session_t *s = NULL;
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "not-the-secret");
    assert_int_equal(rdma_session_open(&cfg, &s, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "authentication failed"));
    cfg = test_client_cfg(srv, "AKIDNOBODY", "secret-one");
    assert_int_equal(rdma_session_open(&cfg, &s, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "authentication failed"));
    assert_int_equal(rdma_server_session_count(srv), 0);
    rdma_server_stop(srv);
}

static void test_truncated_and_garbage(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    raw_ucx_t u;
    raw_ucx_init(&u);
    uint8_t nonce[RDMA_NONCE_LEN] = {1};

    /* A HELLO whose inner length runs past the frame. */
    wire_out_t w = {0};
    assert_int_equal(rdma_wire_hello(&w, "AKIDONE", nonce, u.addr, u.addr_len), 0);
    size_t cut = w.len - 10;
    w.data[0] = (uint8_t)((cut - 4) >> 24);
    w.data[1] = (uint8_t)((cut - 4) >> 16);
    w.data[2] = (uint8_t)((cut - 4) >> 8);
    w.data[3] = (uint8_t)(cut - 4);
    int fd = raw_connect(srv);
    raw_send(fd, w.data, cut);
    rdma_wire_free(&w);
    expect_refused_and_closed(fd);
    close(fd);

    /* Garbage: a length within bounds, then no magic. */
    fd = raw_connect(srv);
    uint8_t junk[64];
    memset(junk, 0xA5, sizeof(junk));
    junk[0] = 0, junk[1] = 0, junk[2] = 0, junk[3] = 60;
    raw_send(fd, junk, sizeof(junk));
    expect_refused_and_closed(fd);
    close(fd);

    /* An oversized length prefix. */
    fd = raw_connect(srv);
    uint8_t big[4] = {0x7f, 0xff, 0xff, 0xff};
    raw_send(fd, big, sizeof(big));
    expect_refused_and_closed(fd);
    close(fd);

    /* AUTH before HELLO. */
    fd = raw_connect(srv);
    uint8_t mac[RDMA_MAC_LEN] = {0};
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac));
    expect_refused_and_closed(fd);
    close(fd);

    /* Half a frame, then the client goes away. */
    fd = raw_connect(srv);
    raw_send(fd, big, 2);
    close(fd);

    assert_int_equal(rdma_server_session_count(srv), 0);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_replayed_auth(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    raw_ucx_t u;
    raw_ucx_init(&u);
    uint8_t cnonce[RDMA_NONCE_LEN], mac[RDMA_MAC_LEN], mac2[RDMA_MAC_LEN];
    hash_random_bytes(cnonce, sizeof(cnonce));

    /* An honest handshake. */
    int fd = raw_connect(srv);
    raw_hello(fd, &u, "AKIDONE", "secret-one", cnonce, mac);
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac));
    assert_true(raw_await_probe(&u));
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_PROVE, u.probe));
    uint8_t *body = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv(fd, &body, &len), RDMA_MSG_WELCOME);
    free(body);
    assert_int_equal(test_wait_count(srv, 1), 1);

    /* The same HELLO and the recorded AUTH on a new connection: the server's
     * nonce is fresh, so the MAC no longer matches. */
    int fd2 = raw_connect(srv);
    raw_hello(fd2, &u, "AKIDONE", "wrong-secret-for-this-leg", cnonce, mac2);
    raw_send_frame(fd2, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac));
    expect_refused_and_closed(fd2);
    close(fd2);
    assert_int_equal(rdma_server_session_count(srv), 1);

    /* The lifeline is the raw socket: closing it ends the session. */
    close(fd);
    assert_int_equal(test_wait_count(srv, 0), 0);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_region_limits(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 3, 0);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    char err[256] = "";
    rdma_session_t *s = NULL;
    OPEN_OK(&cfg, &s);
    static uint8_t bufs[4][4096];
    rdma_region_t *r[4] = {0};
    for (int i = 0; i < 3; i++)
        assert_int_equal(rdma_region_add(s, bufs[i], sizeof(bufs[i]), &r[i], err, sizeof(err)), 0);
    assert_int_equal(rdma_region_add(s, bufs[3], sizeof(bufs[3]), &r[3], err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many regions"));
    /* Removing one makes room again; the session survives the refusal. */
    rdma_region_remove(s, r[1]);
    assert_int_equal(rdma_region_add(s, bufs[3], sizeof(bufs[3]), &r[3], err, sizeof(err)), 0);
    void *mem = NULL;
    rdma_region_t *ra = NULL;
    assert_int_equal(rdma_region_alloc(s, 4096, &mem, &ra, err, sizeof(err)), -1);
    assert_int_equal(rdma_session_alive(s), 1);
    assert_int_equal(rdma_server_session_count(srv), 1);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

static void test_session_limit(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 2);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    char err[256] = "";
    rdma_session_t *s[3] = {0};
    OPEN_OK(&cfg, &s[0]);
    OPEN_OK(&cfg, &s[1]);
    assert_int_equal(rdma_session_open(&cfg, &s[2], err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many RDMA sessions"));
    assert_int_equal(rdma_server_session_count(srv), 2);
    rdma_session_close(s[0]);
    rdma_session_close(s[1]);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

/* OpenSSL's RAND_bytes as this process sees it (hash_random_bytes calls it):
 * the real one, or a failure for the next call once g_rand_fail is set. */
static atomic_int g_rand_fail;

int RAND_bytes(unsigned char *buf, int num);
int RAND_bytes(unsigned char *buf, int num)
{
    if (atomic_exchange(&g_rand_fail, 0))
        return 0;
    int (*real)(unsigned char *, int) =
        (int (*)(unsigned char *, int))dlsym(RTLD_NEXT, "RAND_bytes");
    return real ? real(buf, num) : 0;
}

/* Issue 17 item 10: when no random bytes come for the session id, PROVE is
 * answered with ERROR INTERNAL and the connection closed: no WELCOME with
 * a guessable id, no session left behind. */
static void test_session_id_without_randomness(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    raw_ucx_t u;
    raw_ucx_init(&u);
    int fd = raw_connect(srv);
    uint8_t cnonce[RDMA_NONCE_LEN], mac[RDMA_MAC_LEN];
    assert_int_equal(hash_random_bytes(cnonce, sizeof(cnonce)), 0);
    raw_hello(fd, &u, "AKIDONE", "secret-one", cnonce, mac);
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac));
    assert_true(raw_await_probe(&u));
    /* The next random bytes the process asks for are the session id. */
    atomic_store(&g_rand_fail, 1);
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_PROVE, u.probe));
    uint8_t *body = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv(fd, &body, &len), RDMA_MSG_ERROR);
    free(body);
    assert_int_equal(raw_recv(fd, NULL, NULL), 0);
    assert_int_equal(atomic_load(&g_rand_fail), 0);
    close(fd);
    raw_settle(&u);
    assert_int_equal(rdma_server_session_count(srv), 0);
    for (int i = 0; i < 500 && rdma_server_session_resident(srv) != 0; i++)
        raw_settle(&u);
    assert_int_equal(rdma_server_session_resident(srv), 0);
    /* The server still makes sessions. */
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    rdma_session_t *s = NULL;
    OPEN_OK(&cfg, &s);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 0), 0);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_stop_with_live_sessions(void **state)
{
    (void)state;
    rdma_server_t *srv;
    TEST_SERVER_OR_SKIP(srv, 0, 0);
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    rdma_session_t *s = NULL;
    OPEN_OK(&cfg, &s);
    rdma_server_stop(srv);
    /* The server is gone: the client notices the lifeline dropped. */
    int alive = 1;
    for (int i = 0; i < 200 && alive; i++) {
        alive = rdma_session_alive(s);
        usleep(10000);
    }
    assert_int_equal(alive, 0);
    rdma_session_close(s);
}

/* The kernel's sched_attr, first version (as rdma_ucx.c declares it). */
typedef struct {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
} sched_attr_t;

/* The scheduler slice (ns) of thread tid, or 0 when unknown. */
static uint64_t thread_slice_ns(long tid)
{
    sched_attr_t a = {0};
    return syscall(SYS_sched_getattr, (pid_t)tid, &a, sizeof(a), 0) == 0 ? a.runtime : 0;
}

static void *slice_probe(void *arg)
{
    *(int *)arg = rdma_thread_set_slice(321) == 0 && thread_slice_ns(0) == 321000;
    return NULL;
}

/* The server's progress threads (named s3r-progress once their slice and
 * priority are set): their thread ids in tids, waiting up to 2 s for the
 * first; how many. */
static unsigned progress_threads(long tids[], unsigned max)
{
    unsigned found = 0;
    for (int i = 0; i < 200 && !found; i++) {
        DIR *d = opendir("/proc/self/task");
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d));) {
            if (e->d_name[0] == '.')
                continue;
            char path[300], comm[32] = "";
            snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            if (fgets(comm, sizeof(comm), f) && strcmp(comm, "s3r-progress\n") == 0 && found < max)
                tids[found++] = atol(e->d_name);
            fclose(f);
        }
        closedir(d);
        if (!found)
            usleep(10000);
    }
    return found;
}

/* A server with one progress thread and cfg's slice_us and priority. */
static rdma_server_t *one_progress_server(unsigned slice_us, unsigned priority)
{
    rdma_server_config_t cfg;
    rdma_server_config_defaults(&cfg);
    cfg.listen_host = "127.0.0.1";
    cfg.port = 0;
    cfg.n_workers = 1;
    cfg.lookup_secret = test_lookup;
    cfg.slice_us = slice_us;
    cfg.priority = priority;
    rdma_server_t *srv = NULL;
    if (rdma_server_start(&cfg, &srv) < 0) {
        if (!test_ucx_usable())
            skip();
        fail_msg("the RDMA server failed to start although UCX works");
    }
    return srv;
}

/* The progress threads ask for rdma.slice_us: a woken progress thread is
 * run before threads on the kernel's default slice. Skipped on a kernel
 * that does not keep a thread's slice (before 6.12). */
static void test_progress_threads_short_slice(void **state)
{
    (void)state;
    int kept = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, slice_probe, &kept), 0);
    pthread_join(th, NULL);
    if (!kept)
        skip();
    rdma_server_t *srv = one_progress_server(250, 0);
    long tid;
    unsigned found = progress_threads(&tid, 1);
    uint64_t slice = found ? thread_slice_ns(tid) : 0;
    rdma_server_stop(srv);
    assert_int_equal(found, 1); /* the one progress thread */
    assert_int_equal(slice, 250000);
}

static void *priority_probe(void *arg)
{
    *(int *)arg = rdma_thread_raise_priority(3) == 0;
    return NULL;
}

/* The progress threads take rdma.priority nice levels below the process's:
 * each serves every native session of its worker, and needs that weight on
 * a contended core. Skipped where the process may not lower a nice value
 * (no CAP_SYS_NICE, RLIMIT_NICE too low). */
static void test_progress_threads_priority(void **state)
{
    (void)state;
    int permitted = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, priority_probe, &permitted), 0);
    pthread_join(th, NULL);
    if (!permitted)
        skip();
    /* New threads start with their creator's nice value. */
    errno = 0;
    int base = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    assert_int_equal(errno, 0);
    int want = base - 3 < -20 ? -20 : base - 3;
    rdma_server_t *srv = one_progress_server(0, 3);
    long tid;
    unsigned found = progress_threads(&tid, 1);
    errno = 0;
    int nice = found ? getpriority(PRIO_PROCESS, (id_t)tid) : 99;
    rdma_server_stop(srv);
    assert_int_equal(found, 1);
    assert_int_equal(nice, want);
}

int main(void)
{
    log_set_level(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_ok),
        cmocka_unit_test(test_wrong_secret_and_unknown_key),
        cmocka_unit_test(test_truncated_and_garbage),
        cmocka_unit_test(test_replayed_auth),
        cmocka_unit_test(test_region_limits),
        cmocka_unit_test(test_session_limit),
        cmocka_unit_test(test_session_id_without_randomness),
        cmocka_unit_test(test_stop_with_live_sessions),
        cmocka_unit_test(test_progress_threads_short_slice),
        cmocka_unit_test(test_progress_threads_priority),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
