/* The logger escapes control characters in every message, so client text
 * passed as an argument (a key, an access key, a user agent) cannot forge a
 * log line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"

#define FORGED "2030-01-01T00:00:00.000Z error FORGED"

static void expect_escape(const char *in, const char *want)
{
    char out[256];
    size_t n = log_escape(in, out, sizeof(out));
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
}

static void test_escape(void **state)
{
    (void)state;
    expect_escape("", "");
    expect_escape("plain text: key/with spaces", "plain text: key/with spaces");
    expect_escape("a\nb", "a\\nb");
    expect_escape("a\rb", "a\\rb");
    expect_escape("a\tb", "a\\tb");
    expect_escape("\r\n" FORGED, "\\r\\n" FORGED);
    expect_escape("\x01\x1b[31m\x1f\x7f", "\\x01\\x1b[31m\\x1f\\x7f");
    expect_escape("caf\xc3\xa9 \xe2\x82\xac \xff",
                  "caf\xc3\xa9 \xe2\x82\xac \xff"); /* bytes >= 0x80 */
    expect_escape("back\\slash", "back\\slash");
}

static void test_escape_every_control_byte(void **state)
{
    (void)state;
    for (int c = 1; c < 256; c++) {
        char in[2] = {(char)c, '\0'};
        char out[8];
        log_escape(in, out, sizeof(out));
        if (c < 0x20 || c == 0x7f) {
            assert_int_equal(out[0], '\\');
            for (const char *p = out; *p; p++)
                assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
        } else {
            assert_int_equal((unsigned char)out[0], c);
            assert_int_equal(out[1], '\0');
        }
    }
}

static void test_escape_truncates_whole(void **state)
{
    (void)state;
    char out[6];
    /* "ab\n" needs 4 bytes + NUL; "ab\ncd" does not fit: the escape is kept whole. */
    assert_int_equal(log_escape("ab\ncd", out, sizeof(out)), 5);
    assert_string_equal(out, "ab\\nc");
    assert_int_equal(log_escape("abc\x01", out, sizeof(out)), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(log_escape("abcdefgh", out, sizeof(out)), 5);
    assert_string_equal(out, "abcde");
    assert_int_equal(log_escape("x", out, 1), 0);
    assert_string_equal(out, "");
}

/* Runs fn with stderr sent to a temporary file; returns what was written. */
static char *capture_stderr(void (*fn)(void), size_t *len)
{
    char path[] = "/tmp/s3r-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    fn();
    fflush(stderr);
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    off_t size = lseek(fd, 0, SEEK_END);
    assert_true(size >= 0);
    char *buf = calloc(1, (size_t)size + 1);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)size, 0), size);
    close(fd);
    *len = (size_t)size;
    return buf;
}

static void log_forgeries(void)
{
    log_warn("rdma: %s: session authentication failed for access key '%s' (%s); closing",
             "127.0.0.1:4242", "AKEVIL\n" FORGED, "no such user");
    log_info("request %s GET /%s: %s", "0001", "bucket\r" FORGED, "NotImplemented");
    log_error("user agent %s", "curl\r\n" FORGED "\x1b[2J");
}

static void test_log_write_one_line_per_message(void **state)
{
    (void)state;
    log_set_level(LOG_LVL_DEBUG);
    size_t len;
    char *out = capture_stderr(log_forgeries, &len);
    /* Three messages, three lines: the only newlines are the logger's own. */
    int lines = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)out[i];
        if (c == '\n')
            lines++;
        else
            assert_true(c >= 0x20 && c != 0x7f);
    }
    assert_int_equal(lines, 3);
    assert_int_equal(out[len - 1], '\n');
    /* No line is the forged one. */
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        assert_int_not_equal(strncmp(l, FORGED, strlen(FORGED)), 0);
    assert_non_null(strstr(out, "access key 'AKEVIL\\n" FORGED "' (no such user); closing"));
    free(out);
    out = capture_stderr(log_forgeries, &len);
    assert_non_null(strstr(out, "GET /bucket\\r" FORGED ": NotImplemented"));
    assert_non_null(strstr(out, "user agent curl\\r\\n" FORGED "\\x1b[2J\n"));
    free(out);
}

static void log_long(void)
{
    char big[4096];
    memset(big, '\n', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_error("%s", big);
}

static void test_log_write_long_message(void **state)
{
    (void)state;
    size_t len;
    char *out = capture_stderr(log_long, &len);
    /* Truncated to one line, ending in a whole escape and the newline. */
    assert_true(len > 100 && len <= 2048);
    assert_int_equal(out[len - 1], '\n');
    assert_int_equal(out[len - 2], 'n');
    assert_int_equal(out[len - 3], '\\');
    assert_ptr_equal(strchr(out, '\n'), out + len - 1);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test(test_escape_every_control_byte),
        cmocka_unit_test(test_escape_truncates_whole),
        cmocka_unit_test(test_log_write_one_line_per_message),
        cmocka_unit_test(test_log_write_long_message),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
