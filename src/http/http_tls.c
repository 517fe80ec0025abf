/* The HTTPS certificate store (tls.h): generations of (chain, key), the
 * current one handed to handshakes, older ones freed when no connection that
 * may use them is left. */
#include "http/http_tls.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

#define MAX_CHAIN 16 /* certificates in one chain file */

struct http_tls_cert {
    gnutls_pcert_st chain[MAX_CHAIN];
    unsigned n_chain;
    gnutls_privkey_t key;
    unsigned conns;              /* open connections accepted while this was current */
    struct http_tls_cert *newer; /* the next generation; NULL for the current one */
};

struct http_tls {
    char *cert_path, *key_path;
    pthread_mutex_t lock;
    http_tls_cert_t *oldest; /* generations, oldest first */
    http_tls_cert_t *current;
};

static http_tls_t *the_tls; /* GnuTLS's retrieve callback has no context argument */

static void cert_free(http_tls_cert_t *c)
{
    for (unsigned i = 0; i < c->n_chain; i++)
        gnutls_pcert_deinit(&c->chain[i]);
    gnutls_privkey_deinit(c->key);
    free(c);
}

/* Reads one file whole. Logs and returns -1 on failure. */
static int read_file(const char *path, const char *what, gnutls_datum_t *out)
{
    int rc = gnutls_load_file(path, out);
    if (rc < 0) {
        log_error("tls: cannot read the %s %s: %s", what, path, gnutls_strerror(rc));
        return -1;
    }
    return 0;
}

/* Whether key is the private half of the public key in cert. */
static bool key_matches(gnutls_privkey_t key, gnutls_pcert_st *cert)
{
    gnutls_pubkey_t pub;
    unsigned char id_key[64], id_cert[64];
    size_t n_key = sizeof(id_key), n_cert = sizeof(id_cert);
    if (gnutls_pubkey_init(&pub) < 0)
        return false;
    bool ok =
        gnutls_pubkey_import_privkey(pub, key, 0, 0) == 0 &&
        gnutls_pubkey_get_key_id(pub, GNUTLS_KEYID_USE_SHA256, id_key, &n_key) == 0 &&
        gnutls_pubkey_get_key_id(cert->pubkey, GNUTLS_KEYID_USE_SHA256, id_cert, &n_cert) == 0 &&
        n_key == n_cert && memcmp(id_key, id_cert, n_key) == 0;
    gnutls_pubkey_deinit(pub);
    return ok;
}

/* Loads and checks one generation from the files. NULL with the reason
 * logged. */
static http_tls_cert_t *cert_load(const char *cert_path, const char *key_path)
{
    http_tls_cert_t *c = calloc(1, sizeof(*c));
    gnutls_datum_t cert_pem = {NULL, 0}, key_pem = {NULL, 0};
    if (!c || read_file(cert_path, "certificate", &cert_pem) != 0 ||
        read_file(key_path, "private key", &key_pem) != 0)
        goto fail;
    c->n_chain = MAX_CHAIN;
    int rc =
        gnutls_pcert_list_import_x509_raw(c->chain, &c->n_chain, &cert_pem, GNUTLS_X509_FMT_PEM, 0);
    if (rc < 0) {
        c->n_chain = 0;
        log_error("tls: %s holds no usable PEM certificate chain (at most %d): %s", cert_path,
                  MAX_CHAIN, gnutls_strerror(rc));
        goto fail;
    }
    if ((rc = gnutls_privkey_init(&c->key)) < 0 ||
        (rc = gnutls_privkey_import_x509_raw(c->key, &key_pem, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
        log_error("tls: %s holds no usable PEM private key: %s", key_path, gnutls_strerror(rc));
        goto fail;
    }
    if (!key_matches(c->key, &c->chain[0])) {
        log_error("tls: the private key %s does not belong to the certificate %s", key_path,
                  cert_path);
        goto fail;
    }
    gnutls_free(cert_pem.data);
    gnutls_free(key_pem.data);
    return c;
fail:
    gnutls_free(cert_pem.data);
    gnutls_free(key_pem.data);
    if (c)
        cert_free(c);
    return NULL;
}

/* Frees, oldest first, the generations nobody can be using. Under the lock. */
static void sweep(http_tls_t *tls)
{
    while (tls->oldest != tls->current && tls->oldest->conns == 0) {
        http_tls_cert_t *c = tls->oldest;
        tls->oldest = c->newer;
        cert_free(c);
    }
}

http_tls_t *http_tls_create(const char *cert_path, const char *key_path)
{
    if (the_tls) {
        log_error("tls: one HTTPS certificate store per process");
        return NULL;
    }
    http_tls_t *tls = calloc(1, sizeof(*tls));
    if (!tls)
        return NULL;
    tls->cert_path = strdup(cert_path);
    tls->key_path = strdup(key_path);
    if (!tls->cert_path || !tls->key_path ||
        !(tls->current = cert_load(tls->cert_path, tls->key_path))) {
        free(tls->cert_path);
        free(tls->key_path);
        free(tls);
        return NULL;
    }
    tls->oldest = tls->current;
    pthread_mutex_init(&tls->lock, NULL);
    the_tls = tls;
    return tls;
}

int http_tls_reload(http_tls_t *tls)
{
    http_tls_cert_t *c = cert_load(tls->cert_path, tls->key_path);
    if (!c) {
        log_error("tls: reload failed; still serving the certificate loaded before");
        return -1;
    }
    pthread_mutex_lock(&tls->lock);
    tls->current->newer = c;
    tls->current = c;
    sweep(tls);
    pthread_mutex_unlock(&tls->lock);
    log_info("tls: reloaded %s and %s; new connections get them", tls->cert_path, tls->key_path);
    return 0;
}

void http_tls_destroy(http_tls_t *tls)
{
    if (!tls)
        return;
    while (tls->oldest) {
        http_tls_cert_t *c = tls->oldest;
        tls->oldest = c->newer;
        cert_free(c);
    }
    pthread_mutex_destroy(&tls->lock);
    free(tls->cert_path);
    free(tls->key_path);
    free(tls);
    the_tls = NULL;
}

http_tls_cert_t *http_tls_hold(http_tls_t *tls)
{
    pthread_mutex_lock(&tls->lock);
    http_tls_cert_t *c = tls->current;
    c->conns++;
    pthread_mutex_unlock(&tls->lock);
    return c;
}

void http_tls_release(http_tls_t *tls, http_tls_cert_t *cert)
{
    pthread_mutex_lock(&tls->lock);
    cert->conns--;
    sweep(tls);
    pthread_mutex_unlock(&tls->lock);
}

int http_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
    (void)session;
    (void)req_ca_rdn;
    (void)nreqs;
    (void)pk_algos;
    (void)pk_algos_length;
    http_tls_t *tls = the_tls;
    if (!tls)
        return -1;
    pthread_mutex_lock(&tls->lock);
    *pcert = tls->current->chain;
    *pcert_length = tls->current->n_chain;
    *pkey = tls->current->key;
    pthread_mutex_unlock(&tls->lock);
    return 0;
}
