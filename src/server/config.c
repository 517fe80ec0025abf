#include "server/config.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "s3rdma.h" /* the version */

#include "common/addr.h"
#include "common/log.h"
#include "common/s3r_limits.h"
#include "common/size.h"
#include "server/config_table.h"

static void *field(server_config_t *cfg, const setting_t *s)
{
    return (char *)cfg + s->offset;
}

/* ---- values ---------------------------------------------------------------------- */

int server_parse_addr(const char *s, server_addr_t *addr_p)
{
    addr_hostport_t hp;
    if (addr_split(s, strlen(s), -1, &hp) < 0 || hp.host_len >= sizeof(addr_p->host))
        return -1;
    memset(addr_p, 0, sizeof(*addr_p));
    memcpy(addr_p->host, hp.host, hp.host_len);
    addr_p->host[hp.host_len] = '\0';
    addr_p->port = hp.port;
    addr_p->set = true;
    return 0;
}

void server_addr_format(const server_addr_t *addr, char *out, size_t out_len)
{
    const char *h = addr->host;
    if (!*h || strcmp(h, "0.0.0.0") == 0)
        h = "127.0.0.1";
    else if (strcmp(h, "::") == 0)
        h = "::1";
    addr_format(out, out_len, h, addr->port);
}

/* A comma-separated uid list into uids (SERVER_MAX_TRUSTED_UIDS at most). */
static int parse_uids(const char *s, unsigned *uids, size_t *n_p)
{
    size_t n = 0;
    while (*s) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (*s < '0' || *s > '9' || errno || v > 0xfffffffeUL || (*end && *end != ',') ||
            n >= SERVER_MAX_TRUSTED_UIDS)
            return -1;
        uids[n++] = (unsigned)v;
        s = *end ? end + 1 : end;
        if (*end && !*s)
            return -1; /* a trailing comma */
    }
    *n_p = n;
    return 0;
}

/* What a value of s must look like, for the error. */
static void describe(const setting_t *s, char *out, size_t len)
{
    out[0] = '\0';
    switch (s->type) {
    case T_TEXT:
    case T_SECRET:
        snprintf(out, len, "text");
        break;
    case T_BOOL:
        snprintf(out, len, "true or false");
        break;
    case T_COUNT:
        snprintf(out, len, "a whole number from %llu to %llu", s->lo, s->hi);
        break;
    case T_SIZE:
        snprintf(out, len, "a size (4096, 64KiB, 1MiB, 2GiB) from %llu to %llu bytes", s->lo,
                 s->hi);
        break;
    case T_ADDR:
        snprintf(out, len, "HOST:PORT, [V6]:PORT or :PORT%s",
                 (s->lo & ADDR_OFF_OK) ? ", or off" : "");
        break;
    case T_CHOICE:
        for (size_t i = 0, used = 0; s->choices[i] && used < len; i++)
            used += (size_t)snprintf(out + used, len - used, "%s'%s'",
                                     i == 0              ? ""
                                     : s->choices[i + 1] ? ", "
                                                         : " or ",
                                     s->choices[i]);
        break;
    case T_UIDS:
        snprintf(out, len, "a comma-separated list of at most %d uids", SERVER_MAX_TRUSTED_UIDS);
        break;
    }
}

/* Parses text into s's field. On bad input prints "s3rdmad: KEY must be ...,
 * not 'TEXT' (ORIGIN)" and returns -1, leaving the field as it was. */
static int set_value(server_config_t *cfg, const setting_t *s, const char *text, const char *origin)
{
    void *f = field(cfg, s);
    bool ok = false;
    /* The text as given, for --print-config. */
    char **kept = &cfg->texts[s - server_settings];
    char *text_copy = strdup(text);
    if (!text_copy) {
        fprintf(stderr, "s3rdmad: out of memory\n");
        return -1;
    }
    free(*kept);
    *kept = text_copy;
    switch (s->type) {
    case T_TEXT:
    case T_SECRET: {
        char *copy = strdup(text);
        if (!copy) {
            fprintf(stderr, "s3rdmad: out of memory\n");
            return -1;
        }
        free(*(char **)f);
        *(char **)f = copy;
        return 0;
    }
    case T_BOOL:
        ok = strcmp(text, "true") == 0 || strcmp(text, "false") == 0;
        if (ok)
            *(bool *)f = text[0] == 't';
        break;
    case T_COUNT: {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(text, &end, 10);
        ok = *text >= '0' && *text <= '9' && !*end && !errno && v >= s->lo && v <= s->hi;
        if (ok)
            *(unsigned *)f = (unsigned)v;
        break;
    }
    case T_SIZE: {
        uint64_t v;
        ok = size_parse(text, &v) == 0 && v >= s->lo && v <= s->hi;
        if (ok)
            *(uint64_t *)f = v;
        break;
    }
    case T_ADDR: {
        server_addr_t a = {0};
        if ((s->lo & ADDR_OFF_OK) && strcmp(text, "off") == 0) {
            a.off = true;
            ok = true;
        } else {
            ok = ((s->lo & ADDR_EMPTY_OK) && !*text) || server_parse_addr(text, &a) == 0;
        }
        if (ok)
            *(server_addr_t *)f = a;
        break;
    }
    case T_CHOICE:
        for (int i = 0; s->choices[i] && !ok; i++) {
            ok = strcmp(text, s->choices[i]) == 0;
            if (ok)
                *(int *)f = i;
        }
        break;
    case T_UIDS: {
        unsigned uids[SERVER_MAX_TRUSTED_UIDS];
        size_t n = 0;
        ok = parse_uids(text, uids, &n) == 0;
        if (ok) {
            memcpy(cfg->rdma.trusted_uids, uids, n * sizeof(uids[0]));
            cfg->rdma.n_trusted_uids = n;
        }
        break;
    }
    }
    if (!ok) {
        char want[256];
        describe(s, want, sizeof(want));
        fprintf(stderr, "s3rdmad: %s must be %s, not '%s' (%s)\n", s->key, want, text, origin);
        return -1;
    }
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
    u[cfg->n_users].display_name = NULL;
    u[cfg->n_users].email = NULL;
    if (!u[cfg->n_users].access_key || !u[cfg->n_users].secret_key)
        return -1;
    cfg->n_users++;
    return 0;
}

/* ---- YAML -------------------------------------------------------------------------- */

static const char *scalar(yaml_document_t *doc, yaml_node_t *n)
{
    (void)doc;
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A user's display_name (ACLs' and listings' DisplayName) or email:
 * min-128 bytes, none of them a control character. */
static bool text_valid(const char *s, size_t min)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return n >= min && n <= 128;
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
        const char *ak = NULL, *sk = NULL, *dn = NULL, *email = NULL;
        if (m && m->type == YAML_MAPPING_NODE) {
            for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
                 p++) {
                const char *k = scalar(doc, yaml_document_get_node(doc, p->key));
                const char *v = scalar(doc, yaml_document_get_node(doc, p->value));
                if (k && strcmp(k, "access_key") == 0)
                    ak = v;
                else if (k && strcmp(k, "secret_key") == 0)
                    sk = v;
                else if (k && strcmp(k, "display_name") == 0)
                    dn = v;
                else if (k && strcmp(k, "email") == 0)
                    email = v;
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
        if (dn && !text_valid(dn, 1)) {
            fprintf(stderr, "%s: a user's display_name must be 1-128 printable characters\n", path);
            return -1;
        }
        if (email && (!text_valid(email, 3) || !strchr(email, '@') || strchr(email, ' '))) {
            fprintf(stderr, "%s: a user's email must be an address of 3-128 characters\n", path);
            return -1;
        }
        if (server_config_add_user(cfg, ak, sk) != 0)
            return -1;
        s3_user_t *u = &cfg->users[cfg->n_users - 1];
        if ((dn && !(u->display_name = strdup(dn))) || (email && !(u->email = strdup(email))))
            return -1;
    }
    return 0;
}

/* A key that groups settings: "rdma" for rdma.listen, "storage" and
 * "storage.rados" for storage.rados.pool. */
static bool is_section(const char *k)
{
    size_t n = strlen(k);
    for (size_t i = 0; i < server_n_settings; i++)
        if (strncmp(server_settings[i].key, k, n) == 0 && server_settings[i].key[n] == '.')
            return true;
    return false;
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
        if (is_section(full) && v && v->type == YAML_MAPPING_NODE) {
            if (apply_mapping(cfg, doc, v, full, path) != 0)
                return -1;
            continue;
        }
        const setting_t *s = NULL;
        for (size_t i = 0; i < server_n_settings; i++)
            if (strcmp(server_settings[i].key, full) == 0)
                s = &server_settings[i];
        if (!s) {
            fprintf(stderr, "%s: unknown setting '%s'\n", path, full);
            return -1;
        }
        /* Comma-list settings also take a YAML sequence. */
        bool list = strcmp(full, "domains") == 0 || strcmp(full, "peers") == 0 || s->type == T_UIDS;
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
            if (set_value(cfg, s, joined, path) != 0)
                return -1;
            continue;
        }
        const char *val = scalar(doc, v);
        if (!val) {
            fprintf(stderr, "%s: '%s' must be a scalar\n", path, full);
            return -1;
        }
        if (set_value(cfg, s, val, path) != 0)
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
    fprintf(out, "usage: s3rdmad [options]\n"
                 "       s3rdmad reshard BUCKET SHARDS [options]  (a RADOS bucket's index, "
                 "online)\n\n"
                 "S3-compatible object server with an RDMA data path.\n\n"
                 "  --config FILE          YAML config file (env S3RDMA_CONFIG)\n");
    for (size_t i = 0; i < server_n_settings; i++) {
        char flag[64];
        snprintf(flag, sizeof(flag), "--%s VALUE", server_settings[i].flag);
        fprintf(out, "  %-22s %s\n  %-22s   (env %s, file key %s, default \"%s\")\n", flag,
                server_settings[i].help, "", server_settings[i].env, server_settings[i].key,
                server_settings[i].dflt);
    }
    fprintf(
        out,
        "  --print-config         print the configuration as a commented YAML file (every\n"
        "                         setting; those not at their default in effect) and exit\n"
        "  --help                 this text\n  --version              the version\n\n"
        "Precedence: flag > environment > config file > default.\n"
        "Users: the config file's 'users:' list ({access_key, secret_key[, display_name, email]})\n"
        "plus "
        "S3RDMA_ROOT_USER / S3RDMA_ROOT_PASSWORD. With none, the first start creates\n"
        "DATA/.s3rdma/credentials (mode 0600) and later starts reuse it.\n"
        "Signals: SIGTERM or SIGINT stop gracefully; SIGHUP reloads tls.cert and tls.key\n"
        "and reopens the access log file.\n");
}

/* ---- --print-config ------------------------------------------------------------------- */

/* The part of a setting's key before its last dot ("rdma" of "rdma.listen",
 * "storage.rados" of "storage.rados.pool"), or "" for a top-level key; at
 * most SECTION_MAX - 1 bytes. The file may write a section as one key
 * ("storage.rados:") or nested ("storage:" then "rados:"). */
#define SECTION_MAX 32
static void section_of(const char *key, char section[SECTION_MAX])
{
    const char *dot = strrchr(key, '.');
    size_t n = dot ? (size_t)(dot - key) : 0;
    if (n >= SECTION_MAX)
        n = SECTION_MAX - 1;
    memcpy(section, key, n);
    section[n] = '\0';
}

/* Writes text as "# " comment lines of at most about 90 columns, each
 * starting with indent. */
static void print_comment(FILE *out, const char *indent, const char *text)
{
    const size_t width = 88;
    while (*text) {
        size_t n = strlen(text);
        if (n > width) {
            n = width;
            while (n > 0 && text[n] != ' ')
                n--;
            if (n == 0)
                n = strcspn(text, " ");
        }
        fprintf(out, "%s# %.*s\n", indent, (int)n, text);
        text += n;
        while (*text == ' ')
            text++;
    }
}

/* Writes v as a YAML scalar: plain when YAML reads it back as the same
 * string, double-quoted otherwise (empty, leading '@', spaces, quotes...). */
static void print_scalar(FILE *out, const char *v)
{
    int plain = *v != '\0' && strchr("@&*!|>%'\"`#-?:,[]{} ", *v) == NULL;
    for (const char *c = v; plain && *c; c++)
        plain = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                strchr("._/:,+-", *c) != NULL;
    if (plain) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (const char *c = v; *c; c++) {
        if (*c == '"' || *c == '\\')
            fputc('\\', out);
        fputc(*c, out);
    }
    fputc('"', out);
}

/* 1 when the setting's value is not its default (its text as given). */
static int is_set(const server_config_t *cfg, size_t i)
{
    return cfg->texts[i] && strcmp(cfg->texts[i], server_settings[i].dflt) != 0;
}

/* Writes the whole configuration as a YAML file that s3rdmad reads back:
 * every setting with its help, flag and variable; those at their default
 * commented out, the others (from flags, the environment or --config) in
 * effect. Sections come from the keys' "section." prefixes in table order.
 * Secrets are never written (users, metrics.token): a set secret shows as a
 * commented placeholder. */
static void print_config(FILE *out, const server_config_t *cfg)
{
    fprintf(out,
            "# s3rdmad configuration (s3rdmad --config FILE). Every setting is listed with its\n"
            "# default; a line starting with '#' is not in effect. A setting can also be given\n"
            "# as a flag or an S3RDMA_* environment variable: flag > environment > this file >\n"
            "# default. Written by `s3rdmad --print-config`, which lists the settings of the\n"
            "# installed version (and the values in effect, with --config and other flags).\n");
    char section[SECTION_MAX] = "", cur[SECTION_MAX] = "";
    for (size_t i = 0; i < server_n_settings; i++) {
        const setting_t *s = &server_settings[i];
        section_of(s->key, section);
        if (strcmp(section, cur) != 0) {
            /* A header for each level of the section not open already
             * ("storage:", then "  rados:"), commented out unless a setting
             * under it is in effect. */
            size_t at = 0; /* where the first level not open starts */
            size_t cl = strlen(cur);
            if (cl && strncmp(section, cur, cl) == 0 && section[cl] == '.')
                at = cl + 1;
            while (section[at]) {
                size_t len = strcspn(section + at, "."), depth = 0;
                for (size_t k = 0; k < at; k++)
                    depth += section[k] == '.';
                char prefix[SECTION_MAX + 1];
                snprintf(prefix, sizeof(prefix), "%.*s.", (int)(at + len), section);
                int any = 0;
                for (size_t k = i; k < server_n_settings; k++)
                    if (strncmp(server_settings[k].key, prefix, strlen(prefix)) == 0 &&
                        is_set(cfg, k) && server_settings[k].type != T_SECRET)
                        any = 1;
                fprintf(out, "\n%*s%s%.*s:\n", (int)(2 * depth), "", any ? "" : "#", (int)len,
                        section + at);
                at += len + (section[at + len] == '.');
            }
            snprintf(cur, sizeof(cur), "%s", section);
        }
        size_t depth = *section ? 1 : 0;
        for (const char *c = section; *c; c++)
            depth += *c == '.';
        char indent[2 * SECTION_MAX + 1];
        snprintf(indent, sizeof(indent), "%*s", (int)(2 * depth), "");
        const char *name = *section ? s->key + strlen(section) + 1 : s->key;
        char where[160];
        snprintf(where, sizeof(where), "(flag --%s, env %s)", s->flag, s->env);
        fputc('\n', out);
        print_comment(out, indent, s->help);
        print_comment(out, indent, where);
        if (s->type == T_SECRET && is_set(cfg, i)) {
            fprintf(out, "%s#%s: \"<set, not shown>\"\n", indent, name);
            continue;
        }
        fprintf(out, "%s%s%s: ", indent, is_set(cfg, i) ? "" : "#", name);
        print_scalar(out, cfg->texts[i] ? cfg->texts[i] : s->dflt);
        fputc('\n', out);
    }
    fprintf(out, "\n");
    print_comment(out, "",
                  "Users: each an access key and its secret key (3-128 and 8-128 characters), "
                  "and optionally a display_name (1-128 characters: the DisplayName ACLs and "
                  "listings show; default: the access key) and an email (ACL grants by "
                  "e-mail address resolve to the user who has it). "
                  "S3RDMA_ROOT_USER and S3RDMA_ROOT_PASSWORD add one more. With no user at "
                  "all, the first start creates DATA_DIR/.s3rdma/credentials (mode 0600) and "
                  "later starts reuse it. Users here make this file a secret: let only the "
                  "server's user read it.");
    fprintf(out, "#users:\n#  - access_key: AKEXAMPLE\n#    secret_key: a-long-secret\n"
                 "#    display_name: example\n");
}

/* peers: at most SERVER_MAX_PEERS URLs "http://HOST[:PORT]" or "https://...",
 * no path, no blanks or controls (the value goes out as one header). */
static int check_peers(const char *peers)
{
    size_t len = strlen(peers), n = 0;
    if (len > SERVER_MAX_PEERS_TEXT) {
        fprintf(stderr, "s3rdmad: peers is longer than %d bytes\n", SERVER_MAX_PEERS_TEXT);
        return -1;
    }
    for (const char *p = peers; *p != '\0';) {
        size_t item = strcspn(p, ",");
        size_t scheme = strncmp(p, "http://", 7) == 0 ? 7 : strncmp(p, "https://", 8) == 0 ? 8 : 0;
        bool ok = scheme != 0 && item > scheme;
        for (size_t i = scheme; ok && i < item; i++)
            ok = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
                 (p[i] >= '0' && p[i] <= '9') || strchr(".-_:[]", p[i]) != NULL;
        if (!ok) {
            fprintf(stderr,
                    "s3rdmad: peers: \"%.*s\" is not http://HOST[:PORT] or https://HOST[:PORT]\n",
                    (int)item, p);
            return -1;
        }
        if (++n > SERVER_MAX_PEERS) {
            fprintf(stderr, "s3rdmad: peers lists more than %d gateways\n", SERVER_MAX_PEERS);
            return -1;
        }
        p += item;
        if (*p == ',' && *++p == '\0') {
            fprintf(stderr, "s3rdmad: peers ends with a comma\n");
            return -1;
        }
    }
    return 0;
}

/* Checks what involves more than one setting, once every layer is in. */
static int check_together(const server_config_t *cfg)
{
    if (check_peers(cfg->peers) != 0)
        return -1;
    if (cfg->rdma.staging < 2 * cfg->rdma.chunk) {
        fprintf(stderr,
                "s3rdmad: rdma.staging (%llu bytes) must hold at least two rdma.chunk (%llu "
                "bytes)\n",
                (unsigned long long)cfg->rdma.staging, (unsigned long long)cfg->rdma.chunk);
        return -1;
    }
    if (!*cfg->tls.cert != !*cfg->tls.key) {
        fprintf(stderr, "s3rdmad: tls.cert and tls.key go together: give both for HTTPS, or "
                        "neither\n");
        return -1;
    }
    if (cfg->listen.off && !*cfg->tls.cert) {
        fprintf(stderr, "s3rdmad: listen is off and HTTPS is not configured (tls.cert, "
                        "tls.key): nothing would serve S3\n");
        return -1;
    }
    if (cfg->metrics.enabled && cfg->metrics.auth == SERVER_METRICS_BEARER &&
        !*cfg->metrics.token) {
        fprintf(stderr, "s3rdmad: metrics auth 'bearer' needs metrics.token (or set "
                        "metrics.auth: public)\n");
        return -1;
    }
    if (cfg->storage.backend == SERVER_STORAGE_RADOS && !*cfg->storage.rados.pool) {
        fprintf(stderr, "s3rdmad: the rados storage backend needs storage.rados.pool\n");
        return -1;
    }
    if (!*cfg->log.access) {
        fprintf(stderr, "s3rdmad: log access must be off, stdout or a file path\n");
        return -1;
    }
    return 0;
}

int server_config_load(server_config_t *cfg, int argc, char **argv)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < server_n_settings; i++)
        if (set_value(cfg, &server_settings[i], server_settings[i].dflt, "the default") != 0)
            return -1;

    struct option opts[SERVER_MAX_SETTINGS + 5];
    memset(opts, 0, sizeof(opts));
    for (size_t i = 0; i < server_n_settings; i++) {
        opts[i].name = server_settings[i].flag;
        opts[i].has_arg = required_argument;
        opts[i].val = 1000 + (int)i;
    }
    opts[server_n_settings] = (struct option){"config", required_argument, NULL, 'c'};
    opts[server_n_settings + 1] = (struct option){"help", no_argument, NULL, 'h'};
    opts[server_n_settings + 2] = (struct option){"version", no_argument, NULL, 'V'};
    opts[server_n_settings + 3] = (struct option){"print-config", no_argument, NULL, 'P'};

    /* Flags are collected first and applied last. */
    const char *flag_values[SERVER_MAX_SETTINGS] = {0};
    const char *config_path = getenv("S3RDMA_CONFIG");
    bool print = false;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "hc:", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return 1;
        } else if (c == 'V') {
            printf("s3rdmad %s\n", S3RDMA_VERSION_STRING);
            return 1;
        } else if (c == 'P') {
            print = true;
        } else if (c == 'c') {
            config_path = optarg;
        } else if (c >= 1000 && c < 1000 + (int)server_n_settings) {
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
    char origin[128];
    for (size_t i = 0; i < server_n_settings; i++) {
        const char *env = getenv(server_settings[i].env);
        snprintf(origin, sizeof(origin), "from %s", server_settings[i].env);
        if (env && set_value(cfg, &server_settings[i], env, origin) != 0)
            return -1;
    }
    for (size_t i = 0; i < server_n_settings; i++) {
        snprintf(origin, sizeof(origin), "from --%s", server_settings[i].flag);
        if (flag_values[i] && set_value(cfg, &server_settings[i], flag_values[i], origin) != 0)
            return -1;
    }

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
    if (check_together(cfg) != 0)
        return -1;
    if (print) {
        print_config(stdout, cfg);
        return 1;
    }
    return 0;
}

void server_config_free(server_config_t *cfg)
{
    for (size_t i = 0; i < server_n_settings; i++) {
        if (server_settings[i].type == T_TEXT || server_settings[i].type == T_SECRET)
            free(*(char **)field(cfg, &server_settings[i]));
        free(cfg->texts[i]);
    }
    for (size_t i = 0; i < cfg->n_users; i++) {
        free(cfg->users[i].access_key);
        free(cfg->users[i].secret_key);
        free(cfg->users[i].display_name);
        free(cfg->users[i].email);
    }
    free(cfg->users);
    free(cfg->config_path);
    memset(cfg, 0, sizeof(*cfg));
}
