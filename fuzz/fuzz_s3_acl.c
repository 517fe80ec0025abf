/* ACLs (src/s3/acl.h): the first byte picks the parser, the rest is the
 * input. Byte 0 even: five x-amz-grant-* header values, separated by NUL
 * bytes (missing ones absent); odd: an AccessControlPolicy body. Configured
 * users: "alice" and "bob" (bob@example.com). Invariants: a refusal says why (but a
 * MalformedACLError) and leaves no grants; an accepted list holds at most
 * S3R_MAX_ACL_GRANTS grants of one known permission each, users' grants
 * name a configured user; its stored form decodes to the same list; its
 * AccessControlPolicy document parses back to the same list (groups listed
 * first) and owner;
 * read in place, the stored form gives the list's permission bits; the
 * canned ACL it may equal stands for the same grants; permission bits stay
 * within FULL_CONTROL. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "common/s3r_limits.h"
#include "fuzz_util.h"
#include "s3/acl.h"

static const char *user_name(void *ctx, const char *id)
{
    (void)ctx;
    return strcmp(id, "alice") == 0 || strcmp(id, "bob") == 0 ? id : NULL;
}

static const char *user_by_email(void *ctx, const char *email)
{
    (void)ctx;
    return strcmp(email, "bob@example.com") == 0 ? "bob" : NULL;
}

static const s3_acl_users_t users = {user_name, user_by_email, NULL};

static void same(const s3_acl_t *a, const s3_acl_t *b)
{
    FUZZ_CHECK(a->n == b->n);
    for (size_t i = 0; i < a->n; i++)
        FUZZ_CHECK(a->v[i].kind == b->v[i].kind && a->v[i].perm == b->v[i].perm &&
                   strcmp(a->v[i].id, b->v[i].id) == 0);
}

/* b is a in the order an AccessControlPolicy document lists it
 * (s3_acl_xml: group grants first, then user grants, each in a's order). */
static void same_as_listed(const s3_acl_t *a, const s3_acl_t *b)
{
    FUZZ_CHECK(a->n == b->n);
    size_t j = 0;
    for (int users_pass = 0; users_pass < 2; users_pass++)
        for (size_t i = 0; i < a->n; i++) {
            if ((a->v[i].kind == S3_GRANTEE_USER) != users_pass)
                continue;
            FUZZ_CHECK(a->v[i].kind == b->v[j].kind && a->v[i].perm == b->v[j].perm &&
                       strcmp(a->v[i].id, b->v[j].id) == 0);
            j++;
        }
}

static void check_list(const s3_acl_t *a, const char *owner)
{
    FUZZ_CHECK(a->n <= S3R_MAX_ACL_GRANTS);
    for (size_t i = 0; i < a->n; i++) {
        int p = a->v[i].perm;
        FUZZ_CHECK(p == S3_ACL_READ || p == S3_ACL_WRITE || p == S3_ACL_READ_ACP ||
                   p == S3_ACL_WRITE_ACP || p == S3_ACL_FULL);
        FUZZ_CHECK(a->v[i].kind != S3_GRANTEE_USER || user_name(NULL, a->v[i].id));
    }
    /* The stored form round trip. */
    char *stored = s3_acl_encode(a);
    FUZZ_CHECK(stored != NULL);
    s3_acl_t back;
    FUZZ_CHECK(s3_acl_decode(stored, strlen(stored), &back) == 0);
    same(a, &back);
    s3_acl_free(&back);
    for (int ig = 0; ig < 2; ig++) /* read in place: the same bits */
        FUZZ_CHECK(
            s3_acl_stored_bits(stored, strlen(stored), "bob", ig) == s3_acl_bits(a, "bob", ig) &&
            s3_acl_stored_bits(stored, strlen(stored), NULL, ig) == s3_acl_bits(a, NULL, ig));
    free(stored);
    /* The document round trip. */
    buf_t doc;
    buf_init(&doc, 1 << 22);
    s3_acl_xml(&doc, owner, a, &users);
    char *xml_owner = NULL;
    const char *why = NULL;
    FUZZ_CHECK(s3_acl_from_xml(doc.data, doc.len, &users, &xml_owner, &back, &why) == S3E_NONE);
    FUZZ_CHECK(xml_owner && strcmp(xml_owner, owner) == 0);
    same_as_listed(a, &back);
    free(xml_owner);
    s3_acl_free(&back);
    buf_free(&doc);
    /* A canned ACL it equals stands for the same grants. */
    int c = s3_acl_match_canned(a, true, owner, "bob");
    if (c >= 0) {
        s3_grant_t v[S3_ACL_CANNED_MAX];
        size_t n = s3_acl_canned((stor_acl_t)c, true, owner, "bob", v);
        FUZZ_CHECK(n == a->n);
    }
    for (const char *who = NULL;; who = who ? NULL : "bob") {
        int bits = s3_acl_bits(a, who, false);
        FUZZ_CHECK(bits >= 0 && bits <= S3_ACL_FULL);
        FUZZ_CHECK((s3_acl_bits(a, who, true) & ~bits) == 0);
        if (!who && bits && !s3_acl_is_public(a))
            FUZZ_CHECK(0); /* anonymous gets only public grants */
        if (who)
            break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool xml = data[0] & 1;
    s3_acl_t a;
    const char *why = NULL;
    s3_error_t err;
    char *owner = NULL;
    char *in = fuzz_cstr(data + 1, size - 1);
    if (xml) {
        err = s3_acl_from_xml(in, size - 1, &users, &owner, &a, &why);
    } else {
        const char *v[S3_ACL_GRANT_HEADERS] = {NULL, NULL, NULL, NULL, NULL};
        size_t off = 0;
        for (size_t h = 0; h < S3_ACL_GRANT_HEADERS && off < size - 1; h++) {
            v[h] = in + off;
            off += strlen(in + off) + 1;
        }
        err = s3_acl_from_grant_headers(v, &users, &a, &why);
    }
    if (err != S3E_NONE) {
        FUZZ_CHECK(a.n == 0 && a.v == NULL && !owner);
        FUZZ_CHECK(err == S3E_MALFORMED_ACL || why != NULL);
        free(in);
        return 0;
    }
    check_list(&a, owner ? owner : "alice");
    free(owner);
    s3_acl_free(&a);
    free(in);
    return 0;
}
