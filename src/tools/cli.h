/* The s3rdma CLI: declarations shared by its files (src/tools/cli_*.c).
 * The CLI is a client of the public libs3rdma API (s3rdma.h) and nothing
 * more; docs/cli.md is its user documentation. */
#ifndef S3R_TOOLS_CLI_H
#define S3R_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "s3rdma.h"

/* Exit codes (docs/cli.md). A command over many objects goes on past a
 * failed one and exits with the first failure's code. */
enum cli_exit {
    CLI_OK = 0,
    CLI_FAIL = 1,     /* the operation failed: S3, transport or local I/O error */
    CLI_USAGE = 2,    /* bad arguments or configuration; nothing was sent */
    CLI_NOTFOUND = 3, /* NoSuchBucket / NoSuchKey / no such local file */
    CLI_DENIED = 4,   /* AccessDenied, bad credentials or signature */
};

#define CLI_MAX_META 64

/* Everything the command line set besides the connection (cli_config.c). */
typedef struct cli_opts {
    bool recursive;   /* cp, mv, rm, ls: every key under the prefix */
    bool force;       /* rb: delete the objects first */
    bool quiet;       /* no transfer lines, no progress */
    bool verbose;     /* the settings' sources and each operation's transport */
    bool stats;       /* the client's counters at the end */
    bool help;        /* --help after or without a verb */
    bool version;     /* --version */
    bool versions;    /* ls: every version and delete marker */
    uint64_t expires; /* presign --expires-in, seconds */
    /* get, rm, stat: the version (S3's versionId) instead of the current one */
    const char *version_id;
    const char *content_type;
    const char *storage_class; /* uploads' x-amz-storage-class, or NULL */
    s3r_meta_t meta[CLI_MAX_META];
    size_t n_meta;
} cli_opts_t;

/* What a verb runs with. */
typedef struct cli {
    s3r_client_t *client;
    cli_opts_t o;
    bool progress;   /* draw progress bars: stderr is a terminal and not quiet */
    bool is_default; /* the endpoint is the built-in default (said in connect errors) */
    bool move;       /* mv: transfer lines say "move", the source goes afterwards */
    bool anonymous;  /* --no-sign-request: nothing is signed */
    const char *endpoint;
} cli_t;

/* ---- cli_out.c: the CLI's human-readable output -------------------------- */

/* Replaces, in place, each control character of s[0..len) with one '?':
 * C0 (0x00-0x1f), DEL (0x7f), the C1 controls U+0080-U+009F encoded as
 * UTF-8, and every byte that is not part of well-formed UTF-8 (8-bit
 * terminals read 0x80-0x9f as C1). Everything else, printable non-ASCII
 * included, is kept. Returns the new length (<= len); s is not terminated
 * anew. */
size_t cli_mask_controls(char *s, size_t len);
/* Prints one line (fmt holds no '\n': it is added) to stream. When stream is
 * a terminal, the whole formatted line goes through cli_mask_controls, so no
 * key, name or message chosen by someone else can send the terminal a
 * control sequence; otherwise its bytes are written exactly. Every line the
 * CLI prints for people, on stdout or stderr, goes through here; only the
 * fixed texts of help and --version, the progress bar (cli_progress.c masks
 * its label) and object data sent to stdout do not. */
void cli_line(FILE *stream, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- cli_config.c: endpoint, credentials, region, transport ---------------- */

/* The connection flags given on the command line; NULL when not given. */
typedef struct cli_flags {
    const char *profile, *endpoint, *rdma_endpoint, *access_key, *secret_key, *region;
    const char *transport, *ca_bundle;
    bool no_fallback;
    bool no_sign_request; /* --no-sign-request: anonymous, as the AWS CLI's */
} cli_flags_t;

/* The resolved settings; every string owned here (cli_config_free). */
typedef struct cli_config {
    char *endpoint, *rdma_endpoint, *access_key, *secret_key, *region, *transport;
    char *session_token;
    char *ca_bundle; /* PEM CA file verifying an https:// endpoint; NULL: the system's */
    bool no_fallback;
    bool anonymous; /* unsigned requests, no credentials (--no-sign-request) */
    /* The keys came from a credential_process or a container endpoint: the
     * client loads them itself and again before they expire. */
    bool expiring_keys;
    bool endpoint_is_default;
    /* Where each came from, for -v: "--endpoint-url", "AWS_ENDPOINT_URL",
     * "profile dev (~/.aws/config)", "default" (static or owned strings). */
    char *src_endpoint, *src_keys, *src_region;
} cli_config_t;

/* Resolves the settings: a command-line flag, else what
 * s3r_aws_settings_load finds (the AWS CLI's precedence over the
 * environment and the profile; with --profile the profile's keys beat the
 * environment's), else the default. CLI_OK, or CLI_USAGE after printing why
 * (a shared file that does not parse, an unknown profile named explicitly,
 * missing credentials without --no-sign-request). */
int cli_config_resolve(const cli_flags_t *flags, cli_config_t *out);
void cli_config_free(cli_config_t *cfg);

/* ---- cli_path.c: s3:// URLs and local paths ------------------------------ */

typedef struct cli_s3url {
    char *bucket;
    char *key; /* "" for the bucket itself; may end in '/' (a prefix) */
} cli_s3url_t;

/* true if arg starts with "s3://". */
bool cli_is_s3(const char *arg);
/* Parses "s3://bucket[/key]". false (nothing allocated) on a malformed URL. */
bool cli_s3url_parse(const char *arg, cli_s3url_t *u);
void cli_s3url_free(cli_s3url_t *u);
/* The last '/'-separated component of s ("a/b/c" -> "c", "c" -> "c"). */
const char *cli_basename(const char *s);
/* true if the key names a prefix ("" or ending in '/'). */
bool cli_key_is_prefix(const char *key);
/* dir + "/" + name (one '/' between), malloc'd; NULL when out of memory. */
char *cli_join(const char *dir, const char *name);
/* The local-path rule of every verb that writes or deletes local files named
 * by keys (cp/mv --recursive, sync, get into a directory): rel, the part of
 * a key that names the file below a local directory (the key below the
 * copied prefix, or its base name), must stay lexically inside that
 * directory. '\\' counts as a separator as well as '/' (as aws s3 does, so
 * a key means the same on every system). Returns NULL when rel is fine, or
 * why it is not ("it is absolute", "it has a '..' segment", "it has a '.'
 * segment", "it is empty"). Symlinks already inside the directory are the local
 * user's own and are followed (docs/cli.md). */
const char *cli_rel_refusal(const char *rel);
/* dir joined with rel when rel obeys cli_rel_refusal; malloc'd. Otherwise
 * NULL with *rc_p = CLI_FAIL after a warning on stderr that names the
 * s3://bucket/key skipped and why (out of memory: NULL, CLI_FAIL too). */
char *cli_local_path(const char *dir, const char *rel, const char *bucket, const char *key,
                     int *rc_p);
/* true if path is an existing directory. */
bool cli_is_dir(const char *path);
/* Creates the directories leading to path (not path itself). 0 or -1. */
int cli_mkdirs_for(const char *path);
/* Calls fn for every regular file under dir (recursively, symlinks not
 * followed) with its path relative to dir and its stat; stops at the first
 * non-zero return and returns it. Unreadable directories are reported on
 * stderr and give CLI_FAIL. */
int cli_walk(const char *dir, int (*fn)(void *arg, const char *rel, const struct stat *sb),
             void *arg);

/* ---- cli_progress.c: progress bars and transfer lines -------------------- */

/* Starts a progress bar for a transfer of total bytes (0 unknown) and
 * installs it as the client's progress callback; a no-op unless
 * cli->progress and the transfer is large enough to be worth one. */
void cli_progress_begin(cli_t *cli, const char *label, uint64_t total);
/* Erases the bar (if drawn) and removes the callback. */
void cli_progress_end(cli_t *cli);
/* Prints one completed-transfer line to stdout, as aws s3 does
 * ("upload: ./f to s3://b/k"); to is NULL for deletes. Nothing with -q. */
void cli_done_line(const cli_t *cli, const char *what, const char *from, const char *to);

/* ---- cli_report.c: errors, hints and exit codes -------------------------- */

/* Prints the failed st of the operation what (e.g. "get s3://b/k") with the
 * library's last error and a hint on what to do; returns its exit code. */
int cli_report(const cli_t *cli, const char *what, s3r_status_t st);
/* Prints a usage error for verb ("s3rdma: cp: ...") and returns CLI_USAGE. */
int cli_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The exit code of st. */
int cli_exit_code(s3r_status_t st);
/* Keeps the first failure: returns rc if rc is an error, else next. */
int cli_first_error(int rc, int next);

/* ---- cli_transfer.c: one object moved, with its line, bar and transport --- */

/* Snapshot of the client's counters before an operation, for -v. */
typedef struct cli_op {
    s3r_stats_t before;
} cli_op_t;
void cli_op_begin(const cli_t *cli, cli_op_t *op);
/* With -v, prints which transport(s) carried the operation since begin. */
void cli_op_end(const cli_t *cli, const cli_op_t *op, const char *what);

/* local file (or "-" for stdin) -> s3://bucket/key */
int cli_upload(cli_t *cli, const char *path, const char *bucket, const char *key);
/* s3://bucket/key -> local file (or "-" for stdout); creates missing parent
 * directories; a failed download leaves no file behind. */
int cli_download(cli_t *cli, const char *bucket, const char *key, const char *path);
/* Server-side copy. */
int cli_copy(cli_t *cli, const char *sb, const char *sk, const char *db, const char *dk);
/* Deletes one object. */
int cli_delete(cli_t *cli, const char *bucket, const char *key);
/* Deletes n objects of bucket with DeleteObjects (1000 per request), one
 * line per key deleted; a key that failed is reported on stderr and the
 * first failure is the exit code. */
int cli_delete_many(cli_t *cli, const char *bucket, const char *const *keys, size_t n);
/* Lists every key under prefix (no delimiter, all pages). */
int cli_list_all(cli_t *cli, const char *bucket, const char *prefix, s3r_object_list_t **list_p);

/* ---- verbs (cli_verbs.c, cli_cp.c, cli_sync.c) --------------------------- */

/* Each gets the verb's positional arguments. */
int cli_verb_mb(cli_t *cli, int argc, char **argv);
int cli_verb_rb(cli_t *cli, int argc, char **argv);
int cli_verb_ls(cli_t *cli, int argc, char **argv);
int cli_verb_rm(cli_t *cli, int argc, char **argv);
int cli_verb_stat(cli_t *cli, int argc, char **argv);
int cli_verb_presign(cli_t *cli, int argc, char **argv);
int cli_verb_cp(cli_t *cli, int argc, char **argv);
int cli_verb_mv(cli_t *cli, int argc, char **argv);
int cli_verb_put(cli_t *cli, int argc, char **argv);
int cli_verb_get(cli_t *cli, int argc, char **argv);
int cli_verb_sync(cli_t *cli, int argc, char **argv);

#endif
