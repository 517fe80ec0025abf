"""s3rdma: S3 object access over RDMA from Python (the libs3rdma client library).

    import s3rdma
    with s3rdma.Client(endpoint="http://127.0.0.1:9000", access_key="AK",
                       secret_key="SK") as c:
        c.put_object("bucket", "key", b"hello")
        data = c.get_object("bucket", "key")

See help(s3rdma.Client) and python/README.md.
"""
from ._s3rdma import HEADER_VERSION as LIBRARY_VERSION
from .client import (Bucket, Client, DeleteInfo, DeleteResult, ListPage, ObjectEntry,
                     ObjectInfo, RDMAClient, VersionEntry, VersionPage)
from .errors import (AccessDenied, BucketAlreadyExists, BucketNotEmpty, BufferTooSmall,
                     ConnectionFailed, InvalidArgument, InvalidRange, NoCredentialsError,
                     NoSuchBucket, NoSuchKey, PreconditionFailed, S3Error, Timeout,
                     UnsafeLocalPath)

__version__ = "0.1.0"

__all__ = [
    "Client", "RDMAClient", "ObjectInfo", "ObjectEntry", "ListPage", "Bucket", "DeleteResult",
    "DeleteInfo", "VersionEntry", "VersionPage",
    "S3Error", "NoSuchKey", "NoSuchBucket", "AccessDenied", "BucketAlreadyExists",
    "BucketNotEmpty", "InvalidRange", "BufferTooSmall", "ConnectionFailed", "Timeout",
    "InvalidArgument", "NoCredentialsError", "PreconditionFailed", "UnsafeLocalPath",
    "LIBRARY_VERSION",
]
