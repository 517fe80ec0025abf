/* ACLs (src/s3/acl.c): the grant headers' and AccessControlPolicy bodies'
 * parsers with S3's answers, the canned ACLs as grant lists and back, what a
 * list grants each requester, the stored form's round trip and refusals, and
 * the document written back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/buf.h"
#include "common/s3r_limits.h"
#include "s3/acl.h"

#define ALL  "http://acs.amazonaws.com/groups/global/AllUsers"
#define AUTH "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
#define LOG  "http://acs.amazonaws.com/groups/s3/LogDelivery"

/* Two configured users: "alice" (display name "Alice A.") and "bob"
 * (e-mail address bob@example.com). */
static const char *user_name(void *ctx, const char *id)
{
    (void)ctx;
    if (strcmp(id, "alice") == 0)
        return "Alice A.";
    return strcmp(id, "bob") == 0 ? "bob" : NULL;
}

static const char *user_by_email(void *ctx, const char *email)
{
    (void)ctx;
    return strcmp(email, "bob@example.com") == 0 ? "bob" : NULL;
}

static const s3_acl_users_t users_v = {user_name, user_by_email, NULL};
static const s3_acl_users_t *const users = &users_v;

static void same(const s3_acl_t *a, const s3_acl_t *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_int_equal(a->v[i].kind, b->v[i].kind);
        assert_int_equal(a->v[i].perm, b->v[i].perm);
        assert_string_equal(a->v[i].id, b->v[i].id);
    }
}

static s3_error_t headers(const char *read, const char *full, s3_acl_t *a)
{
    const char *v[S3_ACL_GRANT_HEADERS] = {read, NULL, NULL, NULL, full};
    const char *why = NULL;
    s3_error_t err = s3_acl_from_grant_headers(v, users, a, &why);
    assert_true(err == S3E_NONE || why != NULL);
    if (err != S3E_NONE)
        assert_int_equal(a->n, 0);
    return err;
}

static void test_grant_headers(void **state)
{
    (void)state;
    s3_acl_t a;
    assert_int_equal(headers("id=\"bob\", uri=" ALL ",ID = alice", "id=alice", &a), S3E_NONE);
    assert_int_equal(a.n, 4);
    assert_int_equal(a.v[0].kind, S3_GRANTEE_USER);
    assert_string_equal(a.v[0].id, "bob");
    assert_int_equal(a.v[0].perm, S3_ACL_READ);
    assert_int_equal(a.v[1].kind, S3_GRANTEE_ALL_USERS);
    assert_string_equal(a.v[2].id, "alice");
    assert_int_equal(a.v[3].perm, S3_ACL_FULL);
    s3_acl_free(&a);
    /* Every header's permission. */
    const char *v[S3_ACL_GRANT_HEADERS] = {"id=bob", "id=bob", "id=bob", "id=bob", "id=bob"};
    const char *why;
    assert_int_equal(s3_acl_from_grant_headers(v, users, &a, &why), S3E_NONE);
    assert_int_equal(a.n, 5);
    assert_int_equal(s3_acl_bits(&a, "bob", false), S3_ACL_FULL);
    assert_int_equal(a.v[1].perm, S3_ACL_WRITE);
    assert_int_equal(a.v[2].perm, S3_ACL_READ_ACP);
    assert_int_equal(a.v[3].perm, S3_ACL_WRITE_ACP);
    s3_acl_free(&a);
    /* S3's refusals. */
    assert_int_equal(headers("id=carol", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("uri=http://acs.amazonaws.com/groups/global/Nobody", NULL, &a),
                     S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("emailAddress=\"a@example.com\"", NULL, &a), S3E_UNRESOLVABLE_GRANT);
    /* An address a user has is a grant to that user. */
    assert_int_equal(headers("emailAddress=\"bob@example.com\"", NULL, &a), S3E_NONE);
    assert_int_equal(a.n, 1);
    assert_int_equal(a.v[0].kind, S3_GRANTEE_USER);
    assert_string_equal(a.v[0].id, "bob");
    s3_acl_free(&a);
    assert_int_equal(headers("name=bob", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("id", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("id=bob,", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("id=\"bob", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("id=\"bob\" x", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("id=\"bo\nb\"", NULL, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(headers("id=bob", "id=nobody", &a), S3E_INVALID_ARGUMENT);
    /* At most S3R_MAX_ACL_GRANTS, over every header together. */
    buf_t b;
    buf_init(&b, 1 << 20);
    for (int i = 0; i < S3R_MAX_ACL_GRANTS; i++)
        buf_append_str(&b, i ? ",id=bob" : "id=bob");
    assert_int_equal(headers(b.data, NULL, &a), S3E_NONE);
    assert_int_equal(a.n, S3R_MAX_ACL_GRANTS);
    s3_acl_free(&a);
    assert_int_equal(headers(b.data, "id=alice", &a), S3E_INVALID_ARGUMENT);
    buf_free(&b);
}

static s3_error_t body(const char *grants, char **owner_p, s3_acl_t *a)
{
    char doc[8192];
    snprintf(doc, sizeof doc,
             "<AccessControlPolicy><Owner><ID>alice</ID></Owner><AccessControlList>%s"
             "</AccessControlList></AccessControlPolicy>",
             grants);
    const char *why = NULL;
    return s3_acl_from_xml(doc, strlen(doc), users, owner_p, a, &why);
}

#define GRANT(who, perm)                                                                           \
    "<Grant><Grantee>" who "</Grantee><Permission>" perm "</Permission></Grant>"

static void test_policy_bodies(void **state)
{
    (void)state;
    s3_acl_t a;
    char *owner;
    assert_int_equal(
        body(GRANT("<ID>bob</ID>", "WRITE_ACP") GRANT("<URI>" LOG "</URI>", "READ"), &owner, &a),
        S3E_NONE);
    assert_string_equal(owner, "alice");
    free(owner);
    assert_int_equal(a.n, 2);
    assert_int_equal(a.v[0].perm, S3_ACL_WRITE_ACP);
    assert_int_equal(a.v[1].kind, S3_GRANTEE_LOG_DELIVERY);
    s3_acl_free(&a);
    assert_int_equal(body("", &owner, &a), S3E_NONE); /* every grant revoked */
    assert_int_equal(a.n, 0);
    free(owner);
    assert_int_equal(body(GRANT("<ID>bob</ID>", "EVERYTHING"), &owner, &a), S3E_MALFORMED_ACL);
    assert_int_equal(body(GRANT("<ID>carol</ID>", "READ"), &owner, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(body(GRANT("<URI>" ALL "x</URI>", "READ"), &owner, &a), S3E_INVALID_ARGUMENT);
    assert_int_equal(body(GRANT("<EmailAddress>a@b</EmailAddress>", "READ"), &owner, &a),
                     S3E_UNRESOLVABLE_GRANT);
    assert_null(owner);
    assert_int_equal(
        body(GRANT("<EmailAddress>bob@example.com</EmailAddress>", "READ"), &owner, &a), S3E_NONE);
    assert_string_equal(a.v[0].id, "bob");
    free(owner);
    s3_acl_free(&a);
    const char *why;
    assert_int_equal(s3_acl_from_xml("<nope", 5, users, &owner, &a, &why), S3E_MALFORMED_ACL);
    assert_null(owner);
}

static void test_canned_lists(void **state)
{
    (void)state;
    s3_grant_t v[S3_ACL_CANNED_MAX];
    s3_acl_t a = {v, s3_acl_canned(STOR_ACL_PUBLIC_READ_WRITE, false, "alice", NULL, v), 0};
    assert_int_equal(a.n, 3);
    assert_int_equal(s3_acl_bits(&a, "alice", false), S3_ACL_FULL);
    assert_int_equal(s3_acl_bits(&a, NULL, false), S3_ACL_READ | S3_ACL_WRITE);
    assert_int_equal(s3_acl_bits(&a, NULL, true), 0);
    assert_true(s3_acl_is_public(&a));
    assert_int_equal(s3_acl_match_canned(&a, false, "alice", NULL), STOR_ACL_PUBLIC_READ_WRITE);
    /* In any order. */
    s3_grant_t t = v[0];
    v[0] = v[2];
    v[2] = t;
    assert_int_equal(s3_acl_match_canned(&a, false, "alice", NULL), STOR_ACL_PUBLIC_READ_WRITE);
    a.n = s3_acl_canned(STOR_ACL_AUTHENTICATED_READ, true, "alice", "bob", v);
    assert_int_equal(s3_acl_bits(&a, "bob", false), S3_ACL_READ);
    assert_int_equal(s3_acl_bits(&a, NULL, false), 0);
    /* The bucket-owner ACLs name the bucket's owner only when it is another. */
    a.n = s3_acl_canned(STOR_ACL_BUCKET_OWNER_FULL_CONTROL, true, "alice", "bob", v);
    assert_int_equal(a.n, 2);
    assert_int_equal(s3_acl_bits(&a, "bob", false), S3_ACL_FULL);
    assert_int_equal(s3_acl_match_canned(&a, true, "alice", "bob"),
                     STOR_ACL_BUCKET_OWNER_FULL_CONTROL);
    a.n = s3_acl_canned(STOR_ACL_BUCKET_OWNER_READ, false, "alice", NULL, v);
    assert_int_equal(a.n, 1);
    assert_int_equal(s3_acl_match_canned(&a, false, "alice", NULL), STOR_ACL_PRIVATE);
    assert_false(s3_acl_is_public(&a));
    /* No canned ACL without the owner's FULL_CONTROL. */
    s3_acl_t none = {NULL, 0, 0};
    assert_int_equal(s3_acl_match_canned(&none, false, "alice", NULL), -1);
    assert_int_equal(s3_acl_canned_parse("public-read"), STOR_ACL_PUBLIC_READ);
    assert_int_equal(s3_acl_canned_parse("log-delivery-write"), -1);
}

static void test_bits_of_groups(void **state)
{
    (void)state;
    s3_acl_t a;
    const char *v[S3_ACL_GRANT_HEADERS] = {"uri=" AUTH, "uri=" LOG, "id=bob", NULL, NULL};
    const char *why;
    assert_int_equal(s3_acl_from_grant_headers(v, users, &a, &why), S3E_NONE);
    assert_int_equal(s3_acl_bits(&a, "alice", false), S3_ACL_READ);
    assert_int_equal(s3_acl_bits(&a, "alice", true), 0);
    assert_int_equal(s3_acl_bits(&a, "bob", true), S3_ACL_READ_ACP);
    assert_int_equal(s3_acl_bits(&a, NULL, false), 0); /* LogDelivery grants nothing */
    s3_acl_free(&a);
}

static void test_stored_form(void **state)
{
    (void)state;
    s3_acl_t a, back;
    const char *v[S3_ACL_GRANT_HEADERS] = {"uri=" ALL, NULL, "uri=" AUTH, "uri=" LOG, "id=bob"};
    const char *why;
    assert_int_equal(s3_acl_from_grant_headers(v, users, &a, &why), S3E_NONE);
    char *s = s3_acl_encode(&a);
    assert_string_equal(s, "G1\nREAD AllUsers\nREAD_ACP AuthenticatedUsers\nWRITE_ACP "
                           "LogDelivery\nFULL_CONTROL user bob\n");
    assert_int_equal(s3_acl_decode(s, strlen(s), &back), 0);
    same(&a, &back);
    s3_acl_free(&back);
    /* Read in place, as the decision does: the same bits as the list's. */
    const char *who[] = {NULL, "alice", "bob"};
    for (size_t i = 0; i < 3; i++)
        for (int ig = 0; ig < 2; ig++)
            assert_int_equal(s3_acl_stored_bits(s, strlen(s), who[i], ig),
                             s3_acl_bits(&a, who[i], ig));
    assert_int_equal(s3_acl_stored_bits(s, strlen(s), "bob", false), S3_ACL_FULL);
    assert_int_equal(s3_acl_stored_bits(s, strlen(s), "bo", false), S3_ACL_READ | S3_ACL_READ_ACP);
    free(s);
    s3_acl_free(&a);
    s3_acl_t none = {NULL, 0, 0};
    s = s3_acl_encode(&none);
    assert_string_equal(s, "G1\n");
    assert_int_equal(s3_acl_decode(s, strlen(s), &back), 0);
    assert_int_equal(back.n, 0);
    free(s);
    static const char *const bad[] = {
        "",
        "G2\n",
        "G1",
        "G1\nREAD AllUsers",
        "G1\nREAD Nobody\n",
        "G1\nALL AllUsers\n",
        "G1\nREAD user \n",
        "G1\nREADAllUsers\n",
        "G1\nREAD user a\x01\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(s3_acl_decode(bad[i], strlen(bad[i]), &back), -1);
        assert_int_equal(s3_acl_stored_bits(bad[i], strlen(bad[i]), "bob", false), -1);
    }
    /* At most S3R_MAX_ACL_GRANTS lines. */
    buf_t b;
    buf_init(&b, 1 << 20);
    buf_append_str(&b, "G1\n");
    for (int i = 0; i <= S3R_MAX_ACL_GRANTS; i++)
        buf_append_str(&b, "READ AllUsers\n");
    assert_int_equal(s3_acl_decode(b.data, b.len, &back), -1);
    assert_int_equal(s3_acl_decode(b.data, b.len - 14, &back), 0);
    assert_int_equal(back.n, S3R_MAX_ACL_GRANTS);
    s3_acl_free(&back);
    buf_free(&b);
}

static void test_document(void **state)
{
    (void)state;
    s3_acl_t a;
    const char *v[S3_ACL_GRANT_HEADERS] = {"uri=" ALL, NULL, NULL, NULL, "id=alice,id=bob"};
    const char *why;
    assert_int_equal(s3_acl_from_grant_headers(v, users, &a, &why), S3E_NONE);
    buf_t x;
    buf_init(&x, 1 << 20);
    s3_acl_xml(&x, "alice", &a, users);
    buf_append(&x, "", 1);
    assert_non_null(strstr(x.data, "<Owner><ID>alice</ID><DisplayName>Alice A.</DisplayName>"));
    assert_non_null(strstr(x.data, "xsi:type=\"Group\"><URI>" ALL "</URI></Grantee>"
                                   "<Permission>READ</Permission>"));
    assert_non_null(strstr(x.data, "<ID>bob</ID><DisplayName>bob</DisplayName></Grantee>"
                                   "<Permission>FULL_CONTROL</Permission>"));
    /* The document parses back to the same list. */
    char *owner;
    s3_acl_t back;
    assert_int_equal(s3_acl_from_xml(x.data, x.len - 1, users, &owner, &back, &why), S3E_NONE);
    assert_string_equal(owner, "alice");
    same(&a, &back);
    free(owner);
    s3_acl_free(&back);
    buf_free(&x);
    s3_acl_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grant_headers), cmocka_unit_test(test_policy_bodies),
        cmocka_unit_test(test_canned_lists),  cmocka_unit_test(test_bits_of_groups),
        cmocka_unit_test(test_stored_form),   cmocka_unit_test(test_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
