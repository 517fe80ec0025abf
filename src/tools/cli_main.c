/* s3rdma — a command-line S3 client over libs3rdma that behaves like
 * `aws s3` where both have a verb (docs/cli.md). This file parses the
 * command line, answers help and --version without any configuration,
 * builds the client and runs the verb. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

typedef struct verb {
    const char *name;
    int (*run)(cli_t *cli, int argc, char **argv);
    const char *args;
    const char *help;
} verb_t;

static const verb_t verbs[] = {
    {"mb", cli_verb_mb, "s3://BUCKET", "create a bucket"},
    {"rb", cli_verb_rb, "s3://BUCKET [--force]",
     "delete a bucket (--force: delete its objects first)"},
    {"ls", cli_verb_ls, "[s3://BUCKET[/PREFIX]] [--recursive] [--versions]",
     "list your buckets, or the objects and PRE prefixes under a prefix (--versions: every\n"
     "          version and delete marker)"},
    {"cp", cli_verb_cp, "SOURCE DESTINATION [--recursive]",
     "copy local->s3, s3->local or s3->s3 (server side); a destination ending in / is a\n"
     "          prefix or directory; - is stdin or stdout"},
    {"mv", cli_verb_mv, "SOURCE DESTINATION [--recursive]", "cp, then delete the source"},
    {"put", cli_verb_put, "FILE|- s3://BUCKET/KEY|s3://BUCKET/PREFIX/", "upload (cp local->s3)"},
    {"get", cli_verb_get, "s3://BUCKET/KEY [FILE|DIR|-] [--version-id ID]",
     "download (cp s3->local; default: ./KEY's base name)"},
    {"rm", cli_verb_rm, "s3://BUCKET/KEY [--version-id ID] | s3://BUCKET/PREFIX --recursive",
     "delete objects (--version-id: that version, for good)"},
    {"stat", cli_verb_stat, "s3://BUCKET/KEY [--version-id ID]",
     "size, ETag, type, mtime, version and metadata"},
    {"presign", cli_verb_presign, "s3://BUCKET/KEY [--expires-in SECONDS]",
     "print a presigned GET URL (default 3600 s, at most 604800)"},
    {"sync", cli_verb_sync, "DIR s3://BUCKET/PREFIX/ | s3://BUCKET/PREFIX/ DIR",
     "copy what is missing, of another size or newer"},
};
#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

static const verb_t *find_verb(const char *name)
{
    for (size_t i = 0; i < N_VERBS; i++)
        if (strcmp(verbs[i].name, name) == 0)
            return &verbs[i];
    return NULL;
}

static const char options_help[] =
    "options (anywhere on the line; precedence: flag > environment > profile > default):\n"
    "  --endpoint-url URL     S3 endpoint(s), comma separated (env AWS_ENDPOINT_URL_S3,\n"
    "                         AWS_ENDPOINT_URL; profile endpoint_url; default\n"
    "                         http://127.0.0.1:9000); --endpoint is the same\n"
    "  --profile NAME         profile of ~/.aws/credentials and ~/.aws/config (env AWS_PROFILE)\n"
    "  --access-key K --secret-key S\n"
    "                         (env AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; profile)\n"
    "  --region R             (env AWS_REGION, AWS_DEFAULT_REGION; profile; us-east-1)\n"
    "  --ca-bundle FILE       PEM CA certificates verifying an https:// endpoint (env\n"
    "                         AWS_CA_BUNDLE; profile ca_bundle; default: the system's)\n"
    "  --rdma-endpoint H:P    RDMA session endpoint(s) (env S3RDMA_RDMA_ENDPOINT; profile\n"
    "                         s3rdma_rdma_endpoint; default: advertised by the server)\n"
    "  --transport T          http | token | native | auto (env S3RDMA_TRANSPORT; profile\n"
    "                         s3rdma_transport; default auto)\n"
    "  --no-sign-request      anonymous requests (public buckets): no credentials, nothing\n"
    "                         signed, HTTP only\n"
    "  --no-fallback          an RDMA failure is an error instead of a retry over HTTP\n"
    "  --rdma-threshold SIZE  auto uses RDMA from this size (default 1MiB)\n"
    "  --part-size SIZE       multipart part size (default 8MiB)\n"
    "  --content-type T       Content-Type of uploads\n"
    "  --storage-class C      storage class of uploads (STANDARD_IA, GLACIER, ...)\n"
    "  --meta NAME=VALUE      user metadata of uploads (repeatable)\n"
    "  -r, --recursive        cp, mv, rm, ls: everything under a directory or prefix\n"
    "  --force                rb: delete the bucket's objects first\n"
    "  --versions             ls: every version and delete marker, with its version id\n"
    "  --version-id ID        get, rm, stat: that version of the object, not the current one\n"
    "  --expires-in SECONDS   presign: validity (default 3600)\n"
    "  -q, --quiet            no transfer lines, no progress bar\n"
    "  --no-progress          no progress bar (it is drawn only when stderr is a terminal)\n"
    "  -v, --verbose          where each setting came from; the transport each operation used\n"
    "  --stats                the client's transport counters at the end\n"
    "  -h, --help             help (s3rdma VERB --help: the verb's)\n"
    "  --version              the version\n"
    "(sizes: bytes, or K/M/G with an optional B or iB, powers of 1024)\n"
    "\n"
    "exit codes: 0 ok, 1 failed, 2 usage or configuration error, 3 not found (NoSuchBucket,\n"
    "NoSuchKey, no such file), 4 access denied\n";

static void usage(FILE *out, const verb_t *v)
{
    if (v != NULL) {
        fprintf(out, "usage: s3rdma %s %s\n  %s\n\n%s", v->name, v->args, v->help, options_help);
        return;
    }
    fprintf(out, "usage: s3rdma [options] VERB [args]\n\nverbs:\n");
    for (size_t i = 0; i < N_VERBS; i++)
        fprintf(out, "  %-8s%s\n          %s\n", verbs[i].name, verbs[i].args, verbs[i].help);
    fprintf(out, "  help [VERB]\n\n%s\nSee docs/cli.md.\n", options_help);
}

/* A size option, or exit with a usage error. */
static uint64_t size_opt(const char *s, const char *opt)
{
    uint64_t v;
    if (s3r_size_parse(s, &v) != S3R_OK) {
        cli_line(stderr, "s3rdma: %s: bad size \"%s\"", opt, s);
        exit(CLI_USAGE);
    }
    return v;
}

enum {
    O_ENDPOINT = 256,
    O_PROFILE,
    O_RDMA_EP,
    O_AK,
    O_SK,
    O_REGION,
    O_TRANSPORT,
    O_THRESH,
    O_NOFB,
    O_PART,
    O_CTYPE,
    O_SCLASS,
    O_META,
    O_FORCE,
    O_EXPIRES,
    O_NOPROGRESS,
    O_STATS,
    O_VERSION,
    O_CA_BUNDLE,
    O_VERSIONS,
    O_VERSION_ID,
    O_NO_SIGN,
};

static const struct option long_opts[] = {
    {"endpoint-url", required_argument, NULL, O_ENDPOINT},
    {"endpoint", required_argument, NULL, O_ENDPOINT},
    {"profile", required_argument, NULL, O_PROFILE},
    {"rdma-endpoint", required_argument, NULL, O_RDMA_EP},
    {"access-key", required_argument, NULL, O_AK},
    {"secret-key", required_argument, NULL, O_SK},
    {"region", required_argument, NULL, O_REGION},
    {"ca-bundle", required_argument, NULL, O_CA_BUNDLE},
    {"transport", required_argument, NULL, O_TRANSPORT},
    {"rdma-threshold", required_argument, NULL, O_THRESH},
    {"no-fallback", no_argument, NULL, O_NOFB},
    {"no-sign-request", no_argument, NULL, O_NO_SIGN},
    {"part-size", required_argument, NULL, O_PART},
    {"content-type", required_argument, NULL, O_CTYPE},
    {"storage-class", required_argument, NULL, O_SCLASS},
    {"meta", required_argument, NULL, O_META},
    {"recursive", no_argument, NULL, 'r'},
    {"force", no_argument, NULL, O_FORCE},
    {"expires-in", required_argument, NULL, O_EXPIRES},
    {"quiet", no_argument, NULL, 'q'},
    {"no-progress", no_argument, NULL, O_NOPROGRESS},
    {"verbose", no_argument, NULL, 'v'},
    {"stats", no_argument, NULL, O_STATS},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION},
    {"versions", no_argument, NULL, O_VERSIONS},
    {"version-id", required_argument, NULL, O_VERSION_ID},
    {NULL, 0, NULL, 0},
};

/* Everything the command line holds besides the verb and its arguments. */
typedef struct cmdline {
    cli_flags_t flags;
    cli_opts_t o;
    uint64_t rdma_threshold, part_size; /* 0: the library's default */
    bool no_progress;
} cmdline_t;

/* Parses argv's options (anywhere on the line) into cl; CLI_OK or CLI_USAGE. */
static int parse_options(int argc, char **argv, cmdline_t *cl)
{
    int ch;
    while ((ch = getopt_long(argc, argv, "rqvh", long_opts, NULL)) != -1) {
        switch (ch) {
        case O_ENDPOINT:
            cl->flags.endpoint = optarg;
            break;
        case O_PROFILE:
            cl->flags.profile = optarg;
            break;
        case O_RDMA_EP:
            cl->flags.rdma_endpoint = optarg;
            break;
        case O_AK:
            cl->flags.access_key = optarg;
            break;
        case O_SK:
            cl->flags.secret_key = optarg;
            break;
        case O_REGION:
            cl->flags.region = optarg;
            break;
        case O_CA_BUNDLE:
            cl->flags.ca_bundle = optarg;
            break;
        case O_TRANSPORT:
            cl->flags.transport = optarg;
            break;
        case O_THRESH:
            cl->rdma_threshold = size_opt(optarg, "--rdma-threshold");
            break;
        case O_NOFB:
            cl->flags.no_fallback = true;
            break;
        case O_NO_SIGN:
            cl->flags.no_sign_request = true;
            break;
        case O_PART:
            cl->part_size = size_opt(optarg, "--part-size");
            break;
        case O_CTYPE:
            cl->o.content_type = optarg;
            break;
        case O_SCLASS:
            cl->o.storage_class = optarg;
            break;
        case O_META: {
            char *eq = strchr(optarg, '=');
            if (eq == NULL || eq == optarg || cl->o.n_meta == CLI_MAX_META) {
                cli_line(stderr, "s3rdma: --meta: want NAME=VALUE (at most %d)", CLI_MAX_META);
                return CLI_USAGE;
            }
            *eq = '\0';
            cl->o.meta[cl->o.n_meta++] = (s3r_meta_t){optarg, eq + 1};
            break;
        }
        case 'r':
            cl->o.recursive = true;
            break;
        case O_FORCE:
            cl->o.force = true;
            break;
        case O_EXPIRES: {
            char *end;
            cl->o.expires = strtoull(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || cl->o.expires < 1 || cl->o.expires > 604800) {
                cli_line(stderr, "s3rdma: --expires-in: want 1 to 604800 seconds");
                return CLI_USAGE;
            }
            break;
        }
        case 'q':
            cl->o.quiet = true;
            break;
        case O_NOPROGRESS:
            cl->no_progress = true;
            break;
        case 'v':
            cl->o.verbose = true;
            break;
        case O_STATS:
            cl->o.stats = true;
            break;
        case 'h':
            cl->o.help = true;
            break;
        case O_VERSION:
            cl->o.version = true;
            break;
        case O_VERSIONS:
            cl->o.versions = true;
            break;
        case O_VERSION_ID:
            if (optarg[0] == '\0') {
                cli_line(stderr, "s3rdma: --version-id: want a version id");
                return CLI_USAGE;
            }
            cl->o.version_id = optarg;
            break;
        default:
            cli_line(stderr, "s3rdma: see s3rdma --help");
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

/* With -v: where the settings came from (client: made, for the keys it
 * loaded itself). */
static void say_sources(const cli_config_t *cc, s3r_client_t *client)
{
    cli_line(stderr, "s3rdma: endpoint %s (from %s)", cc->endpoint,
             cc->endpoint_is_default ? "default" : cc->src_endpoint);
    cli_line(stderr, "s3rdma: region %s (from %s)", cc->region, cc->src_region);
    if (cc->anonymous)
        cli_line(stderr, "s3rdma: no credentials (--no-sign-request): requests go unsigned");
    else {
        char ak[256];
        if (cc->access_key == NULL && s3r_client_access_key(client, ak, sizeof(ak)) != S3R_OK)
            ak[0] = '\0';
        cli_line(stderr, "s3rdma: access key %s (from %s)", cc->access_key ? cc->access_key : ak,
                 cc->src_keys);
    }
    if (cc->session_token != NULL && !cc->anonymous)
        cli_line(stderr, "s3rdma: a session token is set but not sent: s3rdmad has no temporary "
                         "credentials");
}

/* Builds the client from the resolved settings; CLI_OK or CLI_USAGE. */
static int make_client(const cmdline_t *cl, const cli_config_t *cc, s3r_client_t **client_p)
{
    s3r_config_t cfg;
    s3r_config_init(&cfg);
    cfg.endpoint = cc->endpoint;
    cfg.rdma_endpoint = cc->rdma_endpoint;
    cfg.access_key = cc->access_key;
    cfg.secret_key = cc->secret_key;
    cfg.region = cc->region;
    cfg.ca_bundle = cc->ca_bundle;
    cfg.rdma_fallback = !cc->no_fallback;
    cfg.anonymous = cc->anonymous;
    if (cc->expiring_keys) { /* the library loads them, and again before they expire */
        cfg.aws_credentials = 1;
        cfg.aws_profile = cl->flags.profile;
        cfg.access_key = cfg.secret_key = NULL;
    }
    cfg.quiet = cl->o.quiet;
    if (cc->transport != NULL && s3r_transport_parse(cc->transport, &cfg.transport) != S3R_OK) {
        cli_line(stderr, "s3rdma: transport \"%s\": want http, token, native or auto",
                 cc->transport);
        return CLI_USAGE;
    }
    if (cl->rdma_threshold)
        cfg.rdma_threshold = cl->rdma_threshold;
    if (cl->part_size) {
        cfg.part_size = cl->part_size;
        if (cfg.part_size > cfg.multipart_threshold)
            cfg.multipart_threshold = cfg.part_size;
    }
    s3r_status_t st = s3r_client_create(&cfg, client_p);
    if (st != S3R_OK) {
        s3r_error_info_t e;
        cli_line(stderr, "s3rdma: bad configuration: %s",
                 s3r_client_last_error(NULL, &e) == S3R_OK ? e.message : s3r_strerror(st));
        return CLI_USAGE;
    }
    return CLI_OK;
}

static void print_stats(s3r_client_t *c)
{
    s3r_stats_t s;
    s3r_client_stats(c, &s);
    cli_line(stderr,
             "stats: http_ops=%llu http_bytes=%llu token_ops=%llu token_bytes=%llu "
             "native_ops=%llu native_bytes=%llu fallbacks=%llu errors=%llu rdma_sessions=%llu",
             (unsigned long long)s.http_ops, (unsigned long long)s.http_bytes,
             (unsigned long long)s.token_ops, (unsigned long long)s.token_bytes,
             (unsigned long long)s.native_ops, (unsigned long long)s.native_bytes,
             (unsigned long long)s.fallbacks, (unsigned long long)s.errors,
             (unsigned long long)s.rdma_sessions);
}

int main(int argc, char **argv)
{
    cmdline_t cl = {.o.expires = 3600};
    if (parse_options(argc, argv, &cl) != CLI_OK)
        return CLI_USAGE;
    argc -= optind;
    argv += optind;
    if (cl.o.version) {
        printf("s3rdma %s\n", S3RDMA_VERSION_STRING);
        return CLI_OK;
    }
    /* Help needs no configuration: "help [VERB]", "--help", "VERB --help". */
    bool help_verb = argc > 0 && strcmp(argv[0], "help") == 0;
    if (cl.o.help || help_verb || argc == 0) {
        const char *name = help_verb ? (argc > 1 ? argv[1] : NULL) : (argc > 0 ? argv[0] : NULL);
        const verb_t *v = name ? find_verb(name) : NULL;
        if (name != NULL && v == NULL) {
            cli_line(stderr, "s3rdma: unknown verb \"%s\" (s3rdma --help lists them)", name);
            return CLI_USAGE;
        }
        usage(argc == 0 && !cl.o.help ? stderr : stdout, v);
        return argc == 0 && !cl.o.help ? CLI_USAGE : CLI_OK;
    }
    const verb_t *v = find_verb(argv[0]);
    if (v == NULL) {
        cli_line(stderr, "s3rdma: unknown verb \"%s\" (s3rdma --help lists them)", argv[0]);
        return CLI_USAGE;
    }

    /* Options that name versions apply to one object (or, --versions, to
     * a listing): elsewhere they would be silently ignored. */
    bool one_object =
        strcmp(v->name, "get") == 0 || strcmp(v->name, "rm") == 0 || strcmp(v->name, "stat") == 0;
    if (cl.o.version_id && (!one_object || cl.o.recursive))
        return cli_usage_error(v->name, "--version-id names one object: get, rm or stat, "
                                        "without --recursive");
    if (cl.o.versions && strcmp(v->name, "ls") != 0)
        return cli_usage_error(v->name, "--versions is an option of ls");

    cli_config_t cc;
    int rc = cli_config_resolve(&cl.flags, &cc);
    cli_t cli = {.o = cl.o,
                 .endpoint = cc.endpoint,
                 .is_default = cc.endpoint_is_default,
                 .anonymous = cc.anonymous};
    cli.progress = !cl.o.quiet && !cl.no_progress && isatty(STDERR_FILENO);
    if (rc == CLI_OK)
        rc = make_client(&cl, &cc, &cli.client);
    if (rc == CLI_OK && cl.o.verbose)
        say_sources(&cc, cli.client);
    if (rc == CLI_OK) {
        rc = v->run(&cli, argc - 1, argv + 1);
        if (cl.o.stats)
            print_stats(cli.client);
    }
    s3r_client_destroy(cli.client);
    cli_config_free(&cc);
    return rc;
}
