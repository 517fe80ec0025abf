/* A program built the way a user of an installed libs3rdma builds one:
 *   cc probe.c $(pkg-config --cflags --libs s3rdma)
 * Usage: probe ENDPOINT BUCKET (credentials from AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY). Creates BUCKET, stores an object, reads it back,
 * removes both; prints "ok N" (N = bytes read back) and exits 0, or names the
 * failing call and exits 1. */
#include <s3rdma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check(s3r_status_t st, const char *what)
{
    if (st == S3R_OK)
        return 0;
    fprintf(stderr, "probe: %s: %s\n", what, s3r_strerror(st));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: probe ENDPOINT BUCKET\n");
        return 2;
    }
    const char *bucket = argv[2];
    static const char body[] = "stored through an installed libs3rdma";
    s3r_config_t cfg;
    s3r_config_init(&cfg);
    cfg.endpoint = argv[1];
    cfg.access_key = getenv("AWS_ACCESS_KEY_ID");
    cfg.secret_key = getenv("AWS_SECRET_ACCESS_KEY");
    cfg.use_rdma = 0;
    cfg.quiet = 1;
    s3r_client_t *client;
    if (check(s3r_client_create(&cfg, &client), "s3r_client_create"))
        return 1;
    char got[128];
    uint64_t len = 0;
    int failed = check(s3r_bucket_create(client, bucket), "s3r_bucket_create") ||
                 check(s3r_object_put(client, bucket, "probe", body, sizeof(body) - 1, NULL),
                       "s3r_object_put") ||
                 check(s3r_object_get(client, bucket, "probe", got, sizeof(got), NULL, &len),
                       "s3r_object_get") ||
                 check(s3r_object_delete(client, bucket, "probe"), "s3r_object_delete") ||
                 check(s3r_bucket_delete(client, bucket), "s3r_bucket_delete");
    if (!failed && (len != sizeof(body) - 1 || memcmp(got, body, len) != 0)) {
        fprintf(stderr, "probe: read back %llu bytes that differ from what was stored\n",
                (unsigned long long)len);
        failed = 1;
    }
    s3r_client_destroy(client);
    if (!failed)
        printf("ok %llu\n", (unsigned long long)len);
    return failed;
}
