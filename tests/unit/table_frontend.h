/* A frontend for unit tests: a request whose headers and raw query
 * arguments are tables, read through s3_frontend_t as the HTTP and native
 * frontends are, so the S3 layer's request readers (auth.c, the HTTP
 * router) run without a server. Include it in one test file; its functions
 * are static. */
#ifndef S3R_TESTS_TABLE_FRONTEND_H
#define S3R_TESTS_TABLE_FRONTEND_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "s3/s3_request.h"
#include "s3/s3_util.h"

/* A request as a frontend would hold it: headers and raw query arguments. */
typedef struct table_req {
    s3_req_t req;               /* first: the frontend's calls get this */
    const char *const *headers; /* name, value, ..., NULL */
    const char *const *query;   /* name, raw value (NULL: a bare flag), ..., NULL name */
    char *decoded[16];          /* s3_req_query's values, by argument index */
} table_req_t;

static const char *table_header(s3_req_t *req, const char *name)
{
    const table_req_t *t = (table_req_t *)req;
    for (size_t i = 0; t->headers[i]; i += 2)
        if (strcasecmp(t->headers[i], name) == 0)
            return t->headers[i + 1];
    return NULL;
}

static void table_each_header(s3_req_t *req, s3_header_fn fn, void *ctx)
{
    const table_req_t *t = (table_req_t *)req;
    for (size_t i = 0; t->headers[i]; i += 2)
        if (fn(ctx, t->headers[i], t->headers[i + 1]))
            return;
}

static const char *table_query(s3_req_t *req, const char *name)
{
    table_req_t *t = (table_req_t *)req;
    for (size_t i = 0; t->query[i]; i += 2) {
        if (strcmp(t->query[i], name) != 0)
            continue;
        const char *raw = t->query[i + 1] ? t->query[i + 1] : "";
        if (!t->decoded[i / 2])
            t->decoded[i / 2] = s3_url_decode(raw, strlen(raw), true);
        return t->decoded[i / 2];
    }
    return NULL;
}

static bool table_has_query(s3_req_t *req, const char *name)
{
    const table_req_t *t = (table_req_t *)req;
    for (size_t i = 0; t->query[i]; i += 2)
        if (strcmp(t->query[i], name) == 0)
            return true;
    return false;
}

static void table_each_raw_query(s3_req_t *req, s3_query_fn fn, void *ctx)
{
    const table_req_t *t = (table_req_t *)req;
    for (size_t i = 0; t->query[i]; i += 2)
        if (fn(ctx, t->query[i], t->query[i + 1]))
            return;
}

static void table_remote(s3_req_t *req, char *out, size_t cap)
{
    (void)req;
    snprintf(out, cap, "-");
}

static void table_send(s3_req_t *req, int status, s3_out_t *out)
{
    (void)status;
    free(out->data);
    req->replied = true;
}

static const s3_frontend_t table_frontend = {
    .transport = S3_TRANSPORT_HTTP,
    .remote = table_remote,
    .header = table_header,
    .each_header = table_each_header,
    .query = table_query,
    .has_query = table_has_query,
    .each_raw_query = table_each_raw_query,
    .send = table_send,
};

/* Starts t's request (headers and query set) on srv with method. */
static void table_req_init(table_req_t *t, s3_server_t *srv, const char *method)
{
    s3_req_init(&t->req, srv, &table_frontend, method);
}

/* Releases what the request and table_query hold. */
static void table_req_release(table_req_t *t)
{
    for (size_t i = 0; i < sizeof(t->decoded) / sizeof(t->decoded[0]); i++)
        free(t->decoded[i]);
    s3_req_release(&t->req);
}

#endif
