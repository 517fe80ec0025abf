/* The CLI's connection settings: its flags over what libs3rdma finds in the
 * AWS environment and the AWS CLI's shared files (s3r_aws_settings_load, the
 * one place that reads them). The precedence is the AWS CLI's (docs/cli.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cli.h"

#define DEFAULT_ENDPOINT "http://127.0.0.1:9000"
#define DEFAULT_REGION   "us-east-1"

/* *dst = a copy of flag when given, else takes found (now owned by *dst:
 * the caller clears its copy). For -v, *src_p (if given) says where the
 * value came from: flag_name, "profile NAME (files)", the environment
 * variable, or def_src when neither gave one. */
static void take(char **dst, const char *flag, const char *flag_name, char **found,
                 const char *found_from, const s3r_aws_settings_t *aws, char **src_p)
{
    const char *src = NULL;
    if (flag != NULL) {
        *dst = strdup(flag);
        src = flag_name;
    } else if (*found != NULL) {
        *dst = *found;
        *found = NULL;
        src = found_from;
    }
    if (src_p == NULL)
        return;
    char buf[600];
    if (src != NULL && strcmp(src, "profile") == 0)
        snprintf(buf, sizeof(buf), "profile %s (%s, %s)", aws->profile,
                 aws->credentials_file ? aws->credentials_file : "-",
                 aws->config_file ? aws->config_file : "-");
    else
        snprintf(buf, sizeof(buf), "%s", src ? src : "nowhere");
    *src_p = strdup(buf);
}

int cli_config_resolve(const cli_flags_t *fl, cli_config_t *out)
{
    memset(out, 0, sizeof(*out));
    s3r_aws_settings_t aws;
    /* Keys on the command line, or none wanted: no program or endpoint is
     * asked for others. Keys from a credential_process or a container
     * endpoint are the client's to load (make_client: once, and again
     * before they expire), so only static keys are read here. */
    bool keys_needed = !fl->no_sign_request && (fl->access_key == NULL || fl->secret_key == NULL);
    s3r_status_t st = keys_needed ? s3r_aws_settings_load_static_keys(fl->profile, &aws)
                                  : s3r_aws_settings_load_without_keys(fl->profile, &aws);
    if (st != S3R_OK) {
        s3r_error_info_t e;
        const char *why = s3r_client_last_error(NULL, &e) == S3R_OK ? e.message : "out of memory";
        /* Name the flag rather than the library's "the caller". */
        const char *caller = strstr(why, "(from the caller)");
        if (caller != NULL)
            cli_line(stderr, "s3rdma: %.*s(from --profile)%s", (int)(caller - why), why,
                     caller + strlen("(from the caller)"));
        else
            cli_line(stderr, "s3rdma: %s", why);
        return CLI_USAGE;
    }
    take(&out->endpoint, fl->endpoint, "--endpoint-url", &aws.endpoint, aws.endpoint_from, &aws,
         &out->src_endpoint);
    if (out->endpoint == NULL) {
        out->endpoint = strdup(DEFAULT_ENDPOINT);
        out->endpoint_is_default = true;
    }
    take(&out->rdma_endpoint, fl->rdma_endpoint, NULL, &aws.rdma_endpoint, NULL, &aws, NULL);
    take(&out->region, fl->region, "--region", &aws.region, aws.region_from, &aws,
         &out->src_region);
    if (out->region == NULL) {
        out->region = strdup(DEFAULT_REGION);
        free(out->src_region);
        out->src_region = strdup("default");
    }
    take(&out->transport, fl->transport, NULL, &aws.transport, NULL, &aws, NULL);
    /* keys_from without keys: a program's or a container's, which the
     * client loads, unless the command line gave half a pair (a secret
     * from elsewhere would never match it: the error below). */
    out->expiring_keys = keys_needed && aws.keys_from != NULL && aws.access_key == NULL &&
                         fl->access_key == NULL && fl->secret_key == NULL;
    take(&out->access_key, fl->access_key, "--access-key", &aws.access_key, aws.keys_from, &aws,
         &out->src_keys);
    if (out->expiring_keys) { /* not loaded here: take found none */
        free(out->src_keys);
        out->src_keys = strdup(aws.keys_from);
    }
    take(&out->secret_key, fl->secret_key, NULL, &aws.secret_key, NULL, &aws, NULL);
    take(&out->session_token, NULL, NULL, &aws.session_token, NULL, &aws, NULL);
    take(&out->ca_bundle, fl->ca_bundle, NULL, &aws.ca_bundle, NULL, &aws, NULL);
    out->no_fallback = fl->no_fallback;
    out->anonymous = fl->no_sign_request;

    int rc = CLI_OK;
    if (!out->anonymous && !out->expiring_keys &&
        (out->access_key == NULL || out->secret_key == NULL)) {
        cli_line(stderr,
                 "s3rdma: no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, put "
                 "aws_access_key_id / aws_secret_access_key in %s (profile \"%s\"), give "
                 "--access-key and --secret-key, or --no-sign-request for a public bucket",
                 aws.credentials_file ? aws.credentials_file : "~/.aws/credentials", aws.profile);
        rc = CLI_USAGE;
    }
    s3r_aws_settings_free(&aws);
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
