/* stor_strerror: a storage status in words, for logs and messages. */
#include "storage/storage.h"

const char *stor_strerror(stor_status_t st)
{
    switch (st) {
    case STOR_OK:
        return "ok";
    case STOR_ERR_NO_BUCKET:
        return "no such bucket";
    case STOR_ERR_NO_KEY:
        return "no such key";
    case STOR_ERR_BUCKET_EXISTS:
        return "bucket already exists";
    case STOR_ERR_BUCKET_NOT_EMPTY:
        return "bucket not empty";
    case STOR_ERR_NO_UPLOAD:
        return "no such upload";
    case STOR_ERR_INVALID_PART:
        return "invalid part";
    case STOR_ERR_INVALID_PART_ORDER:
        return "invalid part order";
    case STOR_ERR_PART_TOO_SMALL:
        return "part too small";
    case STOR_ERR_TOO_LARGE:
        return "metadata too large";
    case STOR_ERR_NO_VERSION:
        return "no such version";
    case STOR_ERR_DELETE_MARKER:
        return "the version is a delete marker";
    case STOR_ERR_UNSUPPORTED:
        return "not supported by this backend";
    case STOR_ERR_LOCKED:
        return "the version is protected (object lock)";
    case STOR_ERR_PRECONDITION:
        return "precondition failed";
    case STOR_ERR_BAD_DIGEST:
        return "checksum mismatch";
    case STOR_ERR_UNAVAILABLE:
        return "storage cluster unavailable";
    case STOR_ERR_NOMEM:
        return "out of memory";
    case STOR_ERR_IO:
        return "I/O error";
    }
    return "unknown storage error";
}
