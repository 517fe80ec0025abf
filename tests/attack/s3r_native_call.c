/* One native request with no body, of any opcode, with the params the
 * caller names (tests only): for operations and params libs3rdma does not
 * send, such as versionId or ListObjectVersions, so the integration tests
 * can hold the native answers to the HTTP ones.
 *
 *   s3r_native_call HOST PORT ACCESS_KEY SECRET OPCODE BUCKET KEY [NAME=VALUE ...]
 *
 * OPCODE is the number (docs/protocol.md §4.2); BUCKET or KEY "-" for none.
 * Each NAME=VALUE is a header (names starting with '?' are query
 * parameters); an argument @FILE sends FILE's bytes (at most 64 KiB) as
 * the inline request body. Prints "status S", one "header NAME: VALUE" line per reply
 * header, "code C" when the reply names an S3 error code, and "body " with
 * an inline body in hex (a listing's XML). Exit status: 0 when a reply
 * came, 1 when none did, 2 on bad usage or a failed setup. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdma/rdma_client.h"

#define TIMEOUT_MS 30000

typedef struct call {
    rdma_native_call_t call; /* first: the done callback gets this */
    int replied;
    char out[256 * 1024]; /* what the reply printed */
} call_t;

static void call_done(rdma_native_call_t *call, const rdma_native_reply_t *r)
{
    call_t *c = (call_t *)call;
    if (!r)
        return;
    c->replied = 1;
    size_t cap = sizeof(c->out), n = (size_t)snprintf(c->out, cap, "status %u\n", r->status);
    for (unsigned i = 0; i < r->n_headers && n < cap; i++)
        n += (size_t)snprintf(c->out + n, cap - n, "header %.*s: %.*s\n", r->headers[i].name_len,
                              (const char *)r->headers[i].name, r->headers[i].value_len,
                              (const char *)r->headers[i].value);
    if (r->body_kind != RDMA_BODY_INLINE || n >= cap)
        return;
    const char *b = memmem(r->body, r->body_len, "<Code>", 6);
    const char *e =
        b ? memmem(b, r->body_len - (size_t)(b - (const char *)r->body), "</Code>", 7) : NULL;
    if (b && e && n < cap)
        n += (size_t)snprintf(c->out + n, cap - n, "code %.*s\n", (int)(e - b - 6), b + 6);
    if (n + 2 * r->body_len + 7 > cap)
        return;
    n += (size_t)snprintf(c->out + n, cap - n, "body ");
    for (size_t i = 0; i < r->body_len; i++)
        n += (size_t)snprintf(c->out + n, cap - n, "%02x", ((const uint8_t *)r->body)[i]);
    snprintf(c->out + n, cap - n, "\n");
}

int main(int argc, char **argv)
{
    if (argc < 8 || argc - 8 > RDMA_NATIVE_MAX_PARAMS) {
        fprintf(stderr, "usage: s3r_native_call HOST PORT ACCESS_KEY SECRET OPCODE BUCKET KEY "
                        "[NAME=VALUE ...] [@BODY_FILE]\n");
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
        fprintf(stderr, "s3r_native_call: %s\n", err);
        return 2;
    }
    rdma_native_msg_t m = {0};
    m.head.opcode = (uint8_t)atoi(argv[5]);
    m.bucket = strcmp(argv[6], "-") ? argv[6] : "";
    m.key = strcmp(argv[7], "-") ? argv[7] : "";
    m.reply_inline_max = 65536;
    static uint8_t body[RDMA_NATIVE_MAX_INLINE];
    for (int i = 8; i < argc; i++) {
        if (argv[i][0] == '@') {
            FILE *f = fopen(argv[i] + 1, "rb");
            size_t n = f ? fread(body, 1, sizeof(body), f) : 0;
            if (!f || ferror(f) || !feof(f) || n == 0) {
                fprintf(stderr, "s3r_native_call: %s: unreadable, empty or over 64 KiB\n",
                        argv[i] + 1);
                return 2;
            }
            fclose(f);
            m.body_kind = RDMA_BODY_INLINE;
            m.body = body;
            m.body_len = n;
            continue;
        }
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fprintf(stderr, "s3r_native_call: %s is not NAME=VALUE\n", argv[i]);
            return 2;
        }
        *eq = '\0';
        bool query = argv[i][0] == '?';
        m.params[m.n_params++] = (rdma_native_param_t){query ? RDMA_PARAM_QUERY : RDMA_PARAM_HEADER,
                                                       argv[i] + query, eq + 1};
    }
    static call_t c;
    c.call.done = call_done;
    if (rdma_native_submit(sess, &m, &c.call, err, sizeof(err)) < 0) {
        fprintf(stderr, "s3r_native_call: submit: %s\n", err);
        return 2;
    }
    int rc = rdma_native_wait(sess, &c.call, TIMEOUT_MS) == 0 && c.replied ? 0 : 1;
    fputs(c.out, stdout);
    rdma_session_close(sess);
    return rc;
}
