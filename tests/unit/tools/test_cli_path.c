/* The CLI's local-path rule (src/tools/cli_path.c): which key names may
 * become files below a local directory. The integration tests
 * (tests/integration/test_cli_traversal.py) drive it through every verb. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/cli_out.c" /* cli_line: the warnings */
#include "tools/cli_path.c"

static void test_names_inside_pass(void **state)
{
    (void)state;
    const char *ok[] = {"f",   "a/b/c.txt", "a//b",     "..a",  "a..",
                        "...", ".hidden",   "a/.b/..c", "a\\b", "trailing\\"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_null(cli_rel_refusal(ok[i]));
}

static void test_names_that_leave_are_refused(void **state)
{
    (void)state;
    const char *bad[] = {"",        "..",         "../x",     "a/../../x", "a/..",
                         "/abs",    "\\abs",      "a\\..\\x", "a\\..",     "..\\x",
                         ".",       "./x",        "a/./b",    "a/.",       "a\\.\\b",
                         "a//../b", "a/\\..\\/b", "//double", "x/..//y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why = cli_rel_refusal(bad[i]);
        if (why == NULL)
            fail_msg("\"%s\" was let through", bad[i]);
    }
    assert_string_equal(cli_rel_refusal("a/../x"), "it has a '..' segment");
    assert_string_equal(cli_rel_refusal("\\x"), "it is absolute");
}

/* cli_local_path joins what passes and refuses the rest with CLI_FAIL. */
static void test_local_path(void **state)
{
    (void)state;
    int rc = CLI_OK;
    char *p = cli_local_path("dl/", "a/b", "bkt", "pre/a/b", &rc);
    assert_string_equal(p, "dl/a/b");
    assert_int_equal(rc, CLI_OK);
    free(p);
    assert_null(cli_local_path("dl", "a/../../x", "bkt", "pre/a/../../x", &rc));
    assert_int_equal(rc, CLI_FAIL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_inside_pass),
        cmocka_unit_test(test_names_that_leave_are_refused),
        cmocka_unit_test(test_local_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
