/* ACLs: canned ACLs, explicit grants (headers and AccessControlPolicy
 * bodies), their stored form and XML, and what a list grants (acl.h). */
#include "s3/acl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/s3r_limits.h"
#include "s3/xml_in.h"

#define URI_ALL_USERS    "http://acs.amazonaws.com/groups/global/AllUsers"
#define URI_AUTH_USERS   "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"
#define URI_LOG_DELIVERY "http://acs.amazonaws.com/groups/s3/LogDelivery"
#define STORED_HEAD      "G1\n"

static const char *const canned_names[STOR_ACL_COUNT] = {
    [STOR_ACL_PRIVATE] = "private",
    [STOR_ACL_PUBLIC_READ] = "public-read",
    [STOR_ACL_PUBLIC_READ_WRITE] = "public-read-write",
    [STOR_ACL_AUTHENTICATED_READ] = "authenticated-read",
    [STOR_ACL_BUCKET_OWNER_READ] = "bucket-owner-read",
    [STOR_ACL_BUCKET_OWNER_FULL_CONTROL] = "bucket-owner-full-control",
};

const char *const s3_acl_grant_headers[S3_ACL_GRANT_HEADERS] = {
    "x-amz-grant-read",      "x-amz-grant-write",        "x-amz-grant-read-acp",
    "x-amz-grant-write-acp", "x-amz-grant-full-control",
};
static const int header_perms[S3_ACL_GRANT_HEADERS] = {
    S3_ACL_READ, S3_ACL_WRITE, S3_ACL_READ_ACP, S3_ACL_WRITE_ACP, S3_ACL_FULL,
};

static const struct {
    int perm;
    const char *name;
} perm_names[] = {
    {S3_ACL_READ, "READ"},           {S3_ACL_WRITE, "WRITE"},       {S3_ACL_READ_ACP, "READ_ACP"},
    {S3_ACL_WRITE_ACP, "WRITE_ACP"}, {S3_ACL_FULL, "FULL_CONTROL"},
};
#define N_PERMS (sizeof perm_names / sizeof perm_names[0])

/* The groups: their URI and their name in the stored form. */
static const struct {
    s3_grantee_kind_t kind;
    const char *uri, *stored;
} groups[] = {
    {S3_GRANTEE_ALL_USERS, URI_ALL_USERS, "AllUsers"},
    {S3_GRANTEE_AUTH_USERS, URI_AUTH_USERS, "AuthenticatedUsers"},
    {S3_GRANTEE_LOG_DELIVERY, URI_LOG_DELIVERY, "LogDelivery"},
};
#define N_GROUPS (sizeof groups / sizeof groups[0])

static const char *perm_name(int perm)
{
    for (size_t i = 0; i < N_PERMS; i++)
        if (perm_names[i].perm == perm)
            return perm_names[i].name;
    return NULL;
}

static int perm_parse(const char *s, size_t len)
{
    for (size_t i = 0; i < N_PERMS; i++)
        if (strlen(perm_names[i].name) == len && memcmp(perm_names[i].name, s, len) == 0)
            return perm_names[i].perm;
    return -1;
}

int s3_acl_canned_parse(const char *name)
{
    for (int a = 0; a < STOR_ACL_COUNT && name; a++)
        if (strcmp(name, canned_names[a]) == 0)
            return a;
    return -1;
}

void s3_acl_free(s3_acl_t *a)
{
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
}

/* Makes room in a for want grants in all (at most S3R_MAX_ACL_GRANTS):
 * -1 on no memory. */
static int reserve(s3_acl_t *a, size_t want)
{
    if (want <= a->cap)
        return 0;
    size_t cap = a->cap ? 2 * a->cap : 8;
    cap = cap < want ? want : cap > S3R_MAX_ACL_GRANTS ? S3R_MAX_ACL_GRANTS : cap;
    s3_grant_t *v = realloc(a->v, cap * sizeof *v);
    if (!v)
        return -1;
    a->v = v;
    a->cap = cap;
    return 0;
}

/* Appends one grant to a, which holds at most S3R_MAX_ACL_GRANTS: -1 past
 * that or on no memory (*full_p tells which). */
static int add(s3_acl_t *a, s3_grantee_kind_t kind, int perm, const char *id, size_t id_len,
               bool *full_p)
{
    *full_p = a->n >= S3R_MAX_ACL_GRANTS;
    if (*full_p || id_len > S3_ACL_ID_MAX || reserve(a, a->n + 1) != 0)
        return -1;
    s3_grant_t *g = &a->v[a->n++];
    g->kind = kind;
    g->perm = perm;
    memcpy(g->id, id, id_len);
    g->id[id_len] = '\0';
    return 0;
}

/* ---- parsing: grantees, headers, bodies ------------------------------------------ */

typedef enum { WHO_ID, WHO_URI, WHO_EMAIL } who_t;

/* Adds the grant of perm to the grantee given as (who, value: len bytes):
 * the answers of s3_acl_from_grant_headers, full_error when the list is
 * full. */
static s3_error_t add_grantee(s3_acl_t *a, who_t who, const char *v, size_t len, int perm,
                              const s3_acl_users_t *users, s3_error_t full_error,
                              const char **why_p)
{
    bool full = false;
    char text[S3_ACL_ID_MAX + 1];
    bool printable = len > 0 && len <= S3_ACL_ID_MAX;
    for (size_t i = 0; printable && i < len; i++)
        printable = (unsigned char)v[i] >= 0x20 && v[i] != 0x7f;
    if (printable) {
        memcpy(text, v, len);
        text[len] = '\0';
    }
    if (who == WHO_EMAIL) {
        const char *id = printable && users->by_email ? users->by_email(users->ctx, text) : NULL;
        if (!id) {
            *why_p = "The e-mail address you provided does not match any account on record.";
            return S3E_UNRESOLVABLE_GRANT;
        }
        /* Kept as a grant to the user it names, as S3 keeps it. */
        len = strnlen(id, S3_ACL_ID_MAX + 1);
        printable = len <= S3_ACL_ID_MAX;
        if (printable)
            memcpy(text, id, len + 1);
        v = text;
        who = WHO_ID;
    }
    if (who == WHO_URI) {
        for (size_t i = 0; i < N_GROUPS; i++) {
            if (strlen(groups[i].uri) != len || memcmp(groups[i].uri, v, len) != 0)
                continue;
            if (add(a, groups[i].kind, perm, "", 0, &full) == 0)
                return S3E_NONE;
            goto failed;
        }
        *why_p = "Invalid group uri";
        return S3E_INVALID_ARGUMENT;
    }
    if (!printable || !users->name(users->ctx, text)) {
        *why_p = "Invalid id";
        return S3E_INVALID_ARGUMENT;
    }
    if (add(a, S3_GRANTEE_USER, perm, v, len, &full) == 0)
        return S3E_NONE;
failed:
    if (!full) {
        *why_p = NULL;
        return S3E_INTERNAL;
    }
    *why_p = "An ACL holds at most 100 grants.";
    return full_error;
}

static const char *skip_spaces(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

/* One header's grantees ("id=a, uri=\"...\""), each given perm. */
static s3_error_t parse_header(s3_acl_t *a, const char *s, int perm, const s3_acl_users_t *users,
                               const char **why_p)
{
    static const char *const malformed = "Malformed grant header: expected a comma-separated "
                                         "list of id=\"...\", uri=\"...\" or emailAddress=\"...\".";
    do {
        s = skip_spaces(s);
        const char *eq = strchr(s, '=');
        if (!eq) {
            *why_p = malformed;
            return S3E_INVALID_ARGUMENT;
        }
        size_t tl = (size_t)(eq - s);
        while (tl > 0 && (s[tl - 1] == ' ' || s[tl - 1] == '\t'))
            tl--;
        who_t who;
        if (tl == 2 && strncasecmp(s, "id", 2) == 0)
            who = WHO_ID;
        else if (tl == 3 && strncasecmp(s, "uri", 3) == 0)
            who = WHO_URI;
        else if (tl == 12 && strncasecmp(s, "emailAddress", 12) == 0)
            who = WHO_EMAIL;
        else {
            *why_p = "Unknown grantee type: use id, uri or emailAddress.";
            return S3E_INVALID_ARGUMENT;
        }
        const char *v = skip_spaces(eq + 1), *end;
        if (*v == '"') {
            end = strchr(++v, '"');
            if (!end) {
                *why_p = malformed;
                return S3E_INVALID_ARGUMENT;
            }
            s = skip_spaces(end + 1);
        } else {
            end = v + strcspn(v, ",");
            s = end;
            while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        }
        if (*s != ',' && *s != '\0') {
            *why_p = malformed;
            return S3E_INVALID_ARGUMENT;
        }
        s3_error_t err =
            add_grantee(a, who, v, (size_t)(end - v), perm, users, S3E_INVALID_ARGUMENT, why_p);
        if (err != S3E_NONE)
            return err;
    } while (*s++ == ',');
    return S3E_NONE;
}

s3_error_t s3_acl_from_grant_headers(const char *const values[S3_ACL_GRANT_HEADERS],
                                     const s3_acl_users_t *users, s3_acl_t *out, const char **why_p)
{
    memset(out, 0, sizeof *out);
    *why_p = NULL;
    for (size_t h = 0; h < S3_ACL_GRANT_HEADERS; h++) {
        if (!values[h])
            continue;
        s3_error_t err = parse_header(out, values[h], header_perms[h], users, why_p);
        if (err != S3E_NONE) {
            s3_acl_free(out);
            return err;
        }
    }
    return S3E_NONE;
}

s3_error_t s3_acl_from_xml(const char *body, size_t len, const s3_acl_users_t *users,
                           char **owner_p, s3_acl_t *out, const char **why_p)
{
    memset(out, 0, sizeof *out);
    *owner_p = NULL;
    *why_p = NULL;
    char *owner = NULL;
    xml_grant_t *grants = NULL;
    size_t n = 0;
    if (s3_xml_parse_acl(body, len, &owner, &grants, &n) != 0)
        return S3E_MALFORMED_ACL;
    s3_error_t err = S3E_NONE;
    for (size_t i = 0; i < n && err == S3E_NONE; i++) {
        const xml_grant_t *g = &grants[i];
        int perm = perm_parse(g->permission, strlen(g->permission));
        if (perm < 0) {
            err = S3E_MALFORMED_ACL;
            break;
        }
        who_t who = g->id ? WHO_ID : g->uri ? WHO_URI : WHO_EMAIL;
        const char *v = g->id ? g->id : g->uri ? g->uri : g->email;
        err = add_grantee(out, who, v, strlen(v), perm, users, S3E_MALFORMED_ACL, why_p);
    }
    if (err == S3E_NONE) {
        *owner_p = owner;
        owner = NULL;
    } else {
        s3_acl_free(out);
    }
    s3_xml_acl_free(owner, grants, n);
    return err;
}

/* ---- canned ACLs as grant lists ----------------------------------------------------- */

static s3_grant_t user_grant(const char *id, int perm)
{
    s3_grant_t g = {S3_GRANTEE_USER, perm, ""};
    size_t l = strnlen(id, S3_ACL_ID_MAX);
    memcpy(g.id, id, l);
    g.id[l] = '\0';
    return g;
}

static s3_grant_t group_grant(s3_grantee_kind_t kind, int perm)
{
    s3_grant_t g = {kind, perm, ""};
    return g;
}

size_t s3_acl_canned(stor_acl_t acl, bool object, const char *owner, const char *bucket_owner,
                     s3_grant_t out[S3_ACL_CANNED_MAX])
{
    size_t n = 0;
    out[n++] = user_grant(owner, S3_ACL_FULL);
    bool other_owner = object && bucket_owner && strcmp(bucket_owner, owner) != 0;
    switch (acl) {
    case STOR_ACL_PUBLIC_READ:
        out[n++] = group_grant(S3_GRANTEE_ALL_USERS, S3_ACL_READ);
        break;
    case STOR_ACL_PUBLIC_READ_WRITE:
        out[n++] = group_grant(S3_GRANTEE_ALL_USERS, S3_ACL_READ);
        out[n++] = group_grant(S3_GRANTEE_ALL_USERS, S3_ACL_WRITE);
        break;
    case STOR_ACL_AUTHENTICATED_READ:
        out[n++] = group_grant(S3_GRANTEE_AUTH_USERS, S3_ACL_READ);
        break;
    case STOR_ACL_BUCKET_OWNER_READ:
        if (other_owner)
            out[n++] = user_grant(bucket_owner, S3_ACL_READ);
        break;
    case STOR_ACL_BUCKET_OWNER_FULL_CONTROL:
        if (other_owner)
            out[n++] = user_grant(bucket_owner, S3_ACL_FULL);
        break;
    default:
        break;
    }
    return n;
}

static bool same_grant(const s3_grant_t *a, const s3_grant_t *b)
{
    return a->kind == b->kind && a->perm == b->perm &&
           (a->kind != S3_GRANTEE_USER || strcmp(a->id, b->id) == 0);
}

int s3_acl_match_canned(const s3_acl_t *a, bool object, const char *owner, const char *bucket_owner)
{
    for (int c = 0; c < STOR_ACL_COUNT; c++) {
        s3_grant_t v[S3_ACL_CANNED_MAX];
        size_t nv = s3_acl_canned((stor_acl_t)c, object, owner, bucket_owner, v);
        if (a->n != nv)
            continue;
        bool used[S3_ACL_CANNED_MAX] = {false};
        bool all = true;
        for (size_t i = 0; i < a->n && all; i++) {
            bool found = false;
            for (size_t j = 0; j < nv && !found; j++)
                if (!used[j] && same_grant(&a->v[i], &v[j]))
                    used[j] = found = true;
            all = found;
        }
        if (all)
            return c;
    }
    return -1;
}

/* ---- what a list grants --------------------------------------------------------------- */

static bool is_public_kind(s3_grantee_kind_t k)
{
    return k == S3_GRANTEE_ALL_USERS || k == S3_GRANTEE_AUTH_USERS;
}

bool s3_acl_is_public(const s3_acl_t *a)
{
    for (size_t i = 0; i < a->n; i++)
        if (is_public_kind(a->v[i].kind))
            return true;
    return false;
}

/* Whether a grant to (kind, id of id_len bytes) names requester (a user
 * id; NULL: anonymous); ignore_public drops the two groups. */
static bool grant_matches(s3_grantee_kind_t kind, const char *id, size_t id_len,
                          const char *requester, bool ignore_public)
{
    switch (kind) {
    case S3_GRANTEE_USER:
        return requester && strlen(requester) == id_len && memcmp(id, requester, id_len) == 0;
    case S3_GRANTEE_ALL_USERS:
        return !ignore_public;
    case S3_GRANTEE_AUTH_USERS:
        return !ignore_public && requester;
    case S3_GRANTEE_LOG_DELIVERY:
        break;
    }
    return false;
}

int s3_acl_bits(const s3_acl_t *a, const char *requester, bool ignore_public)
{
    int bits = 0;
    for (size_t i = 0; i < a->n; i++) {
        const s3_grant_t *g = &a->v[i];
        if (grant_matches(g->kind, g->id, strlen(g->id), requester, ignore_public))
            bits |= g->perm;
    }
    return bits;
}

/* ---- the stored form -------------------------------------------------------------------- */

char *s3_acl_encode(const s3_acl_t *a)
{
    buf_t b;
    buf_init(&b, (size_t)-1 / 2);
    int rc = buf_append_str(&b, STORED_HEAD);
    for (size_t i = 0; i < a->n && rc == 0; i++) {
        const s3_grant_t *g = &a->v[i];
        rc |= buf_append_str(&b, perm_name(g->perm));
        if (g->kind == S3_GRANTEE_USER) {
            rc |= buf_append_str(&b, " user ");
            rc |= buf_append_str(&b, g->id);
        }
        for (size_t k = 0; k < N_GROUPS; k++) {
            if (groups[k].kind == g->kind) {
                rc |= buf_append_str(&b, " ");
                rc |= buf_append_str(&b, groups[k].stored);
            }
        }
        rc |= buf_append_str(&b, "\n");
    }
    if (rc == 0)
        rc = buf_append(&b, "", 1);
    if (rc != 0) {
        buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* One grant of a stored form; its id points into the form. */
typedef struct stored_grant {
    s3_grantee_kind_t kind;
    int perm;
    const char *id; /* S3_GRANTEE_USER: id_len bytes, not NUL-terminated */
    size_t id_len;
} stored_grant_t;

/* Parses one line (without its '\n'): 0, or -1 when it is not a grant. */
static int parse_line(const char *s, size_t len, stored_grant_t *g)
{
    const char *sp = memchr(s, ' ', len);
    if (!sp || (g->perm = perm_parse(s, (size_t)(sp - s))) < 0)
        return -1;
    const char *who = sp + 1;
    size_t wl = len - (size_t)(who - s);
    if (wl > 5 && memcmp(who, "user ", 5) == 0) {
        g->kind = S3_GRANTEE_USER;
        g->id = who + 5;
        g->id_len = wl - 5;
        for (size_t i = 0; i < g->id_len; i++)
            if ((unsigned char)g->id[i] < 0x20)
                return -1;
        return g->id_len <= S3_ACL_ID_MAX ? 0 : -1;
    }
    g->id = "";
    g->id_len = 0;
    for (size_t k = 0; k < N_GROUPS; k++) {
        if (strlen(groups[k].stored) == wl && memcmp(groups[k].stored, who, wl) == 0) {
            g->kind = groups[k].kind;
            return 0;
        }
    }
    return -1;
}

/* Calls fn for each grant of a stored form, in order, while it returns 0:
 * 0, or -1 when the form does not decode, holds more than
 * S3R_MAX_ACL_GRANTS grants, or fn refused one. */
static int stored_walk(const char *stored, size_t len,
                       int (*fn)(void *ctx, const stored_grant_t *g), void *ctx)
{
    size_t hl = sizeof STORED_HEAD - 1, n = 0;
    if (!stored || len < hl || memcmp(stored, STORED_HEAD, hl) != 0)
        return -1;
    const char *s = stored + hl, *end = stored + len;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        stored_grant_t g;
        if (!nl || ++n > S3R_MAX_ACL_GRANTS || parse_line(s, (size_t)(nl - s), &g) != 0 ||
            fn(ctx, &g) != 0)
            return -1;
        s = nl + 1;
    }
    return 0;
}

static int count_grant(void *ctx, const stored_grant_t *g)
{
    (void)g;
    ++*(size_t *)ctx;
    return 0;
}

static int add_grant(void *ctx, const stored_grant_t *g)
{
    bool full;
    return add(ctx, g->kind, g->perm, g->id, g->id_len, &full);
}

int s3_acl_decode(const char *stored, size_t len, s3_acl_t *out)
{
    memset(out, 0, sizeof *out);
    size_t n = 0;
    if (stored_walk(stored, len, count_grant, &n) != 0 || reserve(out, n) != 0 ||
        stored_walk(stored, len, add_grant, out) != 0) {
        s3_acl_free(out);
        return -1;
    }
    return 0;
}

typedef struct bits_ctx {
    const char *requester;
    bool ignore_public;
    int bits;
} bits_ctx_t;

static int or_bits(void *ctx, const stored_grant_t *g)
{
    bits_ctx_t *b = ctx;
    if (grant_matches(g->kind, g->id, g->id_len, b->requester, b->ignore_public))
        b->bits |= g->perm;
    return 0;
}

int s3_acl_stored_bits(const char *stored, size_t len, const char *requester, bool ignore_public)
{
    bits_ctx_t b = {requester, ignore_public, 0};
    return stored_walk(stored, len, or_bits, &b) == 0 ? b.bits : -1;
}

/* ---- the AccessControlPolicy document --------------------------------------------------- */

static void user_xml(buf_t *xml, const char *id, const s3_acl_users_t *users)
{
    const char *name = users->name(users->ctx, id);
    buf_append_str(xml, "<ID>");
    buf_append_xml(xml, id);
    buf_append_str(xml, "</ID><DisplayName>");
    buf_append_xml(xml, name ? name : id);
    buf_append_str(xml, "</DisplayName>");
}

/* S3 defines no order for an AccessControlList. Group grants are listed
 * before user grants (each in stored order), as radosgw lists them: clients
 * written against radosgw index the list that way. */
void s3_acl_xml(buf_t *xml, const char *owner, const s3_acl_t *a, const s3_acl_users_t *users)
{
    buf_append_str(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<AccessControlPolicy xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                        "<Owner>");
    user_xml(xml, owner, users);
    buf_append_str(xml, "</Owner><AccessControlList>");
    for (size_t k = 0; k < 2 * a->n; k++) {
        const s3_grant_t *g = &a->v[k % a->n];
        if ((g->kind == S3_GRANTEE_USER) != (k >= a->n))
            continue; /* groups on the first pass, users on the second */
        buf_append_str(xml, "<Grant><Grantee "
                            "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" ");
        if (g->kind == S3_GRANTEE_USER) {
            buf_append_str(xml, "xsi:type=\"CanonicalUser\">");
            user_xml(xml, g->id, users);
        } else {
            buf_append_str(xml, "xsi:type=\"Group\"><URI>");
            for (size_t k = 0; k < N_GROUPS; k++)
                if (groups[k].kind == g->kind)
                    buf_append_str(xml, groups[k].uri);
            buf_append_str(xml, "</URI>");
        }
        buf_append_str(xml, "</Grantee><Permission>");
        buf_append_str(xml, perm_name(g->perm));
        buf_append_str(xml, "</Permission></Grant>");
    }
    buf_append_str(xml, "</AccessControlList></AccessControlPolicy>");
}
