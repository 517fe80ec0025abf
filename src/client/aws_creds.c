/* libs3rdma: credentials that come from elsewhere than the shared files'
 * keys, as the AWS CLI gets them: the output of a profile's
 * credential_process, and a container's credentials endpoint
 * (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI). Both answer the
 * same JSON document, parsed here (jansson). s3r_aws_settings_load
 * (aws_settings.c) decides when each is asked (docs/client.md, "The AWS
 * environment and profiles"). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

#include "client/client_internal.h"
#include "common/buf.h"
#include "common/date.h"

#define CREDS_DOC_MAX      (64 * 1024) /* a credentials document; real ones are < 2 KiB */
#define CREDS_TOKEN_MAX    (16 * 1024) /* an authorization token (or its file) */
#define CREDS_HTTP_TIMEOUT 5000L       /* ms, the whole container request */
/* The container endpoint of ECS, for AWS_CONTAINER_CREDENTIALS_RELATIVE_URI. */
#define CREDS_ECS_HOST "http://169.254.170.2"

/* Fails the load with the message as the thread's last error
 * (s3r_client_last_error(NULL, ...)). */
#define CREDS_FAIL(...)                                                                            \
    s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, NULL, __VA_ARGS__)

void s3c_aws_creds_free(s3c_aws_creds_t *c)
{
    if (c == NULL)
        return;
    free(c->access_key);
    free(c->secret_key);
    free(c->session_token);
    memset(c, 0, sizeof(*c));
}

/* A string member of obj: NULL when absent; *bad set when present but not
 * a non-empty string. */
static const char *member(json_t *obj, const char *name, bool *bad)
{
    json_t *v = json_object_get(obj, name);
    if (v == NULL)
        return NULL;
    if (!json_is_string(v) || json_string_length(v) == 0) {
        *bad = true;
        return NULL;
    }
    return json_string_value(v);
}

/* Parses the credentials document doc (len bytes) from source (named in
 * errors) into *out: AccessKeyId and SecretAccessKey required, the token
 * under token_name optional, Expiration (ISO 8601 UTC) optional; with
 * want_version, "Version": 1 is required, as the AWS CLI requires of
 * credential_process. */
static s3r_status_t creds_parse(const char *doc, size_t len, const char *source,
                                const char *token_name, bool want_version, s3c_aws_creds_t *out)
{
    json_error_t jerr;
    json_t *root = json_loadb(doc, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL || !json_is_object(root)) {
        json_decref(root);
        return CREDS_FAIL("%s: the output is not a JSON object (%s)", source,
                          root ? "another JSON value" : jerr.text);
    }
    s3r_status_t st = S3R_ERR_INVALID_ARG;
    bool bad = false;
    json_t *ver = json_object_get(root, "Version");
    const char *ak = member(root, "AccessKeyId", &bad);
    const char *sk = member(root, "SecretAccessKey", &bad);
    const char *tok = member(root, token_name, &bad);
    const char *exp = member(root, "Expiration", &bad);
    int64_t when = exp ? date_parse_iso8601(exp) : 0;
    if (want_version && (!json_is_integer(ver) || json_integer_value(ver) != 1))
        st = CREDS_FAIL("%s: \"Version\": 1 is required (the AWS CLI's format)", source);
    else if (bad || ak == NULL || sk == NULL)
        st = CREDS_FAIL("%s: \"AccessKeyId\" and \"SecretAccessKey\" must be non-empty strings"
                        " (and \"%s\", \"Expiration\" strings when given)",
                        source, token_name);
    else if (when < 0)
        st = CREDS_FAIL("%s: \"Expiration\" \"%s\" is not an ISO 8601 UTC time "
                        "(2026-11-27T00:00:00Z)",
                        source, exp);
    else if ((out->access_key = strdup(ak)) == NULL || (out->secret_key = strdup(sk)) == NULL ||
             (tok && (out->session_token = strdup(tok)) == NULL))
        st = S3R_ERR_NOMEM;
    else
        st = S3R_OK;
    out->expiration = when;
    json_decref(root);
    if (st != S3R_OK)
        s3c_aws_creds_free(out);
    return st;
}

s3r_status_t s3c_creds_process(const char *command, s3c_aws_creds_t *out)
{
    memset(out, 0, sizeof(*out));
    fflush(NULL); /* nothing buffered twice by the child */
    FILE *fp = popen(command, "r");
    if (fp == NULL)
        return CREDS_FAIL("credential_process \"%s\": cannot run it: %s", command, strerror(errno));
    buf_t out_doc;
    buf_init(&out_doc, CREDS_DOC_MAX);
    char chunk[4096];
    size_t n;
    bool too_big = false;
    while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
        if (!too_big && buf_append(&out_doc, chunk, n) < 0)
            too_big = true; /* read on, so the program is not killed by SIGPIPE */
    int ws = pclose(fp);
    s3r_status_t st;
    char what[64];
    if (ws == -1 || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
        if (ws != -1 && WIFEXITED(ws))
            snprintf(what, sizeof(what), "exited with status %d", WEXITSTATUS(ws));
        else if (ws != -1 && WIFSIGNALED(ws))
            snprintf(what, sizeof(what), "was killed by signal %d", WTERMSIG(ws));
        else
            snprintf(what, sizeof(what), "could not be waited for");
        st = CREDS_FAIL("credential_process \"%s\" %s", command, what);
    } else if (too_big) {
        st = CREDS_FAIL("credential_process \"%s\": the output is over 64 KiB", command);
    } else {
        char src[300];
        snprintf(src, sizeof(src), "credential_process \"%.250s\"", command);
        st = creds_parse(out_doc.data ? out_doc.data : "", out_doc.len, src, "SessionToken", true,
                         out);
    }
    buf_free(&out_doc);
    return st;
}

/* Whether an http:// container endpoint may be asked: only on this host or
 * at the container agents' link-local addresses, as the AWS SDKs allow, so
 * an environment variable never sends the token in clear over a network. */
static bool container_host_ok(const char *host)
{
    static const char *const ok[] = {"localhost",     "127.0.0.1",      "::1",
                                     "169.254.170.2", "169.254.170.23", "fd00:ec2::23"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        if (strcmp(host, ok[i]) == 0)
            return true;
    return strncmp(host, "127.", 4) == 0;
}

/* The authorization token: the file's content (trailing newline dropped),
 * else the variable's; NULL in *tok_p when neither is set. */
static s3r_status_t container_token(char **tok_p)
{
    *tok_p = NULL;
    const char *file = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
    const char *var = getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");
    if (file != NULL && file[0] != '\0') {
        FILE *fp = fopen(file, "r");
        if (fp == NULL)
            return CREDS_FAIL("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s: %s", file,
                              strerror(errno));
        char *t = malloc(CREDS_TOKEN_MAX + 1);
        size_t n = t ? fread(t, 1, CREDS_TOKEN_MAX + 1, fp) : 0;
        fclose(fp);
        if (t == NULL)
            return S3R_ERR_NOMEM;
        if (n > CREDS_TOKEN_MAX) {
            free(t);
            return CREDS_FAIL("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE %s is over 16 KiB", file);
        }
        while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
            n--;
        t[n] = '\0';
        *tok_p = t;
    } else if (var != NULL && var[0] != '\0') {
        if ((*tok_p = strdup(var)) == NULL)
            return S3R_ERR_NOMEM;
    }
    if (*tok_p != NULL && strpbrk(*tok_p, "\r\n") != NULL) {
        free(*tok_p);
        *tok_p = NULL;
        return CREDS_FAIL("the container authorization token holds a line break");
    }
    return S3R_OK;
}

static size_t container_body(char *data, size_t size, size_t n, void *ud)
{
    return buf_append(ud, data, size * n) < 0 ? 0 : size * n;
}

bool s3c_creds_container_set(void)
{
    const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    return (full && full[0]) || (rel && rel[0]);
}

s3r_status_t s3c_creds_container(s3c_aws_creds_t *out)
{
    memset(out, 0, sizeof(*out));
    const char *rel = getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
    const char *full = getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
    char url[2048];
    if (rel != NULL && rel[0] != '\0') { /* the relative URI wins, as in the SDKs */
        if (rel[0] != '/')
            return CREDS_FAIL("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI \"%s\" must start with '/'",
                              rel);
        snprintf(url, sizeof(url), "%s%s", CREDS_ECS_HOST, rel);
    } else {
        /* The scheme and authority checked as an endpoint's; the path kept. */
        const char *auth = strstr(full, "://");
        size_t base_len = auth ? (size_t)(auth + 3 - full) + strcspn(auth + 3, "/?#") : 0;
        char base[1024];
        s3c_endpoint_t ep;
        bool parsed = auth != NULL && strlen(full) < sizeof(url) && base_len < sizeof(base);
        if (parsed) {
            memcpy(base, full, base_len);
            base[base_len] = '\0';
            parsed = s3c_endpoint_parse_url(base, &ep) == 0;
        }
        if (!parsed)
            return CREDS_FAIL("AWS_CONTAINER_CREDENTIALS_FULL_URI \"%s\" is not an http:// or "
                              "https:// URL",
                              full);
        bool ok = strncasecmp(full, "https://", 8) == 0 || container_host_ok(ep.host);
        s3c_endpoint_free(&ep);
        if (!ok)
            return CREDS_FAIL("AWS_CONTAINER_CREDENTIALS_FULL_URI \"%s\": an http:// endpoint "
                              "must be on this host (loopback) or a container agent's address",
                              full);
        snprintf(url, sizeof(url), "%s", full);
    }
    char *token = NULL;
    s3r_status_t st = container_token(&token);
    if (st != S3R_OK)
        return st;
    if (s3c_http_global_init() < 0) {
        free(token);
        return S3R_ERR_NOMEM;
    }
    buf_t doc;
    buf_init(&doc, CREDS_DOC_MAX);
    struct curl_slist *hl = NULL;
    char hdr[CREDS_TOKEN_MAX + 32];
    CURL *h = curl_easy_init();
    if (token != NULL) {
        snprintf(hdr, sizeof(hdr), "Authorization: %s", token);
        hl = curl_slist_append(NULL, hdr);
    }
    long status = 0;
    CURLcode cc = CURLE_OUT_OF_MEMORY;
    char cerr[CURL_ERROR_SIZE] = "";
    if (h != NULL && (token == NULL || hl != NULL)) {
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, CREDS_HTTP_TIMEOUT);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, container_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &doc);
        cc = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    }
    if (cc != CURLE_OK)
        st = CREDS_FAIL("container credentials from %s: %s", url,
                        cerr[0] ? cerr : curl_easy_strerror(cc));
    else if (status != 200)
        st = s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, (int)status, NULL,
                      "container credentials from %s: HTTP %ld", url, status);
    else
        st = creds_parse(doc.data ? doc.data : "", doc.len, "the container credentials", "Token",
                         false, out);
    curl_slist_free_all(hl);
    if (h != NULL)
        curl_easy_cleanup(h);
    buf_free(&doc);
    free(token);
    return st;
}
