"""S3StorageWriter / S3StorageReader / S3FileSystem: torch.distributed.checkpoint
storage on s3rdma.

Written and tested against the StorageWriter/StorageReader interface of Debian 12's
torch 1.13 (``torch.distributed._shard.checkpoint``, imported by _compat). The methods
torch >= 2.0 adds or renames (``reset``, ``validate_checkpoint_id``,
``set_up_storage_writer`` / ``set_up_storage_reader``, ``storage_meta``) are defined
too, over the same code, so ``dcp.save`` / ``dcp.load`` find what they call.

A save is one commit. Every rank writes its items into data objects whose names
carry a save id the coordinator draws for this save (``<start><save>_<n>.distcp``,
``<start>`` the prefix strategy's name for the rank, ``__<rank>_`` by default), so a
save never overwrites another save's data. The coordinator then writes ``.metadata``
last: the step exists from that instant, whole, and a save that crashed or was
killed before it left only data objects no metadata names, which a load never
reads. With overwrite (the default, as torch's FileSystemWriter and
s3torchconnector) a save into a path that holds a committed checkpoint replaces it
at that instant, and the replaced checkpoint's data objects are deleted afterwards,
as the JSON list OBJECTS written after each commit names them (never by unpickling:
a save runs no pickle it did not write; a checkpoint without that list, or one
whose commit crashed before writing it, leaves its data objects behind); with
``overwrite=False`` .metadata is written create-only (``If-None-Match: *``) and such
a save fails (PreconditionFailed, its data objects deleted), leaving the committed
one untouched.

Layout: each item's bytes at an offset of its data object: a tensor as its raw
contiguous bytes (dtype and shape in the metadata), anything else as the bytes the
planner gives. Loading GETs each item's range straight into the destination
tensor's storage when it is the whole stored chunk, with all ranges in flight on
the client's thread pool.

The metadata is a pickle, as with torch's FileSystemReader: load checkpoints only
from buckets whose writers you trust (so is every torch.load).
"""
import contextlib
import dataclasses
import io
import json
import logging
import os
import pickle
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import torch
from torch.futures import Future

from ...errors import NoSuchKey, PreconditionFailed, S3Error
from .._client import ClientHolder, S3ClientConfig, alloc, parse_s3_uri, ranges_one_by_one
from .._compat import checkpoint_module
from .._s3client import S3Client
from ..reader import ReaderFactory, S3ReaderConstructor
from ..writer import S3Writer
from .s3_prefix_strategy import DefaultPrefixStrategy, S3PrefixStrategyBase

log = logging.getLogger(__name__)
_dcp = checkpoint_module()
LoadItemType = _dcp.planner.LoadItemType
WriteItemType = _dcp.planner.WriteItemType
WriteResult = _dcp.storage.WriteResult

METADATA = ".metadata"
# JSON {"objects": [names]}: the data objects of the checkpoint committed at the path,
# written after its .metadata, so an overwrite learns what to delete without
# unpickling (a save never runs a pickle it did not write)
OBJECTS = ".s3rdma-objects"


@dataclass
class _Stored:
    """Where one item is: object name (relative to the checkpoint path), byte range,
    and for a tensor its dtype and shape."""
    relative_path: str
    offset: int
    length: int
    dtype: Optional[torch.dtype] = None
    shape: Optional[Tuple[int, ...]] = None


def _bytes_of(t: torch.Tensor) -> memoryview:
    return memoryview(t.reshape(-1).view(torch.uint8).numpy()) if t.numel() else memoryview(b"")


class _Path:
    def __init__(self, path: Any):
        self.bucket, prefix = parse_s3_uri(str(path))
        self.prefix = prefix.rstrip("/") + "/" if prefix.strip("/") else ""

    def key(self, name: str) -> str:
        return self.prefix + name


def _valid_checkpoint_id(checkpoint_id: Union[str, os.PathLike]) -> bool:
    try:
        parse_s3_uri(str(checkpoint_id))
    except ValueError:
        return False
    return True


class _CheckpointAt:
    """torch >= 2.2's checkpoint ids, shared by the writer and the reader
    (each sets self.fs, self.path and self._path)."""

    def reset(self, checkpoint_id: Union[str, os.PathLike, None] = None) -> None:
        """A save to, or a load from, checkpoint_id (when given) instead of path."""
        if checkpoint_id is not None:
            self.path = self.fs.init_path(checkpoint_id)
            self._path = _Path(checkpoint_id)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Union[str, os.PathLike]) -> bool:
        return _valid_checkpoint_id(checkpoint_id)


class S3StorageWriter(_CheckpointAt, _dcp.StorageWriter):
    """Writes a distributed checkpoint under path (``s3://bucket/prefix/``).

    prefix_strategy: names each rank's data objects (s3_prefix_strategy; default
    ``__<rank>_``). thread_count: data objects per rank, uploaded at once (items
    spread over them by size). Each is streamed through an S3Writer: multipart parts
    go while the next part is filled. overwrite: see the module comment. Other
    keyword arguments (torch's FileSystemWriter's: single_file_per_rank, sync_files,
    per_thread_copy_ahead, cache_staged_state_dict ...) are accepted and change
    nothing: every object is durable once its PUT is acknowledged.
    """

    def __init__(self, region: Optional[str], path: str,
                 s3client_config: Optional[S3ClientConfig] = None,
                 prefix_strategy: Optional[S3PrefixStrategyBase] = None, thread_count: int = 1,
                 endpoint: Optional[str] = None, overwrite: bool = True, **kwargs: Any):
        super().__init__()
        self._holder = ClientHolder(region, endpoint, s3client_config)
        self.fs = S3FileSystem(region, s3client_config=s3client_config, endpoint=endpoint)
        self.path = self.fs.init_path(path)
        self._path = _Path(path)
        self.prefix_strategy = prefix_strategy or DefaultPrefixStrategy()
        self._part_size = (s3client_config or S3ClientConfig()).part_size
        self._threads = max(1, thread_count)
        self.overwrite = overwrite

    def init(self, is_coordinator: bool) -> None:
        pass

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        """torch >= 2.0's name for init."""
        self.init(is_coordinator)

    def storage_meta(self) -> None:
        return None

    def prepare_local_plan(self, plan):
        return plan

    def prepare_global_plan(self, global_plan):
        """Coordinator: without overwrite, refuses a path already holding a committed
        checkpoint (before anything is written; finish's create-only PUT is what
        makes it race-free); names this save's data objects."""
        if not self.overwrite and self._committed():
            raise PreconditionFailed(f"s3rdma.torch: a checkpoint is already committed at "
                                     f"{self._path.bucket}/{self._path.key(METADATA)}",
                                     code="PreconditionFailed", http_status=412)
        save = uuid.uuid4().hex[:16]
        return [dataclasses.replace(p, storage_data=f"{self.prefix_strategy(i)}{save}_")
                for i, p in enumerate(global_plan)]

    def _committed(self) -> bool:
        """Whether a checkpoint is committed under the path."""
        try:
            self._holder.client.head_object(self._path.bucket, self._path.key(METADATA))
        except NoSuchKey:
            return False
        return True

    def write_data(self, plan, planner) -> Future:
        client = self._holder.client
        items = []
        for item in plan.items:
            data = planner.resolve_data(item)
            if item.type == WriteItemType.BYTE_IO:
                items.append((item, data.getbuffer(), None, None))
            else:
                t = data.detach().cpu().contiguous()
                items.append((item, _bytes_of(t), t.dtype, tuple(t.shape)))
        groups: List[List] = [[] for _ in range(min(self._threads, max(1, len(items))))]
        loads = [0] * len(groups)
        for it in sorted(items, key=lambda it: -len(it[1])):
            g = loads.index(min(loads))
            groups[g].append(it)
            loads[g] += len(it[1])
        futs = [client.submit(self._write_object, f"{plan.storage_data}{n}.distcp", group)
                for n, group in enumerate(groups)]
        results = [r for f in futs for r in f.result()]
        fut: Future = Future()
        fut.set_result(results)
        return fut

    def _write_object(self, name: str, group: List) -> List:
        results, off = [], 0
        with S3Writer(self._holder.client, self._path.bucket, self._path.key(name),
                      self._part_size) as w:
            for item, data, dtype, shape in group:
                w.write(data)
                results.append(WriteResult(index=item.index, size_in_bytes=len(data),
                                           storage_data=_Stored(name, off, len(data), dtype,
                                                                shape)))
                off += len(data)
        return results

    def finish(self, metadata, results) -> None:
        """Coordinator: commits the save by writing .metadata (create-only without
        overwrite), then records its data objects in OBJECTS and, having replaced a
        checkpoint, deletes the data objects OBJECTS named for it."""
        metadata.storage_data = {wr.index: wr.storage_data for rl in results for wr in rl}
        client = self._holder.client
        names = sorted({wr.storage_data.relative_path for rl in results for wr in rl})
        replaced = self._recorded_objects() if self.overwrite else []
        try:
            client.put_object(self._path.bucket, self._path.key(METADATA),
                              pickle.dumps(metadata), if_none_match=not self.overwrite)
        except PreconditionFailed:
            client.delete_objects(self._path.bucket, [self._path.key(n) for n in names])
            raise
        client.put_object(self._path.bucket, self._path.key(OBJECTS),
                          json.dumps({"objects": names}).encode())
        gone = sorted(set(replaced) - set(names))
        if gone:
            client.delete_objects(self._path.bucket, [self._path.key(n) for n in gone])

    def _recorded_objects(self) -> List[str]:
        """The data objects OBJECTS names (none when absent or unreadable: a path no
        save of this module committed, or one from before OBJECTS; those objects
        stay). Only names of data objects (``.distcp``) count."""
        try:
            doc = json.loads(self._holder.client.get_object(self._path.bucket,
                                                            self._path.key(OBJECTS)))
            names = doc["objects"]
        except NoSuchKey:
            return []
        except (ValueError, TypeError, KeyError):
            log.warning("s3rdma.torch: %s/%s does not parse; the data objects of the "
                        "checkpoint replaced there stay", self._path.bucket,
                        self._path.key(OBJECTS))
            return []
        return [n for n in names if isinstance(n, str) and n.endswith(".distcp")]


class S3StorageReader(_CheckpointAt, _dcp.StorageReader):
    """Reads a distributed checkpoint committed under path (its .metadata is the
    commit: a path without one is not a checkpoint). Every planned item's own byte
    range is fetched straight into its tensor whatever reader_constructor says (what
    s3torchconnector's default dcp_optimized reader does): the argument is accepted,
    checked and kept as ``fs``'s."""

    def __init__(self, region: Optional[str], path: Union[str, os.PathLike],
                 s3client_config: Optional[S3ClientConfig] = None,
                 reader_constructor: Optional[ReaderFactory] = None,
                 endpoint: Optional[str] = None):
        super().__init__()
        self._holder = ClientHolder(region, endpoint, s3client_config)
        self._reader_constructor = reader_constructor or S3ReaderConstructor.dcp_optimized()
        self.fs = S3FileSystem(region, s3client_config=s3client_config,
                               reader_constructor=self._reader_constructor, endpoint=endpoint)
        self.path = self.fs.init_path(path)
        self._path = _Path(path)
        self._part_size = (s3client_config or S3ClientConfig()).part_size
        self._storage: Dict[Any, _Stored] = {}

    def set_up_storage_reader(self, metadata, is_coordinator: bool, *args: Any,
                              **kwargs: Any) -> None:
        """torch >= 2.0's name for init."""
        self.init(metadata, is_coordinator)

    def read_metadata(self, *args: Any, **kwargs: Any):
        return pickle.loads(self._holder.client.get_object(self._path.bucket,
                                                           self._path.key(METADATA)))

    def init(self, metadata, is_coordinator: bool) -> None:
        self._storage = metadata.storage_data

    def prepare_local_plan(self, plan):
        """The plan's items in the order of their offsets in the data objects, as
        s3torchconnector orders them (read_data fetches them all at once anyway)."""
        plan.items.sort(key=lambda item: self._storage[item.storage_index].offset)
        return plan

    def prepare_global_plan(self, global_plan):
        return global_plan

    def read_data(self, plan, planner) -> Future:
        client = self._holder.client
        jobs = []
        for req in plan.items:
            s = self._storage[req.storage_index]
            key = self._path.key(s.relative_path)
            if req.type == LoadItemType.BYTE_IO:
                dst = bytearray(s.length)
                whole, target = None, None
            else:
                target = planner.resolve_tensor(req).detach()
                whole = (all(o == 0 for o in req.storage_offsets)
                         and tuple(req.lengths) == tuple(s.shape) and target.is_contiguous()
                         and target.dtype == s.dtype and target.device.type == "cpu")
                if whole:
                    dst = target
                else:
                    dst = torch.frombuffer(alloc(client, s.length), dtype=torch.uint8) \
                        .view(s.dtype).reshape(s.shape) if s.length else \
                        torch.empty(s.shape, dtype=s.dtype)
            view = memoryview(dst) if isinstance(dst, bytearray) else _bytes_of(dst)
            ranges = [(view[off:off + n], (s.offset + off, s.offset + off + n))
                      for off, n in ((off, min(self._part_size, s.length - off))
                                     for off in range(0, s.length, self._part_size))]
            if (target is None or whole) and ranges_one_by_one(client):
                # the caller's memory (a bytearray, the target tensor): one at a time
                for v, span in ranges:
                    client.get_object_into(self._path.bucket, key, v, span)
                futs = []
            else:
                futs = [client.submit(client.get_object_into, self._path.bucket, key, v, span)
                        for v, span in ranges]
            jobs.append((req, dst, target, whole, futs))
        for req, dst, target, whole, futs in jobs:
            for f in futs:
                f.result()
            if target is None:
                planner.load_bytes(req, io.BytesIO(dst))
                continue
            if not whole:
                src = dst
                for dim, (o, n) in enumerate(zip(req.storage_offsets, req.lengths)):
                    src = src.narrow(dim, o, n)
                target.copy_(src)
            planner.commit_tensor(req, target)
        fut: Future = Future()
        fut.set_result(None)
        return fut


_FileSystemBase: Any = getattr(getattr(_dcp, "filesystem", None), "FileSystemBase", object)


class S3FileSystem(_FileSystemBase):
    """s3torchconnector's S3FileSystem: the object operations of a checkpoint path
    (torch >= 2.2's FileSystemBase interface; a plain class on torch 1.13, which has
    none). Paths are s3:// URIs; s3_client, when given, is used instead of a new
    S3Client."""

    def __init__(self, region: Optional[str], s3_client: Optional[S3Client] = None,
                 s3client_config: Optional[S3ClientConfig] = None,
                 reader_constructor: Optional[ReaderFactory] = None,
                 endpoint: Optional[str] = None) -> None:
        self._path: Union[str, os.PathLike] = ""
        self._reader_constructor = reader_constructor or S3ReaderConstructor.default()
        self._client = s3_client or S3Client(region, endpoint=endpoint,
                                             s3client_config=s3client_config)

    @contextlib.contextmanager
    def create_stream(self, path: Union[str, os.PathLike], mode: str) -> Iterator[io.IOBase]:
        """An S3Writer ("wb": the object is written when the block ends without an
        exception) or an S3Reader ("rb") of path; any other mode is a ValueError."""
        bucket, key = parse_s3_uri(str(path))
        if mode == "wb":
            with self._client.put_object(bucket, key) as stream:
                yield stream
        elif mode == "rb":
            with self._client.get_object(bucket, key,
                                         reader_constructor=self._reader_constructor) as stream:
                yield stream
        else:
            raise ValueError(f"Invalid mode={mode!r}: create_stream supports rb and wb only")

    def concat_path(self, path: Union[str, os.PathLike], suffix: str) -> str:
        return os.path.join(os.fspath(path), suffix)

    def init_path(self, path: Union[str, os.PathLike], *args: Any, **kwargs: Any
                  ) -> Union[str, os.PathLike]:
        self._path = path
        return path

    def rename(self, old_path: Union[str, os.PathLike], new_path: Union[str, os.PathLike]) -> None:
        """A server-side copy, then a delete of the old object; the two must be in one
        bucket (ValueError)."""
        old_bucket, old_key = parse_s3_uri(str(old_path))
        new_bucket, new_key = parse_s3_uri(str(new_path))
        if old_bucket != new_bucket:
            raise ValueError("Source and destination buckets cannot be different "
                             "(rename does not support cross-buckets operations)")
        self._client.copy_object(old_bucket, old_key, new_bucket, new_key)
        self._client.delete_object(old_bucket, old_key)

    def mkdir(self, path: Union[str, os.PathLike]) -> None:
        """Nothing: object stores have no directories."""

    def exists(self, path: Union[str, os.PathLike]) -> bool:
        bucket, key = parse_s3_uri(str(path))
        try:
            self._client.head_object(bucket, key)
        except NoSuchKey:
            return False
        return True

    def rm_file(self, path: Union[str, os.PathLike]) -> None:
        """Deletes path; a failure is logged, not raised (as s3torchconnector's)."""
        bucket, key = parse_s3_uri(str(path))
        try:
            self._client.delete_object(bucket, key)
        except S3Error:
            log.exception("s3rdma.torch: failed to remove %s", path)

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Union[str, os.PathLike]) -> bool:
        return _valid_checkpoint_id(checkpoint_id)
