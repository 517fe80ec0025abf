/* The parsed form of a bucket policy (policy.h), shared by its parser
 * (policy.c), its evaluation (policy_eval.c) and the value helpers both use
 * (policy_value.c). Private to those three files. */
#ifndef S3R_S3_POLICY_FORM_H
#define S3R_S3_POLICY_FORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "s3/policy.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef enum cmp_kind {
    CMP_STR_EQ,
    CMP_STR_EQ_ICASE,
    CMP_STR_LIKE,
    CMP_NUM_EQ,
    CMP_NUM_LT,
    CMP_NUM_LE,
    CMP_NUM_GT,
    CMP_NUM_GE,
    CMP_DATE_EQ,
    CMP_DATE_LT,
    CMP_DATE_LE,
    CMP_DATE_GT,
    CMP_DATE_GE,
    CMP_BOOL,
    CMP_IP,
    CMP_NULL,
} cmp_kind_t;

typedef struct op_def {
    const char *name;
    cmp_kind_t cmp;
    bool negate;
} op_def_t;

/* ---- the parsed form ------------------------------------------------------------- */

typedef enum set_qual { SET_NONE = 0, SET_ANY, SET_ALL } set_qual_t;

typedef struct cidr {
    int family; /* AF_INET, AF_INET6 */
    uint8_t addr[16];
    int bits;
} cidr_t;

typedef struct strlist {
    char **v;
    size_t n;
} strlist_t;

typedef struct cond {
    const op_def_t *op;
    bool if_exists;
    set_qual_t set;
    char *key; /* lower-case */
    strlist_t values;
    cidr_t *cidrs; /* CMP_IP: the values parsed */
    double *nums;  /* CMP_NUM_*, CMP_DATE_*: the values parsed (dates: unix seconds) */
} cond_t;

typedef struct stmt {
    bool deny;
    bool not_principal, not_action, not_resource;
    bool any_principal;   /* "*" among the principals */
    strlist_t principals; /* access keys */
    strlist_t actions;    /* lower-case patterns */
    strlist_t resources;  /* patterns */
    cond_t *conds;
    size_t n_conds;
} stmt_t;

struct s3_policy {
    stmt_t *stmts;
    size_t n;
};

/* ---- values (policy_value.c) ---------------------------------------------------- */

/* Whether s matches pattern p, where '*' stands for any run of characters
 * and '?' for one, case-sensitive. Linear: about len(s) + len(p) steps
 * (times len/64 for a segment between stars with '?' in it). */
bool s3_policy_glob(const char *p, const char *s);
/* The steps s3_policy_glob took on this thread since it started (each a
 * character of s or of p looked at), so tests can hold its work to a bound
 * without timing it. */
extern _Thread_local unsigned long s3_policy_glob_steps;
/* s lower-cased into out (cap bytes); false if it does not fit. */
bool s3_policy_lower(const char *s, char *out, size_t cap);
/* "a.b.c.d[/n]" or an IPv6 address with an optional prefix length. */
bool s3_policy_parse_cidr(const char *s, cidr_t *c);
bool s3_policy_cidr_match(const cidr_t *c, const cidr_t *ip);
/* Unix seconds of an ISO 8601 date ("2026-11-26", "...T01:02:03Z", with
 * fractions, or an offset) or of an epoch number. */
bool s3_policy_parse_date(const char *s, double *out);
bool s3_policy_parse_number(const char *s, double *out);
bool s3_policy_is_numeric(cmp_kind_t k);
bool s3_policy_is_date(cmp_kind_t k);

#endif
