/* Network addresses as text: "host:port" and "[v6]:port", split and
 * written in one place. Syntax only: nothing here resolves names, and the
 * host is returned as written (a name, an IPv4 or an IPv6 address). */
#ifndef S3R_COMMON_ADDR_H
#define S3R_COMMON_ADDR_H

#include <stddef.h>

/* The longest text addr_format writes for an IPv6 address, with brackets,
 * colon, port and NUL ("[" INET6_ADDRSTRLEN-1 "]:65535"). */
#define ADDR_TEXT_MAX (46 + 2 + 6 + 1)

/* One split "host:port": host points into the parsed text (not
 * NUL-terminated; the brackets of "[v6]" excluded). */
typedef struct addr_hostport {
    const char *host;
    size_t host_len;
    int port;
} addr_hostport_t;

/* Splits the len bytes at s as "host:port" or "[v6]:port". When
 * default_port >= 0 the port may be left out ("host", "[v6]") and is then
 * default_port; when it is negative the port is required. The port is 1 to 5
 * decimal digits, at most 65535 (0 included: callers that refuse it say so).
 * The host may be empty ("":port) but "[]" is refused, and so is a bare
 * IPv6 address ("::1:80": its port would be ambiguous) and anything after
 * the port. Returns 0 with *out_p written, or -1 with *out_p untouched. */
int addr_split(const char *s, size_t len, int default_port, addr_hostport_t *out_p);

/* Writes "host:port", or "[host]:port" when host contains a ':' (an IPv6
 * address), into out (cap bytes, always NUL-terminated when cap > 0).
 * Returns the length snprintf would have written: >= cap means truncated. */
int addr_format(char *out, size_t cap, const char *host, int port);

struct sockaddr;

/* The IP address of sa as text into ip (cap bytes; INET6_ADDRSTRLEN holds
 * any) and its port into *port_p unless NULL. A v4-mapped IPv6 address (an
 * IPv4 client of a dual-stack listener) is written as the IPv4 address it
 * maps, so a client has one address whichever socket it reached. Returns
 * 0, or -1 for another family or a NULL sa (ip then "?", port 0). */
int addr_from_sockaddr(const struct sockaddr *sa, char *ip, size_t cap, int *port_p);

#endif
