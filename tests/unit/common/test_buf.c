/* The growable buffer: growth, the hard maximum, NUL termination, XML
 * escaping, stealing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"

static void test_append_and_grow(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(buf_append(&b, "0123456789", 10), 0);
    assert_int_equal(b.len, 10000);
    assert_int_equal(b.data[b.len], '\0');
    assert_memory_equal(b.data + 9990, "0123456789", 10);
    assert_int_equal(buf_append(&b, NULL, 0), 0);
    assert_int_equal(buf_printf(&b, "-%d-%s", 42, "x"), 0);
    assert_string_equal(b.data + 10000, "-42-x");
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.max, 1 << 20);
    buf_free(&b);
}

static void test_max(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 8);
    assert_int_equal(buf_append_str(&b, "12345678"), 0);
    assert_int_equal(buf_append_str(&b, "9"), -1);
    assert_string_equal(b.data, "12345678");
    assert_int_equal(buf_printf(&b, "%s", "x"), -1);
    assert_string_equal(b.data, "12345678");
    buf_reset(&b);
    assert_int_equal(buf_printf(&b, "%s", "123456789"), -1);
    assert_int_equal(b.len, 0);
    assert_int_equal(buf_reserve(&b, 9), -1);
    assert_int_equal(buf_reserve(&b, 8), 0);
    assert_int_equal(buf_reserve(&b, SIZE_MAX), -1);
    buf_free(&b);
}

/* buf_printf formats into the room there is, and again into a larger
 * buffer when it did not fit; either way the text is whole and a C string. */
static void test_printf_room_and_growth(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1 << 20);
    assert_int_equal(buf_printf(&b, "%d-%s", 42, "x"), 0); /* no room yet */
    assert_string_equal(b.data, "42-x");
    assert_int_equal(buf_printf(&b, "<%s>", "a"), 0); /* fits the room */
    assert_string_equal(b.data, "42-x<a>");
    char big[1000];
    memset(big, 'z', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(buf_printf(&b, "[%s]", big), 0); /* past the room */
    assert_int_equal(b.len, 7 + 2 + 999);
    assert_int_equal(b.data[7], '[');
    assert_int_equal(b.data[b.len - 1], ']');
    assert_int_equal(b.data[b.len], '\0');
    buf_free(&b);
}

static void test_xml_and_steal(void **state)
{
    (void)state;
    buf_t b;
    buf_init(&b, 1024);
    assert_int_equal(buf_append_xml(&b, "a<b>&\"c'"), 0);
    assert_string_equal(b.data, "a&lt;b&gt;&amp;&quot;c&apos;");
    size_t len = 0;
    char *s = buf_steal(&b, &len);
    assert_string_equal(s, "a&lt;b&gt;&amp;&quot;c&apos;");
    assert_int_equal(len, strlen(s));
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    free(s);
    s = buf_steal(&b, NULL);
    assert_string_equal(s, "");
    free(s);

    /* Runs between escapes, escapes at both ends. */
    buf_init(&b, 1024);
    assert_int_equal(buf_append_xml(&b, "'plain run'&x<"), 0);
    assert_string_equal(b.data, "&apos;plain run&apos;&amp;x&lt;");
    buf_free(&b);

    /* Escaping that would pass the maximum fails. */
    buf_init(&b, 6);
    assert_int_equal(buf_append_xml(&b, "&&"), -1);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_grow),
        cmocka_unit_test(test_max),
        cmocka_unit_test(test_printf_room_and_growth),
        cmocka_unit_test(test_xml_and_steal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
