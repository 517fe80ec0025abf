/* Evaluation of a parsed bucket policy for one request (policy.h). A
 * parsed policy is immutable: many threads evaluate it at once. */
#include <string.h>
#include <strings.h>

#include "s3/policy_form.h"

/* Keys that, in an Allow with a wildcard principal, narrow who it grants
 * (GetBucketPolicyStatus): such a statement is not public. */
static const char *const narrowing_keys[] = {
    "aws:sourceip",      "aws:sourcevpc",   "aws:sourcevpce",     "aws:sourcearn",
    "aws:sourceaccount", "aws:sourceowner", "aws:principalorgid", "aws:principalaccount",
    "aws:principalarn",  "aws:userid",      "aws:username",       "aws:principalorgpaths",
};

/* The request's value of a condition's key, parsed once for its type. */
typedef struct have {
    const char *s;
    double num;
    cidr_t ip;
    bool ok; /* parsed (false: no value of the type matches) */
} have_t;

static bool value_matches(const cond_t *c, size_t i, const have_t *h)
{
    const char *want = c->values.v[i];
    switch (c->op->cmp) {
    case CMP_STR_EQ:
        return strcmp(h->s, want) == 0;
    case CMP_STR_EQ_ICASE:
    case CMP_BOOL:
        return strcasecmp(h->s, want) == 0;
    case CMP_STR_LIKE:
        return s3_policy_glob(want, h->s);
    case CMP_IP:
        return h->ok && s3_policy_cidr_match(&c->cidrs[i], &h->ip);
    case CMP_NUM_EQ:
    case CMP_DATE_EQ:
        return h->ok && h->num == c->nums[i];
    case CMP_NUM_LT:
    case CMP_DATE_LT:
        return h->ok && h->num < c->nums[i];
    case CMP_NUM_LE:
    case CMP_DATE_LE:
        return h->ok && h->num <= c->nums[i];
    case CMP_NUM_GT:
    case CMP_DATE_GT:
        return h->ok && h->num > c->nums[i];
    case CMP_NUM_GE:
    case CMP_DATE_GE:
        return h->ok && h->num >= c->nums[i];
    case CMP_NULL:
        break; /* handled by the caller */
    }
    return false;
}

/* IAM's rules: a key the request lacks fails a condition, except that a
 * negated operator, ...IfExists and ForAllValues hold then; Null tests
 * presence. Values of one key are ORed; a negated operator holds when none
 * matches. */
static bool cond_holds(const cond_t *c, const s3_policy_query_t *q)
{
    char buf[64];
    have_t h = {q->key(q->ctx, c->key, buf, sizeof buf), 0, {0}, true};
    if (c->op->cmp == CMP_NULL) {
        bool want_absent = false;
        for (size_t i = 0; i < c->values.n; i++)
            if (strcasecmp(c->values.v[i], "true") == 0)
                want_absent = true;
        return want_absent == (h.s == NULL);
    }
    if (!h.s)
        return c->if_exists || c->set == SET_ALL || c->op->negate;
    if (c->op->cmp == CMP_IP)
        h.ok = strchr(h.s, '/') == NULL && s3_policy_parse_cidr(h.s, &h.ip);
    else if (s3_policy_is_numeric(c->op->cmp))
        h.ok = s3_policy_parse_number(h.s, &h.num);
    else if (s3_policy_is_date(c->op->cmp))
        h.ok = s3_policy_parse_date(h.s, &h.num);
    bool any = false;
    for (size_t i = 0; i < c->values.n && !any; i++)
        any = value_matches(c, i, &h);
    return c->op->negate ? !any : any;
}

static bool principal_matches(const stmt_t *st, const char *who)
{
    bool m = st->any_principal;
    for (size_t i = 0; i < st->principals.n && !m && who; i++)
        m = strcmp(st->principals.v[i], who) == 0;
    return st->not_principal ? !m : m;
}

/* action: q->action lower-cased. */
static bool statement_applies(const stmt_t *st, const s3_policy_query_t *q, const char *action)
{
    if (!principal_matches(st, q->principal))
        return false;
    bool m = false;
    for (size_t i = 0; i < st->actions.n && !m; i++)
        m = s3_policy_glob(st->actions.v[i], action);
    if (m == st->not_action)
        return false;
    m = false;
    for (size_t i = 0; i < st->resources.n && !m; i++)
        m = s3_policy_glob(st->resources.v[i], q->resource);
    if (m == st->not_resource)
        return false;
    for (size_t i = 0; i < st->n_conds; i++)
        if (!cond_holds(&st->conds[i], q))
            return false;
    return true;
}

s3_policy_effect_t s3_policy_eval(const s3_policy_t *p, const s3_policy_query_t *q)
{
    char action[128];
    if (!s3_policy_lower(q->action, action, sizeof action))
        return S3_POLICY_DENY; /* no such action: fail closed */
    s3_policy_effect_t r = S3_POLICY_NONE;
    for (size_t i = 0; i < p->n; i++) {
        if (!statement_applies(&p->stmts[i], q, action))
            continue;
        if (p->stmts[i].deny)
            return S3_POLICY_DENY;
        r = S3_POLICY_ALLOW;
    }
    return r;
}

bool s3_policy_is_public(const s3_policy_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        const stmt_t *st = &p->stmts[i];
        if (st->deny || !st->any_principal)
            continue;
        bool narrowed = false;
        for (size_t c = 0; c < st->n_conds && !narrowed; c++)
            for (size_t k = 0; k < N(narrowing_keys) && !narrowed; k++)
                narrowed =
                    strcmp(st->conds[c].key, narrowing_keys[k]) == 0 && !st->conds[c].op->negate;
        if (!narrowed)
            return true;
    }
    return false;
}
