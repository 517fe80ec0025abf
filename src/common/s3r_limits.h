/* Every limit the server enforces at its edges, in one place. docs/limits.md
 * lists them with the error a client gets past each one; keep both in step. */
#ifndef S3R_COMMON_LIMITS_H
#define S3R_COMMON_LIMITS_H

/* HTTP */
#define S3R_MAX_HEADER_BYTES (16 * 1024) /* request line + headers (S3 allows 8 KiB): 431 / 400 */
#define S3R_HTTP_POOL_BYTES                                                                        \
    (S3R_MAX_HEADER_BYTES + 16 * 1024) /* per-connection memory:                                   \
                 headers + read buffer; libmicrohttpd clears it                                    \
                 per request, so it stays small */
#define S3R_SHUTDOWN_GRACE_S 10        /* in-flight requests get this long on SIGTERM */

/* HTTP connections (defaults; configurable as http.*) */
#define S3R_HTTP_MAX_CONNECTIONS        4096 /* at once; further ones wait in the backlog */
#define S3R_HTTP_MAX_CONNECTIONS_PER_IP 64   /* at once from one address; more: closed */
#define S3R_HTTP_IDLE_TIMEOUT_S         60   /* nothing sent or received: closed */
#define S3R_HTTP_HEAD_TIMEOUT_S         10   /* request line + headers not complete: closed */
#define S3R_HTTP_MIN_BODY_RATE          1024 /* B/s a request body must keep up... */
#define S3R_HTTP_BODY_RATE_WINDOW_S     10   /* ...over each window this long: else closed */
#define S3R_HTTP_THREAD_STACK           (1024 * 1024) /* one thread per connection */
#define S3R_HTTP_SWEEP_MS               250           /* how often the deadlines are checked */
/* A request refused on its headers whose body is already on its way (no
 * "Expect: 100-continue") is read to its end and discarded before the
 * answer, up to this Content-Length, so the client reads the S3 error and
 * not a reset; a longer or chunked body is answered at once and the
 * connection closed. */
#define S3R_HTTP_REFUSED_BODY_DRAIN (16 * 1024 * 1024)

/* Names and metadata */
#define S3R_MAX_KEY_BYTES   1024 /* KeyTooLongError */
#define S3R_MIN_BUCKET_NAME 3    /* InvalidBucketName */
#define S3R_MAX_BUCKET_NAME 63   /* InvalidBucketName */
/* Buckets one access key may own (TooManyBuckets), AWS's default quota: a
 * tenant cannot fill the bucket namespace, nor make every ListBuckets
 * (which reads every bucket record) slow for the others. The setting
 * max_buckets_per_user. */
#define S3R_MAX_BUCKETS_PER_USER 10000
/* storage.inline_max: objects of at most this many bytes live in their index
 * record (local backend; docs/storage.md), and its ceiling. */
#define S3R_INLINE_MAX_DEFAULT  16384
#define S3R_INLINE_MAX_LIMIT    1048576
#define S3R_MAX_USER_META_BYTES 2048 /* MetadataTooLarge: sum of x-amz-meta-* names + values */
#define S3R_MAX_USER_META_COUNT 32   /* MetadataTooLarge: x-amz-meta-* entries of one object */
#define S3R_MAX_USER_META_NAME  (S3R_REPLY_MAX_NAME - 11) /* MetadataTooLarge: after x-amz-meta- */
/* Tags (src/s3/tagging.c), as S3 limits them: more object tags are
 * BadRequest, more bucket tags and longer keys or values InvalidTag.
 * Lengths are Unicode characters. */
#define S3R_MAX_OBJECT_TAGS     10
#define S3R_MAX_BUCKET_TAGS     50
#define S3R_MAX_TAG_KEY_CHARS   128
#define S3R_MAX_TAG_VALUE_CHARS 256
/* Grants of one ACL (x-amz-grant-* headers and AccessControlPolicy bodies
 * together), as S3 limits them: more are InvalidArgument (headers) or
 * MalformedACLError (a body). */
#define S3R_MAX_ACL_GRANTS   100
#define S3R_MAX_HEADER_VALUE 8192 /* one header value the server stores or builds */
/* The stored headers of one object (Content-Type, Content-Encoding,
 * Content-Disposition, Content-Language, Cache-Control, Expires), their
 * values together: InvalidArgument. S3 takes at most 8 KiB of request
 * headers, so it never stores more. */
#define S3R_MAX_STORED_HEADER_BYTES 8192

/* Replies. Every reply must be sendable over every transport, so what one
 * reply's headers may hold is fixed here, and what an object may store is
 * refused when it is written if it would not fit (the write limits above
 * imply these: src/s3/body.c asserts it). The native protocol's message
 * limits are asserted against these in rdma/rdma_native_wire.h. The bytes
 * of a reply's headers ("name\0value\0" each) are S3R_MAX_HEADER_BYTES at
 * most. */
#define S3R_REPLY_MAX_HEADERS 64   /* headers in one reply */
#define S3R_REPLY_MAX_NAME    128  /* one header name */
#define S3R_REPLY_MAX_VALUE   8192 /* one header value */
/* The headers a reply adds besides an object's stored ones, at most (a GET:
 * ETag, Last-Modified, Accept-Ranges, Content-Length, Content-Range,
 * x-amz-mp-parts-count, x-amz-version-id, five x-amz-checksum-*, and the
 * token path's x-amz-rdma-reply and x-amz-rdma-bytes-transferred: 14), and
 * the bytes of each of their values (an ETag, a date, a range, a checksum, a
 * number). */
#define S3R_REPLY_OWN_HEADERS     16
#define S3R_REPLY_OWN_VALUE_BYTES 128

_Static_assert(S3R_MAX_HEADER_VALUE <= S3R_REPLY_MAX_VALUE, "a stored value fits a reply");
_Static_assert(S3R_MAX_USER_META_BYTES <= S3R_REPLY_MAX_VALUE, "a metadata value fits a reply");

/* Objects */
#define S3R_MAX_PUT_BYTES   (5ULL << 30)      /* single PUT / part: EntityTooLarge */
#define S3R_MAX_XML_BODY    (2 * 1024 * 1024) /* request XML bodies: MalformedXML / EntityTooLarge */
#define S3R_MAX_DELETE_KEYS 1000              /* DeleteObjects: MalformedXML */
#define S3R_MAX_LIST_KEYS   1000              /* max-keys is clamped to this */
/* A native ListObjectsV2 of several pages (x-s3rdma-pages, docs/protocol.md
 * §4.2): at most this many pages in one reply (InvalidArgument past it),
 * and no further page once the reply holds this many bytes or its next
 * page might not fit the client's out span. */
#define S3R_NATIVE_LIST_PAGES      16
#define S3R_NATIVE_LIST_BODY_BYTES (8u << 20)
#define S3R_MIN_PART_BYTES         (5 * 1024 * 1024)  /* EntityTooSmall (all parts but the last) */
#define S3R_MAX_PART_NUMBER        10000              /* InvalidArgument */
#define S3R_MAX_AWS_CHUNK          (16 * 1024 * 1024) /* one aws-chunked chunk: IncompleteBody */

/* Bytes of request documents (XML and policy bodies, buffered whole before
 * they are parsed) held at once, server-wide (max_document_memory); one
 * access key, and all anonymous requests together, hold at most half of it.
 * Past either: 503 SlowDown (src/s3/body.c). */
#define S3R_DOCUMENT_MEMORY     (256ULL << 20)
#define S3R_DOCUMENT_MEMORY_MIN (2ULL * S3R_MAX_XML_BODY) /* a key can send one whole document */

/* Bucket policies (src/s3/policy.c): bigger ones are refused at
 * PutBucketPolicy with MalformedPolicy. Parsed policies of at most
 * S3R_POLICY_CACHE buckets are kept at once (src/s3/access.c). */
#define S3R_POLICY_MAX_BYTES      (20 * 1024) /* the document, as S3 */
#define S3R_POLICY_MAX_STATEMENTS 256         /* statements in one policy */
#define S3R_POLICY_MAX_VALUES     256 /* one Principal/Action/Resource list or condition's values */
#define S3R_POLICY_MAX_CONDITIONS 64  /* operator/key pairs in one statement */
#define S3R_POLICY_MAX_STRING     2048 /* one string of the document */
#define S3R_POLICY_CACHE          256  /* buckets whose parsed configuration is cached */
/* Actions (an upload aborted, an object expired) one lifecycle pass takes at
 * most; the rest wait for the next pass (src/s3/lifecycle_run.c). */
#define S3R_LC_PASS_ACTIONS 1000

/* Auth */
#define S3R_MAX_CLOCK_SKEW_S (15 * 60) /* RequestTimeTooSkewed */
/* Browser form uploads (POST): the fields before the file, names and values
 * together, are held in memory up to this: MaxPostPreDataLengthExceeded. */
#define S3R_MAX_POST_FIELD_BYTES (64 * 1024)
#define S3R_MAX_POST_FIELDS      64
#define S3R_MAX_PRESIGN_EXPIRES  604800 /* X-Amz-Expires: AuthorizationQueryParametersError */

/* RDMA sessions (defaults; configurable) */
#define S3R_MAX_SESSIONS               256
#define S3R_MAX_REGIONS_PER_SESSION    64
#define S3R_MAX_REGISTERED_PER_SESSION (16ULL << 30)
#define S3R_MAX_INFLIGHT_TRANSFERS     64
#define S3R_MAX_SESSIONS_PER_USER      64
#define S3R_RDMA_MAX_PENDING           128          /* handshakes in progress, server-wide */
#define S3R_RDMA_PENDING_PER_SOURCE    8            /* ... from one IP address or uid */
#define S3R_RDMA_CONN_OUTQ             (128 * 1024) /* queued replies per connection */
/* Fair shares: one access key holds at most this percent of each
 * server-wide pool (native requests in flight, executor threads, transfer
 * handles, staging chunks): SlowDown past it. */
#define S3R_RDMA_USER_SHARE 50
/* Request bodies: MD5 runs on a pool thread beside the write of the same
 * chunk when the chunk is at least this big (a thread wake-up costs some
 * microseconds; hashing 256 KiB ~0.3 ms). One pool thread per core, at most
 * this many (docs/storage.md, "Write path"). */
#define S3R_BODY_HASH_OFFLOAD_MIN (256u * 1024u)
#define S3R_BODY_HASH_THREADS_MAX 16

/* A transfer whose RDMA operation makes no progress this long fails. */
#define S3R_RDMA_STALL_MS 2000

/* Native requests (defaults; configurable). A request holds at most
 * RDMA_NATIVE_MAX_MSG (96 KiB) while it waits, and its reply as much until
 * UCX has sent it, so a session holds at most 6 MiB and the server 96 MiB
 * of request or reply memory. */
#define S3R_NATIVE_THREADS 4 /* executor threads */
/* The scheduler slice the progress threads ask for (rdma.slice_us), in us;
 * 0: the kernel's default. A short one (100) makes a woken progress thread
 * run before threads on the default slice (EEVDF, Linux 6.12 and later),
 * its share of the CPU unchanged; off by default: measured under the mixed
 * load, it cut the median wait for a progress thread but not the clients'
 * throughput (docs/benchmarks.md). */
#define S3R_RDMA_SLICE_US 0
/* Nice levels the progress threads take below the rest of the server
 * (rdma.priority; 0-20). Each serves all the native sessions of its worker
 * where HTTP has a thread per connection; at the same weight, under the
 * mixed load the two progress threads waited for a core 86-99 % of the time
 * beside 24 HTTP connection threads. 10 (~9x a thread's weight) when the
 * server may lower a nice value (CAP_SYS_NICE, RLIMIT_NICE); otherwise they
 * stay at the process's (docs/deploy.md, docs/benchmarks.md). */
#define S3R_RDMA_PRIORITY 10
#define S3R_NATIVE_PER_SESSION                                                                     \
    64 /* requests in flight (reply not yet sent) per session: SlowDown */
#define S3R_NATIVE_QUEUED                                                                          \
    1024 /* requests in flight (reply not yet sent), server-wide: SlowDown                         \
          */
/* Refusals (SlowDown replies) not yet sent to a session: past this the
 * session does not read its replies, and refused requests are dropped
 * unanswered (about 200 bytes each, so some 300 refusals). */
#define S3R_NATIVE_UNSENT_REFUSAL_BYTES (64 * 1024)
/* With relaxed durability on local storage, a native PutObject whose body
 * travels inline and is at most this long runs on the session's progress
 * thread instead of an executor (docs/protocol.md §4.5): it holds that
 * thread for one small file write, some 50 us (16 KiB: libs3rdma's default
 * inline limit). */
#define S3R_NATIVE_LOCAL_PUT_MAX (16 * 1024)

#endif
