/* The server's two UCX domains (docs/security.md §Transports):
 *
 *   local  the same-host transports the operator's UCX_TLS allows (shared
 *          memory, CMA, knem). On those transports UCX trusts the peer: the
 *          server itself maps or reads the memory a peer's rkey and worker
 *          address name, with no bounds check. Only sessions bootstrapped
 *          over the Unix socket by a trusted uid live here. No network
 *          transport: a local session never needs one, and each would open
 *          listening sockets per session worker.
 *   net    network transports only (tcp, and the InfiniBand/RoCE families):
 *          the access to a client's memory is done by the client's side (TCP)
 *          or checked by its NIC against the registration (rc/dc/ud), so no
 *          rkey or address a stranger sends makes the server touch its own
 *          memory. Everyone else lives here.
 *
 * The staging pool is registered in each. */
#include "rdma/rdma_server_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "common/log.h"
#include "rdma/rdma_net.h"

/* The network transports and the UCX aliases that name only network
 * transports (UCX 1.13 ucp_tl_aliases). */
static const char *const NET_TLS[] = {"tcp",      "ib",      "rc",       "rc_v",    "rc_x",
                                      "ud",       "ud_v",    "ud_x",     "dc",      "dc_x",
                                      "rc_verbs", "rc_mlx5", "ud_verbs", "ud_mlx5", "dc_mlx5"};
/* Same-host transports, and those of them that carry messages (UCP needs
 * one for its wireup; CMA and knem only move data). */
static const char *const LOCAL_TLS[] = {"posix", "sysv", "xpmem", "cma", "knem", "mm", "sm", "shm"};
static const char *const LOCAL_AM_TLS[] = {"posix", "sysv", "xpmem", "mm", "sm", "shm"};
/* What the net domain allows when the operator's list does not say. */
static const char *const NET_DEFAULT[] = {"rc_verbs", "rc_mlx5", "ud_verbs",
                                          "ud_mlx5",  "dc_mlx5", "tcp"};

/* 1 when the UCX_TLS entry name[0..n) is one of set[0..count). */
static int tl_in(const char *name, size_t n, const char *const *set, size_t count)
{
    if (n > 0 && name[0] == '\\') { /* UCX's strict-name prefix */
        name++;
        n--;
    }
    const char *colon = memchr(name, ':', n); /* "ud_verbs:aux" */
    if (colon)
        n = (size_t)(colon - name);
    for (size_t i = 0; i < count; i++) {
        if (strlen(set[i]) == n && memcmp(set[i], name, n) == 0)
            return 1;
    }
    return 0;
}

static int is_net_tl(const char *name, size_t n)
{
    return tl_in(name, n, NET_TLS, sizeof(NET_TLS) / sizeof(NET_TLS[0]));
}

/* 1 when the comma list (UCX syntax, no '^') names tl directly or through
 * one of the aliases that covers it. */
static int list_names(const char *list, const char *tl)
{
    static const struct {
        const char *alias, *prefix;
    } covers[] = {{"ib", "rc_"},        {"ib", "ud_"},       {"ib", "dc_"},
                  {"rc", "rc_"},        {"ud", "ud_"},       {"dc", "dc_"},
                  {"rc_v", "rc_verbs"}, {"rc_x", "rc_mlx5"}, {"ud_v", "ud_verbs"},
                  {"ud_x", "ud_mlx5"},  {"dc_x", "dc_mlx5"}};
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (strlen(tl) == n && memcmp(p, tl, n) == 0)
            return 1;
        for (size_t i = 0; i < sizeof(covers) / sizeof(covers[0]); i++) {
            if (strlen(covers[i].alias) == n && memcmp(p, covers[i].alias, n) == 0 &&
                strncmp(tl, covers[i].prefix, strlen(covers[i].prefix)) == 0)
                return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

static int append(char *out, size_t out_len, size_t *used, const char *s, size_t n)
{
    if (*used + (*used ? 1 : 0) + n + 1 > out_len)
        return -1;
    if (*used)
        out[(*used)++] = ',';
    memcpy(out + *used, s, n);
    *used += n;
    out[*used] = '\0';
    return 0;
}

int rdma_net_tls(const char *ucx_tls, char *out, size_t out_len)
{
    size_t used = 0;
    if (out_len == 0)
        return -1;
    out[0] = '\0';
    if (!ucx_tls || !*ucx_tls || strcmp(ucx_tls, "all") == 0 || ucx_tls[0] == '^') {
        /* Everything, or everything but a deny list: the network defaults
         * minus what the operator denied. */
        const char *deny = ucx_tls && ucx_tls[0] == '^' ? ucx_tls + 1 : "";
        for (size_t i = 0; i < sizeof(NET_DEFAULT) / sizeof(NET_DEFAULT[0]); i++) {
            if (!list_names(deny, NET_DEFAULT[i]) &&
                append(out, out_len, &used, NET_DEFAULT[i], strlen(NET_DEFAULT[i])) < 0)
                return -1;
        }
    } else {
        /* An allow list: keep its network entries. */
        for (const char *p = ucx_tls; *p;) {
            size_t n = strcspn(p, ",");
            if (is_net_tl(p, n) && append(out, out_len, &used, p, n) < 0)
                return -1;
            p += n + (p[n] == ',');
        }
    }
    return used ? 0 : -1;
}

/* 1 when the deny list (UCX_TLS after '^') names the same-host transport
 * tl, directly or through the mm / sm / shm aliases. */
static int local_denied(const char *deny, const char *tl)
{
    int mm_member = strcmp(tl, "posix") == 0 || strcmp(tl, "sysv") == 0 || strcmp(tl, "xpmem") == 0;
    for (const char *p = deny; *p;) {
        size_t n = strcspn(p, ",");
        if (tl_in(p, n, &tl, 1) || (mm_member && n == 2 && memcmp(p, "mm", 2) == 0) ||
            (n == 2 && memcmp(p, "sm", 2) == 0) || (n == 3 && memcmp(p, "shm", 3) == 0))
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

int rdma_local_tls(const char *ucx_tls, char *out, size_t out_len)
{
    size_t used = 0;
    int am = 0;
    if (out_len == 0)
        return -1;
    out[0] = '\0';
    const size_t n_local = sizeof(LOCAL_TLS) / sizeof(LOCAL_TLS[0]);
    const size_t n_am = sizeof(LOCAL_AM_TLS) / sizeof(LOCAL_AM_TLS[0]);
    if (!ucx_tls || !*ucx_tls || strcmp(ucx_tls, "all") == 0 || ucx_tls[0] == '^') {
        /* Everything, or everything but a deny list: each same-host
         * transport (LOCAL_TLS starts with the five real ones) not denied. */
        const char *deny = ucx_tls && ucx_tls[0] == '^' ? ucx_tls + 1 : "";
        for (size_t i = 0; i < 5; i++) {
            if (local_denied(deny, LOCAL_TLS[i]))
                continue;
            if (append(out, out_len, &used, LOCAL_TLS[i], strlen(LOCAL_TLS[i])) < 0)
                return -1;
            am |= tl_in(LOCAL_TLS[i], strlen(LOCAL_TLS[i]), LOCAL_AM_TLS, n_am);
        }
    } else {
        /* An allow list: keep its same-host entries. */
        for (const char *p = ucx_tls; *p;) {
            size_t n = strcspn(p, ",");
            if (tl_in(p, n, LOCAL_TLS, n_local)) {
                if (append(out, out_len, &used, p, n) < 0)
                    return -1;
                am |= tl_in(p, n, LOCAL_AM_TLS, n_am);
            }
            p += n + (p[n] == ',');
        }
    }
    return am ? 0 : -1;
}

static int domain_open(struct rdma_server *srv, rdma_domain_t *dom, const char *tls)
{
    ucp_config_t *uc;
    ucs_status_t st = ucp_config_read(NULL, NULL, &uc);
    if (st != UCS_OK) {
        log_error("rdma: ucp_config_read: %s", ucs_status_string(st));
        return -1;
    }
    /* A server whose session port is loopback-only has no remote clients:
     * keep UCX's own listening sockets (its TCP transport accepts
     * connections from anyone) on the loopback device too, unless the
     * operator chose the devices. */
    if (!getenv("UCX_NET_DEVICES") && rdma_net_host_is_loopback(srv->cfg.listen_host) &&
        (st = ucp_config_modify(uc, "NET_DEVICES", "lo")) != UCS_OK) {
        log_error("rdma: UCX_NET_DEVICES=lo: %s", ucs_status_string(st));
        ucp_config_release(uc);
        return -1;
    }
    /* The net list names every network transport family; those this host
     * lacks are expected, not a configuration error worth a warning. */
    if (tls && ((st = ucp_config_modify(uc, "TLS", tls)) != UCS_OK ||
                (st = ucp_config_modify(uc, "WARN_INVALID_CONFIG", "n")) != UCS_OK)) {
        log_error("rdma: UCX_TLS=%s: %s", tls, ucs_status_string(st));
        ucp_config_release(uc);
        return -1;
    }
    ucp_params_t up = {
        .field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
        /* AM: to send the handshake probe (rdma_handshake.c); the net
         * domain's workers get a handler for every id (rdma_worker_am_guard). */
        .features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP,
        .mt_workers_shared = 1,
    };
    st = ucp_init(&up, uc, &dom->ctx);
    ucp_config_release(uc);
    if (st != UCS_OK) {
        log_error("rdma: ucp_init (%s domain): %s", dom->local ? "local" : "net",
                  ucs_status_string(st));
        dom->ctx = NULL;
        return -1;
    }
    ucp_mem_map_params_t mp = {
        .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
        .address = srv->staging,
        .length = srv->staging_len,
    };
    if ((st = ucp_mem_map(dom->ctx, &mp, &dom->staging_memh)) != UCS_OK) {
        log_error("rdma: registering %zu bytes of staging memory: %s", srv->staging_len,
                  ucs_status_string(st));
        dom->staging_memh = NULL;
        return -1;
    }
    return 0;
}

static void domain_close(rdma_domain_t *dom)
{
    if (dom->staging_memh)
        ucp_mem_unmap(dom->ctx, dom->staging_memh);
    dom->staging_memh = NULL;
    if (dom->ctx)
        ucp_cleanup(dom->ctx);
    dom->ctx = NULL;
}

int rdma_domains_open(struct rdma_server *srv, int local)
{
    char tls[512];
    const char *op = getenv("UCX_TLS");
    srv->local.local = 1;
    if (local && rdma_local_tls(op, tls, sizeof(tls)) == 0) {
        if (domain_open(srv, &srv->local, tls) < 0)
            return -1;
        log_info("rdma: trusted local sessions use UCX_TLS=%s", tls);
    } else if (local) {
        log_info("rdma: UCX_TLS=%s has no shared-memory transport: trusted local sessions use "
                 "the network transports",
                 op);
    }
    if (!srv->cfg.net_sessions) {
        log_warn("rdma: network sessions are off: only trusted local (Unix socket) sessions");
        return srv->local.ctx ? 0 : -1;
    }
    if (rdma_net_tls(op, tls, sizeof(tls)) < 0) {
        log_warn("rdma: UCX_TLS=%s allows no network transport: only local (Unix socket) "
                 "sessions are possible",
                 op);
        return srv->local.ctx ? 0 : -1;
    }
    if (domain_open(srv, &srv->net, tls) < 0)
        return -1;
    log_info("rdma: other sessions use UCX_TLS=%s", tls);
    return 0;
}

void rdma_domains_close(struct rdma_server *srv)
{
    domain_close(&srv->net);
    domain_close(&srv->local);
}
