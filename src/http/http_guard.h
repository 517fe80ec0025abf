/* Receive deadlines libmicrohttpd does not have. Its idle timeout restarts
 * with every byte, so a client trickling a request could hold a connection
 * (and, one thread per connection, a thread) for ever. The guard follows
 * each connection through the phases of its requests, and a reaper thread
 * shuts down the socket of one that
 *   - has not delivered a complete request head within head_timeout_ms of
 *     being accepted, or of the first byte of a further keep-alive request
 *     (idle keep-alive itself is left to libmicrohttpd's idle timeout);
 *   - delivers a request body slower than min_body_rate bytes/s, averaged
 *     over windows of body_window_ms (time spent in our own handler, e.g.
 *     waiting for the disk, does not count against the client).
 * The reaper calls shutdown(2), never close(2): libmicrohttpd's next recv()
 * sees EOF and it closes and cleans up the connection itself. A socket is
 * touched only under its slot's lock while the connection is registered, so
 * a descriptor number reused by a later socket is never hit.
 *
 * Threads: register/unregister come from libmicrohttpd's connection
 * notifications; the per-request calls from the connection's own thread;
 * they cost a few atomic operations (and two clock reads per body piece). */
#ifndef S3R_HTTP_GUARD_H
#define S3R_HTTP_GUARD_H

#include <stdint.h>
#include <sys/socket.h>

typedef struct http_guard http_guard_t;
typedef struct http_guard_conn http_guard_conn_t;

typedef struct http_guard_config {
    unsigned max_conns;       /* slots; a connection past them is shut down at once */
    unsigned head_timeout_ms; /* 0: no head deadline */
    uint64_t min_body_rate;   /* bytes per second; 0: no minimum */
    unsigned body_window_ms;  /* the rate is judged over windows this long */
    unsigned sweep_ms;        /* how often the reaper looks; 0: 250 */
} http_guard_config_t;

typedef struct http_guard_stats {
    unsigned open;         /* registered connections */
    uint64_t closed_head;  /* shut down: request head too slow */
    uint64_t closed_body;  /* shut down: request body too slow */
    uint64_t refused_full; /* shut down: no free slot */
} http_guard_stats_t;

/* Starts the reaper. NULL when out of memory or threads. */
http_guard_t *http_guard_start(const http_guard_config_t *cfg);
/* Stops the reaper and frees everything; every connection must have been
 * unregistered (after MHD_stop_daemon). NULL is a no-op. */
void http_guard_stop(http_guard_t *g);

/* A connection was accepted on fd (head deadline from now). Returns NULL,
 * having shut the socket down, when every slot is taken. */
http_guard_conn_t *http_guard_register(http_guard_t *g, int fd, const struct sockaddr *peer);
/* The connection is closing; fd stays open until this returns. */
void http_guard_unregister(http_guard_t *g, http_guard_conn_t *c);

/* The access handler was entered: the request head is complete. Returns a
 * time stamp for http_guard_leave. c may be NULL (then everything is a no-op). */
uint64_t http_guard_enter(http_guard_conn_t *c);
/* Body bytes received (before or inside the handler). */
void http_guard_body_bytes(http_guard_conn_t *c, uint64_t n);
/* The handler returns. want_body: more of the request body is awaited from
 * the client (the body clock starts at the first such return). Otherwise
 * the server is working or replying: nothing is timed. */
void http_guard_leave(http_guard_conn_t *c, uint64_t entered, int want_body);
/* The request is over; the connection waits for the next one (idle
 * keep-alive until its first byte arrives). */
void http_guard_request_done(http_guard_conn_t *c);

void http_guard_get_stats(http_guard_t *g, http_guard_stats_t *st);

#endif
