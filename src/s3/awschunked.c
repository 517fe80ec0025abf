/* Streaming aws-chunked decoder; see awschunked.h for the wire form.
 *
 * A byte-at-a-time state machine over a bounded line buffer. Chunk data is
 * never copied: it is handed to the emit callback straight from the caller's
 * input. Decoded bytes are emitted before their chunk's signature has been
 * checked (the signature follows the data), so a caller must not commit
 * anything until s3_awschunk_finish() returns AWSCHUNK_OK.
 *
 * Wire forms accepted after the final zero-size chunk line:
 *   no trailer:   "\r\n"
 *   trailer:      ("name:value\r\n")* ["x-amz-trailer-signature:hex\r\n"] "\r\n"
 * For the trailer forms one blank line directly after the final chunk line is
 * also tolerated (some encoders emit the zero-length chunk's data CRLF before
 * the trailer); a body that ends right there has no trailers. */
#include "s3/awschunked.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/s3r_limits.h"
#include "common/sigv4.h"

/* Longest size line or trailer line; a signed size line is ~100 bytes and
 * the longest checksum trailer (sha256, base64) ~70. */
#define AWSCHUNK_LINE_MAX     1024
#define AWSCHUNK_MAX_TRAILERS 16
#define AWSCHUNK_SIG_HEX      64
#define TRAILER_SIG_NAME      "x-amz-trailer-signature"

typedef enum chunk_state {
    ST_SIZE_LINE,  /* reading "hex[;ext]\r\n" */
    ST_DATA,       /* chunk_left payload bytes to go */
    ST_DATA_CR,    /* expecting the '\r' after the data */
    ST_DATA_LF,    /* expecting the '\n' after the data */
    ST_FINAL_LINE, /* no trailer: expecting the empty line after "0...\r\n" */
    ST_TRAILER,    /* reading trailer lines up to the empty one */
    ST_DONE,       /* everything read; more input is an error */
} chunk_state_t;

typedef struct trailer_kv {
    char *name; /* lower-case */
    char *value;
} trailer_kv_t;

struct awschunk {
    awschunk_params_t p;
    uint8_t key[SHA256_LEN];
    char *amz_date;
    char *scope;
    char prev_sig[AWSCHUNK_SIG_HEX + 1];

    awschunk_emit_fn emit;
    void *ctx;

    chunk_state_t state;
    awschunk_status_t err;
    bool finished;

    char line[AWSCHUNK_LINE_MAX];
    size_t line_len;

    uint64_t chunk_left;
    digest_t *chunk_digest;               /* signed chunks: sha256 of this chunk */
    char chunk_sig[AWSCHUNK_SIG_HEX + 1]; /* the signature the client sent */
    uint64_t decoded;

    trailer_kv_t trailers[AWSCHUNK_MAX_TRAILERS];
    size_t n_trailers;
    bool blank_before_trailer; /* the tolerated blank line was seen */
    bool have_trailer_sig;
    char trailer_sig[AWSCHUNK_SIG_HEX + 1];
    buf_t trailer_canon; /* "name:value\n" per trailer, for the trailer signature */
    buf_t sts;           /* string to sign of the chunk or trailer being verified */
};

awschunk_t *s3_awschunk_new(const awschunk_params_t *params, awschunk_emit_fn emit, void *ctx)
{
    if (!params || !emit)
        return NULL;
    if (params->signed_chunks &&
        (!params->signing_key || !params->amz_date || !params->scope || !params->seed_signature ||
         strlen(params->seed_signature) != AWSCHUNK_SIG_HEX))
        return NULL;
    awschunk_t *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->p = *params;
    d->emit = emit;
    d->ctx = ctx;
    d->state = ST_SIZE_LINE;
    buf_init(&d->trailer_canon, AWSCHUNK_MAX_TRAILERS * AWSCHUNK_LINE_MAX);
    buf_init(&d->sts, 512);
    if (params->signed_chunks) {
        memcpy(d->key, params->signing_key, SHA256_LEN);
        d->amz_date = strdup(params->amz_date);
        d->scope = strdup(params->scope);
        if (!d->amz_date || !d->scope) {
            s3_awschunk_free(d);
            return NULL;
        }
        for (size_t i = 0; i <= AWSCHUNK_SIG_HEX; i++) {
            char c = params->seed_signature[i];
            d->prev_sig[i] = (c >= 'A' && c <= 'F') ? (char)(c - 'A' + 'a') : c;
        }
    }
    /* The copies above are ours; the caller's strings need not outlive us. */
    d->p.signing_key = NULL;
    d->p.amz_date = NULL;
    d->p.scope = NULL;
    d->p.seed_signature = NULL;
    return d;
}

void s3_awschunk_free(awschunk_t *d)
{
    if (!d)
        return;
    hash_digest_free(d->chunk_digest);
    for (size_t i = 0; i < d->n_trailers; i++) {
        free(d->trailers[i].name);
        free(d->trailers[i].value);
    }
    buf_free(&d->trailer_canon);
    buf_free(&d->sts);
    free(d->amz_date);
    free(d->scope);
    memset(d->key, 0, sizeof(d->key));
    free(d);
}

static awschunk_status_t fail(awschunk_t *d, awschunk_status_t st)
{
    d->err = st;
    return st;
}

/* Copies a 64-digit hex signature lower-cased; false if it is not one. */
static bool take_sig(const char *s, size_t len, char out[AWSCHUNK_SIG_HEX + 1])
{
    if (len != AWSCHUNK_SIG_HEX)
        return false;
    for (size_t i = 0; i < len; i++) {
        int v = hash_hex_digit_value(s[i]);
        if (v < 0)
            return false;
        out[i] = "0123456789abcdef"[v];
    }
    out[len] = '\0';
    return true;
}

/* Checks sig_hex against HMAC(key, d->sts) (built by the caller, rc its
 * builder's result) and makes it the previous signature. */
static awschunk_status_t verify_and_chain(awschunk_t *d, int rc, const char *sig_hex)
{
    if (rc != 0)
        return fail(d, AWSCHUNK_ERR_MALFORMED);
    char expect[AWSCHUNK_SIG_HEX + 1];
    sigv4_sign(d->key, d->sts.data, d->sts.len, expect);
    if (!hash_ct_equal(expect, sig_hex, AWSCHUNK_SIG_HEX))
        return fail(d, AWSCHUNK_ERR_SIGNATURE);
    memcpy(d->prev_sig, expect, sizeof(expect));
    return AWSCHUNK_OK;
}

static awschunk_status_t verify_chunk(awschunk_t *d)
{
    uint8_t h[SHA256_LEN];
    if (d->chunk_digest) {
        hash_digest_final(d->chunk_digest, h);
        d->chunk_digest = NULL;
    } else {
        hash_sha256("", 0, h);
    }
    buf_reset(&d->sts);
    return verify_and_chain(
        d, sigv4_chunk_string_to_sign(d->amz_date, d->scope, d->prev_sig, h, &d->sts),
        d->chunk_sig);
}

static awschunk_status_t verify_trailer(awschunk_t *d)
{
    uint8_t h[SHA256_LEN];
    hash_sha256(d->trailer_canon.data ? d->trailer_canon.data : "", d->trailer_canon.len, h);
    buf_reset(&d->sts);
    return verify_and_chain(
        d, sigv4_trailer_string_to_sign(d->amz_date, d->scope, d->prev_sig, h, &d->sts),
        d->trailer_sig);
}

/* "hex-size[;chunk-signature=sig]" without its CRLF. */
static awschunk_status_t on_size_line(awschunk_t *d, const char *s, size_t len)
{
    uint64_t size = 0;
    size_t i = 0;
    for (; i < len; i++) {
        int v = hash_hex_digit_value(s[i]);
        if (v < 0)
            break;
        if (size > (S3R_MAX_AWS_CHUNK >> 4))
            return fail(d, AWSCHUNK_ERR_MALFORMED); /* also catches overflow */
        size = size << 4 | (uint64_t)v;
    }
    if (i == 0 || size > S3R_MAX_AWS_CHUNK)
        return fail(d, AWSCHUNK_ERR_MALFORMED);

    const char *ext = s + i;
    size_t ext_len = len - i;
    if (d->p.signed_chunks) {
        static const char pfx[] = ";chunk-signature=";
        size_t plen = sizeof(pfx) - 1;
        if (ext_len < plen || memcmp(ext, pfx, plen) != 0 ||
            !take_sig(ext + plen, ext_len - plen, d->chunk_sig))
            return fail(d, AWSCHUNK_ERR_MALFORMED);
    } else if (ext_len && ext[0] != ';') {
        /* Unsigned chunks may carry extensions, which mean nothing to us. */
        return fail(d, AWSCHUNK_ERR_MALFORMED);
    }

    if (d->p.decoded_length != UINT64_MAX && size > d->p.decoded_length - d->decoded)
        return fail(d, AWSCHUNK_ERR_LENGTH);

    if (size == 0) {
        if (d->p.signed_chunks && verify_chunk(d) != AWSCHUNK_OK)
            return d->err;
        d->state = d->p.trailer ? ST_TRAILER : ST_FINAL_LINE;
        return AWSCHUNK_OK;
    }
    if (d->p.signed_chunks) {
        d->chunk_digest = hash_digest_sha256_new();
        if (!d->chunk_digest)
            return fail(d, AWSCHUNK_ERR_CALLBACK);
    }
    d->chunk_left = size;
    d->state = ST_DATA;
    return AWSCHUNK_OK;
}

static bool is_token_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* One trailer line without its CRLF; an empty one ends the trailer. */
static awschunk_status_t on_trailer_line(awschunk_t *d, const char *s, size_t len)
{
    if (len == 0) {
        if (d->n_trailers == 0 && !d->have_trailer_sig && !d->blank_before_trailer) {
            d->blank_before_trailer = true;
            return AWSCHUNK_OK;
        }
        if (d->p.signed_chunks) {
            if (!d->have_trailer_sig)
                return fail(d, AWSCHUNK_ERR_SIGNATURE);
            if (verify_trailer(d) != AWSCHUNK_OK)
                return d->err;
        }
        d->state = ST_DONE;
        return AWSCHUNK_OK;
    }
    if (d->have_trailer_sig)
        return fail(d, AWSCHUNK_ERR_MALFORMED); /* the signature comes last */

    const char *colon = memchr(s, ':', len);
    if (!colon || colon == s)
        return fail(d, AWSCHUNK_ERR_MALFORMED);
    size_t nlen = (size_t)(colon - s);
    for (size_t i = 0; i < nlen; i++) {
        if (!is_token_char((unsigned char)s[i]))
            return fail(d, AWSCHUNK_ERR_MALFORMED);
    }
    const char *v = colon + 1, *vend = s + len;
    while (v < vend && (*v == ' ' || *v == '\t'))
        v++;
    while (vend > v && (vend[-1] == ' ' || vend[-1] == '\t'))
        vend--;
    size_t vlen = (size_t)(vend - v);
    for (size_t i = 0; i < vlen; i++) {
        if ((unsigned char)v[i] < 0x20 && v[i] != '\t')
            return fail(d, AWSCHUNK_ERR_MALFORMED);
    }

    if (nlen == sizeof(TRAILER_SIG_NAME) - 1 && strncasecmp(s, TRAILER_SIG_NAME, nlen) == 0) {
        if (!take_sig(v, vlen, d->trailer_sig))
            return fail(d, AWSCHUNK_ERR_MALFORMED);
        d->have_trailer_sig = true;
        return AWSCHUNK_OK;
    }

    if (d->n_trailers == AWSCHUNK_MAX_TRAILERS)
        return fail(d, AWSCHUNK_ERR_MALFORMED);
    trailer_kv_t *kv = &d->trailers[d->n_trailers];
    kv->name = strndup(s, nlen);
    kv->value = strndup(v, vlen);
    if (!kv->name || !kv->value) {
        free(kv->name);
        free(kv->value);
        kv->name = kv->value = NULL;
        return fail(d, AWSCHUNK_ERR_CALLBACK);
    }
    for (char *c = kv->name; *c; c++) {
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    }
    d->n_trailers++;
    /* The signed form of a trailer is its canonical header line. */
    if (buf_append_str(&d->trailer_canon, kv->name) != 0 ||
        buf_append(&d->trailer_canon, ":", 1) != 0 ||
        buf_append_str(&d->trailer_canon, kv->value) != 0 ||
        buf_append(&d->trailer_canon, "\n", 1) != 0)
        return fail(d, AWSCHUNK_ERR_MALFORMED);
    return AWSCHUNK_OK;
}

/* Accumulates one byte of a CRLF-terminated line. Returns 1 when a complete
 * line (without CRLF) is in d->line, 0 when more is needed, -1 on error. */
static int line_byte(awschunk_t *d, char c)
{
    if (c == '\n') {
        if (d->line_len == 0 || d->line[d->line_len - 1] != '\r')
            return -1; /* a bare LF */
        d->line_len--;
        return 1;
    }
    if (d->line_len && d->line[d->line_len - 1] == '\r')
        return -1; /* CR not followed by LF */
    if (d->line_len == AWSCHUNK_LINE_MAX)
        return -1;
    d->line[d->line_len++] = c;
    return 0;
}

awschunk_status_t s3_awschunk_feed(awschunk_t *d, const void *data, size_t len)
{
    if (d->err)
        return d->err;
    const char *p = data, *end = p + len;
    while (p < end) {
        switch (d->state) {
        case ST_DATA: {
            size_t n = (size_t)(end - p);
            if (n > d->chunk_left)
                n = (size_t)d->chunk_left;
            if (d->chunk_digest)
                hash_digest_update(d->chunk_digest, p, n);
            if (d->emit(d->ctx, p, n) != 0)
                return fail(d, AWSCHUNK_ERR_CALLBACK);
            d->decoded += n;
            d->chunk_left -= n;
            p += n;
            if (d->chunk_left == 0)
                d->state = ST_DATA_CR;
            break;
        }
        case ST_DATA_CR:
            if (*p++ != '\r')
                return fail(d, AWSCHUNK_ERR_MALFORMED);
            d->state = ST_DATA_LF;
            break;
        case ST_DATA_LF:
            if (*p++ != '\n')
                return fail(d, AWSCHUNK_ERR_MALFORMED);
            if (d->p.signed_chunks && verify_chunk(d) != AWSCHUNK_OK)
                return d->err;
            d->state = ST_SIZE_LINE;
            break;
        case ST_SIZE_LINE:
        case ST_FINAL_LINE:
        case ST_TRAILER: {
            int r = line_byte(d, *p++);
            if (r < 0)
                return fail(d, AWSCHUNK_ERR_MALFORMED);
            if (r == 0)
                break;
            size_t ll = d->line_len;
            d->line_len = 0;
            awschunk_status_t st = AWSCHUNK_OK;
            if (d->state == ST_SIZE_LINE)
                st = on_size_line(d, d->line, ll);
            else if (d->state == ST_TRAILER)
                st = on_trailer_line(d, d->line, ll);
            else if (ll != 0)
                st = fail(d, AWSCHUNK_ERR_MALFORMED);
            else
                d->state = ST_DONE;
            if (st != AWSCHUNK_OK)
                return st;
            break;
        }
        case ST_DONE:
            return fail(d, AWSCHUNK_ERR_MALFORMED); /* bytes after the end */
        }
    }
    return AWSCHUNK_OK;
}

awschunk_status_t s3_awschunk_finish(awschunk_t *d)
{
    if (d->err)
        return d->err;
    bool complete = d->state == ST_DONE;
    /* A trailer form whose body ends after the blank line that follows the
     * final chunk simply has no trailers. */
    if (d->state == ST_TRAILER && d->blank_before_trailer && d->n_trailers == 0 &&
        !d->have_trailer_sig && d->line_len == 0)
        complete = true;
    if (!complete)
        return fail(d, AWSCHUNK_ERR_TRUNCATED);
    if (d->p.decoded_length != UINT64_MAX && d->decoded != d->p.decoded_length)
        return fail(d, AWSCHUNK_ERR_LENGTH);
    d->state = ST_DONE;
    d->finished = true;
    return AWSCHUNK_OK;
}

const char *s3_awschunk_trailer(const awschunk_t *d, const char *name)
{
    if (!d || !d->finished || !name)
        return NULL;
    for (size_t i = 0; i < d->n_trailers; i++) {
        if (strcasecmp(d->trailers[i].name, name) == 0)
            return d->trailers[i].value;
    }
    return NULL;
}

uint64_t s3_awschunk_decoded_bytes(const awschunk_t *d)
{
    return d->decoded;
}
