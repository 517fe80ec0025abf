/* Helpers every backend shares (stor_record.h): the size-checked object
 * record encoding, the precondition check of conditional writes, the
 * checks and arithmetic of completing a multipart upload, and the key order;
 * and storage.h's frees of what listings return (stor_parts_free,
 * stor_uploads_free). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/checksum.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/s3r_limits.h"
#include "storage/stor_record.h"

stor_status_t stor_encode_object(buf_t *b, const char *key, const stor_meta_t *m,
                                 const stor_seg_t *segs, uint32_t n_segs)
{
    buf_init(b, (size_t)-1 / 2);
    if (stor_rec_encode_object(b, key, strlen(key), m, segs, n_segs) != 0)
        return STOR_ERR_NOMEM;
    return b->len > STOR_REC_MAX ? STOR_ERR_TOO_LARGE : STOR_OK;
}

stor_status_t stor_encode_put(buf_t *b, const char *key, stor_meta_t *meta,
                              const uint8_t id[STOR_ID_LEN], uint64_t size)
{
    meta->size = size;
    meta->mtime_ms = clock_wall_ms();
    stor_meta_t m = *meta;
    m.parts_count = 0;
    m.part_sizes = NULL;
    stor_seg_t seg;
    memcpy(seg.id, id, STOR_ID_LEN);
    seg.size = size;
    return stor_encode_object(b, key, &m, &seg, 1);
}

stor_status_t stor_encode_put_inline(buf_t *b, const char *key, stor_meta_t *meta, const void *body,
                                     uint64_t size)
{
    meta->size = size;
    meta->mtime_ms = clock_wall_ms();
    stor_meta_t m = *meta;
    m.parts_count = 0;
    m.part_sizes = NULL;
    buf_init(b, (size_t)-1 / 2);
    if (stor_rec_encode_object_inline(b, key, strlen(key), &m, body) != 0)
        return STOR_ERR_NOMEM;
    return b->len > STOR_REC_MAX ? STOR_ERR_TOO_LARGE : STOR_OK;
}

stor_status_t stor_encode_object_rec(buf_t *b, const char *key, const stor_obj_rec_t *rec)
{
    if (!rec->body)
        return stor_encode_object(b, key, &rec->meta, rec->segs, rec->n_segs);
    buf_init(b, (size_t)-1 / 2);
    if (stor_rec_encode_object_inline(b, key, strlen(key), &rec->meta, rec->body) != 0)
        return STOR_ERR_NOMEM;
    return b->len > STOR_REC_MAX ? STOR_ERR_TOO_LARGE : STOR_OK;
}

stor_status_t stor_meta_apply_change(stor_meta_t *m, const stor_obj_change_t *change)
{
    if (change->guard) {
        stor_status_t s = change->guard(m, change->guard_arg);
        if (s != STOR_OK)
            return s;
    }
    /* Every copy first, so that a failure leaves m as it was. */
    const struct {
        bool set;
        const char *value;
        char **field;
    } strs[] = {
        {change->set_tags, change->tags, &m->tags},
        {change->set_lock_retention, change->lock_retention, &m->lock_retention},
        {change->set_legal_hold, change->legal_hold, &m->legal_hold},
        {change->set_acl, change->grants, &m->grants},
    };
    enum { N = sizeof strs / sizeof strs[0] };
    char *dup[N] = {NULL};
    for (size_t i = 0; i < N; i++) {
        if (strs[i].set && strs[i].value && !(dup[i] = strdup(strs[i].value))) {
            for (size_t j = 0; j < i; j++)
                free(dup[j]);
            return STOR_ERR_NOMEM;
        }
    }
    for (size_t i = 0; i < N; i++) {
        if (strs[i].set) {
            free(*strs[i].field);
            *strs[i].field = dup[i];
        }
    }
    if (change->set_acl)
        m->acl = change->acl;
    return STOR_OK;
}

stor_status_t stor_precond_guard(const stor_precond_t *cond, const stor_meta_t *version)
{
    return cond && cond->guard ? cond->guard(version, cond->guard_arg) : STOR_OK;
}

stor_status_t stor_precond_check(const stor_precond_t *cond, const stor_meta_t *old, int had_old)
{
    if (!cond)
        return STOR_OK;
    if (had_old && old->delete_marker)
        had_old = 0; /* a delete marker on top: the key holds no object */
    if (cond->must_not_exist && had_old)
        return STOR_ERR_PRECONDITION;
    if (cond->must_exist && !had_old)
        return STOR_ERR_NO_KEY;
    if (cond->must_exist && cond->etag && strcmp(cond->etag, old->etag) != 0)
        return STOR_ERR_PRECONDITION;
    if (cond->must_exist && cond->mtime_ms && cond->mtime_ms != old->mtime_ms)
        return STOR_ERR_PRECONDITION;
    return STOR_OK;
}

static int cmp_part_num(const void *key, const void *elem)
{
    uint32_t a = *(const uint32_t *)key, b = ((const stor_part_rec_t *)elem)->part.number;
    return a < b ? -1 : a > b;
}

/* Compares a client's ETag (maybe quoted, any case) to a stored one. */
static int etag_eq(const char *given, const char *stored)
{
    if (!given)
        return 0;
    size_t n = strlen(given);
    if (n >= 2 && given[0] == '"' && given[n - 1] == '"') {
        given++;
        n -= 2;
    }
    return strlen(stored) == n && strncasecmp(given, stored, n) == 0;
}

stor_status_t stor_mpu_check_list(const stor_complete_part_t *parts, size_t n)
{
    if (n == 0 || n > S3R_MAX_PART_NUMBER)
        return STOR_ERR_INVALID_PART;
    for (size_t i = 1; i < n; i++)
        if (parts[i].number <= parts[i - 1].number)
            return STOR_ERR_INVALID_PART_ORDER;
    return STOR_OK;
}

/* The 16 bytes a part's ETag stands for: an MD5's 32 hex digits, or those
 * of an etag: fast part followed by "-1" (s3/body.c), quoted or not. */
static int part_etag_bytes(const char *e, uint8_t out[MD5_LEN])
{
    size_t len = strlen(e);
    if (len >= 2 && e[0] == '"' && e[len - 1] == '"')
        e++, len -= 2;
    if (len == 2 * MD5_LEN + 2 && e[2 * MD5_LEN] == '-' && e[2 * MD5_LEN + 1] == '1')
        len -= 2;
    return len == 2 * MD5_LEN && hash_hex_decode(e, len, out, MD5_LEN) == 0 ? 0 : -1;
}

stor_status_t stor_mpu_etag(const stor_complete_part_t *parts, size_t n, char etag[64])
{
    digest_t *d = hash_digest_md5_new();
    if (!d)
        return STOR_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        uint8_t md5[MD5_LEN];
        if (part_etag_bytes(parts[i].etag ? parts[i].etag : "", md5) != 0) {
            hash_digest_free(d);
            return STOR_ERR_INVALID_PART;
        }
        hash_digest_update(d, md5, MD5_LEN);
    }
    uint8_t sum[MD5_LEN];
    char hex[2 * MD5_LEN + 1];
    hash_digest_final(d, sum);
    hash_hex_encode(sum, MD5_LEN, hex);
    snprintf(etag, 64, "%s-%zu", hex, n);
    return STOR_OK;
}

/* Where a part and an object keep their checksum of alg (checksum.h). */
static char **part_checksum_slot(const stor_part_t *p, checksum_alg_t alg)
{
    stor_part_t *q = (stor_part_t *)p;
    switch (alg) {
    case CHECKSUM_CRC32:
        return &q->checksum_crc32;
    case CHECKSUM_CRC32C:
        return &q->checksum_crc32c;
    case CHECKSUM_CRC64NVME:
        return &q->checksum_crc64nvme;
    case CHECKSUM_SHA1:
        return &q->checksum_sha1;
    default:
        return &q->checksum_sha256;
    }
}

static char **meta_checksum_slot(stor_meta_t *m, checksum_alg_t alg)
{
    switch (alg) {
    case CHECKSUM_CRC32:
        return &m->checksum_crc32;
    case CHECKSUM_CRC32C:
        return &m->checksum_crc32c;
    case CHECKSUM_CRC64NVME:
        return &m->checksum_crc64nvme;
    case CHECKSUM_SHA1:
        return &m->checksum_sha1;
    default:
        return &m->checksum_sha256;
    }
}

/* The object checksum of an upload whose metadata m names an algorithm:
 * each listed part (rs[i], the record of parts[i]) must have its checksum
 * of the algorithm and, when the client lists one, that very one
 * (STOR_ERR_INVALID_PART); the object's (COMPOSITE or FULL_OBJECT, m's
 * type) must be cond's when cond has one (STOR_ERR_BAD_DIGEST). Sets
 * m's checksum of the algorithm and part_checksums. */
static stor_status_t mpu_checksum(const stor_complete_part_t *parts, size_t n,
                                  const stor_part_rec_t *const *rs, stor_meta_t *m,
                                  const stor_precond_t *cond)
{
    checksum_alg_t alg = checksum_alg_from_name(m->checksum_algorithm);
    if (alg == CHECKSUM_NONE)
        return STOR_ERR_IO; /* the S3 layer stores only the names it knows */
    int full = m->checksum_type && strcmp(m->checksum_type, "FULL_OBJECT") == 0;
    const char **cks = calloc(n, sizeof *cks);
    uint64_t *sizes = calloc(n, sizeof *sizes);
    buf_t joined;
    buf_init(&joined, STOR_REC_MAX);
    stor_status_t s = cks && sizes ? STOR_OK : STOR_ERR_NOMEM;
    for (size_t i = 0; i < n && s == STOR_OK; i++) {
        cks[i] = *part_checksum_slot(&rs[i]->part, alg);
        sizes[i] = rs[i]->part.size;
        if (!cks[i] || (parts[i].checksums[alg] && strcmp(parts[i].checksums[alg], cks[i]) != 0))
            s = STOR_ERR_INVALID_PART;
        else if (buf_printf(&joined, "%s%s", i ? "," : "", cks[i]) != 0)
            s = STOR_ERR_TOO_LARGE;
    }
    char value[CHECKSUM_VALUE_MAX];
    if (s == STOR_OK && checksum_of_parts(alg, full, cks, sizes, n, value) != 0)
        s = STOR_ERR_INVALID_PART;
    const char *want = cond ? cond->checksums[alg] : NULL;
    if (s == STOR_OK && want && strcmp(want, value) != 0)
        s = STOR_ERR_BAD_DIGEST;
    char **slot = meta_checksum_slot(m, alg);
    if (s == STOR_OK) {
        free(*slot);
        free(m->part_checksums);
        *slot = strdup(value);
        m->part_checksums = buf_steal(&joined, NULL);
        if (!*slot || !m->part_checksums)
            s = STOR_ERR_NOMEM;
    }
    buf_free(&joined);
    free(cks);
    free(sizes);
    return s;
}

stor_status_t stor_mpu_assemble(const stor_complete_part_t *parts, size_t n,
                                const stor_part_rec_t *recs, size_t n_recs, stor_meta_t *m,
                                const stor_precond_t *cond, stor_seg_t **segs_p, uint8_t *used)
{
    stor_status_t s = stor_mpu_check_list(parts, n);
    if (s != STOR_OK)
        return s;
    stor_seg_t *segs = calloc(n, sizeof *segs);
    const stor_part_rec_t **rs = calloc(n, sizeof *rs);
    free(m->part_sizes);
    m->part_sizes = calloc(n, sizeof *m->part_sizes);
    s = STOR_ERR_NOMEM;
    if (!segs || !rs || !m->part_sizes)
        goto out;
    /* Every listed part must exist with its ETag (InvalidPart) before sizes
     * are judged (EntityTooSmall), as S3 reports them. */
    uint64_t total = 0;
    s = STOR_ERR_INVALID_PART;
    for (size_t i = 0; i < n; i++) {
        const stor_part_rec_t *r =
            n_recs ? bsearch(&parts[i].number, recs, n_recs, sizeof *recs, cmp_part_num) : NULL;
        if (!r || !etag_eq(parts[i].etag, r->part.etag))
            goto out;
        rs[i] = r;
        used[r - recs] = 1;
        memcpy(segs[i].id, r->id, STOR_ID_LEN);
        segs[i].size = r->part.size;
        m->part_sizes[i] = r->part.size;
        total += r->part.size;
    }
    s = STOR_ERR_PART_TOO_SMALL;
    for (size_t i = 0; i + 1 < n; i++)
        if (segs[i].size < S3R_MIN_PART_BYTES)
            goto out;
    /* The listed ETags equal the parts' (checked above), so they give the
     * object's: a part whose stored ETag has neither shape is InvalidPart. */
    if ((s = stor_mpu_etag(parts, n, m->etag)) != STOR_OK)
        goto out;
    if (m->checksum_algorithm && (s = mpu_checksum(parts, n, rs, m, cond)) != STOR_OK)
        goto out;
    m->size = total;
    m->mtime_ms = clock_wall_ms();
    m->parts_count = (uint32_t)n;
    free(m->initiator); /* the upload's, not the object's */
    m->initiator = NULL;
    *segs_p = segs;
    segs = NULL;
out:
    free(segs);
    free(rs);
    return s;
}

int stor_upload_listed(const char *key, const char *upload_id, const char *prefix,
                       const char *key_marker, const char *upload_id_marker)
{
    if (strncmp(key, prefix ? prefix : "", prefix ? strlen(prefix) : 0) != 0)
        return 0;
    if (!key_marker || !*key_marker)
        return 1;
    int c = strcmp(key, key_marker);
    return c > 0 ||
           (c == 0 && upload_id_marker && *upload_id_marker &&
            memcmp(upload_id, upload_id_marker, strnlen(upload_id_marker, STOR_UPLOAD_ID_LEN)) > 0);
}

static int cmp_upload(const void *a, const void *b)
{
    const stor_upload_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : strcmp(x->upload_id, y->upload_id);
}

/* Frees what upload u holds (its key, owner and initiator). */
static void upload_clear(stor_upload_t *u)
{
    free(u->key);
    free(u->owner);
    free(u->initiator);
    u->key = u->owner = u->initiator = NULL;
}

size_t stor_uploads_page(stor_upload_t *arr, size_t n, size_t max, int *more_p)
{
    if (n)
        qsort(arr, n, sizeof *arr, cmp_upload);
    *more_p = n > max;
    if (n > max) {
        for (size_t i = max; i < n; i++)
            upload_clear(&arr[i]);
        n = max;
    }
    return n;
}

void stor_upload_take_principals(stor_upload_t *u, stor_meta_t *m)
{
    u->owner = m->owner;
    u->initiator = m->initiator;
    m->owner = m->initiator = NULL;
}

int stor_keycmp(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c;
    return alen < blen ? -1 : alen > blen ? 1 : 0;
}

void stor_parts_free(stor_part_t *parts, size_t n)
{
    if (!parts)
        return;
    for (size_t i = 0; i < n; i++)
        stor_part_free_fields(&parts[i]);
    free(parts);
}

void stor_uploads_free(stor_upload_t *uploads, size_t n)
{
    if (!uploads)
        return;
    for (size_t i = 0; i < n; i++)
        upload_clear(&uploads[i]);
    free(uploads);
}
