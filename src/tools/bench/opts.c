/* The command line of s3rdma-bench (opts.h): a table of flags, each parsed
 * by its kind, in the forms the SPT driver accepts (Go's flag package):
 * -flag or --flag, "--flag=value" or "--flag value"; booleans alone mean
 * true, or take "=true|false|1|0|yes|no|on|off". */
#include "tools/bench/opts.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/bench/payload.h"

enum kind {
    K_STR,
    K_BOOL,
    K_INT,
    K_U64,
    K_SIZE,
    K_SIZES,
    K_DURATION,
    K_SPAN, /* a duration that may be 0 */
    K_TRANSPORT,
    K_MIX,
    K_ENDPOINTS
};

typedef struct flag {
    const char *name;
    enum kind kind;
    size_t off;   /* of the field in bench_opts_t */
    int min, max; /* K_INT bounds */
} flag_t;

#define F(name, kind, field)                                                                       \
    {                                                                                              \
        name, kind, offsetof(bench_opts_t, field), 0, 0                                            \
    }
#define FI(name, field, lo, hi)                                                                    \
    {                                                                                              \
        name, K_INT, offsetof(bench_opts_t, field), lo, hi                                         \
    }

static const flag_t FLAGS[] = {
    F("endpoints", K_ENDPOINTS, endpoints),
    F("access-key", K_STR, access_key),
    F("secret-key", K_STR, secret_key),
    F("bucket", K_STR, bucket),
    F("prefix", K_STR, prefix),
    FI("threads", threads, 1, 1024),
    F("object-size", K_SIZES, size_min),
    F("duration", K_DURATION, duration_s),
    F("warmup", K_SPAN, warmup_s),
    F("gap", K_SPAN, gap_s),
    F("ops", K_U64, ops),
    F("seed-objects", K_U64, seed_objects),
    F("use-rdma", K_BOOL, use_rdma),
    F("rdma-local-ip", K_STR, rdma_local_ip),
    F("rdma-threshold", K_SIZE, rdma_threshold),
    F("rdma-fallback", K_BOOL, rdma_fallback),
    F("rdma-device", K_STR, rdma_device),
    F("rdma-log-level", K_STR, rdma_log_level),
    FI("rdma-timeout-ms", rdma_timeout_ms, 1, 3600000),
    F("rdma-allow-missing-bytes-header", K_BOOL, allow_missing_bytes_header),
    F("rdma-buffer-pool", K_BOOL, rdma_buffer_pool),
    F("rdma-endpoint", K_STR, rdma_endpoint),
    F("transport", K_TRANSPORT, transport),
    F("mix", K_MIX, mix),
    /* the server's limit of native requests in flight per session */
    FI("inflight", inflight, 1, 64),
    /* the server's x-s3rdma-pages bound (S3R_NATIVE_LIST_PAGES) */
    FI("walk-pages", walk_pages, 1, 16),
    F("json", K_STR, json_path),
    F("native-inline", K_SIZE, native_inline),
    F("part-size", K_SIZE, part_size),
    FI("parts-in-flight", parts_in_flight, 1, 64),
    F("client-per-thread", K_BOOL, client_per_thread),
    F("verify", K_BOOL, verify),
};

static const char *const OP_NAMES[OP_COUNT] = {"read", "write", "delete", "list", "head"};

const char *bench_op_name(bench_op_t op)
{
    return op < OP_COUNT ? OP_NAMES[op] : "?";
}

void bench_usage(FILE *f)
{
    fprintf(f,
            "usage: s3rdma-bench run write|read|mixed|delete|list|head|walk [flags]\n"
            "       s3rdma-bench verify [--endpoints ...] [--use-rdma] [flags]\n"
            "\n"
            "  --endpoints H:P[,H:P...]   S3 endpoints (http:// optional), spread across "
            "[127.0.0.1:9000]\n"
            "  --access-key K --secret-key S   [$AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY; else\n"
            "                             the AWS profile's: AWS_PROFILE or default]\n"
            "  --bucket B [s3rdma-bench]  --prefix P [s3rdma-bench/]\n"
            "  --threads N [4]            --inflight N [1] requests in flight per thread (async "
            "API)\n"
            "  --object-size SIZE|MIN-MAX [1MB]  (4KB, 1MB, 1MiB: powers of 1024)\n"
            "  --duration 30s|5m [30s]    --ops N (instead of --duration)\n"
            "  --warmup 300ms [0]         operations started in it are not counted\n"
            "  --gap 100us [0]            each thread sleeps this long after each request "
            "(--inflight 1)\n"
            "  --seed-objects N [100]     objects written first (the key space); 0: use those "
            "under the prefix\n"
            "  --walk-pages N [1]         run walk: pages per listing call (native: in one "
            "request)\n"
            "  --mix read=70,write=30     the operations of 'run mixed' (read, write, list, "
            "head)\n"
            "  --verify [true]            check every byte read; false: only its length\n"
            "  --part-size SIZE [0]       PUTs above SIZE go multipart in SIZE parts (0: never)\n"
            "  --parts-in-flight N [4]    parts of one multipart PUT in flight\n"
            "  --client-per-thread        each thread its own clients and RDMA sessions\n"
            "  --native-inline SIZE       native bodies and replies inline up to SIZE [16KB]\n"
            "  --transport http|token|native|auto   [auto with --use-rdma, else http]\n"
            "  --use-rdma  --rdma-endpoint H:P[,...] [advertised by each endpoint]\n"
            "  --rdma-threshold SIZE [1MB; 0 = everything]  --rdma-fallback [false]\n"
            "  --rdma-device DEV [auto]   --rdma-local-ip IP  --rdma-log-level L [WARN]\n"
            "  --rdma-timeout-ms N [30000]  --rdma-buffer-pool [true]\n"
            "  --rdma-allow-missing-bytes-header (accepted; see docs/bench-tool.md)\n"
            "  --json FILE                everything measured, as JSON\n"
            "  --help  --version\n"
            "env: SPT_RDMA_ENABLED RDMA_LOCAL_IP RDMA_DEVICE RDMA_LOG_LEVEL RDMA_THRESHOLD_BYTES\n"
            "     RDMA_TIMEOUT_MS RDMA_FALLBACK_ENABLED override the flags (docs/client.md)\n");
}

static int bad(const char *flag, const char *val, const char *why)
{
    fprintf(stderr, "s3rdma-bench: --%s %s: %s\n", flag, val ? val : "", why);
    return 2;
}

/* "true" -> 1, "false" -> 0, -1 for anything else. */
static int parse_bool(const char *s)
{
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no",
                                                                                "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return 1;
        if (strcasecmp(s, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* Go-style durations: "30s", "5m", "1m30s", "500ms", "100us", "1.5h"; a
 * bare number is seconds. */
static int parse_duration(const char *s, double *secs_p)
{
    double total = 0;
    const char *p = s;
    if (*p == '\0')
        return -1;
    while (*p) {
        char *end;
        errno = 0;
        double v = strtod(p, &end);
        if (end == p || errno || v < 0 || !isfinite(v))
            return -1;
        p = end;
        double unit = 1;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1e-3;
            p += 2;
        } else if (strncmp(p, "us", 2) == 0) {
            unit = 1e-6;
            p += 2;
        } else if (*p == 's') {
            p++;
        } else if (*p == 'm') {
            unit = 60;
            p++;
        } else if (*p == 'h') {
            unit = 3600;
            p++;
        } else if (*p != '\0' || p != end || total != 0) {
            return -1;
        }
        total += v * unit;
    }
    *secs_p = total;
    return 0;
}

/* "read=70,write=30" */
static int parse_mix(const char *s, unsigned mix[OP_COUNT])
{
    unsigned m[OP_COUNT] = {0}, sum = 0;
    char *copy = strdup(s), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && rc == 0;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        int op = -1;
        for (int i = 0; eq && i < OP_COUNT; i++)
            if ((size_t)(eq - tok) == strlen(OP_NAMES[i]) &&
                strncmp(tok, OP_NAMES[i], (size_t)(eq - tok)) == 0)
                op = i;
        char *end;
        unsigned long w = eq ? strtoul(eq + 1, &end, 10) : 0;
        /* a delete in a mix would turn later reads of its key into errors */
        if (op < 0 || op == OP_DELETE || end == eq + 1 || *end || w > 1000000)
            rc = -1;
        else
            m[op] = (unsigned)w, sum += (unsigned)w;
    }
    free(copy);
    if (rc != 0 || sum == 0)
        return -1;
    memcpy(mix, m, sizeof m);
    return 0;
}

/* "h:p,http://h:p" -> "http://h:p,http://h:p" */
static char *parse_endpoints(const char *s)
{
    size_t cap = strlen(s) * 2 + 16, used = 0;
    char *out = malloc(cap), *copy = strdup(s), *save = NULL;
    if (!out || !copy) {
        free(out);
        free(copy);
        return NULL;
    }
    out[0] = '\0';
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int scheme = strstr(tok, "://") != NULL;
        used += (size_t)snprintf(out + used, cap - used, "%s%s%s", used ? "," : "",
                                 scheme ? "" : "http://", tok);
    }
    free(copy);
    if (used == 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* Sets the field of f from val. 0, or 2 after printing why. */
static int set_flag(bench_opts_t *o, const flag_t *f, const char *val)
{
    void *field = (char *)o + f->off;
    char *end;
    switch (f->kind) {
    case K_STR:
        *(const char **)field = val;
        return 0;
    case K_BOOL: {
        int b = parse_bool(val);
        if (b < 0)
            return bad(f->name, val, "expected true or false");
        *(int *)field = b;
        return 0;
    }
    case K_INT: {
        errno = 0;
        long v = strtol(val, &end, 10);
        if (errno || end == val || *end || v < f->min || v > f->max) {
            fprintf(stderr, "s3rdma-bench: --%s %s: expected a whole number from %d to %d\n",
                    f->name, val, f->min, f->max);
            return 2;
        }
        *(int *)field = (int)v;
        return 0;
    }
    case K_U64: {
        errno = 0;
        unsigned long long v = strtoull(val, &end, 10);
        if (errno || end == val || *end || val[0] == '-')
            return bad(f->name, val, "expected a whole number");
        *(uint64_t *)field = v;
        return 0;
    }
    case K_SIZE:
        if (s3r_size_parse(val, (uint64_t *)field) != S3R_OK)
            return bad(f->name, val, "expected a size such as 4096, 64KB, 1MB or 1MiB");
        return 0;
    case K_SIZES: {
        const char *dash = strchr(val, '-');
        char lo[64];
        size_t n = dash ? (size_t)(dash - val) : strlen(val);
        if (n >= sizeof lo)
            return bad(f->name, val, "too long");
        memcpy(lo, val, n);
        lo[n] = '\0';
        if (s3r_size_parse(lo, &o->size_min) != S3R_OK ||
            s3r_size_parse(dash ? dash + 1 : lo, &o->size_max) != S3R_OK)
            return bad(f->name, val, "expected a size (4KB, 1MB, 1MiB) or a range MIN-MAX");
        if (o->size_min > o->size_max)
            return bad(f->name, val, "the range's low end is above its high end");
        if (o->size_min < PAYLOAD_MIN)
            return bad(f->name, val,
                       "objects carry a 40-byte verification header: at least 64 bytes");
        if (o->size_max > (UINT64_C(1) << 32))
            return bad(f->name, val, "at most 4 GiB");
        return 0;
    }
    case K_DURATION:
        if (parse_duration(val, (double *)field) != 0 || *(double *)field <= 0)
            return bad(f->name, val, "expected a duration such as 30s, 5m or 1m30s");
        return 0;
    case K_SPAN:
        if (parse_duration(val, (double *)field) != 0)
            return bad(f->name, val, "expected a duration such as 0, 100us, 300ms or 2s");
        return 0;
    case K_TRANSPORT:
        if (s3r_transport_parse(val, (s3r_transport_t *)field) != S3R_OK)
            return bad(f->name, val, "expected http, token, native or auto");
        return 0;
    case K_MIX:
        if (parse_mix(val, (unsigned *)field) != 0)
            return bad(f->name, val,
                       "expected weights like read=70,write=30 (read, write, list, head)");
        return 0;
    case K_ENDPOINTS: {
        char *e = parse_endpoints(val);
        if (!e)
            return bad(f->name, val, "expected host:port[,host:port...]");
        free(*(char **)field);
        *(char **)field = e;
        return 0;
    }
    }
    return 2;
}

static const flag_t *find_flag(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof FLAGS / sizeof FLAGS[0]; i++)
        if (strlen(FLAGS[i].name) == len && strncmp(FLAGS[i].name, name, len) == 0)
            return &FLAGS[i];
    return NULL;
}

static void defaults(bench_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->bucket = "s3rdma-bench";
    o->prefix = "s3rdma-bench/";
    o->threads = 4;
    o->inflight = 1;
    o->walk_pages = 1;
    o->size_min = o->size_max = UINT64_C(1) << 20;
    o->duration_s = 30;
    o->seed_objects = 100;
    o->transport = S3R_TRANSPORT_DEFAULT; /* decided after parsing */
    o->rdma_threshold = UINT64_C(1) << 20;
    o->rdma_fallback = 0;
    o->rdma_device = "auto";
    o->rdma_log_level = "WARN";
    o->rdma_timeout_ms = 30000;
    o->rdma_buffer_pool = 1;
    o->mix[OP_READ] = 70;
    o->mix[OP_WRITE] = 30;
    o->native_inline = BENCH_INLINE_DEFAULT;
    o->verify = 1;
}

int bench_opts_parse(int argc, char **argv, bench_opts_t *o)
{
    defaults(o);
    const char *pos[2] = {NULL, NULL};
    int npos = 0, mix_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "-help") == 0) {
            o->verb = VERB_HELP;
            return 0;
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "-version") == 0) {
            o->verb = VERB_VERSION;
            return 0;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (npos == 2) {
                fprintf(stderr, "s3rdma-bench: unexpected argument '%s'\n", a);
                return 2;
            }
            pos[npos++] = a;
            continue;
        }
        const char *name = a + (a[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const flag_t *f = find_flag(name, len);
        if (!f) {
            fprintf(stderr, "s3rdma-bench: unknown flag '%s' (s3rdma-bench --help lists them)\n",
                    a);
            return 2;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val && f->kind == K_BOOL)
            val = "true";
        if (!val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "s3rdma-bench: --%s needs a value\n", f->name);
                return 2;
            }
            val = argv[++i];
        }
        if (f->kind == K_MIX)
            mix_given = 1;
        int rc = set_flag(o, f, val);
        if (rc)
            return rc;
    }
    if (!pos[0]) {
        fprintf(stderr, "s3rdma-bench: missing verb\n");
        bench_usage(stderr);
        return 2;
    }
    if (strcmp(pos[0], "help") == 0) {
        o->verb = VERB_HELP;
        return 0;
    }
    if (strcmp(pos[0], "verify") == 0) {
        o->verb = VERB_VERIFY;
        if (pos[1]) {
            fprintf(stderr, "s3rdma-bench: verify takes no argument ('%s')\n", pos[1]);
            return 2;
        }
    } else if (strcmp(pos[0], "run") == 0) {
        o->verb = VERB_RUN;
        o->workload = pos[1];
        static const char *const wl[] = {"write", "read", "mixed", "delete", "list", "head", "walk"};
        int known = 0;
        for (size_t i = 0; o->workload && i < sizeof wl / sizeof wl[0]; i++)
            known |= strcmp(o->workload, wl[i]) == 0;
        if (!known) {
            fprintf(stderr, "s3rdma-bench: run needs one of write, read, mixed, delete, list, "
                            "head, walk\n");
            return 2;
        }
        o->walk = strcmp(o->workload, "walk") == 0;
        if (strcmp(o->workload, "mixed") != 0) {
            if (mix_given) {
                fprintf(stderr, "s3rdma-bench: --mix applies to 'run mixed' only\n");
                return 2;
            }
            memset(o->mix, 0, sizeof o->mix);
            for (int k = 0; k < OP_COUNT && !o->walk; k++)
                if (strcmp(o->workload, OP_NAMES[k]) == 0)
                    o->mix[k] = 1; /* each workload but mixed and walk is an op's name */
        }
        if (o->gap_s > 0 && o->inflight > 1) {
            fprintf(stderr, "s3rdma-bench: --gap models one request at a time: not with "
                            "--inflight above 1\n");
            return 2;
        }
    } else {
        fprintf(stderr, "s3rdma-bench: unknown verb '%s' (run, verify, help)\n", pos[0]);
        return 2;
    }
    if (!o->endpoints && !(o->endpoints = strdup("http://127.0.0.1:9000")))
        return 2;
    if (!o->access_key)
        o->access_key = getenv("AWS_ACCESS_KEY_ID");
    if (!o->secret_key)
        o->secret_key = getenv("AWS_SECRET_ACCESS_KEY");
    int has_key = o->access_key && *o->access_key, has_secret = o->secret_key && *o->secret_key;
    if (has_key != has_secret) {
        fprintf(stderr, "s3rdma-bench: credentials needed: --access-key and --secret-key (or "
                        "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY), both or neither\n");
        return 2;
    }
    /* Neither: the AWS profiles' keys (the shared files, credential_process,
     * a container endpoint), which libs3rdma finds when the client is made
     * and names what is missing when nothing is found. */
    o->aws_credentials = !has_key;
    /* SPT_RDMA_ENABLED overrides --use-rdma here too: it picks the default
     * transport (libs3rdma applies it again to use_rdma). */
    const char *env = getenv("SPT_RDMA_ENABLED");
    if (env && *env) {
        int b = parse_bool(env);
        if (b < 0) {
            fprintf(stderr, "s3rdma-bench: SPT_RDMA_ENABLED=%s: expected true or false\n", env);
            return 2;
        }
        o->use_rdma = b;
    }
    if (o->transport == S3R_TRANSPORT_DEFAULT)
        o->transport = o->use_rdma ? S3R_TRANSPORT_AUTO : S3R_TRANSPORT_HTTP;
    else if (o->transport != S3R_TRANSPORT_HTTP)
        o->use_rdma = 1;
    o->live = isatty(STDERR_FILENO);
    return 0;
}

void bench_opts_free(bench_opts_t *o)
{
    free(o->endpoints);
    o->endpoints = NULL;
}

void bench_opts_config(const bench_opts_t *o, s3r_config_t *cfg)
{
    s3r_config_init(cfg);
    cfg->endpoint = o->endpoints;
    cfg->rdma_endpoint = o->rdma_endpoint;
    cfg->access_key = o->aws_credentials ? NULL : o->access_key;
    cfg->secret_key = o->aws_credentials ? NULL : o->secret_key;
    cfg->aws_credentials = o->aws_credentials;
    cfg->transport = o->transport;
    cfg->use_rdma = o->use_rdma;
    cfg->rdma_threshold = o->rdma_threshold;
    cfg->rdma_fallback = o->rdma_fallback;
    cfg->rdma_device = strcmp(o->rdma_device, "auto") == 0 ? NULL : o->rdma_device;
    cfg->rdma_local_ip = o->rdma_local_ip;
    cfg->rdma_log_level = o->rdma_log_level;
    cfg->rdma_timeout_ms = o->rdma_timeout_ms;
    cfg->quiet = 1; /* fallbacks are counted and reported, not logged */
    if (o->native_inline != BENCH_INLINE_DEFAULT)
        cfg->native_inline = o->native_inline;
    if (o->parts_in_flight)
        cfg->parts_in_flight = (unsigned)o->parts_in_flight;
    if (o->part_size) {
        cfg->part_size = cfg->multipart_threshold = o->part_size;
    } else {
        /* whole objects in one request: single PUTs unless --part-size */
        cfg->multipart_threshold =
            o->size_max > cfg->multipart_threshold ? o->size_max : cfg->multipart_threshold;
    }
}
