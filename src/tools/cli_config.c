/* The CLI's connection settings, found where S3 users keep them: flags, the
 * AWS environment variables and the AWS CLI's shared files (profiles). The
 * precedence is the AWS CLI's (docs/cli.md). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

#define DEFAULT_ENDPOINT "http://127.0.0.1:9000"
#define DEFAULT_REGION   "us-east-1"

/* ---- The shared files: INI sections of "key = value" --------------------- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* The value of key in [section] of the INI file at path (malloc'd), or NULL.
 * Indented lines belong to a nested block ("s3 =\n  key = v") and are not
 * top-level keys. *seen_p is set when the section exists. */
static char *ini_get(const char *path, const char *section, const char *key, bool *seen_p)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (f == NULL)
        return NULL;
    char line[4096];
    bool in = false;
    char *val = NULL;
    while (fgets(line, sizeof(line), f) != NULL) {
        char *s = trim(line);
        if (*s == '\0' || *s == '#' || *s == ';')
            continue;
        if (*s == '[') {
            char *end = strchr(s, ']');
            if (end != NULL) {
                *end = '\0';
                in = strcmp(trim(s + 1), section) == 0;
                if (in && seen_p)
                    *seen_p = true;
            }
            continue;
        }
        char *eq = strchr(s, '=');
        if (!in || s != line || eq == NULL)
            continue;
        *eq = '\0';
        if (strcmp(trim(s), key) == 0) {
            free(val);
            val = strdup(trim(eq + 1));
        }
    }
    fclose(f);
    return val;
}

/* The shared files and the profile they are read for. */
typedef struct profile {
    const char *name;
    char *cred_path, *conf_path;
    char conf_section[256];
    bool seen; /* the profile exists in one of the files */
} profile_t;

/* path from env, else $HOME/.aws/<file> (malloc'd; NULL without HOME). */
static char *aws_file(const char *env, const char *file)
{
    const char *p = getenv(env);
    if (p != NULL && p[0] != '\0')
        return strdup(p);
    const char *home = getenv("HOME");
    return home ? cli_join(home, file) : NULL;
}

/* key from the profile: the credentials file's [name] first, then the
 * config file's [profile name] ([default] for the default profile). */
static char *profile_get(profile_t *p, const char *key)
{
    char *v = ini_get(p->cred_path, p->name, key, &p->seen);
    if (v == NULL)
        v = ini_get(p->conf_path, p->conf_section, key, &p->seen);
    if (v == NULL && strcmp(p->name, "default") == 0)
        v = ini_get(p->conf_path, "profile default", key, &p->seen);
    return v;
}

/* ---- Resolution ---------------------------------------------------------- */

/* The first set environment variable of names (NULL-terminated), copied;
 * *src_p names it. */
static char *from_env(const char *const *names, const char **src_p)
{
    for (; *names != NULL; names++) {
        const char *v = getenv(*names);
        if (v != NULL && v[0] != '\0') {
            *src_p = *names;
            return strdup(v);
        }
    }
    return NULL;
}

/* One setting: flag > environment > profile > default (src_p says which). */
static char *resolve(const char *flag, const char *flag_name, const char *const *env, profile_t *p,
                     const char *key, const char *def, char **src_p)
{
    const char *src = NULL;
    char *v = NULL;
    if (flag != NULL) {
        v = strdup(flag);
        src = flag_name;
    }
    if (v == NULL && env != NULL)
        v = from_env(env, &src);
    if (v == NULL && key != NULL && (v = profile_get(p, key)) != NULL)
        src = "profile";
    if (v == NULL && def != NULL) {
        v = strdup(def);
        src = "default";
    }
    if (src_p != NULL) {
        char buf[600];
        if (src != NULL && strcmp(src, "profile") == 0)
            snprintf(buf, sizeof(buf), "profile %s (%s, %s)", p->name,
                     p->cred_path ? p->cred_path : "-", p->conf_path ? p->conf_path : "-");
        else
            snprintf(buf, sizeof(buf), "%s", src ? src : "nowhere");
        *src_p = strdup(buf);
    }
    return v;
}

int cli_config_resolve(const cli_flags_t *fl, cli_config_t *out)
{
    static const char *const env_ep[] = {"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", NULL};
    static const char *const env_rdma[] = {"S3RDMA_RDMA_ENDPOINT", NULL};
    static const char *const env_region[] = {"AWS_REGION", "AWS_DEFAULT_REGION", NULL};
    static const char *const env_transport[] = {"S3RDMA_TRANSPORT", NULL};
    static const char *const env_ak[] = {"AWS_ACCESS_KEY_ID", NULL};
    static const char *const env_sk[] = {"AWS_SECRET_ACCESS_KEY", NULL};
    static const char *const env_tok[] = {"AWS_SESSION_TOKEN", NULL};
    static const char *const env_profile[] = {"AWS_PROFILE", NULL};
    static const char *const env_ca[] = {"AWS_CA_BUNDLE", NULL};

    memset(out, 0, sizeof(*out));
    profile_t p = {0};
    const char *psrc = "default";
    char *pname = fl->profile ? strdup(fl->profile) : from_env(env_profile, &psrc);
    p.name = pname ? pname : "default";
    p.cred_path = aws_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
    p.conf_path = aws_file("AWS_CONFIG_FILE", ".aws/config");
    if (strcmp(p.name, "default") == 0)
        snprintf(p.conf_section, sizeof(p.conf_section), "default");
    else
        snprintf(p.conf_section, sizeof(p.conf_section), "profile %s", p.name);

    out->endpoint = resolve(fl->endpoint, "--endpoint-url", env_ep, &p, "endpoint_url", NULL,
                            &out->src_endpoint);
    if (out->endpoint == NULL) {
        out->endpoint = strdup(DEFAULT_ENDPOINT);
        out->endpoint_is_default = true;
    }
    out->rdma_endpoint = resolve(fl->rdma_endpoint, "--rdma-endpoint", env_rdma, &p,
                                 "s3rdma_rdma_endpoint", NULL, NULL);
    out->region =
        resolve(fl->region, "--region", env_region, &p, "region", DEFAULT_REGION, &out->src_region);
    out->transport =
        resolve(fl->transport, "--transport", env_transport, &p, "s3rdma_transport", NULL, NULL);
    /* Keys: with --profile on the command line the profile beats the
     * environment, as in the AWS CLI (a flag outranks the environment). */
    const char *const *ak_env = fl->profile ? NULL : env_ak;
    out->access_key = resolve(fl->access_key, "--access-key", ak_env, &p, "aws_access_key_id", NULL,
                              &out->src_keys);
    out->secret_key = resolve(fl->secret_key, "--secret-key", fl->profile ? NULL : env_sk, &p,
                              "aws_secret_access_key", NULL, NULL);
    out->session_token =
        resolve(NULL, NULL, fl->profile ? NULL : env_tok, &p, "aws_session_token", NULL, NULL);
    out->ca_bundle = resolve(fl->ca_bundle, "--ca-bundle", env_ca, &p, "ca_bundle", NULL, NULL);
    out->no_fallback = fl->no_fallback;

    int rc = CLI_OK;
    /* A profile named on purpose must exist (probing any key marks it). */
    if (pname != NULL) {
        free(profile_get(&p, "region"));
        if (!p.seen) {
            cli_line(stderr,
                     "s3rdma: profile \"%s\" (from %s) not found: no [%s] in %s and no [%s] in %s",
                     p.name, fl->profile ? "--profile" : "AWS_PROFILE", p.name,
                     p.cred_path ? p.cred_path : "~/.aws/credentials", p.conf_section,
                     p.conf_path ? p.conf_path : "~/.aws/config");
            rc = CLI_USAGE;
        }
    }
    if (rc == CLI_OK && (out->access_key == NULL || out->secret_key == NULL)) {
        cli_line(stderr,
                 "s3rdma: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, put "
                 "aws_access_key_id / aws_secret_access_key in %s (profile \"%s\"), or give "
                 "--access-key and --secret-key",
                 p.cred_path ? p.cred_path : "~/.aws/credentials", p.name);
        rc = CLI_USAGE;
    }
    free(pname);
    free(p.cred_path);
    free(p.conf_path);
    return rc;
}

void cli_config_free(cli_config_t *c)
{
    free(c->endpoint);
    free(c->rdma_endpoint);
    free(c->access_key);
    free(c->secret_key);
    free(c->region);
    free(c->transport);
    free(c->session_token);
    free(c->ca_bundle);
    free(c->src_endpoint);
    free(c->src_keys);
    free(c->src_region);
    memset(c, 0, sizeof(*c));
}
