"""fsspec filesystem for ``s3rdma://bucket/key`` URLs, registered through fsspec's
``fsspec.specs`` entry point, so code that takes fsspec URLs (pandas, xarray,
data loaders) reads and writes over libs3rdma unchanged:

    import fsspec
    fs = fsspec.filesystem("s3rdma", endpoint="http://127.0.0.1:9000",
                           access_key="AK", secret_key="SK")
    with fsspec.open("s3rdma://bucket/key", "rb", endpoint=...) as f: ...

Every keyword argument goes to s3rdma.Client (credentials may also come from the
AWS environment). Directories are the usual key prefixes up to "/".
"""
import io
import warnings
from typing import Any, Dict, List, Optional

from fsspec.callbacks import NoOpCallback
from fsspec.implementations.local import make_path_posix
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem
from fsspec.utils import other_paths

from .client import Client
from .errors import NoSuchBucket, NoSuchKey, UnsafeLocalPath
from .localpath import check_local_name


class S3RDMAFileSystem(AbstractFileSystem):
    protocol = "s3rdma"
    root_marker = ""

    def __init__(self, anon: bool = False, **client_kwargs: Any):
        """client_kwargs go to s3rdma.Client; anon=True (s3fs's name) is its
        unsigned=True: anonymous requests, for public buckets."""
        super().__init__(anon=anon, **client_kwargs)
        if anon:
            client_kwargs["unsigned"] = True
        self.client = Client(**client_kwargs)

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith("s3rdma://"):
            path = path[len("s3rdma://"):]
        return path.strip("/")

    @staticmethod
    def _split(path: str):
        bucket, _, key = path.partition("/")
        return bucket, key

    def _entry(self, bucket: str, o) -> Dict[str, Any]:
        return {"name": f"{bucket}/{o.key}", "size": o.size, "type": "file", "ETag": o.etag,
                "LastModified": o.last_modified, "StorageClass": o.storage_class}

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> List[Any]:
        path = self._strip_protocol(path)
        if not path:
            out = [{"name": b.name, "size": 0, "type": "directory"}
                   for b in self.client.list_buckets()]
        else:
            bucket, key = self._split(path)
            prefix = key + "/" if key else ""
            out = []
            try:
                for page in self.client.list_objects(bucket, prefix=prefix, delimiter="/"):
                    out += [self._entry(bucket, o) for o in page.objects]
                    out += [{"name": f"{bucket}/{p.rstrip('/')}", "size": 0,
                             "type": "directory"} for p in page.prefixes]
            except NoSuchBucket:
                raise FileNotFoundError(path) from None
            if not out and key:
                info = self.info(path)  # a file, or FileNotFoundError
                out = [info]
        return out if detail else [o["name"] for o in out]

    def info(self, path: str, **kwargs: Any) -> Dict[str, Any]:
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        if not key:
            if bucket and not self.client.bucket_exists(bucket):
                raise FileNotFoundError(path)
            return {"name": bucket, "size": 0, "type": "directory"}
        try:
            h = self.client.head_object(bucket, key)
            return {"name": path, "size": h.size, "type": "file", "ETag": h.etag,
                    "LastModified": h.last_modified, "ContentType": h.content_type,
                    "StorageClass": h.storage_class or "STANDARD"}
        except (NoSuchKey, NoSuchBucket):
            pass
        try:
            page = next(self.client.list_objects(bucket, prefix=key + "/", page_size=1))
        except NoSuchBucket:
            raise FileNotFoundError(path) from None
        if page.objects or page.prefixes:
            return {"name": path, "size": 0, "type": "directory"}
        raise FileNotFoundError(path)

    def cat_file(self, path: str, start: Optional[int] = None, end: Optional[int] = None,
                 **kwargs: Any) -> bytes:
        bucket, key = self._split(self._strip_protocol(path))
        size = None
        if (start is not None and start < 0) or (end is not None and end < 0):
            size = self.client.head_object(bucket, key).size
        start = 0 if start is None else (max(size + start, 0) if start < 0 else start)
        if end is not None and end < 0:
            end = max(size + end, 0)
        if end is not None and end <= start:
            return b""
        try:
            return self.client.get_object(bucket, key, range=(start, end) if start or end
                                          else None)
        except NoSuchKey:
            raise FileNotFoundError(path) from None

    def pipe_file(self, path: str, value: bytes, **kwargs: Any) -> None:
        bucket, key = self._split(self._strip_protocol(path))
        self.client.put_object(bucket, key, value)

    def _rm(self, path: str) -> None:
        bucket, key = self._split(self._strip_protocol(path))
        if key:
            self.client.delete_object(bucket, key)
        else:
            self.client.delete_bucket(bucket)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        bucket, key = self._split(self._strip_protocol(path))
        if not key and not self.client.bucket_exists(bucket):
            self.client.create_bucket(bucket)

    def rmdir(self, path: str) -> None:
        bucket, key = self._split(self._strip_protocol(path))
        if not key:
            self.client.delete_bucket(bucket)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        b1, k1 = self._split(self._strip_protocol(path1))
        b2, k2 = self._split(self._strip_protocol(path2))
        self.client.copy_object(b1, k1, b2, k2)

    def get(self, rpath, lpath, recursive: bool = False, callback=None,
            maxdepth: Optional[int] = None, **kwargs: Any) -> None:
        """fsspec's get (remote files, or a tree with recursive=True, to lpath), except
        that a file whose local path made from its key would leave lpath is skipped (a
        '..' or '.' segment, a leading '/' or '\\': s3rdma.localpath): the rest are
        copied, then UnsafeLocalPath names the skipped keys. Local paths given as a
        list are the caller's own and are used as given."""
        if isinstance(lpath, str):
            lpath = make_path_posix(lpath)
        rpaths = self.expand_path(rpath, recursive=recursive, maxdepth=maxdepth)
        lpaths = other_paths(rpaths, lpath)
        root = lpath.rstrip("/") if isinstance(lpath, str) else None
        refused = []
        callback = callback or NoOpCallback()
        callback.set_size(len(lpaths))
        for lp, rp in callback.wrap(zip(lpaths, rpaths)):
            if root is not None and lp != root:
                try:
                    if not lp.startswith(root + "/"):
                        raise UnsafeLocalPath(f"{lp!r} is not inside {root!r}", keys=[rp])
                    check_local_name(root, lp[len(root) + 1:], rp)
                except UnsafeLocalPath as e:
                    warnings.warn(f"s3rdma: skipping {rp}: {e.message}", stacklevel=2)
                    refused.append(rp)
                    continue
            callback.branch(rp, lp, kwargs)
            self.get_file(rp, lp, **kwargs)
        if refused:
            raise UnsafeLocalPath(f"skipped {len(refused)} key(s) whose local path would "
                                  f"leave {root!r}: {', '.join(map(repr, refused))}",
                                  keys=refused)

    def _open(self, path: str, mode: str = "rb", block_size: Any = None,
              autocommit: bool = True, cache_options: Any = None, **kwargs: Any):
        return S3RDMAFile(self, path, mode, block_size=block_size or "default",
                          autocommit=autocommit, cache_options=cache_options, **kwargs)


class S3RDMAFile(AbstractBufferedFile):
    """A file of S3RDMAFileSystem: reads are ranged GETs (through fsspec's read cache);
    writes are buffered and sent as one PUT, or as a multipart upload once they pass
    the client's multipart threshold."""

    DEFAULT_BLOCK_SIZE = 8 * 1024 * 1024

    def _fetch_range(self, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        bucket, key = self.fs._split(self.path)
        return self.fs.client.get_object(bucket, key, range=(start, end))

    def _initiate_upload(self) -> None:
        """The multipart upload starts with the first full part (in _upload_chunk): a
        file closed before reaching one goes as a single PUT."""
        self._mpu = None

    def _upload_chunk(self, final: bool = False) -> bool:
        """Called by fsspec when the buffer holds blocksize bytes, and at close: sends
        whole parts, keeps the remainder buffered (returns False: buffer handled here)."""
        client = self.fs.client
        bucket, key = self.fs._split(self.path)
        data = self.buffer.getbuffer()
        if final and self._mpu is None:
            client.put_object(bucket, key, data)
            sent = len(data)
        else:
            if self._mpu is None:
                self._mpu = client._native.multipart(bucket, key, None, None, None)
            sent = 0
            while len(data) - sent >= client.part_size or (final and sent < len(data)):
                n = min(client.part_size, len(data) - sent)
                self._mpu.part(data[sent:sent + n])
                sent += n
        rest = bytes(data[sent:])
        del data
        self.offset += sent
        self.buffer = io.BytesIO(rest)
        self.buffer.seek(0, 2)
        if final and self._mpu is not None:
            self._mpu.complete()
        return False

    def discard(self) -> None:
        if getattr(self, "_mpu", None) is not None:
            self._mpu.abort()
