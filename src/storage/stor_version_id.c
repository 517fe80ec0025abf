/* Version ids as storage.h defines them: the record's version field (16 or
 * STOR_VERSION_ID_LEN hex digits), its sequence, and the id S3 shows ("null"
 * for a version written without one). */
#include <string.h>

#include "storage/stor_record.h"

uint64_t stor_version_seq(const stor_meta_t *m)
{
    uint64_t seq = 0;
    if (!m->version)
        return 0;
    for (int i = 0; i < 16; i++) {
        char c = m->version[i];
        seq = seq << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    return seq;
}

int stor_meta_is_version(const stor_meta_t *m, const char *vid)
{
    int null = !m->version || strlen(m->version) != STOR_VERSION_ID_LEN;
    if (strcmp(vid, "null") == 0)
        return null;
    return !null && strcmp(m->version, vid) == 0;
}

int stor_version_field_valid(const char *v)
{
    size_t n = strlen(v);
    return (n == 16 || n == STOR_VERSION_ID_LEN) && strspn(v, "0123456789abcdef") == n;
}

void stor_version_id(const stor_meta_t *meta, char out[STOR_VERSION_ID_LEN + 1])
{
    if (meta->version && strlen(meta->version) == STOR_VERSION_ID_LEN)
        memcpy(out, meta->version, STOR_VERSION_ID_LEN + 1);
    else
        strcpy(out, "null");
}

int stor_version_id_valid(const char *id)
{
    return strcmp(id, "null") == 0 ||
           (strlen(id) == STOR_VERSION_ID_LEN && stor_version_field_valid(id));
}
