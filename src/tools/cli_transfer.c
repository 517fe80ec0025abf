/* One object moved (upload, download, server-side copy) or deleted: the
 * library call, its progress bar, its completion line and, with -v, the
 * transport that actually carried it. The verbs decide which objects. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/cli.h"

/* ---- Which transport carried an operation (-v) --------------------------- */

void cli_op_begin(const cli_t *cli, cli_op_t *op)
{
    if (cli->o.verbose)
        s3r_client_stats(cli->client, &op->before);
}

void cli_op_end(const cli_t *cli, const cli_op_t *op, const char *what)
{
    if (!cli->o.verbose)
        return;
    s3r_stats_t a;
    s3r_client_stats(cli->client, &a);
    const s3r_stats_t *b = &op->before;
    char via[128] = "";
    /* http_ops counts object GETs and PUTs only: an operation that moved
     * no object and no native request went over HTTP. */
    if (a.native_ops > b->native_ops)
        strcat(via, " native");
    if (a.token_ops > b->token_ops)
        strcat(via, " token");
    if (a.http_ops > b->http_ops || via[0] == '\0')
        strcat(via, " http");
    char fell[64] = "";
    if (a.fallbacks > b->fallbacks)
        snprintf(fell, sizeof(fell), " (%llu RDMA attempt(s) fell back to HTTP)",
                 (unsigned long long)(a.fallbacks - b->fallbacks));
    cli_line(stderr, "s3rdma: %s: via%s%s", what, via, fell);
}

/* ---- Objects --------------------------------------------------------------- */

/* stdin, whole, into memory (S3 needs the length before the PUT starts). */
static int read_stdin(void **data_p, uint64_t *len_p)
{
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    while (buf != NULL) {
        size_t n = fread(buf + len, 1, cap - len, stdin);
        len += n;
        if (n == 0)
            break;
        if (len == cap) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL)
                free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    if (buf == NULL || ferror(stdin)) {
        cli_line(stderr, "s3rdma: reading stdin: %s", buf ? strerror(errno) : "out of memory");
        free(buf);
        return CLI_FAIL;
    }
    *data_p = buf;
    *len_p = len;
    return CLI_OK;
}

int cli_upload(cli_t *cli, const char *path, const char *bucket, const char *key)
{
    char to[2048], what[2100];
    snprintf(to, sizeof(to), "s3://%s/%s", bucket, key);
    snprintf(what, sizeof(what), "upload %s", to);
    s3r_put_opts_t po = {.content_type = cli->o.content_type,
                         .meta = cli->o.meta,
                         .n_meta = cli->o.n_meta,
                         .storage_class = cli->o.storage_class};
    cli_op_t op;
    s3r_status_t st;
    cli_op_begin(cli, &op);
    if (strcmp(path, "-") == 0) {
        void *data;
        uint64_t len;
        int rc = read_stdin(&data, &len);
        if (rc != CLI_OK)
            return rc;
        st = s3r_object_put(cli->client, bucket, key, data, len, &po);
        free(data);
    } else {
        struct stat sb;
        if (stat(path, &sb) < 0) {
            bool missing = errno == ENOENT;
            cli_line(stderr, "s3rdma: upload %s: %s", path,
                     missing ? "no such file" : strerror(errno));
            return missing ? CLI_NOTFOUND : CLI_FAIL;
        }
        if (!S_ISREG(sb.st_mode)) {
            cli_line(stderr, "s3rdma: upload %s: not a regular file", path);
            return CLI_FAIL;
        }
        cli_progress_begin(cli, path, (uint64_t)sb.st_size);
        st = s3r_object_put_file(cli->client, bucket, key, path, &po);
        cli_progress_end(cli);
    }
    if (st != S3R_OK)
        return cli_report(cli, what, st);
    cli_op_end(cli, &op, what);
    cli_done_line(cli, cli->move ? "move" : "upload", path, to);
    return CLI_OK;
}

int cli_download(cli_t *cli, const char *bucket, const char *key, const char *path)
{
    char from[2048], what[2100];
    snprintf(from, sizeof(from), "s3://%s/%s", bucket, key);
    snprintf(what, sizeof(what), "download %s", from);
    cli_op_t op;
    s3r_status_t st;
    s3r_get_opts_t go = {.version_id = cli->o.version_id};
    cli_op_begin(cli, &op);
    if (strcmp(path, "-") == 0) {
        void *data;
        uint64_t n;
        st = s3r_object_get_alloc(cli->client, bucket, key, &go, &data, &n);
        if (st != S3R_OK)
            return cli_report(cli, what, st);
        size_t w = fwrite(data, 1, (size_t)n, stdout);
        s3r_free(data);
        if (w != n || fflush(stdout) != 0) {
            cli_line(stderr, "s3rdma: %s: writing stdout: %s", what, strerror(errno));
            return CLI_FAIL;
        }
        cli_op_end(cli, &op, what);
        return CLI_OK; /* stdout carries the object: no line */
    }
    if (cli_mkdirs_for(path) < 0) {
        cli_line(stderr, "s3rdma: %s: creating the directories of %s: %s", what, path,
                 strerror(errno));
        return CLI_FAIL;
    }
    cli_progress_begin(cli, from, 0);
    st = s3r_object_get_file(cli->client, bucket, key, path, &go);
    cli_progress_end(cli);
    if (st != S3R_OK) {
        unlink(path); /* no half-written file left behind */
        return cli_report(cli, what, st);
    }
    cli_op_end(cli, &op, what);
    cli_done_line(cli, cli->move ? "move" : "download", from, path);
    return CLI_OK;
}

int cli_copy(cli_t *cli, const char *sb, const char *sk, const char *db, const char *dk)
{
    char from[2048], to[2048], what[4200];
    snprintf(from, sizeof(from), "s3://%s/%s", sb, sk);
    snprintf(to, sizeof(to), "s3://%s/%s", db, dk);
    snprintf(what, sizeof(what), "copy %s to %s", from, to);
    cli_op_t op;
    cli_op_begin(cli, &op);
    s3r_status_t st = s3r_object_copy(cli->client, sb, sk, db, dk);
    if (st != S3R_OK)
        return cli_report(cli, what, st);
    cli_op_end(cli, &op, what);
    cli_done_line(cli, cli->move ? "move" : "copy", from, to);
    return CLI_OK;
}

int cli_delete(cli_t *cli, const char *bucket, const char *key)
{
    char url[2048], what[2100];
    snprintf(url, sizeof(url), "s3://%s/%s", bucket, key);
    snprintf(what, sizeof(what), "delete %s", url);
    cli_op_t op;
    cli_op_begin(cli, &op);
    s3r_status_t st = s3r_object_delete_version(cli->client, bucket, key, cli->o.version_id);
    if (st != S3R_OK)
        return cli_report(cli, what, st);
    cli_op_end(cli, &op, what);
    s3r_version_info_t vi;
    if (cli->o.version_id != NULL) {
        char label[2048 + S3R_VERSION_ID_MAX + 32];
        snprintf(label, sizeof(label), "%s (version %s)", url, cli->o.version_id);
        cli_done_line(cli, "delete", label, NULL);
    } else if (s3r_client_last_version(cli->client, &vi) == S3R_OK && vi.delete_marker) {
        char label[2048 + S3R_VERSION_ID_MAX + 32];
        snprintf(label, sizeof(label), "%s (delete marker %s)", url, vi.version_id);
        cli_done_line(cli, "delete", label, NULL);
    } else {
        cli_done_line(cli, "delete", url, NULL);
    }
    return CLI_OK;
}

/* The error s3r_object_delete_many reported for key, or NULL. */
static const s3r_delete_error_t *delete_error_of(const s3r_delete_errors_t *errs, const char *key)
{
    for (size_t i = 0; errs && i < errs->n_errors; i++)
        if (strcmp(errs->errors[i].key, key) == 0)
            return &errs->errors[i];
    return NULL;
}

int cli_delete_many(cli_t *cli, const char *bucket, const char *const *keys, size_t n)
{
    char what[300];
    snprintf(what, sizeof(what), "delete in s3://%s", bucket);
    cli_op_t op;
    cli_op_begin(cli, &op);
    s3r_delete_errors_t *errs = NULL;
    s3r_status_t st = s3r_object_delete_many(cli->client, bucket, keys, n, &errs);
    if (st != S3R_OK)
        return cli_report(cli, what, st);
    cli_op_end(cli, &op, what);
    int rc = CLI_OK;
    for (size_t i = 0; i < n; i++) {
        char url[2048];
        snprintf(url, sizeof(url), "s3://%s/%s", bucket, keys[i]);
        const s3r_delete_error_t *e = delete_error_of(errs, keys[i]);
        if (e == NULL) {
            cli_done_line(cli, "delete", url, NULL);
            continue;
        }
        cli_line(stderr, "s3rdma: delete %s: %s: %s", url, e->code, e->message);
        rc = cli_first_error(rc, strcmp(e->code, "AccessDenied") == 0 ? CLI_DENIED : CLI_FAIL);
    }
    s3r_delete_errors_free(errs);
    return rc;
}

int cli_list_all(cli_t *cli, const char *bucket, const char *prefix, s3r_object_list_t **list_p)
{
    s3r_list_opts_t lo = {.prefix = prefix[0] ? prefix : NULL, .all_pages = 1};
    s3r_status_t st = s3r_object_list(cli->client, bucket, &lo, list_p);
    if (st == S3R_OK)
        return CLI_OK;
    char what[2100];
    snprintf(what, sizeof(what), "list s3://%s/%s", bucket, prefix);
    return cli_report(cli, what, st);
}
