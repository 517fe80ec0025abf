/* The client side of the RDMA layer, used by libs3rdma (src/client): opens
 * an authenticated session to s3rdmad's session port, registers client memory
 * as regions the server may RDMA-READ/WRITE, and formats x-amz-rdma-tokens.
 *
 * A session owns a UCX context+worker and a progress thread (so one-sided
 * operations that UCX emulates over TCP complete while the caller waits on
 * HTTP). Threads: all calls on one session are thread-safe. Fork: a session
 * is its opening process's; in a forked child it is dead (see
 * rdma_session_inherited), and no session can be opened in a process
 * forked from one that had started UCX (rdma_client.c says why). */
#ifndef S3R_RDMA_RDMA_CLIENT_H
#define S3R_RDMA_RDMA_CLIENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "rdma/rdma_native_wire.h"

typedef struct rdma_client_config {
    const char *host; /* session endpoint host */
    int port;         /* session endpoint port (9100) */
    /* The session Unix socket ("@name" or a path). NULL: "@s3rdma.<port>"
     * when host is loopback (falling back to TCP), else TCP; "": TCP only.
     * Only Unix-socket sessions from a uid the server trusts get the
     * shared-memory transports (docs/security.md). */
    const char *socket;
    const char *access_key;
    const char *secret_key;
    int timeout_ms;        /* connect + handshake; 0 = 5000 */
    const char *device;    /* UCX_NET_DEVICES value, or NULL */
    const char *local_ip;  /* bind the bootstrap socket to this address, or NULL */
    const char *log_level; /* UCX_LOG_LEVEL value, or NULL */
} rdma_client_config_t;

typedef struct rdma_session rdma_session_t;
typedef struct rdma_region rdma_region_t;

/* Connects, runs the HELLO/CHALLENGE/AUTH/WELCOME handshake and creates the
 * endpoints. Returns 0, or -1 with a readable reason in err. */
int rdma_session_open(const rdma_client_config_t *cfg, rdma_session_t **out_p, char *err,
                      size_t err_len);
/* Closes the lifeline and frees everything, regions included; NULL is a no-op. */
void rdma_session_close(rdma_session_t *s);
/* 1 while the lifeline is up and no transport error was seen; 0 for a
 * session inherited across fork. */
int rdma_session_alive(rdma_session_t *s);
/* 1 when s was opened by another process and inherited across fork: it is
 * dead here, and no call on it touches UCX, its threads or its locks
 * (rdma_session_close only forgets it). */
int rdma_session_inherited(rdma_session_t *s);
/* In a forked child: closes this process's copies of an inherited session's
 * sockets now, so that the server sees the lifeline close as soon as the
 * parent closes it, however long the child keeps the session referenced.
 * A no-op for a session of this process; rdma_session_close still frees it. */
void rdma_session_disown(rdma_session_t *s);

/* Registers [addr, addr+len) with UCX and announces it to the server
 * (REGION_ADD). The memory must stay valid until rdma_region_remove. Returns
 * 0, or -1 with a reason in err (limit reached, registration failed). */
int rdma_region_add(rdma_session_t *s, void *addr, size_t len, rdma_region_t **out_p, char *err,
                    size_t err_len);
void rdma_region_remove(rdma_session_t *s, rdma_region_t *r);
/* Allocates len bytes of memory registered for the session (UCX-allocated,
 * best for RDMA) and announces it as a region; *addr_p gets the memory. */
int rdma_region_alloc(rdma_session_t *s, size_t len, void **addr_p, rdma_region_t **out_p,
                      char *err, size_t err_len);

/* Formats the x-amz-rdma-token for [addr, addr+len) inside region r:
 * "s3r1." + base64url{session id, region id, addr, len}. Returns 0, or -1 if
 * the span is outside the region or out is too small. */
int rdma_token_format(rdma_session_t *s, rdma_region_t *r, const void *addr, uint64_t len,
                      char *out, size_t out_len);

/* 1 when the session's transports are all TCP (UCX emulating RDMA over
 * sockets), where HTTP moves bytes faster than RMA does. */
int rdma_session_tcp_only(rdma_session_t *s);
/* 1 when the session's lanes are all same-host shared memory (UCX's sysv
 * or posix, beside cma/knem/self, no RDMA NIC, xpmem or TCP lane). There
 * the server reaches directly only client memory UCX allocated
 * (rdma_region_alloc: it maps it, ucp_rkey_ptr); UCX 1.13 puts into or
 * gets from any other registered memory with its software RMA (active
 * messages: a copy on each side), since cma/knem, having only zero-copy
 * operations, never serve RMA lanes. */
int rdma_session_shm_only(rdma_session_t *s);
/* The distinct UCX "transport/device" names of the session endpoint's
 * lanes, comma-separated (e.g. "sysv/memory,cma/memory"); valid while the
 * session lives. */
const char *rdma_session_lanes(rdma_session_t *s);
/* The version of the UCX library in use (ucp_get_version_string). */
const char *rdma_ucx_version(void);

/* Fills ref with the region span [addr, addr+len) of r. 0, or -1 if the
 * span is outside the region. */
int rdma_region_ref(rdma_region_t *r, const void *addr, uint64_t len, rdma_native_ref_t *ref);

/* ---- Native requests (docs/protocol.md §4) ---------------------------------- */

typedef struct rdma_native_call rdma_native_call_t;

/* Called once per submitted request, on whichever thread progresses the
 * session (a waiter or the session's progress thread), with the parsed
 * reply (valid during the call: copy what is needed, e.g. an inline body),
 * or with NULL when the session was lost first. Must not block. */
typedef void (*rdma_native_done_fn)(rdma_native_call_t *call, const rdma_native_reply_t *reply);

/* Called on the thread waiting for a call submitted with
 * RDMA_NATIVE_FLAG_PROGRESS (rdma_native_wait) while its reply is still
 * coming: the first `bytes` bytes of the reply body are in the out span,
 * final (bytes <= the span's length, growing from call to call). */
typedef void (*rdma_native_more_fn)(rdma_native_call_t *call, uint64_t bytes);

/* A request in flight; the caller owns the memory until it is done. */
struct rdma_native_call {
    rdma_native_done_fn done;
    rdma_native_more_fn more; /* NULL, or set with RDMA_NATIVE_FLAG_PROGRESS */
    /* private */
    _Atomic int state;
    uint64_t id;
    uint16_t flags;          /* the request's */
    uint64_t out_len;        /* its out span's length */
    _Atomic uint64_t landed; /* reply body bytes in the out span, as the server said */
    uint64_t told;           /* ... as more was last told */
    rdma_native_call_t *next;
    unsigned wait_class; /* the kind and size of request it is (rdma_native_wait) */
    uint64_t sent_ns;    /* monotonic ns when it was submitted */
};

/* Whether requests may ask for progress messages (RDMA_NATIVE_FLAG_PROGRESS):
 * 0 once the server refused one (a server older than the flag). */
int rdma_session_progress_ok(rdma_session_t *s);

/* Sends the request m (its session id and request id are set here) with
 * call->done (and call->more with RDMA_NATIVE_FLAG_PROGRESS) set by the
 * caller. A reply refusing the flag (error BAD_MESSAGE) turns it off for
 * the session (rdma_session_progress_ok); the caller may then ask again
 * without it. 0, or -1 with a reason in err (session
 * dead, message over a limit); done is then never called. */
int rdma_native_submit(rdma_session_t *s, rdma_native_msg_t *m, rdma_native_call_t *call, char *err,
                       size_t err_len);
/* 1 once call's done has returned. */
int rdma_native_finished(rdma_native_call_t *call);
/* Progresses the session once on this thread; nonzero when something
 * happened (a reply may have finished a call). */
int rdma_native_progress(rdma_session_t *s);
/* Waits for call, progressing the session on this thread: busy-polling for
 * as long as calls of its kind and size have lately taken on this session
 * (a bounded, learned estimate), then sleeping on the worker's event fd;
 * with the session's poll mode busy (S3R_RDMA_POLL=busy when it was opened)
 * it never sleeps. 0 once done has returned; -1 when timeout_ms passed
 * first (the call is withdrawn: done is never called), or at once on a
 * session inherited across fork (the answer goes to the parent). */
int rdma_native_wait(rdma_session_t *s, rdma_native_call_t *call, int timeout_ms);
/* Waits for any of the n calls, calls[i] submitted on sess[i] (sessions may
 * differ; a NULL call is skipped), as rdma_native_wait waits, busy-polling
 * until the earliest is due by its estimate, then sleeping on the sessions'
 * event fds (at most 16 distinct sessions are slept on; calls on others
 * are seen at least every millisecond). Returns the index of a call whose
 * done has returned (the lowest such index when it began; a call waited
 * for from before its answer trains the estimate), or of a call on a
 * session inherited across fork (its answer goes to the parent); -1 when
 * timeout_ms passed first (0: progress once and look), no call withdrawn;
 * -2 when every call is NULL. A call whose session died is finished as
 * lost (done with NULL) and returned. */
long rdma_native_wait_any(rdma_session_t *const *sess, rdma_native_call_t *const *calls, size_t n,
                          int timeout_ms);

#endif
