/* The S3 bucket-policy language: parsing and validation (jansson) into the
 * parsed form (policy_form.h); evaluation is policy_eval.c's. Every list a
 * policy holds is bounded (policy.h), and matching a wildcard is linear,
 * never a recursion (policy_value.c). */
#include "s3/policy_form.h"

#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ARN_S3 "arn:aws:s3:::"

/* ---- the vocabulary ----------------------------------------------------------- */

/* The S3 actions a policy may name (lower-case): a name outside them, or a
 * wildcard that matches none, is an invalid action, as S3 says. */
static const char *const known_actions[] = {
    "s3:abortmultipartupload",
    "s3:bypassgovernanceretention",
    "s3:createbucket",
    "s3:deletebucket",
    "s3:deletebucketownershipcontrols",
    "s3:deletebucketpolicy",
    "s3:deletebucketwebsite",
    "s3:deleteobject",
    "s3:deleteobjecttagging",
    "s3:deleteobjectversion",
    "s3:deleteobjectversiontagging",
    "s3:getaccelerateconfiguration",
    "s3:getbucketacl",
    "s3:getbucketcors",
    "s3:getbucketlocation",
    "s3:getbucketlogging",
    "s3:getbucketnotification",
    "s3:getbucketobjectlockconfiguration",
    "s3:getbucketownershipcontrols",
    "s3:getbucketpolicy",
    "s3:getbucketpolicystatus",
    "s3:getbucketpublicaccessblock",
    "s3:getbucketrequestpayment",
    "s3:getbuckettagging",
    "s3:getbucketversioning",
    "s3:getbucketwebsite",
    "s3:getencryptionconfiguration",
    "s3:getlifecycleconfiguration",
    "s3:getobject",
    "s3:getobjectacl",
    "s3:getobjectattributes",
    "s3:getobjectlegalhold",
    "s3:getobjectretention",
    "s3:getobjecttagging",
    "s3:getobjectversion",
    "s3:getobjectversionacl",
    "s3:getobjectversiontagging",
    "s3:getreplicationconfiguration",
    "s3:listallmybuckets",
    "s3:listbucket",
    "s3:listbucketmultipartuploads",
    "s3:listbucketversions",
    "s3:listmultipartuploadparts",
    "s3:putaccelerateconfiguration",
    "s3:putbucketacl",
    "s3:putbucketcors",
    "s3:putbucketlogging",
    "s3:putbucketnotification",
    "s3:putbucketobjectlockconfiguration",
    "s3:putbucketownershipcontrols",
    "s3:putbucketpolicy",
    "s3:putbucketpublicaccessblock",
    "s3:putbucketrequestpayment",
    "s3:putbuckettagging",
    "s3:putbucketversioning",
    "s3:putbucketwebsite",
    "s3:putencryptionconfiguration",
    "s3:putlifecycleconfiguration",
    "s3:putobject",
    "s3:putobjectacl",
    "s3:putobjectlegalhold",
    "s3:putobjectretention",
    "s3:putobjecttagging",
    "s3:putobjectversionacl",
    "s3:putobjectversiontagging",
    "s3:putreplicationconfiguration",
    "s3:replicateobject",
    "s3:restoreobject",
};

/* The s3: condition keys a policy may use (lower-case; the tag keys are
 * prefixes). Any aws: key is accepted: the global keys are many. */
static const char *const known_s3_keys[] = {
    "s3:prefix",
    "s3:delimiter",
    "s3:max-keys",
    "s3:x-amz-acl",
    "s3:x-amz-server-side-encryption",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "s3:x-amz-server-side-encryption-customer-algorithm",
    "s3:x-amz-copy-source",
    "s3:x-amz-metadata-directive",
    "s3:x-amz-storage-class",
    "s3:x-amz-content-sha256",
    "s3:x-amz-grant-read",
    "s3:x-amz-grant-write",
    "s3:x-amz-grant-read-acp",
    "s3:x-amz-grant-write-acp",
    "s3:x-amz-grant-full-control",
    "s3:versionid",
    "s3:if-match",
    "s3:if-none-match",
    "s3:signatureversion",
    "s3:authtype",
    "s3:signatureage",
    "s3:tlsversion",
    "s3:locationconstraint",
    "s3:object-lock-mode",
    "s3:object-lock-retain-until-date",
    "s3:object-lock-legal-hold",
    "s3:requestobjecttagkeys",
};
static const char *const known_s3_key_prefixes[] = {"s3:existingobjecttag/",
                                                    "s3:requestobjecttag/"};

static const op_def_t op_defs[] = {
    {"StringEquals", CMP_STR_EQ, false},
    {"StringNotEquals", CMP_STR_EQ, true},
    {"StringEqualsIgnoreCase", CMP_STR_EQ_ICASE, false},
    {"StringNotEqualsIgnoreCase", CMP_STR_EQ_ICASE, true},
    {"StringLike", CMP_STR_LIKE, false},
    {"StringNotLike", CMP_STR_LIKE, true},
    {"ArnEquals", CMP_STR_LIKE, false},
    {"ArnLike", CMP_STR_LIKE, false},
    {"ArnNotEquals", CMP_STR_LIKE, true},
    {"ArnNotLike", CMP_STR_LIKE, true},
    {"NumericEquals", CMP_NUM_EQ, false},
    {"NumericNotEquals", CMP_NUM_EQ, true},
    {"NumericLessThan", CMP_NUM_LT, false},
    {"NumericLessThanEquals", CMP_NUM_LE, false},
    {"NumericGreaterThan", CMP_NUM_GT, false},
    {"NumericGreaterThanEquals", CMP_NUM_GE, false},
    {"DateEquals", CMP_DATE_EQ, false},
    {"DateNotEquals", CMP_DATE_EQ, true},
    {"DateLessThan", CMP_DATE_LT, false},
    {"DateLessThanEquals", CMP_DATE_LE, false},
    {"DateGreaterThan", CMP_DATE_GT, false},
    {"DateGreaterThanEquals", CMP_DATE_GE, false},
    {"Bool", CMP_BOOL, false},
    {"IpAddress", CMP_IP, false},
    {"NotIpAddress", CMP_IP, true},
    {"Null", CMP_NULL, false},
};

/* ---- parsing ---------------------------------------------------------------------- */

typedef struct parser {
    const char *bucket;
    char *why;
    size_t cap;
    bool failed;
} parser_t;

static bool fail(parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(parser_t *ps, const char *fmt, ...)
{
    if (!ps->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->why, ps->cap, fmt, ap);
        va_end(ap);
    }
    ps->failed = true;
    return false;
}

static void strlist_free(strlist_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static bool strlist_add(parser_t *ps, strlist_t *l, const char *s, bool lower)
{
    if (l->n >= S3R_POLICY_MAX_VALUES)
        return fail(ps, "Policy has too many values in one element (at most %d).",
                    S3R_POLICY_MAX_VALUES);
    if (strlen(s) > S3R_POLICY_MAX_STRING)
        return fail(ps, "Policy has a value longer than %d bytes.", S3R_POLICY_MAX_STRING);
    char *c = strdup(s);
    char **v = c ? realloc(l->v, (l->n + 1) * sizeof *v) : NULL;
    if (!v) {
        free(c);
        return fail(ps, "Out of memory.");
    }
    if (lower)
        for (char *q = c; *q; q++)
            *q = (char)tolower((unsigned char)*q);
    l->v = v;
    l->v[l->n++] = c;
    return true;
}

/* A string, or an array of strings: each as a C string into fn. Numbers
 * and booleans count as their text where with_scalars (condition values). */
typedef bool (*each_fn)(parser_t *ps, void *ctx, const char *s);

static bool each_string(parser_t *ps, json_t *v, bool with_scalars, const char *what, each_fn fn,
                        void *ctx)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (json_is_array(v) && n == 0)
        return fail(ps, "Policy has an empty %s.", what);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        char num[64];
        const char *s = NULL;
        if (json_is_string(e))
            s = json_string_value(e);
        else if (with_scalars && json_is_integer(e))
            snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(e)), s = num;
        else if (with_scalars && json_is_real(e))
            snprintf(num, sizeof num, "%.17g", json_real_value(e)), s = num;
        else if (with_scalars && json_is_boolean(e))
            s = json_is_true(e) ? "true" : "false";
        if (!s)
            return fail(ps, "Policy has an invalid %s.", what);
        if (!fn(ps, ctx, s))
            return false;
    }
    return true;
}

/* Principal names: "*", an access key, an IAM user or account ARN (the
 * user name or account stands for an access key), a canonical user id. */
static bool add_principal(parser_t *ps, void *ctx, const char *s)
{
    stmt_t *st = ctx;
    if (strcmp(s, "*") == 0) {
        st->any_principal = true;
        return true;
    }
    const char *name = s;
    if (strncmp(s, "arn:aws:iam::", 13) == 0) {
        const char *acct = s + 13, *colon = strchr(acct, ':');
        if (!colon || colon == acct)
            return fail(ps, "Invalid principal in policy");
        if (strcmp(colon + 1, "root") == 0) {
            char a[256];
            size_t alen = (size_t)(colon - acct);
            if (alen >= sizeof a)
                return fail(ps, "Invalid principal in policy");
            memcpy(a, acct, alen);
            a[alen] = '\0';
            return strlist_add(ps, &st->principals, a, false);
        }
        if (strncmp(colon + 1, "user/", 5) != 0)
            return fail(ps, "Invalid principal in policy");
        name = strrchr(colon + 1, '/') + 1;
    } else if (strchr(s, ':') || strchr(s, '*')) {
        return fail(ps, "Invalid principal in policy");
    }
    if (!*name)
        return fail(ps, "Invalid principal in policy");
    return strlist_add(ps, &st->principals, name, false);
}

static bool ignore_string(parser_t *ps, void *ctx, const char *s)
{
    (void)ps, (void)ctx, (void)s;
    return true;
}

static bool parse_principal(parser_t *ps, stmt_t *st, json_t *v)
{
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "*") != 0)
            return fail(ps, "Invalid principal in policy");
        st->any_principal = true;
        return true;
    }
    if (!json_is_object(v) || json_object_size(v) == 0)
        return fail(ps, "Invalid principal in policy");
    const char *type;
    json_t *val;
    json_object_foreach(v, type, val)
    {
        if (strcmp(type, "AWS") == 0 || strcmp(type, "CanonicalUser") == 0) {
            if (!each_string(ps, val, false, "principal", add_principal, st))
                return false;
        } else if (strcmp(type, "Service") == 0 || strcmp(type, "Federated") == 0) {
            /* Valid, and never one of this server's users. */
            if (!each_string(ps, val, false, "principal", ignore_string, NULL))
                return false;
        } else {
            return fail(ps, "Invalid principal in policy");
        }
    }
    return true;
}

static bool add_action(parser_t *ps, void *ctx, const char *s)
{
    stmt_t *st = ctx;
    if (strcmp(s, "*") != 0) {
        if (strncasecmp(s, "s3:", 3) != 0)
            return fail(ps, "Policy has invalid action");
        char pat[S3R_POLICY_MAX_STRING + 1];
        bool any = false;
        for (size_t i = 0; i < N(known_actions) && !any && s3_policy_lower(s, pat, sizeof pat); i++)
            any = s3_policy_glob(pat, known_actions[i]);
        if (!any)
            return fail(ps, "Policy has invalid action");
    }
    return strlist_add(ps, &st->actions, s, true);
}

/* A resource must be an S3 ARN of this bucket or of objects in it. */
static bool add_resource(parser_t *ps, void *ctx, const char *s)
{
    stmt_t *st = ctx;
    if (strcmp(s, "*") != 0) {
        if (strncmp(s, ARN_S3, strlen(ARN_S3)) != 0)
            return fail(ps, "Policy has invalid resource");
        const char *b = s + strlen(ARN_S3);
        size_t blen = strcspn(b, "/");
        char pat[S3R_POLICY_MAX_STRING + 1];
        if (blen == 0 || blen > S3R_POLICY_MAX_STRING)
            return fail(ps, "Policy has invalid resource");
        memcpy(pat, b, blen);
        pat[blen] = '\0';
        if (!s3_policy_glob(pat, ps->bucket))
            return fail(ps, "Policy has invalid resource");
    }
    return strlist_add(ps, &st->resources, s, false);
}

static bool add_value(parser_t *ps, void *ctx, const char *s)
{
    cond_t *c = ctx;
    cmp_kind_t k = c->op->cmp;
    if (c->values.n >= S3R_POLICY_MAX_VALUES)
        return strlist_add(ps, &c->values, s, false); /* fails with the bound's message */
    if (s3_policy_is_numeric(k) || s3_policy_is_date(k)) {
        double *n = realloc(c->nums, (c->values.n + 1) * sizeof *n);
        if (!n)
            return fail(ps, "Out of memory.");
        c->nums = n;
        if (s3_policy_is_numeric(k) ? !s3_policy_parse_number(s, &n[c->values.n])
                                    : !s3_policy_parse_date(s, &n[c->values.n]))
            return fail(ps, "Invalid %s value in condition: %s",
                        s3_policy_is_numeric(k) ? "numeric" : "date", s);
    } else if (k == CMP_BOOL || k == CMP_NULL) {
        if (strcasecmp(s, "true") != 0 && strcasecmp(s, "false") != 0)
            return fail(ps, "Invalid boolean value in condition: %s", s);
    } else if (k == CMP_IP) {
        cidr_t *n = realloc(c->cidrs, (c->values.n + 1) * sizeof *n);
        if (!n)
            return fail(ps, "Out of memory.");
        c->cidrs = n;
        if (!s3_policy_parse_cidr(s, &c->cidrs[c->values.n]))
            return fail(ps, "Invalid IP address in condition: %s", s);
    }
    return strlist_add(ps, &c->values, s, false);
}

static bool key_known(const char *k)
{
    if (strncmp(k, "aws:", 4) == 0)
        return k[4] != '\0';
    for (size_t i = 0; i < N(known_s3_keys); i++)
        if (strcmp(k, known_s3_keys[i]) == 0)
            return true;
    for (size_t i = 0; i < N(known_s3_key_prefixes); i++) {
        size_t n = strlen(known_s3_key_prefixes[i]);
        if (strncmp(k, known_s3_key_prefixes[i], n) == 0 && k[n])
            return true;
    }
    return false;
}

/* "ForAnyValue:StringLikeIfExists" into its qualifier, operator and suffix. */
static const op_def_t *parse_op(const char *name, set_qual_t *set, bool *if_exists)
{
    *set = SET_NONE;
    if (strncmp(name, "ForAnyValue:", 12) == 0)
        *set = SET_ANY, name += 12;
    else if (strncmp(name, "ForAllValues:", 13) == 0)
        *set = SET_ALL, name += 13;
    size_t n = strlen(name);
    *if_exists = n > 8 && strcmp(name + n - 8, "IfExists") == 0;
    if (*if_exists)
        n -= 8;
    for (size_t i = 0; i < N(op_defs); i++)
        if (strlen(op_defs[i].name) == n && strncmp(op_defs[i].name, name, n) == 0)
            return *if_exists && op_defs[i].cmp == CMP_NULL ? NULL : &op_defs[i];
    return NULL;
}

static bool parse_condition(parser_t *ps, stmt_t *st, json_t *v)
{
    if (!json_is_object(v))
        return fail(ps, "Policy has an invalid Condition block.");
    const char *opname;
    json_t *keys;
    json_object_foreach(v, opname, keys)
    {
        set_qual_t set;
        bool if_exists;
        const op_def_t *op = parse_op(opname, &set, &if_exists);
        if (!op)
            return fail(ps, "Invalid Condition type : %s", opname);
        if (!json_is_object(keys) || json_object_size(keys) == 0)
            return fail(ps, "Policy has an invalid Condition block.");
        const char *key;
        json_t *vals;
        json_object_foreach(keys, key, vals)
        {
            if (st->n_conds >= S3R_POLICY_MAX_CONDITIONS)
                return fail(ps, "Policy has too many conditions in one statement (at most %d).",
                            S3R_POLICY_MAX_CONDITIONS);
            cond_t *n = realloc(st->conds, (st->n_conds + 1) * sizeof *n);
            if (!n)
                return fail(ps, "Out of memory.");
            st->conds = n;
            cond_t *c = &st->conds[st->n_conds++];
            memset(c, 0, sizeof *c);
            c->op = op;
            c->set = set;
            c->if_exists = if_exists;
            if (strlen(key) > S3R_POLICY_MAX_STRING || !(c->key = strdup(key)))
                return fail(ps, "Policy has an invalid condition key");
            for (char *q = c->key; *q; q++)
                *q = (char)tolower((unsigned char)*q);
            if (!key_known(c->key))
                return fail(ps, "Policy has an invalid condition key");
            if (!each_string(ps, vals, true, "condition value", add_value, c))
                return false;
        }
    }
    return true;
}

static void stmt_free(stmt_t *st)
{
    strlist_free(&st->principals);
    strlist_free(&st->actions);
    strlist_free(&st->resources);
    for (size_t i = 0; i < st->n_conds; i++) {
        free(st->conds[i].key);
        strlist_free(&st->conds[i].values);
        free(st->conds[i].cidrs);
        free(st->conds[i].nums);
    }
    free(st->conds);
}

/* One of the two spellings of a statement element (Action / NotAction). */
static json_t *either(parser_t *ps, json_t *s, const char *name, const char *not_name, bool *not_p,
                      bool required)
{
    json_t *a = json_object_get(s, name), *b = json_object_get(s, not_name);
    *not_p = b != NULL;
    if (a && b) {
        fail(ps, "Statement has both %s and %s.", name, not_name);
        return NULL;
    }
    if (!a && !b && required)
        fail(ps, "Missing required field %s", name);
    return a ? a : b;
}

static const char *const stmt_fields[] = {"Sid",          "Effect",      "Principal",
                                          "NotPrincipal", "Action",      "NotAction",
                                          "Resource",     "NotResource", "Condition"};

static bool parse_statement(parser_t *ps, stmt_t *st, json_t *s)
{
    if (!json_is_object(s))
        return fail(ps, "Policy has an invalid Statement.");
    const char *field;
    json_t *fv;
    json_object_foreach(s, field, fv)
    {
        bool known = false;
        for (size_t i = 0; i < N(stmt_fields) && !known; i++)
            known = strcmp(field, stmt_fields[i]) == 0;
        if (!known)
            return fail(ps, "Unknown field %s", field);
    }
    json_t *sid = json_object_get(s, "Sid");
    if (sid && !json_is_string(sid))
        return fail(ps, "Policy has an invalid Sid.");
    json_t *eff = json_object_get(s, "Effect");
    if (!eff)
        return fail(ps, "Missing required field Effect");
    const char *e = json_string_value(eff);
    if (!e || (strcmp(e, "Allow") != 0 && strcmp(e, "Deny") != 0))
        return fail(ps, "Invalid effect: %s", e ? e : "(not a string)");
    st->deny = strcmp(e, "Deny") == 0;
    json_t *v = either(ps, s, "Principal", "NotPrincipal", &st->not_principal, true);
    if (!v || !parse_principal(ps, st, v))
        return false;
    /* IAM's rule: NotPrincipal only denies ("Using it with Allow is not
     * supported"), so no statement grants everyone but a few. */
    if (st->not_principal && !st->deny)
        return fail(ps, "Invalid policy: NotPrincipal must be used with \"Effect\": \"Deny\"");
    if (!(v = either(ps, s, "Action", "NotAction", &st->not_action, true)) ||
        !each_string(ps, v, false, "action", add_action, st))
        return false;
    if (!(v = either(ps, s, "Resource", "NotResource", &st->not_resource, true)) ||
        !each_string(ps, v, false, "resource", add_resource, st))
        return false;
    json_t *cond = json_object_get(s, "Condition");
    return !cond || parse_condition(ps, st, cond);
}

s3_policy_t *s3_policy_parse(const char *text, size_t len, const char *bucket, char **canon_p,
                             char *why, size_t cap)
{
    parser_t ps = {bucket, why, cap, false};
    if (len > S3R_POLICY_MAX_BYTES) {
        fail(&ps, "Policies must be less than %d bytes.", S3R_POLICY_MAX_BYTES);
        return NULL;
    }
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        fail(&ps, "Policies must be valid JSON and the first byte must be '{'");
        return NULL;
    }
    s3_policy_t *p = calloc(1, sizeof *p);
    json_t *ver = json_object_get(root, "Version");
    json_t *stmts = json_object_get(root, "Statement");
    const char *field;
    json_t *fv;
    json_object_foreach(root, field, fv)
    {
        if (strcmp(field, "Version") != 0 && strcmp(field, "Statement") != 0 &&
            strcmp(field, "Id") != 0)
            fail(&ps, "Unknown field %s", field);
    }
    if (!p)
        fail(&ps, "Out of memory.");
    else if (ver && (!json_is_string(ver) || (strcmp(json_string_value(ver), "2012-10-17") != 0 &&
                                              strcmp(json_string_value(ver), "2008-10-17") != 0)))
        fail(&ps, "The policy must contain a valid version string");
    else if (!stmts)
        fail(&ps, "Missing required field Statement");
    size_t n = json_is_array(stmts) ? json_array_size(stmts) : 1;
    if (!ps.failed && json_is_array(stmts) && n == 0)
        fail(&ps, "Could not parse the policy: Statement is empty!");
    if (!ps.failed && n > S3R_POLICY_MAX_STATEMENTS)
        fail(&ps, "Policy has too many statements (at most %d).", S3R_POLICY_MAX_STATEMENTS);
    if (!ps.failed && !(p->stmts = calloc(n, sizeof *p->stmts)))
        fail(&ps, "Out of memory.");
    for (size_t i = 0; i < n && !ps.failed; i++) {
        p->n = i + 1;
        parse_statement(&ps, &p->stmts[i], json_is_array(stmts) ? json_array_get(stmts, i) : stmts);
    }
    if (!ps.failed && canon_p && !(*canon_p = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER)))
        fail(&ps, "Out of memory.");
    json_decref(root);
    if (ps.failed) {
        s3_policy_free(p);
        return NULL;
    }
    return p;
}

void s3_policy_free(s3_policy_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        stmt_free(&p->stmts[i]);
    free(p->stmts);
    free(p);
}
