/* The native protocol end to end (docs/protocol.md §4): an in-process
 * rdma_server with a tiny echo handler (rdma_server_set_native), driven by
 *
 *   1. the real client (rdma_native_submit/wait): inline and region bodies
 *      both ways, replies that do not fit, spans outside the regions, many
 *      requests in flight answered out of order, waiting for any of them;
 *   2. a raw client (raw handshake, its own endpoint to the server's worker)
 *      sending malformed requests: each gets a 400 BAD_MESSAGE reply naming
 *      its id, or is dropped exactly where §4.4 says; a request naming
 *      another session is answered to that session only;
 *   3. the per-session and server-wide in-flight bounds (503 BUSY);
 *   4. sessions that go away with requests blocked in the handler: nothing
 *      leaks, the server stays healthy;
 *   5. no handler: 503 ServiceUnavailable.
 *
 * The handler's operations: GetObject answers 200 with a body of n bytes
 * (query param "n") derived from the key; PutObject reads the body and
 * answers its length and FNV-1a hash in headers; HeadObject echoes what
 * arrived; DeleteObject blocks until the test opens the gate, then answers
 * like GetObject when it has an "n", else 204. Every other operation
 * answers 200 without a body. */
#include "rdma_test_util.h"
#include "rdma_raw_client.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <strings.h>
#include <unistd.h>

#include "common/s3r_limits.h"
#include "rdma/rdma_native_wire.h"
#include "common/clock.h"
#include "rdma/rdma_net.h"
#include "rdma/rdma_wire.h"
#include "rdma/rdma_server_internal.h"

/* Allocations made by this program's code (the rdma module and the test;
 * not UCX's) on the server's progress threads while g_count_allocs is set:
 * the test is linked with --wrap for malloc, calloc and realloc
 * (CMakeLists.txt). */
static _Atomic int g_count_allocs;
static _Atomic unsigned long g_prog_allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
static void count_alloc(void)
{
    if (atomic_load(&g_count_allocs) && rdma_native_on_progress_thread())
        atomic_fetch_add(&g_prog_allocs, 1);
}
void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n)
{
    count_alloc();
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
    count_alloc();
    return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    count_alloc();
    return __real_realloc(p, n);
}

#define MIB        ((uint64_t)1 << 20)
#define REGION_LEN (4 * MIB)
#define WAIT_MS    5000 /* "a reply arrives within N seconds" */
#define QUIET_MS   300  /* "no reply within 300 ms" */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ==== the test handler ======================================================= */

typedef struct hctx {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int gate_open; /* DeleteObject blocks while 0 */
    unsigned blocked;
    atomic_uint calls[256]; /* handler runs per opcode */
    atomic_uint total;
    atomic_int last_body_rc, last_reply_rc;
    /* PutObject handlers running now, and the most at once, per user
     * (0: AKIDONE, 1: AKIDTWO). */
    atomic_int put_running[2], put_running_max[2];
    /* The threads the last PutObject and DeleteObject handlers ran on. */
    pthread_t put_thread, delete_thread;
    /* Replies a PutObject with query parameter "hold" made and held
     * (rdma_native_reply_held), for the test to send. */
    rdma_native_held_t *held[8];
    unsigned n_held;
} hctx_t;

static hctx_t g_h = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}
#define FNV_INIT 14695981039346656037ull

/* The byte at offset i of the GetObject body for key. */
static uint8_t pat(const char *key, uint64_t i)
{
    uint64_t h = fnv1a(FNV_INIT, key, strlen(key));
    return (uint8_t)(h + i * 131 + (i >> 9) * 7);
}

static int fill_pat(void *ctx, void *dst, size_t len, uint64_t off)
{
    const char *key = ctx;
    uint8_t *d = dst;
    for (size_t i = 0; i < len; i++)
        d[i] = pat(key, off + i);
    return 0;
}

static const char *param(const rdma_native_msg_t *m, const char *name)
{
    for (unsigned i = 0; i < m->n_params; i++) {
        if (strcmp(m->params[i].name, name) == 0)
            return m->params[i].value;
    }
    return NULL;
}

/* Appends "name\0value\0" to a header list. */
static void hdr_add(char *buf, size_t cap, size_t *len, const char *name, const char *value)
{
    int n = snprintf(buf + *len, cap - *len, "%s%c%s", name, '\0', value);
    assert_true(n > 0 && (size_t)n + 1 < cap - *len);
    *len += (size_t)n + 1;
}

static void hdr_add_u64(char *buf, size_t cap, size_t *len, const char *name, uint64_t v)
{
    char s[32];
    snprintf(s, sizeof(s), "%" PRIu64, v);
    hdr_add(buf, cap, len, name, s);
}

/* Answers with n bytes of the key's pattern; a body that fits neither
 * inline nor the out span is 400 with x-amz-rdma-bytes-needed, as src/s3
 * answers it; another failure is 500 with the status in x-test-rc. */
static void reply_body(hctx_t *h, rdma_native_req_t *r, uint64_t n)
{
    const rdma_native_msg_t *m = rdma_native_request(r);
    char hdrs[256];
    size_t hl = 0;
    hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-len", n);
    rdma_status_t rc = rdma_native_reply(r, 200, "rid-get", hdrs, hl, n, fill_pat, (void *)m->key);
    atomic_store(&h->last_reply_rc, (int)rc);
    if (rc == RDMA_OK)
        return;
    hl = 0;
    hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-rc", (uint64_t)rc);
    if (rc == RDMA_OUT_OF_BOUNDS)
        hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-amz-rdma-bytes-needed", n);
    rdma_native_reply(r, rc == RDMA_OUT_OF_BOUNDS ? 400 : 500, "rid-err", hdrs, hl, 0, NULL, NULL);
}

typedef struct psum {
    uint64_t len, h;
} psum_t;

static int put_sink(void *ctx, const void *data, size_t len)
{
    psum_t *p = ctx;
    p->h = fnv1a(p->h, data, len);
    p->len += len;
    return 0;
}

static void test_handler(void *ctx, rdma_native_req_t *r)
{
    hctx_t *h = ctx;
    const rdma_native_msg_t *m = rdma_native_request(r);
    atomic_fetch_add(&h->calls[m->head.opcode], 1);
    atomic_fetch_add(&h->total, 1);
    char hdrs[2048];
    size_t hl = 0;
    const char *n_s = param(m, "n");
    uint64_t n = n_s ? strtoull(n_s, NULL, 10) : 0;
    switch (m->head.opcode) {
    case RDMA_OP_GET_OBJECT:
        reply_body(h, r, n);
        return;
    case RDMA_OP_PUT_OBJECT: {
        rdma_native_held_t *held;
        if (param(m, "hold") &&
            rdma_native_reply_held(r, 200, "rid-held", NULL, 0, 0, NULL, NULL, &held) == RDMA_OK) {
            pthread_mutex_lock(&h->mu);
            assert_true(h->n_held < sizeof(h->held) / sizeof(h->held[0]));
            h->held[h->n_held++] = held;
            pthread_cond_broadcast(&h->cv);
            pthread_mutex_unlock(&h->mu);
            return;
        }
        pthread_mutex_lock(&h->mu);
        h->put_thread = pthread_self();
        pthread_mutex_unlock(&h->mu);
        int who = strcmp(rdma_native_access_key(r), "AKIDTWO") == 0;
        int now = atomic_fetch_add(&h->put_running[who], 1) + 1;
        for (int was = atomic_load(&h->put_running_max[who]);
             now > was && !atomic_compare_exchange_weak(&h->put_running_max[who], &was, now);) {
        }
        psum_t p = {0, FNV_INIT};
        rdma_status_t rc = rdma_native_body(r, put_sink, &p);
        atomic_fetch_sub(&h->put_running[who], 1);
        atomic_store(&h->last_body_rc, (int)rc);
        if (rc == RDMA_OK) {
            hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-len", p.len);
            hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-sum", p.h);
            rdma_native_reply(r, 200, "rid-put", hdrs, hl, 0, NULL, NULL);
        } else {
            hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-rc", (uint64_t)rc);
            rdma_native_reply(r, 400, "rid-put", hdrs, hl, 0, NULL, NULL);
        }
        return;
    }
    case RDMA_OP_HEAD_OBJECT: {
        hdr_add(hdrs, sizeof(hdrs), &hl, "x-test-ak", rdma_native_access_key(r));
        hdr_add(hdrs, sizeof(hdrs), &hl, "x-test-bucket", m->bucket);
        hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-keylen", strlen(m->key));
        hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-nparams", m->n_params);
        if (m->n_params) {
            hdr_add(hdrs, sizeof(hdrs), &hl, "x-test-p0", m->params[0].name);
            hdr_add_u64(hdrs, sizeof(hdrs), &hl, "x-test-p0-len", strlen(m->params[0].value));
        }
        rdma_native_reply(r, 200, "rid-head", hdrs, hl, 0, NULL, NULL);
        return;
    }
    case RDMA_OP_DELETE_OBJECT:
        pthread_mutex_lock(&h->mu);
        h->delete_thread = pthread_self();
        h->blocked++;
        pthread_cond_broadcast(&h->cv);
        while (!h->gate_open)
            pthread_cond_wait(&h->cv, &h->mu);
        h->blocked--;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
        if (n_s)
            reply_body(h, r, n);
        else
            rdma_native_reply(r, 204, "rid-del", NULL, 0, 0, NULL, NULL);
        return;
    default:
        rdma_native_reply(r, 200, "rid-other", NULL, 0, 0, NULL, NULL);
        return;
    }
}

static void gate_set(int open)
{
    pthread_mutex_lock(&g_h.mu);
    g_h.gate_open = open;
    pthread_cond_broadcast(&g_h.cv);
    pthread_mutex_unlock(&g_h.mu);
}

/* Waits up to 5 s for exactly want handlers to be blocked at the gate. */
static unsigned wait_blocked(unsigned want)
{
    uint64_t deadline = clock_mono_ms() + WAIT_MS;
    pthread_mutex_lock(&g_h.mu);
    while (g_h.blocked != want && clock_mono_ms() < deadline) {
        pthread_mutex_unlock(&g_h.mu);
        sleep_ms(2);
        pthread_mutex_lock(&g_h.mu);
    }
    unsigned n = g_h.blocked;
    pthread_mutex_unlock(&g_h.mu);
    return n;
}

static unsigned wait_resident(rdma_server_t *srv, unsigned want)
{
    unsigned n = 0;
    for (int i = 0; i < 500 && (n = rdma_server_session_resident(srv)) != want; i++)
        sleep_ms(10);
    return n;
}

/* ==== the server ================================================================ */

static rdma_server_t *g_srv;
/* The next native_server's executor threads (more than the tests ever
 * block), user share (the server-wide bounds are tested with one user; the
 * fair-share test sets its own) and stall deadline (0: the default). */
static unsigned g_threads = 12, g_user_share = 100, g_stall_ms;
static size_t g_local_put_max; /* cfg.local_put_max */

static rdma_server_t *native_server(unsigned per_session, unsigned queued, int with_handler)
{
    rdma_server_config_t cfg;
    rdma_server_config_defaults(&cfg);
    cfg.listen_host = "127.0.0.1";
    cfg.port = 0;
    cfg.n_workers = 1;
    cfg.staging_bytes = 4u << 20;
    cfg.chunk_bytes = 1u << 20;
    cfg.lookup_secret = test_lookup;
    cfg.native_threads = g_threads;
    cfg.user_share = g_user_share;
    cfg.stall_ms = g_stall_ms;
    cfg.local_put_max = g_local_put_max;
    if (per_session)
        cfg.max_native_per_session = per_session;
    if (queued)
        cfg.max_native_queued = queued;
    rdma_server_t *srv = NULL;
    if (rdma_server_start(&cfg, &srv) < 0)
        return NULL;
    if (with_handler)
        rdma_server_set_native(srv, test_handler, &g_h);
    return srv;
}

#define NSERVER_OR_SKIP(srv, per_session, queued, with_handler)                                    \
    do {                                                                                           \
        (srv) = native_server((per_session), (queued), (with_handler));                            \
        if (!(srv)) {                                                                              \
            if (test_ucx_usable())                                                                 \
                fail_msg("the RDMA server failed to start although UCX works");                    \
            print_message("[  SKIP    ] UCX is unavailable: the RDMA server cannot start\n");      \
            skip();                                                                                \
        }                                                                                          \
        g_srv = (srv);                                                                             \
    } while (0)

/* Every test's teardown: a failed assertion must not leave a handler
 * blocked (rdma_server_stop waits for the executors). */
static int teardown(void **state)
{
    (void)state;
    gate_set(1);
    if (g_srv)
        rdma_server_stop(g_srv);
    g_srv = NULL;
    gate_set(0);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    gate_set(0);
    g_srv = NULL;
    g_threads = 12;
    g_user_share = 100;
    g_stall_ms = 0;
    g_local_put_max = 0;
    return 0;
}

/* ==== the real client ============================================================ */

/* A call and what its reply said (copied in done). */
typedef struct tcall {
    rdma_native_call_t c; /* first: done gets &c */
    uint64_t sent_id;
    int got, lost;
    uint64_t rid;
    uint8_t opcode;
    uint16_t status, error;
    uint8_t body_kind;
    uint64_t body_len;
    uint8_t *inl;
    char hdrs[1024]; /* name\0value\0 ... */
    size_t hdrs_len;
} tcall_t;

static void tcall_done(rdma_native_call_t *c, const rdma_native_reply_t *r)
{
    tcall_t *t = (tcall_t *)c;
    if (!r) {
        t->lost = 1;
        return;
    }
    t->got = 1;
    t->rid = r->request_id;
    t->opcode = r->opcode;
    t->status = r->status;
    t->error = r->error;
    t->body_kind = r->body_kind;
    t->body_len = r->body_len;
    if (r->body_kind == RDMA_BODY_INLINE) {
        t->inl = malloc((size_t)r->body_len);
        if (t->inl)
            memcpy(t->inl, r->body, (size_t)r->body_len);
    }
    for (unsigned i = 0; i < r->n_headers; i++) {
        size_t need = r->headers[i].name_len + r->headers[i].value_len + 2u;
        if (t->hdrs_len + need > sizeof(t->hdrs))
            break;
        char *p = t->hdrs + t->hdrs_len;
        memcpy(p, r->headers[i].name, r->headers[i].name_len);
        p[r->headers[i].name_len] = '\0';
        p += r->headers[i].name_len + 1;
        memcpy(p, r->headers[i].value, r->headers[i].value_len);
        p[r->headers[i].value_len] = '\0';
        t->hdrs_len += need;
    }
}

static const char *hdrs_find(const char *h, size_t len, const char *name)
{
    for (const char *p = h; p < h + len;) {
        const char *v = p + strlen(p) + 1;
        if (strcasecmp(p, name) == 0)
            return v;
        p = v + strlen(v) + 1;
    }
    return NULL;
}

static const char *tc_hdr(const tcall_t *t, const char *name)
{
    return hdrs_find(t->hdrs, t->hdrs_len, name);
}

static uint64_t tc_hdr_u64(const tcall_t *t, const char *name)
{
    const char *v = tc_hdr(t, name);
    if (!v)
        print_message("reply has no header %s\n", name);
    assert_non_null(v);
    return strtoull(v, NULL, 10);
}

static void tcall_free(tcall_t *t)
{
    free(t->inl);
    t->inl = NULL;
}

static void msg_init(rdma_native_msg_t *m, uint8_t op, const char *bucket, const char *key)
{
    memset(m, 0, sizeof(*m));
    m->head.version = RDMA_NATIVE_VERSION;
    m->head.opcode = op;
    m->bucket = bucket;
    m->key = key;
    m->reply_inline_max = 16384;
}

static void msg_param(rdma_native_msg_t *m, uint8_t kind, const char *name, const char *value)
{
    assert_true(m->n_params < RDMA_NATIVE_MAX_PARAMS);
    m->params[m->n_params].kind = kind;
    m->params[m->n_params].name = name;
    m->params[m->n_params].value = value;
    m->n_params++;
}

static void submit(rdma_session_t *s, rdma_native_msg_t *m, tcall_t *t)
{
    memset(t, 0, sizeof(*t));
    t->c.done = tcall_done;
    char err[256] = "";
    int rc = rdma_native_submit(s, m, &t->c, err, sizeof(err));
    if (rc != 0)
        print_message("submit: %s\n", err);
    assert_int_equal(rc, 0);
    t->sent_id = m->head.request_id;
}

/* Waits for t's reply (5 s at most), which must name t's request. */
static void wait_reply(rdma_session_t *s, tcall_t *t)
{
    assert_int_equal(rdma_native_wait(s, &t->c, WAIT_MS), 0);
    assert_int_equal(t->lost, 0);
    assert_int_equal(t->got, 1);
    assert_int_equal(t->rid, t->sent_id);
}

static void do_call(rdma_session_t *s, rdma_native_msg_t *m, tcall_t *t)
{
    submit(s, m, t);
    wait_reply(s, t);
}

static rdma_session_t *open_session(rdma_server_t *srv, const char *ak, const char *sk)
{
    rdma_client_config_t cfg = test_client_cfg(srv, ak, sk);
    rdma_session_t *s = NULL;
    char err[256] = "";
    int rc = rdma_session_open(&cfg, &s, err, sizeof(err));
    if (rc != 0)
        print_message("session open: %s\n", err);
    assert_int_equal(rc, 0);
    return s;
}

/* A GetObject of n bytes of key; out_len 0: no out span. */
static void get_call(rdma_session_t *s, const char *key, uint64_t n, uint32_t inline_max,
                     const rdma_native_ref_t *out, tcall_t *t, char nbuf[32])
{
    rdma_native_msg_t m;
    msg_init(&m, RDMA_OP_GET_OBJECT, "bkt", key);
    m.reply_inline_max = inline_max;
    snprintf(nbuf, 32, "%" PRIu64, n);
    msg_param(&m, RDMA_PARAM_QUERY, "n", nbuf);
    if (out) {
        m.has_out = 1;
        m.out = *out;
    }
    submit(s, &m, t);
}

/* t's reply carries n bytes of key's pattern inline. */
static void assert_inline_pattern(const tcall_t *t, const char *key, uint64_t n)
{
    assert_int_equal(t->status, 200);
    assert_int_equal(t->error, 0);
    assert_int_equal(t->body_kind, RDMA_BODY_INLINE);
    assert_int_equal(t->body_len, n);
    assert_non_null(t->inl);
    for (uint64_t i = 0; i < n; i++) {
        if (t->inl[i] != pat(key, i))
            fail_msg("inline body of %s differs at %" PRIu64, key, i);
    }
}

static void assert_mem_pattern(const uint8_t *p, const char *key, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (p[i] != pat(key, i))
            fail_msg("region body of %s differs at %" PRIu64, key, i);
    }
}

static void assert_mem_byte(const uint8_t *p, uint8_t b, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (p[i] != b)
            fail_msg("byte %" PRIu64 " was written (0x%02x)", i, p[i]);
    }
}

/* A GetObject of 64 bytes must still work (the session and server are well). */
static void assert_session_works(rdma_session_t *s)
{
    tcall_t t;
    char nb[32];
    get_call(s, "health", 64, 16384, NULL, &t, nb);
    wait_reply(s, &t);
    assert_inline_pattern(&t, "health", 64);
    tcall_free(&t);
}

/* ==== 1. round trips with the real client ===================================== */

static void test_round_trips(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    char err[256] = "", nb[32];
    uint8_t *mem = NULL;
    rdma_region_t *reg = NULL;
    assert_int_equal(rdma_region_alloc(s, REGION_LEN, (void **)&mem, &reg, err, sizeof(err)), 0);
    rdma_native_ref_t whole;
    assert_int_equal(rdma_region_ref(reg, mem, REGION_LEN, &whole), 0);
    tcall_t t;

    /* Replies inline: small, and exactly the inline maximum. */
    get_call(s, "k-small", 1000, 16384, NULL, &t, nb);
    wait_reply(s, &t);
    assert_int_equal(t.opcode, RDMA_OP_GET_OBJECT);
    assert_int_equal(tc_hdr_u64(&t, "x-test-len"), 1000);
    assert_inline_pattern(&t, "k-small", 1000);
    tcall_free(&t);
    get_call(s, "k-64k", RDMA_NATIVE_MAX_INLINE, UINT32_MAX, NULL, &t, nb);
    wait_reply(s, &t);
    assert_inline_pattern(&t, "k-64k", RDMA_NATIVE_MAX_INLINE);
    tcall_free(&t);
    assert_int_equal(atomic_load(&g_h.last_reply_rc), RDMA_OK);

    /* One byte over the inline cap and no out span: nothing fits. */
    get_call(s, "k-over", RDMA_NATIVE_MAX_INLINE + 1, UINT32_MAX, NULL, &t, nb);
    wait_reply(s, &t);
    assert_int_equal(t.status, 400);
    assert_int_equal(t.body_kind, RDMA_BODY_NONE);
    assert_int_equal(tc_hdr_u64(&t, "x-amz-rdma-bytes-needed"), RDMA_NATIVE_MAX_INLINE + 1);
    assert_int_equal(atomic_load(&g_h.last_reply_rc), RDMA_OUT_OF_BOUNDS);

    /* Into the out span: several chunks; nothing written past the body. */
    uint64_t n = 3 * MIB + 123;
    memset(mem, 0, REGION_LEN);
    get_call(s, "k-region", n, 16384, &whole, &t, nb);
    wait_reply(s, &t);
    assert_int_equal(t.status, 200);
    assert_int_equal(t.body_kind, RDMA_BODY_REGION);
    assert_int_equal(t.body_len, n);
    assert_mem_pattern(mem, "k-region", n);
    assert_mem_byte(mem + n, 0, REGION_LEN - n);
    /* inline_max 0: even 10 bytes go to the out span (at an offset). */
    rdma_native_ref_t sub;
    assert_int_equal(rdma_region_ref(reg, mem + 4096, 4096, &sub), 0);
    get_call(s, "k-tiny", 10, 0, &sub, &t, nb);
    wait_reply(s, &t);
    assert_int_equal(t.body_kind, RDMA_BODY_REGION);
    assert_int_equal(t.body_len, 10);
    assert_mem_pattern(mem + 4096, "k-tiny", 10);

    /* An out span too small: 400, needed bytes, nothing written. */
    memset(mem, 0xEE, REGION_LEN);
    assert_int_equal(rdma_region_ref(reg, mem, 100000, &sub), 0);
    get_call(s, "k-small-out", 200000, 16384, &sub, &t, nb);
    wait_reply(s, &t);
    assert_int_equal(t.status, 400);
    assert_int_equal(tc_hdr_u64(&t, "x-amz-rdma-bytes-needed"), 200000);
    assert_mem_byte(mem, 0xEE, REGION_LEN);
    /* Out spans outside the registered region (past its end, before its
     * start, a region id the session never added): RDMA_OUT_OF_BOUNDS. */
    const rdma_native_ref_t bad_out[] = {
        {whole.region_id, whole.addr + REGION_LEN - 4096, 8192},
        {whole.region_id, whole.addr - 4096, 8192},
        {whole.region_id, whole.addr, REGION_LEN + 1},
        {whole.region_id + 77, whole.addr, 8192},
        {whole.region_id, UINT64_MAX - 10, 8192},
    };
    for (size_t i = 0; i < sizeof(bad_out) / sizeof(bad_out[0]); i++) {
        atomic_store(&g_h.last_reply_rc, -1);
        get_call(s, "k-bad-out", 5000, 0, &bad_out[i], &t, nb);
        wait_reply(s, &t);
        assert_int_equal(t.status, 400);
        assert_int_equal(tc_hdr_u64(&t, "x-amz-rdma-bytes-needed"), 5000);
        assert_int_equal(atomic_load(&g_h.last_reply_rc), RDMA_OUT_OF_BOUNDS);
    }
    assert_mem_byte(mem, 0xEE, REGION_LEN);

    /* PUT bodies inline: one byte, 5000, the inline maximum. */
    static uint8_t body[RDMA_NATIVE_MAX_INLINE];
    for (size_t i = 0; i < sizeof(body); i++)
        body[i] = (uint8_t)(i * 7 + (i >> 8));
    const size_t inl_lens[] = {1, 5000, RDMA_NATIVE_MAX_INLINE};
    for (size_t i = 0; i < sizeof(inl_lens) / sizeof(inl_lens[0]); i++) {
        rdma_native_msg_t m;
        msg_init(&m, RDMA_OP_PUT_OBJECT, "bkt", "put-inline");
        m.body_kind = RDMA_BODY_INLINE;
        m.body = body;
        m.body_len = inl_lens[i];
        do_call(s, &m, &t);
        assert_int_equal(t.status, 200);
        assert_int_equal(tc_hdr_u64(&t, "x-test-len"), inl_lens[i]);
        assert_int_equal(tc_hdr_u64(&t, "x-test-sum"), fnv1a(FNV_INIT, body, inl_lens[i]));
    }
    /* PUT bodies from the region: several chunks, and at an offset. */
    for (uint64_t i = 0; i < REGION_LEN; i++)
        mem[i] = (uint8_t)(i * 13 + (i >> 12));
    const struct {
        uint64_t off, len;
    } spans[] = {{0, 5 * MIB / 2}, {777, 100000}, {0, REGION_LEN}, {REGION_LEN - 1, 1}};
    for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
        rdma_native_msg_t m;
        msg_init(&m, RDMA_OP_PUT_OBJECT, "bkt", "put-region");
        m.body_kind = RDMA_BODY_REGION;
        assert_int_equal(rdma_region_ref(reg, mem + spans[i].off, spans[i].len, &m.body_ref), 0);
        m.body_len = spans[i].len;
        do_call(s, &m, &t);
        assert_int_equal(t.status, 200);
        assert_int_equal(tc_hdr_u64(&t, "x-test-len"), spans[i].len);
        assert_int_equal(tc_hdr_u64(&t, "x-test-sum"),
                         fnv1a(FNV_INIT, mem + spans[i].off, spans[i].len));
        assert_int_equal(atomic_load(&g_h.last_body_rc), RDMA_OK);
    }
    /* PUT spans outside the region: the handler sees RDMA_OUT_OF_BOUNDS. */
    const rdma_native_ref_t bad_in[] = {
        {whole.region_id, whole.addr + REGION_LEN - 10, 11},
        {whole.region_id, whole.addr - 1, 10},
        {whole.region_id + 77, whole.addr, 10},
        {whole.region_id, whole.addr + 10, UINT64_MAX - 5},
    };
    for (size_t i = 0; i < sizeof(bad_in) / sizeof(bad_in[0]); i++) {
        rdma_native_msg_t m;
        msg_init(&m, RDMA_OP_PUT_OBJECT, "bkt", "put-bad");
        m.body_kind = RDMA_BODY_REGION;
        m.body_ref = bad_in[i];
        m.body_len = bad_in[i].len;
        atomic_store(&g_h.last_body_rc, -1);
        do_call(s, &m, &t);
        assert_int_equal(t.status, 400);
        assert_int_equal(tc_hdr_u64(&t, "x-test-rc"), RDMA_OUT_OF_BOUNDS);
        assert_int_equal(atomic_load(&g_h.last_body_rc), RDMA_OUT_OF_BOUNDS);
    }

    /* The identity and params reach the handler. */
    {
        rdma_native_msg_t m;
        msg_init(&m, RDMA_OP_HEAD_OBJECT, "bkt-head", "a/b/c");
        msg_param(&m, RDMA_PARAM_HEADER, "if-match", "\"etag\"");
        msg_param(&m, RDMA_PARAM_QUERY, "partNumber", "3");
        do_call(s, &m, &t);
        assert_int_equal(t.status, 200);
        assert_string_equal(tc_hdr(&t, "x-test-ak"), "AKIDONE");
        assert_string_equal(tc_hdr(&t, "x-test-bucket"), "bkt-head");
        assert_int_equal(tc_hdr_u64(&t, "x-test-keylen"), 5);
        assert_int_equal(tc_hdr_u64(&t, "x-test-nparams"), 2);
        assert_string_equal(tc_hdr(&t, "x-test-p0"), "if-match");
    }
    assert_int_equal(rdma_session_alive(s), 1);
    rdma_region_remove(s, reg);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* 32 requests in flight on one session: 8 blocked in the handler while 24
 * GETs are answered past them, then all waited for in reverse order; each
 * reply must be its own request's (id and body). */
/* A GET answered inline on the progress thread (admitted, parsed, run and
 * replied there) allocates nothing in the rdma module once the server is
 * warm: its request takes a pooled slot and its reply a kept buffer. */
static void test_get_allocates_nothing(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    char nb[32];
    tcall_t t;
    for (int round = 0; round < 2; round++) {
        atomic_store(&g_prog_allocs, 0);
        atomic_store(&g_count_allocs, round); /* round 0 warms the server up */
        for (int i = 0; i < 50; i++) {
            get_call(s, "k-4k", 4096, 16384, NULL, &t, nb);
            wait_reply(s, &t);
            assert_int_equal(t.status, 200);
            assert_inline_pattern(&t, "k-4k", 4096);
            tcall_free(&t);
        }
        atomic_store(&g_count_allocs, 0);
    }
    assert_true(atomic_load(&g_h.calls[RDMA_OP_GET_OBJECT]) >= 100);
    assert_int_equal(atomic_load(&g_prog_allocs), 0);
    rdma_session_close(s);
}

static void test_many_in_flight_out_of_order(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    enum { N = 32, NBLOCK = 8 };
    static tcall_t t[N];
    static char keys[N][32], nbs[N][32];
    for (int i = 0; i < N; i++) {
        snprintf(keys[i], sizeof(keys[i]), "ooo-%d", i);
        rdma_native_msg_t m;
        int blocking = i % 4 == 0; /* 0, 4, 8, ... 28 */
        msg_init(&m, blocking ? RDMA_OP_DELETE_OBJECT : RDMA_OP_GET_OBJECT, "bkt", keys[i]);
        m.reply_inline_max = UINT32_MAX;
        snprintf(nbs[i], sizeof(nbs[i]), "%d", 100 + i * 37);
        msg_param(&m, RDMA_PARAM_QUERY, "n", nbs[i]);
        submit(s, &m, &t[i]);
    }
    assert_int_equal(wait_blocked(NBLOCK), NBLOCK);
    /* The GETs submitted after the blocked requests are answered first. */
    for (int i = N - 1; i >= 0; i--) {
        if (i % 4 != 0)
            wait_reply(s, &t[i]);
    }
    for (int i = 0; i < N; i += 4)
        assert_false(rdma_native_finished(&t[i].c));
    gate_set(1);
    for (int i = N - 1; i >= 0; i--) {
        if (i % 4 == 0)
            wait_reply(s, &t[i]);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(t[i].opcode, i % 4 == 0 ? RDMA_OP_DELETE_OBJECT : RDMA_OP_GET_OBJECT);
        assert_inline_pattern(&t[i], keys[i], (uint64_t)(100 + i * 37));
        tcall_free(&t[i]);
    }
    /* Request ids are distinct. */
    for (int i = 0; i < N; i++) {
        for (int j = i + 1; j < N; j++)
            assert_true(t[i].sent_id != t[j].sent_id);
    }
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* rdma_native_wait_any returns the call that is answered, not the oldest:
 * a GET is returned while a DeleteObject submitted before it is blocked in
 * the handler, on the same session and on another one; a wait that times
 * out withdraws nothing (the blocked call is answered once the gate
 * opens); NULL calls are skipped, and none at all is -2. */
static void test_wait_any(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    rdma_session_t *s1 = open_session(srv, "AKIDONE", "secret-one");
    rdma_session_t *s2 = open_session(srv, "AKIDTWO", "secret-two");
    static tcall_t blk, get1, get2;
    rdma_native_msg_t m;
    msg_init(&m, RDMA_OP_DELETE_OBJECT, "bkt", "wa-blocked");
    submit(s1, &m, &blk);
    assert_int_equal(wait_blocked(1), 1);
    msg_init(&m, RDMA_OP_GET_OBJECT, "bkt", "wa-get1");
    msg_param(&m, RDMA_PARAM_QUERY, "n", "300");
    submit(s1, &m, &get1);
    rdma_session_t *sess[3] = {s1, s1, NULL};
    rdma_native_call_t *calls[3] = {&blk.c, &get1.c, NULL};
    assert_int_equal(rdma_native_wait_any(sess, calls, 3, WAIT_MS), 1);
    assert_int_equal(get1.got, 1);
    assert_int_equal(get1.rid, get1.sent_id);
    assert_inline_pattern(&get1, "wa-get1", 300);
    /* Answered already: returned at once, again. */
    assert_int_equal(rdma_native_wait_any(sess, calls, 3, 0), 1);
    calls[1] = NULL;
    assert_int_equal(rdma_native_wait_any(sess, calls, 3, QUIET_MS), -1);
    assert_false(rdma_native_finished(&blk.c));
    msg_init(&m, RDMA_OP_GET_OBJECT, "bkt", "wa-get2");
    msg_param(&m, RDMA_PARAM_QUERY, "n", "500");
    submit(s2, &m, &get2);
    sess[2] = s2;
    calls[2] = &get2.c;
    assert_int_equal(rdma_native_wait_any(sess, calls, 3, WAIT_MS), 2);
    assert_int_equal(get2.rid, get2.sent_id);
    assert_inline_pattern(&get2, "wa-get2", 500);
    calls[2] = NULL;
    gate_set(1);
    assert_int_equal(rdma_native_wait_any(sess, calls, 3, WAIT_MS), 0);
    assert_int_equal(blk.got, 1);
    assert_int_equal(blk.lost, 0);
    assert_int_equal(blk.rid, blk.sent_id);
    calls[0] = NULL;
    assert_int_equal(rdma_native_wait_any(sess, calls, 3, WAIT_MS), -2);
    tcall_free(&blk);
    tcall_free(&get1);
    tcall_free(&get2);
    rdma_session_close(s1);
    rdma_session_close(s2);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* ==== 2. a raw client sending malformed requests ================================ */

#define RAW_MAX_REPLIES 640

typedef struct rrep {
    uint64_t id;
    uint8_t opcode;
    uint16_t status, error;
    uint8_t body_kind;
    uint64_t body_len;
    char hdrs[512];
    size_t hdrs_len;
    char body[512]; /* the start of an inline body, NUL-terminated */
} rrep_t;

typedef struct rawn {
    raw_ucx_t u;
    int fd;
    raw_sess_t rs;
    ucp_ep_h ep; /* ours, to the server's worker */
    rrep_t rep[RAW_MAX_REPLIES];
    unsigned n_rep, n_unparsed, n_rndv;
    uint64_t next_id;
} rawn_t;

static ucs_status_t rawn_reply_cb(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param)
{
    (void)header;
    rawn_t *rn = arg;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        rn->n_rndv++;
        return UCS_OK;
    }
    static rdma_native_reply_t r;
    if (header_length != 0 || rdma_native_parse_reply(data, length, &r) != 0) {
        rn->n_unparsed++;
        return UCS_OK;
    }
    if (rn->n_rep == RAW_MAX_REPLIES) {
        rn->n_unparsed++;
        return UCS_OK;
    }
    rrep_t *p = &rn->rep[rn->n_rep++];
    memset(p, 0, sizeof(*p));
    p->id = r.request_id;
    p->opcode = r.opcode;
    p->status = r.status;
    p->error = r.error;
    p->body_kind = r.body_kind;
    p->body_len = r.body_len;
    for (unsigned i = 0; i < r.n_headers; i++) {
        size_t need = r.headers[i].name_len + r.headers[i].value_len + 2u;
        if (p->hdrs_len + need > sizeof(p->hdrs))
            break;
        char *q = p->hdrs + p->hdrs_len;
        memcpy(q, r.headers[i].name, r.headers[i].name_len);
        q[r.headers[i].name_len] = '\0';
        q += r.headers[i].name_len + 1;
        memcpy(q, r.headers[i].value, r.headers[i].value_len);
        q[r.headers[i].value_len] = '\0';
        p->hdrs_len += need;
    }
    if (r.body_kind == RDMA_BODY_INLINE) {
        size_t n = r.body_len < sizeof(p->body) - 1 ? (size_t)r.body_len : sizeof(p->body) - 1;
        memcpy(p->body, r.body, n);
    }
    return UCS_OK;
}

/* A raw session over TCP (a net session on the server's shared worker) or
 * the Unix socket (a local session on a worker of its own), with an
 * endpoint of its own to the worker WELCOME named. */
static void rawn_open(rawn_t *rn, rdma_server_t *srv, int over_unix)
{
    memset(rn, 0, sizeof(*rn));
    raw_ucx_init(&rn->u);
    ucp_am_handler_param_t ah = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                                               UCP_AM_HANDLER_PARAM_FIELD_CB |
                                               UCP_AM_HANDLER_PARAM_FIELD_ARG,
                                 .id = RDMA_AM_NATIVE_REPLY,
                                 .cb = rawn_reply_cb,
                                 .arg = rn};
    assert_int_equal(ucp_worker_set_am_recv_handler(rn->u.w, &ah), UCS_OK);
    if (over_unix) {
        char name[64], err[128];
        snprintf(name, sizeof(name), "@s3rdma.%d", rdma_server_port(srv));
        rn->fd = rdma_net_connect_unix(name, 2000, err, sizeof(err));
        assert_true(rn->fd >= 0);
    } else {
        rn->fd = raw_connect(srv);
    }
    raw_handshake(rn->fd, &rn->u, "AKIDONE", "secret-one", &rn->rs);
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = (const ucp_address_t *)rn->rs.saddr,
        .err_mode = rn->rs.err_mode == RDMA_WIRE_ERRMODE_PEER ? UCP_ERR_HANDLING_MODE_PEER
                                                              : UCP_ERR_HANDLING_MODE_NONE,
    };
    assert_int_equal(ucp_ep_create(rn->u.w, &ep, &rn->ep), UCS_OK);
    rn->next_id = 1000;
}

static void rawn_close(rawn_t *rn)
{
    if (rn->ep) {
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = UCP_EP_CLOSE_FLAG_FORCE};
        ucs_status_ptr_t r = ucp_ep_close_nbx(rn->ep, &p);
        if (UCS_PTR_IS_PTR(r)) {
            while (ucp_request_check_status(r) == UCS_INPROGRESS)
                ucp_worker_progress(rn->u.w);
            ucp_request_free(r);
        }
        rn->ep = NULL;
    }
    if (rn->fd >= 0)
        close(rn->fd);
    rn->fd = -1;
    raw_settle(&rn->u);
    free(rn->rs.saddr);
    rn->rs.saddr = NULL;
    raw_ucx_fini(&rn->u);
}

/* Sends len bytes of msg as one eager native request on ep. */
static void rawn_send_on(rawn_t *rn, ucp_ep_h ep, const void *msg, size_t len)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_AM_SEND_FLAG_EAGER};
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, RDMA_AM_NATIVE_REQ, NULL, 0, msg, len, &p);
    assert_false(UCS_PTR_IS_ERR(r));
    if (r) {
        uint64_t deadline = clock_mono_ms() + WAIT_MS;
        while (ucp_request_check_status(r) == UCS_INPROGRESS && clock_mono_ms() < deadline)
            ucp_worker_progress(rn->u.w);
        assert_int_equal(ucp_request_check_status(r), UCS_OK);
        ucp_request_free(r);
    }
}

static void rawn_send(rawn_t *rn, const void *msg, size_t len)
{
    rawn_send_on(rn, rn->ep, msg, len);
}

static const rrep_t *rawn_find(const rawn_t *rn, uint64_t id)
{
    for (unsigned i = 0; i < rn->n_rep; i++) {
        if (rn->rep[i].id == id)
            return &rn->rep[i];
    }
    return NULL;
}

/* Progresses rn's worker until the reply to id arrives (5 s at most). */
static const rrep_t *rawn_wait(rawn_t *rn, uint64_t id)
{
    uint64_t deadline = clock_mono_ms() + WAIT_MS;
    const rrep_t *p;
    while (!(p = rawn_find(rn, id)) && clock_mono_ms() < deadline) {
        if (!ucp_worker_progress(rn->u.w))
            usleep(50);
    }
    return p;
}

/* Progresses the workers for QUIET_MS. */
static void rawn_quiet(rawn_t **rns, int n)
{
    for (uint64_t until = clock_mono_ms() + QUIET_MS; clock_mono_ms() < until;) {
        int any = 0;
        for (int i = 0; i < n; i++)
            any |= (int)ucp_worker_progress(rns[i]->u.w);
        if (!any)
            usleep(100);
    }
}

static void rawn_forget(rawn_t *rn)
{
    rn->n_rep = 0;
}

/* A request put together field by field, mistakes included. */
typedef struct rb {
    uint32_t magic;
    uint8_t version, opcode;
    uint16_t flags;
    uint64_t id;
    uint8_t sid[RDMA_SESSION_ID_LEN];
    const char *bucket, *key;
    uint32_t inline_max;
    int n_params_field; /* -1: n */
    unsigned n;
    struct {
        uint8_t kind;
        const char *name, *value;
    } p[80];
    uint8_t body_kind;
    uint32_t body_len_field;
    const uint8_t *body;
    size_t body_present;
    rdma_native_ref_t body_ref;
    uint8_t out_kind;
    rdma_native_ref_t out;
} rb_t;

static void rb_init(rb_t *b, const rawn_t *rn, uint8_t op)
{
    memset(b, 0, sizeof(*b));
    b->magic = RDMA_NATIVE_MAGIC;
    b->version = RDMA_NATIVE_VERSION;
    b->opcode = op;
    b->id = 0;
    memcpy(b->sid, rn->rs.id, RDMA_SESSION_ID_LEN);
    b->bucket = "bkt";
    b->key = "key";
    b->inline_max = 4096;
    b->n_params_field = -1;
}

static void rb_param(rb_t *b, uint8_t kind, const char *name, const char *value)
{
    assert_true(b->n < sizeof(b->p) / sizeof(b->p[0]));
    b->p[b->n].kind = kind;
    b->p[b->n].name = name;
    b->p[b->n].value = value;
    b->n++;
}

static void rb_build(const rb_t *b, wire_out_t *w)
{
    memset(w, 0, sizeof(*w));
    w->limit = 4 * RDMA_NATIVE_MAX_MSG;
    rdma_wire_put_u32(w, b->magic);
    rdma_wire_put_u8(w, b->version);
    rdma_wire_put_u8(w, b->opcode);
    rdma_wire_put_u16(w, b->flags);
    rdma_wire_put_u64(w, b->id);
    rdma_wire_put_bytes(w, b->sid, RDMA_SESSION_ID_LEN);
    rdma_wire_put_str16(w, b->bucket);
    rdma_wire_put_str16(w, b->key);
    rdma_wire_put_u32(w, b->inline_max);
    rdma_wire_put_u16(w, b->n_params_field >= 0 ? (uint16_t)b->n_params_field : (uint16_t)b->n);
    for (unsigned i = 0; i < b->n; i++) {
        rdma_wire_put_u8(w, b->p[i].kind);
        rdma_wire_put_str16(w, b->p[i].name);
        rdma_wire_put_str16(w, b->p[i].value);
    }
    rdma_wire_put_u8(w, b->body_kind);
    if (b->body_kind == RDMA_BODY_INLINE) {
        rdma_wire_put_u32(w, b->body_len_field);
        rdma_wire_put_bytes(w, b->body, b->body_present);
    } else if (b->body_kind == RDMA_BODY_REGION) {
        rdma_wire_put_u32(w, b->body_ref.region_id);
        rdma_wire_put_u64(w, b->body_ref.addr);
        rdma_wire_put_u64(w, b->body_ref.len);
    }
    rdma_wire_put_u8(w, b->out_kind);
    if (b->out_kind == 1) {
        rdma_wire_put_u32(w, b->out.region_id);
        rdma_wire_put_u64(w, b->out.addr);
        rdma_wire_put_u64(w, b->out.len);
    }
    assert_int_equal(w->err, 0);
}

/* Sends b (with a fresh id) and returns the reply, which must arrive. */
static const rrep_t *rb_call(rawn_t *rn, rb_t *b)
{
    b->id = rn->next_id++;
    wire_out_t w;
    rb_build(b, &w);
    rawn_send(rn, w.data, w.len);
    rdma_wire_free(&w);
    const rrep_t *p = rawn_wait(rn, b->id);
    if (!p)
        fail_msg("no reply to request %" PRIu64 " within %d ms", b->id, WAIT_MS);
    return p;
}

/* The reply to a malformed request: its id, its opcode, 400 BAD_MESSAGE
 * with an InvalidRequest XML body. */
static void assert_bad_message(const rrep_t *p, uint64_t id, uint8_t opcode, const char *what)
{
    if (p->status != 400 || p->error != RDMA_ERR_BAD_MESSAGE)
        fail_msg("%s: status %u error %u (%s)", what, p->status, p->error, p->body);
    assert_int_equal(p->id, id);
    assert_int_equal(p->opcode, opcode);
    assert_int_equal(p->body_kind, RDMA_BODY_INLINE);
    assert_non_null(strstr(p->body, "<Code>InvalidRequest</Code>"));
}

/* Builds b, sends its first len bytes (all when len is SIZE_MAX) and
 * expects 400 BAD_MESSAGE. */
static void expect_bad(rawn_t *rn, rb_t *b, size_t len, const char *what)
{
    b->id = rn->next_id++;
    wire_out_t w;
    rb_build(b, &w);
    rawn_send(rn, w.data, len == SIZE_MAX ? w.len : len);
    rdma_wire_free(&w);
    const rrep_t *p = rawn_wait(rn, b->id);
    if (!p)
        fail_msg("%s: no reply within %d ms", what, WAIT_MS);
    assert_bad_message(p, b->id, b->opcode, what);
    rawn_forget(rn);
}

/* A valid HeadObject on rn answers 200 (the server and the session are well). */
static void raw_assert_works(rawn_t *rn)
{
    rb_t b;
    rb_init(&b, rn, RDMA_OP_HEAD_OBJECT);
    const rrep_t *p = rb_call(rn, &b);
    assert_int_equal(p->status, 200);
    assert_int_equal(p->error, 0);
    assert_string_equal(hdrs_find(p->hdrs, p->hdrs_len, "x-test-ak"), "AKIDONE");
    rawn_forget(rn);
}

/* RDMA_NATIVE_FLAG_PROGRESS is known: on a request without an out span
 * (nothing to tell) it is answered as without it. */
static void raw_assert_progress_known(rawn_t *rn)
{
    rb_t b;
    rb_init(&b, rn, RDMA_OP_HEAD_OBJECT);
    b.flags = RDMA_NATIVE_FLAG_PROGRESS;
    const rrep_t *p = rb_call(rn, &b);
    assert_int_equal(p->status, 200);
    assert_int_equal(p->error, 0);
    rawn_forget(rn);
}

static unsigned handler_total(void)
{
    return atomic_load(&g_h.total);
}

static void test_raw_malformed(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    static rawn_t rn;
    rawn_open(&rn, srv, 0);
    assert_int_equal(test_wait_count(srv, 1), 1);
    raw_assert_works(&rn);
    raw_assert_progress_known(&rn);
    rb_t b;
    unsigned calls0 = handler_total();

    /* Unknown version, opcode; nonzero flags. */
    const uint8_t versions[] = {0, 2, 255};
    for (size_t i = 0; i < sizeof(versions); i++) {
        rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
        b.version = versions[i];
        expect_bad(&rn, &b, SIZE_MAX, "version");
    }
    const uint8_t opcodes[] = {0, RDMA_OP_MAX + 1, 255};
    for (size_t i = 0; i < sizeof(opcodes); i++) {
        rb_init(&b, &rn, opcodes[i]);
        expect_bad(&rn, &b, SIZE_MAX, "opcode");
    }
    const uint16_t flags[] = {2, 0x8000, 0xffff};
    for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        rb_init(&b, &rn, RDMA_OP_GET_OBJECT);
        b.flags = flags[i];
        expect_bad(&rn, &b, SIZE_MAX, "flags");
    }

    /* Truncated after the fixed head, at every length (GET: parsed on the
     * progress thread; PUT: on an executor). */
    static uint8_t ibody[100];
    memset(ibody, 'x', sizeof(ibody));
    const uint8_t trunc_ops[] = {RDMA_OP_GET_OBJECT, RDMA_OP_PUT_OBJECT};
    for (size_t o = 0; o < sizeof(trunc_ops); o++) {
        rb_init(&b, &rn, trunc_ops[o]);
        rb_param(&b, RDMA_PARAM_HEADER, "range", "bytes=0-9");
        rb_param(&b, RDMA_PARAM_QUERY, "n", "10");
        b.body_kind = RDMA_BODY_INLINE;
        b.body = ibody;
        b.body_len_field = b.body_present = sizeof(ibody);
        b.out_kind = 1;
        b.out = (rdma_native_ref_t){1, 4096, 4096};
        wire_out_t w;
        rb_build(&b, &w);
        size_t full = w.len;
        rdma_wire_free(&w);
        for (size_t len = RDMA_NATIVE_FIXED; len < full; len++) {
            char what[64];
            snprintf(what, sizeof(what), "truncated at %zu of %zu", len, full);
            expect_bad(&rn, &b, len, what);
        }
    }

    /* Trailing bytes: the field list is complete, then one byte more, or
     * a whole stray out ref. */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.out_kind = 1;
    b.out = (rdma_native_ref_t){1, 0, 1};
    {
        wire_out_t w;
        b.id = rn.next_id++;
        rb_build(&b, &w);
        size_t full = w.len;
        /* Turn "out 1 + ref" into "out 0" + 20 stray bytes. */
        w.data[full - 21] = 0;
        rawn_send(&rn, w.data, full);
        const rrep_t *p = rawn_wait(&rn, b.id);
        assert_non_null(p);
        assert_bad_message(p, b.id, b.opcode, "trailing ref");
        rawn_forget(&rn);
        b.id = rn.next_id++;
        rdma_wire_free(&w);
        rb_build(&b, &w);
        rdma_wire_put_u8(&w, 0);
        rawn_send(&rn, w.data, w.len);
        p = rawn_wait(&rn, b.id);
        assert_non_null(p);
        assert_bad_message(p, b.id, b.opcode, "trailing byte");
        rawn_forget(&rn);
        rdma_wire_free(&w);
    }

    /* Too many params: 65 real ones, or a count with nothing behind it. */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    for (int i = 0; i <= RDMA_NATIVE_MAX_PARAMS; i++)
        rb_param(&b, RDMA_PARAM_QUERY, "p", "v");
    expect_bad(&rn, &b, SIZE_MAX, "65 params");
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.n_params_field = 65535;
    expect_bad(&rn, &b, SIZE_MAX, "65535 params announced");
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.n_params_field = 2;
    rb_param(&b, RDMA_PARAM_QUERY, "p", "v");
    expect_bad(&rn, &b, SIZE_MAX, "2 params announced, 1 sent");

    /* Over-long and empty names, over-long values, bucket and key, NULs. */
    static char name129[RDMA_NATIVE_MAX_NAME + 2], value8193[RDMA_NATIVE_MAX_VALUE + 2];
    static char bucket256[RDMA_NATIVE_MAX_BUCKET + 2], key4097[RDMA_NATIVE_MAX_KEY + 2];
    memset(name129, 'n', RDMA_NATIVE_MAX_NAME + 1);
    memset(value8193, 'v', RDMA_NATIVE_MAX_VALUE + 1);
    memset(bucket256, 'b', RDMA_NATIVE_MAX_BUCKET + 1);
    memset(key4097, 'k', RDMA_NATIVE_MAX_KEY + 1);
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    rb_param(&b, RDMA_PARAM_HEADER, name129, "v");
    expect_bad(&rn, &b, SIZE_MAX, "name of 129 bytes");
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    rb_param(&b, RDMA_PARAM_HEADER, "", "v");
    expect_bad(&rn, &b, SIZE_MAX, "empty name");
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    rb_param(&b, RDMA_PARAM_HEADER, "x-amz-meta-a", value8193);
    expect_bad(&rn, &b, SIZE_MAX, "value of 8193 bytes");
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.bucket = bucket256;
    expect_bad(&rn, &b, SIZE_MAX, "bucket of 256 bytes");
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.key = key4097;
    expect_bad(&rn, &b, SIZE_MAX, "key of 4097 bytes");
    {
        /* "key" with its middle byte a NUL: the handler must never see "k". */
        rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
        b.id = rn.next_id++;
        wire_out_t w;
        rb_build(&b, &w);
        size_t key_at = RDMA_NATIVE_FIXED + 2 + strlen(b.bucket) + 2;
        assert_memory_equal(w.data + key_at, "key", 3);
        w.data[key_at + 1] = 0;
        rawn_send(&rn, w.data, w.len);
        const rrep_t *p = rawn_wait(&rn, b.id);
        assert_non_null(p);
        assert_bad_message(p, b.id, b.opcode, "NUL inside the key");
        rawn_forget(&rn);
        rdma_wire_free(&w);
    }
    /* Fields over 32 KiB without the inline body (each field within its own
     * limit, the message within 96 KiB). */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    for (int i = 0; i < 5; i++)
        rb_param(&b, RDMA_PARAM_HEADER, "x-amz-meta-big", value8193 + 1); /* 8192 bytes */
    expect_bad(&rn, &b, SIZE_MAX, "fields over 32 KiB");

    /* Unknown param, body and out kinds. */
    const uint8_t pkinds[] = {0, 3, 255};
    for (size_t i = 0; i < sizeof(pkinds); i++) {
        rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
        rb_param(&b, pkinds[i], "p", "v");
        expect_bad(&rn, &b, SIZE_MAX, "param kind");
    }
    const uint8_t bkinds[] = {3, 255};
    for (size_t i = 0; i < sizeof(bkinds); i++) {
        rb_init(&b, &rn, RDMA_OP_PUT_OBJECT);
        b.body_kind = bkinds[i];
        expect_bad(&rn, &b, SIZE_MAX, "body kind");
    }
    rb_init(&b, &rn, RDMA_OP_GET_OBJECT);
    b.out_kind = 2;
    expect_bad(&rn, &b, SIZE_MAX, "out kind");

    /* Inline bodies whose length is not what is present, 0, over 64 KiB. */
    static uint8_t big[RDMA_NATIVE_MAX_INLINE + 1];
    rb_init(&b, &rn, RDMA_OP_PUT_OBJECT);
    b.body_kind = RDMA_BODY_INLINE;
    b.body = big;
    b.body_len_field = 100;
    b.body_present = 99;
    expect_bad(&rn, &b, SIZE_MAX, "inline body shorter than its length");
    b.body_len_field = 0xffffffffu;
    expect_bad(&rn, &b, SIZE_MAX, "inline body of 4 GiB announced");
    b.body_len_field = 0;
    b.body_present = 0;
    expect_bad(&rn, &b, SIZE_MAX, "empty inline body");
    b.body_len_field = b.body_present = RDMA_NATIVE_MAX_INLINE + 1;
    expect_bad(&rn, &b, SIZE_MAX, "inline body over 64 KiB");
    /* Exactly RDMA_NATIVE_MAX_MSG bytes, one of them trailing: answered. */
    b.body_len_field = b.body_present = RDMA_NATIVE_MAX_INLINE;
    {
        b.id = rn.next_id++;
        wire_out_t w;
        rb_build(&b, &w);
        assert_true(w.len < RDMA_NATIVE_MAX_MSG);
        size_t pad = RDMA_NATIVE_MAX_MSG - w.len;
        assert_non_null(rdma_wire_put_space(&w, pad));
        memset(w.data + w.len - pad, 0, pad);
        assert_int_equal(w.len, RDMA_NATIVE_MAX_MSG);
        rawn_send(&rn, w.data, w.len);
        const rrep_t *p = rawn_wait(&rn, b.id);
        assert_non_null(p);
        assert_bad_message(p, b.id, b.opcode, "trailing bytes up to 96 KiB");
        rawn_forget(&rn);
        rdma_wire_free(&w);
    }
    /* None of these reached the handler. */
    assert_int_equal(handler_total(), calls0);

    /* At the limits: accepted, and what arrived is what was sent. */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    static char name128[RDMA_NATIVE_MAX_NAME + 1];
    memset(name128, 'n', RDMA_NATIVE_MAX_NAME);
    b.bucket = bucket256 + 1;
    b.key = key4097 + 1;
    rb_param(&b, RDMA_PARAM_HEADER, name128, value8193 + 1);
    rb_param(&b, RDMA_PARAM_QUERY, "q", value8193 + 1);
    rb_param(&b, RDMA_PARAM_QUERY, "r", "");
    const rrep_t *p = rb_call(&rn, &b);
    assert_int_equal(p->status, 200);
    assert_int_equal(strtoul(hdrs_find(p->hdrs, p->hdrs_len, "x-test-keylen"), NULL, 10),
                     RDMA_NATIVE_MAX_KEY);
    assert_int_equal(strtoul(hdrs_find(p->hdrs, p->hdrs_len, "x-test-nparams"), NULL, 10), 3);
    assert_string_equal(hdrs_find(p->hdrs, p->hdrs_len, "x-test-p0"), name128);
    assert_int_equal(strtoul(hdrs_find(p->hdrs, p->hdrs_len, "x-test-p0-len"), NULL, 10),
                     RDMA_NATIVE_MAX_VALUE);
    rawn_forget(&rn);
    /* 64 params: accepted. */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    for (int i = 0; i < RDMA_NATIVE_MAX_PARAMS; i++)
        rb_param(&b, RDMA_PARAM_QUERY, "p", "v");
    p = rb_call(&rn, &b);
    assert_int_equal(p->status, 200);
    assert_int_equal(strtoul(hdrs_find(p->hdrs, p->hdrs_len, "x-test-nparams"), NULL, 10), 64);
    rawn_forget(&rn);

    /* Region references outside the session's regions (it has none), of
     * some bytes and of none (an empty span is checked too). */
    static const rdma_native_ref_t nowhere[] = {{1, 4096, 100}, {99, 0xdead0000, 0}};
    for (size_t i = 0; i < sizeof(nowhere) / sizeof(nowhere[0]); i++) {
        rb_init(&b, &rn, RDMA_OP_PUT_OBJECT);
        b.body_kind = RDMA_BODY_REGION;
        b.body_ref = nowhere[i];
        atomic_store(&g_h.last_body_rc, -1);
        p = rb_call(&rn, &b);
        assert_int_equal(p->status, 400);
        assert_int_equal(strtoul(hdrs_find(p->hdrs, p->hdrs_len, "x-test-rc"), NULL, 10),
                         RDMA_OUT_OF_BOUNDS);
        assert_int_equal(atomic_load(&g_h.last_body_rc), RDMA_OUT_OF_BOUNDS);
        rawn_forget(&rn);
    }
    rb_init(&b, &rn, RDMA_OP_GET_OBJECT);
    rb_param(&b, RDMA_PARAM_QUERY, "n", "100000");
    b.inline_max = 0;
    b.out_kind = 1;
    b.out = (rdma_native_ref_t){0, 0, 1 << 20};
    atomic_store(&g_h.last_reply_rc, -1);
    p = rb_call(&rn, &b);
    assert_int_equal(p->status, 400);
    assert_int_equal(strtoul(hdrs_find(p->hdrs, p->hdrs_len, "x-amz-rdma-bytes-needed"), NULL, 10),
                     100000);
    assert_int_equal(atomic_load(&g_h.last_reply_rc), RDMA_OUT_OF_BOUNDS);
    rawn_forget(&rn);

    /* After all of it: the session answers, nothing ended, and the
     * server counted the malformed ones (none dropped). */
    raw_assert_works(&rn);
    assert_int_equal(rdma_server_session_count(srv), 1);
    unsigned long dropped, malformed;
    rdma_server_native_counts(srv, &dropped, &malformed);
    assert_true(malformed > 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(rn.n_unparsed, 0);
    assert_int_equal(rn.n_rndv, 0);
    rawn_close(&rn);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* What §4.4 drops: too short for the head, wrong magic, over 96 KiB, a
 * session id that names no live session of the worker. No reply within
 * 300 ms, the handler not run, the session still up. */
static void test_raw_dropped(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    static rawn_t rn;
    rawn_open(&rn, srv, 0);
    assert_int_equal(test_wait_count(srv, 1), 1);
    raw_assert_works(&rn);
    raw_assert_progress_known(&rn);
    rb_t b;
    unsigned calls0 = handler_total();
    wire_out_t w;

    /* Shorter than the fixed head (0 .. 31 bytes of a valid request). */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.id = rn.next_id++;
    rb_build(&b, &w);
    const size_t shorts[] = {0, 1, 4, 8, 16, RDMA_NATIVE_FIXED - 1};
    for (size_t i = 0; i < sizeof(shorts) / sizeof(shorts[0]); i++)
        rawn_send(&rn, w.data, shorts[i]);
    rdma_wire_free(&w);
    /* Wrong magic. */
    const uint32_t magics[] = {0, RDMA_NATIVE_MAGIC ^ 1, RDMA_WIRE_MAGIC};
    for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++) {
        rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
        b.magic = magics[i];
        b.id = rn.next_id++;
        rb_build(&b, &w);
        rawn_send(&rn, w.data, w.len);
        rdma_wire_free(&w);
    }
    /* One byte over RDMA_NATIVE_MAX_MSG, and far over. */
    static uint8_t big[RDMA_NATIVE_MAX_INLINE];
    const size_t overs[] = {RDMA_NATIVE_MAX_MSG + 1, RDMA_NATIVE_MAX_MSG + 40000};
    for (size_t i = 0; i < sizeof(overs) / sizeof(overs[0]); i++) {
        rb_init(&b, &rn, RDMA_OP_PUT_OBJECT);
        b.body_kind = RDMA_BODY_INLINE;
        b.body = big;
        b.body_len_field = b.body_present = sizeof(big);
        b.id = rn.next_id++;
        rb_build(&b, &w);
        size_t pad = overs[i] - w.len;
        assert_non_null(rdma_wire_put_space(&w, pad));
        memset(w.data + w.len - pad, 0, pad);
        assert_int_equal(w.len, overs[i]);
        rawn_send(&rn, w.data, w.len);
        rdma_wire_free(&w);
    }
    /* A session id nobody has. */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    assert_int_equal(hash_random_bytes(b.sid, sizeof(b.sid)), 0);
    b.id = rn.next_id++;
    rb_build(&b, &w);
    rawn_send(&rn, w.data, w.len);
    rdma_wire_free(&w);
    /* An id one bit off ours. */
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.sid[RDMA_SESSION_ID_LEN - 1] ^= 1;
    b.id = rn.next_id++;
    rb_build(&b, &w);
    rawn_send(&rn, w.data, w.len);
    rdma_wire_free(&w);

    rawn_t *all[] = {&rn};
    rawn_quiet(all, 1);
    if (rn.n_rep)
        fail_msg("a dropped request was answered (id %" PRIu64 ", status %u)", rn.rep[0].id,
                 rn.rep[0].status);
    assert_int_equal(rn.n_unparsed, 0);
    assert_int_equal(handler_total(), calls0);
    unsigned long dropped, malformed;
    rdma_server_native_counts(srv, &dropped, &malformed);
    assert_true(dropped > 0);
    assert_int_equal(malformed, 0);
    raw_assert_works(&rn);
    assert_int_equal(rdma_server_session_count(srv), 1);
    rawn_close(&rn);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* A burst of 600 requests, a third of them malformed, sent without waiting
 * (far past the per-session bound of 64): every one is answered exactly
 * once, with its own id: 200 (valid, admitted), 400 BAD_MESSAGE (malformed,
 * admitted) or 503 BUSY (over the bound). */
static void test_raw_burst(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    static rawn_t rn;
    rawn_open(&rn, srv, 0);
    enum { N = 600, BASE = 100000 };
    rb_t b;
    rb_init(&b, &rn, RDMA_OP_GET_OBJECT);
    rb_param(&b, RDMA_PARAM_QUERY, "n", "100");
    for (int i = 0; i < N; i++) {
        b.id = BASE + (uint64_t)i;
        b.version = i % 3 == 0 ? 9 : RDMA_NATIVE_VERSION;
        b.opcode = i % 2 ? RDMA_OP_GET_OBJECT : RDMA_OP_HEAD_OBJECT;
        wire_out_t w;
        rb_build(&b, &w);
        rawn_send(&rn, w.data, w.len);
        rdma_wire_free(&w);
    }
    for (uint64_t until = clock_mono_ms() + WAIT_MS; rn.n_rep < N && clock_mono_ms() < until;) {
        if (!ucp_worker_progress(rn.u.w))
            usleep(50);
    }
    rawn_t *one[] = {&rn};
    rawn_quiet(one, 1); /* nothing more may come */
    assert_int_equal(rn.n_rep, N);
    assert_int_equal(rn.n_unparsed, 0);
    static uint8_t seen[N];
    memset(seen, 0, sizeof(seen));
    unsigned ok = 0, busy = 0;
    for (unsigned k = 0; k < rn.n_rep; k++) {
        const rrep_t *p = &rn.rep[k];
        assert_true(p->id >= BASE && p->id < BASE + N);
        unsigned i = (unsigned)(p->id - BASE);
        assert_int_equal(seen[i], 0);
        seen[i] = 1;
        assert_int_equal(p->opcode, i % 2 ? RDMA_OP_GET_OBJECT : RDMA_OP_HEAD_OBJECT);
        if (p->status == 503) {
            assert_int_equal(p->error, RDMA_ERR_BUSY);
            busy++;
        } else if (i % 3 == 0) {
            assert_bad_message(p, p->id, p->opcode, "burst");
        } else {
            assert_int_equal(p->status, 200);
            ok++;
        }
    }
    assert_true(ok > 0);
    rawn_forget(&rn);
    raw_assert_works(&rn);
    assert_int_equal(rdma_server_session_count(srv), 1);
    (void)busy;
    rawn_close(&rn);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* Decodes a real session's id from a token of one of its regions. */
static void session_id_of(rdma_session_t *s, uint8_t id[RDMA_SESSION_ID_LEN])
{
    static uint8_t buf[4096];
    char err[128], tok[RDMA_TOKEN_LEN + 1];
    rdma_region_t *r = NULL;
    assert_int_equal(rdma_region_add(s, buf, sizeof(buf), &r, err, sizeof(err)), 0);
    assert_int_equal(rdma_token_format(s, r, buf, sizeof(buf), tok, sizeof(tok)), 0);
    rdma_token_t t;
    assert_int_equal(rdma_token_decode(tok, &t), 0);
    memcpy(id, t.session_id, RDMA_SESSION_ID_LEN);
    rdma_region_remove(s, r);
}

/* A request naming another live session: the reply goes to that session's
 * endpoint (when the id names a session of the worker the request arrived
 * on) or nowhere, never to the sender. */
static void test_raw_other_session(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    static rawn_t a, bsess;
    rawn_open(&a, srv, 0);
    rawn_open(&bsess, srv, 0); /* both net sessions: the shared worker */
    rdma_session_t *real = open_session(srv, "AKIDTWO", "secret-two");
    assert_int_equal(test_wait_count(srv, 3), 3);
    raw_assert_works(&a);
    raw_assert_works(&bsess);
    rawn_t *both[] = {&a, &bsess};

    /* A names B (same worker): B gets the answer, A nothing; the handler
     * ran with B's identity. */
    rb_t b;
    rb_init(&b, &bsess, RDMA_OP_HEAD_OBJECT);
    b.id = 4242;
    wire_out_t w;
    rb_build(&b, &w);
    rawn_send(&a, w.data, w.len);
    rdma_wire_free(&w);
    const rrep_t *p = rawn_wait(&bsess, 4242);
    if (!p)
        fail_msg("the owner session got no reply within %d ms", WAIT_MS);
    assert_int_equal(p->status, 200);
    rawn_quiet(both, 2);
    assert_int_equal(a.n_rep, 0);
    rawn_forget(&bsess);
    /* ... also a malformed one: the 400 goes to B as well. */
    rb_init(&b, &bsess, RDMA_OP_HEAD_OBJECT);
    b.id = 4243;
    b.version = 7;
    rb_build(&b, &w);
    rawn_send(&a, w.data, w.len);
    rdma_wire_free(&w);
    p = rawn_wait(&bsess, 4243);
    assert_non_null(p);
    assert_bad_message(p, 4243, RDMA_OP_HEAD_OBJECT, "malformed, other session");
    rawn_quiet(both, 2);
    assert_int_equal(a.n_rep, 0);
    rawn_forget(&bsess);

    /* A names the real client's session: the reply, if any, is the real
     * client's; A gets nothing. (The real client connected over the Unix
     * socket, so its session lives on a worker of its own and the request,
     * arriving on the shared worker, is dropped.) */
    uint8_t real_id[RDMA_SESSION_ID_LEN];
    session_id_of(real, real_id);
    rb_init(&b, &a, RDMA_OP_GET_OBJECT);
    memcpy(b.sid, real_id, sizeof(real_id));
    rb_param(&b, RDMA_PARAM_QUERY, "n", "10");
    b.id = 1;
    rb_build(&b, &w);
    for (int i = 0; i < 4; i++)
        rawn_send(&a, w.data, w.len);
    rdma_wire_free(&w);
    rawn_quiet(both, 2);
    assert_int_equal(a.n_rep, 0);
    assert_int_equal(bsess.n_rep, 0);

    /* Every session is still up and answers. */
    assert_int_equal(rdma_session_alive(real), 1);
    assert_session_works(real);
    raw_assert_works(&a);
    raw_assert_works(&bsess);
    assert_int_equal(rdma_server_session_count(srv), 3);
    rdma_session_close(real);
    rawn_close(&a);
    rawn_close(&bsess);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* A local session (Unix socket: a worker of its own): a request reaching
 * that worker from another endpoint with the session's id is answered on
 * the session's endpoint; with another id it is dropped. */
static void test_raw_local_worker(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    static rawn_t loc, a;
    rawn_open(&loc, srv, 1);
    rawn_open(&a, srv, 0);
    assert_int_equal(test_wait_count(srv, 2), 2);
    raw_assert_works(&loc);
    raw_assert_works(&a);
    rawn_t *both[] = {&loc, &a};
    /* Without a shared-memory transport (UCX_TLS=tcp) the server has no
     * local domain and the Unix-socket session is a net one, on the shared
     * worker like A's (WELCOME says so: error mode PEER). */
    int own_worker = loc.rs.err_mode == RDMA_WIRE_ERRMODE_NONE;
    /* A's own endpoint to the local session's worker. */
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = (const ucp_address_t *)loc.rs.saddr,
        .err_mode = own_worker ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
    };
    ucp_ep_h e = NULL;
    assert_int_equal(ucp_ep_create(a.u.w, &ep, &e), UCS_OK);

    /* With A's id: not a session of that worker, dropped (on the shared
     * worker it is one: answered on A's session endpoint). */
    rb_t b;
    wire_out_t w;
    rb_init(&b, &a, RDMA_OP_HEAD_OBJECT);
    b.id = 777;
    rb_build(&b, &w);
    rawn_send_on(&a, e, w.data, w.len);
    rdma_wire_free(&w);
    rawn_quiet(both, 2);
    assert_int_equal(loc.n_rep, 0);
    if (own_worker) {
        assert_int_equal(a.n_rep, 0);
    } else {
        assert_int_equal(a.n_rep, 1);
        assert_int_equal(a.rep[0].id, 777);
        assert_int_equal(a.rep[0].status, 200);
        rawn_forget(&a);
    }
    /* The local session's id sent on A's endpoint to the shared worker:
     * a session of another worker, dropped (on the shared worker: answered
     * to the local session). */
    rb_init(&b, &loc, RDMA_OP_HEAD_OBJECT);
    b.id = 776;
    rb_build(&b, &w);
    rawn_send(&a, w.data, w.len);
    rdma_wire_free(&w);
    rawn_quiet(both, 2);
    assert_int_equal(a.n_rep, 0);
    if (own_worker) {
        assert_int_equal(loc.n_rep, 0);
    } else {
        assert_int_equal(loc.n_rep, 1);
        assert_int_equal(loc.rep[0].id, 776);
        rawn_forget(&loc);
    }
    /* With the local session's id: answered to the local session only. */
    rb_init(&b, &loc, RDMA_OP_HEAD_OBJECT);
    b.id = 778;
    rb_build(&b, &w);
    rawn_send_on(&a, e, w.data, w.len);
    rdma_wire_free(&w);
    const rrep_t *p = NULL;
    for (uint64_t until = clock_mono_ms() + WAIT_MS; !p && clock_mono_ms() < until;) {
        ucp_worker_progress(a.u.w);
        ucp_worker_progress(loc.u.w);
        p = rawn_find(&loc, 778);
    }
    assert_non_null(p);
    assert_int_equal(p->status, 200);
    rawn_quiet(both, 2);
    assert_int_equal(a.n_rep, 0);
    rawn_forget(&loc);

    ucp_request_param_t cp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                              .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t r = ucp_ep_close_nbx(e, &cp);
    if (UCS_PTR_IS_PTR(r)) {
        while (ucp_request_check_status(r) == UCS_INPROGRESS)
            ucp_worker_progress(a.u.w);
        ucp_request_free(r);
    }
    raw_assert_works(&loc);
    raw_assert_works(&a);
    assert_int_equal(rdma_server_session_count(srv), 2);
    rawn_close(&a);
    rawn_close(&loc);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* ==== 3. in-flight bounds ===================================================== */

static void test_per_session_limit(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 4, 0, 1);
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    rdma_session_t *s2 = open_session(srv, "AKIDONE", "secret-one");
    for (int round = 0; round < 2; round++) {
        gate_set(0);
        tcall_t blk[4], extra[2];
        for (int i = 0; i < 4; i++) {
            rdma_native_msg_t m;
            msg_init(&m, RDMA_OP_DELETE_OBJECT, "bkt", "blocked");
            submit(s, &m, &blk[i]);
        }
        assert_int_equal(wait_blocked(4), 4);
        /* The 5th (a blocking one, and a GET) on this session: SlowDown. */
        rdma_native_msg_t m;
        msg_init(&m, RDMA_OP_DELETE_OBJECT, "bkt", "fifth");
        do_call(s, &m, &extra[0]);
        char nb[32];
        get_call(s, "fifth-get", 10, 16384, NULL, &extra[1], nb);
        wait_reply(s, &extra[1]);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(extra[i].status, 503);
            assert_int_equal(extra[i].error, RDMA_ERR_BUSY);
            assert_non_null(extra[i].inl);
            assert_non_null(strstr((const char *)extra[i].inl, "SlowDown"));
            tcall_free(&extra[i]);
        }
        /* Another session is not limited by this one. */
        assert_session_works(s2);
        for (int i = 0; i < 4; i++)
            assert_false(rdma_native_finished(&blk[i].c));
        gate_set(1);
        for (int i = 0; i < 4; i++) {
            wait_reply(s, &blk[i]);
            assert_int_equal(blk[i].status, 204);
        }
        assert_int_equal(wait_blocked(0), 0);
        /* The count went back down. */
        assert_session_works(s);
    }
    rdma_session_close(s);
    rdma_session_close(s2);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* Waits up to 5 s for want held replies; takes them into out. */
static void take_held(unsigned want, rdma_native_held_t **out)
{
    uint64_t deadline = clock_mono_ms() + WAIT_MS;
    pthread_mutex_lock(&g_h.mu);
    while (g_h.n_held < want && clock_mono_ms() < deadline) {
        pthread_mutex_unlock(&g_h.mu);
        sleep_ms(2);
        pthread_mutex_lock(&g_h.mu);
    }
    unsigned n = g_h.n_held;
    memcpy(out, g_h.held, n * sizeof(*out));
    g_h.n_held = 0;
    pthread_mutex_unlock(&g_h.mu);
    assert_int_equal(n, want);
}

static void submit_held_put(rdma_session_t *s, tcall_t *t)
{
    rdma_native_msg_t m;
    msg_init(&m, RDMA_OP_PUT_OBJECT, "bkt", "held");
    msg_param(&m, RDMA_PARAM_QUERY, "hold", "1");
    submit(s, &m, t);
}

/* Replies held by the handler (rdma_native_reply_held: fsync mode's PUTs,
 * sent once durable) and sent later by another thread: the executor is free
 * at once; each held reply keeps its request's place in the session's bound
 * until it is sent; one can turn into a 500 InternalError
 * (rdma_native_held_fail); those of a session closed meanwhile are dropped,
 * and the server is well after. */
static void test_held_replies(void **state)
{
    (void)state;
    rdma_server_t *srv;
    g_threads = 1; /* one executor: a held reply must not keep it */
    NSERVER_OR_SKIP(srv, 4, 0, 1);
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    rdma_session_t *s2 = open_session(srv, "AKIDONE", "secret-one");
    tcall_t t[4];
    for (int i = 0; i < 4; i++)
        submit_held_put(s, &t[i]);
    rdma_native_held_t *held[4];
    take_held(4, held);
    assert_session_works(s2); /* the lone executor runs other requests */
    tcall_t extra;
    char nb[32];
    get_call(s, "fifth", 10, 16384, NULL, &extra, nb);
    wait_reply(s, &extra);
    assert_int_equal(extra.status, 503); /* the held replies fill the session's bound */
    tcall_free(&extra);
    for (int i = 0; i < 4; i++)
        assert_false(rdma_native_finished(&t[i].c));
    for (int i = 0; i < 3; i++)
        rdma_native_held_send(held[i]);
    rdma_native_held_fail(held[3], "The write was not made durable.");
    for (int i = 0; i < 4; i++) {
        wait_reply(s, &t[i]);
        assert_int_equal(t[i].status, i < 3 ? 200 : 500);
        if (i == 3) {
            assert_int_equal(t[i].error, RDMA_ERR_INTERNAL);
            assert_non_null(strstr((const char *)t[i].inl, "InternalError"));
        }
        tcall_free(&t[i]);
    }
    assert_session_works(s); /* the count went back down */
    /* The session closes while two replies are held. */
    for (int i = 0; i < 2; i++)
        submit_held_put(s, &t[i]);
    take_held(2, held);
    rdma_session_close(s);
    for (int i = 0; i < 2; i++)
        assert_int_equal(t[i].lost, 1);
    rdma_native_held_send(held[0]);
    rdma_native_held_fail(held[1], "late");
    assert_session_works(s2);
    rdma_session_close(s2);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

static void test_server_limit(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 4, 1);
    rdma_session_t *s[2] = {open_session(srv, "AKIDONE", "secret-one"),
                            open_session(srv, "AKIDTWO", "secret-two")};
    tcall_t blk[4], extra;
    for (int i = 0; i < 4; i++) {
        rdma_native_msg_t m;
        msg_init(&m, RDMA_OP_DELETE_OBJECT, "bkt", "blocked");
        submit(s[i % 2], &m, &blk[i]);
    }
    assert_int_equal(wait_blocked(4), 4);
    for (int i = 0; i < 2; i++) {
        char nb[32];
        get_call(s[i], "over", 10, 16384, NULL, &extra, nb);
        wait_reply(s[i], &extra);
        assert_int_equal(extra.status, 503);
        assert_int_equal(extra.error, RDMA_ERR_BUSY);
        tcall_free(&extra);
    }
    gate_set(1);
    for (int i = 0; i < 4; i++) {
        wait_reply(s[i % 2], &blk[i]);
        assert_int_equal(blk[i].status, 204);
    }
    assert_int_equal(wait_blocked(0), 0);
    assert_session_works(s[0]);
    assert_session_works(s[1]);
    rdma_session_close(s[0]);
    rdma_session_close(s[1]);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* ==== 4. sessions that go away with requests in the handler ================== */

static void test_close_with_requests_in_flight(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    unsigned base = rdma_server_session_resident(srv);
    for (int round = 0; round < 24; round++) {
        gate_set(0);
        if (round % 3 != 2) {
            /* The real client: close (lifeline and all) while 3 requests
             * are blocked; one of them later answers into its out region. */
            rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
            char err[128];
            uint8_t *mem = NULL;
            rdma_region_t *reg = NULL;
            assert_int_equal(rdma_region_alloc(s, MIB, (void **)&mem, &reg, err, sizeof(err)), 0);
            static tcall_t t[3];
            for (int i = 0; i < 3; i++) {
                rdma_native_msg_t m;
                msg_init(&m, RDMA_OP_DELETE_OBJECT, "bkt", "dying");
                m.reply_inline_max = 0;
                if (i == 0 || (round % 3 == 1 && i == 1)) {
                    msg_param(&m, RDMA_PARAM_QUERY, "n", i == 0 ? "300000" : "100");
                    m.has_out = 1;
                    assert_int_equal(rdma_region_ref(reg, mem, MIB, &m.out), 0);
                }
                submit(s, &m, &t[i]);
            }
            assert_int_equal(wait_blocked(3), 3);
            rdma_session_close(s);
            for (int i = 0; i < 3; i++) {
                assert_true(rdma_native_finished(&t[i].c));
                assert_int_equal(t[i].lost, 1);
                assert_int_equal(t[i].got, 0);
            }
        } else {
            /* A raw client drops its lifeline but keeps its worker up:
             * nothing may be answered once the session is gone. */
            static rawn_t rn;
            rawn_open(&rn, srv, round % 2);
            for (int i = 0; i < 3; i++) {
                rb_t b;
                rb_init(&b, &rn, RDMA_OP_DELETE_OBJECT);
                b.id = 100 + (uint64_t)i;
                wire_out_t w;
                rb_build(&b, &w);
                rawn_send(&rn, w.data, w.len);
                rdma_wire_free(&w);
            }
            assert_int_equal(wait_blocked(3), 3);
            close(rn.fd);
            rn.fd = -1;
            assert_int_equal(test_wait_count(srv, 0), 0);
            gate_set(1);
            assert_int_equal(wait_blocked(0), 0);
            rawn_t *one[] = {&rn};
            rawn_quiet(one, 1);
            assert_int_equal(rn.n_rep, 0);
            rawn_close(&rn);
        }
        assert_int_equal(test_wait_count(srv, 0), 0);
        /* The blocked handlers hold the session until they return. */
        if (round % 3 != 2)
            assert_true(rdma_server_session_resident(srv) > base);
        gate_set(1);
        assert_int_equal(wait_blocked(0), 0);
        unsigned res = wait_resident(srv, base);
        if (res != base)
            fail_msg("round %d: %u sessions resident, %u before", round, res, base);
    }
    /* Healthy afterwards. */
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    assert_session_works(s);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, base), base);
}

/* Issue 17 item 8: requests queued for an executor when their session dies
 * are dropped without running, and what parsing them made is freed (the
 * ASan pass catches a leak: the parsed strings used to be freed only when
 * the session was alive). Every executor is held at the gate by another
 * session's requests while the dying session's PUTs (params and an inline
 * body) wait in the queue. */
static void test_queued_requests_of_dead_session(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    enum { EXECUTORS = 12, QUEUED = 3 };
    static rawn_t hold, dying;
    rawn_open(&hold, srv, 0);
    rawn_open(&dying, srv, 1);
    for (int i = 0; i < EXECUTORS; i++) {
        rb_t b;
        rb_init(&b, &hold, RDMA_OP_DELETE_OBJECT);
        b.id = 500 + (uint64_t)i;
        wire_out_t w;
        rb_build(&b, &w);
        rawn_send(&hold, w.data, w.len);
        rdma_wire_free(&w);
    }
    assert_int_equal(wait_blocked(EXECUTORS), EXECUTORS);
    unsigned puts0 = atomic_load(&g_h.calls[RDMA_OP_PUT_OBJECT]);
    static const uint8_t body[] = "queued while every executor is busy";
    for (int i = 0; i < QUEUED; i++) {
        rb_t b;
        rb_init(&b, &dying, RDMA_OP_PUT_OBJECT);
        b.id = 600 + (uint64_t)i;
        rb_param(&b, RDMA_PARAM_HEADER, "x-amz-meta-a", "one value");
        rb_param(&b, RDMA_PARAM_QUERY, "versionId", "another value");
        b.body_kind = RDMA_BODY_INLINE;
        b.body = body;
        b.body_len_field = sizeof(body);
        b.body_present = sizeof(body);
        wire_out_t w;
        rb_build(&b, &w);
        rawn_send(&dying, w.data, w.len);
        rdma_wire_free(&w);
    }
    /* Admitted and queued: the server counts them in flight. */
    rdma_server_stats_t st;
    for (int i = 0; i < 500; i++) {
        rdma_server_get_stats(srv, &st);
        if (st.native_inflight == EXECUTORS + QUEUED)
            break;
        sleep_ms(10);
    }
    assert_int_equal(st.native_inflight, EXECUTORS + QUEUED);
    close(dying.fd);
    dying.fd = -1;
    assert_int_equal(test_wait_count(srv, 1), 1);
    gate_set(1);
    assert_int_equal(wait_blocked(0), 0);
    for (int i = 0; i < 500; i++) {
        rdma_server_get_stats(srv, &st);
        if (st.native_inflight == 0)
            break;
        sleep_ms(10);
    }
    assert_int_equal(st.native_inflight, 0);
    /* The dying session's requests never reached the handler. */
    assert_int_equal(atomic_load(&g_h.calls[RDMA_OP_PUT_OBJECT]), puts0);
    rawn_t *one[] = {&dying};
    rawn_quiet(one, 1);
    assert_int_equal(dying.n_rep, 0);
    rawn_close(&dying);
    rawn_close(&hold);
    assert_int_equal(test_wait_count(srv, 0), 0);
    assert_int_equal(wait_resident(srv, 0), 0);
}

/* ==== 4b. a client that never reads its replies ============================== */

/* Sends len bytes of msg as one eager native request on rn's endpoint
 * without ever progressing rn's worker: a send UCX could not finish at once
 * stays outstanding (its message kept alive in keep[]) until the test ends. */
typedef struct unread {
    uint8_t *msgs[4096];
    ucs_status_ptr_t reqs[4096];
    unsigned n;
} unread_t;

static void unread_send(ucp_ep_h ep, unread_t *u, const wire_out_t *w)
{
    assert_true(u->n < sizeof(u->msgs) / sizeof(u->msgs[0]));
    uint8_t *msg = malloc(w->len);
    assert_non_null(msg);
    memcpy(msg, w->data, w->len);
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_AM_SEND_FLAG_EAGER};
    ucs_status_ptr_t r = ucp_am_send_nbx(ep, RDMA_AM_NATIVE_REQ, NULL, 0, msg, w->len, &p);
    assert_false(UCS_PTR_IS_ERR(r));
    u->msgs[u->n] = msg;
    u->reqs[u->n] = r;
    u->n++;
}

/* Finishes the sends (progressing the client at last) and frees their
 * messages. */
static void unread_finish(raw_ucx_t *c, unread_t *u)
{
    for (unsigned i = 0; i < u->n; i++) {
        if (u->reqs[i]) {
            uint64_t deadline = clock_mono_ms() + WAIT_MS;
            while (ucp_request_check_status(u->reqs[i]) == UCS_INPROGRESS &&
                   clock_mono_ms() < deadline)
                ucp_worker_progress(c->w);
            ucp_request_free(u->reqs[i]);
        }
        free(u->msgs[i]);
    }
    u->n = 0;
}

/* The peaks of the server's native counters; returns the requests in
 * flight now. */
typedef struct unread_peak {
    unsigned inflight;
    size_t bytes;
} unread_peak_t;

static unsigned unread_sample(rdma_server_t *srv, unread_peak_t *pk)
{
    rdma_server_stats_t st;
    rdma_server_get_stats(srv, &st);
    if (st.native_inflight > pk->inflight)
        pk->inflight = st.native_inflight;
    if (st.native_sending_bytes > pk->bytes)
        pk->bytes = st.native_sending_bytes;
    return st.native_inflight;
}

/* Issue 17 item 6: a client that submits requests and never progresses its
 * worker. Each GET answers 60 KB inline; the replies UCX still holds for
 * the session (it cannot deliver them) may not pass the per-session bound
 * of 4 requests (plus the refusal budget). Before, a request was counted
 * out before its reply was sent, so the session's slots were free again
 * while its replies waited in the server's memory: over shared memory 16
 * replies (960 KB) piled up before the client's own sends stalled, and a
 * transport that keeps taking requests would pile up without end. Over
 * TCP (a net session: the kernel's socket buffers take the replies) and
 * shared memory (a local session over the Unix socket). */
static void test_unread_replies_bounded(void **state)
{
    (void)state;
    rdma_server_t *srv;
    enum { PER_SESSION = 4, N = 400, BODY = 60000 };
    NSERVER_OR_SKIP(srv, PER_SESSION, 0, 1);
    static rawn_t rn;
    static unread_t u;
    const size_t reply_max = BODY + 1024; /* the body and the reply's head */
    for (int over_unix = 0; over_unix < 2; over_unix++) {
        rawn_open(&rn, srv, over_unix);
        rdma_server_stats_t st0;
        rdma_server_get_stats(srv, &st0);
        rb_t b;
        rb_init(&b, &rn, RDMA_OP_GET_OBJECT);
        b.inline_max = 65536;
        char n_s[16];
        snprintf(n_s, sizeof(n_s), "%d", BODY);
        rb_param(&b, RDMA_PARAM_QUERY, "n", n_s);
        unread_peak_t pk = {0};
        unsigned calls0 = handler_total();
        /* Pairs, each sent once a slot is free, so
         * the server keeps answering until the client's side of the
         * transport is full and replies stay with UCX; once the slots stay
         * taken (three times 200 ms in a row: the progress thread wakes at
         * least every 100 ms), the rest goes at once and is refused. */
        unsigned stuck = 0;
        for (int i = 0; i < N;) {
            for (int k = 0; k < 2 && i < N; k++, i++) {
                b.id = 1 + (uint64_t)i;
                wire_out_t w;
                rb_build(&b, &w);
                unread_send(rn.ep, &u, &w);
                rdma_wire_free(&w);
            }
            if (stuck < 3) {
                uint64_t until = clock_mono_ms() + 200;
                while (unread_sample(srv, &pk) >= PER_SESSION && clock_mono_ms() < until)
                    sleep_ms(1);
                stuck = unread_sample(srv, &pk) >= PER_SESSION ? stuck + 1 : 0;
            }
            unread_sample(srv, &pk);
        }
        /* Until the handler has been idle a while: the server answers no
         * more. */
        unsigned calls = handler_total();
        for (uint64_t quiet_since = clock_mono_ms(); clock_mono_ms() - quiet_since < QUIET_MS;) {
            sleep_ms(2);
            unread_sample(srv, &pk);
            if (handler_total() != calls) {
                calls = handler_total();
                quiet_since = clock_mono_ms();
            }
        }
        unsigned peak_inflight = pk.inflight;
        size_t peak_bytes = pk.bytes;
        rdma_server_stats_t st;
        rdma_server_get_stats(srv, &st);
        print_message("unread (%s): %u handler calls, peak %u in flight, peak %zu bytes "
                      "unsent, %lu dropped; at the end %u in flight, %u sending (%zu bytes)\n",
                      over_unix ? "unix/shm" : "tcp", calls - calls0, peak_inflight, peak_bytes,
                      st.native_dropped - st0.native_dropped, st.native_inflight, st.native_sending,
                      st.native_sending_bytes);
        /* Requests in flight: the session's bound (one more while a reply
         * passes from its request to UCX). */
        assert_true(peak_inflight <= PER_SESSION + 1);
        /* Every reply UCX still holds keeps its request's slot (what is
         * unsent beyond the slots' replies is refusals). */
        assert_true(st.native_sending_bytes <=
                    st.native_inflight * reply_max + S3R_NATIVE_UNSENT_REFUSAL_BYTES);
        /* Unsent bytes: PER_SESSION replies and the refusal budget. */
        assert_true(peak_bytes <= (PER_SESSION + 1) * reply_max + S3R_NATIVE_UNSENT_REFUSAL_BYTES);

        /* Closing gives everything back. */
        unread_finish(&rn.u, &u);
        rawn_close(&rn);
        assert_int_equal(test_wait_count(srv, 0), 0);
        assert_int_equal(wait_resident(srv, 0), 0);
        rdma_server_get_stats(srv, &st);
        assert_int_equal(st.native_inflight, 0);
        assert_int_equal(st.native_sending, 0);
        assert_int_equal(st.native_sending_bytes, 0);
    }
}

/* ==== 4c. a frozen tenant's share of the executors ============================ */

/* Issue 17 item 5: tenant A's client stops serving its RDMA (a raw client
 * over TCP that never progresses once its requests are out) with as many
 * region-body PUTs as there are executor threads: A's handlers, stalled
 * in the body's RDMA reads, hold at most A's share of the threads (2 of 4),
 * so tenant B's PUT runs meanwhile and is answered 200; A's reads fail
 * after the stall deadline and everything comes back once A is gone. */
/* Submits a PUT of the n bytes at b, inline, under key. */
static void put_inline(rdma_session_t *s, const char *key, const uint8_t *b, size_t n, tcall_t *t)
{
    rdma_native_msg_t m;
    msg_init(&m, RDMA_OP_PUT_OBJECT, "bkt", key);
    m.body_kind = RDMA_BODY_INLINE;
    m.body = b;
    m.body_len = n;
    submit(s, &m, t);
}

static pthread_t put_thread(void)
{
    pthread_mutex_lock(&g_h.mu);
    pthread_t t = g_h.put_thread;
    pthread_mutex_unlock(&g_h.mu);
    return t;
}

/* cfg.local_put_max (relaxed durability): a PUT whose inline body is at
 * most that long runs on the session's progress thread, so it is answered
 * while the only executor thread is held; a longer one runs on that
 * executor once it is free. */
static void test_small_put_on_progress_thread(void **state)
{
    (void)state;
    rdma_server_t *srv;
    g_threads = 1;
    g_local_put_max = 1024;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    rdma_native_msg_t m;
    msg_init(&m, RDMA_OP_DELETE_OBJECT, "bkt", "held");
    tcall_t held;
    submit(s, &m, &held);
    assert_int_equal(wait_blocked(1), 1);
    pthread_mutex_lock(&g_h.mu);
    pthread_t executor = g_h.delete_thread;
    pthread_mutex_unlock(&g_h.mu);
    static uint8_t body[1025];
    memset(body, 'p', sizeof(body));
    tcall_t t;
    put_inline(s, "small", body, 1024, &t);
    wait_reply(s, &t);
    assert_int_equal(t.status, 200);
    assert_int_equal(tc_hdr_u64(&t, "x-test-len"), 1024);
    assert_false(pthread_equal(put_thread(), executor));
    tcall_free(&t);
    put_inline(s, "larger", body, 1025, &t);
    gate_set(1);
    wait_reply(s, &held);
    assert_int_equal(held.status, 204);
    tcall_free(&held);
    wait_reply(s, &t);
    assert_int_equal(t.status, 200);
    assert_int_equal(tc_hdr_u64(&t, "x-test-len"), 1025);
    assert_true(pthread_equal(put_thread(), executor));
    tcall_free(&t);
    assert_session_works(s);
    rdma_session_close(s);
}

static void test_frozen_tenant_executor_share(void **state)
{
    (void)state;
    rdma_server_t *srv;
    g_threads = 4;
    g_user_share = 50;
    g_stall_ms = 1000;
    NSERVER_OR_SKIP(srv, 0, 0, 1);
    enum { FROZEN_PUTS = 8 };
    atomic_store(&g_h.put_running_max[0], 0);
    atomic_store(&g_h.put_running_max[1], 0);
    static rawn_t a;
    rawn_open(&a, srv, 0);
    raw_mem_t mem;
    raw_mem_alloc(&a.u, MIB, &mem);
    send_region_add(a.fd, 1, (uint64_t)(uintptr_t)mem.p, MIB, mem.rkey, mem.rkey_len);
    assert_int_equal(raw_recv(a.fd, NULL, NULL), RDMA_MSG_REGION_OK);
    raw_settle(&a.u);
    rdma_session_t *b = open_session(srv, "AKIDTWO", "secret-two");
    unsigned puts0 = atomic_load(&g_h.calls[RDMA_OP_PUT_OBJECT]);
    /* A's PUTs, sent without progressing A's worker from here on. */
    static unread_t u;
    for (int i = 0; i < FROZEN_PUTS; i++) {
        rb_t rb;
        rb_init(&rb, &a, RDMA_OP_PUT_OBJECT);
        rb.id = 700 + (uint64_t)i;
        rb.body_kind = RDMA_BODY_REGION;
        rb.body_ref.region_id = 1;
        rb.body_ref.addr = (uint64_t)(uintptr_t)mem.p;
        rb.body_ref.len = MIB;
        wire_out_t w;
        rb_build(&rb, &w);
        unread_send(a.ep, &u, &w);
        rdma_wire_free(&w);
    }
    /* A's share of the threads is busy with A's stalled reads. */
    for (int i = 0; i < 500 && atomic_load(&g_h.put_running[0]) < 2; i++)
        sleep_ms(2);
    assert_int_equal(atomic_load(&g_h.put_running[0]), 2);
    /* B's PUT runs on a thread A's share left free. */
    static const uint8_t body[] = "tenant B's object";
    rdma_native_msg_t m;
    msg_init(&m, RDMA_OP_PUT_OBJECT, "bkt", "b-key");
    m.body_kind = RDMA_BODY_INLINE;
    m.body = body;
    m.body_len = sizeof(body);
    tcall_t t;
    do_call(b, &m, &t);
    assert_int_equal(t.status, 200);
    assert_int_equal(tc_hdr_u64(&t, "x-test-len"), sizeof(body));
    tcall_free(&t);
    /* A's PUTs that got through before A's own sends stalled (a frozen
     * client's UCX stops sending too: at least 4 here) ran at most 2 at a
     * time, and failed their body reads. */
    for (int i = 0; i < 500 && atomic_load(&g_h.put_running[0]) > 0; i++)
        sleep_ms(10);
    assert_int_equal(atomic_load(&g_h.put_running[0]), 0);
    assert_true(atomic_load(&g_h.calls[RDMA_OP_PUT_OBJECT]) - puts0 - 1 >= 3);
    assert_int_equal(atomic_load(&g_h.put_running_max[0]), 2);
    assert_int_equal(atomic_load(&g_h.last_body_rc) == RDMA_TRANSPORT ||
                         atomic_load(&g_h.last_body_rc) == RDMA_BUSY,
                     1);
    rdma_server_stats_t st;
    rdma_server_get_stats(srv, &st);
    assert_true(st.transfers_stalled >= 1);
    assert_int_equal(st.transfers_inflight, 0);
    /* A goes away: its replies, slots and chunks come back. */
    unread_finish(&a.u, &u);
    raw_mem_free(&a.u, &mem);
    rawn_close(&a);
    assert_int_equal(test_wait_count(srv, 1), 1);
    assert_int_equal(wait_resident(srv, 1), 1);
    rdma_server_get_stats(srv, &st);
    assert_int_equal(st.native_inflight, 0);
    assert_int_equal(st.native_sending, 0);
    assert_int_equal(st.staging_busy, 0);
    assert_int_equal(st.staging_quarantined, 0);
    assert_session_works(b);
    rdma_session_close(b);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

/* ==== 5. no handler =========================================================== */

static void test_no_handler(void **state)
{
    (void)state;
    rdma_server_t *srv;
    NSERVER_OR_SKIP(srv, 0, 0, 0);
    rdma_session_t *s = open_session(srv, "AKIDONE", "secret-one");
    unsigned calls0 = handler_total();
    const uint8_t ops[] = {RDMA_OP_GET_OBJECT, RDMA_OP_PUT_OBJECT, RDMA_OP_LIST_BUCKETS};
    for (int phase = 0; phase < 3; phase++) {
        /* Phase 0: never set; 1: set (works); 2: set back to NULL. */
        if (phase == 1)
            rdma_server_set_native(srv, test_handler, &g_h);
        if (phase == 2)
            rdma_server_set_native(srv, NULL, NULL);
        for (size_t i = 0; i < sizeof(ops); i++) {
            rdma_native_msg_t m;
            msg_init(&m, ops[i], ops[i] == RDMA_OP_LIST_BUCKETS ? "" : "bkt",
                     ops[i] == RDMA_OP_LIST_BUCKETS ? "" : "k");
            tcall_t t;
            do_call(s, &m, &t);
            if (phase == 1) {
                assert_int_equal(t.status, 200);
            } else {
                assert_int_equal(t.status, 503);
                assert_int_equal(t.error, 0);
                assert_non_null(t.inl);
                assert_non_null(strstr((const char *)t.inl, "ServiceUnavailable"));
            }
            tcall_free(&t);
        }
    }
    assert_int_equal(handler_total(), calls0 + 3);
    /* Malformed requests are still told so without a handler. */
    static rawn_t rn;
    rawn_open(&rn, srv, 0);
    rb_t b;
    rb_init(&b, &rn, RDMA_OP_HEAD_OBJECT);
    b.flags = 2;
    expect_bad(&rn, &b, SIZE_MAX, "flags, no handler");
    rawn_close(&rn);
    /* A handler blocked while the handler is unset: set_native(NULL) waits
     * for it; requests after it get 503. */
    rdma_server_set_native(srv, test_handler, &g_h);
    gate_set(0);
    rdma_native_msg_t m;
    msg_init(&m, RDMA_OP_DELETE_OBJECT, "bkt", "k");
    tcall_t blk;
    submit(s, &m, &blk);
    assert_int_equal(wait_blocked(1), 1);
    gate_set(1);
    rdma_server_set_native(srv, NULL, NULL);
    wait_reply(s, &blk);
    assert_int_equal(blk.status, 204);
    char nb[32];
    get_call(s, "after", 10, 16384, NULL, &blk, nb);
    wait_reply(s, &blk);
    assert_int_equal(blk.status, 503);
    tcall_free(&blk);
    rdma_session_close(s);
    assert_int_equal(test_wait_count(srv, 0), 0);
}

int main(void)
{
    log_set_level(LOG_LVL_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trips, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_allocates_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_in_flight_out_of_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_any, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_dropped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_burst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_other_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_raw_local_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_session_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_replies, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_requests_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_requests_of_dead_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unread_replies_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_frozen_tenant_executor_share, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_put_on_progress_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_handler, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
