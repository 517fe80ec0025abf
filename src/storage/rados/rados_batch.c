/* The RADOS backend's batches: N requests sent at once, then every one
 * waited for (one round trip whatever N). Below the backend's other files:
 * it calls only librados. */
#include <errno.h>
#include <stdlib.h>

#include "storage/rados/rados_internal.h"

int rs_batch(uint32_t n, rs_batch_send_fn send, void *arg, int *res, uint32_t *stop_p)
{
    uint32_t i = 0;
    for (uint32_t j = 0; j < n; j++)
        res[j] = 0;
    if (stop_p)
        *stop_p = 0;
    rados_completion_t *cs = calloc(n ? n : 1, sizeof *cs);
    if (!cs)
        return -ENOMEM;
    int rc = 0;
    for (; i < n; i++) {
        if ((rc = rados_aio_create_completion2(NULL, NULL, &cs[i])) < 0) {
            cs[i] = NULL;
            break;
        }
        if ((rc = send(arg, i, cs[i])) != 0) {
            rados_aio_release(cs[i]);
            cs[i] = NULL;
        }
        if (rc < 0)
            break;
        rc = 0;
    }
    if (stop_p)
        *stop_p = i;
    for (i = 0; i < n; i++) {
        if (!cs[i])
            continue;
        rados_aio_wait_for_complete(cs[i]);
        res[i] = rados_aio_get_return_value(cs[i]);
        rados_aio_release(cs[i]);
    }
    free(cs);
    return rc;
}
