/* s3rdma — command-line S3 client over libs3rdma. A client of the public
 * API (s3rdma.h) and nothing more.
 *
 * Exit codes: 0 success, 1 the operation failed (S3 or transport error),
 * 2 usage error, 3 not found (NoSuchBucket / NoSuchKey), 4 access denied. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "s3rdma.h"

#define EXIT_FAIL     1
#define EXIT_USAGE    2
#define EXIT_NOTFOUND 3
#define EXIT_DENIED   4

static const char *prog = "s3rdma";

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: %s [options] <command> [args]\n"
        "\n"
        "commands:\n"
        "  mb s3://BUCKET                 create a bucket\n"
        "  rb s3://BUCKET                 delete an (empty) bucket\n"
        "  ls [s3://BUCKET[/PREFIX]]      list buckets, or objects and prefixes ('/' delimiter)\n"
        "  put FILE s3://BUCKET/KEY       upload a file (multipart when large)\n"
        "  get s3://BUCKET/KEY FILE       download to a file ('-' for stdout)\n"
        "  stat s3://BUCKET/KEY           show size, ETag, type, mtime and metadata\n"
        "  rm s3://BUCKET/KEY             delete an object\n"
        "  cp s3://A/KEY s3://B/KEY       server-side copy\n"
        "\n"
        "options:\n"
        "  --endpoint URL           HTTP endpoint(s), comma separated (env S3RDMA_ENDPOINT;\n"
        "                           default http://127.0.0.1:9000)\n"
        "  --rdma-endpoint H:P      RDMA session endpoint(s) (env S3RDMA_RDMA_ENDPOINT;\n"
        "                           default: endpoint host, port 9100)\n"
        "  --access-key K           (env S3RDMA_ACCESS_KEY, then AWS_ACCESS_KEY_ID)\n"
        "  --secret-key S           (env S3RDMA_SECRET_KEY, then AWS_SECRET_ACCESS_KEY)\n"
        "  --region R               (default us-east-1)\n"
        "  --transport T            http | token | auto (default) | native\n"
        "  --rdma-threshold BYTES   AUTO uses RDMA from this size (default 1048576)\n"
        "  --no-fallback            fail instead of falling back to HTTP\n"
        "  --part-size BYTES        multipart part size (default 8 MiB)\n"
        "  --content-type T         Content-Type for put\n"
        "  --meta NAME=VALUE        user metadata for put (repeatable)\n"
        "  --stats                  print transport counters to stderr at the end\n"
        "  -q, --quiet              no fallback notice\n"
        "  -h, --help               this text\n"
        "\n"
        "exit codes: 0 ok, 1 failed, 2 usage, 3 not found, 4 access denied\n",
        prog);
}

/* Splits "s3://bucket[/key]"; key may be NULL. Returns 0 or -1. */
static int parse_s3url(const char *url, char **bucket, char **key)
{
    if (strncmp(url, "s3://", 5) != 0)
        return -1;
    const char *b = url + 5;
    const char *slash = strchr(b, '/');
    size_t blen = slash ? (size_t)(slash - b) : strlen(b);
    if (blen == 0)
        return -1;
    *bucket = strndup(b, blen);
    *key = (slash && slash[1]) ? strdup(slash + 1) : NULL;
    return *bucket ? 0 : -1;
}

static int exit_code(s3r_status_t st)
{
    switch (st) {
    case S3R_OK:
        return 0;
    case S3R_ERR_NO_SUCH_BUCKET:
    case S3R_ERR_NO_SUCH_KEY:
        return EXIT_NOTFOUND;
    case S3R_ERR_ACCESS_DENIED:
        return EXIT_DENIED;
    case S3R_ERR_INVALID_ARG:
        return EXIT_USAGE;
    default:
        return EXIT_FAIL;
    }
}

static int report(s3r_client_t *c, const char *what, s3r_status_t st)
{
    s3r_error_info_t e;
    if (s3r_client_last_error(c, &e) == S3R_OK && e.status == st) {
        fprintf(stderr, "%s: %s: %s", prog, what, s3r_strerror(st));
        if (e.http_status)
            fprintf(stderr, " (HTTP %d%s%s)", e.http_status, e.code[0] ? " " : "", e.code);
        if (e.message[0])
            fprintf(stderr, ": %s", e.message);
        fprintf(stderr, "\n");
    } else {
        fprintf(stderr, "%s: %s: %s\n", prog, what, s3r_strerror(st));
    }
    return exit_code(st);
}

/* A size option ("64K", "1MiB"...: s3r_size_parse); anything else is a usage error. */
static uint64_t parse_size(const char *s, const char *opt)
{
    uint64_t v;
    if (s3r_size_parse(s, &v) != S3R_OK) {
        fprintf(stderr, "%s: %s: bad size \"%s\"\n", prog, opt, s);
        exit(EXIT_USAGE);
    }
    return v;
}

static void fmt_time(int64_t t, char *out, size_t len)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (t <= 0 || gmtime_r(&tt, &tm) == NULL)
        snprintf(out, len, "-");
    else
        strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static int cmd_ls(s3r_client_t *c, int argc, char **argv)
{
    if (argc == 0) {
        s3r_bucket_list_t *l;
        s3r_status_t st = s3r_bucket_list(c, &l);
        if (st != S3R_OK)
            return report(c, "ls", st);
        for (size_t i = 0; i < l->n_buckets; i++) {
            char t[32];
            fmt_time(l->buckets[i].created, t, sizeof(t));
            printf("%s  s3://%s\n", t, l->buckets[i].name);
        }
        s3r_bucket_list_free(l);
        return 0;
    }
    char *bucket, *prefix;
    if (argc != 1 || parse_s3url(argv[0], &bucket, &prefix) < 0) {
        fprintf(stderr, "%s: ls: want s3://BUCKET[/PREFIX]\n", prog);
        return EXIT_USAGE;
    }
    s3r_list_opts_t o = {.prefix = prefix, .delimiter = "/", .all_pages = 1};
    s3r_object_list_t *l;
    s3r_status_t st = s3r_object_list(c, bucket, &o, &l);
    int rc = 0;
    if (st != S3R_OK) {
        rc = report(c, "ls", st);
    } else {
        for (size_t i = 0; i < l->n_prefixes; i++)
            printf("%19s  %12s  s3://%s/%s\n", "", "PRE", bucket, l->prefixes[i]);
        for (size_t i = 0; i < l->n_objects; i++) {
            char t[32];
            fmt_time(l->objects[i].mtime, t, sizeof(t));
            printf("%19s  %12llu  s3://%s/%s\n", t, (unsigned long long)l->objects[i].size, bucket,
                   l->objects[i].key);
        }
        s3r_object_list_free(l);
    }
    free(bucket);
    free(prefix);
    return rc;
}

int main(int argc, char **argv)
{
    enum {
        O_ENDPOINT = 256,
        O_RDMA_EP,
        O_AK,
        O_SK,
        O_REGION,
        O_TRANSPORT,
        O_THRESH,
        O_NOFB,
        O_PART,
        O_CTYPE,
        O_META,
        O_STATS
    };
    static const struct option opts[] = {
        {"endpoint", required_argument, NULL, O_ENDPOINT},
        {"rdma-endpoint", required_argument, NULL, O_RDMA_EP},
        {"access-key", required_argument, NULL, O_AK},
        {"secret-key", required_argument, NULL, O_SK},
        {"region", required_argument, NULL, O_REGION},
        {"transport", required_argument, NULL, O_TRANSPORT},
        {"rdma-threshold", required_argument, NULL, O_THRESH},
        {"no-fallback", no_argument, NULL, O_NOFB},
        {"part-size", required_argument, NULL, O_PART},
        {"content-type", required_argument, NULL, O_CTYPE},
        {"meta", required_argument, NULL, O_META},
        {"stats", no_argument, NULL, O_STATS},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    s3r_config_t cfg;
    s3r_config_init(&cfg);
    const char *content_type = NULL;
    s3r_meta_t meta[64];
    size_t n_meta = 0;
    int want_stats = 0;
    cfg.endpoint = getenv("S3RDMA_ENDPOINT");
    cfg.rdma_endpoint = getenv("S3RDMA_RDMA_ENDPOINT");
    cfg.access_key = getenv("S3RDMA_ACCESS_KEY");
    if (!cfg.access_key)
        cfg.access_key = getenv("AWS_ACCESS_KEY_ID");
    cfg.secret_key = getenv("S3RDMA_SECRET_KEY");
    if (!cfg.secret_key)
        cfg.secret_key = getenv("AWS_SECRET_ACCESS_KEY");
    if (!cfg.endpoint)
        cfg.endpoint = "http://127.0.0.1:9000";

    int ch;
    while ((ch = getopt_long(argc, argv, "+qh", opts, NULL)) != -1) {
        switch (ch) {
        case O_ENDPOINT:
            cfg.endpoint = optarg;
            break;
        case O_RDMA_EP:
            cfg.rdma_endpoint = optarg;
            break;
        case O_AK:
            cfg.access_key = optarg;
            break;
        case O_SK:
            cfg.secret_key = optarg;
            break;
        case O_REGION:
            cfg.region = optarg;
            break;
        case O_TRANSPORT:
            if (s3r_transport_parse(optarg, &cfg.transport) != S3R_OK) {
                fprintf(stderr, "%s: --transport: want http, token, auto or native\n", prog);
                return EXIT_USAGE;
            }
            break;
        case O_THRESH:
            cfg.rdma_threshold = parse_size(optarg, "--rdma-threshold");
            break;
        case O_NOFB:
            cfg.rdma_fallback = 0;
            break;
        case O_PART:
            cfg.part_size = parse_size(optarg, "--part-size");
            break;
        case O_CTYPE:
            content_type = optarg;
            break;
        case O_META: {
            char *eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg || n_meta == 64) {
                fprintf(stderr, "%s: --meta: want NAME=VALUE\n", prog);
                return EXIT_USAGE;
            }
            *eq = '\0';
            meta[n_meta++] = (s3r_meta_t){optarg, eq + 1};
            break;
        }
        case O_STATS:
            want_stats = 1;
            break;
        case 'q':
            cfg.quiet = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    argc -= optind;
    argv += optind;
    if (argc < 1) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!cfg.access_key || !cfg.secret_key) {
        fprintf(stderr,
                "%s: no credentials: use --access-key/--secret-key or set "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY\n",
                prog);
        return EXIT_USAGE;
    }
    if (cfg.part_size > cfg.multipart_threshold)
        cfg.multipart_threshold = cfg.part_size;

    s3r_client_t *c;
    s3r_status_t st = s3r_client_create(&cfg, &c);
    if (st != S3R_OK) {
        s3r_error_info_t e;
        fprintf(stderr, "%s: bad configuration: %s\n", prog,
                s3r_client_last_error(NULL, &e) == S3R_OK ? e.message : s3r_strerror(st));
        return EXIT_USAGE;
    }

    const char *cmd = argv[0];
    int nargs = argc - 1;
    char **args = argv + 1;
    char *b = NULL, *k = NULL, *b2 = NULL, *k2 = NULL;
    int rc = 0;
    s3r_put_opts_t po = {.content_type = content_type, .meta = meta, .n_meta = n_meta};

#define NEED(n, cond, msg)                                                                         \
    if (nargs != (n) || !(cond)) {                                                                 \
        fprintf(stderr, "%s: %s: usage: %s %s\n", prog, cmd, cmd, msg);                            \
        rc = EXIT_USAGE;                                                                           \
        goto out;                                                                                  \
    }

    if (strcmp(cmd, "mb") == 0 || strcmp(cmd, "rb") == 0) {
        NEED(1, parse_s3url(args[0], &b, &k) == 0 && k == NULL, "s3://BUCKET");
        st = cmd[0] == 'm' ? s3r_bucket_create(c, b) : s3r_bucket_delete(c, b);
        rc = st ? report(c, cmd, st) : 0;
        if (!rc)
            printf("%s: s3://%s\n", cmd[0] == 'm' ? "make_bucket" : "remove_bucket", b);
    } else if (strcmp(cmd, "ls") == 0) {
        rc = cmd_ls(c, nargs, args);
    } else if (strcmp(cmd, "put") == 0) {
        NEED(2, parse_s3url(args[1], &b, &k) == 0 && k != NULL, "FILE s3://BUCKET/KEY");
        st = s3r_object_put_file(c, b, k, args[0], &po);
        rc = st ? report(c, "put", st) : 0;
    } else if (strcmp(cmd, "get") == 0) {
        NEED(2, parse_s3url(args[0], &b, &k) == 0 && k != NULL, "s3://BUCKET/KEY FILE");
        if (strcmp(args[1], "-") == 0) {
            void *data;
            uint64_t n;
            st = s3r_object_get_alloc(c, b, k, NULL, &data, &n);
            if (st == S3R_OK) {
                if (fwrite(data, 1, (size_t)n, stdout) != n || fflush(stdout) != 0) {
                    perror("s3rdma: get: stdout");
                    rc = EXIT_FAIL;
                }
                s3r_free(data);
            }
        } else {
            st = s3r_object_get_file(c, b, k, args[1], NULL);
            if (st != S3R_OK)
                unlink(args[1]); /* no half-written file left behind */
        }
        if (st)
            rc = report(c, "get", st);
    } else if (strcmp(cmd, "stat") == 0) {
        NEED(1, parse_s3url(args[0], &b, &k) == 0 && k != NULL, "s3://BUCKET/KEY");
        s3r_object_info_t *info;
        st = s3r_object_head(c, b, k, &info);
        if (st) {
            rc = report(c, "stat", st);
        } else {
            char t[32];
            fmt_time(info->mtime, t, sizeof(t));
            printf("Key:          s3://%s/%s\nSize:         %llu\nETag:         %s\n"
                   "Content-Type: %s\nLast-Modified: %s\n",
                   b, k, (unsigned long long)info->size, info->etag ? info->etag : "-",
                   info->content_type ? info->content_type : "-", t);
            for (size_t i = 0; i < info->n_meta; i++)
                printf("Meta:         %s=%s\n", info->meta[i].name, info->meta[i].value);
            s3r_object_info_free(info);
        }
    } else if (strcmp(cmd, "rm") == 0) {
        NEED(1, parse_s3url(args[0], &b, &k) == 0 && k != NULL, "s3://BUCKET/KEY");
        st = s3r_object_delete(c, b, k);
        rc = st ? report(c, "rm", st) : 0;
    } else if (strcmp(cmd, "cp") == 0) {
        NEED(2,
             parse_s3url(args[0], &b, &k) == 0 && k != NULL &&
                 parse_s3url(args[1], &b2, &k2) == 0 && k2 != NULL,
             "s3://A/KEY s3://B/KEY");
        st = s3r_object_copy(c, b, k, b2, k2);
        rc = st ? report(c, "cp", st) : 0;
    } else {
        fprintf(stderr, "%s: unknown command \"%s\" (try --help)\n", prog, cmd);
        rc = EXIT_USAGE;
    }
out:
    if (want_stats) {
        s3r_stats_t s;
        s3r_client_stats(c, &s);
        fprintf(stderr,
                "stats: http_ops=%llu http_bytes=%llu token_ops=%llu token_bytes=%llu "
                "native_ops=%llu native_bytes=%llu fallbacks=%llu errors=%llu "
                "rdma_sessions=%llu\n",
                (unsigned long long)s.http_ops, (unsigned long long)s.http_bytes,
                (unsigned long long)s.token_ops, (unsigned long long)s.token_bytes,
                (unsigned long long)s.native_ops, (unsigned long long)s.native_bytes,
                (unsigned long long)s.fallbacks, (unsigned long long)s.errors,
                (unsigned long long)s.rdma_sessions);
    }
    free(b);
    free(k);
    free(b2);
    free(k2);
    s3r_client_destroy(c);
    return rc;
}
