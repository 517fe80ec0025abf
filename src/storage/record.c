/* The binary record codec (see stor_record.h for the format), and
 * stor_meta_t's freeing and copying, which walk the same field tables. The
 * local engine's index keys are local/local_ikey.c's; version ids
 * stor_version_id.c's. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "storage/stor_record.h"

/* ==== Encoding =========================================================== */

#define NULL_STR 0xFFFFFFFFu

static int put_u8(buf_t *b, uint8_t v)
{
    return buf_append(b, &v, 1);
}

static int put_u32(buf_t *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    return buf_append(b, x, 4);
}

static int put_u64(buf_t *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    return buf_append(b, x, 8);
}

static int put_bytes(buf_t *b, const void *s, size_t len)
{
    if (len >= NULL_STR)
        return -1;
    if (put_u32(b, (uint32_t)len) != 0)
        return -1;
    return buf_append(b, s, len);
}

static int put_str(buf_t *b, const char *s)
{
    if (!s)
        return put_u32(b, NULL_STR);
    return put_bytes(b, s, strlen(s));
}

/* The version each record type is written with. */
static uint8_t rec_version(uint8_t type)
{
    return type == STOR_REC_BUCKET ? STOR_REC_BUCKET_VERSION
           : type == STOR_REC_PART ? STOR_REC_PART_VERSION
                                   : STOR_REC_VERSION;
}

static int put_header(buf_t *b, uint8_t type)
{
    return put_u8(b, rec_version(type)) | put_u8(b, type);
}

/* The highest version a record of this type may have been written with:
 * object and upload records go up to the extension version. */
static uint8_t rec_max_version(uint8_t type)
{
    return type == STOR_REC_OBJECT || type == STOR_REC_UPLOAD ? STOR_REC_EXT_VERSION
           : type == STOR_REC_BUCKET                          ? STOR_REC_BUCKET_RESHARD_VERSION
                                                              : rec_version(type);
}

/* The optional header/checksum strings of stor_meta_t, in record order: the
 * first N_META_OPT_V1 since version 1, after the user metadata; the rest
 * since version 3, at the end. */
static const size_t meta_opt_off[] = {
    offsetof(stor_meta_t, content_type),        offsetof(stor_meta_t, content_encoding),
    offsetof(stor_meta_t, content_disposition), offsetof(stor_meta_t, content_language),
    offsetof(stor_meta_t, cache_control),       offsetof(stor_meta_t, expires),
    offsetof(stor_meta_t, checksum_crc32),      offsetof(stor_meta_t, checksum_crc32c),
    offsetof(stor_meta_t, checksum_sha256),     offsetof(stor_meta_t, checksum_sha1),
    offsetof(stor_meta_t, checksum_crc64nvme),
};
#define N_META_OPT    (sizeof meta_opt_off / sizeof meta_opt_off[0])
#define N_META_OPT_V1 9

/* The extension fields of stor_meta_t, in increasing id order. */
static const struct {
    stor_mx_t id;
    size_t off;
} meta_ext[] = {
    {STOR_MX_STORAGE_CLASS, offsetof(stor_meta_t, storage_class)},
    {STOR_MX_CHECKSUM_ALGORITHM, offsetof(stor_meta_t, checksum_algorithm)},
    {STOR_MX_CHECKSUM_TYPE, offsetof(stor_meta_t, checksum_type)},
    {STOR_MX_PART_CHECKSUMS, offsetof(stor_meta_t, part_checksums)},
    {STOR_MX_TAGS, offsetof(stor_meta_t, tags)},
    {STOR_MX_SSE, offsetof(stor_meta_t, sse)},
    {STOR_MX_LOCK_RETENTION, offsetof(stor_meta_t, lock_retention)},
    {STOR_MX_LEGAL_HOLD, offsetof(stor_meta_t, legal_hold)},
    {STOR_MX_ACL_GRANTS, offsetof(stor_meta_t, grants)},
    {STOR_MX_VERSION, offsetof(stor_meta_t, version)},
    {STOR_MX_DELETE_MARKER, offsetof(stor_meta_t, delete_marker)},
    {STOR_MX_INITIATOR, offsetof(stor_meta_t, initiator)},
};
#define N_META_EXT (sizeof meta_ext / sizeof meta_ext[0])

static char **meta_ext_field(stor_meta_t *m, size_t i)
{
    return (char **)((char *)m + meta_ext[i].off);
}

static const char *meta_ext_c(const stor_meta_t *m, size_t i)
{
    return *(char *const *)((const char *)m + meta_ext[i].off);
}

/* Whether m has a field only a version-5 record holds. */
static bool meta_has_ext(const stor_meta_t *m)
{
    for (size_t i = 0; i < N_META_EXT; i++)
        if (meta_ext_c(m, i))
            return true;
    return false;
}

static char **meta_opt(stor_meta_t *m, size_t i)
{
    return (char **)((char *)m + meta_opt_off[i]);
}

static const char *meta_opt_c(const stor_meta_t *m, size_t i)
{
    return *(char *const *)((const char *)m + meta_opt_off[i]);
}

/* size, etag, mtime, optional strings, user metadata, owner, ACL, the
 * version-3 optional strings and, when meta_has_ext, the extension block. */
static int put_meta(buf_t *b, const stor_meta_t *m)
{
    int rc = put_u64(b, m->size);
    rc |= put_bytes(b, m->etag, strnlen(m->etag, sizeof m->etag));
    rc |= put_u64(b, (uint64_t)m->mtime_ms);
    for (size_t i = 0; i < N_META_OPT_V1; i++)
        rc |= put_str(b, meta_opt_c(m, i));
    if (m->n_user_meta >= NULL_STR)
        return -1;
    rc |= put_u32(b, (uint32_t)m->n_user_meta);
    for (size_t i = 0; i < m->n_user_meta && rc == 0; i++) {
        rc |= put_str(b, m->user_meta[i].name ? m->user_meta[i].name : "");
        rc |= put_str(b, m->user_meta[i].value ? m->user_meta[i].value : "");
    }
    rc |= put_str(b, m->owner);
    rc |= put_u8(b, (uint8_t)m->acl);
    for (size_t i = N_META_OPT_V1; i < N_META_OPT; i++)
        rc |= put_str(b, meta_opt_c(m, i));
    if (!meta_has_ext(m))
        return rc ? -1 : 0;
    uint32_t n = 0;
    for (size_t i = 0; i < N_META_EXT; i++)
        n += meta_ext_c(m, i) != NULL;
    rc |= put_u32(b, n);
    for (size_t i = 0; i < N_META_EXT; i++) {
        if (!meta_ext_c(m, i))
            continue;
        rc |= put_u8(b, (uint8_t)meta_ext[i].id);
        rc |= put_str(b, meta_ext_c(m, i));
    }
    return rc ? -1 : 0;
}

/* The version an object or upload record of m is written with: base, or the
 * extension version when m has extension fields. */
static uint8_t meta_version(const stor_meta_t *m, uint8_t base)
{
    return meta_has_ext(m) ? STOR_REC_EXT_VERSION : base;
}

int stor_rec_encode_object(buf_t *b, const char *key, size_t klen, const stor_meta_t *m,
                           const stor_seg_t *segs, uint32_t n_segs)
{
    int rc = put_u8(b, meta_version(m, STOR_REC_VERSION)) | put_u8(b, STOR_REC_OBJECT);
    rc |= put_bytes(b, key, klen);
    rc |= put_meta(b, m);
    rc |= put_u32(b, m->parts_count);
    rc |= put_u32(b, n_segs);
    for (uint32_t i = 0; i < n_segs && rc == 0; i++) {
        rc |= buf_append(b, segs[i].id, STOR_ID_LEN);
        rc |= put_u64(b, segs[i].size);
    }
    return rc ? -1 : 0;
}

int stor_rec_encode_object_inline(buf_t *b, const char *key, size_t klen, const stor_meta_t *m,
                                  const void *body)
{
    if (m->parts_count != 0 || m->size >= NULL_STR)
        return -1;
    int rc = put_u8(b, meta_version(m, STOR_REC_INLINE_VERSION)) | put_u8(b, STOR_REC_OBJECT);
    rc |= put_bytes(b, key, klen);
    rc |= put_meta(b, m);
    rc |= put_u32(b, 0); /* parts_count */
    rc |= put_u32(b, 0); /* no segments */
    rc |= put_bytes(b, body, (size_t)m->size);
    return rc ? -1 : 0;
}

int stor_rec_encode_upload(buf_t *b, const char *key, size_t klen, int64_t initiated_ms,
                           const stor_meta_t *m)
{
    int rc = put_u8(b, meta_version(m, STOR_REC_VERSION)) | put_u8(b, STOR_REC_UPLOAD);
    rc |= put_bytes(b, key, klen);
    rc |= put_u64(b, (uint64_t)initiated_ms);
    rc |= put_meta(b, m);
    return rc ? -1 : 0;
}

int stor_rec_encode_part(buf_t *b, const stor_part_t *p, const uint8_t id[STOR_ID_LEN])
{
    int rc = put_header(b, STOR_REC_PART);
    rc |= put_u32(b, p->number);
    rc |= put_u64(b, p->size);
    rc |= put_bytes(b, p->etag, strnlen(p->etag, sizeof p->etag));
    rc |= put_u64(b, (uint64_t)p->mtime_ms);
    rc |= put_str(b, p->checksum_crc32);
    rc |= put_str(b, p->checksum_crc32c);
    rc |= put_str(b, p->checksum_sha256);
    rc |= buf_append(b, id, STOR_ID_LEN);
    rc |= put_str(b, p->checksum_sha1);
    rc |= put_str(b, p->checksum_crc64nvme);
    return rc ? -1 : 0;
}

int stor_rec_encode_bucket_rec(buf_t *b, const stor_bucket_rec_t *r)
{
    if (r->b.id == 0 || r->b.index_shards > STOR_INDEX_SHARDS_MAX ||
        r->b.reshard_to > STOR_INDEX_SHARDS_MAX)
        return -1;
    int resharded = r->b.index_gen > 0 || r->b.reshard_to > 0;
    int sharded = resharded || r->b.index_shards > 1;
    int rc = put_u8(b, resharded ? STOR_REC_BUCKET_RESHARD_VERSION
                       : sharded ? STOR_REC_BUCKET_SHARDED_VERSION
                                 : STOR_REC_BUCKET_VERSION) |
             put_u8(b, STOR_REC_BUCKET);
    rc |= put_str(b, r->b.owner);
    rc |= put_u64(b, (uint64_t)r->b.created);
    rc |= put_u64(b, r->b.id);
    rc |= put_u8(b, (uint8_t)r->b.acl);
    rc |= put_u64(b, r->b.cfg_gen);
    uint8_t n = 0;
    for (int k = 0; k < STOR_BCFG_COUNT; k++)
        n += r->cfg[k] != NULL;
    rc |= put_u8(b, n);
    for (int k = 0; k < STOR_BCFG_COUNT; k++) {
        if (!r->cfg[k])
            continue;
        rc |= put_u8(b, (uint8_t)k);
        rc |= put_bytes(b, r->cfg[k], r->cfg_len[k]);
    }
    if (sharded)
        rc |= put_u32(b, r->b.index_shards ? r->b.index_shards : 1);
    if (resharded) {
        rc |= put_u32(b, r->b.index_gen);
        rc |= put_u32(b, r->b.reshard_to);
    }
    return rc ? -1 : 0;
}

int stor_rec_encode_bucket(buf_t *b, const char *owner, int64_t created, uint64_t id,
                           stor_acl_t acl)
{
    stor_bucket_rec_t r;
    memset(&r, 0, sizeof r);
    if (snprintf(r.b.owner, sizeof r.b.owner, "%s", owner ? owner : "") >= (int)sizeof r.b.owner)
        return -1;
    r.b.created = created;
    r.b.id = id;
    r.b.acl = acl;
    return stor_rec_encode_bucket_rec(b, &r);
}

/* ==== Decoding =========================================================== */

/* A bounds-checked cursor: once err is set every get returns zero/NULL. */
typedef struct dec {
    const uint8_t *p, *end;
    int err; /* malformed input */
    int nomem;
} dec_t;

static int need(dec_t *d, size_t n)
{
    if (d->err || (size_t)(d->end - d->p) < n) {
        d->err = 1;
        return 0;
    }
    return 1;
}

static uint8_t get_u8(dec_t *d)
{
    if (!need(d, 1))
        return 0;
    return *d->p++;
}

static uint32_t get_u32(dec_t *d)
{
    if (!need(d, 4))
        return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)d->p[i] << (8 * i);
    d->p += 4;
    return v;
}

static uint64_t get_u64(dec_t *d)
{
    if (!need(d, 8))
        return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)d->p[i] << (8 * i);
    d->p += 8;
    return v;
}

/* Points at a length-prefixed byte string without copying; NULL for the
 * encoded NULL (or on error, with d->err set). */
static const uint8_t *get_ref(dec_t *d, size_t *len_p)
{
    uint32_t len = get_u32(d);
    *len_p = 0;
    if (d->err || len == NULL_STR)
        return NULL;
    if (!need(d, len))
        return NULL;
    const uint8_t *s = d->p;
    d->p += len;
    *len_p = len;
    return s;
}

/* A NUL-terminated malloc'ed copy; NULL for the encoded NULL. Strings with an
 * embedded NUL are malformed (they could not have been written). */
static char *get_str(dec_t *d, size_t *len_p)
{
    size_t len;
    const uint8_t *s = get_ref(d, &len);
    if (len_p)
        *len_p = len;
    if (!s)
        return NULL;
    if (memchr(s, 0, len)) {
        d->err = 1;
        return NULL;
    }
    char *c = malloc(len + 1);
    if (!c) {
        d->nomem = d->err = 1;
        return NULL;
    }
    memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

/* get_str when keep, else the same checks without the copy: 1 when a
 * string is there, 0 for the encoded NULL (or on error). Returns through
 * *out the copy (keep) or NULL. */
static int get_str_if(dec_t *d, int keep, char **out)
{
    *out = NULL;
    if (keep) {
        *out = get_str(d, NULL);
        return *out != NULL;
    }
    size_t len;
    const uint8_t *s = get_ref(d, &len);
    if (!s)
        return 0;
    if (memchr(s, 0, len)) {
        d->err = 1;
        return 0;
    }
    return 1;
}

static void get_fixed_str(dec_t *d, char *out, size_t out_size)
{
    size_t len;
    const uint8_t *s = get_ref(d, &len);
    if (!s || len >= out_size || memchr(s, 0, len)) {
        d->err = 1;
        out[0] = '\0';
        return;
    }
    memcpy(out, s, len);
    out[len] = '\0';
}

/* Checks the header; returns the record's version (1 up to the version
 * this type is written with). */
static uint8_t get_header(dec_t *d, uint8_t type)
{
    uint8_t v = get_u8(d);
    uint8_t t = get_u8(d);
    if (v < 1 || v > rec_max_version(type) || t != type)
        d->err = 1;
    return v;
}

static stor_acl_t get_acl(dec_t *d)
{
    uint8_t a = get_u8(d);
    if (a >= STOR_ACL_COUNT)
        d->err = 1;
    return d->err ? STOR_ACL_PRIVATE : (stor_acl_t)a;
}

static stor_status_t dec_status(const dec_t *d)
{
    if (d->nomem)
        return STOR_ERR_NOMEM;
    return d->err ? STOR_ERR_IO : STOR_OK;
}

/* Whether a decode that wants `want` (stor_want_t) keeps extension field
 * id: every field for STOR_WANT_ALL, else those a listing shows. */
static int ext_wanted(unsigned want, stor_mx_t id)
{
    return !(want & STOR_WANT_LISTING) || id == STOR_MX_STORAGE_CLASS || id == STOR_MX_VERSION ||
           id == STOR_MX_DELETE_MARKER;
}

/* The extension block of a version-5 record into m: ids known, increasing
 * (so each at most once), values present; the fields want leaves out are
 * checked the same and not kept. */
static void get_meta_ext(dec_t *d, stor_meta_t *m, unsigned want)
{
    uint32_t n = get_u32(d);
    size_t next = 0; /* meta_ext index the next id may take */
    for (uint32_t k = 0; k < n && !d->err; k++) {
        uint8_t id = get_u8(d);
        while (next < N_META_EXT && meta_ext[next].id < id)
            next++;
        if (d->err || next == N_META_EXT || meta_ext[next].id != id) {
            d->err = 1;
            return;
        }
        char **f = meta_ext_field(m, next++);
        if (!get_str_if(d, ext_wanted(want, id), f) && !d->err)
            d->err = 1;
        else if (!d->err && id == STOR_MX_VERSION && !stor_version_field_valid(*f))
            d->err = 1;
        else if (!d->err && id == STOR_MX_DELETE_MARKER && strcmp(*f, "1") != 0)
            d->err = 1;
    }
}

/* The metadata of a record of version v (owner and ACL from version 2):
 * the fields want (stor_want_t) asks for; the others are checked just the
 * same but not copied (left NULL). */
static void get_meta(dec_t *d, stor_meta_t *m, uint8_t v, unsigned want)
{
    int all = !(want & STOR_WANT_LISTING);
    memset(m, 0, sizeof *m);
    m->size = get_u64(d);
    get_fixed_str(d, m->etag, sizeof m->etag);
    m->mtime_ms = (int64_t)get_u64(d);
    for (size_t i = 0; i < N_META_OPT_V1; i++)
        get_str_if(d, all, meta_opt(m, i));
    uint32_t n = get_u32(d);
    /* Each entry takes at least 8 bytes: refuse counts the record cannot hold
     * before allocating for them. */
    if (d->err || n > (size_t)(d->end - d->p) / 8) {
        d->err = 1;
        return;
    }
    for (uint32_t i = 0; i < n && !all && !d->err; i++) {
        char *unused;
        if ((!get_str_if(d, 0, &unused) || !get_str_if(d, 0, &unused)) && !d->err)
            d->err = 1;
    }
    if (n && all) {
        m->user_meta = calloc(n, sizeof *m->user_meta);
        if (!m->user_meta) {
            d->nomem = d->err = 1;
            return;
        }
        m->n_user_meta = n;
        for (uint32_t i = 0; i < n && !d->err; i++) {
            m->user_meta[i].name = get_str(d, NULL);
            m->user_meta[i].value = get_str(d, NULL);
            if (!d->err && (!m->user_meta[i].name || !m->user_meta[i].value))
                d->err = 1;
        }
    }
    if (v >= 2) {
        get_str_if(d, all || (want & STOR_WANT_OWNER), &m->owner);
        m->acl = get_acl(d);
    }
    for (size_t i = N_META_OPT_V1; i < N_META_OPT && v >= 3; i++)
        get_str_if(d, all, meta_opt(m, i));
    if (v >= STOR_REC_EXT_VERSION)
        get_meta_ext(d, m, want);
}

stor_status_t stor_rec_object_key(const void *data, size_t len, const char **key_p, size_t *klen_p)
{
    dec_t d = {data, (const uint8_t *)data + len, 0, 0};
    get_header(&d, STOR_REC_OBJECT);
    size_t klen;
    const uint8_t *k = get_ref(&d, &klen);
    if (d.err || !k)
        return STOR_ERR_IO;
    *key_p = (const char *)k;
    *klen_p = klen;
    return STOR_OK;
}

/* Decodes an object record into out; with meta_only, out->segs stays NULL
 * (nothing is allocated for it) but the record is checked just the same,
 * and the metadata holds what want (stor_want_t) asks for (a listing's
 * want: no part_sizes either). The key is checked, never copied:
 * stor_rec_object_key points at it. */
static stor_status_t decode_object(const void *data, size_t len, stor_obj_rec_t *out, int meta_only,
                                   unsigned want)
{
    dec_t d = {data, (const uint8_t *)data + len, 0, 0};
    memset(out, 0, sizeof *out);
    uint8_t v = get_header(&d, STOR_REC_OBJECT);
    size_t klen;
    const uint8_t *k = get_ref(&d, &klen);
    if (!d.err && (!k || memchr(k, 0, klen)))
        d.err = 1;
    get_meta(&d, &out->meta, v, want);
    uint32_t parts_count = get_u32(&d);
    uint32_t n = get_u32(&d);
    if (v == STOR_REC_INLINE_VERSION || (v >= STOR_REC_EXT_VERSION && n == 0)) {
        /* An inline object: no segments, its bytes and nothing after them. */
        size_t blen;
        const uint8_t *body = get_ref(&d, &blen);
        if (!d.err &&
            (parts_count != 0 || n != 0 || !body || blen != out->meta.size || d.p != d.end))
            d.err = 1;
        out->body = d.err ? NULL : body;
    } else if (!d.err && (n == 0 || n > (size_t)(d.end - d.p) / (STOR_ID_LEN + 8) ||
                          (parts_count != 0 && parts_count != n) || (parts_count == 0 && n != 1))) {
        d.err = 1;
    }
    if (!d.err && !out->body) {
        if (!meta_only)
            out->segs = calloc(n, sizeof *out->segs);
        int sizes = parts_count && !(want & STOR_WANT_LISTING);
        if (sizes)
            out->meta.part_sizes = calloc(n, sizeof *out->meta.part_sizes);
        if ((!meta_only && !out->segs) || (sizes && !out->meta.part_sizes)) {
            d.nomem = d.err = 1;
        } else {
            out->n_segs = meta_only ? 0 : n;
            out->meta.parts_count = parts_count;
            uint64_t total = 0;
            for (uint32_t i = 0; i < n && !d.err; i++) {
                if (need(&d, STOR_ID_LEN)) {
                    if (!meta_only)
                        memcpy(out->segs[i].id, d.p, STOR_ID_LEN);
                    d.p += STOR_ID_LEN;
                }
                uint64_t size = get_u64(&d);
                if (!meta_only)
                    out->segs[i].size = size;
                if (sizes)
                    out->meta.part_sizes[i] = size;
                total += size;
            }
            if (!d.err && total != out->meta.size)
                d.err = 1;
        }
    }
    stor_status_t rc = dec_status(&d);
    if (rc != STOR_OK)
        stor_obj_rec_free(out);
    return rc;
}

stor_status_t stor_rec_decode_object(const void *data, size_t len, stor_obj_rec_t *out)
{
    return decode_object(data, len, out, 0, STOR_WANT_ALL);
}

stor_status_t stor_rec_decode_object_meta(const void *data, size_t len, stor_meta_t *meta_p)
{
    return stor_rec_decode_object_want(data, len, STOR_WANT_ALL, meta_p);
}

stor_status_t stor_rec_decode_object_want(const void *data, size_t len, unsigned want,
                                          stor_meta_t *meta_p)
{
    stor_obj_rec_t rec;
    stor_status_t s = decode_object(data, len, &rec, 1, want);
    if (s == STOR_OK)
        *meta_p = rec.meta;
    return s;
}

void stor_obj_rec_free(stor_obj_rec_t *r)
{
    if (!r)
        return;
    stor_meta_free(&r->meta);
    free(r->segs);
    memset(r, 0, sizeof *r);
}

stor_status_t stor_rec_decode_upload(const void *data, size_t len, stor_upload_rec_t *out)
{
    dec_t d = {data, (const uint8_t *)data + len, 0, 0};
    memset(out, 0, sizeof *out);
    uint8_t v = get_header(&d, STOR_REC_UPLOAD);
    out->key = get_str(&d, &out->key_len);
    if (!d.err && !out->key)
        d.err = 1;
    out->initiated_ms = (int64_t)get_u64(&d);
    get_meta(&d, &out->meta, v, STOR_WANT_ALL);
    stor_status_t rc = dec_status(&d);
    if (rc != STOR_OK)
        stor_upload_rec_free(out);
    return rc;
}

void stor_upload_rec_free(stor_upload_rec_t *r)
{
    if (!r)
        return;
    free(r->key);
    stor_meta_free(&r->meta);
    memset(r, 0, sizeof *r);
}

stor_status_t stor_rec_decode_part(const void *data, size_t len, stor_part_rec_t *out)
{
    dec_t d = {data, (const uint8_t *)data + len, 0, 0};
    memset(out, 0, sizeof *out);
    uint8_t v = get_header(&d, STOR_REC_PART);
    out->part.number = get_u32(&d);
    out->part.size = get_u64(&d);
    get_fixed_str(&d, out->part.etag, sizeof out->part.etag);
    out->part.mtime_ms = (int64_t)get_u64(&d);
    out->part.checksum_crc32 = get_str(&d, NULL);
    out->part.checksum_crc32c = get_str(&d, NULL);
    out->part.checksum_sha256 = get_str(&d, NULL);
    if (need(&d, STOR_ID_LEN)) {
        memcpy(out->id, d.p, STOR_ID_LEN);
        d.p += STOR_ID_LEN;
    }
    if (v >= 2) {
        out->part.checksum_sha1 = get_str(&d, NULL);
        out->part.checksum_crc64nvme = get_str(&d, NULL);
    }
    stor_status_t rc = dec_status(&d);
    if (rc != STOR_OK)
        stor_part_free_fields(&out->part);
    return rc;
}

void stor_part_free_fields(stor_part_t *p)
{
    free(p->checksum_crc32);
    free(p->checksum_crc32c);
    free(p->checksum_sha256);
    free(p->checksum_sha1);
    free(p->checksum_crc64nvme);
    p->checksum_crc32 = p->checksum_crc32c = p->checksum_sha256 = NULL;
    p->checksum_sha1 = p->checksum_crc64nvme = NULL;
}

void stor_part_recs_free(stor_part_rec_t *arr, size_t n)
{
    for (size_t i = 0; i < n; i++)
        stor_part_free_fields(&arr[i].part);
    free(arr);
}

stor_status_t stor_rec_decode_bucket_rec(const void *data, size_t len, stor_bucket_rec_t *out)
{
    dec_t d = {data, (const uint8_t *)data + len, 0, 0};
    stor_bucket_t *b = &out->b;
    memset(out->cfg, 0, sizeof out->cfg);
    memset(out->cfg_len, 0, sizeof out->cfg_len);
    uint8_t v = get_header(&d, STOR_REC_BUCKET);
    get_fixed_str(&d, b->owner, sizeof b->owner);
    b->created = (int64_t)get_u64(&d);
    b->id = 0; /* version 1: a bucket created before ids existed */
    b->acl = STOR_ACL_PRIVATE;
    b->cfg_mask = 0;
    b->cfg_gen = 0;
    b->index_shards = 1;
    b->index_gen = 0;
    b->reshard_to = 0;
    b->versioning = STOR_VERSIONING_OFF;
    if (v >= 2) {
        b->id = get_u64(&d);
        if (b->id == 0)
            d.err = 1;
    }
    if (v >= 3)
        b->acl = get_acl(&d);
    if (v >= 4) {
        b->cfg_gen = get_u64(&d);
        uint8_t n = get_u8(&d);
        for (uint8_t i = 0; i < n && !d.err; i++) {
            uint8_t k = get_u8(&d);
            size_t blen;
            const uint8_t *blob = get_ref(&d, &blen);
            if (d.err || k >= STOR_BCFG_COUNT || !blob || (b->cfg_mask & (1u << k)))
                d.err = 1;
            else if (k == STOR_BCFG_VERSIONING &&
                     (blen != 1 ||
                      (blob[0] != STOR_VERSIONING_ENABLED && blob[0] != STOR_VERSIONING_SUSPENDED)))
                d.err = 1;
            else {
                if (k == STOR_BCFG_VERSIONING)
                    b->versioning = blob[0];
                out->cfg[k] = blob;
                out->cfg_len[k] = (uint32_t)blen;
                b->cfg_mask |= 1u << k;
            }
        }
    }
    if (v >= STOR_REC_BUCKET_SHARDED_VERSION) {
        b->index_shards = get_u32(&d);
        uint32_t least = v >= STOR_REC_BUCKET_RESHARD_VERSION ? 1 : 2;
        if (b->index_shards < least || b->index_shards > STOR_INDEX_SHARDS_MAX)
            d.err = 1;
    }
    if (v >= STOR_REC_BUCKET_RESHARD_VERSION) {
        b->index_gen = get_u32(&d);
        b->reshard_to = get_u32(&d);
        if (b->reshard_to > STOR_INDEX_SHARDS_MAX || (!b->index_gen && !b->reshard_to))
            d.err = 1;
    }
    return dec_status(&d);
}

stor_status_t stor_rec_decode_bucket(const void *data, size_t len, stor_bucket_t *out)
{
    stor_bucket_rec_t r;
    memcpy(r.b.name, out->name, sizeof r.b.name);
    stor_status_t s = stor_rec_decode_bucket_rec(data, len, &r);
    if (s == STOR_OK)
        *out = r.b;
    return s;
}

stor_status_t stor_rec_bucket_apply(const void *old, size_t len, const stor_bucket_change_t *change,
                                    buf_t *out)
{
    buf_init(out, STOR_REC_MAX);
    stor_bucket_rec_t r;
    stor_status_t s = stor_rec_decode_bucket_rec(old, len, &r);
    if (s != STOR_OK)
        return s;
    if (change->cfg_len > STOR_BCFG_MAX_BYTES)
        return STOR_ERR_TOO_LARGE;
    while (r.b.id == 0)
        if (hash_random_bytes(&r.b.id, sizeof r.b.id) != 0)
            return STOR_ERR_IO;
    if (change->set_acl) {
        if (change->acl < 0 || change->acl >= STOR_ACL_COUNT)
            return STOR_ERR_TOO_LARGE;
        r.b.acl = change->acl;
        size_t glen = change->grants ? strlen(change->grants) : 0;
        if (glen > STOR_BCFG_MAX_BYTES)
            return STOR_ERR_TOO_LARGE;
        /* The access layer caches the grant list by generation: a change
         * of it is one; a canned ACL alone (read from the record on every
         * lookup) is not. */
        if (change->grants || r.cfg[STOR_BCFG_ACL_GRANTS])
            r.b.cfg_gen++;
        r.cfg[STOR_BCFG_ACL_GRANTS] = change->grants;
        r.cfg_len[STOR_BCFG_ACL_GRANTS] = (uint32_t)glen;
    }
    if (change->cfg_kind >= 0) {
        if (change->cfg_kind >= STOR_BCFG_COUNT)
            return STOR_ERR_TOO_LARGE;
        r.cfg[change->cfg_kind] = change->cfg;
        r.cfg_len[change->cfg_kind] = change->cfg ? (uint32_t)change->cfg_len : 0;
        r.b.cfg_gen++;
    }
    return stor_rec_encode_bucket_rec(out, &r) != 0 ? STOR_ERR_NOMEM : STOR_OK;
}

/* ==== stor_meta_t's memory ================================================ */

void stor_meta_free(stor_meta_t *meta)
{
    if (!meta)
        return;
    for (size_t i = 0; i < N_META_OPT; i++)
        free(*meta_opt(meta, i));
    for (size_t i = 0; i < N_META_EXT; i++)
        free(*meta_ext_field(meta, i));
    for (size_t i = 0; i < meta->n_user_meta; i++) {
        free(meta->user_meta[i].name);
        free(meta->user_meta[i].value);
    }
    free(meta->user_meta);
    free(meta->part_sizes);
    free(meta->owner);
    memset(meta, 0, sizeof *meta);
}

static int dup_str(char **dst, const char *src)
{
    *dst = NULL;
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

stor_status_t stor_meta_copy(stor_meta_t *dst, const stor_meta_t *src)
{
    memset(dst, 0, sizeof *dst);
    dst->size = src->size;
    memcpy(dst->etag, src->etag, sizeof dst->etag);
    dst->etag[sizeof dst->etag - 1] = '\0';
    dst->mtime_ms = src->mtime_ms;
    for (size_t i = 0; i < N_META_OPT; i++)
        if (dup_str(meta_opt(dst, i), meta_opt_c(src, i)) != 0)
            goto nomem;
    for (size_t i = 0; i < N_META_EXT; i++)
        if (dup_str(meta_ext_field(dst, i), meta_ext_c(src, i)) != 0)
            goto nomem;
    if (src->n_user_meta) {
        dst->user_meta = calloc(src->n_user_meta, sizeof *dst->user_meta);
        if (!dst->user_meta)
            goto nomem;
        dst->n_user_meta = src->n_user_meta;
        for (size_t i = 0; i < src->n_user_meta; i++)
            if (dup_str(&dst->user_meta[i].name, src->user_meta[i].name) != 0 ||
                dup_str(&dst->user_meta[i].value, src->user_meta[i].value) != 0)
                goto nomem;
    }
    if (dup_str(&dst->owner, src->owner) != 0)
        goto nomem;
    dst->acl = src->acl;
    if (src->parts_count && src->part_sizes) {
        dst->part_sizes = malloc(src->parts_count * sizeof *dst->part_sizes);
        if (!dst->part_sizes)
            goto nomem;
        memcpy(dst->part_sizes, src->part_sizes, src->parts_count * sizeof *dst->part_sizes);
        dst->parts_count = src->parts_count;
    }
    return STOR_OK;
nomem:
    stor_meta_free(dst);
    return STOR_ERR_NOMEM;
}
