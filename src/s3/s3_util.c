#include "s3/s3_util.h"

#include "common/hash.h"
#include "common/s3r_limits.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool s3_bucket_name_valid(const char *name)
{
    size_t len = strlen(name);
    if (len < 3 || len > 63)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '.' || c == '-'))
            return false;
    }
    if (!isalnum((unsigned char)name[0]) || !isalnum((unsigned char)name[len - 1]))
        return false;
    if (strstr(name, "..") || strstr(name, ".-") || strstr(name, "-."))
        return false;
    if (strncmp(name, "xn--", 4) == 0 || (len > 8 && strcmp(name + len - 8, "-s3alias") == 0))
        return false;
    unsigned a, b, c, d;
    char tail;
    if (sscanf(name, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4)
        return false;
    return true;
}

bool s3_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned c = *p;
        size_t n;
        unsigned cp;
        if (c == 0)
            return false;
        if (c < 0x80) {
            p++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if ((size_t)(end - p) <= n)
            return false;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        /* Reject overlong forms, surrogates and values past U+10FFFF. */
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return false;
        p += n + 1;
    }
    return true;
}

char *s3_url_decode(const char *src, size_t len, bool plus_is_space)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = src[i];
        if (c == '%') {
            if (len - i < 3) {
                free(out);
                return NULL;
            }
            int h = hash_hex_digit_value(src[i + 1]), l = hash_hex_digit_value(src[i + 2]);
            if (h < 0 || l < 0 || (h == 0 && l == 0)) {
                free(out);
                return NULL;
            }
            out[n++] = (char)(h << 4 | l);
            i += 2;
        } else if (c == '\0') {
            free(out); /* a raw NUL is as invalid as %00 */
            return NULL;
        } else if (c == '+' && plus_is_space) {
            out[n++] = ' ';
        } else {
            out[n++] = c;
        }
    }
    out[n] = '\0';
    return out;
}

s3_range_result_t s3_range_parse(const char *header, uint64_t size, uint64_t *first_p,
                                 uint64_t *last_p)
{
    if (!header)
        return S3_RANGE_NONE;
    while (*header == ' ')
        header++;
    if (strncmp(header, "bytes=", 6) != 0)
        return S3_RANGE_NONE;
    const char *p = header + 6;
    if (strchr(p, ','))
        return S3_RANGE_NONE; /* S3 serves multi-range requests whole */
    char *end;
    if (*p == '-') {
        if (!isdigit((unsigned char)p[1]))
            return S3_RANGE_NONE;
        unsigned long long n = strtoull(p + 1, &end, 10);
        if (*end != '\0')
            return S3_RANGE_NONE;
        if (n == 0 || size == 0)
            return S3_RANGE_UNSATISFIABLE;
        if (n > size)
            n = size;
        *first_p = size - n;
        *last_p = size - 1;
        return S3_RANGE_OK;
    }
    if (!isdigit((unsigned char)*p))
        return S3_RANGE_NONE;
    unsigned long long first = strtoull(p, &end, 10);
    if (*end != '-')
        return S3_RANGE_NONE;
    p = end + 1;
    unsigned long long last;
    if (*p == '\0') {
        last = size ? size - 1 : 0;
    } else {
        if (!isdigit((unsigned char)*p))
            return S3_RANGE_NONE;
        last = strtoull(p, &end, 10);
        if (*end != '\0' || last < first)
            return S3_RANGE_NONE;
        if (last >= size)
            last = size ? size - 1 : 0;
    }
    if (first >= size)
        return S3_RANGE_UNSATISFIABLE;
    *first_p = first;
    *last_p = last;
    return S3_RANGE_OK;
}

size_t s3_common_prefix_len(const char *key, size_t key_len, size_t prefix_len, const char *delim)
{
    if (!delim || !*delim || key_len < prefix_len)
        return 0;
    const char *hit = memmem(key + prefix_len, key_len - prefix_len, delim, strlen(delim));
    return hit ? (size_t)(hit - key) + strlen(delim) : 0;
}

char *s3_resource_path(const char *bucket, const char *key)
{
    size_t bl = bucket ? strlen(bucket) : 0, kl = bucket && key ? strlen(key) : 0;
    char *out = malloc(bl + kl + 3), *p = out;
    if (!out)
        return NULL;
    *p++ = '/';
    if (bucket) {
        memcpy(p, bucket, bl);
        p += bl;
        if (key) {
            *p++ = '/';
            memcpy(p, key, kl);
            p += kl;
        }
    }
    *p = '\0';
    return out;
}

s3_error_t s3_key_check(const char *key)
{
    if (!key)
        return S3E_NONE;
    size_t klen = strlen(key);
    if (klen > S3R_MAX_KEY_BYTES)
        return S3E_KEY_TOO_LONG;
    return s3_utf8_valid(key, klen) ? S3E_NONE : S3E_INVALID_ARGUMENT;
}

bool s3_field_name_ok(const char *name)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~0123456789"
                                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    return *name && name[strspn(name, tchar)] == '\0';
}

bool s3_field_value_ok(const char *value)
{
    const unsigned char *p = (const unsigned char *)value;
    size_t n = strlen(value);
    if (n && (p[0] == ' ' || p[0] == '\t' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        return false;
    for (; *p; p++) {
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return false;
    }
    return true;
}

s3_token_format_t s3_token_format(const char *token)
{
    if (strncmp(token, "s3r1.", 5) == 0)
        return S3_TOKEN_S3R1;
    size_t len = strlen(token);
    size_t hex = strspn(token, "0123456789abcdefABCDEF");
    if (len == 88 && hex == len)
        return S3_TOKEN_CUOBJ_RC;
    /* addr:size:rkey:lid:dctn[:...]: every field non-empty hex. */
    size_t fields = 0;
    for (const char *p = token;; p++) {
        size_t n = strspn(p, "0123456789abcdefABCDEF");
        if (n == 0)
            return S3_TOKEN_UNKNOWN;
        fields++;
        p += n;
        if (*p == '\0')
            break;
        if (*p != ':')
            return S3_TOKEN_UNKNOWN;
    }
    return fields >= 5 ? S3_TOKEN_CUOBJ_DC : S3_TOKEN_UNKNOWN;
}

const char *s3_token_format_name(s3_token_format_t f)
{
    static const char *const names[] = {"s3r1", "cuObject DC", "cuObject RC", "unknown"};
    return names[f];
}
