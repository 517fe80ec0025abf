"""Exceptions raised by s3rdma: one S3Error hierarchy, keyed by the S3 error code
(or, for failures with no S3 answer, by the libs3rdma status)."""
from typing import Dict, List, Optional, Type


class S3Error(Exception):
    """A failed s3rdma call.

    Attributes:
        code: the S3 error code (``"NoSuchKey"``), or ``""`` when the server sent none
            (a connection failure, a local error).
        message: the S3 ``<Message>`` or the library's explanation.
        http_status: the HTTP status (the one HTTP would have had over the native
            transport); 0 when no answer arrived.
        request_id: ``x-amz-request-id``, if any.
        status: the libs3rdma status name (``"S3R_ERR_NO_SUCH_KEY"``).
        needed_bytes: for a buffer too small, the bytes the object needs.
        transport: the transport of the failed attempt (``"http"``, ``"token"``, ``"native"``).
    """

    def __init__(self, message: str = "", code: str = "", http_status: int = 0,
                 request_id: str = "", status: str = "", needed_bytes: int = 0,
                 transport: str = ""):
        self.code = code
        self.message = message
        self.http_status = http_status
        self.request_id = request_id
        self.status = status
        self.needed_bytes = needed_bytes
        self.transport = transport
        super().__init__(self.__str__())

    def __str__(self) -> str:
        parts = [self.code or self.status]
        if self.http_status:
            parts.append(f"(HTTP {self.http_status})")
        if self.message:
            parts.append(f"{self.message}")
        if self.request_id:
            parts.append(f"[request id {self.request_id}]")
        return " ".join(p for p in parts if p)


class NoSuchKey(S3Error, KeyError):
    """The object does not exist (404 NoSuchKey)."""


class NoSuchBucket(S3Error):
    """The bucket does not exist (404 NoSuchBucket)."""


class AccessDenied(S3Error, PermissionError):
    """Credentials, signature or permissions refused (403)."""


class BucketAlreadyExists(S3Error):
    """CreateBucket of a name that is taken (409 BucketAlreadyExists / OwnedByYou)."""


class BucketNotEmpty(S3Error):
    """DeleteBucket of a bucket that still holds objects (409)."""


class InvalidRange(S3Error):
    """The range is not satisfiable (416)."""


class BufferTooSmall(S3Error, ValueError):
    """The object does not fit the buffer given; ``needed_bytes`` says what it needs."""


class ConnectionFailed(S3Error, ConnectionError):
    """The endpoint could not be reached, or the RDMA session could not be set up
    (with fallback off)."""


class Timeout(S3Error, TimeoutError):
    """The operation timed out."""


class InvalidArgument(S3Error, ValueError):
    """A bad argument or setting (the message says which)."""


class NoCredentialsError(InvalidArgument):
    """No access key and secret were found (arguments, environment, profile) for a
    client that signs its requests: boto3's NoCredentialsError. A public bucket is
    read without them by a client made with ``unsigned=True``."""


class PreconditionFailed(S3Error):
    """A conditional request's condition did not hold (412), e.g. a create-only PUT
    (``if_none_match=True``) of a key that already holds an object."""


class UnsafeLocalPath(S3Error, ValueError):
    """Keys whose local path would leave the directory a download was asked to write
    into (a '..' or '.' segment, a leading '/' or '\\'); ``keys`` lists them. Raised
    after everything else was copied (s3rdma.localpath)."""

    def __init__(self, message: str, keys: List[str]):
        self.keys = list(keys)
        super().__init__(message, code="", status="UnsafeLocalPath")


_BY_CODE: Dict[str, Type[S3Error]] = {
    "NoSuchKey": NoSuchKey,
    "NoSuchBucket": NoSuchBucket,
    "AccessDenied": AccessDenied,
    "SignatureDoesNotMatch": AccessDenied,
    "InvalidAccessKeyId": AccessDenied,
    "BucketAlreadyExists": BucketAlreadyExists,
    "BucketAlreadyOwnedByYou": BucketAlreadyExists,
    "BucketNotEmpty": BucketNotEmpty,
    "InvalidRange": InvalidRange,
    "PreconditionFailed": PreconditionFailed,
}

_BY_STATUS: Dict[str, Type[S3Error]] = {
    "S3R_ERR_NO_SUCH_KEY": NoSuchKey,
    "S3R_ERR_NO_SUCH_BUCKET": NoSuchBucket,
    "S3R_ERR_ACCESS_DENIED": AccessDenied,
    "S3R_ERR_BUCKET_EXISTS": BucketAlreadyExists,
    "S3R_ERR_BUCKET_NOT_EMPTY": BucketNotEmpty,
    "S3R_ERR_INVALID_RANGE": InvalidRange,
    "S3R_ERR_BUFFER_TOO_SMALL": BufferTooSmall,
    "S3R_ERR_CONNECT": ConnectionFailed,
    "S3R_ERR_RDMA_UNAVAILABLE": ConnectionFailed,
    "S3R_ERR_TIMEOUT": Timeout,
    "S3R_ERR_INVALID_ARG": InvalidArgument,
}


def from_native(status: int, status_name: str, description: str, http_status: int, code: str,
                message: str, request_id: str, needed_bytes: int,
                transport: str) -> S3Error:
    """Builds the exception for a libs3rdma failure (the extension's error factory)."""
    cls: Optional[Type[S3Error]] = _BY_CODE.get(code) or _BY_STATUS.get(status_name)
    return (cls or S3Error)(message or description, code=code, http_status=http_status,
                            request_id=request_id, status=status_name,
                            needed_bytes=needed_bytes, transport=transport)
