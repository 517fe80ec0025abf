/* Tag sets of objects and buckets (docs/operations.md, "Tagging"): parsed
 * from the x-amz-tagging header (a URL-encoded query string), from a
 * Tagging XML body and from their stored form, checked against S3's rules,
 * and written back as XML. Knows nothing of requests or storage.
 *
 * The stored form (stor_meta_t.tags, the bucket's STOR_BCFG_TAGGING
 * document) is the header's syntax in one canonical spelling: "k=v" pairs
 * joined by '&', sorted by key (bytewise; sets stored before that rule
 * keep the order they were sent in), every byte outside A-Z a-z 0-9 - . _ ~
 * percent-encoded. It is never empty: no tags are stored as none. */
#ifndef S3R_S3_TAGGING_H
#define S3R_S3_TAGGING_H

#include <stddef.h>

#include "common/buf.h"
#include "s3/s3_errors.h"

typedef struct s3_tag {
    char *key, *value; /* UTF-8, decoded */
} s3_tag_t;

typedef struct s3_tags {
    s3_tag_t *v;
    size_t n;
} s3_tags_t;

/* Whose tag set: the limits differ (docs/limits.md). */
typedef enum s3_tags_of { S3_TAGS_OBJECT, S3_TAGS_BUCKET } s3_tags_of_t;

/* S3's rules for tags, which both parsers check (s3_tags_check in
 * tagging.c): at most 10 object tags (BadRequest) or 50 bucket tags
 * (InvalidTag); keys of 1..128 and values of 0..256 Unicode characters, in
 * valid UTF-8 (no U+FFFE, U+FFFF: XML cannot carry them), of letters,
 * digits, spaces and + - = . _ : / @; no key starting "aws:"; no key twice
 * (InvalidTag). */
/* Parses an x-amz-tagging header value (the header's own errors are
 * InvalidArgument, as S3 answers) and checks the tags as s3_tags_check.
 * Fills *out, sorted by key (the caller frees it with s3_tags_free), or
 * returns the error with *why_p the message (static). */
s3_error_t s3_tags_from_header(const char *value, s3_tags_t *out, const char **why_p);
/* Parses a Tagging body (Tagging > TagSet > Tag > Key, Value): MalformedXML
 * when it is not one, then s3_tags_check's answers; *out sorted by key. */
s3_error_t s3_tags_from_xml(const char *body, size_t len, s3_tags_of_t of, s3_tags_t *out,
                            const char **why_p);
/* Decodes a stored form (no checks: it was checked when stored); -1 when it
 * does not decode (a damaged record) or on no memory. */
int s3_tags_from_stored(const char *stored, s3_tags_t *out);
/* The stored form of t (malloc'd), or NULL when t has no tags; *nomem_p is
 * set when it is NULL for want of memory. */
char *s3_tags_encode(const s3_tags_t *t, int *nomem_p);
/* Appends <TagSet><Tag><Key>..</Key><Value>..</Value></Tag>...</TagSet>. */
void s3_tags_xml(const s3_tags_t *t, buf_t *xml);
/* The value of tag key (case-sensitive) in t, or NULL. */
const char *s3_tags_find(const s3_tags_t *t, const char *key);
/* How many tags a stored form holds (0 for NULL): x-amz-tagging-count. */
size_t s3_tags_count(const char *stored);
void s3_tags_free(s3_tags_t *t);

#endif
