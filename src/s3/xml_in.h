/* Parsers for the XML request bodies S3 clients send, over expat. Elements
 * are matched by local name, so bodies with or without the S3 namespace
 * (xmlns="http://s3.amazonaws.com/doc/2006-03-01/") are both accepted.
 * Bodies over S3R_MAX_XML_BODY, bodies with a DOCTYPE or entity declarations
 * (XML bombs, external entities) and anything not well-formed are rejected
 * as malformed (S3 error MalformedXML). */
#ifndef S3R_S3_XML_IN_H
#define S3R_S3_XML_IN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/checksum.h"

typedef struct xml_complete_part {
    uint32_t number;
    char *etag; /* as given, quotes stripped */
    /* ChecksumCRC32, ChecksumCRC32C, ChecksumCRC64NVME, ChecksumSHA1,
     * ChecksumSHA256 as given (trimmed), by common/checksum.h's algorithm;
     * NULL where absent. */
    char *checksums[CHECKSUM_NONE];
} xml_complete_part_t;

/* Parses a CompleteMultipartUpload body. Returns 0, or -1 if malformed (not
 * XML, wrong root, a Part without PartNumber/ETag, PartNumber not 1..10000, no
 * parts, an element given twice in a Part). Parts are returned in document order; checking that
 * they ascend is the caller's (InvalidPartOrder). Caller frees with s3_xml_complete_parts_free. */
int s3_xml_parse_complete(const char *body, size_t len, xml_complete_part_t **parts_p, size_t *n_p);
void s3_xml_complete_parts_free(xml_complete_part_t *parts, size_t n);

typedef struct xml_delete_object {
    char *key;        /* entity-decoded UTF-8, exactly as given (not trimmed) */
    char *version_id; /* <VersionId>, trimmed; NULL when absent */
    char *etag;       /* <ETag> (a conditional delete's If-Match), trimmed; NULL when absent */
    bool dir_cond;    /* <LastModifiedTime> or <Size> given: directory buckets' conditions */
} xml_delete_object_t;

/* Parses a DeleteObjects (<Delete><Quiet>true</Quiet><Object><Key>..</Key>
 * <VersionId>..</VersionId><ETag>..</ETag></Object>...</Delete>) body. Returns 0, or -1 if
 * malformed (incl. zero objects or more than S3R_MAX_DELETE_KEYS=1000). *quiet_p is 1 when Quiet is
 * "true", else 0. Caller frees with s3_xml_delete_objects_free. */
int s3_xml_parse_delete(const char *body, size_t len, int *quiet_p, xml_delete_object_t **objs_p,
                        size_t *n_p);
void s3_xml_delete_objects_free(xml_delete_object_t *objs, size_t n);

/* Parses CreateBucketConfiguration (LocationConstraint), body may be empty.
 * Writes the constraint ("" if none) into out (out_len bytes with the NUL).
 * -1 if malformed or the constraint does not fit. */
int s3_xml_parse_create_bucket(const char *body, size_t len, char *out, size_t out_len);

/* One <Grant> of an AccessControlPolicy: exactly one of id, uri, email is
 * set (the Grantee's ID, URI or EmailAddress, trimmed). */
typedef struct xml_grant {
    char *id, *uri, *email;
    char *permission; /* FULL_CONTROL, READ, WRITE, READ_ACP or WRITE_ACP, as given */
} xml_grant_t;

/* Parses an AccessControlPolicy (PutBucketAcl / PutObjectAcl body):
 * <Owner><ID> into *owner_p (NULL when absent) and the grants of its
 * AccessControlList in document order (at most 100, S3's limit). Returns 0,
 * or -1 if malformed (a Grant without one Grantee identifier or without
 * Permission). Caller frees with s3_xml_acl_free. */
int s3_xml_parse_acl(const char *body, size_t len, char **owner_p, xml_grant_t **grants_p,
                     size_t *n_p);
void s3_xml_acl_free(char *owner, xml_grant_t *grants, size_t n);

/* Parses a flat configuration document: root with leaf elements at paths
 * ("Name" for root > Name, "Parent/Name" for root > Parent > Name, and so
 * on down to 4 levels below the root); every other element is ignored. values[i] gets path i's
 * text, trimmed (malloc'd; NULL when absent). Returns 0, or -1 if malformed (wrong root, a path
 * given twice, markup inside a leaf): then every values[i] is NULL. */
int s3_xml_parse_leaves(const char *body, size_t len, const char *root, const char *const *paths,
                        size_t n, char **values);

/* One leaf of a list document (s3_xml_parse_list). */
typedef struct xml_list_entry {
    size_t item;  /* which item it is in, from 0 in document order */
    size_t field; /* index into the caller's fields */
    char *value;  /* its text, trimmed (malloc'd) */
} xml_list_entry_t;

/* Parses a list document: root > item* > fields, repeatable (e.g.
 * CORSConfiguration > CORSRule > AllowedOrigin). A field is a path below
 * the item: "AllowedOrigin", or "Filter/And/Prefix" for an element deeper
 * down; a path ending in '/' ("Filter/") names a container, recorded with
 * an empty value where it opens, its children matched by their own paths.
 * Other elements are ignored. Entries come in document order; items without
 * any counted too (*n_items_p). Returns 0, or -1 if malformed (wrong root,
 * markup inside a leaf, more than max_entries fields, an element more than
 * XML_LIST_MAX_DEPTH deep). Caller frees with s3_xml_list_free. */
#define XML_LIST_MAX_DEPTH 8
int s3_xml_parse_list(const char *body, size_t len, const char *root, const char *item,
                      const char *const *fields, size_t n_fields, size_t max_entries,
                      xml_list_entry_t **entries_p, size_t *n_p, size_t *n_items_p);
void s3_xml_list_free(xml_list_entry_t *entries, size_t n);

#endif
