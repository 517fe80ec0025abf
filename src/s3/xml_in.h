/* Parsers for the XML request bodies S3 clients send, over expat. Elements
 * are matched by local name, so bodies with or without the S3 namespace
 * (xmlns="http://s3.amazonaws.com/doc/2006-03-01/") are both accepted.
 * Bodies over S3R_MAX_XML_BODY, bodies with a DOCTYPE or entity declarations
 * (XML bombs, external entities) and anything not well-formed are rejected
 * as malformed (S3 error MalformedXML). */
#ifndef S3R_S3_XML_IN_H
#define S3R_S3_XML_IN_H

#include <stddef.h>
#include <stdint.h>

typedef struct xml_complete_part {
    uint32_t number;
    char *etag; /* as given, quotes stripped */
} xml_complete_part_t;

/* Parses a CompleteMultipartUpload body. Returns 0, or -1 if malformed (not
 * XML, wrong root, a Part without PartNumber/ETag, PartNumber not 1..10000, no
 * parts). Parts are returned in document order; checking that they ascend is
 * the caller's (InvalidPartOrder). Caller frees with xml_complete_parts_free. */
int xml_parse_complete(const char *body, size_t len, xml_complete_part_t **parts_p, size_t *n_p);
void xml_complete_parts_free(xml_complete_part_t *parts, size_t n);

typedef struct xml_delete_object {
    char *key; /* entity-decoded UTF-8, exactly as given (not trimmed) */
} xml_delete_object_t;

/* Parses a DeleteObjects (<Delete><Quiet>true</Quiet><Object><Key>..</Key>
 * </Object>...</Delete>) body. Returns 0, or -1 if malformed (incl. zero
 * objects or more than S3R_MAX_DELETE_KEYS=1000). *quiet_p is 1 when Quiet is
 * "true", else 0. Caller frees with xml_delete_objects_free. */
int xml_parse_delete(const char *body, size_t len, int *quiet_p, xml_delete_object_t **objs_p,
                     size_t *n_p);
void xml_delete_objects_free(xml_delete_object_t *objs, size_t n);

/* Parses CreateBucketConfiguration (LocationConstraint), body may be empty.
 * Writes the constraint ("" if none) into out (out_len bytes with the NUL).
 * -1 if malformed or the constraint does not fit. */
int xml_parse_create_bucket(const char *body, size_t len, char *out, size_t out_len);

#endif
