/* The session handshake (bootstrap thread; docs/protocol.md §1.3):
 *
 *   HELLO  (access key, client nonce, client worker address)
 *   → CHALLENGE (server nonce)           nothing costly is made before AUTH
 *   AUTH   (client MAC over the transcript)
 *   → the session is created and counted (global and per-user limits), its
 *     endpoint to the client's worker made in the session's domain, and a
 *     probe (UCX active message with a fresh nonce) sent over it
 *   PROVE  (the probe nonce, back over the lifeline)
 *   → WELCOME (session id, limits, server worker address, server MAC)
 *
 * The probe proves the UCX endpoint reaches the party holding this lifeline:
 * a worker address is just bytes the client sends, and one naming the
 * server's own worker, or another process's, would otherwise aim the
 * server's one-sided operations there. It also completes the endpoint's
 * wireup before the session can be used: it is sent as a reply-capable
 * message (UCP_AM_SEND_FLAG_REPLY), which UCX sends only once the endpoint
 * knows its remote peer, i.e. after the wireup request and the client's
 * reply. Sent plainly it could go at once, the wireup then left to the
 * first operation that needs it (the rkey of the first REGION_ADD), whose
 * request may reach the client as it closes the session: UCX 1.13 aborts
 * the client when it purges its queued reply (src/rdma/README.md, "Wireup and
 * close"). */
#include "rdma/rdma_server_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "common/hash.h"
#include "common/log.h"

int rdma_on_hello(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    (void)srv;
    rdma_hello_t h;
    if (rdma_wire_parse_hello(body, len, &h) < 0) {
        log_warn("rdma: %s: malformed HELLO; closing", c->peer);
        rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed HELLO");
        return -1;
    }
    snprintf(c->ak, sizeof(c->ak), "%s", h.access_key);
    memcpy(c->cnonce, h.nonce, RDMA_NONCE_LEN);
    c->caddr = malloc(h.worker_addr_len);
    if (!c->caddr || hash_random_bytes(c->snonce, RDMA_NONCE_LEN) < 0) {
        rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "out of memory");
        return -1;
    }
    memcpy(c->caddr, h.worker_addr, h.worker_addr_len);
    c->caddr_len = h.worker_addr_len;
    wire_out_t w = {0};
    if (rdma_wire_nonce(&w, RDMA_MSG_CHALLENGE, c->snonce) < 0) {
        rdma_wire_free(&w);
        return -1;
    }
    rdma_conn_send(c, &w);
    c->state = CONN_AUTH;
    return 0;
}

/* Reserves a session slot: 0, or -1 with the reason queued on c. */
static int session_admit(struct rdma_server *srv, bconn_t *c)
{
    /* Every session of the key not yet destroyed counts, closed ones too:
     * one whose endpoint waits for stalled requests still holds its slot. */
    pthread_mutex_lock(&srv->mu);
    unsigned per_user = rdma_user_sessions(srv, c->ak);
    pthread_mutex_unlock(&srv->mu);
    if (per_user >= srv->cfg.max_sessions_per_user) {
        log_warn("rdma: %s: access key '%s' holds %u sessions (limit %u); refusing", c->peer, c->ak,
                 per_user, srv->cfg.max_sessions_per_user);
        rdma_conn_send_error(c, RDMA_ERR_MAX_SESSIONS,
                             "too many RDMA sessions for this access key");
        return -1;
    }
    pthread_mutex_lock(&srv->mu);
    int ok = srv->n_alloc < srv->cfg.max_sessions;
    if (ok)
        srv->n_alloc++;
    pthread_mutex_unlock(&srv->mu);
    if (!ok) {
        log_warn("rdma: %s: session limit (%u) reached; refusing", c->peer, srv->cfg.max_sessions);
        rdma_conn_send_error(c, RDMA_ERR_MAX_SESSIONS, "too many RDMA sessions");
        return -1;
    }
    return 0;
}

static void release_slot(struct rdma_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    srv->n_alloc--;
    pthread_mutex_unlock(&srv->mu);
}

static void probe_done(void *request, ucs_status_t status, void *user_data)
{
    (void)status;
    (void)user_data;
    ucp_request_free(request);
}

/* Creates the session for an authenticated connection: worker (local
 * sessions get their own), endpoint, probe. The slot is reserved. 0, or -1
 * (the slot released, nothing left behind). */
static int session_create(struct rdma_server *srv, bconn_t *c)
{
    /* A trusted peer gets the local domain when there is one (an operator's
     * UCX_TLS may leave it no shared-memory transport). */
    const rdma_domain_t *dom = c->local && srv->local.ctx ? &srv->local : &srv->net;
    if (!dom->ctx) {
        rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "no UCX transport is allowed for this client");
        return -1;
    }
    rsession_t *s = calloc(1, sizeof(*s));
    if (!s || hash_random_bytes(s->probe, RDMA_NONCE_LEN) < 0) {
        free(s);
        rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "out of memory");
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->srv = srv;
    s->dom = dom;
    pthread_mutex_lock(&srv->mu);
    s->prog = &srv->progs[srv->next_prog++ % (unsigned)srv->n_progs];
    s->user = rdma_user_get(srv, c->ak);
    pthread_mutex_unlock(&srv->mu);
    if (!s->user) {
        rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "out of memory");
        goto fail;
    }
    atomic_init(&s->refs, 1); /* the lifeline's */
    snprintf(s->access_key, sizeof(s->access_key), "%s", c->ak);
    snprintf(s->peer, sizeof(s->peer), "%s", c->peer);
    memcpy(s->probe_hdr, c->cnonce, RDMA_NONCE_LEN);
    s->own_worker = dom->local;
    if (s->own_worker &&
        (rdma_worker_create(dom, &s->own) < 0 || rdma_native_listen(&s->own, NULL, s) < 0)) {
        rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "cannot create a UCX worker");
        goto fail;
    }
    s->worker = s->own_worker ? s->own.w : s->prog->shared.w;
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .address = (const ucp_address_t *)c->caddr,
        /* UCX 1.13's shared-memory transports support no PEER mode; a local
         * session's own worker is destroyed instead when it ends. */
        .err_mode = s->own_worker ? UCP_ERR_HANDLING_MODE_NONE : UCP_ERR_HANDLING_MODE_PEER,
    };
    if (!s->own_worker) {
        ep.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        ep.err_handler.cb = rdma_session_ep_failed;
        ep.err_handler.arg = s;
    }
    ucs_status_t st = ucp_ep_create(s->worker, &ep, &s->ep);
    if (st != UCS_OK) {
        log_warn("rdma: %s: ucp_ep_create to the client: %s; closing", c->peer,
                 ucs_status_string(st));
        rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "cannot reach the client's UCX worker");
        s->ep = NULL;
        goto fail;
    }
    /* From here the session is torn down by its progress thread like any
     * other (rdma_session_put), which closes the endpoint or destroys the worker. */
    c->sess = s;
    if (s->own_worker)
        rdma_prog_post(s->prog, CMD_ADD, s);
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS,
                             .cb.send = probe_done,
                             .flags = UCP_AM_SEND_FLAG_REPLY};
    ucs_status_ptr_t req = ucp_am_send_nbx(s->ep, RDMA_AM_PROBE, s->probe_hdr, RDMA_NONCE_LEN,
                                           s->probe, RDMA_NONCE_LEN, &p);
    if (UCS_PTR_IS_ERR(req)) {
        log_warn("rdma: %s: sending the probe: %s; closing", c->peer,
                 ucs_status_string(UCS_PTR_STATUS(req)));
        rdma_conn_send_error(c, RDMA_ERR_PROBE, "cannot reach the client's UCX worker");
        return -1;
    }
    return 0;
fail:
    rdma_worker_destroy(&s->own);
    pthread_mutex_destroy(&s->mu);
    if (s->user) {
        pthread_mutex_lock(&srv->mu);
        rdma_user_put(srv, s->user);
        pthread_mutex_unlock(&srv->mu);
    }
    free(s);
    release_slot(srv);
    return -1;
}

int rdma_on_auth(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    uint8_t mac[RDMA_MAC_LEN], want[RDMA_MAC_LEN];
    char secret[256];
    if (rdma_wire_parse_nonce(body, len, RDMA_MSG_AUTH, mac) < 0) {
        log_warn("rdma: %s: malformed AUTH; closing", c->peer);
        rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed AUTH");
        return -1;
    }
    int known = srv->cfg.lookup_secret &&
                srv->cfg.lookup_secret(srv->cfg.lookup_ctx, c->ak, secret, sizeof(secret)) == 0;
    if (known) {
        secret[sizeof(secret) - 1] = '\0';
        rdma_session_key(secret, c->key); /* kept for WELCOME's MAC */
        rdma_handshake_mac(c->key, "client", c->cnonce, c->snonce, c->caddr, c->caddr_len, NULL, 0,
                           c->ak, want);
    }
    memset(secret, 0, sizeof(secret));
    if (!known || !hash_ct_equal(mac, want, RDMA_MAC_LEN)) {
        log_warn("rdma: %s: session authentication failed for access key '%s' (%s); closing",
                 c->peer, c->ak, known ? "bad MAC" : "unknown key");
        rdma_conn_send_error(c, RDMA_ERR_AUTH, "authentication failed");
        return -1;
    }
    if (session_admit(srv, c) < 0 || session_create(srv, c) < 0)
        return -1;
    c->state = CONN_PROBE;
    return 0;
}

int rdma_on_prove(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    rsession_t *s = c->sess;
    uint8_t nonce[RDMA_NONCE_LEN];
    if (rdma_wire_parse_nonce(body, len, RDMA_MSG_PROVE, nonce) < 0) {
        log_warn("rdma: %s: malformed PROVE; closing", c->peer);
        rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed PROVE");
        return -1;
    }
    if (!hash_ct_equal(nonce, s->probe, RDMA_NONCE_LEN)) {
        log_warn("rdma: %s: PROVE does not match the probe sent to the announced UCX worker "
                 "(access key '%s'); closing",
                 c->peer, c->ak);
        rdma_conn_send_error(c, RDMA_ERR_PROBE,
                             "the UCX worker address does not reach this client");
        return -1;
    }
    ucp_address_t *own_addr = NULL;
    const void *saddr;
    size_t saddr_len;
    if (s->own_worker) {
        if (ucp_worker_get_address(s->own.w, &own_addr, &saddr_len) != UCS_OK) {
            rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "cannot read the UCX worker address");
            return -1;
        }
        saddr = own_addr;
    } else {
        saddr = s->prog->shared_addr;
        saddr_len = s->prog->shared_addr_len;
    }
    rdma_welcome_t wm = {
        .err_mode = s->own_worker ? RDMA_WIRE_ERRMODE_NONE : RDMA_WIRE_ERRMODE_PEER,
        .max_regions = srv->cfg.max_regions_per_session,
        .max_registered = srv->cfg.max_registered_per_session,
        .max_inflight = srv->cfg.max_inflight,
        .chunk_bytes = (uint32_t)srv->chunk_bytes,
        .worker_addr = saddr,
        .worker_addr_len = saddr_len,
    };
    /* The id is what a request or a token names the session by: without
     * fresh randomness there is no session. */
    if (hash_random_bytes(wm.session_id, RDMA_SESSION_ID_LEN) < 0) {
        if (own_addr)
            ucp_worker_release_address(s->own.w, own_addr);
        log_error("rdma: %s: no random bytes for a session id; closing", c->peer);
        rdma_conn_send_error(c, RDMA_ERR_INTERNAL, "cannot make a session id");
        return -1;
    }
    memcpy(s->id, wm.session_id, RDMA_SESSION_ID_LEN);
    rdma_handshake_mac(c->key, "server", c->cnonce, c->snonce, c->caddr, c->caddr_len, saddr,
                       saddr_len, c->ak, wm.server_mac);
    memset(c->key, 0, sizeof(c->key)); /* not needed past WELCOME */
    wire_out_t w = {0};
    int rc = rdma_wire_welcome(&w, &wm);
    if (own_addr)
        ucp_worker_release_address(s->own.w, own_addr);
    if (rc < 0) {
        rdma_wire_free(&w);
        return -1;
    }
    pthread_mutex_lock(&srv->mu);
    rsession_t **b = rdma_session_bucket(srv, s->id);
    s->hnext = *b;
    *b = s;
    srv->n_live++;
    pthread_mutex_unlock(&srv->mu);
    atomic_fetch_add(&srv->sessions_opened, 1);
    c->state = CONN_LIVE;
    rdma_conn_send(c, &w);
    log_info("rdma: %s: session up for '%s' (%s)", c->peer, c->ak,
             s->own_worker ? "local, own worker, every transport"
                           : "network transports, shared worker");
    return 0;
}
