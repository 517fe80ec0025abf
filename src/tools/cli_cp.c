/* cp, mv, put and get: where each object goes, as aws s3 cp decides it.
 *
 *  - A destination key that is empty or ends in '/' is a prefix: the
 *    source's base name is appended (put f s3://b/dir/ -> key dir/f).
 *  - A local destination that is an existing directory or ends in '/' gets
 *    the key's base name (get s3://b/a/k . -> ./k); "-" is stdout, and a
 *    local source "-" is stdin.
 *  - --recursive copies every file under a directory, or every key under a
 *    prefix ("s3://b/dir" means dir/), keeping the relative paths.
 *  - mv is cp, then the source is deleted (a local file too).
 *  - A local path made from a key stays inside its directory
 *    (cli_local_path): other keys are skipped with a warning, and a moved
 *    key that was skipped keeps its source. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

/* A source or destination argument: local path or s3 URL. */
typedef struct end {
    const char *arg;
    bool s3;
    cli_s3url_t u;
} end_t;

/* The prefix a --recursive source or destination names: "" or ending in '/'. */
static char *dir_prefix(const char *key)
{
    return key[0] && !cli_key_is_prefix(key) ? cli_join(key, "") : strdup(key);
}

/* Deletes the source of a finished move. */
static int remove_source(cli_t *cli, const end_t *src, const char *key_or_path)
{
    if (!cli->move)
        return CLI_OK;
    if (src->s3) {
        s3r_status_t st = s3r_object_delete(cli->client, src->u.bucket, key_or_path);
        return st == S3R_OK ? CLI_OK : cli_report(cli, "move: deleting the source", st);
    }
    if (unlink(key_or_path) < 0) {
        cli_line(stderr, "s3rdma: move: deleting the source %s: %s", key_or_path, strerror(errno));
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* One object: src (a local path or a key of src->u.bucket) to dst (a path
 * or a key of dst->u.bucket). */
static int one(cli_t *cli, const end_t *src, const char *from, const end_t *dst, const char *to)
{
    int rc;
    if (!src->s3)
        rc = cli_upload(cli, from, dst->u.bucket, to);
    else if (!dst->s3)
        rc = cli_download(cli, src->u.bucket, from, to);
    else
        rc = cli_copy(cli, src->u.bucket, from, dst->u.bucket, to);
    return rc == CLI_OK ? remove_source(cli, src, from) : rc;
}

/* Where the single source object from goes in dst; NULL with *rc_p set when
 * it goes nowhere (its base name would leave a local directory, or out of
 * memory). */
static char *single_target(const end_t *src, const char *from, const end_t *dst, int *rc_p)
{
    const char *name = cli_basename(from);
    char *to;
    if (dst->s3)
        to = cli_key_is_prefix(dst->u.key) ? cli_join(dst->u.key, name) : strdup(dst->u.key);
    else if (strcmp(dst->arg, "-") != 0 &&
             (cli_is_dir(dst->arg) || dst->arg[strlen(dst->arg) - 1] == '/'))
        return cli_local_path(dst->arg, name, src->u.bucket, from, rc_p); /* src is S3 */
    else
        to = strdup(dst->arg);
    if (to == NULL)
        *rc_p = CLI_FAIL;
    return to;
}

static int cp_single(cli_t *cli, const end_t *src, const end_t *dst)
{
    if (src->s3 && cli_key_is_prefix(src->u.key))
        return cli_usage_error("cp", "%s is a prefix: add --recursive to copy what is under it",
                               src->arg);
    if (!src->s3 && strcmp(src->arg, "-") != 0 && cli_is_dir(src->arg))
        return cli_usage_error("cp", "%s is a directory: add --recursive", src->arg);
    if (!src->s3 && strcmp(src->arg, "-") == 0 && cli_key_is_prefix(dst->u.key))
        return cli_usage_error("cp", "from stdin the destination must be a key, not a prefix");
    const char *from = src->s3 ? src->u.key : src->arg;
    int rc = CLI_OK;
    char *to = single_target(src, from, dst, &rc);
    if (to != NULL)
        rc = one(cli, src, from, dst, to);
    free(to);
    return rc;
}

/* --recursive from a local directory: every file under it. */
struct up_walk {
    cli_t *cli;
    const end_t *src, *dst;
    const char *prefix;
    int rc;
};

static int up_file(void *arg, const char *rel, const struct stat *sb)
{
    (void)sb;
    struct up_walk *w = arg;
    char *path = cli_join(w->src->arg, rel);
    char *key = cli_join(w->prefix, rel);
    int rc = path && key ? one(w->cli, w->src, path, w->dst, key) : CLI_FAIL;
    w->rc = cli_first_error(w->rc, rc);
    free(path);
    free(key);
    return 0; /* go on past a failed file, as aws s3 cp does */
}

static int cp_recursive(cli_t *cli, const end_t *src, const end_t *dst)
{
    if (!src->s3 && !cli_is_dir(src->arg))
        return cli_usage_error("cp", "--recursive needs a directory, %s is not one", src->arg);
    if (!dst->s3 && strcmp(dst->arg, "-") == 0)
        return cli_usage_error("cp", "--recursive cannot write to stdout");
    char *dprefix = dst->s3 ? dir_prefix(dst->u.key) : NULL;
    int rc = CLI_OK;
    if (!src->s3) {
        struct up_walk w = {cli, src, dst, dprefix, CLI_OK};
        rc = cli_first_error(cli_walk(src->arg, up_file, &w), w.rc);
        free(dprefix);
        return rc;
    }
    char *sprefix = dir_prefix(src->u.key);
    s3r_object_list_t *l = NULL;
    rc = sprefix ? cli_list_all(cli, src->u.bucket, sprefix, &l) : CLI_FAIL;
    for (size_t i = 0; l != NULL && i < l->n_objects; i++) {
        const char *key = l->objects[i].key;
        const char *rel = key + strlen(sprefix);
        if (cli_key_is_prefix(rel))
            continue; /* a "directory" marker object */
        int r = CLI_FAIL;
        char *to = dst->s3 ? cli_join(dprefix, rel)
                           : cli_local_path(dst->arg, rel, src->u.bucket, key, &r);
        rc = cli_first_error(rc, to ? one(cli, src, key, dst, to) : r);
        free(to);
    }
    s3r_object_list_free(l);
    free(sprefix);
    free(dprefix);
    return rc;
}

/* Parses both ends and runs the copy; verb names the command in errors. */
static int transfer(cli_t *cli, const char *verb, int argc, char **argv)
{
    if (argc != 2)
        return cli_usage_error(verb, "want SOURCE and DESTINATION");
    end_t src = {.arg = argv[0], .s3 = cli_is_s3(argv[0])};
    end_t dst = {.arg = argv[1], .s3 = cli_is_s3(argv[1])};
    int rc = CLI_OK;
    if (src.s3 && !cli_s3url_parse(src.arg, &src.u))
        rc = cli_usage_error(verb, "bad S3 URL %s (want s3://BUCKET/KEY)", src.arg);
    else if (dst.s3 && !cli_s3url_parse(dst.arg, &dst.u))
        rc = cli_usage_error(verb, "bad S3 URL %s (want s3://BUCKET/KEY)", dst.arg);
    else if (!src.s3 && !dst.s3)
        rc = cli_usage_error(verb, "one of SOURCE and DESTINATION must be an s3:// URL");
    else if (cli->move && (strcmp(src.arg, "-") == 0 || strcmp(dst.arg, "-") == 0))
        rc = cli_usage_error(verb, "cannot move from stdin or to stdout");
    else
        rc = cli->o.recursive ? cp_recursive(cli, &src, &dst) : cp_single(cli, &src, &dst);
    cli_s3url_free(&src.u);
    cli_s3url_free(&dst.u);
    return rc;
}

int cli_verb_cp(cli_t *cli, int argc, char **argv)
{
    return transfer(cli, "cp", argc, argv);
}

int cli_verb_mv(cli_t *cli, int argc, char **argv)
{
    cli->move = true;
    return transfer(cli, "mv", argc, argv);
}

int cli_verb_put(cli_t *cli, int argc, char **argv)
{
    if (argc != 2 || cli_is_s3(argv[0]) || !cli_is_s3(argv[1]))
        return cli_usage_error("put", "want FILE (or -) and s3://BUCKET/KEY (or a prefix/)");
    return transfer(cli, "put", argc, argv);
}

int cli_verb_get(cli_t *cli, int argc, char **argv)
{
    if (argc < 1 || argc > 2 || !cli_is_s3(argv[0]) || (argc == 2 && cli_is_s3(argv[1])))
        return cli_usage_error("get", "want s3://BUCKET/KEY and an optional FILE, DIR or -");
    char *args[2] = {argv[0], argc == 2 ? argv[1] : "."};
    return transfer(cli, "get", 2, args);
}
