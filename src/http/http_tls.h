/* The HTTPS listener's certificate: loaded and checked from PEM files, handed
 * to each TLS handshake by GnuTLS's certificate callback, and replaced on
 * reload without touching connections already up.
 *
 * Each reload makes a new generation current; new handshakes get it. A
 * connection holds the generation that was current when it was accepted
 * (http_tls_hold at accept, http_tls_release at close): a generation is freed
 * once it is no longer current and no connection accepted under it or an
 * earlier one is open, because such a connection may have handshaken with it
 * and GnuTLS keeps a pointer to the certificate for the session's life.
 *
 * GnuTLS's callback has no context argument, so one http_tls_t at most exists
 * per process. */
#ifndef S3R_HTTP_TLS_H
#define S3R_HTTP_TLS_H

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

typedef struct http_tls http_tls_t;
typedef struct http_tls_cert http_tls_cert_t;

/* Reads cert_path (a PEM certificate chain, leaf first) and key_path (its PEM
 * private key) and checks that the key belongs to the leaf. Returns NULL with
 * the reason logged, or when one already exists. The paths are copied: a
 * reload reads them again. */
http_tls_t *http_tls_create(const char *cert_path, const char *key_path);
/* Re-reads the files. On success new handshakes get the new certificate and
 * 0 is returned; on any problem the current certificate stays, the reason is
 * logged and -1 returned. Thread-safe against handshakes. */
int http_tls_reload(http_tls_t *tls);
/* Frees every generation; no connection may remain. NULL is a no-op. */
void http_tls_destroy(http_tls_t *tls);

/* A connection's hold on the current generation (never NULL), and its
 * release when the connection closes. */
http_tls_cert_t *http_tls_hold(http_tls_t *tls);
void http_tls_release(http_tls_t *tls, http_tls_cert_t *cert);

/* For MHD_OPTION_HTTPS_CERT_CALLBACK: the current certificate chain and key. */
int http_tls_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                      const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                      gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

/* TLS 1.2 and 1.3 only, GnuTLS's NORMAL ciphers otherwise. */
#define HTTP_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

#endif
