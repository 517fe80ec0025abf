/* The native protocol against a live server (docs/protocol.md §4): on the
 * first input this process starts what s3rdmad composes (a store in a temp
 * directory, the S3 server without HTTP listeners, the RDMA server on a
 * free port with rdmafe_native_handle as its native handler) and opens an
 * authenticated client session with a 1 MiB registered region for each of
 * two users (tenants: the second sends the requests whose op byte has 0x80
 * set, at the same buckets and keys, so at the first one's too). Each input
 * is a sequence of up to MAX_REQS native requests sent on that session and
 * answered by the real S3 operation handlers, so state builds up: buckets
 * and keys come from small pools (FUZZ_BUCKETS, FUZZ_KEYS), upload ids and
 * part ETags from earlier replies, param names from a dictionary of the
 * names the server reads, with dictionary or fuzzed values. Each request
 * also picks its reply_inline_max (0, 1, small, normal, huge), its body
 * (none, inline, a region span: valid, large, past the region, in an
 * unknown region, or Complete/Delete XML built from the state) and its out
 * span (none, valid, too small, past the region, unknown region), and may be
 * sent as raw mutated bytes (the encoded message with bytes changed,
 * truncated or extended; magic, request id and session id kept so the
 * server can answer), or left in flight while the next ones go.
 *
 * Invariants (abort on failure: libFuzzer keeps the input):
 *   - every request gets its reply within REPLY_TIMEOUT_MS and the session
 *     stays up;
 *   - a reply's status is an HTTP status; a protocol error comes with a 4xx
 *     or 5xx; an error reply to anything but a HEAD names an S3 error code;
 *   - a body written into the out region was asked for (an out span was
 *     given) and fits it, and nothing is written outside [span, span+body).
 * A crash or sanitizer report in the server's threads fails the same way.
 * Uploads an input opens are aborted at its end, so state stays bounded.
 *
 * Raw messages: the client layer encodes only what the parser accepts, so
 * this target is linked with -Wl,--wrap=rdma_native_encode_req (see
 * CMakeLists.txt): while `raw` is armed the wrapper rewrites the encoded
 * message before rdma_native_submit sends it. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "fuzz_util.h"
#include "rdma/rdma_client.h"
#include "rdma/rdma_server.h"
#include "http/http_server.h"
#include "rdmafe/rdmafe.h"
#include "s3/s3_server.h"
#include "storage/storage.h"

#define MAX_REQS         16
#define MAX_INFLIGHT     8
#define REPLY_TIMEOUT_MS 5000
#define RIM_NORMAL       16384
#define REGION_LEN       (1024 * 1024)
#define BODY_AREA        (512 * 1024) /* [0, BODY_AREA): request bodies */
#define GUARD            4096
#define OUT_OFF          (BODY_AREA + GUARD) /* the out area, guards on both sides */
#define OUT_LEN          (256 * 1024)
#define N_TENANTS        2
#define GUARD_BYTE       0xA5

/* ==== the server and the session (started once) ============================= */

static char tmpdir[64];
static stor_t *store;
static s3_server_t *s3srv;
static rdma_server_t *rdma;
/* Two users, each with a session and a registered region: tenant 0 sends
 * most requests, tenant 1 those whose op byte has 0x80 set, against the
 * same bucket and key pools (so against the other's objects too). */
static s3_user_t users[N_TENANTS] = {{"AKFUZZONE", "fuzz-secret-one-one", NULL, NULL},
                                     {"AKFUZZTWO", "fuzz-secret-two-two", NULL, NULL}};
static struct tenant {
    rdma_session_t *sess;
    rdma_region_t *region;
    uint8_t *mem;
} tenants[N_TENANTS];
/* The tenant of the request being built. */
static rdma_session_t *sess;
static rdma_region_t *region;
static uint8_t *mem;

static void use_tenant(unsigned t)
{
    sess = tenants[t].sess;
    region = tenants[t].region;
    mem = tenants[t].mem;
}
static bool verbose; /* S3R_FUZZ_VERBOSE=1: each reply's status and body on stderr */

static int lookup_secret(void *ctx, const char *ak, char *secret, size_t max)
{
    (void)ctx;
    for (unsigned t = 0; t < N_TENANTS; t++) {
        if (strcmp(ak, users[t].access_key) == 0) {
            snprintf(secret, max, "%s", users[t].secret_key);
            return 0;
        }
    }
    return -1;
}

/* The store lives in /tmp/s3r-fuzz-native.<pid>.XXXXXX. A run that ends
 * normally removes its own (stop_all); one that crashed cannot, so each
 * start removes those whose process is gone. */
static void remove_dir(const char *path)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", path);
}

static void sweep_stale_dirs(void)
{
    DIR *d = opendir("/tmp");
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        int pid;
        char path[300];
        if (sscanf(e->d_name, "s3r-fuzz-native.%d.", &pid) == 1 && pid > 0 && kill(pid, 0) < 0 &&
            errno == ESRCH) {
            snprintf(path, sizeof(path), "/tmp/%s", e->d_name);
            remove_dir(path);
        }
    }
    closedir(d);
}

static void stop_all(void)
{
    for (unsigned t = 0; t < N_TENANTS; t++)
        rdma_session_close(tenants[t].sess);
    rdma_server_set_native(rdma, NULL, NULL);
    http_server_stop(s3srv, 1);
    rdma_server_stop(rdma);
    stor_close(store);
    remove_dir(tmpdir);
}

static void start_all(void)
{
    log_set_level(LOG_LVL_ERROR);
    verbose = getenv("S3R_FUZZ_VERBOSE") != NULL;
    sweep_stale_dirs();
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/s3r-fuzz-native.%d.XXXXXX", (int)getpid());
    FUZZ_CHECK(mkdtemp(tmpdir) != NULL);
    FUZZ_CHECK(stor_open(tmpdir, STOR_DURABILITY_RELAXED, &store) == STOR_OK);
    rdma_server_config_t rc;
    rdma_server_config_defaults(&rc);
    rc.listen_host = "127.0.0.1";
    rc.port = 0;
    rc.n_workers = 1;
    /* A session of the server's own uid on a Unix socket of this process:
     * trusted, its own worker, every transport (UCX_TLS narrows them). */
    static char sock[64];
    snprintf(sock, sizeof(sock), "@s3r-fuzz-native.%d", (int)getpid());
    rc.unix_socket = sock;
    rc.staging_bytes = 4u << 20;
    rc.chunk_bytes = 64u << 10; /* several chunks per large body */
    rc.native_threads = 2;
    rc.lookup_secret = lookup_secret;
    FUZZ_CHECK(rdma_server_start(&rc, &rdma) == 0);
    static s3_token_mover_t token_mover;
    rdmafe_token_mover_init(&token_mover, rdma);
    s3_server_config_t sc = {
        .http_off = true,
        .region = "us-east-1",
        .users = users,
        .n_users = N_TENANTS,
        .store = store,
        .token_mover = &token_mover,
        .max_buckets_per_user = 64, /* also bounds what fuzzed names create */
    };
    s3srv = http_server_start(&sc);
    FUZZ_CHECK(s3srv != NULL);
    rdma_server_set_native(rdma, rdmafe_native_handle, s3srv);
    s3_server_set_ready(s3srv, true);
    for (unsigned t = 0; t < N_TENANTS; t++) {
        struct tenant *tn = &tenants[t];
        rdma_client_config_t cc = {.host = "127.0.0.1",
                                   .port = rdma_server_port(rdma),
                                   .socket = sock,
                                   .access_key = users[t].access_key,
                                   .secret_key = users[t].secret_key,
                                   .timeout_ms = 10000};
        char err[256];
        void *addr;
        if (rdma_session_open(&cc, &tn->sess, err, sizeof(err)) < 0 ||
            rdma_region_alloc(tn->sess, REGION_LEN, &addr, &tn->region, err, sizeof(err)) < 0) {
            fprintf(stderr, "fuzz: %s\n", err);
            abort();
        }
        tn->mem = addr;
    }
    use_tenant(0);
    atexit(stop_all);
}

/* LeakSanitizer cannot follow UCX's own bookkeeping (its allocations are
 * reported as lost with no caller past libucs/libuct); this target looks
 * for leaks of the server's own memory. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libucs.so\nleak:libuct.so\nleak:libucp.so\n";
}

/* ==== raw messages: the encoder wrapper ======================================= */

int __real_rdma_native_encode_req(wire_out_t *w, const rdma_native_msg_t *m);

/* Armed for one submit: how to rewrite the encoded message. */
static struct raw {
    bool armed;
    int version, opcode, flags; /* the head's bytes 4, 5 and 6, or -1: as encoded */
    unsigned n_muts;
    struct {
        uint16_t off;
        uint8_t val;
    } muts[8];
    int resize; /* bytes to cut (< 0) or append (> 0) */
} raw;

/* Tells the request in the making what the server will read of the
 * rewritten message msg (its opcode, its out span). */
static void raw_sent(const uint8_t *msg, size_t len);

int __wrap_rdma_native_encode_req(wire_out_t *w, const rdma_native_msg_t *m)
{
    int rc = __real_rdma_native_encode_req(w, m);
    if (rc != 0 || !raw.armed)
        return rc;
    size_t len = w->len;
    if (raw.resize < 0)
        len = (size_t)-raw.resize < len - RDMA_NATIVE_FIXED ? len + (size_t)raw.resize
                                                            : RDMA_NATIVE_FIXED;
    else
        len += (size_t)raw.resize;
    if (len > RDMA_NATIVE_MAX_MSG)
        len = RDMA_NATIVE_MAX_MSG;
    uint8_t *d = realloc(w->data, len);
    FUZZ_CHECK(d != NULL);
    for (size_t i = w->len; i < len; i++)
        d[i] = (uint8_t)(i * 7);
    for (unsigned i = 0; i < raw.n_muts; i++)
        d[raw.muts[i].off % len] = raw.muts[i].val;
    /* The head the server answers by stays (magic, request id, session id:
     * bytes 0-3 and 8-31); version, opcode and flags may change. */
    for (int i = 0; i < 4; i++)
        d[i] = (uint8_t)(RDMA_NATIVE_MAGIC >> (24 - 8 * i));
    for (int i = 0; i < 8; i++)
        d[8 + i] = (uint8_t)(m->head.request_id >> (56 - 8 * i));
    memcpy(d + 16, m->head.session_id, RDMA_SESSION_ID_LEN);
    if (raw.version >= 0)
        d[4] = (uint8_t)raw.version;
    if (raw.opcode >= 0)
        d[5] = (uint8_t)raw.opcode;
    if (raw.flags >= 0)
        d[6] = (uint8_t)raw.flags;
    raw_sent(d, len);
    w->data = d;
    w->len = len;
    w->cap = len;
    return 0;
}

/* ==== what the requests name ================================================== */

static const char *const buckets[] = {"fz-b0", "fz-b1", "fz-b2"};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))
static char long_key[1025];
static const char *keys[] = {"k0", "k1", "dir/k2", "dir/sub/../k3", "k4 \xc3\xbc%", long_key};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

/* The params the S3 handlers read, with the kind HTTP gives them. */
static const struct pname {
    const char *name;
    uint8_t kind;
} pnames[] = {
    {"x-amz-copy-source", RDMA_PARAM_HEADER},
    {"uploadId", RDMA_PARAM_QUERY},
    {"partNumber", RDMA_PARAM_QUERY},
    {"range", RDMA_PARAM_HEADER},
    {"x-amz-copy-source-range", RDMA_PARAM_HEADER},
    {"if-match", RDMA_PARAM_HEADER},
    {"if-none-match", RDMA_PARAM_HEADER},
    {"if-modified-since", RDMA_PARAM_HEADER},
    {"if-unmodified-since", RDMA_PARAM_HEADER},
    {"x-amz-copy-source-if-match", RDMA_PARAM_HEADER},
    {"x-amz-copy-source-if-none-match", RDMA_PARAM_HEADER},
    {"x-amz-copy-source-if-modified-since", RDMA_PARAM_HEADER},
    {"x-amz-metadata-directive", RDMA_PARAM_HEADER},
    {"content-type", RDMA_PARAM_HEADER},
    {"content-md5", RDMA_PARAM_HEADER},
    {"content-encoding", RDMA_PARAM_HEADER},
    {"content-disposition", RDMA_PARAM_HEADER},
    {"cache-control", RDMA_PARAM_HEADER},
    {"expires", RDMA_PARAM_HEADER},
    {"x-amz-meta-a", RDMA_PARAM_HEADER},
    {"x-amz-meta-b", RDMA_PARAM_HEADER},
    {"x-amz-checksum-crc32", RDMA_PARAM_HEADER},
    {"x-amz-checksum-crc32c", RDMA_PARAM_HEADER},
    {"x-amz-checksum-sha256", RDMA_PARAM_HEADER},
    {"x-amz-sdk-checksum-algorithm", RDMA_PARAM_HEADER},
    {"x-amz-checksum-algorithm", RDMA_PARAM_HEADER},
    {"x-amz-checksum-mode", RDMA_PARAM_HEADER},
    {"x-amz-acl", RDMA_PARAM_HEADER},
    {"x-amz-tagging", RDMA_PARAM_HEADER},
    {"x-amz-storage-class", RDMA_PARAM_HEADER},
    {"x-amz-expected-bucket-owner", RDMA_PARAM_HEADER},
    {"x-amz-rdma-token", RDMA_PARAM_HEADER},
    {"content-length", RDMA_PARAM_HEADER},
    {"x-amz-content-sha256", RDMA_PARAM_HEADER},
    {"x-amz-decoded-content-length", RDMA_PARAM_HEADER},
    {"prefix", RDMA_PARAM_QUERY},
    {"delimiter", RDMA_PARAM_QUERY},
    {"max-keys", RDMA_PARAM_QUERY},
    {"marker", RDMA_PARAM_QUERY},
    {"continuation-token", RDMA_PARAM_QUERY},
    {"start-after", RDMA_PARAM_QUERY},
    {"list-type", RDMA_PARAM_QUERY},
    {"encoding-type", RDMA_PARAM_QUERY},
    {"fetch-owner", RDMA_PARAM_QUERY},
    {"max-parts", RDMA_PARAM_QUERY},
    {"part-number-marker", RDMA_PARAM_QUERY},
    {"max-uploads", RDMA_PARAM_QUERY},
    {"key-marker", RDMA_PARAM_QUERY},
    {"upload-id-marker", RDMA_PARAM_QUERY},
    {"uploads", RDMA_PARAM_QUERY},
    {"versionId", RDMA_PARAM_QUERY},
    {"response-content-type", RDMA_PARAM_QUERY},
    {"response-cache-control", RDMA_PARAM_QUERY},
    {"acl", RDMA_PARAM_QUERY},
    {"tagging", RDMA_PARAM_QUERY},
    {"location", RDMA_PARAM_QUERY},
    {"x-amz-bucket-object-lock-enabled", RDMA_PARAM_HEADER},
    {"x-amz-object-lock-mode", RDMA_PARAM_HEADER},
    {"x-amz-object-lock-retain-until-date", RDMA_PARAM_HEADER},
    {"x-amz-object-lock-legal-hold", RDMA_PARAM_HEADER},
    {"x-amz-bypass-governance-retention", RDMA_PARAM_HEADER},
    /* The configuration opcodes' subresources (the ones above too). */
    {"retention", RDMA_PARAM_QUERY},
    {"legal-hold", RDMA_PARAM_QUERY},
    {"versioning", RDMA_PARAM_QUERY},
    {"lifecycle", RDMA_PARAM_QUERY},
    {"object-lock", RDMA_PARAM_QUERY},
    {"policy", RDMA_PARAM_QUERY},
    {"cors", RDMA_PARAM_QUERY},
    {"encryption", RDMA_PARAM_QUERY},
    {"x-amz-grant-read", RDMA_PARAM_HEADER},
    {"x-amz-grant-full-control", RDMA_PARAM_HEADER},
};
#define N_PNAMES (sizeof(pnames) / sizeof(pnames[0]))

static char long_value[RDMA_NATIVE_MAX_VALUE + 1];
static const char *const pvalues[] = {
    "",
    "0",
    "1",
    "2",
    "-1",
    "10000",
    "10001",
    "99999999999999999999",
    "bytes=0-0",
    "bytes=0-99",
    "bytes=5-",
    "bytes=-3",
    "bytes=9999999-",
    "bytes=3-1",
    "/fz-b0/k0",
    "fz-b0/k1",
    "/fz-b1/dir/k2",
    "/fz-b0/k0?versionId=null",
    "/fz-b0/k0?versionId=x",
    "/no-such-bucket/k",
    "/fz-b0",
    "/",
    "%2Ffz-b0%2Fk0",
    "*",
    "\"d41d8cd98f00b204e9800998ecf8427e\"",
    "text/plain",
    "COPY",
    "REPLACE",
    "1000",
    "Wed, 21 Oct 2015 07:28:00 GMT",
    "AAAAAA==",
    "1B2M2Y8AsgTpgAmY7PhCfg==",
    "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    "CRC32",
    "SHA256",
    "ENABLED",
    "true",
    "url",
    "null",
    "STANDARD",
    "UNSIGNED-PAYLOAD",
    "a=b&c=d",
    "dir/",
    "/",
    long_value,
    "GOVERNANCE",
    "COMPLIANCE",
    "ON",
    "OFF",
    "2140-01-01T00:00:00Z",
    "2001-01-01T00:00:00Z",
};
#define N_PVALUES (sizeof(pvalues) / sizeof(pvalues[0]))

/* ==== what earlier replies taught ================================================ */

typedef struct upload {
    unsigned tenant; /* who opened it (and aborts it) */
    char bucket[64], key[1100], id[128];
} upload_t;

static struct state {
    upload_t uploads[MAX_REQS]; /* opened by this input (aborted at its end) */
    unsigned n_uploads;
    struct {
        unsigned number;
        char etag[80];
    } parts[8]; /* the last parts uploaded */
    unsigned n_parts;
} st;

/* ==== reading the input ========================================================= */

typedef struct in {
    const uint8_t *p;
    size_t n;
} in_t;

static uint8_t u8(in_t *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static uint16_t u16(in_t *in)
{
    uint16_t hi = u8(in);
    return (uint16_t)(hi << 8 | u8(in));
}

/* Up to want bytes of the input (fewer at its end); *len_p gets how many. */
static const uint8_t *bytes(in_t *in, size_t want, size_t *len_p)
{
    size_t n = want < in->n ? want : in->n;
    const uint8_t *p = in->p;
    in->p += n;
    in->n -= n;
    *len_p = n;
    return p;
}

/* A fuzzed string of up to max bytes (u8 length), NUL-free, into strs. */
static const char *fuzzed_str(in_t *in, char *strs, size_t *used, size_t cap)
{
    size_t n;
    const uint8_t *p = bytes(in, u8(in), &n);
    if (*used + n + 1 > cap)
        return "";
    char *s = strs + *used;
    for (size_t i = 0; i < n; i++)
        s[i] = p[i] ? (char)p[i] : '0';
    s[n] = '\0';
    *used += n + 1;
    return s;
}

/* ==== one request ================================================================ */

enum body_mode {
    BODY_NONE,
    BODY_INLINE,       /* u16 length, bytes from the input */
    BODY_REGION,       /* u16 length, bytes from the input, by region span */
    BODY_REGION_LARGE, /* (u8 + 1) KiB of a pattern, by region span */
    BODY_PAST,         /* a span reaching past the region */
    BODY_UNKNOWN,      /* a span of a region never registered */
    BODY_COMPLETE_XML, /* CompleteMultipartUpload of the parts uploaded */
    BODY_DELETE_XML,   /* DeleteObjects of the key pool */
    BODY_MODES
};

enum out_mode { OUT_NONE, OUT_VALID, OUT_SMALL, OUT_PAST, OUT_UNKNOWN, OUT_MODES };

/* A request in flight and what its reply said. */
typedef struct fcall {
    rdma_native_call_t call; /* first: the done callback gets this */
    rdma_session_t *sess;    /* the tenant's session and region memory */
    uint8_t *mem;
    unsigned op;
    bool solo; /* waited for before anything else was sent */
    /* The out span as the server reads it, and whether it lies in the
     * registered region (else the server must refuse it). */
    bool has_out, out_ok;
    uint64_t out_addr, out_len;
    bool lost;
    uint16_t status, error;
    uint8_t body_kind;
    uint64_t body_len;
    char etag[80];
    char body[4096]; /* the start of the body (inline, or from the out span) */
    char part_number[16];
    upload_t upload; /* CreateMultipartUpload: where */
} fcall_t;

static void call_done(rdma_native_call_t *call, const rdma_native_reply_t *r);

/* A fresh call for op on the current tenant's session. */
static void call_init(fcall_t *c, unsigned op)
{
    memset(c, 0, sizeof(*c));
    c->call.done = call_done;
    c->sess = sess;
    c->mem = mem;
    c->op = op;
}

static void call_done(rdma_native_call_t *call, const rdma_native_reply_t *r)
{
    fcall_t *c = (fcall_t *)call;
    if (!r) {
        c->lost = true;
        return;
    }
    c->status = r->status;
    c->error = r->error;
    c->body_kind = r->body_kind;
    c->body_len = r->body_len;
    for (unsigned i = 0; i < r->n_headers; i++)
        if (r->headers[i].name_len == 4 &&
            strncasecmp((const char *)r->headers[i].name, "etag", 4) == 0 &&
            r->headers[i].value_len < sizeof(c->etag))
            snprintf(c->etag, sizeof(c->etag), "%.*s", (int)r->headers[i].value_len,
                     (const char *)r->headers[i].value);
    size_t n = r->body_len < sizeof(c->body) - 1 ? (size_t)r->body_len : sizeof(c->body) - 1;
    if (r->body_kind == RDMA_BODY_INLINE)
        memcpy(c->body, r->body, n);
    else if (r->body_kind == RDMA_BODY_REGION && c->solo && c->out_ok && r->body_len <= c->out_len)
        memcpy(c->body, (const void *)(uintptr_t)c->out_addr, n);
    else
        n = 0;
    c->body[n] = '\0';
}

/* A span of the region at off (len may reach past it: the reference is made
 * for a span inside, then moved). */
static rdma_native_ref_t span(uint64_t off, uint64_t len)
{
    rdma_native_ref_t ref;
    FUZZ_CHECK(rdma_region_ref(region, mem, 1, &ref) == 0);
    ref.addr = (uintptr_t)mem + off;
    ref.len = len;
    return ref;
}

static size_t build_complete_xml(char *x, size_t cap)
{
    size_t n = (size_t)snprintf(x, cap, "<CompleteMultipartUpload>");
    for (unsigned i = 0; i < st.n_parts && n < cap; i++)
        n += (size_t)snprintf(x + n, cap - n,
                              "<Part><PartNumber>%u</PartNumber><ETag>%s</ETag></Part>",
                              st.parts[i].number, st.parts[i].etag);
    if (n < cap)
        n += (size_t)snprintf(x + n, cap - n, "</CompleteMultipartUpload>");
    return n < cap ? n : cap - 1;
}

static size_t build_delete_xml(char *x, size_t cap, uint8_t quiet)
{
    size_t n = (size_t)snprintf(x, cap, "<Delete>%s", quiet & 1 ? "<Quiet>true</Quiet>" : "");
    for (size_t i = 0; i + 1 < N_KEYS && n < cap; i++)
        n += (size_t)snprintf(x + n, cap - n, "<Object><Key>%s</Key></Object>", keys[i]);
    if (n < cap)
        n += (size_t)snprintf(x + n, cap - n, "</Delete>");
    return n < cap ? n : cap - 1;
}

/* Records the out span the server got (a raw message's may differ from
 * what was built). */
static void set_out(fcall_t *c, bool has_out, rdma_native_ref_t out)
{
    rdma_native_ref_t own = span(0, 1);
    uintptr_t base = (uintptr_t)mem;
    c->has_out = has_out;
    c->out_addr = out.addr;
    c->out_len = out.len;
    c->out_ok = has_out && out.region_id == own.region_id && out.addr >= base &&
                out.addr - base <= REGION_LEN && out.len <= REGION_LEN - (out.addr - base);
}

static fcall_t *raw_call; /* the request being submitted */

static void raw_sent(const uint8_t *msg, size_t len)
{
    rdma_native_msg_t pm;
    const char *why;
    raw_call->op = msg[5];
    if (rdma_native_parse_req(msg, len, &pm, &why) != 0) {
        /* Answered BAD_MESSAGE: nothing may be written. */
        set_out(raw_call, false, (rdma_native_ref_t){0});
        return;
    }
    set_out(raw_call, pm.has_out, pm.out);
    rdma_native_msg_free(&pm);
}

/* What a reply must be (the invariants above). */
static void check_reply(fcall_t *c)
{
    FUZZ_CHECK(!c->lost);
    FUZZ_CHECK(c->status >= 100 && c->status <= 599);
    FUZZ_CHECK(c->error == 0 || c->status >= 400);
    if (c->body_kind == RDMA_BODY_REGION) {
        FUZZ_CHECK(c->has_out && c->out_ok);
        FUZZ_CHECK(c->body_len <= c->out_len);
    }
    bool head = c->op == RDMA_OP_HEAD_OBJECT || c->op == RDMA_OP_HEAD_BUCKET;
    if (c->status >= 400 && !head && (c->body_kind != RDMA_BODY_REGION || c->solo))
        FUZZ_CHECK(strstr(c->body, "<Code>") != NULL);
    if (c->solo) {
        /* Nothing outside the reply body's bytes changed. */
        uint8_t *mem = c->mem;
        uint64_t lo = c->body_kind == RDMA_BODY_REGION ? c->out_addr - (uintptr_t)mem : 0;
        uint64_t hi = c->body_kind == RDMA_BODY_REGION ? lo + c->body_len : 0;
        for (uint64_t i = OUT_OFF - GUARD; i < OUT_OFF + OUT_LEN + GUARD; i++)
            if ((i < lo || i >= hi) && mem[i] != GUARD_BYTE) {
                fprintf(stderr,
                        "fuzz: byte %" PRIu64 " of the region changed outside the reply "
                        "body [%" PRIu64 ", %" PRIu64 ")\n",
                        i, lo, hi);
                abort();
            }
    }
}

/* Learns upload ids and part ETags from a successful reply. */
static void learn(fcall_t *c)
{
    if (c->status != 200)
        return;
    if (c->op == RDMA_OP_CREATE_MPU && st.n_uploads < MAX_REQS) {
        const char *b = strstr(c->body, "<UploadId>"), *e = b ? strstr(b, "</UploadId>") : NULL;
        if (b && e && (size_t)(e - b - 10) < sizeof(c->upload.id)) {
            upload_t *u = &st.uploads[st.n_uploads++];
            *u = c->upload;
            snprintf(u->id, sizeof(u->id), "%.*s", (int)(e - b - 10), b + 10);
        }
    }
    if ((c->op == RDMA_OP_UPLOAD_PART || c->op == RDMA_OP_UPLOAD_PART_COPY) && c->part_number[0]) {
        const char *etag = c->etag;
        char from_xml[80] = "";
        const char *b = strstr(c->body, "<ETag>"), *e = b ? strstr(b, "</ETag>") : NULL;
        if (!etag[0] && b && e && (size_t)(e - b - 6) < sizeof(from_xml)) {
            snprintf(from_xml, sizeof(from_xml), "%.*s", (int)(e - b - 6), b + 6);
            etag = from_xml;
        }
        unsigned i = st.n_parts < 8 ? st.n_parts++ : (unsigned)(strlen(etag) % 8);
        st.parts[i].number = (unsigned)strtoul(c->part_number, NULL, 10);
        snprintf(st.parts[i].etag, sizeof(st.parts[i].etag), "%s", etag);
    }
}

static void wait_for(fcall_t *c)
{
    if (rdma_native_wait(c->sess, &c->call, REPLY_TIMEOUT_MS) < 0) {
        const char *name = rdma_native_op_name(c->op);
        fprintf(stderr, "fuzz: no reply to opcode %u (%s) within %d ms\n", c->op,
                name ? name : "unknown", REPLY_TIMEOUT_MS);
        abort();
    }
    if (verbose) {
        const char *name = rdma_native_op_name(c->op);
        const char *code = strstr(c->body, "<Code>");
        fprintf(stderr, "fuzz: %s -> %u %.*s\n", name ? name : "unknown", c->status,
                code ? (int)strcspn(code + 6, "<") : 0, code ? code + 6 : "");
    }
    check_reply(c);
    learn(c);
}

static fcall_t calls[MAX_INFLIGHT];
static unsigned n_inflight;

static void wait_all(void)
{
    for (unsigned i = 0; i < n_inflight; i++)
        wait_for(&calls[i]);
    n_inflight = 0;
}

/* Decodes one request from the input, sends it and (unless it stays in
 * flight) waits for its reply. */
static void one_request(in_t *in)
{
    static char strs[4 * 4096];
    static char xml[8192];
    size_t used = 0;
    rdma_native_msg_t m = {0};

    /* The low 5 bits name opcodes 0-30; 31 says the next byte names it
     * (the configuration opcodes from 31 on, and unknown ones up to 255). */
    uint8_t b0 = u8(in);
    unsigned op = b0 & 0x1f, tenant = b0 >> 7;
    if (op == 0x1f)
        op = u8(in);
    use_tenant(tenant);
    bool unknown = op == 0 || op > RDMA_OP_MAX;
    bool nowait = b0 & 0x40;
    memset(&raw, 0, sizeof(raw));
    raw.armed = (b0 & 0x20) || unknown;
    raw.version = raw.opcode = raw.flags = -1;
    if (unknown)
        raw.opcode = op;
    m.head.opcode = unknown ? RDMA_OP_LIST_BUCKETS : (uint8_t)op;

    uint8_t bs = u8(in);
    m.bucket = bs % 8 < N_BUCKETS    ? buckets[bs % 8]
               : bs % 8 == N_BUCKETS ? ""
                                     : fuzzed_str(in, strs, &used, sizeof(strs));
    uint8_t ks = u8(in);
    m.key = ks % 8 < N_KEYS    ? keys[ks % 8]
            : ks % 8 == N_KEYS ? ""
                               : fuzzed_str(in, strs, &used, sizeof(strs));
    uint8_t rs = u8(in);
    m.reply_inline_max = rs % 8 == 0   ? 0
                         : rs % 8 == 1 ? 1
                         : rs % 8 == 2 ? u16(in)
                         : rs % 8 == 3 ? UINT32_MAX
                                       : RIM_NORMAL;
    unsigned np = u8(in) % 9;
    for (unsigned i = 0; i < np && in->n; i++) {
        uint8_t ns = u8(in), vs = u8(in);
        const struct pname *pn = &pnames[ns % N_PNAMES];
        rdma_native_param_t *p = &m.params[m.n_params++];
        p->kind = (ns & 0x80) ? (uint8_t)(3 - pn->kind) : pn->kind;
        p->name = ns == 0xff ? fuzzed_str(in, strs, &used, sizeof(strs)) : pn->name;
        if (!p->name[0])
            p->name = "x-empty";
        if (vs == 0xff)
            p->value = fuzzed_str(in, strs, &used, sizeof(strs));
        else if (vs >= 0xf0) /* an upload id this input opened */
            p->value = st.n_uploads ? st.uploads[(vs - 0xf0) % st.n_uploads].id : "none";
        else
            p->value = pvalues[vs % N_PVALUES];
    }

    fcall_t *c = &calls[n_inflight];
    call_init(c, unknown ? 0 : op);
    c->upload.tenant = tenant;
    c->solo = !nowait && n_inflight == 0;

    uint8_t bm = u8(in) % BODY_MODES;
    size_t blen = 0;
    const uint8_t *bp = NULL;
    switch (bm) {
    case BODY_INLINE:
    case BODY_REGION:
        bp = bytes(in, u16(in) % (RDMA_NATIVE_MAX_INLINE + 1), &blen);
        break;
    case BODY_REGION_LARGE:
        blen = ((size_t)u8(in) + 1) * 1024;
        break;
    case BODY_PAST:
    case BODY_UNKNOWN:
        blen = (size_t)u16(in) + 1;
        break;
    case BODY_COMPLETE_XML:
        blen = build_complete_xml(xml, sizeof(xml));
        bp = (const uint8_t *)xml;
        break;
    case BODY_DELETE_XML:
        blen = build_delete_xml(xml, sizeof(xml), u8(in));
        bp = (const uint8_t *)xml;
        break;
    default:
        break;
    }
    if (blen == 0) {
        m.body_kind = RDMA_BODY_NONE;
    } else if (bm == BODY_INLINE || bm == BODY_COMPLETE_XML || bm == BODY_DELETE_XML) {
        m.body_kind = RDMA_BODY_INLINE;
        m.body = bp;
        if (blen > RDMA_NATIVE_MAX_INLINE)
            blen = RDMA_NATIVE_MAX_INLINE;
    } else {
        m.body_kind = RDMA_BODY_REGION;
        if (bp && c->solo)
            memcpy(mem, bp, blen);
        else if (bm == BODY_REGION_LARGE && c->solo)
            for (size_t i = 0; i < blen; i++)
                mem[i] = (uint8_t)(i * 13 + (i >> 10));
        m.body_ref = bm == BODY_PAST      ? span(REGION_LEN - 8, blen)
                     : bm == BODY_UNKNOWN ? span(0, blen)
                                          : span(0, blen);
        if (bm == BODY_UNKNOWN)
            m.body_ref.region_id += 77;
    }
    m.body_len = blen;

    uint8_t om = u8(in);
    int out_mode = om % OUT_MODES;
    if (out_mode != OUT_NONE) {
        /* A request left in flight gets its own slice of the out area. */
        uint64_t off = OUT_OFF, len = OUT_LEN;
        if (!c->solo) {
            len = OUT_LEN / MAX_INFLIGHT;
            off = OUT_OFF + n_inflight * len;
        }
        if (out_mode == OUT_SMALL)
            len = u16(in) % len;
        m.has_out = 1;
        m.out = out_mode == OUT_PAST ? span(REGION_LEN - 16, len) : span(off, len);
        if (out_mode == OUT_UNKNOWN)
            m.out.region_id += 77;
    }

    if (raw.armed) {
        uint8_t rb = u8(in);
        raw.n_muts = (rb & 0x0f) % 9;
        for (unsigned i = 0; i < raw.n_muts; i++) {
            raw.muts[i].off = u16(in);
            raw.muts[i].val = u8(in);
        }
        if (rb & 0x10)
            raw.resize = -(int)u8(in);
        else if (rb & 0x20)
            raw.resize = u8(in);
        if (rb & 0x40)
            raw.version = u8(in);
        if (rb & 0x80)
            raw.flags = u8(in);
    }

    /* What learn() needs of the request (c->upload.tenant is set). */
    for (unsigned i = 0; i < m.n_params; i++)
        if (strcmp(m.params[i].name, "partNumber") == 0)
            snprintf(c->part_number, sizeof(c->part_number), "%s", m.params[i].value);
    snprintf(c->upload.bucket, sizeof(c->upload.bucket), "%s", m.bucket);
    snprintf(c->upload.key, sizeof(c->upload.key), "%s", m.key);

    if (c->solo)
        memset(mem + OUT_OFF - GUARD, GUARD_BYTE, OUT_LEN + 2 * GUARD);
    set_out(c, m.has_out, m.out);
    raw_call = c;
    char err[160];
    int rc = rdma_native_submit(sess, &m, &c->call, err, sizeof(err));
    raw.armed = false;
    if (rc < 0) {
        /* Over a protocol limit: the client refuses to send it. */
        FUZZ_CHECK(rdma_session_alive(sess));
        return;
    }
    n_inflight++;
    if (!nowait || n_inflight == MAX_INFLIGHT)
        wait_all();
}

/* Aborts the uploads this input opened, so state stays bounded. */
static void abort_uploads(void)
{
    for (unsigned i = 0; i < st.n_uploads; i++) {
        upload_t *u = &st.uploads[i];
        rdma_native_msg_t m = {0};
        m.head.opcode = RDMA_OP_ABORT_MPU;
        m.bucket = u->bucket;
        m.key = u->key;
        m.reply_inline_max = RIM_NORMAL;
        m.params[0] = (rdma_native_param_t){RDMA_PARAM_QUERY, "uploadId", u->id};
        m.n_params = 1;
        use_tenant(u->tenant);
        fcall_t *c = &calls[0];
        call_init(c, RDMA_OP_ABORT_MPU);
        char err[160];
        FUZZ_CHECK(rdma_native_submit(sess, &m, &c->call, err, sizeof(err)) == 0);
        wait_for(c);
    }
}

/* The server serves this target's requests at all: a CreateBucket of the
 * first pool bucket succeeds. Catches a server setting the target does not
 * set (the fuzzer would otherwise go on, every request refused). */
static void check_setup(void)
{
    rdma_native_msg_t m = {0};
    m.head.opcode = RDMA_OP_CREATE_BUCKET;
    m.bucket = buckets[0];
    m.key = "";
    m.reply_inline_max = RIM_NORMAL;
    use_tenant(0);
    fcall_t *c = &calls[0];
    call_init(c, RDMA_OP_CREATE_BUCKET);
    char err[160];
    FUZZ_CHECK(rdma_native_submit(sess, &m, &c->call, err, sizeof(err)) == 0);
    wait_for(c);
    if (c->status != 200) {
        fprintf(stderr, "fuzz: the server refuses the setup's CreateBucket: %u %s\n", c->status,
                c->body);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool started;
    if (!started) {
        memset(long_key, 'L', sizeof(long_key) - 1);
        memset(long_value, 'V', sizeof(long_value) - 1);
        start_all();
        check_setup();
        started = true;
    }
    memset(&st, 0, sizeof(st));
    in_t in = {data, size};
    for (unsigned i = 0; i < MAX_REQS && in.n; i++)
        one_request(&in);
    wait_all();
    abort_uploads();
    return 0;
}
