/* S3 error codes with their HTTP status and default message, from one table.
 * Reference: "Error responses" in the Amazon S3 API reference. */
#ifndef S3R_S3_ERRORS_H
#define S3R_S3_ERRORS_H

#define S3_ERROR_TABLE(X)                                                                          \
    X(ACCESS_DENIED, 403, "AccessDenied", "Access Denied.")                                        \
    X(BAD_DIGEST, 400, "BadDigest",                                                                \
      "The Content-MD5 you specified did not match what we received.")                             \
    X(BUCKET_EXISTS, 409, "BucketAlreadyExists",                                                   \
      "The requested bucket name is not available. Please select a different name.")               \
    X(BUCKET_OWNED, 409, "BucketAlreadyOwnedByYou",                                                \
      "Your previous request to create the named bucket succeeded and you already own it.")        \
    X(BUCKET_NOT_EMPTY, 409, "BucketNotEmpty", "The bucket you tried to delete is not empty.")     \
    X(ENTITY_TOO_SMALL, 400, "EntityTooSmall",                                                     \
      "Your proposed upload is smaller than the minimum allowed object size.")                     \
    X(ENTITY_TOO_LARGE, 400, "EntityTooLarge",                                                     \
      "Your proposed upload exceeds the maximum allowed object size.")                             \
    X(INCOMPLETE_BODY, 400, "IncompleteBody",                                                      \
      "You did not provide the number of bytes specified by the Content-Length HTTP header.")      \
    X(INTERNAL, 500, "InternalError", "We encountered an internal error. Please try again.")       \
    X(INVALID_ACCESS_KEY, 403, "InvalidAccessKeyId",                                               \
      "The AWS access key ID you provided does not exist in our records.")                         \
    X(INVALID_ARGUMENT, 400, "InvalidArgument", "Invalid Argument.")                               \
    X(INVALID_STORAGE_CLASS, 400, "InvalidStorageClass",                                           \
      "The storage class you specified is not valid")                                              \
    X(INVALID_BUCKET_NAME, 400, "InvalidBucketName", "The specified bucket is not valid.")         \
    X(INVALID_DIGEST, 400, "InvalidDigest", "The Content-MD5 you specified is not valid.")         \
    X(INVALID_POLICY, 400, "InvalidPolicyDocument",                                                \
      "The content of the form does not meet the conditions specified in the policy document.")    \
    X(MALFORMED_POLICY, 400, "MalformedPolicy",                                                    \
      "Policies must be valid JSON and the first byte must be '{'")                                \
    X(ACL_NOT_SUPPORTED, 400, "AccessControlListNotSupported", "The bucket does not allow ACLs")   \
    X(ACL_WITH_OWNERSHIP, 400, "InvalidBucketAclWithObjectOwnership",                              \
      "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting")            \
    X(MALFORMED_POST, 400, "MalformedPOSTRequest",                                                 \
      "The body of your POST request is not well-formed multipart/form-data.")                     \
    X(POST_FIELDS_TOO_LARGE, 400, "MaxPostPreDataLengthExceeded",                                  \
      "Your POST request fields preceding the upload file were too large.")                        \
    X(INVALID_PART, 400, "InvalidPart",                                                            \
      "One or more of the specified parts could not be found, or its entity tag did not match.")   \
    X(INVALID_PART_ORDER, 400, "InvalidPartOrder",                                                 \
      "The list of parts was not in ascending order.")                                             \
    X(INVALID_PART_NUMBER, 416, "InvalidPartNumber",                                               \
      "The requested partnumber is not satisfiable.")                                              \
    X(INVALID_RANGE, 416, "InvalidRange", "The requested range is not satisfiable.")               \
    X(INVALID_COPY_RANGE, 400, "InvalidRange", "The requested range is not satisfiable.")          \
    X(INVALID_REQUEST, 400, "InvalidRequest", "Invalid Request.")                                  \
    X(INVALID_VERSION_ID, 400, "InvalidArgument", "Invalid version id specified")                  \
    X(ILLEGAL_VERSIONING, 400, "IllegalVersioningConfigurationException",                          \
      "The versioning configuration specified in the request is invalid.")                         \
    X(KEY_TOO_LONG, 400, "KeyTooLongError", "Your key is too long.")                               \
    X(TOO_MANY_BUCKETS, 400, "TooManyBuckets",                                                     \
      "You have attempted to create more buckets than allowed.")                                   \
    X(MALFORMED_ACL, 400, "MalformedACLError",                                                     \
      "The XML you provided was not well-formed or did not validate against our published "        \
      "schema.")                                                                                   \
    X(ILLEGAL_LOCATION, 400, "IllegalLocationConstraintException",                                \
      "The location constraint is incompatible for the region specific endpoint this request "     \
      "was sent to.")                                                                              \
    X(MALFORMED_XML, 400, "MalformedXML",                                                          \
      "The XML you provided was not well-formed or did not validate against our published "        \
      "schema.")                                                                                   \
    X(MALFORMED_AUTH, 400, "AuthorizationHeaderMalformed",                                         \
      "The authorization header you provided is invalid.")                                         \
    X(AUTH_QUERY_ERROR, 400, "AuthorizationQueryParametersError",                                  \
      "Error parsing the X-Amz-Credential parameter.")                                             \
    X(MISSING_SECURITY_HEADER, 400, "MissingSecurityHeader",                                       \
      "Your request was missing a required header.")                                               \
    X(UNRESOLVABLE_GRANT, 400, "UnresolvableGrantByEmailAddress",                                  \
      "The email address you provided does not match any account on record.")                      \
    X(UNEXPECTED_CONTENT, 400, "UnexpectedContent", "This request does not support content.")      \
    X(METADATA_TOO_LARGE, 400, "MetadataTooLarge",                                                 \
      "Your metadata headers exceed the maximum allowed metadata size.")                           \
    X(METHOD_NOT_ALLOWED, 405, "MethodNotAllowed",                                                 \
      "The specified method is not allowed against this resource.")                                \
    X(MISSING_CONTENT_LENGTH, 411, "MissingContentLength",                                         \
      "You must provide the Content-Length HTTP header.")                                          \
    X(NO_SUCH_BUCKET, 404, "NoSuchBucket", "The specified bucket does not exist.")                 \
    X(NO_SUCH_KEY, 404, "NoSuchKey", "The specified key does not exist.")                          \
    X(NO_SUCH_VERSION, 404, "NoSuchVersion", "The specified version does not exist.")              \
    X(NO_SUCH_BUCKET_POLICY, 404, "NoSuchBucketPolicy", "The bucket policy does not exist")        \
    X(NO_SUCH_PAB, 404, "NoSuchPublicAccessBlockConfiguration",                                    \
      "The public access block configuration was not found")                                       \
    X(NO_OWNERSHIP, 404, "OwnershipControlsNotFoundError",                                         \
      "The bucket ownership controls were not found")                                              \
    X(NO_SUCH_CORS, 404, "NoSuchCORSConfiguration", "The CORS configuration does not exist")       \
    X(CORS_FORBIDDEN, 403, "AccessForbidden",                                                      \
      "CORSResponse: CORS is not enabled for this bucket.")                                        \
    X(CORS_BAD_REQUEST, 400, "BadRequest",                                                         \
      "Insufficient information. Origin request header needed.")                                   \
    X(NO_SUCH_TAG_SET, 404, "NoSuchTagSet", "The TagSet does not exist")                           \
    X(INVALID_TAG, 400, "InvalidTag", "The tag provided was not a valid tag.")                     \
    X(BAD_REQUEST, 400, "BadRequest", "Bad Request.")                                              \
    X(KMS_NOT_FOUND, 400, "KMS.NotFoundException", "Invalid keyId")                                \
    X(INVALID_ENCRYPTION_ALGORITHM, 400, "InvalidEncryptionAlgorithmError",                        \
      "The encryption request you specified is not valid. The valid value is AES256.")             \
    X(NO_SUCH_LIFECYCLE, 404, "NoSuchLifecycleConfiguration",                                      \
      "The lifecycle configuration does not exist")                                                \
    X(NO_OBJECT_LOCK_CONFIG, 404, "ObjectLockConfigurationNotFoundError",                          \
      "Object Lock configuration does not exist for this bucket")                                  \
    X(NO_OBJECT_LOCK, 404, "NoSuchObjectLockConfiguration",                                        \
      "The specified object does not have a ObjectLock configuration")                             \
    X(INVALID_BUCKET_STATE, 409, "InvalidBucketState",                                             \
      "The request is not valid with the current state of the bucket.")                            \
    X(INVALID_RETENTION_PERIOD, 400, "InvalidRetentionPeriod",                                     \
      "Default retention period must be a positive integer value.")                                \
    X(NO_SSE_CONFIG, 404, "ServerSideEncryptionConfigurationNotFoundError",                        \
      "The server side encryption configuration was not found")                                    \
    X(NO_SUCH_UPLOAD, 404, "NoSuchUpload",                                                         \
      "The specified multipart upload does not exist. The upload ID might be invalid, or the "     \
      "multipart upload might have been aborted or completed.")                                    \
    X(NOT_IMPLEMENTED, 501, "NotImplemented",                                                      \
      "A header or query you provided implies functionality that is not implemented.")             \
    X(NOT_MODIFIED, 304, "NotModified", "Not Modified.")                                           \
    X(PRECONDITION_FAILED, 412, "PreconditionFailed",                                              \
      "At least one of the pre-conditions you specified did not hold.")                            \
    X(REQUEST_TIME_SKEWED, 403, "RequestTimeTooSkewed",                                            \
      "The difference between the request time and the server's time is too large.")               \
    X(SIGNATURE_MISMATCH, 403, "SignatureDoesNotMatch",                                            \
      "The request signature we calculated does not match the signature you provided. Check "      \
      "your key and signing method.")                                                              \
    X(SHA256_MISMATCH, 400, "XAmzContentSHA256Mismatch",                                           \
      "The provided 'x-amz-content-sha256' header does not match what was computed.")              \
    X(CHECKSUM_MISMATCH, 400, "BadDigest",                                                         \
      "The checksum you specified did not match the calculated checksum.")                         \
    X(INVALID_CHECKSUM, 400, "InvalidRequest", "Value for x-amz-checksum header is invalid.")      \
    X(SLOW_DOWN, 503, "SlowDown", "Please reduce your request rate.")                              \
    X(SERVICE_UNAVAILABLE, 503, "ServiceUnavailable", "The server is shutting down.")              \
    X(REQUEST_TIMEOUT, 400, "RequestTimeout",                                                      \
      "Your socket connection to the server was not read from or written to within the timeout "   \
      "period.")                                                                                   \
    X(TOKEN_BUFFER_TOO_SMALL, 400, "InvalidArgument", "The RDMA buffer is smaller than the object.")

typedef enum s3_error {
    S3E_NONE = 0,
#define S3E_ENUM(name, status, code, msg) S3E_##name,
    S3_ERROR_TABLE(S3E_ENUM)
#undef S3E_ENUM
        S3E_COUNT /* not an error: how many values there are */
} s3_error_t;

int s3_error_status(s3_error_t e);
const char *s3_error_code(s3_error_t e);
const char *s3_error_message(s3_error_t e);

#endif
