/* Request-body XML parsers over expat; see xml_in.h.
 *
 * One small SAX state machine serves the three documents: it tracks the
 * element depth, captures the text of the few leaf elements it cares about
 * (text may arrive in several character-data callbacks) and ignores every
 * other element, as S3 does. Any structural error stops the parser at once. */
#include "s3/xml_in.h"

#include <expat.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/buf.h"
#include "common/s3r_limits.h"

/* Longest text of one captured element. Keys are at most S3R_MAX_KEY_BYTES;
 * a longer one is still captured so the handler can answer KeyTooLongError,
 * but nothing unbounded is. */
#define XML_MAX_TEXT (8 * 1024)
#define NS_SEP       '\x01'

typedef enum xml_doc {
    DOC_COMPLETE,
    DOC_DELETE,
    DOC_CREATE_BUCKET,
    DOC_ACL,
    DOC_LEAVES, /* s3_xml_parse_leaves: the root and paths the caller names */
    DOC_LIST,   /* s3_xml_parse_list: repeated items of repeatable leaves */
} xml_doc_t;

typedef enum xml_field {
    F_NONE,
    F_PART_NUMBER,
    F_ETAG,
    F_PART_CHECKSUM,
    F_QUIET,
    F_KEY,
    F_LOCATION,
    F_VERSION_ID,
    F_OWNER_ID,
    F_GRANTEE_ID,
    F_GRANTEE_URI,
    F_GRANTEE_EMAIL,
    F_PERMISSION,
    F_LEAF,
    F_LIST,
} xml_field_t;

#define XML_MAX_GRANTS       S3R_MAX_ACL_GRANTS
#define XML_LEAVES_MAX_DEPTH 4 /* s3_xml_parse_leaves: levels below the root */

typedef struct xml_ctx {
    XML_Parser parser;
    xml_doc_t doc;
    int depth;
    bool failed;

    xml_field_t field; /* the element whose text is being captured */
    int field_depth;
    buf_t text;

    /* CompleteMultipartUpload */
    xml_complete_part_t *parts;
    size_t n_parts, cap_parts;
    bool in_part, have_number;
    uint32_t number;
    char *etag;
    char *checksums[CHECKSUM_NONE];
    checksum_alg_t checksum_alg; /* the Checksum* element being captured */

    /* Delete */
    xml_delete_object_t *objs;
    size_t n_objs, cap_objs;
    bool in_object, have_quiet;
    int quiet;
    char *key;
    char *version_id;
    bool dir_cond; /* the Object has a LastModifiedTime or a Size */

    /* CreateBucketConfiguration */
    char *location;

    /* AccessControlPolicy */
    char *owner_id;
    bool in_owner, in_acl, in_grant, in_grantee;
    xml_grant_t grant; /* the one being read */
    xml_grant_t *grants;
    size_t n_grants, cap_grants;

    /* s3_xml_parse_leaves */
    const char *root;
    const char *const *paths;
    size_t n_paths, leaf;
    char **values;
    /* The path below the root of the element being read ("a/b/c"), and
     * its length at each level below the root (1: the root's children;
     * SIZE_MAX: too long to be a path asked for). */
    char lpath[160];
    size_t lpath_end[XML_LEAVES_MAX_DEPTH + 1];

    /* s3_xml_parse_list (root and paths above: paths are the field names) */
    const char *item;
    size_t max_entries, n_items;
    bool in_item;
    /* The path of the open element below the item ("Filter/And/Prefix"),
     * and its length at each depth from 3, to cut it back on the way out. */
    char relpath[128];
    size_t rel_len[XML_LIST_MAX_DEPTH + 1];
    xml_list_entry_t *entries;
    size_t n_entries, cap_entries;
} xml_ctx_t;

static void fail(xml_ctx_t *x)
{
    if (!x->failed) {
        x->failed = true;
        XML_StopParser(x->parser, XML_FALSE);
    }
}

static const char *local_name(const XML_Char *name)
{
    const char *sep = strrchr(name, NS_SEP);
    return sep ? sep + 1 : name;
}

static const char *root_name(const xml_ctx_t *x)
{
    switch (x->doc) {
    case DOC_LEAVES:
    case DOC_LIST:
        return x->root;
    case DOC_COMPLETE:
        return "CompleteMultipartUpload";
    case DOC_DELETE:
        return "Delete";
    case DOC_CREATE_BUCKET:
        return "CreateBucketConfiguration";
    case DOC_ACL:
        return "AccessControlPolicy";
    }
    return "";
}

static void capture(xml_ctx_t *x, xml_field_t f)
{
    x->field = f;
    x->field_depth = x->depth;
    buf_reset(&x->text);
}

/* Where one AccessControlPolicy element's text goes, or NULL to ignore it. */
static char **acl_slot(xml_ctx_t *x, xml_field_t f)
{
    switch (f) {
    case F_OWNER_ID:
        return &x->owner_id;
    case F_GRANTEE_ID:
        return &x->grant.id;
    case F_GRANTEE_URI:
        return &x->grant.uri;
    case F_GRANTEE_EMAIL:
        return &x->grant.email;
    case F_PERMISSION:
        return &x->grant.permission;
    default:
        return NULL;
    }
}

/* AccessControlPolicy > Owner > ID; AccessControlList > Grant > (Grantee >
 * ID | URI | EmailAddress), Permission. */
static void acl_start(xml_ctx_t *x, const char *n)
{
    xml_field_t f = F_NONE;
    if (x->depth == 2) {
        x->in_owner = strcmp(n, "Owner") == 0;
        x->in_acl = strcmp(n, "AccessControlList") == 0;
    } else if (x->depth == 3 && x->in_owner && strcmp(n, "ID") == 0) {
        f = F_OWNER_ID;
    } else if (x->depth == 3 && x->in_acl && strcmp(n, "Grant") == 0) {
        if (x->n_grants == XML_MAX_GRANTS) {
            fail(x);
            return;
        }
        x->in_grant = true;
    } else if (x->depth == 4 && x->in_grant) {
        x->in_grantee = strcmp(n, "Grantee") == 0;
        if (strcmp(n, "Permission") == 0)
            f = F_PERMISSION;
    } else if (x->depth == 5 && x->in_grantee) {
        f = strcmp(n, "ID") == 0             ? F_GRANTEE_ID
            : strcmp(n, "URI") == 0          ? F_GRANTEE_URI
            : strcmp(n, "EmailAddress") == 0 ? F_GRANTEE_EMAIL
                                             : F_NONE;
    }
    if (f == F_NONE)
        return;
    if (*acl_slot(x, f))
        fail(x); /* given twice */
    else
        capture(x, f);
}

/* s3_xml_parse_leaves: root > a > ... > leaf as "a/.../leaf", at most
 * XML_LEAVES_MAX_DEPTH levels below the root. */
static void leaves_start(xml_ctx_t *x, const char *n)
{
    int level = x->depth - 1;
    if (level < 1 || level > XML_LEAVES_MAX_DEPTH)
        return;
    size_t at = level == 1 ? 0 : x->lpath_end[level - 1];
    size_t l = strlen(n);
    if (at == SIZE_MAX || at + 1 + l >= sizeof x->lpath) {
        x->lpath_end[level] = SIZE_MAX;
        return;
    }
    if (level > 1)
        x->lpath[at++] = '/';
    memcpy(x->lpath + at, n, l + 1);
    x->lpath_end[level] = at + l;
    const char *path = x->lpath;
    for (size_t i = 0; i < x->n_paths; i++) {
        if (strcmp(path, x->paths[i]) != 0)
            continue;
        if (x->values[i]) {
            fail(x); /* given twice */
        } else {
            x->leaf = i;
            capture(x, F_LEAF);
        }
        return;
    }
}

static const char *trimmed(buf_t *t, size_t *len_p);

static void end_list_field(xml_ctx_t *x);

/* In an item, an element whose path below it is a field: a leaf is
 * captured; a container ("Filter/", the field ending in '/') is recorded at
 * once, with an empty value, and its children are matched in turn. Deeper
 * than XML_LIST_MAX_DEPTH below the root, or a path too long: malformed. */
static void list_start(xml_ctx_t *x, const char *n)
{
    if (x->depth == 2 && strcmp(n, x->item) == 0) {
        x->in_item = true;
        x->n_items++;
        x->relpath[0] = '\0';
        x->rel_len[2] = 0;
        return;
    }
    if (x->depth < 3 || !x->in_item)
        return;
    size_t base = x->rel_len[x->depth - 1];
    int w = snprintf(x->relpath + base, sizeof x->relpath - base, "%s%s", base ? "/" : "", n);
    if (x->depth > XML_LIST_MAX_DEPTH || w < 0 || (size_t)w >= sizeof x->relpath - base - 1) {
        fail(x);
        return;
    }
    size_t len = base + (size_t)w;
    x->rel_len[x->depth] = len;
    for (size_t i = 0; i < x->n_paths; i++) {
        const char *p = x->paths[i];
        size_t plen = strlen(p);
        bool container = plen && p[plen - 1] == '/';
        if (plen - container != len || strncmp(p, x->relpath, len) != 0)
            continue;
        x->leaf = i;
        if (container) {
            buf_reset(&x->text);
            end_list_field(x);
        } else {
            capture(x, F_LIST);
        }
        return;
    }
}

/* Appends the captured text as an entry of the current item. */
static void end_list_field(xml_ctx_t *x)
{
    if (x->n_entries == x->max_entries) {
        fail(x);
        return;
    }
    if (x->n_entries == x->cap_entries) {
        size_t cap = x->cap_entries ? 2 * x->cap_entries : 16;
        xml_list_entry_t *e = realloc(x->entries, cap * sizeof *e);
        if (!e) {
            fail(x);
            return;
        }
        x->entries = e;
        x->cap_entries = cap;
    }
    size_t len;
    const char *s = trimmed(&x->text, &len);
    char *v = strndup(s, len);
    if (!v) {
        fail(x);
        return;
    }
    x->entries[x->n_entries++] = (xml_list_entry_t){x->n_items - 1, x->leaf, v};
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    (void)attrs;
    xml_ctx_t *x = ud;
    if (x->failed)
        return;
    x->depth++;
    if (x->field != F_NONE) {
        fail(x); /* markup inside a text-only element */
        return;
    }
    const char *n = local_name(name);
    if (x->depth == 1) {
        if (strcmp(n, root_name(x)) != 0)
            fail(x);
        return;
    }
    switch (x->doc) {
    case DOC_COMPLETE:
        if (x->depth == 2 && strcmp(n, "Part") == 0) {
            if (x->n_parts == S3R_MAX_PART_NUMBER) {
                fail(x);
                return;
            }
            x->in_part = true;
            x->have_number = false;
            free(x->etag);
            x->etag = NULL;
            for (int i = 0; i < CHECKSUM_NONE; i++) {
                free(x->checksums[i]);
                x->checksums[i] = NULL;
            }
        } else if (x->depth == 3 && x->in_part) {
            checksum_alg_t alg =
                strncmp(n, "Checksum", 8) == 0 ? checksum_alg_from_name(n + 8) : CHECKSUM_NONE;
            if (alg != CHECKSUM_NONE) {
                if (x->checksums[alg]) {
                    fail(x);
                } else {
                    x->checksum_alg = alg;
                    capture(x, F_PART_CHECKSUM);
                }
            } else if (strcmp(n, "PartNumber") == 0) {
                if (x->have_number)
                    fail(x);
                else
                    capture(x, F_PART_NUMBER);
            } else if (strcmp(n, "ETag") == 0) {
                if (x->etag)
                    fail(x);
                else
                    capture(x, F_ETAG);
            }
        }
        break;
    case DOC_DELETE:
        if (x->depth == 2 && strcmp(n, "Quiet") == 0) {
            if (x->have_quiet)
                fail(x);
            else
                capture(x, F_QUIET);
        } else if (x->depth == 2 && strcmp(n, "Object") == 0) {
            if (x->n_objs == S3R_MAX_DELETE_KEYS) {
                fail(x);
                return;
            }
            x->in_object = true;
            free(x->key);
            free(x->version_id);
            free(x->etag);
            x->key = x->version_id = x->etag = NULL;
            x->dir_cond = false;
        } else if (x->depth == 3 && x->in_object && strcmp(n, "Key") == 0) {
            if (x->key)
                fail(x);
            else
                capture(x, F_KEY);
        } else if (x->depth == 3 && x->in_object && strcmp(n, "VersionId") == 0) {
            if (x->version_id)
                fail(x);
            else
                capture(x, F_VERSION_ID);
        } else if (x->depth == 3 && x->in_object && strcmp(n, "ETag") == 0) {
            if (x->etag)
                fail(x);
            else
                capture(x, F_ETAG);
        } else if (x->depth == 3 && x->in_object &&
                   (strcmp(n, "LastModifiedTime") == 0 || strcmp(n, "Size") == 0)) {
            x->dir_cond = true;
        }
        break;
    case DOC_ACL:
        acl_start(x, n);
        break;
    case DOC_LEAVES:
        leaves_start(x, n);
        break;
    case DOC_LIST:
        list_start(x, n);
        break;
    case DOC_CREATE_BUCKET:
        if (x->depth == 2 && strcmp(n, "LocationConstraint") == 0) {
            if (x->location)
                fail(x);
            else
                capture(x, F_LOCATION);
        }
        break;
    }
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    xml_ctx_t *x = ud;
    if (x->failed || x->field == F_NONE)
        return;
    if (buf_append(&x->text, s, (size_t)len) != 0)
        fail(x);
}

/* The captured text with surrounding XML whitespace removed. */
static const char *trimmed(buf_t *t, size_t *len_p)
{
    const char *s = t->data ? t->data : "";
    size_t len = t->len;
    while (len && strchr(" \t\r\n", s[0])) {
        s++;
        len--;
    }
    while (len && strchr(" \t\r\n", s[len - 1]))
        len--;
    *len_p = len;
    return s;
}

static void end_field(xml_ctx_t *x)
{
    size_t len;
    const char *s;
    switch (x->field) {
    case F_PART_NUMBER: {
        s = trimmed(&x->text, &len);
        uint32_t v = 0;
        if (len == 0 || len > 5) {
            fail(x);
            break;
        }
        for (size_t i = 0; i < len; i++) {
            if (s[i] < '0' || s[i] > '9') {
                fail(x);
                return;
            }
            v = v * 10 + (uint32_t)(s[i] - '0');
        }
        if (v < 1 || v > S3R_MAX_PART_NUMBER) {
            fail(x);
            break;
        }
        x->number = v;
        x->have_number = true;
        break;
    }
    case F_ETAG:
        s = trimmed(&x->text, &len);
        if (len && s[0] == '"') {
            s++;
            len--;
        }
        if (len && s[len - 1] == '"')
            len--;
        x->etag = strndup(s, len);
        if (!x->etag)
            fail(x);
        break;
    case F_PART_CHECKSUM:
        s = trimmed(&x->text, &len);
        x->checksums[x->checksum_alg] = strndup(s, len);
        if (!x->checksums[x->checksum_alg])
            fail(x);
        break;
    case F_QUIET:
        s = trimmed(&x->text, &len);
        if (len == 4 && strncasecmp(s, "true", 4) == 0)
            x->quiet = 1;
        else if (len == 5 && strncasecmp(s, "false", 5) == 0)
            x->quiet = 0;
        else
            fail(x);
        x->have_quiet = true;
        break;
    case F_KEY:
        /* Keys are taken exactly: leading and trailing spaces are part of them. */
        x->key = strndup(x->text.data ? x->text.data : "", x->text.len);
        if (!x->key)
            fail(x);
        break;
    case F_LOCATION:
        s = trimmed(&x->text, &len);
        x->location = strndup(s, len);
        if (!x->location)
            fail(x);
        break;
    case F_LEAF:
        s = trimmed(&x->text, &len);
        x->values[x->leaf] = strndup(s, len);
        if (!x->values[x->leaf])
            fail(x);
        break;
    case F_VERSION_ID:
        s = trimmed(&x->text, &len);
        x->version_id = strndup(s, len);
        if (!x->version_id)
            fail(x);
        break;
    case F_OWNER_ID:
    case F_GRANTEE_ID:
    case F_GRANTEE_URI:
    case F_GRANTEE_EMAIL:
    case F_PERMISSION: {
        char **slot = acl_slot(x, x->field);
        s = trimmed(&x->text, &len);
        *slot = strndup(s, len);
        if (!*slot)
            fail(x);
        break;
    }
    case F_LIST:
        end_list_field(x);
        break;
    case F_NONE:
        break;
    }
    x->field = F_NONE;
}

static void end_part(xml_ctx_t *x)
{
    x->in_part = false;
    if (!x->have_number || !x->etag) {
        fail(x);
        return;
    }
    if (x->n_parts == x->cap_parts) {
        size_t cap = x->cap_parts ? 2 * x->cap_parts : 16;
        xml_complete_part_t *p = realloc(x->parts, cap * sizeof(*p));
        if (!p) {
            fail(x);
            return;
        }
        x->parts = p;
        x->cap_parts = cap;
    }
    x->parts[x->n_parts].number = x->number;
    x->parts[x->n_parts].etag = x->etag;
    for (int i = 0; i < CHECKSUM_NONE; i++) {
        x->parts[x->n_parts].checksums[i] = x->checksums[i];
        x->checksums[i] = NULL;
    }
    x->n_parts++;
    x->etag = NULL;
}

static void end_object(xml_ctx_t *x)
{
    x->in_object = false;
    if (!x->key) {
        fail(x);
        return;
    }
    if (x->n_objs == x->cap_objs) {
        size_t cap = x->cap_objs ? 2 * x->cap_objs : 16;
        xml_delete_object_t *o = realloc(x->objs, cap * sizeof(*o));
        if (!o) {
            fail(x);
            return;
        }
        x->objs = o;
        x->cap_objs = cap;
    }
    x->objs[x->n_objs].key = x->key;
    x->objs[x->n_objs].version_id = x->version_id;
    x->objs[x->n_objs].etag = x->etag;
    x->objs[x->n_objs++].dir_cond = x->dir_cond;
    x->key = x->version_id = x->etag = NULL;
    x->dir_cond = false;
}

static void grant_free(xml_grant_t *g)
{
    free(g->id);
    free(g->uri);
    free(g->email);
    free(g->permission);
    memset(g, 0, sizeof(*g));
}

static void end_grant(xml_ctx_t *x)
{
    x->in_grant = false;
    xml_grant_t *g = &x->grant;
    int ids = (g->id != NULL) + (g->uri != NULL) + (g->email != NULL);
    if (ids != 1 || !g->permission) {
        fail(x);
        return;
    }
    if (x->n_grants == x->cap_grants) {
        size_t cap = x->cap_grants ? 2 * x->cap_grants : 8;
        xml_grant_t *p = realloc(x->grants, cap * sizeof(*p));
        if (!p) {
            fail(x);
            return;
        }
        x->grants = p;
        x->cap_grants = cap;
    }
    x->grants[x->n_grants++] = *g;
    memset(g, 0, sizeof(*g));
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    (void)name;
    xml_ctx_t *x = ud;
    if (x->failed)
        return;
    if (x->field != F_NONE && x->depth == x->field_depth)
        end_field(x);
    if (x->depth == 2 && x->doc == DOC_COMPLETE && x->in_part)
        end_part(x);
    else if (x->depth == 2 && x->doc == DOC_DELETE && x->in_object)
        end_object(x);
    else if (x->depth == 3 && x->doc == DOC_ACL && x->in_grant)
        end_grant(x);
    else if (x->depth == 4 && x->doc == DOC_ACL)
        x->in_grantee = false;
    else if (x->depth == 2 && x->doc == DOC_LIST)
        x->in_item = false;
    x->depth--;
}

/* A DTD is the door to entity expansion bombs and external entities; S3
 * bodies never have one. */
static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    (void)name;
    (void)sysid;
    (void)pubid;
    (void)has_internal_subset;
    fail(ud);
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name, int is_param,
                                   const XML_Char *value, int value_len, const XML_Char *base,
                                   const XML_Char *sysid, const XML_Char *pubid,
                                   const XML_Char *notation)
{
    (void)name;
    (void)is_param;
    (void)value;
    (void)value_len;
    (void)base;
    (void)sysid;
    (void)pubid;
    (void)notation;
    fail(ud);
}

static void ctx_free(xml_ctx_t *x)
{
    buf_free(&x->text);
    free(x->etag);
    for (int i = 0; i < CHECKSUM_NONE; i++)
        free(x->checksums[i]);
    free(x->key);
    free(x->version_id);
    free(x->location);
    free(x->owner_id);
    grant_free(&x->grant);
    if (x->parser)
        XML_ParserFree(x->parser);
}

/* Runs the parser over the whole body; 0 when it is well-formed and every
 * callback was satisfied. */
static int run_with(xml_ctx_t *x, xml_doc_t doc, const xml_ctx_t *names, const char *body,
                    size_t len);

static int run(xml_ctx_t *x, xml_doc_t doc, const char *body, size_t len)
{
    return run_with(x, doc, NULL, body, len);
}

/* run(), with the names of s3_xml_parse_leaves (root, paths, values) taken
 * from names when not NULL. */
static int run_with(xml_ctx_t *x, xml_doc_t doc, const xml_ctx_t *names, const char *body,
                    size_t len)
{
    memset(x, 0, sizeof(*x));
    x->doc = doc;
    if (names) {
        x->root = names->root;
        x->paths = names->paths;
        x->n_paths = names->n_paths;
        x->values = names->values;
        x->item = names->item;
        x->max_entries = names->max_entries;
    }
    buf_init(&x->text, XML_MAX_TEXT);
    if (len > S3R_MAX_XML_BODY || (len && !body))
        return -1;
    x->parser = XML_ParserCreateNS(NULL, NS_SEP);
    if (!x->parser)
        return -1;
    XML_SetUserData(x->parser, x);
    XML_SetElementHandler(x->parser, on_start, on_end);
    XML_SetCharacterDataHandler(x->parser, on_text);
    XML_SetStartDoctypeDeclHandler(x->parser, on_doctype);
    XML_SetEntityDeclHandler(x->parser, on_entity_decl);
    XML_SetParamEntityParsing(x->parser, XML_PARAM_ENTITY_PARSING_NEVER);
    if (XML_Parse(x->parser, body ? body : "", (int)len, XML_TRUE) != XML_STATUS_OK || x->failed)
        return -1;
    return 0;
}

int s3_xml_parse_complete(const char *body, size_t len, xml_complete_part_t **parts_p, size_t *n_p)
{
    xml_ctx_t x;
    int rc = run(&x, DOC_COMPLETE, body, len);
    if (rc == 0 && x.n_parts == 0)
        rc = -1;
    if (rc == 0) {
        *parts_p = x.parts;
        *n_p = x.n_parts;
    } else {
        s3_xml_complete_parts_free(x.parts, x.n_parts);
    }
    ctx_free(&x);
    return rc;
}

void s3_xml_complete_parts_free(xml_complete_part_t *parts, size_t n)
{
    if (!parts)
        return;
    for (size_t i = 0; i < n; i++) {
        free(parts[i].etag);
        for (int k = 0; k < CHECKSUM_NONE; k++)
            free(parts[i].checksums[k]);
    }
    free(parts);
}

int s3_xml_parse_delete(const char *body, size_t len, int *quiet_p, xml_delete_object_t **objs_p,
                        size_t *n_p)
{
    xml_ctx_t x;
    int rc = run(&x, DOC_DELETE, body, len);
    if (rc == 0 && x.n_objs == 0)
        rc = -1;
    if (rc == 0) {
        *quiet_p = x.quiet;
        *objs_p = x.objs;
        *n_p = x.n_objs;
    } else {
        s3_xml_delete_objects_free(x.objs, x.n_objs);
    }
    ctx_free(&x);
    return rc;
}

void s3_xml_delete_objects_free(xml_delete_object_t *objs, size_t n)
{
    if (!objs)
        return;
    for (size_t i = 0; i < n; i++) {
        free(objs[i].key);
        free(objs[i].version_id);
        free(objs[i].etag);
    }
    free(objs);
}

int s3_xml_parse_create_bucket(const char *body, size_t len, char *out, size_t out_len)
{
    if (!out || out_len == 0)
        return -1;
    size_t i = 0;
    while (i < len && strchr(" \t\r\n", body[i]) && body[i])
        i++;
    if (i == len) {
        out[0] = '\0'; /* no body: the default region */
        return 0;
    }
    xml_ctx_t x;
    int rc = run(&x, DOC_CREATE_BUCKET, body, len);
    if (rc == 0) {
        const char *loc = x.location ? x.location : "";
        size_t l = strlen(loc);
        if (l >= out_len) {
            rc = -1;
        } else {
            memcpy(out, loc, l + 1);
        }
    }
    ctx_free(&x);
    return rc;
}

int s3_xml_parse_acl(const char *body, size_t len, char **owner_p, xml_grant_t **grants_p,
                     size_t *n_p)
{
    xml_ctx_t x;
    int rc = run(&x, DOC_ACL, body, len);
    if (rc == 0) {
        *owner_p = x.owner_id;
        x.owner_id = NULL;
        *grants_p = x.grants;
        *n_p = x.n_grants;
    } else {
        s3_xml_acl_free(NULL, x.grants, x.n_grants);
    }
    ctx_free(&x);
    return rc;
}

void s3_xml_acl_free(char *owner, xml_grant_t *grants, size_t n)
{
    free(owner);
    for (size_t i = 0; i < n; i++)
        grant_free(&grants[i]);
    free(grants);
}

int s3_xml_parse_leaves(const char *body, size_t len, const char *root, const char *const *paths,
                        size_t n, char **values)
{
    for (size_t i = 0; i < n; i++)
        values[i] = NULL;
    xml_ctx_t x;
    memset(&x, 0, sizeof x);
    /* run() zeroes the context: the caller's names go in through a copy. */
    xml_ctx_t names = {.root = root, .paths = paths, .n_paths = n, .values = values};
    int rc = run_with(&x, DOC_LEAVES, &names, body, len);
    ctx_free(&x);
    if (rc != 0)
        for (size_t i = 0; i < n; i++) {
            free(values[i]);
            values[i] = NULL;
        }
    return rc;
}

int s3_xml_parse_list(const char *body, size_t len, const char *root, const char *item,
                      const char *const *fields, size_t n_fields, size_t max_entries,
                      xml_list_entry_t **entries_p, size_t *n_p, size_t *n_items_p)
{
    xml_ctx_t x;
    xml_ctx_t names = {.root = root,
                       .item = item,
                       .paths = fields,
                       .n_paths = n_fields,
                       .max_entries = max_entries};
    int rc = run_with(&x, DOC_LIST, &names, body, len);
    if (rc == 0) {
        *entries_p = x.entries;
        *n_p = x.n_entries;
        *n_items_p = x.n_items;
    } else {
        s3_xml_list_free(x.entries, x.n_entries);
    }
    ctx_free(&x);
    return rc;
}

void s3_xml_list_free(xml_list_entry_t *entries, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(entries[i].value);
    free(entries);
}
