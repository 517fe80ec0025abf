/* Hostile native client (tests only): an honest, authenticated RDMA
 * session that sends every native opcode (docs/protocol.md §4.2) the way
 * libs3rdma never would, and checks that the server answers each request
 * and keeps serving.
 *
 *   s3r_native_hostile HOST PORT ACCESS_KEY SECRET BUCKET
 *
 * BUCKET must not exist yet; the program creates it (and BUCKET-x for the
 * bucket operations), puts a known object and opens a multipart upload.
 * Then, for every opcode 1..RDMA_OP_MAX, it starts from a complete request
 * (the bucket, key, params, body and out span the operation needs) and
 * sends it whole and in variants:
 *   - each required field missing in turn (bucket, key, each param, the
 *     body, the out span of a GET whose reply needs one), present with an
 *     empty value, or given twice;
 *   - unexpected fields: a bucket/key/body on operations that take none,
 *     unknown and misplaced params (a copy source, an upload id);
 *   - out spans: a valid one where none is needed, one too small, one past
 *     the end of the registered region, one in a region never registered;
 *   - bodies by region: a valid span and one outside the region;
 * each with reply_inline_max 0, 1 and 16384 (libs3rdma's). Per case it
 * prints one line: the status and S3 error code of the reply. A case
 * fails when no reply comes within the timeout or the session is lost,
 * or when an error reply (other than to a HEAD, which carries no body)
 * names no S3 error code. After every case the server must still answer
 * a HeadBucket and a GetObject of the known object byte-exactly.
 *
 * Exit status: 0 when every case got its reply and the server kept serving,
 * 1 otherwise (it stops at the first case after which the server does not
 * serve), 2 when the setup failed. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rdma_client.h"

#define TIMEOUT_MS  10000
#define RIM_NORMAL  16384         /* libs3rdma's reply_inline_max */
#define KNOWN_BYTES 100000        /* above the inline limit: a GET needs an out span */
#define REGION_LEN  (1024 * 1024) /* the one registered region */
#define BODY_OFF    0             /* region bodies */
#define OUT_OFF     (256 * 1024)  /* the cases' out span */
#define CHECK_OFF   (512 * 1024)  /* the health check's out span */
#define SPAN_LEN    (128 * 1024)
#define MAX_PARAMS  8
#define CODE_LEN    64

/* ---- the session and one call ------------------------------------------------ */

static rdma_session_t *sess;
static uint8_t *mem; /* the registered region */
static rdma_region_t *region;

/* A request in flight and what its reply said. */
typedef struct hcall {
    rdma_native_call_t call; /* first: the done callback gets this */
    const uint8_t *out;      /* where a body in the out region lands */
    bool lost;               /* the session died first */
    uint16_t status, error;
    uint8_t body_kind;
    uint64_t body_len;
    char body[4096]; /* the start of the body, NUL-terminated */
} hcall_t;

static void call_done(rdma_native_call_t *call, const rdma_native_reply_t *r)
{
    hcall_t *c = (hcall_t *)call;
    if (!r) {
        c->lost = true;
        return;
    }
    c->status = r->status;
    c->error = r->error;
    c->body_kind = r->body_kind;
    c->body_len = r->body_len;
    size_t n = r->body_len < sizeof(c->body) - 1 ? (size_t)r->body_len : sizeof(c->body) - 1;
    if (r->body_kind == RDMA_BODY_INLINE)
        memcpy(c->body, r->body, n);
    else if (r->body_kind == RDMA_BODY_REGION && c->out)
        memcpy(c->body, c->out, n < SPAN_LEN ? n : SPAN_LEN);
    else
        n = 0;
    c->body[n] = '\0';
}

typedef enum { CALL_OK, CALL_TIMEOUT, CALL_LOST, CALL_UNSENT } call_result_t;

/* Sends m and waits for its reply in *c. */
static call_result_t call(rdma_native_msg_t *m, hcall_t *c)
{
    memset(c, 0, sizeof(*c));
    c->call.done = call_done;
    if (m->has_out)
        c->out = (const uint8_t *)(uintptr_t)m->out.addr;
    char err[160];
    if (rdma_native_submit(sess, m, &c->call, err, sizeof(err)) < 0) {
        fprintf(stderr, "s3r_native_hostile: submit: %s\n", err);
        return CALL_UNSENT;
    }
    if (rdma_native_wait(sess, &c->call, TIMEOUT_MS) < 0)
        return CALL_TIMEOUT;
    return c->lost ? CALL_LOST : CALL_OK;
}

/* The S3 error code of an error body, or "" when it names none. */
static void error_code(const hcall_t *c, char code[CODE_LEN])
{
    code[0] = '\0';
    const char *b = strstr(c->body, "<Code>"), *e = b ? strstr(b, "</Code>") : NULL;
    if (b && e && e - b - 6 < CODE_LEN)
        snprintf(code, CODE_LEN, "%.*s", (int)(e - b - 6), b + 6);
}

/* A span of the region (the region's own id), possibly reaching past it:
 * rdma_region_ref refuses those, so the reference is made for a span inside
 * and then moved. */
static rdma_native_ref_t span(size_t off, uint64_t len)
{
    rdma_native_ref_t ref;
    if (rdma_region_ref(region, mem, 1, &ref) < 0)
        abort();
    ref.addr = (uintptr_t)mem + off;
    ref.len = len;
    return ref;
}

/* ---- fixtures: names and the complete request of each opcode ------------------ */

static const char *bucket, *key_known = "known", *key_mpu = "mpu";
/* upload_id: the upload every multipart case names; abort_id: a fresh one
 * for each AbortMultipartUpload case, so aborting loses nothing else. */
static char bucket_x[300], copy_source[400], upload_id[256], abort_id[256];

static uint8_t known_byte(size_t i)
{
    return (uint8_t)(i * 31 + (i >> 8) + 7);
}

typedef struct spec {
    const char *bucket, *key; /* NULL: the operation takes none */
    rdma_native_param_t params[MAX_PARAMS];
    unsigned n_params;
    const char *body; /* NULL: takes none */
    bool out;         /* its reply needs an out span */
} spec_t;

static const char complete_xml[] =
    "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber>"
    "<ETag>\"00000000000000000000000000000000\"</ETag></Part></CompleteMultipartUpload>";
static const char delete_xml[] = "<Delete><Object><Key>scratch</Key></Object></Delete>";
/* The configuration documents: valid ones that leave the health check's
 * requests allowed (the policy grants, the ACLs are the owner's). */
static const char tagging_xml[] =
    "<Tagging><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tagging>";
static const char retention_xml[] =
    "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2099-01-01T00:00:00Z</RetainUntilDate>"
    "</Retention>";
static const char legal_hold_xml[] = "<LegalHold><Status>OFF</Status></LegalHold>";
static const char versioning_xml[] =
    "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
static const char lifecycle_xml[] =
    "<LifecycleConfiguration><Rule><ID>r</ID><Filter><Prefix>never/</Prefix></Filter>"
    "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"
    "</LifecycleConfiguration>";
static const char lock_xml[] =
    "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>"
    "</ObjectLockConfiguration>";
static const char cors_xml[] = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>"
                               "<AllowedMethod>GET</AllowedMethod></CORSRule></CORSConfiguration>";
static const char encryption_xml[] =
    "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>"
    "<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"
    "</ServerSideEncryptionConfiguration>";
static char policy_json[600]; /* names the bucket: made in main */

static rdma_native_param_t header(const char *name, const char *value)
{
    return (rdma_native_param_t){RDMA_PARAM_HEADER, name, value};
}

static rdma_native_param_t query(const char *name, const char *value)
{
    return (rdma_native_param_t){RDMA_PARAM_QUERY, name, value};
}

/* The subresource a configuration opcode needs, whether it is an
 * object's, and its document (NULL: none); NULL when op is not one. */
static const char *config_spec(unsigned op, bool *object, const char **doc)
{
    static const struct {
        unsigned op;
        const char *sub;
        bool object;
        const char *doc;
    } t[] = {
        {RDMA_OP_GET_OBJECT_TAGGING, "tagging", true, NULL},
        {RDMA_OP_PUT_OBJECT_TAGGING, "tagging", true, tagging_xml},
        {RDMA_OP_DELETE_OBJECT_TAGGING, "tagging", true, NULL},
        {RDMA_OP_GET_OBJECT_RETENTION, "retention", true, NULL},
        {RDMA_OP_PUT_OBJECT_RETENTION, "retention", true, retention_xml},
        {RDMA_OP_GET_OBJECT_LEGAL_HOLD, "legal-hold", true, NULL},
        {RDMA_OP_PUT_OBJECT_LEGAL_HOLD, "legal-hold", true, legal_hold_xml},
        {RDMA_OP_GET_OBJECT_ACL, "acl", true, NULL},
        {RDMA_OP_PUT_OBJECT_ACL, "acl", true, NULL},
        {RDMA_OP_GET_BUCKET_VERSIONING, "versioning", false, NULL},
        {RDMA_OP_PUT_BUCKET_VERSIONING, "versioning", false, versioning_xml},
        {RDMA_OP_GET_BUCKET_LIFECYCLE, "lifecycle", false, NULL},
        {RDMA_OP_PUT_BUCKET_LIFECYCLE, "lifecycle", false, lifecycle_xml},
        {RDMA_OP_DELETE_BUCKET_LIFECYCLE, "lifecycle", false, NULL},
        {RDMA_OP_GET_OBJECT_LOCK_CONFIG, "object-lock", false, NULL},
        {RDMA_OP_PUT_OBJECT_LOCK_CONFIG, "object-lock", false, lock_xml},
        {RDMA_OP_GET_BUCKET_TAGGING, "tagging", false, NULL},
        {RDMA_OP_PUT_BUCKET_TAGGING, "tagging", false, tagging_xml},
        {RDMA_OP_DELETE_BUCKET_TAGGING, "tagging", false, NULL},
        {RDMA_OP_GET_BUCKET_POLICY, "policy", false, NULL},
        {RDMA_OP_PUT_BUCKET_POLICY, "policy", false, policy_json},
        {RDMA_OP_DELETE_BUCKET_POLICY, "policy", false, NULL},
        {RDMA_OP_GET_BUCKET_CORS, "cors", false, NULL},
        {RDMA_OP_PUT_BUCKET_CORS, "cors", false, cors_xml},
        {RDMA_OP_DELETE_BUCKET_CORS, "cors", false, NULL},
        {RDMA_OP_GET_BUCKET_ENCRYPTION, "encryption", false, NULL},
        {RDMA_OP_PUT_BUCKET_ENCRYPTION, "encryption", false, encryption_xml},
        {RDMA_OP_DELETE_BUCKET_ENCRYPTION, "encryption", false, NULL},
        {RDMA_OP_GET_BUCKET_ACL, "acl", false, NULL},
        {RDMA_OP_PUT_BUCKET_ACL, "acl", false, NULL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        if (t[i].op == op) {
            *object = t[i].object;
            *doc = t[i].doc;
            return t[i].sub;
        }
    }
    return NULL;
}

/* The complete request of op: what it needs and nothing else. */
static spec_t op_spec(unsigned op)
{
    spec_t s = {.bucket = bucket};
    rdma_native_param_t up = query("uploadId", upload_id);
    bool object;
    const char *doc, *sub = config_spec(op, &object, &doc);
    if (sub) {
        s.key = object ? key_known : NULL;
        s.params[s.n_params++] = query(sub, "");
        s.body = doc;
        /* An ACL set by its header alone, the owner's. */
        if (op == RDMA_OP_PUT_OBJECT_ACL || op == RDMA_OP_PUT_BUCKET_ACL)
            s.params[s.n_params++] = header("x-amz-acl", "private");
        /* A GET's reply is an XML document: inline here, by RDMA under rim 0
         * and 1, so the out span is what it needs. */
        s.out = strncmp(rdma_native_op_name(op), "Get", 3) == 0;
        return s;
    }
    switch (op) {
    case RDMA_OP_PUT_OBJECT:
        s.key = "scratch";
        s.body = "hostile";
        break;
    case RDMA_OP_GET_OBJECT:
        s.key = key_known;
        s.out = true;
        break;
    case RDMA_OP_HEAD_OBJECT:
        s.key = key_known;
        break;
    case RDMA_OP_DELETE_OBJECT:
        s.key = "scratch";
        break;
    case RDMA_OP_DELETE_OBJECTS:
        s.body = delete_xml;
        break;
    case RDMA_OP_COPY_OBJECT:
        s.key = "copy-dst";
        s.params[s.n_params++] = header("x-amz-copy-source", copy_source);
        break;
    case RDMA_OP_CREATE_BUCKET:
    case RDMA_OP_DELETE_BUCKET:
        s.bucket = bucket_x;
        break;
    case RDMA_OP_LIST_BUCKETS:
        s.bucket = NULL;
        break;
    case RDMA_OP_CREATE_MPU:
        s.key = key_mpu;
        break;
    case RDMA_OP_UPLOAD_PART:
        s.key = key_mpu;
        s.params[s.n_params++] = up;
        s.params[s.n_params++] = query("partNumber", "1");
        s.body = "part one";
        break;
    case RDMA_OP_COMPLETE_MPU:
        s.key = key_mpu;
        s.params[s.n_params++] = up;
        s.body = complete_xml;
        break;
    case RDMA_OP_ABORT_MPU:
        s.key = key_mpu;
        s.params[s.n_params++] = query("uploadId", abort_id);
        break;
    case RDMA_OP_LIST_PARTS:
        s.key = key_mpu;
        s.params[s.n_params++] = up;
        break;
    case RDMA_OP_UPLOAD_PART_COPY:
        s.key = key_mpu;
        s.params[s.n_params++] = up;
        s.params[s.n_params++] = query("partNumber", "2");
        s.params[s.n_params++] = header("x-amz-copy-source", copy_source);
        break;
    default: /* ListObjects, HeadBucket, ListMultipartUploads, GetBucketLocation */
        break;
    }
    return s;
}

/* ---- variants ------------------------------------------------------------------ */

typedef enum variant {
    V_FULL,
    V_NO_BUCKET,
    V_NO_KEY,
    V_NO_PARAM,    /* arg: which */
    V_EMPTY_PARAM, /* arg: which */
    V_DUP_PARAM,   /* arg: which, given twice (the second value differs) */
    V_NO_BODY,
    V_NO_OUT,
    V_EXTRA_BUCKET,
    V_EXTRA_KEY,
    V_EXTRA_BODY,
    V_EXTRA_PARAMS, /* unknown header and query param */
    V_EXTRA_COPY,   /* a copy source on an operation that copies nothing */
    V_EXTRA_UPLOAD, /* uploadId and partNumber on one that has no upload */
    V_OUT_VALID,    /* an out span where none is needed */
    V_OUT_SMALL,    /* 1 byte */
    V_OUT_PAST,     /* past the end of the region */
    V_OUT_UNKNOWN,  /* in a region never registered */
    V_BODY_REGION,  /* the body by a valid region span */
    V_BODY_PAST,    /* the body by a span past the region's end */
    V_COUNT
} variant_t;

static const char *variant_name(variant_t v, const spec_t *s, unsigned arg, char *buf, size_t cap)
{
    static const char *names[V_COUNT] = {"full",
                                         "no-bucket",
                                         "no-key",
                                         "no-param",
                                         "empty-param",
                                         "dup-param",
                                         "no-body",
                                         "no-out",
                                         "extra-bucket",
                                         "extra-key",
                                         "extra-body",
                                         "extra-params",
                                         "extra-copy-source",
                                         "extra-upload-id",
                                         "out-valid",
                                         "out-1-byte",
                                         "out-past-region",
                                         "out-unknown-region",
                                         "body-by-region",
                                         "body-past-region"};
    if (v == V_NO_PARAM || v == V_EMPTY_PARAM || v == V_DUP_PARAM)
        snprintf(buf, cap, "%s:%s", names[v], s->params[arg].name);
    else
        snprintf(buf, cap, "%s", names[v]);
    return buf;
}

/* How many cases variant v makes of s (0: it does not apply). */
static unsigned variant_count(variant_t v, const spec_t *s, unsigned op)
{
    bool copies = op == RDMA_OP_COPY_OBJECT || op == RDMA_OP_UPLOAD_PART_COPY;
    bool uploads = s->n_params > 0 && strcmp(s->params[0].name, "uploadId") == 0;
    switch (v) {
    case V_NO_BUCKET:
        return s->bucket != NULL;
    case V_NO_KEY:
        return s->key != NULL;
    case V_NO_PARAM:
    case V_EMPTY_PARAM:
    case V_DUP_PARAM:
        return s->n_params;
    case V_NO_BODY:
    case V_BODY_REGION:
    case V_BODY_PAST:
        return s->body != NULL;
    case V_NO_OUT:
        return s->out;
    case V_OUT_VALID:
        return !s->out;
    case V_EXTRA_BUCKET:
        return s->bucket == NULL;
    case V_EXTRA_KEY:
        return s->key == NULL;
    case V_EXTRA_BODY:
        return s->body == NULL;
    case V_EXTRA_COPY:
        return !copies;
    case V_EXTRA_UPLOAD:
        return !uploads;
    default:
        return 1;
    }
}

/* Builds the message of variant v (arg: its index) of s. */
static void build(rdma_native_msg_t *m, unsigned op, spec_t s, variant_t v, unsigned arg,
                  uint32_t rim)
{
    memset(m, 0, sizeof(*m));
    if (v == V_NO_BUCKET)
        s.bucket = NULL;
    if (v == V_NO_KEY)
        s.key = NULL;
    if (v == V_EXTRA_BUCKET)
        s.bucket = bucket;
    if (v == V_EXTRA_KEY)
        s.key = key_known;
    if (v == V_NO_PARAM) {
        memmove(&s.params[arg], &s.params[arg + 1], (s.n_params - arg - 1) * sizeof(s.params[0]));
        s.n_params--;
    }
    if (v == V_EMPTY_PARAM)
        s.params[arg].value = "";
    if (v == V_DUP_PARAM) {
        s.params[s.n_params] = s.params[arg];
        s.params[s.n_params++].value = "2";
    }
    if (v == V_EXTRA_PARAMS) {
        s.params[s.n_params++] = header("x-hostile", "1");
        s.params[s.n_params++] = query("hostile", "");
    }
    if (v == V_EXTRA_COPY)
        s.params[s.n_params++] = header("x-amz-copy-source", copy_source);
    if (v == V_EXTRA_UPLOAD) {
        s.params[s.n_params++] = query("uploadId", upload_id);
        s.params[s.n_params++] = query("partNumber", "1");
    }
    if (v == V_NO_BODY)
        s.body = NULL;
    if (v == V_EXTRA_BODY)
        s.body = "unexpected";
    m->head.opcode = (uint8_t)op;
    m->bucket = s.bucket ? s.bucket : "";
    m->key = s.key ? s.key : "";
    m->reply_inline_max = rim;
    memcpy(m->params, s.params, s.n_params * sizeof(s.params[0]));
    m->n_params = s.n_params;
    if (s.body) {
        size_t n = strlen(s.body);
        if (v == V_BODY_REGION || v == V_BODY_PAST) {
            memcpy(mem + BODY_OFF, s.body, n);
            m->body_kind = RDMA_BODY_REGION;
            m->body_ref = v == V_BODY_REGION ? span(BODY_OFF, n) : span(REGION_LEN - 2, n);
        } else {
            m->body_kind = RDMA_BODY_INLINE;
            m->body = (const uint8_t *)s.body;
        }
        m->body_len = n;
    }
    bool out = (s.out && v != V_NO_OUT) || v == V_OUT_VALID || v == V_OUT_SMALL ||
               v == V_OUT_PAST || v == V_OUT_UNKNOWN;
    if (out) {
        m->has_out = 1;
        m->out = span(OUT_OFF, SPAN_LEN);
        if (v == V_OUT_SMALL)
            m->out.len = 1;
        if (v == V_OUT_PAST)
            m->out = span(REGION_LEN - 16, SPAN_LEN);
        if (v == V_OUT_UNKNOWN)
            m->out.region_id += 1000;
    }
}

/* ---- setup and the health check ---------------------------------------------- */

static int fail_setup(const char *what, const hcall_t *c)
{
    fprintf(stderr, "s3r_native_hostile: setup: %s: status %u, %s\n", what, c->status, c->body);
    return -1;
}

/* A request with nothing but a bucket and a key (NULL: none), its reply
 * inline. */
static call_result_t simple(unsigned op, const char *b, const char *k, hcall_t *c)
{
    rdma_native_msg_t m = {0};
    m.head.opcode = (uint8_t)op;
    m.bucket = b ? b : "";
    m.key = k ? k : "";
    m.reply_inline_max = RIM_NORMAL;
    return call(&m, c);
}

/* Opens a multipart upload of key_mpu; its id into id. */
static int create_upload(char *id, size_t cap)
{
    hcall_t c;
    if (simple(RDMA_OP_CREATE_MPU, bucket, key_mpu, &c) != CALL_OK || c.status != 200)
        return fail_setup("CreateMultipartUpload", &c);
    const char *b = strstr(c.body, "<UploadId>"), *e = b ? strstr(b, "</UploadId>") : NULL;
    if (!b || !e || (size_t)(e - b - 10) >= cap)
        return fail_setup("CreateMultipartUpload reply", &c);
    snprintf(id, cap, "%.*s", (int)(e - b - 10), b + 10);
    return 0;
}

static int setup(void)
{
    hcall_t c;
    if (simple(RDMA_OP_CREATE_BUCKET, bucket, NULL, &c) != CALL_OK || c.status != 200)
        return fail_setup("CreateBucket", &c);
    for (size_t i = 0; i < KNOWN_BYTES; i++)
        mem[BODY_OFF + i] = known_byte(i);
    rdma_native_msg_t m = {0};
    m.head.opcode = RDMA_OP_PUT_OBJECT;
    m.bucket = bucket;
    m.key = key_known;
    m.reply_inline_max = RIM_NORMAL;
    m.body_kind = RDMA_BODY_REGION;
    m.body_ref = span(BODY_OFF, KNOWN_BYTES);
    m.body_len = KNOWN_BYTES;
    if (call(&m, &c) != CALL_OK || c.status != 200)
        return fail_setup("PutObject", &c);
    return create_upload(upload_id, sizeof(upload_id));
}

/* The server still serves: a HeadBucket and a byte-exact GetObject of the
 * known object (by RDMA into the out span). NULL, or what failed. */
static const char *still_serving(void)
{
    hcall_t c;
    if (simple(RDMA_OP_HEAD_BUCKET, bucket, NULL, &c) != CALL_OK)
        return "HeadBucket got no reply";
    if (c.status != 200)
        return "HeadBucket did not answer 200";
    rdma_native_msg_t m = {0};
    m.head.opcode = RDMA_OP_GET_OBJECT;
    m.bucket = bucket;
    m.key = key_known;
    m.reply_inline_max = RIM_NORMAL;
    m.has_out = 1;
    m.out = span(CHECK_OFF, SPAN_LEN);
    memset(mem + CHECK_OFF, 0, SPAN_LEN);
    if (call(&m, &c) != CALL_OK)
        return "GetObject got no reply";
    if (c.status != 200 || c.body_kind != RDMA_BODY_REGION || c.body_len != KNOWN_BYTES)
        return "GetObject did not answer 200 with the object in the out span";
    for (size_t i = 0; i < KNOWN_BYTES; i++)
        if (mem[CHECK_OFF + i] != known_byte(i))
            return "GetObject returned other bytes";
    return NULL;
}

/* ---- main ---------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: s3r_native_hostile HOST PORT ACCESS_KEY SECRET BUCKET\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    bucket = argv[5];
    snprintf(bucket_x, sizeof(bucket_x), "%s-x", bucket);
    snprintf(copy_source, sizeof(copy_source), "/%s/%s", bucket, key_known);
    snprintf(policy_json, sizeof(policy_json),
             "{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
             "\"Principal\":\"*\",\"Action\":\"s3:GetObject\","
             "\"Resource\":\"arn:aws:s3:::%s/public/*\"}]}",
             bucket);
    rdma_client_config_t cfg = {.host = argv[1],
                                .port = atoi(argv[2]),
                                .access_key = argv[3],
                                .secret_key = argv[4],
                                .timeout_ms = 10000};
    char err[256];
    void *addr;
    if (rdma_session_open(&cfg, &sess, err, sizeof(err)) < 0 ||
        rdma_region_alloc(sess, REGION_LEN, &addr, &region, err, sizeof(err)) < 0) {
        fprintf(stderr, "s3r_native_hostile: %s\n", err);
        return 2;
    }
    mem = addr;
    if (setup() < 0)
        return 2;

    static const uint32_t rims[] = {0, 1, RIM_NORMAL};
    unsigned cases = 0, failed = 0;
    const char *down = NULL;
    for (unsigned op = 1; op <= RDMA_OP_MAX && !down; op++) {
        for (variant_t v = V_FULL; v < V_COUNT && !down; v++) {
            spec_t s = op_spec(op);
            unsigned n = variant_count(v, &s, op);
            for (unsigned arg = 0; arg < n && !down; arg++) {
                for (size_t r = 0; r < sizeof(rims) / sizeof(rims[0]) && !down; r++) {
                    if (op == RDMA_OP_ABORT_MPU && create_upload(abort_id, sizeof(abort_id)) < 0)
                        return 2;
                    rdma_native_msg_t m;
                    build(&m, op, s, v, arg, rims[r]);
                    hcall_t c;
                    char vname[64], code[CODE_LEN];
                    variant_name(v, &s, arg, vname, sizeof(vname));
                    call_result_t res = call(&m, &c);
                    cases++;
                    printf("case %u %s %s rim=%u: ", cases, rdma_native_op_name(op), vname,
                           rims[r]);
                    if (res != CALL_OK) {
                        failed++;
                        printf("FAIL %s\n", res == CALL_TIMEOUT ? "no reply (timeout)"
                                            : res == CALL_LOST  ? "no reply (session lost)"
                                                                : "not sent");
                    } else {
                        error_code(&c, code);
                        bool head = op == RDMA_OP_HEAD_OBJECT || op == RDMA_OP_HEAD_BUCKET;
                        bool is_error = c.status >= 300 && c.status != 304;
                        if (is_error && !head && !code[0]) {
                            failed++;
                            printf("FAIL status %u error %u without an S3 error code\n", c.status,
                                   c.error);
                        } else {
                            printf("%u %s\n", c.status, code[0] ? code : "-");
                        }
                    }
                    if ((down = still_serving()) != NULL)
                        printf("FAIL after case %u: the server stopped serving: %s\n", cases, down);
                }
            }
        }
    }
    printf("%u cases, %u failed%s\n", cases, failed, down ? ", server down" : "");
    rdma_session_close(sess);
    return failed || down ? 1 : 0;
}
