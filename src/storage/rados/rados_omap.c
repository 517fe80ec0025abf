/* The RADOS backend's omap reads and writes: the one read of a range (also
 * in two halves) or of named keys (rs_omap_read, rs_omap_read_keys,
 * rs_omap_read_vals), one value by key (rs_omap_get, and in two halves), the
 * compare-and-set, and the walk of a whole omap (rs_omap_each). Below the
 * backend's other files: it calls only librados. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/rados/rados_internal.h"

/* The end of op (one omap read into *it_p, its own status in *prval)
 * whose run returned rc: 0, or the first failure of the two (ending
 * *it_p). */
static int omap_done(int rc, const int *prval, rados_omap_iter_t *it_p)
{
    if (rc == 0)
        rc = *prval;
    if (rc < 0) {
        if (*it_p)
            rados_omap_get_end(*it_p);
        *it_p = NULL;
    }
    return rc;
}

/* Runs op on oid, and releases it; as omap_done returns. */
static int omap_operate(rados_read_op_t op, rados_ioctx_t io, const char *oid, const int *prval,
                        rados_omap_iter_t *it_p)
{
    int rc = rados_read_op_operate(op, io, oid, 0);
    rados_release_read_op(op);
    return omap_done(rc, prval, it_p);
}

/* Sends op (one omap read) to oid without waiting: 0 with *c_p set (then
 * omap_wait must be called), or a librados code with op released. */
static int omap_send(rados_read_op_t op, rados_ioctx_t io, const char *oid, rados_completion_t *c_p)
{
    int rc = rados_aio_create_completion2(NULL, NULL, c_p);
    if (rc == 0 && (rc = rados_aio_read_op_operate(op, io, *c_p, oid, 0)) < 0)
        rados_aio_release(*c_p);
    if (rc < 0)
        rados_release_read_op(op);
    return rc;
}

/* Waits for the op omap_send sent, and releases both; as omap_done
 * returns. */
static int omap_wait(rados_read_op_t op, rados_completion_t c, const int *prval,
                     rados_omap_iter_t *it_p)
{
    rados_aio_wait_for_complete(c);
    int rc = rados_aio_get_return_value(c);
    rados_aio_release(c);
    rados_release_read_op(op);
    return omap_done(rc, prval, it_p);
}

int rs_omap_read_start(rados_ioctx_t io, const char *oid, const char *after, const char *prefix,
                       size_t max, rs_omap_read_t *r)
{
    memset(r, 0, sizeof *r);
    if (!(r->op = rados_create_read_op()))
        return -ENOMEM;
    rados_read_op_omap_get_vals2(r->op, after, prefix, max, &r->it, &r->more, &r->prval);
    int rc = omap_send(r->op, io, oid, &r->c);
    if (rc < 0)
        r->op = NULL;
    return rc;
}

int rs_omap_read_finish(rs_omap_read_t *r, rados_omap_iter_t *it_p, unsigned char *more_p)
{
    int rc = omap_wait(r->op, r->c, &r->prval, &r->it);
    *it_p = r->it;
    if (more_p)
        *more_p = rc == 0 && r->more;
    return rc;
}

int rs_omap_read(rados_ioctx_t io, const char *oid, const char *after, const char *prefix,
                 size_t max, rados_omap_iter_t *it_p, unsigned char *more_p)
{
    rs_omap_read_t r;
    int rc = rs_omap_read_start(io, oid, after, prefix, max, &r);
    if (rc == 0)
        return rs_omap_read_finish(&r, it_p, more_p);
    *it_p = NULL;
    if (more_p)
        *more_p = 0;
    return rc;
}

int rs_omap_read_keys(rados_ioctx_t io, const char *oid, size_t max, rados_omap_iter_t *it_p)
{
    *it_p = NULL;
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return -ENOMEM;
    unsigned char more = 0;
    int prval = 0;
    rados_read_op_omap_get_keys2(op, "", max, it_p, &more, &prval);
    return omap_operate(op, io, oid, &prval, it_p);
}

int rs_omap_read_vals(rados_ioctx_t io, const char *oid, const char *const *keys, size_t n,
                      const size_t *klens, rados_omap_iter_t *it_p)
{
    *it_p = NULL;
    rados_read_op_t op = rados_create_read_op();
    if (!op)
        return -ENOMEM;
    int prval = 0;
    rados_read_op_omap_get_vals_by_keys2(op, keys, n, klens, it_p, &prval);
    return omap_operate(op, io, oid, &prval, it_p);
}

int rs_omap_get_start(rados_ioctx_t io, const char *oid, const char *key, size_t klen,
                      rs_omap_get_t *g)
{
    memset(g, 0, sizeof *g);
    if (!(g->op = rados_create_read_op()))
        return -ENOMEM;
    const char *keys[1] = {key};
    rados_read_op_omap_get_vals_by_keys2(g->op, keys, 1, &klen, &g->it, &g->prval);
    int rc = omap_send(g->op, io, oid, &g->c);
    if (rc < 0)
        g->op = NULL;
    return rc;
}

int rs_omap_get_peek(rs_omap_get_t *g, const buf_t **val_p)
{
    if (!g->peeked) {
        g->peek_rc = rs_omap_get_finish(g, &g->peek_val);
        g->peeked = 1;
    }
    *val_p = &g->peek_val;
    return g->peek_rc;
}

int rs_omap_get_finish(rs_omap_get_t *g, buf_t *val)
{
    if (g->peeked) {
        *val = g->peek_val;
        g->peeked = 0;
        return g->peek_rc;
    }
    buf_init(val, STOR_REC_MAX + 1);
    int rc = omap_wait(g->op, g->c, &g->prval, &g->it);
    if (rc < 0)
        return rc;
    char *k, *v;
    size_t kl, vl;
    int found = 0;
    if (rados_omap_get_next2(g->it, &k, &v, &kl, &vl) == 0 && k) {
        found = 1;
        if (buf_append(val, v, vl) != 0)
            found = -ENOMEM;
    }
    rados_omap_get_end(g->it);
    return found;
}

int rs_omap_get(rados_ioctx_t io, const char *oid, const char *key, size_t klen, buf_t *val)
{
    rs_omap_get_t g;
    int rc = rs_omap_get_start(io, oid, key, klen, &g);
    if (rc < 0) {
        buf_init(val, 1);
        return rc;
    }
    return rs_omap_get_finish(&g, val);
}

int rs_omap_cas(rados_ioctx_t io, const char *oid, const char *key, size_t klen,
                const buf_t *expect, const buf_t *val, unsigned flags)
{
    rados_write_op_t op = rados_create_write_op();
    if (!op)
        return -ENOMEM;
    int cmp_key = 0;
    const char *keys[1] = {key};
    if (flags & RS_CAS_CREATE)
        rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
    else
        rados_write_op_assert_exists(op);
    rados_write_op_omap_cmp2(op, key, LIBRADOS_CMPXATTR_OP_EQ, expect ? expect->data : "", klen,
                             expect ? expect->len : 0, &cmp_key);
    if (val) {
        const char *vals[1] = {val->data};
        rados_write_op_omap_set2(op, keys, vals, &klen, &val->len, 1);
    } else {
        rados_write_op_omap_rm_keys2(op, keys, &klen, 1);
    }
    int rc = rados_write_op_operate(op, io, oid, NULL, 0);
    rados_release_write_op(op);
    return rc;
}

int rs_omap_each(rados_ioctx_t io, const char *oid, const char *after, rs_omap_fn fn, void *arg)
{
    size_t n = strlen(after);
    char *from = malloc(n + 1);
    unsigned char more = 1;
    int rc = 0;
    if (from)
        memcpy(from, after, n + 1);
    while (more && rc == 0 && from) {
        rados_omap_iter_t it;
        if ((rc = rs_omap_read(io, oid, from, "", RSTOR_OMAP_BATCH, &it, &more)) < 0)
            break;
        char *k, *v;
        size_t kl, vl;
        while (rc == 0 && rados_omap_get_next2(it, &k, &v, &kl, &vl) == 0 && k) {
            rc = fn(arg, k, kl, v, vl);
            char *nf = realloc(from, kl + 1);
            if (!nf) {
                rc = -ENOMEM;
                break;
            }
            from = nf;
            memcpy(from, k, kl);
            from[kl] = '\0';
        }
        rados_omap_get_end(it);
    }
    if (!from)
        return -ENOMEM;
    free(from);
    return rc;
}
