/* libs3rdma: connection settings from the AWS environment and the AWS CLI's
 * shared files (profiles), found with the AWS CLI's precedence. The one
 * copy of this logic: the CLI, s3rdma-bench and the Python package all call
 * s3r_aws_settings_load (docs/client.md, "The AWS environment and
 * profiles"). */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "client/client_internal.h"

/* A shared file larger than this is refused rather than read: real ones are
 * a few KiB, and the parser keeps every line. */
#define AWS_FILE_MAX (1024 * 1024)

/* ======================================================================== */
/* The shared files: INI sections of "key = value", nested blocks            */
/* ======================================================================== */

/* One "key = value" of a file. parent is NULL for a top-level key, or the
 * key of the nested block it belongs to ("s3 =\n  endpoint_url = x" gives
 * {section, "endpoint_url", "x", parent "s3"}). Strings point into the
 * file's text. */
typedef struct ini_entry {
    const char *section, *parent, *key, *value;
} ini_entry_t;

typedef struct ini {
    char *text; /* the file, split in place */
    ini_entry_t *e;
    size_t n, cap;
    const char **sections; /* every section header seen, for duplicates */
    size_t n_sections;
} ini_t;

static void ini_free(ini_t *f)
{
    free(f->text);
    free(f->e);
    free(f->sections);
    memset(f, 0, sizeof(*f));
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* Fails the load with "path:line: why" as the thread's last error. */
static s3r_status_t ini_error(const char *path, unsigned line, const char *why)
{
    return s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, NULL,
                    "%s:%u: %s (want \"[section]\", \"key = value\" or an indented "
                    "\"key = value\" under \"key =\")",
                    path, line, why);
}

static s3r_status_t ini_add(ini_t *f, ini_entry_t ent)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 32;
        ini_entry_t *e = realloc(f->e, cap * sizeof(*e));
        if (e == NULL)
            return S3R_ERR_NOMEM;
        f->e = e;
        f->cap = cap;
    }
    f->e[f->n++] = ent;
    return S3R_OK;
}

/* Splits "key = value" (or "key: value", as configparser also accepts) at
 * the first delimiter. false when there is none or the key is empty. */
static bool split_kv(char *s, char **key_p, char **val_p)
{
    char *d = strpbrk(s, "=:");
    if (d == NULL)
        return false;
    *d = '\0';
    *key_p = trim(s);
    *val_p = trim(d + 1);
    return **key_p != '\0';
}

/* Parses one whole file the way the AWS CLI's parser (configparser) reads
 * it: full-line comments '#' and ';', section headers, "key = value";
 * an indented line under a key with an empty value is an entry of that
 * key's nested block, under a key with a value a continuation (ignored: no
 * setting read here spans lines). A section or a key given twice is an
 * error, as it is there. */
static s3r_status_t ini_parse(ini_t *f, const char *path)
{
    const char *section = NULL, *key = NULL;
    bool key_has_value = false;
    unsigned lineno = 0;
    char *next = f->text;
    while (next != NULL && *next != '\0') {
        char *line = next;
        next = strchr(line, '\n');
        if (next != NULL)
            *next++ = '\0';
        lineno++;
        bool indented = *line == ' ' || *line == '\t';
        char *s = trim(line);
        if (*s == '\0' || *s == '#' || *s == ';')
            continue;
        if (*s == '[' && !indented) {
            char *end = strrchr(s, ']');
            if (end == NULL)
                return ini_error(path, lineno, "a section header without ']'");
            *end = '\0';
            section = trim(s + 1);
            if (*section == '\0')
                return ini_error(path, lineno, "an empty section name");
            for (size_t i = 0; i < f->n_sections; i++)
                if (strcmp(f->sections[i], section) == 0)
                    return ini_error(path, lineno, "a section given twice");
            const char **ns = realloc(f->sections, (f->n_sections + 1) * sizeof(*ns));
            if (ns == NULL)
                return S3R_ERR_NOMEM;
            f->sections = ns;
            f->sections[f->n_sections++] = section;
            key = NULL;
            continue;
        }
        if (indented && key != NULL && key_has_value)
            continue; /* a continuation of key's value */
        if (section == NULL)
            return ini_error(path, lineno, "a line before the first [section]");
        char *k, *v;
        if (!split_kv(s, &k, &v))
            return ini_error(path, lineno, "a line that is not \"key = value\"");
        const char *parent = indented && key != NULL ? key : NULL;
        for (size_t i = 0; i < f->n; i++)
            if (f->e[i].section == section && strcmp(f->e[i].key, k) == 0 &&
                (f->e[i].parent == parent ||
                 (f->e[i].parent && parent && strcmp(f->e[i].parent, parent) == 0)))
                return ini_error(path, lineno, "a key given twice in one section");
        s3r_status_t st = ini_add(f, (ini_entry_t){section, parent, k, v});
        if (st != S3R_OK)
            return st;
        if (parent == NULL) {
            key = k;
            key_has_value = *v != '\0';
        }
    }
    return S3R_OK;
}

/* Reads and parses path into *f. A file that does not exist (or no path)
 * leaves *f empty and is not an error; one that cannot be read, is too
 * large or does not parse is (the thread's last error says why). */
static s3r_status_t ini_load(const char *path, ini_t *f)
{
    memset(f, 0, sizeof(*f));
    if (path == NULL)
        return S3R_OK;
    FILE *fp = fopen(path, "r");
    if (fp == NULL) {
        if (errno == ENOENT || errno == ENOTDIR)
            return S3R_OK;
        return s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, NULL,
                        "cannot read %s: %s", path, strerror(errno));
    }
    f->text = malloc(AWS_FILE_MAX + 1);
    if (f->text == NULL) {
        fclose(fp);
        return S3R_ERR_NOMEM;
    }
    size_t len = fread(f->text, 1, AWS_FILE_MAX + 1, fp);
    bool bad = ferror(fp);
    fclose(fp);
    if (bad || len > AWS_FILE_MAX) {
        ini_free(f);
        return s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, NULL,
                        bad ? "cannot read %s" : "%s is larger than 1 MiB", path);
    }
    f->text[len] = '\0';
    const char *nul = memchr(f->text, '\0', len);
    if (nul != NULL) {
        unsigned line = 1;
        for (const char *p = f->text; p < nul; p++)
            line += *p == '\n';
        ini_free(f);
        return ini_error(path, line, "a NUL byte");
    }
    s3r_status_t st = ini_parse(f, path);
    if (st != S3R_OK)
        ini_free(f);
    return st;
}

static bool ini_has_section(const ini_t *f, const char *section)
{
    for (size_t i = 0; i < f->n_sections; i++)
        if (strcmp(f->sections[i], section) == 0)
            return true;
    return false;
}

/* The value of key in section (parent NULL: top level, else in the nested
 * block parent), or NULL. An empty value counts as absent. */
static const char *ini_get(const ini_t *f, const char *section, const char *parent, const char *key)
{
    for (size_t i = 0; i < f->n; i++) {
        const ini_entry_t *e = &f->e[i];
        if (strcmp(e->section, section) == 0 && strcmp(e->key, key) == 0 &&
            (parent == NULL ? e->parent == NULL
                            : e->parent != NULL && strcmp(e->parent, parent) == 0))
            return *e->value ? e->value : NULL;
    }
    return NULL;
}

/* ======================================================================== */
/* One profile over both files                                               */
/* ======================================================================== */

typedef struct profile {
    const char *name;
    ini_t cred, conf;
    const char *conf_section; /* "profile NAME", "default" or "profile default" */
    char conf_buf[300];
    bool seen; /* the profile has a section in one of the files */
} profile_t;

/* Finds the profile's sections: [name] in the credentials file; in the
 * config file [profile name], or for the default profile [default], else
 * [profile default]. */
static void profile_locate(profile_t *p)
{
    if (strcmp(p->name, "default") == 0 && ini_has_section(&p->conf, "default"))
        snprintf(p->conf_buf, sizeof(p->conf_buf), "default");
    else
        snprintf(p->conf_buf, sizeof(p->conf_buf), "profile %s", p->name);
    p->conf_section = p->conf_buf;
    p->seen = ini_has_section(&p->cred, p->name) || ini_has_section(&p->conf, p->conf_section);
}

/* key of the profile: the credentials file's value wins over the config
 * file's, as in the AWS CLI (which merges the first into the second). */
static const char *profile_get(const profile_t *p, const char *key)
{
    const char *v = ini_get(&p->cred, p->name, NULL, key);
    return v ? v : ini_get(&p->conf, p->conf_section, NULL, key);
}

/* The profile's S3 endpoint: its "services" section's s3 endpoint_url, its
 * own endpoint_url, then its nested "s3 =" block's endpoint_url (accepted
 * by s3rdma for profiles written before service sections existed). */
static const char *profile_endpoint(const profile_t *p)
{
    const char *services = profile_get(p, "services");
    if (services != NULL) {
        char sec[300];
        snprintf(sec, sizeof(sec), "services %s", services);
        const char *v = ini_get(&p->conf, sec, "s3", "endpoint_url");
        if (v != NULL)
            return v;
    }
    const char *v = profile_get(p, "endpoint_url");
    if (v != NULL)
        return v;
    v = ini_get(&p->cred, p->name, "s3", "endpoint_url");
    return v ? v : ini_get(&p->conf, p->conf_section, "s3", "endpoint_url");
}

/* ======================================================================== */
/* Resolution                                                                 */
/* ======================================================================== */

/* A set, non-empty environment variable, or NULL. */
static const char *env_get(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static bool is_true(const char *s)
{
    return s != NULL && strcasecmp(s, "true") == 0;
}

/* Sets *dst to a copy of the first non-NULL of env value ev (source name
 * en) and profile value pv; *from_p (if given) names the source. */
static s3r_status_t take_first(char **dst, const char *en, const char *ev, const char *pv,
                               const char **from_p)
{
    const char *v = ev ? ev : pv;
    if (v == NULL)
        return S3R_OK;
    if ((*dst = strdup(v)) == NULL)
        return S3R_ERR_NOMEM;
    if (from_p != NULL)
        *from_p = ev ? en : "profile";
    return S3R_OK;
}

/* path from the environment variable, else $HOME/.aws/<file> (NULL without
 * HOME); S3R_ERR_NOMEM only. */
static s3r_status_t aws_file(const char *var, const char *file, char **path_p)
{
    const char *p = env_get(var);
    if (p != NULL)
        return (*path_p = strdup(p)) ? S3R_OK : S3R_ERR_NOMEM;
    const char *home = env_get("HOME");
    if (home == NULL)
        return S3R_OK;
    size_t n = strlen(home) + strlen(file) + 7;
    if ((*path_p = malloc(n)) == NULL)
        return S3R_ERR_NOMEM;
    snprintf(*path_p, n, "%s/.aws/%s", home, file);
    return S3R_OK;
}

/* The keys of s from the profile's credential_process (process not NULL)
 * or else the container endpoint (aws_creds.c); keys that have expired
 * already are refused. */
static s3r_status_t creds_take(s3r_aws_settings_t *s, const char *process, int64_t *expiration_p)
{
    s3c_aws_creds_t c;
    s3r_status_t st = process ? s3c_creds_process(process, &c) : s3c_creds_container(&c);
    if (st != S3R_OK)
        return st;
    const char *from = process ? "credential_process" : "container credentials";
    if (c.expiration != 0 && c.expiration <= (int64_t)time(NULL)) {
        s3c_aws_creds_free(&c);
        return s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, NULL,
                        "the keys from %s%s%s have expired (their Expiration has passed)", from,
                        process ? " " : "", process ? process : "");
    }
    s->access_key = c.access_key;
    s->secret_key = c.secret_key;
    s->session_token = c.session_token;
    s->keys_from = process ? "credential_process" : "container";
    *expiration_p = c.expiration;
    return S3R_OK;
}

s3r_status_t s3r_aws_settings_load(const char *profile, s3r_aws_settings_t *settings_p)
{
    int64_t expiration;
    return s3c_aws_settings_load(profile, S3C_KEYS_ALL, settings_p, &expiration);
}

s3r_status_t s3r_aws_settings_load_static_keys(const char *profile, s3r_aws_settings_t *settings_p)
{
    int64_t expiration;
    return s3c_aws_settings_load(profile, S3C_KEYS_STATIC, settings_p, &expiration);
}

s3r_status_t s3r_aws_settings_load_without_keys(const char *profile, s3r_aws_settings_t *settings_p)
{
    int64_t expiration;
    return s3c_aws_settings_load(profile, S3C_KEYS_NONE, settings_p, &expiration);
}

s3r_status_t s3c_aws_settings_load(const char *profile, s3c_keys_t keys,
                                   s3r_aws_settings_t *settings_p, int64_t *expiration_p)
{
    if (settings_p == NULL)
        return S3R_ERR_INVALID_ARG;
    *expiration_p = 0;
    s3r_aws_settings_t s = {0};
    profile_t p = {0};
    bool named = profile != NULL || env_get("AWS_PROFILE") != NULL;
    p.name = profile ? profile : env_get("AWS_PROFILE") ? env_get("AWS_PROFILE") : "default";
    s3r_status_t st = S3R_ERR_NOMEM;
    if ((s.profile = strdup(p.name)) == NULL)
        goto out;
    if ((st = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", &s.credentials_file)) !=
            S3R_OK ||
        (st = aws_file("AWS_CONFIG_FILE", "config", &s.config_file)) != S3R_OK)
        goto out;
    if ((st = ini_load(s.credentials_file, &p.cred)) != S3R_OK ||
        (st = ini_load(s.config_file, &p.conf)) != S3R_OK)
        goto out;
    profile_locate(&p);
    if (named && !p.seen) {
        st = s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, NULL,
                      "profile \"%s\" (from %s) not found: no [%s] in %s and no [%s] in %s", p.name,
                      profile ? "the caller" : "AWS_PROFILE", p.name,
                      s.credentials_file ? s.credentials_file : "~/.aws/credentials",
                      p.conf_section, s.config_file ? s.config_file : "~/.aws/config");
        goto out;
    }

    /* Endpoints: the service's variable, the global one, then the profile;
     * none when configured endpoints are to be ignored. */
    if (!is_true(env_get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")) &&
        !is_true(profile_get(&p, "ignore_configured_endpoint_urls"))) {
        const char *en =
            env_get("AWS_ENDPOINT_URL_S3") ? "AWS_ENDPOINT_URL_S3" : "AWS_ENDPOINT_URL";
        if ((st = take_first(&s.endpoint, en, env_get(en), profile_endpoint(&p),
                             &s.endpoint_from)) != S3R_OK)
            goto out;
    }
    const char *rn = env_get("AWS_REGION") ? "AWS_REGION" : "AWS_DEFAULT_REGION";
    /* Keys: a profile the caller named beats the environment's keys (the
     * AWS CLI drops its environment provider under --profile). Key and
     * secret always come from the same place. */
    bool env_keys =
        profile == NULL && env_get("AWS_ACCESS_KEY_ID") && env_get("AWS_SECRET_ACCESS_KEY");
    bool prof_keys = !env_keys && profile_get(&p, "aws_access_key_id") &&
                     profile_get(&p, "aws_secret_access_key");
    if ((st = take_first(&s.region, rn, env_get(rn), profile_get(&p, "region"), &s.region_from)) !=
            S3R_OK ||
        (st = take_first(&s.ca_bundle, NULL, env_get("AWS_CA_BUNDLE"), profile_get(&p, "ca_bundle"),
                         NULL)) != S3R_OK ||
        (st = take_first(&s.rdma_endpoint, NULL, env_get("S3RDMA_RDMA_ENDPOINT"),
                         profile_get(&p, "s3rdma_rdma_endpoint"), NULL)) != S3R_OK ||
        (st = take_first(&s.transport, NULL, env_get("S3RDMA_TRANSPORT"),
                         profile_get(&p, "s3rdma_transport"), NULL)) != S3R_OK)
        goto out;
    /* The AWS CLI's order: the environment's keys, the credentials file's,
     * the profile's credential_process, the config file's keys, then a
     * container's credentials endpoint. */
    bool cred_file_keys = ini_get(&p.cred, p.name, NULL, "aws_access_key_id") &&
                          ini_get(&p.cred, p.name, NULL, "aws_secret_access_key");
    const char *process = profile_get(&p, "credential_process");
    bool deferred = !env_keys && !cred_file_keys &&
                    (process != NULL || (!prof_keys && s3c_creds_container_set()));
    if (deferred && keys != S3C_KEYS_ALL) {
        /* Not run nor asked: where the keys would come from, when that is a
         * program or an endpoint (a client given aws_credentials loads them). */
        s.keys_from = process ? "credential_process" : "container";
    } else if (deferred) {
        if ((st = creds_take(&s, process, expiration_p)) != S3R_OK)
            goto out;
    } else if (keys != S3C_KEYS_NONE && (env_keys || prof_keys)) {
        const char *src = env_keys ? "AWS_ACCESS_KEY_ID" : NULL;
        if ((st = take_first(&s.access_key, src, env_keys ? env_get("AWS_ACCESS_KEY_ID") : NULL,
                             profile_get(&p, "aws_access_key_id"), &s.keys_from)) != S3R_OK ||
            (st =
                 take_first(&s.secret_key, NULL, env_keys ? env_get("AWS_SECRET_ACCESS_KEY") : NULL,
                            profile_get(&p, "aws_secret_access_key"), NULL)) != S3R_OK ||
            (st = take_first(&s.session_token, NULL, env_keys ? env_get("AWS_SESSION_TOKEN") : NULL,
                             env_keys ? NULL : profile_get(&p, "aws_session_token"), NULL)) !=
                S3R_OK)
            goto out;
    }
    st = S3R_OK;
out:
    ini_free(&p.cred);
    ini_free(&p.conf);
    if (st == S3R_OK)
        *settings_p = s;
    else
        s3r_aws_settings_free(&s);
    return st;
}

void s3r_aws_settings_free(s3r_aws_settings_t *s)
{
    if (s == NULL)
        return;
    free(s->endpoint);
    free(s->access_key);
    free(s->secret_key);
    free(s->session_token);
    free(s->region);
    free(s->ca_bundle);
    free(s->rdma_endpoint);
    free(s->transport);
    free(s->profile);
    free(s->credentials_file);
    free(s->config_file);
    memset(s, 0, sizeof(*s));
}
