/* REGION_ADD / REGION_REMOVE on a lifeline (bootstrap thread).
 *
 * A region is what a client announces: an id, [addr, addr+len) in its own
 * address space and a packed rkey. The server never takes the announcement
 * on trust: when UCX can turn the rkey into a pointer into this process
 * (shared-memory transports, local sessions only) the whole span must lie in
 * one shared mapping (rdma_span_is_shared_mapping), or the region is refused;
 * otherwise the access is performed by the client's side (TCP) or checked by
 * the NIC (InfiniBand/RoCE) or the kernel (CMA, for the client's own pid).
 *
 * Errors: limit refusals (MAX_REGIONS, MAX_REGISTERED) and regions the server
 * cannot use (BAD_RKEY) leave the session up; protocol errors (a malformed
 * frame, a region id in use, removing an unknown region) close it. */
#include "rdma/rdma_server_internal.h"

#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "common/log.h"

/* The per-MD rkeys of a packed UCP rkey (UCX 1.13 layout: u64 md map,
 * u8 memory type, then per MD in the map a u8 size and that many bytes) must
 * lie inside the n bytes received: ucp_ep_rkey_unpack takes no length. */
static int rkey_layout_ok(const uint8_t *p, size_t n)
{
    uint64_t md_map;
    if (n < sizeof(md_map) + 1)
        return 0;
    memcpy(&md_map, p, sizeof(md_map));
    size_t off = sizeof(md_map) + 1;
    for (int i = 0; i < 64; i++) {
        if (!(md_map >> i & 1))
            continue;
        if (off >= n || p[off] > n - off - 1)
            return 0;
        off += 1 + p[off];
    }
    return 1;
}

/* Transport rkey decoders read their own fixed-size structures whatever the
 * size byte says; this much zero padding keeps every read inside our copy. */
#define RKEY_PAD 4096

/* Unpacks a packed rkey received from a peer: its layout is checked against
 * len first (ucp_ep_rkey_unpack takes no length) and UCX reads a zero-padded
 * copy. UCS_ERR_INVALID_PARAM when malformed. */
static ucs_status_t rkey_unpack_checked(ucp_ep_h ep, const uint8_t *rkey, size_t len,
                                        ucp_rkey_h *out)
{
    if (!rkey_layout_ok(rkey, len))
        return UCS_ERR_INVALID_PARAM;
    uint8_t *copy = calloc(1, len + RKEY_PAD);
    if (!copy)
        return UCS_ERR_NO_MEMORY;
    memcpy(copy, rkey, len);
    ucs_status_t st = ucp_ep_rkey_unpack(ep, copy, out);
    free(copy);
    return st;
}

/* Checks a freshly unpacked region against the memory UCX maps for it and
 * sets r->local. NULL when usable, else the reason to refuse it. */
static const char *region_verify(struct rdma_server *srv, rregion_t *r)
{
    void *first = NULL;
    r->local = NULL;
    if (ucp_rkey_ptr(r->rkey, r->addr, &first) != UCS_OK)
        return NULL; /* not mappable: the transport enforces the registration */
    if (!rdma_span_is_shared_mapping(first, r->len))
        return "region is larger than the memory the client registered";
    r->local = srv->no_map ? NULL : first;
    return NULL;
}

/* Refuses a REGION_ADD: limit and usability refusals keep the session,
 * protocol errors (close = 1) end it. */
static int region_refuse(bconn_t *c, uint32_t id, uint32_t code, const char *msg, int close)
{
    log_info("rdma: %s: REGION_ADD %u refused: %s%s", c->peer, id, msg, close ? "; closing" : "");
    rdma_conn_send_error(c, code, msg);
    return close ? -1 : 0;
}

int rdma_on_region_add(struct rdma_server *srv, bconn_t *c, const uint8_t *body, size_t len)
{
    rsession_t *s = c->sess;
    rdma_region_add_t m;
    if (rdma_wire_parse_region_add(body, len, &m) < 0) {
        log_warn("rdma: %s: malformed REGION_ADD; closing", c->peer);
        rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed REGION_ADD");
        return -1;
    }
    pthread_mutex_lock(&s->mu);
    int dup = 0;
    for (rregion_t *r = s->regions; r; r = r->next)
        dup |= r->id == m.region_id;
    unsigned n_regions = s->n_regions;
    uint64_t reg_bytes = s->reg_bytes;
    pthread_mutex_unlock(&s->mu);
    if (dup)
        return region_refuse(c, m.region_id, RDMA_ERR_DUP_REGION, "region id already in use", 1);
    if (n_regions >= srv->cfg.max_regions_per_session)
        return region_refuse(c, m.region_id, RDMA_ERR_MAX_REGIONS,
                             "too many regions in this session", 0);
    if (m.len > srv->cfg.max_registered_per_session - reg_bytes)
        return region_refuse(c, m.region_id, RDMA_ERR_MAX_REGISTERED,
                             "registered bytes limit of this session reached", 0);

    rregion_t *r = calloc(1, sizeof(*r));
    ucs_status_t st =
        r ? rkey_unpack_checked(s->ep, m.rkey, m.rkey_len, &r->rkey) : UCS_ERR_NO_MEMORY;
    if (st != UCS_OK) {
        free(r);
        log_warn("rdma: %s: rkey unpack: %s", c->peer, ucs_status_string(st));
        return region_refuse(c, m.region_id, RDMA_ERR_BAD_RKEY, "cannot unpack the region's rkey",
                             0);
    }
    r->id = m.region_id;
    r->addr = m.addr;
    r->len = m.len;
    r->refs = 1;
    const char *why = region_verify(srv, r);
    if (why) {
        ucp_rkey_destroy(r->rkey);
        free(r);
        log_warn("rdma: %s: REGION_ADD %u announces %llu bytes its rkey does not cover", c->peer,
                 m.region_id, (unsigned long long)m.len);
        return region_refuse(c, m.region_id, RDMA_ERR_BAD_RKEY, why, 0);
    }
    /* Only this thread adds or removes regions, so the checks above hold. */
    pthread_mutex_lock(&s->mu);
    r->next = s->regions;
    s->regions = r;
    s->n_regions++;
    s->reg_bytes += m.len;
    pthread_mutex_unlock(&s->mu);
    wire_out_t w = {0};
    if (rdma_wire_region_id(&w, RDMA_MSG_REGION_OK, m.region_id) < 0) {
        rdma_wire_free(&w);
        return -1;
    }
    rdma_conn_send(c, &w);
    return 0;
}

int rdma_on_region_remove(bconn_t *c, const uint8_t *body, size_t len)
{
    rsession_t *s = c->sess;
    uint32_t id;
    if (rdma_wire_parse_region_id(body, len, &id) < 0 ||
        rdma_wire_frame_type(body, len) != RDMA_MSG_REGION_REMOVE) {
        log_warn("rdma: %s: malformed REGION_REMOVE; closing", c->peer);
        rdma_conn_send_error(c, RDMA_ERR_BAD_MESSAGE, "malformed REGION_REMOVE");
        return -1;
    }
    int found = 0;
    rregion_t *gone = NULL;
    pthread_mutex_lock(&s->mu);
    for (rregion_t **pp = &s->regions; *pp; pp = &(*pp)->next) {
        rregion_t *r = *pp;
        if (r->id == id) {
            *pp = r->next;
            s->n_regions--;
            s->reg_bytes -= r->len;
            gone = rdma_region_unref_locked(r);
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    rdma_region_free(gone);
    if (!found) {
        log_warn("rdma: %s: REGION_REMOVE of unknown region %u; closing", c->peer, id);
        rdma_conn_send_error(c, RDMA_ERR_NO_REGION, "no such region");
        return -1;
    }
    wire_out_t w = {0};
    if (rdma_wire_region_id(&w, RDMA_MSG_REGION_OK, id) < 0) {
        rdma_wire_free(&w);
        return -1;
    }
    rdma_conn_send(c, &w);
    return 0;
}
