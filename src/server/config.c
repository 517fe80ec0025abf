#include "server/config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/log.h"
#include "common/s3r_limits.h"
#include "common/size.h"

#define STR_(x) #x
#define STR(x)  STR_(x)

/* One table drives defaults, the file keys, the environment and the flags. */
typedef struct setting {
    const char *key;  /* YAML path: "durability", "rdma.listen" */
    const char *flag; /* --flag */
    const char *env;  /* S3RDMA_* */
    const char *dflt;
    size_t offset; /* of the char * in server_config_t */
    const char *help;
} setting_t;

#define OFF(f) offsetof(server_config_t, f)
static const setting_t settings[] = {
    {"data_dir", "data", "S3RDMA_DATA", "./data", OFF(data_dir),
     "directory for objects and the index"},
    {"listen", "listen", "S3RDMA_LISTEN", "127.0.0.1:9000", OFF(listen), "HTTP address HOST:PORT"},
    {"durability", "durability", "S3RDMA_DURABILITY", "fsync", OFF(durability),
     "fsync (survives power loss) or relaxed (survives kill -9)"},
    {"storage.backend", "storage-backend", "S3RDMA_STORAGE_BACKEND", "local", OFF(storage_backend),
     "local (LMDB + files in data_dir) or rados (a Ceph cluster)"},
    {"storage.rados.conf", "storage-rados-conf", "S3RDMA_STORAGE_RADOS_CONF", "", OFF(rados_conf),
     "the cluster's ceph.conf (default: librados' search)"},
    {"storage.rados.user", "storage-rados-user", "S3RDMA_STORAGE_RADOS_USER", "admin",
     OFF(rados_user), "RADOS client id"},
    {"storage.rados.keyring", "storage-rados-keyring", "S3RDMA_STORAGE_RADOS_KEYRING", "",
     OFF(rados_keyring), "keyring file (default: the conf's)"},
    {"storage.rados.pool", "storage-rados-pool", "S3RDMA_STORAGE_RADOS_POOL", "", OFF(rados_pool),
     "pool for object data (required with the rados backend)"},
    {"storage.rados.index_pool", "storage-rados-index-pool", "S3RDMA_STORAGE_RADOS_INDEX_POOL", "",
     OFF(rados_index_pool), "pool for buckets, indexes and uploads (default: the data pool)"},
    {"storage.rados.gc_grace", "storage-rados-gc-grace", "S3RDMA_STORAGE_RADOS_GC_GRACE", "900",
     OFF(rados_gc_grace),
     "seconds replaced data stays readable, and the age under which the start sweep spares "
     "unreferenced data"},
    {"storage.rados.op_timeout", "storage-rados-op-timeout", "S3RDMA_STORAGE_RADOS_OP_TIMEOUT",
     "10", OFF(rados_op_timeout),
     "seconds a cluster call may take before the request fails with 503 SlowDown"},
    {"region", "region", "S3RDMA_REGION", "us-east-1", OFF(region), "region reported to clients"},
    {"log_level", "log-level", "S3RDMA_LOG_LEVEL", "info", OFF(log_level),
     "error, warn, info or debug"},
    {"domains", "domains", "S3RDMA_DOMAINS", "localhost", OFF(domains),
     "comma-separated virtual-host domains (bucket.DOMAIN)"},
    {"rdma.enabled", "rdma-enabled", "S3RDMA_RDMA_ENABLED", "true", OFF(rdma_enabled),
     "true or false: the RDMA session port and the token path"},
    {"rdma.listen", "rdma-listen", "S3RDMA_RDMA_LISTEN", "", OFF(rdma_listen),
     "RDMA session address HOST:PORT (default: the HTTP host and rdma.port)"},
    {"rdma.port", "rdma-port", "S3RDMA_RDMA_PORT", "9100", OFF(rdma_port),
     "RDMA session port when rdma.listen is not given"},
    {"rdma.workers", "rdma-workers", "S3RDMA_RDMA_WORKERS", "0", OFF(rdma_workers),
     "RDMA progress threads (0 = one per core)"},
    {"rdma.max_sessions", "rdma-max-sessions", "S3RDMA_RDMA_MAX_SESSIONS", "256",
     OFF(rdma_max_sessions), "authenticated RDMA sessions at once; further ones are refused"},
    {"rdma.max_sessions_per_user", "rdma-max-sessions-per-user",
     "S3RDMA_RDMA_MAX_SESSIONS_PER_USER", "64", OFF(rdma_max_sessions_per_user),
     "RDMA sessions one access key may hold at once"},
    {"rdma.max_pending", "rdma-max-pending", "S3RDMA_RDMA_MAX_PENDING", "128",
     OFF(rdma_max_pending),
     "session-port connections not yet authenticated; past it the oldest of the busiest "
     "source is evicted"},
    {"rdma.max_pending_per_source", "rdma-max-pending-per-source",
     "S3RDMA_RDMA_MAX_PENDING_PER_SOURCE", "8", OFF(rdma_max_pending_per_source),
     "unauthenticated session-port connections from one IP address (or local uid)"},
    {"rdma.native_threads", "rdma-native-threads", "S3RDMA_RDMA_NATIVE_THREADS", "4",
     OFF(rdma_native_threads),
     "threads running native requests that may block (writes, listings, multipart)"},
    {"rdma.max_native_per_session", "rdma-max-native-per-session",
     "S3RDMA_RDMA_MAX_NATIVE_PER_SESSION", "64", OFF(rdma_max_native_per_session),
     "native requests in flight on one session; past it: SlowDown"},
    {"rdma.max_native", "rdma-max-native", "S3RDMA_RDMA_MAX_NATIVE", "1024", OFF(rdma_max_native),
     "native requests in flight on the server (each holds up to 96 KiB); past it: SlowDown"},
    {"rdma.socket", "rdma-socket", "S3RDMA_RDMA_SOCKET", "", OFF(rdma_socket),
     "Unix socket for local RDMA clients: @NAME (abstract), a path, or off "
     "(default @s3rdma.PORT)"},
    {"rdma.trusted_uids", "rdma-trusted-uids", "S3RDMA_RDMA_TRUSTED_UIDS", "",
     OFF(rdma_trusted_uids),
     "comma-separated uids (besides the server's own) whose Unix-socket sessions may use "
     "shared-memory transports"},
    {"rdma.staging", "rdma-staging", "S3RDMA_RDMA_STAGING", "64MiB", OFF(rdma_staging),
     "registered staging memory for the data mover"},
    {"rdma.chunk", "rdma-chunk", "S3RDMA_RDMA_CHUNK", "1MiB", OFF(rdma_chunk),
     "data mover pipeline chunk (staging is split into chunks of this size)"},
    {"http.max_connections", "http-max-connections", "S3RDMA_HTTP_MAX_CONNECTIONS",
     STR(S3R_HTTP_MAX_CONNECTIONS), OFF(http_max_connections),
     "HTTP connections at once; further ones wait to be accepted"},
    {"http.max_connections_per_ip", "http-max-connections-per-ip",
     "S3RDMA_HTTP_MAX_CONNECTIONS_PER_IP", STR(S3R_HTTP_MAX_CONNECTIONS_PER_IP),
     OFF(http_max_connections_per_ip),
     "HTTP connections at once from one client address; more are closed (0 = no limit)"},
    {"http.idle_timeout", "http-idle-timeout", "S3RDMA_HTTP_IDLE_TIMEOUT",
     STR(S3R_HTTP_IDLE_TIMEOUT_S), OFF(http_idle_timeout),
     "seconds a connection may send and take nothing before it is closed"},
    {"http.head_timeout", "http-head-timeout", "S3RDMA_HTTP_HEAD_TIMEOUT",
     STR(S3R_HTTP_HEAD_TIMEOUT_S), OFF(http_head_timeout),
     "seconds to receive a request line and headers, however they trickle (0 = no limit)"},
    {"http.min_body_rate", "http-min-body-rate", "S3RDMA_HTTP_MIN_BODY_RATE",
     STR(S3R_HTTP_MIN_BODY_RATE), OFF(http_min_body_rate),
     "request body bytes per second a client must keep up, e.g. 1KiB (0 = no limit)"},
    {"http.body_rate_window", "http-body-rate-window", "S3RDMA_HTTP_BODY_RATE_WINDOW",
     STR(S3R_HTTP_BODY_RATE_WINDOW_S), OFF(http_body_rate_window),
     "seconds over which the body rate is averaged"},
};
#define N_SETTINGS (sizeof(settings) / sizeof(settings[0]))

static char **slot(server_config_t *cfg, const setting_t *s)
{
    return (char **)((char *)cfg + s->offset);
}

static int set_value(server_config_t *cfg, const setting_t *s, const char *value)
{
    char *copy = strdup(value);
    if (!copy)
        return -1;
    free(*slot(cfg, s));
    *slot(cfg, s) = copy;
    return 0;
}

int server_config_add_user(server_config_t *cfg, const char *access_key, const char *secret_key)
{
    s3_user_t *u = realloc(cfg->users, (cfg->n_users + 1) * sizeof(*u));
    if (!u)
        return -1;
    cfg->users = u;
    u[cfg->n_users].access_key = strdup(access_key);
    u[cfg->n_users].secret_key = strdup(secret_key);
    if (!u[cfg->n_users].access_key || !u[cfg->n_users].secret_key)
        return -1;
    cfg->n_users++;
    return 0;
}

int server_parse_hostport(const char *s, char *host, size_t host_len, int *port_p)
{
    const char *colon;
    const char *h = s;
    size_t hlen;
    if (*s == '[') {
        const char *end = strchr(s, ']');
        if (!end || end[1] != ':')
            return -1;
        h = s + 1;
        hlen = (size_t)(end - h);
        colon = end + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        hlen = (size_t)(colon - s);
    }
    if (hlen == 0 || hlen >= host_len)
        return -1;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || colon[1] == '\0')
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port_p = (int)port;
    return 0;
}

/* ---- YAML -------------------------------------------------------------------------- */

static const char *scalar(yaml_document_t *doc, yaml_node_t *n)
{
    (void)doc;
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int load_users(server_config_t *cfg, yaml_document_t *doc, yaml_node_t *seq,
                      const char *path)
{
    if (seq->type != YAML_SEQUENCE_NODE) {
        fprintf(stderr, "%s: 'users' must be a list of {access_key, secret_key}\n", path);
        return -1;
    }
    for (yaml_node_item_t *it = seq->data.sequence.items.start; it < seq->data.sequence.items.top;
         it++) {
        yaml_node_t *m = yaml_document_get_node(doc, *it);
        const char *ak = NULL, *sk = NULL;
        if (m && m->type == YAML_MAPPING_NODE) {
            for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
                 p++) {
                const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
                const char *v = scalar(doc, yaml_document_get_node(doc, p->value));
                if (k && strcmp(k, "access_key") == 0)
                    ak = v;
                else if (k && strcmp(k, "secret_key") == 0)
                    sk = v;
                else {
                    fprintf(stderr, "%s: unknown user field '%s'\n", path, k ? k : "?");
                    return -1;
                }
            }
        }
        if (!ak || !sk || strlen(ak) < 3 || strlen(ak) > 128 || strlen(sk) < 8 ||
            strlen(sk) > 128) {
            fprintf(stderr,
                    "%s: each user needs access_key (3-128 chars) and secret_key (8-128 chars)\n",
                    path);
            return -1;
        }
        if (server_config_add_user(cfg, ak, sk) != 0)
            return -1;
    }
    return 0;
}

static int apply_mapping(server_config_t *cfg, yaml_document_t *doc, yaml_node_t *map,
                         const char *prefix, const char *path)
{
    if (map->type != YAML_MAPPING_NODE) {
        fprintf(stderr, "%s: expected a mapping%s%s\n", path, *prefix ? " under " : "", prefix);
        return -1;
    }
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        if (!k) {
            fprintf(stderr, "%s: keys must be plain strings\n", path);
            return -1;
        }
        char full[128];
        snprintf(full, sizeof(full), "%s%s%s", prefix, *prefix ? "." : "", k);
        if (!*prefix && strcmp(k, "users") == 0) {
            if (load_users(cfg, doc, v, path) != 0)
                return -1;
            continue;
        }
        if (!*prefix && (strcmp(k, "rdma") == 0 || strcmp(k, "http") == 0)) {
            if (apply_mapping(cfg, doc, v, k, path) != 0)
                return -1;
            continue;
        }
        const setting_t *s = NULL;
        for (size_t i = 0; i < N_SETTINGS; i++)
            if (strcmp(settings[i].key, full) == 0)
                s = &settings[i];
        if (!s) {
            fprintf(stderr, "%s: unknown setting '%s'\n", path, full);
            return -1;
        }
        /* Comma-list settings also take a YAML sequence. */
        int list = strcmp(full, "domains") == 0 || strcmp(full, "rdma.trusted_uids") == 0;
        if (list && v && v->type == YAML_SEQUENCE_NODE) {
            char joined[1024] = "";
            for (yaml_node_item_t *it = v->data.sequence.items.start;
                 it < v->data.sequence.items.top; it++) {
                const char *d = scalar(doc, yaml_document_get_node(doc, *it));
                if (d) {
                    if (*joined)
                        strncat(joined, ",", sizeof(joined) - strlen(joined) - 1);
                    strncat(joined, d, sizeof(joined) - strlen(joined) - 1);
                }
            }
            if (set_value(cfg, s, joined) != 0)
                return -1;
            continue;
        }
        const char *val = scalar(doc, v);
        if (!val) {
            fprintf(stderr, "%s: '%s' must be a scalar\n", path, full);
            return -1;
        }
        if (set_value(cfg, s, val) != 0)
            return -1;
    }
    return 0;
}

static int load_file(server_config_t *cfg, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open config file %s: %s\n", path, strerror(errno));
        return -1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    int rc = -1;
    if (!yaml_parser_load(&parser, &doc)) {
        fprintf(stderr, "%s:%zu: %s\n", path, parser.problem_mark.line + 1,
                parser.problem ? parser.problem : "YAML syntax error");
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        rc = root ? apply_mapping(cfg, &doc, root, "", path) : 0; /* empty file: defaults */
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}

/* ---- command line ---------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out, "usage: s3rdmad [options]\n\n"
                 "S3-compatible object server with an RDMA data path.\n\n"
                 "  --config FILE          YAML config file (env S3RDMA_CONFIG)\n");
    for (size_t i = 0; i < N_SETTINGS; i++) {
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s VALUE", settings[i].flag);
        fprintf(out, "  %-22s %s\n  %-22s   (env %s, file key %s, default \"%s\")\n", flag,
                settings[i].help, "", settings[i].env, settings[i].key, settings[i].dflt);
    }
    fprintf(out, "  --help                 this text\n  --version              the version\n\n"
                 "Precedence: flag > environment > config file > default.\n"
                 "Users: the config file's 'users:' list ({access_key, secret_key}) plus\n"
                 "S3RDMA_ROOT_USER / S3RDMA_ROOT_PASSWORD. With none, the first start creates\n"
                 "DATA/.s3rdma/credentials (mode 0600) and later starts reuse it.\n");
}

/* A whole decimal number in [lo, hi]. */
static int parse_count(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
    char *end;
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    unsigned long n = strtoul(s, &end, 10);
    if (*end || errno || n < lo || n > hi)
        return -1;
    *out = n;
    return 0;
}

/* A count setting and its range; unit and zero_means say how the error
 * names them ("" when neither applies). */
typedef struct count_setting {
    const char *name, *value;
    unsigned long lo, hi;
    const char *unit, *zero_means;
    unsigned *out; /* the parsed value, when wanted */
} count_setting_t;

/* Parses every setting of set (prefix names the section in errors). 0, or
 * -1 after saying which one is out of range. */
static int parse_counts(const char *prefix, const count_setting_t *set, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned long v;
        if (parse_count(set[i].value, set[i].lo, set[i].hi, &v) != 0) {
            char zero[64] = "";
            if (*set[i].zero_means)
                snprintf(zero, sizeof(zero), " (0 = %s)", set[i].zero_means);
            fprintf(stderr, "s3rdmad: %s %s must be %lu-%lu%s%s%s, not '%s'\n", prefix, set[i].name,
                    set[i].lo, set[i].hi, *set[i].unit ? " " : "", set[i].unit, zero, set[i].value);
            return -1;
        }
        if (set[i].out)
            *set[i].out = (unsigned)v;
    }
    return 0;
}

int server_config_load(server_config_t *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (set_value(cfg, &settings[i], settings[i].dflt) != 0)
            return -1;

    struct option opts[N_SETTINGS + 4];
    memset(opts, 0, sizeof(opts));
    for (size_t i = 0; i < N_SETTINGS; i++) {
        opts[i].name = settings[i].flag;
        opts[i].has_arg = required_argument;
        opts[i].val = 1000 + (int)i;
    }
    opts[N_SETTINGS] = (struct option){"config", required_argument, NULL, 'c'};
    opts[N_SETTINGS + 1] = (struct option){"help", no_argument, NULL, 'h'};
    opts[N_SETTINGS + 2] = (struct option){"version", no_argument, NULL, 'V'};

    /* Flags are collected first and applied last. */
    const char *flag_values[N_SETTINGS] = {0};
    const char *config_path = getenv("S3RDMA_CONFIG");
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "hc:", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        } else if (c == 'V') {
            printf("s3rdmad 0.1.0\n");
            return 1;
        } else if (c == 'c') {
            config_path = optarg;
        } else if (c >= 1000 && c < 1000 + (int)N_SETTINGS) {
            flag_values[c - 1000] = optarg;
        } else {
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "s3rdmad: unexpected argument '%s' (see --help)\n", argv[optind]);
        return -1;
    }
    if (config_path) {
        cfg->config_path = strdup(config_path);
        if (load_file(cfg, config_path) != 0)
            return -1;
    }
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const char *env = getenv(settings[i].env);
        if (env && set_value(cfg, &settings[i], env) != 0)
            return -1;
    }
    for (size_t i = 0; i < N_SETTINGS; i++)
        if (flag_values[i] && set_value(cfg, &settings[i], flag_values[i]) != 0)
            return -1;

    const char *ru = getenv("S3RDMA_ROOT_USER"), *rp = getenv("S3RDMA_ROOT_PASSWORD");
    if (ru || rp) {
        if (!ru || !rp || strlen(ru) < 3 || strlen(rp) < 8) {
            fprintf(stderr, "s3rdmad: S3RDMA_ROOT_USER (3+ chars) and S3RDMA_ROOT_PASSWORD "
                            "(8+ chars) must be set together\n");
            return -1;
        }
        if (server_config_add_user(cfg, ru, rp) != 0)
            return -1;
    }

    /* Validate what can be validated here. */
    if (strcmp(cfg->durability, "fsync") != 0 && strcmp(cfg->durability, "relaxed") != 0) {
        fprintf(stderr, "s3rdmad: durability must be 'fsync' or 'relaxed', not '%s'\n",
                cfg->durability);
        return -1;
    }
    if (strcmp(cfg->storage_backend, "local") != 0 && strcmp(cfg->storage_backend, "rados") != 0) {
        fprintf(stderr, "s3rdmad: storage backend must be 'local' or 'rados', not '%s'\n",
                cfg->storage_backend);
        return -1;
    }
    if (strcmp(cfg->storage_backend, "rados") == 0 && !*cfg->rados_pool) {
        fprintf(stderr, "s3rdmad: the rados storage backend needs storage.rados.pool\n");
        return -1;
    }
    char *end;
    errno = 0;
    unsigned long grace = strtoul(cfg->rados_gc_grace, &end, 10);
    if (!*cfg->rados_gc_grace || *end || errno || grace > 7 * 86400) {
        fprintf(stderr, "s3rdmad: storage.rados.gc_grace must be 0..604800 seconds, not '%s'\n",
                cfg->rados_gc_grace);
        return -1;
    }
    unsigned long op_timeout = strtoul(cfg->rados_op_timeout, &end, 10);
    if (!*cfg->rados_op_timeout || *end || op_timeout < 1 || op_timeout > 3600) {
        fprintf(stderr, "s3rdmad: storage.rados.op_timeout must be 1..3600 seconds, not '%s'\n",
                cfg->rados_op_timeout);
        return -1;
    }
    if (log_level_parse(cfg->log_level) < 0) {
        fprintf(stderr, "s3rdmad: log level must be error, warn, info or debug, not '%s'\n",
                cfg->log_level);
        return -1;
    }
    if (strcmp(cfg->rdma_enabled, "true") != 0 && strcmp(cfg->rdma_enabled, "false") != 0) {
        fprintf(stderr, "s3rdmad: rdma enabled must be 'true' or 'false', not '%s'\n",
                cfg->rdma_enabled);
        return -1;
    }
    char host[256];
    int port;
    if (server_parse_hostport(cfg->listen, host, sizeof(host), &port) != 0) {
        fprintf(stderr, "s3rdmad: listen address must be HOST:PORT, not '%s'\n", cfg->listen);
        return -1;
    }
    if (*cfg->rdma_listen &&
        server_parse_hostport(cfg->rdma_listen, host, sizeof(host), &port) != 0) {
        fprintf(stderr, "s3rdmad: rdma listen address must be HOST:PORT, not '%s'\n",
                cfg->rdma_listen);
        return -1;
    }
    uint64_t v;
    const count_setting_t counts[] = {
        {"port", cfg->rdma_port, 0, 65535, "", "", NULL},
        {"workers", cfg->rdma_workers, 0, 256, "", "", NULL},
        {"max_sessions", cfg->rdma_max_sessions, 1, 65536, "", "", NULL},
        {"max_sessions_per_user", cfg->rdma_max_sessions_per_user, 1, 65536, "", "", NULL},
        {"max_pending", cfg->rdma_max_pending, 1, 65536, "", "", NULL},
        {"max_pending_per_source", cfg->rdma_max_pending_per_source, 1, 65536, "", "", NULL},
        {"native_threads", cfg->rdma_native_threads, 1, 256, "", "", NULL},
        {"max_native_per_session", cfg->rdma_max_native_per_session, 1, 65536, "", "", NULL},
        {"max_native", cfg->rdma_max_native, 1, 1048576, "", "", NULL},
    };
    if (parse_counts("rdma", counts, sizeof(counts) / sizeof(counts[0])) != 0)
        return -1;
    if (server_parse_uids(cfg->rdma_trusted_uids, NULL, 0) < 0) {
        fprintf(stderr,
                "s3rdmad: rdma trusted_uids must be a comma-separated list of at most %d "
                "uids, not '%s'\n",
                SERVER_MAX_TRUSTED_UIDS, cfg->rdma_trusted_uids);
        return -1;
    }
    uint64_t chunk;
    if (size_parse(cfg->rdma_chunk, &chunk) != 0 || chunk < 4096 || chunk > (64ULL << 20)) {
        fprintf(stderr, "s3rdmad: rdma chunk must be a size from 4KiB to 64MiB, not '%s'\n",
                cfg->rdma_chunk);
        return -1;
    }
    if (size_parse(cfg->rdma_staging, &v) != 0 || v < 2 * chunk || v > (64ULL << 30)) {
        fprintf(stderr,
                "s3rdmad: rdma staging must be a size of at least two chunks and at "
                "most 64GiB, not '%s'\n",
                cfg->rdma_staging);
        return -1;
    }
    server_http_limits_t http;
    if (server_config_http(cfg, &http) != 0)
        return -1;
    return 0;
}

int server_config_http(const server_config_t *cfg, server_http_limits_t *out)
{
    const count_setting_t counts[] = {
        {"max_connections", cfg->http_max_connections, 1, 1000000, "", "", &out->max_connections},
        {"max_connections_per_ip", cfg->http_max_connections_per_ip, 0, 1000000, "", "no limit",
         &out->max_connections_per_ip},
        {"idle_timeout", cfg->http_idle_timeout, 1, 86400, "seconds", "", &out->idle_timeout_s},
        {"head_timeout", cfg->http_head_timeout, 0, 86400, "seconds", "no limit",
         &out->head_timeout_s},
        {"body_rate_window", cfg->http_body_rate_window, 1, 3600, "seconds", "",
         &out->body_rate_window_s},
    };
    if (parse_counts("http", counts, sizeof(counts) / sizeof(counts[0])) != 0)
        return -1;
    uint64_t rate;
    if (size_parse(cfg->http_min_body_rate, &rate) != 0 || rate > (1ULL << 30)) {
        fprintf(stderr,
                "s3rdmad: http min_body_rate must be a size per second up to 1GiB (0 = no "
                "limit), not '%s'\n",
                cfg->http_min_body_rate);
        return -1;
    }
    out->min_body_rate = rate;
    return 0;
}

int server_parse_uids(const char *s, unsigned *uids, size_t max)
{
    int n = 0;
    while (s && *s) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (end == s || errno || v > 0xfffffffeUL || (*end && *end != ',') ||
            n >= SERVER_MAX_TRUSTED_UIDS)
            return -1;
        if (uids && (size_t)n < max)
            uids[n] = (unsigned)v;
        n++;
        s = *end ? end + 1 : end;
        if (*end && !*s)
            return -1; /* a trailing comma */
    }
    return n;
}

void server_config_free(server_config_t *cfg)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        free(*slot(cfg, &settings[i]));
    for (size_t i = 0; i < cfg->n_users; i++) {
        free(cfg->users[i].access_key);
        free(cfg->users[i].secret_key);
    }
    free(cfg->users);
    free(cfg->config_path);
    memset(cfg, 0, sizeof(*cfg));
}
