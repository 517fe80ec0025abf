/* Leases on RADOS (stor_lease): one gateway of many runs a job. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/time.h>

#include "storage/rados/rados_internal.h"

/* The lease's object and this holder's cookie; -1 if name is too long. */
static int lease_names(rstor_t *st, const char *name, char oid[RSTOR_OID_MAX], char cookie[32])
{
    if (snprintf(oid, RSTOR_OID_MAX, "s3rdma.lease.%s", name) >= RSTOR_OID_MAX)
        return -1;
    /* Unique per connection to the cluster: a restarted gateway is another
     * holder, and waits for its old self's lease to lapse. */
    snprintf(cookie, 32, "%" PRIu64, rados_get_instance_id(st->cluster));
    return 0;
}

void rs_lease_release(rstor_t *st, const char *name)
{
    char oid[RSTOR_OID_MAX], cookie[32];
    if (lease_names(st, name, oid, cookie) == 0)
        rados_unlock(st->index, oid, "lease", cookie);
}

stor_status_t rs_lease(stor_t *st_, const char *name, uint32_t ttl_ms)
{
    rstor_t *st = (rstor_t *)st_;
    char oid[RSTOR_OID_MAX], cookie[32];
    if (lease_names(st, name, oid, cookie) != 0)
        return STOR_ERR_TOO_LARGE;
    struct timeval tv = {ttl_ms / 1000, (suseconds_t)(ttl_ms % 1000) * 1000};
    int rc = rados_lock_exclusive(st->index, oid, "lease", cookie, "s3rdmad", &tv,
                                  LIBRADOS_LOCK_FLAG_MAY_RENEW);
    if (rc == 0)
        return STOR_OK;
    if (rc == -EBUSY || rc == -EEXIST)
        return STOR_ERR_PRECONDITION;
    return rs_fail("lease", oid, rc);
}
