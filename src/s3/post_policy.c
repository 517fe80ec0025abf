/* POST policy documents: decoding (base64, then JSON with jansson) and the
 * checks of expiration and conditions against the form's fields. */
#include "s3/post_policy.h"

#include <ctype.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/buf.h"
#include "common/date.h"
#include "common/hash.h"
#include "common/s3r_limits.h"

static char *msg_dup(const char *fmt, const char *arg)
{
    buf_t b;
    buf_init(&b, 4096);
    buf_printf(&b, fmt, arg);
    return buf_steal(&b, NULL);
}

/* The value of field name (without case), "" when absent. */
static const char *field_value(const post_form_view_t *form, const char *name)
{
    if (strcasecmp(name, "bucket") == 0)
        return form->bucket;
    if (strcasecmp(name, "key") == 0)
        return form->key;
    for (size_t i = 0; i < form->n; i++) {
        if (strcasecmp(form->names[i], name) == 0)
            return form->values[i];
    }
    return "";
}

/* starts-with: Content-Type may list several types, each must match. */
static bool starts_with(const char *name, const char *value, const char *prefix)
{
    size_t plen = strlen(prefix);
    if (strcasecmp(name, "content-type") != 0)
        return strncmp(value, prefix, plen) == 0;
    for (const char *p = value;;) {
        while (*p == ' ')
            p++;
        if (strncmp(p, prefix, plen) != 0)
            return false;
        p = strchr(p, ',');
        if (!p)
            return true;
        p++;
    }
}

/* Everything a check of the conditions needs and finds. */
typedef struct cond_walk {
    const post_form_view_t *form;
    bool *covered; /* per form field: named by a condition */
    uint64_t min, max;
    char *why;
} cond_walk_t;

static void cover(cond_walk_t *cw, const char *name)
{
    for (size_t i = 0; i < cw->form->n; i++)
        if (strcasecmp(cw->form->names[i], name) == 0)
            cw->covered[i] = true;
}

/* One condition; S3E_NONE when it holds. */
static s3_error_t check_condition(cond_walk_t *cw, json_t *cond)
{
    if (json_is_object(cond)) {
        const char *name;
        json_t *v;
        if (json_object_size(cond) == 0) {
            cw->why = msg_dup("%s", "Invalid Policy: Invalid Simple-Condition: Simple-Conditions "
                                    "must have exactly one property specified.");
            return S3E_INVALID_POLICY;
        }
        json_object_foreach(cond, name, v)
        {
            if (!json_is_string(v)) {
                cw->why = msg_dup("Invalid Policy: Invalid Simple-Condition: value of '%s' must "
                                  "be a string.",
                                  name);
                return S3E_INVALID_POLICY;
            }
            cover(cw, name);
            if (strcmp(field_value(cw->form, name), json_string_value(v)) != 0) {
                char *text = json_dumps(cond, JSON_COMPACT);
                cw->why = msg_dup("Invalid according to Policy: Policy Condition failed: %s",
                                  text ? text : name);
                free(text);
                return S3E_ACCESS_DENIED;
            }
        }
        return S3E_NONE;
    }
    const char *op = json_string_value(json_array_get(cond, 0));
    if (!json_is_array(cond) || json_array_size(cond) != 3 || !op) {
        cw->why = msg_dup("Invalid Policy: Invalid Condition: %s", "expected an object or a "
                                                                   "3-element array");
        return S3E_INVALID_POLICY;
    }
    if (strcasecmp(op, "content-length-range") == 0) {
        json_t *lo = json_array_get(cond, 1), *hi = json_array_get(cond, 2);
        if (!json_is_integer(lo) || !json_is_integer(hi) || json_integer_value(lo) < 0 ||
            json_integer_value(hi) < json_integer_value(lo)) {
            cw->why = msg_dup("Invalid Policy: Invalid %s condition.", "content-length-range");
            return S3E_INVALID_POLICY;
        }
        cw->min = (uint64_t)json_integer_value(lo);
        cw->max = (uint64_t)json_integer_value(hi);
        return S3E_NONE;
    }
    const char *ref = json_string_value(json_array_get(cond, 1));
    const char *want = json_string_value(json_array_get(cond, 2));
    bool eq = strcasecmp(op, "eq") == 0, sw = strcasecmp(op, "starts-with") == 0;
    if ((!eq && !sw) || !ref || ref[0] != '$' || !want) {
        cw->why = msg_dup("Invalid Policy: Invalid Condition: unknown operation or operands "
                          "'%s'.",
                          op);
        return S3E_INVALID_POLICY;
    }
    const char *name = ref + 1;
    cover(cw, name);
    const char *have = field_value(cw->form, name);
    if (eq ? strcmp(have, want) != 0 : !starts_with(name, have, want)) {
        char *text = json_dumps(cond, JSON_COMPACT);
        cw->why =
            msg_dup("Invalid according to Policy: Policy Condition failed: %s", text ? text : name);
        free(text);
        return S3E_ACCESS_DENIED;
    }
    return S3E_NONE;
}

/* Fields a policy never has to name (S3: the signature, the file, the policy
 * itself and x-ignore-*; in a Signature V2 form, the signature and the access
 * key: AWSAccessKeyId and signature). */
static bool exempt_field(const char *name)
{
    return strcasecmp(name, "policy") == 0 || strcasecmp(name, "x-amz-signature") == 0 ||
           strcasecmp(name, "signature") == 0 || strcasecmp(name, "AWSAccessKeyId") == 0 ||
           strcasecmp(name, "file") == 0 || strncasecmp(name, "x-ignore-", 9) == 0;
}

s3_error_t s3_post_policy_check(const char *policy_b64, int64_t now_s, const post_form_view_t *form,
                                uint64_t *min_p, uint64_t *max_p, char **why_p)
{
    size_t b64_len = strlen(policy_b64);
    uint8_t *doc = malloc(b64_len / 4 * 3 + 4);
    long doc_len = doc ? hash_base64_decode(policy_b64, b64_len, doc, b64_len / 4 * 3 + 3) : -1;
    json_t *root = NULL;
    if (doc_len >= 0)
        root = json_loadb((const char *)doc, (size_t)doc_len, JSON_REJECT_DUPLICATES, NULL);
    free(doc);
    if (!json_is_object(root)) {
        json_decref(root);
        *why_p = msg_dup("Invalid Policy: %s", "Invalid JSON.");
        return S3E_INVALID_POLICY;
    }
    s3_error_t err = S3E_NONE;
    const char *exp = json_string_value(json_object_get(root, "expiration"));
    json_t *conds = json_object_get(root, "conditions");
    int64_t expires = exp ? date_parse_iso8601(exp) : -1;
    bool *covered = calloc(form->n + 1, sizeof(*covered));
    cond_walk_t cw = {.form = form, .covered = covered, .min = 0, .max = UINT64_MAX};
    if (!covered) {
        err = S3E_INTERNAL;
    } else if (!exp) {
        cw.why = msg_dup("Invalid Policy: %s", "Policy missing expiration.");
        err = S3E_INVALID_POLICY;
    } else if (expires < 0) {
        cw.why = msg_dup("Invalid Policy: Invalid 'expiration' value: '%s'", exp);
        err = S3E_INVALID_POLICY;
    } else if (!json_is_array(conds)) {
        cw.why = msg_dup("Invalid Policy: %s", "Policy missing conditions.");
        err = S3E_INVALID_POLICY;
    } else if (now_s >= expires) {
        cw.why = msg_dup("Invalid according to Policy: %s", "Policy expired.");
        err = S3E_ACCESS_DENIED;
    }
    size_t i;
    json_t *cond;
    if (err == S3E_NONE) {
        json_array_foreach(conds, i, cond)
        {
            if ((err = check_condition(&cw, cond)) != S3E_NONE)
                break;
        }
    }
    if (err == S3E_NONE) {
        buf_t extra;
        buf_init(&extra, S3R_MAX_POST_FIELD_BYTES);
        for (i = 0; i < form->n; i++) {
            if (!covered[i] && !exempt_field(form->names[i]))
                buf_printf(&extra, "%s%s", extra.len ? ", " : "", form->names[i]);
        }
        if (extra.len) {
            cw.why = msg_dup("Invalid according to Policy: Extra input fields: %s", extra.data);
            err = S3E_ACCESS_DENIED;
        }
        buf_free(&extra);
    }
    json_decref(root);
    free(covered);
    if (err == S3E_NONE) {
        *min_p = cw.min;
        *max_p = cw.max;
    } else {
        *why_p = cw.why;
    }
    return err;
}
