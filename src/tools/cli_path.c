/* The CLI's path rules: s3://bucket/key URLs and local paths. Where a key
 * or file name comes from when a destination is a prefix or a directory
 * is the verbs' business (cli_cp.c); this file splits and joins, and holds
 * the one rule that keeps a local path made from a key inside its directory
 * (cli_rel_refusal). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/cli.h"

bool cli_is_s3(const char *arg)
{
    return strncmp(arg, "s3://", 5) == 0;
}

bool cli_s3url_parse(const char *arg, cli_s3url_t *u)
{
    if (!cli_is_s3(arg))
        return false;
    const char *b = arg + 5;
    const char *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen == 0)
        return false;
    u->bucket = strndup(b, blen);
    u->key = strdup(slash ? slash + 1 : "");
    if (u->bucket == NULL || u->key == NULL) {
        cli_s3url_free(u);
        return false;
    }
    return true;
}

void cli_s3url_free(cli_s3url_t *u)
{
    free(u->bucket);
    free(u->key);
    u->bucket = u->key = NULL;
}

const char *cli_basename(const char *s)
{
    const char *slash = strrchr(s, '/');
    return slash ? slash + 1 : s;
}

bool cli_key_is_prefix(const char *key)
{
    size_t n = strlen(key);
    return n == 0 || key[n - 1] == '/';
}

char *cli_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    while (dl > 1 && dir[dl - 1] == '/')
        dl--;
    bool slash = dl > 0 && dir[dl - 1] != '/';
    size_t n = dl + (slash ? 1 : 0) + strlen(name) + 1;
    char *out = malloc(n);
    if (out != NULL) {
        memcpy(out, dir, dl);
        if (slash)
            out[dl] = '/';
        strcpy(out + dl + (slash ? 1 : 0), name);
    }
    return out;
}

/* true if c separates path segments on some system a key may be meant for. */
static bool is_sep(char c)
{
    return c == '/' || c == '\\';
}

const char *cli_rel_refusal(const char *rel)
{
    if (rel[0] == '\0')
        return "it is empty";
    if (is_sep(rel[0]))
        return "it is absolute";
    for (const char *seg = rel; *seg != '\0';) {
        size_t n = 0;
        while (seg[n] != '\0' && !is_sep(seg[n]))
            n++;
        if (n == 2 && seg[0] == '.' && seg[1] == '.')
            return "it has a '..' segment";
        if (n == 1 && seg[0] == '.')
            return "it has a '.' segment";
        seg += n;
        while (is_sep(*seg))
            seg++;
    }
    return NULL;
}

char *cli_local_path(const char *dir, const char *rel, const char *bucket, const char *key,
                     int *rc_p)
{
    const char *why = cli_rel_refusal(rel);
    if (why != NULL) {
        cli_line(stderr,
                 "s3rdma: warning: skipping s3://%s/%s: its local name \"%s\" does not "
                 "stay inside %s: %s",
                 bucket, key, rel, dir, why);
        *rc_p = CLI_FAIL;
        return NULL;
    }
    char *path = cli_join(dir, rel);
    if (path == NULL)
        *rc_p = CLI_FAIL;
    return path;
}

bool cli_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int cli_mkdirs_for(const char *path)
{
    char *p = strdup(path);
    if (p == NULL)
        return -1;
    int rc = 0;
    for (char *s = strchr(p + 1, '/'); s != NULL && rc == 0; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(p, 0777) < 0 && errno != EEXIST)
            rc = -1;
        *s = '/';
    }
    free(p);
    return rc;
}

/* cli_walk below dir/rel (rel "" at the top). */
static int walk_in(const char *dir, const char *rel,
                   int (*fn)(void *arg, const char *rel, const struct stat *sb), void *arg)
{
    char *path = rel[0] ? cli_join(dir, rel) : strdup(dir);
    DIR *d = path ? opendir(path) : NULL;
    if (d == NULL) {
        cli_line(stderr, "s3rdma: %s: %s", path ? path : dir, strerror(errno));
        free(path);
        return CLI_FAIL;
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *sub = rel[0] ? cli_join(rel, de->d_name) : strdup(de->d_name);
        char *full = sub ? cli_join(dir, sub) : NULL;
        struct stat sb;
        if (full == NULL || lstat(full, &sb) < 0) {
            cli_line(stderr, "s3rdma: %s: %s", full ? full : de->d_name, strerror(errno));
            rc = CLI_FAIL;
        } else if (S_ISDIR(sb.st_mode))
            rc = walk_in(dir, sub, fn, arg);
        else if (S_ISREG(sb.st_mode))
            rc = fn(arg, sub, &sb);
        free(sub);
        free(full);
    }
    closedir(d);
    free(path);
    return rc;
}

int cli_walk(const char *dir, int (*fn)(void *arg, const char *rel, const struct stat *sb),
             void *arg)
{
    return walk_in(dir, "", fn, arg);
}
