/* Address text (common/addr.h): "host:port" and "[v6]:port" split with and
 * without a default port, every malformed form refused, and formatting
 * with brackets exactly when the host is an IPv6 address. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <string.h>

#include <cmocka.h>

#include "common/addr.h"

static void expect(const char *s, int default_port, const char *host, int port)
{
    addr_hostport_t hp;
    assert_int_equal(addr_split(s, strlen(s), default_port, &hp), 0);
    assert_int_equal(hp.host_len, strlen(host));
    assert_memory_equal(hp.host, host, hp.host_len);
    assert_int_equal(hp.port, port);
}

static void refuse(const char *s, int default_port)
{
    addr_hostport_t hp = {.host = "untouched", .host_len = 9, .port = 7};
    assert_int_equal(addr_split(s, strlen(s), default_port, &hp), -1);
    assert_string_equal(hp.host, "untouched");
    assert_int_equal(hp.port, 7);
}

static void test_split(void **state)
{
    (void)state;
    expect("example.com:9000", -1, "example.com", 9000);
    expect("127.0.0.1:0", -1, "127.0.0.1", 0);
    expect("[::1]:9100", -1, "::1", 9100);
    expect("[fe80::1%eth0]:65535", -1, "fe80::1%eth0", 65535);
    expect(":9000", -1, "", 9000); /* every address */
    expect("00080", 9100, "00080", 9100);
    expect("host:00080", -1, "host", 80);
    /* The default port when none is given. */
    expect("example.com", 9100, "example.com", 9100);
    expect("[::1]", 9100, "::1", 9100);
    expect("example.com:1", 9100, "example.com", 1);
}

static void test_split_refused(void **state)
{
    (void)state;
    refuse("", -1);
    refuse("example.com", -1); /* no port, none by default */
    refuse("[::1]", -1);       /* the same with brackets */
    refuse("::1", 9100);       /* a bare IPv6 address */
    refuse("fe80::1:80", -1);  /* ambiguous: bare IPv6 */
    refuse("[]:80", -1);       /* empty brackets */
    refuse("[::1:80", -1);     /* unclosed bracket */
    refuse("[::1]80", -1);     /* no colon after the bracket */
    refuse("[::1]:80x", -1);   /* trailing bytes */
    refuse("host:", -1);       /* empty port */
    refuse("host:", 9100);     /* empty port, even with a default */
    refuse("host:65536", -1);  /* out of range */
    refuse("host:123456", -1); /* too many digits */
    refuse("host:+80", -1);    /* signs are not digits */
    refuse("host:-1", -1);     /* nor a minus */
    refuse("host: 80", -1);    /* nor spaces */
    refuse("host:80 ", -1);    /* trailing space */
    refuse("a:b:c", 9100);     /* two colons */
}

static void test_split_honours_len(void **state)
{
    (void)state;
    /* Only len bytes are read: the rest of the string is not the address. */
    const char *s = "example.com:80/path";
    addr_hostport_t hp;
    assert_int_equal(addr_split(s, strlen("example.com:80"), -1, &hp), 0);
    assert_int_equal(hp.port, 80);
    assert_int_equal(addr_split(s, strlen(s), -1, &hp), -1);
    assert_int_equal(addr_split("[::1]:80", 4, 9100, &hp), -1); /* "[::1" */
}

static void test_format(void **state)
{
    (void)state;
    char out[ADDR_TEXT_MAX];
    assert_int_equal(addr_format(out, sizeof(out), "127.0.0.1", 9100), 14);
    assert_string_equal(out, "127.0.0.1:9100");
    addr_format(out, sizeof(out), "::1", 9100);
    assert_string_equal(out, "[::1]:9100");
    addr_format(out, sizeof(out), "example.com", 0);
    assert_string_equal(out, "example.com:0");
    const char *longest = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255";
    assert_true(addr_format(out, sizeof(out), longest, 65535) < (int)sizeof(out));
    /* Truncation is reported, and the text stays terminated. */
    char small[6];
    assert_true(addr_format(small, sizeof(small), "::1", 9100) >= (int)sizeof(small));
    assert_string_equal(small, "[::1]");
    /* What addr_format writes, addr_split reads back. */
    const char *hosts[] = {"10.0.0.1", "::", "fe80::1%eth0", "localhost"};
    for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
        addr_format(out, sizeof(out), hosts[i], 443);
        expect(out, -1, hosts[i], 443);
    }
}

static void test_from_sockaddr(void **state)
{
    (void)state;
    char ip[INET6_ADDRSTRLEN];
    int port = -1;
    struct sockaddr_in s4 = {.sin_family = AF_INET, .sin_port = htons(9000)};
    inet_pton(AF_INET, "10.1.2.3", &s4.sin_addr);
    assert_int_equal(addr_from_sockaddr((struct sockaddr *)&s4, ip, sizeof(ip), &port), 0);
    assert_string_equal(ip, "10.1.2.3");
    assert_int_equal(port, 9000);
    /* An IPv4 client of a dual-stack listener is its IPv4 address. */
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
    inet_pton(AF_INET6, "::ffff:127.0.0.1", &s6.sin6_addr);
    assert_int_equal(addr_from_sockaddr((struct sockaddr *)&s6, ip, sizeof(ip), &port), 0);
    assert_string_equal(ip, "127.0.0.1");
    assert_int_equal(port, 443);
    inet_pton(AF_INET6, "fd00::2", &s6.sin6_addr);
    assert_int_equal(addr_from_sockaddr((struct sockaddr *)&s6, ip, sizeof(ip), NULL), 0);
    assert_string_equal(ip, "fd00::2");
    struct sockaddr su = {.sa_family = AF_UNIX};
    assert_int_equal(addr_from_sockaddr(&su, ip, sizeof(ip), &port), -1);
    assert_string_equal(ip, "?");
    assert_int_equal(port, 0);
    assert_int_equal(addr_from_sockaddr(NULL, ip, sizeof(ip), &port), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_refused),
        cmocka_unit_test(test_split_honours_len),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_from_sockaddr),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
