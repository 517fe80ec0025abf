#include "common/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* The port in the len bytes at s: 1 to 5 digits, at most 65535. */
static int port_parse(const char *s, size_t len, int *port_p)
{
    if (len == 0 || len > 5)
        return -1;
    int port = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        port = port * 10 + (s[i] - '0');
    }
    if (port > 65535)
        return -1;
    *port_p = port;
    return 0;
}

int addr_split(const char *s, size_t len, int default_port, addr_hostport_t *out_p)
{
    const char *host = s, *rest;
    size_t host_len;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close || close == s + 1)
            return -1;
        host = s + 1;
        host_len = (size_t)(close - host);
        rest = close + 1;
    } else {
        const char *colon = memchr(s, ':', len);
        host_len = colon ? (size_t)(colon - s) : len;
        rest = s + host_len;
    }
    size_t rest_len = (size_t)(s + len - rest);
    if (rest_len > 0 && rest[0] == ':' && memchr(rest + 1, ':', rest_len - 1))
        return -1; /* a bare IPv6 address */
    int port = default_port;
    if (rest_len == 0) {
        if (default_port < 0)
            return -1;
    } else if (rest[0] != ':' || port_parse(rest + 1, rest_len - 1, &port) < 0) {
        return -1;
    }
    out_p->host = host;
    out_p->host_len = host_len;
    out_p->port = port;
    return 0;
}

int addr_format(char *out, size_t cap, const char *host, int port)
{
    return snprintf(out, cap, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

int addr_from_sockaddr(const struct sockaddr *sa, char *ip, size_t cap, int *port_p)
{
    int port = 0;
    const char *ok = NULL;
    if (sa && sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        ok = inet_ntop(AF_INET, &s4->sin_addr, ip, (socklen_t)cap);
        port = ntohs(s4->sin_port);
    } else if (sa && sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        ok = IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)
                 ? inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], ip, (socklen_t)cap)
                 : inet_ntop(AF_INET6, &s6->sin6_addr, ip, (socklen_t)cap);
        port = ntohs(s6->sin6_port);
    }
    if (!ok) {
        snprintf(ip, cap, "?");
        port = 0;
    }
    if (port_p)
        *port_p = port;
    return ok ? 0 : -1;
}
