/* Index keys: a bucket's name, a NUL, then the object key (a long key's
 * prefix and a hash of the whole), ordered as keys list; see local_internal.h. */
#include <string.h>

#include "common/hash.h"
#include "storage/local/local_internal.h"

size_t local_ikey_encode(const char *bucket, size_t blen, const char *key, size_t klen,
                         uint8_t *out)
{
    size_t plen = local_ikey_plen(blen);
    memcpy(out, bucket, blen);
    out[blen] = 0;
    uint8_t *p = out + blen + 1;
    if (klen <= plen) {
        memcpy(p, key, klen);
        return blen + 1 + klen;
    }
    uint8_t digest[SHA256_LEN];
    memcpy(p, key, plen);
    p[plen] = 0xFF;
    hash_sha256(key, klen, digest);
    memcpy(p + plen + 1, digest, LOCAL_IKEY_HASH);
    return blen + 1 + plen + 1 + LOCAL_IKEY_HASH;
}

size_t local_ikey_seek(const char *bucket, size_t blen, const char *s, size_t slen, uint8_t *out)
{
    size_t plen = local_ikey_plen(blen);
    if (slen > plen)
        slen = plen;
    memcpy(out, bucket, blen);
    out[blen] = 0;
    if (slen)
        memcpy(out + blen + 1, s, slen);
    return blen + 1 + slen;
}
