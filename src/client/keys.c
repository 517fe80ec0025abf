/* libs3rdma: the client's keys. The SigV4 signing key, derived once a day
 * from the secret; and, with aws_credentials, the keys themselves, loaded
 * from the AWS environment and profiles (s3c_aws_settings_load) at create
 * and loaded again before they expire, as AWS SDKs refresh a
 * credential_process's or a container's keys. Everything here is guarded
 * by the client's key_mu; a reload runs outside it, one thread at a time,
 * while the others go on with the keys they have (still valid: the reload
 * starts KEYS_EARLY_S before the Expiration). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client_internal.h"
#include "common/sigv4.h"

#define KEYS_EARLY_S 300 /* reload this long before the keys expire */
#define KEYS_RETRY_S 10  /* a failed reload is tried again after this */

/* Takes the keys out of s into the client (key_mu held); false (nothing
 * changed) when s has none or they are too long. */
static bool keys_take(s3r_client_t *c, s3r_aws_settings_t *s, int64_t expiration)
{
    if (s->access_key == NULL || s->secret_key == NULL || strlen(s->access_key) > S3C_KEY_MAX ||
        strlen(s->secret_key) > S3C_KEY_MAX)
        return false;
    free(c->set.access_key);
    free(c->set.secret_key);
    c->set.access_key = s->access_key;
    c->set.secret_key = s->secret_key;
    s->access_key = s->secret_key = NULL;
    c->keys_expire = expiration;
    c->key_date8[0] = '\0'; /* the signing key is derived anew */
    return true;
}

s3r_status_t s3c_keys_load(s3r_client_t *c)
{
    if (!c->set.aws_credentials)
        return S3R_OK;
    s3r_aws_settings_t s;
    int64_t expiration;
    s3r_status_t st = s3c_aws_settings_load(c->set.aws_profile, S3C_KEYS_ALL, &s, &expiration);
    if (st != S3R_OK)
        return st;
    pthread_mutex_lock(&c->key_mu);
    bool ok = keys_take(c, &s, expiration);
    pthread_mutex_unlock(&c->key_mu);
    s3r_aws_settings_free(&s);
    if (!ok)
        return s3c_fail(NULL, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_DEFAULT, 0, NULL,
                        "aws_credentials: no keys (of at most %d bytes) in the AWS environment, "
                        "the profile, a credential_process or a container endpoint",
                        S3C_KEY_MAX);
    return S3R_OK;
}

/* Reloads the keys when they expire within KEYS_EARLY_S and no other thread
 * is at it. The calling thread's last error is kept as it was. */
static void keys_reload_if_due(s3r_client_t *c)
{
    if (!c->set.aws_credentials)
        return;
    int64_t now = (int64_t)time(NULL);
    pthread_mutex_lock(&c->key_mu);
    bool due = c->keys_expire != 0 && now >= c->keys_expire - KEYS_EARLY_S &&
               now >= c->keys_retry_at && !c->keys_reloading;
    c->keys_reloading |= due;
    pthread_mutex_unlock(&c->key_mu);
    if (!due)
        return;
    s3r_error_info_t saved = s3c_tls_err;
    const s3r_client_t *saved_client = s3c_tls_err_client;
    s3r_aws_settings_t s = {0};
    int64_t expiration = 0;
    s3r_status_t st = s3c_aws_settings_load(c->set.aws_profile, S3C_KEYS_ALL, &s, &expiration);
    char why[sizeof(saved.message)];
    snprintf(why, sizeof(why), "%s", st == S3R_OK ? "no keys found" : s3c_tls_err.message);
    pthread_mutex_lock(&c->key_mu);
    bool ok = st == S3R_OK && keys_take(c, &s, expiration);
    if (!ok)
        c->keys_retry_at = now + KEYS_RETRY_S;
    c->keys_reloading = false;
    pthread_mutex_unlock(&c->key_mu);
    s3r_aws_settings_free(&s);
    s3c_tls_err = saved;
    s3c_tls_err_client = saved_client;
    if (!ok && !c->set.quiet)
        fprintf(stderr,
                "s3rdma: reloading the keys before they expire failed (%s); the current "
                "ones are kept, tried again in %d s\n",
                why, KEYS_RETRY_S);
}

void s3c_keys_sign(s3r_client_t *c, const char *date8, uint8_t key[SHA256_LEN], char *ak)
{
    keys_reload_if_due(c);
    pthread_mutex_lock(&c->key_mu);
    if (strcmp(c->key_date8, date8) != 0) {
        sigv4_signing_key(c->set.secret_key, date8, c->set.region, "s3", c->signing_key);
        memcpy(c->key_date8, date8, sizeof(c->key_date8));
    }
    memcpy(key, c->signing_key, SHA256_LEN);
    snprintf(ak, S3C_KEY_MAX + 1, "%s", c->set.access_key);
    pthread_mutex_unlock(&c->key_mu);
}

s3r_status_t s3r_client_access_key(s3r_client_t *c, char *out, size_t out_len)
{
    if (c == NULL || out == NULL || out_len == 0)
        return S3R_ERR_INVALID_ARG;
    pthread_mutex_lock(&c->key_mu);
    snprintf(out, out_len, "%s", c->set.access_key ? c->set.access_key : "");
    pthread_mutex_unlock(&c->key_mu);
    return S3R_OK;
}

void s3c_keys_copy(s3r_client_t *c, char *ak, char *sk)
{
    keys_reload_if_due(c);
    pthread_mutex_lock(&c->key_mu);
    snprintf(ak, S3C_KEY_MAX + 1, "%s", c->set.access_key ? c->set.access_key : "");
    snprintf(sk, S3C_KEY_MAX + 1, "%s", c->set.secret_key ? c->set.secret_key : "");
    pthread_mutex_unlock(&c->key_mu);
}
