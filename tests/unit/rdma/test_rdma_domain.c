/* rdma_net_tls: the transports strangers' sessions may use are the network
 * ones the operator's UCX_TLS allows, never shared memory, CMA, knem or
 * self (where UCX trusts a peer's rkey and address with the server's own
 * memory); and rdma_local_tls, the trusted domain's same-host list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rdma/rdma_server_internal.h"

static const char *net(const char *ucx_tls)
{
    static char out[512];
    return rdma_net_tls(ucx_tls, out, sizeof(out)) == 0 ? out : NULL;
}

static void test_default_is_network_only(void **state)
{
    (void)state;
    const char *want = "rc_verbs,rc_mlx5,ud_verbs,ud_mlx5,dc_mlx5,tcp";
    assert_string_equal(net(NULL), want);
    assert_string_equal(net(""), want);
    assert_string_equal(net("all"), want);
}

static void test_allow_list_filtered(void **state)
{
    (void)state;
    assert_string_equal(net("tcp"), "tcp");
    assert_string_equal(net("sm,tcp"), "tcp");
    assert_string_equal(net("posix,sysv,cma,knem,xpmem,self,tcp"), "tcp");
    assert_string_equal(net("rc,ud:aux,shm"), "rc,ud:aux");
    assert_string_equal(net("\\tcp,\\posix"), "\\tcp");
    assert_null(net("sm"));
    assert_null(net("posix,self"));
    assert_null(net("cuda_ipc"));
}

static void test_deny_list_kept(void **state)
{
    (void)state;
    assert_string_equal(net("^ib"), "tcp");
    assert_string_equal(net("^tcp"), "rc_verbs,rc_mlx5,ud_verbs,ud_mlx5,dc_mlx5");
    assert_string_equal(net("^rc,cma"), "ud_verbs,ud_mlx5,dc_mlx5,tcp");
    assert_null(net("^ib,tcp"));
}

static const char *local(const char *ucx_tls)
{
    static char out[512];
    return rdma_local_tls(ucx_tls, out, sizeof(out)) == 0 ? out : NULL;
}

/* The local domain: same-host transports only, and one of them must carry
 * UCP's wireup messages (CMA and knem only move data). */
static void test_local_is_same_host_only(void **state)
{
    (void)state;
    const char *all = "posix,sysv,xpmem,cma,knem";
    assert_string_equal(local(NULL), all);
    assert_string_equal(local("all"), all);
    assert_string_equal(local("sm,tcp"), "sm");
    assert_string_equal(local("posix,cma,tcp,rc"), "posix,cma");
    assert_string_equal(local("^cma"), "posix,sysv,xpmem,knem");
    assert_string_equal(local("^tcp,ib"), all);
    assert_null(local("tcp"));
    assert_null(local("cma,knem,tcp")); /* no shared-memory transport with messages */
    assert_null(local("^mm"));          /* leaves cma and knem only */
    assert_null(local("^shm"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_is_network_only),
        cmocka_unit_test(test_allow_list_filtered),
        cmocka_unit_test(test_deny_list_kept),
        cmocka_unit_test(test_local_is_same_host_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
