/* A native PutObject (or UploadPart) with the headers the caller names
 * (tests only): what libs3rdma never sends, such as x-amz-checksum-* values
 * or Content-MD5, so the integration tests can hold the native path to the
 * checks the HTTP path makes.
 *
 *   s3r_native_put HOST PORT ACCESS_KEY SECRET BUCKET KEY FILE inline|region
 *                  [NAME=VALUE ...]
 *
 * The body is FILE's bytes, carried inline in the request or as a span of a
 * registered region (the server pulls it by RDMA). Each NAME=VALUE is a
 * header (names starting with '?' are query parameters, for partNumber and
 * uploadId). Prints "status S" and one "header NAME: VALUE" line per reply
 * header, then "code C" (the S3 error code, when the reply names one).
 * Exit status: 0 when a reply came, 1 when none did, 2 on bad usage or a
 * failed setup. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rdma_client.h"

#define TIMEOUT_MS 30000

typedef struct put_call {
    rdma_native_call_t call; /* first: the done callback gets this */
    int replied;
    char out[65536]; /* what the reply printed */
} put_call_t;

static void put_done(rdma_native_call_t *call, const rdma_native_reply_t *r)
{
    put_call_t *c = (put_call_t *)call;
    if (!r)
        return;
    c->replied = 1;
    size_t n = (size_t)snprintf(c->out, sizeof(c->out), "status %u\n", r->status);
    for (unsigned i = 0; i < r->n_headers && n < sizeof(c->out); i++)
        n += (size_t)snprintf(c->out + n, sizeof(c->out) - n, "header %.*s: %.*s\n",
                              r->headers[i].name_len, (const char *)r->headers[i].name,
                              r->headers[i].value_len, (const char *)r->headers[i].value);
    if (r->body_kind == RDMA_BODY_INLINE && n < sizeof(c->out)) {
        const char *b = memmem(r->body, r->body_len, "<Code>", 6);
        const char *e =
            b ? memmem(b, r->body_len - (size_t)(b - (const char *)r->body), "</Code>", 7) : NULL;
        if (b && e)
            snprintf(c->out + n, sizeof(c->out) - n, "code %.*s\n", (int)(e - b - 6), b + 6);
    }
}

static uint8_t *read_file(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc(len > 0 ? (size_t)len : 1);
    if (data && len > 0 && fread(data, 1, (size_t)len, f) != (size_t)len) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *len_p = len > 0 ? (size_t)len : 0;
    return data;
}

int main(int argc, char **argv)
{
    if (argc < 9 || argc - 9 > RDMA_NATIVE_MAX_PARAMS ||
        (strcmp(argv[8], "inline") != 0 && strcmp(argv[8], "region") != 0)) {
        fprintf(stderr, "usage: s3r_native_put HOST PORT ACCESS_KEY SECRET BUCKET KEY FILE "
                        "inline|region [NAME=VALUE ...]\n");
        return 2;
    }
    size_t len;
    uint8_t *data = read_file(argv[7], &len);
    if (!data) {
        fprintf(stderr, "s3r_native_put: cannot read %s\n", argv[7]);
        return 2;
    }
    rdma_client_config_t cfg = {.host = argv[1],
                                .port = atoi(argv[2]),
                                .access_key = argv[3],
                                .secret_key = argv[4],
                                .timeout_ms = 10000};
    char err[256];
    rdma_session_t *sess;
    if (rdma_session_open(&cfg, &sess, err, sizeof(err)) < 0) {
        fprintf(stderr, "s3r_native_put: %s\n", err);
        return 2;
    }
    rdma_native_msg_t m = {0};
    m.head.opcode = RDMA_OP_PUT_OBJECT;
    m.bucket = argv[5];
    m.key = argv[6];
    m.reply_inline_max = 16384;
    for (int i = 9; i < argc; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "s3r_native_put: %s is not NAME=VALUE\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        bool query = argv[i][0] == '?';
        if (query && strcmp(argv[i], "?partNumber") == 0)
            m.head.opcode = RDMA_OP_UPLOAD_PART;
        m.params[m.n_params++] = (rdma_native_param_t){query ? RDMA_PARAM_QUERY : RDMA_PARAM_HEADER,
                                                       argv[i] + query, eq + 1};
    }
    void *mem = NULL;
    rdma_region_t *region = NULL;
    m.body_len = len;
    if (strcmp(argv[8], "inline") == 0) {
        m.body_kind = RDMA_BODY_INLINE;
        m.body = data;
    } else {
        if (rdma_region_alloc(sess, len ? len : 1, &mem, &region, err, sizeof(err)) < 0) {
            fprintf(stderr, "s3r_native_put: %s\n", err);
            return 2;
        }
        memcpy(mem, data, len);
        m.body_kind = RDMA_BODY_REGION;
        if (rdma_region_ref(region, mem, len, &m.body_ref) < 0)
            return 2;
    }
    static put_call_t c;
    c.call.done = put_done;
    if (rdma_native_submit(sess, &m, &c.call, err, sizeof(err)) < 0) {
        fprintf(stderr, "s3r_native_put: submit: %s\n", err);
        return 2;
    }
    int rc = rdma_native_wait(sess, &c.call, TIMEOUT_MS) == 0 && c.replied ? 0 : 1;
    fputs(c.out, stdout);
    rdma_session_close(sess);
    free(data);
    return rc;
}
