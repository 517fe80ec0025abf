/* Attacks on the RDMA session server by a hostile client (tests only; the
 * raw client is rdma_raw_client.h plus the helpers below):
 *
 *   1. a local (Unix socket, shared memory) session announces a region larger
 *      than, or starting before, the memory its rkey maps: refused with
 *      BAD_RKEY, no token resolves, the exact region works, mapped and staged;
 *   2. the same over TCP (net domain): the client's own UCX would read past its
 *      allocation, so a child process does it; the server survives;
 *   3. a HELLO naming a worker that is not the client's (somebody's idle
 *      worker, the server's own): the probe cannot be answered, no session;
 *      and UCX active messages sent straight to the server's worker;
 *   4. floods of the session port: idle connections, HELLOs left hanging,
 *      one user's sessions, costly resources before AUTH, a peer that never
 *      reads its replies; a real client still gets its session;
 *   5. protocol errors on a lifeline end the session;
 *   6. the per-source cap on pending handshakes;
 *   7. rkeys UCX cannot parse safely (truncated, or naming no segment).
 *
 * Most tests run an in-process server, so /proc/self is the server's process
 * too. Attacks that may crash the server (3, 7) run it in a child process
 * instead (this binary re-executed with --child-server), so a crash fails
 * that test and not the whole binary; test 2's attacker is a child too
 * (--child-net). Like every RDMA test this runs under the default transports
 * and under UCX_TLS=tcp; see shm_mappable for what changes there. */
#include "rdma_test_util.h"
#include "rdma_raw_client.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/hash.h"
#include "common/s3r_limits.h"

#define MIB        ((uint64_t)1 << 20)
#define REGION_LEN MIB

/* ==== helpers ============================================================ */

static rdma_server_config_t attack_cfg(void)
{
    rdma_server_config_t cfg;
    rdma_server_config_defaults(&cfg);
    cfg.listen_host = "127.0.0.1";
    cfg.port = 0;
    cfg.n_workers = 1;
    cfg.staging_bytes = 8u << 20;
    cfg.chunk_bytes = 1u << 20;
    cfg.lookup_secret = test_lookup;
    return cfg;
}

/* Starts a server with cfg; skips only when UCX itself is unusable. */
#define START_OR_SKIP(srv, cfg)                                                                    \
    do {                                                                                           \
        (srv) = NULL;                                                                              \
        if (rdma_server_start(&(cfg), &(srv)) < 0) {                                               \
            if (test_ucx_usable())                                                                 \
                fail_msg("the RDMA server failed to start although UCX works");                    \
            print_message("[  SKIP    ] UCX is unavailable: the RDMA server cannot start\n");      \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* 1 when the operator's UCX_TLS leaves UCX a shared-memory transport, so a
 * local session's region is mapped into the server (ucp_rkey_ptr) and its
 * span checked against the mapping. Under UCX_TLS=tcp ucp_rkey_ptr fails for
 * every rkey: the server cannot map the region, nothing of its own can be
 * reached through it, and it accepts the announcement as it stands (every
 * access is then served by the client's own UCX, on the client's side), so
 * the BAD_RKEY expectations do not apply there. */
static int shm_mappable(void)
{
    const char *tls = getenv("UCX_TLS");
    if (!tls || !*tls || tls[0] == '^')
        return 1;
    static const char *const shm[] = {"all", "sm", "shm", "posix", "sysv", "mm", "xpmem"};
    for (const char *p = tls; *p;) {
        size_t n = strcspn(p, ",");
        const char *t = p;
        if (n > 0 && *t == '\\')
            t++, n--;
        for (size_t i = 0; i < sizeof(shm) / sizeof(shm[0]); i++) {
            if (strlen(shm[i]) == n && memcmp(shm[i], t, n) == 0)
                return 1;
        }
        p = t + n + (t[n] == ',');
    }
    return 0;
}

/* 1 when p lies in a shared mapping of this process, 0 in a private one,
 * -1 when unmapped (or unknown). Called from transfer threads: no asserts. */
static int mapping_is_shared(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = -1;
    uintptr_t a = (uintptr_t)p;
    while (getline(&line, &cap, f) > 0) {
        uintptr_t start, end;
        char perms[5];
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &start, &end, perms) == 3 && a >= start &&
            a < end) {
            rc = perms[3] == 's';
            break;
        }
    }
    free(line);
    fclose(f);
    return rc;
}

/* Open file descriptors of this process (the server's too). */
static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to 5 s for rdma_server_session_resident to reach want. */
static unsigned wait_resident(rdma_server_t *srv, unsigned want)
{
    unsigned n = 0;
    for (int i = 0; i < 500 && (n = rdma_server_session_resident(srv)) != want; i++)
        sleep_ms(10);
    return n;
}

/* A TCP connection to the session port from source address src (any
 * 127.0.0.0/8 address is this host's loopback on Linux); rcvbuf > 0 pins the
 * socket's receive buffer. The fd, or -1. */
static int connect_from(int port, const char *src, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)); /* bounds connect() */
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    struct sockaddr_in sa = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, src, &sa.sin_addr), 1);
    struct sockaddr_in da = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    da.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        connect(fd, (struct sockaddr *)&da, sizeof(da)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A raw connection to the session port: TCP from 127.0.0.1, or the Unix
 * socket "@s3rdma.<port>". */
static int connect_port(int port, int over_unix)
{
    char name[64], err[128];
    snprintf(name, sizeof(name), "@s3rdma.%d", port);
    int fd = over_unix ? rdma_net_connect_unix(name, 2000, err, sizeof(err))
                       : rdma_net_connect("127.0.0.1", port, NULL, 2000, err, sizeof(err));
    if (fd < 0)
        print_message("connect: %s\n", err);
    assert_true(fd >= 0);
    return fd;
}

static int raw_connect_unix(rdma_server_t *srv)
{
    return connect_port(rdma_server_port(srv), 1);
}

/* Receives the next frame, which must be an ERROR; returns its code. */
static uint32_t recv_error(int fd, char msg[RDMA_MAX_ERR_MSG + 1])
{
    uint8_t *body = NULL;
    size_t len = 0;
    int t = raw_recv(fd, &body, &len);
    if (t != RDMA_MSG_ERROR)
        print_message("expected an ERROR frame, got %d\n", t);
    assert_int_equal(t, RDMA_MSG_ERROR);
    uint32_t code = 0;
    char m[RDMA_MAX_ERR_MSG + 1];
    assert_int_equal(rdma_wire_parse_error(body, len, &code, msg ? msg : m), 0);
    free(body);
    return code;
}

static uint8_t pattern(uint64_t i, unsigned seed)
{
    return (uint8_t)((i * 7) ^ (i >> 9) ^ (i >> 17) ^ seed);
}

/* A transfer run on a helper thread, so the calling thread can progress the
 * raw client's worker meanwhile (over TCP UCX emulates one-sided operations
 * with messages the client side must answer). */
typedef struct xjob {
    rdma_xfer_t *x;
    int push;
    uint64_t len;
    uint8_t *got;  /* pull: what the sink saw, in order */
    uint64_t seen; /* bytes the sink or fill saw */
    int shared;    /* the first chunk's memory lay in a shared mapping */
    unsigned seed; /* push: the pattern written */
    rdma_status_t rc;
    _Atomic int done;
} xjob_t;

static int job_sink(void *ctx, const void *data, size_t len)
{
    xjob_t *j = ctx;
    if (j->seen == 0)
        j->shared = mapping_is_shared(data);
    if (j->got)
        memcpy(j->got + j->seen, data, len);
    j->seen += len;
    return 0;
}

static int job_fill(void *ctx, void *dst, size_t len, uint64_t off)
{
    xjob_t *j = ctx;
    if (j->seen == 0)
        j->shared = mapping_is_shared(dst);
    uint8_t *d = dst;
    for (size_t i = 0; i < len; i++)
        d[i] = pattern(off + i, j->seed);
    j->seen += len;
    return 0;
}

static void *job_main(void *p)
{
    xjob_t *j = p;
    j->rc = j->push ? rdma_xfer_push(j->x, j->len, job_fill, j)
                    : rdma_xfer_pull(j->x, j->len, job_sink, j);
    atomic_store(&j->done, 1);
    return NULL;
}

/* Runs j, progressing u (when given) until it is done; fails after
 * limit_ms instead of hanging. */
static void run_job(raw_ucx_t *u, xjob_t *j, unsigned limit_ms)
{
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, job_main, j), 0);
    uint64_t deadline = clock_mono_ms() + limit_ms;
    while (!atomic_load(&j->done) && clock_mono_ms() < deadline) {
        if (!u || !ucp_worker_progress(u->w))
            usleep(50);
    }
    if (!atomic_load(&j->done))
        fail_msg("a transfer did not return within %u ms", limit_ms);
    pthread_join(th, NULL);
}

/* ==== 1. over-announced regions, local session =========================== */

static void overannounce_local(int no_map)
{
    if (no_map)
        setenv("S3R_RDMA_NO_MAP", "1", 1);
    else
        unsetenv("S3R_RDMA_NO_MAP");
    setenv("S3R_RDMA_OP_TIMEOUT_MS", "10000", 1);
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    unsetenv("S3R_RDMA_NO_MAP");
    const int shm = shm_mappable();

    raw_ucx_t u;
    raw_ucx_init(&u);
    raw_mem_t m;
    raw_mem_alloc(&u, REGION_LEN, &m);
    for (uint64_t i = 0; i < REGION_LEN; i++)
        m.p[i] = pattern(i, 1);
    const uint64_t base = (uint64_t)(uintptr_t)m.p;

    int fd = raw_connect_unix(srv);
    raw_sess_t rs;
    raw_handshake(fd, &u, "AKIDONE", "secret-one", &rs);
    assert_int_equal(test_wait_count(srv, 1), 1);

    /* The rkey maps 1 MiB; each announcement claims more. */
    const struct {
        uint32_t id;
        uint64_t addr, len;
    } bad[] = {
        {1, base, REGION_LEN + 64 * 1024},
        {2, base, 64 * MIB},
        {3, base - 4096, REGION_LEN + 4096},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        send_region_add(fd, bad[i].id, bad[i].addr, bad[i].len, m.rkey, m.rkey_len);
        uint8_t *body = NULL;
        size_t len = 0;
        int t = raw_recv(fd, &body, &len);
        uint32_t code = 0;
        char msg[RDMA_MAX_ERR_MSG + 1] = "";
        if (t == RDMA_MSG_ERROR)
            assert_int_equal(rdma_wire_parse_error(body, len, &code, msg), 0);
        free(body);
        if (shm) {
            if (t != RDMA_MSG_ERROR)
                print_message("REGION_ADD %u (%" PRIu64 " bytes at %+" PRId64
                              "): reply type %d, not ERROR\n",
                              bad[i].id, bad[i].len, (int64_t)(bad[i].addr - base), t);
            assert_int_equal(t, RDMA_MSG_ERROR);
            assert_int_equal(code, RDMA_ERR_BAD_RKEY);
            char tok[RDMA_TOKEN_LEN + 1];
            rdma_xfer_t *x = NULL;
            make_token(&rs, bad[i].id, bad[i].addr, bad[i].len, tok);
            assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
            make_token(&rs, bad[i].id, base, 4096, tok);
            assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
        } else {
            /* Not mappable: accepted or refused, never used here (a pull
             * would have our own UCX read past the allocation). */
            assert_true(t == RDMA_MSG_REGION_OK ||
                        (t == RDMA_MSG_ERROR && code == RDMA_ERR_BAD_RKEY));
        }
        /* A refused region leaves the session up. */
        assert_int_equal(rdma_server_session_count(srv), 1);
        raw_settle(&u);
    }

    /* The exact region is accepted and moves the right bytes both ways. */
    send_region_add(fd, 4, base, REGION_LEN, m.rkey, m.rkey_len);
    uint8_t *body = NULL;
    size_t len = 0;
    assert_int_equal(raw_recv(fd, &body, &len), RDMA_MSG_REGION_OK);
    raw_settle(&u);
    uint32_t id = 0;
    assert_int_equal(rdma_wire_parse_region_id(body, len, &id), 0);
    assert_int_equal(id, 4);
    free(body);

    char tok[RDMA_TOKEN_LEN + 1];
    rdma_xfer_t *x = NULL;
    make_token(&rs, 4, base, REGION_LEN + 1, tok);
    assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OUT_OF_BOUNDS);
    make_token(&rs, 4, base, REGION_LEN, tok);

    assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OK);
    xjob_t pj = {.x = x, .len = REGION_LEN, .got = malloc(REGION_LEN)};
    assert_non_null(pj.got);
    run_job(&u, &pj, 15000);
    assert_int_equal(pj.rc, RDMA_OK);
    assert_int_equal(pj.seen, REGION_LEN);
    assert_memory_equal(pj.got, m.p, REGION_LEN);
    /* Mapped: the sink reads the client's shared memory in place; staged
     * (S3R_RDMA_NO_MAP, or no shared-memory transport): private staging. */
    assert_int_equal(pj.shared, shm && !no_map);
    free(pj.got);
    rdma_xfer_close(x);

    assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OK);
    xjob_t wj = {.x = x, .push = 1, .len = REGION_LEN, .seed = 2};
    run_job(&u, &wj, 15000);
    assert_int_equal(wj.rc, RDMA_OK);
    assert_int_equal(wj.shared, shm && !no_map);
    rdma_xfer_close(x);
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < REGION_LEN; i++)
        wrong += m.p[i] != pattern(i, 2);
    assert_int_equal(wrong, 0);

    assert_int_equal(rdma_server_session_count(srv), 1);
    close(fd);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, 0), 0);
    free(rs.saddr);
    raw_mem_free(&u, &m);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
    unsetenv("S3R_RDMA_OP_TIMEOUT_MS");
}

static void test_overannounce_local_mapped(void **state)
{
    (void)state;
    overannounce_local(0);
}

static void test_overannounce_local_staged(void **state)
{
    (void)state;
    overannounce_local(1);
}

/* ==== 2. over-announced region, net session (child process) ============= */

/* The attacker: a TCP (net domain) session announcing its 1 MiB as 64 MiB.
 * Prints "OK <token>" or "REFUSED <code>", then serves its worker until
 * killed; its own UCX may crash reading past the allocation. */
static int child_net_main(int port)
{
    raw_ucx_t u;
    raw_ucx_init(&u);
    raw_mem_t m;
    raw_mem_alloc(&u, REGION_LEN, &m);
    memset(m.p, 0x5a, REGION_LEN);
    char err[128];
    int fd = rdma_net_connect("127.0.0.1", port, NULL, 3000, err, sizeof(err));
    if (fd < 0) {
        fprintf(stderr, "child: %s\n", err);
        return 1;
    }
    raw_sess_t rs;
    raw_handshake(fd, &u, "AKIDONE", "secret-one", &rs);
    send_region_add(fd, 1, (uintptr_t)m.p, 64 * MIB, m.rkey, m.rkey_len);
    uint8_t *body = NULL;
    size_t len = 0;
    int t = raw_recv(fd, &body, &len);
    if (t == RDMA_MSG_REGION_OK) {
        char tok[RDMA_TOKEN_LEN + 1];
        make_token(&rs, 1, (uintptr_t)m.p, 64 * MIB, tok);
        printf("OK %s\n", tok);
    } else {
        uint32_t code = 0;
        char msg[RDMA_MAX_ERR_MSG + 1];
        if (t == RDMA_MSG_ERROR)
            rdma_wire_parse_error(body, len, &code, msg);
        printf("REFUSED %u\n", code);
    }
    fflush(stdout);
    free(body);
    for (;;) {
        if (!ucp_worker_progress(u.w))
            usleep(50);
    }
}

static pid_t spawn_net_child(int port, char line[160])
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        /* It may die of SIGSEGV: no core file, no UCX backtrace noise. */
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        setenv("UCX_HANDLE_ERRORS", "none", 1);
        char ps[16];
        snprintf(ps, sizeof(ps), "%d", port);
        execl("/proc/self/exe", "test_rdma_attack", "--child-net", ps, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    FILE *f = fdopen(pfd[0], "r");
    assert_non_null(f);
    char *got = fgets(line, 160, f);
    fclose(f);
    if (!got)
        kill(pid, SIGKILL);
    assert_non_null(got);
    line[strcspn(line, "\n")] = '\0';
    return pid;
}

/* A real client (TCP, or the Unix socket) moves a small region both ways. */
static void real_client_works(rdma_server_t *srv, int over_tcp)
{
    rdma_client_config_t cfg = test_client_cfg(srv, "AKIDONE", "secret-one");
    char sock[64];
    snprintf(sock, sizeof(sock), "@s3rdma.%d", rdma_server_port(srv));
    cfg.socket = over_tcp ? "" : sock;
    char err[256] = "", tok[128];
    rdma_session_t *s = NULL;
    int rc = rdma_session_open(&cfg, &s, err, sizeof(err));
    if (rc != 0)
        print_message("real client (%s): %s\n", over_tcp ? "tcp" : "unix", err);
    assert_int_equal(rc, 0);
    void *mem = NULL;
    rdma_region_t *r = NULL;
    assert_int_equal(rdma_region_alloc(s, 64 * 1024, &mem, &r, err, sizeof(err)), 0);
    for (size_t i = 0; i < 64 * 1024; i++)
        ((uint8_t *)mem)[i] = pattern(i, 3);
    assert_int_equal(rdma_token_format(s, r, mem, 64 * 1024, tok, sizeof(tok)), 0);
    rdma_xfer_t *x = NULL;
    assert_int_equal(rdma_xfer_open(srv, tok, "AKIDONE", &x), RDMA_OK);
    xjob_t pj = {.x = x, .len = 64 * 1024, .got = malloc(64 * 1024)};
    run_job(NULL, &pj, 15000);
    assert_int_equal(pj.rc, RDMA_OK);
    assert_memory_equal(pj.got, mem, 64 * 1024);
    free(pj.got);
    rdma_xfer_close(x);
    rdma_session_close(s);
}

static void test_overannounce_net_survives(void **state)
{
    (void)state;
    unsetenv("S3R_RDMA_NO_MAP");
    setenv("S3R_RDMA_OP_TIMEOUT_MS", "3000", 1);
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    unsetenv("S3R_RDMA_OP_TIMEOUT_MS");

    char line[160];
    pid_t pid = spawn_net_child(rdma_server_port(srv), line);
    const char *outcome = "refused at REGION_ADD";
    if (strncmp(line, "OK ", 3) == 0) {
        /* The net domain cannot map it, so the announcement stands; the
         * pull of the whole span must return, whatever the client does. */
        rdma_xfer_t *x = NULL;
        assert_int_equal(rdma_xfer_open(srv, line + 3, "AKIDONE", &x), RDMA_OK);
        xjob_t j = {.x = x, .len = 64 * MIB};
        uint64_t t0 = clock_mono_ms();
        run_job(NULL, &j, 3000 + 10000);
        print_message("[ NET      ] 64 MiB pull of a 1 MiB region: %s after %" PRIu64
                      " ms, %" PRIu64 " bytes delivered\n",
                      rdma_strerror(j.rc), clock_mono_ms() - t0, j.seen);
        assert_true(j.rc == RDMA_OK || j.rc == RDMA_TRANSPORT);
        rdma_xfer_close(x);
        outcome = j.rc == RDMA_OK ? "pulled (client-side data)" : "transfer failed cleanly";
    } else {
        assert_int_equal(strncmp(line, "REFUSED ", 8), 0);
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    char how[64];
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        snprintf(how, sizeof(how), "was still running (killed by the test)");
    else if (WIFSIGNALED(status))
        snprintf(how, sizeof(how), "crashed itself (signal %d)", WTERMSIG(status));
    else
        snprintf(how, sizeof(how), "exited with status %d (its own crash under ASan)",
                 WEXITSTATUS(status));
    print_message("[ NET      ] %s; the attacker %s\n", outcome, how);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, 0), 0);
    /* The server is whole. */
    real_client_works(srv, 1);
    real_client_works(srv, 0);
    assert_int_equal(test_wait_count(srv, 0), 0);
    rdma_server_stop(srv);
}

/* ==== 3. a worker address that is not the client's ====================== */

/* AUTH is right but the probe went elsewhere: PROVE with a guess. The
 * server must refuse (ERROR PROBE, or just close), never WELCOME. */
static void prove_guess_refused(int fd)
{
    uint8_t guess[RDMA_NONCE_LEN];
    assert_int_equal(hash_random_bytes(guess, sizeof(guess)), 0);
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_PROVE, guess));
    uint8_t *body = NULL;
    size_t len = 0;
    int t = raw_recv(fd, &body, &len);
    if (t == RDMA_MSG_ERROR) {
        uint32_t code = 0;
        char msg[RDMA_MAX_ERR_MSG + 1];
        assert_int_equal(rdma_wire_parse_error(body, len, &code, msg), 0);
        assert_int_equal(code, RDMA_ERR_PROBE);
        free(body);
        t = raw_recv(fd, NULL, NULL);
    } else {
        free(body);
    }
    assert_int_equal(t, 0);
}

/* ---- a server in a child process ----------------------------------------
 * For attacks that may crash the server: it runs in a child (this binary
 * re-executed with --child-server), so a crash fails the test that caused
 * it instead of ending the whole binary. The child prints its port, answers
 * "count" on stdin with "<live sessions> <resident sessions>", and stops
 * cleanly (exit 0) at EOF on stdin. */

static int child_server_main(void)
{
    log_set_level(LOG_LVL_ERROR);
    /* S3R_TEST_SERVER_UID: run the server as that uid, so this test's own
     * root clients are strangers to it on the Unix socket too. */
    const char *uid = getenv("S3R_TEST_SERVER_UID");
    if (uid && geteuid() == 0 && (setgid((gid_t)atoi(uid)) != 0 || setuid((uid_t)atoi(uid)) != 0)) {
        printf("FAIL\n");
        return 1;
    }
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv = NULL;
    if (rdma_server_start(&cfg, &srv) < 0) {
        printf("FAIL\n");
        return 1;
    }
    printf("%d\n", rdma_server_port(srv));
    fflush(stdout);
    char line[64];
    while (fgets(line, sizeof(line), stdin)) {
        if (strncmp(line, "count", 5) == 0) {
            printf("%u %u\n", rdma_server_session_count(srv), rdma_server_session_resident(srv));
            fflush(stdout);
        }
    }
    rdma_server_stop(srv);
    return 0;
}

typedef struct srvproc {
    pid_t pid;
    FILE *to, *from;
    int port;
} srvproc_t;

static srvproc_t g_sp = {.pid = -1};

/* Child servers started between these two run as uid 65534, so this
 * (root) test process is a local user they do not trust: the Unix socket
 * gives it the net domain, which is what the *_unix attacks below must
 * face. (A trusted local client can crash the server by design,
 * docs/security.md.) Needs root. */
static void as_stranger_begin(void)
{
    if (geteuid() != 0) {
        print_message("[  SKIP    ] needs root to run the server as another uid\n");
        skip();
    }
    setenv("S3R_TEST_SERVER_UID", "65534", 1);
}

static void as_stranger_end(void)
{
    unsetenv("S3R_TEST_SERVER_UID");
}

static void srvproc_start(srvproc_t *sp)
{
    int in[2], out[2];
    assert_int_equal(pipe(in), 0);
    assert_int_equal(pipe(out), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        /* stdout is the control channel; UCX logs to stdout by default, and
         * a line of it (say a refused connect to a client gone) would read
         * as the child's answer. */
        setenv("UCX_LOG_FILE", "stderr", 1);
        execl("/proc/self/exe", "test_rdma_attack", "--child-server", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    sp->pid = pid;
    sp->to = fdopen(in[1], "w");
    sp->from = fdopen(out[0], "r");
    assert_non_null(sp->to);
    assert_non_null(sp->from);
    char line[64] = "";
    if (!fgets(line, sizeof(line), sp->from) || (sp->port = atoi(line)) <= 0) {
        if (test_ucx_usable())
            fail_msg("the RDMA server (child process) failed to start although UCX works");
        print_message("[  SKIP    ] UCX is unavailable: the RDMA server cannot start\n");
        skip();
    }
}

/* Fails the test when the server process has died, telling how. */
static void srvproc_assert_alive(srvproc_t *sp)
{
    int st = 0;
    if (waitpid(sp->pid, &st, WNOHANG) != sp->pid)
        return;
    sp->pid = -1;
    if (WIFSIGNALED(st))
        fail_msg("the server process died of signal %d (%s)", WTERMSIG(st),
                 strsignal(WTERMSIG(st)));
    fail_msg("the server process exited with status %d", WEXITSTATUS(st));
}

/* After the server closed a connection without a reply: was it a crash?
 * Waits up to 1 s for the process to be reaped. */
static void srvproc_assert_alive_after_eof(srvproc_t *sp)
{
    for (int i = 0; i < 100; i++) {
        srvproc_assert_alive(sp);
        sleep_ms(10);
    }
}

/* The child's session counters (waiting up to 5 s for live/resident to
 * reach want_live/want_resident). */
static void srvproc_expect(srvproc_t *sp, unsigned want_live, unsigned want_resident)
{
    unsigned live = ~0u, resident = ~0u;
    for (int i = 0; i < 500; i++) {
        char line[64];
        srvproc_assert_alive(sp);
        if (fprintf(sp->to, "count\n") < 0 || fflush(sp->to) != 0 ||
            !fgets(line, sizeof(line), sp->from) || sscanf(line, "%u %u", &live, &resident) != 2) {
            srvproc_assert_alive_after_eof(sp);
            fail_msg("the server process stopped answering");
        }
        if (live == want_live && resident == want_resident)
            break;
        sleep_ms(10);
    }
    assert_int_equal(live, want_live);
    assert_int_equal(resident, want_resident);
}

static void srvproc_stop(srvproc_t *sp)
{
    fclose(sp->to);
    char line[64];
    while (fgets(line, sizeof(line), sp->from)) {
    }
    fclose(sp->from);
    int st = 0;
    assert_int_equal(waitpid(sp->pid, &st, 0), sp->pid);
    sp->pid = -1;
    if (WIFSIGNALED(st))
        fail_msg("the server process died of signal %d while stopping", WTERMSIG(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* Teardown of the child-server tests: a test that failed half-way leaves
 * its server running; end it. */
static int srvproc_teardown(void **state)
{
    as_stranger_end();
    (void)state;
    if (g_sp.pid > 0) {
        kill(g_sp.pid, SIGKILL);
        waitpid(g_sp.pid, NULL, 0);
        fclose(g_sp.to);
        fclose(g_sp.from);
    }
    g_sp.pid = -1;
    return 0;
}

/* A real client's handshake with the server on port (TCP or Unix socket). */
static void real_session_opens(int port, int over_tcp)
{
    char sock[64], err[256] = "";
    snprintf(sock, sizeof(sock), "@s3rdma.%d", port);
    rdma_client_config_t cfg = {.host = "127.0.0.1",
                                .port = port,
                                .socket = over_tcp ? "" : sock,
                                .access_key = "AKIDTWO",
                                .secret_key = "secret-two",
                                .timeout_ms = 5000};
    rdma_session_t *s = NULL;
    int rc = rdma_session_open(&cfg, &s, err, sizeof(err));
    if (rc != 0)
        print_message("real client (%s): %s\n", over_tcp ? "tcp" : "unix", err);
    assert_int_equal(rc, 0);
    rdma_session_close(s);
}

/* A second user announces the worker address the server gave a legitimate
 * session in WELCOME: a worker of the server itself. The probe then goes to
 * the server's own worker, which the attacker cannot read. */
static void probe_server_self(int over_unix)
{
    srvproc_t *sp = &g_sp;
    srvproc_start(sp);
    raw_ucx_t u;
    raw_ucx_init(&u);
    int fd1 = connect_port(sp->port, over_unix);
    raw_sess_t rs;
    raw_handshake(fd1, &u, "AKIDONE", "secret-one", &rs);
    srvproc_expect(sp, 1, 1);

    int fd2 = connect_port(sp->port, over_unix);
    uint8_t cnonce[RDMA_NONCE_LEN], mac[RDMA_MAC_LEN];
    assert_int_equal(hash_random_bytes(cnonce, sizeof(cnonce)), 0);
    raw_hello_addr(fd2, rs.saddr, rs.saddr_len, "AKIDTWO", "secret-two", cnonce, mac);
    wire_out_t w = {0};
    raw_send_frame(fd2, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac));
    /* Time for the probe to land where the address points (over TCP the
     * endpoint's wireup takes a moment). */
    sleep_ms(500);
    srvproc_assert_alive(sp);
    prove_guess_refused(fd2);
    close(fd2);
    /* A refusal, not a crash (which would also close fd2). */
    srvproc_assert_alive(sp);
    /* Only the legitimate session exists, and the attempt is torn down. */
    srvproc_expect(sp, 1, 1);
    close(fd1);
    srvproc_expect(sp, 0, 0);
    real_session_opens(sp->port, !over_unix);
    free(rs.saddr);
    raw_ucx_fini(&u);
    srvproc_stop(sp);
}

static void test_probe_server_worker_tcp(void **state)
{
    (void)state;
    probe_server_self(0);
}

static void test_probe_server_worker_unix(void **state)
{
    (void)state;
    as_stranger_begin();
    probe_server_self(1);
    as_stranger_end();
}

/* HELLO announces idle, a worker that is not the client's and that nobody
 * progresses (somebody else's), with idle_tls its transports; AUTH is right.
 * The probe goes there, so the client can only guess at PROVE: refused, no
 * session, and the attempt is torn down. */
static void misdirected_probe(int over_unix, const char *idle_tls)
{
    srvproc_t *sp = &g_sp;
    srvproc_start(sp);
    raw_ucx_t u, idle;
    raw_ucx_init(&u);
    raw_ucx_init_tls(&idle, idle_tls);

    int fd = connect_port(sp->port, over_unix);
    uint8_t cnonce[RDMA_NONCE_LEN], mac[RDMA_MAC_LEN];
    assert_int_equal(hash_random_bytes(cnonce, sizeof(cnonce)), 0);
    raw_hello_addr(fd, idle.addr, idle.addr_len, "AKIDONE", "secret-one", cnonce, mac);
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_nonce(&w, RDMA_MSG_AUTH, mac));
    /* The probe goes to the announced worker, not to us. */
    uint64_t until = clock_mono_ms() + 300;
    while (clock_mono_ms() < until && !u.probe_got) {
        if (!ucp_worker_progress(u.w))
            usleep(100);
    }
    assert_false(u.probe_got);
    prove_guess_refused(fd);
    close(fd);
    srvproc_assert_alive(sp);
    srvproc_expect(sp, 0, 0);
    real_session_opens(sp->port, !over_unix);
    raw_ucx_fini(&idle);
    raw_ucx_fini(&u);
    srvproc_stop(sp);
}

static void test_probe_idle_worker_tcp(void **state)
{
    (void)state;
    misdirected_probe(0, NULL);
}

static void test_probe_idle_worker_unix(void **state)
{
    (void)state;
    misdirected_probe(1, NULL);
}

/* A local session whose endpoint can only use TCP (the announced worker
 * offers nothing else), so its wireup stays pending. */
static void test_probe_idle_tcp_worker_unix(void **state)
{
    (void)state;
    as_stranger_begin();
    misdirected_probe(1, "tcp");
    as_stranger_end();
}

static void am_sent(void *request, ucs_status_t status, void *user_data)
{
    (void)status, (void)user_data;
    ucp_request_free(request);
}

/* An authenticated client sends UCX active messages straight to the server's
 * worker (the address WELCOME gave it; the server sends the probe as one,
 * so its contexts have the AM feature): the server ignores them. */
static void am_to_server_worker(int over_unix)
{
    srvproc_t *sp = &g_sp;
    srvproc_start(sp);
    raw_ucx_t u;
    raw_ucx_init(&u);
    int fd = connect_port(sp->port, over_unix);
    raw_sess_t rs;
    raw_handshake(fd, &u, "AKIDONE", "secret-one", &rs);
    srvproc_expect(sp, 1, 1);
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = (const ucp_address_t *)rs.saddr,
        .err_mode = rs.err_mode == RDMA_WIRE_ERRMODE_PEER ? UCP_ERR_HANDLING_MODE_PEER
                                                          : UCP_ERR_HANDLING_MODE_NONE,
    };
    ucp_ep_h e = NULL;
    assert_int_equal(ucp_ep_create(u.w, &ep, &e), UCS_OK);
    static uint8_t payload[RDMA_NONCE_LEN];
    const unsigned ids[] = {RDMA_AM_PROBE, 1000};
    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK, .cb.send = am_sent};
        ucs_status_ptr_t r = ucp_am_send_nbx(e, ids[i], NULL, 0, payload, sizeof(payload), &p);
        if (UCS_PTR_IS_ERR(r)) /* the endpoint failed: the server is gone, or closed it */
            break;
        for (uint64_t until = clock_mono_ms() + 300; clock_mono_ms() < until;) {
            if (!ucp_worker_progress(u.w))
                usleep(100);
        }
        srvproc_assert_alive(sp);
    }
    /* The server may keep or end that session, but it serves others. */
    real_session_opens(sp->port, 1);
    real_session_opens(sp->port, 0);
    srvproc_assert_alive(sp);
    close(fd);
    srvproc_expect(sp, 0, 0);
    free(rs.saddr);
    raw_ucx_fini(&u);
    srvproc_stop(sp);
}

static void test_am_to_server_worker_tcp(void **state)
{
    (void)state;
    am_to_server_worker(0);
}

static void test_am_to_server_worker_unix(void **state)
{
    (void)state;
    as_stranger_begin();
    am_to_server_worker(1);
    as_stranger_end();
}

/* ==== 4. floods ========================================================== */

#define FLOOD_N       300
#define FLOOD_SOURCES 59 /* 127.0.0.2 .. 127.0.0.60 */

static void flood_source(int i, char out[32])
{
    snprintf(out, 32, "127.0.0.%d", 2 + i % FLOOD_SOURCES);
}

/* Opens n connections spread over the flood sources; with hello, each sends
 * a HELLO for an unknown access key and is left at CHALLENGE. */
static void flood_open(int port, int n, int fds[], const raw_ucx_t *u, int hello)
{
    for (int i = 0; i < n; i++) {
        char src[32];
        flood_source(i, src);
        fds[i] = connect_from(port, src, 0);
        assert_true(fds[i] >= 0);
        if (i % 64 == 63) /* let the server drain its accept queue (backlog 128) */
            sleep_ms(20);
        if (hello) {
            char ak[32];
            uint8_t nonce[RDMA_NONCE_LEN] = {(uint8_t)i};
            snprintf(ak, sizeof(ak), "AKIDNOBODY%d", i);
            wire_out_t w = {0};
            raw_send_frame(fds[i], &w, rdma_wire_hello(&w, ak, nonce, u->addr, u->addr_len));
        }
    }
}

/* How many of the fds the server still holds open (the rest it closed:
 * EOF or reset after whatever it sent). */
static int flood_still_open(int n, const int fds[])
{
    int open_n = 0;
    for (int i = 0; i < n; i++) {
        for (;;) {
            char buf[4096];
            ssize_t k = recv(fds[i], buf, sizeof(buf), MSG_DONTWAIT);
            if (k > 0)
                continue;
            open_n += k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
    }
    return open_n;
}

static void flood_close(int n, int fds[])
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

static void flood_then_real_clients(int hello)
{
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    raw_ucx_t u;
    raw_ucx_init(&u);
    static int fds[FLOOD_N];
    uint64_t t0 = clock_mono_ms();
    flood_open(rdma_server_port(srv), FLOOD_N, fds, &u, hello);
    /* The flood is held open while real clients come. */
    real_client_works(srv, 1);
    real_client_works(srv, 0);
    uint64_t t1 = clock_mono_ms();
    sleep_ms(100);
    int still = flood_still_open(FLOOD_N, fds);
    print_message("[ FLOOD    ] %d %s from %d sources; real clients served %" PRIu64
                  " ms after the flood began; %d flood connections still held\n",
                  FLOOD_N, hello ? "HELLOs" : "idle connections", FLOOD_SOURCES, t1 - t0, still);
    /* The server held at most max_pending of them, and the flood did fill
     * it while the real clients came (not expired by the handshake deadline). */
    assert_true(still <= (int)S3R_RDMA_MAX_PENDING);
    assert_true(still >= (int)S3R_RDMA_MAX_PENDING - 28);
    flood_close(FLOOD_N, fds);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, 0), 0);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_flood_idle_connections(void **state)
{
    (void)state;
    flood_then_real_clients(0);
}

static void test_flood_hellos(void **state)
{
    (void)state;
    flood_then_real_clients(1);
}

static void test_per_user_session_limit(void **state)
{
    (void)state;
    rdma_server_config_t cfg = attack_cfg();
    cfg.max_sessions_per_user = 2;
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    rdma_client_config_t one = test_client_cfg(srv, "AKIDONE", "secret-one");
    rdma_client_config_t two = test_client_cfg(srv, "AKIDTWO", "secret-two");
    char err[256] = "";
    rdma_session_t *s[3] = {0}, *t = NULL;
    assert_int_equal(rdma_session_open(&one, &s[0], err, sizeof(err)), 0);
    one.socket = ""; /* the limit counts sessions of every kind */
    assert_int_equal(rdma_session_open(&one, &s[1], err, sizeof(err)), 0);
    assert_int_equal(rdma_session_open(&one, &s[2], err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many RDMA sessions"));
    one.socket = NULL;
    assert_int_equal(rdma_session_open(&one, &s[2], err, sizeof(err)), -1);
    assert_non_null(strstr(err, "too many RDMA sessions"));
    /* Another user is not affected. */
    int rc = rdma_session_open(&two, &t, err, sizeof(err));
    if (rc != 0)
        print_message("AKIDTWO: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(test_wait_count(srv, 3), 3);
    /* A session that ends frees its place once it is destroyed (until
     * then it still counts: it may hold requests stalled on its endpoint). */
    rdma_session_close(s[0]);
    assert_int_equal(test_wait_count(srv, 2), 2);
    assert_int_equal(wait_resident(srv, 2), 2);
    assert_int_equal(rdma_session_open(&one, &s[0], err, sizeof(err)), 0);
    rdma_session_close(s[0]);
    rdma_session_close(s[1]);
    rdma_session_close(t);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, 0), 0);
    rdma_server_stop(srv);
}

/* Pending handshakes cost the server one socket each: no UCX worker,
 * endpoint or other descriptor before AUTH. */
static void test_no_costly_resource_before_auth(void **state)
{
    (void)state;
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    raw_ucx_t u;
    raw_ucx_init(&u);
    enum { N_TCP = 100, N_UNIX = 7 }; /* under the caps: 8 per source, 128 in all */
    int fds[N_TCP + N_UNIX];
    sleep_ms(50);
    int before = count_fds();
    for (int i = 0; i < N_TCP + N_UNIX; i++) {
        char src[32];
        flood_source(i, src);
        fds[i] = i < N_TCP ? connect_from(rdma_server_port(srv), src, 0) : raw_connect_unix(srv);
        assert_true(fds[i] >= 0);
        uint8_t cnonce[RDMA_NONCE_LEN] = {(uint8_t)i}, mac[RDMA_MAC_LEN];
        /* A known key: the HELLO of a real user, just never followed by AUTH. */
        raw_hello(fds[i], &u, "AKIDONE", "secret-one", cnonce, mac);
    }
    int after = count_fds();
    int server_fds = after - before - (N_TCP + N_UNIX); /* minus our own ends */
    print_message("[ FDS      ] %d pending HELLOs (%d tcp, %d unix): the server holds %d more "
                  "descriptors\n",
                  N_TCP + N_UNIX, N_TCP, N_UNIX, server_fds);
    assert_true(server_fds <= N_TCP + N_UNIX + 8);
    assert_int_equal(rdma_server_session_resident(srv), 0);
    flood_close(N_TCP + N_UNIX, fds);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

/* A real client opening sessions again and again until told to stop. */
typedef struct opener {
    rdma_server_t *srv;
    _Atomic int stop;
    int opened, failed;
    uint64_t slowest_ms;
    char err[256];
} opener_t;

static void *opener_main(void *p)
{
    opener_t *o = p;
    rdma_client_config_t cfg = test_client_cfg(o->srv, "AKIDTWO", "secret-two");
    cfg.socket = "";
    do {
        rdma_session_t *s = NULL;
        uint64_t t0 = clock_mono_ms();
        if (rdma_session_open(&cfg, &s, o->err, sizeof(o->err)) == 0) {
            o->opened++;
            rdma_session_close(s);
        } else {
            o->failed++;
        }
        uint64_t dt = clock_mono_ms() - t0;
        if (dt > o->slowest_ms)
            o->slowest_ms = dt;
        /* Paced, as clients arrive: back-to-back opens and closes of network
         * sessions race inside this process's own UCX 1.13 TCP transport
         * (the tcp_ep.c:478 assertion: the in-process server's endpoint to a
         * session just closed fails while being connected, which s3rdmad's
         * UCX guard absorbs and this process, an RMA target too, cannot link;
         * seen at 50 ms under load), which is not what this test is about. */
        struct timespec pause = {0, 200 * 1000 * 1000};
        nanosleep(&pause, NULL);
    } while (!atomic_load(&o->stop));
    return NULL;
}

/* A peer that pipelines requests and never reads the replies: the server
 * closes it once its bounded output queue overflows, and keeps serving
 * another client's handshakes meanwhile. */
static void test_nonreading_peer(void **state)
{
    (void)state;
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    raw_ucx_t u;
    raw_ucx_init(&u);
    /* A small receive buffer: the replies pile up in the server, not here. */
    int fd = connect_from(rdma_server_port(srv), "127.0.0.99", 4096);
    assert_true(fd >= 0);
    raw_sess_t rs;
    raw_handshake(fd, &u, "AKIDONE", "secret-one", &rs);

    /* A garbage rkey, and a length past max_registered_per_session, so each
     * REGION_ADD is refused before UCX is asked to parse the rkey (UCX trusts
     * an rkey buffer's contents). Each refusal is an ERROR; the session stays. */
    uint8_t rkey[16];
    memset(rkey, 0xa5, sizeof(rkey));
    rdma_region_add_t m = {
        .region_id = 9, .addr = 4096, .len = UINT64_MAX / 2, .rkey = rkey, .rkey_len = 16};
    wire_out_t w = {0};
    assert_int_equal(rdma_wire_region_add(&w, &m), 0);
    for (int i = 0; i < 3; i++) {
        raw_send(fd, w.data, w.len);
        assert_int_equal(recv_error(fd, NULL), RDMA_ERR_MAX_REGISTERED);
    }
    assert_int_equal(rdma_server_session_count(srv), 1);

    enum { BATCH = 1024 };
    size_t flen = w.len, blen = flen * BATCH;
    uint8_t *batch = malloc(blen);
    assert_non_null(batch);
    for (int i = 0; i < BATCH; i++)
        memcpy(batch + (size_t)i * flen, w.data, flen);
    rdma_wire_free(&w);

    opener_t o = {.srv = srv};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, opener_main, &o), 0);

    uint64_t t0 = clock_mono_ms(), deadline = t0 + 10000, frames = 0;
    size_t off = 0;
    int closed = 0;
    while (!closed && clock_mono_ms() < deadline) {
        ssize_t k = send(fd, batch + off, blen - off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (k > 0) {
            off += (size_t)k;
            if (off == blen) {
                off = 0;
                frames += BATCH;
            }
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            struct pollfd pfd = {.fd = fd, .events = POLLOUT};
            poll(&pfd, 1, 100);
        } else {
            closed = 1; /* EPIPE / ECONNRESET: the server closed on us */
        }
    }
    uint64_t t_stop = clock_mono_ms();
    /* Stop sending; what is left to read ends in EOF or a reset. */
    size_t dcap = 16u << 20, drained = 0;
    uint8_t *dbuf = malloc(dcap);
    assert_non_null(dbuf);
    int eof = 0;
    for (uint64_t dl = clock_mono_ms() + 5000; !eof && clock_mono_ms() < dl;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        uint8_t tmp[65536], *dst = drained < dcap ? dbuf + drained : tmp;
        size_t room = drained < dcap ? dcap - drained : sizeof(tmp);
        ssize_t k = recv(fd, dst, room < sizeof(tmp) ? room : sizeof(tmp), MSG_DONTWAIT);
        if (k > 0)
            drained += dst == tmp ? 0 : (size_t)k;
        else if (k == 0 || (errno != EAGAIN && errno != EINTR))
            eof = 1;
    }
    /* What did arrive is whole ERROR frames, one per request (the stream
     * may end mid-frame where a reset cut it). */
    size_t n_err = 0;
    for (size_t off = 0; off + 4 <= drained;) {
        long n = rdma_wire_frame_len(dbuf + off);
        assert_true(n > 0);
        if (off + 4 + (size_t)n > drained)
            break;
        uint32_t code = 0;
        char msg[RDMA_MAX_ERR_MSG + 1];
        assert_int_equal(rdma_wire_frame_type(dbuf + off + 4, (size_t)n), RDMA_MSG_ERROR);
        assert_int_equal(rdma_wire_parse_error(dbuf + off + 4, (size_t)n, &code, msg), 0);
        assert_int_equal(code, RDMA_ERR_MAX_REGISTERED);
        n_err++;
        off += 4 + (size_t)n;
    }
    free(dbuf);
    atomic_store(&o.stop, 1);
    pthread_join(th, NULL);
    print_message("[ NOREAD   ] ~%" PRIu64 " frames sent in %" PRIu64 " ms, %s; %zu ERROR "
                  "replies (%zu bytes) read afterwards; meanwhile %d sessions opened, %d "
                  "failed, slowest %" PRIu64 " ms\n",
                  frames, t_stop - t0, closed ? "then the server closed" : "never closed", n_err,
                  drained, o.opened, o.failed, o.slowest_ms);
    if (o.failed)
        print_message("opener: %s\n", o.err);
    assert_true(eof);
    assert_int_equal(o.failed, 0);
    assert_true(o.opened >= 1);
    assert_true(o.slowest_ms < 5000);
    close(fd);
    free(batch);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, 0), 0);
    free(rs.saddr);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

/* ==== 5. protocol errors end the session ================================= */

static void protocol_errors(int over_unix)
{
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    raw_ucx_t u;
    raw_ucx_init(&u);
    raw_mem_t m;
    raw_mem_alloc(&u, 64 * 1024, &m);
    uint64_t base = (uintptr_t)m.p;
    raw_sess_t rs;

    /* A duplicate region id. */
    int fd = over_unix ? raw_connect_unix(srv) : raw_connect(srv);
    raw_handshake(fd, &u, "AKIDONE", "secret-one", &rs);
    free(rs.saddr);
    send_region_add(fd, 7, base, 64 * 1024, m.rkey, m.rkey_len);
    assert_int_equal(raw_recv(fd, NULL, NULL), RDMA_MSG_REGION_OK);
    raw_settle(&u);
    send_region_add(fd, 7, base, 4096, m.rkey, m.rkey_len);
    assert_int_equal(recv_error(fd, NULL), RDMA_ERR_DUP_REGION);
    assert_int_equal(raw_recv(fd, NULL, NULL), 0);
    close(fd);
    assert_int_equal(test_wait_count(srv, 0), 0);

    /* Removing a region twice: the second time it is unknown. */
    fd = over_unix ? raw_connect_unix(srv) : raw_connect(srv);
    raw_handshake(fd, &u, "AKIDONE", "secret-one", &rs);
    free(rs.saddr);
    send_region_add(fd, 5, base, 64 * 1024, m.rkey, m.rkey_len);
    assert_int_equal(raw_recv(fd, NULL, NULL), RDMA_MSG_REGION_OK);
    raw_settle(&u);
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_region_id(&w, RDMA_MSG_REGION_REMOVE, 5));
    assert_int_equal(raw_recv(fd, NULL, NULL), RDMA_MSG_REGION_OK);
    assert_int_equal(rdma_server_session_count(srv), 1);
    raw_send_frame(fd, &w, rdma_wire_region_id(&w, RDMA_MSG_REGION_REMOVE, 5));
    assert_int_equal(recv_error(fd, NULL), RDMA_ERR_NO_REGION);
    assert_int_equal(raw_recv(fd, NULL, NULL), 0);
    close(fd);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, 0), 0);
    raw_mem_free(&u, &m);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_protocol_errors_tcp(void **state)
{
    (void)state;
    protocol_errors(0);
}

static void test_protocol_errors_unix(void **state)
{
    (void)state;
    protocol_errors(1);
}

/* ==== 6. the per-source cap ============================================== */

/* Opens a pending connection (HELLO answered by CHALLENGE) from src, or the
 * Unix socket when src is NULL. */
static int pending_conn(rdma_server_t *srv, const char *src, const raw_ucx_t *u)
{
    int fd = src ? connect_from(rdma_server_port(srv), src, 0) : raw_connect_unix(srv);
    assert_true(fd >= 0);
    uint8_t nonce[RDMA_NONCE_LEN] = {0};
    wire_out_t w = {0};
    raw_send_frame(fd, &w, rdma_wire_hello(&w, "AKIDNOBODY", nonce, u->addr, u->addr_len));
    return fd;
}

static void per_source_cap(const char *src, const char *other)
{
    rdma_server_config_t cfg = attack_cfg();
    rdma_server_t *srv;
    START_OR_SKIP(srv, cfg);
    raw_ucx_t u;
    raw_ucx_init(&u);
    int fds[8];
    for (int i = 0; i < 8; i++) {
        fds[i] = pending_conn(srv, src, &u);
        assert_int_equal(raw_recv(fds[i], NULL, NULL), RDMA_MSG_CHALLENGE);
    }
    /* The ninth from the same source is refused at once. */
    uint64_t t0 = clock_mono_ms();
    int fd9 = src ? connect_from(rdma_server_port(srv), src, 0) : raw_connect_unix(srv);
    assert_true(fd9 >= 0);
    assert_int_equal(recv_error(fd9, NULL), RDMA_ERR_BUSY);
    assert_int_equal(raw_recv(fd9, NULL, NULL), 0);
    assert_true(clock_mono_ms() - t0 < 1000);
    close(fd9);
    /* The cap is per source... */
    if (other) {
        int fo = pending_conn(srv, other, &u);
        assert_int_equal(raw_recv(fo, NULL, NULL), RDMA_MSG_CHALLENGE);
        close(fo);
    }
    /* ...and counts pending handshakes only: one ends, another may start. */
    close(fds[0]);
    int ok = 0;
    for (int i = 0; i < 50 && !ok; i++) {
        sleep_ms(20);
        int fd = pending_conn(srv, src, &u);
        ok = raw_recv(fd, NULL, NULL) == RDMA_MSG_CHALLENGE;
        close(fd);
    }
    assert_true(ok);
    flood_close(7, fds + 1);
    raw_ucx_fini(&u);
    rdma_server_stop(srv);
}

static void test_per_source_cap_tcp(void **state)
{
    (void)state;
    per_source_cap("127.0.0.77", "127.0.0.78");
}

static void test_per_source_cap_unix(void **state)
{
    (void)state;
    per_source_cap(NULL, NULL);
}

/* ==== 7. malformed rkeys ================================================= */

/* UCX 1.13 packs an rkey as u64 md_map | u8 memory type | for each bit of
 * md_map: u8 size, size bytes | optional device distances, and
 * ucp_ep_rkey_unpack takes no length: it trusts those sizes. The server has
 * the blob's length (rkey_len) and must not let UCX read past it. */
static void rkey_attack(int over_unix, int truncated)
{
    srvproc_t *sp = &g_sp;
    srvproc_start(sp);
    raw_ucx_t u;
    raw_ucx_init(&u);
    raw_mem_t m;
    raw_mem_alloc(&u, 64 * 1024, &m);
    int fd = connect_port(sp->port, over_unix);
    raw_sess_t rs;
    raw_handshake(fd, &u, "AKIDONE", "secret-one", &rs);
    uint8_t rkey[RDMA_MAX_RKEY];
    size_t rkey_len;
    if (truncated) {
        /* 64 memory domains claimed, none supplied: the frame ends here. */
        memset(rkey, 0xff, 8);
        rkey[8] = 0;
        rkey_len = 9;
    } else {
        /* The real rkey, layout intact, every domain's payload 0xff (for
         * shared memory: a segment id or fd that does not exist). */
        assert_true(m.rkey_len <= sizeof(rkey));
        memcpy(rkey, m.rkey, m.rkey_len);
        rkey_len = m.rkey_len;
        uint64_t md_map;
        memcpy(&md_map, rkey, 8);
        size_t off = 9;
        for (int b = 0; b < 64; b++) {
            if (!(md_map >> b & 1))
                continue;
            assert_true(off < rkey_len);
            size_t sz = rkey[off];
            assert_true(off + 1 + sz <= rkey_len);
            memset(rkey + off + 1, 0xff, sz);
            off += 1 + sz;
        }
    }
    send_region_add(fd, 1, (uintptr_t)m.p, 64 * 1024, rkey, rkey_len);
    uint8_t *body = NULL;
    size_t len = 0;
    int t = raw_recv(fd, &body, &len);
    if (t <= 0) /* a crash also ends the reply stream */
        srvproc_assert_alive_after_eof(sp);
    if (t == RDMA_MSG_ERROR) {
        uint32_t code = 0;
        char msg[RDMA_MAX_ERR_MSG + 1];
        assert_int_equal(rdma_wire_parse_error(body, len, &code, msg), 0);
        assert_true(code == RDMA_ERR_BAD_RKEY || code == RDMA_ERR_BAD_MESSAGE);
    } else if (t == RDMA_MSG_REGION_OK) {
        if (truncated)
            fail_msg("a %zu-byte rkey claiming 64 memory domains was accepted: UCX parsed "
                     "past the end of the frame",
                     rkey_len);
        /* Payloads the session's transports never read may pass: a stranger
         * on the Unix socket gets the net domain, which unpacks no
         * shared-memory rkey (TCP's rkey is empty). What matters is below:
         * the server stays up and serves. */
    } else {
        fail_msg("REGION_ADD: reply type %d", t);
    }
    free(body);
    raw_settle(&u);
    real_session_opens(sp->port, !over_unix);
    srvproc_assert_alive(sp);
    close(fd);
    srvproc_expect(sp, 0, 0);
    free(rs.saddr);
    raw_mem_free(&u, &m);
    raw_ucx_fini(&u);
    srvproc_stop(sp);
}

static void test_rkey_truncated_tcp(void **state)
{
    (void)state;
    rkey_attack(0, 1);
}

static void test_rkey_truncated_unix(void **state)
{
    (void)state;
    rkey_attack(1, 1);
}

static void test_rkey_corrupt_unix(void **state)
{
    (void)state;
    as_stranger_begin();
    rkey_attack(1, 0);
    as_stranger_end();
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--child-net") == 0)
        return child_net_main(atoi(argv[2]));
    if (argc == 2 && strcmp(argv[1], "--child-server") == 0)
        return child_server_main();
    signal(SIGPIPE, SIG_IGN); /* writes to a server process that died */
    log_set_level(getenv("S3R_TEST_LOG") ? LOG_LVL_INFO : LOG_LVL_ERROR);
    if (getenv("S3R_TEST_FILTER")) /* e.g. "test_flood_*" */
        cmocka_set_test_filter(getenv("S3R_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_overannounce_local_mapped),
        cmocka_unit_test(test_overannounce_local_staged),
        cmocka_unit_test(test_overannounce_net_survives),
        cmocka_unit_test_teardown(test_probe_idle_worker_tcp, srvproc_teardown),
        cmocka_unit_test_teardown(test_probe_idle_worker_unix, srvproc_teardown),
        cmocka_unit_test_teardown(test_probe_idle_tcp_worker_unix, srvproc_teardown),
        cmocka_unit_test_teardown(test_probe_server_worker_tcp, srvproc_teardown),
        cmocka_unit_test_teardown(test_probe_server_worker_unix, srvproc_teardown),
        cmocka_unit_test_teardown(test_am_to_server_worker_tcp, srvproc_teardown),
        cmocka_unit_test_teardown(test_am_to_server_worker_unix, srvproc_teardown),
        cmocka_unit_test(test_flood_idle_connections),
        cmocka_unit_test(test_flood_hellos),
        cmocka_unit_test(test_per_user_session_limit),
        cmocka_unit_test(test_no_costly_resource_before_auth),
        cmocka_unit_test(test_nonreading_peer),
        cmocka_unit_test(test_protocol_errors_tcp),
        cmocka_unit_test(test_protocol_errors_unix),
        cmocka_unit_test(test_per_source_cap_tcp),
        cmocka_unit_test(test_per_source_cap_unix),
        cmocka_unit_test_teardown(test_rkey_truncated_tcp, srvproc_teardown),
        cmocka_unit_test_teardown(test_rkey_truncated_unix, srvproc_teardown),
        cmocka_unit_test_teardown(test_rkey_corrupt_unix, srvproc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
