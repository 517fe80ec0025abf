/* Tag sets: parsing, S3's checks, the stored form and the XML (tagging.h). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/s3r_limits.h"
#include "s3/s3_request.h"
#include "s3/s3_util.h"
#include "s3/tagging.h"
#include "s3/xml_in.h"

void s3_tags_free(s3_tags_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].key);
        free(t->v[i].value);
    }
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

/* Appends a tag taking key and value (freed here on failure). */
static int tags_add(s3_tags_t *t, char *key, char *value)
{
    s3_tag_t *v = key && value ? realloc(t->v, (t->n + 1) * sizeof *v) : NULL;
    if (!v) {
        free(key);
        free(value);
        return -1;
    }
    t->v = v;
    t->v[t->n++] = (s3_tag_t){key, value};
    return 0;
}

const char *s3_tags_find(const s3_tags_t *t, const char *key)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].key, key) == 0)
            return t->v[i].value;
    return NULL;
}

static int tag_key_cmp(const void *a, const void *b)
{
    return strcmp(((const s3_tag_t *)a)->key, ((const s3_tag_t *)b)->key);
}

/* A checked tag set in its kept order: by key, bytewise (S3 and radosgw
 * answer tag sets sorted by key, whatever order they were sent in). */
static void sort_by_key(s3_tags_t *t)
{
    if (t->n > 1)
        qsort(t->v, t->n, sizeof *t->v, tag_key_cmp);
}

static bool has_duplicate(const s3_tags_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(t->v[i].key, t->v[j].key) == 0)
                return true;
    return false;
}

/* The Unicode characters of s if it is valid UTF-8 of allowed characters
 * (ASCII letters, digits, space and + - = . _ : / @; any character
 * beyond ASCII, which S3 allows when it is a letter, a digit or white space:
 * s3rdmad does not carry Unicode's tables and lets every one through), or
 * -1. */
static long tag_chars(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    long n = 0;
    while (*p) {
        unsigned c = *p;
        size_t more;
        if (c < 0x80) {
            bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      strchr(" +-=._:/@", (int)c) != NULL;
            if (!ok)
                return -1;
            more = 0;
        } else if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
        } else {
            return -1;
        }
        uint32_t cp = more == 0 ? c : c & (0x3Fu >> more);
        for (size_t i = 1; i <= more; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return -1;
            cp = (cp << 6) | (p[i] & 0x3Fu);
        }
        /* Overlong forms, surrogates, code points past U+10FFFF, and
         * U+FFFE/U+FFFF, which XML 1.0 cannot carry (the set would come back
         * as a document no client parses). */
        if ((more == 2 && cp < 0x800) || (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF)
            return -1;
        p += more + 1;
        n++;
    }
    return n;
}

/* The rules in tagging.h: S3E_NONE, or the error with *why_p the message. */
static s3_error_t s3_tags_check(const s3_tags_t *t, s3_tags_of_t of, const char **why_p)
{
    if (of == S3_TAGS_OBJECT && t->n > S3R_MAX_OBJECT_TAGS) {
        *why_p = "Object tags cannot be greater than 10";
        return S3E_BAD_REQUEST;
    }
    if (of == S3_TAGS_BUCKET && t->n > S3R_MAX_BUCKET_TAGS) {
        *why_p = "Bucket tag count cannot be greater than 50";
        return S3E_INVALID_TAG;
    }
    for (size_t i = 0; i < t->n; i++) {
        long k = tag_chars(t->v[i].key);
        if (k < 1 || k > S3R_MAX_TAG_KEY_CHARS) {
            *why_p = "The TagKey you have provided is invalid";
            return S3E_INVALID_TAG;
        }
        long v = tag_chars(t->v[i].value);
        if (v < 0 || v > S3R_MAX_TAG_VALUE_CHARS) {
            *why_p = "The TagValue you have provided is invalid";
            return S3E_INVALID_TAG;
        }
        if (strncmp(t->v[i].key, "aws:", 4) == 0) {
            *why_p = "Your TagKey cannot be prefixed with aws:";
            return S3E_INVALID_TAG;
        }
    }
    if (has_duplicate(t)) {
        *why_p = "Cannot provide multiple Tags with the same key";
        return S3E_INVALID_TAG;
    }
    return S3E_NONE;
}

/* Splits a query-string tag set into t, without checks; -1 when a pair
 * does not decode, or on no memory. */
static int parse_query(const char *s, s3_tags_t *t)
{
    memset(t, 0, sizeof *t);
    if (!*s)
        return 0;
    for (;;) {
        size_t n = strcspn(s, "&");
        const char *eq = memchr(s, '=', n);
        size_t klen = eq ? (size_t)(eq - s) : n;
        if (n == 0 || tags_add(t, s3_url_decode(s, klen, true),
                               eq ? s3_url_decode(eq + 1, n - klen - 1, true) : strdup("")) != 0) {
            s3_tags_free(t);
            return -1;
        }
        if (!s[n])
            return 0;
        s += n + 1;
    }
}

s3_error_t s3_tags_from_header(const char *value, s3_tags_t *out, const char **why_p)
{
    static const char bad[] = "The header 'x-amz-tagging' shall be encoded as UTF-8 then "
                              "URLEncoded URL query parameters without tag name duplicates.";
    if (parse_query(value, out) != 0 || has_duplicate(out)) {
        s3_tags_free(out);
        *why_p = bad;
        return S3E_INVALID_ARGUMENT;
    }
    s3_error_t err = s3_tags_check(out, S3_TAGS_OBJECT, why_p);
    if (err != S3E_NONE)
        s3_tags_free(out);
    else
        sort_by_key(out);
    return err;
}

int s3_tags_from_stored(const char *stored, s3_tags_t *out)
{
    return parse_query(stored ? stored : "", out);
}

/* Ends the tag being read (when there is one): both its Key and its Value
 * given once. */
static s3_error_t tag_end(s3_tags_t *out, const char *key, const char *value, bool open)
{
    if (!open)
        return S3E_NONE;
    if (!key || !value)
        return S3E_MALFORMED_XML;
    return tags_add(out, strdup(key), strdup(value)) == 0 ? S3E_NONE : S3E_INTERNAL;
}

s3_error_t s3_tags_from_xml(const char *body, size_t len, s3_tags_of_t of, s3_tags_t *out,
                            const char **why_p)
{
    /* Tagging > TagSet > Tag > Key, Value: each "Tag/" entry opens a tag. */
    static const char *const fields[] = {"Tag/", "Tag/Key", "Tag/Value"};
    xml_list_entry_t *e;
    size_t n, n_items;
    memset(out, 0, sizeof *out);
    *why_p = NULL;
    /* Three entries a tag: a bound past any legal set, so an absurd body
     * stops early. */
    if (s3_xml_parse_list(body ? body : "", len, "Tagging", "TagSet", fields, 3,
                          3 * (S3R_MAX_BUCKET_TAGS + 1), &e, &n, &n_items) != 0)
        return S3E_MALFORMED_XML;
    s3_error_t err = n_items > 1 ? S3E_MALFORMED_XML : S3E_NONE;
    const char *key = NULL, *value = NULL;
    bool open = false;
    for (size_t i = 0; i < n && err == S3E_NONE; i++) {
        if (e[i].field == 0) {
            err = tag_end(out, key, value, open);
            key = value = NULL;
            open = true;
        } else if (!open || (e[i].field == 1 ? key : value)) {
            err = S3E_MALFORMED_XML;
        } else if (e[i].field == 1) {
            key = e[i].value;
        } else {
            value = e[i].value;
        }
    }
    if (err == S3E_NONE)
        err = tag_end(out, key, value, open);
    s3_xml_list_free(e, n);
    if (err == S3E_NONE)
        err = s3_tags_check(out, of, why_p);
    if (err != S3E_NONE)
        s3_tags_free(out);
    else
        sort_by_key(out);
    return err;
}

static int put_encoded(buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && rc == 0; p++) {
        unsigned c = *p;
        bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                     c == '-' || c == '.' || c == '_' || c == '~';
        if (plain) {
            rc = buf_append(b, p, 1);
        } else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = buf_append(b, esc, 3);
        }
    }
    return rc;
}

char *s3_tags_encode(const s3_tags_t *t, int *nomem_p)
{
    *nomem_p = 0;
    if (t->n == 0)
        return NULL;
    buf_t b;
    buf_init(&b, 64 * 1024);
    int rc = 0;
    for (size_t i = 0; i < t->n && rc == 0; i++) {
        if (i)
            rc |= buf_append(&b, "&", 1);
        rc |= put_encoded(&b, t->v[i].key);
        rc |= buf_append(&b, "=", 1);
        rc |= put_encoded(&b, t->v[i].value);
    }
    rc |= buf_append(&b, "", 1);
    if (rc != 0) {
        buf_free(&b);
        *nomem_p = 1;
        return NULL;
    }
    return buf_steal(&b, NULL);
}

void s3_tags_xml(const s3_tags_t *t, buf_t *xml)
{
    buf_append_str(xml, "<TagSet>");
    for (size_t i = 0; i < t->n; i++) {
        buf_append_str(xml, "<Tag>");
        s3_xml_elem(xml, "Key", t->v[i].key);
        s3_xml_elem(xml, "Value", t->v[i].value);
        buf_append_str(xml, "</Tag>");
    }
    buf_append_str(xml, "</TagSet>");
}

size_t s3_tags_count(const char *stored)
{
    if (!stored || !*stored)
        return 0;
    size_t n = 1;
    for (const char *p = stored; *p; p++)
        n += *p == '&';
    return n;
}
