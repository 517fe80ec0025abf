/* The CLI's errors: the real cause from the library's last error, what to
 * do about it, and the exit code (docs/cli.md). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/cli.h"

int cli_exit_code(s3r_status_t st)
{
    switch (st) {
    case S3R_OK:
        return CLI_OK;
    case S3R_ERR_NO_SUCH_BUCKET:
    case S3R_ERR_NO_SUCH_KEY:
        return CLI_NOTFOUND;
    case S3R_ERR_ACCESS_DENIED:
        return CLI_DENIED;
    case S3R_ERR_INVALID_ARG:
        return CLI_USAGE;
    default:
        return CLI_FAIL;
    }
}

int cli_first_error(int rc, int next)
{
    return rc != CLI_OK ? rc : next;
}

/* What to do about st (NULL when the message says it all). */
static const char *hint(const cli_t *cli, s3r_status_t st)
{
    switch (st) {
    case S3R_ERR_NO_SUCH_BUCKET:
        return "the bucket does not exist: 's3rdma ls' lists yours, 's3rdma mb s3://NAME' "
               "creates one";
    case S3R_ERR_NO_SUCH_KEY:
        return "no object has that key: 's3rdma ls s3://BUCKET/PREFIX/' lists the keys";
    case S3R_ERR_ACCESS_DENIED:
        if (cli->anonymous)
            return "the request was anonymous (--no-sign-request): only what a bucket policy "
                   "or an ACL grants everyone is served; give credentials for the rest";
        return "check the access key and secret (flags, AWS_ACCESS_KEY_ID / "
               "AWS_SECRET_ACCESS_KEY, or the profile; -v says which were used), the region, "
               "and that the bucket is yours";
    case S3R_ERR_CONNECT:
    case S3R_ERR_TIMEOUT:
        return cli->is_default ? "is s3rdmad running? No endpoint was configured, so the "
                                 "default http://127.0.0.1:9000 was used: set "
                                 "--endpoint-url, AWS_ENDPOINT_URL or endpoint_url in the "
                                 "profile"
                               : "is s3rdmad running at that endpoint? (--endpoint-url, "
                                 "AWS_ENDPOINT_URL or the profile's endpoint_url; -v says "
                                 "which)";
    case S3R_ERR_BUCKET_NOT_EMPTY:
        return "delete its objects first ('s3rdma rm --recursive s3://BUCKET') or use "
               "'s3rdma rb --force'";
    case S3R_ERR_BUCKET_EXISTS:
        return "bucket names are global on the server: choose another name";
    case S3R_ERR_RDMA_UNAVAILABLE:
    case S3R_ERR_RDMA_DECLINED:
        return "no RDMA transfer was possible: check --rdma-endpoint and that the server has "
               "RDMA enabled, or drop --no-fallback to use HTTP";
    default:
        return NULL;
    }
}

int cli_report(const cli_t *cli, const char *what, s3r_status_t st)
{
    s3r_error_info_t e;
    if (s3r_client_last_error(cli->client, &e) != S3R_OK || e.status != st)
        cli_line(stderr, "s3rdma: %s: %s", what, s3r_strerror(st));
    else if (e.code[0] != '\0')
        cli_line(stderr, "s3rdma: %s: %s: %s (HTTP %d, %s)", what, e.code, e.message, e.http_status,
                 s3r_transport_name(e.transport));
    else if (e.http_status != 0)
        cli_line(stderr, "s3rdma: %s: %s: %s (HTTP %d)", what, s3r_strerror(st), e.message,
                 e.http_status);
    else
        cli_line(stderr, "s3rdma: %s: %s: %s", what, s3r_strerror(st), e.message);
    const char *h = hint(cli, st);
    if (h != NULL)
        cli_line(stderr, "  hint: %s", h);
    return cli_exit_code(st);
}

int cli_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;
    char *why;
    va_start(ap, fmt);
    int n = vasprintf(&why, fmt, ap);
    va_end(ap);
    cli_line(stderr, "s3rdma: %s: %s (s3rdma %s --help)", verb, n < 0 ? "bad usage" : why, verb);
    if (n >= 0)
        free(why);
    return CLI_USAGE;
}
