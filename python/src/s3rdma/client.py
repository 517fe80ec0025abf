"""s3rdma.Client: the S3 API of libs3rdma for Python.

Every call goes through the C library (s3rdma._s3rdma), which picks the transport
(native RDMA session, the x-amz-rdma-token path, or HTTP) and falls back exactly as
the C client does (docs/client.md); the GIL is released while a call runs.
"""
import concurrent.futures
import mmap
import os
import threading
import weakref
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional,
                    Sequence, Tuple, Union)

from . import _s3rdma, config, npy
from .errors import NoCredentialsError, S3Error, from_native

_s3rdma.set_error_factory(from_native)

Buffer = Any  # anything exporting the buffer protocol
Range = Union[None, str, Tuple[int, Optional[int]]]
Progress = Optional[Callable[[int], None]]

MiB = 1024 * 1024
DEFAULT_PART_SIZE = 8 * MiB
DEFAULT_MULTIPART_THRESHOLD = 16 * MiB
DEFAULT_PARTS_IN_FLIGHT = 4  # libs3rdma's default (s3r_config_t.parts_in_flight)


@dataclass
class ObjectInfo:
    """What head_object returns: boto3's head_object fields under snake_case names
    (``ContentLength`` is size, ``StorageClass`` storage_class, ``ChecksumCRC32C``
    checksum_crc32c, ...). A field the server did not send is None."""
    size: int
    etag: str
    content_type: Optional[str]
    last_modified: int  # unix seconds
    metadata: Dict[str, str] = field(default_factory=dict)
    version_id: Optional[str] = None  # x-amz-version-id; None for an unversioned bucket
    storage_class: Optional[str] = None  # None for STANDARD, which S3 does not name
    content_encoding: Optional[str] = None
    content_disposition: Optional[str] = None
    content_language: Optional[str] = None
    cache_control: Optional[str] = None
    expires: Optional[str] = None  # as stored (an HTTP date)
    server_side_encryption: Optional[str] = None  # "AES256" or "aws:kms"
    checksum_crc32: Optional[str] = None  # base64, as S3 gives them
    checksum_crc32c: Optional[str] = None
    checksum_crc64nvme: Optional[str] = None
    checksum_sha1: Optional[str] = None
    checksum_sha256: Optional[str] = None
    checksum_type: Optional[str] = None  # "FULL_OBJECT" or "COMPOSITE"
    object_lock_mode: Optional[str] = None  # "GOVERNANCE" or "COMPLIANCE"
    object_lock_retain_until: Optional[str] = None  # ISO 8601
    object_lock_legal_hold: Optional[str] = None  # "ON" or "OFF"
    expiration: Optional[str] = None  # x-amz-expiration: 'expiry-date="...", rule-id="..."'


@dataclass
class ObjectEntry:
    """One object of a listing page."""
    key: str
    size: int
    etag: Optional[str]
    last_modified: int
    storage_class: Optional[str] = None  # the listing's <StorageClass> ("STANDARD", ...)


@dataclass
class ListPage:
    """One ListObjectsV2 page: objects, and the common prefixes when a delimiter is set."""
    objects: List[ObjectEntry]
    prefixes: List[str]


@dataclass
class VersionEntry:
    """One version or delete marker of a list_object_versions page."""
    key: str
    version_id: str  # "null" for the version written without versioning
    is_latest: bool
    delete_marker: bool  # a delete marker has size 0 and etag None
    size: int
    etag: Optional[str]
    last_modified: int
    storage_class: Optional[str] = None  # None for a delete marker


@dataclass
class VersionPage:
    """One ListObjectVersions page: versions and delete markers in the listing's order
    (by key, newest first), and the common prefixes when a delimiter is set."""
    versions: List[VersionEntry]
    prefixes: List[str]


@dataclass
class DeleteInfo:
    """delete_object's outcome: the version removed (a version_id given) or the delete
    marker written (none given, in a versioned bucket); version_id None when the bucket
    never had versioning."""
    version_id: Optional[str]
    delete_marker: bool


@dataclass
class Bucket:
    name: str
    created: int  # unix seconds, 0 if unknown


@dataclass
class DeleteResult:
    """delete_objects' outcome: the keys deleted and, per key that failed, its error."""
    deleted: List[str]
    errors: Dict[str, S3Error]


# s3r_subresource_t (include/s3rdma.h): (subresource, of an object) -> kind
_SUBRESOURCES = {("tagging", True): 1, ("retention", True): 2, ("legal-hold", True): 3,
                 ("acl", True): 4, ("versioning", False): 5, ("lifecycle", False): 6,
                 ("object-lock", False): 7, ("tagging", False): 8, ("policy", False): 9,
                 ("cors", False): 10, ("encryption", False): 11, ("acl", False): 12}


def _sub(name: str, of_object: bool) -> int:
    try:
        return _SUBRESOURCES[(name, of_object)]
    except KeyError:
        raise ValueError(f"s3rdma: {name!r} is no {'object' if of_object else 'bucket'} "
                         "configuration subresource") from None


def _size(v: Union[None, int, str]) -> Optional[int]:
    if v is None or isinstance(v, int):
        return v
    return _s3rdma.size_parse(v)


def _range(r: Range) -> Tuple[int, int]:
    """(start, length) for the library from (start, stop) [stop exclusive, None: to
    the end] or an HTTP "bytes=a-b" string (b inclusive). length 0 means to the end."""
    if r is None:
        return 0, 0
    if isinstance(r, str):
        spec = r[6:] if r.startswith("bytes=") else r
        a, sep, b = spec.partition("-")
        if not sep or not a.isdigit() or (b and not b.isdigit()):
            raise ValueError(f"s3rdma: bad range {r!r} (want 'bytes=START-END')")
        start, stop = int(a), (int(b) + 1 if b else None)
    else:
        start, stop = r
    if start < 0 or (stop is not None and stop <= start):
        raise ValueError(f"s3rdma: bad range {r!r}: need 0 <= start < stop")
    return start, (0 if stop is None else stop - start)


class Client:
    """An S3 client whose object bytes travel by RDMA when they can.

    Args:
        endpoint: HTTP endpoint ``"http://host:9000"`` (several comma-separated are used
            round robin). Default: ``AWS_ENDPOINT_URL_S3``, ``AWS_ENDPOINT_URL``, then the
            profile's ``endpoint_url``.
        rdma_endpoint: RDMA session endpoint(s) ``"host:9100"``; default each HTTP host
            with port 9100.
        access_key, secret_key, region: default from ``AWS_ACCESS_KEY_ID``,
            ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``/``AWS_DEFAULT_REGION``, then the
            ``~/.aws`` profile (``profile`` or ``AWS_PROFILE``); region ``us-east-1``.
        ca_bundle: PEM file of the CAs an ``https://`` endpoint is verified against
            (verification is always on); default ``AWS_CA_BUNDLE``, then the profile's
            ``ca_bundle``, then the system's store.
        transport: ``"auto"`` (native when a session with a real RDMA/shared-memory
            transport is up, else token from ``rdma_threshold`` up, else HTTP),
            ``"native"``, ``"token"`` or ``"http"``.
        rdma_threshold: bytes (or ``"1MiB"``) from which AUTO uses the token path when
            no native session is up.
        fallback: redo an operation over HTTP when RDMA cannot be set up or is declined.
        part_size, multipart_threshold: multipart settings (bytes or size strings).
        parts_in_flight (in options): parts of one multipart upload sent at once, each
            on its own thread, so the server hashes them on as many cores: a
            put_object of a body above multipart_threshold (libs3rdma) and
            s3rdma.torch's checkpoint writer; default 4, at most 64, 1 = one by one.
        max_workers: threads of the pool behind the ``*_async`` methods.
        unsigned: anonymous requests, for public buckets: nothing is signed and no
            credentials are needed (any found are not used), as boto3's
            ``Config(signature_version=UNSIGNED)``, s3torchconnector's
            ``S3ClientConfig(unsigned=True)``, s3fs's ``anon=True`` and awscli's
            ``--no-sign-request``. The server serves what a bucket policy or an ACL
            grants everyone and answers AccessDenied elsewhere; it opens RDMA sessions
            for access keys only, so every request goes over HTTP (``transport`` auto
            or http; native or token is InvalidArgument).
        **options: any other libs3rdma setting by its ``s3r_config_t`` name
            (``rdma_socket``, ``native_inline``, ``http_timeout_ms``, ``quiet``, ...).

    The library's environment overrides (``RDMA_THRESHOLD_BYTES``, ``SPT_RDMA_ENABLED``,
    ...; docs/client.md) apply on top. One client may be shared by many threads.
    """

    def __init__(self, endpoint: Optional[str] = None, rdma_endpoint: Optional[str] = None,
                 access_key: Optional[str] = None, secret_key: Optional[str] = None,
                 region: Optional[str] = None, transport: str = "auto",
                 rdma_threshold: Union[None, int, str] = None, fallback: bool = True,
                 profile: Optional[str] = None, part_size: Union[None, int, str] = None,
                 multipart_threshold: Union[None, int, str] = None, max_workers: int = 8,
                 ca_bundle: Optional[str] = None, unsigned: bool = False, **options: Any):
        s = config.resolve(endpoint, access_key, secret_key, region, profile, ca_bundle,
                           keys=not unsigned)
        if not s["endpoint"]:
            raise ValueError("s3rdma: no endpoint: pass endpoint= or set AWS_ENDPOINT_URL")
        if unsigned:
            s["access_key"] = s["secret_key"] = None
            options["anonymous"] = True
        elif s["expiring_keys"]:
            # libs3rdma loads them itself, and again before their Expiration
            s["access_key"] = s["secret_key"] = None
            options.update(aws_credentials=True, aws_profile=profile)
        elif not s["access_key"] or not s["secret_key"]:
            raise NoCredentialsError(
                "s3rdma: Unable to locate credentials: pass access_key=/secret_key=, set "
                "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, use a ~/.aws profile, or "
                "unsigned=True for a public bucket", status="NoCredentialsError")
        self.part_size = _size(part_size) or DEFAULT_PART_SIZE
        self.multipart_threshold = _size(multipart_threshold) or DEFAULT_MULTIPART_THRESHOLD
        self.parts_in_flight = int(options.get("parts_in_flight") or DEFAULT_PARTS_IN_FLIGHT)
        for k, v in list(options.items()):
            if isinstance(v, bool):
                options[k] = int(v)
        self._native = _s3rdma.Client(
            endpoint=s["endpoint"], rdma_endpoint=rdma_endpoint, access_key=s["access_key"],
            secret_key=s["secret_key"], region=s["region"], ca_bundle=s["ca_bundle"],
            transport=transport,
            rdma_threshold=_size(rdma_threshold), rdma_fallback=int(bool(fallback)),
            part_size=self.part_size, multipart_threshold=self.multipart_threshold,
            **options)
        self.endpoint = s["endpoint"]
        self.transport = transport
        self._max_workers = max_workers
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._pool_lock = threading.Lock()
        _live_clients.add(self)

    def _after_fork_in_child(self) -> None:
        # The pool's threads stayed in the parent, and another thread may have held the
        # lock at the fork: the child starts both afresh (libs3rdma makes its own state
        # the child's by itself).
        self._pool_lock = threading.Lock()
        self._pool = None

    # ---- lifetime -------------------------------------------------------------

    def close(self) -> None:
        """Closes the client: waits for its ``*_async`` work, then releases the handle
        (once no buffer from allocate_buffer is left). Idempotent."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self._native.close()

    @property
    def closed(self) -> bool:
        return self._native.closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def stats(self) -> Dict[str, int]:
        """The library's counters: ops and bytes per transport actually used,
        fallbacks, errors (calls that failed, leaving out get_retries), sessions,
        registrations; and get_retries: first tries of get_object() answered "buffer
        too small" with the size and then redone (native, objects over 1 MiB)."""
        return self._native.stats()

    def rdma_connect(self) -> None:
        """Opens the RDMA session now instead of on first use."""
        self._native.rdma_connect()

    @property
    def rdma_connected(self) -> bool:
        return self._native.rdma_connected()

    # ---- objects ---------------------------------------------------------------

    def put_object(self, bucket: str, key: str, body: Any,
                   metadata: Optional[Mapping[str, str]] = None,
                   content_type: Optional[str] = None, transport: Optional[str] = None,
                   if_none_match: bool = False,
                   storage_class: Optional[str] = None) -> Optional[str]:
        """Stores body as bucket/key; returns the version id the write made (None when
        the bucket never had versioning, "null" while it is suspended).

        body is bytes, any buffer-protocol object (bytearray, memoryview, mmap, NumPy
        array: sent from its own memory, no copy) or a binary file object (a regular
        file is mapped, anything else read in part_size pieces). Bodies larger than
        multipart_threshold go multipart. metadata becomes x-amz-meta-* headers.
        if_none_match: create only (``If-None-Match: *``): when the key already holds an
        object the write changes nothing and raises PreconditionFailed; the check is
        atomic with the commit, so of two racing writers at most one succeeds.
        storage_class: S3's x-amz-storage-class (``"STANDARD_IA"``, ...: upper-case
        letters, digits and ``_``, else InvalidArgument before anything is sent); None:
        the server's default. A class the server does not know raises
        InvalidStorageClass.
        """
        if hasattr(body, "read"):
            return self._put_stream(bucket, key, body, metadata, content_type, transport,
                                    if_none_match=if_none_match, storage_class=storage_class)
        if isinstance(body, str):
            raise TypeError("s3rdma: body must be bytes-like or a binary file, not str")
        return self._native.put(bucket, key, _buffer(body), content_type, metadata, transport,
                                if_none_match, storage_class)

    def _put_stream(self, bucket, key, f, metadata, content_type, transport,
                    callback: Progress = None, if_none_match: bool = False,
                    storage_class: Optional[str] = None) -> Optional[str]:
        """A file object: a regular file from its position to its end is mapped and
        sent from the page cache; other streams are read in part_size pieces."""
        try:
            fd, pos = f.fileno(), f.tell()
            size = os.fstat(fd).st_size - pos
        except (AttributeError, OSError, ValueError):
            fd = None
        if fd is not None and size >= 0 and size <= self.multipart_threshold:
            with _mapped(fd, pos, size) as view:
                vid = self._native.put(bucket, key, view, content_type, metadata, transport,
                                       if_none_match, storage_class)
            f.seek(pos + size)
            if callback:
                callback(size)
            return vid
        first = _read_full(f, self.multipart_threshold + 1)
        if len(first) <= self.multipart_threshold:
            vid = self._native.put(bucket, key, first, content_type, metadata, transport,
                                   if_none_match, storage_class)
            if callback:
                callback(len(first))
            return vid
        up = self._native.multipart(bucket, key, content_type, metadata, transport,
                                    if_none_match, storage_class)
        try:
            pending = memoryview(first)
            while True:
                while len(pending) >= self.part_size:
                    up.part(pending[:self.part_size])
                    if callback:
                        callback(self.part_size)
                    pending = pending[self.part_size:]
                more = _read_full(f, self.part_size - len(pending))
                if not more:
                    break
                pending = memoryview(bytes(pending) + more)
            if len(pending):
                up.part(pending)
                if callback:
                    callback(len(pending))
            return up.complete()
        finally:
            up.abort()  # no-op once completed

    def get_object(self, bucket: str, key: str, range: Range = None,
                   transport: Optional[str] = None, version_id: Optional[str] = None) -> bytes:
        """The object (or range) as bytes. range: ``(start, stop)`` with stop exclusive
        (None: to the end), or ``"bytes=START-END"`` (END inclusive). version_id: that
        version instead of the current one (a delete marker's raises MethodNotAllowed)."""
        start, length = _range(range)
        return self._native.get(bucket, key, start, length, transport, version_id)

    def get_object_into(self, bucket: str, key: str, buffer: Buffer, range: Range = None,
                        transport: Optional[str] = None,
                        version_id: Optional[str] = None) -> int:
        """Reads the object (or range) into buffer (any writable contiguous buffer:
        bytearray, memoryview, mmap, NumPy array, CPU torch tensor) with
        no intermediate copy; over RDMA the server writes it there. Returns the byte count.
        An object larger than the buffer raises BufferTooSmall (``needed_bytes`` says how
        much it needs)."""
        start, length = _range(range)
        return self._native.get_into(bucket, key, _buffer(buffer), start, length, transport,
                                     version_id)

    def head_object(self, bucket: str, key: str,
                    version_id: Optional[str] = None) -> ObjectInfo:
        """Size, ETag, content type, last modified, user metadata, version id, storage
        class, the stored Content-* headers, checksums, encryption, object lock and
        expiration (of version_id, or of the current version): ObjectInfo."""
        *fields, more = self._native.head(bucket, key, version_id)
        return ObjectInfo(*fields, **more)

    def delete_object(self, bucket: str, key: str,
                      version_id: Optional[str] = None) -> DeleteInfo:
        """Deletes the object: in a versioned bucket this writes a delete marker; with
        version_id, that version (or delete marker) is removed for good."""
        return DeleteInfo(*self._native.delete(bucket, key, version_id))

    def delete_objects(self, bucket: str, keys: Iterable[str]) -> DeleteResult:
        """Deletes every key with DeleteObjects (up to 1000 keys per request). The
        keys that failed are collected, not raised; a request that fails as a
        whole raises."""
        keys = list(keys)
        failed = {k: from_native(0, "S3R_ERR_SERVER", "", 0, code, message, "", 0, "")
                  for k, code, message in self._native.delete_many(bucket, keys)}
        return DeleteResult([k for k in keys if k not in failed], failed)

    def copy_object(self, src_bucket: str, src_key: str, dst_bucket: str, dst_key: str,
                    src_version_id: Optional[str] = None) -> Optional[str]:
        """Server-side copy (of src_version_id, or of the current version); metadata is
        copied. Returns the version id of the copy (None: an unversioned bucket)."""
        return self._native.copy(src_bucket, src_key, dst_bucket, dst_key, src_version_id)

    def list_objects(self, bucket: str, prefix: str = "", delimiter: Optional[str] = None,
                     start_after: Optional[str] = None,
                     page_size: int = 1000) -> Iterator[ListPage]:
        """ListObjectsV2 as an iterator over pages (each request fetched when the
        previous page is consumed)."""
        token = None
        while True:
            objs, prefixes, token = self._native.list(bucket, prefix or None, delimiter, token,
                                                      start_after, page_size)
            yield ListPage([ObjectEntry(*o) for o in objs], prefixes)
            if token is None:
                return

    def list_object_versions(self, bucket: str, prefix: str = "",
                             delimiter: Optional[str] = None, key_marker: Optional[str] = None,
                             version_id_marker: Optional[str] = None,
                             page_size: int = 1000) -> Iterator[VersionPage]:
        """ListObjectVersions as an iterator over pages: every version and delete
        marker (each request fetched when the previous page is consumed). key_marker
        and version_id_marker start after that key (and version of it)."""
        while True:
            vers, prefixes, key_marker, version_id_marker = self._native.list_versions(
                bucket, prefix or None, delimiter, key_marker, version_id_marker, page_size)
            yield VersionPage([VersionEntry(*v) for v in vers], prefixes)
            if key_marker is None:
                return

    # ---- configuration subresources ------------------------------------------

    def get_object_config(self, bucket: str, key: str, subresource: str,
                          version_id: Optional[str] = None) -> bytes:
        """An object's (version's) configuration document, as S3's API returns it:
        subresource "tagging", "retention", "legal-hold" or "acl"."""
        return self._native.subresource("get", _sub(subresource, True), bucket, key, version_id)

    def put_object_config(self, bucket: str, key: str, subresource: str, document: Buffer,
                          version_id: Optional[str] = None) -> None:
        """Writes an object's configuration document (S3's XML, sent as it is)."""
        self._native.subresource("put", _sub(subresource, True), bucket, key, version_id,
                                 _buffer(document))

    def delete_object_config(self, bucket: str, key: str, subresource: str,
                             version_id: Optional[str] = None) -> None:
        """Removes an object's tags (S3 has no other object DELETE of this kind)."""
        self._native.subresource("delete", _sub(subresource, True), bucket, key, version_id)

    def get_bucket_config(self, bucket: str, subresource: str) -> bytes:
        """A bucket's configuration document: subresource "versioning", "lifecycle",
        "object-lock", "tagging", "policy" (JSON), "cors", "encryption" or "acl"."""
        return self._native.subresource("get", _sub(subresource, False), bucket, None)

    def put_bucket_config(self, bucket: str, subresource: str, document: Buffer) -> None:
        self._native.subresource("put", _sub(subresource, False), bucket, None, None,
                                 _buffer(document))

    def delete_bucket_config(self, bucket: str, subresource: str) -> None:
        """Removes a lifecycle, tagging, policy, CORS or encryption configuration."""
        self._native.subresource("delete", _sub(subresource, False), bucket, None)

    # ---- buckets ---------------------------------------------------------------

    def create_bucket(self, bucket: str) -> None:
        self._native.bucket_create(bucket)

    def delete_bucket(self, bucket: str) -> None:
        self._native.bucket_delete(bucket)

    def bucket_exists(self, bucket: str) -> bool:
        try:
            self._native.bucket_head(bucket)
            return True
        except S3Error as e:
            if e.http_status == 404:
                return False
            raise

    def list_buckets(self) -> List[Bucket]:
        return [Bucket(n, c) for n, c in self._native.bucket_list()]

    # ---- files -------------------------------------------------------------------

    def upload_file(self, filename: Union[str, os.PathLike], bucket: str, key: str,
                    callback: Progress = None, metadata: Optional[Mapping[str, str]] = None,
                    content_type: Optional[str] = None,
                    transport: Optional[str] = None,
                    storage_class: Optional[str] = None) -> None:
        """Uploads a file; above multipart_threshold as a multipart upload of part_size
        parts. callback(n) is called with the bytes sent since its last call (after each
        part), as boto3's Callback is. storage_class: as put_object's."""
        with open(filename, "rb") as f:
            self._put_stream(bucket, key, f, metadata, content_type, transport, callback,
                             storage_class=storage_class)

    def download_file(self, bucket: str, key: str, filename: Union[str, os.PathLike],
                      callback: Progress = None, transport: Optional[str] = None) -> int:
        """Downloads an object into a file, part_size bytes per request straight into the
        file's mapped pages; callback(n) after each piece with its byte count. A failed
        download removes the file. Returns the size."""
        size = self.head_object(bucket, key).size
        try:
            with open(filename, "wb+") as f:
                f.truncate(size)
                if size:
                    with _mapped(f.fileno(), 0, size, writable=True) as view:
                        for off in range(0, size, self.part_size):
                            n = min(self.part_size, size - off)
                            got = self._native.get_into(bucket, key, view[off:off + n], off, n,
                                                        transport)
                            if got != n:
                                raise S3Error(f"object changed during download: {got} bytes "
                                              f"at offset {off}, wanted {n}")
                            if callback:
                                callback(n)
        except BaseException:
            try:
                os.unlink(filename)
            except OSError:
                pass
            raise
        return size

    # ---- registered memory -----------------------------------------------------------

    def allocate_buffer(self, size: int) -> memoryview:
        """A writable memoryview of size bytes registered with the RDMA session: GETs
        into it and PUTs from it need no registration and no copy (NumPy arrays made
        with ``numpy.frombuffer(buf, dtype)`` share it). Freed when the last view of it
        goes away."""
        return memoryview(self._native.alloc(size))

    # ---- batches and futures ---------------------------------------------------------

    def get_objects(self, bucket: str, keys: Sequence[str],
                    buffers: Optional[Sequence[Buffer]] = None,
                    return_exceptions: bool = False,
                    transport: Optional[str] = None,
                    ranges: Optional[Sequence[Range]] = None) -> List[Any]:
        """GETs many objects keeping up to 64 requests in flight on one session (one
        after another over the other transports), all from this one thread.

        With buffers (one writable buffer per key) returns the byte counts; without,
        learns each size with a HEAD and returns a bytearray per key. ranges: one range
        per key, as get_object_into takes it (several ranges of one object: repeat its
        key), with buffers only. A failed item raises its exception after the whole
        batch ran, or sits in the list when return_exceptions is true.
        """
        keys = list(keys)
        if buffers is None:
            if ranges is not None:
                raise ValueError("s3rdma: get_objects with ranges needs buffers")
            buffers = [bytearray(self.head_object(bucket, k).size) for k in keys]
            out: Optional[List[Any]] = list(buffers)
        else:
            out = None
        spans = None if ranges is None else [_range(r) for r in ranges]
        res = self._native.batch(True, bucket, keys, [_buffer(b) for b in buffers], transport,
                                 None, spans)
        res = _settle(res, return_exceptions)
        if out is None:
            return res
        return [b if not isinstance(r, BaseException) else r for b, r in zip(out, res)]

    def put_objects(self, bucket: str, items: Union[Mapping[str, Buffer],
                                                    Iterable[Tuple[str, Buffer]]],
                    content_type: Optional[str] = None, return_exceptions: bool = False,
                    transport: Optional[str] = None) -> List[Any]:
        """PUTs many buffers (a {key: buffer} mapping or (key, buffer) pairs) keeping up
        to 64 in flight on one session; bodies above multipart_threshold are uploaded
        one by one as multipart. Returns the byte counts; errors as in get_objects."""
        pairs = [(k, _buffer(b)) for k, b in (items.items() if isinstance(items, Mapping)
                                              else items)]
        small = [(i, k, b) for i, (k, b) in enumerate(pairs)
                 if memoryview(b).nbytes <= self.multipart_threshold]
        res: List[Any] = [None] * len(pairs)
        got = self._native.batch(False, bucket, [k for _, k, _ in small],
                                 [b for _, _, b in small], transport, content_type)
        for (i, _, _), r in zip(small, got):
            res[i] = r
        for i, (k, b) in enumerate(pairs):
            if res[i] is None:
                try:
                    self._native.put(bucket, k, b, content_type, None, transport)
                    res[i] = memoryview(b).nbytes
                except S3Error as e:
                    res[i] = e
        return _settle(res, return_exceptions)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future:
        """Runs fn(*args, **kwargs) (e.g. ``client.get_object``) on the client's thread
        pool and returns its concurrent.futures.Future; calls overlap because each
        releases the GIL. ``asyncio.wrap_future`` makes it awaitable."""
        with self._pool_lock:
            if self._native.closed:
                raise ValueError("s3rdma: the client is closed")
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    self._max_workers, thread_name_prefix="s3rdma")
            return self._pool.submit(fn, *args, **kwargs)

    def get_object_async(self, bucket: str, key: str, range: Range = None) -> concurrent.futures.Future:
        """get_object on the thread pool: a Future of bytes."""
        return self.submit(self.get_object, bucket, key, range)

    def get_object_into_async(self, bucket: str, key: str, buffer: Buffer,
                              range: Range = None) -> concurrent.futures.Future:
        """get_object_into on the thread pool: a Future of the byte count."""
        return self.submit(self.get_object_into, bucket, key, buffer, range)

    def put_object_async(self, bucket: str, key: str, body: Any, **kwargs: Any) -> concurrent.futures.Future:
        """put_object on the thread pool: a Future of None."""
        return self.submit(self.put_object, bucket, key, body, **kwargs)

    # ---- NumPy ---------------------------------------------------------------------

    def get_object_numpy(self, bucket: str, key: str, transport: Optional[str] = None):
        """Reads a .npy object into a new NumPy array: one small read for the header
        (which brings small arrays whole), then the data lands in the array's own memory
        by RDMA when the transport is. Arrays larger than that live on registered memory
        from allocate_buffer (blocks are reused once arrays die), so no call pays a
        registration."""
        import numpy as np
        probe = bytearray(npy.HEADER_PROBE)
        n = self._native.get_into(bucket, key, probe, 0, npy.HEADER_PROBE, transport)
        hlen = npy.header_length(bytes(probe[:min(n, 16)]))
        if hlen > n:
            header = self._native.get(bucket, key, 0, hlen, transport)
        else:
            header = bytes(probe[:hlen])
        shape, dtype, fortran = npy.parse_header(header)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0 or hlen + nbytes <= n:
            arr = np.empty(shape, dtype=dtype, order="F" if fortran else "C")
        else:  # on registered memory (reused from the client's pool): no registration
            arr = np.frombuffer(self.allocate_buffer(nbytes), dtype).reshape(
                shape, order="F" if fortran else "C")
        if arr.nbytes == 0:
            return arr
        flat = arr.reshape(-1, order="A").view(np.uint8)
        if hlen + arr.nbytes <= n:  # a small array came whole with the header
            flat[:] = np.frombuffer(probe, np.uint8, arr.nbytes, hlen)
            return arr
        got = self._native.get_into(bucket, key, flat, hlen, arr.nbytes, transport)
        if got != arr.nbytes:
            raise ValueError(f"s3rdma: {bucket}/{key}: .npy data is {got} bytes, the header "
                             f"says {arr.nbytes}")
        return arr

    def put_object_numpy(self, bucket: str, key: str, array: Any,
                         metadata: Optional[Mapping[str, str]] = None,
                         transport: Optional[str] = None) -> None:
        """Writes array as a .npy object.

        A C- or Fortran-contiguous array is sent from its own memory: above
        multipart_threshold only the first part (header plus the array's first bytes) is
        staged and every other part goes straight from the array; smaller arrays are
        staged once with the header into registered memory (one copy, the header must
        precede the data in one request). A non-contiguous array is first copied into a
        C-contiguous one.
        """
        import numpy as np
        array = np.asanyarray(array)
        if not (array.flags.c_contiguous or array.flags.f_contiguous):
            array = np.ascontiguousarray(array)
        header, _ = npy.build_header(array)
        data = array.reshape(-1, order="A").view(np.uint8)
        total = len(header) + data.nbytes
        ctype = "application/octet-stream"
        if total <= self.multipart_threshold:
            stage = self.allocate_buffer(total)
            stage[:len(header)] = header
            np.frombuffer(stage, np.uint8)[len(header):] = data
            self._native.put(bucket, key, stage, ctype, metadata, transport)
            return
        up = self._native.multipart(bucket, key, ctype, metadata, transport)
        try:
            head = self.part_size - len(header)
            stage = bytearray(header) + data[:head].tobytes()
            up.part(stage)
            for off in range(head, data.nbytes, self.part_size):
                up.part(data[off:off + self.part_size])
            up.complete()
        finally:
            up.abort()


_live_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for c in list(_live_clients):
        c._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def RDMAClient(endpoint: str, http_endpoint: Optional[str] = None, **kwargs: Any) -> Client:
    """A Client addressed by its RDMA session endpoint, as in
    ``RDMAClient(endpoint="host:9100")``. The HTTP endpoint (used only when an
    operation falls back, or for the token path) is http_endpoint, else the AWS
    environment or profile, else ``http://HOST:9000``."""
    host = endpoint.split(",")[0].rsplit(":", 1)[0]
    http = (http_endpoint or config.aws_settings(kwargs.get("profile")).get("endpoint")
            or f"http://{host}:9000")
    return Client(endpoint=http, rdma_endpoint=endpoint, **kwargs)


# ---- helpers ----------------------------------------------------------------------


def _buffer(obj: Any) -> Any:
    """obj itself, or for a torch tensor (which has no buffer protocol) the NumPy array that
    shares its memory: a CPU tensor moves from and into its own storage, with no copy
    (others raise torch's error)."""
    if type(obj).__module__.startswith("torch"):
        return obj.detach().numpy()
    return obj


def _read_full(f, n: int) -> bytes:
    """Up to n bytes from f, fewer only at end of stream."""
    chunks, got = [], 0
    while got < n:
        b = f.read(n - got)
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


class _mapped:
    """A memoryview of [offset, offset+size) of fd, mapped; unmapped on exit. Offsets
    need not be page-aligned."""

    def __init__(self, fd: int, offset: int, size: int, writable: bool = False):
        self.fd, self.offset, self.size, self.writable = fd, offset, size, writable

    def __enter__(self) -> memoryview:
        if self.size == 0:
            self.m = None
            self.view = memoryview(b"")
            return self.view
        base = self.offset - self.offset % mmap.ALLOCATIONGRANULARITY
        access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
        self.m = mmap.mmap(self.fd, self.size + self.offset - base, access=access, offset=base)
        self.view = memoryview(self.m)[self.offset - base:]
        return self.view

    def __exit__(self, *exc: Any) -> None:
        self.view.release()
        if self.m is not None:
            self.m.close()


def _settle(results: List[Any], return_exceptions: bool) -> List[Any]:
    if not return_exceptions:
        for r in results:
            if isinstance(r, BaseException):
                raise r
    return results
