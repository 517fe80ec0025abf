/* The CLI's human-readable output (src/tools/cli_out.c): which bytes a
 * terminal is shown as '?' (cli_mask_controls), and that cli_line masks on
 * a terminal only, keeping the exact bytes in a pipe. The integration test
 * (tests/integration/test_cli_terminal.py) drives every verb's output
 * through a pseudo-terminal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pty.h>
#include <termios.h>

#include <cmocka.h>

#include "tools/cli_out.c"

/* Asserts that masking in (n bytes) gives want. */
static void check(const char *in, size_t n, const char *want)
{
    char buf[64];
    assert_true(n <= sizeof(buf));
    memcpy(buf, in, n);
    size_t len = cli_mask_controls(buf, n);
    if (len != strlen(want) || memcmp(buf, want, len) != 0)
        fail_msg("masking %zu bytes gave \"%.*s\", want \"%s\"", n, (int)len, buf, want);
}
#define CHECK(lit, want) check(lit, sizeof(lit) - 1, want)

static void test_c0_and_del_are_masked(void **state)
{
    (void)state;
    for (int c = 0; c < 0x20; c++) {
        char in[3] = {'a', (char)c, 'b'};
        check(in, 3, "a?b");
    }
    CHECK("a\x7f"
          "b",
          "a?b");
    CHECK("\x1b]0;pwned\x07", "?]0;pwned?"); /* sets the window title */
    CHECK("\x1b[2J", "?[2J");                /* clears the screen */
    CHECK("new\nline\r\t", "new?line??");
}

static void test_c1_in_utf8_is_masked(void **state)
{
    (void)state;
    for (int cp = 0x80; cp <= 0x9f; cp++) { /* U+0080..U+009F: c2 80 .. c2 9f */
        char in[4] = {'a', (char)0xc2, (char)cp, 'b'};
        check(in, 4, "a?b");
    }
    CHECK("\xc2\x9b"
          "2J",
          "?2J"); /* CSI as one C1 character */
}

static void test_printable_text_is_kept(void **state)
{
    (void)state;
    char ascii[0x7f - 0x20];
    for (int c = 0x20; c < 0x7f; c++)
        ascii[c - 0x20] = (char)c;
    char copy[sizeof(ascii)];
    memcpy(copy, ascii, sizeof(ascii));
    assert_int_equal(cli_mask_controls(copy, sizeof(copy)), sizeof(ascii));
    assert_memory_equal(copy, ascii, sizeof(ascii));
    const char *kept[] = {
        "caf\xc3\xa9 \xe2\x82\xac", /* café € */
        "\xc2\xa0\xc2\xbf",         /* U+00A0, U+00BF: just past the C1 block */
        "\xed\x9f\xbf",             /* U+D7FF: just below the surrogates */
        "\xf0\x9f\x98\x80",         /* U+1F600 */
        "\xf4\x8f\xbf\xbf",         /* U+10FFFF */
        "\xe0\xa0\x80\xef\xbf\xbd", /* U+0800, U+FFFD */
    };
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        check(kept[i], strlen(kept[i]), kept[i]);
}

/* Each byte outside well-formed UTF-8 is one '?': an 8-bit terminal reads
 * a lone 0x9b as CSI. */
static void test_malformed_utf8_is_masked_bytewise(void **state)
{
    (void)state;
    CHECK("\x9b"
          "2J",
          "?2J");
    CHECK("\xc0\x80", "??");           /* overlong NUL */
    CHECK("\xc1\x9b", "??");           /* overlong CSI */
    CHECK("\xe0\x80\x9b", "???");      /* overlong, three bytes */
    CHECK("\xed\xa0\x80", "???");      /* a surrogate */
    CHECK("\xf4\x90\x80\x80", "????"); /* above U+10FFFF */
    CHECK("\xf5\x80", "??");
    CHECK("x\xe2\x82", "x??"); /* cut short at the end */
    CHECK("\xc2"
          "A",
          "?A"); /* a lead byte without its continuation */
    CHECK("\xc2", "?");
}

/* What cli_line wrote to a stream whose other end is fd (one read). */
static size_t line_via(FILE *f, int fd, char *out, size_t cap)
{
    cli_line(f, "k=%s.", "\x1b[2J\x07\xc2\x9b\xc3\xa9");
    assert_int_equal(fflush(f), 0);
    ssize_t n = read(fd, out, cap);
    assert_true(n > 0);
    return (size_t)n;
}

static void test_line_into_a_pipe_is_exact(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    FILE *f = fdopen(p[1], "w");
    assert_non_null(f);
    char got[64];
    size_t n = line_via(f, p[0], got, sizeof(got));
    const char want[] = "k=\x1b[2J\x07\xc2\x9b\xc3\xa9.\n";
    assert_int_equal(n, sizeof(want) - 1);
    assert_memory_equal(got, want, n);
    fclose(f);
    close(p[0]);
}

static void test_line_on_a_terminal_is_masked(void **state)
{
    (void)state;
    int master, slave;
    assert_int_equal(openpty(&master, &slave, NULL, NULL, NULL), 0);
    struct termios t;
    assert_int_equal(tcgetattr(slave, &t), 0);
    cfmakeraw(&t); /* no "\n" -> "\r\n": the bytes as written */
    assert_int_equal(tcsetattr(slave, TCSANOW, &t), 0);
    FILE *f = fdopen(slave, "w");
    assert_non_null(f);
    char got[64];
    size_t n = line_via(f, master, got, sizeof(got));
    const char want[] = "k=?[2J??\xc3\xa9.\n";
    if (n != sizeof(want) - 1 || memcmp(got, want, n) != 0)
        fail_msg("the terminal got \"%.*s\"", (int)n, got);
    fclose(f);
    close(master);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_c0_and_del_are_masked),
        cmocka_unit_test(test_c1_in_utf8_is_masked),
        cmocka_unit_test(test_printable_text_is_kept),
        cmocka_unit_test(test_malformed_utf8_is_masked_bytewise),
        cmocka_unit_test(test_line_into_a_pipe_is_exact),
        cmocka_unit_test(test_line_on_a_terminal_is_masked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
