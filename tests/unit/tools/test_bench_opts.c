/* s3rdma-bench's command line (src/tools/bench/opts.c): the flags that fold
 * the old bench/s3r_loadgen.c and bench/walk.c into the tool. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "tools/bench/opts.c"

static int parse(bench_opts_t *o, const char *const *args)
{
    char *argv[32] = {"s3rdma-bench"};
    int argc = 1;
    for (; args[argc - 1]; argc++)
        argv[argc] = (char *)args[argc - 1];
    argv[argc++] = "--access-key";
    argv[argc++] = "AK";
    argv[argc++] = "--secret-key";
    argv[argc++] = "SK";
    int rc = bench_opts_parse(argc, argv, o);
    return rc;
}

static void test_durations(void **state)
{
    (void)state;
    double s = -1;
    assert_int_equal(parse_duration("100us", &s), 0);
    assert_true(s > 99e-6 && s < 101e-6);
    assert_int_equal(parse_duration("1m30s", &s), 0);
    assert_true(s == 90);
    assert_int_equal(parse_duration("300ms", &s), 0);
    assert_true(s > 0.299 && s < 0.301);
    assert_int_equal(parse_duration("0", &s), 0);
    assert_true(s == 0);
    assert_int_equal(parse_duration("5x", &s), -1);
    assert_int_equal(parse_duration("", &s), -1);
}

/* Each single-op workload weighs its own op only; walk weighs none. */
static void test_workloads(void **state)
{
    (void)state;
    static const struct {
        const char *verb;
        int op;
    } cases[] = {{"read", OP_READ}, {"write", OP_WRITE}, {"delete", OP_DELETE},
                 {"list", OP_LIST}, {"head", OP_HEAD},   {"walk", -1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bench_opts_t o;
        const char *args[] = {"run", cases[i].verb, NULL};
        assert_int_equal(parse(&o, args), 0);
        assert_int_equal(o.walk, cases[i].op < 0);
        for (int k = 0; k < OP_COUNT; k++)
            assert_int_equal(o.mix[k], k == cases[i].op);
        bench_opts_free(&o);
    }
    bench_opts_t o;
    const char *bad[] = {"run", "stroll", NULL};
    assert_int_equal(parse(&o, bad), 2);
    bench_opts_free(&o);
    const char *mix[] = {"run", "mixed", "--mix", "read=1,head=3", NULL};
    assert_int_equal(parse(&o, mix), 0);
    assert_int_equal(o.mix[OP_HEAD], 3);
    bench_opts_free(&o);
}

static void test_loadgen_flags(void **state)
{
    (void)state;
    bench_opts_t o;
    const char *args[] = {"run",
                          "write",
                          "--warmup",
                          "300ms",
                          "--gap",
                          "20us",
                          "--native-inline",
                          "0",
                          "--part-size",
                          "8MiB",
                          "--parts-in-flight",
                          "4",
                          "--client-per-thread",
                          "--verify=false",
                          NULL};
    assert_int_equal(parse(&o, args), 0);
    assert_true(o.warmup_s > 0.299 && o.warmup_s < 0.301);
    assert_true(o.gap_s > 19e-6 && o.gap_s < 21e-6);
    assert_int_equal(o.native_inline, 0);
    assert_int_equal(o.client_per_thread, 1);
    assert_int_equal(o.verify, 0);
    s3r_config_t cfg;
    bench_opts_config(&o, &cfg);
    assert_int_equal(cfg.native_inline, 0);
    assert_int_equal(cfg.part_size, 8 << 20);
    assert_int_equal(cfg.multipart_threshold, 8 << 20);
    assert_int_equal(cfg.parts_in_flight, 4);
    bench_opts_free(&o);

    /* defaults: the library's inline size, whole-object PUTs, reads verified */
    const char *plain[] = {"run", "read", "--object-size", "64MiB", NULL};
    assert_int_equal(parse(&o, plain), 0);
    assert_int_equal(o.verify, 1);
    s3r_config_t def;
    s3r_config_init(&def);
    bench_opts_config(&o, &cfg);
    assert_int_equal(cfg.native_inline, def.native_inline);
    assert_int_equal(cfg.multipart_threshold, 64 << 20);
    bench_opts_free(&o);

    /* a gap models one request at a time */
    const char *gap[] = {"run", "read", "--gap", "1ms", "--inflight", "4", NULL};
    assert_int_equal(parse(&o, gap), 2);
    bench_opts_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_workloads),
        cmocka_unit_test(test_loadgen_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
