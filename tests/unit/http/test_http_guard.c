/* Unit tests for src/http/http_guard.c: the head deadline, the minimum body rate
 * (time in our own handler excluded), the keep-alive head clock, a full table
 * and the reaper leaving alone what it must. Sockets are real loopback pairs;
 * the guard's "server side" is one end, the test reads the other for EOF. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/http_guard.h"

/* A connected TCP pair on 127.0.0.1: fds[0] the server's, fds[1] the client's. */
static void tcp_pair(int fds[2])
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(l >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(l, 1), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    fds[1] = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(connect(fds[1], (struct sockaddr *)&a, sizeof(a)), 0);
    fds[0] = accept(l, NULL, NULL);
    assert_true(fds[0] >= 0);
    close(l);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* True when the client end sees EOF (the guard shut the server end down)
 * within ms. */
static int eof_within(int client_fd, int ms)
{
    struct pollfd p = {.fd = client_fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    char c;
    return recv(client_fd, &c, 1, MSG_DONTWAIT) == 0;
}

static http_guard_t *start(unsigned slots, unsigned head_ms, uint64_t rate, unsigned window_ms)
{
    http_guard_config_t cfg = {.max_conns = slots,
                               .head_timeout_ms = head_ms,
                               .min_body_rate = rate,
                               .body_window_ms = window_ms,
                               .sweep_ms = 20};
    http_guard_t *g = http_guard_start(&cfg);
    assert_non_null(g);
    return g;
}

static void test_head_deadline(void **state)
{
    (void)state;
    http_guard_t *g = start(4, 200, 0, 1000);
    int fds[2];
    tcp_pair(fds);
    http_guard_conn_t *c = http_guard_register(g, fds[0], NULL);
    assert_non_null(c);
    assert_true(eof_within(fds[1], 3000));
    http_guard_stats_t st;
    http_guard_get_stats(g, &st);
    assert_int_equal(st.closed_head, 1);
    assert_int_equal(st.open, 1);
    http_guard_unregister(g, c);
    http_guard_get_stats(g, &st);
    assert_int_equal(st.open, 0);
    close(fds[0]);
    close(fds[1]);
    http_guard_stop(g);
}

static void test_head_in_time_then_work_is_not_timed(void **state)
{
    (void)state;
    http_guard_t *g = start(4, 100, 0, 1000);
    int fds[2];
    tcp_pair(fds);
    http_guard_conn_t *c = http_guard_register(g, fds[0], NULL);
    uint64_t t = http_guard_enter(c); /* head complete at once */
    sleep_ms(300);                    /* a slow handler: not the client's fault */
    http_guard_leave(c, t, 0);
    assert_false(eof_within(fds[1], 300));
    http_guard_stats_t st;
    http_guard_get_stats(g, &st);
    assert_int_equal(st.closed_head, 0);
    http_guard_unregister(g, c);
    close(fds[0]);
    close(fds[1]);
    http_guard_stop(g);
}

static void test_slow_body_is_cut(void **state)
{
    (void)state;
    http_guard_t *g = start(4, 0, 1000, 200);
    int fds[2];
    tcp_pair(fds);
    http_guard_conn_t *c = http_guard_register(g, fds[0], NULL);
    http_guard_leave(c, http_guard_enter(c), 1); /* the body is awaited */
    int closed = 0;
    for (int i = 0; i < 40 && !closed; i++) { /* 10 B per 50 ms: 200 B/s */
        uint64_t t = http_guard_enter(c);
        http_guard_body_bytes(c, 10);
        http_guard_leave(c, t, 1);
        closed = eof_within(fds[1], 50);
    }
    assert_true(closed);
    http_guard_stats_t st;
    http_guard_get_stats(g, &st);
    assert_int_equal(st.closed_body, 1);
    http_guard_unregister(g, c);
    close(fds[0]);
    close(fds[1]);
    http_guard_stop(g);
}

static void test_body_at_rate_and_server_time_are_fine(void **state)
{
    (void)state;
    http_guard_t *g = start(4, 0, 1000, 200);
    int fds[2];
    tcp_pair(fds);
    http_guard_conn_t *c = http_guard_register(g, fds[0], NULL);
    http_guard_leave(c, http_guard_enter(c), 1);
    for (int i = 0; i < 12; i++) { /* 1000 B per 50 ms: 20 kB/s */
        uint64_t t = http_guard_enter(c);
        http_guard_body_bytes(c, 1000);
        http_guard_leave(c, t, 1);
        assert_false(eof_within(fds[1], 50));
    }
    /* Our handler blocks for a long while (the disk, say): no bytes come in
     * meanwhile and that is not held against the client. */
    uint64_t t = http_guard_enter(c);
    http_guard_body_bytes(c, 100);
    sleep_ms(600);
    http_guard_leave(c, t, 1);
    for (int i = 0; i < 4; i++) {
        t = http_guard_enter(c);
        http_guard_body_bytes(c, 1000);
        http_guard_leave(c, t, 1);
        assert_false(eof_within(fds[1], 50));
    }
    http_guard_leave(c, http_guard_enter(c), 0); /* the last call: replying */
    assert_false(eof_within(fds[1], 400));
    http_guard_stats_t st;
    http_guard_get_stats(g, &st);
    assert_int_equal(st.closed_body, 0);
    http_guard_unregister(g, c);
    close(fds[0]);
    close(fds[1]);
    http_guard_stop(g);
}

static void test_keepalive_head_clock_starts_at_first_byte(void **state)
{
    (void)state;
    http_guard_t *g = start(4, 200, 0, 1000);
    int fds[2];
    tcp_pair(fds);
    http_guard_conn_t *c = http_guard_register(g, fds[0], NULL);
    http_guard_leave(c, http_guard_enter(c), 0);
    http_guard_request_done(c);
    assert_false(eof_within(fds[1], 600));        /* idle keep-alive: not the head's deadline */
    assert_int_equal(send(fds[1], "G", 1, 0), 1); /* the next request begins, and stalls */
    assert_true(eof_within(fds[1], 3000));
    http_guard_stats_t st;
    http_guard_get_stats(g, &st);
    assert_int_equal(st.closed_head, 1);
    http_guard_unregister(g, c);
    close(fds[0]);
    close(fds[1]);
    http_guard_stop(g);
}

static void test_full_table_refuses_and_slots_are_reused(void **state)
{
    (void)state;
    http_guard_t *g = start(1, 0, 0, 1000);
    int a[2], b[2];
    tcp_pair(a);
    tcp_pair(b);
    http_guard_conn_t *ca = http_guard_register(g, a[0], NULL);
    assert_non_null(ca);
    assert_null(http_guard_register(g, b[0], NULL));
    assert_true(eof_within(b[1], 1000));
    http_guard_stats_t st;
    http_guard_get_stats(g, &st);
    assert_int_equal(st.refused_full, 1);
    http_guard_unregister(g, ca);
    http_guard_conn_t *again = http_guard_register(g, b[0], NULL);
    assert_ptr_equal(again, ca);
    http_guard_unregister(g, again);
    assert_false(eof_within(a[1], 100));
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
    http_guard_stop(g);
}

static void test_null_connection_is_a_no_op(void **state)
{
    (void)state;
    http_guard_leave(NULL, http_guard_enter(NULL), 1);
    http_guard_body_bytes(NULL, 5);
    http_guard_request_done(NULL);
    http_guard_stop(NULL);
    http_guard_stats_t st;
    http_guard_get_stats(NULL, &st);
    assert_int_equal(st.open, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_deadline),
        cmocka_unit_test(test_head_in_time_then_work_is_not_timed),
        cmocka_unit_test(test_slow_body_is_cut),
        cmocka_unit_test(test_body_at_rate_and_server_time_are_fine),
        cmocka_unit_test(test_keepalive_head_clock_starts_at_first_byte),
        cmocka_unit_test(test_full_table_refuses_and_slots_are_reused),
        cmocka_unit_test(test_null_connection_is_a_no_op),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
