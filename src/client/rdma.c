/* The RDMA side of the client: one session per client opened lazily, the
 * buffers registered with it, and x-amz-rdma-token formatting.
 *
 * Lifetimes. A session is shared by every thread of the client and is
 * reference counted: each in-flight token request and each s3r_buf_alloc()
 * buffer holds a reference. When a session is found dead it is retired: new
 * requests open a fresh one, and the old one is closed (freeing its regions)
 * once its last reference goes. Caller buffers are registered on first use
 * and cached per session, least recently used evicted first; an entry in use
 * by a request is never evicted. All of this is guarded by c->rdma_mu; the
 * session calls themselves are thread-safe (rdma_client.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/proto_headers.h"
#include "client/client_internal.h"
#include "rdma/rdma_client.h"

/* After a failed open, requests within this window fail (or fall back) at
 * once instead of each paying the connect timeout again. */
#define S3C_SESS_RETRY_MS 1000

struct s3c_region {
    char *addr;
    size_t len;
    rdma_region_t *r;
    bool alloc;     /* memory from rdma_region_alloc (s3r_buf_alloc) */
    unsigned refs;  /* requests using it now */
    uint64_t stamp; /* LRU clock at last use */
    s3c_region_t *next;
};

struct s3c_sess {
    rdma_session_t *rs;
    int ep_idx;
    unsigned users; /* requests + alloc'd buffers */
    bool dead;
    s3c_region_t *regions;
    unsigned n_cached; /* regions with !alloc */
    s3c_sess_t *next;  /* on c->dead */
};

/* A buffer handed out by s3r_buf_alloc: registered (sess, region) or, when
 * no session could be had and fallback is on, plain malloc. */
struct s3c_alloc {
    void *addr;
    size_t len;
    s3c_sess_t *sess;
    s3c_region_t *reg;
    s3c_alloc_t *next;
};

int s3c_sess_ep(const s3c_sess_t *sess)
{
    return sess->ep_idx;
}

static void sess_close(s3c_sess_t *s)
{
    s3c_region_t *r = s->regions;
    while (r != NULL) {
        s3c_region_t *next = r->next;
        free(r);
        r = next;
    }
    /* Frees every region (and allocated region memory) with it. */
    rdma_session_close(s->rs);
    free(s);
}

/* Moves the current session to the retired list (closing it now if unused).
 * Called with rdma_mu held. */
static void sess_retire(s3r_client_t *c)
{
    s3c_sess_t *s = c->sess;
    if (s == NULL)
        return;
    c->sess = NULL;
    s->dead = true;
    if (s->users == 0) {
        sess_close(s);
    } else {
        s->next = c->dead;
        c->dead = s;
    }
}

/* Drops one user of s; closes a retired session with no users left. Called
 * with rdma_mu held. */
static void sess_unref(s3r_client_t *c, s3c_sess_t *s)
{
    s->users--;
    if (!s->dead || s->users > 0)
        return;
    for (s3c_sess_t **pp = &c->dead; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    sess_close(s);
}

/* With no rdma_endpoint configured, asks each HTTP endpoint once where its
 * session port is: the x-s3rdma-rdma-endpoint header of a signed
 * GET /_s3rdma/stats (docs/protocol.md §1). An endpoint that does not say
 * (an older server, an error) keeps the guess, its host with port 9100.
 * Gateways learned since the last call (x-s3rdma-peers, which these very
 * requests may bring) get their guess and are asked too. rdma_mu held. */
static void ask_rdma_endpoints(s3r_client_t *c)
{
    if (!c->set.rdma_derived)
        return;
    for (size_t i = c->rdma_asked; i < s3c_http_count(c); i = ++c->rdma_asked) {
        if (i >= c->set.n_rdma) {
            if (s3c_endpoint_derive_rdma(&c->set.http[i], &c->set.rdma[i]) < 0)
                break;
            c->set.n_rdma = i + 1;
        }
        s3c_req_t req;
        s3c_resp_t resp;
        s3c_req_init(&req, "GET", "_s3rdma", "stats");
        req.ep_idx = (int)i;
        s3c_resp_init(&resp);
        char hp[300];
        s3c_endpoint_t ep;
        if (s3c_http_do(c, &req, &resp) == S3R_OK && resp.status == 200 &&
            s3c_resp_header(&resp, RDMA_ENDPOINT_HEADER, hp, sizeof(hp)) == 0 &&
            s3c_endpoint_parse_hostport(hp, S3C_DEFAULT_RDMA_PORT, &ep) == 0) {
            s3c_endpoint_free(&c->set.rdma[i]);
            c->set.rdma[i] = ep;
        }
        s3c_resp_free(&resp);
    }
}

/* Opens a session on the first RDMA endpoint that answers. rdma_mu held. */
static s3r_status_t sess_open(s3r_client_t *c)
{
    char err[256] = "", ak[S3C_KEY_MAX + 1], sk[S3C_KEY_MAX + 1];
    ask_rdma_endpoints(c);
    s3c_keys_copy(c, ak, sk);
    for (size_t i = 0; i < c->set.n_rdma; i++) {
        const s3c_endpoint_t *ep = &c->set.rdma[i];
        rdma_client_config_t rc = {
            .host = ep->host,
            .port = ep->port,
            .access_key = ak,
            .secret_key = sk,
            .timeout_ms = c->set.rdma_timeout_ms,
            .device = c->set.rdma_device,
            .local_ip = c->set.rdma_local_ip,
            .log_level = c->set.rdma_log_level,
            .socket = c->set.rdma_socket && strcmp(c->set.rdma_socket, "off") == 0
                          ? ""
                          : c->set.rdma_socket,
        };
        rdma_session_t *rs = NULL;
        char e[200] = "";
        if (rdma_session_open(&rc, &rs, e, sizeof(e)) == 0) {
            s3c_sess_t *s = calloc(1, sizeof(*s));
            if (s == NULL) {
                rdma_session_close(rs);
                snprintf(c->sess_err, sizeof(c->sess_err), "out of memory");
                return S3R_ERR_NOMEM;
            }
            s->rs = rs;
            s->ep_idx = (int)(s3c_http_count(c) > i ? i : 0);
            c->sess = s;
            atomic_fetch_add(&c->n_sessions, 1);
            return S3R_OK;
        }
        snprintf(err, sizeof(err), "RDMA session to %s: %s", ep->hostport,
                 e[0] ? e : "setup failed");
    }
    snprintf(c->sess_err, sizeof(c->sess_err), "%s", err[0] ? err : "no RDMA endpoint");
    c->sess_fail_ms = (int64_t)clock_mono_ms();
    return S3R_ERR_RDMA_UNAVAILABLE;
}

/* The current live session, opening one if allowed. rdma_mu held. */
static s3r_status_t sess_current(s3r_client_t *c)
{
    if (c->set.anonymous) {
        snprintf(c->sess_err, sizeof(c->sess_err),
                 "an anonymous client has no RDMA session: the server opens them for access "
                 "keys only");
        return S3R_ERR_RDMA_UNAVAILABLE;
    }
    if (c->sess != NULL && !rdma_session_alive(c->sess->rs))
        sess_retire(c);
    if (c->sess != NULL)
        return S3R_OK;
    if (c->sess_fail_ms != 0 && (int64_t)clock_mono_ms() - c->sess_fail_ms < S3C_SESS_RETRY_MS)
        return S3R_ERR_RDMA_UNAVAILABLE;
    return sess_open(c);
}

s3r_status_t s3c_sess_get(s3r_client_t *c, s3c_sess_t **sess_p)
{
    pthread_mutex_lock(&c->rdma_mu);
    s3r_status_t st = sess_current(c);
    if (st == S3R_OK) {
        c->sess->users++;
        *sess_p = c->sess;
        pthread_mutex_unlock(&c->rdma_mu);
        return S3R_OK;
    }
    char why[256];
    snprintf(why, sizeof(why), "%s", c->sess_err);
    pthread_mutex_unlock(&c->rdma_mu);
    return s3c_fail(c, st, S3R_TRANSPORT_TOKEN, 0, "", "%s", why[0] ? why : "RDMA unavailable");
}

void s3c_sess_put(s3r_client_t *c, s3c_sess_t *sess, bool failed)
{
    if (sess == NULL)
        return;
    pthread_mutex_lock(&c->rdma_mu);
    if (failed && sess == c->sess && !rdma_session_alive(sess->rs))
        sess_retire(c);
    sess_unref(c, sess);
    pthread_mutex_unlock(&c->rdma_mu);
}

int s3r_client_rdma_connected(s3r_client_t *c)
{
    if (c == NULL)
        return 0;
    pthread_mutex_lock(&c->rdma_mu);
    int up = c->sess != NULL && rdma_session_alive(c->sess->rs);
    pthread_mutex_unlock(&c->rdma_mu);
    return up;
}

s3r_status_t s3r_client_rdma_connect(s3r_client_t *c)
{
    if (c == NULL)
        return S3R_ERR_INVALID_ARG;
    s3c_sess_t *s;
    pthread_mutex_lock(&c->rdma_mu);
    c->sess_fail_ms = 0; /* an explicit connect always tries */
    pthread_mutex_unlock(&c->rdma_mu);
    s3r_status_t st = s3c_sess_get(c, &s);
    if (st == S3R_OK)
        s3c_sess_put(c, s, false);
    return st;
}

s3r_status_t s3r_client_rdma_info(s3r_client_t *c, s3r_rdma_info_t *info_p)
{
    if (info_p == NULL)
        return S3R_ERR_INVALID_ARG;
    s3r_rdma_info_t info = {0};
    snprintf(info.ucx_version, sizeof info.ucx_version, "%s", rdma_ucx_version());
    if (c != NULL) {
        pthread_mutex_lock(&c->rdma_mu);
        if (c->sess != NULL && rdma_session_alive(c->sess->rs)) {
            snprintf(info.transports, sizeof info.transports, "%s",
                     rdma_session_lanes(c->sess->rs));
            info.tcp_only = rdma_session_tcp_only(c->sess->rs);
        }
        pthread_mutex_unlock(&c->rdma_mu);
    }
    *info_p = info;
    return S3R_OK;
}

/* ---- Regions ------------------------------------------------------------------ */

/* Evicts least recently used idle cached regions until under the bound.
 * rdma_mu held. */
static void lru_trim(s3c_sess_t *s, unsigned keep)
{
    while (s->n_cached > keep) {
        s3c_region_t **victim = NULL;
        for (s3c_region_t **pp = &s->regions; *pp; pp = &(*pp)->next) {
            s3c_region_t *r = *pp;
            if (r->alloc || r->refs > 0)
                continue;
            if (victim == NULL || r->stamp < (*victim)->stamp)
                victim = pp;
        }
        if (victim == NULL)
            return; /* everything is in use: stay over the bound for now */
        s3c_region_t *r = *victim;
        *victim = r->next;
        rdma_region_remove(s->rs, r->r);
        s->n_cached--;
        free(r);
    }
}

s3r_status_t s3c_region_for(s3r_client_t *c, s3c_sess_t *s, const void *addr, uint64_t len,
                            s3c_region_t **reg_p)
{
    const char *a = addr;
    s3c_region_t *hit = NULL;
    char err[200] = "";
    s3r_status_t st = S3R_OK;

    pthread_mutex_lock(&c->rdma_mu);
    for (s3c_region_t *r = s->regions; r; r = r->next) {
        if (a >= r->addr && len <= r->len && (size_t)(a - r->addr) <= r->len - len) {
            hit = r;
            break;
        }
    }
    if (hit == NULL) {
        /* Register the caller's buffer; the registration call talks to the
         * server, done under the lock so two threads never register the same
         * buffer twice. */
        lru_trim(s, c->set.max_cached_regions > 0 ? c->set.max_cached_regions - 1 : 0);
        hit = calloc(1, sizeof(*hit));
        if (hit == NULL) {
            st = S3R_ERR_NOMEM;
        } else if (rdma_region_add(s->rs, (void *)addr, len ? (size_t)len : 1, &hit->r, err,
                                   sizeof(err)) != 0) {
            free(hit);
            hit = NULL;
            st = S3R_ERR_RDMA_UNAVAILABLE;
        } else {
            hit->addr = (char *)addr;
            hit->len = len ? (size_t)len : 1;
            hit->next = s->regions;
            s->regions = hit;
            s->n_cached++;
            atomic_fetch_add(&c->n_regions, 1);
        }
    }
    if (hit != NULL) {
        hit->refs++;
        hit->stamp = ++c->lru_clock;
    }
    pthread_mutex_unlock(&c->rdma_mu);
    if (st != S3R_OK)
        return s3c_fail(c, st, S3R_TRANSPORT_TOKEN, 0, "", "registering %llu bytes: %s",
                        (unsigned long long)len, err[0] ? err : "out of memory");
    *reg_p = hit;
    return S3R_OK;
}

s3r_status_t s3c_token_for(s3r_client_t *c, s3c_sess_t *s, const void *addr, uint64_t len,
                           char *token, size_t token_len, s3c_region_t **reg_p)
{
    s3c_region_t *reg;
    s3r_status_t st = s3c_region_for(c, s, addr, len, &reg);
    if (st != S3R_OK)
        return st;
    if (rdma_token_format(s->rs, reg->r, addr, len, token, token_len) != 0) {
        s3c_region_put(c, reg);
        return s3c_fail(c, S3R_ERR_RDMA_UNAVAILABLE, S3R_TRANSPORT_TOKEN, 0, "",
                        "cannot format the RDMA token");
    }
    *reg_p = reg;
    return S3R_OK;
}

s3r_status_t s3c_region_ref(s3r_client_t *c, s3c_region_t *reg, const void *addr, uint64_t len,
                            rdma_native_ref_t *ref)
{
    if (rdma_region_ref(reg->r, addr, len, ref) != 0)
        return s3c_fail(c, S3R_ERR_INVALID_ARG, S3R_TRANSPORT_NATIVE, 0, "",
                        "buffer outside its registration");
    return S3R_OK;
}

int s3c_native_ready(s3r_client_t *c)
{
    pthread_mutex_lock(&c->rdma_mu);
    int r = sess_current(c) != S3R_OK            ? S3C_SESS_NONE
            : rdma_session_tcp_only(c->sess->rs) ? S3C_SESS_TCP_ONLY
                                                 : S3C_SESS_FAST;
    pthread_mutex_unlock(&c->rdma_mu);
    return r;
}

rdma_session_t *s3c_sess_rdma(const s3c_sess_t *sess)
{
    return sess->rs;
}

void s3c_region_put(s3r_client_t *c, s3c_region_t *reg)
{
    if (reg == NULL)
        return;
    pthread_mutex_lock(&c->rdma_mu);
    reg->refs--;
    pthread_mutex_unlock(&c->rdma_mu);
}

/* Removes the idle cached registrations of s overlapping [addr, addr+len).
 * rdma_mu held. */
static void forget_in(s3c_sess_t *s, const char *addr, size_t len)
{
    for (s3c_region_t **pp = &s->regions; *pp;) {
        s3c_region_t *r = *pp;
        if (!r->alloc && r->refs == 0 && addr < r->addr + r->len && r->addr < addr + len) {
            *pp = r->next;
            rdma_region_remove(s->rs, r->r);
            s->n_cached--;
            free(r);
        } else {
            pp = &r->next;
        }
    }
}

void s3r_buf_unregister_range(s3r_client_t *c, const void *buf, size_t len)
{
    if (c == NULL || buf == NULL || len == 0)
        return;
    pthread_mutex_lock(&c->rdma_mu);
    if (c->sess != NULL)
        forget_in(c->sess, buf, len);
    for (s3c_sess_t *s = c->dead; s; s = s->next)
        forget_in(s, buf, len);
    pthread_mutex_unlock(&c->rdma_mu);
}

void s3r_buf_unregister(s3r_client_t *c, const void *buf)
{
    s3r_buf_unregister_range(c, buf, 1);
}

/* ---- s3r_buf_alloc ------------------------------------------------------------- */

s3r_status_t s3r_buf_alloc(s3r_client_t *c, size_t len, void **buf_p)
{
    if (c == NULL || buf_p == NULL || len == 0)
        return S3R_ERR_INVALID_ARG;
    s3c_alloc_t *al = calloc(1, sizeof(*al));
    if (al == NULL)
        return s3c_fail(c, S3R_ERR_NOMEM, S3R_TRANSPORT_TOKEN, 0, "", "out of memory");
    al->len = len;
    s3r_status_t st = S3R_ERR_RDMA_UNAVAILABLE;
    char err[256] = "";
    pthread_mutex_lock(&c->rdma_mu);
    if (c->set.use_rdma)
        st = sess_current(c);
    else
        snprintf(err, sizeof(err), "RDMA is disabled");
    if (st == S3R_OK) {
        s3c_sess_t *s = c->sess;
        s3c_region_t *reg = calloc(1, sizeof(*reg));
        void *mem = NULL;
        if (reg == NULL) {
            st = S3R_ERR_NOMEM;
        } else if (rdma_region_alloc(s->rs, len, &mem, &reg->r, err, sizeof(err)) != 0) {
            free(reg);
            st = S3R_ERR_RDMA_UNAVAILABLE;
        } else {
            reg->addr = mem;
            reg->len = len;
            reg->alloc = true;
            reg->next = s->regions;
            s->regions = reg;
            s->users++;
            al->addr = mem;
            al->sess = s;
            al->reg = reg;
            atomic_fetch_add(&c->n_regions, 1);
        }
    } else if (err[0] == '\0') {
        snprintf(err, sizeof(err), "%s", c->sess_err);
    }
    if (st != S3R_OK && (c->set.rdma_fallback || !c->set.use_rdma)) {
        /* Usable with every call, only not zero-copy. */
        al->addr = malloc(len);
        st = al->addr ? S3R_OK : S3R_ERR_NOMEM;
    }
    if (st == S3R_OK) {
        al->next = c->allocs;
        c->allocs = al;
    }
    pthread_mutex_unlock(&c->rdma_mu);
    if (st != S3R_OK) {
        free(al);
        return s3c_fail(c, st, S3R_TRANSPORT_TOKEN, 0, "", "s3r_buf_alloc(%zu): %s", len,
                        err[0] ? err : "out of memory");
    }
    *buf_p = al->addr;
    return S3R_OK;
}

/* Frees the s3r_buf_alloc buffer at buf, if it is one. rdma_mu held. */
static void buf_free_locked(s3r_client_t *c, void *buf)
{
    size_t len = 0;
    for (s3c_alloc_t **pp = &c->allocs; *pp; pp = &(*pp)->next) {
        s3c_alloc_t *al = *pp;
        if (al->addr != buf)
            continue;
        *pp = al->next;
        len = al->len;
        if (al->sess == NULL) {
            free(al->addr);
        } else {
            s3c_sess_t *s = al->sess;
            for (s3c_region_t **rp = &s->regions; *rp; rp = &(*rp)->next) {
                if (*rp == al->reg) {
                    *rp = al->reg->next;
                    break;
                }
            }
            rdma_region_remove(s->rs, al->reg->r);
            free(al->reg);
            sess_unref(c, s);
        }
        free(al);
        break;
    }
    /* A newer session may have registered the memory (or pieces of it) as
     * a caller buffer. */
    if (c->sess != NULL)
        forget_in(c->sess, buf, len > 0 ? len : 1);
}

void s3r_buf_free(s3r_client_t *c, void *buf)
{
    if (c == NULL || buf == NULL)
        return;
    pthread_mutex_lock(&c->rdma_mu);
    buf_free_locked(c, buf);
    pthread_mutex_unlock(&c->rdma_mu);
}

/* A scratch buffer kept for reuse (s3r_buf_alloc memory). */
struct s3c_scratch {
    void *p;
    uint64_t len;
    struct s3c_scratch *next;
};

void *s3c_scratch_get(s3r_client_t *c, uint64_t min, uint64_t *len_p)
{
    pthread_mutex_lock(&c->rdma_mu);
    for (struct s3c_scratch **pp = &c->scratch; *pp; pp = &(*pp)->next) {
        struct s3c_scratch *sc = *pp;
        if (sc->len >= min) {
            *pp = sc->next;
            c->n_scratch--;
            c->scratch_bytes -= sc->len;
            pthread_mutex_unlock(&c->rdma_mu);
            void *p = sc->p;
            *len_p = sc->len;
            free(sc);
            return p;
        }
    }
    pthread_mutex_unlock(&c->rdma_mu);
    uint64_t len = min > S3C_SCRATCH_BYTES ? min : S3C_SCRATCH_BYTES;
    /* Registered with the session when it allocates (plain memory after a
     * fallback is registered on use, like any caller buffer). */
    void *p = NULL;
    if (s3r_buf_alloc(c, (size_t)len, &p) != S3R_OK)
        return NULL;
    *len_p = len;
    return p;
}

void s3c_scratch_put(s3r_client_t *c, void *p, uint64_t len)
{
    if (p == NULL)
        return;
    struct s3c_scratch *sc = calloc(1, sizeof(*sc));
    pthread_mutex_lock(&c->rdma_mu);
    if (sc && c->n_scratch < S3C_SCRATCH_KEEP && c->scratch_bytes + len <= S3C_SCRATCH_KEEP_BYTES) {
        *sc = (struct s3c_scratch){p, len, c->scratch};
        c->scratch = sc;
        c->n_scratch++;
        c->scratch_bytes += len;
        sc = NULL;
        p = NULL;
    }
    pthread_mutex_unlock(&c->rdma_mu);
    free(sc);
    s3r_buf_free(c, p);
}

/* Whether [buf, buf+len) lies in s3r_buf_alloc memory of s. rdma_mu held. */
static bool in_alloc_region(const s3c_sess_t *s, const char *buf, uint64_t len)
{
    for (const s3c_region_t *r = s->regions; r; r = r->next) {
        if (r->alloc && buf >= r->addr && len <= r->len && (size_t)(buf - r->addr) <= r->len - len)
            return true;
    }
    return false;
}

/* The session of the s3r_buf_alloc buffer at p (NULL for a plain malloc
 * after a fallback, or no such buffer). rdma_mu held. */
static s3c_sess_t *alloc_sess(const s3r_client_t *c, const void *p)
{
    for (const s3c_alloc_t *al = c->allocs; al; al = al->next) {
        if (al->addr == p)
            return al->sess;
    }
    return NULL;
}

bool s3c_sess_reaches(s3r_client_t *c, s3c_sess_t *s, const void *buf, uint64_t len)
{
    if (!rdma_session_shm_only(s->rs))
        return true;
    pthread_mutex_lock(&c->rdma_mu);
    bool in = in_alloc_region(s, buf, len);
    pthread_mutex_unlock(&c->rdma_mu);
    return in;
}

void *s3c_bounce_get(s3r_client_t *c, s3c_sess_t *s, const void *buf, uint64_t len, uint64_t *len_p)
{
    if (len == 0 || len > S3C_BOUNCE_MAX || !rdma_session_shm_only(s->rs))
        return NULL;
    pthread_mutex_lock(&c->rdma_mu);
    void *p = NULL, *stale = NULL;
    uint64_t have = 0;
    bool wanted = !in_alloc_region(s, buf, len);
    if (wanted && c->bounce) {
        /* Taken, or dropped when too small or of an older session. */
        if (c->bounce_len >= len && alloc_sess(c, c->bounce) == s) {
            p = c->bounce;
            have = c->bounce_len;
        } else {
            stale = c->bounce;
        }
        c->bounce = NULL;
    } else if (wanted && c->bounce_len > 0) {
        wanted = false; /* another call holds the one bounce buffer */
    }
    if (wanted && !p)
        c->bounce_len = UINT64_MAX; /* in use from here on (s3c_bounce_put) */
    pthread_mutex_unlock(&c->rdma_mu);
    s3r_buf_free(c, stale);
    if (!wanted)
        return NULL;
    if (!p) {
        /* Sized in powers of two from 1 MiB, so that growing sizes do not
         * reallocate (and fault in) a new buffer each time. */
        have = 1u << 20;
        while (have < len)
            have <<= 1;
        if (have > S3C_BOUNCE_MAX)
            have = S3C_BOUNCE_MAX;
        bool ours = false;
        if (s3r_buf_alloc(c, (size_t)have, &p) == S3R_OK) {
            pthread_mutex_lock(&c->rdma_mu);
            ours = alloc_sess(c, p) == s; /* not a fallback malloc, nor a newer session's */
            pthread_mutex_unlock(&c->rdma_mu);
        }
        if (!ours) {
            s3r_buf_free(c, p);
            pthread_mutex_lock(&c->rdma_mu);
            c->bounce_len = 0;
            pthread_mutex_unlock(&c->rdma_mu);
            return NULL;
        }
    }
    *len_p = have;
    return p;
}

void s3c_bounce_put(s3r_client_t *c, void *p, uint64_t len, bool reuse)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&c->rdma_mu);
    if (reuse) {
        c->bounce = p;
        c->bounce_len = len;
        p = NULL;
    } else {
        c->bounce_len = 0;
    }
    pthread_mutex_unlock(&c->rdma_mu);
    s3r_buf_free(c, p);
}

void s3c_rdma_after_fork(s3r_client_t *c)
{
    /* Scratch buffers are the parent's session memory, mapped shared with
     * the parent: reusing one here would write where the parent reads. */
    while (c->scratch != NULL) {
        struct s3c_scratch *sc = c->scratch;
        c->scratch = sc->next;
        buf_free_locked(c, sc->p);
        free(sc);
    }
    c->n_scratch = 0;
    c->scratch_bytes = 0;
    if (c->bounce)
        buf_free_locked(c, c->bounce);
    c->bounce = NULL;
    c->bounce_len = 0;
    /* Retired, the parent's sessions are closed (forgotten, rdma_client.h)
     * when their last user goes: requests in flight at the fork, and the
     * caller's s3r_buf_alloc buffers, which stay usable as plain memory.
     * Their sockets' copies here close now: the server must see the
     * parent's lifeline close when the parent closes it. */
    if (c->sess != NULL)
        rdma_session_disown(c->sess->rs);
    for (s3c_sess_t *s = c->dead; s != NULL; s = s->next)
        rdma_session_disown(s->rs);
    sess_retire(c);
    c->sess_fail_ms = 0;
}

void s3c_rdma_cleanup(s3r_client_t *c)
{
    s3r_buf_free(c, c->bounce);
    c->bounce = NULL;
    while (c->scratch != NULL) {
        struct s3c_scratch *sc = c->scratch;
        c->scratch = sc->next;
        s3r_buf_free(c, sc->p);
        free(sc);
    }
    /* Buffers the caller forgot to free go with the sessions. */
    while (c->allocs != NULL) {
        s3c_alloc_t *al = c->allocs;
        c->allocs = al->next;
        if (al->sess == NULL)
            free(al->addr);
        free(al);
    }
    if (c->sess != NULL) {
        sess_close(c->sess);
        c->sess = NULL;
    }
    while (c->dead != NULL) {
        s3c_sess_t *s = c->dead;
        c->dead = s->next;
        sess_close(s);
    }
}

s3r_status_t s3r_rdma_token(s3r_client_t *c, const void *buf, uint64_t len, char *out,
                            size_t out_len)
{
    if (c == NULL || buf == NULL || len == 0 || out == NULL || out_len == 0)
        return S3R_ERR_INVALID_ARG;
    s3c_sess_t *s;
    s3c_region_t *reg;
    s3r_status_t st = s3c_sess_get(c, &s);
    if (st != S3R_OK)
        return st;
    st = s3c_token_for(c, s, buf, len, out, out_len, &reg);
    if (st == S3R_OK)
        s3c_region_put(c, reg);
    s3c_sess_put(c, s, false);
    return st;
}
