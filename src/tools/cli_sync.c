/* sync: a local directory to an S3 prefix or back, copying only what
 * differs, as aws s3 sync decides it: a file is copied when the other side
 * lacks it, its size differs, or the source is newer than the copy. A
 * download takes the object's Last-Modified as its mtime, so the next sync
 * in either direction sees the two as equal. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "tools/cli.h"

static int cmp_entry_key(const void *key, const void *entry)
{
    return strcmp(key, ((const s3r_object_entry_t *)entry)->key);
}

/* The entry of l with this key (ListObjectsV2 returns keys sorted). */
static const s3r_object_entry_t *find(const s3r_object_list_t *l, const char *key)
{
    if (l->n_objects == 0)
        return NULL; /* objects may be NULL then */
    return bsearch(key, l->objects, l->n_objects, sizeof(l->objects[0]), cmp_entry_key);
}

struct up_sync {
    cli_t *cli;
    const char *dir, *bucket, *prefix;
    const s3r_object_list_t *have;
    int rc;
};

static int sync_up_file(void *arg, const char *rel, const struct stat *sb)
{
    struct up_sync *w = arg;
    char *key = cli_join(w->prefix, rel);
    char *path = cli_join(w->dir, rel);
    if (key == NULL || path == NULL) {
        w->rc = cli_first_error(w->rc, CLI_FAIL);
    } else {
        const s3r_object_entry_t *e = find(w->have, key);
        if (e == NULL || e->size != (uint64_t)sb->st_size || sb->st_mtime > e->mtime)
            w->rc = cli_first_error(w->rc, cli_upload(w->cli, path, w->bucket, key));
    }
    free(key);
    free(path);
    return 0;
}

static int sync_down(cli_t *cli, const s3r_object_list_t *l, const char *bucket, const char *prefix,
                     const char *dir)
{
    int rc = CLI_OK;
    for (size_t i = 0; i < l->n_objects; i++) {
        const s3r_object_entry_t *e = &l->objects[i];
        const char *rel = e->key + strlen(prefix);
        if (cli_key_is_prefix(rel))
            continue; /* a "directory" marker object */
        int r = CLI_FAIL;
        char *path = cli_local_path(dir, rel, bucket, e->key, &r);
        struct stat sb;
        if (path == NULL) {
            rc = cli_first_error(rc, r);
        } else if (stat(path, &sb) < 0 || (uint64_t)sb.st_size != e->size ||
                   e->mtime > sb.st_mtime) {
            r = cli_download(cli, bucket, e->key, path);
            struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_sec = e->mtime}};
            if (r == CLI_OK && utimensat(AT_FDCWD, path, ts, 0) < 0)
                cli_line(stderr, "s3rdma: sync: setting the mtime of %s: %s", path,
                         strerror(errno));
            rc = cli_first_error(rc, r);
        }
        free(path);
    }
    return rc;
}

int cli_verb_sync(cli_t *cli, int argc, char **argv)
{
    if (argc != 2 || cli_is_s3(argv[0]) == cli_is_s3(argv[1]))
        return cli_usage_error("sync", "want a local DIRECTORY and an s3://BUCKET/PREFIX/, "
                                       "either way round");
    bool up = !cli_is_s3(argv[0]);
    const char *dir = up ? argv[0] : argv[1];
    cli_s3url_t u;
    if (!cli_s3url_parse(up ? argv[1] : argv[0], &u))
        return cli_usage_error("sync", "bad S3 URL %s", up ? argv[1] : argv[0]);
    if (up && !cli_is_dir(dir)) {
        cli_s3url_free(&u);
        return cli_usage_error("sync", "%s is not a directory", dir);
    }
    char *prefix = u.key[0] && !cli_key_is_prefix(u.key) ? cli_join(u.key, "") : strdup(u.key);
    s3r_object_list_t *l = NULL;
    int rc = prefix ? cli_list_all(cli, u.bucket, prefix, &l) : CLI_FAIL;
    if (rc == CLI_OK && up) {
        struct up_sync w = {cli, dir, u.bucket, prefix, l, CLI_OK};
        rc = cli_first_error(cli_walk(dir, sync_up_file, &w), w.rc);
    } else if (rc == CLI_OK) {
        rc = sync_down(cli, l, u.bucket, prefix, dir);
    }
    s3r_object_list_free(l);
    free(prefix);
    cli_s3url_free(&u);
    return rc;
}
