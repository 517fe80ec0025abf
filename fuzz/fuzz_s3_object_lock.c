/* Object lock (src/s3/object_lock.h): byte 0 picks the parser, the rest is
 * its input: 0 an ObjectLockConfiguration body, 1 a Retention body, 2 a
 * LegalHold body, 3 the x-amz-object-lock-* header values (mode, date and
 * legal hold, separated by NULs), 4 a stored configuration, 5 a stored
 * retention. Invariants: a refusal says why (or is MalformedXML with the
 * table's message); an accepted configuration keeps S3's rule (a mode and
 * exactly one positive period within bounds, or no rule), its stored form
 * and its XML read back the same; an accepted retention has a known mode
 * and its stored form and XML read back the same; header retention is in
 * the future of the time given; the protection and change rules answer
 * for any stored form without reading past it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "fuzz_util.h"
#include "s3/object_lock.h"

#define NOW 1893456000 /* 2030-01-01 */

static void check_config(const s3_lock_config_t *c)
{
    if (c->mode == S3_LOCK_NONE) {
        FUZZ_CHECK(c->days == 0 && c->years == 0);
    } else {
        FUZZ_CHECK(c->mode == S3_LOCK_GOVERNANCE || c->mode == S3_LOCK_COMPLIANCE);
        FUZZ_CHECK((c->days == 0) != (c->years == 0));
        FUZZ_CHECK(c->days <= S3_LOCK_MAX_DAYS && c->years <= S3_LOCK_MAX_YEARS);
    }
    char s[64];
    size_t n = s3_lock_config_encode(c, s);
    s3_lock_config_t back;
    FUZZ_CHECK(s3_lock_config_decode(s, n, &back) == 0);
    FUZZ_CHECK(back.mode == c->mode && back.days == c->days && back.years == c->years);
    buf_t xml;
    buf_init(&xml, 4096);
    s3_lock_config_xml(c, &xml);
    const char *why;
    FUZZ_CHECK(s3_lock_config_from_xml(xml.data, xml.len, &back, &why) == S3E_NONE);
    FUZZ_CHECK(back.mode == c->mode && back.days == c->days && back.years == c->years);
    buf_free(&xml);
    s3_retention_t r = s3_lock_config_default(c, NOW);
    FUZZ_CHECK(r.mode == c->mode && (r.mode == S3_LOCK_NONE || r.until > NOW));
}

static void check_retention(const s3_retention_t *r)
{
    FUZZ_CHECK(r->mode == S3_LOCK_NONE || r->mode == S3_LOCK_GOVERNANCE ||
               r->mode == S3_LOCK_COMPLIANCE);
    if (r->mode == S3_LOCK_NONE)
        return;
    FUZZ_CHECK(r->until >= 0 && r->until <= S3_LOCK_MAX_UNTIL);
    char s[48];
    s3_retention_encode(r, s);
    s3_retention_t back;
    FUZZ_CHECK(s3_retention_decode(s, &back) == 0);
    FUZZ_CHECK(back.mode == r->mode && back.until == r->until);
    FUZZ_CHECK(s3_lock_protects(s, NULL, r->until - 1, false));
    FUZZ_CHECK(!s3_lock_protects(s, NULL, r->until, false));
    buf_t xml;
    buf_init(&xml, 4096);
    s3_retention_xml(r, &xml);
    const char *why;
    FUZZ_CHECK(s3_retention_from_xml(xml.data, xml.len, &back, &why) == S3E_NONE);
    FUZZ_CHECK(back.mode == r->mode && back.until == r->until);
    buf_free(&xml);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned which = data[0] % 6;
    size_t len = size - 1;
    char *in = fuzz_cstr(data + 1, len);
    const char *why = NULL;
    s3_error_t err;
    s3_lock_config_t c;
    s3_retention_t r;
    bool on;
    switch (which) {
    case 0:
        err = s3_lock_config_from_xml(in, len, &c, &why);
        FUZZ_CHECK(err == S3E_NONE || err == S3E_MALFORMED_XML ||
                   err == S3E_INVALID_RETENTION_PERIOD);
        if (err == S3E_NONE)
            check_config(&c);
        break;
    case 1:
        err = s3_retention_from_xml(in, len, &r, &why);
        FUZZ_CHECK(err == S3E_NONE || err == S3E_MALFORMED_XML);
        if (err == S3E_NONE)
            check_retention(&r);
        break;
    case 2:
        err = s3_legal_hold_from_xml(in, len, &on, &why);
        FUZZ_CHECK(err == S3E_NONE || err == S3E_MALFORMED_XML);
        break;
    case 3: {
        /* mode \0 date \0 hold: absent when the input has fewer parts. */
        const char *parts[3] = {NULL, NULL, NULL};
        const char *p = in, *end = in + len;
        for (int i = 0; i < 3 && p <= end; i++) {
            parts[i] = p;
            p += strlen(p) + 1;
        }
        err = s3_retention_from_headers(parts[0], parts[1], NOW, &r, &why);
        FUZZ_CHECK(err == S3E_NONE || (err == S3E_INVALID_ARGUMENT && why));
        if (err == S3E_NONE) {
            FUZZ_CHECK(r.mode == S3_LOCK_NONE || r.until > NOW);
            check_retention(&r);
        }
        if (parts[2]) {
            err = s3_legal_hold_from_header(parts[2], &on, &why);
            FUZZ_CHECK(err == S3E_NONE || (err == S3E_INVALID_ARGUMENT && why));
        }
        break;
    }
    case 4:
        if (s3_lock_config_decode(in, len, &c) == 0)
            check_config(&c);
        break;
    case 5: {
        int rc = s3_retention_decode(in, &r);
        if (rc == 0)
            check_retention(&r);
        /* Damage protects; the rules answer for anything. */
        bool prot = s3_lock_protects(in, NULL, NOW, true);
        FUZZ_CHECK(rc == 0 || prot);
        s3_retention_t to = {S3_LOCK_GOVERNANCE, NOW + 1};
        (void)s3_retention_change_check(&r, &to, NOW, false, &why);
        (void)s3_lock_protects(NULL, in, NOW, false);
        break;
    }
    }
    free(in);
    return 0;
}
