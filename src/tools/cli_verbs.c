/* The CLI's verbs on buckets and single names: mb, rb, ls, rm, stat,
 * presign (the transfer verbs are in cli_cp.c and cli_sync.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

/* "2024-05-01 12:00:00" in local time, as aws s3 ls prints it. */
static void fmt_time(int64_t t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || localtime_r(&tt, &tm) == NULL)
        snprintf(out, len, "%19s", "-");
    else
        strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* A bucket-only URL ("s3://b" or "s3://b/"), or a usage error. */
static int bucket_arg(const char *verb, int argc, char **argv, cli_s3url_t *u)
{
    if (argc != 1 || !cli_s3url_parse(argv[0], u))
        return cli_usage_error(verb, "want one s3://BUCKET");
    if (u->key[0] != '\0') {
        cli_s3url_free(u);
        return cli_usage_error(verb, "want s3://BUCKET without a key");
    }
    return CLI_OK;
}

/* An object URL ("s3://b/k", k not a prefix), or a usage error. */
static int object_arg(const char *verb, int argc, char **argv, cli_s3url_t *u)
{
    if (argc != 1 || !cli_s3url_parse(argv[0], u))
        return cli_usage_error(verb, "want one s3://BUCKET/KEY");
    if (cli_key_is_prefix(u->key)) {
        cli_s3url_free(u);
        return cli_usage_error(verb, "want s3://BUCKET/KEY (a key, not a prefix)");
    }
    return CLI_OK;
}

int cli_verb_mb(cli_t *cli, int argc, char **argv)
{
    cli_s3url_t u;
    int rc = bucket_arg("mb", argc, argv, &u);
    if (rc != CLI_OK)
        return rc;
    char what[300];
    snprintf(what, sizeof(what), "make_bucket s3://%s", u.bucket);
    cli_op_t op;
    cli_op_begin(cli, &op);
    s3r_status_t st = s3r_bucket_create(cli->client, u.bucket);
    if (st != S3R_OK) {
        rc = cli_report(cli, what, st);
    } else {
        cli_op_end(cli, &op, what);
        cli_done_line(cli, "make_bucket", argv[0], NULL);
    }
    cli_s3url_free(&u);
    return rc;
}

/* Deletes every object under prefix ("" = the whole bucket). */
static int delete_all(cli_t *cli, const char *bucket, const char *prefix)
{
    s3r_object_list_t *l;
    int rc = cli_list_all(cli, bucket, prefix, &l);
    if (rc != CLI_OK)
        return rc;
    const char **keys = malloc((l->n_objects ? l->n_objects : 1) * sizeof(*keys));
    if (keys == NULL) {
        s3r_object_list_free(l);
        return cli_report(cli, "delete", S3R_ERR_NOMEM);
    }
    for (size_t i = 0; i < l->n_objects; i++)
        keys[i] = l->objects[i].key;
    rc = cli_delete_many(cli, bucket, keys, l->n_objects);
    free(keys);
    s3r_object_list_free(l);
    return rc;
}

int cli_verb_rb(cli_t *cli, int argc, char **argv)
{
    cli_s3url_t u;
    int rc = bucket_arg("rb", argc, argv, &u);
    if (rc != CLI_OK)
        return rc;
    if (cli->o.force)
        rc = delete_all(cli, u.bucket, "");
    if (rc == CLI_OK) {
        char what[300];
        snprintf(what, sizeof(what), "remove_bucket s3://%s", u.bucket);
        cli_op_t op;
        cli_op_begin(cli, &op);
        s3r_status_t st = s3r_bucket_delete(cli->client, u.bucket);
        if (st != S3R_OK) {
            rc = cli_report(cli, what, st);
        } else {
            cli_op_end(cli, &op, what);
            cli_done_line(cli, "remove_bucket", argv[0], NULL);
        }
    }
    cli_s3url_free(&u);
    return rc;
}

static int ls_buckets(cli_t *cli)
{
    s3r_bucket_list_t *l;
    s3r_status_t st = s3r_bucket_list(cli->client, &l);
    if (st != S3R_OK)
        return cli_report(cli, "ls", st);
    for (size_t i = 0; i < l->n_buckets; i++) {
        char t[32];
        fmt_time(l->buckets[i].created, t, sizeof(t));
        cli_line(stdout, "%s %s", t, l->buckets[i].name);
    }
    s3r_bucket_list_free(l);
    return CLI_OK;
}

/* ls --versions: "PRE dir/" lines, then one line per version or delete
 * marker, "date time size version-id name", the size "DELETE" for a delete
 * marker and " (latest)" after a key's current one; names as for ls. */
static int ls_versions(cli_t *cli, const cli_s3url_t *u, size_t strip, const char *what)
{
    s3r_version_list_opts_t lo = {.prefix = u->key[0] ? u->key : NULL,
                                  .delimiter = cli->o.recursive ? NULL : "/",
                                  .all_pages = 1};
    s3r_version_list_t *l;
    cli_op_t op;
    cli_op_begin(cli, &op);
    s3r_status_t st = s3r_object_list_versions(cli->client, u->bucket, &lo, &l);
    if (st != S3R_OK)
        return cli_report(cli, what, st);
    cli_op_end(cli, &op, what);
    for (size_t i = 0; i < l->n_prefixes; i++)
        cli_line(stdout, "%27sPRE %s", "", l->prefixes[i] + strip);
    for (size_t i = 0; i < l->n_versions; i++) {
        const s3r_version_entry_t *e = &l->versions[i];
        char t[32], size[24];
        fmt_time(e->mtime, t, sizeof(t));
        if (e->delete_marker)
            snprintf(size, sizeof(size), "DELETE");
        else
            snprintf(size, sizeof(size), "%llu", (unsigned long long)e->size);
        cli_line(stdout, "%s %10s %s %s%s", t, size, e->version_id, e->key + strip,
                 e->is_latest ? " (latest)" : "");
    }
    s3r_version_list_free(l);
    return CLI_OK;
}

/* aws s3 ls: "PRE dir/" and "date time size name" lines, names relative
 * to the "directory" of the prefix (up to its last '/'); --recursive:
 * every key under the prefix, in full. */
int cli_verb_ls(cli_t *cli, int argc, char **argv)
{
    if (argc == 0 && cli->o.versions)
        return cli_usage_error("ls", "--versions lists one bucket: want s3://BUCKET[/PREFIX]");
    if (argc == 0)
        return ls_buckets(cli);
    cli_s3url_t u;
    if (argc != 1 || !cli_s3url_parse(argv[0], &u))
        return cli_usage_error("ls", "want no argument or one s3://BUCKET[/PREFIX]");
    const char *slash = strrchr(u.key, '/');
    size_t strip = cli->o.recursive || slash == NULL ? 0 : (size_t)(slash - u.key + 1);
    char what[2100];
    snprintf(what, sizeof(what), "ls %s", argv[0]);
    if (cli->o.versions) {
        int vrc = ls_versions(cli, &u, strip, what);
        cli_s3url_free(&u);
        return vrc;
    }
    s3r_list_opts_t lo = {.prefix = u.key[0] ? u.key : NULL,
                          .delimiter = cli->o.recursive ? NULL : "/",
                          .all_pages = 1};
    s3r_object_list_t *l;
    cli_op_t op;
    cli_op_begin(cli, &op);
    s3r_status_t st = s3r_object_list(cli->client, u.bucket, &lo, &l);
    int rc = CLI_OK;
    if (st != S3R_OK) {
        rc = cli_report(cli, what, st);
    } else {
        cli_op_end(cli, &op, what);
        for (size_t i = 0; i < l->n_prefixes; i++)
            cli_line(stdout, "%27sPRE %s", "", l->prefixes[i] + strip);
        for (size_t i = 0; i < l->n_objects; i++) {
            char t[32];
            fmt_time(l->objects[i].mtime, t, sizeof(t));
            cli_line(stdout, "%s %10llu %s", t, (unsigned long long)l->objects[i].size,
                     l->objects[i].key + strip);
        }
        s3r_object_list_free(l);
    }
    cli_s3url_free(&u);
    return rc;
}

int cli_verb_rm(cli_t *cli, int argc, char **argv)
{
    cli_s3url_t u;
    if (argc != 1 || !cli_s3url_parse(argv[0], &u))
        return cli_usage_error("rm", "want one s3://BUCKET/KEY");
    int rc;
    if (cli->o.recursive) {
        /* "s3://b/dir" means the directory dir/, never dir2/. */
        char *prefix = u.key[0] && !cli_key_is_prefix(u.key) ? cli_join(u.key, "") : NULL;
        rc = delete_all(cli, u.bucket, prefix ? prefix : u.key);
        free(prefix);
    } else if (cli_key_is_prefix(u.key)) {
        rc = cli_usage_error("rm", "%s is a prefix: add --recursive to delete what is under it",
                             argv[0]);
    } else {
        rc = cli_delete(cli, u.bucket, u.key);
    }
    cli_s3url_free(&u);
    return rc;
}

int cli_verb_stat(cli_t *cli, int argc, char **argv)
{
    cli_s3url_t u;
    int rc = object_arg("stat", argc, argv, &u);
    if (rc != CLI_OK)
        return rc;
    s3r_object_info_t *info;
    cli_op_t op;
    char what[2100];
    snprintf(what, sizeof(what), "stat %s", argv[0]);
    cli_op_begin(cli, &op);
    s3r_status_t st =
        s3r_object_head_version(cli->client, u.bucket, u.key, cli->o.version_id, &info);
    if (st != S3R_OK) {
        rc = cli_report(cli, what, st);
    } else {
        cli_op_end(cli, &op, what);
        char t[32];
        fmt_time(info->mtime, t, sizeof(t));
        cli_line(stdout, "Key:           %s", argv[0]);
        cli_line(stdout, "Size:          %llu", (unsigned long long)info->size);
        cli_line(stdout, "ETag:          %s", info->etag ? info->etag : "-");
        cli_line(stdout, "Content-Type:  %s", info->content_type ? info->content_type : "-");
        cli_line(stdout, "Last-Modified: %s", t);
        if (info->version_id != NULL)
            cli_line(stdout, "VersionId:     %s", info->version_id);
        cli_line(stdout, "StorageClass:  %s",
                 info->storage_class ? info->storage_class : "STANDARD");
        for (size_t i = 0; i < info->n_meta; i++)
            cli_line(stdout, "Meta:          %s=%s", info->meta[i].name, info->meta[i].value);
        s3r_object_info_free(info);
    }
    cli_s3url_free(&u);
    return rc;
}

int cli_verb_presign(cli_t *cli, int argc, char **argv)
{
    cli_s3url_t u;
    int rc = object_arg("presign", argc, argv, &u);
    if (rc != CLI_OK)
        return rc;
    if (cli->anonymous) {
        cli_s3url_free(&u);
        return cli_usage_error("presign", "a presigned URL is signed with credentials: drop "
                                          "--no-sign-request");
    }
    char url[16384];
    s3r_status_t st =
        s3r_presign_url(cli->client, "GET", u.bucket, u.key, cli->o.expires, url, sizeof(url));
    if (st == S3R_OK)
        cli_line(stdout, "%s", url); /* the key is percent-encoded: nothing to mask */
    else if (st == S3R_ERR_INVALID_ARG)
        rc = cli_usage_error("presign", "--expires-in must be 1 to 604800 seconds");
    else
        rc = cli_report(cli, "presign", st);
    cli_s3url_free(&u);
    return rc;
}
